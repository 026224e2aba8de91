//! Budget replay (§7, §8.1): every verified receipt's debit re-applied to
//! each grant it names, ancestors included; the stated remainder and budget
//! checked against the replay; chain links checked against the grant records
//! (§4.2); the money dimension beside the joules (§4.8).

use jcp::cbor::ContentId;
use jcp::decision::Verdict;
use jcp::energy::Coverage;
use jcp_receipt::receipt::Profile;

use super::hashing::{Key, Map};
use super::{bump, Engine, PendingAllow, KEEP_OFFSETS};
use crate::check::{Facts, Meta};
use crate::codes::FindingCode;
use crate::words;

/// The verified allows on a grant's subtree at one `known_through` marker
/// (§4.3): how many, and where the first few are.
#[derive(Debug, Default)]
pub(super) struct Bucket {
    /// Allows counted.
    pub(super) count: u64,
    /// The first [`KEEP_OFFSETS`] of them, as (stream, offset).
    pub(super) first: Vec<(usize, u64)>,
}

/// One grant's books, replayed from the receipts that name it (as the
/// leaf or as a link of a chain).
#[derive(Debug, Default)]
pub(super) struct GrantAcc {
    /// µJ debited by verified allows.
    pub(super) spent_uj: u64,
    /// Verified allows debiting it.
    pub(super) allows: u64,
    /// Verified denies on it as the leaf.
    pub(super) denies: u64,
    /// Allows that breached a caveat at the debit point (§4.9).
    pub(super) breaches: u64,
    /// The part of `spent_uj` with measured provenance (§5.5 basis).
    pub(super) measured_uj: u64,
    /// The part of `spent_uj` that was modelled or estimated.
    pub(super) modelled_uj: u64,
    /// Some debit covered only part of the work (§5.2).
    pub(super) partial: bool,
    /// Money debited, minor units (§4.8).
    pub(super) spent_minor: u64,
    /// The budget the first receipt naming it as the leaf stated (used
    /// where no grant record is in the streams).
    pub(super) budget_from_receipt: Option<u64>,
    /// The allow whose debit first took the spend over the budget.
    pub(super) first_over: Option<(usize, u64)>,
    /// Verified allows whose chain contains this grant, by the stream
    /// (point) that recorded them and its `known_through`.
    pub(super) by_marker: Map<(usize, Option<u64>), Bucket>,
    /// This grant's running spend per steward, to check each receipt's
    /// stated remainder (kept with the grant: its entry is looked up anyway).
    pub(super) running: Running,
    /// Each point (steward) that allowed through it, with its first such
    /// allow (§4.5: a shard is spent at its own point only).
    pub(super) points: Vec<(Key, (usize, u64))>,
}

/// Running spend per steward: the first steward inline (a stream usually
/// has one), any others in a map, so many stewards cost a lookup, never a scan.
#[derive(Debug, Default)]
pub(super) struct Running {
    first: Option<(Key, u64)>,
    more: Map<Key, u64>,
}

impl Running {
    /// The steward's running spend (0 before its first debit).
    pub(super) fn get(&self, steward: &Key) -> u64 {
        match &self.first {
            Some((k, v)) if k == steward => *v,
            _ => self.more.get(steward).copied().unwrap_or(0),
        }
    }

    /// The steward's running spend, to change.
    pub(super) fn slot(&mut self, steward: &Key) -> &mut u64 {
        if self.first.is_none() {
            self.first = Some((*steward, 0));
        }
        match &mut self.first {
            Some((k, v)) if k == steward => v,
            _ => self.more.entry(*steward).or_default(),
        }
    }
}

impl Engine {
    /// A verified receipt (§8): counted, its stated budget checked against
    /// the grant record, then a deny checked against the replayed spend and
    /// an allow debited ([`Engine::allow`]). `action` is the core's, moved
    /// out (it is kept for an allow until its outcome); `chains` is the
    /// arena of the receipt's part.
    #[inline]
    pub(super) fn receipt(&mut self, s: usize, off: u64, meta: &Meta, c: &Facts, chains: &[ContentId], action: String) {
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
                let group = self.groups.entry((c.grant_id, c.subject)).or_default();
                if r.establishes_caller() {
                    group.refusals += 1;
                } else {
                    group.unattributed += 1;
                }
                self.counts.denies += 1;
                bump(&mut self.counts.deny_reasons, r.as_str(), 1);
                self.check_remaining(s, off, &meta.steward, c, spent_before);
            }
            Verdict::Allow => self.allow(s, off, meta, c, chains, action),
        }
    }

    /// A verified allow (§8.1): its group line (§8.2), its chain's links
    /// (§4.2), its debit re-applied to every grant it names, ancestors
    /// included, with its money (§4.8) and marker bucket (§4.3); the stated
    /// remainder checked; its grade (§5.5); then it waits for its outcome
    /// (§4.11).
    fn allow(&mut self, s: usize, off: u64, meta: &Meta, c: &Facts, chains: &[ContentId], action: String) {
        let leaf_budget = c.budget_uj;
        let group = self.groups.entry((c.grant_id, c.subject)).or_default();
        group.allows += 1;
        group.uj = group.uj.saturating_add(c.cost_uj);
        self.counts.allows += 1;
        let ids = c.debited_ids(chains);
        if !self.grant_records.is_empty() {
            self.check_links(s, off, ids);
        }
        let measured = c.measured;
        for id in ids {
            let budget_known = self.grant_records.get(id).map(|g| g.grant().budget_uj);
            let g = self.grants.entry(*id).or_default();
            let run = g.running.slot(&meta.steward);
            *run = run.saturating_add(c.cost_uj);
            g.spent_uj = g.spent_uj.saturating_add(c.cost_uj);
            g.allows += 1;
            if !g.points.iter().any(|(k, _)| *k == meta.steward) {
                g.points.push((meta.steward, (s, off)));
            }
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
            let bucket = g.by_marker.entry((s, meta.known_through)).or_default();
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
                known_through: meta.known_through,
            },
        );
    }

    /// The receipt's stated remainder must be what replaying this steward's
    /// verified receipts gives (§8.1: the books balance); on a mismatch the
    /// running figure follows the receipt so one discrepancy is one finding.
    pub(super) fn check_remaining(&mut self, s: usize, off: u64, steward: &Key, c: &Facts, spent: u64) {
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
