//! Checkpoints and amendments (§4.7): an amendment notice verified against
//! the run it steers, and a point's allows on a grant it superseded after
//! admitting the amendment.

use jcp::cbor::ContentId;
use jcp_receipt::record::AmendmentNotice;

use super::Engine;
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
        let checked = jcp::steering::verify_amendment_from(&a.steered, &a.checkpoint, &a.amendment, base)
            .and_then(|_| jcp::steering::verify_continuation(&a.steered, a.amendment.amendment(), &a.continuation));
        match checked {
            Ok(()) => {
                self.counts.amendments += 1;
                self.run_base.insert(a.continuation.id(), a.checkpoint.checkpoint().spent.map(|x| x.uj));
                self.superseded.entry(a.steered.id()).or_default().push((s, meta.steward, a.amendment.id()));
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
}
