//! `jcp run live`: a steered demo run, supervised in the foreground by
//! `jcp-supervise` — the same code the console's live runs are — so a run
//! started here and one started in the console are the same thing. The
//! steward's key issues the agent a root grant; the run file goes into the
//! runs folder, where `jcp run amend` (or the console watching that
//! folder) steers it: the supervisor follows the run file and feeds each
//! amendment and revocation to its endpoint; the endpoint serves on a
//! local socket with `jcp backend demo` behind its gate; the agent's
//! events stream to stdout. SIGINT or SIGTERM stops the agent and closes
//! the endpoint (its record flushed and released); the command exits when
//! the agent ends: 0 when it was stopped here or finished, the agent's 1
//! when it stopped on a refusal (revoked, budget, timeout), 2 when it
//! crashed or failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use jcp_supervise::{Ended, Host, Issued, LiveRun, Observed, Observer, Settings, State};
use serde_json::{json, Value};

use crate::cmd::core::read_key;
use crate::out::{coded, emit, CLEAN, ERROR, FINDINGS};

/// `jcp` as a run's supervisor.
const JCP: Host = Host { program: "jcp", who: "jcp run live" };

// The flags of `jcp run live` (its help is the variant's doc line).
#[derive(Debug, Args)]
pub(super) struct LiveArgs {
    /// The steward's key file: it issues the run's root grant, and steers the run (an encrypted one is opened with the passphrase in the file JCP_PASSPHRASE_FILE names).
    #[allow(clippy::doc_markdown, reason = "clap help text, shown as written: not markdown")]
    #[arg(long)]
    steward_key: PathBuf,
    /// The runs folder: the run file `live-STAMP.jcprun` is written there (a console workspace's `runs` folder shows the run in that console).
    #[arg(long)]
    runs: PathBuf,
    /// Where the run's own folder `STAMP/` goes: the agent's key, the root grant, the endpoint's key, socket and record (default: `live` beside the runs folder, as in a console workspace; for `--runs .`, `./live`).
    #[arg(long)]
    live_dir: Option<PathBuf>,
    /// The root grant's budget, µJ.
    #[arg(long, default_value_t = Settings::DEFAULT_BUDGET_UJ)]
    budget_uj: u64,
    /// The agent writes a checkpoint and waits for the steward every K allowed actions.
    #[arg(long, default_value_t = Settings::DEFAULT_CHECKPOINT_EVERY)]
    checkpoint_every: u64,
    /// The most one call may reserve, µJ (the endpoint meters the work and debits its own figure).
    #[arg(long, default_value_t = Settings::DEFAULT_MAX_UJ)]
    max_uj: u64,
    /// The work each step runs behind the endpoint's gate (`jcp backend demo`: burn:MS, …), as `jcp agent demo --work`.
    #[arg(long, default_value = Settings::DEFAULT_WORK)]
    work: String,
    /// The agent's pause after each allowed action and its polling of the run file, ms.
    #[arg(long, default_value_t = Settings::DEFAULT_INTERVAL_MS)]
    interval_ms: u64,
    /// How long the agent waits for the steward at a checkpoint, s.
    #[arg(long, default_value_t = Settings::DEFAULT_WAIT_TIMEOUT_S)]
    wait_timeout_s: u64,
    /// One JSON object a line: `supervising`, the agent's events as it writes them, `ended`.
    #[arg(long)]
    json: bool,
}

/// What the supervisor's loop hears: the run's watchers, and the signals.
enum Heard {
    Event(Value),
    Stderr(String),
    Ended,
    Signal(&'static str),
}

fn supervise_err(e: &jcp_supervise::Error) -> anyhow::Error {
    coded(e.code(), e.to_string())
}

/// SIGTERM and SIGINT, installed now (before anything starts), heard on a
/// thread of their own.
#[cfg(unix)]
fn on_signals(tx: Sender<Heard>) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let rt =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the signal runtime")?;
    let (mut term, mut int) = rt
        .block_on(async {
            Ok::<_, std::io::Error>((signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?))
        })
        .context("installing the SIGTERM and SIGINT handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            rt.block_on(async move {
                loop {
                    let name = tokio::select! {
                        _ = term.recv() => "SIGTERM",
                        _ = int.recv() => "SIGINT",
                    };
                    if tx.send(Heard::Signal(name)).is_err() {
                        return;
                    }
                }
            });
        })
        .context("starting the signal thread")?;
    Ok(())
}

#[cfg(not(unix))]
fn on_signals(tx: Sender<Heard>) -> anyhow::Result<()> {
    let rt =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the signal runtime")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            while rt.block_on(tokio::signal::ctrl_c()).is_ok() {
                if tx.send(Heard::Signal("ctrl-c")).is_err() {
                    return;
                }
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}

/// The `jcp` to run as the agent and the backend: this very program.
fn jcp_program() -> anyhow::Result<PathBuf> {
    match std::env::current_exe() {
        Ok(p) => Ok(p),
        Err(_) => jcp_supervise::jcp_binary().map_err(|e| supervise_err(&e)),
    }
}

