//! §11 `WireResponse { decision, receipt }`: the deterministic decision and
//! the sealed JCR-1 receipt, deny and allow alike.

use jcp::cbor::{self, ContentId, Fields, Value};
use jcp::decision::{Reason, Verdict};
use jcp_receipt::receipt::ReceiptCore;

use crate::error::WireError;

/// The decision as the wire carries it: a function of the sealed receipt
/// alone, so a repeat (even after a restart) gets byte-identical bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WireDecision {
    /// Allow or deny (with the reason).
    pub verdict: Verdict,
    /// µJ debited from every link (0 on deny).
    pub debited_uj: u64,
    /// The leaf grant's ceiling.
    pub budget_uj: u64,
    /// The leaf grant's remainder after the decision.
    pub budget_remaining_uj: u64,
}

impl WireDecision {
    /// The decision a receipt core states.
    pub fn of_core(c: &ReceiptCore) -> Self {
        Self {
            verdict: c.verdict,
            debited_uj: if c.is_allow() { c.cost_uj } else { 0 },
            budget_uj: c.budget_uj,
            budget_remaining_uj: c.budget_remaining_uj,
        }
    }

    /// Whether it allows.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// The deny reason.
    pub fn reason(&self) -> Option<Reason> {
        match self.verdict {
            Verdict::Allow => None,
            Verdict::Deny(r) => Some(r),
        }
    }

    fn to_value(&self) -> Value {
        let (verdict, reason) = match self.verdict {
            Verdict::Allow => ("allow", None),
            Verdict::Deny(r) => ("deny", Some(Value::text(r.as_str()))),
        };
        cbor::map([
            ("verdict", Some(Value::text(verdict))),
            ("reason", reason),
            ("debited_uj", Some(Value::Uint(self.debited_uj))),
            ("budget_uj", Some(Value::Uint(self.budget_uj))),
            ("budget_remaining_uj", Some(Value::Uint(self.budget_remaining_uj))),
        ])
    }

    fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("Decision", v)?;
        let verdict = match (f.text("verdict")?, f.opt_text("reason")?) {
            ("allow", None) => Verdict::Allow,
            ("deny", Some(r)) => {
                Verdict::Deny(Reason::parse(r).ok_or_else(|| f.error("reason", format!("unknown reason {r:?}")))?)
            }
            (v, r) => return Err(f.error("verdict", format!("verdict {v:?} with reason {r:?}")).into()),
        };
        let debited_uj = f.uint("debited_uj")?;
        let budget_uj = f.uint("budget_uj")?;
        let budget_remaining_uj = f.uint("budget_remaining_uj")?;
        f.finish()?;
        Ok(Self { verdict, debited_uj, budget_uj, budget_remaining_uj })
    }
}

/// The response to a request (§11): the decision and the sealed receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireResponse {
    /// The decision.
    pub decision: WireDecision,
    /// The sealed JCR-1 receipt (allow and deny alike).
    pub receipt: Vec<u8>,
}

impl WireResponse {
    /// The canonical message value.
    pub fn to_value(&self) -> Value {
        cbor::map([("decision", Some(self.decision.to_value())), ("receipt", Some(Value::Bytes(self.receipt.clone())))])
    }

    /// Reads a response.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("WireResponse", v)?;
        let decision = WireDecision::from_value(f.req("decision")?)?;
        let Value::Bytes(receipt) = f.req("receipt")? else {
            return Err(f.error("receipt", "expected bytes").into());
        };
        let receipt = receipt.clone();
        f.finish()?;
        Ok(Self { decision, receipt })
    }

    /// The receipt's id (what a continuation or an outcome names).
    pub fn receipt_id(&self) -> ContentId {
        ContentId::of_bytes(&self.receipt)
    }
}
