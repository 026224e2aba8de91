//! Following a steering from the agent's side (§4.7): the amendment of a
//! steered grant found in a run with its checkpoint and continuation,
//! verified as the holder must before it goes on, and the chain the
//! continuation leaves. Shared by every holder that follows a run: the demo
//! agent (`jcp agent demo`) and the MCP gateway (`jcp gateway`).

use std::path::{Path, PathBuf};

use crate::cbor::ContentId;
use crate::grant::SignedGrant;
use crate::revocation::SignedRevocation;

use super::{verify_amendment, verify_continuation, Record, Run, RunReport, SignedAmendment, SignedCheckpoint};

/// The chain after a continuation grant replaces the leaf: the
/// continuation takes the steered grant's place (same parent, §4.7), so a
/// root re-issue is a chain of its own.
pub fn continue_chain(chain: &[SignedGrant], cont: &SignedGrant) -> Vec<SignedGrant> {
    match (cont.grant().parent, chain.split_last()) {
        (Some(_), Some((_, above))) => above.iter().cloned().chain(std::iter::once(cont.clone())).collect(),
        _ => vec![cont.clone()],
    }
}

/// A steering of a grant found in a run: the checkpoint, the amendment
/// citing it, and the continuation grant right after the amendment.
#[derive(Debug, Clone)]
pub struct Steering {
    /// The checkpoint the amendment cites.
    pub cp: SignedCheckpoint,
    /// The amendment.
    pub am: SignedAmendment,
    /// Its continuation grant.
    pub cont: SignedGrant,
}

/// Finds the amendment of `steered` in the run and its continuation grant
/// (the record right after it). `None` while either is missing.
pub fn find_steering(run: &Run, steered: &ContentId) -> Option<Steering> {
    let recs = run.records();
    let (i, am) = recs.iter().enumerate().find_map(|(i, r)| match r {
        Record::Amendment(a) if a.amendment().grant_id == *steered => Some((i, a)),
        _ => None,
    })?;
    let cont = match recs.get(i + 1) {
        Some(Record::Grant(g)) if g.id() == am.amendment().continuation => g.clone(),
        _ => return None,
    };
    let cp = recs.iter().find_map(|r| match r {
        Record::Checkpoint(c) if c.id() == am.amendment().checkpoint => Some(c.clone()),
        _ => None,
    })?;
    Some(Steering { cp, am: am.clone(), cont })
}

/// Verifies a steering as the holder must before it follows it: the run's
/// verifier (which knows where each continuation began) admitted the
/// amendment and verified its continuation; the continuation re-binds the
/// steered grant (`verify_continuation`); and where the steered grant is
/// the run's own, the amendment verifies on its own (`verify_amendment`).
/// The ceiling the amendment could set, or why it is refused.
pub fn verify_steering(run: &Run, report: &RunReport, steered: &SignedGrant, s: &Steering) -> Result<u64, String> {
    if let Some(f) = report.findings.iter().find(|f| !f.admitted && (f.id == s.am.id() || f.id == s.cont.id())) {
        return Err(format!("the run's verifier refuses record #{} ({}): [{}] {}", f.index, f.kind, f.code, f.message));
    }
    let row = report
        .checkpoints
        .iter()
        .find(|r| r.id == s.cp.id())
        .and_then(|r| r.amendments.iter().find(|a| a.id == s.am.id()))
        .ok_or_else(|| {
            format!("the run's verifier did not attach amendment {} to checkpoint {}", s.am.id(), s.cp.id())
        })?;
    if !row.continuation_verified {
        return Err(format!("the continuation grant {} is not verified", s.cont.id()));
    }
    verify_continuation(steered, s.am.amendment(), &s.cont).map_err(|e| format!("[{}] {e}", e.code()))?;
    if run.grant().map(SignedGrant::id) == Some(steered.id()) {
        verify_amendment(steered, &s.cp, &s.am).map_err(|e| format!("[{}] {e}", e.code()))?;
    }
    Ok(row.ceiling_uj)
}

/// The chain a holder resuming a verified run is under now: `chain`, its
/// leaf replaced by each continuation the run admitted in turn, until it
/// ends at the run's active grant. `None` when it cannot get there (the
/// run awaits a continuation, or steers another grant).
pub fn active_chain(run: &Run, report: &RunReport, chain: Vec<SignedGrant>) -> Option<Vec<SignedGrant>> {
    let mut chain = chain;
    for _ in 0..=run.records().len() {
        let cur = chain.last().map(SignedGrant::id)?;
        if report.active_grant == Some(cur) {
            return Some(chain);
        }
        let s = find_steering(run, &cur)?;
        chain = continue_chain(&chain, &s.cont);
    }
    None
}

/// A file beside a run file: `<run><suffix>`.
fn beside(run: &Path, suffix: &str) -> PathBuf {
    let mut p = run.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Where a steward writes the revocations of a run's grants:
/// `<run>.revocations/`, one `<grant id>.jcp` each (the console does; a
/// holder waiting at a checkpoint looks there, asking no endpoint).
pub fn revocations_dir(run: &Path) -> PathBuf {
    beside(run, ".revocations")
}

/// The log a holder that follows a run keeps beside it (`jcp gateway`:
/// `<run>.events.jsonl`), where the console's Steward view reads it.
pub fn log_beside(run: &Path) -> PathBuf {
    beside(run, ".events.jsonl")
}

/// The revocations beside a run that revoke one of `grants` and verify
/// against it (§4.3: the revoker is that grant's issuer and the signature
/// holds), each with the grant it revokes, in the directory's order. A
/// file that does not read or verify is skipped: an endpoint still decides.
pub fn revocations_beside(run: &Path, grants: &[SignedGrant]) -> Vec<(SignedRevocation, SignedGrant)> {
    let Ok(entries) = std::fs::read_dir(revocations_dir(run)) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(bytes) = std::fs::read(e.path()) else { continue };
        let Ok(rev) = SignedRevocation::from_bytes(&bytes) else { continue };
        let id = rev.revocation().grant_id;
        if let Some(g) = grants.iter().find(|g| g.id() == id && rev.check_authority(g).is_ok()) {
            out.push((rev, g.clone()));
        }
    }
    out
}
