//! The fast audit's serial half: every checked record accounted in stream
//! order (§8.2: failures counted, never skipped), then the report.
//!
//! One module per step of the audit, named after its spec section:
//! [`read`] (the streams read once and checked on all cores, §8.1),
//! [`sequence`] (each steward's records in order, §8.1, markers §4.3),
//! [`budget`] (budget replay over every link, §7, §8.1, §4.2, §4.8),
//! [`amendment`] (§4.7), [`outcomes`] (outcomes, settlements and unresolved
//! decisions, §4.9, §4.11), [`revocation`] (propagation, §4.3),
//! [`groups`] (§8.2), [`conservation`] (§5.5). [`Engine::finish`] runs the
//! closing steps in that order. The reference audit (`crate::reference`)
//! shares none of this counting code: it is the independent check on it.

mod amendment;
mod budget;
mod conservation;
mod groups;
mod hashing;
mod outcomes;
mod read;
mod revocation;
mod sequence;
mod shards;

use std::collections::BTreeMap;

use jcp::cbor::ContentId;
use jcp::grant::SignedGrant;
use jcp_receipt::record::StatementNotice;
use jcp_receipt::stream::{Fault, FaultCode, RecordKind};

use crate::check::{Body, Checked, Part};
use crate::codes::FindingCode;
use crate::report::{EnergyFloors, Findings, Parts, ReceiptCounts, Report, StreamSummary, Unresolved};
use crate::seen::SeenSet;
use crate::{words, AuditOptions};
use budget::GrantAcc;
use groups::GroupAcc;
use hashing::{Key, Map, Set};
use outcomes::PendingAllow;
pub(crate) use read::{read_into, run};
use revocation::Recorded;
use sequence::{SeqState, StewardAcc};

/// Offsets kept per marker bucket (§4.3: the first few allows of a class
/// are reported with where they are; all are counted).
const KEEP_OFFSETS: usize = 8;

/// One stream's accounting state while it is read.
#[derive(Debug, Default)]
struct StreamState {
    /// Its line of the report.
    summary: StreamSummary,
    /// Verified allows waiting for their outcome, by record id (§4.11).
    pending: Map<[u8; 32], PendingAllow>,
    /// Records refused since the last signed record accounted (a sequence
    /// gap they explain is no finding).
    refused_since: u64,
    /// Framing faults since the last signed record accounted (after one, a
    /// gap is not judged).
    faults_since: u64,
    /// Each steward's place in its sequence.
    seq: Map<Key, SeqState>,
    /// The request record just read whose caller signature failed (§11):
    /// the receipt right behind it must not be an allow.
    bad_request: Option<u64>,
}

/// The accounting of one audit: every checked record of every stream, in
/// stream order, into the books the report is read off.
pub(crate) struct Engine {
    max_findings: usize,
    streams: Vec<StreamState>,
    counts: ReceiptCounts,
    findings: Findings,
    grants: Map<ContentId, GrantAcc>,
    grant_records: Map<ContentId, SignedGrant>,
    groups: Map<(ContentId, Key), GroupAcc>,
    notices: Vec<Recorded>,
    unresolved: Unresolved,
    energy: EnergyFloors,
    stewards: Map<Key, StewardAcc>,
    /// Every signed record accounted, by its duplicate key (`Meta::dedup`).
    seen: SeenSet,
    /// Receipt ids of refused receipts (outcomes naming them are not orphans).
    refused_receipts: Set<u128>,
    /// Grants superseded by an admitted amendment (§4.7), with the stream
    /// and steward that recorded it: that point's later allows on them are
    /// findings.
    superseded: Map<ContentId, Vec<amendment::Superseded>>,
    /// For each continuation named by a verified amendment notice: the
    /// run's declared spend when it began.
    run_base: Map<ContentId, Option<u64>>,
    /// §4.3: the issuer's revocation log, when the auditor gave one.
    revocation_log: Option<std::sync::Arc<jcp::revocation_log::IssuerLog>>,
}

/// Adds to a report counter without allocating the key when it exists
/// (once per receipt on the hot path).
#[inline]
fn bump(map: &mut BTreeMap<String, u64>, key: &str, by: u64) {
    match map.get_mut(key) {
        Some(v) => *v = v.saturating_add(by),
        None => {
            map.insert(key.to_owned(), by);
        }
    }
}

