//! Live runs: the demo long run on the console's embedded enforcement
//! endpoint (`jcp-wire`, §11), its agent (`jcp agent demo`) a child process
//! whose events, stderr and exit are watched, and stopping both. The
//! agent's work runs behind the endpoint's gate, in `jcp backend demo` (a
//! second child, the endpoint's [`ProcessBackend`]): the endpoint is the
//! holder that meters each call and charges that figure (§11 "the cost is
//! the holder's measurement"); the agent states no joules of its own.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use console_store::ItemKind;
use console_view::ipc::UiError;
use console_view::steward::{self as sv, AgentEventLine, LiveState, LiveView, RunRow};
use jcp::cbor::{ContentId, Value};
use jcp::decision::Gate;
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp::steering::Run;
use jcp_wire::backend::{ProcessBackend, ProcessOptions};
use jcp_wire::endpoint::{Address, Config, Endpoint};
use jcp_wire::message::Feed;

use super::key::key_err;
use super::{StewardState, LIVE_BUDGET_UJ, LIVE_CHECKPOINT_EVERY, LIVE_DIR, LIVE_MAX_UJ, LIVE_WORK};
use crate::error::{self, CmdResult};
use crate::state::{now_ms, AppState};

/// How many agent events a live run keeps.
const EVENTS_KEPT: usize = 400;

/// How the agent ended.
#[derive(Debug, Clone)]
struct Ended {
    code: Option<i32>,
    signal: Option<i32>,
}

/// A live run: the console's embedded endpoint and the agent child.
pub struct LiveRun {
    /// The workspace item.
    pub item_id: i64,
    /// The run file.
    pub run_path: PathBuf,
    /// The endpoint's record.
    pub stream: PathBuf,
    addr: String,
    agent: String,
    rt: tokio::runtime::Runtime,
    endpoint: Endpoint,
    /// The endpoint behind the gate (`jcp backend demo`), closed on stop.
    backend: Arc<ProcessBackend>,
    pid: u32,
    marker: AtomicU64,
    events: Arc<Mutex<Vec<serde_json::Value>>>,
    stderr: Arc<Mutex<String>>,
    ended: Arc<Mutex<Option<Ended>>>,
    stopping: AtomicBool,
    shut: AtomicBool,
}

