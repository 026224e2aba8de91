//! `jcp gateway` with real parts nobody here wrote (§11 relay mode,
//! Agent-Safe Intent v1 §8): the official MCP Python SDK as the agent's
//! client and `@modelcontextprotocol/server-everything` from npm as the
//! upstream server, both installed by `scripts/setup.sh`. Each call is
//! bound, decided by the durable gate, run, metered over the server's tree
//! and charged; the record audits clean and every intent hash recomputes
//! from it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "support/cli.rs"]
mod cli;
use cli::{jcp, keys_and_root, ok};

const WAIT: Duration = Duration::from_secs(90);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The official SDK's interpreter and the npm server: installed by scripts/setup.sh.
fn parts() -> (PathBuf, PathBuf) {
    let py = repo().join("crates/gateway/tests/.venv/bin/python");
    let server = repo().join("crates/gateway/tests/npm/node_modules/.bin/mcp-server-everything");
    assert!(
        py.exists() && server.exists(),
        "the gateway tests need the MCP Python SDK at {} and server-everything at {}: run scripts/setup.sh",
        py.display(),
        server.display()
    );
    (py, server)
}

const TOOLS: &str = r#"{"tools":[
 {"tool":"echo","action":"echo","system":"everything","operation":"echo","target":"everything:echo","arguments":["message"],"consequential":["message"]},
 {"tool":"get-sum","action":"sum","system":"everything","operation":"get-sum","target":"everything:sum","arguments":["a","b"]},
 {"tool":"get-env","action":"env","system":"everything","operation":"get-env","target":"everything:env"},
 {"tool":"trigger-long-running-operation","action":"long","system":"everything","operation":"long","target":"everything:long","arguments":["duration","steps"]}
]}"#;

/// The flags every test's gateway runs with (the files `setup` writes).
const GATEWAY_FLAGS: [&str; 12] = [
    "--chain",
    "root.jcp",
    "--key",
    "agent.key",
    "--steward-key",
    "steward.key",
    "--stream",
    "s.jcps",
    "--tools",
    "tools.json",
    "--events",
    "events.jsonl",
];

