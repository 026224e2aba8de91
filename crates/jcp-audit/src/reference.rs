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
//! signature checked with `verify_strict` on its own (never in a batch),
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

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use jcp::cbor::{ContentId, Value};
use jcp::decision::Verdict;
use jcp::energy::Coverage;
use jcp::grant::SignedGrant;
use jcp::identity::Did;
use jcp_receipt::cose::{self, DidCache, Sealed};
use jcp_receipt::receipt::{OpenedReceipt, Profile, ReceiptCore};
use jcp_receipt::record::{self, AmendmentNotice, OutcomeRecord, RevocationNotice, StatementNotice};
use jcp_receipt::stream::{Fault, FaultCode, HeaderError, Item, Reader, Record, RecordKind};

use crate::report::{
    Conservation, EnergyFloors, Findings, GrantLine, GroupLine, Parts, ReceiptCounts, Report, RevocationClasses, RevocationLine, StewardLine,
    StreamSummary, Unresolved, UnresolvedLine,
};
use crate::{words, AuditError, AuditOptions};

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
/// checked with `verify_strict`, one after the other).
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

/// A record after decoding and its signature check.
enum Opened {
    /// Refused: its reason code and a sentence.
    Refused(&'static str, String),
    /// A grant whose issuer signature verified.
    Grant(Box<SignedGrant>),
    /// A wire request record (unsealed).
    WireRequest,
    /// A sealed record whose steward is accepted and whose signature verified.
    Signed(Box<Sealed>, Signed),
}

/// What a verified sealed record holds.
enum Signed {
    Receipt(Box<ReceiptCore>),
    /// An outcome naming a receipt id.
    Outcome(ContentId),
    /// A settlement: the reservation receipt it takes back (its id, core
    /// and `known_through`) and the receipt that settles it.
    Settlement {
        reservation: ContentId,
        core: Box<ReceiptCore>,
        known_through: Option<u64>,
        settled_by: ContentId,
    },
    Revocation(Box<RevocationNotice>),
    Amendment(Box<AmendmentNotice>),
    Closing,
    Statement(Box<StatementNotice>),
}

fn refused(e: &jcp_receipt::error::ReceiptError) -> Opened {
    Opened::Refused(e.code(), e.to_string())
}

/// Decodes one record through the typed (`coset`) path and checks its
/// steward (C5) and then its signature (`verify_strict`).
fn open_record(kind: RecordKind, payload: &[u8], expected: &[Did]) -> Opened {
    let dids = &mut DidCache::new();
    let (sealed, body) = match kind {
        RecordKind::Receipt => match OpenedReceipt::open_coset(payload, dids) {
            Ok(o) => (o.sealed, Signed::Receipt(Box::new(o.core))),
            Err(e) => return refused(&e),
        },
        RecordKind::Outcome => match record::open_outcome_record_coset(payload, dids) {
            Ok((OutcomeRecord::Outcome(o), sealed)) => (sealed, Signed::Outcome(o.receipt)),
            Ok((OutcomeRecord::Settlement(st), sealed)) => match st.open_reservation_coset(dids) {
                Ok(r) => {
                    let body = Signed::Settlement {
                        reservation: st.reservation_id(),
                        core: Box::new(r.core),
                        known_through: r.sealed.position.known_through,
                        settled_by: st.settled_by,
                    };
                    (sealed, body)
                }
                Err(e) => return Opened::Refused(e.code(), format!("settlement: its reservation receipt: {e}")),
            },
            Err(e) => return refused(&e),
        },
        RecordKind::Revocation => match record::open_revocation(payload, dids) {
            Ok((n, sealed)) => (sealed, Signed::Revocation(Box::new(n))),
            Err(e) => return refused(&e),
        },
        RecordKind::Amendment => match record::open_amendment(payload, dids) {
            Ok((a, sealed)) => (sealed, Signed::Amendment(Box::new(a))),
            Err(e) => return refused(&e),
        },
        RecordKind::Statement => match record::open_statement(payload, dids) {
            Ok((n, sealed)) => (sealed, Signed::Statement(Box::new(n))),
            Err(e) => return refused(&e),
        },
        RecordKind::Closing => match cose::open(payload, dids) {
            Ok((sealed, core)) if core.get("jcp_record") == Some(&Value::text("closing")) => (sealed, Signed::Closing),
            Ok(_) => return Opened::Refused("closing-invalid", "a sealed record that is not a closing record".into()),
            Err(e) => return refused(&e),
        },
        RecordKind::Request => {
            return match jcp::cbor::decode_strict(payload) {
                Ok(v) if matches!(v.get("request"), Some(Value::Bytes(_))) && matches!(v.get("decided_at"), Some(Value::Uint(_))) => {
                    Opened::WireRequest
                }
                Ok(_) => Opened::Refused("request-record-invalid", "a request record without its request bytes and decision time".into()),
                Err(e) => Opened::Refused(e.code(), e.to_string()),
            }
        }
        RecordKind::Grant => {
            return match SignedGrant::from_bytes(payload) {
                Ok(g) if g.verify_signature() => Opened::Grant(Box::new(g)),
                Ok(g) => Opened::Refused("bad-signature", format!("grant {} does not verify under its issuer {}", g.id(), g.grant().issuer)),
                Err(e) => Opened::Refused(e.code(), e.to_string()),
            }
        }
    };
    if !expected.is_empty() && !expected.contains(&sealed.steward) {
        return Opened::Refused("wrong-steward", format!("sealed by {}, which is not an expected steward", sealed.steward));
    }
    match record::verify_sealed(&sealed, None) {
        Ok(()) => Opened::Signed(Box::new(sealed), body),
        Err(e) => refused(&e),
    }
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
    by_marker: BTreeMap<Option<u64>, Bucket>,
    /// Its spend per steward (each steward's receipts state their own remainder).
    running: BTreeMap<String, u64>,
}

#[derive(Default)]
struct GroupBooks {
    allows: u64,
    refusals: u64,
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
    /// Allows with no outcome yet, by record id: the line each is reported
    /// as if none comes (§4.11).
    pending: BTreeMap<ContentId, UnresolvedLine>,
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
    superseded: BTreeMap<ContentId, Vec<(usize, String, ContentId)>>,
    /// For each continuation an admitted amendment names: the run's declared
    /// spend when it began (§4.7).
    run_base: BTreeMap<ContentId, Option<u64>>,
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
        }
    }

    fn finding(&mut self, stream: usize, offset: u64, code: &str, message: String) {
        self.findings.add(stream, offset, code, message);
    }

    fn read_stream(&mut self, s: usize, path: &Path) -> Result<(), AuditError> {
        let name = path.display().to_string();
        let io = |e: std::io::Error| AuditError::Io { path: name.clone(), message: e.to_string() };
        let file = File::open(path).map_err(io)?;
        let bytes = file.metadata().map_err(io)?.len();
        self.streams.push(StreamBooks { summary: StreamSummary { path: name.clone(), bytes, ..StreamSummary::default() }, ..StreamBooks::default() });
        let mut reader = match Reader::new(file) {
            Ok(r) => r,
            Err(HeaderError::NotAStream) => return Err(AuditError::NotAStream { path: name }),
            Err(HeaderError::Io(e)) => return Err(io(e)),
        };
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
        if f.code == FaultCode::TornTail {
            st.summary.torn_tail_at = Some(f.offset);
        }
        self.finding(s, f.offset, f.code.code(), words::fault(f));
    }

    fn record(&mut self, s: usize, r: &Record) {
        self.streams[s].summary.records += 1;
        match open_record(r.kind, &r.payload, &self.expected) {
            Opened::Refused(code, msg) => self.refused(s, r, code, &msg),
            Opened::WireRequest => self.counts.wire_requests += 1,
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
                        *self.counts.failed_by_reason.entry("duplicate-record".into()).or_default() += 1;
                    }
                    self.finding(s, r.offset, "duplicate-record", "a record seen before, again: counted once, accounted once".into());
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
                self.signed(&at, body);
            }
        }
    }

    /// §8.2: a refused record is counted under its reason and contributes nothing.
    fn refused(&mut self, s: usize, r: &Record, code: &'static str, msg: &str) {
        self.streams[s].refused_since += 1;
        if r.kind == RecordKind::Receipt {
            self.counts.total += 1;
            self.counts.failed += 1;
            *self.counts.failed_by_reason.entry(code.to_owned()).or_default() += 1;
            self.refused_receipts.insert(ContentId::of_bytes(&r.payload));
        } else {
            *self.counts.other_failed_by_reason.entry(code.to_owned()).or_default() += 1;
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
                        "orphan-outcome",
                        format!("outcome for {receipt} which was not decided earlier in this stream"),
                    );
                }
            }
            Signed::Settlement { reservation, core, known_through, settled_by } => self.settlement(at, reservation, &core, known_through, settled_by),
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
                    "statement-invalid",
                    format!("a channel statement notice whose statement does not verify: {e}"),
                ),
            },
        }
    }

    /// §4.7: an admitted amendment supersedes its steered grant at the
    /// point that recorded it; a continuation steered again starts at the
    /// spend its own amendment's checkpoint stated.
    fn amendment(&mut self, at: &At, a: &AmendmentNotice) {
        let base = match self.run_base.get(&a.steered.id()) {
            Some(b) => *b,
            None => Some(0),
        };
        let checked = jcp::steering::verify_amendment_from(&a.steered, &a.checkpoint, &a.amendment, base)
            .and_then(|_| jcp::steering::verify_continuation(&a.steered, a.amendment.amendment(), &a.continuation));
        match checked {
            Ok(()) => {
                self.counts.amendments += 1;
                self.run_base.insert(a.continuation.id(), a.checkpoint.checkpoint().spent.map(|x| x.uj));
                self.superseded.entry(a.steered.id()).or_default().push((at.stream, at.steward.clone(), a.amendment.id()));
            }
            Err(e) => self.finding(at.stream, at.offset, "amendment-invalid", format!("an amendment notice whose amendment does not verify: {e}")),
        }
    }

    /// §8.1 stream position: sequence numbers per steward in each stream,
    /// `known_through` monotonic per steward (§4.3).
    fn sequence(&mut self, at: &At) {
        let sb = self.stewards.entry(at.steward.clone()).or_default();
        sb.records += 1;
        if let Some(k) = at.known_through {
            sb.marker = Some(match sb.marker {
                None => (k, k),
                Some((lo, hi)) => (lo.min(k), hi.max(k)),
            });
        }
        let st = &mut self.streams[at.stream];
        let refused = std::mem::take(&mut st.refused_since);
        let faults = std::mem::take(&mut st.faults_since);
        let state = st.seq.entry(at.steward.clone()).or_default();
        let mut out: Vec<(&str, String)> = Vec::new();
        match at.seq {
            None => out.push(("unsequenced-record", "a signed record without a stream sequence number".into())),
            Some(q) => {
                // The sequence number this record should carry; none after u64::MAX.
                let successor = match state.last {
                    None => Some(0),
                    Some(l) => l.checked_add(1),
                };
                match successor {
                    Some(expected) if q == expected => {}
                    Some(expected) if q > expected => {
                        let missing = q - expected;
                        if faults == 0 && missing > refused {
                            out.push(("sequence-gap", format!("{} record(s) missing before sequence {q}", missing - refused)));
                        }
                    }
                    _ => out.push(("out-of-order", format!("sequence {q} after {}: re-ordered or re-used", state.last.unwrap_or(0)))),
                }
                state.last = Some(match state.last {
                    None => q,
                    Some(l) => l.max(q),
                });
            }
        }
        if let Some(k) = at.known_through {
            if let Some(prev) = state.last_marker {
                if k < prev {
                    out.push(("marker-regressed", format!("known_through {k} after {prev}: the marker must be monotonic (§4.3)")));
                }
            }
            state.last_marker = Some(state.last_marker.map_or(k, |p| p.max(k)));
        }
        for (code, msg) in out {
            self.finding(at.stream, at.offset, code, msg);
        }
    }

    /// A verified receipt: counts, group line, every debited grant's books,
    /// the stated remainder replayed (§8, §8.1, §8.2).
    fn receipt(&mut self, at: &At, mut c: ReceiptCore) {
        let (s, off) = (at.stream, at.offset);
        self.counts.total += 1;
        self.counts.verified += 1;
        if c.profile == Profile::Jcp1 {
            self.counts.legacy_jcp1 += 1;
        }
        if at.known_through.is_none() {
            self.stewards.entry(at.steward.clone()).or_default().without_marker += 1;
        }
        if c.verdict == Verdict::Allow {
            self.superseded_spend(at, &c);
        }
        let group_key = (c.grant_id, c.subject.to_did_string());
        let leaf = self.grants.entry(c.grant_id).or_default();
        if leaf.budget_from_receipt.is_none() {
            leaf.budget_from_receipt = Some(c.budget_uj);
        }
        let spent_before = leaf.running.get(&at.steward).copied().unwrap_or(0);
        if let Some(rec) = self.grant_records.get(&c.grant_id) {
            if rec.grant().budget_uj != c.budget_uj {
                let msg = format!("receipt states budget {} µJ but the grant record says {}", c.budget_uj, rec.grant().budget_uj);
                self.finding(s, off, "budget-mismatch", msg);
            }
        }
        match c.verdict {
            Verdict::Deny(reason) => {
                if let Some(g) = self.grants.get_mut(&c.grant_id) {
                    g.denies += 1;
                }
                self.groups.entry(group_key).or_default().refusals += 1;
                self.counts.denies += 1;
                *self.counts.deny_reasons.entry(reason.as_str().to_owned()).or_default() += 1;
                self.remaining(at, &c, spent_before);
            }
            Verdict::Allow => {
                let group = self.groups.entry(group_key).or_default();
                group.allows += 1;
                group.uj = group.uj.saturating_add(c.cost_uj);
                self.counts.allows += 1;
                let ids = c.debited_ids().to_vec();
                self.chain_links(at, &ids);
                for id in &ids {
                    self.debit(at, &c, id);
                }
                let spent = self.grants.get(&c.grant_id).and_then(|g| g.running.get(&at.steward)).copied().unwrap_or(0);
                self.remaining(at, &c, spent);
                if let Some(b) = c.breach {
                    self.finding(s, off, "debit-point-breach", format!("the work ran and was debited, breaching {b} at the debit point (§4.9)"));
                }
                let p = c.provenance.as_str().to_owned();
                let uj = self.energy.uj_by_provenance.entry(p.clone()).or_default();
                *uj = uj.saturating_add(c.cost_uj);
                *self.energy.allows_by_provenance.entry(p).or_default() += 1;
                if c.coverage == Coverage::Partial {
                    self.energy.partial_allows += 1;
                }
                // §4.11: pending until an outcome (or a settlement) names it.
                let pending = UnresolvedLine {
                    stream: s,
                    offset: off,
                    receipt: at.id,
                    grant_id: c.grant_id,
                    holder: c.subject.to_did_string(),
                    steward: at.steward.clone(),
                    action: std::mem::take(&mut c.action),
                    cost_uj: c.cost_uj,
                    settled: None,
                };
                self.streams[s].pending.insert(at.id, pending);
            }
        }
    }

    /// An allow's debit on one grant it names (§4.2, §8.1).
    fn debit(&mut self, at: &At, c: &ReceiptCore, id: &ContentId) {
        let budget = match self.grant_records.get(id) {
            Some(rec) => Some(rec.grant().budget_uj),
            None if *id == c.grant_id => Some(c.budget_uj),
            None => None,
        };
        let g = self.grants.entry(*id).or_default();
        let run = g.running.entry(at.steward.clone()).or_default();
        *run = run.saturating_add(c.cost_uj);
        g.spent_uj = g.spent_uj.saturating_add(c.cost_uj);
        g.allows += 1;
        if c.provenance.is_measured() {
            g.measured_uj = g.measured_uj.saturating_add(c.cost_uj);
        } else {
            g.modelled_uj = g.modelled_uj.saturating_add(c.cost_uj);
        }
        if c.coverage == Coverage::Partial {
            g.partial = true;
        }
        if let Some(m) = &c.money {
            g.spent_minor = g.spent_minor.saturating_add(m.minor);
        }
        if c.breach.is_some() {
            g.breaches += 1;
        }
        if let Some(b) = budget {
            if g.spent_uj > b && g.first_over.is_none() {
                g.first_over = Some((at.stream, at.offset));
            }
        }
        let bucket = g.by_marker.entry(at.known_through).or_default();
        bucket.count += 1;
        if bucket.first.len() < KEEP_OFFSETS {
            bucket.first.push((at.stream, at.offset));
        }
    }

    /// §8.1: the receipt's stated remainder must be what replaying this
    /// steward's verified receipts gives; on a mismatch the running figure
    /// follows the receipt, so one discrepancy is one finding.
    fn remaining(&mut self, at: &At, c: &ReceiptCore, spent: u64) {
        let expected = c.budget_uj.saturating_sub(spent);
        if expected == c.budget_remaining_uj {
            return;
        }
        let msg = words::remaining_mismatch(c.budget_remaining_uj, &c.grant_id, expected);
        self.finding(at.stream, at.offset, "remaining-mismatch", msg);
        let g = self.grants.entry(c.grant_id).or_default();
        g.running.insert(at.steward.clone(), c.budget_uj.saturating_sub(c.budget_remaining_uj));
    }

    /// §4.7: an allow on a grant an amendment admitted earlier by this same
    /// point (this stream, this steward) superseded, or on a chain through it.
    fn superseded_spend(&mut self, at: &At, c: &ReceiptCore) {
        let mut hit = None;
        for id in c.debited_ids() {
            let Some(list) = self.superseded.get(id) else {
                continue;
            };
            if let Some((_, _, am)) = list.iter().find(|(st, stw, _)| *st == at.stream && *stw == at.steward) {
                hit = Some((*id, *am));
                break;
            }
        }
        if let Some((id, am)) = hit {
            self.finding(
                at.stream,
                at.offset,
                "superseded-spend",
                format!("allow on grant {id} after this point admitted amendment {am}, which superseded it (§4.7)"),
            );
        }
    }

    /// §4.2: where a chain's grant records are known, each names the one
    /// before it as its parent (one finding per receipt at most).
    fn chain_links(&mut self, at: &At, ids: &[ContentId]) {
        for w in ids.windows(2) {
            let Some(child) = self.grant_records.get(&w[1]) else {
                continue;
            };
            if child.grant().parent != Some(w[0]) {
                let msg = format!("chain_ids names {} after {}, but its grant record's parent differs", w[1], w[0]);
                self.finding(at.stream, at.offset, "chain-mismatch", msg);
                return;
            }
        }
    }

    /// §4.9 + §4.11: a settlement takes back its reservation's accounting
    /// when both it and the settling receipt are allows of this steward
    /// earlier in this stream with no outcome, for one grant and holder,
    /// and the reservation's cost is the one recorded; anything else is
    /// `settlement-unmatched` and takes nothing back.
    fn settlement(&mut self, at: &At, reservation: ContentId, c: &ReceiptCore, known_through: Option<u64>, settled_by: ContentId) {
        let s = at.stream;
        let holder = c.subject.to_did_string();
        let pending = &self.streams[s].pending;
        let matches = |p: &UnresolvedLine| p.steward == at.steward && p.grant_id == c.grant_id && p.holder == holder;
        let held = match (pending.get(&reservation), pending.get(&settled_by)) {
            (Some(a), Some(b)) if reservation != settled_by && matches(a) && matches(b) && a.cost_uj == c.cost_uj => Some((a.offset, b.offset)),
            _ => None,
        };
        let Some((held_at, settled_at)) = held else {
            let msg = words::settlement_unmatched(&reservation, &settled_by);
            return self.finding(s, at.offset, "settlement-unmatched", msg);
        };
        self.streams[s].pending.remove(&reservation);
        self.counts.settlements += 1;
        let minor = c.money.as_ref().map_or(0, |m| m.minor);
        for id in c.debited_ids() {
            let record_budget = self.grant_records.get(id).map(|g| g.grant().budget_uj);
            let Some(g) = self.grants.get_mut(id) else {
                continue;
            };
            let run = g.running.entry(at.steward.clone()).or_default();
            *run = run.saturating_sub(c.cost_uj);
            g.spent_uj = g.spent_uj.saturating_sub(c.cost_uj);
            g.allows = g.allows.saturating_sub(1);
            if c.provenance.is_measured() {
                g.measured_uj = g.measured_uj.saturating_sub(c.cost_uj);
            } else {
                g.modelled_uj = g.modelled_uj.saturating_sub(c.cost_uj);
            }
            g.spent_minor = g.spent_minor.saturating_sub(minor);
            if let Some(b) = g.by_marker.get_mut(&known_through) {
                b.count = b.count.saturating_sub(1);
                b.first.retain(|&x| x != (s, held_at));
            }
            // The crossing allow taken back: the settling receipt now
            // stands where the spend still crosses.
            if g.first_over == Some((s, held_at)) {
                let budget = match record_budget {
                    Some(b) => Some(b),
                    None if *id == c.grant_id => g.budget_from_receipt,
                    None => None,
                };
                g.first_over = match budget {
                    Some(b) if g.spent_uj > b => Some((s, settled_at)),
                    _ => None,
                };
            }
        }
        if let Some(group) = self.groups.get_mut(&(c.grant_id, holder)) {
            group.allows = group.allows.saturating_sub(1);
            group.uj = group.uj.saturating_sub(c.cost_uj);
        }
        self.energy.take_back(c.provenance.as_str(), c.cost_uj, c.coverage == Coverage::Partial);
    }

    /// §4.11: every allow of the stream still pending is unresolved, named
    /// with its holder, in stream order; it stays debited.
    fn end_stream(&mut self, s: usize) {
        let lines: Vec<UnresolvedLine> = std::mem::take(&mut self.streams[s].pending).into_values().collect();
        self.unresolved.list(lines, &mut self.findings, self.max_findings);
    }

    /// §4.3: one line per signed revocation (however many points recorded
    /// it), at the smallest marker any notice of it states, its authority
    /// checked at its first notice; then, per revoked grant, a finding for
    /// every allow on its subtree from a point that had heard (violation)
    /// or did not say (unverifiable), against the earliest marker of its
    /// revocations that are not forged.
    fn revocations(&mut self) -> Vec<RevocationLine> {
        // One signed revocation (its id and signature), in the order first read.
        let mut order: Vec<(ContentId, [u8; 64])> = Vec::new();
        let mut revs: BTreeMap<(ContentId, [u8; 64]), Revoked> = BTreeMap::new();
        for (n, s, off) in std::mem::take(&mut self.notices) {
            let key = (n.revocation.id(), *n.revocation.signature());
            if let Some(r) = revs.get_mut(&key) {
                r.marker = r.marker.min(n.marker);
                r.notices += 1;
            } else {
                order.push(key);
                revs.insert(key, Revoked { marker: n.marker, notices: 1, at: (s, off), first: n });
            }
        }
        let mut earliest: BTreeMap<ContentId, u64> = BTreeMap::new();
        let mut lines = Vec::new();
        for key in order {
            let Some(Revoked { marker, notices, at: (s, off), first: n }) = revs.remove(&key) else {
                continue;
            };
            let gid = n.revocation.revocation().grant_id;
            let authority = match self.grant_records.get(&gid) {
                None => "unverifiable",
                Some(g) if n.revocation.check_authority(g).is_ok() => "verified",
                Some(_) => "forged",
            };
            if authority == "forged" {
                self.finding(s, off, "revocation-forged", words::revocation_forged(&gid));
            } else if authority == "unverifiable" {
                self.finding(s, off, "revocation-authority-unknown", words::revocation_authority_unknown(&gid));
            }
            let classes = if authority == "forged" {
                RevocationClasses::default()
            } else {
                let e = earliest.entry(gid).or_insert(marker);
                *e = (*e).min(marker);
                self.grants.get(&gid).map(|g| classify(g, marker)).unwrap_or_default()
            };
            lines.push(RevocationLine { grant_id: gid, marker, at: (s, off), notices, authority, allows: classes });
        }
        for (gid, m) in earliest {
            let Some(classes) = self.grants.get(&gid).map(|g| classify(g, m)) else {
                continue;
            };
            let mut found: Vec<(usize, u64, &str)> = Vec::new();
            for &(s, o) in &classes.violation_at {
                found.push((s, o, "revocation-violation"));
            }
            for &(s, o) in &classes.unverifiable_at {
                found.push((s, o, "revocation-unverifiable"));
            }
            found.sort_unstable();
            for (s, o, code) in found {
                self.finding(s, o, code, words::revocation_allow(code, &gid, m));
            }
            // Every classified allow is a finding; those past the kept
            // offsets are counted without detail.
            self.findings.count_more("revocation-violation", classes.violation.saturating_sub(classes.violation_at.len() as u64));
            self.findings.count_more("revocation-unverifiable", classes.unverifiable.saturating_sub(classes.unverifiable_at.len() as u64));
        }
        lines
    }

    /// §5.5: a grant's conservation line and, past its ceiling, an `overspend`.
    fn grant_line(&self, id: ContentId, acc: &GrantBooks, overs: &mut Vec<(usize, u64, String)>) -> GrantLine {
        let rec = self.grant_records.get(&id);
        let budget = match rec {
            Some(g) => Some(g.grant().budget_uj),
            None => acc.budget_from_receipt,
        };
        let conservation = budget.map(|b| Conservation::of(b, acc.spent_uj, acc.measured_uj, acc.modelled_uj, acc.partial));
        if let Some(c) = &conservation {
            if c.spent_uj > c.budget_uj {
                let (s, o) = acc.first_over.unwrap_or((0, 0));
                overs.push((s, o, words::overspend_uj(&id, c.spent_uj, c.budget_uj, c.overspent_uj)));
            }
        }
        let mut line = GrantLine::of_record(id, rec, budget, acc.spent_minor, conservation);
        line.spent_uj = acc.spent_uj;
        line.allows = acc.allows;
        line.denies = acc.denies;
        line.breaches = acc.breaches;
        if let (Some(ceiling), Some(currency)) = (line.money.ceiling_minor, &line.money.currency) {
            if acc.spent_minor > ceiling {
                overs.push((0, 0, words::overspend_money(&id, acc.spent_minor, currency, ceiling)));
            }
        }
        line
    }

    fn finish(mut self) -> Report {
        let revocations = self.revocations();
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
            self.finding(s, o, "overspend", msg);
        }
        let groups: Vec<GroupLine> = std::mem::take(&mut self.groups)
            .into_iter()
            .map(|((grant_id, subject), a)| GroupLine { grant_id, subject, allows: a.allows, refusals: a.refusals, uj: a.uj })
            .collect();
        let stewards: Vec<StewardLine> = std::mem::take(&mut self.stewards)
            .into_iter()
            .map(|(steward, a)| StewardLine { steward, records: a.records, known_through: a.marker, receipts_without_marker: a.without_marker })
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

