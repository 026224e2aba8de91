//! Revoking a grant (JCP §4.3): which known grants die with it (the target
//! and every grant whose chain contains it), the revoker-is-issuer rule
//! checked before signing, and revocations written beside the run (where
//! `jcp agent demo` looks while it waits at a checkpoint).

use std::path::{Path, PathBuf};

use jcp::cbor::ContentId;
use jcp::grant::SignedGrant;
use jcp::identity::{Did, Keypair};
use jcp::revocation::{Revocation, SignedRevocation};
use jcp::steering::{Record, Run};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use super::refused;
use crate::format_uj;
use crate::ViewError;

/// A grant that dies with a revocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct DyingGrant {
    /// Its id.
    pub id: String,
    /// Who holds it.
    pub subject: String,
    /// Its budget in words.
    pub budget: String,
    /// Why it dies: `revoked` (the target) or `below` (a descendant).
    pub why: String,
}

/// What a revocation would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RevokePlan {
    /// The grant revoked.
    pub target: String,
    /// The target, then every known grant whose chain contains it (§4.3: a subtree dies with its ancestor).
    pub dies: Vec<DyingGrant>,
}

/// Every grant in a run file.
pub fn grants_of(run: &Run) -> Vec<SignedGrant> {
    run.records()
        .iter()
        .filter_map(|r| match r {
            Record::Grant(g) => Some(g.clone()),
            _ => None,
        })
        .collect()
}

/// What revoking `target` kills among the `known` grants (§4.3): the
/// target and every grant whose parent chain reaches it. Refused before
/// anything is signed where the steward is not the target's issuer.
pub fn plan_revoke(target: &SignedGrant, known: &[SignedGrant], steward: &Did) -> Result<RevokePlan, ViewError> {
    if target.grant().issuer != *steward {
        return Err(ViewError::Refused {
            path: PathBuf::new(),
            code: "revocation-unauthorized",
            detail: format!(
                "only the issuer may revoke a grant (§4.3): grant {} was issued by {}, and the unlocked key is {steward}",
                target.id(),
                target.grant().issuer
            ),
        });
    }
    let line = |g: &SignedGrant, why: &str| DyingGrant {
        id: g.id().to_string(),
        subject: g.grant().subject.to_string(),
        budget: format_uj(g.grant().budget_uj),
        why: why.to_owned(),
    };
    let mut dying: Vec<ContentId> = vec![target.id()];
    let mut dies = vec![line(target, "revoked")];
    // Parents before children is not guaranteed: repeat until nothing new.
    loop {
        let before = dying.len();
        for g in known {
            let id = g.id();
            if !dying.contains(&id) && g.grant().parent.is_some_and(|p| dying.contains(&p)) {
                dying.push(id);
                dies.push(line(g, "below"));
            }
        }
        if dying.len() == before {
            break;
        }
    }
    Ok(RevokePlan { target: target.id().to_string(), dies })
}

/// Signs the revocation of `target` (the core refuses a revoker who is not
/// the issuer) and writes it beside the run, in `<run>.revocations/`.
pub fn sign_revoke(
    run_path: &Path,
    target: &SignedGrant,
    issuer: &Keypair,
) -> Result<(SignedRevocation, PathBuf), ViewError> {
    let rev = Revocation::issue(target, issuer, None).map_err(|e| refused(run_path, &e))?;
    let file = write_revocation(run_path, target, &rev)?;
    Ok((rev, file))
}

/// Writes a signed revocation beside the run, as `<run>.revocations/<grant id>.jcp`
/// (where `jcp agent demo` looks while it waits at a checkpoint).
pub fn write_revocation(run_path: &Path, target: &SignedGrant, rev: &SignedRevocation) -> Result<PathBuf, ViewError> {
    let dir = revocations_dir(run_path);
    let w = |e: std::io::Error| ViewError::Write { path: dir.clone(), detail: e.to_string() };
    std::fs::create_dir_all(&dir).map_err(w)?;
    let file = dir.join(format!("{}.jcp", target.id()));
    jcp::steering::files::replace(&file, &rev.to_bytes(), "console").map_err(w)?;
    Ok(file)
}

/// Where the revocations of a run's grants are written.
pub fn revocations_dir(run_path: &Path) -> PathBuf {
    jcp::steering::follow::revocations_dir(run_path)
}

/// The revocations written beside a run: (revoked grant id, revocation),
/// checked against the run's grants (a file that does not verify is skipped
/// and reported by the caller's count).
pub fn revocations_of(run_path: &Path, run: &Run) -> Vec<(ContentId, SignedRevocation)> {
    let mut out: Vec<(ContentId, SignedRevocation)> =
        jcp::steering::follow::revocations_beside(run_path, &grants_of(run))
            .into_iter()
            .map(|(rev, g)| (g.id(), rev))
            .collect();
    out.sort_by_key(|(id, _)| *id);
    out
}
