//! The receipt profile's rules (§8), applied as a core is read: a
//! [`CoreView`] is a core that passed them, its texts still borrowed from
//! the record. This is the one reading that names what is wrong; the
//! zero-copy reader (`crate::fast`) accepts only what it accepts.

use jcp::cbor::ContentId;
use jcp::decision::{Reason, Verdict};
use jcp::energy::{Coverage, Provenance};
use jcp::frame::{FrameKind, Trust};
use jcp::grant::Funds;

use super::entries::{invalid, utf8, Entries, TextItems};
use super::{Profile, ReceiptCore};
use crate::cose::DidCache;
use crate::error::Error;
use crate::fields::Field;

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
    /// [`ReceiptCore::measured`].
    pub measured: Option<u64>,
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
        self.chain.into_iter().flat_map(TextItems::iter).filter_map(move |s| dids.content_id(s))
    }

    /// Reads a core under its profile's rules, field by field in the order
    /// their errors take precedence, then refuses any field left over
    /// (closed world).
    pub(super) fn read(mut f: Entries<'_, 'a>, dids: &mut DidCache) -> Result<Self, Error> {
        let profile = read_profile(&mut f)?;
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
        let frame_kind = read_frame_kind(&mut f)?;
        let trust = read_trust(&mut f)?;
        let verdict = read_verdict(&mut f)?;
        let cost_uj = f.uint(Field::CostUj)?;
        let provenance = read_provenance(&mut f)?;
        let coverage = read_coverage(&mut f)?;
        let budget_remaining_uj = f.uint(Field::BudgetRemainingUj)?;
        let budget_uj = f.uint(Field::BudgetUj)?;
        let (steward, steward_key) = f.did(Field::Steward, dids)?;
        let optional = match profile {
            Profile::Jcp2 => Jcp2Optional::read(&mut f, dids, grant_id, verdict, (cost_uj, provenance))?,
            Profile::Jcp1 => Jcp2Optional::default(),
        };
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
            measured: optional.measured,
            budget_remaining_uj,
            budget_uj,
            steward,
            steward_key,
            chain: optional.chain,
            breach: optional.breach,
            money: optional.money,
            tainted: optional.tainted,
        })
    }
}

// Known ASCII values are matched as bytes; only anything else is checked as
// UTF-8 (first, as reading it as text would) to be named.

/// The profile tag (§8 profile versioning): `jcp/2`, or the retired `jcp/1`.
fn read_profile(f: &mut Entries<'_, '_>) -> Result<Profile, Error> {
    match f.raw(Field::JcpReceipt)? {
        b"jcp/2" => Ok(Profile::Jcp2),
        b"jcp/1" => Ok(Profile::Jcp1),
        other => Err(Error::UnknownProfile(utf8(Field::JcpReceipt, other)?.to_owned())),
    }
}

/// A field whose known values are matched as bytes (`parse`); anything
/// else is refused as `core-invalid`, its text described by `unknown`
/// (after the UTF-8 check reading it as text would make).
fn read_known<T>(
    f: &mut Entries<'_, '_>,
    field: Field,
    parse: impl FnOnce(&[u8]) -> Option<T>,
    unknown: impl FnOnce(&str) -> String,
) -> Result<T, Error> {
    let raw = f.raw(field)?;
    match parse(raw) {
        Some(v) => Ok(v),
        None => Err(invalid(field.name(), unknown(utf8(field, raw)?))),
    }
}

/// The frame kind (§6).
fn read_frame_kind(f: &mut Entries<'_, '_>) -> Result<FrameKind, Error> {
    read_known(f, Field::FrameKind, FrameKind::parse_bytes, |fk| format!("unknown kind {fk:?}"))
}

/// The frame's trust tag (§6): `control` or `data`.
fn read_trust(f: &mut Entries<'_, '_>) -> Result<Trust, Error> {
    let parse = |t: &[u8]| match t {
        b"control" => Some(Trust::Control),
        b"data" => Some(Trust::Data),
        _ => None,
    };
    read_known(f, Field::Trust, parse, |t| format!("unknown trust {t:?}"))
}

/// The verdict with its reason (§8): an allow carries no `deny_reason`, a
/// deny must name one the spec defines.
fn read_verdict(f: &mut Entries<'_, '_>) -> Result<Verdict, Error> {
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
    match (allow, reason) {
        (Some(true), None) => Ok(Verdict::Allow),
        (Some(true), Some(_)) => Err(invalid("deny_reason", "present on an allow (§8: omitted on allow)")),
        (Some(false), Some(r)) => {
            Ok(Verdict::Deny(Reason::parse(r).ok_or_else(|| invalid("deny_reason", format!("unknown reason {r:?}")))?))
        }
        (Some(false), None) => Err(invalid("deny_reason", "a deny must name its reason")),
        (None, _) => {
            let other = utf8(Field::Verdict, verdict_b)?;
            Err(invalid("verdict", format!("{other:?} is neither allow nor deny")))
        }
    }
}