impl std::fmt::Debug for LiveRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRun")
            .field("item_id", &self.item_id)
            .field("run_path", &self.run_path)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl LiveRun {
    pub(super) fn feed(&self, feed: Feed) -> CmdResult<()> {
        let ans = self
            .rt
            .block_on(self.endpoint.feed(feed))
            .map_err(|e| UiError::new(e.code(), format!("the live run's endpoint did not take it: {e}")))?;
        if ans.admitted {
            Ok(())
        } else {
            Err(UiError::new(
                "live.refused",
                format!("the live run's endpoint refused it ({}): {}", ans.code, ans.message),
            ))
        }
    }

    pub(super) fn next_marker(&self) -> u64 {
        self.marker.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(super) fn state(&self) -> LiveState {
        let ended = self.ended.lock().ok().and_then(|e| e.clone());
        let said_stopped = self.events.lock().ok().is_some_and(|e| {
            e.iter().any(|v| v["event"] == "stopped" && v["why"] != "error" && v["why"] != "endpoint-error")
        });
        match ended {
            None => LiveState::Running,
            Some(_) if said_stopped => LiveState::Stopped,
            Some(_) => LiveState::Crashed,
        }
    }

    pub(super) fn view(&self) -> LiveView {
        let events = self.events.lock().map(|e| e.clone()).unwrap_or_default();
        let mut allowed = 0u64;
        let mut denied = 0u64;
        let mut spent = 0u64;
        let mut grant = None;
        for e in &events {
            match e["event"].as_str() {
                Some("decision") => {
                    if e["verdict"] == "allow" {
                        allowed += 1;
                        spent = spent.saturating_add(e["debited_uj"].as_u64().unwrap_or(0));
                    } else {
                        denied += 1;
                    }
                    grant = e["grant"].as_str().map(str::to_owned).or(grant);
                }
                Some("started") => grant = e["grant"].as_str().map(str::to_owned),
                Some("continued") => grant = e["continuation"].as_str().map(str::to_owned),
                _ => {}
            }
        }
        let state = self.state();
        let ended = self.ended.lock().ok().and_then(|e| e.clone()).map(|e| {
            let said = events
                .iter()
                .rev()
                .find(|v| v["event"] == "stopped")
                .and_then(|v| v["message"].as_str().map(str::to_owned));
            let how = match (e.code, e.signal) {
                (Some(c), _) => format!("exit {c}"),
                (None, Some(s)) => format!("killed by signal {s}"),
                (None, None) => "ended".to_owned(),
            };
            match (state, said) {
                (LiveState::Stopped, Some(m)) => format!("{m} ({how})"),
                (_, Some(m)) => format!("the agent failed: {m} ({how})"),
                (_, None) if self.stopping.load(Ordering::Relaxed) => format!("stopped by the console ({how})"),
                (_, None) => format!("the agent ended without saying why ({how}): it crashed or was killed"),
            }
        });
        let stderr = (state == LiveState::Crashed)
            .then(|| self.stderr.lock().map(|s| s.clone()).unwrap_or_default())
            .filter(|s| !s.is_empty());
        let start = events.len().saturating_sub(60);
        let (metered, metered_note) = sv::metered_calls(&events);
        LiveView {
            state,
            endpoint: self.addr.clone(),
            stream: self.stream.display().to_string(),
            agent: self.agent.clone(),
            grant,
            allowed,
            denied,
            spent: console_view::format_uj(spent),
            metered,
            metered_note,
            events: events[start..].iter().map(sv::event_line).collect::<Vec<AgentEventLine>>(),
            ended,
            stderr,
        }
    }

    /// The latest call the endpoint metered, in a line (the energy view).
    pub(super) fn metered_line(&self) -> Option<String> {
        let events = self.events.lock().map(|e| e.clone()).unwrap_or_default();
        let (calls, _) = sv::metered_calls(&events);
        let name =
            self.run_path.file_stem().map_or_else(|| "live run".to_owned(), |s| s.to_string_lossy().into_owned());
        sv::metered_line(&name, &calls)
    }

    /// Stops the agent (SIGTERM, then SIGKILL after 3 s), shuts the
    /// endpoint down, flushing and releasing its record, and stops the
    /// backend behind its gate. Idempotent.
    pub fn stop(&self) {
        if self.shut.swap(true, Ordering::AcqRel) {
            return;
        }
        self.stopping.store(true, Ordering::Relaxed);
        let running = || self.ended.lock().is_ok_and(|e| e.is_none());
        if running() {
            signal(self.pid, false);
            let deadline = Instant::now() + Duration::from_secs(3);
            while running() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(25));
            }
            if running() {
                signal(self.pid, true);
            }
        }
        if let Err(e) = self.rt.block_on(self.endpoint.shutdown()) {
            eprintln!("jcp-console: the live run's endpoint did not close cleanly: {e}");
        }
        // The endpoint is held (its view stays), so its backend is not
        // dropped with it: stopped here, after the last call it could run.
        self.backend.close();
    }
}

#[cfg(target_os = "linux")]
fn signal(pid: u32, kill: bool) {
    let sig = if kill { rustix::process::Signal::KILL } else { rustix::process::Signal::TERM };
    if let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(p, sig);
    }
}

#[cfg(not(target_os = "linux"))]
fn signal(_pid: u32, _kill: bool) {}

/// The demo agent is the `jcp` command: `$JCP_BIN`, else beside the
/// console's executable (or one folder up, for test binaries), else on PATH.
pub fn jcp_binary() -> CmdResult<PathBuf> {
    if let Some(p) = std::env::var_os("JCP_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = exe.as_ref().and_then(|e| e.parent()) {
        candidates.push(dir.join("jcp"));
        if let Some(up) = dir.parent() {
            candidates.push(up.join("jcp"));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("jcp")));
    }
    candidates.into_iter().find(|c| c.is_file()).ok_or_else(|| {
        UiError::new(
            "live.no_agent",
            format!(
                "the demo agent is the `jcp` command, and none was found beside {} or on PATH: build it with `cargo build -p jcp-cli` (scripts/run.sh does), or set JCP_BIN",
                exe.map_or_else(|| "the console".to_owned(), |e| e.display().to_string())
            ),
        )
    })
}

