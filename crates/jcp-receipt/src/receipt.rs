//! Spec §8: the JCR-1 receipt and its profiles.
//!
//! The `jcp/2` core is §8's flat uint/text field list. Fields §8 names only
//! in passing are carried, **only when they apply**, so that a plain receipt
//! is exactly §8's list (docs/decisions.md, "`jcp/2` optional fields"):
//! `chain_ids` (§8.1, chained decisions: every debited id, root first),
//! `breach` (a debit-point breach of the two-phase path, §4.9),
//! `cost_currency` + `cost_minor` (a priced decision, §4.8, so replay
//! restores the money dimension), `flow: "tainted"` (§4.10, so replay
//! restores the tainted allowance).

use jcp::cbor::{self, ContentId, SchemaError, Value};
use jcp::decision::{Decision, Money, Reason, Request, Verdict};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::frame::{FrameKind, Trust};
use jcp::identity::{Did, Keypair};

use crate::cose::{self, DidCache, Position, Sealed};
use crate::error::ReceiptError;

/// The profile tag in `jcp_receipt` (§8 profile versioning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Profile {
    /// The retired predecessor: no `payload_hash`. Verified, never minted.
    Jcp1,
    /// The current profile.
    Jcp2,
}

impl Profile {
    /// The wire tag.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jcp1 => "jcp/1",
            Self::Jcp2 => "jcp/2",
        }
    }
}

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
    pub money: Option<Money>,
    /// The argument was tainted (§4.10): its debit also counts against the
    /// tainted allowance.
    pub tainted: bool,
}

