//! Checkpoints and amendments (§4.7) from the agent's side: it commits a
//! signed checkpoint of its cumulative spend, waits for the steward's
//! amendment citing it (or a revocation, §4.3, or its parent's exit), and
//! switches to the verified continuation grant.

use std::time::Instant;

use jcp::grant::SignedGrant;
use jcp::steering::{CheckpointInput, SignedCheckpoint, Spent};
use serde_json::json;

use super::steering::{continue_chain, find_steering, read_run, verify_steering, write_run, Steering};
use super::stop::{Stop, Waited};
use super::wire::state_of;
use super::{parent_pid, unix_now, Agent};
use crate::out::{coded, core_err};

impl Agent {
    /// The grade the checkpoint states with the spend: the floor of what
    /// was debited (`Estimator` where nothing was).
    pub(super) fn spent_grade(&self) -> jcp::energy::Provenance {
        self.spent_grade.unwrap_or(jcp::energy::Provenance::Estimator)
    }

    /// Switches to a verified continuation grant and says so.
    pub(super) fn switch(&mut self, s: &Steering, ceiling: u64) -> anyhow::Result<()> {
        let steered = self.leaf()?.id();
        self.chain = continue_chain(&self.chain, &s.cont);
        let a = s.am.amendment();
        self.say(
            &json!({
                "event": "continued",
                "steered": steered,
                "checkpoint": s.cp.id(),
                "amendment": s.am.id(),
                "continuation": s.cont.id(),
                "budget_uj": s.cont.grant().budget_uj,
                "ceiling_uj": ceiling,
                "expiry": s.cont.grant().expiry,
                "instructions": a.instructions,
                "chain": self.chain_ids(),
            }),
            || {
                format!(
                    "continued: amendment {} at checkpoint {}; now under continuation grant {} with a ceiling of {} µJ (the most it could set: {} µJ)",
                    s.am.id(),
                    s.cp.id(),
                    s.cont.id(),
                    s.cont.grant().budget_uj,
                    ceiling
                )
            },
        )
    }

    /// Commits a checkpoint to the run file (re-read first: the steward
    /// writes it too).
    pub(super) async fn checkpoint(&mut self) -> anyhow::Result<SignedCheckpoint> {
        let mut run = read_run(&self.run_path).await?;
        let report = run.verify().map_err(|e| core_err(&self.run_path, &e))?;
        let leaf = self.leaf()?.id();
        if report.active_grant != Some(leaf) {
            return Err(coded(
                "run-grant-mismatch",
                format!(
                    "{}: the run's active grant is {}, but the agent runs under {leaf}",
                    self.run_path.display(),
                    report.active_grant.map_or_else(|| "none".to_owned(), |g| g.to_hex())
                ),
            ));
        }
        let last_at = run.latest_checkpoint_at();
        let input = CheckpointInput {
            state: state_of(self.step),
            at: unix_now().max(last_at),
            spent: Some(Spent { uj: self.spent, provenance: self.spent_grade() }),
            nonce: None,
        };
        let cp = run.checkpoint(&self.key, input).map_err(|e| core_err(&self.run_path, &e))?;
        write_run(&self.run_path, &run)?;
        let c = cp.checkpoint();
        let timeout = self.wait_timeout.as_secs();
        self.say(
            &json!({
                "event": "checkpoint",
                "id": cp.id(),
                "seq": c.seq,
                "grant": c.grant_id,
                "step": self.step,
                "state": c.state,
                "spent_uj": self.spent,
                "provenance": self.spent_grade().as_str(),
                "run": self.run_path,
                "wait_timeout_s": timeout,
            }),
            || {
                format!(
                    "checkpoint {} (seq {}) after step {}: spent {} µJ ({}); waiting up to {timeout} s for the steward's amendment in {}",
                    cp.id(),
                    c.seq,
                    self.step,
                    self.spent,
                    self.spent_grade(),
                    self.run_path.display()
                )
            },
        )?;
        Ok(cp)
    }

