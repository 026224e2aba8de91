//! The console's state: the workspace (folder + store), the audit jobs and
//! what the meter last said. Commands read and change it; nothing here
//! decides anything about the protocol — the crates do.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use console_store::Store;
use console_view::ipc::{AuditJob, AuditProgress, Availability, RungRow, StoreInfo, UiError};
use console_view::tags::Verdict;
use serde_json::Value;

use crate::error::{self, CmdResult};

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Live progress counters a worker updates and the front end polls.
#[derive(Debug, Default)]
pub struct ProgressCounters {
    /// Bytes read so far.
    pub bytes_done: AtomicU64,
    /// Bytes to read.
    pub bytes_total: AtomicU64,
    /// Records processed.
    pub records: AtomicU64,
}

impl ProgressCounters {
    fn snapshot(&self) -> AuditProgress {
        AuditProgress {
            bytes_done: self.bytes_done.load(Ordering::Relaxed),
            bytes_total: self.bytes_total.load(Ordering::Relaxed),
            records: self.records.load(Ordering::Relaxed),
        }
    }
}

/// What an audit engine returns: the verdict word and the report as JSON
/// (the same value `jcp audit --json` prints).
pub type EngineOutcome = Result<(Verdict, Value), UiError>;

/// An audit engine: reads the streams, updates progress, stops when `cancel` is set.
pub type EngineFn = fn(&[PathBuf], &ProgressCounters, &AtomicBool) -> EngineOutcome;

/// The states a job goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Reading.
    Running,
    /// Finished with a report.
    Done,
    /// Stopped by the person.
    Cancelled,
    /// Stopped by an error.
    Failed,
}

impl JobState {
    /// As the front end's closed set.
    fn tag(self) -> console_view::tags::JobState {
        match self {
            Self::Running => console_view::tags::JobState::Running,
            Self::Done => console_view::tags::JobState::Done,
            Self::Cancelled => console_view::tags::JobState::Cancelled,
            Self::Failed => console_view::tags::JobState::Failed,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }
}

/// One audit job.
#[derive(Debug)]
pub struct Job {
    /// Its number.
    pub id: u64,
    /// The streams.
    pub paths: Vec<String>,
    /// Where it is.
    pub state: JobState,
    /// Counters the worker updates.
    pub progress: Arc<ProgressCounters>,
    /// Set to stop the worker.
    pub cancel: Arc<AtomicBool>,
    started: Instant,
    took: Option<Duration>,
    /// The verdict and report when done.
    pub report: Option<(Verdict, Value)>,
    /// Why it failed.
    pub error: Option<UiError>,
}

impl Job {
    /// The job as the front end sees it.
    pub fn view(&self) -> AuditJob {
        AuditJob {
            id: self.id,
            paths: self.paths.clone(),
            state: self.state.tag(),
            progress: self.progress.snapshot(),
            elapsed_ms: u64::try_from(self.took.unwrap_or_else(|| self.started.elapsed()).as_millis())
                .unwrap_or(u64::MAX),
            verdict: self.report.as_ref().map(|r| r.0),
            error: self.error.clone(),
        }
    }
}

/// The audit jobs: the current one (one at a time) and the counter.
#[derive(Debug, Default)]
pub struct AuditJobs {
    next_id: u64,
    /// The latest job.
    pub current: Option<Job>,
}

/// What the meter last said (ladder, window length, whether it runs).
#[derive(Debug, Clone)]
pub struct MeterView {
    /// Whether a meter runs.
    pub availability: Availability,
    /// The ladder as probed.
    pub ladder: Vec<RungRow>,
    /// The window length.
    pub window_ms: u64,
}

/// Everything the commands share.
#[derive(Debug)]
pub struct AppState {
    /// The workspace folder.
    pub workspace: PathBuf,
    /// The store (file, or memory when the file was refused).
    pub store: Arc<Mutex<Store>>,
    /// How the store opened.
    pub store_info: StoreInfo,
    /// Audit jobs.
    pub audit: Arc<Mutex<AuditJobs>>,
    /// The audit engine in this build, if any.
    pub engine: Option<EngineFn>,
    /// Why there is none.
    pub engine_missing: &'static str,
    /// The meter's view.
    pub meter: Arc<Mutex<MeterView>>,
    /// Demo streams prepared on first start.
    pub demo_streams: Arc<Mutex<Vec<String>>>,
    /// The workspace item the app's arguments asked to open (a blueprint reconcile).
    pub open_at_start: Arc<Mutex<Option<i64>>>,
    /// The app's arguments named streams to audit: it opens on the Auditor.
    pub audit_at_start: bool,
    /// The recording of the machine's windows as a session (§5.4).
    pub recorder: Arc<crate::sessions::Recorder>,
    /// The files the web view may name, each by an opaque handle (issue 34).
    pub handles: Arc<Handles>,
}

/// Issue 34, "IPC takes raw paths": the web view never names a file by its
/// path. Every file or folder it may name was chosen in Rust (a native
/// dialog, a drop on the window, the app's arguments) or is listed by the
/// console itself (the workspace, its unresolved streams, a session it
/// recorded); each is given an opaque handle here, and a command that takes
/// a file takes a handle and looks it up. A handle not given out is refused
/// (`ipc.unknown_handle`): a script in the window cannot make the console
/// read or write a file the person did not choose.
#[derive(Debug)]
pub struct Handles {
    inner: Mutex<(HashMap<String, PathBuf>, HashMap<PathBuf, String>)>,
    prefix: u64,
}

impl Default for Handles {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        // A per-process random prefix (std's `RandomState` seeds from the
        // operating system): handles of one run mean nothing in another.
        let prefix = std::collections::hash_map::RandomState::new().build_hasher().finish();
        Self { inner: Mutex::new((HashMap::new(), HashMap::new())), prefix }
    }
}

