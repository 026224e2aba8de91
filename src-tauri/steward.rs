//! The steward's side of the console: the key (kept here, in Rust, for an
//! unlocked session; never sent to the web view), the runs folder (watched),
//! the write actions (approve, amend, revoke) and live runs — supervised by
//! `jcp-supervise` (the embedded enforcement endpoint and the demo agent as
//! a child process), as `jcp run live` supervises them.
//! Protocol rules live in the crates (`jcp::steering`, `console_view::steward`);
//! this module composes them, writes files, and keeps state.
//!
//! One module per thing the steward does: [`key`] (the signing key),
//! [`runs`] (reading runs: the watched folder, the overview, a run's view),
//! [`amend`] (approve or amend at a checkpoint, §4.7), [`revoke`] (§4.3),
//! [`settle`] (unresolved decisions, §4.11), [`live`] (a live run, forwarded
//! to `jcp-supervise`), [`commands`] (the Tauri commands) and [`attention`]
//! (announcing a checkpoint while the window is in the background).

pub mod amend;
pub mod attention;
pub mod commands;
pub mod gateway;
pub mod key;
pub mod live;
pub mod revoke;
pub mod runs;
pub mod settle;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use console_view::ipc::UiError;
use console_view::steward::{LiveState, SignedAction};
use jcp::identity::Keypair;

use crate::error::{self, CmdResult};
use crate::state::{now_ms, AppState};

pub use amend::{amend, preview};
pub use attention::start_attention;
pub use gateway::gateway_prepare;
pub use key::{key_create, key_import, key_lock, key_status, key_unlock};
pub use live::{jcp_binary, live_start, live_stop, LiveRun};
pub use revoke::{revoke, revoke_plan};
pub use runs::{overview, run_view, scan_runs, start_watcher};
pub use settle::{settle, unresolved};

/// The key file's name in the workspace.
pub const KEY_FILE: &str = "steward.key";
/// The runs folder's name in the workspace.
pub const RUNS_DIR: &str = "runs";
/// Where live runs keep their endpoint record, agent key and chain.
pub const LIVE_DIR: &str = "live";
/// A demo live run's budget, µJ: `jcp-supervise`'s default (100 J). The
/// run's other settings are its defaults too ([`jcp_supervise::Settings`]).
pub const LIVE_BUDGET_UJ: u64 = jcp_supervise::Settings::DEFAULT_BUDGET_UJ;

/// The steward's state: the key and the live runs.
#[derive(Debug)]
pub struct StewardState {
    /// The key file.
    pub key_path: PathBuf,
    /// The unlocked key, for this session only, locked again after an idle time.
    key: Mutex<keystore::Held>,
    /// The runs folder.
    pub runs_dir: PathBuf,
    /// Live runs, by workspace item id.
    live: Mutex<HashMap<i64, Arc<LiveRun>>>,
    /// Bumped when a run file or a revocation beside one changes.
    pub revision: Arc<AtomicU64>,
    /// The work factor new key files get (tests lower it).
    pub work_factor: u8,
}

impl StewardState {
    /// The steward's state for the workspace at `dir` (creates the runs folder).
    pub fn new(dir: &Path) -> Self {
        let runs_dir = dir.join(RUNS_DIR);
        if let Err(e) = std::fs::create_dir_all(&runs_dir) {
            eprintln!("jcp-console: the runs folder {} could not be created: {e}", runs_dir.display());
        }
        let work_factor = std::env::var("JCP_KEY_WORK_FACTOR")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(keystore::DEFAULT_WORK_FACTOR);
        Self {
            key_path: dir.join(KEY_FILE),
            key: Mutex::new(keystore::Held::new(keystore::Held::idle_from_env())),
            runs_dir,
            live: Mutex::new(HashMap::new()),
            revision: Arc::new(AtomicU64::new(1)),
            work_factor,
        }
    }

    fn with_key<T>(&self, f: impl FnOnce(&Keypair) -> CmdResult<T>) -> CmdResult<T> {
        let mut held = self.key.lock().map_err(|_| error::poisoned("key"))?;
        match held.use_at(std::time::Instant::now()) {
            Some(k) => f(k),
            // No key at all is not a locked one: say which, and what to do.
            None if !self.key_path.exists() => Err(UiError::new(
                "key.missing",
                format!(
                    "there is no steward key yet ({}): create one or import one (Steward → Key) before signing; nothing was signed",
                    self.key_path.display()
                ),
            )),
            None => Err(UiError::new(
                "key.locked",
                "the steward's key is locked: unlock it (Steward → Key) before signing; nothing was signed",
            )),
        }
    }

    fn live_of(&self, id: i64) -> Option<Arc<LiveRun>> {
        self.live.lock().ok().and_then(|l| l.get(&id).cloned())
    }

    /// Stops every live run: SIGTERM to each agent, then its endpoint is
    /// shut down (its record flushed and released). Called when the console closes.
    /// Each running live run's latest metered call, in words (the energy
    /// view's line under its windows).
    pub fn metered_lines(&self) -> Vec<String> {
        let runs: Vec<Arc<LiveRun>> = self.live.lock().map(|l| l.values().cloned().collect()).unwrap_or_default();
        runs.iter().filter(|r| r.state() == LiveState::Running).filter_map(|r| r.metered_line()).collect()
    }

    pub fn stop_all(&self) {
        let runs: Vec<Arc<LiveRun>> = self.live.lock().map(|l| l.values().cloned().collect()).unwrap_or_default();
        for r in runs {
            r.stop();
        }
    }
}

/// Records a signed action in the console's history (the steward's
/// actions table), under the file it was signed for.
fn record(state: &AppState, subject: &str, done: &SignedAction) -> CmdResult<()> {
    state.with_store(|s| {
        s.record_action(now_ms(), done.action.as_str(), subject, &serde_json::to_value(done).unwrap_or_default())
            .map(|_| ())
            .map_err(|e| error::store(&e))
    })
}
