//! JCP Console's Tauri shell. It only wires things up: the workspace state,
//! the dialog plugin (used from Rust only), drag-and-drop of streams, and the
//! list of the app's own commands. Every command calls a crate and returns
//! its typed result or an `{code, message}` error.

pub mod command_names;
pub mod commands;
pub mod developer;
pub mod engines;
pub mod error;
pub mod priority;
pub mod sessions;
pub mod state;
pub mod steward;

use std::path::PathBuf;

use tauri::{Manager, Runtime};

use crate::state::AppState;

/// Where the workspace lives: `$JCP_CONSOLE_WORKSPACE`, else the app's data folder.
fn workspace_dir<R: Runtime>(app: &tauri::App<R>) -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("JCP_CONSOLE_WORKSPACE") {
        return Ok(PathBuf::from(dir));
    }
    app.path().app_data_dir().map_err(|e| format!("no data folder for the workspace: {e}"))
}

/// Adds the console's plugins, commands and window events to a builder on
/// any runtime (the real one, or Tauri's `mock_builder()` in tests).
pub fn configure<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .invoke_handler(tauri::generate_handler![
            commands::app_info,
            commands::energy_snapshot,
            commands::energy_export,
            commands::audit_pick_streams,
            commands::audit_start,
            commands::audit_status,
            commands::audit_report,
            commands::audit_cancel,
            commands::audit_export,
            commands::workspace_streams,
            commands::steward_actions,
            commands::workspace_overview,
            commands::workspace_forget,
            commands::audit_record,
            commands::blueprint_report,
            commands::run_report,
            steward::commands::key_status_get,
            steward::commands::key_create_new,
            steward::commands::key_import_pick,
            steward::commands::key_unlock_now,
            steward::commands::key_lock_now,
            steward::commands::steward_overview,
            steward::commands::steward_run,
            steward::commands::steward_preview,
            steward::commands::steward_amend,
            steward::commands::steward_revoke_plan,
            steward::commands::steward_revoke,
            steward::commands::live_run_start,
            steward::commands::live_run_stop,
            steward::commands::gateway_run_prepare,
            steward::commands::steward_unresolved,
            steward::commands::steward_settle,
            developer::developer_pick_file,
            developer::blueprint_open,
            developer::intent_inspect,
            developer::intent_compare,
            developer::developer_pick_folder,
            developer::blueprint_conformance,
            sessions::energy_record_status,
            sessions::energy_record_start,
            sessions::energy_record_stop,
            sessions::energy_session_analyze,
            sessions::energy_baseline_declare,
        ])
        .on_window_event(|window, event| {
            // Streams dropped on the window are read in Rust; the front end sees the job by polling.
            if let tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) = event {
                let Some(state) = window.try_state::<AppState>() else { return };
                let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                if let Err(e) = state.start_audit(paths.clone()) {
                    eprintln!("jcp-console: dropped streams not audited: {}", e.message);
                    state.record_failed_start(paths, e);
                }
            }
        })
}

/// Starts the console. Arguments are stream files to open and audit at
/// once, and `--blueprint F --deployment F [--keys F] [--host-bounds F]
/// [--descriptors F]`: a reconcile to open in the Blueprint view.
pub fn run() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (blueprint, rest) = match developer::split_args(&args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("jcp-console: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let streams: Vec<String> = rest.into_iter().filter(|a| !a.starts_with('-')).collect();
    let result = configure(tauri::Builder::default())
        .setup(move |app| {
            if let Err(e) = priority::init_audit_pool() {
                eprintln!("jcp-console: {e}");
            }
            let dir = workspace_dir(app)?;
            let mut state =
                AppState::open(&dir, engines::audit_engine(), engines::AUDIT_MISSING, engines::meter_view());
            if let Some(e) = &state.store_info.error {
                eprintln!("jcp-console: {}", e.message);
            }
            // First start: a demo run, blueprint reconciles and streams in the workspace, so there is real data at
            // once; written off the main thread so the window paints first.
            let (store, demo, demo_dir) = (state.store.clone(), state.demo_streams.clone(), dir.join("demo"));
            let spawned = std::thread::Builder::new().name("demo".into()).spawn(move || {
                match engines::prepare_demo_run(&demo_dir) {
                    Ok(item) => state::register_demo_items(&store, &[item]),
                    Err(e) => eprintln!("jcp-console: {}", e.message),
                }
                match engines::prepare_demo_authority(&demo_dir.join("authority")) {
                    Ok(items) => state::register_demo_items(&store, &items),
                    Err(e) => eprintln!("jcp-console: {}", e.message),
                }
                match engines::prepare_demo_blueprints(&demo_dir.join("blueprint")) {
                    Ok(items) => state::register_demo_items(&store, &items),
                    Err(e) => eprintln!("jcp-console: {}", e.message),
                }
                match engines::prepare_demo(&demo_dir) {
                    Ok(paths) => state::register_demo(&store, &demo, &paths),
                    Err(e) => eprintln!("jcp-console: {}", e.message),
                }
            });
            if let Err(e) = spawned {
                eprintln!("jcp-console: the demo workspace was not prepared: {e}");
            }
            engines::start_meter(state.store.clone(), state.meter.clone(), state.recorder.clone());
            state.audit_at_start = !streams.is_empty();
            if !streams.is_empty() {
                if let Err(e) = state.start_audit(streams.clone()) {
                    eprintln!("jcp-console: {}", e.message);
                    state.record_failed_start(streams.clone(), e);
                }
            }
            if let Some(form) = &blueprint {
                match developer::open_blueprint(&state, form) {
                    Ok(id) => state.set_open_at_start(id),
                    Err(e) => eprintln!("jcp-console: {}", e.message),
                }
            }
            let steward = steward::StewardState::new(&dir);
            steward::start_watcher(state.store.clone(), steward.runs_dir.clone(), steward.revision.clone());
            app.manage(state);
            app.manage(steward);
            steward::start_attention(app.handle().clone());
            Ok(())
        })
        .build(tauri::generate_context!())
        .map(|app| {
            app.run(|handle, event| {
                // Closing the console stops its live runs: each agent gets SIGTERM, each endpoint flushes its record.
                if let tauri::RunEvent::Exit = event {
                    if let Some(st) = handle.try_state::<steward::StewardState>() {
                        st.stop_all();
                    }
                }
            });
        });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jcp-console: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
