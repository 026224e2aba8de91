//! The shell's commands through Tauri's mock runtime (real IPC path:
//! serialisation, argument names, `{code, message}` errors), plus the
//! security settings the issue asks for, read from the files that set them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;
use common::{invoke, picked};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use console_store::WindowRecord;
use jcp::energy::{Coverage, Energy, Provenance};
use jcp_console::state::{AppState, EngineOutcome, MeterView, ProgressCounters};
use serde_json::{json, Value};
use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::{Manager, WebviewWindow};

fn meter_off() -> MeterView {
    jcp_console::engines::meter_view()
}

/// A test double of the audit engine: counts the bytes of each file as
/// progress, reports "findings" when a file contains "TAMPER", and honours cancel.
fn test_engine(paths: &[std::path::PathBuf], p: &ProgressCounters, cancel: &AtomicBool) -> EngineOutcome {
    let mut tampered = 0u64;
    for path in paths {
        let bytes =
            std::fs::read(path).map_err(|e| console_view::ipc::UiError::new("audit.unreadable", e.to_string()))?;
        let body = bytes.strip_prefix(jcp_receipt::stream::HEADER).unwrap_or(&bytes);
        if body.starts_with(b"SLOW") {
            while !cancel.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
            return Err(console_view::ipc::UiError::new("audit.cancelled", "cancelled"));
        }
        if bytes.windows(6).any(|w| w == b"TAMPER") {
            tampered += 1;
        }
        p.bytes_done.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        p.records.fetch_add(1, Ordering::Relaxed);
    }
    let verdict = console_view::tags::Verdict::of(tampered == 0);
    Ok((
        verdict,
        json!({"verdict": verdict.as_str(), "streams": paths.len(), "failed_by_reason": {"bad_signature": tampered, "truncated": 0}, "findings_by_code": {"bad-signature": tampered}}),
    ))
}

/// A file the console takes for a stream (the JCP stream header, then `body`
/// for the test engine to read).
fn fake_stream(path: &Path, body: &[u8]) {
    let mut b = jcp_receipt::stream::HEADER.to_vec();
    b.extend_from_slice(body);
    std::fs::write(path, b).unwrap();
}

fn app(dir: &Path, engine: bool) -> (tauri::App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let app = jcp_console::configure(mock_builder()).build(mock_context(noop_assets())).unwrap();
    let state = AppState::open(
        dir,
        if engine { Some(test_engine) } else { None },
        jcp_console::engines::AUDIT_MISSING,
        meter_off(),
    );
    app.manage(state);
    let webview = tauri::WebviewWindowBuilder::new(&app, "main", Default::default()).build().unwrap();
    (app, webview)
}

fn wait_done(w: &WebviewWindow<MockRuntime>) -> Value {
    let t = Instant::now();
    loop {
        let s = invoke(w, "audit_status", json!({})).unwrap();
        if s["state"] != "running" {
            return s;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "audit never finished: {s}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn app_info_says_which_parts_are_missing_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = app(dir.path(), false);
    let info = invoke(&w, "app_info", json!({})).unwrap();
    assert_eq!(info["store"]["persistent"], true);
    assert!(info["store"]["path"].as_str().unwrap().ends_with("workspace.sqlite"));
    assert_eq!(info["audit"]["available"], false);
    assert!(info["audit"]["reason"].as_str().unwrap().contains("jcp audit"));
    assert_eq!(info["meter"]["available"], false);
}

#[test]
fn s5_energy_snapshot_keeps_gaps_and_grades_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (app, w) = app(dir.path(), false);
    {
        let state = app.state::<AppState>();
        let mut s = state.store.lock().unwrap();
        let e = Energy { uj: 2_000_000, provenance: Provenance::HwShunt, coverage: Coverage::Whole, measured: None };
        let p = Energy { uj: 500_000, provenance: Provenance::ModelBased, coverage: Coverage::Partial, measured: None };
        s.record_window(&WindowRecord {
            seq: 0,
            start_ms: 0,
            end_ms: 1000,
            energy: Some(e),
            rung: Some("rapl".into()),
        })
        .unwrap();
        s.record_window(&WindowRecord { seq: 0, start_ms: 1000, end_ms: 2000, energy: None, rung: None }).unwrap();
        s.record_window(&WindowRecord {
            seq: 0,
            start_ms: 2000,
            end_ms: 3000,
            energy: Some(p),
            rung: Some("nvml".into()),
        })
        .unwrap();
    }
    let snap = invoke(&w, "energy_snapshot", json!({"limit": 60})).unwrap();
    let rows = snap["windows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["provenance"], "HwShunt");
    assert!(rows[1]["energy_uj"].is_null(), "a gap is not a zero");
    assert_eq!(rows[2]["coverage"], "Partial");
    let svg = snap["chart_svg"].as_str().unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..40.min(svg.len())]);
    assert!(svg.contains("Partial"));
    assert_eq!(snap["meter"]["available"], false);
}

