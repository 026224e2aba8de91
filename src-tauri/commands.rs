//! The app's own commands — the only ones its capability lets the window
//! call. Each reads the state, calls a crate, and returns a typed value or
//! `{code, message}`. File dialogs are opened here, in Rust, and files are
//! read and written here; the front end never touches the filesystem.

#![allow(
    clippy::needless_pass_by_value,
    reason = "Tauri hands `State`, `AppHandle` and the window's arguments to commands by value: its calling convention"
)]

use std::path::{Path, PathBuf};

use console_store::ItemKind;
use console_view::blueprint::{BlueprintReportView, ReconcileFiles};
use console_view::ipc::{
    ActionRow, AppInfo, AuditJob, AuditReportView, EnergySnapshot, ExportResult, StreamRow, UiError, WindowRow,
    WorkspaceItem,
};
use console_view::run::RunView;
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use crate::error::{self, CmdResult};
use crate::state::{now_ms, AppState};

/// Most windows one snapshot may ask for.
pub const MAX_SNAPSHOT_WINDOWS: u32 = 600;

pub fn info(state: &AppState) -> CmdResult<AppInfo> {
    let meter = state.meter.lock().map_err(|_| error::poisoned("meter"))?.availability.clone();
    Ok(AppInfo {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        workspace: state.workspace.display().to_string(),
        store: state.store_info.clone(),
        meter,
        audit: console_view::ipc::Availability {
            available: state.engine.is_some(),
            reason: if state.engine.is_some() { None } else { Some(state.engine_missing.to_owned()) },
        },
        demo_streams: state.demo_streams.lock().map_err(|_| error::poisoned("demo"))?.clone(),
        open_at_start: *state.open_at_start.lock().map_err(|_| error::poisoned("startup"))?,
        audit_at_start: state.audit_at_start,
    })
}

pub fn snapshot(state: &AppState, limit: u32) -> CmdResult<EnergySnapshot> {
    if limit == 0 || limit > MAX_SNAPSHOT_WINDOWS {
        return Err(UiError::new(
            "energy.bad_limit",
            format!("ask for 1 to {MAX_SNAPSHOT_WINDOWS} windows, not {limit}"),
        ));
    }
    let windows = state.with_store(|s| s.recent_windows(limit).map_err(|e| error::store(&e)))?;
    let chart_svg = console_view::chart::energy_chart_svg(&windows, 960, 340).map_err(|e| error::view(&e))?;
    let meter = state.meter.lock().map_err(|_| error::poisoned("meter"))?.clone();
    let rows: Vec<WindowRow> = windows.iter().map(WindowRow::from).collect();
    Ok(EnergySnapshot {
        headline: console_view::energy::headline(&meter.availability, &rows, &meter.ladder),
        total: console_view::energy::span_total(&rows),
        meter: meter.availability,
        windows: rows,
        chart_svg,
        ladder: meter.ladder,
        window_ms: meter.window_ms,
        live_metered: Vec::new(),
    })
}

/// Writes `text` to `path` and records the export as a steward action.
pub fn write_export(state: &AppState, path: &Path, text: &str, what: &str) -> CmdResult<ExportResult> {
    std::fs::write(path, text).map_err(|e| error::io("export.write_failed", "cannot write", path, &e))?;
    let bytes = text.len() as u64;
    state.with_store(|s| {
        s.record_action(now_ms(), what, &path.display().to_string(), &serde_json::json!({"bytes": bytes}))
            .map_err(|e| error::store(&e))
    })?;
    Ok(ExportResult { path: Some(path.display().to_string()), bytes })
}

pub fn energy_export_text(state: &AppState, format: &str) -> CmdResult<String> {
    let retention = state.store_info.window_retention;
    let windows = state.with_store(|s| s.recent_windows(retention).map_err(|e| error::store(&e)))?;
    match format {
        "csv" => console_view::export::windows_csv(&windows),
        "json" => console_view::export::windows_json(&windows),
        other => {
            return Err(UiError::new("export.bad_format", format!("energy exports are csv or json, not {other:?}")))
        }
    }
    .map_err(|e| error::view(&e))
}