/// A record id's first 16 bytes, the key of the refused receipts' set.
#[inline]
fn short(id: &[u8; 32]) -> u128 {
    let mut b = [0u8; 16];
    b.copy_from_slice(&id[..16]);
    u128::from_be_bytes(b)
}

impl Engine {
    /// `signed_records`: how many the duplicate set is sized for ahead.
    fn new(opts: &AuditOptions, signed_records: usize) -> Self {
        Self {
            max_findings: opts.max_findings,
            streams: Vec::new(),
            counts: ReceiptCounts::default(),
            findings: Findings::new(opts.max_findings),
            grants: Map::default(),
            grant_records: Map::default(),
            groups: Map::default(),
            notices: Vec::new(),
            unresolved: Unresolved::default(),
            energy: EnergyFloors::default(),
            stewards: Map::default(),
            seen: SeenSet::with_capacity(signed_records),
            refused_receipts: Set::default(),
            superseded: Map::default(),
            run_base: Map::default(),
            revocation_log: opts.revocation_log.clone(),
        }
    }

    /// A finding: counted by its code, kept in detail up to `max_findings`.
    #[inline]
    fn finding(&mut self, stream: usize, offset: u64, code: FindingCode, message: String) {
        self.findings.add(stream, offset, code, message);
    }

    /// A chunk of checked records, accounted in order.
    fn account(&mut self, chunk: Vec<Part>) {
        let _probe = crate::phases::probe!(ACCOUNT);
        for part in chunk {
            // Fetch the duplicate set's slots for the part first (see
            // `seen`; a part is at most 1 024 records, so its slots stay
            // in the core's own cache until they are inserted).
            self.seen.touch(part.checked.iter().filter_map(|c| c.meta.map(|m| m.dedup)));
            for c in part.checked {
                self.account_one(c, &part.chains);
            }
        }
    }

    /// A budget-channel statement notice (§4.5): the recording point sealed
    /// the record; the statement itself must verify under its point. Whether
    /// it was stale or regressing was the point's to judge when it admitted
    /// it (its replay judges it again); a channel's overdraft is audited
    /// across points by `jcp channel audit`.
    fn channel_statement(&mut self, s: usize, off: u64, n: &StatementNotice) {
        match n.statement.verify() {
            Ok(()) => self.counts.channel_statements += 1,
            Err(e) => self.finding(
                s,
                off,
                FindingCode::StatementInvalid,
                format!("a channel statement notice whose statement does not verify: {e}"),
            ),
        }
    }

    /// One checked record (§8.2: nothing skipped): a framing fault or a
    /// refusal is counted under its code; a signed record is checked for
    /// duplicates and its place in its steward's sequence, then accounted by
    /// its kind. `chains`: the arena of the part the record came in (its
    /// chain ids).
    fn account_one(&mut self, c: Checked, chains: &[ContentId]) {
        let (s, off) = (c.stream, c.offset);
        if c.kind.is_some() {
            self.streams[s].summary.records += 1;
        }
        let bad_request = self.streams[s].bad_request.take();
        match c.body {
            Body::Fault(f) => self.fault(s, &f),
            Body::Refused(code, msg) => self.refused(s, off, c.kind, c.refused_id, code, &msg),
            Body::WireRequest { signed } => {
                self.counts.wire_requests += 1;
                self.streams[s].bad_request = (!signed).then_some(off);
            }
            Body::Grant(g) => {
                self.counts.grants += 1;
                self.grant_records.insert(g.id(), *g);
            }
            body => {
                let Some(meta) = c.meta else { return };
                if !self.seen.insert(meta.dedup) {
                    return self.duplicate(s, off, c.kind);
                }
                self.sequence(s, off, &meta);
                match body {
                    Body::Receipt(mut core) => {
                        if let (Some(at), jcp::decision::Verdict::Allow) = (bad_request, core.verdict) {
                            self.finding(
                                s,
                                off,
                                FindingCode::RequestSignatureInvalid,
                                words::request_signature_invalid(at),
                            );
                        }
                        let action = std::mem::take(&mut core.action);
                        self.receipt(s, off, &meta, &core, chains, action);
                    }
                    Body::Outcome(receipt) => self.outcome(s, off, receipt),
                    Body::Settlement(st) => self.settle(s, off, &meta, &st),
                    Body::Revocation(n) => self.revocation_notice(s, off, *n),
                    Body::Amendment(a) => self.amendment(s, off, &meta, &a),
                    Body::Closing => self.counts.closings += 1,
                    Body::Statement(n) => self.channel_statement(s, off, &n),
                    _ => {}
                }
            }
        }
    }