#[test]
fn energy_snapshot_bad_limit_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = app(dir.path(), false);
    let e = invoke(&w, "energy_snapshot", json!({"limit": 0})).unwrap_err();
    assert_eq!(e["code"], "energy.bad_limit");
    assert!(e["message"].as_str().unwrap().contains("1 to 600"));
    assert_eq!(e.as_object().unwrap().len(), 2, "errors are exactly {{code, message}}: {e}");
}

#[test]
fn audit_without_engine_is_refused_with_words_not_faked() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jcps");
    std::fs::write(&f, b"x").unwrap();
    let (_app, w) = app(dir.path(), false);
    let e = invoke(&w, "audit_start", json!({"handles": [picked(&w, f.display().to_string())]})).unwrap_err();
    assert_eq!(e["code"], "audit.unavailable");
    assert!(invoke(&w, "audit_status", json!({})).unwrap().is_null());
}

#[test]
fn s8_2_audit_job_reports_verdict_and_is_kept_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.jcps");
    let bad = dir.path().join("bad.jcps");
    fake_stream(&good, b"receipts");
    fake_stream(&bad, b"receipts TAMPER");
    let (_app, w) = app(dir.path(), true);
    let job = invoke(&w, "audit_start", json!({"handles": [picked(&w, &good), picked(&w, &bad)]})).unwrap();
    assert_eq!(job["progress"]["bytes_total"], 23 + 16);
    let done = wait_done(&w);
    assert_eq!(done["state"], "done");
    assert_eq!(done["verdict"], "findings");
    assert_eq!(done["progress"]["bytes_done"], 23 + 16);
    let id = done["id"].clone();
    let rep = invoke(&w, "audit_report", json!({"id": id})).unwrap();
    assert_eq!(rep["report"]["failed_by_reason"]["bad_signature"], 1);
    assert_eq!(rep["findings_by_code"], json!([{"code": "bad-signature", "count": 1}]));
    let html = rep["html"].as_str().unwrap();
    assert!(html.contains("bad signature") && html.contains("<svg"), "{html}");
    assert!(!html.contains("<script"));
    let streams = invoke(&w, "workspace_streams", json!({})).unwrap();
    assert_eq!(streams.as_array().unwrap().len(), 2);
    assert!(streams.as_array().unwrap().iter().all(|s| s["last_verdict"] == "findings"));
    let actions = invoke(&w, "steward_actions", json!({"limit": 10})).unwrap();
    assert_eq!(actions[0]["action"], "audit");
}

#[test]
fn audit_cancel_stops_the_job_without_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let slow = dir.path().join("slow.jcps");
    fake_stream(&slow, b"SLOW");
    let (_app, w) = app(dir.path(), true);
    let job = invoke(&w, "audit_start", json!({"handles": [picked(&w, slow.display().to_string())]})).unwrap();
    // A second start while one runs is refused.
    let busy = invoke(&w, "audit_start", json!({"handles": [picked(&w, slow.display().to_string())]})).unwrap_err();
    assert_eq!(busy["code"], "audit.busy");
    invoke(&w, "audit_cancel", json!({"id": job["id"]})).unwrap();
    let end = wait_done(&w);
    assert_eq!(end["state"], "cancelled");
    assert!(end["verdict"].is_null());
    let e = invoke(&w, "audit_report", json!({"id": job["id"]})).unwrap_err();
    assert_eq!(e["code"], "audit.no_report");
}