fn io_err(what: &str, path: &Path, e: &impl std::fmt::Display) -> UiError {
    UiError::new("live.io", format!("{what} {}: {e}", path.display()))
}

/// What a live run starts from: its folder, the agent's key, the root grant
/// issued to the agent and the run file that carries it.
struct Issued {
    stamp: u64,
    dir: PathBuf,
    agent: Keypair,
    agent_key: PathBuf,
    resource: ContentId,
    root: SignedGrant,
    root_path: PathBuf,
    run_path: PathBuf,
}

/// The embedded endpoint of a live run, serving on its own runtime.
struct Serving {
    rt: tokio::runtime::Runtime,
    endpoint: Endpoint,
    backend: Arc<ProcessBackend>,
    bound: Address,
}

/// What the watcher threads of an agent fill in: its events (newest
/// [`EVENTS_KEPT`]), the tail of its stderr, how it ended.
struct Watched {
    pid: u32,
    events: Arc<Mutex<Vec<serde_json::Value>>>,
    stderr: Arc<Mutex<String>>,
    ended: Arc<Mutex<Option<Ended>>>,
}

/// Starts the demo long run: issues the agent a grant under the steward's
/// (unlocked) key, opens the embedded endpoint on a local socket with its
/// own record, and starts the agent (`jcp agent demo`) as a child process.
pub fn live_start(state: &AppState, st: &StewardState) -> CmdResult<RunRow> {
    let jcp = jcp_binary()?;
    let issued = issue_root(state, st)?;
    let stream = issued.dir.join("record.jcps");
    let serving = open_endpoint(&jcp, &issued, &stream)?;
    let child = spawn_agent(&jcp, &issued, &serving.bound)?;
    let label = format!("live run {} (demo agent, {} budget)", issued.stamp, console_view::format_uj(LIVE_BUDGET_UJ));
    let item_id = state.with_store(|s| {
        s.add_item(
            ItemKind::Run,
            &label,
            &issued.run_path.display().to_string(),
            &serde_json::json!({"source": "live", "stream": stream, "dir": issued.dir}),
            now_ms(),
        )
        .map_err(|e| error::store(&e))
    })?;
    let watched = watch_agent(child, &st.revision);
    let live = Arc::new(LiveRun {
        item_id,
        run_path: issued.run_path.clone(),
        stream,
        addr: serving.bound.to_string(),
        agent: issued.agent.did().to_string(),
        rt: serving.rt,
        endpoint: serving.endpoint,
        backend: serving.backend,
        pid: watched.pid,
        marker: AtomicU64::new(0),
        events: watched.events,
        stderr: watched.stderr,
        ended: watched.ended,
        stopping: AtomicBool::new(false),
        shut: AtomicBool::new(false),
    });
    st.live.lock().map_err(|_| error::poisoned("live runs"))?.insert(item_id, live.clone());
    st.revision.fetch_add(1, Ordering::Relaxed);
    record_start(state, &issued)?;
    Ok(RunRow {
        id: item_id,
        label,
        path: issued.run_path.display().to_string(),
        live: Some(live.state()),
        awaiting: false,
        mine: true,
        checkpoints: 0,
        verdict: Some(console_view::tags::Verdict::Clean),
        error: None,
    })
}

/// Step 1: the run's folder and agent key, the root grant (§4) the steward's
/// key issues the agent, written beside them and as a new run file (§4.7).
fn issue_root(state: &AppState, st: &StewardState) -> CmdResult<Issued> {
    let stamp = now_ms();
    let dir = state.workspace.join(LIVE_DIR).join(stamp.to_string());
    std::fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, &e))?;
    let agent = Keypair::generate();
    let agent_key = dir.join("agent.key");
    keystore::write_plain(&agent_key, &agent).map_err(|e| key_err(&e))?;
    let resource = ContentId::of(&Value::text("jcp console demo: research corpus"));
    let now_s = now_ms() / 1000;
    let root = st.with_key(|k| {
        Grant {
            issuer: k.did(),
            subject: agent.did(),
            capability: Capability { resource, actions: vec!["read".into()] },
            budget_uj: LIVE_BUDGET_UJ,
            budget_funds: None,
            caveats: Vec::new(),
            expiry: now_s + 24 * 3600,
            parent: None,
            delegate_depth: Some(0),
            nonce: jcp::identity::fresh_nonce(),
        }
        .sign(k)
        .map_err(|e| UiError::new(e.code(), e.to_string()))
    })?;
    let root_path = dir.join("root.jcp");
    std::fs::write(&root_path, root.to_bytes()).map_err(|e| io_err("cannot write", &root_path, &e))?;
    let run_path = st.runs_dir.join(format!("live-{stamp}.{}", jcp::steering::RUN_EXTENSION));
    Run::new(root.clone()).write(&run_path).map_err(|e| UiError::new(e.code(), e.to_string()))?;
    Ok(Issued { stamp, dir, agent, agent_key, resource, root, root_path, run_path })
}