    /// A framing fault (§8.2): counted on its stream, a finding at its offset.
    fn fault(&mut self, s: usize, f: &Fault) {
        let st = &mut self.streams[s];
        st.summary.faults += 1;
        st.faults_since += 1;
        if f.code == FaultCode::TornTail {
            st.summary.torn_tail_at = Some(f.offset);
        }
        self.finding(s, f.offset, FindingCode::from(f.code), words::fault(f));
    }

    /// A refused record (§8.2: counted, never skipped): a receipt among the
    /// receipts that failed, by its reason code (its id kept, so its
    /// outcome is no orphan); any other kind among the other failures.
    fn refused(
        &mut self,
        s: usize,
        off: u64,
        kind: Option<RecordKind>,
        id: Option<[u8; 32]>,
        code: FindingCode,
        msg: &str,
    ) {
        self.streams[s].refused_since += 1;
        if kind == Some(RecordKind::Receipt) {
            self.counts.total += 1;
            self.counts.failed += 1;
            *self.counts.failed_by_reason.entry(code).or_default() += 1;
            if let Some(id) = id {
                self.refused_receipts.insert(short(&id));
            }
        } else {
            *self.counts.other_failed_by_reason.entry(code).or_default() += 1;
        }
        self.finding(s, off, code, words::refused(kind, msg));
    }

    /// A signed record seen before (its duplicate key): counted once and
    /// accounted once; a repeated receipt is among the failed.
    fn duplicate(&mut self, s: usize, off: u64, kind: Option<RecordKind>) {
        if kind == Some(RecordKind::Receipt) {
            self.counts.total += 1;
            self.counts.failed += 1;
            *self.counts.failed_by_reason.entry(FindingCode::DuplicateRecord).or_default() += 1;
        }
        self.finding(
            s,
            off,
            FindingCode::DuplicateRecord,
            "a record seen before, again: counted once, accounted once".into(),
        );
    }

    /// The report, read off the books in closing steps: revocations
    /// classified against every allow on their subtree (§4.3), and
    /// supersessions against every other point's allows (§4.7), each grant's
    /// line with conservation and overspend (§5.5), the group lines (§8.2),
    /// the steward lines, then the report assembled (findings last, since
    /// the steps before add to them).
    fn finish(mut self) -> Report {
        let revocations = self.revocations();
        self.supersessions();
        self.shards();
        let grants = self.grant_lines();
        let groups = self.group_lines();
        let stewards = self.steward_lines();
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

/// What the reading half hands its checked records to, in stream order:
/// the accounting ([`Engine`]) or a partial audit's recorder
/// (`crate::partial`), which keeps them for a later merge.
pub(crate) trait Sink: Send {
    /// A stream is about to be read.
    fn start_stream(&mut self, summary: StreamSummary);
    /// The next chunk of the current stream, checked, in order.
    fn take(&mut self, chunk: Vec<Part>);
    /// The stream `s` was read to its end.
    fn end_stream(&mut self, s: usize);
}

impl Sink for Engine {
    fn start_stream(&mut self, summary: StreamSummary) {
        self.streams.push(StreamState { summary, ..StreamState::default() });
    }

    fn take(&mut self, chunk: Vec<Part>) {
        self.account(chunk);
    }

    fn end_stream(&mut self, s: usize) {
        self.list_unresolved(s);
    }
}

impl Engine {
    /// An engine for replaying checked records (a merge of partial audits):
    /// `max_findings` as the partials were made with, the duplicate set
    /// sized for `signed_records`.
    pub(crate) fn for_replay(max_findings: usize, signed_records: usize) -> Self {
        Self::new(&AuditOptions { max_findings, ..AuditOptions::default() }, signed_records)
    }

    /// The report of everything replayed so far.
    pub(crate) fn into_report(self) -> Report {
        self.finish()
    }
}
