//! `jcp agent demo`: a long agent run that asks an enforcement endpoint
//! for every action (spec §11) and is steered at checkpoints (§4.7, C21).
//!
//! The agent's work runs behind the point: each step's request carries the
//! work (`--work`, e.g. `burn:50`) as its arguments, with a note of the
//! session and the step so no two requests are byte-identical (§11: two
//! byte-identical requests are one request). The agent states no joules of
//! its own (§11 "the cost is the holder's measurement"): its stated cost is
//! only the most a call may reserve (`--max-uj`, 0 = none stated), graded
//! `Estimator` with no reading. The endpoint — the holder that runs the
//! work — meters it, charges the figure and relays the reply with the
//! sealed charge receipt; the agent verifies that receipt and adds what it
//! debited to its cumulative spend, which its checkpoints state. The
//! endpoint records each call's outcome with its charge, so the agent
//! reports none. A call lost behind the gate stops the agent (exit 1): its
//! decision stays unresolved (§4.11), never reported by the agent.
//!
//! Every `K` allowed actions the agent commits a signed checkpoint to its
//! run file, stating the cumulative spend it has been debited, and waits —
//! polling the file — for the steward's amendment citing it; it then
//! verifies the amendment and the continuation grant and goes on under the
//! continuation. While it waits, a revocation of a grant of its chain
//! written beside the run (`<run>.revocations/`) stops it. It stops on
//! `revoked`, on `superseded` with no continuation in its run file, on
//! `budget-exceeded`, on any other deny, on a lost call or a refused
//! charge, or when the wait times out (exit 1); when the endpoint is
//! unreachable, refuses a frame or sends no reply (an endpoint without a
//! backend; exit 2); after `--actions N` allowed actions (exit 0).
//!
//! The agent in modules, one per part of its procedure: [`wire`] (each
//! action asked of the endpoint, §11, and its relayed, metered reply),
//! [`checkpoint`] (committing a checkpoint and following the steward's
//! amendment, §4.7), [`steering`] (the run file: reading, writing, finding
//! and verifying a steering) and [`stop`] (why the agent stopped, and how it
//! says so).

mod checkpoint;
mod steering;
mod stop;
mod wire;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use jcp::cbor::ContentId;
use jcp::decision::{Reason, Verdict};
use jcp::energy::Provenance;
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp_wire::client::Client;
use jcp_wire::endpoint::Address;
use jcp_wire::WireError;
use serde_json::json;

use super::core::{read_grant, read_key};
use crate::out::{coded, emit, CLEAN, FINDINGS};

use self::steering::open_run;
use self::stop::{Stop, Waited};
use self::wire::Relayed;

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
    /// A long run: asks the endpoint for every action, whose work runs behind its gate (`jcp serve --backend`), metered and charged there; checkpoints every K allowed actions and waits for the steward's amendment.
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
    /// The work each step asks the endpoint behind the gate to run: the request's arguments (for `jcp backend demo`: burn:MS, thread:MS, child:MS, echo:TEXT, …; docs/backend-protocol.md). A second line naming the session and the step follows it, so no two requests are the same.
    #[arg(long, default_value = "burn:50")]
    work: String,
    /// The most one call may reserve, µJ: the request's stated cost, only a ceiling (the endpoint meters the work and debits its own figure, §11); 0 = none stated. `--cost-uj` is its old name.
    #[arg(long, alias = "cost-uj", default_value_t = 0)]
    max_uj: u64,
    /// The action each step asks for (default: `read` where granted, else the grant's first action).
    #[arg(long)]
    action: Option<String>,
    /// The pause after each allowed action and the run file's polling interval, ms.
    #[arg(long, default_value_t = 200)]
    interval_ms: u64,
    /// How long to wait for the endpoint's relayed reply after an allow, s (an endpoint without a backend sends none).
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    reply_timeout_s: u64,
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
#[cfg_attr(unix, allow(clippy::unnecessary_wraps, reason = "elsewhere than on Unix there is no parent pid: `None`"))]
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

