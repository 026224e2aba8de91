//! The serial half of the audit: accounting in stream order, then the report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::ops::ControlFlow;
use std::path::PathBuf;

use jcp::cbor::ContentId;
use jcp::decision::Verdict;
use jcp::energy::Coverage;
use jcp::grant::SignedGrant;
use jcp::identity::did_string_of;
use jcp_receipt::receipt::Profile;
use jcp_receipt::record::RevocationNotice;
use jcp_receipt::stream::{Batch, FaultCode, Reader, RecordKind};

use crate::check::{self, Body, Checked, Facts, Meta, Part};
use crate::codes::{Authority, FindingCode};
use crate::report::{
    conservation_of, EnergyFloors, Findings, GrantLine, GroupLine, Parts, ReceiptCounts, Report, RevocationClasses,
    RevocationLine, StewardLine, StreamSummary, Unresolved, UnresolvedLine,
};
use crate::seen::SeenSet;
use crate::{words, AuditError, AuditOptions, Progress};

const KEEP_OFFSETS: usize = 8;

/// The engine's maps are keyed by blake3-derived ids and did:keys, which
/// are uniformly distributed already: the hasher folds the first eight
/// bytes of each written field instead of running SipHash over all of them
/// (a third of the accounting's time went to hashing). Keys reach the maps
/// only from records whose signature verified, so colliding them on purpose
/// needs a steward's key and grinds blake3 or key generation per key.
type Fast = std::hash::BuildHasherDefault<IdHasher>;

#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut w = [0u8; 8];
        let n = bytes.len().min(8);
        w[..n].copy_from_slice(&bytes[..n]);
        self.write_u64(u64::from_le_bytes(w));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(26) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}
type Map<K, V> = HashMap<K, V, Fast>;
/// A parsed did's public-key bytes: the engine keys its maps by them and
/// spells the did (`did_string_of`) only in the report.
type Key = [u8; 32];
type Set<K> = HashSet<K, Fast>;

#[derive(Debug, Default)]
struct Bucket {
    count: u64,
    first: Vec<(usize, u64)>,
}

#[derive(Debug, Default)]
struct GrantAcc {
    spent_uj: u64,
    allows: u64,
    denies: u64,
    breaches: u64,
    measured_uj: u64,
    modelled_uj: u64,
    partial: bool,
    spent_minor: u64,
    budget_from_receipt: Option<u64>,
    first_over: Option<(usize, u64)>,
    /// Verified allows whose chain contains this grant, by `known_through`.
    by_marker: Map<Option<u64>, Bucket>,
    /// This grant's running spend per steward, to check each receipt's
    /// stated remainder (kept with the grant: its entry is looked up anyway).
    running: Running,
}

/// Running spend per steward: the first steward inline (a stream usually
/// has one), any others in a map, so many stewards cost a lookup, never a scan.
#[derive(Debug, Default)]
struct Running {
    first: Option<(Key, u64)>,
    more: Map<Key, u64>,
}

impl Running {
    fn get(&self, steward: &Key) -> u64 {
        match &self.first {
            Some((k, v)) if k == steward => *v,
            _ => self.more.get(steward).copied().unwrap_or(0),
        }
    }

    fn slot(&mut self, steward: &Key) -> &mut u64 {
        if self.first.is_none() {
            self.first = Some((*steward, 0));
        }
        match &mut self.first {
            Some((k, v)) if k == steward => v,
            _ => self.more.entry(*steward).or_default(),
        }
    }
}

#[derive(Debug, Default)]
struct GroupAcc {
    allows: u64,
    refusals: u64,
    uj: u64,
}

#[derive(Debug, Default)]
struct SeqState {
    last: Option<u64>,
    last_marker: Option<u64>,
}

#[derive(Debug)]
struct PendingAllow {
    offset: u64,
    grant_id: ContentId,
    holder: Key,
    steward: Key,
    action: String,
    cost_uj: u64,
}

#[derive(Debug, Default)]
struct StreamState {
    summary: StreamSummary,
    pending: Map<[u8; 32], PendingAllow>,
    refused_since: u64,
    faults_since: u64,
    seq: Map<Key, SeqState>,
}

#[derive(Debug, Default)]
struct StewardAcc {
    records: u64,
    marker: Option<(u64, u64)>,
    without_marker: u64,
}