fn header(json: bool, run: &LiveRun, issued: &Issued, steward_key: &Path) -> anyhow::Result<()> {
    let g = issued.root.grant();
    let v = json!({
        "event": "supervising",
        "run": run.run_path(),
        "endpoint": run.endpoint(),
        "stream": run.stream(),
        "dir": run.dir(),
        "steward": g.issuer,
        "agent": run.agent(),
        "grant": issued.root.id(),
        "budget_uj": g.budget_uj,
        "pid": run.pid(),
    });
    emit(json, &v, || {
        let r = run.run_path().display();
        format!(
            "live run {r}\n  steward {} issued grant {} of {} to agent {}\n  endpoint {} recording to {}\n  steer it at each checkpoint: jcp run amend --run {r} --key {} --budget-uj N (the supervisor feeds it to the endpoint {})\n  Ctrl-C or SIGTERM stops the agent and closes the endpoint",
            g.issuer,
            issued.root.id(),
            jcp::energy::format_uj(g.budget_uj),
            run.agent(),
            run.endpoint(),
            run.stream().display(),
            steward_key.display(),
            run.endpoint()
        )
    })
}

/// How the command exits: 0 when stopped here; else the agent's own 0 or 1
/// when it stopped saying why; 2 when it crashed.
fn exit_code(state: State, exit: Option<Ended>, signalled: bool) -> u8 {
    match (state, exit.and_then(|e| e.code)) {
        _ if signalled => CLEAN,
        (State::Stopped, Some(0)) => CLEAN,
        (State::Stopped, Some(1)) => FINDINGS,
        _ => ERROR,
    }
}

/// `jcp run live`: issues, starts and supervises the run until its agent ends.
pub(super) fn live(a: LiveArgs) -> anyhow::Result<ExitCode> {
    let steward = read_key(&a.steward_key)?;
    let settings = Settings {
        budget_uj: a.budget_uj,
        checkpoint_every: a.checkpoint_every,
        max_uj: a.max_uj,
        work: a.work,
        interval_ms: a.interval_ms,
        wait_timeout_s: a.wait_timeout_s,
        ..Settings::default()
    };
    // `live` beside the runs folder as named (`runs` or `.`: here); both
    // absolute, so the steering commands it prints work from any folder.
    let live_dir = a.live_dir.unwrap_or_else(|| a.runs.parent().unwrap_or_else(|| Path::new("")).join("live"));
    let absolute = |p: &Path| std::path::absolute(p).with_context(|| format!("resolving {}", p.display()));
    let (runs, live_dir) = (absolute(&a.runs)?, absolute(&live_dir)?);
    let jcp = jcp_program()?;
    let (tx, heard) = mpsc::channel();
    on_signals(tx.clone())?;
    let issued = jcp_supervise::issue(&steward, &runs, &live_dir, &settings).map_err(|e| supervise_err(&e))?;
    let observer: Observer = Arc::new(move |o: Observed<'_>| {
        let _ = tx.send(match o {
            Observed::Event(v) => Heard::Event(v.clone()),
            Observed::Stderr(s) => Heard::Stderr(s.to_owned()),
            Observed::Ended(_) => Heard::Ended,
        });
    });
    let run = LiveRun::start(&jcp, &issued, &settings, JCP, &observer).map_err(|e| supervise_err(&e))?;
    let res = follow(a.json, &run, &issued, &a.steward_key, &heard);
    // Whatever happened, nothing is left running and the record is released.
    let stopped = run.stop();
    let signalled = res?;
    // What stopping added (the supervisor's last look at the run file).
    while let Ok(h) = heard.try_recv() {
        if let Heard::Event(v) = h {
            emit(a.json, &v, || jcp_supervise::event_text(&v))?;
        }
    }
    let s = run.snapshot();
    let code = exit_code(s.state, s.exit, signalled.is_some());
    let v = json!({
        "event": "ended",
        "state": s.state,
        "ended": s.ended,
        "exit": s.exit,
        "signal": signalled,
        "allowed": s.tally.allowed,
        "denied": s.tally.denied,
        "spent_uj": s.tally.spent_uj,
        "grant": s.tally.grant,
        "run": run.run_path(),
        "stream": run.stream(),
    });
    emit(a.json, &v, || {
        format!(
            "run ended: {}; {} allowed, {} denied, {} debited; the endpoint's record is {}",
            s.ended.as_deref().unwrap_or("ended"),
            s.tally.allowed,
            s.tally.denied,
            jcp::energy::format_uj(s.tally.spent_uj),
            run.stream().display()
        )
    })?;
    stopped.map_err(|e| supervise_err(&e))?;
    Ok(ExitCode::from(code))
}

/// Prints the header, then each event as it comes, until the agent ends;
/// a signal stops the run (the events it still writes are printed). The
/// signal's name, if one stopped it.
fn follow(
    json: bool,
    run: &LiveRun,
    issued: &Issued,
    steward_key: &Path,
    heard: &mpsc::Receiver<Heard>,
) -> anyhow::Result<Option<&'static str>> {
    header(json, run, issued, steward_key)?;
    let mut signalled = None;
    while let Ok(h) = heard.recv() {
        match h {
            Heard::Event(v) => emit(json, &v, || jcp_supervise::event_text(&v))?,
            Heard::Stderr(s) => eprint!("{s}"),
            Heard::Ended => break,
            Heard::Signal(name) if signalled.is_none() => {
                signalled = Some(name);
                eprintln!("jcp run live: {name}: stopping the agent and closing the endpoint");
                run.stop().map_err(|e| supervise_err(&e))?;
            }
            Heard::Signal(_) => {}
        }
    }
    Ok(signalled)
}