/// `jcp gateway` itself, spoken to over raw stdio (what the SDK would never send).
fn raw_gateway(dir: &Path, extra: &[&str], upstream: &[&std::ffi::OsStr]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_jcp"))
        .current_dir(dir)
        .arg("gateway")
        .args(GATEWAY_FLAGS)
        .args(extra)
        .arg("--")
        .args(upstream)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Keys, a root grant on `text:everything` for `actions`, the bindings.
fn setup(dir: &Path, budget_uj: u64, actions: &str) {
    keys_and_root(dir, "text:everything", actions, &budget_uj.to_string());
    std::fs::write(dir.join("tools.json"), TOOLS).unwrap();
}

/// The SDK client running `steps` through `jcp gateway`; its lines arrive on a channel.
struct Session {
    child: Child,
    lines: Receiver<Value>,
}

impl Session {
    fn start(dir: &Path, steps: &Value, extra: &[&str]) -> Self {
        let (_, server) = parts();
        Self::start_with(dir, steps, extra, &[server.display().to_string(), "stdio".into()])
    }

    /// With `upstream` (a command line) behind the gateway.
    fn start_with(dir: &Path, steps: &Value, extra: &[&str], upstream: &[String]) -> Self {
        let (py, _) = parts();
        let mut args: Vec<String> = vec![env!("CARGO_BIN_EXE_jcp").into(), "gateway".into()];
        args.extend(GATEWAY_FLAGS.iter().map(|a| (*a).to_owned()));
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args.push("--".into());
        args.extend(upstream.iter().cloned());
        Self::spawn_client(dir, &py, steps, &args)
    }

    /// The SDK client script with `target`: the gateway's command line, or the URL it serves MCP at.
    fn spawn_client(dir: &Path, py: &Path, steps: &Value, target: &[String]) -> Self {
        let script = repo().join("crates/gateway/tests/mcp_session.py").display().to_string();
        let mut child = Command::new(py)
            .current_dir(dir)
            .arg(script)
            .arg(steps.to_string())
            .args(target)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("session.err")).unwrap())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&l) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        });
        Self { child, lines }
    }

    fn next(&self, dir: &Path) -> Value {
        match self.lines.recv_timeout(WAIT) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                panic!(
                    "the session said nothing more; its stderr:\n{}",
                    std::fs::read_to_string(dir.join("session.err")).unwrap_or_default()
                )
            }
        }
    }

    /// Every line up to and including `{"closed": true}`, and the client's exit.
    fn finish(mut self, dir: &Path) -> Vec<Value> {
        let mut all = Vec::new();
        loop {
            let v = self.next(dir);
            let closed = v["closed"] == true;
            all.push(v);
            if closed {
                break;
            }
        }
        let st = self.child.wait().unwrap();
        assert!(st.success(), "{}", std::fs::read_to_string(dir.join("session.err")).unwrap_or_default());
        all
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn step(all: &[Value], i: usize) -> &Value {
    all.iter().find(|v| v["step"] == i).unwrap_or_else(|| panic!("no step {i} in {all:?}"))
}

fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn s11_asi_s8_an_official_sdk_session_through_the_gateway_is_bound_decided_metered_and_sealed() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo,sum");
    let steps = json!([
        {"list": true},
        {"call": "echo", "args": {"message": "hi"}},
        {"call": "get-sum", "args": {"a": 2, "b": 3}},
        {"call": "get-env"},
        {"call": "get-tiny-image"},
        {"call": "get-sum", "args": {"a": 1, "b": 2, "c": 3}},
    ]);
    let all = Session::start(d, &steps, &[]).finish(d);
    assert_eq!(all[0]["initialized"], "mcp-servers/everything", "{all:?}");
    // tools/list passes through, each tool marked with what the grant allows.
    let tools = step(&all, 0)["tools"].as_array().unwrap();
    let mark = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["meta"].clone();
    assert_eq!(mark("echo")["jcp/allowed"], true, "{tools:?}");
    assert_eq!(mark("get-env")["jcp/allowed"], false);
    assert!(mark("get-env")["jcp/why"].as_str().unwrap().contains("does not allow the action \"env\""));
    assert!(mark("get-tiny-image")["jcp/why"].as_str().unwrap().starts_with("no binding"));
    // Allowed: the tool's own answer as soon as the tool gave it, with its
    // reservation receipt and intent hash (answered first: the charge is
    // recorded after it, before the next call is decided).
    let ev = events(d);
    let allowed: Vec<&Value> = ev.iter().filter(|e| e["event"] == "call" && e["verdict"] == "allow").collect();
    for ((i, text), e) in [(1, "Echo: hi"), (2, "The sum of 2 and 3 is 5.")].into_iter().zip(&allowed) {
        let s = step(&all, i);
        assert_eq!((s["is_error"].as_bool(), s["text"].as_str()), (Some(false), Some(text)), "{s}");
        let m = &s["meta"];
        assert!(m["jcp/receipt"].is_string() && m["jcp/charge"].is_null(), "{s}");
        assert!(m["jcp/intent_hash"].as_str().unwrap().starts_with("sha256:"));
        // The call's charge and the endpoint's metered figure are in the
        // events log (never a hardware grade it did not read).
        assert_eq!((&e["receipt"], &e["intent_hash"]), (&m["jcp/receipt"], &m["jcp/intent_hash"]), "{e}");
        assert!(e["charge"].is_string() && e["state"] == "done", "{e}");
        let energy = &e["metered"]["energy"];
        assert_ne!(energy["provenance"], "HwShunt", "{e}");
        // Not declared self-contained: Partial, the gap named.
        assert_eq!(energy["coverage"], "Partial", "{e}");
        let gaps = e["metered"]["gaps"].as_array().unwrap();
        assert!(gaps.iter().any(|g| g["code"] == "not-declared-self-contained"), "{e}");
    }
    // Denied by the gate: a tool error naming the reason and the receipt.
    let denied = step(&all, 3);
    assert_eq!(denied["is_error"], true);
    assert_eq!(denied["meta"]["jcp/code"], "action-not-granted", "{denied}");
    let deny_receipt = denied["meta"]["jcp/receipt"].as_str().unwrap();
    assert!(denied["text"].as_str().unwrap().contains(deny_receipt));
    // Refused before the gate, never guessed: no binding; an argument the binding does not declare.
    assert_eq!(step(&all, 4)["meta"]["jcp/code"], "tool-unbound");
    assert_eq!(step(&all, 5)["meta"]["jcp/code"], "MCP_ARGUMENTS_INVALID");
    // The record audits clean: two reservations settled by their charges, one deny.
    let audit: Value = serde_json::from_str(&ok(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["clean"], true, "{audit:#}");
    // Every recorded call's intent hash recomputes from its recorded binding
    // and is the hash the client was told; its receipts seal that binding.
    let v: Value = serde_json::from_str(&ok(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
    assert_eq!(v["clean"], true, "{v:#}");
    let calls = v["report"]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3, "echo, get-sum, get-env reached the gate: {v:#}");
    for (c, i) in calls.iter().zip([1, 2, 3]) {
        assert_eq!(c["intent_hash"], step(&all, i)["meta"]["jcp/intent_hash"], "{c}");
        assert!(c["receipts"].as_array().unwrap().iter().any(|r| r[0] == step(&all, i)["meta"]["jcp/receipt"]), "{c}");
    }
    // The events: one per call, the refused ones included.
    let verdicts: Vec<&str> =
        ev.iter().filter(|e| e["event"] == "call").map(|e| e["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["allow", "allow", "deny", "refused", "refused"], "{ev:?}");
    assert_eq!(ev.last().unwrap()["summary"], json!({"calls": 5, "allowed": 2, "denied": 1, "refused": 2, "lost": 0}));
}

/// A client on a socket pair (Node's `child_process`, under Claude Desktop
/// or VS Code, gives a child socket pairs, not pipes): its messages read on
/// the runtime where stdin is a socket of its own; with one socket for both
/// directions, on a thread (a non-blocking stdin would be a non-blocking
/// stdout). Either way every call is decided, relayed and answered.
fn socket_session(dir: &Path, one_socket: bool) -> (Vec<Value>, String) {
    use std::io::Write;
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;
    let (_, server) = parts();
    let (ours_in, theirs_in) = UnixStream::pair().unwrap();
    let (ours_out, theirs_out) = if one_socket {
        (ours_in.try_clone().unwrap(), theirs_in.try_clone().unwrap())
    } else {
        UnixStream::pair().unwrap()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_jcp"))
        .current_dir(dir)
        .env("RUST_LOG", "jcp_gateway=debug")
        .arg("gateway")
        .args(GATEWAY_FLAGS)
        .arg("--")
        .arg(&server)
        .arg("stdio")
        .stdin(Stdio::from(OwnedFd::from(theirs_in)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)))
        .stderr(std::fs::File::create(dir.join("gateway.err")).unwrap())
        .spawn()
        .unwrap();
    ours_out.set_read_timeout(Some(WAIT)).unwrap();
    let mut tx = &ours_in;
    let mut rx = BufReader::new(&ours_out);
    let mut answers = Vec::new();
    let mut ask = |tx: &mut &UnixStream, v: Value| {
        writeln!(tx, "{v}").unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(rx.read_line(&mut line).unwrap() > 0, "the gateway closed its output");
            let a: Value = serde_json::from_str(&line).unwrap();
            if a.get("id") == v.get("id") {
                return a;
            }
        }
    };
    ask(
        &mut tx,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "socket-client", "version": "1"}}}),
    );
    writeln!(tx, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    for i in 1..=3 {
        answers.push(ask(
            &mut tx,
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"message": format!("m{i}")}}}),
        ));
    }
    // The client closes its side for writing: the session ends.
    ours_in.shutdown(std::net::Shutdown::Write).unwrap();
    let st = child.wait().unwrap();
    assert!(st.success(), "{}", std::fs::read_to_string(dir.join("gateway.err")).unwrap_or_default());
    (answers, std::fs::read_to_string(dir.join("gateway.err")).unwrap())
}

#[test]
fn s11_a_client_on_socket_pairs_is_answered_with_its_input_on_the_runtime_or_on_a_thread() {
    for (one_socket, read_on) in [(false, "read on the runtime"), (true, "read on a thread of its own")] {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        setup(d, u64::MAX / 4, "echo");
        let (answers, err) = socket_session(d, one_socket);
        assert!(err.contains(read_on), "one socket {one_socket}: {err}");
        for (i, a) in answers.iter().enumerate() {
            assert!(a["result"]["isError"] != true, "{a}");
            assert_eq!(a["result"]["content"][0]["text"], format!("Echo: m{}", i + 1), "{a}");
            assert!(a["result"]["_meta"]["jcp/receipt"].is_string(), "{a}");
        }
        let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
        assert_eq!(audit["clean"], true, "{audit:#}");
    }
}

