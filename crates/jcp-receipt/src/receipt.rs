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
use jcp::decision::{Decision, Reason, Request, Verdict};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::frame::{FrameKind, Trust};
use jcp::grant::Funds;
use jcp::identity::{Did, Keypair};

use crate::cose::{self, DidCache, Position, Sealed};
use crate::error::Error;
use crate::fields::{slot_of, Field, FIELDS};

/// A receipt core read and checked under its profile (every rule
/// [`ReceiptCore`] is read under: this is where they are), its texts still
/// borrowed from the record: what an auditor reads of a receipt without
/// materializing the typed core (no key copies, no allocation).
/// [`ReceiptCore::from_view`] materializes it.
#[derive(Debug, Clone, Copy)]
pub struct CoreView<'a> {
    /// [`ReceiptCore::profile`].
    pub profile: Profile,
    /// [`ReceiptCore::grant_id`].
    pub grant_id: ContentId,
    pub(crate) issuer: &'a [u8],
    pub(crate) subject: &'a [u8],
    /// The subject's public-key bytes.
    pub subject_key: [u8; 32],
    /// [`ReceiptCore::resource`].
    pub resource: ContentId,
    /// [`ReceiptCore::action`], borrowed.
    pub action: &'a str,
    /// [`ReceiptCore::payload_hash`].
    pub payload_hash: Option<ContentId>,
    /// [`ReceiptCore::frame_kind`].
    pub frame_kind: FrameKind,
    /// [`ReceiptCore::trust`].
    pub trust: Trust,
    /// [`ReceiptCore::verdict`].
    pub verdict: Verdict,
    /// [`ReceiptCore::cost_uj`].
    pub cost_uj: u64,
    /// [`ReceiptCore::provenance`].
    pub provenance: Provenance,
    /// [`ReceiptCore::coverage`].
    pub coverage: Coverage,
    /// [`ReceiptCore::budget_remaining_uj`].
    pub budget_remaining_uj: u64,
    /// [`ReceiptCore::budget_uj`].
    pub budget_uj: u64,
    pub(crate) steward: &'a [u8],
    /// The signer's public-key bytes.
    pub steward_key: [u8; 32],
    pub(crate) chain: Option<TextItems<'a>>,
    /// [`ReceiptCore::breach`].
    pub breach: Option<Reason>,
    /// A priced decision's currency and minor units (§4.8).
    pub money: Option<(&'a str, u64)>,
    /// [`ReceiptCore::tainted`].
    pub tainted: bool,
}