#[derive(Debug)]
struct Notice {
    notice: RevocationNotice,
    stream: usize,
    offset: u64,
}

pub(crate) struct Engine {
    max_findings: usize,
    streams: Vec<StreamState>,
    counts: ReceiptCounts,
    findings: Findings,
    grants: Map<ContentId, GrantAcc>,
    grant_records: Map<ContentId, SignedGrant>,
    groups: Map<(ContentId, Key), GroupAcc>,
    notices: Vec<Notice>,
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
    superseded: Map<ContentId, Vec<(usize, Key, ContentId)>>,
    /// For each continuation named by a verified amendment notice: the
    /// run's declared spend when it began.
    run_base: Map<ContentId, Option<u64>>,
}

/// Adds to a report counter without allocating the key when it exists
/// (once per receipt on the hot path).
fn bump(map: &mut BTreeMap<String, u64>, key: &str, by: u64) {
    match map.get_mut(key) {
        Some(v) => *v = v.saturating_add(by),
        None => {
            map.insert(key.to_owned(), by);
        }
    }
}

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
        }
    }

    fn finding(&mut self, stream: usize, offset: u64, code: FindingCode, message: String) {
        self.findings.add(stream, offset, code, message);
    }

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

    /// `chains`: the arena of the part the record came in (its chain ids).
    /// §4.5: the recording point sealed the record; the statement itself
    /// must verify under its point. Whether it was stale or regressing was
    /// the point's to judge when it admitted it (its replay judges it
    /// again); a channel's overdraft is audited across points by
    /// `jcp channel audit`.
    fn channel_statement(&mut self, s: usize, off: u64, n: &jcp_receipt::record::StatementNotice) {
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

    fn account_one(&mut self, c: Checked, chains: &[ContentId]) {
        let (s, off) = (c.stream, c.offset);
        if c.kind.is_some() {
            self.streams[s].summary.records += 1;
        }
        match c.body {
            Body::Fault(f) => {
                let st = &mut self.streams[s];
                st.summary.faults += 1;
                st.faults_since += 1;
                if f.code == FaultCode::TornTail {
                    st.summary.torn_tail_at = Some(f.offset);
                }
                self.finding(s, f.offset, FindingCode::from(f.code), words::fault(&f));
            }
            Body::Refused(code, msg) => {
                self.streams[s].refused_since += 1;
                if c.kind == Some(RecordKind::Receipt) {
                    self.counts.total += 1;
                    self.counts.failed += 1;
                    *self.counts.failed_by_reason.entry(code).or_default() += 1;
                    if let Some(id) = c.refused_id {
                        self.refused_receipts.insert(short(&id));
                    }
                } else {
                    *self.counts.other_failed_by_reason.entry(code).or_default() += 1;
                }
                self.finding(s, off, code, words::refused(c.kind, &msg));
            }
            Body::WireRequest => self.counts.wire_requests += 1,
            Body::Grant(g) => {
                self.counts.grants += 1;
                self.grant_records.insert(g.id(), *g);
            }
            body => {
                let Some(meta) = c.meta else { return };
                if !self.seen.insert(meta.dedup) {
                    if c.kind == Some(RecordKind::Receipt) {
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
                    return;
                }
                self.sequence(s, off, &meta);
                match body {
                    Body::Receipt(mut core) => {
                        let action = std::mem::take(&mut core.action);
                        self.receipt(s, off, &meta, &core, chains, action);
                    }
                    Body::Outcome(receipt) => {
                        self.counts.outcomes += 1;
                        if self.streams[s].pending.remove(&receipt.0).is_none()
                            && !self.refused_receipts.contains(&short(&receipt.0))
                        {
                            self.finding(
                                s,
                                off,
                                FindingCode::OrphanOutcome,
                                format!("outcome for {receipt} which was not decided earlier in this stream"),
                            );
                        }
                    }
                    Body::Settlement(st) => self.settle(s, off, &meta, &st),
                    Body::Revocation(n) => {
                        self.counts.revocation_notices += 1;
                        self.notices.push(Notice { notice: *n, stream: s, offset: off });
                    }
                    Body::Amendment(a) => {
                        // A continuation steered again began at the spend its
                        // own amendment's checkpoint stated (§4.7: spend is
                        // cumulative over the run).
                        let base = self.run_base.get(&a.steered.id()).copied().unwrap_or(Some(0));
                        let checked =
                            jcp::steering::verify_amendment_from(&a.steered, &a.checkpoint, &a.amendment, base)
                                .and_then(|_| {
                                    jcp::steering::verify_continuation(
                                        &a.steered,
                                        a.amendment.amendment(),
                                        &a.continuation,
                                    )
                                });
                        match checked {
                            Ok(()) => {
                                self.counts.amendments += 1;
                                self.run_base
                                    .insert(a.continuation.id(), a.checkpoint.checkpoint().spent.map(|x| x.uj));
                                self.superseded.entry(a.steered.id()).or_default().push((
                                    s,
                                    meta.steward,
                                    a.amendment.id(),
                                ));
                            }
                            Err(e) => self.finding(
                                s,
                                off,
                                FindingCode::AmendmentInvalid,
                                format!("an amendment notice whose amendment does not verify: {e}"),
                            ),
                        }
                    }
                    Body::Closing => self.counts.closings += 1,
                    Body::Statement(n) => self.channel_statement(s, off, &n),
                    _ => {}
                }
            }
        }
    }

    /// A settlement (§4.9, §4.11): the reservation it carries and the
    /// receipt that settles it must both be allows this steward recorded
    /// earlier in this stream with no outcome yet, for the same grant and
    /// holder. Then what the reservation's accounting added is taken back —
    /// its joules and money on every link, its action in the group and grant
    /// lines, its grade, its revocation class — and it is resolved; the
    /// settling receipt stands for the action. Anything else is
    /// `settlement-unmatched` and takes nothing back (fail closed).
    fn settle(&mut self, s: usize, off: u64, meta: &Meta, st: &check::SettlementFacts) {
        let c = &st.core;
        let subject = *c.subject.public_bytes();
        let pending = &self.streams[s].pending;
        let settling = match (pending.get(&st.reservation.0), pending.get(&st.settled_by.0)) {
            (Some(a), Some(b))
                if st.reservation != st.settled_by
                    && a.steward == meta.steward
                    && b.steward == meta.steward
                    && a.grant_id == c.grant_id
                    && b.grant_id == c.grant_id
                    && a.holder == subject
                    && b.holder == subject
                    && a.cost_uj == c.cost_uj =>
            {
                Some((a.offset, b.offset))
            }
            _ => None,
        };
        let Some((held_at, settled_at)) = settling else {
            return self.finding(
                s,
                off,
                FindingCode::SettlementUnmatched,
                words::settlement_unmatched(&st.reservation, &st.settled_by),
            );
        };
        self.streams[s].pending.remove(&st.reservation.0);
        self.counts.settlements += 1;
        let measured = c.provenance.is_measured();
        let minor = c.money.as_ref().map_or(0, |m| m.minor);
        for id in c.debited_ids() {
            let budget = self.grant_records.get(id).map(|g| g.grant().budget_uj);
            let Some(g) = self.grants.get_mut(id) else { continue };
            let run = g.running.slot(&meta.steward);
            *run = run.saturating_sub(c.cost_uj);
            g.spent_uj = g.spent_uj.saturating_sub(c.cost_uj);
            g.allows = g.allows.saturating_sub(1);
            if measured {
                g.measured_uj = g.measured_uj.saturating_sub(c.cost_uj);
            } else {
                g.modelled_uj = g.modelled_uj.saturating_sub(c.cost_uj);
            }
            g.spent_minor = g.spent_minor.saturating_sub(minor);
            if let Some(b) = g.by_marker.get_mut(&st.known_through) {
                b.count = b.count.saturating_sub(1);
                b.first.retain(|&at| at != (s, held_at));
            }
            if g.first_over == Some((s, held_at)) {
                let budget = budget.or(if *id == c.grant_id { g.budget_from_receipt } else { None });
                g.first_over = budget.is_some_and(|b| g.spent_uj > b).then_some((s, settled_at));
            }
        }
        if let Some(group) = self.groups.get_mut(&(c.grant_id, subject)) {
            group.allows = group.allows.saturating_sub(1);
            group.uj = group.uj.saturating_sub(c.cost_uj);
        }
        self.energy.take_back(c.provenance.as_str(), c.cost_uj, c.coverage == Coverage::Partial);
    }

    fn sequence(&mut self, s: usize, off: u64, meta: &Meta) {
        let sa = self.stewards.entry(meta.steward).or_default();
        sa.records += 1;
        if let Some(k) = meta.known_through {
            sa.marker = Some(sa.marker.map_or((k, k), |(lo, hi)| (lo.min(k), hi.max(k))));
        }
        let st = &mut self.streams[s];
        let refused = std::mem::take(&mut st.refused_since);
        let faults = std::mem::take(&mut st.faults_since);
        let state = st.seq.entry(meta.steward).or_default();
        let mut out: Vec<(FindingCode, String)> = Vec::new();
        match meta.seq {
            None => {
                out.push((FindingCode::UnsequencedRecord, "a signed record without a stream sequence number".into()))
            }
            Some(q) => {
                // A sequence at u64::MAX has no successor: whatever follows is out of order.
                let expected = state.last.map_or(Some(0), |l| l.checked_add(1)).unwrap_or(u64::MAX);
                if q < expected || state.last == Some(u64::MAX) {
                    out.push((
                        FindingCode::OutOfOrder,
                        format!("sequence {q} after {}: re-ordered or re-used", state.last.unwrap_or_default()),
                    ));
                } else if q > expected {
                    let missing = q - expected;
                    if faults == 0 && missing > refused {
                        out.push((
                            FindingCode::SequenceGap,
                            format!("{} record(s) missing before sequence {q}", missing - refused),
                        ));
                    }
                }
                state.last = Some(state.last.map_or(q, |l| l.max(q)));
            }
        }
        if let Some(k) = meta.known_through {
            if let Some(prev) = state.last_marker {
                if k < prev {
                    out.push((
                        FindingCode::MarkerRegressed,
                        format!("known_through {k} after {prev}: the marker must be monotonic (§4.3)"),
                    ));
                }
            }
            state.last_marker = Some(state.last_marker.map_or(k, |p| p.max(k)));
        }
        for (code, msg) in out {
            self.finding(s, off, code, msg);
        }
    }

    /// `action` is the core's, moved out (it is kept for an allow until its
    /// outcome); `chains` is the arena of the receipt's part.
    fn receipt(&mut self, s: usize, off: u64, meta: &Meta, c: &Facts, chains: &[ContentId], action: String) {
        self.counts.total += 1;
        self.counts.verified += 1;
        if c.profile == Profile::Jcp1 {
            self.counts.legacy_jcp1 += 1;
        }
        if meta.known_through.is_none() {
            self.stewards.entry(meta.steward).or_default().without_marker += 1;
        }
        if c.verdict == Verdict::Allow && !self.superseded.is_empty() {
            self.check_superseded(s, off, meta, c, chains);
        }
        let gkey = (c.grant_id, c.subject);
        let leaf_budget = c.budget_uj;
        // The leaf's running spend before this receipt (what a deny is checked against).
        let spent_before = {
            let g = self.grants.entry(c.grant_id).or_default();
            g.budget_from_receipt.get_or_insert(leaf_budget);
            if let Verdict::Deny(_) = c.verdict {
                g.denies += 1;
            }
            g.running.get(&meta.steward)
        };
        if let Some(rec) = self.grant_records.get(&c.grant_id) {
            if rec.grant().budget_uj != leaf_budget {
                let msg = format!(
                    "receipt states budget {} µJ but the grant record says {}",
                    leaf_budget,
                    rec.grant().budget_uj
                );
                self.finding(s, off, FindingCode::BudgetMismatch, msg);
            }
        }
        match c.verdict {
            Verdict::Deny(r) => {
                self.groups.entry(gkey).or_default().refusals += 1;
                self.counts.denies += 1;
                bump(&mut self.counts.deny_reasons, r.as_str(), 1);
                self.check_remaining(s, off, &meta.steward, c, spent_before);
            }
            Verdict::Allow => {
                let group = self.groups.entry(gkey).or_default();
                group.allows += 1;
                group.uj = group.uj.saturating_add(c.cost_uj);
                self.counts.allows += 1;
                let ids = c.debited_ids(chains);
                if !self.grant_records.is_empty() {
                    self.check_links(s, off, ids);
                }
                let measured = c.provenance.is_measured();
                for id in ids {
                    let budget_known = self.grant_records.get(id).map(|g| g.grant().budget_uj);
                    let g = self.grants.entry(*id).or_default();
                    let run = g.running.slot(&meta.steward);
                    *run = run.saturating_add(c.cost_uj);
                    g.spent_uj = g.spent_uj.saturating_add(c.cost_uj);
                    g.allows += 1;
                    if measured {
                        g.measured_uj = g.measured_uj.saturating_add(c.cost_uj);
                    } else {
                        g.modelled_uj = g.modelled_uj.saturating_add(c.cost_uj);
                    }
                    g.partial |= c.coverage == Coverage::Partial;
                    if let Some(m) = c.money_minor {
                        g.spent_minor = g.spent_minor.saturating_add(m);
                    }
                    if c.breach.is_some() {
                        g.breaches += 1;
                    }
                    let budget = budget_known.or(if *id == c.grant_id { Some(leaf_budget) } else { None });
                    if let Some(b) = budget {
                        if g.spent_uj > b && g.first_over.is_none() {
                            g.first_over = Some((s, off));
                        }
                    }
                    let bucket = g.by_marker.entry(meta.known_through).or_default();
                    bucket.count += 1;
                    if bucket.first.len() < KEEP_OFFSETS {
                        bucket.first.push((s, off));
                    }
                }
                let spent = self.grants.get(&c.grant_id).map_or(0, |g| g.running.get(&meta.steward));
                self.check_remaining(s, off, &meta.steward, c, spent);
                if let Some(b) = c.breach {
                    self.finding(
                        s,
                        off,
                        FindingCode::DebitPointBreach,
                        format!("the work ran and was debited, breaching {b} at the debit point (§4.9)"),
                    );
                }
                // Energy by grade (the floors are read off these at the end).
                let p = c.provenance;
                bump(&mut self.energy.uj_by_provenance, p.as_str(), c.cost_uj);
                bump(&mut self.energy.allows_by_provenance, p.as_str(), 1);
                if c.coverage == Coverage::Partial {
                    self.energy.partial_allows += 1;
                }
                // An allow's meta carries its record id (its outcome names it).
                let Some(id) = meta.id else { return };
                self.streams[s].pending.insert(
                    id,
                    PendingAllow {
                        offset: off,
                        grant_id: c.grant_id,
                        holder: c.subject,
                        steward: meta.steward,
                        action,
                        cost_uj: c.cost_uj,
                    },
                );
            }
        }
    }

    /// The receipt's stated remainder must be what replaying this steward's
    /// verified receipts gives (§8.1: the books balance); on a mismatch the
    /// running figure follows the receipt so one discrepancy is one finding.
    fn check_remaining(&mut self, s: usize, off: u64, steward: &Key, c: &Facts, spent: u64) {
        let expected = c.budget_uj.saturating_sub(spent);
        if expected != c.budget_remaining_uj {
            self.finding(
                s,
                off,
                FindingCode::RemainingMismatch,
                words::remaining_mismatch(c.budget_remaining_uj, &c.grant_id, expected),
            );
            let resync = c.budget_uj.saturating_sub(c.budget_remaining_uj);
            *self.grants.entry(c.grant_id).or_default().running.slot(steward) = resync;
        }
    }

    /// §4.7: an allow, by the point that admitted an amendment, on a grant
    /// that amendment superseded (or a chain through it), after it.
    fn check_superseded(&mut self, s: usize, off: u64, meta: &Meta, c: &Facts, chains: &[ContentId]) {
        let (start, n) = (c.chain.0 as usize, c.chain.1 as usize);
        let ids =
            if n == 0 { std::slice::from_ref(&c.grant_id) } else { chains.get(start..start + n).unwrap_or_default() };
        let hit = ids.iter().find_map(|id| {
            self.superseded
                .get(id)?
                .iter()
                .find(|(st, stw, _)| *st == s && *stw == meta.steward)
                .map(|(_, _, am)| (*id, *am))
        });
        if let Some((id, am)) = hit {
            self.finding(
                s,
                off,
                FindingCode::SupersededSpend,
                format!("allow on grant {id} after this point admitted amendment {am}, which superseded it (§4.7)"),
            );
        }
    }

    /// Where the grant records are known, a chain must link root first.
    fn check_links(&mut self, s: usize, off: u64, ids: &[ContentId]) {
        for w in ids.windows(2) {
            if let Some(child) = self.grant_records.get(&w[1]) {
                if child.grant().parent != Some(w[0]) {
                    let msg = format!("chain_ids names {} after {}, but its grant record's parent differs", w[1], w[0]);
                    self.finding(s, off, FindingCode::ChainMismatch, msg);
                    return;
                }
            }
        }
    }

    fn end_stream(&mut self, s: usize) {
        let pending: Vec<UnresolvedLine> = self.streams[s]
            .pending
            .drain()
            .map(|(id, p)| UnresolvedLine {
                stream: s,
                offset: p.offset,
                receipt: ContentId(id),
                grant_id: p.grant_id,
                holder: did_string_of(&p.holder),
                steward: did_string_of(&p.steward),
                action: p.action,
                cost_uj: p.cost_uj,
                settled: None,
            })
            .collect();
        self.unresolved.list(pending, &mut self.findings, self.max_findings);
    }

    /// §4.3: the revocation lines, and a finding for every allow on a
    /// revoked subtree by a point that had heard (or did not say).
    fn revocations(&mut self) -> Vec<RevocationLine> {
        // Revocations: one line per revocation, however many points
        // recorded it (keyed by the signed revocation, content and
        // signature), at the smallest marker any of its notices states;
        // authority is checked once, at its first notice.
        let mut revs: Vec<Rev> = Vec::new();
        let mut index: HashMap<(ContentId, [u8; 64]), usize> = HashMap::new();
        for n in std::mem::take(&mut self.notices) {
            let key = (n.notice.revocation.id(), *n.notice.revocation.signature());
            if let Some(r) = index.get(&key).and_then(|&i| revs.get_mut(i)) {
                r.notices += 1;
                r.marker = r.marker.min(n.notice.marker);
            } else {
                index.insert(key, revs.len());
                revs.push(Rev { marker: n.notice.marker, notices: 1, first: n });
            }
        }
        // The earliest marker of each revoked grant's revocations that are
        // not forged: every allow on its subtree is a finding once, not once
        // per notice or per revocation of the same grant.
        let mut earliest: BTreeMap<ContentId, u64> = BTreeMap::new();
        let mut lines = Vec::new();
        for r in revs {
            let n = &r.first;
            let gid = n.notice.revocation.revocation().grant_id;
            let authority = match self.grant_records.get(&gid) {
                None => Authority::Unverifiable,
                Some(g) => match n.notice.revocation.check_authority(g) {
                    Ok(()) => Authority::Verified,
                    Err(_) => Authority::Forged,
                },
            };
            match authority {
                Authority::Forged => {
                    self.finding(n.stream, n.offset, FindingCode::RevocationForged, words::revocation_forged(&gid))
                }
                Authority::Unverifiable => self.finding(
                    n.stream,
                    n.offset,
                    FindingCode::RevocationAuthorityUnknown,
                    words::revocation_authority_unknown(&gid),
                ),
                Authority::Verified => {}
            }
            let classes = if authority == Authority::Forged {
                RevocationClasses::default()
            } else {
                let e = earliest.entry(gid).or_insert(r.marker);
                *e = (*e).min(r.marker);
                self.grants.get(&gid).map(|g| classify(g, r.marker)).unwrap_or_default()
            };
            lines.push(RevocationLine {
                grant_id: gid,
                marker: r.marker,
                at: (n.stream, n.offset),
                notices: r.notices,
                authority,
                allows: classes,
            });
        }
        for (gid, m) in earliest {
            let Some(classes) = self.grants.get(&gid).map(|g| classify(g, m)) else { continue };
            let mut found: Vec<(usize, u64, FindingCode)> = Vec::new();
            found.extend(classes.violation_at.iter().map(|&(s, o)| (s, o, FindingCode::RevocationViolation)));
            found.extend(classes.unverifiable_at.iter().map(|&(s, o)| (s, o, FindingCode::RevocationUnverifiable)));
            found.sort_unstable();
            // One finding per classified allow, counted exactly; the first
            // few are kept with their offsets.
            for (s, o, code) in found {
                self.finding(s, o, code, words::revocation_allow(code, &gid, m));
            }
            let v_extra = classes.violation.saturating_sub(classes.violation_at.len() as u64);
            let u_extra = classes.unverifiable.saturating_sub(classes.unverifiable_at.len() as u64);
            self.findings.count_more(FindingCode::RevocationViolation, v_extra);
            self.findings.count_more(FindingCode::RevocationUnverifiable, u_extra);
        }
        lines
    }

    fn finish(mut self) -> Report {
        let revocations = self.revocations();
        // Grants and conservation.
        let mut ids: Vec<ContentId> = self.grants.keys().chain(self.grant_records.keys()).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let mut grants = Vec::with_capacity(ids.len());
        let mut overs = Vec::new();
        for id in ids {
            let acc = self.grants.remove(&id).unwrap_or_default();
            let rec = self.grant_records.get(&id);
            let budget = rec.map(|g| g.grant().budget_uj).or(acc.budget_from_receipt);
            let conservation = budget.map(|b| conservation_of(b, acc.measured_uj, acc.modelled_uj, acc.partial));
            if let Some(c) = &conservation {
                if c.overspent_uj > 0 {
                    let (s, o) = acc.first_over.unwrap_or((0, 0));
                    overs.push((s, o, words::overspend_uj(&id, c.spent_uj, c.budget_uj, c.overspent_uj)));
                }
            }
            let funds = rec.and_then(|g| g.grant().budget_funds.clone());
            let mut line = GrantLine::of_record(id, rec, budget, acc.spent_minor, conservation);
            (line.spent_uj, line.allows, line.denies, line.breaches) =
                (acc.spent_uj, acc.allows, acc.denies, acc.breaches);
            grants.push(line);
            if let Some(f) = &funds {
                if acc.spent_minor > f.minor {
                    overs.push((0, 0, words::overspend_money(&id, acc.spent_minor, &f.currency, f.minor)));
                }
            }
        }
        for (s, o, msg) in overs {
            self.finding(s, o, FindingCode::Overspend, msg);
        }
        let mut groups: Vec<GroupLine> = self
            .groups
            .into_iter()
            .map(|((g, subj), a)| GroupLine {
                grant_id: g,
                subject: did_string_of(&subj),
                allows: a.allows,
                refusals: a.refusals,
                uj: a.uj,
            })
            .collect();
        groups.sort_by(|a, b| (a.grant_id, &a.subject).cmp(&(b.grant_id, &b.subject)));
        let mut stewards: Vec<StewardLine> = self
            .stewards
            .into_iter()
            .map(|(d, a)| StewardLine {
                steward: did_string_of(&d),
                records: a.records,
                known_through: a.marker,
                receipts_without_marker: a.without_marker,
            })
            .collect();
        stewards.sort_by(|a, b| a.steward.cmp(&b.steward));
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

/// A revocation and its notices (`first` names where it was first recorded).
struct Rev {
    marker: u64,
    notices: u64,
    first: Notice,
}

/// The verified allows on a grant's subtree, classified against marker `m`
/// (§4.3 propagation).
fn classify(g: &GrantAcc, m: u64) -> RevocationClasses {
    let mut classes = RevocationClasses::default();
    for (k, b) in &g.by_marker {
        match k {
            Some(k) if *k < m => classes.explicable += b.count,
            Some(_) => {
                classes.violation += b.count;
                classes.violation_at.extend(b.first.iter().copied());
            }
            None => {
                classes.unverifiable += b.count;
                classes.unverifiable_at.extend(b.first.iter().copied());
            }
        }
    }
    classes.violation_at.sort_unstable();
    classes.unverifiable_at.sort_unstable();
    classes
}

fn install<R: Send>(pool: Option<&rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None => f(),
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
        Engine::end_stream(self, s);
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

/// Runs the audit over `paths`.
pub(crate) fn run(
    paths: &[PathBuf],
    opts: &AuditOptions,
    progress: impl FnMut(&Progress) -> ControlFlow<()>,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Report, AuditError> {
    // Size the duplicate set for one signed record per KiB of input (a
    // receipt is about that; a million take 1.1 GB), so it rarely grows;
    // no more than 2 million ahead (32 MiB), beyond that it grows as filled.
    let bytes: u64 = paths.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let mut eng = Engine::new(opts, usize::try_from(bytes / 1024).unwrap_or(usize::MAX).min(1 << 21));
    read_into(paths, opts, progress, pool, &mut eng)?;
    Ok(eng.finish())
}

/// Reads and checks every stream of `paths` in turn, handing each chunk's
/// checked records to `sink` in stream order.
pub(crate) fn read_into<S: Sink>(
    paths: &[PathBuf],
    opts: &AuditOptions,
    mut progress: impl FnMut(&Progress) -> ControlFlow<()>,
    pool: Option<&rayon::ThreadPool>,
    sink: &mut S,
) -> Result<(), AuditError> {
    let chunk_records = opts.chunk_records.max(1);
    let mut records_done = 0u64;
    for (idx, path) in paths.iter().enumerate() {
        let name = path.display().to_string();
        let io = |e: std::io::Error| AuditError::Io { path: name.clone(), message: e.to_string() };
        let file = File::open(path).map_err(io)?;
        let bytes_total = file.metadata().map_err(io)?.len();
        sink.start_stream(StreamSummary { path: name.clone(), bytes: bytes_total, ..StreamSummary::default() });
        if progress(&Progress::StreamStarted { index: idx, path: path.clone(), bytes_total }).is_break() {
            return Err(AuditError::Cancelled);
        }
        let mut reader = match Reader::new(file) {
            Ok(r) => r,
            Err(jcp_receipt::Error::NotAStream { .. }) => return Err(AuditError::NotAStream { path: name }),
            Err(jcp_receipt::Error::Io { message, .. }) => return Err(AuditError::Io { path: name, message }),
            Err(e) => return Err(AuditError::Io { path: name, message: e.to_string() }),
        };
        let mut prev: Option<Vec<Part>> = None;
        let mut batch = Batch::new();
        let mut next = Batch::new();
        {
            let _probe = crate::phases::probe!(READ);
            reader.read_batch(chunk_records, &mut batch);
        }
        loop {
            if let Some(e) = reader.take_io_error() {
                return Err(io(e));
            }
            let done = batch.items().is_empty();
            let prev_n = prev.as_ref().map_or(0, |p| p.iter().map(|part| part.checked.len()).sum::<usize>()) as u64;
            let expected = &opts.expected_stewards;
            let mode = opts.verification;
            let sink_ref = &mut *sink;
            let prev_chunk = prev.take();
            let (reader_ref, next_ref) = (&mut reader, &mut next);
            // Verify this chunk on all cores while the next one is read and
            // the previous one accounted (one thread: one after the other).
            let (checked, ()) = install(pool, || {
                rayon::join(
                    || check::check_chunk(&batch, idx, expected, mode),
                    || {
                        if !done {
                            let _probe = crate::phases::probe!(READ);
                            reader_ref.read_batch(chunk_records, next_ref);
                        }
                        if let Some(p) = prev_chunk {
                            sink_ref.take(p);
                        }
                    },
                )
            });
            records_done += prev_n;
            let ev =
                Progress::Advanced { index: idx, bytes_done: reader.position(), bytes_total, records: records_done };
            if progress(&ev).is_break() {
                return Err(AuditError::Cancelled);
            }
            if done {
                break;
            }
            prev = Some(checked);
            std::mem::swap(&mut batch, &mut next);
        }
        sink.end_stream(idx);
    }
    if progress(&Progress::Finishing).is_break() {
        return Err(AuditError::Cancelled);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Running;

    /// §8.1 remainders are replayed per steward: the first steward's figure
    /// inline and every other's in the map, each its own, absent is 0.
    #[test]
    fn s8_1_running_spend_is_kept_per_steward() {
        let mut r = Running::default();
        assert_eq!(r.get(&[1; 32]), 0);
        for (k, by) in [(1u8, 10u64), (2, 20), (3, 30), (1, 5), (3, 1)] {
            *r.slot(&[k; 32]) += by;
        }
        assert_eq!((r.get(&[1; 32]), r.get(&[2; 32]), r.get(&[3; 32]), r.get(&[4; 32])), (15, 20, 31, 0));
        *r.slot(&[2; 32]) = 7;
        assert_eq!((r.get(&[1; 32]), r.get(&[2; 32])), (15, 7));
    }
}
