//! Reading runs (§4.7): the runs folder, watched for run files, checkpoints
//! and revocations; the steward's overview of every run; and one run as the
//! steward works on it (verified, awaiting or not, its history).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use console_store::{ItemKind, StewardAction, Store};
use console_view::authority::read_run;
use console_view::ipc::UiError;
use console_view::steward::{self as sv, HistoryRow, RunRow, StewardOverview, StewardRunView};
use jcp::steering::{Run, RunReport};

use super::{key_status, StewardState};
use crate::error::{self, CmdResult};
use crate::state::{now_ms, AppState};

/// Lists the runs folder's run files in the workspace (new ones added).
/// Returns whether anything changed since `seen`.
pub fn scan_runs<S: BuildHasher>(
    store: &Mutex<Store>,
    runs_dir: &Path,
    seen: &mut HashMap<PathBuf, (u64, SystemTime), S>,
) -> bool {
    let Ok(entries) = std::fs::read_dir(runs_dir) else { return false };
    let mut changed = false;
    let now = now_ms();
    let mut present = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        let is_run = p.extension().is_some_and(|x| x == jcp::steering::RUN_EXTENSION);
        let is_revs = p.to_string_lossy().ends_with(".revocations");
        // A gateway's log beside its run (`<run>.events.jsonl`): its calls,
        // holds and close reach the view as they happen (issue 39: the
        // Steward view never shows a session running after it closed).
        let is_log = p.to_string_lossy().ends_with(".events.jsonl");
        if !is_run && !is_revs && !is_log {
            continue;
        }
        let stamp = std::fs::metadata(&p).map(|m| (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH))).ok();
        let Some(stamp) = stamp else { continue };
        present.push(p.clone());
        if seen.get(&p) != Some(&stamp) {
            if is_run && !seen.contains_key(&p) {
                let label =
                    p.file_stem().map_or_else(|| p.display().to_string(), |n| format!("run {}", n.to_string_lossy()));
                // A run the person took off the workspace is not listed again.
                let s = store.lock().ok().filter(|s| !crate::state::taken_off(s, &p.display().to_string()));
                if let Some(s) = s {
                    if let Err(e) = s.add_item_if_absent(
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
/// dropped there, a checkpoint the agent appends, a revocation written
/// beside a run, or a line a gateway adds to its log beside a run bumps the
/// revision the front end polls.
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

pub(super) fn run_item(state: &AppState, id: i64) -> CmdResult<console_store::ItemRecord> {
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
        let (verdict, status, mine, checkpoints, err) =
            match read_run(path).and_then(|(r, _)| r.verify().map(|rep| (r, rep))) {
                Ok((run, rep)) => {
                    // A history that does not read says nothing of a stop.
                    let actions = actions_of(state, &i.path).unwrap_or_default();
                    (
                        Some(console_view::tags::Verdict::of(rep.clean)),
                        status_of(path, &run, &rep, live, &actions).0,
                        me.as_ref() == Some(&rep.issuer),
                        rep.checkpoints.len() as u64,
                        None,
                    )
                }
                Err(e) => (None, sv::RunStatus::Unreadable, false, 0, Some(format!("{} ({})", e, e.code()))),
            };
        // Only a run that awaits (its agent not gone) awaits anyone.
        let aw = status == sv::RunStatus::Awaiting;
        if aw && mine {
            awaiting += 1;
        }
        runs.push(RunRow {
            id: i.id,
            label: i.label,
            path: i.path,
            live,
            awaiting: aw,
            status,
            mine,
            checkpoints,
            verdict,
            error: err,
        });
    }
    Ok(StewardOverview { revision: st.revision.load(Ordering::Relaxed), awaiting, runs, key: key_status(st) })
}

/// The console's history of the run at `run_path`, oldest first.
fn actions_of(state: &AppState, run_path: &str) -> CmdResult<Vec<StewardAction>> {
    state.with_store(|s| s.actions_on(run_path, 500).map_err(|e| error::store(&e)))
}

/// A readable run's status ([`sv::run_status`]: its record, the revocations
/// beside it, what runs it here, and whether its history records the
/// steward stopping its agent), with the grants revoked beside it.
fn status_of(
    run_path: &Path,
    run: &Run,
    report: &RunReport,
    live: Option<sv::LiveState>,
    actions: &[StewardAction],
) -> (sv::RunStatus, Vec<String>) {
    let revoked: Vec<String> = sv::revocations_of(run_path, run).into_iter().map(|(g, _)| g.to_string()).collect();
    let status = sv::run_status(sv::RunFacts {
        readable: true,
        revoked: report.active_grant.is_some_and(|a| revoked.contains(&a.to_string())),
        awaiting: sv::awaiting(report),
        live,
        stopped_by_steward: actions.iter().any(|a| a.action == "live_stop"),
    });
    (status, revoked)
}

/// A run as the steward works on it: the verified run, whether it awaits,
/// its revocations, its history, its live state.
pub fn run_view(state: &AppState, st: &StewardState, id: i64) -> CmdResult<StewardRunView> {
    let item = run_item(state, id)?;
    let path = PathBuf::from(&item.path);
    let (run, report, view) = console_view::run::read_view(&path).map_err(|e| error::view(&e))?;
    let live = st.live_of(id);
    let actions = actions_of(state, &item.path)?;
    let (status, revoked) = status_of(&path, &run, &report, live.as_ref().map(|l| l.state()), &actions);
    let awaiting = status == sv::RunStatus::Awaiting;
    let (view, revocable) = sv::with_revocations(view, &report, &revoked);
    let history = actions
        .into_iter()
        .map(|a| HistoryRow {
            at_ms: a.at_ms,
            action: a.action,
            signed_by: a.detail["signed_by"].as_str().unwrap_or("").to_owned(),
            text: a.detail["message"].as_str().unwrap_or("").to_owned(),
        })
        .collect();
    state.with_store(|s| s.set_item_status(id, view.verdict.as_str(), now_ms()).map_err(|e| error::store(&e)))?;
    // The records the Auditor may be asked to open, by handle (issue 34).
    let mut gateway = sv::gateway_view(&path);
    if let Some(g) = gateway.as_mut() {
        g.stream_handle = g.stream.as_deref().map(|s| state.handles.grant(std::path::Path::new(s)));
    }
    let live = live.map(|l| {
        let mut v = l.view();
        v.stream_handle = state.handles.grant(std::path::Path::new(&v.stream));
        v
    });
    let spend = sv::spend_chart(&view).map_err(|e| error::view(&e))?;
    Ok(StewardRunView { id, run: view, awaiting, revoked, revocable, history, live, gateway, spend })
}