impl<'a> CoreView<'a> {
    /// Every debited grant id, root first, for a chained decision (§8.1),
    /// parsed again through `dids` (each was checked when the view was
    /// read, and the cache recalls it); nothing for a single-grant decision.
    pub fn chain_ids<'d>(&self, dids: &'d mut DidCache) -> impl Iterator<Item = ContentId> + use<'a, 'd> {
        self.chain.into_iter().flat_map(|items| items.iter()).filter_map(move |s| dids.content_id(s))
    }

    fn read(mut f: Entries<'_, 'a>, dids: &mut DidCache) -> Result<Self, Error> {
        // Known ASCII values are matched as bytes; only anything else is
        // checked as UTF-8 (first, as reading it as text would) to be named.
        let profile = match f.raw(Field::JcpReceipt)? {
            b"jcp/2" => Profile::Jcp2,
            b"jcp/1" => Profile::Jcp1,
            other => return Err(Error::UnknownProfile(utf8(Field::JcpReceipt, other)?.to_owned())),
        };
        let grant_id = f.cid_cached(Field::GrantId, dids)?;
        let (issuer, _) = f.did(Field::Issuer, dids)?;
        let (subject, subject_key) = f.did(Field::Subject, dids)?;
        let resource = f.cid_cached(Field::Resource, dids)?;
        let action = f.text(Field::Action)?;
        // `jcp/1` has no payload_hash; a `jcp/1` core carrying one is not `jcp/1`
        // (closed world: `finish` refuses the untaken field).
        let payload_hash = match profile {
            Profile::Jcp2 => Some(f.cid(Field::PayloadHash)?), // unique per decision: not cached
            Profile::Jcp1 => None,
        };
        let fk = f.raw(Field::FrameKind)?;
        let Some(frame_kind) = FrameKind::parse_bytes(fk) else {
            let fk = utf8(Field::FrameKind, fk)?;
            return Err(invalid("frame_kind", format!("unknown kind {fk:?}")));
        };
        let trust = match f.raw(Field::Trust)? {
            b"control" => Trust::Control,
            b"data" => Trust::Data,
            other => return Err(invalid("trust", format!("unknown trust {:?}", utf8(Field::Trust, other)?))),
        };
        let verdict_b = f.raw(Field::Verdict)?;
        let allow = match verdict_b {
            b"allow" => Some(true),
            b"deny" => Some(false),
            other => {
                utf8(Field::Verdict, other)?;
                None
            }
        };
        let reason = f.opt_text(Field::DenyReason)?;
        let verdict = match (allow, reason) {
            (Some(true), None) => Verdict::Allow,
            (Some(true), Some(_)) => {
                return Err(invalid("deny_reason", "present on an allow (§8: omitted on allow)"));
            }
            (Some(false), Some(r)) => {
                Verdict::Deny(Reason::parse(r).ok_or_else(|| invalid("deny_reason", format!("unknown reason {r:?}")))?)
            }
            (Some(false), None) => return Err(invalid("deny_reason", "a deny must name its reason")),
            (None, _) => {
                let other = utf8(Field::Verdict, verdict_b)?;
                return Err(invalid("verdict", format!("{other:?} is neither allow nor deny")));
            }
        };
        let cost_uj = f.uint(Field::CostUj)?;
        let p = f.raw(Field::EnergyProvenance)?;
        let Some(provenance) = Provenance::parse_bytes(p) else {
            let p = utf8(Field::EnergyProvenance, p)?;
            return Err(invalid("energy_provenance", format!("{p:?}")));
        };
        let coverage = match f.opt_text(Field::EnergyCoverage)? {
            None => Coverage::Whole,
            Some("Partial") => Coverage::Partial,
            Some(other) => {
                return Err(invalid("energy_coverage", format!("{other:?}: only \"Partial\" is carried (§5.2)")))
            }
        };
        let budget_remaining_uj = f.uint(Field::BudgetRemainingUj)?;
        let budget_uj = f.uint(Field::BudgetUj)?;
        let (steward, steward_key) = f.did(Field::Steward, dids)?;
        let mut chain = None;
        let mut breach = None;
        let mut money = None;
        let mut tainted = false;
        if profile == Profile::Jcp2 {
            if let Some(items) = f.opt_texts(Field::ChainIds)? {
                let mut last = None;
                for s in items.iter() {
                    last = Some(dids.content_id(s).ok_or_else(|| invalid("chain_ids", "expected content ids"))?);
                }
                if items.len() < 2 {
                    return Err(invalid("chain_ids", "carried only for multi-hop chains (§8.1)"));
                }
                if last != Some(grant_id) {
                    return Err(invalid("chain_ids", "the chain must end at grant_id (root first, leaf last)"));
                }
                chain = Some(items);
            }
            if let Some(b) = f.opt_text(Field::Breach)? {
                breach = Some(Reason::parse(b).ok_or_else(|| invalid("breach", format!("unknown reason {b:?}")))?);
                if verdict != Verdict::Allow {
                    return Err(invalid("breach", "a breach is recorded only on an allow"));
                }
            }
            match (f.opt_text(Field::CostCurrency)?, f.opt_uint(Field::CostMinor)?) {
                (None, None) => {}
                (Some(c), Some(m)) if !c.is_empty() => money = Some((c, m)),
                _ => return Err(invalid("cost_currency", "cost_currency and cost_minor come together")),
            }
            match f.opt_text(Field::Flow)? {
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
            subject_key,
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
            steward_key,
            chain,
            breach,
            money,
            tainted,
        })
    }
}

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

    /// Materializes a checked view (its keys and ids were parsed when it was
    /// read, so the lookups here are the cache's hits).
    pub fn from_view(v: &CoreView<'_>, dids: &mut DidCache) -> Result<Self, Error> {
        let mut chain_ids = Vec::new();
        if let Some(items) = v.chain {
            chain_ids.reserve_exact(items.len());
            for s in items.iter() {
                chain_ids.push(dids.content_id(s).ok_or_else(|| invalid("chain_ids", "expected content ids"))?);
            }
        }
        Ok(Self {
            profile: v.profile,
            grant_id: v.grant_id,
            issuer: dids.parse_bytes(v.issuer)?,
            subject: dids.parse_bytes(v.subject)?,
            resource: v.resource,
            action: v.action.to_owned(),
            payload_hash: v.payload_hash,
            frame_kind: v.frame_kind,
            trust: v.trust,
            verdict: v.verdict,
            cost_uj: v.cost_uj,
            provenance: v.provenance,
            coverage: v.coverage,
            budget_remaining_uj: v.budget_remaining_uj,
            budget_uj: v.budget_uj,
            steward: dids.parse_bytes(v.steward)?,
            chain_ids,
            breach: v.breach,
            money: v.money.map(|(c, minor)| Funds { currency: c.to_owned(), minor }),
            tainted: v.tainted,
        })
    }

    /// Seals as JCR-1 under `steward`, whose did must be the core's `steward`.
    pub fn seal(&self, position: Position, steward: &Keypair) -> Result<Vec<u8>, Error> {
        if steward.did() != self.steward {
            return Err(Error::StewardMismatch {
                core: self.steward.to_did_string(),
                kid: steward.did().to_did_string(),
            });
        }
        cose::seal(&self.to_value()?, position, steward)
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

const OBJ: &str = "jcp_receipt";

/// A core field value as the profile reads it (anything else is `Other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FVal<'a> {
    /// A text string's bytes. UTF-8 is checked where the text is read as
    /// text ([`Entries::text`]); ids and keys are checked by their own
    /// parsers, which accept only ASCII, so no string is validated twice.
    Text(&'a [u8]),
    Uint(u64),
    Texts(TextItems<'a>),
    Other,
}

/// An array of text strings as a core value: the zero-copy reader's items
/// left in their encoding (each checked to be a text string and a content
/// id when read, so walking them again cannot fail), or the value path's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextItems<'a> {
    /// `n` CBOR text strings back to back.
    Cbor {
        enc: &'a [u8],
        n: usize,
    },
    List(&'a [&'a [u8]]),
}