/// Step 2: the embedded endpoint (§11), trusting the steward for the run's
/// resource, recording to `stream` under its own sealing key, serving on a
/// local socket from a runtime of its own, with `jcp backend demo` behind
/// its gate: the endpoint runs each allowed call there, meters it (the span
/// ladder over the backend's process tree) and charges that figure.
fn open_endpoint(jcp: &Path, issued: &Issued, stream: &Path) -> CmdResult<Serving> {
    let mut gate = Gate::new();
    gate.add_trust_root(issued.resource, issued.root.grant().issuer);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("live-endpoint")
        .enable_all()
        .build()
        .map_err(|e| UiError::new("live.runtime", format!("the endpoint's runtime did not start: {e}")))?;
    // A Unix socket where its path fits (108 bytes), else loopback TCP.
    let sock = issued.dir.join("endpoint.sock");
    let addr = if sock.as_os_str().len() < 100 { Address::Unix(sock) } else { Address::Tcp("127.0.0.1:0".into()) };
    let mut config = Config::new(stream);
    config.known_through = Some(0);
    // The endpoint's own key seals its record; kept beside it (owner-only) so
    // the record can be reopened by the same point (replay checks the sealer).
    let endpoint_key = Keypair::generate();
    keystore::write_plain(&issued.dir.join("endpoint.key"), &endpoint_key).map_err(|e| key_err(&e))?;
    // Not declared self-contained (§5.1): the console does not vouch for the
    // backend's process tree, so its figures say what they may be missing.
    let backend =
        ProcessBackend::spawn(jcp.to_path_buf(), vec!["backend".into(), "demo".into()], ProcessOptions::default())
            .map(Arc::new)
            .map_err(|e| UiError::new(e.code(), format!("the demo backend did not start: {e}")))?;
    let behind: Arc<dyn jcp_wire::backend::Backend> = backend.clone();
    let (endpoint, bound) = rt
        .block_on(async {
            let (endpoint, _report) = Endpoint::open(config, endpoint_key, gate, Some(behind))?;
            let (listener, bound) = addr.bind().await?;
            let ep = endpoint.clone();
            tokio::spawn(async move {
                if let Err(e) = ep.serve(listener).await {
                    eprintln!("jcp-console: the live endpoint stopped serving: {e}");
                }
            });
            Ok::<_, jcp_wire::WireError>((endpoint, bound))
        })
        .map_err(|e| UiError::new(e.code(), format!("the embedded endpoint did not start: {e}")))?;
    Ok(Serving { rt, endpoint, backend, bound })
}

