//! A partial stream's entries loaded back as the accounting's checked
//! records (stream index `s`): every table index, code and record checked,
//! the records carried whole opened again.

use jcp::cbor::ContentId;
use jcp::decision::{Reason, Verdict};
use jcp_receipt::cose::DidCache;
use jcp_receipt::receipt::Profile;
use jcp_receipt::settle::SignedSettlementNote;
use jcp_receipt::stream::{Fault, RecordKind};

use super::format::{kind_of, Entry, MetaEntry, PartialStream, ProfileTag, ReceiptEntry, VerdictTag, FAULTS};
use crate::check::{self, Body, Checked, Facts, Meta, Part};
use crate::report::StreamSummary;
use crate::AuditError;

/// Records per replayed part (the duplicate set's prefetch unit).
const PART_RECORDS: usize = 1024;

/// A partial stream, loaded: its report line, its records as the
/// accounting's parts, its settlement notes (§4.11).
pub(super) struct Loaded {
    /// Its line of the report (path and size).
    pub(super) summary: StreamSummary,
    /// Its checked records, in parts of [`PART_RECORDS`].
    pub(super) parts: Vec<Part>,
    /// The verified settlement notes beside it.
    pub(super) notes: Vec<SignedSettlementNote>,
}

/// A stream's entries as the accounting's checked records (stream index
/// `s`), every index, code and record checked; `at` names it in errors.
pub(super) fn load(st: &PartialStream, s: usize, file: &str, at: &str) -> Result<Loaded, AuditError> {
    let field = |f: String, message: String| AuditError::PartialField { file: file.into(), field: f, message };
    let key = |i: u32, f: &dyn Fn() -> String| -> Result<[u8; 32], AuditError> {
        st.keys
            .get(i as usize)
            .map(|k| k.0)
            .ok_or_else(|| field(f(), format!("index {i} outside keys ({} entries)", st.keys.len())))
    };
    let mut dids = DidCache::new();
    let mut parts: Vec<Part> = Vec::new();
    for (j, e) in st.records.iter().enumerate() {
        if j % PART_RECORDS == 0 {
            parts.push(Part::default());
        }
        let Some(part) = parts.last_mut() else { continue };
        let here = |name: &str| format!("{at}.records[{j}].{name}");
        let c = match e {
            Entry::Fault { at: off, code, len } => {
                let code = FAULTS
                    .into_iter()
                    .find(|f| f.code() == code)
                    .ok_or_else(|| field(here("code"), format!("{code:?} is not a framing fault")))?;
                Checked {
                    stream: s,
                    offset: *off,
                    kind: None,
                    body: Body::Fault(Fault { code, offset: *off, len: *len }),
                    meta: None,
                    refused_id: None,
                    raw: None,
                }
            }
            Entry::Refused { at: off, kind, code, message, id } => {
                let k = kind_of(kind).ok_or_else(|| field(here("kind"), format!("{kind:?} is not a record kind")))?;
                let code = crate::FindingCode::parse(code)
                    .ok_or_else(|| field(here("code"), format!("{code:?} is not a refusal code")))?;
                Checked {
                    stream: s,
                    offset: *off,
                    kind: Some(k),
                    body: Body::Refused(code, message.clone()),
                    meta: None,
                    refused_id: id.map(|h| h.0),
                    raw: None,
                }
            }
            Entry::Request { at: off, signed } => Checked {
                stream: s,
                offset: *off,
                kind: Some(RecordKind::Request),
                body: Body::WireRequest { signed: *signed },
                meta: None,
                refused_id: None,
                raw: None,
            },
            Entry::Whole { at: off, kind, bytes } => {
                let k = kind_of(kind)
                    .filter(|k| !matches!(k, RecordKind::Receipt | RecordKind::Request))
                    .ok_or_else(|| field(here("kind"), format!("{kind:?} is not a kind carried whole")))?;
                let (body, meta) = check::reopen(k, &bytes.0, &mut dids, &mut part.chains)
                    .map_err(|m| field(here("bytes"), format!("does not open: {m}")))?;
                if meta.is_none() != (k == RecordKind::Grant) || matches!(body, Body::Receipt(_)) {
                    return Err(field(here("bytes"), format!("not a {kind} record")));
                }
                Checked { stream: s, offset: *off, kind: Some(k), body, meta, refused_id: None, raw: None }
            }
            Entry::Outcome { at: off, meta, receipt } => {
                let meta = load_meta(meta, &|i, f| key(i, &|| here(&format!("meta.{f}"))))?;
                Checked {
                    stream: s,
                    offset: *off,
                    kind: Some(RecordKind::Outcome),
                    body: Body::Outcome(ContentId(receipt.0)),
                    meta: Some(meta),
                    refused_id: None,
                    raw: None,
                }
            }
            Entry::Receipt(r) => load_receipt(r, s, part, &|i, f| key(i, &|| here(f)), &|f, m| field(here(f), m), st)?,
        };
        part.checked.push(c);
    }
    let mut notes = Vec::with_capacity(st.settlement_notes.len());
    for (i, n) in st.settlement_notes.iter().enumerate() {
        notes.push(
            SignedSettlementNote::from_bytes(&n.0)
                .map_err(|e| field(format!("{at}.settlement_notes[{i}]"), e.to_string()))?,
        );
    }
    Ok(Loaded {
        summary: StreamSummary { path: st.path.clone(), bytes: st.bytes, ..StreamSummary::default() },
        parts,
        notes,
    })
}