pub fn audit_export_text(state: &AppState, id: u64, format: &str) -> CmdResult<String> {
    let (verdict, report, paths) = state.audit_report(id)?;
    match format {
        "json" => serde_json::to_string_pretty(&report).map_err(|e| UiError::new("export.json", e.to_string())),
        "html" => console_view::report::report_html(&report, verdict.as_str(), "JCP audit report", &paths)
            .map_err(|e| error::view(&e)),
        other => Err(UiError::new("export.bad_format", format!("audit reports export as json or html, not {other:?}"))),
    }
}

fn save_dialog<R: Runtime>(app: &AppHandle<R>, name: &str, ext: &str) -> Option<PathBuf> {
    app.dialog()
        .file()
        .set_file_name(name)
        .add_filter(ext.to_uppercase(), &[ext])
        .blocking_save_file()
        .and_then(|p| p.into_path().ok())
}

/// What the console is and can do.
#[tauri::command]
pub fn app_info(state: State<'_, AppState>) -> CmdResult<AppInfo> {
    info(&state)
}

/// The live energy view: last `limit` windows, their chart, the ladder.
#[tauri::command]
pub fn energy_snapshot<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    limit: u32,
) -> CmdResult<EnergySnapshot> {
    let mut snap = snapshot(&state, limit)?;
    if let Some(steward) = app.try_state::<crate::steward::StewardState>() {
        snap.live_metered = steward.metered_lines();
    }
    Ok(snap)
}

/// Saves the window history as CSV or JSON where the person chooses.
#[tauri::command]
pub async fn energy_export<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    format: String,
) -> CmdResult<ExportResult> {
    let text = energy_export_text(&state, &format)?;
    match save_dialog(&app, &format!("energy-windows.{format}"), &format) {
        Some(path) => write_export(&state, &path, &text, "export_energy"),
        None => Ok(ExportResult { path: None, bytes: 0 }),
    }
}

/// Opens the native file dialog (in Rust) and returns the chosen streams,
/// each by its handle (issue 34: the web view never names a path).
#[tauri::command]
pub async fn audit_pick_streams<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
) -> CmdResult<Vec<console_view::ipc::FileHandle>> {
    let picked =
        app.dialog().file().set_title("Open receipt streams").set_directory(&state.workspace).blocking_pick_files();
    Ok(picked
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| p.into_path().ok())
        .map(|p| state.handles.file(&p))
        .collect())
}

/// Starts one audit over the streams behind `handles` (chosen in a native
/// dialog or listed by the workspace).
#[tauri::command]
pub fn audit_start(state: State<'_, AppState>, handles: Vec<String>) -> CmdResult<AuditJob> {
    let paths = handles.iter().map(|h| state.handles.path_of(h)).collect::<CmdResult<Vec<_>>>()?;
    state.start_audit(paths)
}

/// The current audit job, if any.
#[tauri::command]
pub fn audit_status(state: State<'_, AppState>) -> CmdResult<Option<AuditJob>> {
    state.audit_status()
}

/// A finished audit's verdict, report, and the report as HTML.
#[tauri::command]
pub fn audit_report(state: State<'_, AppState>, id: u64) -> CmdResult<AuditReportView> {
    let (verdict, report, _) = state.audit_report(id)?;
    let html = console_view::report::report_fragment(&report).map_err(|e| error::view(&e))?;
    let findings_by_code = console_view::tags::FindingCount::of_report(&report).map_err(|e| error::view(&e))?;
    let answer = console_view::report::answer(&report);
    Ok(AuditReportView { id, verdict, findings_by_code, report, html, answer })
}