impl<'a> TextItems<'a> {
    fn len(self) -> usize {
        match self {
            Self::Cbor { n, .. } => n,
            Self::List(l) => l.len(),
        }
    }

    fn iter(self) -> impl Iterator<Item = &'a [u8]> {
        let (enc, list) = match self {
            Self::Cbor { enc, .. } => (enc, &[][..]),
            Self::List(l) => (&[][..], l),
        };
        crate::raw::text_items(enc).chain(list.iter().copied())
    }
}

/// Closed-world reading of core entries (mirrors `jcp::cbor::Fields`). One
/// pass sorts the entries into per-field slots, so each read is an index,
/// not a search; a key the profile does not know, or one given twice, is
/// refused by [`Entries::finish`].
struct Entries<'e, 'a> {
    entries: &'e [(&'a [u8], FVal<'a>)],
    /// Entry index of each known field present.
    slots: [Option<usize>; FIELDS],
    /// Bit i set = slot i taken.
    taken: u32,
    /// The first entry that is unknown or repeats a field.
    stray: Option<usize>,
}

impl<'e, 'a> Entries<'e, 'a> {
    fn new(entries: &'e [(&'a [u8], FVal<'a>)]) -> Self {
        let mut slots = [None; FIELDS];
        let mut stray = None;
        for (i, (k, _)) in entries.iter().enumerate() {
            match slot_of(k) {
                Some(s) if slots[s].is_none() => slots[s] = Some(i),
                _ => {
                    stray.get_or_insert(i);
                }
            }
        }
        Self { entries, slots, taken: 0, stray }
    }

    fn opt(&mut self, field: Field) -> Option<&'e FVal<'a>> {
        let i = self.slots[field.slot()]?;
        self.taken |= 1 << field.slot();
        Some(&self.entries[i].1)
    }

    fn wrong(field: Field, what: &str) -> Error {
        SchemaError::Invalid { object: OBJ, field: field.name(), problem: format!("expected {what}") }.into()
    }

