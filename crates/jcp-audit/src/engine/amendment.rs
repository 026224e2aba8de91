//! Checkpoints and amendments (§4.7): an amendment notice verified against
//! the run it steers, and a point's allows on a grant it superseded after
//! admitting the amendment.

use jcp::cbor::ContentId;
use jcp_receipt::record::AmendmentNotice;

use super::{Engine, Key};
use crate::check::{Facts, Meta};
use crate::codes::FindingCode;

impl Engine {
    /// An amendment notice (§4.7): the amendment must verify against the
    /// steered grant and its checkpoint, from the spend the run had when it
    /// began, and the continuation must follow from it. Admitted, the
    /// steered grant is superseded at this point and the continuation's run
    /// begins at the checkpoint's spend.
    pub(super) fn amendment(&mut self, s: usize, off: u64, meta: &Meta, a: &AmendmentNotice) {
        // A continuation steered again began at the spend its
        // own amendment's checkpoint stated (§4.7: spend is
        // cumulative over the run).
        let base = self.run_base.get(&a.steered.id()).copied().unwrap_or(Some(0));
        let before = self.run_base.get(&a.steered.id()).copied().flatten();
        let checked = jcp::steering::verify_amendment_from(&a.steered, &a.checkpoint, &a.amendment, base)
            .and_then(|_| jcp::steering::check_declared_spend(a.checkpoint.checkpoint(), before))
            .and_then(|()| jcp::steering::verify_continuation(&a.steered, a.amendment.amendment(), &a.continuation));
        match checked {
            Ok(()) => {
                self.counts.amendments += 1;
                self.run_base.insert(a.continuation.id(), a.checkpoint.checkpoint().spent.map(|x| x.uj));
                self.superseded.entry(a.steered.id()).or_default().push(Superseded {
                    stream: s,
                    steward: meta.steward,
                    amendment: a.amendment.id(),
                    marker: a.marker,
                });
            }
            Err(e) => self.finding(
                s,
                off,
                FindingCode::AmendmentInvalid,
                format!("an amendment notice whose amendment does not verify: {e}"),
            ),
        }
    }

    /// §4.7: an allow, by the point that admitted an amendment, on a grant
    /// that amendment superseded (or a chain through it), after it.
    #[inline]
    pub(super) fn check_superseded(&mut self, s: usize, off: u64, meta: &Meta, c: &Facts, chains: &[ContentId]) {
        let (start, n) = (c.chain.0 as usize, c.chain.1 as usize);
        let ids =
            if n == 0 { std::slice::from_ref(&c.grant_id) } else { chains.get(start..start + n).unwrap_or_default() };
        let hit = ids.iter().find_map(|id| {
            self.superseded
                .get(id)?
                .iter()
                .find(|x| x.stream == s && x.steward == meta.steward)
                .map(|x| (*id, x.amendment))
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
}

/// An admitted amendment's supersession of a grant, where it was recorded.
#[derive(Debug, Clone, Copy)]
pub(super) struct Superseded {
    /// The stream (point) that recorded the notice.
    pub(super) stream: usize,
    /// Its steward.
    pub(super) steward: Key,
    /// The amendment.
    pub(super) amendment: ContentId,
    /// The feed marker the amendment was issued at, where the notice states one.
    pub(super) marker: Option<u64>,
}

impl Engine {
    /// §4.7 + §4.3: a soft revoke propagates as a revocation does. Every
    /// allow on a superseded grant's subtree by a point other than one that
    /// admitted the amendment (those are judged by order, above) is judged
    /// against the earliest marker the notices state: a point whose
    /// `known_through` had reached it spent on a grant it knew superseded
    /// (`superseded-spend`); one that stated no marker, or any point where
    /// no notice states a marker, cannot be shown to have not known
    /// (`superseded-unverifiable`); one behind it is explicable.
    pub(super) fn supersessions(&mut self) {
        let superseded = std::mem::take(&mut self.superseded);
        let mut found: Vec<(usize, u64, FindingCode, ContentId, Option<u64>)> = Vec::new();
        let mut more = [0u64; 2];
        for (gid, by) in &superseded {
            let Some(g) = self.grants.get(gid) else { continue };
            let marker = by.iter().filter_map(|x| x.marker).min();
            for ((s, k), b) in &g.by_marker {
                if by.iter().any(|x| x.stream == *s) {
                    continue;
                }
                let code = match (marker, k) {
                    (Some(m), Some(k)) if *k < m => continue,
                    (Some(_), Some(_)) => FindingCode::SupersededSpend,
                    _ => FindingCode::SupersededUnverifiable,
                };
                found.extend(b.first.iter().map(|&(s, o)| (s, o, code, *gid, marker)));
                more[usize::from(code == FindingCode::SupersededUnverifiable)] +=
                    b.count.saturating_sub(b.first.len() as u64);
            }
        }
        found.sort_unstable_by_key(|f| (f.0, f.1, f.2, f.3));
        for (s, o, code, gid, m) in found {
            self.finding(s, o, code, crate::words::superseded_elsewhere(code, &gid, m));
        }
        self.findings.count_more(FindingCode::SupersededSpend, more[0]);
        self.findings.count_more(FindingCode::SupersededUnverifiable, more[1]);
        self.superseded = superseded;
    }
}