#[test]
fn s8_1_a_file_that_is_not_a_receipt_stream_is_refused_and_never_listed_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("notes.txt");
    std::fs::write(&f, b"the steward approves\n").unwrap();
    let (_app, w) = app(dir.path(), true);
    let e = invoke(&w, "audit_start", json!({"handles": [picked(&w, f.display().to_string())]})).unwrap_err();
    assert_eq!(e["code"], "audit.not-a-stream", "{e}");
    assert!(e["message"].as_str().unwrap().contains("notes.txt"), "{e}");
    assert!(invoke(&w, "audit_status", json!({})).unwrap().is_null(), "no audit started");
    let listed = invoke(&w, "workspace_overview", json!({})).unwrap();
    assert!(listed.as_array().unwrap().iter().all(|i| i["path"] != f.display().to_string()), "{listed}");
}

#[test]
fn a_workspace_item_is_forgotten_on_request_and_its_file_stays() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a.jcps");
    fake_stream(&f, b"receipts");
    let (_app, w) = app(dir.path(), true);
    invoke(&w, "audit_start", json!({"handles": [picked(&w, f.display().to_string())]})).unwrap();
    wait_done(&w);
    let path = f.display().to_string();
    let listed = |w: &WebviewWindow<MockRuntime>| invoke(w, "workspace_overview", json!({})).unwrap();
    assert!(listed(&w).as_array().unwrap().iter().any(|i| i["path"] == path));
    let handle = listed(&w).as_array().unwrap().iter().find(|i| i["path"] == path).unwrap()["handle"].clone();
    invoke(&w, "workspace_forget", json!({"kind": "stream", "id": null, "handle": handle})).unwrap();
    assert!(listed(&w).as_array().unwrap().iter().all(|i| i["path"] != path), "{}", listed(&w));
    assert!(f.exists(), "forgetting an item never touches its file");
    // Forgetting what is not there says so.
    let e = invoke(&w, "workspace_forget", json!({"kind": "stream", "id": null, "handle": handle})).unwrap_err();
    assert_eq!(e["code"], "workspace.unknown_item", "{e}");
    // A stream is named by a handle the console gave, never by a path (issue 34).
    let e = invoke(&w, "workspace_forget", json!({"kind": "stream", "id": null, "handle": path})).unwrap_err();
    assert_eq!(e["code"], "ipc.unknown_handle", "{e}");
    let e = invoke(&w, "workspace_forget", json!({"kind": "run", "id": 999, "handle": null})).unwrap_err();
    assert_eq!(e["code"], "workspace.unknown_item", "{e}");
    let actions = invoke(&w, "steward_actions", json!({"limit": 10})).unwrap();
    assert_eq!(actions[0]["action"], "forget", "{actions}");
}

/// Issue 34, "IPC takes raw paths": every command that reads or writes a
/// file takes a handle the console gave out (a native dialog, a drop, the
/// workspace's own lists), and refuses a path from the window, reading
/// nothing: a key file named by its path is never opened.
#[test]
fn issue34_a_command_that_takes_a_file_refuses_a_path_from_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("steward.key");
    std::fs::write(&key, "a key file").unwrap();
    let p = key.display().to_string();
    let (_app, w) = app(dir.path(), true);
    for (cmd, args) in [
        ("audit_start", json!({"handles": [p]})),
        ("blueprint_conformance", json!({"handle": p})),
        ("energy_baseline_declare", json!({"session": p})),
        (
            "energy_session_analyze",
            json!({"form": {"session": p, "baseline": null, "causes": null, "streams": [], "grant": null}}),
        ),
        ("intent_inspect", json!({"source": {"kind": "file", "handle": p}})),
        ("workspace_forget", json!({"kind": "stream", "id": null, "handle": p})),
    ] {
        let e = invoke(&w, cmd, args).unwrap_err();
        assert_eq!(e["code"], "ipc.unknown_handle", "{cmd}: {e}");
    }
    // The same file, once chosen in Rust, is named by its handle (here: not a stream).
    let e = invoke(&w, "audit_start", json!({"handles": [picked(&w, &key)]})).unwrap_err();
    assert_eq!(e["code"], "audit.not-a-stream", "{e}");
    assert_eq!(picked(&w, &key), picked(&w, &key), "one handle a file");
}

