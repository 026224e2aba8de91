//! A live run: its endpoint and its agent, fed, reported and stopped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jcp_wire::message::Feed;

use crate::agent::{self, Watched};
use crate::endpoint::{self, Serving};
use crate::follow::{self, Feeder, Follower, Following, Found};
use crate::summary::{self, Snapshot, State};
use crate::{Error, Host, Issued, Observed, Observer, Settings};

/// A live run: the endpoint serving it and the agent, a watched child.
pub struct LiveRun {
    run_path: PathBuf,
    stream: PathBuf,
    dir: PathBuf,
    addr: String,
    agent: String,
    serving: Serving,
    pid: u32,
    marker: Arc<AtomicU64>,
    feeder: Arc<Feeder>,
    following: Arc<Following>,
    watched: Arc<Watched>,
    stopping: AtomicBool,
    shut: Arc<AtomicBool>,
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
        let marker = Arc::new(AtomicU64::new(0));
        let shut = Arc::new(AtomicBool::new(false));
        let feeder = Arc::new(Feeder::new(serving.endpoint.clone(), serving.rt.handle().clone()));
        // The steward's amendments and revocations reach the endpoint from
        // the run file, whoever wrote them (docs/decisions.md).
        let (log, obs) = (watched.clone(), observer.clone());
        let on_found: follow::OnFound = Arc::new(move |f: &Found| {
            let v = followed_event(f);
            agent::keep_event(&log, v.clone());
            obs(Observed::Event(&v));
        });
        let following = Arc::new(Following::new(
            Follower::new(&issued.run_path, vec![issued.root.clone()]),
            feeder.clone(),
            marker.clone(),
            on_found,
        ));
        if let Err(e) = follow::spawn(following.clone(), shut.clone()) {
            eprintln!("{}: the run file is not followed (no thread): {e}", host.program);
        }
        Ok(Self {
            run_path: issued.run_path.clone(),
            stream: issued.stream(),
            dir: issued.dir.clone(),
            addr: serving.bound.to_string(),
            agent: issued.agent.did().to_string(),
            serving,
            pid,
            marker,
            feeder,
            following,
            watched,
            stopping: AtomicBool::new(false),
            shut,
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
        self.feeder.feed(feed)
    }

    /// The next marker for a revocation fed to the endpoint (1, 2, …).
    pub fn next_marker(&self) -> u64 {
        self.marker.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Running, stopped or crashed.
    pub fn state(&self) -> State {
        let ended = self.watched.ended.lock().ok().and_then(|e| *e);
        let events = self.events();
        summary::state(ended.as_ref(), &events, self.stopping.load(Ordering::Relaxed))
    }

    /// The agent's events kept (the newest [`crate::EVENTS_KEPT`]), oldest first.
    pub fn events(&self) -> Vec<serde_json::Value> {
        self.watched.events.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// The run now: its state, what its events add up to, how it ended,
    /// and the agent's stderr when it crashed.
    pub fn snapshot(&self) -> Snapshot {
        // The kept events and their total, read together (both move under the events' lock).
        let (events, events_total) = self
            .watched
            .events
            .lock()
            .map(|e| (e.clone(), self.watched.events_seen.load(Ordering::Relaxed)))
            .unwrap_or_default();
        let exit = self.watched.ended.lock().ok().and_then(|e| *e);
        let state = summary::state(exit.as_ref(), &events, self.stopping.load(Ordering::Relaxed));
        let stopped_by = self.stopping.load(Ordering::Relaxed).then_some(self.host.who);
        let ended = exit.map(|e| summary::ended_text(&e, state, &events, stopped_by));
        let stderr = (state == State::Crashed)
            .then(|| self.watched.stderr.lock().map(|s| s.clone()).unwrap_or_default())
            .filter(|s| !s.is_empty());
        Snapshot { state, tally: summary::tally(&events), ended, exit, stderr, events, events_total }
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
        // What the steward steered with last (a revocation the agent saw
        // first and stopped on) reaches the record before it is closed.
        self.following.once();
        self.serving.shut()
    }
}

/// What the follower found, as an event in the run's log (`followed`).
fn followed_event(f: &Found) -> serde_json::Value {
    match f {
        Found::Continued(c) => serde_json::json!({"event": "followed", "what": "amendment", "continuation": c,
            "message": format!("the supervisor fed the steward's amendment to the endpoint: the run goes on under {c}")}),
        Found::Revoked(g) => serde_json::json!({"event": "followed", "what": "revocation", "grant": g,
            "message": format!("the supervisor fed the revocation of grant {g} to the endpoint")}),
        Found::NotYet(why) => serde_json::json!({"event": "followed", "what": "not-yet", "message": why}),
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