/// One record a finding of a finished audit names (issue 39): the stream is
/// the audit's own, by its place in the job's list (never a path from the
/// web view); the record by its byte offset or its id. An id not in that
/// stream is looked for in the job's other streams.
#[tauri::command]
pub async fn audit_record(
    state: State<'_, AppState>,
    id: u64,
    stream: u32,
    at: Option<u64>,
    record: Option<String>,
) -> CmdResult<console_view::ipc::RecordPanel> {
    let (_, _, paths) = state.audit_report(id)?;
    let locate = match (at, record) {
        (Some(at), _) => jcp_audit::record::Locate::At(at),
        (None, Some(r)) => jcp_audit::record::Locate::Id(
            jcp::cbor::ContentId::parse(&r)
                .ok_or_else(|| UiError::new("audit.bad_id", format!("{r:?} is not a record id (64 hex digits)")))?,
        ),
        (None, None) => return Err(UiError::new("audit.no_record_named", "name a record by its offset or its id")),
    };
    let first = usize::try_from(stream).ok().filter(|i| *i < paths.len()).ok_or_else(|| {
        UiError::new(
            "audit.unknown_stream",
            format!("audit {id} has {} streams; there is no stream {stream}", paths.len()),
        )
    })?;
    // Reading a stream can take a while: off the IPC thread.
    tauri::async_runtime::spawn_blocking(move || {
        // The finding's stream first; an id may be a record of another.
        let order = std::iter::once(first).chain((0..paths.len()).filter(move |i| *i != first));
        let mut first_err = None;
        for i in order {
            match jcp_audit::record::show(std::path::Path::new(&paths[i]), locate) {
                Ok(v) => return Ok(console_view::report::record_panel(u32::try_from(i).unwrap_or(u32::MAX), &v)),
                Err(e @ jcp_audit::AuditError::NoRecordWithId { .. }) if first_err.is_none() => first_err = Some(e),
                Err(jcp_audit::AuditError::NoRecordWithId { .. }) => {}
                Err(e) => return Err(UiError::new(&crate::engines::audit_code(&e), e.to_string())),
            }
        }
        Err(first_err.map_or_else(
            || UiError::new("audit.no_record_with_id", "no stream of this audit holds that record"),
            |e| UiError::new(&crate::engines::audit_code(&e), e.to_string()),
        ))
    })
    .await
    .map_err(|e| UiError::new("audit.record_task", e.to_string()))?
}

/// Asks a running audit to stop.
#[tauri::command]
pub fn audit_cancel(state: State<'_, AppState>, id: u64) -> CmdResult<AuditJob> {
    state.cancel_audit(id)
}

/// Saves a finished audit's report as JSON or self-contained HTML.
#[tauri::command]
pub async fn audit_export<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    id: u64,
    format: String,
) -> CmdResult<ExportResult> {
    let text = audit_export_text(&state, id, &format)?;
    match save_dialog(&app, &format!("audit-report.{format}"), &format) {
        Some(path) => write_export(&state, &path, &text, "export_report"),
        None => Ok(ExportResult { path: None, bytes: 0 }),
    }
}

/// Streams opened in this workspace, with their last verdict.
#[tauri::command]
pub fn workspace_streams(state: State<'_, AppState>) -> CmdResult<Vec<StreamRow>> {
    state.with_store(|s| {
        Ok(s.streams()
            .map_err(|e| error::store(&e))?
            .into_iter()
            .map(|r| StreamRow {
                handle: state.handles.grant(Path::new(&r.path)),
                path: r.path,
                size_bytes: r.size_bytes,
                opened_at_ms: r.opened_at_ms,
                last_verdict: r.last_verdict.as_deref().and_then(console_view::tags::Verdict::parse),
            })
            .collect())
    })
}

/// The steward's most recent actions.
#[tauri::command]
pub fn steward_actions(state: State<'_, AppState>, limit: u32) -> CmdResult<Vec<ActionRow>> {
    state.with_store(|s| {
        Ok(s.actions(limit.min(1000))
            .map_err(|e| error::store(&e))?
            .into_iter()
            .map(|a| ActionRow { at_ms: a.at_ms, action: a.action, subject: a.subject })
            .collect())
    })
}

/// Everything in the workspace: its streams (with their last verdict), then
/// its runs and blueprint reconciles (with their last outcome).
pub fn overview(state: &AppState) -> CmdResult<Vec<WorkspaceItem>> {
    state.with_store(|s| {
        let mut out: Vec<WorkspaceItem> = s
            .streams()
            .map_err(|e| error::store(&e))?
            .into_iter()
            .map(|r| WorkspaceItem {
                kind: console_view::tags::ItemKind::Stream,
                id: None,
                label: Path::new(&r.path)
                    .file_name()
                    .map_or_else(|| r.path.clone(), |n| n.to_string_lossy().into_owned()),
                handle: state.handles.grant(Path::new(&r.path)),
                path: r.path,
                last_status: r.last_verdict,
            })
            .collect();
        out.extend(s.items().map_err(|e| error::store(&e))?.into_iter().map(|i| WorkspaceItem {
            kind: match i.kind {
                ItemKind::Run => console_view::tags::ItemKind::Run,
                ItemKind::Blueprint => console_view::tags::ItemKind::Blueprint,
            },
            id: Some(i.id),
            label: i.label,
            handle: state.handles.grant(Path::new(&i.path)),
            path: i.path,
            last_status: i.last_status,
        }));
        Ok(out)
    })
}