#[test]
fn audit_of_missing_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = app(dir.path(), true);
    let e = invoke(&w, "audit_start", json!({"handles": [picked(&w, "/nonexistent/x.jcps")]})).unwrap_err();
    assert_eq!(e["code"], "audit.unreadable");
    assert!(e["message"].as_str().unwrap().contains("/nonexistent/x.jcps"));
}

#[test]
fn audit_export_writes_json_equal_to_the_engine_report_and_html_self_contained() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a.jcps");
    fake_stream(&f, b"receipts");
    let (app, w) = app(dir.path(), true);
    invoke(&w, "audit_start", json!({"handles": [picked(&w, f.display().to_string())]})).unwrap();
    let done = wait_done(&w);
    let id = done["id"].as_u64().unwrap();
    let state = app.state::<AppState>();
    let json_text = jcp_console::commands::audit_export_text(&state, id, "json").unwrap();
    let (_, report, _) = state.audit_report(id).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&json_text).unwrap(), report);
    let html = jcp_console::commands::audit_export_text(&state, id, "html").unwrap();
    assert!(html.starts_with("<!doctype html>"));
    // Self-contained: no script, no stylesheet link, nothing fetched (the SVG namespace URI is a name, not a fetch).
    for bad in ["<script", "<link", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(bad), "{bad} in the exported report");
    }
    let out = dir.path().join("r.html");
    let r = jcp_console::commands::write_export(&state, &out, &html, "export_report").unwrap();
    assert_eq!(r.bytes, html.len() as u64);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), html);
    let bad = jcp_console::commands::audit_export_text(&state, id, "pdf").unwrap_err();
    assert_eq!(bad.code, "export.bad_format");
}

#[test]
fn store_damaged_runs_in_memory_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("workspace.sqlite");
    std::fs::write(&path, b"not a database at all, and must stay that way").unwrap();
    let (_app, w) = app(dir.path(), false);
    let info = invoke(&w, "app_info", json!({})).unwrap();
    assert_eq!(info["store"]["persistent"], false);
    assert_eq!(info["store"]["error"]["code"], "store.corrupt");
    assert_eq!(std::fs::read(&path).unwrap(), b"not a database at all, and must stay that way");
}

// ---- security settings, read from the files that set them ----

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

