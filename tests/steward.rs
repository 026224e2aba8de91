//! The steward's console through Tauri's mock runtime (the real IPC path:
//! argument names, serialisation, `{code, message}` errors): the key
//! (create, lock, unlock, wrong passphrase), and a live run end to end —
//! the embedded endpoint, `jcp backend demo` behind its gate (the work,
//! metered and charged by the endpoint) and the demo agent (`jcp agent
//! demo`) as child processes — approved, amended (a widening refused before signing),
//! revoked, and its record audited (JCP §4.3, §4.7, §4.11, §11; issue 17).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;
use common::{invoke, picked};
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
    steward.work_factor = keystore::MIN_WORK_FACTOR;
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

/// The live processes this test process started running `args` (its
/// children whose command line has them in a row), from `/proc`.
fn children_running(args: &[&str]) -> Vec<u32> {
    let me = std::process::id();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let Some(after) = stat.rsplit_once(')').map(|(_, a)| a.split_whitespace().collect::<Vec<_>>()) else {
            continue;
        };
        if after.first() == Some(&"Z") || after.get(1).and_then(|p| p.parse::<u32>().ok()) != Some(me) {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let words: Vec<String> = cmd.split(|b| *b == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
        if words.windows(args.len()).any(|w| w.iter().zip(args).all(|(a, b)| a == b)) {
            found.push(pid);
        }
    }
    found
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
    // No key at all is not a locked key: the refusal says which (issue 39).
    std::env::set_var("JCP_BIN", jcp_bin());
    let e = invoke(&w, "live_run_start", json!({})).unwrap_err();
    assert_eq!(e["code"], "key.missing", "{e}");
    assert!(e["message"].as_str().unwrap().contains("create one or import one"), "{e}");
    let s = invoke(&w, "key_create_new", json!({"passphrase": "correct horse"})).unwrap();
    assert_eq!((s["exists"].as_bool(), s["unlocked"].as_bool()), (Some(true), Some(true)), "{s}");
    let did = s["did"].as_str().unwrap().to_owned();
    assert!(did.starts_with("did:key:z6Mk"), "{did}");
    // The private key never crosses IPC: nothing but the status comes back.
    assert_eq!(
        s.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["path", "exists", "did", "unlocked", "error", "idle_lock_s"]
    );
    // It says after how long an unlocked key locks itself (issue 34): 15 minutes unless configured.
    assert_eq!(s["idle_lock_s"].as_u64(), Some(900), "{s}");
    // Creating again never overwrites.
    let e = invoke(&w, "key_create_new", json!({"passphrase": "another horse"})).unwrap_err();
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
    invoke(&w, "key_create_new", json!({"passphrase": "correct horse"})).unwrap();
    let row = invoke(&w, "live_run_start", json!({})).unwrap();
    let id = row["id"].as_i64().unwrap();
    assert_eq!(row["live"], "running", "{row}");
    // The first checkpoint arrives (5 actions, each run behind the endpoint's
    // gate, metered and charged there) and awaits the steward.
    let v = wait_for(&w, id, "the first checkpoint", |v| v["awaiting"] == true);
    let spent1 = v["run"]["checkpoints"][0]["spent"]["uj"].as_u64().unwrap();
    let budget = jcp_console::steward::LIVE_BUDGET_UJ;
    assert_eq!(v["run"]["remainder"]["uj"], budget - spent1, "{v:#}");
    // The live view lists each metered call with the endpoint's figure; the
    // checkpoint states their sum, what the agent was debited (§11).
    let metered = v["live"]["metered"].as_array().unwrap();
    assert_eq!(metered.len(), 5, "{:#}", v["live"]);
    let sum: u64 = metered.iter().map(|c| c["energy_uj"].as_u64().unwrap()).sum();
    assert_eq!(sum, spent1, "{:#}", v["live"]);
    let events = v["live"]["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e["text"].as_str().unwrap().contains("the endpoint metered")), "{events:?}");
    for c in metered {
        assert_ne!(c["provenance"], "HwShunt", "{c}");
        assert_eq!(c["charged"], c["energy_text"], "the charge is the figure: {c}");
        // Not declared self-contained: Partial, and the gap is named.
        assert_eq!(c["coverage"], "Partial", "{c}");
        assert!(c["gaps"].as_array().unwrap().iter().any(|g| g["code"] == "not-declared-self-contained"), "{c}");
    }
    // The energy view shows the live run's latest metered call beside the machine's windows.
    let snap = invoke(&w, "energy_snapshot", json!({"limit": 10})).unwrap();
    let lines = snap["live_metered"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{snap}");
    let line = lines[0].as_str().unwrap();
    assert!(line.contains("step 5: ") && line.contains("Partial — part of the call's work"), "{line}");
    let note = v["live"]["metered_note"].as_str().unwrap();
    assert!(note.contains("5 of them Partial") && note.contains("not its total"), "{note}");
    let ov = invoke(&w, "steward_overview", json!({})).unwrap();
    assert_eq!(ov["awaiting"], 1, "{ov}");
    // Above the remainder: refused before signing, nothing written.
    let before = std::fs::read(v["run"]["path"].as_str().unwrap()).unwrap();
    let form = |b: Option<u64>| json!({"budget_uj": b, "expiry": null, "instructions": null, "add_caveats": []});
    let above = budget - spent1 + 1;
    let e = invoke(&w, "steward_preview", json!({"id": id, "form": form(Some(above))})).unwrap_err();
    assert_eq!(e["code"], "steer-above-remainder", "{e}");
    let e = invoke(&w, "steward_amend", json!({"id": id, "form": form(Some(above))})).unwrap_err();
    assert_eq!(e["code"], "steer-above-remainder", "{e}");
    assert_eq!(std::fs::read(v["run"]["path"].as_str().unwrap()).unwrap(), before);
    // Amend to 50 J: the run goes on under the continuation.
    let amended = 50_000_000;
    let p = invoke(&w, "steward_preview", json!({"id": id, "form": form(Some(amended))})).unwrap();
    assert_eq!((p["budget_uj"].as_u64(), p["ceiling_uj"].as_u64()), (Some(amended), Some(budget - spent1)), "{p}");
    let done = invoke(&w, "steward_amend", json!({"id": id, "form": form(Some(amended))})).unwrap();
    assert_eq!(done["action"], "amend");
    let cont = done["signed"][1].as_str().unwrap().to_owned();
    let v = wait_for(&w, id, "the second checkpoint, under the continuation", |v| {
        v["awaiting"] == true && v["run"]["checkpoints"].as_array().is_some_and(|c| c.len() == 2)
    });
    assert_eq!(v["live"]["grant"], cont.as_str(), "{:#}", v["live"]);
    assert_eq!(v["run"]["active_budget"], "50.000 J");
    let spent2 = v["run"]["checkpoints"][1]["spent"]["uj"].as_u64().unwrap();
    let left = amended - (spent2 - spent1);
    assert_eq!(v["run"]["remainder"]["uj"], left, "{:#}", v["run"]);
    assert_eq!(v["live"]["metered"].as_array().unwrap().len(), 10, "{:#}", v["live"]);
    assert_eq!(v["history"][0]["action"], "live_start");
    assert_eq!(v["history"][1]["action"], "amend");
    assert!(v["history"][1]["signed_by"].as_str().unwrap().starts_with("did:key:"), "{}", v["history"]);
    // Above the continuation's remainder: refused.
    assert_eq!(
        invoke(&w, "steward_preview", json!({"id": id, "form": form(Some(left + 1))})).unwrap_err()["code"],
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
    // Issue 39: the run's one status is from its record: revoked, awaiting nobody.
    let ov = invoke(&w, "steward_overview", json!({})).unwrap();
    let row = ov["runs"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
    assert_eq!(
        (&row["status"], &row["awaiting"], &ov["awaiting"]),
        (&json!("revoked"), &json!(false), &json!(0)),
        "{ov:#}"
    );
    // The console closes: the endpoint flushes and releases its record and
    // the backend behind its gate is stopped (none is left behind); the
    // audit reads the record.
    assert_eq!(children_running(&["backend", "demo"]).len(), 1, "the live run's backend runs as the console's child");
    app.state::<StewardState>().stop_all();
    assert_eq!(children_running(&["backend", "demo"]), Vec::<u32>::new(), "no backend outlives the live run");
    let stream = v["live"]["stream"].as_str().unwrap();
    let out = std::process::Command::new(jcp_bin()).args(["audit", stream, "--json"]).output().unwrap();
    let a: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(a["receipts"]["amendments"], 1, "{a:#}");
    assert_eq!(a["receipts"]["revocation_notices"], 1, "{a:#}");
    assert_eq!(a["receipts"]["settlements"], 10, "every reservation settled by the endpoint's charge: {a:#}");
    assert_eq!(a["unresolved_total"], 0, "{a:#}");
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
    invoke(&w, "audit_start", json!({"handles": [picked(&w, &stream)]})).unwrap();
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
    // Issue 34: the stream by the handle its list gave; a path is refused.
    let handle = s0["handle"].as_str().unwrap().to_owned();
    let e =
        invoke(&w, "steward_settle", json!({"stream": stream, "receipt": receipt, "status": "failed", "note": "n"}))
            .unwrap_err();
    assert_eq!(e["code"], "ipc.unknown_handle", "{e}");
    let settle = |status: &str, note: &str| {
        invoke(&w, "steward_settle", json!({"stream": handle, "receipt": receipt, "status": status, "note": note}))
    };
    // Locked: nothing is signed.
    invoke(&w, "key_create_new", json!({"passphrase": "correct horse"})).unwrap();
    invoke(&w, "key_lock_now", json!({})).unwrap();
    assert_eq!(settle("failed", "lost").unwrap_err()["code"], "key.locked");
    invoke(&w, "key_unlock_now", json!({"passphrase": "correct horse"})).unwrap();
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

/// The official MCP Python SDK (crates/gateway/tests/mcp_session.py) running
/// `steps` against the command line the console prepared; its stdout lines.
fn sdk_session(dir: &Path, steps: &Value, command: &str, args: &[String]) -> std::process::Child {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let py = root.join("crates/gateway/tests/.venv/bin/python");
    assert!(py.exists(), "run scripts/setup.sh: the MCP Python SDK is missing at {}", py.display());
    std::process::Command::new(py)
        .current_dir(dir)
        .arg(root.join("crates/gateway/tests/mcp_session.py"))
        .arg(steps.to_string())
        .arg(command)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(dir.join("sdk.err")).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn c21_s11_a_gateway_run_set_up_in_the_console_is_steered_there_amended_then_revoked() {
    let t = tempfile::tempdir().unwrap();
    let (_app, w) = app(t.path());
    let _ = jcp_bin();
    invoke(&w, "key_create_new", json!({"passphrase": "correct horse"})).unwrap();
    let server =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/gateway/tests/npm/node_modules/.bin/mcp-server-everything");
    assert!(server.exists(), "run scripts/setup.sh: {} is missing", server.display());
    let bindings = r#"{"tools":[{"tool":"echo","action":"echo","system":"everything","operation":"echo","target":"everything:echo","arguments":["message"]}]}"#;
    let form = json!({"name": "everything", "upstream": [server.display().to_string(), "stdio"], "resource": "text:everything",
        "actions": ["echo"], "budget_uj": 100_000_000_000u64, "bindings": bindings, "checkpoint_every": 2});
    let p = invoke(&w, "gateway_run_prepare", json!({"form": form})).unwrap();
    let id = p["id"].as_i64().unwrap();
    assert!(p["mcp_config"].as_str().unwrap().contains("\"mcpServers\""), "{p}");
    let args: Vec<String> = p["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    // The agent's client launches the line: two calls, a checkpoint, the third held.
    let steps = json!([
        {"call": "echo", "args": {"message": "a"}}, {"call": "echo", "args": {"message": "b"}},
        {"call": "echo", "args": {"message": "after the amendment"}}, {"call": "echo", "args": {"message": "c"}},
        {"call": "echo", "args": {"message": "after the revocation"}},
    ]);
    let mut sdk = sdk_session(t.path(), &steps, p["command"].as_str().unwrap(), &args);
    let v = wait_for(&w, id, "the held call at the first checkpoint", |v| {
        v["awaiting"] == true && v["gateway"]["held_at"].is_string()
    });
    let g = &v["gateway"];
    assert_eq!((g["allowed"].as_u64(), g["client"].as_str()), (Some(2), Some("mcp")), "{g:#}");
    assert!(g["calls"][0]["intent_hash"].as_str().unwrap().starts_with("sha256:"), "{g:#}");
    assert_eq!(g["calls"][0]["metered"]["coverage"], "Partial", "{g:#}");
    // Approve from the console (an amendment with exactly the remainder): the held call goes on.
    invoke(
        &w,
        "steward_amend",
        json!({"id": id, "form": {"budget_uj": null, "expiry": null, "instructions": null, "add_caveats": []}}),
    )
    .unwrap();
    let v = wait_for(&w, id, "the second checkpoint, under the continuation", |v| {
        v["run"]["checkpoints"].as_array().is_some_and(|c| c.len() == 2) && v["gateway"]["held_at"].is_string()
    });
    assert_eq!(v["gateway"]["allowed"], 4, "{:#}", v["gateway"]);
    let cont = v["run"]["active_grant"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| v["run"]["grants"].as_array().unwrap().last().unwrap()["id"].as_str().unwrap().to_owned());
    // Revoke from the console: the held call is denied `revoked`, sealed; the session ends.
    invoke(&w, "steward_revoke", json!({"id": id, "grant": cont})).unwrap();
    let st = sdk.wait().unwrap();
    assert!(st.success(), "{}", std::fs::read_to_string(t.path().join("sdk.err")).unwrap_or_default());
    let mut out = String::new();
    std::io::Read::read_to_string(sdk.stdout.as_mut().unwrap(), &mut out).unwrap();
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = lines.iter().find(|l| l["step"] == 4).unwrap();
    assert_eq!(last["meta"]["jcp/code"], "revoked", "{last}");
    let v = wait_for(&w, id, "the gateway's log to show the end", |v| v["gateway"]["closed"] == true);
    assert_eq!(v["gateway"]["denied"], 1, "{:#}", v["gateway"]);
    // The record audits clean: the amendment and the revocation in it.
    let stream = v["gateway"]["stream"].as_str().unwrap();
    let out = std::process::Command::new(jcp_bin()).args(["audit", stream, "--json"]).output().unwrap();
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (a["receipts"]["amendments"].as_u64(), a["receipts"]["revocation_notices"].as_u64()),
        (Some(1), Some(1)),
        "{a:#}"
    );
    assert_eq!(a["clean"], true, "{a:#}");
    // The Auditor opens the gateway's stream like any other: the same verdict
    // as `jcp audit`, and every call's intent hash recomputed from its binding.
    invoke(&w, "audit_start", json!({"handles": [picked(&w, &stream)]})).unwrap();
    let t0 = Instant::now();
    let done = loop {
        let s = invoke(&w, "audit_status", json!({})).unwrap();
        if s["state"] != "running" {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "the audit never finished: {s}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let r = invoke(&w, "audit_report", json!({"id": done["id"]})).unwrap();
    assert_eq!(r["verdict"], "clean", "{r:#}");
    assert_eq!(r["report"]["intents"], a["intents"], "{r:#}");
    let calls = a["intents"]["calls"].as_u64().unwrap();
    assert!(calls >= 2, "{a:#}");
    assert_eq!(a["intents"]["recomputed"].as_u64(), Some(calls), "{a:#}");
}

/// §4.7 (issue 39, "Stop the run"): a run the steward stops from the
/// console reads `stopped`, "stopped by the console", never `crashed`:
/// the agent ended by the supervisor's own signal.
#[test]
fn c21_a_live_run_the_steward_stops_reads_stopped_not_crashed() {
    std::env::set_var("JCP_BIN", jcp_bin());
    let dir = tempfile::tempdir().unwrap();
    let (_app, w) = app(dir.path());
    invoke(&w, "key_create_new", json!({"passphrase": "correct horse"})).unwrap();
    let row = invoke(&w, "live_run_start", json!({})).unwrap();
    let id = row["id"].as_i64().unwrap();
    wait_for(&w, id, "the first checkpoint", |v| v["awaiting"] == true);
    let stopped = invoke(&w, "live_run_stop", json!({"id": id})).unwrap();
    let v = wait_for(&w, id, "the run to end", |v| v["live"]["state"] != "running");
    assert_eq!(v["live"]["state"], "stopped", "{stopped:#} {:#}", v["live"]);
    assert!(v["live"]["ended"].as_str().unwrap().starts_with("stopped by the console"), "{:#}", v["live"]);
    // Issue 39: its checkpoint awaited the steward when it was stopped; a run
    // whose agent is gone awaits nobody: not in the badge, no "awaits you".
    assert_eq!(v["awaiting"], false, "{v:#}");
    let status = |ov: &Value| ov["runs"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap()["status"].clone();
    let ov = invoke(&w, "steward_overview", json!({})).unwrap();
    assert_eq!((status(&ov), &ov["awaiting"]), (json!("stopped"), &json!(0)), "{ov:#}");
    // After a restart nothing is live: the history still says the steward stopped it.
    drop(w);
    drop(_app);
    let (_app2, w2) = app(dir.path());
    let ov = invoke(&w2, "steward_overview", json!({})).unwrap();
    assert_eq!((status(&ov), &ov["awaiting"]), (json!("stopped"), &json!(0)), "{ov:#}");
}

/// Issue 39, "the Steward view must never show a wrong state": the runs
/// folder's watcher sees a line a gateway adds to its log beside a run
/// (`<run>.events.jsonl`: a call, a hold, the session closing), so the view
/// reloads and never shows a closed session as running; the log itself is
/// not listed as a run.
#[test]
fn s11_a_gateway_log_line_beside_a_run_reaches_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Mutex::new(console_store::Store::open_in_memory().unwrap());
    let mut seen = std::collections::HashMap::new();
    let run = dir.path().join("g.jcprun");
    std::fs::write(&run, b"run").unwrap();
    assert!(jcp_console::steward::scan_runs(&store, dir.path(), &mut seen), "a new run");
    assert!(!jcp_console::steward::scan_runs(&store, dir.path(), &mut seen), "nothing changed");
    let log = dir.path().join("g.jcprun.events.jsonl");
    std::fs::write(&log, b"{\"event\":\"started\"}\n").unwrap();
    assert!(jcp_console::steward::scan_runs(&store, dir.path(), &mut seen), "the log appeared");
    std::fs::write(&log, b"{\"event\":\"started\"}\n{\"event\":\"closed\"}\n").unwrap();
    assert!(jcp_console::steward::scan_runs(&store, dir.path(), &mut seen), "the session closed");
    let runs = store.lock().unwrap().items().unwrap().into_iter().filter(|i| i.path.ends_with(".jsonl")).count();
    assert_eq!(runs, 0, "a log is not a run");
}
