//! Partial audits: a fleet's streams audited as parallel jobs (§4.3
//! propagation, §4.5 shards, §8.2), then merged into the one report a single
//! run over all of them gives, byte for byte.
//!
//! The expensive half of an audit (reading, decoding, checking every
//! signature) is per record and independent of order; the accounting (the
//! duplicate set, per-steward remainders, revocations against allows of
//! other points, §4.11 unresolved decisions, the findings cap) is serial and
//! crosses streams. A partial therefore carries each stream's **checked
//! records** as the accounting reads them — the facts of every receipt, its
//! steward, marker, sequence and duplicate key, outcomes by the receipt they
//! name, refusals and framing faults with their codes, and the rare records
//! (grants, revocation notices with their `known_through` markers,
//! amendments, statements, settlements, closings) as their bytes — with the
//! stream's settlement notes. `merge` replays them through the same
//! accounting, streams ordered by path, so the merged report is the single
//! run's over those paths in that order (docs/decisions.md, "fleet audits").
//!
//! The file is JSON, versioned ([`PARTIAL_FORMAT`], the spec it applies),
//! strictly decoded: unknown or duplicate fields, wrong types, non-lowercase
//! hex, an unknown code, an index outside its table and a record that does
//! not open are each an [`AuditError`] naming the file and the field; and
//! a partial is read only in its one encoding (what it re-encodes to). A
//! partial states the options that change a report (expected stewards,
//! verification, the findings cap); partials made under different ones are
//! refused together, since no single run gives their merge.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use jcp::cbor::ContentId;
use jcp::decision::{Reason, Verdict};
use jcp::energy::{Coverage, Provenance};
use jcp::identity::Did;
use jcp_receipt::cose::DidCache;
use jcp_receipt::receipt::Profile;
use jcp_receipt::settle::SignedSettlementNote;
use jcp_receipt::stream::{Fault, FaultCode, RecordKind};
use serde::{Deserialize, Serialize};

use crate::check::{self, Body, Checked, Facts, Meta, Part};
use crate::engine::{self, Engine, Sink};
use crate::report::{Report, StreamSummary};
use crate::{AuditError, AuditOptions, Progress, Verification};

/// The format tag a partial states (and a merge requires).
pub const PARTIAL_FORMAT: &str = "jcp-audit-partial/1";
/// The spec whose audit a partial carries.
const SPEC: &str = "jcp-v0.3";
/// Records per replayed part (the duplicate set's prefetch unit).
const PART_RECORDS: usize = 1024;

/// A partial audit: some streams' checked records, mergeable with others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partial {
    /// [`PARTIAL_FORMAT`].
    pub format: String,
    /// The spec applied (`jcp-v0.3`).
    pub spec: String,
    /// The options that change a report; every merged partial states the same.
    pub options: PartialOptions,
    /// The streams, ordered by path.
    pub streams: Vec<PartialStream>,
}

/// The audit options a report depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialOptions {
    /// Expected stewards (C5), as dids, sorted, each once; empty: any.
    pub expected_stewards: Vec<String>,
    /// `batch` or `strict` signature checking.
    pub verification: String,
    /// Findings kept in detail.
    pub max_findings: u64,
}

/// One stream's checked records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialStream {
    /// The path as the audit was given it (the report's stream line).
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// 32-byte values the records name by index: public keys (stewards,
    /// subjects) and content ids (grants, chain links).
    pub keys: Vec<Hex<32>>,
    /// Action names the allows name by index.
    pub actions: Vec<String>,
    /// Every record and fault, in stream order.
    pub records: Vec<Entry>,
    /// The verified settlement notes beside the stream (§4.11), as bytes.
    pub settlement_notes: Vec<HexBytes>,
    /// Notes beside it that did not verify.
    pub settlement_notes_refused: u64,
}

