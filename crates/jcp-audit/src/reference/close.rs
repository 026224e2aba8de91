//! Closing the books: the revocation lines and their findings (§4.3
//! propagation) and each grant's line with its §5.5 conservation.

use crate::FindingCode;
use std::collections::BTreeMap;

use jcp::cbor::ContentId;
use jcp_receipt::record::RevocationNotice;

use super::{GrantBooks, Ledger};
use crate::report::{GrantLine, RevocationClasses, RevocationLine};
use crate::words;

impl Ledger {
    /// §4.3: one line per signed revocation (however many points recorded
    /// it), at the smallest marker any notice of it states, its authority
    /// checked at its first notice; then, per revoked grant, a finding for
    /// every allow on its subtree from a point that had heard (violation)
    /// or did not say (unverifiable), against the earliest marker of its
    /// revocations that are not forged.
    pub(super) fn revocations(&mut self) -> Vec<RevocationLine> {
        // One signed revocation (its id and signature), in the order first read.
        let mut order: Vec<(ContentId, [u8; 64])> = Vec::new();
        let mut revs: BTreeMap<(ContentId, [u8; 64]), Revoked> = BTreeMap::new();
        for (n, s, off) in std::mem::take(&mut self.notices) {
            let key = (n.revocation.id(), *n.revocation.signature());
            if let Some(r) = revs.get_mut(&key) {
                r.marker = r.marker.min(n.marker);
                r.notices += 1;
                r.each.push((s, off, n.marker));
            } else {
                order.push(key);
                let each = vec![(s, off, n.marker)];
                revs.insert(key, Revoked { marker: n.marker, notices: 1, at: (s, off), first: n, each });
            }
        }
        let mut earliest: BTreeMap<ContentId, u64> = BTreeMap::new();
        let mut lines = Vec::new();
        let log = self.revocation_log.clone();
        let mut heard = std::collections::HashSet::new();
        for key in order {
            let Some(Revoked { marker, notices, at: (s, off), first: n, each }) = revs.remove(&key) else {
                continue;
            };
            let gid = n.revocation.revocation().grant_id;
            let authority = match self.grant_records.get(&gid) {
                None => crate::Authority::Unverifiable,
                Some(g) if n.revocation.check_authority(g).is_ok() => crate::Authority::Verified,
                Some(_) => crate::Authority::Forged,
            };
            if authority == crate::Authority::Forged {
                self.finding(s, off, FindingCode::RevocationForged, words::revocation_forged(&gid));
            } else if authority == crate::Authority::Unverifiable {
                self.finding(
                    s,
                    off,
                    FindingCode::RevocationAuthorityUnknown,
                    words::revocation_authority_unknown(&gid),
                );
            }
            if authority == crate::Authority::Forged {
                let allows = RevocationClasses::default();
                lines.push(RevocationLine {
                    grant_id: gid,
                    marker,
                    log_marker: None,
                    at: (s, off),
                    notices,
                    authority,
                    allows,
                });
                continue;
            }
            // §4.3 "issued at M": the issuer's marker when its log is given.
            let log_marker = match log.as_deref() {
                None => None,
                Some(l) => {
                    heard.insert(key);
                    crate::issuer_log::judge_notices(l, &key, &gid, &each, |s, o, c, m| self.finding(s, o, c, m))
                }
            };
            let judged_at = log_marker.unwrap_or(marker);
            let e = earliest.entry(gid).or_insert(judged_at);
            *e = (*e).min(judged_at);
            let classes = self.grants.get(&gid).map(|g| classify(g, judged_at)).unwrap_or_default();
            lines.push(RevocationLine {
                grant_id: gid,
                marker: judged_at,
                log_marker,
                at: (s, off),
                notices,
                authority,
                allows: classes,
            });
        }
        // What the issuer logged and no point recorded is judged all the same.
        let grants = &self.grants;
        lines.extend(crate::issuer_log::unheard_lines(log.as_deref(), &heard, &mut earliest, |gid, m| {
            grants.get(gid).map(|g| classify(g, m)).unwrap_or_default()
        }));
        for (gid, m) in earliest {
            let Some(classes) = self.grants.get(&gid).map(|g| classify(g, m)) else {
                continue;
            };
            let mut found: Vec<(usize, u64, FindingCode)> = Vec::new();
            for &(s, o) in &classes.violation_at {
                found.push((s, o, FindingCode::RevocationViolation));
            }
            for &(s, o) in &classes.unverifiable_at {
                found.push((s, o, FindingCode::RevocationUnverifiable));
            }
            found.sort_unstable();
            for (s, o, code) in found {
                self.finding(s, o, code, words::revocation_allow(code, &gid, m));
            }
            // Every classified allow is a finding; those past the kept
            // offsets are counted without detail.
            self.findings.count_more(
                FindingCode::RevocationViolation,
                classes.violation.saturating_sub(classes.violation_at.len() as u64),
            );
            self.findings.count_more(
                FindingCode::RevocationUnverifiable,
                classes.unverifiable.saturating_sub(classes.unverifiable_at.len() as u64),
            );
        }
        lines
    }