#[test]
fn capability_lists_only_the_apps_own_commands_each_explicit() {
    let commands = jcp_console::command_names::COMMANDS;
    let cap: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("src-tauri/capabilities/main-window.json")).unwrap())
            .unwrap();
    let perms: Vec<&str> = cap["permissions"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert!(perms.iter().all(|p| !p.contains(':')), "no plugin or core permission reaches the window: {perms:?}");
    // The handler registered in lib.rs: `module::command,` lines inside generate_handler!.
    let lib = std::fs::read_to_string(root().join("src-tauri/lib.rs")).unwrap();
    let start = lib.find("generate_handler![").unwrap();
    let end = start + lib[start..].find("])").unwrap();
    let handler: Vec<&str> = lib[start..end]
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').rsplit_once("::").map(|(_, c)| c))
        .collect();
    let sorted = |v: &[&str]| {
        let mut v: Vec<String> = v.iter().map(|s| (*s).to_owned()).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(
        sorted(&handler),
        sorted(commands),
        "lib.rs must register exactly the commands of src-tauri/command_names.rs"
    );
    let allowed: Vec<String> = commands.iter().map(|c| format!("allow-{}", c.replace('_', "-"))).collect();
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    assert_eq!(
        sorted(&perms),
        sorted(&allowed),
        "the capability must grant exactly the commands of src-tauri/command_names.rs"
    );
    let build = std::fs::read_to_string(root().join("src-tauri/build.rs")).unwrap();
    assert!(
        build.contains("include!(\"command_names.rs\")") && build.contains(".commands(COMMANDS)"),
        "build.rs gives tauri-build the one list"
    );
}

/// The front end's command names are generated from the one list (issue 17:
/// "the UI's command names come from one list"); `JCP_UPDATE_TS=1` rewrites it.
#[test]
fn ui_command_names_are_generated_from_the_one_list() {
    let mut text = String::from("// Generated from src-tauri/command_names.rs by tests/commands.rs (JCP_UPDATE_TS=1). Do not edit.\nexport const COMMANDS = [\n");
    for c in jcp_console::command_names::COMMANDS {
        text += &format!("  \"{c}\",\n");
    }
    text += "] as const;\nexport type Command = (typeof COMMANDS)[number];\n";
    let file = root().join("ui/src/gen/commands.ts");
    if std::env::var_os("JCP_UPDATE_TS").is_some() {
        std::fs::write(&file, &text).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap_or_default(),
        text,
        "ui/src/gen/commands.ts is stale: JCP_UPDATE_TS=1 cargo test -p jcp-console --test commands"
    );
    let ipc = std::fs::read_to_string(root().join("ui/src/ipc.ts")).unwrap();
    assert!(ipc.contains("cmd: Command"), "ui/src/ipc.ts calls only names of type Command");
}

#[test]
fn config_has_strict_csp_no_global_tauri_no_remote_content() {
    let conf: Value = serde_json::from_str(&std::fs::read_to_string(root().join("tauri.conf.json")).unwrap()).unwrap();
    assert_eq!(conf["app"]["withGlobalTauri"], false);
    assert!(conf["build"].get("devUrl").is_none(), "the app never loads a dev server");
    let csp = conf["app"]["security"]["csp"].as_object().unwrap();
    assert_eq!(csp["default-src"], "'self'");
    assert_eq!(csp["script-src"], "'self'");
    assert_eq!(csp["object-src"], "'none'");
    for (k, v) in csp {
        let v = v.as_str().unwrap();
        assert!(!v.contains("unsafe-inline") && !v.contains("unsafe-eval"), "{k}: {v}");
        assert!(!v.contains("https:") && !v.contains('*'), "{k} allows remote content: {v}");
    }
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(!cargo.contains("tauri-plugin-fs"), "no filesystem plugin");
}

/// A console with the real audit engine, without the window.
fn engine_app(dir: &Path) -> (tauri::App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let app = jcp_console::configure(mock_builder()).build(mock_context(noop_assets())).unwrap();
    app.manage(AppState::open(
        dir,
        jcp_console::engines::audit_engine(),
        jcp_console::engines::AUDIT_MISSING,
        meter_off(),
    ));
    let w = tauri::WebviewWindowBuilder::new(&app, "main", Default::default()).build().unwrap();
    (app, w)
}

/// §8 / issue 7: the app's report is `jcp audit --json`'s report. The demo
/// streams are written by `jcp_receipt::demo` (real keys and signatures), the
/// app audits them through its real engine and IPC, and the result must equal
/// `jcp_audit::audit_paths` with the CLI's default options, number for number.
#[test]
fn s8_app_report_equals_jcp_audit_report_on_demo_streams() {
    let dir = tempfile::tempdir().unwrap();
    let demo = jcp_console::engines::prepare_demo(&dir.path().join("demo")).unwrap();
    assert_eq!(demo.len(), 2);
    // A second call writes nothing new and returns the same streams.
    assert_eq!(jcp_console::engines::prepare_demo(&dir.path().join("demo")).unwrap(), demo);
    let (_app, w) = engine_app(dir.path());
    for (path, want) in [(&demo[0], "clean"), (&demo[1], "findings")] {
        invoke(&w, "audit_start", json!({"handles": [picked(&w, path.display().to_string())]})).unwrap();
        let done = wait_done(&w);
        assert_eq!(done["state"], "done", "{done}");
        assert_eq!(done["verdict"], want);
        assert_eq!(done["progress"]["bytes_done"], done["progress"]["bytes_total"]);
        let shown = invoke(&w, "audit_report", json!({"id": done["id"]})).unwrap();
        let direct = jcp_audit::audit_paths(&[path], &jcp_audit::AuditOptions::default(), |_| {
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(
            shown["report"],
            serde_json::to_value(&direct).unwrap(),
            "the console shows the engine's report unchanged"
        );
        assert_eq!(direct.clean, want == "clean");
    }
}

/// Issue 39, "the records it names, each linkable": every finding of the
/// tampered demo stream opens its record through the IPC, by the audit's
/// stream index (never a path), and an id a finding names opens its record.
#[test]
fn s8_2_each_finding_opens_its_record_through_the_ipc() {
    let dir = tempfile::tempdir().unwrap();
    let demo = jcp_console::engines::prepare_demo(&dir.path().join("demo")).unwrap();
    let (_app, w) = engine_app(dir.path());
    invoke(&w, "audit_start", json!({"handles": [picked(&w, &demo[1])]})).unwrap();
    let done = wait_done(&w);
    let id = done["id"].clone();
    let report = invoke(&w, "audit_report", json!({"id": id})).unwrap()["report"].clone();
    let findings = report["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    for f in findings.iter().filter(|f| f["offset"].as_u64() > Some(0)) {
        let r = invoke(&w, "audit_record", json!({"id": id, "stream": 0, "at": f["offset"]})).unwrap();
        assert_eq!(r["offset"], f["offset"], "{r}");
        assert_eq!(r["stream_index"], 0);
        if f["code"] == "bad-signature" {
            assert_eq!((r["check"].as_str(), r["check_code"].as_str()), (Some("refused"), Some("bad-signature")));
        }
    }
    let grant = report["grants"][0]["grant_id"].as_str().expect("the report lists its grants");
    let r = invoke(&w, "audit_record", json!({"id": id, "stream": 0, "record": grant})).unwrap();
    assert_eq!(
        (r["id"].as_str(), r["kind"].as_str(), r["check"].as_str()),
        (Some(grant), Some("grant"), Some("verified"))
    );
    let e = invoke(&w, "audit_record", json!({"id": id, "stream": 3, "at": 8})).unwrap_err();
    assert_eq!(e["code"], "audit.unknown_stream", "{e}");
    let e = invoke(&w, "audit_record", json!({"id": id, "stream": 0, "at": 9})).unwrap_err();
    assert_eq!(e["code"], "audit.no-record-at", "{e}");
    let e = invoke(&w, "audit_record", json!({"id": id, "stream": 0, "record": "77".repeat(32)})).unwrap_err();
    assert_eq!(e["code"], "audit.no-record-with-id", "{e}");
    let e = invoke(&w, "audit_record", json!({"id": 999, "stream": 0, "at": 8})).unwrap_err();
    assert_eq!(e["code"], "audit.unknown_job", "{e}");
}

// ---- the demo workspace: overview and the developer's blueprint view ----

/// A console whose workspace was prepared as on first start (demo streams
/// and demo blueprint reconciles written and listed), without the window.
fn demo_app(dir: &Path) -> (tauri::App<MockRuntime>, WebviewWindow<MockRuntime>) {
    demo_app_with(dir, false)
}

/// [`demo_app`], with the real audit engine when `engine`.
fn demo_app_with(dir: &Path, engine: bool) -> (tauri::App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let (app, w) = app(dir, engine);
    let demo = dir.join("demo");
    let streams = jcp_console::engines::prepare_demo(&demo).unwrap();
    let mut items = vec![jcp_console::engines::prepare_demo_run(&demo).unwrap()];
    items.extend(jcp_console::engines::prepare_demo_blueprints(&demo.join("blueprint")).unwrap());
    {
        let state = app.state::<AppState>();
        jcp_console::state::register_demo_items(&state.store, &items);
        jcp_console::state::register_demo(&state.store, &state.demo_streams, &streams);
    }
    (app, w)
}

/// Issue 39, "workspace items can be removed": a demo stream and the demo
/// run the person took off stay off after a restart (the demo lists them
/// again otherwise); opening the stream again brings it back.
#[test]
fn issue39_a_removed_demo_item_stays_removed_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let paths = |w: &WebviewWindow<MockRuntime>| -> Vec<(String, Value, Value)> {
        let items = invoke(w, "workspace_overview", json!({})).unwrap();
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["path"].as_str().unwrap().to_owned(), i["id"].clone(), i["handle"].clone()))
            .collect()
    };
    let (stream, run) = {
        let (app, w) = demo_app(dir.path());
        let listed = paths(&w);
        let stream = listed.iter().find(|(p, _, _)| p.ends_with(".jcps")).unwrap().clone();
        let run = listed.iter().find(|(p, _, _)| p.ends_with(".jcprun")).unwrap().clone();
        invoke(&w, "workspace_forget", json!({"kind": "stream", "id": null, "handle": stream.2})).unwrap();
        invoke(&w, "workspace_forget", json!({"kind": "run", "id": run.1, "handle": null})).unwrap();
        drop(w);
        drop(app);
        (stream.0, run.0)
    };
    // The console starts again on the same workspace and lists its demo.
    let (_app, w) = demo_app_with(dir.path(), true);
    let listed = paths(&w);
    assert!(listed.iter().all(|(p, _, _)| *p != stream && *p != run), "{listed:?}");
    assert!(listed.iter().any(|(p, _, _)| p.ends_with(".jcps")), "the other demo stream is still listed");
    // Opened again by the person, the stream is listed again.
    invoke(&w, "audit_start", json!({"handles": [picked(&w, &stream)]})).unwrap();
    assert!(paths(&w).iter().any(|(p, _, _)| *p == stream));
}

