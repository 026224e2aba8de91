//! Decisions and their outcomes (§4.11): each verified allow waits for the
//! outcome that names it; a settlement of the metered path (§4.9) takes a
//! reservation's accounting back; an allow with no outcome at the end of
//! its stream is an unresolved decision, naming its holder.

use jcp::cbor::ContentId;
use jcp::energy::Coverage;
use jcp::identity::did_string_of;

use super::hashing::Key;
use super::{short, Engine};
use crate::check::{Meta, SettlementFacts};
use crate::codes::FindingCode;
use crate::report::UnresolvedLine;
use crate::words;

/// A verified allow waiting for its outcome (§4.11), by its record id.
#[derive(Debug)]
pub(super) struct PendingAllow {
    /// Where the allow is.
    pub(super) offset: u64,
    /// The leaf grant it debited.
    pub(super) grant_id: ContentId,
    /// The subject that held the work (named in the unresolved line).
    pub(super) holder: Key,
    /// The steward that recorded it.
    pub(super) steward: Key,
    /// The action allowed.
    pub(super) action: String,
    /// Its debit, µJ.
    pub(super) cost_uj: u64,
    /// The `known_through` it was recorded at (its revocation class).
    pub(super) known_through: Option<u64>,
}

impl Engine {
    /// An outcome (§4.11): it resolves the allow it names, which must be
    /// earlier in this stream and not resolved yet (or a refused receipt,
    /// whose outcome is no orphan).
    #[inline]
    pub(super) fn outcome(&mut self, s: usize, off: u64, receipt: ContentId) {
        self.counts.outcomes += 1;
        if self.streams[s].pending.remove(&receipt.0).is_none() && !self.refused_receipts.contains(&short(&receipt.0)) {
            self.finding(
                s,
                off,
                FindingCode::OrphanOutcome,
                format!("outcome for {receipt} which was not decided earlier in this stream"),
            );
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
    pub(super) fn settle(&mut self, s: usize, off: u64, meta: &Meta, st: &SettlementFacts) {
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
                Some((a.offset, b.offset, b.known_through))
            }
            _ => None,
        };
        let Some((held_at, settled_at, settled_marker)) = settling else {
            return self.finding(
                s,
                off,
                FindingCode::SettlementUnmatched,
                words::settlement_unmatched(&st.reservation, &st.settled_by),
            );
        };
        self.streams[s].pending.remove(&st.reservation.0);
        self.counts.settlements += 1;
        let measured = c.energy().rests_on_measurement();
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
            if let Some(b) = g.by_marker.get_mut(&(s, st.known_through)) {
                b.count = b.count.saturating_sub(1);
                b.first.retain(|&at| at != (s, held_at));
            }
            // §4.3 + §4.11: the settling charge is judged by the marker the
            // action was authorised at (the reservation's), not the one its
            // charge was recorded at: work authorised before a revocation
            // and charged after it is not a violation.
            if settled_marker != st.known_through {
                if let Some(b) = g.by_marker.get_mut(&(s, settled_marker)) {
                    b.count = b.count.saturating_sub(1);
                    b.first.retain(|&at| at != (s, settled_at));
                }
                let b = g.by_marker.entry((s, st.known_through)).or_default();
                b.count += 1;
                if b.first.len() < super::KEEP_OFFSETS {
                    b.first.push((s, settled_at));
                }
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

    /// The end of stream `s` (§4.11): every allow still without an outcome
    /// is an unresolved decision, listed with the party that held it.
    pub(super) fn list_unresolved(&mut self, s: usize) {
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
}