impl Handles {
    /// The handle of `path` (the same one each time it is given).
    pub fn grant(&self, path: &Path) -> String {
        let mut g = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(h) = g.1.get(path) {
            return h.clone();
        }
        let h = format!("f{:016x}{:08x}", self.prefix, g.0.len());
        g.0.insert(h.clone(), path.to_path_buf());
        g.1.insert(path.to_path_buf(), h.clone());
        h
    }

    /// A file handle to send the web view: the handle, and the path to show.
    pub fn file(&self, path: &Path) -> console_view::ipc::FileHandle {
        console_view::ipc::FileHandle { handle: self.grant(path), path: path.display().to_string() }
    }

    /// The path behind `handle`, as the engines take it (text).
    pub fn path_of(&self, handle: &str) -> CmdResult<String> {
        self.resolve(handle).map(|p| p.display().to_string())
    }

    /// [`Handles::path_of`] of an optional field: absent or empty is `None`.
    pub fn optional_path(&self, handle: Option<&String>) -> CmdResult<Option<String>> {
        handle.filter(|h| !h.trim().is_empty()).map(|h| self.path_of(h)).transpose()
    }

    /// The path behind `handle`.
    pub fn resolve(&self, handle: &str) -> CmdResult<PathBuf> {
        let g = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        g.0.get(handle.trim()).cloned().ok_or_else(|| {
            UiError::new(
                "ipc.unknown_handle",
                "that file was not chosen in this console: choose it with its button (or drop it on the window)",
            )
        })
    }
}

