//! The `jcp/2` receipt core (§8), typed: minted from the gate's decision,
//! written as the canonical det-CBOR map the envelope signs, and read back
//! under the profile its `jcp_receipt` tag names (through [`CoreView`]).

use jcp::cbor::{self, ContentId, Item, SchemaError, Value};
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
    /// The measured figure the cost rests on (§5; `energy_measured`,
    /// omitted when absent).
    pub measured: Option<u64>,
    /// The leaf grant's remaining joules after the decision.
    pub budget_remaining_uj: u64,
    /// The leaf grant's joule ceiling.
    pub budget_uj: u64,
    /// The signer (the COSE kid).
    pub steward: Did,
    /// Every debited grant id, root first, for a chained allow (§8.1);
    /// empty for a single-grant decision and for every deny (it debits none).
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
        let allow = decision.is_allow();
        // §8.1: `chain_ids` is "every grant id the decision debited"; a
        // deny debits none, so its receipt names only the leaf.
        let chain_ids = if allow && decision.chain_ids.len() > 1 { decision.chain_ids.clone() } else { Vec::new() };
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
            measured: req.cost.energy.measured,
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
        Energy { uj: self.cost_uj, provenance: self.provenance, coverage: self.coverage, measured: self.measured }
    }

    /// Every grant an allow debits, root first: `chain_ids`, or the one grant.
    pub fn debited_ids(&self) -> &[ContentId] {
        debited_ids(&self.grant_id, &self.chain_ids)
    }

    /// Whether the verdict is allow.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// The core's fields as map entries, listed in canonical key order
    /// (shorter keys first, then bytewise): the one field list both the
    /// value and the direct writer read. Refuses `jcp/1`: nothing mints it
    /// (§8).
    fn entries(&self) -> Result<[(&'static str, Option<Item<'_>>); 23], Error> {
        if self.profile != Profile::Jcp2 {
            return Err(Error::LegacyMintRefused);
        }
        let Some(payload_hash) = &self.payload_hash else {
            return Err(Error::Invalid { field: "payload_hash", problem: "jcp/2 requires it (C23)".into() });
        };
        let (verdict, reason) = match &self.verdict {
            Verdict::Allow => ("allow", None),
            Verdict::Deny(r) => ("deny", Some(Item::Text(r.as_str()))),
        };
        let text = |t: &'static str| Some(Item::Text(t));
        Ok([
            ("flow", self.tainted.then_some(Item::Text("tainted"))),
            ("trust", text(self.trust.as_str())),
            ("action", Some(Item::Text(&self.action))),
            ("breach", self.breach.map(|r| Item::Text(r.as_str()))),
            ("issuer", Some(Item::Did(&self.issuer))),
            ("cost_uj", Some(Item::Uint(self.cost_uj))),
            ("steward", Some(Item::Did(&self.steward))),
            ("subject", Some(Item::Did(&self.subject))),
            ("verdict", text(verdict)),
            ("grant_id", Some(Item::Id(&self.grant_id))),
            ("resource", Some(Item::Id(&self.resource))),
            ("budget_uj", Some(Item::Uint(self.budget_uj))),
            ("chain_ids", (!self.chain_ids.is_empty()).then_some(Item::Ids(&self.chain_ids))),
            ("cost_minor", self.money.as_ref().map(|m| Item::Uint(m.minor))),
            ("frame_kind", text(self.frame_kind.as_str())),
            ("deny_reason", reason),
            ("jcp_receipt", text(Profile::Jcp2.as_str())),
            ("payload_hash", Some(Item::Id(payload_hash))),
            ("cost_currency", self.money.as_ref().map(|m| Item::Text(&m.currency))),
            ("energy_coverage", (self.coverage == Coverage::Partial).then_some(Item::Text("Partial"))),
            ("energy_measured", self.measured.map(Item::Uint)),
            ("energy_provenance", text(self.provenance.as_str())),
            ("budget_remaining_uj", Some(Item::Uint(self.budget_remaining_uj))),
        ])
    }

    /// The canonical core value. Refuses `jcp/1`: nothing mints it (§8).
    pub fn to_value(&self) -> Result<Value, Error> {
        Ok(cbor::map(self.entries()?.map(|(k, v)| (k, v.map(|i| i.to_value())))))
    }

    /// The core's canonical bytes, written straight from its fields: the
    /// bytes of `to_value()?.encode()` (`s8_the_direct_core_writer_is_byte_identical_to_the_value`).
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::with_capacity(768);
        cbor::write_map(&mut out, &mut self.entries()?);
        Ok(out)
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
        Ok(cose::seal_payload(&self.to_bytes()?, position, steward))
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

