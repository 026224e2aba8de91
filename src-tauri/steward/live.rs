//! Live runs in the console: the supervision itself — issuing the run's
//! grant, the embedded enforcement endpoint (§11) with `jcp backend demo`
//! behind its gate, the agent (`jcp agent demo`) as a watched child,
//! feeding and stopping — is `jcp-supervise`'s, the same as `jcp run live`;
//! this module forwards to it, records the run in the workspace and the
//! steward's history, and shows the run as the window's [`LiveView`].

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use console_store::ItemKind;
use console_view::ipc::UiError;
use console_view::steward::{self as sv, AgentEventLine, LiveState, LiveView, RunRow};
use jcp_supervise::{Host, Issued, Observed, Observer, Settings, State};
use jcp_wire::message::Feed;

use super::{StewardState, LIVE_DIR};
use crate::error::{self, CmdResult};
use crate::state::{now_ms, AppState};

/// The console as a run's supervisor.
const CONSOLE: Host = Host { program: "jcp-console", who: "the console" };

/// A supervision failure as the window sees it: the crate's code and message.
fn live_err(e: &jcp_supervise::Error) -> UiError {
    UiError::new(e.code(), e.to_string())
}

/// A live run: the supervised run and its workspace item.
pub struct LiveRun {
    /// The workspace item.
    pub item_id: i64,
    run: jcp_supervise::LiveRun,
}

impl std::fmt::Debug for LiveRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRun").field("item_id", &self.item_id).field("run", &self.run).finish()
    }
}

fn live_state(s: State) -> LiveState {
    match s {
        State::Running => LiveState::Running,
        State::Stopped => LiveState::Stopped,
        State::Crashed => LiveState::Crashed,
    }
}

impl LiveRun {
    /// The run file.
    pub fn run_path(&self) -> PathBuf {
        self.run.run_path().to_path_buf()
    }

    pub(super) fn feed(&self, feed: Feed) -> CmdResult<()> {
        self.run.feed(feed).map_err(|e| live_err(&e))
    }

    pub(super) fn next_marker(&self) -> u64 {
        self.run.next_marker()
    }

    pub(super) fn state(&self) -> LiveState {
        live_state(self.run.state())
    }

    pub(super) fn view(&self) -> LiveView {
        let s = self.run.snapshot();
        let start = s.events.len().saturating_sub(60);
        let (metered, metered_note) = sv::metered_calls(&s.events);
        LiveView {
            state: live_state(s.state),
            endpoint: self.run.endpoint().to_owned(),
            stream: self.run.stream().display().to_string(),
            stream_handle: String::new(),
            agent: self.run.agent().to_owned(),
            grant: s.tally.grant,
            allowed: s.tally.allowed,
            denied: s.tally.denied,
            spent: console_view::format_uj(s.tally.spent_uj),
            metered,
            metered_note,
            events: s.events[start..].iter().map(sv::event_line).collect::<Vec<AgentEventLine>>(),
            events_first: s.events_total.saturating_sub((s.events.len() - start) as u64) + 1,
            ended: s.ended,
            stderr: s.stderr,
        }
    }

    /// The latest call the endpoint metered, in a line (the energy view).
    pub(super) fn metered_line(&self) -> Option<String> {
        let (calls, _) = sv::metered_calls(&self.run.events());
        let name =
            self.run.run_path().file_stem().map_or_else(|| "live run".to_owned(), |s| s.to_string_lossy().into_owned());
        sv::metered_line(&name, &calls)
    }

    /// Stops the agent (SIGTERM, then SIGKILL after 3 s), shuts the
    /// endpoint down, flushing and releasing its record, and stops the
    /// backend behind its gate. Idempotent.
    pub fn stop(&self) {
        if let Err(e) = self.run.stop() {
            eprintln!("{}: {e}", CONSOLE.program);
        }
    }
}

/// The demo agent is the `jcp` command: `$JCP_BIN`, else beside the
/// console's executable (or one folder up, for test binaries), else on PATH.
pub fn jcp_binary() -> CmdResult<PathBuf> {
    jcp_supervise::jcp_binary().map_err(|e| live_err(&e))
}

/// Starts the demo long run (`jcp-supervise`): issues the agent a grant
/// under the steward's (unlocked) key, opens the embedded endpoint on a
/// local socket with its own record, and starts the agent as a child
/// process; then records it in the workspace and the history.
pub fn live_start(state: &AppState, st: &StewardState) -> CmdResult<RunRow> {
    let jcp = jcp_binary()?;
    let settings = Settings::default();
    let live_dir = state.workspace.join(LIVE_DIR);
    let issued =
        st.with_key(|k| jcp_supervise::issue(k, &st.runs_dir, &live_dir, &settings).map_err(|e| live_err(&e)))?;
    let revision = st.revision.clone();
    // Each event and the end bump the revision the window polls.
    let observer: Observer = Arc::new(move |o: Observed<'_>| {
        if !matches!(o, Observed::Stderr(_)) {
            revision.fetch_add(1, Ordering::Relaxed);
        }
    });
    let run = jcp_supervise::LiveRun::start(&jcp, &issued, &settings, CONSOLE, &observer).map_err(|e| live_err(&e))?;
    let label =
        format!("live run {} (demo agent, {} budget)", issued.stamp, console_view::format_uj(settings.budget_uj));
    let added = state.with_store(|s| {
        s.add_item(
            ItemKind::Run,
            &label,
            &issued.run_path.display().to_string(),
            &serde_json::json!({"source": "live", "stream": issued.stream(), "dir": issued.dir}),
            now_ms(),
        )
        .map_err(|e| error::store(&e))
    });
    let item_id = match added {
        Ok(id) => id,
        Err(e) => {
            let _ = run.stop();
            return Err(e);
        }
    };
    let live = Arc::new(LiveRun { item_id, run });
    st.live.lock().map_err(|_| error::poisoned("live runs"))?.insert(item_id, live.clone());
    st.revision.fetch_add(1, Ordering::Relaxed);
    record_start(state, &issued, settings.budget_uj)?;
    Ok(RunRow {
        id: item_id,
        label,
        path: issued.run_path.display().to_string(),
        live: Some(live.state()),
        awaiting: false,
        status: console_view::steward::RunStatus::Running,
        mine: true,
        checkpoints: 0,
        verdict: Some(console_view::tags::Verdict::Clean),
        error: None,
    })
}

/// The start in the console's history, signed by the grant's issuer.
fn record_start(state: &AppState, issued: &Issued, budget_uj: u64) -> CmdResult<()> {
    let root = &issued.root;
    let message = format!(
        "started the demo run: grant {} of {} to agent {}",
        root.id(),
        console_view::format_uj(budget_uj),
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
    let mut v = live.view();
    v.stream_handle = state.handles.grant(std::path::Path::new(&v.stream));
    state.with_store(|s| {
        s.record_action(
            now_ms(),
            "live_stop",
            &live.run_path().display().to_string(),
            &serde_json::json!({"message": "stopped the live run from the console"}),
        )
        .map(|_| ())
        .map_err(|e| error::store(&e))
    })?;
    Ok(v)
}
