//! Long runs through the gateway (§4.7): at each checkpoint (every N calls,
//! or once J µJ were charged since the last) the gateway, as the holder,
//! writes a signed checkpoint of the run's spend to the run file and holds
//! the next call until the steward steers it: an amendment citing the
//! checkpoint (approve is one with exactly the remainder), which the
//! gateway verifies, admits into its own endpoint (the steered grant is
//! superseded there) and follows to its continuation; or a revocation of a
//! grant of the chain written beside the run (`<run>.revocations/`, as the
//! console writes it), which it admits and which ends the run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jcp::cbor::{ContentId, Value};
use jcp::energy::Provenance;
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp::revocation::SignedRevocation;
use jcp::steering::follow::{continue_chain, find_steering, verify_steering};
use jcp::steering::{CheckpointInput, Run, SignedCheckpoint, Spent};

use crate::GatewayError;

/// When to checkpoint and how long to wait for the steward.
#[derive(Debug, Clone)]
pub struct SteerOptions {
    /// The run file (created under the chain's leaf when absent).
    pub run: PathBuf,
    /// A checkpoint after every this many allowed calls (0: not by count).
    pub every_calls: u64,
    /// A checkpoint once this many µJ were charged since the last (0: not by energy).
    pub every_uj: u64,
    /// How long a held call waits for the steward before it is refused.
    pub wait_timeout: Duration,
    /// How often the run file is read while waiting.
    pub poll: Duration,
}

/// What the steward did while a call was held.
#[derive(Debug)]
pub enum Steered {
    /// An amendment was verified, admitted and followed: the continuation's id.
    Continued(ContentId),
    /// A grant of the chain was revoked: why, for the held call's tool error.
    Revoked(String),
    /// Nothing within the wait; the call is refused and the next waits again.
    TimedOut(String),
    /// The amendment could not be followed (it does not verify, or the endpoint refused it).
    Refused(String),
    /// The client closed the session while the call was held: nobody waits for it.
    ClientGone,
    /// The client cancelled the held call (MCP "Cancellation"): it is not decided.
    Cancelled,
}

/// The run as the gateway keeps it.
#[derive(Debug)]
pub struct RunState {
    /// The chain now (after any continuations).
    pub chain: Vec<SignedGrant>,
    spent_uj: u64,
    grade: Option<Provenance>,
    since_calls: u64,
    since_uj: u64,
    last_receipt: Option<ContentId>,
    /// The checkpoint the next call waits on.
    pub pending: Option<SignedCheckpoint>,
    /// Why the run can no longer be checkpointed (every later call is refused).
    pub broken: Option<String>,
}

fn run_err(code: &'static str, path: &Path, why: impl std::fmt::Display) -> GatewayError {
    GatewayError::Run { code, message: format!("{}: {why}", path.display()) }
}

/// Writes the run beside itself, then renames it over the file (a reader
/// never sees half a record; the temporary name is the gateway's own).
fn write_run(path: &Path, run: &Run) -> Result<(), GatewayError> {
    run.replace(path, "gateway").map_err(|e| run_err("io", path, e))
}

/// Reads the run, again a few times on failure (the steward's writer may be replacing it).
fn read_run(path: &Path) -> Result<Run, GatewayError> {
    let mut last = None;
    for attempt in 0..5u64 {
        match Run::read(path) {
            Ok(r) => return Ok(r),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(25 * (attempt + 1)));
    }
    Err(run_err("run-unreadable", path, last.map_or_else(String::new, |e| e.to_string())))
}

impl RunState {
    /// Opens the run (creating it under the leaf when absent) and follows
    /// its verified continuations to the grant it is active under now.
    pub fn open(path: &Path, chain: Vec<SignedGrant>) -> Result<Self, GatewayError> {
        let leaf = chain.last().ok_or_else(|| run_err("chain-empty", path, "no grant in the chain"))?.clone();
        let run = if path.exists() {
            read_run(path)?
        } else {
            let run = Run::new(leaf.clone());
            write_run(path, &run)?;
            run
        };
        if run.grant().map(SignedGrant::id) != Some(leaf.id()) {
            return Err(run_err(
                "run-grant-mismatch",
                path,
                format!("the run is not the chain's leaf {}'s", leaf.id()),
            ));
        }
        let report = run.verify().map_err(|e| run_err("run-unreadable", path, e))?;
        if let Some(f) = report.findings.iter().find(|f| !f.admitted) {
            return Err(run_err(
                "steer-run-not-clean",
                path,
                format!("record #{} ({}) is refused: [{}] {}", f.index, f.kind, f.code, f.message),
            ));
        }
        let chain = jcp::steering::follow::active_chain(&run, &report, chain).ok_or_else(|| {
            run_err("run-no-active-grant", path, "the run has no active grant to follow (awaiting a continuation?)")
        })?;
        let cur = report.active_grant;
        let spent = report.latest_spent;
        // A run that already awaits its steward (the gateway stopped at a
        // checkpoint) holds the next call now too: restarting the gateway
        // never lets a run go on unsteered.
        let pending = report
            .checkpoints
            .last()
            .filter(|c| Some(c.grant_id) == cur && c.amendments.is_empty() && c.verdict != "refused")
            .and_then(|c| {
                run.records().iter().find_map(|r| match r {
                    jcp::steering::Record::Checkpoint(x) if x.id() == c.id => Some(x.clone()),
                    _ => None,
                })
            });
        Ok(Self {
            chain,
            spent_uj: spent.map_or(0, |s| s.uj),
            grade: spent.map(|s| s.provenance),
            since_calls: 0,
            since_uj: 0,
            last_receipt: None,
            pending,
            broken: None,
        })
    }

