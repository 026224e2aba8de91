//! `jcp agent demo`: a simulated long agent run that asks an enforcement
//! endpoint for every action (spec §11) and is steered at checkpoints
//! (§4.7, C21).
//!
//! The work is simulated and deterministic: step `n` is the grant's action
//! on the grant's resource with a payload derived from `n`, so no two
//! requests are byte-identical (§11: two byte-identical requests are one
//! request); after an allowed action's work the agent, its holder, reports
//! the outcome (§4.11), so its decisions are settled in the record. Every `K` allowed actions the agent commits a signed checkpoint
//! to its run file, stating the cumulative spend it has been debited, and
//! waits — polling the file — for the steward's amendment citing it; it then
//! verifies the amendment and the continuation grant and goes on under the
//! continuation. While it waits, a revocation of a grant of its chain
//! written beside the run (`<run>.revocations/`) stops it. It stops on `revoked`, on `superseded` with no continuation
//! in its run file, on `budget-exceeded`, on any other deny, or when the
//! wait times out (exit 1); when the endpoint is unreachable or refuses a
//! frame (exit 2); after `--actions N` allowed actions (exit 0).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use jcp::cbor::{ContentId, Value};
use jcp::decision::{Reason, Verdict};
use jcp::energy::{Coverage, Energy};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp::steering::{self, CheckpointInput, Record, Run, RunReport, SignedAmendment, SignedCheckpoint, Spent};
use jcp_wire::client::Client;
use jcp_wire::endpoint::Address;
use jcp_wire::message::{Feed, RequestBody, SignedOutcome, WireRequest, WireResponse};
use jcp_wire::WireError;
use serde_json::json;

use super::core::{read_grant, read_key};
use crate::out::{coded, core_err, emit, CodedError, CLEAN, FINDINGS};

/// How many times a run file that does not decode is read again before
/// the agent gives up (the steward's writer may be replacing it).
const READ_ATTEMPTS: u32 = 6;
/// The longest the agent waits for one response before it calls the
/// endpoint unresponsive.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// `jcp agent`: simulated agents on the wire.
#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(subcommand)]
    cmd: AgentCmd,
}

#[derive(Debug, Subcommand)]
enum AgentCmd {
    /// A long run: asks the endpoint for every action, checkpoints every K allowed actions and waits for the steward's amendment.
    Demo(DemoArgs),
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// The endpoint: tcp:HOST:PORT or unix:PATH.
    #[arg(long)]
    connect: String,
    /// The run file (created under the chain's leaf when absent; its grant must be that leaf).
    #[arg(long)]
    run: PathBuf,
    /// The agent's key file (the leaf's subject: it signs requests and checkpoints).
    #[arg(long)]
    key: PathBuf,
    /// The chain, root first (a root grant alone is a one-link chain).
    #[arg(long = "chain", num_args = 1.., required = true)]
    chain: Vec<PathBuf>,
    /// Stop (exit 0) after this many allowed actions; 0 = until stopped.
    #[arg(long, default_value_t = 0)]
    actions: u64,
    /// Write a checkpoint and wait for an amendment every K allowed actions; 0 = never.
    #[arg(long, default_value_t = 5)]
    checkpoint_every: u64,
    /// The metered cost of each action, µJ.
    #[arg(long, default_value_t = 100)]
    cost_uj: u64,
    /// The cost's provenance (and the declared spend's): `HwShunt`, `ModelBased` or `Estimator`.
    #[arg(long, default_value = "Estimator")]
    provenance: String,
    /// The action each step asks for (default: `read` where granted, else the grant's first action).
    #[arg(long)]
    action: Option<String>,
    /// The simulated work per action and the run file's polling interval, ms.
    #[arg(long, default_value_t = 200)]
    interval_ms: u64,
    /// How long to wait for the steward's amendment at a checkpoint, s.
    #[arg(long, default_value_t = 600)]
    wait_timeout_s: u64,
    /// One JSON event per line.
    #[arg(long)]
    json: bool,
    /// Stop (cleanly, with a `parent-gone` event) when the process that
    /// started the agent is gone — e.g. the console that drives it closed or
    /// was killed — instead of waiting out a checkpoint nobody can answer.
    #[arg(long)]
    stop_with_parent: bool,
}