    fn text(&mut self, field: Field) -> Result<&'a str, Error> {
        self.opt_text(field)?.ok_or_else(|| SchemaError::Missing { object: OBJ, field: field.name() }.into())
    }

    fn opt_raw(&mut self, field: Field) -> Result<Option<&'a [u8]>, Error> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Text(t)) => Ok(Some(t)),
            Some(_) => Err(Self::wrong(field, "text")),
        }
    }

    fn raw(&mut self, field: Field) -> Result<&'a [u8], Error> {
        self.opt_raw(field)?.ok_or_else(|| SchemaError::Missing { object: OBJ, field: field.name() }.into())
    }

    fn opt_text(&mut self, field: Field) -> Result<Option<&'a str>, Error> {
        match self.opt_raw(field)? {
            None => Ok(None),
            Some(t) => utf8(field, t).map(Some),
        }
    }

    /// A `did:key`'s text and public-key bytes (the cache compares bytes;
    /// only a miss parses, and the parser accepts only ASCII).
    fn did(&mut self, field: Field, dids: &mut DidCache) -> Result<(&'a [u8], [u8; 32]), Error> {
        let raw = self.raw(field)?;
        Ok((raw, dids.key_bytes(raw)?))
    }

    fn uint(&mut self, field: Field) -> Result<u64, Error> {
        self.opt_uint(field)?.ok_or_else(|| SchemaError::Missing { object: OBJ, field: field.name() }.into())
    }

    fn opt_uint(&mut self, field: Field) -> Result<Option<u64>, Error> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Uint(n)) => Ok(Some(*n)),
            Some(_) => Err(Self::wrong(field, "an unsigned integer")),
        }
    }

    fn opt_texts(&mut self, field: Field) -> Result<Option<TextItems<'a>>, Error> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Texts(t)) => Ok(Some(*t)),
            Some(_) => Err(Self::wrong(field, "an array of text")),
        }
    }

    fn cid(&mut self, field: Field) -> Result<ContentId, Error> {
        let s = self.raw(field)?;
        ContentId::parse_bytes(s).ok_or_else(|| Self::not_cid(field))
    }

    /// [`Entries::cid`] through the cache's recent content ids (grant ids
    /// and resources repeat from one receipt to the next).
    fn cid_cached(&mut self, field: Field, dids: &mut DidCache) -> Result<ContentId, Error> {
        let s = self.raw(field)?;
        dids.content_id(s).ok_or_else(|| Self::not_cid(field))
    }

    fn not_cid(field: Field) -> Error {
        Self::wrong(field, "a content id (64 lowercase hex digits)")
    }

    fn finish(self) -> Result<(), Error> {
        let untaken = (0..FIELDS).filter(|&s| self.taken & (1 << s) == 0).filter_map(|s| self.slots[s]).min();
        match self.stray.into_iter().chain(untaken).min() {
            Some(i) => Err(SchemaError::Unknown {
                object: OBJ,
                field: String::from_utf8_lossy(self.entries[i].0).into_owned(),
            }
            .into()),
            None => Ok(()),
        }
    }
}

/// A field's text as UTF-8, or the error reading it as text gives.
fn utf8(field: Field, t: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(t).map_err(|_| Entries::wrong(field, "UTF-8 text"))
}

fn invalid(field: &'static str, problem: impl Into<String>) -> Error {
    Error::Invalid { field, problem: problem.into() }
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
    /// [`OpenedReceipt::open`] through `coset` only (the reference path the
    /// zero-copy reader must never be wider than; for tests and fuzzing).
    #[doc(hidden)]
    pub fn open_coset(bytes: &[u8], dids: &mut DidCache) -> Result<Self, Error> {
        let (sealed, core) = cose::open(bytes, dids)?;
        let core = ReceiptCore::from_value(&core, dids)?;
        if core.steward != sealed.steward {
            return Err(Error::StewardMismatch {
                core: core.steward.to_did_string(),
                kid: sealed.steward.to_did_string(),
            });
        }
        Ok(Self { core, sealed })
    }

    /// Checks the expected steward (C5) and the signature.
    pub fn verify(&self, expected: Option<&Did>) -> Result<(), Error> {
        check_steward(&self.sealed.steward, expected)?;
        self.sealed.verify_signature()
    }
}

pub(crate) fn check_steward(found: &Did, expected: Option<&Did>) -> Result<(), Error> {
    match expected {
        Some(e) if e != found => Err(Error::WrongSteward { expected: e.to_did_string(), found: found.to_did_string() }),
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
pub fn verify_receipt(bytes: &[u8], expected: Option<&Did>) -> Result<VerifiedReceipt, Error> {
    let mut dids = DidCache::new();
    let o = OpenedReceipt::open(bytes, &mut dids)?;
    o.verify(expected)?;
    Ok(VerifiedReceipt { core: o.core, position: o.sealed.position, id: o.sealed.id })
}