#[test]
fn s4_9_s11_a_call_past_the_budget_is_denied_with_its_reason_and_the_spend_is_the_metered_charges() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    // 1 µJ. Each call reserves what is left and is charged what the meter
    // read over the server's tree (0 until a call's span holds a clock tick
    // of its CPU time); the first charge at or above the budget is debited
    // whole (a breach, recorded, never capped) and the next call is denied.
    setup(d, 1, "echo");
    let steps = json!([{"repeat": "echo", "args": {"message": "a"}, "until_code": "budget-exceeded", "max": 400}]);
    let all = Session::start(d, &steps, &[]).finish(d);
    let s = step(&all, 0);
    let results = s["results"].as_array().unwrap();
    let (last, allowed) = results.split_last().unwrap();
    assert_eq!(last["meta"]["jcp/code"], "budget-exceeded", "no denial in {} calls", results.len());
    assert!(last["text"].as_str().unwrap().contains(last["meta"]["jcp/receipt"].as_str().unwrap()));
    assert!(allowed.iter().all(|r| r["is_error"] == false), "{allowed:?}");
    // Each allowed call's metered charge, from the events log (answered first).
    let ev = events(d);
    let metered: Vec<u64> = ev
        .iter()
        .filter(|e| e["event"] == "call" && e["verdict"] == "allow")
        .map(|e| e["metered"]["energy"]["uj"].as_u64().unwrap())
        .collect();
    assert_eq!(metered.len(), allowed.len(), "{ev:?}");
    let charged: u64 = metered.iter().sum();
    assert!(charged >= 1, "{allowed:?}");
    // The audit debits exactly the metered charges, and names the breach.
    let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
    let g = audit["grants"].as_array().unwrap().first().cloned().unwrap_or_else(|| panic!("{audit:#}"));
    assert_eq!(g["spent_uj"].as_u64(), Some(charged), "{audit:#}");
    assert_eq!(g["denies"].as_u64(), Some(1), "{g}");
}

fn jcp_out(dir: &Path, args: &[&str]) -> String {
    String::from_utf8(jcp(dir, args).stdout).unwrap()
}

#[test]
fn s4_3_s11_a_revocation_fed_to_the_gateway_denies_the_next_call_revoked() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    let sock = format!("unix:{}", d.join("g.sock").display());
    let flag = d.join("revoked.flag").display().to_string();
    let steps = json!([{"call": "echo", "args": {"message": "a"}}, {"wait_file": flag}, {"call": "echo", "args": {"message": "b"}}]);
    let s = Session::start(d, &steps, &["--listen", &sock]);
    let _init = s.next(d);
    let first = s.next(d);
    assert_eq!(first["is_error"], false, "{first}");
    ok(d, &["grant", "revoke", "--grant", "root.jcp", "--key", "issuer.key", "--out", "rev.jcp"]);
    ok(d, &["feed", "revoke", "--connect", &sock, "--revocation", "rev.jcp", "--grant", "root.jcp", "--marker", "1"]);
    std::fs::write(&flag, b"").unwrap();
    let all = s.finish(d);
    let last = step(&all, 2);
    assert_eq!(last["meta"]["jcp/code"], "revoked", "{last}");
    assert!(last["text"].as_str().unwrap().contains(last["meta"]["jcp/receipt"].as_str().unwrap()));
    // Revoked after the first call's charge: nothing is spent after the revocation.
    let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["clean"], true, "{audit:#}");
}

