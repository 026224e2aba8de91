//! The steward's side of the console: the key (kept here, in Rust, for an
//! unlocked session; never sent to the web view), the runs folder (watched),
//! the write actions (approve, amend, revoke) and live runs — the embedded
//! enforcement endpoint (`jcp-wire`) and the demo agent as a child process.
//! Protocol rules live in the crates (`jcp::steering`, `console_view::steward`);
//! this module composes them, writes files, and keeps state.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use console_store::{ItemKind, Store};
use console_view::authority::read_run;
use console_view::ipc::UiError;
use console_view::steward::{
    self as sv, AgentEventLine, AmendForm, AmendPreview, HistoryRow, KeyStatus, LiveState, LiveView, RevokePlan,
    RunRow, SettleStatus, SignedAction, StewardActionKind, StewardOverview, StewardRunView, UnresolvedStream,
};
use jcp::cbor::{ContentId, Value};
use jcp::decision::Gate;
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp::steering::{Run, RunReport};
use jcp_wire::endpoint::{Address, Config, Endpoint};
use jcp_wire::message::Feed;

use crate::error::{self, CmdResult};
use crate::state::{now_ms, AppState};

/// The key file's name in the workspace.
pub const KEY_FILE: &str = "steward.key";
/// The runs folder's name in the workspace.
pub const RUNS_DIR: &str = "runs";
/// Where live runs keep their endpoint record, agent key and chain.
pub const LIVE_DIR: &str = "live";
/// A demo live run's budget, µJ, and what each simulated action costs.
pub const LIVE_BUDGET_UJ: u64 = 5_000;
/// The cost of one demo action, µJ.
pub const LIVE_COST_UJ: u64 = 100;
/// Allowed actions between checkpoints.
pub const LIVE_CHECKPOINT_EVERY: u64 = 5;
/// How many agent events a live run keeps.
const EVENTS_KEPT: usize = 400;

