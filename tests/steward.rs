//! The steward's console through Tauri's mock runtime (the real IPC path:
//! argument names, serialisation, `{code, message}` errors): the key
//! (create, lock, unlock, wrong passphrase), and a live run end to end —
//! the embedded endpoint and the demo agent (`jcp agent demo`) as a child
//! process — approved, amended (a widening refused before signing),
//! revoked, and its record audited (JCP §4.3, §4.7, §4.11, §11; issue 17).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;
use common::invoke;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jcp_console::state::AppState;
use jcp_console::steward::StewardState;
use serde_json::{json, Value};
use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::{Manager, WebviewWindow};

fn app(dir: &Path) -> (tauri::App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let app = jcp_console::configure(mock_builder()).build(mock_context(noop_assets())).unwrap();
    let state = AppState::open(
        dir,
        jcp_console::engines::audit_engine(),
        jcp_console::engines::AUDIT_MISSING,
        jcp_console::engines::meter_view(),
    );
    let mut steward = StewardState::new(dir);
    steward.work_factor = 10;
    jcp_console::steward::start_watcher(state.store.clone(), steward.runs_dir.clone(), steward.revision.clone());
    app.manage(state);
    app.manage(steward);
    let webview = tauri::WebviewWindowBuilder::new(&app, "main", Default::default()).build().unwrap();
    (app, webview)
}

/// The `jcp` command the live run starts: beside this test's target
/// folder, built here when a partial build has not made it yet.
fn jcp_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let bin = dir.join("jcp");
    if !bin.is_file() {
        let ok = std::process::Command::new(env!("CARGO"))
            .args(["build", "-p", "jcp-cli", "--bin", "jcp"])
            .status()
            .unwrap();
        assert!(ok.success(), "building jcp for the live run");
    }
    bin
}

