//! The developer's commands: open any Blueprint and Deployment from disk
//! (native dialog here, in Rust, or the app's arguments) and the Intent
//! panel (Agent-Safe Intent v1: inspect a binding, compare two). Each only
//! forwards to `console_view::blueprint` / `console_view::intent`, which
//! call the `blueprint` and `intent` crates.

#![allow(
    clippy::needless_pass_by_value,
    reason = "Tauri hands `State`, `AppHandle` and the window's arguments to commands by value: its calling convention"
)]

use std::path::PathBuf;

use console_store::ItemKind;
use console_view::blueprint::ReconcileFiles;
use console_view::intent::{IntentComparison, IntentSource, IntentView};
use serde::Deserialize;
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use crate::error::{self, CmdResult, UiError};
use crate::state::{now_ms, AppState};
use console_view::ipc::FileHandle;

/// The files of a reconcile as the arguments name them (paths), or as the
/// window's form does (each a handle its picker gave, issue 34: resolved
/// by `blueprint_open` before anything is read); empty optional fields are
/// absent.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BlueprintOpenForm {
    /// The Blueprint Core artifact.
    pub blueprint: String,
    /// The Deployment Manifest.
    pub deployment: String,
    /// Trusted keys.
    #[serde(default)]
    pub keys: Option<String>,
    /// Host bounds.
    #[serde(default)]
    pub host_bounds: Option<String>,
    /// Live tool descriptor digests.
    #[serde(default)]
    pub descriptors: Option<String>,
}

fn required(what: &str, v: &str) -> CmdResult<PathBuf> {
    let v = v.trim();
    if v.is_empty() {
        return Err(UiError::new("blueprint.missing_file", format!("choose the {what} file")));
    }
    let p = PathBuf::from(v);
    if !p.is_file() {
        return Err(UiError::new(
            "blueprint.missing_file",
            format!("the {what} {} is not a readable file", p.display()),
        ));
    }
    Ok(p)
}

fn optional(what: &str, v: Option<&String>) -> CmdResult<Option<PathBuf>> {
    match v.map(|s| s.trim()).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => required(what, s).map(Some),
    }
}

/// Adds (or updates) a blueprint item for the files and returns its id.
/// The files must exist; what is inside them is judged by the reconcile
/// when the item is opened (a malformed artifact is evidence, not an error).
pub fn open_blueprint(state: &AppState, form: &BlueprintOpenForm) -> CmdResult<i64> {
    let files = ReconcileFiles {
        blueprint: required("blueprint", &form.blueprint)?,
        deployment: required("deployment", &form.deployment)?,
        keys: optional("trusted keys", form.keys.as_ref())?,
        host_bounds: optional("host bounds", form.host_bounds.as_ref())?,
        descriptors: optional("tool descriptors", form.descriptors.as_ref())?,
    };
    let title = std::fs::read(&files.blueprint).ok().and_then(|b| console_view::blueprint::title_of(&b));
    let name =
        |p: &PathBuf| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned());
    let label = format!(
        "{} ({} + {})",
        title.as_deref().unwrap_or("blueprint"),
        name(&files.blueprint),
        name(&files.deployment)
    );
    let detail = serde_json::to_value(&files).map_err(|e| UiError::new("app.internal", e.to_string()))?;
    let path = files.deployment.display().to_string();
    state.with_store(|s| {
        let id = s.add_item(ItemKind::Blueprint, &label, &path, &detail, now_ms()).map_err(|e| error::store(&e))?;
        s.record_action(now_ms(), "blueprint_open", &path, &detail).map_err(|e| error::store(&e))?;
        Ok(id)
    })
}

/// Reads `--blueprint F --deployment F [--keys F] [--host-bounds F]
/// [--descriptors F]` from the app's arguments; the other arguments (stream
/// files) are returned as they were. A flag without its value is an error.
pub fn split_args(args: &[String]) -> Result<(Option<BlueprintOpenForm>, Vec<String>), String> {
    let mut form = BlueprintOpenForm::default();
    let mut any = false;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let slot = match a.as_str() {
            "--blueprint" => &mut form.blueprint,
            "--deployment" => &mut form.deployment,
            "--keys" => form.keys.get_or_insert_with(String::new),
            "--host-bounds" => form.host_bounds.get_or_insert_with(String::new),
            "--descriptors" => form.descriptors.get_or_insert_with(String::new),
            _ => {
                rest.push(a.clone());
                continue;
            }
        };
        let v = it.next().filter(|v| !v.starts_with("--")).ok_or_else(|| format!("{a} needs a file"))?;
        v.clone_into(slot);
        any = true;
    }
    if any && (form.blueprint.is_empty() || form.deployment.is_empty()) {
        return Err("--blueprint and --deployment go together".to_owned());
    }
    Ok((any.then_some(form), rest))
}

