//! The reference audit: the same [`Report`] as [`crate::audit_paths`],
//! written to be read rather than to be fast.
//!
//! Spec `jcp-v0.3.md` §8, §8.1 (the stream is the log), §8.2 (group
//! accounting; failures counted, never skipped), §4.3 (propagation:
//! explicable / violation / unverifiable), §4.7 (spend on a superseded
//! grant), §4.11 (unresolved decisions), §5.2 (coverage), §5.5
//! (conservation); the decisions each finding follows are in
//! `docs/decisions.md` ("Receipts, the stream, replay and audit", "The
//! reference audit").
//!
//! One record at a time, in stream order: each record is read with the
//! stream's plain iterator ([`Reader`]), decoded into its typed record
//! through the `coset` path only (`OpenedReceipt::open_coset`,
//! `open_outcome_record_coset`, …, never the zero-copy reader), its
//! signature checked alone (the one Ed25519 predicate) (never in a batch),
//! and accounted into plain `BTreeMap`s before the next record is read.
//! Nothing is cached between records (a fresh `DidCache` per record), no
//! thread is started, and where the fast engine keys on a shortcut the
//! reference keys on the definition: a duplicate is a record whose signed
//! bytes were accounted before (not the first 128 bits of its signature's
//! `R`), a refused receipt is known by its whole record id (not its first
//! 128 bits), and stewards and holders are keyed by their did.
//!
//! It exists so that a test can require the fast engine's report, byte for
//! byte in its JSON, to equal this one (`tests/reference.rs`), and so a user
//! can ask for the slow, obviously-correct answer (`jcp audit --reference`).

mod accounting;
mod close;
pub(crate) mod open;

use crate::FindingCode;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use jcp::cbor::ContentId;
use jcp::grant::SignedGrant;
use jcp::identity::Did;
use jcp_receipt::record::RevocationNotice;
use jcp_receipt::stream::{Fault, FaultCode, Item, Reader, Record, RecordKind};

use crate::report::{
    EnergyFloors, Findings, GroupLine, Parts, ReceiptCounts, Report, StewardLine, StreamSummary, Unresolved,
    UnresolvedLine,
};
use crate::{words, AuditError, AuditOptions};
use open::{open_record, Opened, Signed};

/// How many offsets of a grant's allows at one `known_through` marker the
/// report keeps (the revocation line's `violation_at` / `unverifiable_at`:
/// "the first few"); the counts are always complete.
const KEEP_OFFSETS: usize = 8;

/// Audits `paths` one record at a time over the typed receipt path and
/// returns the report [`crate::audit_paths`] gives for them (the same
/// options, the same JSON).
///
/// `opts.expected_stewards` and `opts.max_findings` apply as there; the
/// threads, chunk size and verification mode do not (every signature is
/// checked alone, one after the other).
pub fn audit_reference<P: AsRef<Path>>(paths: &[P], opts: &AuditOptions) -> Result<Report, AuditError> {
    if paths.is_empty() {
        return Err(AuditError::NoInput);
    }
    let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
    let mut ledger = Ledger::new(opts);
    for (s, path) in paths.iter().enumerate() {
        ledger.read_stream(s, path)?;
    }
    let mut report = ledger.finish();
    crate::attach_settlements(&mut report, &paths);
    Ok(report)
}

/// Where a sealed record stands: its steward's did, stream position, id.
struct At {
    stream: usize,
    offset: u64,
    steward: String,
    seq: Option<u64>,
    known_through: Option<u64>,
    /// The record id (blake3 of its bytes).
    id: ContentId,
}

/// Where an admitted amendment superseded a grant: (stream, steward,
/// amendment, the feed marker its notice states).
type Supersession = (usize, String, ContentId, Option<u64>);

/// The verified allows on a grant at one `known_through` marker.
#[derive(Default)]
struct Bucket {
    count: u64,
    /// The first [`KEEP_OFFSETS`] of them (a settlement takes its
    /// reservation's out again).
    first: Vec<(usize, u64)>,
}

/// One grant's books, replayed.
#[derive(Default)]
struct GrantBooks {
    spent_uj: u64,
    allows: u64,
    denies: u64,
    breaches: u64,
    measured_uj: u64,
    modelled_uj: u64,
    partial: bool,
    spent_minor: u64,
    /// The budget the first receipt decided against it as leaf stated.
    budget_from_receipt: Option<u64>,
    /// The allow that took its spend past its ceiling.
    first_over: Option<(usize, u64)>,
    /// Verified allows whose debited grants include it, by `known_through`.
    /// Keyed by the recording stream and its marker.
    by_marker: BTreeMap<(usize, Option<u64>), Bucket>,
    /// Its spend per steward (each steward's receipts state their own remainder).
    running: BTreeMap<String, u64>,
    /// Each steward that allowed through it, at its first such allow (§4.5).
    points: BTreeMap<String, (usize, u64)>,
}

#[derive(Default)]
struct GroupBooks {
    allows: u64,
    refusals: u64,
    unattributed: u64,
    uj: u64,
}

#[derive(Default)]
struct StewardBooks {
    records: u64,
    marker: Option<(u64, u64)>,
    without_marker: u64,
}