/// The steward's state: the key and the live runs.
#[derive(Debug)]
pub struct StewardState {
    /// The key file.
    pub key_path: PathBuf,
    /// The unlocked key, for this session only.
    key: Mutex<Option<Keypair>>,
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
            key: Mutex::new(None),
            runs_dir,
            live: Mutex::new(HashMap::new()),
            revision: Arc::new(AtomicU64::new(1)),
            work_factor,
        }
    }

    fn with_key<T>(&self, f: impl FnOnce(&Keypair) -> CmdResult<T>) -> CmdResult<T> {
        let k = self.key.lock().map_err(|_| error::poisoned("key"))?;
        match k.as_ref() {
            Some(k) => f(k),
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
    pub fn stop_all(&self) {
        let runs: Vec<Arc<LiveRun>> = self.live.lock().map(|l| l.values().cloned().collect()).unwrap_or_default();
        for r in runs {
            r.stop();
        }
    }
}

fn key_err(e: &keystore::KeyError) -> UiError {
    UiError::new(e.code(), e.to_string())
}

// -------------------------------------------------------------------- key

/// The key's status: the file, its did (read while locked), whether it is
/// unlocked, and why it cannot be used.
pub fn key_status(st: &StewardState) -> KeyStatus {
    let path = st.key_path.display().to_string();
    let unlocked = st.key.lock().map(|k| k.is_some()).unwrap_or(false);
    if !st.key_path.exists() {
        return KeyStatus { path, exists: false, did: None, unlocked: false, error: None };
    }
    match keystore::did(&st.key_path) {
        Ok(d) => KeyStatus { path, exists: true, did: Some(d.to_string()), unlocked, error: None },
        Err(e) => KeyStatus { path, exists: true, did: None, unlocked, error: Some(key_err(&e)) },
    }
}

fn unlocked_with(st: &StewardState, key: Keypair) -> CmdResult<KeyStatus> {
    *st.key.lock().map_err(|_| error::poisoned("key"))? = Some(key);
    Ok(key_status(st))
}

/// Creates a new key, encrypted under `passphrase`, and unlocks it.
pub fn key_create(st: &StewardState, passphrase: &str) -> CmdResult<KeyStatus> {
    let key = Keypair::generate();
    keystore::create(&st.key_path, &key, passphrase, st.work_factor).map_err(|e| key_err(&e))?;
    unlocked_with(st, key)
}

/// Imports a key file (a steward key file opened with `from_passphrase`,
/// or a plain `jcp key new` file) and stores it encrypted under `passphrase`.
pub fn key_import(st: &StewardState, from: &Path, from_passphrase: &str, passphrase: &str) -> CmdResult<KeyStatus> {
    let key = keystore::read_any(from, from_passphrase).map_err(|e| key_err(&e))?;
    keystore::create(&st.key_path, &key, passphrase, st.work_factor).map_err(|e| key_err(&e))?;
    unlocked_with(st, key)
}

/// Unlocks the key for this session.
pub fn key_unlock(st: &StewardState, passphrase: &str) -> CmdResult<KeyStatus> {
    let key = keystore::unlock(&st.key_path, passphrase).map_err(|e| key_err(&e))?;
    unlocked_with(st, key)
}

/// Forgets the unlocked key (its memory is zeroed when dropped).
pub fn key_lock(st: &StewardState) -> CmdResult<KeyStatus> {
    st.key.lock().map_err(|_| error::poisoned("key"))?.take();
    Ok(key_status(st))
}

// ------------------------------------------------------------------- runs

/// Lists the runs folder's run files in the workspace (new ones added).
/// Returns whether anything changed since `seen`.
pub fn scan_runs(store: &Mutex<Store>, runs_dir: &Path, seen: &mut HashMap<PathBuf, (u64, SystemTime)>) -> bool {
    let Ok(entries) = std::fs::read_dir(runs_dir) else { return false };
    let mut changed = false;
    let now = now_ms();
    let mut present = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        let is_run = p.extension().is_some_and(|x| x == jcp::steering::RUN_EXTENSION);
        let is_revs = p.to_string_lossy().ends_with(".revocations");
        if !is_run && !is_revs {
            continue;
        }
        let stamp = std::fs::metadata(&p).map(|m| (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH))).ok();
        let Some(stamp) = stamp else { continue };
        present.push(p.clone());
        if seen.get(&p) != Some(&stamp) {
            if is_run && !seen.contains_key(&p) {
                let label =
                    p.file_stem().map_or_else(|| p.display().to_string(), |n| format!("run {}", n.to_string_lossy()));
                if let Ok(s) = store.lock() {
                    if let Err(e) = s.add_item(
                        ItemKind::Run,
                        &label,
                        &p.display().to_string(),
                        &serde_json::json!({"source": "runs-folder"}),
                        now,
                    ) {
                        eprintln!("jcp-console: {e}");
                    }
                }
            }
            seen.insert(p, stamp);
            changed = true;
        }
    }
    let before = seen.len();
    seen.retain(|p, _| present.contains(p));
    changed || seen.len() != before
}

