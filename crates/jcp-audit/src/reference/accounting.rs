//! Accounting one verified record, in stream order: stream position
//! (§8.1, §4.3 markers), receipts and their debits on every grant they
//! name (§4.2, §8.1, §8.2), spend on a superseded grant (§4.7), amendments
//! (§4.7) and settlements of the metered path (§4.9, §4.11).

use crate::FindingCode;
use jcp::cbor::ContentId;
use jcp::decision::Verdict;
use jcp::energy::Coverage;
use jcp_receipt::receipt::{Profile, ReceiptCore};
use jcp_receipt::record::AmendmentNotice;

use super::{At, Ledger, KEEP_OFFSETS};
use crate::report::UnresolvedLine;
use crate::words;

impl Ledger {
    /// §4.7: an admitted amendment supersedes its steered grant at the
    /// point that recorded it; a continuation steered again starts at the
    /// spend its own amendment's checkpoint stated.
    pub(super) fn amendment(&mut self, at: &At, a: &AmendmentNotice) {
        let base = match self.run_base.get(&a.steered.id()) {
            Some(b) => *b,
            None => Some(0),
        };
        // §4.7: a continuation's checkpoint may not omit or lower the
        // spend the run stated where it began.
        let stated_before = self.run_base.get(&a.steered.id()).copied().flatten();
        let checked = jcp::steering::verify_amendment_from(&a.steered, &a.checkpoint, &a.amendment, base)
            .and_then(|_| jcp::steering::check_declared_spend(a.checkpoint.checkpoint(), stated_before))
            .and_then(|()| jcp::steering::verify_continuation(&a.steered, a.amendment.amendment(), &a.continuation));
        match checked {
            Ok(()) => {
                self.counts.amendments += 1;
                self.run_base.insert(a.continuation.id(), a.checkpoint.checkpoint().spent.map(|x| x.uj));
                self.superseded.entry(a.steered.id()).or_default().push((
                    at.stream,
                    at.steward.clone(),
                    a.amendment.id(),
                    a.marker,
                ));
            }
            Err(e) => self.finding(
                at.stream,
                at.offset,
                FindingCode::AmendmentInvalid,
                format!("an amendment notice whose amendment does not verify: {e}"),
            ),
        }
    }

