//! Recording the machine's own windows as a session (JCP §5.4) and the
//! Live energy view's analysis of a session: forwards to
//! `console_view::session` and `jcp_meter::session`; nothing is measured or
//! judged here. The meter thread hands every closed window to the
//! [`Recorder`]; while a recording runs it keeps the raw windows (provenance,
//! coverage, declines and gaps as the meter said them) until it is stopped
//! and written to `<workspace>/sessions/`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use console_view::session::{DeclaredBaseline, RecordedSession, RecordingStatus, SessionAnalysis, SessionForm};
use jcp_meter::estimate::HostId;
use jcp_meter::Window;
use tauri::State;

use crate::error::{self, CmdResult, UiError};
use crate::state::{now_ms, AppState};

/// The most windows one session holds (a day of 1 s windows); later windows
/// are not in it, and the status says so.
pub const MAX_WINDOWS: usize = 86_400;

/// Where recorded sessions and declared baselines go, in the workspace.
pub const SESSIONS_DIR: &str = "sessions";

#[derive(Debug)]
struct Active {
    occupancy: Option<String>,
    started_ms: u64,
    windows: Vec<Window>,
    full: bool,
}

#[derive(Debug, Default)]
struct RecState {
    meter: Option<(HostId, u64)>,
    active: Option<Active>,
}

/// The recording shared by the meter thread and the commands.
#[derive(Debug, Default)]
pub struct Recorder {
    inner: Mutex<RecState>,
}

impl Recorder {
    /// The meter runs on `host` with windows of `interval_ns`.
    pub fn meter_started(&self, host: HostId, interval_ns: u64) {
        if let Ok(mut s) = self.inner.lock() {
            s.meter = Some((host, interval_ns));
        }
    }

    /// A window closed: kept when a recording runs.
    pub fn push(&self, w: &Window) {
        let Ok(mut s) = self.inner.lock() else { return };
        if let Some(a) = s.active.as_mut() {
            if a.windows.len() < MAX_WINDOWS {
                a.windows.push(w.clone());
            } else {
                a.full = true;
            }
        }
    }

    /// Where the recording stands.
    pub fn status(&self) -> CmdResult<RecordingStatus> {
        let s = self.inner.lock().map_err(|_| error::poisoned("recorder"))?;
        Ok(match &s.active {
            Some(a) => RecordingStatus {
                meter_running: s.meter.is_some(),
                recording: true,
                occupancy: a.occupancy.clone(),
                windows: a.windows.len() as u64,
                started_ms: Some(a.started_ms),
                full: a.full,
            },
            None => RecordingStatus { meter_running: s.meter.is_some(), ..RecordingStatus::default() },
        })
    }

    /// Starts a recording with the occupancy the operator declares for it.
    pub fn start(&self, occupancy: &str) -> CmdResult<RecordingStatus> {
        {
            let mut s = self.inner.lock().map_err(|_| error::poisoned("recorder"))?;
            if s.meter.is_none() {
                return Err(UiError::new(
                    "energy.no_meter",
                    "the meter is not running on this machine: there is nothing to record (see the ladder)",
                ));
            }
            if s.active.is_some() {
                return Err(UiError::new("energy.recording", "a recording is already running: stop it first"));
            }
            let occupancy = Some(occupancy.trim().to_owned()).filter(|o| !o.is_empty());
            s.active = Some(Active { occupancy, started_ms: now_ms(), windows: Vec::new(), full: false });
        }
        self.status()
    }

