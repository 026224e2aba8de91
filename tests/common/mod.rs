//! What the shell's integration tests share: a command invoked through
//! Tauri's mock runtime, the real IPC path.
#![allow(clippy::unwrap_used, dead_code)]

use serde_json::Value;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::WebviewWindow;

/// Invokes `cmd` with `body` as the front end would; `Err` is the `{code, message}` value.
pub fn invoke(w: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Result<Value, Value> {
    get_ipc_response(
        w,
        InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: InvokeBody::Json(body),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|b| b.deserialize::<Value>().unwrap())
}

/// The handle a Rust-side picker would give the window for `path` (issue
/// 34: the window names files only by handles the console gave it).
pub fn picked(w: &WebviewWindow<MockRuntime>, path: impl AsRef<std::path::Path>) -> String {
    use tauri::Manager;
    w.state::<jcp_console::state::AppState>().handles.grant(path.as_ref())
}