/// One checked record (or framing fault) of a stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Entry {
    /// A framing fault: its code (`torn-tail`, …) and the bytes skipped.
    Fault {
        /// Byte offset.
        at: u64,
        /// The fault's code.
        code: String,
        /// Bytes skipped.
        len: u64,
    },
    /// A record refused: its kind, the refusal's code and sentence.
    Refused {
        /// Byte offset.
        at: u64,
        /// The record kind (`receipt`, `outcome`, …).
        kind: String,
        /// The refusal's code.
        code: String,
        /// What was wrong.
        message: String,
        /// A refused receipt's record id (its outcome is then not an orphan).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<Hex<32>>,
    },
    /// A wire request record (§11).
    Request {
        /// Byte offset.
        at: u64,
    },
    /// A record carried whole (grant, revocation/amendment/statement notice,
    /// closing, settlement): decoded again at the merge, its signature as
    /// the partial found it (verified).
    Whole {
        /// Byte offset.
        at: u64,
        /// The record kind.
        kind: String,
        /// The record's bytes.
        bytes: HexBytes,
    },
    /// A verified receipt.
    Receipt(Box<ReceiptEntry>),
    /// A verified outcome.
    Outcome {
        /// Byte offset.
        at: u64,
        /// Its sealing facts.
        meta: MetaEntry,
        /// The receipt it names.
        receipt: Hex<32>,
    },
}

/// A sealed record's stream facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaEntry {
    /// The steward: an index into `keys`.
    pub steward: u32,
    /// The duplicate key (the first 16 bytes of the signature's `R`).
    pub dedup: Hex<16>,
    /// The record id (allows only: their outcomes name it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Hex<32>>,
    /// Stream sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The point's `known_through` marker (§4.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_through: Option<u64>,
}

/// A verified receipt's facts (§8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptEntry {
    /// Byte offset.
    pub at: u64,
    /// Its sealing facts.
    pub meta: MetaEntry,
    /// `jcp/1` or `jcp/2`.
    pub profile: ProfileTag,
    /// The leaf grant: an index into `keys`.
    pub grant: u32,
    /// The subject's key: an index into `keys`.
    pub subject: u32,
    /// `allow` or `deny`.
    pub verdict: VerdictTag,
    /// A deny's reason code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Cost, µJ.
    pub cost_uj: u64,
    /// `HwShunt`, `ModelBased` or `Estimator`.
    pub provenance: Provenance,
    /// `Whole` or `Partial`.
    pub coverage: Coverage,
    /// The remainder the receipt states.
    pub remaining_uj: u64,
    /// The leaf's budget the receipt states.
    pub budget_uj: u64,
    /// Chain ids, root first (indices into `keys`); empty for one grant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<u32>,
    /// A debit-point breach's reason code (§4.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breach: Option<String>,
    /// A priced decision's money, minor units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money_minor: Option<u64>,
    /// An allow's action: an index into `actions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<u32>,
}

/// A receipt's profile tag (§8 profile versioning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProfileTag {
    /// The retired predecessor.
    #[serde(rename = "jcp/1")]
    Jcp1,
    /// The current profile.
    #[serde(rename = "jcp/2")]
    Jcp2,
}

/// A receipt's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictTag {
    /// Allowed (and debited).
    Allow,
    /// Denied, with a reason.
    Deny,
}

/// `N` bytes as exactly `2N` lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hex<const N: usize>(pub [u8; N]);

/// Bytes as lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexBytes(pub Vec<u8>);

fn lower_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl<const N: usize> Serialize for Hex<N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(self.0))
    }
}

impl<'de, const N: usize> Deserialize<'de> for Hex<N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let mut out = [0u8; N];
        if s.len() != 2 * N || !lower_hex(&s) || hex::decode_to_slice(&s, &mut out).is_err() {
            return Err(serde::de::Error::custom(format!("expected {} lowercase hex digits", 2 * N)));
        }
        Ok(Self(out))
    }
}

impl Serialize for HexBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for HexBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match hex::decode(&s) {
            Ok(b) if lower_hex(&s) => Ok(Self(b)),
            _ => Err(serde::de::Error::custom("expected lowercase hex digits, an even number of them")),
        }
    }
}

impl PartialOptions {
    /// The options of `opts` a report depends on.
    pub fn of(opts: &AuditOptions) -> Self {
        let mut stewards: Vec<String> = opts.expected_stewards.iter().map(Did::to_did_string).collect();
        stewards.sort();
        stewards.dedup();
        Self {
            expected_stewards: stewards,
            verification: verification_name(opts.verification).into(),
            max_findings: opts.max_findings as u64,
        }
    }
}

