//! The developer's commands through the real IPC path (Tauri's mock
//! runtime): a Blueprint and Deployment opened from disk, decode errors
//! pointing at their JSON location, and the Intent panel's inspect and
//! compare (Agent-Safe Intent v1 §3–§6), whose hash is `jcp intent hash`'s.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{invoke, picked};
use jcp_console::state::{AppState, MeterView};
use serde_json::json;
use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::{Manager, WebviewWindow};

fn app(dir: &Path) -> (tauri::App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let app = jcp_console::configure(mock_builder()).build(mock_context(noop_assets())).unwrap();
    let meter: MeterView = jcp_console::engines::meter_view();
    app.manage(AppState::open(dir, None, jcp_console::engines::AUDIT_MISSING, meter));
    let w = tauri::WebviewWindowBuilder::new(&app, "main", Default::default()).build().unwrap();
    (app, w)
}

fn vector() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/intent/vectors/compromised-principal.json")
}

#[test]
fn abp_a_pair_opened_from_disk_is_reconciled_and_its_decode_error_points_at_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = app(dir.path());
    let demo = console_view::blueprint::write_demo(&dir.path().join("bp")).unwrap();
    let good = &demo[0].files;
    let keys = good.keys.as_ref().map(|k| picked(&w, k));
    let id = invoke(&w, "blueprint_open", json!({"form": {"blueprint": picked(&w, &good.blueprint), "deployment": picked(&w, &good.deployment), "keys": keys, "host_bounds": null, "descriptors": ""}})).unwrap();
    let view = invoke(&w, "blueprint_report", json!({"id": id})).unwrap();
    assert_eq!(view["blueprint_path"], good.blueprint.display().to_string());
    let overview = invoke(&w, "workspace_overview", json!({})).unwrap();
    assert!(overview.as_array().unwrap().iter().any(|i| i["id"] == id && i["kind"] == "blueprint"));

    // A blueprint that is not JSON: the reconcile fails at `canonical`, pointing at line 2, column 10 (the second comma).
    let bad = dir.path().join("broken-blueprint.json");
    std::fs::write(&bad, "{\"a\": 1,\n \"b\": [1,, 2]}").unwrap();
    let id = invoke(
        &w,
        "blueprint_open",
        json!({"form": {"blueprint": picked(&w, &bad), "deployment": picked(&w, &good.deployment)}}),
    )
    .unwrap();
    let view = invoke(&w, "blueprint_report", json!({"id": id})).unwrap();
    assert_eq!(view["verdict"], "inconsistent");
    let loc = &view["first_failure"]["location"];
    assert_eq!((loc["line"].as_u64(), loc["column"].as_u64()), (Some(2), Some(10)), "{loc}");
    assert_eq!(loc["excerpt"], " \"b\": [1,, 2]}");
    assert_eq!(loc["text"], "broken-blueprint.json line 2, column 10 (byte 18)");

    // Missing files are refused before anything is added, naming the file.
    let e = invoke(
        &w,
        "blueprint_open",
        json!({"form": {"blueprint": picked(&w, dir.path().join("nope.json")), "deployment": picked(&w, &good.deployment)}}),
    )
    .unwrap_err();
    assert_eq!(e["code"], "blueprint.missing_file");
    assert!(e["message"].as_str().unwrap().contains("nope.json"));
    // A path from the window is not a file the person chose (issue 34).
    let e =
        invoke(&w, "blueprint_open", json!({"form": {"blueprint": bad, "deployment": good.deployment}})).unwrap_err();
    assert_eq!(e["code"], "ipc.unknown_handle", "{e}");
}

#[test]
fn asi_s5_inspect_shows_the_hash_jcp_intent_hash_prints_and_s6_compare_names_the_mutation() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = app(dir.path());
    let v = invoke(&w, "intent_inspect", json!({"source": {"kind": "file", "handle": picked(&w, vector())}})).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(vector()).unwrap()).unwrap();
    assert_eq!(v["intent_hash"], doc["intent_hash"]);
    let pasted = invoke(
        &w,
        "intent_inspect",
        json!({"source": {"kind": "text", "text": "{\"protocol_version\":\"agent-safe.intent/1\",\"x\":1}"}}),
    )
    .unwrap();
    assert!(pasted["intent_hash"].is_null());
    assert!(pasted["refusal"]["rule"].as_str().unwrap().starts_with("§3"));

    let base = serde_json::to_string(&doc["binding"]).unwrap();
    let m = &doc["mutations"][2];
    let c = invoke(
        &w,
        "intent_compare",
        json!({"first": {"kind": "text", "text": base}, "second": {"kind": "text", "text": serde_json::to_string(&m["binding"]).unwrap()}}),
    )
    .unwrap();
    assert_eq!(c["same_intent"], false);
    assert_eq!(c["differences"][0]["path"], format!("$.{}", m["path"].as_str().unwrap()));

    let e = invoke(
        &w,
        "intent_inspect",
        json!({"source": {"kind": "file", "handle": picked(&w, dir.path().join("none.json"))}}),
    )
    .unwrap_err();
    assert_eq!(e["code"], "view.unreadable");
    // Issue 34: a key file named by its path from the window is never read,
    // so its seed cannot come back as a "difference".
    let key = dir.path().join("steward.key");
    std::fs::write(&key, "{\"did\": \"x\", \"seed\": \"00\"}").unwrap();
    let compare = |source: serde_json::Value| {
        invoke(&w, "intent_compare", json!({"first": source, "second": {"kind": "text", "text": "{}"}})).unwrap_err()
    };
    let e = compare(json!({"kind": "file", "handle": key}));
    assert_eq!(e["code"], "ipc.unknown_handle", "{e}");
    let e = compare(json!({"kind": "file", "path": key}));
    assert!(e.as_str().is_some_and(|m| m.contains("missing field `handle`")), "a path is not a source: {e}");
}