#[test]
fn s4_11_an_upstream_killed_mid_call_leaves_the_decision_unresolved_and_visible() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "long");
    let steps = json!([{"call": "trigger-long-running-operation", "args": {"duration": 30, "steps": 3}}]);
    let s = Session::start(d, &steps, &["--max-uj", "1000000000"]);
    let _init = s.next(d);
    // The call is in flight once its allow (the reservation) is recorded.
    let deadline = Instant::now() + WAIT;
    let pid = loop {
        assert!(Instant::now() < deadline, "the call was never decided");
        let v: Value =
            serde_json::from_str(&jcp_out(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap_or(Value::Null);
        let decided = v["report"]["calls"][0]["receipts"].as_array().is_some_and(|r| !r.is_empty());
        if decided {
            break events(d)[0]["upstream_pid"].as_u64().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap().success());
    let all = s.finish(d);
    let lost = step(&all, 0);
    assert_eq!(lost["is_error"], true, "{lost}");
    assert_eq!(lost["meta"]["jcp/code"], "unresolved", "{lost}");
    assert!(lost["text"].as_str().unwrap().contains("outcome is unknown"), "{lost}");
    // The audit shows it: one unresolved decision, its reservation debited.
    let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["unresolved"].as_array().map(Vec::len), Some(1), "{audit:#}");
    let ev = events(d);
    assert!(ev.iter().any(|e| e["event"] == "call" && e["state"] == "lost"), "{ev:?}");
}

/// The gateway's events so far, once one satisfies `f`.
fn wait_event(dir: &Path, f: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(Instant::now() < deadline, "no such event: {:?}", std::fs::read_to_string(dir.join("events.jsonl")));
        if let Ok(text) = std::fs::read_to_string(dir.join("events.jsonl")) {
            if let Some(e) = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|e| f(e)) {
                return e;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn c21_s4_7_a_gateway_run_is_held_at_its_checkpoint_until_the_steward_amends_and_goes_on_under_the_continuation() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo,sum");
    let steps = json!([
        {"call": "echo", "args": {"message": "a"}},
        {"call": "echo", "args": {"message": "b"}},
        {"call": "echo", "args": {"message": "held"}},
        {"list": true},
    ]);
    let s = Session::start(d, &steps, &["--run", "r.jcprun", "--checkpoint-every", "2", "--max-uj", "1000000000"]);
    // After the second call the gateway, as the holder, checkpoints the run
    // and holds the third call.
    let cp = wait_event(d, |e| e["event"] == "checkpoint");
    wait_event(d, |e| e["event"] == "held");
    let v: Value = serde_json::from_str(&ok(d, &["run", "verify", "r.jcprun", "--json"])).unwrap();
    assert_eq!(v["checkpoints"][0]["id"], cp["id"], "{v:#}");
    assert_eq!(v["checkpoints"][0]["spent"]["uj"], cp["spent_uj"], "the checkpoint states what the endpoint charged");
    // The steward amends to 50 J: the held call goes on under the continuation.
    ok(
        d,
        &[
            "run",
            "amend",
            "--run",
            "r.jcprun",
            "--key",
            "issuer.key",
            "--budget-uj",
            "50000000",
            "--caveat",
            "ActionIn=echo",
            "--continuation-out",
            "cont.jcp",
        ],
    );
    let all = s.finish(d);
    let held = step(&all, 2);
    assert_eq!((held["is_error"].as_bool(), held["text"].as_str()), (Some(false), Some("Echo: held")), "{held}");
    assert!(
        held["progress"].as_array().unwrap().iter().any(|m| m.as_str().unwrap().contains("held at checkpoint")),
        "the held call reported progress while it waited: {held}"
    );
    let cont = wait_event(d, |e| e["event"] == "continued");
    let cont_id = ok(d, &["inspect", "cont.jcp", "--json"]);
    let cont_id: Value = serde_json::from_str(&cont_id).unwrap();
    assert_eq!(cont["continuation"], cont_id["id"], "{cont}");
    // tools/list is marked against the chain in force: the continuation,
    // whose ActionIn caveat leaves `sum` out.
    let tools = step(&all, 3)["tools"].as_array().unwrap();
    let mark = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["meta"].clone();
    assert!(mark("echo")["jcp/why"].as_str().unwrap().contains(cont_id["id"].as_str().unwrap()), "{tools:?}");
    assert_eq!(mark("get-sum")["jcp/allowed"], false, "{tools:?}");
    assert!(mark("get-sum")["jcp/why"].as_str().unwrap().contains("ActionIn"), "{tools:?}");
    // The endpoint admitted the amendment: the steered grant is superseded there,
    // and the audit of the record is clean.
    let audit: Value = serde_json::from_str(&ok(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["clean"], true, "{audit:#}");
    assert_eq!(audit["receipts"]["amendments"], 1, "{audit:#}");
}

#[test]
fn c21_s4_3_a_revocation_beside_the_run_ends_a_held_gateway_run_with_a_sealed_denial() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    let steps = json!([{"call": "echo", "args": {"message": "a"}}, {"call": "echo", "args": {"message": "held"}}]);
    let s = Session::start(d, &steps, &["--run", "r.jcprun", "--checkpoint-every", "1", "--max-uj", "1000000000"]);
    wait_event(d, |e| e["event"] == "held");
    let root: Value = serde_json::from_str(&ok(d, &["inspect", "root.jcp", "--json"])).unwrap();
    let root = root["id"].as_str().unwrap().to_owned();
    std::fs::create_dir_all(d.join("r.jcprun.revocations")).unwrap();
    ok(
        d,
        &[
            "grant",
            "revoke",
            "--grant",
            "root.jcp",
            "--key",
            "issuer.key",
            "--out",
            &format!("r.jcprun.revocations/{root}.jcp"),
        ],
    );
    let all = s.finish(d);
    let held = step(&all, 1);
    assert_eq!(held["meta"]["jcp/code"], "revoked", "{held}");
    assert!(held["text"].as_str().unwrap().contains(held["meta"]["jcp/receipt"].as_str().unwrap()));
    wait_event(d, |e| e["event"] == "revoked");
    // Admitted at the next marker: the allow made before it is no violation (§4.3).
    let audit: Value = serde_json::from_str(&ok(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["receipts"]["revocation_notices"], 1, "{audit:#}");
    assert_eq!(audit["clean"], true, "{audit:#}");
}

#[test]
fn s11_asi_s8_the_filesystem_server_from_npm_behind_the_gateway_reads_what_is_granted_and_nothing_else() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "read");
    let files = d.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("notes.txt"), "the steward approves\n").unwrap();
    // A tool answer over the wire's default 1 MiB message cap comes back whole.
    let big: String = (0..60_000).map(|i| format!("line {i:06} of a large file\n")).collect();
    std::fs::write(files.join("big.txt"), &big).unwrap();
    std::fs::write(
        d.join("tools.json"),
        r#"{"tools":[{"tool":"read_text_file","action":"read","system":"files","operation":"read","target":"file:{path}","arguments":["path","head","tail"],"consequential":["path"],"resource":"text:everything"}]}"#,
    )
    .unwrap();
    let server = repo().join("crates/gateway/tests/npm/node_modules/.bin/mcp-server-filesystem");
    let notes = files.join("notes.txt").display().to_string();
    let outside = d.join("root.jcp").display().to_string();
    let steps = json!([
        {"call": "read_text_file", "args": {"path": notes}},
        {"call": "write_file", "args": {"path": notes, "content": "overwritten"}},
        {"call": "read_text_file", "args": {"path": outside}},
        {"call": "read_text_file", "args": {"path": files.join("big.txt").display().to_string()}},
    ]);
    // Settled before each answer: the charge receipt and the figure ride in it.
    let all = Session::start_with(
        d,
        &steps,
        &["--settle-before-answer"],
        &[server.display().to_string(), files.display().to_string()],
    )
    .finish(d);
    let read = step(&all, 0);
    assert_eq!(
        (read["is_error"].as_bool(), read["text"].as_str()),
        (Some(false), Some("the steward approves\n")),
        "{read}"
    );
    // No binding: refused before the gate, never relayed (the file is untouched).
    assert_eq!(step(&all, 1)["meta"]["jcp/code"], "tool-unbound");
    assert_eq!(std::fs::read_to_string(files.join("notes.txt")).unwrap(), "the steward approves\n");
    // Allowed by the grant, refused by the server itself (outside its roots):
    // the tool's own error comes back, the call recorded as failed and charged.
    let outside_read = step(&all, 2);
    assert_eq!(outside_read["is_error"], true, "{outside_read}");
    assert!(outside_read["meta"]["jcp/charge"].is_string(), "{outside_read}");
    assert!(outside_read["meta"]["jcp/metered"]["energy"]["uj"].is_u64(), "{outside_read}");
    assert!(read["meta"]["jcp/charge"].is_string(), "{read}");
    let large = step(&all, 3);
    assert_eq!(large["is_error"], false, "{}", &large.to_string()[..300]);
    assert_eq!(large["text"].as_str().unwrap().len(), big.len(), "the whole file, {} bytes", big.len());
    let v: Value = serde_json::from_str(&ok(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
    assert_eq!(v["clean"], true, "{v:#}");
    let targets: Vec<&str> =
        v["report"]["calls"].as_array().unwrap().iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(targets, ["read_text_file", "read_text_file", "read_text_file"]);
}

#[test]
fn c21_s11_a_prepared_gateway_run_is_the_line_an_mcp_client_launches_and_it_runs() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 1, "echo");
    let (_, server) = parts();
    let out = ok(
        d,
        &[
            "gateway",
            "prepare",
            "--steward-key",
            "issuer.key",
            "--dir",
            "prep",
            "--run",
            "runs/g.jcprun",
            "--name",
            "everything",
            "--resource",
            "text:everything",
            "--actions",
            "echo",
            "--budget-uj",
            "100000000000",
            "--tools",
            "tools.json",
            "--checkpoint-every",
            "5",
            "--json",
            "--",
            &server.display().to_string(),
            "stdio",
        ],
    );
    let p: Value = serde_json::from_str(&out).unwrap();
    let args: Vec<String> = p["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    assert!(args.iter().all(|a| !a.starts_with("prep/") && !a.starts_with("runs/")), "absolute paths only: {args:?}");
    assert_eq!(p["mcp_config"]["mcpServers"]["everything"]["args"], p["args"]);
    // The line, launched by the official SDK from another directory, runs the session under the new grant.
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let (py, _) = parts();
    let steps = json!([{"call": "echo", "args": {"message": "prepared"}}]);
    let o = Command::new(py)
        .current_dir(&elsewhere)
        .arg(repo().join("crates/gateway/tests/mcp_session.py"))
        .arg(steps.to_string())
        .arg(p["command"].as_str().unwrap())
        .args(&args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let r = step(&lines, 0);
    assert_eq!((r["is_error"].as_bool(), r["text"].as_str()), (Some(false), Some("Echo: prepared")), "{r}");
    // Its log is beside the run, where the console reads it; the run file verifies.
    assert!(Path::new(p["events"].as_str().unwrap()).exists());
    let v: Value = serde_json::from_str(&ok(d, &["run", "verify", "runs/g.jcprun", "--json"])).unwrap();
    assert_eq!(v["clean"], true, "{v:#}");
    // A second prepare onto the same run file is refused before anything is written.
    let again = jcp(
        d,
        &[
            "gateway",
            "prepare",
            "--steward-key",
            "issuer.key",
            "--dir",
            "prep2",
            "--run",
            "runs/g.jcprun",
            "--resource",
            "text:everything",
            "--actions",
            "echo",
            "--budget-uj",
            "1",
            "--tools",
            "tools.json",
            "--",
            "x",
        ],
    );
    assert!(!again.status.success());
    assert!(!d.join("prep2").exists());
}

#[test]
fn s11_a_tools_call_in_a_batch_or_as_a_notification_or_under_two_methods_never_reaches_the_tool() {
    use std::io::Write;
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "write");
    let files = d.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(
        d.join("tools.json"),
        r#"{"tools":[{"tool":"write_file","action":"write","system":"files","operation":"write","target":"file:{path}","arguments":["path","content"],"resource":"text:everything"}]}"#,
    )
    .unwrap();
    let server = repo().join("crates/gateway/tests/npm/node_modules/.bin/mcp-server-filesystem");
    let mut gw = raw_gateway(d, &[], &[server.as_os_str(), files.as_os_str()]);
    let target = |n: &str| files.join(n).display().to_string();
    let call = |id: Value, n: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "write_file", "arguments": {"path": target(n), "content": "written"}}})
    };
    let mut note = call(json!(0), "as-notification.txt");
    note.as_object_mut().unwrap().remove("id");
    let twice = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"ping","method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"{}","content":"written"}}}}}}"#,
        target("two-methods.txt")
    );
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        json!([call(json!(2), "in-a-batch.txt")]).to_string(),
        note.to_string(),
        twice,
        // The same write decided by the gate: the grant allows it, so it runs.
        call(json!(4), "decided.txt").to_string(),
    ];
    let mut stdin = gw.stdin.take().unwrap();
    for l in &lines {
        writeln!(stdin, "{l}").unwrap();
    }
    // Read until the decided call's answer, then close the session.
    let out = gw.stdout.take().unwrap();
    let mut answers = Vec::new();
    for l in BufReader::new(out).lines().map_while(Result::ok) {
        let v: Value = serde_json::from_str(&l).unwrap();
        let done = v["id"] == 4;
        answers.push(v);
        if done {
            break;
        }
    }
    drop(stdin);
    assert!(gw.wait().unwrap().success());
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).cloned();
    assert_eq!(by_id(json!(null)).unwrap()["error"]["code"], -32600, "the batch is refused: {answers:?}");
    assert_eq!(by_id(json!(3)).unwrap()["error"]["code"], -32600, "two methods are refused: {answers:?}");
    assert_eq!(by_id(json!(4)).unwrap()["result"]["isError"], Value::Null, "{answers:?}");
    for n in ["in-a-batch.txt", "as-notification.txt", "two-methods.txt"] {
        assert!(!files.join(n).exists(), "{n} was written: a tools/call reached the tool undecided");
    }
    assert_eq!(std::fs::read_to_string(files.join("decided.txt")).unwrap(), "written");
    // Only the decided call is in the record.
    let v: Value = serde_json::from_str(&ok(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
    assert_eq!(v["report"]["calls"].as_array().unwrap().len(), 1, "{v:#}");
    let refused = events(d).iter().filter(|e| e["event"] == "refused-message").count();
    assert_eq!(refused, 3);
}

#[test]
fn c21_s4_7_an_amendment_fed_over_the_socket_before_the_gateway_reads_it_is_followed_once() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    let sock = format!("unix:{}", d.join("g.sock").display());
    let steps = json!([{"call": "echo", "args": {"message": "a"}}, {"call": "echo", "args": {"message": "held"}}]);
    let s = Session::start(
        d,
        &steps,
        &["--run", "r.jcprun", "--checkpoint-every", "1", "--max-uj", "1000000000", "--listen", &sock],
    );
    wait_event(d, |e| e["event"] == "held");
    // The steward amends in the run file and feeds the amendment to the gateway's socket too (the CLI flow).
    ok(d, &["run", "amend", "--run", "r.jcprun", "--key", "issuer.key", "--budget-uj", "50000000"]);
    ok(d, &["feed", "amend", "--connect", &sock, "--run", "r.jcprun"]);
    let all = s.finish(d);
    let held = step(&all, 1);
    assert_eq!((held["is_error"].as_bool(), held["text"].as_str()), (Some(false), Some("Echo: held")), "{held}");
    let audit: Value = serde_json::from_str(&ok(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["receipts"]["amendments"], 1, "admitted once: {audit:#}");
    assert_eq!(audit["clean"], true, "{audit:#}");
}

#[test]
fn c21_a_gateway_restarted_while_its_run_awaits_the_steward_holds_the_next_call() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    let args = ["--run", "r.jcprun", "--checkpoint-every", "1", "--max-uj", "1000000000", "--wait-timeout-s", "2"];
    // The first session checkpoints after its one call and ends.
    let first = Session::start(d, &json!([{"call": "echo", "args": {"message": "a"}}]), &args).finish(d);
    assert_eq!(step(&first, 0)["is_error"], false);
    wait_event(d, |e| e["event"] == "checkpoint");
    // A new session on the same run: the run still awaits its steward, so its first call is held (and, unanswered, refused).
    let second = Session::start(d, &json!([{"call": "echo", "args": {"message": "b"}}]), &args).finish(d);
    let held = step(&second, 0);
    assert_eq!(held["meta"]["jcp/code"], "checkpoint-wait-timeout", "{held}");
    let v: Value = serde_json::from_str(&ok(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
    assert_eq!(v["report"]["calls"].as_array().unwrap().len(), 1, "the held call was never decided: {v:#}");
}

/// One raw HTTP/1.1 exchange (`Connection: close`): the status and body.
fn http(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

#[test]
fn c21_s11_an_official_sdk_session_over_streamable_http_is_decided_held_at_its_checkpoint_and_amended() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    let (py, server) = parts();
    let mut gw = Command::new(env!("CARGO_BIN_EXE_jcp"))
        .current_dir(d)
        .arg("gateway")
        .args(GATEWAY_FLAGS)
        .args(["--listen", "http://127.0.0.1:0/mcp", "--run", "r.jcprun", "--checkpoint-every", "2"])
        .args(["--max-uj", "1000000000", "--", &server.display().to_string(), "stdio"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(d.join("gateway.err")).unwrap())
        .spawn()
        .unwrap();
    let started = wait_event(d, |e| e["event"] == "started");
    let url = started["mcp_url"].as_str().unwrap_or_else(|| panic!("{started}")).to_owned();
    let json_ct = ("Content-Type", "application/json");
    let accept = ("Accept", "application/json, text/event-stream");
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    // Refused at the transport, before anything reaches the session: another
    // site's Origin (DNS rebinding), a message before `initialize`, a batch.
    assert_eq!(http(&url, "POST", &[json_ct, accept, ("Origin", "http://evil.example")], list).0, 403);
    assert_eq!(http(&url, "POST", &[json_ct, accept], list).0, 400);
    let (st, body) = http(&url, "POST", &[json_ct, accept], &format!("[{list}]"));
    assert_eq!((st, body.contains("-32600")), (400, true), "{body}");
    assert_eq!(http(&url.replace("/mcp", "/other"), "POST", &[json_ct, accept], list).0, 404);
    // The official SDK's Streamable HTTP client runs the session.
    let flag = d.join("go.flag").display().to_string();
    let steps = json!([
        {"list": true},
        {"call": "echo", "args": {"message": "a"}},
        {"call": "get-env"},
        {"call": "echo", "args": {"message": "b"}},
        {"wait_file": flag},
        {"call": "echo", "args": {"message": "held"}},
    ]);
    let s = Session::spawn_client(d, &py, &steps, &[url.clone()]);
    assert_eq!(s.next(d)["initialized"], "mcp-servers/everything");
    let mut all: Vec<Value> = (0..4).map(|_| s.next(d)).collect();
    // One gateway, one session: a second `initialize` is refused, and so is
    // a message naming another session.
    let init = r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    assert_eq!(http(&url, "POST", &[json_ct, accept], init).0, 409);
    assert_eq!(http(&url, "POST", &[json_ct, accept, ("Mcp-Session-Id", "not-this-one")], list).0, 404);
    std::fs::write(&flag, b"").unwrap();
    // The third allowed call is held at the checkpoint; the steward amends.
    wait_event(d, |e| e["event"] == "held");
    ok(d, &["run", "amend", "--run", "r.jcprun", "--key", "issuer.key", "--budget-uj", "50000000"]);
    all.extend(s.finish(d));
    let tools = step(&all, 0)["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "echo" && t["meta"]["jcp/allowed"] == true), "{tools:?}");
    assert_eq!(step(&all, 1)["text"], "Echo: a");
    assert_eq!(step(&all, 2)["meta"]["jcp/code"], "action-not-granted");
    let held = step(&all, 5);
    assert_eq!((held["is_error"].as_bool(), held["text"].as_str()), (Some(false), Some("Echo: held")), "{held}");
    assert!(
        held["progress"].as_array().unwrap().iter().any(|m| m.as_str().unwrap().contains("held at checkpoint")),
        "the held call's progress reached the client on its SSE stream: {held}"
    );
    // The client's DELETE ended the session, and with it the gateway.
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(st) = gw.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "the gateway outlived its session");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{}", std::fs::read_to_string(d.join("gateway.err")).unwrap());
    assert!(events(d).iter().any(|e| e["event"] == "session-deleted"));
    let audit: Value = serde_json::from_str(&ok(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["clean"], true, "{audit:#}");
    assert_eq!(audit["receipts"]["amendments"], 1, "{audit:#}");
    let v: Value = serde_json::from_str(&ok(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
    assert_eq!(v["clean"], true, "{v:#}");
    assert_eq!(v["report"]["calls"].as_array().unwrap().len(), 4, "{v:#}");
}

/// `crates/gateway/tests/faulty_upstream.py` with `spec` (the faults) in
/// front of server-everything: the real server, a fault between it and the gateway.
fn faulty_everything(spec: &Value) -> Vec<String> {
    let (py, server) = parts();
    let wrapper = repo().join("crates/gateway/tests/faulty_upstream.py");
    [
        py.display().to_string(),
        wrapper.display().to_string(),
        spec.to_string(),
        server.display().to_string(),
        "stdio".into(),
    ]
    .to_vec()
}

#[test]
fn s4_11_a_call_past_its_timeout_is_cancelled_upstream_left_unresolved_and_the_session_goes_on() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "long,echo");
    let steps = json!([
        {"call": "trigger-long-running-operation", "args": {"duration": 20, "steps": 4}},
        {"call": "echo", "args": {"message": "after the timeout"}},
    ]);
    let s = Session::start(d, &steps, &["--max-uj", "1000000000", "--timeout-s", "2"]);
    let all = s.finish(d);
    let lost = step(&all, 0);
    assert_eq!(lost["is_error"], true, "{lost}");
    assert_eq!(lost["meta"]["jcp/code"], "unresolved", "{lost}");
    let text = lost["text"].as_str().unwrap();
    assert!(text.contains("no answer within 2 s; the call was cancelled upstream"), "{text}");
    let next = step(&all, 1);
    assert_eq!(next["is_error"], false, "the session goes on after a lost call: {next}");
    assert!(next["text"].as_str().unwrap().contains("after the timeout"), "{next}");
    let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["unresolved"].as_array().map(Vec::len), Some(1), "{audit:#}");
    assert!(events(d).iter().any(|e| e["event"] == "call" && e["state"] == "lost"));
}

#[test]
fn s4_11_an_upstream_that_stops_reading_its_input_never_stops_the_gateway() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    // Two calls of 40 kB: together more than the pipe to the server holds,
    // so the second cannot be written whole once the server stops reading.
    let big = |c: &str| json!({"call": "echo", "args": {"message": c.repeat(40_000)}});
    // The tools listed first: the SDK lists them after a call otherwise (a
    // request the server, no longer reading, would never answer).
    let steps = json!([
        {"list": true},
        {"call": "echo", "args": {"message": "read"}},
        big("a"),
        big("b"),
        {"call": "echo", "args": {"message": "after"}},
        {"list": true},
    ]);
    let upstream = faulty_everything(&json!({"stop_reading_after_calls": 1}));
    let s = Session::start_with(d, &steps, &["--max-uj", "1000000000", "--timeout-s", "2"], &upstream);
    let all = s.finish(d);
    assert_eq!(step(&all, 1)["is_error"], false, "{all:?}");
    for i in [2, 3] {
        let lost = step(&all, i);
        assert_eq!(lost["meta"]["jcp/code"], "unresolved", "{lost}");
    }
    // The server's input was given up on: the next call is not sent, and says why.
    let last = step(&all, 4);
    assert_eq!(last["is_error"], true, "{last}");
    assert_eq!(last["meta"]["jcp/code"], "not-run", "{last}");
    assert!(last["text"].as_str().unwrap().contains("read nothing of its input for 2 s"), "{last}");
    // Any other request is answered at once with why, not left waiting.
    let list = step(&all, 5);
    assert_eq!(list["error"]["code"], -32603, "{list}");
    assert!(list["error"]["message"].as_str().unwrap().contains("read nothing of its input"), "{list}");
    let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["unresolved"].as_array().map(Vec::len), Some(2), "{audit:#}");
}

/// `jcp gateway` spoken to over raw stdio, line by line, its answers read as they come.
struct Raw {
    gw: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: Receiver<Value>,
    /// Every line the gateway sent so far.
    seen: Vec<Value>,
}

impl Raw {
    /// The gateway with `extra` flags before `upstream`, initialized.
    fn start(dir: &Path, extra: &[&str], upstream: &[String]) -> Self {
        let upstream: Vec<&std::ffi::OsStr> = upstream.iter().map(std::ffi::OsStr::new).collect();
        let mut gw = raw_gateway(dir, extra, &upstream);
        let stdin = gw.stdin.take();
        let (tx, lines) = std::sync::mpsc::channel::<Value>();
        let out = gw.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str(&l).unwrap_or(json!({"not-json": l})));
            }
        });
        let mut raw = Self { gw, stdin, lines, seen: Vec::new() };
        raw.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
        raw.answer(1);
        raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, v: &Value) {
        use std::io::Write;
        writeln!(self.stdin.as_mut().unwrap(), "{v}").unwrap();
    }

    /// The answer to `id`, once it comes (what came before it is kept in `seen`).
    fn answer(&mut self, id: u64) -> Value {
        loop {
            let v = self.lines.recv_timeout(WAIT).unwrap_or_else(|_| panic!("no answer to {id}: {:?}", self.seen));
            self.seen.push(v.clone());
            if v["id"] == id {
                return v;
            }
        }
    }

    /// Closes the session: everything the gateway still sent, and its exit
    /// (within [`WAIT`], or the test fails).
    fn finish(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        while let Ok(v) = self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            self.seen.push(v);
        }
        let status = loop {
            if let Some(s) = self.gw.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "the gateway did not end after the client closed: {:?}", self.seen);
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success());
        std::mem::take(&mut self.seen)
    }

    fn answers_to(&self, id: u64) -> usize {
        self.seen.iter().filter(|v| v["id"] == id).count()
    }
}