/// A steward's position in one stream.
#[derive(Default)]
struct SeqState {
    last: Option<u64>,
    last_marker: Option<u64>,
}

#[derive(Default)]
struct StreamBooks {
    summary: StreamSummary,
    /// A request record just read whose caller signature failed (§11).
    bad_request: Option<u64>,
    /// Allows with no outcome yet, by record id: the line each is reported
    /// as if none comes (§4.11).
    pending: BTreeMap<ContentId, UnresolvedLine>,
    /// The `known_through` each pending allow was recorded at.
    pending_marker: BTreeMap<ContentId, Option<u64>>,
    /// Records refused and framing faults since the last sealed record
    /// accounted (a gap they explain is not a `sequence-gap`).
    refused_since: u64,
    faults_since: u64,
    seq: BTreeMap<String, SeqState>,
}

struct Ledger {
    max_findings: usize,
    expected: Vec<Did>,
    streams: Vec<StreamBooks>,
    counts: ReceiptCounts,
    findings: Findings,
    grants: BTreeMap<ContentId, GrantBooks>,
    grant_records: BTreeMap<ContentId, SignedGrant>,
    groups: BTreeMap<(ContentId, String), GroupBooks>,
    /// Revocation notices with where they were, in the order read.
    notices: Vec<(RevocationNotice, usize, u64)>,
    unresolved: Unresolved,
    energy: EnergyFloors,
    stewards: BTreeMap<String, StewardBooks>,
    /// The bytes of every sealed record accounted.
    seen: BTreeSet<Vec<u8>>,
    /// Record ids of refused receipts (an outcome naming one is not an orphan).
    refused_receipts: BTreeSet<ContentId>,
    /// Grants an admitted amendment superseded: by which stream, steward, amendment.
    /// (stream, steward, amendment, the feed marker its notice states)
    superseded: BTreeMap<ContentId, Vec<Supersession>>,
    /// For each continuation an admitted amendment names: the run's declared
    /// spend when it began (§4.7).
    run_base: BTreeMap<ContentId, Option<u64>>,
    /// §4.3: the issuer's revocation log, when the auditor gave one.
    revocation_log: Option<std::sync::Arc<jcp::revocation_log::IssuerLog>>,
}

impl Ledger {
    fn new(opts: &AuditOptions) -> Self {
        Self {
            max_findings: opts.max_findings,
            expected: opts.expected_stewards.clone(),
            streams: Vec::new(),
            counts: ReceiptCounts::default(),
            findings: Findings::new(opts.max_findings),
            grants: BTreeMap::new(),
            grant_records: BTreeMap::new(),
            groups: BTreeMap::new(),
            notices: Vec::new(),
            unresolved: Unresolved::default(),
            energy: EnergyFloors::default(),
            stewards: BTreeMap::new(),
            seen: BTreeSet::new(),
            refused_receipts: BTreeSet::new(),
            superseded: BTreeMap::new(),
            run_base: BTreeMap::new(),
            revocation_log: opts.revocation_log.clone(),
        }
    }

    fn finding(&mut self, stream: usize, offset: u64, code: FindingCode, message: String) {
        self.findings.add(stream, offset, code, message);
    }

    fn read_stream(&mut self, s: usize, path: &Path) -> Result<(), AuditError> {
        let name = path.display().to_string();
        let io = |e: std::io::Error| AuditError::Io { path: name.clone(), message: e.to_string() };
        let file = File::open(path).map_err(io)?;
        let bytes = file.metadata().map_err(io)?.len();
        self.streams.push(StreamBooks {
            summary: StreamSummary { path: name.clone(), bytes, ..StreamSummary::default() },
            ..StreamBooks::default()
        });
        let mut reader = Reader::new(file).map_err(|e| crate::reader_error(name.clone(), e))?;
        for item in &mut reader {
            match item {
                Item::Fault(f) => self.fault(s, &f),
                Item::Record(r) => self.record(s, &r),
            }
        }
        if let Some(e) = reader.take_io_error() {
            return Err(io(e));
        }
        self.end_stream(s);
        Ok(())
    }

    /// §8.1: a framing fault is reported at its offset, never read.
    fn fault(&mut self, s: usize, f: &Fault) {
        let st = &mut self.streams[s];
        st.summary.faults += 1;
        st.faults_since += 1;
        st.bad_request = None;
        if f.code == FaultCode::TornTail {
            st.summary.torn_tail_at = Some(f.offset);
        }
        self.finding(s, f.offset, FindingCode::from(f.code), words::fault(f));
    }