    /// Counts a call's debit (the charge, or a lost call's reservation,
    /// which stays debited) and writes a checkpoint when one is due.
    pub fn debited(
        &mut self,
        opts: &SteerOptions,
        holder: &Keypair,
        uj: u64,
        grade: Provenance,
        receipt: ContentId,
    ) -> Result<Option<SignedCheckpoint>, GatewayError> {
        self.spent_uj = self.spent_uj.saturating_add(uj);
        self.grade = Some(self.grade.map_or(grade, |g| g.min(grade)));
        self.since_calls += 1;
        self.since_uj = self.since_uj.saturating_add(uj);
        self.last_receipt = Some(receipt);
        let due = (opts.every_calls > 0 && self.since_calls >= opts.every_calls)
            || (opts.every_uj > 0 && self.since_uj >= opts.every_uj);
        if !due {
            return Ok(None);
        }
        let mut run = read_run(&opts.run)?;
        let last_at = run.latest_checkpoint_at();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let state = ContentId::of(&Value::text(format!(
            "jcp gateway: run state after receipt {}",
            self.last_receipt.map_or_else(String::new, |r| r.to_hex())
        )));
        let input = CheckpointInput {
            state,
            at: now.max(last_at),
            spent: Some(Spent { uj: self.spent_uj, provenance: self.grade.unwrap_or(Provenance::Estimator) }),
            nonce: None,
        };
        let cp = run.checkpoint(holder, input).map_err(|e| run_err(e.code(), &opts.run, e))?;
        write_run(&opts.run, &run)?;
        self.since_calls = 0;
        self.since_uj = 0;
        self.pending = Some(cp.clone());
        Ok(Some(cp))
    }

    /// The run's cumulative spend as the checkpoints state it.
    pub fn spent_uj(&self) -> u64 {
        self.spent_uj
    }

    /// Looks once for the steward's answer to the pending checkpoint: an
    /// amendment citing it (verified; `admit` hands it to the endpoint and
    /// says whether it was admitted), or a revocation of a grant of the
    /// chain beside the run (`revoke` hands it to the endpoint). `None`
    /// while neither is there.
    pub fn look<A, R>(&mut self, opts: &SteerOptions, admit: A, revoke: R) -> Result<Option<Steered>, GatewayError>
    where
        A: FnOnce(&jcp::steering::follow::Steering, &SignedGrant) -> Result<(), String>,
        R: FnOnce(&SignedRevocation, &SignedGrant) -> Result<(), String>,
    {
        let Some(cp) = self.pending.clone() else { return Ok(None) };
        let steered = self.chain.last().cloned().ok_or_else(|| run_err("chain-empty", &opts.run, "no grant"))?;
        let run = read_run(&opts.run)?;
        if let Some(s) = find_steering(&run, &steered.id()) {
            if s.am.amendment().checkpoint != cp.id() {
                return Ok(Some(Steered::Refused(format!(
                    "the amendment {} cites checkpoint {}, not the pending {}",
                    s.am.id(),
                    s.am.amendment().checkpoint,
                    cp.id()
                ))));
            }
            let report = run.verify().map_err(|e| run_err("run-unreadable", &opts.run, e))?;
            if let Err(why) = verify_steering(&run, &report, &steered, &s) {
                return Ok(Some(Steered::Refused(format!("the amendment {} does not verify: {why}", s.am.id()))));
            }
            if let Err(why) = admit(&s, &steered) {
                return Ok(Some(Steered::Refused(format!("the endpoint refused amendment {}: {why}", s.am.id()))));
            }
            self.chain = continue_chain(&self.chain, &s.cont);
            self.pending = None;
            return Ok(Some(Steered::Continued(s.cont.id())));
        }
        if let Some((rev, g)) = jcp::steering::follow::revocations_beside(&opts.run, &self.chain).into_iter().next() {
            let why = format!("grant {} was revoked (revocation {} beside the run)", g.id(), rev.id());
            revoke(&rev, &g).map_err(|e| run_err("revocation-refused", &opts.run, e))?;
            self.pending = None;
            return Ok(Some(Steered::Revoked(why)));
        }
        Ok(None)
    }
}

/// Waits (blocking, polling) until `look` answers or the wait times out.
pub fn wait_until<F>(opts: &SteerOptions, mut look: F, mut tick: impl FnMut(u64)) -> Result<Steered, GatewayError>
where
    F: FnMut() -> Result<Option<Steered>, GatewayError>,
{
    let start = Instant::now();
    let mut n = 0;
    loop {
        if let Some(s) = look()? {
            return Ok(s);
        }
        if start.elapsed() >= opts.wait_timeout {
            return Ok(Steered::TimedOut(format!(
                "the steward did not steer the run within {} s (run file {})",
                opts.wait_timeout.as_secs(),
                opts.run.display()
            )));
        }
        n += 1;
        tick(n);
        std::thread::sleep(opts.poll);
    }
}
