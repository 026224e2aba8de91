//! Revocation propagation (§4.3): each revocation's notices gathered into
//! one line, its authority checked against the grant record, and every
//! verified allow on the revoked subtree classified against the marker the
//! revocation was issued at — explicable (`known_through < M`), a violation
//! (`known_through >= M`) or unverifiable (no marker stated).

use std::collections::{BTreeMap, HashMap};

use jcp::cbor::ContentId;
use jcp_receipt::record::RevocationNotice;

use super::budget::GrantAcc;
use super::Engine;
use crate::codes::{Authority, FindingCode};
use crate::report::{RevocationClasses, RevocationLine};
use crate::words;

/// A verified revocation notice, where it was recorded.
#[derive(Debug)]
pub(super) struct Recorded {
    notice: RevocationNotice,
    stream: usize,
    offset: u64,
}

/// A revocation and its notices (`first` names where it was first recorded).
struct Rev {
    marker: u64,
    notices: u64,
    first: Recorded,
}

impl Engine {
    /// A verified revocation notice: counted, and kept for the end (an allow
    /// recorded before the notice may still be on a revoked subtree).
    pub(super) fn revocation_notice(&mut self, s: usize, off: u64, notice: RevocationNotice) {
        self.counts.revocation_notices += 1;
        self.notices.push(Recorded { notice, stream: s, offset: off });
    }

    /// §4.3: the revocation lines, and a finding for every allow on a
    /// revoked subtree by a point that had heard (or did not say).
    pub(super) fn revocations(&mut self) -> Vec<RevocationLine> {
        let revs = distinct(std::mem::take(&mut self.notices));
        // The earliest marker of each revoked grant's revocations that are
        // not forged: every allow on its subtree is a finding once, not once
        // per notice or per revocation of the same grant.
        let mut earliest: BTreeMap<ContentId, u64> = BTreeMap::new();
        let mut lines = Vec::new();
        for r in revs {
            let n = &r.first;
            let gid = n.notice.revocation.revocation().grant_id;
            let authority = self.authority(n, &gid);
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
            self.revoked_allows(&gid, m);
        }
        lines
    }

    /// A revocation's authority (§4.3: the revoker is the grant's issuer and
    /// the signature verifies), checked at its first notice against the
    /// grant record; forged or unknown authority is a finding.
    fn authority(&mut self, n: &Recorded, gid: &ContentId) -> Authority {
        let authority = match self.grant_records.get(gid) {
            None => Authority::Unverifiable,
            Some(g) => match n.notice.revocation.check_authority(g) {
                Ok(()) => Authority::Verified,
                Err(_) => Authority::Forged,
            },
        };
        match authority {
            Authority::Forged => {
                self.finding(n.stream, n.offset, FindingCode::RevocationForged, words::revocation_forged(gid));
            }
            Authority::Unverifiable => self.finding(
                n.stream,
                n.offset,
                FindingCode::RevocationAuthorityUnknown,
                words::revocation_authority_unknown(gid),
            ),
            Authority::Verified => {}
        }
        authority
    }

    /// A finding for every allow on `gid`'s subtree classified a violation
    /// or unverifiable against its earliest marker `m`.
    fn revoked_allows(&mut self, gid: &ContentId, m: u64) {
        let Some(classes) = self.grants.get(gid).map(|g| classify(g, m)) else { return };
        let mut found: Vec<(usize, u64, FindingCode)> = Vec::new();
        found.extend(classes.violation_at.iter().map(|&(s, o)| (s, o, FindingCode::RevocationViolation)));
        found.extend(classes.unverifiable_at.iter().map(|&(s, o)| (s, o, FindingCode::RevocationUnverifiable)));
        found.sort_unstable();
        // One finding per classified allow, counted exactly; the first
        // few are kept with their offsets.
        for (s, o, code) in found {
            self.finding(s, o, code, words::revocation_allow(code, gid, m));
        }
        let v_extra = classes.violation.saturating_sub(classes.violation_at.len() as u64);
        let u_extra = classes.unverifiable.saturating_sub(classes.unverifiable_at.len() as u64);
        self.findings.count_more(FindingCode::RevocationViolation, v_extra);
        self.findings.count_more(FindingCode::RevocationUnverifiable, u_extra);
    }
}

/// One line per revocation, however many points recorded it (keyed by the
/// signed revocation, content and signature), at the smallest marker any of
/// its notices states; authority is checked once, at its first notice.
fn distinct(notices: Vec<Recorded>) -> Vec<Rev> {
    let mut revs: Vec<Rev> = Vec::new();
    let mut index: HashMap<(ContentId, [u8; 64]), usize> = HashMap::new();
    for n in notices {
        let key = (n.notice.revocation.id(), *n.notice.revocation.signature());
        if let Some(r) = index.get(&key).and_then(|&i| revs.get_mut(i)) {
            r.notices += 1;
            r.marker = r.marker.min(n.notice.marker);
        } else {
            index.insert(key, revs.len());
            revs.push(Rev { marker: n.notice.marker, notices: 1, first: n });
        }
    }
    revs
}

/// The verified allows on a grant's subtree, classified against marker `m`
/// (§4.3 propagation).
fn classify(g: &GrantAcc, m: u64) -> RevocationClasses {
    let mut classes = RevocationClasses::default();
    for ((_, k), b) in &g.by_marker {
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
