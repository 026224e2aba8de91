//! The steward's Tauri commands: each reads the window's arguments and
//! calls one function of the steward's modules.
#![allow(
    clippy::needless_pass_by_value,
    reason = "Tauri commands take their arguments (and `tauri::State`) by value: the invoke handler deserialises owned values"
)]

use console_view::steward::{
    AmendForm, AmendPreview, GatewayForm, GatewayPrepared, KeyStatus, LiveView, RevokePlan, RunRow, SettleStatus,
    SignedAction, StewardOverview, StewardRunView, UnresolvedStream,
};
use zeroize::Zeroizing;

use super::{
    amend, gateway_prepare, key_create, key_import, key_lock, key_status, key_unlock, live_start, live_stop, overview,
    preview, revoke, revoke_plan, run_view, settle, unresolved, StewardState,
};
use crate::error::CmdResult;
use crate::state::AppState;

/// The key's status.
#[tauri::command]
pub fn key_status_get(st: tauri::State<'_, StewardState>) -> KeyStatus {
    key_status(&st)
}

/// Creates the steward's key (scrypt runs off the window's thread). Every
/// passphrase the window sends is wiped from this process's memory when
/// the command returns (`Zeroizing`, issue 34).
#[tauri::command]
pub async fn key_create_new(st: tauri::State<'_, StewardState>, passphrase: Zeroizing<String>) -> CmdResult<KeyStatus> {
    key_create(&st, &passphrase)
}

/// Imports a key file chosen in a native dialog (opened here, in Rust).
#[tauri::command]
pub async fn key_import_pick<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    st: tauri::State<'_, StewardState>,
    from_passphrase: Zeroizing<String>,
    passphrase: Zeroizing<String>,
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
pub async fn key_unlock_now(st: tauri::State<'_, StewardState>, passphrase: Zeroizing<String>) -> CmdResult<KeyStatus> {
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

/// Settles an unresolved decision with a signed note; the stream is named
/// by the handle its unresolved list gave (issue 34: the note is written
/// beside it, so never beside a path from the web view).
#[tauri::command]
pub fn steward_settle(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    stream: String,
    receipt: String,
    status: SettleStatus,
    note: String,
) -> CmdResult<SignedAction> {
    let stream = state.handles.path_of(&stream)?;
    settle(&state, &st, &stream, &receipt, status, &note)
}

/// Starts the demo long run on the embedded endpoint.
#[tauri::command]
pub fn live_run_start(state: tauri::State<'_, AppState>, st: tauri::State<'_, StewardState>) -> CmdResult<RunRow> {
    live_start(&state, &st)
}

/// Sets up an MCP gateway run under the steward's key: the line to paste into the agent's MCP configuration.
#[tauri::command]
pub fn gateway_run_prepare(
    state: tauri::State<'_, AppState>,
    st: tauri::State<'_, StewardState>,
    form: GatewayForm,
) -> CmdResult<GatewayPrepared> {
    gateway_prepare(&state, &st, &form)
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