fn verification_name(v: Verification) -> &'static str {
    match v {
        Verification::Batch => "batch",
        Verification::Strict => "strict",
    }
}

const KINDS: [(RecordKind, &str); 8] = [
    (RecordKind::Receipt, "receipt"),
    (RecordKind::Outcome, "outcome"),
    (RecordKind::Grant, "grant"),
    (RecordKind::Revocation, "revocation"),
    (RecordKind::Request, "request"),
    (RecordKind::Amendment, "amendment"),
    (RecordKind::Closing, "closing"),
    (RecordKind::Statement, "statement"),
];

fn kind_name(k: RecordKind) -> &'static str {
    KINDS.iter().find(|(x, _)| *x == k).map_or("record", |(_, n)| n)
}

fn kind_of(s: &str) -> Option<RecordKind> {
    KINDS.iter().find(|(_, n)| *n == s).map(|(k, _)| *k)
}

const FAULTS: [FaultCode; 5] = [
    FaultCode::Garbage,
    FaultCode::Oversized,
    FaultCode::ChecksumMismatch,
    FaultCode::UnknownKind,
    FaultCode::TornTail,
];

// ---------------------------------------------------------------- writing

/// Records checked records as partial entries (the [`Sink`] of a partial audit).
#[derive(Debug, Default)]
struct Recorder {
    streams: Vec<PartialStream>,
    keys: HashMap<[u8; 32], u32>,
    actions: HashMap<String, u32>,
    broken: Option<(String, u64)>,
}

impl Recorder {
    fn key(&mut self, k: &[u8; 32]) -> u32 {
        let Some(st) = self.streams.last_mut() else { return 0 };
        *self.keys.entry(*k).or_insert_with(|| {
            st.keys.push(Hex(*k));
            u32::try_from(st.keys.len() - 1).unwrap_or(u32::MAX)
        })
    }

    fn action(&mut self, a: &str) -> u32 {
        let Some(st) = self.streams.last_mut() else { return 0 };
        if let Some(i) = self.actions.get(a) {
            return *i;
        }
        st.actions.push(a.to_owned());
        let i = u32::try_from(st.actions.len() - 1).unwrap_or(u32::MAX);
        self.actions.insert(a.to_owned(), i);
        i
    }

    fn meta(&mut self, m: &Meta) -> MetaEntry {
        MetaEntry {
            steward: self.key(&m.steward),
            dedup: Hex(m.dedup.to_be_bytes()),
            id: m.id.map(Hex),
            seq: m.seq,
            known_through: m.known_through,
        }
    }

    fn entry(&mut self, c: Checked, chains: &[ContentId]) -> Option<Entry> {
        let at = c.offset;
        let kind = c.kind.map_or("record", kind_name);
        Some(match c.body {
            Body::Fault(f) => Entry::Fault { at: f.offset, code: f.code.code().into(), len: f.len },
            Body::Refused(code, message) => {
                Entry::Refused { at, kind: kind.into(), code: code.as_str().into(), message, id: c.refused_id.map(Hex) }
            }
            Body::WireRequest => Entry::Request { at },
            Body::Receipt(f) => {
                let meta = self.meta(c.meta.as_ref()?);
                let chain_ids: Vec<ContentId> = {
                    let (start, n) = (f.chain.0 as usize, f.chain.1 as usize);
                    chains.get(start..start + n)?.to_vec()
                };
                let chain = chain_ids.iter().map(|id| self.key(&id.0)).collect();
                let (verdict, reason) = match f.verdict {
                    Verdict::Allow => (VerdictTag::Allow, None),
                    Verdict::Deny(r) => (VerdictTag::Deny, Some(r.as_str().to_owned())),
                };
                Entry::Receipt(Box::new(ReceiptEntry {
                    at,
                    meta,
                    profile: match f.profile {
                        Profile::Jcp1 => ProfileTag::Jcp1,
                        Profile::Jcp2 => ProfileTag::Jcp2,
                    },
                    grant: self.key(&f.grant_id.0),
                    subject: self.key(&f.subject),
                    verdict,
                    reason,
                    cost_uj: f.cost_uj,
                    provenance: f.provenance,
                    coverage: f.coverage,
                    remaining_uj: f.budget_remaining_uj,
                    budget_uj: f.budget_uj,
                    chain,
                    breach: f.breach.map(|r| r.as_str().to_owned()),
                    money_minor: f.money_minor,
                    action: (f.verdict == Verdict::Allow).then(|| self.action(&f.action)),
                }))
            }
            Body::Outcome(receipt) => Entry::Outcome { at, meta: self.meta(c.meta.as_ref()?), receipt: Hex(receipt.0) },
            _ => Entry::Whole { at, kind: kind.into(), bytes: HexBytes(c.raw?.into_vec()) },
        })
    }
}