fn call(id: u64, tool: &str, args: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

fn cancel(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "the user stopped"}})
}

#[test]
fn s11_garbage_from_the_upstream_fails_or_leaves_the_call_unresolved_and_a_late_answer_never_reaches_the_client() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    let spec = json!({"answers": ["result-42", "not-json", "late:4.5", "pass"], "drop_cancellations": true});
    let mut raw = Raw::start(d, &["--max-uj", "1000000000", "--timeout-s", "2"], &faulty_everything(&spec));
    let echo = |id: u64| call(id, "echo", &json!({"message": format!("m{id}")}));
    // An answer that is not a tool result: a tool error naming it, the outcome failed.
    raw.send(&echo(2));
    let garbage = raw.answer(2);
    assert_eq!(garbage["result"]["isError"], true, "{garbage}");
    assert_eq!(garbage["result"]["_meta"]["jcp/code"], "upstream-failed", "{garbage}");
    let text = garbage["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("not an MCP tool result or error (its result is not an object but a number)"), "{text}");
    // A line that is not JSON is no answer: the call is unresolved at its timeout.
    raw.send(&echo(3));
    let dropped = raw.answer(3);
    assert_eq!(dropped["result"]["_meta"]["jcp/code"], "unresolved", "{dropped}");
    // An answer after the timeout (the server ignored the cancellation) is not the client's.
    let sent = Instant::now();
    raw.send(&echo(4));
    let late = raw.answer(4);
    assert_eq!(late["result"]["_meta"]["jcp/code"], "unresolved", "{late}");
    std::thread::sleep(Duration::from_millis(5_500).saturating_sub(sent.elapsed()));
    raw.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}));
    let pong = raw.answer(5);
    assert!(pong.get("result").is_some(), "{pong}");
    assert_eq!(raw.answers_to(4), 1, "the late answer reached the client: {:?}", raw.seen);
    raw.finish();
    let states: Vec<Value> =
        events(d).into_iter().filter(|e| e["event"] == "call").map(|e| e["state"].clone()).collect();
    assert_eq!(states, [json!("failed"), json!("lost"), json!("lost")], "{:?}", events(d));
    let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["unresolved"].as_array().map(Vec::len), Some(2), "{audit:#}");
}

