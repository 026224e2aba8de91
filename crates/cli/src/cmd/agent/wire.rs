//! Each action asked of the enforcement endpoint (§11): a frame for the
//! step, the call (reconnecting once, with a timeout), the decision line,
//! and the outcome the agent reports as the decision's holder (§4.11).

use jcp::cbor::{ContentId, Value};
use jcp::decision::{Reason, Verdict};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp_wire::client::Client;
use jcp_wire::message::{Feed, RequestBody, SignedOutcome, WireRequest, WireResponse};
use jcp_wire::WireError;
use serde_json::json;

use super::{unix_now, Agent, CALL_TIMEOUT};

/// The state commitment of step `n` (deterministic simulated work).
pub(super) fn state_of(step: u64) -> ContentId {
    ContentId::of(&Value::text(format!("jcp agent demo: state after step {step}")))
}

/// The payload of step `n` of a session: distinct per step, and per
/// session (a resumed run numbers its steps from 1 again), so no two
/// requests are byte-identical.
pub(super) fn payload_of(session: &[u8; 16], step: u64) -> ContentId {
    ContentId::of(&Value::text(format!("jcp agent demo: session {} step {step}", hex::encode(session))))
}

impl Agent {
    pub(super) fn request(&self, step: u64) -> anyhow::Result<WireRequest> {
        let leaf = self.leaf()?;
        let frame = Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: leaf.id(),
            action: self.action.clone(),
            resource: leaf.grant().capability.resource,
            payload_hash: payload_of(&self.session, step),
            model: None,
        };
        let body = RequestBody {
            frame,
            chain: self.chain.clone(),
            cost: self.cost,
            money: None,
            label: None,
            args: None,
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

    /// Reports, as the holder, that an allowed action completed (§4.11), so
    /// the decision is settled rather than left unresolved in the record.
    pub(super) async fn report_outcome(&mut self, receipt: ContentId) -> Result<(), WireError> {
        let feed =
            Feed::Outcome(SignedOutcome::sign(receipt, jcp_receipt::record::OutcomeStatus::Completed, &self.key));
        if self.client.is_none() {
            self.client = Some(Client::connect(&self.addr).await?);
        }
        let Some(client) = self.client.as_mut() else {
            return Err(WireError::Stopped("no connection to the endpoint".into()));
        };
        let ans = match tokio::time::timeout(CALL_TIMEOUT, client.feed(&feed)).await {
            Ok(a) => a?,
            Err(_) => return Err(WireError::Stopped(format!("no answer within {} s", CALL_TIMEOUT.as_secs()))),
        };
        if ans.admitted {
            Ok(())
        } else {
            Err(WireError::Refused { code: ans.code, message: format!("the outcome of {receipt}: {}", ans.message) })
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

    pub(super) fn decision_line(&self, step: u64, resp: &WireResponse) -> anyhow::Result<()> {
        let d = &resp.decision;
        let leaf = self.leaf()?.id();
        self.say(
            &json!({
                "event": "decision",
                "step": step,
                "grant": leaf,
                "verdict": if d.is_allow() { "allow" } else { "deny" },
                "reason": d.reason().map(Reason::as_str),
                "debited_uj": d.debited_uj,
                "budget_uj": d.budget_uj,
                "remaining_uj": d.budget_remaining_uj,
                "spent_uj": self.spent,
                "receipt": resp.receipt_id(),
            }),
            || {
                let verdict = match d.verdict {
                    Verdict::Allow => "allow".to_owned(),
                    Verdict::Deny(r) => format!("deny ({r})"),
                };
                format!(
                    "step {step:>5}  {verdict:<24}  debited {} µJ; {} of {} µJ remain",
                    d.debited_uj, d.budget_remaining_uj, d.budget_uj
                )
            },
        )
    }
}
