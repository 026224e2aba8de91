//! §11 `WireResponse { decision, receipt }`: the deterministic decision and
//! the sealed JCR-1 receipt, deny and allow alike.

use jcp::cbor::{self, ContentId, Fields, Item, Value};
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

    /// The fields as map entries, in canonical key order (the one list
    /// the value and the direct writer read).
    fn entries(&self) -> [(&'static str, Option<Item<'static>>); 5] {
        let (verdict, reason) = match self.verdict {
            Verdict::Allow => ("allow", None),
            Verdict::Deny(r) => ("deny", Some(Item::Text(r.as_str()))),
        };
        [
            ("reason", reason),
            ("verdict", Some(Item::Text(verdict))),
            ("budget_uj", Some(Item::Uint(self.budget_uj))),
            ("debited_uj", Some(Item::Uint(self.debited_uj))),
            ("budget_remaining_uj", Some(Item::Uint(self.budget_remaining_uj))),
        ]
    }

    fn to_value(&self) -> Value {
        cbor::map(self.entries().map(|(k, v)| (k, v.map(|i| i.to_value()))))
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

    /// The response framed for the wire (length prefix and canonical
    /// bytes), written straight from its fields: the bytes of
    /// `codec::frame_value(&self.to_value())`, without copying the receipt
    /// into a value tree first.
    pub fn framed(&self) -> Vec<u8> {
        crate::codec::frame_written(40 + self.receipt.len() + 64, |out| {
            // `{"receipt": bytes, "decision": map}`: "receipt" (7 bytes)
            // sorts before "decision" (8).
            out.push(0xa2);
            Item::Text("receipt").write(out);
            Item::Bytes(&self.receipt).write(out);
            Item::Text("decision").write(out);
            cbor::write_map(out, &mut self.decision.entries());
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s11_a_response_framed_directly_is_the_framed_value() {
        let decisions = [
            WireDecision { verdict: Verdict::Allow, debited_uj: 24, budget_uj: 1 << 40, budget_remaining_uj: 0 },
            WireDecision {
                verdict: Verdict::Deny(Reason::StaleRequest),
                debited_uj: 0,
                budget_uj: u64::MAX,
                budget_remaining_uj: 23,
            },
        ];
        for decision in decisions {
            for len in [0, 23, 24, 700, 70_000] {
                let r = WireResponse { decision: decision.clone(), receipt: vec![0xd2; len] };
                assert_eq!(r.framed(), crate::codec::frame_value(&r.to_value()), "{decision:?}, {len}-byte receipt");
            }
        }
    }
}