impl Sink for Recorder {
    fn start_stream(&mut self, summary: StreamSummary) {
        self.keys.clear();
        self.actions.clear();
        self.streams.push(PartialStream {
            path: summary.path,
            bytes: summary.bytes,
            keys: Vec::new(),
            actions: Vec::new(),
            records: Vec::new(),
            settlement_notes: Vec::new(),
            settlement_notes_refused: 0,
        });
    }

    fn take(&mut self, chunk: Vec<Part>) {
        for part in chunk {
            for c in part.checked {
                let at = c.offset;
                if let Some(e) = self.entry(c, &part.chains) {
                    if let Some(st) = self.streams.last_mut() {
                        st.records.push(e);
                    }
                } else {
                    let path = self.streams.last().map(|s| s.path.clone()).unwrap_or_default();
                    self.broken.get_or_insert((path, at));
                }
            }
        }
    }

    fn end_stream(&mut self, _s: usize) {}
}

/// Audits `paths` as one job of a fleet's audit: reads and checks every
/// stream as [`crate::audit_paths`] does and returns the partial to merge
/// (nothing is accounted here; the merge accounts everything at once).
pub fn audit_partial<P: AsRef<Path>>(
    paths: &[P],
    opts: &AuditOptions,
    progress: impl FnMut(&Progress) -> ControlFlow<()>,
) -> Result<Partial, AuditError> {
    if paths.is_empty() {
        return Err(AuditError::NoInput);
    }
    let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
    let mut rec = Recorder::default();
    crate::with_pool(opts, |pool| engine::read_into(&paths, opts, progress, pool, &mut rec))?;
    if let Some((path, offset)) = rec.broken {
        return Err(AuditError::PartialUnrecordable { path, offset });
    }
    for (st, path) in rec.streams.iter_mut().zip(&paths) {
        let (notes, refused) = jcp_receipt::settle::read_notes(path);
        st.settlement_notes = notes.iter().map(|n| HexBytes(n.to_bytes())).collect();
        st.settlement_notes_refused = refused.len() as u64;
    }
    let mut partial = Partial {
        format: PARTIAL_FORMAT.into(),
        spec: SPEC.into(),
        options: PartialOptions::of(opts),
        streams: rec.streams,
    };
    sort_streams(&mut partial.streams);
    Ok(partial)
}

/// Merge order: by path, then size, then content (a total order up to
/// identical streams, so the order never depends on which partial a stream
/// came from).
fn cmp_streams(a: &PartialStream, b: &PartialStream) -> std::cmp::Ordering {
    let ser = |s: &PartialStream| serde_json::to_vec(s).unwrap_or_default();
    a.path.cmp(&b.path).then(a.bytes.cmp(&b.bytes)).then_with(|| ser(a).cmp(&ser(b)))
}

fn sort_streams(streams: &mut [PartialStream]) {
    streams.sort_by(cmp_streams);
}

impl Partial {
    /// The partial as JSON (one line).
    pub fn to_json(&self) -> Result<Vec<u8>, AuditError> {
        serde_json::to_vec(self).map_err(|e| AuditError::Io { path: "partial".into(), message: e.to_string() })
    }