    fn record(&mut self, s: usize, r: &Record) {
        self.streams[s].summary.records += 1;
        // §11: the record right behind a request whose caller signature failed.
        let bad_request = self.streams[s].bad_request.take();
        match open_record(r.kind, &r.payload, &self.expected) {
            Opened::Refused(code, msg) => self.refused(s, r, code, &msg),
            Opened::WireRequest { signed } => {
                self.counts.wire_requests += 1;
                self.streams[s].bad_request = (!signed).then_some(r.offset);
            }
            Opened::Grant(g) => {
                self.counts.grants += 1;
                self.grant_records.insert(g.id(), *g);
            }
            Opened::Signed(sealed, body) => {
                // C14: a record accounted before is counted once, accounted once.
                if !self.seen.insert(r.payload.clone()) {
                    if r.kind == RecordKind::Receipt {
                        self.counts.total += 1;
                        self.counts.failed += 1;
                        *self.counts.failed_by_reason.entry(FindingCode::DuplicateRecord).or_default() += 1;
                    }
                    self.finding(
                        s,
                        r.offset,
                        FindingCode::DuplicateRecord,
                        "a record seen before, again: counted once, accounted once".into(),
                    );
                    return;
                }
                let at = At {
                    stream: s,
                    offset: r.offset,
                    steward: sealed.steward.to_did_string(),
                    seq: sealed.position.seq,
                    known_through: sealed.position.known_through,
                    id: sealed.id,
                };
                self.sequence(&at);
                if let (Some(req_at), Signed::Receipt(c)) = (bad_request, &body) {
                    if c.is_allow() {
                        let msg = words::request_signature_invalid(req_at);
                        self.finding(s, r.offset, FindingCode::RequestSignatureInvalid, msg);
                    }
                }
                self.signed(&at, body);
            }
        }
    }

    /// §8.2: a refused record is counted under its reason and contributes nothing.
    fn refused(&mut self, s: usize, r: &Record, code: FindingCode, msg: &str) {
        self.streams[s].refused_since += 1;
        if r.kind == RecordKind::Receipt {
            self.counts.total += 1;
            self.counts.failed += 1;
            *self.counts.failed_by_reason.entry(code).or_default() += 1;
            self.refused_receipts.insert(ContentId::of_bytes(&r.payload));
        } else {
            *self.counts.other_failed_by_reason.entry(code).or_default() += 1;
        }
        self.finding(s, r.offset, code, words::refused(Some(r.kind), msg));
    }

    fn signed(&mut self, at: &At, body: Signed) {
        match body {
            Signed::Receipt(core) => self.receipt(at, *core),
            Signed::Outcome(receipt) => {
                self.counts.outcomes += 1;
                let was_pending = self.streams[at.stream].pending.remove(&receipt).is_some();
                if !was_pending && !self.refused_receipts.contains(&receipt) {
                    self.finding(
                        at.stream,
                        at.offset,
                        FindingCode::OrphanOutcome,
                        format!("outcome for {receipt} which was not decided earlier in this stream"),
                    );
                }
            }
            Signed::Settlement { reservation, core, known_through, settled_by } => {
                self.settlement(at, reservation, &core, known_through, settled_by);
            }
            Signed::Revocation(n) => {
                self.counts.revocation_notices += 1;
                self.notices.push((*n, at.stream, at.offset));
            }
            Signed::Amendment(a) => self.amendment(at, &a),
            Signed::Closing => self.counts.closings += 1,
            Signed::Statement(n) => match n.statement.verify() {
                Ok(()) => self.counts.channel_statements += 1,
                Err(e) => self.finding(
                    at.stream,
                    at.offset,
                    FindingCode::StatementInvalid,
                    format!("a channel statement notice whose statement does not verify: {e}"),
                ),
            },
        }
    }

    /// §4.11: every allow of the stream still pending is unresolved, named
    /// with its holder, in stream order; it stays debited.
    fn end_stream(&mut self, s: usize) {
        let lines: Vec<UnresolvedLine> = std::mem::take(&mut self.streams[s].pending).into_values().collect();
        self.unresolved.list(lines, &mut self.findings, self.max_findings);
    }

    fn finish(mut self) -> Report {
        let revocations = self.revocations();
        self.supersessions();
        self.shards();
        // Every grant a receipt named or a grant record stated, by id.
        let ids: BTreeSet<ContentId> = self.grants.keys().chain(self.grant_records.keys()).copied().collect();
        let mut grants = Vec::new();
        let mut overs = Vec::new();
        let none = GrantBooks::default();
        for id in ids {
            let acc = self.grants.get(&id).unwrap_or(&none);
            grants.push(self.grant_line(id, acc, &mut overs));
        }
        for (s, o, msg) in overs {
            self.finding(s, o, FindingCode::Overspend, msg);
        }
        let groups: Vec<GroupLine> = std::mem::take(&mut self.groups)
            .into_iter()
            .map(|((grant_id, subject), a)| GroupLine {
                grant_id,
                subject,
                allows: a.allows,
                refusals: a.refusals,
                unattributed: a.unattributed,
                uj: a.uj,
            })
            .collect();
        let stewards: Vec<StewardLine> = std::mem::take(&mut self.stewards)
            .into_iter()
            .map(|(steward, a)| StewardLine {
                steward,
                records: a.records,
                known_through: a.marker,
                receipts_without_marker: a.without_marker,
            })
            .collect();
        Report::assemble(Parts {
            streams: self.streams.into_iter().map(|s| s.summary).collect(),
            receipts: self.counts,
            findings: self.findings,
            grants,
            groups,
            revocations,
            unresolved: self.unresolved,
            energy: self.energy,
            stewards,
        })
    }
}