#[cfg(test)]
mod tests {
    use jcp::decision::Reason;
    use jcp::energy::{Coverage, Provenance};
    use jcp::frame::{FrameKind, Trust};
    use jcp::grant::Funds;
    use jcp::identity::Keypair;

    use super::*;

    fn core(i: u8) -> ReceiptCore {
        let did = |n: u8| Keypair::from_seed([n; 32]).unwrap().did();
        let id = |n: u8| ContentId::of_bytes(&[n]);
        let bit = |k: u8| i & (1 << k) != 0;
        ReceiptCore {
            profile: Profile::Jcp2,
            grant_id: id(1),
            issuer: did(1),
            subject: did(2),
            resource: id(2),
            action: if bit(0) { "read".into() } else { "a longer action name, over 23 bytes".into() },
            payload_hash: Some(id(3)),
            frame_kind: if bit(1) { FrameKind::ToolCall } else { FrameKind::AgentTask },
            trust: if bit(1) { Trust::Control } else { Trust::Data },
            verdict: if bit(2) { Verdict::Deny(Reason::Revoked) } else { Verdict::Allow },
            cost_uj: [0, 23, 24, 255, 256, 65_536, u64::MAX][usize::from(i % 7)],
            provenance: if bit(3) { Provenance::HwShunt } else { Provenance::Estimator },
            coverage: if bit(3) { Coverage::Partial } else { Coverage::Whole },
            // A hardware grade with its reading (every other one: the odd
            // ones leave a HwShunt label without it, as published receipts do).
            measured: (bit(3) && i % 2 == 0).then_some([0, 23, 24, 255, 256, 65_536, u64::MAX][usize::from(i % 7)]),
            budget_remaining_uj: u64::from(i) << 33,
            budget_uj: 1 << 40,
            steward: did(3),
            chain_ids: if bit(4) { vec![id(4), id(1)] } else { Vec::new() },
            breach: bit(5).then_some(Reason::BadSignature),
            money: bit(6).then(|| Funds { currency: "USD".into(), minor: 500 }),
            tainted: bit(7),
        }
    }

    #[test]
    fn s8_the_direct_core_writer_is_byte_identical_to_the_value() {
        for i in 0..=255 {
            let c = core(i);
            assert_eq!(c.to_bytes().unwrap(), c.to_value().unwrap().encode(), "variant {i}");
        }
        let legacy = ReceiptCore { profile: Profile::Jcp1, ..core(0) };
        assert!(matches!(legacy.to_bytes(), Err(Error::LegacyMintRefused)));
        let no_payload = ReceiptCore { payload_hash: None, ..core(0) };
        assert!(matches!(no_payload.to_bytes(), Err(Error::Invalid { field: "payload_hash", .. })));
    }

    #[test]
    fn s3_the_core_fields_are_listed_in_canonical_key_order() {
        // Listed out of order, the writer would sort them (the same bytes,
        // more work): the listing is the fast path's, held here.
        let c = core(255);
        let entries = c.entries().unwrap();
        for w in entries.windows(2) {
            let (a, b) = (w[0].0, w[1].0);
            assert!((a.len(), a.as_bytes()) < (b.len(), b.as_bytes()), "{a} listed before {b}");
        }
    }

    #[test]
    fn s8_a_core_sealed_from_its_bytes_opens_to_its_value() {
        let k = Keypair::from_seed([3; 32]).unwrap();
        let c = core(0b0101_0101);
        let position = cose::Position { seq: Some(7), known_through: Some(9) };
        let sealed = c.seal(position, &k).unwrap();
        assert_eq!(sealed, cose::seal(&c.to_value().unwrap(), position, &k));
        let (env, opened) = cose::open(&sealed, &mut DidCache::new()).unwrap();
        assert_eq!(opened, c.to_value().unwrap());
        env.verify_signature().unwrap();
    }
}
