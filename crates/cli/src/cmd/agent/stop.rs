//! Why the agent stopped, and how it says so: the `stopped` event and its
//! exit code (0 done, 1 a refusal or a timeout, 2 the endpoint failed).

use std::process::ExitCode;

use jcp::decision::Reason;
use jcp::grant::SignedGrant;
use jcp_wire::message::WireResponse;
use jcp_wire::WireError;
use serde_json::json;

use super::{wire_err, Agent};
use crate::out::CodedError;

/// Why the agent stopped, and how it says so.
pub(super) struct Stop {
    pub(super) why: &'static str,
    pub(super) message: String,
    pub(super) extra: serde_json::Value,
}

impl Stop {
    pub(super) fn new(why: &'static str, message: impl Into<String>) -> Self {
        Self { why, message: message.into(), extra: serde_json::Value::Null }
    }
}

/// What the wait at a checkpoint came to.
pub(super) enum Waited {
    Continued,
    Stopped(Stop),
}

impl Agent {
    pub(super) fn stop_on_deny(&self, reason: Reason, resp: &WireResponse) -> anyhow::Result<Stop> {
        let leaf = self.leaf()?.id();
        let d = &resp.decision;
        Ok(match reason {
            Reason::Revoked => Stop::new(
                "revoked",
                if self.chain.len() > 1 {
                    format!("stopped: grant {leaf} was revoked (it or a grant above it in the chain)")
                } else {
                    format!("stopped: grant {leaf} was revoked")
                },
            ),
            Reason::BudgetExceeded => Stop {
                why: "budget-exhausted",
                message: format!(
                    "stopped: budget exhausted: {} µJ of {} µJ remain on grant {leaf}",
                    d.budget_remaining_uj, d.budget_uj
                ),
                extra: json!({"remaining_uj": d.budget_remaining_uj, "budget_uj": d.budget_uj}),
            },
            Reason::Expired => Stop::new("expired", format!("stopped: grant {leaf} expired")),
            other => Stop {
                why: "denied",
                message: format!("stopped: the endpoint denied step {} ({other})", self.step),
                extra: json!({"reason": other.as_str()}),
            },
        })
    }

    pub(super) fn stopped(&self, stop: &Stop, code: u8) -> anyhow::Result<ExitCode> {
        let mut v = json!({
            "event": "stopped",
            "why": stop.why,
            "message": stop.message,
            "steps": self.step,
            "allowed": self.allowed,
            "spent_uj": self.spent,
            "grant": self.chain.last().map(SignedGrant::id),
        });
        if let (Some(m), serde_json::Value::Object(extra)) = (v.as_object_mut(), &stop.extra) {
            for (k, x) in extra {
                m.insert(k.clone(), x.clone());
            }
        }
        self.say(&v, || stop.message.clone())?;
        Ok(ExitCode::from(code))
    }

    /// The endpoint is unreachable, refused a frame, or stopped answering:
    /// exit 2 with the error's code and message (the stopped line is
    /// written by [`Agent::failed`]).
    pub(super) fn endpoint_failed(&mut self, e: &WireError) -> anyhow::Result<ExitCode> {
        self.endpoint_error = true;
        Err(wire_err(e))
    }

    /// Any error ends the run with a stopped line too, so an event stream
    /// always ends in `stopped`.
    pub(super) fn failed(&self, e: &anyhow::Error) -> anyhow::Result<()> {
        let code = e.downcast_ref::<CodedError>().map_or("error", |c| c.code.as_ref());
        let (why, message) = if self.endpoint_error {
            ("endpoint-error", format!("stopped: the endpoint at {} failed: [{code}] {e:#}", self.addr))
        } else {
            ("error", format!("stopped: [{code}] {e:#}"))
        };
        let stop = Stop { why, message, extra: json!({"code": code, "error": format!("{e:#}")}) };
        self.stopped(&stop, crate::out::ERROR).map(|_| ())
    }
}