impl AppState {
    /// Opens the workspace at `dir`. A refused store file is reported (with
    /// its typed error) and the session runs on memory; the file is left alone.
    pub fn open(dir: &Path, engine: Option<EngineFn>, engine_missing: &'static str, meter: MeterView) -> Self {
        let path = dir.join("workspace.sqlite");
        let (store, error) = match Store::open(&path) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(error::store(&e))),
        };
        let persistent = store.is_some();
        let store = match store {
            Some(s) => s,
            // An in-memory SQLite cannot fail to open short of allocation failure.
            None => match Store::open_in_memory() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("jcp-console: {e}");
                    std::process::exit(2);
                }
            },
        };
        let store_info = StoreInfo {
            path: path.display().to_string(),
            persistent,
            error,
            window_retention: store.window_retention(),
        };
        Self {
            workspace: dir.to_path_buf(),
            store: Arc::new(Mutex::new(store)),
            store_info,
            audit: Arc::new(Mutex::new(AuditJobs::default())),
            engine,
            engine_missing,
            meter: Arc::new(Mutex::new(meter)),
            demo_streams: Arc::new(Mutex::new(Vec::new())),
            open_at_start: Arc::new(Mutex::new(None)),
            audit_at_start: false,
            recorder: Arc::new(crate::sessions::Recorder::default()),
            handles: Arc::new(Handles::default()),
        }
    }

    /// Remembers the item the arguments asked to open; the front end reads it from `app_info`.
    pub fn set_open_at_start(&self, id: i64) {
        if let Ok(mut o) = self.open_at_start.lock() {
            *o = Some(id);
        }
    }

    /// Runs `f` on the store.
    pub fn with_store<T>(&self, f: impl FnOnce(&mut Store) -> CmdResult<T>) -> CmdResult<T> {
        let mut s = self.store.lock().map_err(|_| error::poisoned("store"))?;
        f(&mut s)
    }

    /// Starts an audit of `paths` on a worker thread; refuses while one runs.
    pub fn start_audit(&self, paths: Vec<String>) -> CmdResult<AuditJob> {
        let Some(engine) = self.engine else {
            return Err(UiError::new("audit.unavailable", self.engine_missing));
        };
        if paths.is_empty() {
            return Err(UiError::new("audit.no_streams", "choose at least one stream to audit"));
        }
        let mut files = Vec::with_capacity(paths.len());
        let mut total = 0u64;
        for p in &paths {
            let path = PathBuf::from(p);
            let meta =
                std::fs::metadata(&path).map_err(|e| error::io("audit.unreadable", "cannot read stream", &path, &e))?;
            if !meta.is_file() {
                return Err(UiError::new("audit.unreadable", format!("{} is not a file", path.display())));
            }
            // A file that is not a receipt stream is refused here, before it
            // is listed in the workspace as one.
            // The stream reader's own header check, as the audit makes it.
            let file = std::fs::File::open(&path)
                .map_err(|e| error::io("audit.unreadable", "cannot read stream", &path, &e))?;
            match jcp_receipt::stream::Reader::new(file) {
                Ok(_) => {}
                Err(jcp_receipt::Error::NotAStream { .. }) => {
                    return Err(UiError::new(
                        "audit.not-a-stream",
                        format!(
                            "{} is not a receipt stream: it does not start with the JCP stream header (a stream is what `jcp serve --stream` or `jcp run` writes)",
                            path.display()
                        ),
                    ));
                }
                Err(e) => {
                    return Err(UiError::new("audit.unreadable", format!("cannot read stream {}: {e}", path.display())))
                }
            }
            total += meta.len();
            files.push((path, meta.len()));
        }
        let mut jobs = self.audit.lock().map_err(|_| error::poisoned("audit"))?;
        if jobs.current.as_ref().is_some_and(|j| j.state == JobState::Running) {
            return Err(UiError::new("audit.busy", "an audit is already running; cancel it or wait for its verdict"));
        }
        let now = now_ms();
        self.with_store(|s| {
            for (path, size) in &files {
                s.record_stream_opened(&path.display().to_string(), *size, now).map_err(|e| error::store(&e))?;
            }
            s.record_action(
                now,
                "audit",
                &paths.join("\n"),
                &serde_json::json!({"streams": paths.len(), "bytes": total}),
            )
            .map_err(|e| error::store(&e))?;
            Ok(())
        })?;
        jobs.next_id += 1;
        let progress = Arc::new(ProgressCounters::default());
        progress.bytes_total.store(total, Ordering::Relaxed);
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job {
            id: jobs.next_id,
            paths: paths.clone(),
            state: JobState::Running,
            progress: progress.clone(),
            cancel: cancel.clone(),
            started: Instant::now(),
            took: None,
            report: None,
            error: None,
        };
        let view = job.view();
        let id = job.id;
        jobs.current = Some(job);
        drop(jobs);

        let audit = self.audit.clone();
        let store = self.store.clone();
        let spawned = std::thread::Builder::new().name(format!("audit-{id}")).spawn(move || {
            // Reading and accounting run here: below the window too.
            crate::priority::lower_this_thread();
            let pathbufs: Vec<PathBuf> = files.into_iter().map(|f| f.0).collect();
            let outcome = engine(&pathbufs, &progress, &cancel);
            finish(&audit, &store, id, &paths, outcome, cancel.load(Ordering::Relaxed));
        });
        if let Err(e) = spawned {
            let mut jobs = self.audit.lock().map_err(|_| error::poisoned("audit"))?;
            if let Some(j) = jobs.current.as_mut() {
                j.state = JobState::Failed;
                j.error = Some(UiError::new("audit.internal", format!("could not start the audit worker: {e}")));
            }
        }
        Ok(view)
    }

    /// Shows a start that was refused (dropped files, command-line streams)
    /// as a failed job, so the person sees why in the auditor's view.
    pub fn record_failed_start(&self, paths: Vec<String>, error: UiError) {
        let Ok(mut jobs) = self.audit.lock() else { return };
        if jobs.current.as_ref().is_some_and(|j| j.state == JobState::Running) {
            return;
        }
        jobs.next_id += 1;
        jobs.current = Some(Job {
            id: jobs.next_id,
            paths,
            state: JobState::Failed,
            progress: Arc::new(ProgressCounters::default()),
            cancel: Arc::new(AtomicBool::new(false)),
            started: Instant::now(),
            took: Some(Duration::ZERO),
            report: None,
            error: Some(error),
        });
    }

    /// Asks the job to stop.
    pub fn cancel_audit(&self, id: u64) -> CmdResult<AuditJob> {
        let jobs = self.audit.lock().map_err(|_| error::poisoned("audit"))?;
        match jobs.current.as_ref() {
            Some(j) if j.id == id => {
                j.cancel.store(true, Ordering::Relaxed);
                Ok(j.view())
            }
            _ => Err(UiError::new("audit.unknown_job", format!("there is no audit job {id}"))),
        }
    }

    /// The current job.
    pub fn audit_status(&self) -> CmdResult<Option<AuditJob>> {
        let jobs = self.audit.lock().map_err(|_| error::poisoned("audit"))?;
        Ok(jobs.current.as_ref().map(Job::view))
    }

    /// The finished job's verdict and report.
    pub fn audit_report(&self, id: u64) -> CmdResult<(Verdict, Value, Vec<String>)> {
        let jobs = self.audit.lock().map_err(|_| error::poisoned("audit"))?;
        match jobs.current.as_ref() {
            Some(j) if j.id == id => match &j.report {
                Some((v, r)) => Ok((*v, r.clone(), j.paths.clone())),
                None => {
                    Err(UiError::new("audit.no_report", format!("audit {id} has no report ({})", j.state.as_str())))
                }
            },
            _ => Err(UiError::new("audit.unknown_job", format!("there is no audit job {id}"))),
        }
    }
}