    /// Reads a partial strictly; `file` names it in every error.
    pub fn from_json(file: &str, bytes: &[u8]) -> Result<Self, AuditError> {
        #[derive(Deserialize)]
        struct Head {
            format: Option<serde_json::Value>,
            spec: Option<serde_json::Value>,
        }
        let field =
            |field: &str, message: String| AuditError::PartialField { file: file.into(), field: field.into(), message };
        let head: Head = serde_json::from_slice(bytes)
            .map_err(|e| AuditError::PartialUnreadable { file: file.into(), message: e.to_string() })?;
        for (name, want, got) in [("format", PARTIAL_FORMAT, head.format), ("spec", SPEC, head.spec)] {
            match got {
                None => return Err(field(name, "missing".into())),
                Some(serde_json::Value::String(s)) if s == want => {}
                Some(v) => {
                    return Err(AuditError::PartialVersion {
                        file: file.into(),
                        field: name.into(),
                        found: v.to_string(),
                        expected: want,
                    })
                }
            }
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let p: Partial = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            field(&path, e.into_inner().to_string())
        })?;
        de.end().map_err(|e| AuditError::PartialUnreadable { file: file.into(), message: e.to_string() })?;
        p.check(file)?;
        // One encoding per partial: what decodes must be exactly what it
        // re-encodes to (compact, fields in order, absent rather than null,
        // objects as objects), so no second spelling of a partial is read.
        let canonical = p.to_json()?;
        if canonical != bytes {
            let at = canonical.iter().zip(bytes).position(|(a, b)| a != b).unwrap_or(canonical.len().min(bytes.len()));
            return Err(field(&format!("byte {at}"), "not the canonical encoding (compact JSON as `jcp audit --partial` writes it: fields in order, absent rather than null, no escapes it does not need)".into()));
        }
        Ok(p)
    }

    /// Everything beyond the JSON types: options, tables, codes, records.
    fn check(&self, file: &str) -> Result<(), AuditError> {
        let field = |field: String, message: String| AuditError::PartialField { file: file.into(), field, message };
        let o = &self.options;
        for (i, s) in o.expected_stewards.iter().enumerate() {
            Did::parse(s).map_err(|e| field(format!("options.expected_stewards[{i}]"), e.to_string()))?;
            if i > 0 && o.expected_stewards[i - 1] >= *s {
                return Err(field(format!("options.expected_stewards[{i}]"), "not sorted, or repeated".into()));
            }
        }
        if !["batch", "strict"].contains(&o.verification.as_str()) {
            return Err(field("options.verification".into(), format!("{:?}: batch or strict", o.verification)));
        }
        usize::try_from(o.max_findings).map_err(|_| field("options.max_findings".into(), "too large".into()))?;
        if self.streams.is_empty() {
            return Err(field("streams".into(), "no stream".into()));
        }
        for (i, st) in self.streams.iter().enumerate() {
            load(st, i, file, &format!("streams[{i}]"))?;
            if i > 0 && cmp_streams(&self.streams[i - 1], st) == std::cmp::Ordering::Greater {
                return Err(field(format!("streams[{i}]"), "streams are not in merge order (by path)".into()));
            }
        }
        Ok(())
    }
}

/// Reads a partial file strictly.
pub fn read_partial(path: &Path) -> Result<Partial, AuditError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| AuditError::Io { path: name.clone(), message: e.to_string() })?;
    Partial::from_json(&name, &bytes)
}

/// Writes a partial file.
pub fn write_partial(path: &Path, partial: &Partial) -> Result<(), AuditError> {
    let bytes = partial.to_json()?;
    std::fs::write(path, bytes).map_err(|e| AuditError::Io { path: path.display().to_string(), message: e.to_string() })
}

// ---------------------------------------------------------------- merging

/// Partials merged must have been audited under the same options
/// (`parts`: each partial's file and options).
fn same_options<'a>(
    parts: impl IntoIterator<Item = (&'a str, &'a PartialOptions)>,
) -> Result<PartialOptions, AuditError> {
    let mut parts = parts.into_iter();
    let Some((first_file, first)) = parts.next() else { return Err(AuditError::NoInput) };
    for (file, b) in parts {
        let a = first;
        let differs = [
            ("options.expected_stewards", a.expected_stewards != b.expected_stewards),
            ("options.verification", a.verification != b.verification),
            ("options.max_findings", a.max_findings != b.max_findings),
        ];
        if let Some((field, _)) = differs.iter().find(|(_, d)| *d) {
            return Err(AuditError::PartialMismatch {
                file: file.to_owned(),
                field: (*field).into(),
                message: format!(
                    "differs from {first_file}'s: partials audited under different options have no single-run report"
                ),
            });
        }
    }
    Ok(first.clone())
}