/// Opens the native dialog for one file (`what` says which, for its
/// title): the file chosen, by its handle (issue 34).
#[tauri::command]
pub async fn developer_pick_file<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    what: String,
) -> CmdResult<Option<FileHandle>> {
    let picked = app
        .dialog()
        .file()
        .set_title(format!("Open {what}"))
        .set_directory(&state.workspace)
        .add_filter("JSON", &["json"])
        .blocking_pick_file();
    Ok(picked.and_then(|p| p.into_path().ok()).map(|p| state.handles.file(&p)))
}

/// Opens the native dialog for one folder (`what` says which, for its
/// title): the folder chosen, by its handle (issue 34).
#[tauri::command]
pub async fn developer_pick_folder<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    what: String,
) -> CmdResult<Option<FileHandle>> {
    let picked =
        app.dialog().file().set_title(format!("Open {what}")).set_directory(&state.workspace).blocking_pick_folder();
    Ok(picked.and_then(|p| p.into_path().ok()).map(|p| state.handles.file(&p)))
}

/// Runs an Agent Blueprint Protocol conformance corpus (a folder of case
/// files, or one file) as `jcp blueprint conformance --json` does (§15):
/// per-surface and per-class counts, the surface × class matrix, files that
/// could not run, and every case. Off the UI thread: a corpus can be large.
/// The corpus is the folder behind `handle` (issue 34).
#[tauri::command]
pub async fn blueprint_conformance(
    state: State<'_, AppState>,
    handle: String,
) -> CmdResult<console_view::blueprint::ConformanceView> {
    let dir = state.handles.resolve(&handle)?;
    if !dir.exists() {
        return Err(UiError::new(
            "blueprint.missing_file",
            format!("choose a corpus folder or case file; {} is not there", dir.display()),
        ));
    }
    tauri::async_runtime::spawn_blocking(move || {
        console_view::blueprint::run_conformance(&dir).map_err(|e| error::view(&e))
    })
    .await
    .map_err(|e| UiError::new("blueprint.corpus_refused", format!("the conformance run stopped: {e}")))?
}

/// Adds a Blueprint + Deployment from disk to the workspace; returns the item to open.
#[tauri::command]
pub fn blueprint_open(state: State<'_, AppState>, form: BlueprintOpenForm) -> CmdResult<i64> {
    let h = &state.handles;
    // A required file not chosen stays empty: `open_blueprint` refuses it by name.
    let required = |f: &String| h.optional_path(Some(f)).map(Option::unwrap_or_default);
    let paths = BlueprintOpenForm {
        blueprint: required(&form.blueprint)?,
        deployment: required(&form.deployment)?,
        keys: h.optional_path(form.keys.as_ref())?,
        host_bounds: h.optional_path(form.host_bounds.as_ref())?,
        descriptors: h.optional_path(form.descriptors.as_ref())?,
    };
    open_blueprint(&state, &paths)
}

/// A source's bytes: pasted text, or the file behind its handle (issue 34).
fn read_source(state: &AppState, source: &IntentSource) -> CmdResult<(Vec<u8>, String)> {
    source.read(|h| state.handles.resolve(h))?.map_err(|e| error::view(&e))
}

/// A binding as `jcp intent hash` shows it: canonical bytes, hash, or refusal with its rule.
#[tauri::command]
pub fn intent_inspect(state: State<'_, AppState>, source: IntentSource) -> CmdResult<IntentView> {
    let (bytes, label) = read_source(&state, &source)?;
    Ok(console_view::intent::intent_view(&bytes, &label))
}

/// Two bindings compared: which properties make them different intents (§6).
#[tauri::command]
pub fn intent_compare(
    state: State<'_, AppState>,
    first: IntentSource,
    second: IntentSource,
) -> CmdResult<IntentComparison> {
    let (a, la) = read_source(&state, &first)?;
    let (b, lb) = read_source(&state, &second)?;
    Ok(console_view::intent::intent_compare(&a, &la, &b, &lb))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn abp_arguments_name_the_pair_and_leave_streams_alone() {
        let (form, rest) = split_args(&s(&[
            "a.jcps",
            "--blueprint",
            "bp.json",
            "--deployment",
            "dep.json",
            "--keys",
            "k.json",
            "b.jcps",
        ]))
        .unwrap();
        let f = form.unwrap();
        assert_eq!(
            (f.blueprint.as_str(), f.deployment.as_str(), f.keys.as_deref()),
            ("bp.json", "dep.json", Some("k.json"))
        );
        assert_eq!(rest, s(&["a.jcps", "b.jcps"]));
        assert!(split_args(&s(&["--blueprint", "bp.json"])).unwrap_err().contains("go together"));
        assert!(split_args(&s(&["--blueprint", "--deployment", "d"])).unwrap_err().contains("needs a file"));
        assert_eq!(split_args(&s(&["x.jcps"])).unwrap().0.map(|f| f.blueprint), None);
    }
}