/// Watches the runs folder (polling, about every 500 ms): a run file
/// dropped there, a checkpoint the agent appends, or a revocation written
/// beside a run bumps the revision the front end polls.
pub fn start_watcher(store: Arc<Mutex<Store>>, runs_dir: PathBuf, revision: Arc<AtomicU64>) {
    let spawned = std::thread::Builder::new().name("runs-watcher".into()).spawn(move || {
        let mut seen = HashMap::new();
        loop {
            if scan_runs(&store, &runs_dir, &mut seen) {
                revision.fetch_add(1, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    if let Err(e) = spawned {
        eprintln!("jcp-console: the runs folder is not watched: {e}");
    }
}

fn run_item(state: &AppState, id: i64) -> CmdResult<console_store::ItemRecord> {
    let item = state.with_store(|s| s.item(id).map_err(|e| error::store(&e)))?;
    match item {
        Some(i) if i.kind == ItemKind::Run => Ok(i),
        _ => Err(UiError::new("workspace.unknown_item", format!("there is no run {id} in this workspace"))),
    }
}

/// The steward's overview: every run item, whether it awaits the steward,
/// live state, and the key.
pub fn overview(state: &AppState, st: &StewardState) -> CmdResult<StewardOverview> {
    let items = state.with_store(|s| s.items().map_err(|e| error::store(&e)))?;
    let me = keystore::did(&st.key_path).ok();
    let mut runs = Vec::new();
    let mut awaiting = 0u32;
    for i in items.into_iter().filter(|i| i.kind == ItemKind::Run) {
        let live = st.live_of(i.id).map(|l| l.state());
        let path = Path::new(&i.path);
        let (verdict, aw, mine, checkpoints, err) =
            match read_run(path).and_then(|(r, _)| r.verify().map(|rep| (r, rep))) {
                Ok((run, rep)) => (
                    Some(console_view::tags::Verdict::of(rep.clean)),
                    awaiting_unrevoked(path, &run, &rep).0,
                    me.as_ref() == Some(&rep.issuer),
                    rep.checkpoints.len() as u64,
                    None,
                ),
                Err(e) => (None, false, false, 0, Some(format!("{} ({})", e, e.code()))),
            };
        if aw && mine {
            awaiting += 1;
        }
        runs.push(RunRow {
            id: i.id,
            label: i.label,
            path: i.path,
            live,
            awaiting: aw,
            mine,
            checkpoints,
            verdict,
            error: err,
        });
    }
    Ok(StewardOverview { revision: st.revision.load(Ordering::Relaxed), awaiting, runs, key: key_status(st) })
}

/// Whether the run awaits its steward, and the grants revoked beside it: a
/// run whose grant in force was revoked awaits nobody.
fn awaiting_unrevoked(run_path: &Path, run: &Run, report: &RunReport) -> (bool, Vec<String>) {
    let revoked: Vec<String> = sv::revocations_of(run_path, run).into_iter().map(|(g, _)| g.to_string()).collect();
    let awaiting = sv::awaiting(report) && !report.active_grant.is_some_and(|a| revoked.contains(&a.to_string()));
    (awaiting, revoked)
}

/// A run as the steward works on it: the verified run, whether it awaits,
/// its revocations, its history, its live state.
pub fn run_view(state: &AppState, st: &StewardState, id: i64) -> CmdResult<StewardRunView> {
    let item = run_item(state, id)?;
    let path = PathBuf::from(&item.path);
    let (run, report, view) = console_view::run::read_view(&path).map_err(|e| error::view(&e))?;
    let (awaiting, revoked) = awaiting_unrevoked(&path, &run, &report);
    let history = state.with_store(|s| s.actions_on(&item.path, 500).map_err(|e| error::store(&e)))?;
    let history = history
        .into_iter()
        .map(|a| HistoryRow {
            at_ms: a.at_ms,
            action: a.action,
            signed_by: a.detail["signed_by"].as_str().unwrap_or("").to_owned(),
            text: a.detail["message"].as_str().unwrap_or("").to_owned(),
        })
        .collect();
    state.with_store(|s| s.set_item_status(id, view.verdict.as_str(), now_ms()).map_err(|e| error::store(&e)))?;
    Ok(StewardRunView { id, run: view, awaiting, revoked, history, live: st.live_of(id).map(|l| l.view()) })
}

// ---------------------------------------------------------------- actions

/// Plans an amendment (or an approval, `budget_uj` absent) without signing.
pub fn preview(state: &AppState, st: &StewardState, id: i64, form: &AmendForm) -> CmdResult<AmendPreview> {
    let item = run_item(state, id)?;
    let did = match st.key.lock().map_err(|_| error::poisoned("key"))?.as_ref() {
        Some(k) => k.did(),
        // Locked: the preview judges the amount as the key file's did would sign it.
        None => keystore::did(&st.key_path).map_err(|e| key_err(&e))?,
    };
    sv::preview_amend(Path::new(&item.path), &did, form).map_err(|e| error::view(&e))
}

fn record(state: &AppState, subject: &str, done: &SignedAction) -> CmdResult<()> {
    state.with_store(|s| {
        s.record_action(now_ms(), done.action.as_str(), subject, &serde_json::to_value(done).unwrap_or_default())
            .map(|_| ())
            .map_err(|e| error::store(&e))
    })
}

/// Signs an amendment (or approval): the core checks it again before
/// signing; a live run's endpoint admits it (recorded there) before the
/// run file — where the agent picks it up — is replaced; then it is
/// recorded in the console's history.
pub fn amend(state: &AppState, st: &StewardState, id: i64, form: &AmendForm) -> CmdResult<SignedAction> {
    let item = run_item(state, id)?;
    let path = PathBuf::from(&item.path);
    let steering = st.with_key(|k| sv::sign_amend(&path, k, form).map_err(|e| error::view(&e)))?;
    let signer = steering.amendment.amendment().amended_by.to_string();
    if let Some(live) = st.live_of(id) {
        live.feed(Feed::Amendment {
            steered: steering.steered.clone(),
            checkpoint: steering.checkpoint.clone(),
            amendment: steering.amendment.clone(),
            continuation: steering.continuation.clone(),
        })?;
    }
    sv::write_run(&path, &steering.run).map_err(|e| error::view(&e))?;
    st.revision.fetch_add(1, Ordering::Relaxed);
    let approve = form.budget_uj.is_none();
    let budget = console_view::format_uj(steering.continuation.grant().budget_uj);
    let done = SignedAction {
        action: if approve { StewardActionKind::Approve } else { StewardActionKind::Amend },
        signed_by: signer,
        signed: vec![steering.amendment.id().to_string(), steering.continuation.id().to_string()],
        files: vec![item.path.clone()],
        message: format!(
            "{} at checkpoint {}: continuation grant {} with {budget}",
            if approve { "approved" } else { "amended" },
            steering.checkpoint.checkpoint().seq,
            steering.continuation.id()
        ),
    };
    record(state, &item.path, &done)?;
    Ok(done)
}

/// Every grant the console knows: the run files' and live runs' chains.
fn known_grants(state: &AppState) -> CmdResult<Vec<SignedGrant>> {
    let items = state.with_store(|s| s.items().map_err(|e| error::store(&e)))?;
    let mut out: Vec<SignedGrant> = Vec::new();
    for i in items.into_iter().filter(|i| i.kind == ItemKind::Run) {
        if let Ok(r) = Run::read(Path::new(&i.path)) {
            for g in sv::grants_of(&r) {
                if !out.iter().any(|o| o.id() == g.id()) {
                    out.push(g);
                }
            }
        }
    }
    Ok(out)
}

fn target_grant(path: &Path, grant: &str) -> CmdResult<SignedGrant> {
    let run = Run::read(path).map_err(|e| UiError::new(e.code(), e.to_string()))?;
    sv::grants_of(&run).into_iter().find(|g| g.id().to_string() == grant).ok_or_else(|| {
        UiError::new("revoke.unknown_grant", format!("grant {grant} is not in the run {}", path.display()))
    })
}

/// What revoking `grant` of run `id` kills (the confirmation's list).
pub fn revoke_plan(state: &AppState, st: &StewardState, id: i64, grant: &str) -> CmdResult<RevokePlan> {
    let item = run_item(state, id)?;
    let target = target_grant(Path::new(&item.path), grant)?;
    let did = keystore::did(&st.key_path).map_err(|e| key_err(&e))?;
    sv::plan_revoke(&target, &known_grants(state)?, &did).map_err(|e| error::view(&e))
}

/// Signs the revocation of `grant`, feeds it to a live run's endpoint
/// (recorded there before it is applied), writes it beside the run and
/// records it in the history.
pub fn revoke(state: &AppState, st: &StewardState, id: i64, grant: &str) -> CmdResult<SignedAction> {
    let item = run_item(state, id)?;
    let path = PathBuf::from(&item.path);
    let target = target_grant(&path, grant)?;
    let plan =
        st.with_key(|k| sv::plan_revoke(&target, &known_grants(state)?, &k.did()).map_err(|e| error::view(&e)))?;
    let (rev, file) = st.with_key(|k| {
        let rev =
            jcp::revocation::Revocation::issue(&target, k, None).map_err(|e| UiError::new(e.code(), e.to_string()))?;
        if let Some(live) = st.live_of(id) {
            live.feed(Feed::Revocation { revocation: rev.clone(), grant: target.clone(), marker: live.next_marker() })?;
        }
        sv::write_revocation(&path, &target, &rev).map(|f| (rev, f)).map_err(|e| error::view(&e))
    })?;
    st.revision.fetch_add(1, Ordering::Relaxed);
    let done = SignedAction {
        action: StewardActionKind::Revoke,
        signed_by: rev.revocation().revoked_by.to_string(),
        signed: vec![rev.id().to_string()],
        files: vec![file.display().to_string()],
        message: format!("revoked grant {}; {} grant(s) die with it", target.id(), plan.dies.len()),
    };
    record(state, &item.path, &done)?;
    Ok(done)
}

// ------------------------------------------------------------- unresolved

/// Every workspace stream's unresolved decisions (§4.11), from its last
/// audit, each with the party that held it and any settlement signed since.
pub fn unresolved(state: &AppState) -> CmdResult<Vec<UnresolvedStream>> {
    let streams = state.with_store(|s| s.streams().map_err(|e| error::store(&e)))?;
    let mut out = Vec::new();
    for r in streams {
        let Some(report) = r.last_audit.as_ref() else { continue };
        let total = report["unresolved_total"].as_u64().unwrap_or(0);
        if total == 0 {
            continue;
        }
        // The report may cover several streams: this one is the index whose path is it.
        let index = report["streams"]
            .as_array()
            .and_then(|a| a.iter().position(|s| s["path"].as_str() == Some(r.path.as_str())))
            .unwrap_or(0);
        let path = PathBuf::from(&r.path);
        let size = std::fs::metadata(&path).map(|m| m.len()).ok();
        let audited = report["streams"][index]["bytes"].as_u64();
        out.push(UnresolvedStream {
            rows: sv::unresolved_rows(report, index, &path),
            stream: r.path,
            audited_at_ms: r.last_audit_at_ms.unwrap_or(0),
            changed_since: size != audited,
            total,
        });
    }
    Ok(out)
}

/// Settles an unresolved decision with a signed note (the audit of the
/// stream must list it unresolved); recorded in the history. Never retried,
/// nothing re-debited or refunded.
pub fn settle(
    state: &AppState,
    st: &StewardState,
    stream: &str,
    receipt: &str,
    status: SettleStatus,
    note: &str,
) -> CmdResult<SignedAction> {
    let id = ContentId::parse(receipt)
        .ok_or_else(|| UiError::new("settle.bad_receipt", format!("{receipt:?} is not a receipt id")))?;
    if note.trim().is_empty() {
        return Err(UiError::new(
            "settle.no_note",
            "a settlement says why: write a note (it is signed with the settlement)",
        ));
    }
    let status_r = match status {
        SettleStatus::Completed => jcp_receipt::record::OutcomeStatus::Completed,
        SettleStatus::Failed => jcp_receipt::record::OutcomeStatus::Failed,
    };
    let at = now_ms() / 1000;
    let (n, path) = st.with_key(|k| {
        jcp_audit::settle(Path::new(stream), &id, status_r, note.trim(), k, at)
            .map_err(|e| UiError::new(e.code(), e.to_string()))
    })?;
    let done = SignedAction {
        action: StewardActionKind::Settle,
        signed_by: n.note().settled_by.to_string(),
        signed: vec![n.id().to_string()],
        files: vec![path.display().to_string()],
        message: format!(
            "settled decision {} (held by {}) as {}; its energy stays debited",
            n.note().receipt,
            n.note().holder,
            status_r.as_str()
        ),
    };
    record(state, stream, &done)?;
    Ok(done)
}

// ------------------------------------------------------------------- live

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
    fn feed(&self, feed: Feed) -> CmdResult<()> {
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

    fn next_marker(&self) -> u64 {
        self.marker.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn state(&self) -> LiveState {
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

    fn view(&self) -> LiveView {
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
        LiveView {
            state,
            endpoint: self.addr.clone(),
            stream: self.stream.display().to_string(),
            agent: self.agent.clone(),
            grant,
            allowed,
            denied,
            spent: console_view::format_uj(spent),
            events: events[start..].iter().map(sv::event_line).collect::<Vec<AgentEventLine>>(),
            ended,
            stderr,
        }
    }

    /// Stops the agent (SIGTERM, then SIGKILL after 3 s) and shuts the
    /// endpoint down, flushing and releasing its record. Idempotent.
    pub fn stop(&self) {
        if self.shut.swap(true, Ordering::AcqRel) {
            return;
        }
        self.stopping.store(true, Ordering::Relaxed);
        let running = || self.ended.lock().map(|e| e.is_none()).unwrap_or(false);
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

/// Starts the demo long run: issues the agent a grant under the steward's
/// (unlocked) key, opens the embedded endpoint on a local socket with its
/// own record, and starts the agent (`jcp agent demo`) as a child process.
pub fn live_start(state: &AppState, st: &StewardState) -> CmdResult<RunRow> {
    let jcp = jcp_binary()?;
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
    let stream = dir.join("record.jcps");
    let mut gate = Gate::new();
    gate.add_trust_root(resource, root.grant().issuer.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("live-endpoint")
        .enable_all()
        .build()
        .map_err(|e| UiError::new("live.runtime", format!("the endpoint's runtime did not start: {e}")))?;
    // A Unix socket where its path fits (108 bytes), else loopback TCP.
    let sock = dir.join("endpoint.sock");
    let addr = if sock.as_os_str().len() < 100 { Address::Unix(sock) } else { Address::Tcp("127.0.0.1:0".into()) };
    let mut config = Config::new(&stream);
    config.known_through = Some(0);
    // The endpoint's own key seals its record; kept beside it (owner-only) so
    // the record can be reopened by the same point (replay checks the sealer).
    let endpoint_key = Keypair::generate();
    keystore::write_plain(&dir.join("endpoint.key"), &endpoint_key).map_err(|e| key_err(&e))?;
    let (endpoint, bound) = rt
        .block_on(async {
            let (endpoint, _report) = Endpoint::open(config, endpoint_key, gate, None)?;
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
    let mut child: Child = Command::new(&jcp)
        .args(["agent", "demo", "--json", "--stop-with-parent", "--connect", &bound.to_string(), "--run"])
        .arg(&run_path)
        .arg("--key")
        .arg(&agent_key)
        .arg("--chain")
        .arg(&root_path)
        .args([
            "--cost-uj",
            &LIVE_COST_UJ.to_string(),
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
        .map_err(|e| io_err("cannot start the demo agent", &jcp, &e))?;
    let label = format!("live run {stamp} (demo agent, {} budget)", console_view::format_uj(LIVE_BUDGET_UJ));
    let item_id = state.with_store(|s| {
        s.add_item(
            ItemKind::Run,
            &label,
            &run_path.display().to_string(),
            &serde_json::json!({"source": "live", "stream": stream, "dir": dir}),
            now_ms(),
        )
        .map_err(|e| error::store(&e))
    })?;
    let events = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(String::new()));
    let ended = Arc::new(Mutex::new(None));
    let revision = st.revision.clone();
    if let Some(out) = child.stdout.take() {
        let events = events.clone();
        let _ = std::thread::Builder::new().name("agent-stdout".into()).spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v = serde_json::from_str(&line)
                    .unwrap_or_else(|_| serde_json::json!({"event": "output", "message": line}));
                if let Ok(mut e) = events.lock() {
                    e.push(v);
                    let excess = e.len().saturating_sub(EVENTS_KEPT);
                    e.drain(..excess);
                }
                revision.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    if let Some(mut err) = child.stderr.take() {
        let stderr = stderr.clone();
        let _ = std::thread::Builder::new().name("agent-stderr".into()).spawn(move || {
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
        });
    }
    let pid = child.id();
    {
        let ended = ended.clone();
        let revision = st.revision.clone();
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
    let live = Arc::new(LiveRun {
        item_id,
        run_path: run_path.clone(),
        stream,
        addr: bound.to_string(),
        agent: agent.did().to_string(),
        rt,
        endpoint,
        pid,
        marker: AtomicU64::new(0),
        events,
        stderr,
        ended,
        stopping: AtomicBool::new(false),
        shut: AtomicBool::new(false),
    });
    st.live.lock().map_err(|_| error::poisoned("live runs"))?.insert(item_id, live.clone());
    st.revision.fetch_add(1, Ordering::Relaxed);
    state.with_store(|s| {
        s.record_action(now_ms(), "live_start", &run_path.display().to_string(), &serde_json::json!({"signed_by": root.grant().issuer.to_string(), "message": format!("started the demo run: grant {} of {} to agent {}", root.id(), console_view::format_uj(LIVE_BUDGET_UJ), agent.did())}))
            .map_err(|e| error::store(&e))
    })?;
    Ok(RunRow {
        id: item_id,
        label,
        path: run_path.display().to_string(),
        live: Some(live.state()),
        awaiting: false,
        mine: true,
        checkpoints: 0,
        verdict: Some(console_view::tags::Verdict::Clean),
        error: None,
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

// --------------------------------------------------------------- commands

/// The key's status.
#[tauri::command]
pub fn key_status_get(st: tauri::State<'_, StewardState>) -> KeyStatus {
    key_status(&st)
}

/// Creates the steward's key (scrypt runs off the window's thread).
#[tauri::command]
pub async fn key_create_new(st: tauri::State<'_, StewardState>, passphrase: String) -> CmdResult<KeyStatus> {
    key_create(&st, &passphrase)
}

/// Imports a key file chosen in a native dialog (opened here, in Rust).
#[tauri::command]
pub async fn key_import_pick<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    st: tauri::State<'_, StewardState>,
    from_passphrase: String,
    passphrase: String,
) -> CmdResult<Option<KeyStatus>> {
    use tauri_plugin_dialog::DialogExt;
    let Some(from) =
        app.dialog().file().set_title("Import a key file").blocking_pick_file().and_then(|p| p.into_path().ok())
    else {
        return Ok(None);
    };
    key_import(&st, &from, &from_passphrase, &passphrase).map(Some)
}

/// Unlocks the key for this session.
#[tauri::command]
pub async fn key_unlock_now(st: tauri::State<'_, StewardState>, passphrase: String) -> CmdResult<KeyStatus> {
    key_unlock(&st, &passphrase)
}

/// Locks the key now.
#[tauri::command]
pub fn key_lock_now(st: tauri::State<'_, StewardState>) -> CmdResult<KeyStatus> {
    key_lock(&st)
}

/// The steward's overview (runs, awaiting checkpoints, key).
#[tauri::command]
pub fn steward_overview(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
) -> CmdResult<StewardOverview> {
    overview(&state, &st)
}

/// A run as the steward works on it.
#[tauri::command]
pub fn steward_run(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    id: i64,
) -> CmdResult<StewardRunView> {
    run_view(&state, &st, id)
}

/// An amendment or approval, planned and checked, not signed.
#[tauri::command]
pub fn steward_preview(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    id: i64,
    form: AmendForm,
) -> CmdResult<AmendPreview> {
    preview(&state, &st, id, &form)
}

/// Signs an amendment or approval.
#[tauri::command]
pub fn steward_amend(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    id: i64,
    form: AmendForm,
) -> CmdResult<SignedAction> {
    amend(&state, &st, id, &form)
}

/// What a revocation of `grant` kills.
#[tauri::command]
pub fn steward_revoke_plan(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    id: i64,
    grant: String,
) -> CmdResult<RevokePlan> {
    revoke_plan(&state, &st, id, &grant)
}

/// Signs the revocation of `grant`.
#[tauri::command]
pub fn steward_revoke(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    id: i64,
    grant: String,
) -> CmdResult<SignedAction> {
    revoke(&state, &st, id, &grant)
}

/// Every workspace stream's unresolved decisions.
#[tauri::command]
pub fn steward_unresolved(state: tauri::State<'_, AppState>) -> CmdResult<Vec<UnresolvedStream>> {
    unresolved(&state)
}

/// Settles an unresolved decision with a signed note.
#[tauri::command]
pub fn steward_settle(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    stream: String,
    receipt: String,
    status: SettleStatus,
    note: String,
) -> CmdResult<SignedAction> {
    settle(&state, &st, &stream, &receipt, status, &note)
}

/// Starts the demo long run on the embedded endpoint.
#[tauri::command]
pub fn live_run_start(state: tauri::State<'_, AppState>, st: tauri::State<'_, StewardState>) -> CmdResult<RunRow> {
    live_start(&state, &st)
}

/// Stops a live run.
#[tauri::command]
pub fn live_run_stop(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    id: i64,
) -> CmdResult<LiveView> {
    live_stop(&state, &st, id)
}

/// Announces a checkpoint that arrives while the window is in the
/// background: a desktop notification (where the desktop has a notification
/// service; where it has none the failure is logged) and the window's
/// attention hint. Polls the same overview the front end shows, once a second.
pub fn start_attention<R: tauri::Runtime>(app: tauri::AppHandle<R>) {
    use tauri::Manager;
    use tauri_plugin_notification::NotificationExt;
    let spawned = std::thread::Builder::new().name("steward-attention".into()).spawn(move || {
        let mut last = 0u32;
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let (Some(state), Some(st)) = (app.try_state::<AppState>(), app.try_state::<StewardState>()) else {
                continue;
            };
            let Ok(ov) = overview(&state, &st) else { continue };
            if ov.awaiting > last {
                let window = app.get_webview_window("main");
                let background = window.as_ref().is_none_or(|w| !w.is_focused().unwrap_or(false));
                if background {
                    let runs: Vec<&str> = ov.runs.iter().filter(|r| r.awaiting).map(|r| r.label.as_str()).collect();
                    let shown = app
                        .notification()
                        .builder()
                        .title("JCP Console: a checkpoint awaits you")
                        .body(format!("{} run(s) wait for your decision: {}", ov.awaiting, runs.join(", ")))
                        .show();
                    if let Err(e) = shown {
                        eprintln!("jcp-console: the desktop notification was not shown: {e}");
                    }
                    if let Some(w) = window {
                        let _ = w.request_user_attention(Some(tauri::UserAttentionType::Informational));
                    }
                }
            }
            last = ov.awaiting;
        }
    });
    if let Err(e) = spawned {
        eprintln!("jcp-console: checkpoints will not be announced in the background: {e}");
    }
}