impl ReceiptCore {
    /// The `jcp/2` core of a decision the gate just made (allow or deny).
    /// `steward` is the sealing enforcement point.
    pub fn from_decision(decision: &Decision, req: &Request<'_>, steward: Did) -> Result<Self, ReceiptError> {
        let Some(leaf) = req.chain.last() else {
            return Err(ReceiptError::Invalid { field: "grant_id", problem: "a decision over no grant".into() });
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
    pub fn debited_ids(&self) -> Vec<ContentId> {
        if self.chain_ids.is_empty() {
            vec![self.grant_id]
        } else {
            self.chain_ids.clone()
        }
    }

    /// Whether the verdict is allow.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// The canonical core value. Refuses `jcp/1`: nothing mints it (§8).
    pub fn to_value(&self) -> Result<Value, ReceiptError> {
        if self.profile != Profile::Jcp2 {
            return Err(ReceiptError::LegacyMintRefused);
        }
        let Some(payload_hash) = self.payload_hash else {
            return Err(ReceiptError::Invalid { field: "payload_hash", problem: "jcp/2 requires it (C23)".into() });
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
    pub fn from_value(v: &Value, dids: &mut DidCache) -> Result<Self, ReceiptError> {
        let Value::Map(entries) = v else {
            return Err(SchemaError::NotAMap { object: OBJ }.into());
        };
        let mut out = Vec::with_capacity(entries.len());
        for (k, val) in entries {
            let Value::Text(k) = k else {
                return Err(SchemaError::Unknown { object: OBJ, field: format!("{k:?}") }.into());
            };
            let fv = match val {
                Value::Text(t) => FVal::Text(t),
                Value::Uint(n) => FVal::Uint(*n),
                Value::Array(items) => match items.iter().map(|i| if let Value::Text(t) = i { Some(t.as_str()) } else { None }).collect::<Option<Vec<&str>>>() {
                    Some(ts) => FVal::Texts(ts),
                    None => FVal::Other,
                },
                _ => FVal::Other,
            };
            out.push((k.as_str(), fv));
        }
        Self::from_entries(&out, dids)
    }

    /// Reads a core from its map entries (the one implementation of the
    /// profile rules, shared by the value path and the zero-copy path).
    pub(crate) fn from_entries(entries: &[(&str, FVal<'_>)], dids: &mut DidCache) -> Result<Self, ReceiptError> {
        let mut f = Entries { entries, taken: 0 };
        let profile = match f.text("jcp_receipt")? {
            "jcp/2" => Profile::Jcp2,
            "jcp/1" => Profile::Jcp1,
            other => return Err(ReceiptError::UnknownProfile(other.to_owned())),
        };
        let grant_id = f.cid("grant_id")?;
        let issuer = dids.parse(f.text("issuer")?)?;
        let subject = dids.parse(f.text("subject")?)?;
        let resource = f.cid("resource")?;
        let action = f.text("action")?.to_owned();
        // `jcp/1` has no payload_hash; a `jcp/1` core carrying one is not `jcp/1`
        // (closed world: `finish` refuses the untaken field).
        let payload_hash = match profile {
            Profile::Jcp2 => Some(f.cid("payload_hash")?),
            Profile::Jcp1 => None,
        };
        let fk = f.text("frame_kind")?;
        let frame_kind = FrameKind::parse(fk).ok_or_else(|| invalid("frame_kind", format!("unknown kind {fk:?}")))?;
        let trust = match f.text("trust")? {
            "control" => Trust::Control,
            "data" => Trust::Data,
            other => return Err(invalid("trust", format!("unknown trust {other:?}"))),
        };
        let verdict_s = f.text("verdict")?;
        let reason = f.opt_text("deny_reason")?;
        let verdict = match (verdict_s, reason) {
            ("allow", None) => Verdict::Allow,
            ("allow", Some(_)) => {
                return Err(invalid("deny_reason", "present on an allow (§8: omitted on allow)"));
            }
            ("deny", Some(r)) => Verdict::Deny(
                Reason::parse(r).ok_or_else(|| invalid("deny_reason", format!("unknown reason {r:?}")))?,
            ),
            ("deny", None) => return Err(invalid("deny_reason", "a deny must name its reason")),
            (other, _) => return Err(invalid("verdict", format!("{other:?} is neither allow nor deny"))),
        };
        let cost_uj = f.uint("cost_uj")?;
        let p = f.text("energy_provenance")?;
        let provenance = Provenance::parse(p).ok_or_else(|| invalid("energy_provenance", format!("{p:?}")))?;
        let coverage = match f.opt_text("energy_coverage")? {
            None => Coverage::Whole,
            Some("Partial") => Coverage::Partial,
            Some(other) => {
                return Err(invalid("energy_coverage", format!("{other:?}: only \"Partial\" is carried (§5.2)")))
            }
        };
        let budget_remaining_uj = f.uint("budget_remaining_uj")?;
        let budget_uj = f.uint("budget_uj")?;
        let steward = dids.parse(f.text("steward")?)?;
        let mut chain_ids = Vec::new();
        let mut breach = None;
        let mut money = None;
        let mut tainted = false;
        if profile == Profile::Jcp2 {
            if let Some(items) = f.opt_texts("chain_ids")? {
                for s in items {
                    chain_ids.push(ContentId::parse(s).ok_or_else(|| invalid("chain_ids", "expected content ids"))?);
                }
                if chain_ids.len() < 2 {
                    return Err(invalid("chain_ids", "carried only for multi-hop chains (§8.1)"));
                }
                if chain_ids.last() != Some(&grant_id) {
                    return Err(invalid("chain_ids", "the chain must end at grant_id (root first, leaf last)"));
                }
            }
            if let Some(b) = f.opt_text("breach")? {
                breach = Some(Reason::parse(b).ok_or_else(|| invalid("breach", format!("unknown reason {b:?}")))?);
                if verdict != Verdict::Allow {
                    return Err(invalid("breach", "a breach is recorded only on an allow"));
                }
            }
            match (f.opt_text("cost_currency")?, f.opt_uint("cost_minor")?) {
                (None, None) => {}
                (Some(c), Some(m)) if !c.is_empty() => money = Some(Money { currency: c.to_owned(), minor: m }),
                _ => return Err(invalid("cost_currency", "cost_currency and cost_minor come together")),
            }
            match f.opt_text("flow")? {
                None => {}
                Some("tainted") if verdict == Verdict::Allow => tainted = true,
                Some(other) => return Err(invalid("flow", format!("{other:?}: only \"tainted\", on an allow"))),
            }
        }
        f.finish()?;
        Ok(Self {
            profile,
            grant_id,
            issuer,
            subject,
            resource,
            action,
            payload_hash,
            frame_kind,
            trust,
            verdict,
            cost_uj,
            provenance,
            coverage,
            budget_remaining_uj,
            budget_uj,
            steward,
            chain_ids,
            breach,
            money,
            tainted,
        })
    }

    /// Seals as JCR-1 under `steward`, whose did must be the core's `steward`.
    pub fn seal(&self, position: Position, steward: &Keypair) -> Result<Vec<u8>, ReceiptError> {
        if steward.did() != self.steward {
            return Err(ReceiptError::StewardMismatch {
                core: self.steward.to_did_string(),
                kid: steward.did().to_did_string(),
            });
        }
        cose::seal(&self.to_value()?, position, steward)
    }
}

const OBJ: &str = "jcp_receipt";

/// A core field value as the profile reads it (anything else is `Other`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FVal<'a> {
    Text(&'a str),
    Uint(u64),
    Texts(Vec<&'a str>),
    Other,
}

/// Closed-world reading of core entries (mirrors `jcp::cbor::Fields`).
struct Entries<'e, 'a> {
    entries: &'e [(&'a str, FVal<'a>)],
    /// Bit i set = entry i taken (a core has far fewer than 64 fields).
    taken: u64,
}

impl<'a> Entries<'_, 'a> {
    fn opt(&mut self, field: &'static str) -> Option<&FVal<'a>> {
        let i = self.entries.iter().position(|(k, _)| *k == field)?;
        if i < 64 {
            self.taken |= 1 << i;
        }
        Some(&self.entries[i].1)
    }

    fn wrong(field: &'static str, what: &str) -> ReceiptError {
        SchemaError::Invalid { object: OBJ, field, problem: format!("expected {what}") }.into()
    }

    fn text(&mut self, field: &'static str) -> Result<&'a str, ReceiptError> {
        self.opt_text(field)?.ok_or_else(|| SchemaError::Missing { object: OBJ, field }.into())
    }

    fn opt_text(&mut self, field: &'static str) -> Result<Option<&'a str>, ReceiptError> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Text(t)) => Ok(Some(t)),
            Some(_) => Err(Self::wrong(field, "text")),
        }
    }

    fn uint(&mut self, field: &'static str) -> Result<u64, ReceiptError> {
        self.opt_uint(field)?.ok_or_else(|| SchemaError::Missing { object: OBJ, field }.into())
    }

    fn opt_uint(&mut self, field: &'static str) -> Result<Option<u64>, ReceiptError> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Uint(n)) => Ok(Some(*n)),
            Some(_) => Err(Self::wrong(field, "an unsigned integer")),
        }
    }

    fn opt_texts(&mut self, field: &'static str) -> Result<Option<Vec<&'a str>>, ReceiptError> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Texts(t)) => Ok(Some(t.clone())),
            Some(_) => Err(Self::wrong(field, "an array of text")),
        }
    }

    fn cid(&mut self, field: &'static str) -> Result<ContentId, ReceiptError> {
        let s = self.text(field)?;
        ContentId::parse(s).ok_or_else(|| Self::wrong(field, "a content id (64 lowercase hex digits)"))
    }

    fn finish(self) -> Result<(), ReceiptError> {
        if self.entries.len() > 64 {
            return Err(SchemaError::Unknown { object: OBJ, field: self.entries[64].0.to_owned() }.into());
        }
        match (0..self.entries.len()).find(|i| self.taken & (1 << i) == 0) {
            Some(i) => Err(SchemaError::Unknown { object: OBJ, field: self.entries[i].0.to_owned() }.into()),
            None => Ok(()),
        }
    }
}

fn invalid(field: &'static str, problem: impl Into<String>) -> ReceiptError {
    ReceiptError::Invalid { field, problem: problem.into() }
}

/// A receipt whose envelope opened and whose core read under its profile.
/// The signature is checked by [`OpenedReceipt::verify`] (or in a batch).
#[derive(Debug, Clone)]
pub struct OpenedReceipt {
    /// The typed core.
    pub core: ReceiptCore,
    /// The envelope (tbs, signature, id, position).
    pub sealed: Sealed,
}

impl OpenedReceipt {
    /// Opens and reads a receipt without checking the signature.
    pub fn open(bytes: &[u8], dids: &mut DidCache) -> Result<Self, ReceiptError> {
        if let Some(fast) = crate::fast::open_receipt(bytes, dids) {
            return Ok(fast);
        }
        let (sealed, core) = cose::open(bytes, dids)?;
        let core = ReceiptCore::from_value(&core, dids)?;
        if core.steward != sealed.steward {
            return Err(ReceiptError::StewardMismatch {
                core: core.steward.to_did_string(),
                kid: sealed.steward.to_did_string(),
            });
        }
        Ok(Self { core, sealed })
    }

    /// Checks the expected steward (C5) and the signature.
    pub fn verify(&self, expected: Option<&Did>) -> Result<(), ReceiptError> {
        check_steward(&self.sealed.steward, expected)?;
        self.sealed.verify_signature()
    }
}

pub(crate) fn check_steward(found: &Did, expected: Option<&Did>) -> Result<(), ReceiptError> {
    match expected {
        Some(e) if e != found => {
            Err(ReceiptError::WrongSteward { expected: e.to_did_string(), found: found.to_did_string() })
        }
        _ => Ok(()),
    }
}

/// A receipt that verified.
#[derive(Debug, Clone)]
pub struct VerifiedReceipt {
    /// The typed core.
    pub core: ReceiptCore,
    /// Stream position from the protected header.
    pub position: Position,
    /// The receipt id (blake3 of the envelope bytes).
    pub id: ContentId,
}

/// Opens and verifies a JCR-1 receipt under the profile it names (§8).
/// With `expected`, a receipt sealed by any other steward fails (C5).
pub fn verify_receipt(bytes: &[u8], expected: Option<&Did>) -> Result<VerifiedReceipt, ReceiptError> {
    let mut dids = DidCache::new();
    let o = OpenedReceipt::open(bytes, &mut dids)?;
    o.verify(expected)?;
    Ok(VerifiedReceipt { core: o.core, position: o.sealed.position, id: o.sealed.id })
}