/// A key table lookup: the index and the field naming it (for errors).
type KeyAt<'a> = dyn Fn(u32, &str) -> Result<[u8; 32], AuditError> + 'a;

/// A sealed record's stream facts, its steward looked up.
fn load_meta(m: &MetaEntry, key: &KeyAt<'_>) -> Result<Meta, AuditError> {
    Ok(Meta {
        steward: key(m.steward, "steward")?,
        dedup: u128::from_be_bytes(m.dedup.0),
        id: m.id.map(|h| h.0),
        seq: m.seq,
        known_through: m.known_through,
    })
}

/// A verified receipt's facts, every index and code checked; its chain
/// ids go to `part`'s arena.
fn load_receipt(
    r: &ReceiptEntry,
    s: usize,
    part: &mut Part,
    key: &KeyAt<'_>,
    field: &dyn Fn(&str, String) -> AuditError,
    st: &PartialStream,
) -> Result<Checked, AuditError> {
    let meta = load_meta(&r.meta, &|i, f| key(i, &format!("meta.{f}")))?;
    let reason = |f: &str, v: &str| Reason::parse(v).ok_or_else(|| field(f, format!("{v:?} is not a reason code")));
    let verdict = match (r.verdict, &r.reason) {
        (VerdictTag::Allow, None) => Verdict::Allow,
        (VerdictTag::Deny, Some(code)) => Verdict::Deny(reason("reason", code)?),
        (VerdictTag::Allow, Some(_)) => return Err(field("reason", "an allow has no reason".into())),
        (VerdictTag::Deny, None) => return Err(field("reason", "a deny states its reason".into())),
    };
    let action = match (verdict, r.action) {
        (Verdict::Allow, Some(i)) => st
            .actions
            .get(i as usize)
            .cloned()
            .ok_or_else(|| field("action", format!("index {i} outside actions ({} entries)", st.actions.len())))?,
        (Verdict::Deny(_), None) => String::new(),
        (Verdict::Allow, None) => return Err(field("action", "an allow names its action".into())),
        (Verdict::Deny(_), Some(_)) => return Err(field("action", "a deny's action is not kept".into())),
    };
    if meta.id.is_some() != (verdict == Verdict::Allow) {
        return Err(field("meta.id", "an allow, and only an allow, carries its record id".into()));
    }
    let start = part.chains.len();
    for (k, i) in r.chain.iter().enumerate() {
        part.chains.push(ContentId(key(*i, &format!("chain[{k}]"))?));
    }
    let chain = (u32::try_from(start).unwrap_or(u32::MAX), u32::try_from(r.chain.len()).unwrap_or(0));
    let facts = Facts {
        profile: match r.profile {
            ProfileTag::Jcp1 => Profile::Jcp1,
            ProfileTag::Jcp2 => Profile::Jcp2,
        },
        grant_id: ContentId(key(r.grant, "grant")?),
        subject: key(r.subject, "subject")?,
        verdict,
        cost_uj: r.cost_uj,
        provenance: r.provenance,
        coverage: r.coverage,
        measured: r.measured,
        budget_remaining_uj: r.remaining_uj,
        budget_uj: r.budget_uj,
        chain,
        breach: r.breach.as_deref().map(|b| reason("breach", b)).transpose()?,
        money_minor: r.money_minor,
        action,
    };
    Ok(Checked {
        stream: s,
        offset: r.at,
        kind: Some(RecordKind::Receipt),
        body: Body::Receipt(facts),
        meta: Some(meta),
        refused_id: None,
        raw: None,
    })
}
