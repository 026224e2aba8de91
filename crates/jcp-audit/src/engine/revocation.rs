//! Revocation propagation (§4.3): each revocation's notices gathered into
//! one line, its authority checked against the grant record, and every
//! verified allow on the revoked subtree classified against the marker the
//! revocation was issued at — explicable (`known_through < M`), a violation
//! (`known_through >= M`) or unverifiable (no marker stated).

use std::collections::{BTreeMap, HashMap, HashSet};

use jcp::cbor::ContentId;
use jcp_receipt::record::RevocationNotice;

use super::budget::GrantAcc;
use super::Engine;
use crate::codes::{Authority, FindingCode};
use crate::issuer_log;
use crate::report::{RevocationClasses, RevocationLine};
use crate::words;

/// A verified revocation notice, where it was recorded.
#[derive(Debug)]
pub(super) struct Recorded {
    notice: RevocationNotice,
    stream: usize,
    offset: u64,
}

/// A revocation and its notices (`first` names where it was first recorded;
/// `all`, each notice's stream, offset and marker, in the order read).
struct Rev {
    marker: u64,
    notices: u64,
    first: Recorded,
    all: Vec<(usize, u64, u64)>,
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
        let log = self.revocation_log.clone();
        // The earliest marker of each revoked grant's revocations that are
        // not forged: every allow on its subtree is a finding once, not once
        // per notice or per revocation of the same grant.
        let mut earliest: BTreeMap<ContentId, u64> = BTreeMap::new();
        let mut lines = Vec::new();
        let mut heard = HashSet::new();
        for r in revs {
            let n = &r.first;
            let gid = n.notice.revocation.revocation().grant_id;
            let authority = self.authority(n, &gid);
            if authority == Authority::Forged {
                lines.push(RevocationLine {
                    grant_id: gid,
                    marker: r.marker,
                    log_marker: None,
                    at: (n.stream, n.offset),
                    notices: r.notices,
                    authority,
                    allows: RevocationClasses::default(),
                });
                continue;
            }
            // With the issuer's log, the issuer's marker (§4.3 "issued at M").
            let key = (n.notice.revocation.id(), *n.notice.revocation.signature());
            let log_marker = log.as_deref().and_then(|l| {
                heard.insert(key);
                issuer_log::judge_notices(l, &key, &gid, &r.all, |s, o, c, m| self.finding(s, o, c, m))
            });
            let marker = log_marker.unwrap_or(r.marker);
            let e = earliest.entry(gid).or_insert(marker);
            *e = (*e).min(marker);
            let classes = self.grants.get(&gid).map(|g| classify(g, marker)).unwrap_or_default();
            lines.push(RevocationLine {
                grant_id: gid,
                marker,
                log_marker,
                at: (n.stream, n.offset),
                notices: r.notices,
                authority,
                allows: classes,
            });
        }
        // Logged revocations no point recorded: their subtrees are judged too.
        let grants = &self.grants;
        lines.extend(issuer_log::unheard_lines(log.as_deref(), &heard, &mut earliest, |gid, m| {
            grants.get(gid).map(|g| classify(g, m)).unwrap_or_default()
        }));
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
        let at = (n.stream, n.offset, n.notice.marker);
        if let Some(r) = index.get(&key).and_then(|&i| revs.get_mut(i)) {
            r.notices += 1;
            r.marker = r.marker.min(n.notice.marker);
            r.all.push(at);
        } else {
            index.insert(key, revs.len());
            revs.push(Rev { marker: n.notice.marker, notices: 1, first: n, all: vec![at] });
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