    /// §4.7 + §4.3: each superseded grant, against every allow on its
    /// subtree recorded by a stream that did not admit the amendment: at or
    /// past the earliest marker the notices state, `superseded-spend`; no
    /// marker on the allow's side or on every notice, `superseded-unverifiable`.
    pub(super) fn supersessions(&mut self) {
        let mut found: Vec<(usize, u64, FindingCode, ContentId, Option<u64>)> = Vec::new();
        let (mut spend_more, mut unverifiable_more) = (0u64, 0u64);
        for (gid, list) in &self.superseded {
            let Some(g) = self.grants.get(gid) else {
                continue;
            };
            let m = list.iter().filter_map(|(_, _, _, m)| *m).min();
            for ((s, k), b) in &g.by_marker {
                if list.iter().any(|(st, _, _, _)| st == s) {
                    continue;
                }
                let unverifiable = match (m, k) {
                    (Some(m), Some(k)) if *k < m => continue,
                    (Some(_), Some(_)) => false,
                    _ => true,
                };
                let code =
                    if unverifiable { FindingCode::SupersededUnverifiable } else { FindingCode::SupersededSpend };
                for &(s, o) in &b.first {
                    found.push((s, o, code, *gid, m));
                }
                let extra = b.count.saturating_sub(b.first.len() as u64);
                if unverifiable {
                    unverifiable_more += extra;
                } else {
                    spend_more += extra;
                }
            }
        }
        found.sort_by_key(|f| (f.0, f.1, f.2, f.3));
        for (s, o, code, gid, m) in found {
            self.finding(s, o, code, words::superseded_elsewhere(code, &gid, m));
        }
        self.findings.count_more(FindingCode::SupersededSpend, spend_more);
        self.findings.count_more(FindingCode::SupersededUnverifiable, unverifiable_more);
    }

    /// §4.5: every steward other than a shard's bound point that allowed
    /// through it (`shard-wrong-point`, at its first such allow), and each
    /// parent whose point-bound shards sum past it (`shard-overcommitted`).
    pub(super) fn shards(&mut self) {
        let mut found: Vec<(usize, u64, FindingCode, String)> = Vec::new();
        for (id, rec) in &self.grant_records {
            let Some(point) = rec.grant().bound_point() else {
                continue;
            };
            let Some(g) = self.grants.get(id) else {
                continue;
            };
            for (steward, &(s, o)) in &g.points {
                if *steward != point.to_did_string() {
                    found.push((s, o, FindingCode::ShardWrongPoint, words::shard_wrong_point(id, point, steward)));
                }
            }
        }
        for msg in words::shard_overcommitted(self.grant_records.values(), |id| self.grant_records.get(id)) {
            found.push((0, 0, FindingCode::ShardOvercommitted, msg));
        }
        found.sort();
        for (s, o, code, msg) in found {
            self.finding(s, o, code, msg);
        }
    }

    /// §5.5: a grant's conservation line and, past its ceiling, an `overspend`.
    pub(super) fn grant_line(
        &self,
        id: ContentId,
        acc: &GrantBooks,
        overs: &mut Vec<(usize, u64, String)>,
    ) -> GrantLine {
        let rec = self.grant_records.get(&id);
        let budget = match rec {
            Some(g) => Some(g.grant().budget_uj),
            None => acc.budget_from_receipt,
        };
        let conservation =
            budget.map(|b| crate::report::conservation_of(b, acc.measured_uj, acc.modelled_uj, acc.partial));
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
    /// Each notice: stream, offset, the marker it states.
    each: Vec<(usize, u64, u64)>,
}

/// The verified allows on a grant's subtree against marker `m` (§4.3):
/// `known_through < m` explicable, `>= m` violation, none unverifiable.
fn classify(g: &GrantBooks, m: u64) -> RevocationClasses {
    let heard = |k: &Option<u64>| k.is_some_and(|k| k >= m);
    let behind = |k: &Option<u64>| k.is_some_and(|k| k < m);
    let silent = |k: &Option<u64>| k.is_none();
    let count = |class: &dyn Fn(&Option<u64>) -> bool| -> u64 {
        g.by_marker.iter().filter(|((_, k), _)| class(k)).map(|(_, b)| b.count).sum()
    };
    let kept = |class: &dyn Fn(&Option<u64>) -> bool| -> Vec<(usize, u64)> {
        let mut at: Vec<(usize, u64)> =
            g.by_marker.iter().filter(|((_, k), _)| class(k)).flat_map(|(_, b)| b.first.iter().copied()).collect();
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