/// The item `id`, which must be of `kind`.
fn item_of(state: &AppState, id: i64, kind: ItemKind) -> CmdResult<console_store::ItemRecord> {
    let item = state.with_store(|s| s.item(id).map_err(|e| error::store(&e)))?;
    match item {
        Some(i) if i.kind == kind => Ok(i),
        Some(i) => Err(UiError::new(
            "workspace.wrong_kind",
            format!("workspace item {id} is a {}, not a {}", i.kind.as_str(), kind.as_str()),
        )),
        None => Err(UiError::new("workspace.unknown_item", format!("there is no workspace item {id}"))),
    }
}

/// Reconciles a blueprint item's files (console-view runs the crate) and
/// keeps its outcome in the store.
pub fn blueprint_view(state: &AppState, id: i64) -> CmdResult<BlueprintReportView> {
    let item = item_of(state, id, ItemKind::Blueprint)?;
    let files: ReconcileFiles = serde_json::from_value(item.detail).map_err(|e| {
        UiError::new("workspace.invalid_item", format!("workspace item {id} does not name its blueprint files: {e}"))
    })?;
    let view = console_view::blueprint::report(&files).map_err(|e| error::view(&e))?;
    state.with_store(|s| s.set_item_status(id, view.verdict.as_str(), now_ms()).map_err(|e| error::store(&e)))?;
    Ok(view)
}

/// Reads and verifies a run item's file (console-view calls the core) and
/// keeps its verdict in the store.
pub fn run_view(state: &AppState, id: i64) -> CmdResult<RunView> {
    let item = item_of(state, id, ItemKind::Run)?;
    let view = console_view::run::report(Path::new(&item.path)).map_err(|e| error::view(&e))?;
    state.with_store(|s| s.set_item_status(id, view.verdict.as_str(), now_ms()).map_err(|e| error::store(&e)))?;
    Ok(view)
}

/// What the workspace holds, for the overview.
#[tauri::command]
pub fn workspace_overview(state: State<'_, AppState>) -> CmdResult<Vec<WorkspaceItem>> {
    overview(&state)
}

/// Takes an item off the workspace (a stream by its path, a run or
/// blueprint by its id); its file stays where it is.
pub fn forget(state: &AppState, kind: console_view::tags::ItemKind, id: Option<i64>, path: &str) -> CmdResult<()> {
    state.with_store(|s| {
        let (gone, subject) = match (kind, id) {
            (console_view::tags::ItemKind::Stream, _) => (s.forget_stream(path, now_ms()), path.to_owned()),
            (_, Some(id)) => (s.forget_item(id, now_ms()), id.to_string()),
            (_, None) => {
                return Err(UiError::new("workspace.unknown_item", "a run or blueprint item is named by its id"));
            }
        };
        if !gone.map_err(|e| error::store(&e))? {
            return Err(UiError::new(
                "workspace.unknown_item",
                format!("{subject} is not in the workspace (already removed?)"),
            ));
        }
        s.record_action(now_ms(), "forget", &subject, &serde_json::json!({"kind": kind}))
            .map_err(|e| error::store(&e))?;
        Ok(())
    })
}

/// Takes an item off the workspace (a stream by its handle, a run or
/// blueprint by its id); its file stays.
#[tauri::command]
pub fn workspace_forget(
    state: State<'_, AppState>,
    kind: console_view::tags::ItemKind,
    id: Option<i64>,
    handle: Option<String>,
) -> CmdResult<()> {
    let path = match (kind, handle) {
        (console_view::tags::ItemKind::Stream, Some(h)) => state.handles.path_of(&h)?,
        (console_view::tags::ItemKind::Stream, None) => {
            return Err(UiError::new("workspace.unknown_item", "a stream is named by its handle"))
        }
        _ => String::new(),
    };
    forget(&state, kind, id, &path)
}

/// The developer's view of a blueprint item: the reconcile report.
#[tauri::command]
pub fn blueprint_report(state: State<'_, AppState>, id: i64) -> CmdResult<BlueprintReportView> {
    blueprint_view(&state, id)
}

/// The steward's read-only view of a run item: its checkpoints and verdicts.
#[tauri::command]
pub fn run_report(state: State<'_, AppState>, id: i64) -> CmdResult<RunView> {
    run_view(&state, id)
}