    /// Waits for the amendment citing `cp` and its continuation grant,
    /// polling the run file; verifies them and switches.
    pub(super) async fn wait_for_amendment(&mut self, cp: &SignedCheckpoint) -> anyhow::Result<Waited> {
        let deadline = Instant::now() + self.wait_timeout;
        let steered = self.leaf()?.clone();
        loop {
            let run = read_run(&self.run_path).await?;
            if let Some(s) = find_steering(&run, &steered.id()) {
                if s.am.amendment().checkpoint != cp.id() {
                    return Ok(Waited::Stopped(Stop::new(
                        "amendment-refused",
                        format!(
                            "stopped: the amendment {} cites checkpoint {}, not the run's latest {}",
                            s.am.id(),
                            s.am.amendment().checkpoint,
                            cp.id()
                        ),
                    )));
                }
                let report = run.verify().map_err(|e| core_err(&self.run_path, &e))?;
                return match verify_steering(&run, &report, &steered, &s) {
                    Ok(ceiling) => {
                        self.switch(&s, ceiling)?;
                        Ok(Waited::Continued)
                    }
                    Err(why) => Ok(Waited::Stopped(Stop::new(
                        "amendment-refused",
                        format!(
                            "stopped: the amendment {} at checkpoint {} does not verify: {why}",
                            s.am.id(),
                            cp.id()
                        ),
                    ))),
                };
            }
            if let Some(stop) = self.revoked_while_waiting().or_else(|| self.parent_gone()) {
                return Ok(Waited::Stopped(stop));
            }
            if Instant::now() >= deadline {
                return Ok(Waited::Stopped(Stop::new(
                    "wait-timeout",
                    format!(
                        "stopped: no amendment cited checkpoint {} within {} s (run file {})",
                        cp.id(),
                        self.wait_timeout.as_secs(),
                        self.run_path.display()
                    ),
                )));
            }
            tokio::time::sleep(self.interval).await;
        }
    }

    /// With `--stop-with-parent`: a stop once the parent is gone (the agent
    /// was re-parented, so its parent pid changed).
    pub(super) fn parent_gone(&self) -> Option<Stop> {
        let was = self.parent?;
        let now = parent_pid()?;
        (now != was).then(|| {
            Stop::new(
                "parent-gone",
                format!("stopped: the process that started the agent ({was}) is gone; nobody is left to steer the run"),
            )
        })
    }

    /// While it waits at a checkpoint the agent asks the endpoint nothing,
    /// so a revocation reaches it where the steward writes it beside the run
    /// (`<run>.revocations/<grant id>.jcp`, as the console does): one that
    /// verifies against a grant of the agent's chain — the revoker is that
    /// grant's issuer and the signature holds (§4.3) — stops the run. A file
    /// that does not verify is ignored (the endpoint still decides).
    pub(super) fn revoked_while_waiting(&self) -> Option<Stop> {
        let (rev, g) = jcp::steering::follow::revocations_beside(&self.run_path, &self.chain).into_iter().next()?;
        let id = g.id();
        let leaf = self.chain.last().map(SignedGrant::id);
        Some(Stop {
            why: "revoked",
            message: if leaf == Some(id) {
                format!("stopped: grant {id} was revoked (revocation {} beside the run)", rev.id())
            } else {
                format!("stopped: grant {id} above the agent's grant in its chain was revoked (revocation {} beside the run)", rev.id())
            },
            extra: json!({"revocation": rev.id(), "revoked": id}),
        })
    }

    /// On `superseded`: the continuation, if the run file has one by now.
    pub(super) async fn follow_supersession(&mut self) -> anyhow::Result<Option<Stop>> {
        let steered = self.leaf()?.clone();
        let run = read_run(&self.run_path).await?;
        let Some(s) = find_steering(&run, &steered.id()) else {
            return Ok(Some(Stop::new(
                "superseded",
                format!(
                    "stopped: grant {} superseded, no continuation in the run file {}",
                    steered.id(),
                    self.run_path.display()
                ),
            )));
        };
        let report = run.verify().map_err(|e| core_err(&self.run_path, &e))?;
        match verify_steering(&run, &report, &steered, &s) {
            Ok(ceiling) => {
                self.switch(&s, ceiling)?;
                Ok(None)
            }
            Err(why) => Ok(Some(Stop::new(
                "superseded",
                format!(
                    "stopped: grant {} superseded, and the continuation in the run file does not verify: {why}",
                    steered.id()
                ),
            ))),
        }
    }
}
