//! §4.3 against the issuer's own revocation log (issue 34;
//! [`jcp::revocation_log`]): the marker each revocation was issued at is
//! the issuer's, not what a point recorded. Each point's notice that states
//! another marker is a `revocation-marker-mismatch`; a recorded revocation
//! the issuer never logged is `revocation-unlogged` (and is judged at its
//! notices' marker, as without a log); a logged revocation no point
//! recorded still classifies every allow on its subtree. One
//! implementation for the engine and the reference audit: it decides
//! findings from what each has already checked, in one order.

use std::collections::{BTreeMap, HashSet};

use jcp::cbor::ContentId;
use jcp::revocation_log::{Entry, IssuerLog};

use crate::report::{RevocationClasses, RevocationLine};
use crate::{words, FindingCode};

/// A signed revocation: its content id and signature.
pub(crate) type RevKey = (ContentId, [u8; 64]);

/// The issuer's marker for a recorded revocation whose notices are
/// `notices` (stream, offset, marker each, in the order read), and the
/// findings its notices earn, handed to `finding` in that order. `None`:
/// the log does not hold it (one `revocation-unlogged`, at its first notice).
pub(crate) fn judge_notices(
    log: &IssuerLog,
    key: &RevKey,
    grant: &ContentId,
    notices: &[(usize, u64, u64)],
    mut finding: impl FnMut(usize, u64, FindingCode, String),
) -> Option<u64> {
    if let Some(e) = log.get(key) {
        for &(s, o, m) in notices.iter().filter(|n| n.2 != e.marker) {
            finding(s, o, FindingCode::RevocationMarkerMismatch, words::revocation_marker_mismatch(grant, m, e.marker));
        }
        Some(e.marker)
    } else {
        if let Some(&(s, o, _)) = notices.first() {
            finding(s, o, FindingCode::RevocationUnlogged, words::revocation_unlogged(grant));
        }
        None
    }
}

/// The logged revocations no point recorded, in the log's order.
fn unheard<'a>(log: &'a IssuerLog, heard: &'a HashSet<RevKey>) -> impl Iterator<Item = &'a Entry> + 'a {
    log.entries().iter().filter(move |e| !heard.contains(&e.key()))
}

/// A revocation line for each logged revocation no point recorded
/// (`heard` holds those that were), its allows classified by `classify`
/// at the issuer's marker, which also joins `earliest` for its grant.
pub(crate) fn unheard_lines(
    log: Option<&IssuerLog>,
    heard: &HashSet<RevKey>,
    earliest: &mut BTreeMap<ContentId, u64>,
    classify: impl Fn(&ContentId, u64) -> RevocationClasses,
) -> Vec<RevocationLine> {
    let Some(log) = log else { return Vec::new() };
    unheard(log, heard)
        .map(|e| {
            let gid = e.revocation.revocation().grant_id;
            let m = earliest.entry(gid).or_insert(e.marker);
            *m = (*m).min(e.marker);
            RevocationLine {
                grant_id: gid,
                marker: e.marker,
                log_marker: Some(e.marker),
                at: (0, 0),
                notices: 0,
                authority: crate::Authority::Verified,
                allows: classify(&gid, e.marker),
            }
        })
        .collect()
}
