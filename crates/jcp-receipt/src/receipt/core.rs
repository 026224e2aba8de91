//! The `jcp/2` receipt core (§8), typed: minted from the gate's decision,
//! written as the canonical det-CBOR map the envelope signs, and read back
//! under the profile its `jcp_receipt` tag names (through [`CoreView`]).

use jcp::cbor::{self, ContentId, SchemaError, Value};
use jcp::decision::{Decision, Reason, Request, Verdict};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::frame::{FrameKind, Trust};
use jcp::grant::Funds;
use jcp::identity::{Did, Keypair};

use super::entries::{Entries, FVal, TextItems, OBJ};
use super::{CoreView, Profile};
use crate::cose::{self, DidCache, Position};
use crate::error::Error;

/// A receipt core (§8), typed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReceiptCore {
    /// Which profile the core was sealed under.
    pub profile: Profile,
    /// The (leaf) grant decided against.
    pub grant_id: ContentId,
    /// The leaf grant's issuer.
    pub issuer: Did,
    /// The leaf grant's subject (the caller that held the authority).
    pub subject: Did,
    /// The frame's resource.
    pub resource: ContentId,
    /// The frame's action.
    pub action: String,
    /// What the decision was over (C23). `None` only under `jcp/1`.
    pub payload_hash: Option<ContentId>,
    /// The frame kind.
    pub frame_kind: FrameKind,
    /// The frame's trust tag.
    pub trust: Trust,
    /// Allow or deny (with the reason).
    pub verdict: Verdict,
    /// The metered cost, µJ.
    pub cost_uj: u64,
    /// How the cost was obtained.
    pub provenance: Provenance,
    /// How much of the work it covers (§5.2).
    pub coverage: Coverage,
    /// The leaf grant's remaining joules after the decision.
    pub budget_remaining_uj: u64,
    /// The leaf grant's joule ceiling.
    pub budget_uj: u64,
    /// The signer (the COSE kid).
    pub steward: Did,
    /// Every debited grant id, root first, for a chained decision (§8.1);
    /// empty for a single-grant decision.
    pub chain_ids: Vec<ContentId>,
    /// A debit-point breach recorded on an allow (§4.9 two-phase path).
    pub breach: Option<Reason>,
    /// The money cost of a priced decision (§4.8).
    pub money: Option<Funds>,
    /// The argument was tainted (§4.10): its debit also counts against the
    /// tainted allowance.
    pub tainted: bool,
}

impl ReceiptCore {
    /// The `jcp/2` core of a decision the gate just made (allow or deny).
    /// `steward` is the sealing enforcement point.
    pub fn from_decision(decision: &Decision, req: &Request<'_>, steward: Did) -> Result<Self, Error> {
        let Some(leaf) = req.chain.last() else {
            return Err(Error::Invalid { field: "grant_id", problem: "a decision over no grant".into() });
        };
        let g = leaf.grant();
        let chain_ids = if decision.chain_ids.len() > 1 { decision.chain_ids.clone() } else { Vec::new() };
        let allow = decision.is_allow();
        Ok(Self {
            profile: Profile::Jcp2,
            grant_id: leaf.id(),
            issuer: g.issuer,
            subject: g.subject,
            resource: req.frame.resource,
            action: req.frame.action.clone(),
            payload_hash: Some(req.frame.payload_hash),
            frame_kind: req.frame.kind,
            trust: req.frame.trust,
            verdict: decision.verdict,
            cost_uj: req.cost.energy.uj,
            provenance: req.cost.energy.provenance,
            coverage: req.cost.energy.coverage,
            budget_remaining_uj: decision.budget_remaining_uj,
            budget_uj: decision.budget_uj,
            steward,
            chain_ids,
            breach: if allow { decision.breach } else { None },
            money: req.cost.money.clone(),
            tainted: allow && req.flow.is_some_and(|l| !l.is_bottom()),
        })
    }

    /// The energy figure.
    pub fn energy(&self) -> Energy {
        Energy { uj: self.cost_uj, provenance: self.provenance, coverage: self.coverage }
    }

    /// Every grant an allow debits, root first: `chain_ids`, or the one grant.
    pub fn debited_ids(&self) -> &[ContentId] {
        debited_ids(&self.grant_id, &self.chain_ids)
    }