/// Whether the person took `path` off the workspace (issue 39): what the
/// console lists by itself (the demo, the runs folder) leaves it off. A
/// store that cannot say is logged and the item listed: on a store error
/// nothing is hidden.
pub fn taken_off(s: &Store, path: &str) -> bool {
    s.is_forgotten(path).unwrap_or_else(|e| {
        eprintln!("jcp-console: {e}");
        false
    })
}

/// Lists the demo streams in the workspace (opened, not yet audited).
pub fn register_demo(store: &Mutex<Store>, demo: &Mutex<Vec<String>>, paths: &[PathBuf]) {
    let now = now_ms();
    let Ok(s) = store.lock() else { return };
    for p in paths {
        let size = std::fs::metadata(p).map_or(0, |m| m.len());
        let name = p.display().to_string();
        // One the person took off stays off (issue 39).
        if taken_off(&s, &name) {
            continue;
        }
        if matches!(s.stream(&name), Ok(None)) {
            if let Err(e) = s.record_stream_opened(&name, size, now) {
                eprintln!("jcp-console: {e}");
            }
        }
        if let Ok(mut d) = demo.lock() {
            d.push(name);
        }
    }
}

/// Lists the demo's blueprint reconciles and run in the workspace (once:
/// adding an item again keeps its id and last status).
pub fn register_demo_items(store: &Mutex<Store>, items: &[crate::engines::DemoItem]) {
    let now = now_ms();
    let Ok(s) = store.lock() else { return };
    for it in items {
        // One the person took off stays off (issue 39).
        if taken_off(&s, &it.path) {
            continue;
        }
        if let Err(e) = s.add_item(it.kind, &it.label, &it.path, &it.detail, now) {
            eprintln!("jcp-console: {e}");
        }
    }
}

fn finish(
    audit: &Mutex<AuditJobs>,
    store: &Mutex<Store>,
    id: u64,
    paths: &[String],
    outcome: EngineOutcome,
    cancelled: bool,
) {
    let Ok(mut jobs) = audit.lock() else { return };
    let Some(job) = jobs.current.as_mut().filter(|j| j.id == id) else { return };
    job.took = Some(job.started.elapsed());
    match outcome {
        Ok((verdict, report)) => {
            // A report that completed before the engine saw a cancel is kept: it is whole.
            let now = now_ms();
            if let Ok(s) = store.lock() {
                for p in paths {
                    if let Err(e) = s.record_audit(p, verdict.as_str(), &report, now) {
                        job.error = Some(error::store(&e));
                    }
                }
            }
            job.state = JobState::Done;
            job.report = Some((verdict, report));
        }
        Err(e) if cancelled && e.code == crate::engines::audit_code(&jcp_audit::AuditError::Cancelled) => {
            job.state = JobState::Cancelled;
        }
        Err(e) => {
            job.state = if cancelled { JobState::Cancelled } else { JobState::Failed };
            job.error = Some(e);
        }
    }
}