#[test]
fn s11_a_call_the_client_cancels_while_it_waits_its_turn_is_never_decided_and_never_runs() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "long,echo");
    let (_, server) = parts();
    let mut raw = Raw::start(d, &["--max-uj", "1000000000"], &[server.display().to_string(), "stdio".into()]);
    // A call in flight for two seconds; one queued behind it, cancelled while it waits.
    raw.send(&call(2, "trigger-long-running-operation", &json!({"duration": 2, "steps": 2})));
    raw.send(&call(3, "echo", &json!({"message": "cancelled"})));
    raw.send(&cancel(3));
    raw.send(&call(4, "echo", &json!({"message": "after"})));
    assert_eq!(raw.answer(2)["result"]["isError"], Value::Null);
    let after = raw.answer(4);
    assert!(after.to_string().contains("Echo: after"), "{after}");
    let seen = raw.finish();
    assert!(!seen.iter().any(|v| v["id"] == 3), "a cancelled call is not answered (MCP Cancellation): {seen:?}");
    // Not decided: the record holds the other two calls only.
    let v: Value = serde_json::from_str(&ok(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
    assert_eq!(v["report"]["calls"].as_array().unwrap().len(), 2, "{v:#}");
    let ev = events(d);
    let cancelled: Vec<&Value> = ev.iter().filter(|e| e["verdict"] == "cancelled").collect();
    assert_eq!(cancelled.len(), 1, "{ev:?}");
    assert_eq!(cancelled[0]["tool"], "echo");
}

/// Waits until the record holds `n` decided calls.
fn wait_decided(dir: &Path, n: usize) {
    let deadline = Instant::now() + WAIT;
    loop {
        let v: Value = serde_json::from_str(&ok(dir, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
        if v["report"]["calls"].as_array().is_some_and(|c| c.len() >= n) {
            return;
        }
        assert!(Instant::now() < deadline, "{n} calls were never decided: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `ping` too long for the upstream's input pipe (64 KiB): once the
/// upstream stops reading, its rest waits in the gateway, and so does
/// every line after it, not a byte of it written.
fn long_ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping", "params": {"pad": "x".repeat(200_000)}})
}

#[test]
fn s4_11_a_call_that_never_reached_a_stalled_upstream_did_not_run_and_is_failed_not_unresolved() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    let upstream = faulty_everything(&json!({"stop_reading_after_calls": 1}));
    let mut raw = Raw::start(d, &["--max-uj", "1000000000", "--timeout-s", "3"], &upstream);
    raw.send(&call(2, "echo", &json!({"message": "read"})));
    assert!(raw.answer(2).to_string().contains("Echo: read"));
    // The server reads nothing more: the ping's rest waits, and the calls behind it.
    raw.send(&long_ping(3));
    raw.send(&call(4, "echo", &json!({"message": "withdrawn"})));
    // Decided, allowed and sent, but not a byte of it written: cancelled
    // now, it is withdrawn, so it did not run; not answered (MCP
    // Cancellation), its outcome recorded.
    wait_decided(d, 2);
    raw.send(&cancel(4));
    raw.send(&call(5, "echo", &json!({"message": "dropped"})));
    // Still unwritten when the input is given up on: did not run, said at once.
    let dropped = raw.answer(5);
    assert_eq!(dropped["result"]["_meta"]["jcp/code"], "not-run", "{dropped}");
    let text = dropped["result"]["content"][0]["text"].as_str().unwrap();
    // Given up on at the stall, or withdrawn at the call's own timeout: whichever comes first.
    assert!(text.contains("not run") && text.contains("never reached the upstream"), "{text}");
    let seen = raw.finish();
    assert!(!seen.iter().any(|v| v["id"] == 4), "a cancelled call is not answered: {seen:?}");
    let calls: Vec<Value> = events(d).into_iter().filter(|e| e["event"] == "call").collect();
    let states: Vec<&Value> = calls.iter().map(|e| &e["state"]).collect();
    assert_eq!(states, [&json!("done"), &json!("failed"), &json!("failed")], "{calls:?}");
    // The log says why each did not run, as the console shows it.
    assert!(calls[1]["why"].as_str().unwrap().contains("cancelled by the client before it reached the upstream"));
    assert!(calls[2]["why"].as_str().unwrap().contains("never reached the upstream"), "{calls:?}");
    // Recorded failed (did not run), not unresolved (may have run, §4.11).
    let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["unresolved"].as_array().map(Vec::len), Some(0), "{audit:#}");
    assert_eq!(audit["clean"], true, "{audit:#}");
}

#[test]
fn s4_11_a_running_call_the_client_cancels_is_not_answered_and_stays_unresolved() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "long,echo");
    let (_, server) = parts();
    let mut raw = Raw::start(d, &["--max-uj", "1000000000"], &[server.display().to_string(), "stdio".into()]);
    raw.send(&call(2, "trigger-long-running-operation", &json!({"duration": 30, "steps": 30})));
    // Recorded (allowed) before it is sent to the server, which it is at once.
    wait_decided(d, 1);
    std::thread::sleep(Duration::from_millis(300));
    raw.send(&cancel(2));
    raw.send(&call(3, "echo", &json!({"message": "after"})));
    assert!(raw.answer(3).to_string().contains("Echo: after"));
    let seen = raw.finish();
    assert!(!seen.iter().any(|v| v["id"] == 2), "a cancelled call is not answered: {seen:?}");
    let calls: Vec<Value> = events(d).into_iter().filter(|e| e["event"] == "call").collect();
    assert_eq!(calls[0]["state"], "lost", "{calls:?}");
    assert_eq!(calls[0]["why"], "cancelled by the client while the tool ran", "{calls:?}");
    // It reached the server, which may have acted on it: unresolved (§4.11).
    let audit: Value = serde_json::from_str(&jcp_out(d, &["audit", "s.jcps", "--json"])).unwrap();
    assert_eq!(audit["unresolved"].as_array().map(Vec::len), Some(1), "{audit:#}");
}

#[test]
fn s11_a_request_whose_id_is_in_flight_is_refused_and_never_takes_another_requests_answer() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "long,echo");
    let upstream = faulty_everything(&json!({"stop_reading_after_calls": 2}));
    let mut raw = Raw::start(d, &["--max-uj", "1000000000"], &upstream);
    // A call in flight for a second: a request of its id, call or not, is
    // refused at once, neither decided nor sent to the server.
    raw.send(&call(2, "trigger-long-running-operation", &json!({"duration": 1, "steps": 1})));
    raw.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    raw.send(&call(2, "echo", &json!({"message": "same id"})));
    for _ in 0..2 {
        let refused = raw.answer(2);
        assert_eq!(refused["error"]["code"], -32600, "{refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("already in use"), "{refused}");
    }
    let done = raw.answer(2);
    assert!(done["result"]["content"].is_array() && done["result"]["isError"] != true, "{done}");
    // The server now reads nothing more: a `ping` stays unanswered, and a
    // call under its id would otherwise take the ping's answer for its own.
    raw.send(&call(3, "echo", &json!({"message": "read"})));
    assert!(raw.answer(3).to_string().contains("Echo: read"));
    raw.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
    raw.send(&call(4, "echo", &json!({"message": "under the ping's id"})));
    let refused = raw.answer(4);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    raw.finish();
    // Two calls decided; the refused ones never reached the gate.
    let v: Value = serde_json::from_str(&ok(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
    assert_eq!(v["report"]["calls"].as_array().unwrap().len(), 2, "{v:#}");
}

#[test]
fn c21_a_held_call_the_client_cancels_is_never_decided_and_one_held_as_the_session_closes_stops_waiting() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 100_000_000_000, "echo");
    let (_, server) = parts();
    let extra = ["--run", "r.jcprun", "--checkpoint-every", "1", "--max-uj", "1000000000", "--wait-timeout-s", "3600"];
    let mut raw = Raw::start(d, &extra, &[server.display().to_string(), "stdio".into()]);
    raw.send(&call(2, "echo", &json!({"message": "one"})));
    raw.answer(2);
    // Held at the checkpoint, then cancelled: never decided, not answered.
    raw.send(&call(3, "echo", &json!({"message": "cancelled while held"})));
    wait_event(d, |e| e["event"] == "held");
    raw.send(&cancel(3));
    let dropped = wait_event(d, |e| e["event"] == "held-call-dropped");
    assert_eq!(dropped["why"], "the client cancelled the call while it was held", "{dropped}");
    // The run is still at its checkpoint: the next call is held in turn. The
    // client goes away: it stops waiting (not after the hour's wait), the session ends.
    raw.send(&call(4, "echo", &json!({"message": "held as the session closes"})));
    wait_event(d, |e| e["event"] == "held" && events(d).iter().filter(|e| e["event"] == "held").count() == 2);
    let seen = raw.finish();
    assert!(!seen.iter().any(|v| v["id"] == 3), "{seen:?}");
    let drops: Vec<Value> = events(d).into_iter().filter(|e| e["event"] == "held-call-dropped").collect();
    assert_eq!(drops.len(), 2, "{drops:?}");
    assert_eq!(drops[1]["why"], "the client closed the session while the call was held");
    let v: Value = serde_json::from_str(&ok(d, &["gateway", "intents", "s.jcps", "--json"])).unwrap();
    assert_eq!(v["report"]["calls"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(events(d).last().unwrap()["summary"]["allowed"], 1);
}