    /// Stops the recording and writes it under `dir`. A recording that holds
    /// no window yet, or whose file cannot be written, is kept running:
    /// nothing recorded is lost.
    pub fn stop(&self, dir: &Path) -> CmdResult<RecordedSession> {
        let mut s = self.inner.lock().map_err(|_| error::poisoned("recorder"))?;
        let Some((host, interval_ns)) = s.meter.clone() else {
            return Err(UiError::new("energy.no_meter", "the meter is not running"));
        };
        let Some(a) = s.active.as_ref() else {
            return Err(UiError::new("energy.not_recording", "no recording is running"));
        };
        if a.windows.is_empty() {
            return Err(UiError::new(
                "energy.empty_recording",
                "no window has closed since the recording started; it goes on",
            ));
        }
        let session = jcp_meter::session::Session::new(host, a.occupancy.clone(), interval_ns, None, &a.windows);
        let path = dir.join(format!("session-{}.json", a.started_ms));
        let io = |e: &dyn std::fmt::Display| {
            UiError::new("energy.write_failed", format!("{}: {e}; the recording goes on", path.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| io(&e))?;
        jcp_meter::session::record_to(&path, &session).map_err(|e| io(&e))?;
        let done = RecordedSession {
            path: path.display().to_string(),
            handle: String::new(),
            windows: a.windows.len() as u64,
            full: a.full,
        };
        s.active = None;
        Ok(done)
    }
}

fn sessions_dir(state: &AppState) -> PathBuf {
    state.workspace.join(SESSIONS_DIR)
}

/// Where the recording stands.
#[tauri::command]
#[allow(clippy::needless_pass_by_value, reason = "a Tauri command takes `State` and its arguments by value")]
pub fn energy_record_status(state: State<'_, AppState>) -> CmdResult<RecordingStatus> {
    state.recorder.status()
}

/// Starts recording the machine's windows, at the declared occupancy.
#[tauri::command]
#[allow(clippy::needless_pass_by_value, reason = "a Tauri command takes `State` and its arguments by value")]
pub fn energy_record_start(state: State<'_, AppState>, occupancy: String) -> CmdResult<RecordingStatus> {
    state.recorder.start(&occupancy)
}

/// Stops the recording and writes its session file in the workspace.
#[tauri::command]
#[allow(clippy::needless_pass_by_value, reason = "a Tauri command takes `State` and its arguments by value")]
pub fn energy_record_stop(state: State<'_, AppState>) -> CmdResult<RecordedSession> {
    let mut done = state.recorder.stop(&sessions_dir(&state))?;
    done.handle = state.handles.grant(Path::new(&done.path));
    Ok(done)
}

/// A session against a baseline (§5.4) and, if asked, a grant's spend
/// against it (§5.5). Every file of the form is a handle (issue 34).
#[tauri::command]
pub async fn energy_session_analyze(state: State<'_, AppState>, form: SessionForm) -> CmdResult<SessionAnalysis> {
    let handles = &state.handles;
    if form.session.trim().is_empty() {
        return Err(UiError::new("energy.no_session", "choose a session (record one, or open a session file)"));
    }
    let form = SessionForm {
        session: handles.path_of(&form.session)?,
        baseline: handles.optional_path(form.baseline.as_ref())?,
        causes: handles.optional_path(form.causes.as_ref())?,
        streams: form.streams.iter().map(|h| handles.path_of(h)).collect::<CmdResult<Vec<_>>>()?,
        grant: form.grant,
    };
    tauri::async_runtime::spawn_blocking(move || console_view::session::analyze(&form).map_err(|e| error::view(&e)))
        .await
        .map_err(|e| UiError::new("energy.refused", format!("the analysis stopped: {e}")))?
}

/// Declares a baseline from a recorded session, written beside the sessions.
#[tauri::command]
#[allow(clippy::needless_pass_by_value, reason = "a Tauri command takes `State` and its arguments by value")]
pub fn energy_baseline_declare(state: State<'_, AppState>, session: String) -> CmdResult<DeclaredBaseline> {
    let src = state.handles.resolve(&session)?;
    let stem = src.file_stem().map_or_else(|| "session".to_owned(), |s| s.to_string_lossy().into_owned());
    let out = sessions_dir(&state).join(format!("baseline-{stem}.json"));
    let text = console_view::session::declare_baseline(&src, &out).map_err(|e| error::view(&e))?;
    Ok(DeclaredBaseline { path: out.display().to_string(), handle: state.handles.grant(&out), text })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(n: u64) -> (HostId, Vec<Window>) {
        let ws: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                serde_json::json!({"seq": i, "start_ns": i * 1_000_000_000, "end_ns": (i + 1) * 1_000_000_000,
                "start_unix_ms": 1_000 + i * 1_000, "end_unix_ms": 2_000 + i * 1_000, "energy_uj": 5_000_000 + i,
                "provenance": "Estimator", "coverage": "Whole", "rung": "estimate", "declined": [], "gap": null})
            })
            .collect();
        let text = serde_json::json!({"format": "jcp-meter-session/1",
            "host": {"hostname": "h", "machine": "m", "cpu": "c", "logical_cpus": 2, "os": "linux"},
            "occupancy": "idle", "interval_ns": 1_000_000_000u64, "replay_of": null, "windows": ws});
        let s = jcp_meter::session::Session::from_bytes("t.json", text.to_string().as_bytes()).unwrap();
        (s.host.clone(), s.to_windows())
    }

    #[test]
    fn s5_4_a_recording_keeps_the_meters_windows_and_writes_a_session_that_reads_back() {
        let r = Recorder::default();
        assert_eq!(r.start("idle").unwrap_err().code, "energy.no_meter", "no meter, nothing to record");
        let (host, ws) = windows(3);
        r.meter_started(host, 1_000_000_000);
        r.push(&ws[0]); // before the recording: not in it
        let st = r.start(" idle ").unwrap();
        assert!(st.recording && st.occupancy.as_deref() == Some("idle"));
        assert_eq!(r.start("idle").unwrap_err().code, "energy.recording");
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(r.stop(dir.path()).unwrap_err().code, "energy.empty_recording");
        assert!(r.status().unwrap().recording, "an empty stop keeps the recording running");
        r.push(&ws[1]);
        r.push(&ws[2]);
        let done = r.stop(dir.path()).unwrap();
        assert_eq!(done.windows, 2);
        let back = jcp_meter::session::Session::load(Path::new(&done.path)).unwrap();
        assert_eq!(back.windows.iter().map(|w| w.seq).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(back.occupancy.as_deref(), Some("idle"));
        assert!(!r.status().unwrap().recording);
    }

    #[test]
    fn s5_4_a_session_that_cannot_be_written_is_not_lost() {
        let r = Recorder::default();
        let (host, ws) = windows(1);
        r.meter_started(host, 1_000_000_000);
        r.start("").unwrap();
        r.push(&ws[0]);
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, b"x").unwrap();
        let e = r.stop(&blocked.join("sessions")).unwrap_err();
        assert_eq!(e.code, "energy.write_failed");
        let st = r.status().unwrap();
        assert!(st.recording && st.windows == 1, "the windows are still there");
        assert_eq!(st.occupancy, None, "a blank occupancy is none declared, not an empty name");
        assert_eq!(r.stop(dir.path()).unwrap().windows, 1);
    }
}
