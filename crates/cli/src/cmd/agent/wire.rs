//! Each action asked of the enforcement endpoint (§11): a frame for the
//! step whose arguments are the work the endpoint runs behind its gate,
//! the call (reconnecting once, with a timeout), the relayed reply with the
//! charge receipt of what the endpoint metered (§11 "the cost is the
//! holder's measurement"), and the decision line.

use jcp::cbor::{ContentId, Value};
use jcp::decision::{Reason, Verdict};
use jcp::energy::{Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp_receipt::ReceiptCore;
use jcp_wire::client::Client;
use jcp_wire::message::{ReplyState, RequestBody, WireReply, WireRequest, WireResponse};
use jcp_wire::metering::CallFigure;
use jcp_wire::WireError;
use serde_json::json;

use super::stop::Stop;
use super::{unix_now, Agent, CALL_TIMEOUT};
use crate::out::coded;

/// The state commitment of step `n` (deterministic simulated work).
pub(super) fn state_of(step: u64) -> ContentId {
    ContentId::of(&Value::text(format!("jcp agent demo: state after step {step}")))
}

/// The arguments of step `n` of a session: the work (`--work`, the first
/// line: the command the endpoint behind the gate runs), then a note line
/// naming the session and the step, so no two requests are byte-identical
/// (§11: two byte-identical requests are one request; a resumed run numbers
/// its steps from 1 again). `jcp backend demo` reads only the first line.
pub(super) fn args_of(work: &str, session: &[u8; 16], step: u64) -> Vec<u8> {
    format!("{work}\njcp agent demo: session {} step {step}", hex::encode(session)).into_bytes()
}

/// What one allowed call came to, read from the endpoint's relayed reply.
pub(super) struct Relayed {
    /// The reply's state.
    pub(super) state: ReplyState,
    /// The reply's output (data, never control), lossily as text.
    pub(super) output: String,
    /// The verified charge receipt: what the endpoint debited.
    pub(super) charge: Option<(ContentId, ReceiptCore)>,
    /// Why the endpoint recorded no charge.
    pub(super) charge_refused: Option<String>,
    /// The figure the endpoint metered, with its gaps.
    pub(super) metered: Option<CallFigure>,
    /// µJ the call debited: the charge, or — never charged — the
    /// reservation, which stays debited (§4.11).
    pub(super) debited_uj: u64,
    /// The leaf grant's remainder after the call, µJ.
    pub(super) remaining_uj: u64,
}

impl Relayed {
    /// Reads a reply against the allow it answers: the charge receipt must
    /// verify, be an allow sealed by the endpoint that sealed the
    /// reservation, and be over the same grant and payload.
    pub(super) fn read(resp: &WireResponse, reply: WireReply, step: u64) -> anyhow::Result<Self> {
        let reservation = jcp_receipt::verify_receipt(&resp.receipt, None)
            .map_err(|e| coded(e.code(), format!("step {step}: the allow's receipt does not verify: {e}")))?;
        let charge = match &reply.charge {
            None => None,
            Some(bytes) => {
                let v = jcp_receipt::verify_receipt(bytes, Some(&reservation.core.steward)).map_err(|e| {
                    coded(
                        "charge-unverified",
                        format!("step {step}: the charge receipt does not verify: [{}] {e}", e.code()),
                    )
                })?;
                let c = &v.core;
                let r = &reservation.core;
                if !c.is_allow() || c.grant_id != r.grant_id || c.payload_hash != r.payload_hash {
                    return Err(coded(
                        "charge-mismatch",
                        format!("step {step}: the charge receipt {} is not this call's charge", v.id),
                    ));
                }
                Some((v.id, v.core))
            }
        };
        let reserved = resp.decision.debited_uj;
        let debited_uj = charge.as_ref().map_or(reserved, |(_, c)| c.cost_uj);
        // Before the call the leaf had its remainder at reservation plus
        // the reservation; the charge replaces the reservation.
        let before = resp.decision.budget_remaining_uj.saturating_add(reserved);
        Ok(Self {
            state: reply.state,
            output: String::from_utf8_lossy(&reply.output).chars().take(200).collect(),
            charge,
            charge_refused: reply.charge_refused,
            metered: reply.metered,
            debited_uj,
            remaining_uj: before.saturating_sub(debited_uj),
        })
    }

    /// The grade the debit carries: the charge's, else (a reservation
    /// left debited) `Estimator`, a bound and no reading.
    pub(super) fn provenance(&self) -> Provenance {
        self.charge.as_ref().map_or(Provenance::Estimator, |(_, c)| c.provenance)
    }

    /// Why the agent cannot go on after this call, if it cannot.
    pub(super) fn stop(&self, step: u64, reserved_uj: u64, receipt: ContentId) -> Option<Stop> {
        let held = |why: &'static str, what: String| Stop {
            why,
            message: what,
            extra: json!({"receipt": receipt, "reserved_uj": reserved_uj, "reply": self.state.as_str()}),
        };
        match self.state {
            ReplyState::Lost => Some(held(
                "lost",
                format!(
                    "stopped: step {step}'s call was lost behind the gate ({}); whether its work took effect is not known, so the agent reports nothing for it: the decision stays unresolved (§4.11), its reservation of {reserved_uj} µJ debited",
                    self.output
                ),
            )),
            ReplyState::Unavailable => Some(held(
                "reply-unavailable",
                format!("stopped: the endpoint holds step {step}'s decision but not its reply (a repeated request): what its work was charged is not known here"),
            )),
            ReplyState::Working | ReplyState::InputRequired => Some(held(
                "unsupported-reply",
                format!(
                    "stopped: step {step}'s work answered `{}`; the demo agent does not follow continuations (give it work that finishes in one call: burn:MS, thread:MS, child:MS, echo:TEXT)",
                    self.state.as_str()
                ),
            )),
            ReplyState::Done | ReplyState::Failed => self.charge_refused.as_ref().map(|why| {
                held(
                    "charge-refused",
                    format!(
                        "stopped: step {step}'s work ran but the endpoint recorded no charge ({why}); the decision stays unresolved, its reservation of {reserved_uj} µJ debited"
                    ),
                )
            }),
        }
    }

    /// The metered figure and the charge, for the decision event.
    fn json(&self) -> serde_json::Value {
        json!({
            "reply": self.state.as_str(),
            "output": self.output,
            "metered": self.metered,
            "charge": self.charge.as_ref().map(|(id, c)| json!({
                "id": id,
                "cost_uj": c.cost_uj,
                "provenance": c.provenance.as_str(),
                "coverage": c.coverage.as_str(),
                "measured_uj": c.measured,
                "breach": c.breach.map(Reason::as_str),
            })),
            "charge_refused": self.charge_refused,
        })
    }

    /// The metered figure in words: `180.000 mJ (Estimator, Partial; gaps: a, b)`.
    fn words(&self) -> String {
        match &self.metered {
            None => "not metered".to_owned(),
            Some(m) => {
                let Energy { uj, provenance, coverage, .. } = m.energy;
                let gaps: Vec<&str> = m.gaps.iter().map(|g| g.code.as_str()).collect();
                let gaps = if gaps.is_empty() { String::new() } else { format!("; gaps: {}", gaps.join(", ")) };
                format!("{} ({provenance}, {coverage}{gaps})", jcp::energy::format_uj(uj))
            }
        }
    }
}