pub fn run(args: AgentArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        AgentCmd::Demo(a) => run_demo(a),
    }
}

/// The parent's pid (Unix); elsewhere there is none to watch.
fn parent_pid() -> Option<u32> {
    #[cfg(unix)]
    {
        Some(std::os::unix::process::parent_id())
    }
    #[cfg(not(unix))]
    {
        None
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn wire_err(e: &WireError) -> anyhow::Error {
    coded(e.code(), e.to_string())
}

/// The state commitment of step `n` (deterministic simulated work).
fn state_of(step: u64) -> ContentId {
    ContentId::of(&Value::text(format!("jcp agent demo: state after step {step}")))
}

/// The payload of step `n` of a session: distinct per step, and per
/// session (a resumed run numbers its steps from 1 again), so no two
/// requests are byte-identical.
fn payload_of(session: &[u8; 16], step: u64) -> ContentId {
    ContentId::of(&Value::text(format!("jcp agent demo: session {} step {step}", hex::encode(session))))
}

/// Reads the run file, reading again on a failure a few times: the
/// steward's writer may be replacing it while it is read.
async fn read_run(path: &Path) -> anyhow::Result<Run> {
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
fn write_run(path: &Path, run: &Run) -> anyhow::Result<()> {
    let tmp = path.with_extension("jcprun.agent-tmp");
    std::fs::write(&tmp, run.to_bytes()).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

/// The chain after a continuation grant replaces the leaf: the
/// continuation takes the steered grant's place (same parent, §4.7), so a
/// root re-issue is a chain of its own.
fn continue_chain(chain: &[SignedGrant], cont: &SignedGrant) -> Vec<SignedGrant> {
    match (cont.grant().parent, chain.split_last()) {
        (Some(_), Some((_, above))) => above.iter().cloned().chain(std::iter::once(cont.clone())).collect(),
        _ => vec![cont.clone()],
    }
}

/// A steering of `steered` found in a run: the checkpoint, the amendment
/// citing it, and the continuation grant right after the amendment.
struct Steering {
    cp: SignedCheckpoint,
    am: SignedAmendment,
    cont: SignedGrant,
}

/// Finds the amendment of `steered` in the run and its continuation grant
/// (the record right after it). `None` while either is missing.
fn find_steering(run: &Run, steered: &ContentId) -> Option<Steering> {
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

/// Verifies a steering as the agent must before it follows it: the run's
/// verifier (which knows where each continuation began) admitted the
/// amendment and verified its continuation; the continuation re-binds the
/// steered grant (`verify_continuation`); and where the steered grant is
/// the run's own, the amendment verifies on its own (`verify_amendment`).
fn verify_steering(run: &Run, report: &RunReport, steered: &SignedGrant, s: &Steering) -> Result<u64, String> {
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
    steering::verify_continuation(steered, s.am.amendment(), &s.cont).map_err(|e| format!("[{}] {e}", e.code()))?;
    if run.grant().map(SignedGrant::id) == Some(steered.id()) {
        steering::verify_amendment(steered, &s.cp, &s.am).map_err(|e| format!("[{}] {e}", e.code()))?;
    }
    Ok(row.ceiling_uj)
}

/// Why the agent stopped, and how it says so.
struct Stop {
    why: &'static str,
    message: String,
    extra: serde_json::Value,
}

impl Stop {
    fn new(why: &'static str, message: impl Into<String>) -> Self {
        Self { why, message: message.into(), extra: serde_json::Value::Null }
    }
}

/// What the wait at a checkpoint came to.
enum Waited {
    Continued,
    Stopped(Stop),
}

struct Agent {
    json: bool,
    addr: Address,
    run_path: PathBuf,
    key: Keypair,
    chain: Vec<SignedGrant>,
    action: String,
    cost: Energy,
    interval: Duration,
    wait_timeout: Duration,
    /// The parent's pid at start, with `--stop-with-parent` (Unix).
    parent: Option<u32>,
    every: u64,
    actions: u64,
    client: Option<Client>,
    /// Whether the run ended on an endpoint failure.
    endpoint_error: bool,
    /// Fresh per process: the payloads of a resumed run differ from the last session's.
    session: [u8; 16],
    /// The run's cumulative spend (µJ) the agent declares: what it was
    /// debited, on top of the spend its run file already declared.
    spent: u64,
    step: u64,
    allowed: u64,
    since_checkpoint: u64,
}

impl Agent {
    fn leaf(&self) -> anyhow::Result<&SignedGrant> {
        self.chain.last().ok_or_else(|| coded("chain-empty", "the chain has no grant"))
    }

    fn say(&self, v: &serde_json::Value, human: impl FnOnce() -> String) -> anyhow::Result<()> {
        emit(self.json, v, human)
    }

    fn chain_ids(&self) -> Vec<ContentId> {
        self.chain.iter().map(SignedGrant::id).collect()
    }

    fn request(&self, step: u64) -> anyhow::Result<WireRequest> {
        let leaf = self.leaf()?;
        let frame = Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: leaf.id(),
            action: self.action.clone(),
            resource: leaf.grant().capability.resource,
            payload_hash: payload_of(&self.session, step),
            model: None,
        };
        let body = RequestBody {
            frame,
            chain: self.chain.clone(),
            cost: self.cost,
            money: None,
            label: None,
            args: None,
            continues: None,
            now: unix_now(),
        };
        Ok(body.sign(&self.key))
    }

    async fn call_once(&mut self, req: &WireRequest) -> Result<WireResponse, WireError> {
        if self.client.is_none() {
            self.client = Some(Client::connect(&self.addr).await?);
        }
        let Some(client) = self.client.as_mut() else {
            return Err(WireError::Stopped("no connection to the endpoint".into()));
        };
        match tokio::time::timeout(CALL_TIMEOUT, client.call(req)).await {
            Ok(r) => r,
            Err(_) => Err(WireError::Stopped(format!("no response within {} s", CALL_TIMEOUT.as_secs()))),
        }
    }

    /// Reports, as the holder, that an allowed action completed (§4.11), so
    /// the decision is settled rather than left unresolved in the record.
    async fn report_outcome(&mut self, receipt: ContentId) -> Result<(), WireError> {
        let feed =
            Feed::Outcome(SignedOutcome::sign(receipt, jcp_receipt::record::OutcomeStatus::Completed, &self.key));
        if self.client.is_none() {
            self.client = Some(Client::connect(&self.addr).await?);
        }
        let Some(client) = self.client.as_mut() else {
            return Err(WireError::Stopped("no connection to the endpoint".into()));
        };
        let ans = match tokio::time::timeout(CALL_TIMEOUT, client.feed(&feed)).await {
            Ok(a) => a?,
            Err(_) => return Err(WireError::Stopped(format!("no answer within {} s", CALL_TIMEOUT.as_secs()))),
        };
        if ans.admitted {
            Ok(())
        } else {
            Err(WireError::Refused { code: ans.code, message: format!("the outcome of {receipt}: {}", ans.message) })
        }
    }

    /// Sends a request; on a transport failure (the connection dropped
    /// while the agent waited at a checkpoint, say) it reconnects once and
    /// sends the *same* request: decided once (§11), it gets the same
    /// response and is not debited twice. A refused frame is not retried.
    async fn call(&mut self, req: &WireRequest) -> Result<WireResponse, WireError> {
        match self.call_once(req).await {
            Ok(r) => Ok(r),
            Err(e @ WireError::Refused { .. }) => Err(e),
            Err(_) => {
                self.client = None;
                self.call_once(req).await
            }
        }
    }

    fn decision_line(&self, step: u64, resp: &WireResponse) -> anyhow::Result<()> {
        let d = &resp.decision;
        let leaf = self.leaf()?.id();
        self.say(
            &json!({
                "event": "decision",
                "step": step,
                "grant": leaf,
                "verdict": if d.is_allow() { "allow" } else { "deny" },
                "reason": d.reason().map(Reason::as_str),
                "debited_uj": d.debited_uj,
                "budget_uj": d.budget_uj,
                "remaining_uj": d.budget_remaining_uj,
                "spent_uj": self.spent,
                "receipt": resp.receipt_id(),
            }),
            || {
                let verdict = match d.verdict {
                    Verdict::Allow => "allow".to_owned(),
                    Verdict::Deny(r) => format!("deny ({r})"),
                };
                format!(
                    "step {step:>5}  {verdict:<24}  debited {} µJ; {} of {} µJ remain",
                    d.debited_uj, d.budget_remaining_uj, d.budget_uj
                )
            },
        )
    }

    /// Switches to a verified continuation grant and says so.
    fn switch(&mut self, s: &Steering, ceiling: u64) -> anyhow::Result<()> {
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
    async fn checkpoint(&mut self) -> anyhow::Result<SignedCheckpoint> {
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
        let last_at = run
            .records()
            .iter()
            .filter_map(|r| match r {
                Record::Checkpoint(c) => Some(c.checkpoint().at),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let input = CheckpointInput {
            state: state_of(self.step),
            at: unix_now().max(last_at),
            spent: Some(Spent { uj: self.spent, provenance: self.cost.provenance }),
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
                "provenance": self.cost.provenance.as_str(),
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
                    self.cost.provenance,
                    self.run_path.display()
                )
            },
        )?;
        Ok(cp)
    }

    /// Waits for the amendment citing `cp` and its continuation grant,
    /// polling the run file; verifies them and switches.
    async fn wait_for_amendment(&mut self, cp: &SignedCheckpoint) -> anyhow::Result<Waited> {
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
    fn parent_gone(&self) -> Option<Stop> {
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
    fn revoked_while_waiting(&self) -> Option<Stop> {
        let mut dir = self.run_path.as_os_str().to_owned();
        dir.push(".revocations");
        let entries = std::fs::read_dir(PathBuf::from(dir)).ok()?;
        for e in entries.flatten() {
            let Ok(bytes) = std::fs::read(e.path()) else { continue };
            let Ok(rev) = jcp::revocation::SignedRevocation::from_bytes(&bytes) else { continue };
            let id = rev.revocation().grant_id;
            if let Some(g) = self.chain.iter().find(|g| g.id() == id && rev.check_authority(g).is_ok()) {
                let leaf = self.chain.last().map(SignedGrant::id);
                return Some(Stop {
                    why: "revoked",
                    message: if leaf == Some(g.id()) {
                        format!("stopped: grant {id} was revoked (revocation {} beside the run)", rev.id())
                    } else {
                        format!("stopped: grant {id} above the agent's grant in its chain was revoked (revocation {} beside the run)", rev.id())
                    },
                    extra: json!({"revocation": rev.id(), "revoked": id}),
                });
            }
        }
        None
    }

    /// On `superseded`: the continuation, if the run file has one by now.
    async fn follow_supersession(&mut self) -> anyhow::Result<Option<Stop>> {
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

    fn stop_on_deny(&self, reason: Reason, resp: &WireResponse) -> anyhow::Result<Stop> {
        let leaf = self.leaf()?.id();
        let d = &resp.decision;
        Ok(match reason {
            Reason::Revoked => Stop::new(
                "revoked",
                if self.chain.len() > 1 {
                    format!("stopped: grant {leaf} was revoked (it or a grant above it in the chain)")
                } else {
                    format!("stopped: grant {leaf} was revoked")
                },
            ),
            Reason::BudgetExceeded => Stop {
                why: "budget-exhausted",
                message: format!(
                    "stopped: budget exhausted: {} µJ remain, the next action costs {} µJ",
                    d.budget_remaining_uj, self.cost.uj
                ),
                extra: json!({"remaining_uj": d.budget_remaining_uj, "cost_uj": self.cost.uj}),
            },
            Reason::Expired => Stop::new("expired", format!("stopped: grant {leaf} expired")),
            other => Stop {
                why: "denied",
                message: format!("stopped: the endpoint denied step {} ({other})", self.step),
                extra: json!({"reason": other.as_str()}),
            },
        })
    }

    fn stopped(&self, stop: &Stop, code: u8) -> anyhow::Result<ExitCode> {
        let mut v = json!({
            "event": "stopped",
            "why": stop.why,
            "message": stop.message,
            "steps": self.step,
            "allowed": self.allowed,
            "spent_uj": self.spent,
            "grant": self.chain.last().map(SignedGrant::id),
        });
        if let (Some(m), serde_json::Value::Object(extra)) = (v.as_object_mut(), &stop.extra) {
            for (k, x) in extra {
                m.insert(k.clone(), x.clone());
            }
        }
        self.say(&v, || stop.message.clone())?;
        Ok(ExitCode::from(code))
    }

    /// The endpoint is unreachable, refused a frame, or stopped answering:
    /// exit 2 with the error's code and message (the stopped line is
    /// written by [`Agent::failed`]).
    fn endpoint_failed(&mut self, e: &WireError) -> anyhow::Result<ExitCode> {
        self.endpoint_error = true;
        Err(wire_err(e))
    }

    /// Any error ends the run with a stopped line too, so an event stream
    /// always ends in `stopped`.
    fn failed(&self, e: &anyhow::Error) -> anyhow::Result<()> {
        let code = e.downcast_ref::<CodedError>().map_or("error", |c| c.code.as_ref());
        let (why, message) = if self.endpoint_error {
            ("endpoint-error", format!("stopped: the endpoint at {} failed: [{code}] {e:#}", self.addr))
        } else {
            ("error", format!("stopped: [{code}] {e:#}"))
        };
        let stop = Stop { why, message, extra: json!({"code": code, "error": format!("{e:#}")}) };
        self.stopped(&stop, crate::out::ERROR).map(|_| ())
    }

    async fn go(&mut self) -> anyhow::Result<ExitCode> {
        if let Err(e) = Client::connect(&self.addr).await.map(|c| self.client = Some(c)) {
            return self.endpoint_failed(&e);
        }
        loop {
            if self.actions > 0 && self.allowed >= self.actions {
                let stop =
                    Stop::new("done", format!("done: {} actions allowed, {} µJ spent", self.allowed, self.spent));
                return self.stopped(&stop, CLEAN);
            }
            if let Some(stop) = self.parent_gone() {
                return self.stopped(&stop, FINDINGS);
            }
            self.step += 1;
            let req = self.request(self.step)?;
            let resp = match self.call(&req).await {
                Ok(r) => r,
                Err(e) => return self.endpoint_failed(&e),
            };
            if resp.decision.is_allow() {
                self.spent = self.spent.saturating_add(resp.decision.debited_uj);
                self.allowed += 1;
                self.since_checkpoint += 1;
            }
            self.decision_line(self.step, &resp)?;
            match resp.decision.verdict {
                Verdict::Allow => {
                    // The simulated work of the step, then its outcome.
                    tokio::time::sleep(self.interval).await;
                    if let Err(e) = self.report_outcome(resp.receipt_id()).await {
                        return self.endpoint_failed(&e);
                    }
                    let done = self.actions > 0 && self.allowed >= self.actions;
                    if self.every > 0 && self.since_checkpoint >= self.every && !done {
                        self.since_checkpoint = 0;
                        let cp = self.checkpoint().await?;
                        if let Waited::Stopped(stop) = self.wait_for_amendment(&cp).await? {
                            return self.stopped(&stop, FINDINGS);
                        }
                    }
                }
                Verdict::Deny(Reason::Superseded) => {
                    if let Some(stop) = self.follow_supersession().await? {
                        return self.stopped(&stop, FINDINGS);
                    }
                }
                Verdict::Deny(r) => {
                    let stop = self.stop_on_deny(r, &resp)?;
                    return self.stopped(&stop, FINDINGS);
                }
            }
        }
    }
}

/// Opens the run file (creating it under the leaf when absent) and returns
/// it with the chain the run is now under and the spend it declared.
fn open_run(path: &Path, chain: Vec<SignedGrant>) -> anyhow::Result<(Vec<SignedGrant>, u64)> {
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
    let mut chain = chain;
    for _ in 0..=run.records().len() {
        let Some(cur) = chain.last().map(SignedGrant::id) else { break };
        if report.active_grant == Some(cur) {
            return Ok((chain, report.latest_spent.map_or(0, |s| s.uj)));
        }
        let Some(s) = find_steering(&run, &cur) else { break };
        chain = continue_chain(&chain, &s.cont);
    }
    Err(coded(
        "run-no-active-grant",
        format!("{}: the run has no active grant the agent can follow (awaiting a continuation?)", path.display()),
    ))
}

fn run_demo(a: DemoArgs) -> anyhow::Result<ExitCode> {
    let addr = a.connect.parse::<Address>().map_err(|e| wire_err(&e))?;
    let key = read_key(&a.key)?;
    let chain = a.chain.iter().map(|p| read_grant(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let leaf = chain.last().ok_or_else(|| coded("chain-empty", "--chain needs at least one grant"))?;
    if leaf.grant().subject != key.did() {
        return Err(coded(
            "wrong-subject",
            format!("{} is {}, but the leaf grant's subject is {}", a.key.display(), key.did(), leaf.grant().subject),
        ));
    }
    let provenance = super::core::parse_provenance(&a.provenance)?;
    let actions = &leaf.grant().capability.actions;
    let action = match &a.action {
        Some(x) => x.clone(),
        None if actions.iter().any(|x| x == "read") => "read".to_owned(),
        None => actions.first().cloned().unwrap_or_else(|| "read".to_owned()),
    };
    let (chain, spent) = open_run(&a.run, chain)?;
    let mut agent = Agent {
        json: a.json,
        addr,
        run_path: a.run,
        key,
        chain,
        action,
        cost: Energy { uj: a.cost_uj, provenance, coverage: Coverage::Whole },
        interval: Duration::from_millis(a.interval_ms),
        wait_timeout: Duration::from_secs(a.wait_timeout_s),
        parent: if a.stop_with_parent { parent_pid() } else { None },
        every: a.checkpoint_every,
        actions: a.actions,
        client: None,
        endpoint_error: false,
        session: jcp::identity::fresh_nonce(),
        spent,
        step: 0,
        allowed: 0,
        since_checkpoint: 0,
    };
    let leaf = agent.leaf()?.clone();
    agent.say(
        &json!({
            "event": "started",
            "agent": agent.key.did(),
            "grant": leaf.id(),
            "chain": agent.chain_ids(),
            "budget_uj": leaf.grant().budget_uj,
            "spent_uj": agent.spent,
            "action": agent.action,
            "session": hex::encode(agent.session),
            "cost_uj": agent.cost.uj,
            "run": agent.run_path,
            "endpoint": agent.addr.to_string(),
        }),
        || {
            format!(
                "agent {} under grant {} (ceiling {} µJ, {} link(s)); run {}; asking {} for every action ({} {} µJ)",
                agent.key.did(),
                leaf.id(),
                leaf.grant().budget_uj,
                agent.chain.len(),
                agent.run_path.display(),
                agent.addr,
                agent.action,
                agent.cost.uj
            )
        },
    )?;
    let rt =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the async runtime")?;
    let res = rt.block_on(agent.go());
    if let Err(e) = &res {
        agent.failed(e)?;
    }
    res
}