fn options_of(parts: &[(String, Partial)]) -> Result<PartialOptions, AuditError> {
    same_options(parts.iter().map(|(f, p)| (f.as_str(), &p.options)))
}

/// Merges partials (each with the file it came from) into one partial:
/// their streams together, in merge order. Associative and independent of
/// the order the partials are given in; refused when their options differ.
pub fn merge(parts: &[(String, Partial)]) -> Result<Partial, AuditError> {
    let options = options_of(parts)?;
    let mut streams: Vec<PartialStream> = parts.iter().flat_map(|(_, p)| p.streams.iter().cloned()).collect();
    sort_streams(&mut streams);
    Ok(Partial { format: PARTIAL_FORMAT.into(), spec: SPEC.into(), options, streams })
}

/// The report of partials merged: the report a single audit of all their
/// streams, in merge order (by path), gives. Each stream is accounted and
/// dropped in turn.
pub fn merge_report(parts: Vec<(String, Partial)>) -> Result<Report, AuditError> {
    let options = options_of(&parts)?;
    // Each stream with the file it came from, for errors.
    let mut streams: Vec<(PartialStream, String)> =
        parts.into_iter().flat_map(|(f, p)| p.streams.into_iter().map(move |s| (s, f.clone()))).collect();
    streams.sort_by(|a, b| cmp_streams(&a.0, &b.0));
    let mut m = Merger::new(&options, streams.iter().map(|s| s.0.records.len()).sum());
    for (st, file) in streams {
        m.add(st, &file)?;
    }
    Ok(m.finish())
}

/// The report of the partial files `paths` merged, as [`merge_report`]
/// gives, holding one file's records at a time where the files' streams do
/// not interleave in merge order (one job per stream, or per contiguous
/// share of a sorted list); otherwise every file's at once. Each file is
/// read twice: first to check it whole and learn its streams.
pub fn merge_report_files(paths: &[PathBuf]) -> Result<Report, AuditError> {
    // Pass 1: every file decoded and checked; its options and stream keys kept.
    let mut heads: Vec<Head> = Vec::with_capacity(paths.len());
    for path in paths {
        let p = read_partial(path)?;
        let keys = p.streams.iter().map(|s| (s.path.clone(), s.bytes)).collect();
        let records = p.streams.iter().map(|s| s.records.len()).sum();
        heads.push((path.display().to_string(), p.options, keys, records));
    }
    let options = same_options(heads.iter().map(|(f, o, _, _)| (f.as_str(), o)))?;
    // Files by their first stream; streaming needs their key runs to follow
    // one another strictly (no equal keys: those order by content).
    let mut order: Vec<usize> = (0..heads.len()).collect();
    order.sort_by(|&a, &b| heads[a].2.first().cmp(&heads[b].2.first()));
    let keys: Vec<&(String, u64)> = order.iter().flat_map(|&i| heads[i].2.iter()).collect();
    if !keys.windows(2).all(|w| w[0] < w[1]) {
        let mut parts = Vec::with_capacity(paths.len());
        for path in paths {
            parts.push((path.display().to_string(), read_partial(path)?));
        }
        return merge_report(parts);
    }
    let mut m = Merger::new(&options, heads.iter().map(|h| h.3).sum());
    for i in order {
        let (file, ..) = &heads[i];
        for st in read_partial(&paths[i])?.streams {
            m.add(st, file)?;
        }
    }
    Ok(m.finish())
}

/// A partial file's name, options, stream keys (path, size) and record count.
type Head = (String, PartialOptions, Vec<(String, u64)>, usize);

/// Accounts streams, in merge order, into one report.
struct Merger {
    eng: Engine,
    notes: Vec<(Vec<SignedSettlementNote>, u64)>,
}

impl Merger {
    fn new(options: &PartialOptions, records: usize) -> Self {
        let max = usize::try_from(options.max_findings).unwrap_or(usize::MAX);
        Self { eng: Engine::for_replay(max, records), notes: Vec::new() }
    }