/// How the cost was obtained (§5.2 `energy_provenance`).
fn read_provenance(f: &mut Entries<'_, '_>) -> Result<Provenance, Error> {
    read_known(f, Field::EnergyProvenance, Provenance::parse_bytes, |p| format!("{p:?}"))
}

/// How much of the work the cost covers (§5.2): absent is whole; only
/// `"Partial"` is carried.
fn read_coverage(f: &mut Entries<'_, '_>) -> Result<Coverage, Error> {
    match f.opt_text(Field::EnergyCoverage)? {
        None => Ok(Coverage::Whole),
        Some("Partial") => Ok(Coverage::Partial),
        Some(other) => Err(invalid("energy_coverage", format!("{other:?}: only \"Partial\" is carried (§5.2)"))),
    }
}

/// The `jcp/2` fields carried only when they apply (docs/decisions.md,
/// "`jcp/2` optional fields"); a `jcp/1` core carries none of them.
#[derive(Default)]
struct Jcp2Optional<'a> {
    /// `chain_ids` (§8.1): every debited id, root first, for a multi-hop chain.
    chain: Option<TextItems<'a>>,
    /// `breach` (§4.9): a debit-point breach recorded on an allow.
    breach: Option<Reason>,
    /// `cost_currency` + `cost_minor` (§4.8): a priced decision.
    money: Option<(&'a str, u64)>,
    /// `flow: "tainted"` (§4.10), on an allow.
    tainted: bool,
    /// `energy_measured` (§5): never on an `Estimator` cost, never above `cost_uj`.
    measured: Option<u64>,
}

impl<'a> Jcp2Optional<'a> {
    /// Reads each optional field and the rule that goes with it: a chain of
    /// two or more ending at `grant_id`, a breach and a taint only on an
    /// allow, currency and minor units together.
    fn read(
        f: &mut Entries<'_, 'a>,
        dids: &mut DidCache,
        grant_id: ContentId,
        verdict: Verdict,
        (cost_uj, provenance): (u64, Provenance),
    ) -> Result<Self, Error> {
        let mut out = Self::default();
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
            out.chain = Some(items);
        }
        if let Some(b) = f.opt_text(Field::Breach)? {
            out.breach = Some(Reason::parse(b).ok_or_else(|| invalid("breach", format!("unknown reason {b:?}")))?);
            if verdict != Verdict::Allow {
                return Err(invalid("breach", "a breach is recorded only on an allow"));
            }
        }
        match (f.opt_text(Field::CostCurrency)?, f.opt_uint(Field::CostMinor)?) {
            (None, None) => {}
            (Some(c), Some(m)) if !c.is_empty() => out.money = Some((c, m)),
            _ => return Err(invalid("cost_currency", "cost_currency and cost_minor come together")),
        }
        match f.opt_text(Field::Flow)? {
            None => {}
            Some("tainted") if verdict == Verdict::Allow => out.tainted = true,
            Some(other) => return Err(invalid("flow", format!("{other:?}: only \"tainted\", on an allow"))),
        }
        out.measured = f.opt_uint(Field::EnergyMeasured)?;
        if let Some(m) = out.measured {
            if !measured_fits(m, cost_uj, provenance) {
                return Err(invalid(
                    "energy_measured",
                    format!("{m} µJ beside a {provenance} cost of {cost_uj} µJ: an estimate carries none, and no cost is below its measurement (§5)"),
                ));
            }
        }
        Ok(out)
    }
}

/// §5 on a sealed core: a measured figure is never beside an `Estimator`
/// cost, and never above the cost it rests under.
pub(crate) fn measured_fits(measured: u64, cost_uj: u64, provenance: Provenance) -> bool {
    provenance != Provenance::Estimator && measured <= cost_uj
}

impl CoreView<'_> {
    /// Whether the cost rests on a measurement: a hardware grade carrying
    /// its measured figure (§5, §5.5). A `HwShunt` label without one is a
    /// claim and is not counted as measured.
    pub fn rests_on_measurement(&self) -> bool {
        self.provenance.is_measured() && self.measured.is_some()
    }
}

impl ReceiptCore {
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
            measured: v.measured,
            budget_remaining_uj: v.budget_remaining_uj,
            budget_uj: v.budget_uj,
            steward: dids.parse_bytes(v.steward)?,
            chain_ids,
            breach: v.breach,
            money: v.money.map(|(c, minor)| Funds { currency: c.to_owned(), minor }),
            tainted: v.tainted,
        })
    }
}