struct Agent {
    json: bool,
    addr: Address,
    run_path: PathBuf,
    key: Keypair,
    chain: Vec<SignedGrant>,
    action: String,
    /// The work each step runs behind the gate (`--work`).
    work: String,
    /// The most one call may reserve (`--max-uj`; 0 = none stated).
    max_uj: u64,
    interval: Duration,
    reply_timeout: Duration,
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
    /// The floor of the grades of what it was debited (§5.3: aggregation
    /// takes the floor); `None` before anything was debited or declared.
    spent_grade: Option<Provenance>,
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
            match resp.decision.verdict {
                Verdict::Allow => {
                    if let Some(stop) = self.allowed_step(&resp).await? {
                        return self.stopped(&stop, FINDINGS);
                    }
                    tokio::time::sleep(self.interval).await;
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
                    self.decision_line(self.step, &resp, None)?;
                    if let Some(stop) = self.follow_supersession().await? {
                        return self.stopped(&stop, FINDINGS);
                    }
                }
                Verdict::Deny(r) => {
                    self.decision_line(self.step, &resp, None)?;
                    let stop = self.stop_on_deny(r, &resp)?;
                    return self.stopped(&stop, FINDINGS);
                }
            }
        }
    }

    /// An allowed step: the endpoint ran its work behind the gate; the
    /// relayed reply carries the charge receipt of what it metered. The
    /// debit (the charge; a lost call's reservation, which stays debited)
    /// joins the cumulative spend. A stop when the call cannot be followed
    /// by another (lost, charge refused, …).
    async fn allowed_step(&mut self, resp: &jcp_wire::message::WireResponse) -> anyhow::Result<Option<Stop>> {
        let reply = match self.reply(self.step).await {
            Ok(r) => r,
            Err(e) => {
                self.endpoint_error = true;
                return Err(wire_err(&e));
            }
        };
        let relayed = Relayed::read(resp, reply, self.step)?;
        self.spent = self.spent.saturating_add(relayed.debited_uj);
        let grade = relayed.provenance();
        self.spent_grade = Some(self.spent_grade.map_or(grade, |g| g.min(grade)));
        self.allowed += 1;
        self.since_checkpoint += 1;
        self.decision_line(self.step, resp, Some(&relayed))?;
        Ok(relayed.stop(self.step, resp.decision.debited_uj, resp.receipt_id()))
    }
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
    let actions = &leaf.grant().capability.actions;
    let action = match &a.action {
        Some(x) => x.clone(),
        None if actions.iter().any(|x| x == "read") => "read".to_owned(),
        None => actions.first().cloned().unwrap_or_else(|| "read".to_owned()),
    };
    let (chain, declared) = open_run(&a.run, chain)?;
    let mut agent = Agent {
        json: a.json,
        addr,
        run_path: a.run,
        key,
        chain,
        action,
        work: a.work,
        max_uj: a.max_uj,
        interval: Duration::from_millis(a.interval_ms),
        reply_timeout: Duration::from_secs(a.reply_timeout_s),
        wait_timeout: Duration::from_secs(a.wait_timeout_s),
        parent: if a.stop_with_parent { parent_pid() } else { None },
        every: a.checkpoint_every,
        actions: a.actions,
        client: None,
        endpoint_error: false,
        session: jcp::identity::fresh_nonce(),
        spent: declared.map_or(0, |s| s.uj),
        spent_grade: declared.map(|s| s.provenance),
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
            "work": agent.work,
            "max_uj": agent.max_uj,
            "run": agent.run_path,
            "endpoint": agent.addr.to_string(),
        }),
        || {
            format!(
                "agent {} under grant {} (ceiling {} µJ, {} link(s)); run {}; asking {} for every action ({} `{}`, run and metered behind its gate; {})",
                agent.key.did(),
                leaf.id(),
                leaf.grant().budget_uj,
                agent.chain.len(),
                agent.run_path.display(),
                agent.addr,
                agent.action,
                agent.work,
                if agent.max_uj == 0 {
                    "no stated maximum".to_owned()
                } else {
                    format!("at most {} µJ a call", agent.max_uj)
                }
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
