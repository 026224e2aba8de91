//! Group accounting (§8.2): the verified receipts keyed by
//! `(grant_id, subject)` — per-worker attribution of actions allowed,
//! actions refused and joules spent, from evidence.

use jcp::identity::did_string_of;

use super::Engine;
use crate::report::GroupLine;

/// One `(grant_id, subject)` group's figures.
#[derive(Debug, Default)]
pub(super) struct GroupAcc {
    /// Verified allows.
    pub(super) allows: u64,
    /// Verified denies that establish the caller was the subject.
    pub(super) refusals: u64,
    /// Verified denies a stranger could have caused.
    pub(super) unattributed: u64,
    /// µJ debited by its allows.
    pub(super) uj: u64,
}

impl Engine {
    /// One line per group, sorted by grant then subject (finishing step).
    pub(super) fn group_lines(&mut self) -> Vec<GroupLine> {
        let mut groups: Vec<GroupLine> = std::mem::take(&mut self.groups)
            .into_iter()
            .map(|((g, subj), a)| GroupLine {
                grant_id: g,
                subject: did_string_of(&subj),
                allows: a.allows,
                refusals: a.refusals,
                unattributed: a.unattributed,
                uj: a.uj,
            })
            .collect();
        groups.sort_by(|a, b| (a.grant_id, &a.subject).cmp(&(b.grant_id, &b.subject)));
        groups
    }
}