#[test]
fn issue7_overview_lists_the_demo_streams_and_blueprints_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let (app, w) = demo_app(dir.path());
    let items = invoke(&w, "workspace_overview", json!({})).unwrap();
    let items = items.as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "stream").count(), 2, "{items:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "blueprint").count(), 2, "{items:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "run").count(), 1, "{items:?}");
    for i in items {
        assert!(Path::new(i["path"].as_str().unwrap()).is_file(), "{i} names a file that exists");
        assert!(i["last_status"].is_null(), "nothing opened yet, so no outcome: {i}");
        assert_eq!(i["id"].is_null(), i["kind"] == "stream", "runs and blueprints are opened by id: {i}");
    }
    // A second first-start (the app restarted) lists nothing twice.
    let state = app.state::<AppState>();
    let again = jcp_console::engines::prepare_demo_blueprints(&dir.path().join("demo/blueprint")).unwrap();
    jcp_console::state::register_demo_items(&state.store, &again);
    assert_eq!(invoke(&w, "workspace_overview", json!({})).unwrap().as_array().unwrap().len(), items.len());
}

#[test]
fn abp_13_blueprint_report_shows_the_reconcile_and_keeps_its_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let (app, w) = demo_app(dir.path());
    let items = invoke(&w, "workspace_overview", json!({})).unwrap();
    let bps: Vec<&Value> = items.as_array().unwrap().iter().filter(|i| i["kind"] == "blueprint").collect();
    let good = invoke(&w, "blueprint_report", json!({"id": bps[0]["id"]})).unwrap();
    assert_eq!(good["verdict"], "consistent");
    assert_eq!(good["steps"].as_array().unwrap().len(), 8);
    let nv: Vec<&str> =
        good["not_verified"].as_array().unwrap().iter().map(|n| n["surface"].as_str().unwrap()).collect();
    for s in ["tenancy", "live_policy", "authority", "effect_ownership", "execution", "billing", "evaluation_truth"] {
        assert!(nv.contains(&s), "{s} is named as not verified: {nv:?}");
    }
    // The evidence is the one the crate computes from the same files (as `jcp blueprint reconcile --json`).
    let files: console_view::blueprint::ReconcileFiles = serde_json::from_value(
        app.state::<AppState>().store.lock().unwrap().item(bps[0]["id"].as_i64().unwrap()).unwrap().unwrap().detail,
    )
    .unwrap();
    let direct = console_view::blueprint::reconcile_files(&files).unwrap();
    assert_eq!(good["evidence"], serde_json::to_value(&direct).unwrap());
    let bad = invoke(&w, "blueprint_report", json!({"id": bps[1]["id"]})).unwrap();
    assert_eq!(bad["verdict"], "inconsistent");
    assert_eq!(bad["first_failure"]["code"], "binding_descriptor_mismatch");
    // The overview now shows each outcome.
    let items = invoke(&w, "workspace_overview", json!({})).unwrap();
    let status: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "blueprint")
        .map(|i| i["last_status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["consistent", "inconsistent"]);
}

#[test]
fn blueprint_report_errors_are_code_and_message() {
    let dir = tempfile::tempdir().unwrap();
    let (app, w) = demo_app(dir.path());
    let e = invoke(&w, "blueprint_report", json!({"id": 999})).unwrap_err();
    assert_eq!(e, json!({"code": "workspace.unknown_item", "message": "there is no workspace item 999"}));
    let run = app
        .state::<AppState>()
        .store
        .lock()
        .unwrap()
        .add_item(console_store::ItemKind::Run, "a run", "/x/run.json", &json!({}), 1)
        .unwrap();
    let e = invoke(&w, "blueprint_report", json!({"id": run})).unwrap_err();
    assert_eq!(e["code"], "workspace.wrong_kind");
    // A blueprint file removed after it was listed: the file is named.
    std::fs::remove_file(dir.path().join("demo/blueprint/summarize.blueprint.json")).unwrap();
    let items = invoke(&w, "workspace_overview", json!({})).unwrap();
    let id = items.as_array().unwrap().iter().find(|i| i["kind"] == "blueprint").unwrap()["id"].clone();
    let e = invoke(&w, "blueprint_report", json!({"id": id})).unwrap_err();
    assert_eq!(e["code"], "view.unreadable");
    assert!(e["message"].as_str().unwrap().contains("summarize.blueprint.json"), "{e}");
    assert_eq!(e.as_object().unwrap().len(), 2);
}

#[test]
fn s4_7_run_report_shows_checkpoints_and_keeps_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = demo_app(dir.path());
    let items = invoke(&w, "workspace_overview", json!({})).unwrap();
    let run = items.as_array().unwrap().iter().find(|i| i["kind"] == "run").unwrap().clone();
    assert!(run["path"].as_str().unwrap().ends_with("demo/demo.jcprun"));
    let v = invoke(&w, "run_report", json!({"id": run["id"]})).unwrap();
    assert_eq!(v["verdict"], "clean");
    let first = &v["checkpoints"][0];
    assert_eq!(first["seq"], 0);
    assert!(first["spent"]["uj"].is_null() && first["spent"]["text"] == "not stated");
    assert_eq!(first["remainder"]["known"], false);
    assert!(first["remainder"]["uj"].is_null(), "no spend stated: no remainder figure, least of all the full budget");
    // The same report `jcp run verify --json` prints, from the core.
    let direct = jcp::steering::Run::read(Path::new(run["path"].as_str().unwrap())).unwrap().verify().unwrap();
    assert_eq!(v["report"], serde_json::to_value(&direct).unwrap());
    let items = invoke(&w, "workspace_overview", json!({})).unwrap();
    assert_eq!(items.as_array().unwrap().iter().find(|i| i["kind"] == "run").unwrap()["last_status"], "clean");
    // A damaged run file is a {code, message} naming the file.
    std::fs::write(run["path"].as_str().unwrap(), b"\xa1").unwrap();
    let e = invoke(&w, "run_report", json!({"id": run["id"]})).unwrap_err();
    assert_eq!(e["code"], "run.unreadable");
    assert!(e["message"].as_str().unwrap().contains("demo.jcprun"), "{e}");
    let bp = items.as_array().unwrap().iter().find(|i| i["kind"] == "blueprint").unwrap();
    assert_eq!(invoke(&w, "run_report", json!({"id": bp["id"]})).unwrap_err()["code"], "workspace.wrong_kind");
}
