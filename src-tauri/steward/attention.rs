//! Announcing a checkpoint (§4.7) that arrives while the console's window
//! is in the background.

use std::time::Duration;

use super::{overview, StewardState};
use crate::state::AppState;

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