    /// Whether the verdict is allow.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// The canonical core value. Refuses `jcp/1`: nothing mints it (§8).
    pub fn to_value(&self) -> Result<Value, Error> {
        if self.profile != Profile::Jcp2 {
            return Err(Error::LegacyMintRefused);
        }
        let Some(payload_hash) = self.payload_hash else {
            return Err(Error::Invalid { field: "payload_hash", problem: "jcp/2 requires it (C23)".into() });
        };
        let (verdict, reason) = match self.verdict {
            Verdict::Allow => ("allow", None),
            Verdict::Deny(r) => ("deny", Some(Value::text(r.as_str()))),
        };
        let chain = (!self.chain_ids.is_empty())
            .then(|| Value::Array(self.chain_ids.iter().map(|c| Value::text(c.to_hex())).collect()));
        Ok(cbor::map([
            ("jcp_receipt", Some(Value::text(Profile::Jcp2.as_str()))),
            ("grant_id", Some(Value::text(self.grant_id.to_hex()))),
            ("issuer", Some(Value::text(self.issuer.to_did_string()))),
            ("subject", Some(Value::text(self.subject.to_did_string()))),
            ("resource", Some(Value::text(self.resource.to_hex()))),
            ("action", Some(Value::text(self.action.as_str()))),
            ("payload_hash", Some(Value::text(payload_hash.to_hex()))),
            ("frame_kind", Some(Value::text(self.frame_kind.as_str()))),
            ("trust", Some(Value::text(self.trust.as_str()))),
            ("verdict", Some(Value::text(verdict))),
            ("deny_reason", reason),
            ("cost_uj", Some(Value::Uint(self.cost_uj))),
            ("energy_provenance", Some(Value::text(self.provenance.as_str()))),
            ("energy_coverage", (self.coverage == Coverage::Partial).then(|| Value::text("Partial"))),
            ("budget_remaining_uj", Some(Value::Uint(self.budget_remaining_uj))),
            ("budget_uj", Some(Value::Uint(self.budget_uj))),
            ("steward", Some(Value::text(self.steward.to_did_string()))),
            ("chain_ids", chain),
            ("breach", self.breach.map(|r| Value::text(r.as_str()))),
            ("cost_currency", self.money.as_ref().map(|m| Value::text(m.currency.as_str()))),
            ("cost_minor", self.money.as_ref().map(|m| Value::Uint(m.minor))),
            ("flow", self.tainted.then(|| Value::text("tainted"))),
        ]))
    }

    /// Reads a core under the profile its `jcp_receipt` tag names.
    pub fn from_value(v: &Value, dids: &mut DidCache) -> Result<Self, Error> {
        let Value::Map(entries) = v else {
            return Err(SchemaError::NotAMap { object: OBJ }.into());
        };
        // Arrays of text first (their lists must outlive the entries that borrow them).
        let lists: Vec<Option<Vec<&[u8]>>> = entries
            .iter()
            .map(|(_, val)| match val {
                Value::Array(items) => {
                    items.iter().map(|i| if let Value::Text(t) = i { Some(t.as_bytes()) } else { None }).collect()
                }
                _ => None,
            })
            .collect();
        let mut out = Vec::with_capacity(entries.len());
        for ((k, val), list) in entries.iter().zip(&lists) {
            let Value::Text(k) = k else {
                return Err(SchemaError::Unknown { object: OBJ, field: format!("{k:?}") }.into());
            };
            let fv = match (val, list) {
                (Value::Text(t), _) => FVal::Text(t.as_bytes()),
                (Value::Uint(n), _) => FVal::Uint(*n),
                (Value::Array(_), Some(ts)) => FVal::Texts(TextItems::List(ts)),
                _ => FVal::Other,
            };
            out.push((k.as_bytes(), fv));
        }
        Self::from_entries(&out, dids)
    }

    /// Reads a core from its map entries (the one implementation of the
    /// profile rules, shared by the value path and the zero-copy path).
    pub(crate) fn from_entries(entries: &[(&[u8], FVal<'_>)], dids: &mut DidCache) -> Result<Self, Error> {
        Self::from_fields(Entries::new(entries), dids)
    }

    fn from_fields(f: Entries<'_, '_>, dids: &mut DidCache) -> Result<Self, Error> {
        let v = CoreView::read(f, dids)?;
        Self::from_view(&v, dids)
    }

    /// Seals as JCR-1 under `steward`, whose did must be the core's `steward`.
    pub fn seal(&self, position: Position, steward: &Keypair) -> Result<Vec<u8>, Error> {
        if steward.did() != self.steward {
            return Err(Error::StewardMismatch {
                core: self.steward.to_did_string(),
                kid: steward.did().to_did_string(),
            });
        }
        Ok(cose::seal(&self.to_value()?, position, steward))
    }
}

/// Every grant an allow debits, root first: a chained decision's
/// `chain_ids` (§8.1), or the one grant (for readers that keep the two
/// fields without the whole core).
pub fn debited_ids<'a>(grant_id: &'a ContentId, chain_ids: &'a [ContentId]) -> &'a [ContentId] {
    if chain_ids.is_empty() {
        std::slice::from_ref(grant_id)
    } else {
        chain_ids
    }
}
