//! # jcp-supervise — a steered run, supervised (spec §4.7, §11)
//!
//! What starts and watches a live demo run, with no UI: the `jcp run live`
//! command and the console's steward both call it, so a run started from
//! either is the same thing.
//!
//! 1. [`issue`]: the run's folder and agent key, the root grant (§4) the
//!    steward's key issues the agent, written beside them, and a new run
//!    file (§4.7) in the runs folder — where the steward steers it.
//! 2. [`LiveRun::start`]: the enforcement endpoint (`jcp-wire`, §11) on a
//!    local socket, trusting the steward for the run's resource, with
//!    `jcp backend demo` behind its gate (the holder that runs, meters and
//!    charges each call: the agent states no joules of its own); then the
//!    agent, `jcp agent demo`, as a child process whose events (one JSON
//!    object a line), stderr and exit are watched and told to an
//!    [`Observer`].
//! 3. [`LiveRun::feed`]: a revocation or an amendment admitted by the
//!    endpoint (recorded there before it is applied); [`LiveRun::stop`]:
//!    the agent stopped, the endpoint's record flushed and released, the
//!    backend stopped.
//!
//! [`LiveRun::snapshot`] is the run as a supervisor reports it: its
//! [`State`], the agent's events and their [`Tally`], and how it ended in
//! words. [`event_text`] puts one event in a line for a terminal.
//!
//! One error enum, [`Error`], whose [`Error::code`] is the stable code a
//! caller shows (`live.no_agent`, `live.io`, `live.runtime`,
//! `live.refused`, or the key store's, the core's or the wire's own).

#![warn(missing_docs)]

mod agent;
mod binary;
mod endpoint;
mod error;
pub mod follow;
mod issue;
mod run;
mod summary;
mod text;

use std::sync::Arc;

pub use binary::jcp_binary;
pub use error::Error;
pub use issue::{issue, Issued};
pub use run::LiveRun;
pub use summary::{Snapshot, State, Tally};
pub use text::event_text;

/// How many agent events a live run keeps (the newest).
pub const EVENTS_KEPT: usize = 400;
/// How much of the agent's stderr a live run keeps (its last bytes).
pub const STDERR_KEPT: usize = 4000;

/// A live run's settings: its budget and how its agent works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The root grant's budget, µJ.
    pub budget_uj: u64,
    /// Allowed actions between checkpoints.
    pub checkpoint_every: u64,
    /// The most one call may reserve, µJ: the agent's stated maximum, so a
    /// call lost behind the gate leaves this much debited and unresolved
    /// rather than the whole remainder.
    pub max_uj: u64,
    /// The work each step runs behind the endpoint's gate (`jcp backend
    /// demo`'s command, e.g. `burn:50`).
    pub work: String,
    /// The agent's pause after each allowed action and its polling of the
    /// run file, ms.
    pub interval_ms: u64,
    /// How long the agent waits for the steward at a checkpoint, s.
    pub wait_timeout_s: u64,
    /// The grant's resource, named by the content id of this text.
    pub resource: String,
    /// How long the root grant lasts from its issue, s.
    pub expiry_s: u64,
}

impl Settings {
    /// The default budget, µJ (100 J: each call's work is metered, at
    /// tenths of a joule with the default estimate).
    pub const DEFAULT_BUDGET_UJ: u64 = 100_000_000;
    /// The default checkpoint interval, allowed actions.
    pub const DEFAULT_CHECKPOINT_EVERY: u64 = 5;
    /// The default most a call may reserve, µJ (5 J, far above what a step
    /// is metered at).
    pub const DEFAULT_MAX_UJ: u64 = 5_000_000;
    /// The default work of a step: 50 ms of CPU, well above the 10 ms grain
    /// of the /proc CPU clock the endpoint's span reads.
    pub const DEFAULT_WORK: &'static str = "burn:50";
    /// The default pause after each allowed action, ms.
    pub const DEFAULT_INTERVAL_MS: u64 = 250;
    /// The default wait for the steward at a checkpoint, s (an hour).
    pub const DEFAULT_WAIT_TIMEOUT_S: u64 = 3600;
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            budget_uj: Self::DEFAULT_BUDGET_UJ,
            checkpoint_every: Self::DEFAULT_CHECKPOINT_EVERY,
            max_uj: Self::DEFAULT_MAX_UJ,
            work: Self::DEFAULT_WORK.to_owned(),
            interval_ms: Self::DEFAULT_INTERVAL_MS,
            wait_timeout_s: Self::DEFAULT_WAIT_TIMEOUT_S,
            resource: "jcp console demo: research corpus".to_owned(),
            expiry_s: 24 * 3600,
        }
    }
}

/// Who supervises a run: named on its diagnostics and when it stops the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    /// The program's name on the lines it writes to stderr (`jcp-console`).
    pub program: &'static str,
    /// Who stops a run, in words (`the console`): "stopped by the console".
    pub who: &'static str,
}

/// How the agent ended: its exit code, or the signal that ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Ended {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal, when one ended it (Unix).
    pub signal: Option<i32>,
}

impl Ended {
    /// How it ended, in words: `exit 1`, `killed by signal 15`.
    pub fn how(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "ended".to_owned(),
        }
    }
}

/// What a watcher saw, as it saw it.
#[derive(Debug, Clone, Copy)]
pub enum Observed<'a> {
    /// One event of the agent (a line of its stdout; a line that is not
    /// JSON arrives as `{"event": "output", "message": LINE}`).
    Event(&'a serde_json::Value),
    /// A piece of the agent's stderr.
    Stderr(&'a str),
    /// The agent ended; every event it wrote was told before this.
    Ended(Ended),
}

/// Told of each thing a live run's watchers see, from their threads.
pub type Observer = Arc<dyn Fn(Observed<'_>) + Send + Sync>;
