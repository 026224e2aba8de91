//! A live run: its endpoint and its agent, fed, reported and stopped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jcp_wire::message::Feed;

use crate::agent::{self, Watched};
use crate::endpoint::{self, Serving};
use crate::summary::{self, Snapshot, State};
use crate::{Error, Host, Issued, Observer, Settings};

/// A live run: the endpoint serving it and the agent, a watched child.
pub struct LiveRun {
    run_path: PathBuf,
    stream: PathBuf,
    dir: PathBuf,
    addr: String,
    agent: String,
    serving: Serving,
    pid: u32,
    marker: AtomicU64,
    watched: Arc<Watched>,
    stopping: AtomicBool,
    shut: AtomicBool,
    host: Host,
}

impl std::fmt::Debug for LiveRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRun")
            .field("run_path", &self.run_path)
            .field("endpoint", &self.addr)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl LiveRun {
    /// Starts an issued run: opens its endpoint (with `jcp backend demo`,
    /// run from `jcp`, behind its gate), then the agent (`jcp agent demo`),
    /// whose events, stderr and exit are told to `observer`. Nothing is
    /// left running when it fails.
    pub fn start(
        jcp: &Path,
        issued: &Issued,
        settings: &Settings,
        host: Host,
        observer: &Observer,
    ) -> Result<Self, Error> {
        let serving = endpoint::open(jcp, issued, host)?;
        let child = match agent::spawn(jcp, issued, &serving.bound, settings) {
            Ok(c) => c,
            Err(e) => {
                if let Err(shut) = serving.shut() {
                    eprintln!("{}: {shut}", host.program);
                }
                return Err(e);
            }
        };
        let watched = Arc::new(Watched::default());
        let pid = agent::watch(child, &watched, observer);
        Ok(Self {
            run_path: issued.run_path.clone(),
            stream: issued.stream(),
            dir: issued.dir.clone(),
            addr: serving.bound.to_string(),
            agent: issued.agent.did().to_string(),
            serving,
            pid,
            marker: AtomicU64::new(0),
            watched,
            stopping: AtomicBool::new(false),
            shut: AtomicBool::new(false),
            host,
        })
    }

    /// The run file, where the steward steers it.
    pub fn run_path(&self) -> &Path {
        &self.run_path
    }

    /// The endpoint's record.
    pub fn stream(&self) -> &Path {
        &self.stream
    }

    /// The run's own folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The endpoint's address (`unix:PATH` or `tcp:HOST:PORT`).
    pub fn endpoint(&self) -> &str {
        &self.addr
    }

    /// The agent's did.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The agent's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Feeds a revocation or an amendment to the endpoint: admitted
    /// (recorded, then applied) or refused.
    pub fn feed(&self, feed: Feed) -> Result<(), Error> {
        let ans = self
            .serving
            .rt
            .block_on(self.serving.endpoint.feed(feed))
            .map_err(|source| Error::wire("the live run's endpoint did not take it", source))?;
        if ans.admitted {
            Ok(())
        } else {
            Err(Error::Refused { code: ans.code, message: ans.message })
        }
    }

    /// The next marker for a revocation fed to the endpoint (1, 2, …).
    pub fn next_marker(&self) -> u64 {
        self.marker.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Running, stopped or crashed.
    pub fn state(&self) -> State {
        let ended = self.watched.ended.lock().ok().and_then(|e| *e);
        let events = self.events();
        summary::state(ended.as_ref(), &events)
    }

    /// The agent's events kept (the newest [`crate::EVENTS_KEPT`]), oldest first.
    pub fn events(&self) -> Vec<serde_json::Value> {
        self.watched.events.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// The run now: its state, what its events add up to, how it ended,
    /// and the agent's stderr when it crashed.
    pub fn snapshot(&self) -> Snapshot {
        let events = self.events();
        let exit = self.watched.ended.lock().ok().and_then(|e| *e);
        let state = summary::state(exit.as_ref(), &events);
        let stopped_by = self.stopping.load(Ordering::Relaxed).then_some(self.host.who);
        let ended = exit.map(|e| summary::ended_text(&e, state, &events, stopped_by));
        let stderr = (state == State::Crashed)
            .then(|| self.watched.stderr.lock().map(|s| s.clone()).unwrap_or_default())
            .filter(|s| !s.is_empty());
        Snapshot { state, tally: summary::tally(&events), ended, exit, stderr, events }
    }

    /// Stops the agent (SIGTERM, then SIGKILL after 3 s), shuts the
    /// endpoint down, flushing and releasing its record, and stops the
    /// backend behind its gate. Idempotent: only the first call acts.
    pub fn stop(&self) -> Result<(), Error> {
        if self.shut.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.stopping.store(true, Ordering::Relaxed);
        let running = || self.watched.ended.lock().is_ok_and(|e| e.is_none());
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
        self.serving.shut()
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