fn wait_for(w: &WebviewWindow<MockRuntime>, id: i64, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let t = Instant::now();
    loop {
        let v = invoke(w, "steward_run", json!({"id": id})).unwrap();
        if done(&v) {
            return v;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "waited for {what}: {v:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn s2_steward_key_create_lock_unlock_and_refusals_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = app(dir.path());
    let s = invoke(&w, "key_status_get", json!({})).unwrap();
    assert_eq!((s["exists"].as_bool(), s["unlocked"].as_bool()), (Some(false), Some(false)), "{s}");
    let s = invoke(&w, "key_create_new", json!({"passphrase": "correct horse"})).unwrap();
    assert_eq!((s["exists"].as_bool(), s["unlocked"].as_bool()), (Some(true), Some(true)), "{s}");
    let did = s["did"].as_str().unwrap().to_owned();
    assert!(did.starts_with("did:key:z6Mk"), "{did}");
    // The private key never crosses IPC: nothing but the status comes back.
    assert_eq!(s.as_object().unwrap().keys().collect::<Vec<_>>(), ["path", "exists", "did", "unlocked", "error"]);
    // Creating again never overwrites.
    let e = invoke(&w, "key_create_new", json!({"passphrase": "x"})).unwrap_err();
    assert_eq!(e["code"], "key-exists", "{e}");
    let s = invoke(&w, "key_lock_now", json!({})).unwrap();
    assert_eq!(
        (s["unlocked"].as_bool(), s["did"].as_str()),
        (Some(false), Some(did.as_str())),
        "the did shows while locked: {s}"
    );
    let e = invoke(&w, "key_unlock_now", json!({"passphrase": "wrong"})).unwrap_err();
    assert_eq!(e["code"], "key-wrong-passphrase");
    assert!(e["message"].as_str().unwrap().contains("steward.key"), "{e}");
    assert_eq!(invoke(&w, "key_unlock_now", json!({"passphrase": "correct horse"})).unwrap()["unlocked"], true);
    // A key file others can read is refused with the fix, and its status says so.
    let key = dir.path().join("steward.key");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let s = invoke(&w, "key_status_get", json!({})).unwrap();
    assert_eq!(s["error"]["code"], "key-permissions", "{s}");
    assert!(s["error"]["message"].as_str().unwrap().contains("chmod 600"), "{s}");
    // Signing while locked is refused before anything is signed.
    invoke(&w, "key_lock_now", json!({})).unwrap();
    let e = invoke(&w, "live_run_start", json!({})).unwrap_err();
    assert!(e["code"] == "key.locked" || e["code"] == "live.no_agent", "{e}");
}

#[test]
fn c21_live_run_is_amended_refused_above_remainder_revoked_and_audited() {
    std::env::set_var("JCP_BIN", jcp_bin());
    let dir = tempfile::tempdir().unwrap();
    let (app, w) = app(dir.path());
    invoke(&w, "key_create_new", json!({"passphrase": "pw"})).unwrap();
    let row = invoke(&w, "live_run_start", json!({})).unwrap();
    let id = row["id"].as_i64().unwrap();
    assert_eq!(row["live"], "running", "{row}");
    // The first checkpoint arrives (5 actions × 100 µJ) and awaits the steward.
    let v = wait_for(&w, id, "the first checkpoint", |v| v["awaiting"] == true);
    assert_eq!(v["run"]["checkpoints"][0]["spent"]["uj"], 500, "{v:#}");
    assert_eq!(v["run"]["remainder"]["uj"], 4500);
    let ov = invoke(&w, "steward_overview", json!({})).unwrap();
    assert_eq!(ov["awaiting"], 1, "{ov}");
    // Above the remainder: refused before signing, nothing written.
    let before = std::fs::read(v["run"]["path"].as_str().unwrap()).unwrap();
    let form = |b: Option<u64>| json!({"budget_uj": b, "expiry": null, "instructions": null, "add_caveats": []});
    let e = invoke(&w, "steward_preview", json!({"id": id, "form": form(Some(4501))})).unwrap_err();
    assert_eq!(e["code"], "steer-above-remainder", "{e}");
    let e = invoke(&w, "steward_amend", json!({"id": id, "form": form(Some(4501))})).unwrap_err();
    assert_eq!(e["code"], "steer-above-remainder", "{e}");
    assert_eq!(std::fs::read(v["run"]["path"].as_str().unwrap()).unwrap(), before);
    // Amend to 800 µJ: the run goes on under the continuation.
    let p = invoke(&w, "steward_preview", json!({"id": id, "form": form(Some(800))})).unwrap();
    assert_eq!((p["budget_uj"].as_u64(), p["ceiling_uj"].as_u64()), (Some(800), Some(4500)), "{p}");
    let done = invoke(&w, "steward_amend", json!({"id": id, "form": form(Some(800))})).unwrap();
    assert_eq!(done["action"], "amend");
    let cont = done["signed"][1].as_str().unwrap().to_owned();
    let v = wait_for(&w, id, "the second checkpoint, under the continuation", |v| {
        v["awaiting"] == true && v["run"]["checkpoints"].as_array().is_some_and(|c| c.len() == 2)
    });
    assert_eq!(v["live"]["grant"], cont.as_str(), "{:#}", v["live"]);
    assert_eq!(v["run"]["active_budget"], "800 µJ");
    assert_eq!(v["run"]["remainder"]["uj"], 300, "{:#}", v["run"]);
    assert_eq!(v["history"][0]["action"], "live_start");
    assert_eq!(v["history"][1]["action"], "amend");
    assert!(v["history"][1]["signed_by"].as_str().unwrap().starts_with("did:key:"), "{}", v["history"]);
    // 400 µJ is now above the continuation's remainder (300): refused.
    assert_eq!(
        invoke(&w, "steward_preview", json!({"id": id, "form": form(Some(400))})).unwrap_err()["code"],
        "steer-above-remainder"
    );
    // Revoke the continuation: the plan names it; the agent, waiting at its checkpoint, stops.
    let plan = invoke(&w, "steward_revoke_plan", json!({"id": id, "grant": cont})).unwrap();
    assert_eq!(plan["dies"][0]["id"], cont.as_str(), "{plan}");
    invoke(&w, "steward_revoke", json!({"id": id, "grant": cont})).unwrap();
    let v = wait_for(&w, id, "the agent to stop", |v| v["live"]["state"] != "running");
    assert_eq!(v["live"]["state"], "stopped", "{:#}", v["live"]);
    assert!(v["live"]["ended"].as_str().unwrap().contains("revoked"), "{:#}", v["live"]);
    assert_eq!(v["awaiting"], false);
    assert_eq!(v["revoked"], json!([cont]));
    // The console closes: the endpoint flushes and releases its record; the audit reads it.
    app.state::<StewardState>().stop_all();
    let stream = v["live"]["stream"].as_str().unwrap();
    let out = std::process::Command::new(jcp_bin()).args(["audit", stream, "--json"]).output().unwrap();
    let a: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(a["receipts"]["amendments"], 1, "{a:#}");
    assert_eq!(a["receipts"]["revocation_notices"], 1, "{a:#}");
    assert_eq!(a["receipts"]["allows"], 10, "{a:#}");
    assert_eq!(a["receipts"]["outcomes"], 10, "every allow settled by the agent: {a:#}");
    assert_eq!(a["clean"], true, "{a:#}");
}

#[test]
fn s4_11_unresolved_decisions_are_listed_with_their_holder_and_settled_once_with_a_signed_note() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = app(dir.path());
    let stream = dir.path().join("u.jcps");
    let out = std::process::Command::new(jcp_bin())
        .args(["stream", "demo"])
        .arg(&stream)
        .args(["--fast", "--receipts", "60", "--unresolved", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stream = stream.display().to_string();
    invoke(&w, "audit_start", json!({"paths": [stream]})).unwrap();
    let t = Instant::now();
    while invoke(&w, "audit_status", json!({})).unwrap()["state"] == "running" {
        assert!(t.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
    }
    let list = invoke(&w, "steward_unresolved", json!({})).unwrap();
    let s0 = &list[0];
    assert_eq!(
        (s0["stream"].as_str(), s0["total"].as_u64(), s0["changed_since"].as_bool()),
        (Some(stream.as_str()), Some(2), Some(false)),
        "{list:#}"
    );
    let row = s0["rows"][0].clone();
    assert!(row["holder"].as_str().unwrap().starts_with("did:key:"), "the party that held it is named: {row}");
    assert!(row["settled"].is_null());
    let receipt = row["receipt"].as_str().unwrap();
    let settle = |status: &str, note: &str| {
        invoke(&w, "steward_settle", json!({"stream": stream, "receipt": receipt, "status": status, "note": note}))
    };
    // Locked: nothing is signed.
    invoke(&w, "key_create_new", json!({"passphrase": "pw"})).unwrap();
    invoke(&w, "key_lock_now", json!({})).unwrap();
    assert_eq!(settle("failed", "lost").unwrap_err()["code"], "key.locked");
    invoke(&w, "key_unlock_now", json!({"passphrase": "pw"})).unwrap();
    assert_eq!(settle("failed", "  ").unwrap_err()["code"], "settle.no_note");
    let done = settle("failed", "the worker's host was lost mid-write; nothing committed").unwrap();
    assert_eq!(done["action"], "settle");
    let list = invoke(&w, "steward_unresolved", json!({})).unwrap();
    let settled = &list[0]["rows"][0]["settled"];
    assert_eq!(
        (settled["status"].as_str(), settled["settled_by"].as_str()),
        (Some("failed"), done["signed_by"].as_str()),
        "{list:#}"
    );
    assert!(list[0]["rows"][1]["settled"].is_null(), "only the one settled");
    // Once only; and never retried or re-debited: the stream is unchanged.
    assert_eq!(settle("completed", "again").unwrap_err()["code"], "settle-not-unresolved");
    assert_eq!(list[0]["changed_since"], false, "the record is not written by a settlement");
    let history = invoke(&w, "steward_actions", json!({"limit": 5})).unwrap();
    assert_eq!(history[0]["action"], "settle", "{history}");
}