    /// §8.1 stream position: sequence numbers per steward in each stream,
    /// `known_through` monotonic per steward (§4.3).
    pub(super) fn sequence(&mut self, at: &At) {
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
        let mut out: Vec<(FindingCode, String)> = Vec::new();
        match at.seq {
            None => {
                out.push((FindingCode::UnsequencedRecord, "a signed record without a stream sequence number".into()));
            }
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
                            out.push((
                                FindingCode::SequenceGap,
                                format!("{} record(s) missing before sequence {q}", missing - refused),
                            ));
                        }
                    }
                    _ => out.push((
                        FindingCode::OutOfOrder,
                        format!("sequence {q} after {}: re-ordered or re-used", state.last.unwrap_or(0)),
                    )),
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
                    out.push((
                        FindingCode::MarkerRegressed,
                        format!("known_through {k} after {prev}: the marker must be monotonic (§4.3)"),
                    ));
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
    pub(super) fn receipt(&mut self, at: &At, mut c: ReceiptCore) {
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
                let msg = format!(
                    "receipt states budget {} µJ but the grant record says {}",
                    c.budget_uj,
                    rec.grant().budget_uj
                );
                self.finding(s, off, FindingCode::BudgetMismatch, msg);
            }
        }
        match c.verdict {
            Verdict::Deny(reason) => {
                if let Some(g) = self.grants.get_mut(&c.grant_id) {
                    g.denies += 1;
                }
                let group = self.groups.entry(group_key).or_default();
                if reason.establishes_caller() {
                    group.refusals += 1;
                } else {
                    group.unattributed += 1;
                }
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
                    self.finding(
                        s,
                        off,
                        FindingCode::DebitPointBreach,
                        format!("the work ran and was debited, breaching {b} at the debit point (§4.9)"),
                    );
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
                self.streams[s].pending_marker.insert(at.id, at.known_through);
            }
        }
    }

    /// An allow's debit on one grant it names (§4.2, §8.1).
    pub(super) fn debit(&mut self, at: &At, c: &ReceiptCore, id: &ContentId) {
        let budget = match self.grant_records.get(id) {
            Some(rec) => Some(rec.grant().budget_uj),
            None if *id == c.grant_id => Some(c.budget_uj),
            None => None,
        };
        let g = self.grants.entry(*id).or_default();
        let run = g.running.entry(at.steward.clone()).or_default();
        *run = run.saturating_add(c.cost_uj);
        g.points.entry(at.steward.clone()).or_insert((at.stream, at.offset));
        g.spent_uj = g.spent_uj.saturating_add(c.cost_uj);
        g.allows += 1;
        if c.energy().rests_on_measurement() {
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
        let bucket = g.by_marker.entry((at.stream, at.known_through)).or_default();
        bucket.count += 1;
        if bucket.first.len() < KEEP_OFFSETS {
            bucket.first.push((at.stream, at.offset));
        }
    }

    /// §8.1: the receipt's stated remainder must be what replaying this
    /// steward's verified receipts gives; on a mismatch the running figure
    /// follows the receipt, so one discrepancy is one finding.
    pub(super) fn remaining(&mut self, at: &At, c: &ReceiptCore, spent: u64) {
        let expected = c.budget_uj.saturating_sub(spent);
        if expected == c.budget_remaining_uj {
            return;
        }
        let msg = words::remaining_mismatch(c.budget_remaining_uj, &c.grant_id, expected);
        self.finding(at.stream, at.offset, FindingCode::RemainingMismatch, msg);
        let g = self.grants.entry(c.grant_id).or_default();
        g.running.insert(at.steward.clone(), c.budget_uj.saturating_sub(c.budget_remaining_uj));
    }

    /// §4.7: an allow on a grant an amendment admitted earlier by this same
    /// point (this stream, this steward) superseded, or on a chain through it.
    pub(super) fn superseded_spend(&mut self, at: &At, c: &ReceiptCore) {
        let mut hit = None;
        for id in c.debited_ids() {
            let Some(list) = self.superseded.get(id) else {
                continue;
            };
            if let Some((_, _, am, _)) = list.iter().find(|(st, stw, _, _)| *st == at.stream && *stw == at.steward) {
                hit = Some((*id, *am));
                break;
            }
        }
        if let Some((id, am)) = hit {
            self.finding(
                at.stream,
                at.offset,
                FindingCode::SupersededSpend,
                format!("allow on grant {id} after this point admitted amendment {am}, which superseded it (§4.7)"),
            );
        }
    }

    /// §4.2: where a chain's grant records are known, each names the one
    /// before it as its parent (one finding per receipt at most).
    pub(super) fn chain_links(&mut self, at: &At, ids: &[ContentId]) {
        for w in ids.windows(2) {
            let Some(child) = self.grant_records.get(&w[1]) else {
                continue;
            };
            if child.grant().parent != Some(w[0]) {
                let msg = format!("chain_ids names {} after {}, but its grant record's parent differs", w[1], w[0]);
                self.finding(at.stream, at.offset, FindingCode::ChainMismatch, msg);
                return;
            }
        }
    }

    /// §4.9 + §4.11: a settlement takes back its reservation's accounting
    /// when both it and the settling receipt are allows of this steward
    /// earlier in this stream with no outcome, for one grant and holder,
    /// and the reservation's cost is the one recorded; anything else is
    /// `settlement-unmatched` and takes nothing back.
    pub(super) fn settlement(
        &mut self,
        at: &At,
        reservation: ContentId,
        c: &ReceiptCore,
        known_through: Option<u64>,
        settled_by: ContentId,
    ) {
        let s = at.stream;
        let holder = c.subject.to_did_string();
        let pending = &self.streams[s].pending;
        let matches = |p: &UnresolvedLine| p.steward == at.steward && p.grant_id == c.grant_id && p.holder == holder;
        let held = match (pending.get(&reservation), pending.get(&settled_by)) {
            (Some(a), Some(b)) if reservation != settled_by && matches(a) && matches(b) && a.cost_uj == c.cost_uj => {
                Some((a.offset, b.offset))
            }
            _ => None,
        };
        let Some((held_at, settled_at)) = held else {
            let msg = words::settlement_unmatched(&reservation, &settled_by);
            return self.finding(s, at.offset, FindingCode::SettlementUnmatched, msg);
        };
        let settled_marker = self.streams[s].pending_marker.get(&settled_by).copied().flatten();
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
            if c.energy().rests_on_measurement() {
                g.measured_uj = g.measured_uj.saturating_sub(c.cost_uj);
            } else {
                g.modelled_uj = g.modelled_uj.saturating_sub(c.cost_uj);
            }
            g.spent_minor = g.spent_minor.saturating_sub(minor);
            if let Some(b) = g.by_marker.get_mut(&(s, known_through)) {
                b.count = b.count.saturating_sub(1);
                b.first.retain(|&x| x != (s, held_at));
            }
            // §4.3 + §4.11: the charge is classed at the marker its action
            // was authorised at.
            if settled_marker != known_through {
                if let Some(b) = g.by_marker.get_mut(&(s, settled_marker)) {
                    b.count = b.count.saturating_sub(1);
                    b.first.retain(|&x| x != (s, settled_at));
                }
                let b = g.by_marker.entry((s, known_through)).or_default();
                b.count += 1;
                if b.first.len() < KEEP_OFFSETS {
                    b.first.push((s, settled_at));
                }
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
}