/// Step 3: the agent, `jcp agent demo`, connected to the endpoint, with its
/// key, its chain, the run file it picks amendments up from and the work
/// each step asks the endpoint to run behind its gate (its stated cost only
/// a maximum: the endpoint meters it).
fn spawn_agent(jcp: &Path, issued: &Issued, bound: &Address) -> CmdResult<Child> {
    Command::new(jcp)
        .args(["agent", "demo", "--json", "--stop-with-parent", "--connect", &bound.to_string(), "--run"])
        .arg(&issued.run_path)
        .arg("--key")
        .arg(&issued.agent_key)
        .arg("--chain")
        .arg(&issued.root_path)
        .args([
            "--work",
            LIVE_WORK,
            "--max-uj",
            &LIVE_MAX_UJ.to_string(),
            "--checkpoint-every",
            &LIVE_CHECKPOINT_EVERY.to_string(),
            "--interval-ms",
            "250",
            "--wait-timeout-s",
            "3600",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| io_err("cannot start the demo agent", jcp, &e))
}

/// Step 4: threads that read the agent's events (one JSON object a line)
/// and stderr, and wait for its exit; each change bumps `revision`.
fn watch_agent(mut child: Child, revision: &Arc<AtomicU64>) -> Watched {
    let events = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(String::new()));
    let ended = Arc::new(Mutex::new(None));
    if let Some(out) = child.stdout.take() {
        let (events, revision) = (events.clone(), revision.clone());
        let _ =
            std::thread::Builder::new().name("agent-stdout".into()).spawn(move || read_events(out, &events, &revision));
    }
    if let Some(err) = child.stderr.take() {
        let stderr = stderr.clone();
        let _ = std::thread::Builder::new().name("agent-stderr".into()).spawn(move || read_stderr(err, &stderr));
    }
    let pid = child.id();
    {
        let ended = ended.clone();
        let revision = revision.clone();
        let _ = std::thread::Builder::new().name("agent-wait".into()).spawn(move || {
            let status = child.wait();
            #[cfg(unix)]
            let signal = status.as_ref().ok().and_then(std::os::unix::process::ExitStatusExt::signal);
            #[cfg(not(unix))]
            let signal = None;
            if let Ok(mut e) = ended.lock() {
                *e = Some(Ended { code: status.ok().and_then(|s| s.code()), signal });
            }
            revision.fetch_add(1, Ordering::Relaxed);
        });
    }
    Watched { pid, events, stderr, ended }
}

/// The agent's stdout: each line an event (a line that is not JSON is kept
/// as an `output` event), the newest [`EVENTS_KEPT`] kept.
fn read_events(out: impl Read, events: &Mutex<Vec<serde_json::Value>>, revision: &AtomicU64) {
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        let v = serde_json::from_str(&line).unwrap_or_else(|_| serde_json::json!({"event": "output", "message": line}));
        if let Ok(mut e) = events.lock() {
            e.push(v);
            let excess = e.len().saturating_sub(EVENTS_KEPT);
            e.drain(..excess);
        }
        revision.fetch_add(1, Ordering::Relaxed);
    }
}

/// The agent's stderr: its last 4000 bytes or so (cut on a character boundary).
fn read_stderr(mut err: impl Read, stderr: &Mutex<String>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = err.read(&mut buf) {
        if n == 0 {
            break;
        }
        if let Ok(mut s) = stderr.lock() {
            s.push_str(&String::from_utf8_lossy(&buf[..n]));
            let cut = s.len().saturating_sub(4000);
            let cut = (cut..s.len()).find(|i| s.is_char_boundary(*i)).unwrap_or(0);
            s.drain(..cut);
        }
    }
}

/// Step 5: the start in the console's history, signed by the grant's issuer.
fn record_start(state: &AppState, issued: &Issued) -> CmdResult<()> {
    let root = &issued.root;
    let message = format!(
        "started the demo run: grant {} of {} to agent {}",
        root.id(),
        console_view::format_uj(LIVE_BUDGET_UJ),
        issued.agent.did()
    );
    state.with_store(|s| {
        s.record_action(
            now_ms(),
            "live_start",
            &issued.run_path.display().to_string(),
            &serde_json::json!({"signed_by": root.grant().issuer.to_string(), "message": message}),
        )
        .map(|_| ())
        .map_err(|e| error::store(&e))
    })
}

/// Stops a live run (its agent and endpoint); the run file and record stay.
pub fn live_stop(state: &AppState, st: &StewardState, id: i64) -> CmdResult<LiveView> {
    let live =
        st.live_of(id).ok_or_else(|| UiError::new("live.unknown", format!("run {id} is not live in this console")))?;
    live.stop();
    st.revision.fetch_add(1, Ordering::Relaxed);
    let v = live.view();
    state.with_store(|s| {
        s.record_action(
            now_ms(),
            "live_stop",
            &live.run_path.display().to_string(),
            &serde_json::json!({"message": "stopped the live run from the console"}),
        )
        .map(|_| ())
        .map_err(|e| error::store(&e))
    })?;
    Ok(v)
}