impl Agent {
    pub(super) fn request(&self, step: u64) -> anyhow::Result<WireRequest> {
        let leaf = self.leaf()?;
        let args = args_of(&self.work, &self.session, step);
        let frame = Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: leaf.id(),
            action: self.action.clone(),
            resource: leaf.grant().capability.resource,
            payload_hash: ContentId::of_bytes(&args),
            model: None,
        };
        let body = RequestBody {
            frame,
            chain: self.chain.clone(),
            // Only the most the call may reserve (§11 relay mode): a bound,
            // no grade claimed and no reading.
            cost: Energy::new(self.max_uj, Provenance::Estimator),
            money: None,
            label: None,
            args: Some(args),
            continues: None,
            now: unix_now(),
        };
        Ok(body.sign(&self.key))
    }

    pub(super) async fn call_once(&mut self, req: &WireRequest) -> Result<WireResponse, WireError> {
        if self.client.is_none() {
            self.client = Some(Client::connect(&self.addr).await?);
        }
        let Some(client) = self.client.as_mut() else {
            return Err(WireError::Stopped("no connection to the endpoint".into()));
        };
        match tokio::time::timeout(CALL_TIMEOUT, client.call(req)).await {
            Ok(r) => r,
            Err(_) => Err(WireError::Stopped(format!("no response within {} s", CALL_TIMEOUT.as_secs()))),
        }
    }

    /// Sends a request; on a transport failure (the connection dropped
    /// while the agent waited at a checkpoint, say) it reconnects once and
    /// sends the *same* request: decided once (§11), it gets the same
    /// response and is not debited twice. A refused frame is not retried.
    pub(super) async fn call(&mut self, req: &WireRequest) -> Result<WireResponse, WireError> {
        match self.call_once(req).await {
            Ok(r) => Ok(r),
            Err(e @ WireError::Refused { .. }) => Err(e),
            Err(_) => {
                self.client = None;
                self.call_once(req).await
            }
        }
    }

    /// The relayed reply of an allow: the endpoint ran the work behind its
    /// gate, metered it and charged the figure before sending this. An
    /// endpoint with no backend sends none: after `--reply-timeout-s` the
    /// agent says so (it states no joules of its own).
    pub(super) async fn reply(&mut self, step: u64) -> Result<WireReply, WireError> {
        let Some(client) = self.client.as_mut() else {
            return Err(WireError::Stopped("no connection to the endpoint".into()));
        };
        match tokio::time::timeout(self.reply_timeout, client.reply()).await {
            Ok(r) => r,
            Err(_) => Err(WireError::Stopped(format!(
                "no reply within {} s after step {step}'s allow: is a backend behind the endpoint's gate (`jcp serve --backend -- CMD`)? An endpoint without one sends no reply, and the agent states no joules of its own",
                self.reply_timeout.as_secs()
            ))),
        }
    }

    pub(super) fn decision_line(
        &self,
        step: u64,
        resp: &WireResponse,
        relayed: Option<&Relayed>,
    ) -> anyhow::Result<()> {
        let d = &resp.decision;
        let leaf = self.leaf()?.id();
        let mut v = json!({
            "event": "decision",
            "step": step,
            "grant": leaf,
            "verdict": if d.is_allow() { "allow" } else { "deny" },
            "reason": d.reason().map(Reason::as_str),
            "debited_uj": relayed.map_or(d.debited_uj, |r| r.debited_uj),
            "reserved_uj": relayed.map(|_| d.debited_uj),
            "budget_uj": d.budget_uj,
            "remaining_uj": relayed.map_or(d.budget_remaining_uj, |r| r.remaining_uj),
            "spent_uj": self.spent,
            "receipt": resp.receipt_id(),
        });
        if let (Some(m), Some(serde_json::Value::Object(r))) = (v.as_object_mut(), relayed.map(Relayed::json)) {
            m.extend(r);
        }
        self.say(&v, || {
            let verdict = match d.verdict {
                Verdict::Allow => "allow".to_owned(),
                Verdict::Deny(r) => format!("deny ({r})"),
            };
            match relayed {
                Some(r) => format!(
                    "step {step:>5}  {verdict:<24}  {}: metered {}; debited {} µJ; {} of {} µJ remain",
                    r.state.as_str(),
                    r.words(),
                    r.debited_uj,
                    r.remaining_uj,
                    d.budget_uj
                ),
                None => {
                    format!("step {step:>5}  {verdict:<24}  {} of {} µJ remain", d.budget_remaining_uj, d.budget_uj)
                }
            }
        })
    }
}