    /// The next stream (from `file`), accounted; its records then dropped.
    fn add(&mut self, st: PartialStream, file: &str) -> Result<(), AuditError> {
        let i = self.notes.len();
        let loaded = load(&st, i, file, &format!("streams[{i}] ({})", st.path))?;
        drop(st.records);
        self.eng.start_stream(loaded.summary);
        self.eng.take(loaded.parts);
        self.eng.end_stream(i);
        self.notes.push((loaded.notes, st.settlement_notes_refused));
        Ok(())
    }

    fn finish(self) -> Report {
        let mut report = self.eng.into_report();
        for (i, (n, refused)) in self.notes.iter().enumerate() {
            crate::attach_notes(&mut report, i, n, *refused);
        }
        report
    }
}

// ---------------------------------------------------------------- loading

struct Loaded {
    summary: StreamSummary,
    parts: Vec<Part>,
    notes: Vec<SignedSettlementNote>,
}

/// A stream's entries as the accounting's checked records (stream index
/// `s`), every index, code and record checked; `at` names it in errors.
fn load(st: &PartialStream, s: usize, file: &str, at: &str) -> Result<Loaded, AuditError> {
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
            Entry::Request { at: off } => Checked {
                stream: s,
                offset: *off,
                kind: Some(RecordKind::Request),
                body: Body::WireRequest,
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

type KeyAt<'a> = dyn Fn(u32, &str) -> Result<[u8; 32], AuditError> + 'a;

fn load_meta(m: &MetaEntry, key: &KeyAt<'_>) -> Result<Meta, AuditError> {
    Ok(Meta {
        steward: key(m.steward, "steward")?,
        dedup: u128::from_be_bytes(m.dedup.0),
        id: m.id.map(|h| h.0),
        seq: m.seq,
        known_through: m.known_through,
    })
}

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

/// One line per stream of a partial, for the CLI's human output, with the
/// revocation notices it carries: the revoked grant, the marker `M` it was
/// issued at and the point's `known_through` when it recorded it (§4.3).
pub fn describe(p: &Partial) -> String {
    let mut s = String::new();
    let mut dids = DidCache::new();
    for st in &p.streams {
        let _ = writeln!(s, "  {} ({} bytes, {} records)", st.path, st.bytes, st.records.len());
        for e in &st.records {
            let Entry::Whole { at, kind, bytes } = e else { continue };
            if kind != "revocation" {
                continue;
            }
            if let Ok((n, sealed)) = jcp_receipt::record::open_revocation(&bytes.0, &mut dids) {
                let heard = sealed.position.known_through.map_or("no marker".into(), |k| format!("known_through {k}"));
                let _ = writeln!(
                    s,
                    "    @{at}: revocation of {} at marker {}, recorded at {heard}",
                    n.revocation.revocation().grant_id,
                    n.marker
                );
            }
        }
    }
    s
}

/// The fuzz invariant (`crates/jcp-audit/fuzz`, and the corpus replay in
/// `cargo test`): decoding never panics; a partial that decodes re-encodes
/// to exactly its input, decodes equal again, and merges (alone and with
/// itself) to a report.
pub fn fuzz_partial_decode(data: &[u8]) -> Result<(), String> {
    let Ok(p) = Partial::from_json("fuzz", data) else { return Ok(()) };
    let again = p.to_json().map_err(|e| e.to_string())?;
    if again != data {
        return Err("a partial decoded from bytes other than its own encoding".into());
    }
    let q = Partial::from_json("again", &again).map_err(|e| format!("re-encoded partial refused: {e}"))?;
    if q != p {
        return Err("partial did not round-trip".into());
    }
    let one =
        merge_report(vec![("fuzz".into(), p.clone())]).map_err(|e| format!("a decoded partial does not merge: {e}"))?;
    let two = merge_report(vec![("a".into(), p.clone()), ("b".into(), p)])
        .map_err(|e| format!("a decoded partial does not merge with itself: {e}"))?;
    if two.streams.len() != 2 * one.streams.len() {
        return Err("merging a partial with itself lost streams".into());
    }
    Ok(())
}
