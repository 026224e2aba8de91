//! The run file as the agent keeps it (§4.7): read (again, while the
//! steward's writer replaces it), written atomically, opened at start; a
//! steering (checkpoint, amendment, continuation grant) found and verified
//! before the agent follows it.

use std::path::Path;
use std::time::Duration;

use jcp::grant::SignedGrant;
use jcp::steering::{Run, Spent};

use super::READ_ATTEMPTS;
use crate::out::{coded, core_err};

/// Reads the run file, reading again on a failure a few times: the
/// steward's writer may be replacing it while it is read.
pub(super) async fn read_run(path: &Path) -> anyhow::Result<Run> {
    let mut attempt = 0;
    loop {
        match Run::read(path) {
            Ok(r) => return Ok(r),
            Err(e) if attempt + 1 >= READ_ATTEMPTS => {
                return Err(coded(
                    e.code(),
                    format!("{}: the run file could not be read ({READ_ATTEMPTS} attempts): {e}", path.display()),
                ))
            }
            Err(_) => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(25 * u64::from(attempt))).await;
            }
        }
    }
}

/// Writes the whole run to a sibling temporary file, then renames it over
/// the original, so a reader never sees half a record. The temporary name
/// is the agent's own (`jcp run` uses another).
pub(super) fn write_run(path: &Path, run: &Run) -> anyhow::Result<()> {
    run.replace(path, "agent").map_err(|e| core_err(path, &e))
}

pub(super) use jcp::steering::follow::{continue_chain, find_steering, verify_steering, Steering};

/// Opens the run file (creating it under the leaf when absent) and returns
/// it with the chain the run is now under and the spend it declared.
pub(super) fn open_run(path: &Path, chain: Vec<SignedGrant>) -> anyhow::Result<(Vec<SignedGrant>, Option<Spent>)> {
    let leaf = chain.last().ok_or_else(|| coded("chain-empty", "--chain needs at least one grant"))?.clone();
    let run = if path.exists() {
        Run::read(path).map_err(|e| core_err(path, &e))?
    } else {
        let run = Run::new(leaf.clone());
        write_run(path, &run)?;
        run
    };
    let run_grant = run.grant().map(SignedGrant::id);
    if run_grant != Some(leaf.id()) {
        return Err(coded(
            "run-grant-mismatch",
            format!(
                "{}: the run's grant is {}, not the chain's leaf {}",
                path.display(),
                run_grant.map_or_else(|| "none".to_owned(), |g| g.to_hex()),
                leaf.id()
            ),
        ));
    }
    let report = run.verify().map_err(|e| core_err(path, &e))?;
    if let Some(f) = report.findings.iter().find(|f| !f.admitted) {
        return Err(coded(
            "steer-run-not-clean",
            format!("{}: record #{} ({}) is refused: [{}] {}", path.display(), f.index, f.kind, f.code, f.message),
        ));
    }
    // A run steered before: follow its verified continuations to the
    // grant it is active under now.
    if let Some(chain) = jcp::steering::follow::active_chain(&run, &report, chain) {
        return Ok((chain, report.latest_spent));
    }
    Err(coded(
        "run-no-active-grant",
        format!("{}: the run has no active grant the agent can follow (awaiting a continuation?)", path.display()),
    ))
}