/// A signed revocation as the notices recorded it.
struct Revoked {
    /// The smallest marker any of its notices states.
    marker: u64,
    /// How many notices recorded it.
    notices: u64,
    /// Where its first notice is (stream, offset).
    at: (usize, u64),
    /// That notice.
    first: RevocationNotice,
}

/// The verified allows on a grant's subtree against marker `m` (§4.3):
/// `known_through < m` explicable, `>= m` violation, none unverifiable.
fn classify(g: &GrantBooks, m: u64) -> RevocationClasses {
    let heard = |k: &Option<u64>| k.is_some_and(|k| k >= m);
    let behind = |k: &Option<u64>| k.is_some_and(|k| k < m);
    let silent = |k: &Option<u64>| k.is_none();
    let count = |class: &dyn Fn(&Option<u64>) -> bool| -> u64 { g.by_marker.iter().filter(|(k, _)| class(k)).map(|(_, b)| b.count).sum() };
    let kept = |class: &dyn Fn(&Option<u64>) -> bool| -> Vec<(usize, u64)> {
        let mut at: Vec<(usize, u64)> = g.by_marker.iter().filter(|(k, _)| class(k)).flat_map(|(_, b)| b.first.iter().copied()).collect();
        at.sort_unstable();
        at
    };
    RevocationClasses {
        explicable: count(&behind),
        violation: count(&heard),
        unverifiable: count(&silent),
        violation_at: kept(&heard),
        unverifiable_at: kept(&silent),
    }
}
