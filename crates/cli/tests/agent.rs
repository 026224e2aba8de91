//! `jcp agent demo` across real processes (§4.3, §4.7, §11, C21): a served
//! endpoint with `jcp backend demo` behind its gate, a long agent run whose
//! work the endpoint runs, meters and charges (the agent states no joules
//! of its own), and a steward who revokes or amends it while it runs; and
//! the same run supervised by `jcp run live` (`jcp-supervise`, the console's
//! code).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jcp::steering::{Record, Run};
use serde_json::Value;

#[path = "support/cli.rs"]
mod cli;
use cli::{jcp, keys_and_root, ok};

/// Every wait in these tests is bounded by this.
const WAIT: Duration = Duration::from_secs(60);

fn setup(dir: &Path, budget_uj: u64) {
    keys_and_root(dir, "text:search", "read", &budget_uj.to_string());
}

/// A child process whose stdout lines arrive on a channel; killed when
/// dropped, so a failing test never leaves it running.
struct Proc {
    name: &'static str,
    child: Child,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Proc {
    fn spawn(dir: &Path, name: &'static str, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jcp"))
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut err, sink) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Self { name, child, lines, stderr }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The next stdout line, within the bound.
    fn line(&self) -> String {
        match self.lines.recv_timeout(WAIT) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                panic!("{}: no output line within {WAIT:?}; stderr: {}", self.name, self.stderr())
            }
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(200));
                panic!("{}: stdout closed; stderr: {}", self.name, self.stderr())
            }
        }
    }

    /// The next JSON event.
    fn event(&self) -> Value {
        let l = self.line();
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{}: not a JSON line ({e}): {l}", self.name))
    }

    /// Events up to and including the first that `stop` accepts.
    fn until(&self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        loop {
            assert!(Instant::now() < deadline, "{}: waited too long; events so far: {seen:?}", self.name);
            let e = self.event();
            let done = stop(&e);
            seen.push(e);
            if done {
                return seen;
            }
        }
    }

    fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < deadline, "{}: did not exit within {WAIT:?}", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM: `jcp serve` flushes its record and releases it.
    fn sigterm(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        self.wait()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The agent's work per step, run behind the gate by `jcp backend demo`
/// (well above the 10 ms grain of the /proc CPU clock the span reads).
const WORK: &str = "burn:40";
/// A budget many steps of [`WORK`] fit in at the default estimate (1 000 J).
const BIG: u64 = 1_000_000_000;

/// `jcp serve` on `unix:DIR/s.sock`, recording to `DIR/s.jcps`, with `jcp
/// backend demo` behind its gate; returns it once it says it is listening,
/// with the address.
fn serve(dir: &Path) -> (Proc, String) {
    serve_with(dir, &["--backend", "--", env!("CARGO_BIN_EXE_jcp"), "backend", "demo"])
}

/// The steward's admin socket of the endpoint `serve_with` starts (§4.3:
/// unsigned feeds go there, never to the agent's socket).
fn admin(dir: &Path) -> String {
    format!("unix:{}", dir.join("admin.sock").display())
}

fn serve_with(dir: &Path, extra: &[&str]) -> (Proc, String) {
    let addr = format!("unix:{}", dir.join("s.sock").display());
    let adm = admin(dir);
    let mut args = vec![
        "serve",
        "--listen",
        &addr,
        "--admin",
        &adm,
        "--stream",
        "s.jcps",
        "--steward-key",
        "steward.key",
        "--plaintext-key",
    ];
    args.extend_from_slice(extra);
    let p = Proc::spawn(dir, "jcp serve", &args);
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(Instant::now() < deadline, "jcp serve did not start: {}", p.stderr());
        if p.line().starts_with("jcp serve: listening on ") {
            return (p, addr);
        }
    }
}

/// The admin socket `jcp run live` serves beside the endpoint socket `endpoint` (§4.3).
fn admin_beside(endpoint: &str) -> String {
    let sock = Path::new(endpoint.strip_prefix("unix:").expect("a Unix endpoint"));
    format!("unix:{}", sock.with_file_name("admin.sock").display())
}

fn agent(dir: &Path, addr: &str, extra: &[&str]) -> Proc {
    let mut args = vec![
        "agent",
        "demo",
        "--connect",
        addr,
        "--run",
        "r.jcprun",
        "--key",
        "agent.key",
        "--chain",
        "root.jcp",
        "--json",
    ];
    args.extend_from_slice(extra);
    for (flag, default) in [("--work", WORK), ("--interval-ms", "40"), ("--wait-timeout-s", "60")] {
        if !extra.contains(&flag) {
            args.extend_from_slice(&[flag, default]);
        }
    }
    Proc::spawn(dir, "jcp agent demo", &args)
}

fn is(e: &Value, event: &str) -> bool {
    e["event"] == event
}

/// The signed checkpoint and amendment of a run file's last steering, as
/// the files `jcp feed amend` takes.
fn export_steering(dir: &Path, run: &str) {
    let run = Run::read(&dir.join(run)).unwrap();
    let cp =
        run.records().iter().rev().find_map(|r| if let Record::Checkpoint(c) = r { Some(c.to_bytes()) } else { None });
    let am =
        run.records().iter().rev().find_map(|r| if let Record::Amendment(a) = r { Some(a.to_bytes()) } else { None });
    std::fs::write(dir.join("cp.jcp"), cp.unwrap()).unwrap();
    std::fs::write(dir.join("am.jcp"), am.unwrap()).unwrap();
}

fn call(dir: &Path, addr: &str, chain: &str) -> (i32, Value) {
    let o = jcp(dir, &["call", "--connect", addr, "--key", "agent.key", "--chain", chain, "--cost-uj", "1", "--json"]);
    (o.status.code().unwrap_or(-1), serde_json::from_slice(&o.stdout).unwrap_or(Value::Null))
}

/// The debits of the allowed decisions among `events`, each checked against
/// the endpoint's side (§11 "the cost is the holder's measurement"): the
/// agent's debit is its verified charge receipt's, the charge is the figure
/// the endpoint metered, and no reading or hardware grade is claimed that
/// was not read. Their sum.
fn metered_debits(events: &[Value]) -> u64 {
    let mut sum = 0;
    for e in events.iter().filter(|e| is(e, "decision") && e["verdict"] == "allow") {
        let (m, c) = (&e["metered"]["energy"], &e["charge"]);
        let uj = e["debited_uj"].as_u64().unwrap();
        assert!(uj > 0, "metered work costs joules: {e}");
        assert_eq!((c["cost_uj"].as_u64(), m["uj"].as_u64()), (Some(uj), Some(uj)), "{e}");
        assert_eq!(c["provenance"], m["provenance"], "{e}");
        assert_eq!(c["coverage"], m["coverage"], "{e}");
        assert_ne!(m["provenance"], "HwShunt", "no process reading here is a hardware one: {e}");
        assert!(c["measured_uj"].is_null(), "{e}");
        assert_eq!(e["reply"], "done", "{e}");
        assert!(e["metered"]["gaps"].is_array(), "{e}");
        sum += uj;
    }
    sum
}

#[test]
fn c21_agent_stops_on_revocation() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, BIG);
    let (mut server, addr) = serve(d);
    // A pause between steps long enough that the revocation below lands
    // between two calls, not while one runs behind the gate: the charge of
    // work reserved before a revocation and charged after it is sealed after
    // the notice, and the audit reads that allow as a revocation violation
    // (a question for the endpoint and the audit, not for the agent).
    let mut ag = agent(d, &addr, &["--checkpoint-every", "1000", "--max-uj", "50000000", "--interval-ms", "1500"]);
    let started = ag.event();
    assert!(is(&started, "started"), "{started}");
    assert_eq!((started["work"].as_str(), started["max_uj"].as_u64()), (Some(WORK), Some(50_000_000)), "{started}");
    let root = started["grant"].as_str().unwrap().to_owned();
    // Some allowed actions, each reserved at the stated maximum and charged
    // at what the endpoint metered; then the issuer revokes and the feed
    // delivers it.
    let first = ag.until(|e| is(e, "decision") && e["step"] == 3);
    assert!(
        first.iter().filter(|e| is(e, "decision")).all(|e| e["verdict"] == "allow" && e["reserved_uj"] == 50_000_000),
        "{first:?}"
    );
    ok(d, &["grant", "revoke", "--grant", "root.jcp", "--key", "issuer.key", "--out", "rev.jcp"]);
    ok(
        d,
        &["feed", "revoke", "--connect", &admin(d), "--revocation", "rev.jcp", "--grant", "root.jcp", "--marker", "1"],
    );
    let rest = ag.until(|e| is(e, "stopped"));
    let stopped = rest.last().unwrap();
    assert_eq!(stopped["why"], "revoked", "{rest:?}");
    assert_eq!(stopped["message"], format!("stopped: grant {root} was revoked"));
    assert_eq!(ag.wait().code(), Some(1), "{}", ag.stderr());
    let all: Vec<Value> = first.iter().chain(&rest).cloned().collect();
    let decisions: Vec<&Value> = all.iter().filter(|e| is(e, "decision")).collect();
    let (last, allowed) = decisions.split_last().unwrap();
    assert!(allowed.iter().all(|e| e["verdict"] == "allow"), "{decisions:?}");
    assert_eq!((last["verdict"].as_str(), last["reason"].as_str()), (Some("deny"), Some("revoked")));
    assert!(last.get("metered").is_none(), "a deny runs nothing: {last}");
    assert_eq!(stopped["allowed"], allowed.len());
    let spent = metered_debits(&all);
    assert_eq!(stopped["spent_uj"], spent, "the spend is the sum of the charges");
    // Steps are consecutive: one decision per action, none repeated.
    for (i, e) in decisions.iter().enumerate() {
        assert_eq!(e["step"], i + 1);
    }
    // The record holds every decision, and audits: the grant spent what the
    // endpoint charged, each reservation settled by its charge, and the
    // outcomes are the endpoint's (the agent sends none).
    assert!(server.sigterm().success(), "{}", server.stderr());
    let o = jcp(d, &["audit", "s.jcps", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["receipts"]["wire_requests"], decisions.len(), "{v}");
    assert_eq!(v["receipts"]["deny_reasons"]["revoked"], 1, "{v}");
    assert_eq!(v["receipts"]["revocation_notices"], 1, "{v}");
    assert_eq!(v["receipts"]["settlements"], allowed.len(), "{v}");
    assert_eq!(v["unresolved_total"], 0, "{v}");
    let g = v["grants"].as_array().unwrap().iter().find(|g| g["grant_id"] == root.as_str()).unwrap();
    assert_eq!(g["spent_uj"], spent, "{g}");
    assert_eq!((o.status.code(), v["clean"].as_bool()), (Some(0), Some(true)), "{v}");
}

#[test]
fn c21_agent_continues_under_amended_ceiling() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, BIG);
    let (_server, addr) = serve(d);
    let mut ag = agent(d, &addr, &["--checkpoint-every", "3"]);
    let started = ag.event();
    let root = started["grant"].as_str().unwrap().to_owned();
    assert_eq!(started["budget_uj"], BIG);
    // The run file is created under the leaf; three allowed actions, then
    // a checkpoint stating what the agent was debited: the sum of the
    // charges, at the floor of their grades.
    let first = ag.until(|e| is(e, "checkpoint"));
    let cp = first.last().unwrap();
    assert_eq!(first.iter().filter(|e| is(e, "decision") && e["verdict"] == "allow").count(), 3, "{first:?}");
    let spent = metered_debits(&first);
    assert_eq!((cp["seq"].as_u64(), cp["spent_uj"].as_u64()), (Some(0), Some(spent)), "{cp}");
    let floor = first
        .iter()
        .filter_map(|e| e["charge"]["provenance"].as_str())
        .min_by_key(|p| ["Estimator", "ModelBased", "HwShunt"].iter().position(|x| x == p))
        .unwrap();
    assert_eq!(cp["provenance"], floor, "{cp}");
    assert_eq!(cp["grant"], root.as_str());
    // Above the remainder: the steward's tool refuses it.
    let above = (BIG - spent + 1).to_string();
    let o = jcp(d, &["run", "amend", "--run", "r.jcprun", "--key", "issuer.key", "--budget-uj", &above]);
    assert_eq!(o.status.code(), Some(1), "a refusal exits 1 (README)");
    assert!(String::from_utf8_lossy(&o.stderr).contains("steer-above-remainder"));
    // The steward amends: about a step and a half's worth for the rest of
    // the run (fewer steps than the next checkpoint).
    let x = spent / 3 * 3 / 2;
    let xs = x.to_string();
    let out = ok(
        d,
        &[
            "run",
            "amend",
            "--run",
            "r.jcprun",
            "--key",
            "issuer.key",
            "--budget-uj",
            &xs,
            "--continuation-out",
            "cont.jcp",
            "--json",
        ],
    );
    let amended: Value = serde_json::from_str(&out).unwrap();
    let cont = amended["continuation"].as_str().unwrap().to_owned();
    export_steering(d, "r.jcprun");
    let fed = ok(
        d,
        &[
            "feed",
            "amend",
            "--connect",
            &admin(d),
            "--steered",
            "root.jcp",
            "--checkpoint",
            "cp.jcp",
            "--amendment",
            "am.jcp",
            "--continuation",
            "cont.jcp",
            "--json",
        ],
    );
    let fed: Value = serde_json::from_str(&fed).unwrap();
    assert_eq!(fed["admitted"], true, "{fed}");
    // The agent verifies the amendment and continues under the continuation.
    let rest = ag.until(|e| is(e, "stopped"));
    let continued = rest.iter().find(|e| is(e, "continued")).unwrap_or_else(|| panic!("{rest:?}"));
    assert_eq!(continued["checkpoint"], cp["id"]);
    assert_eq!(continued["continuation"], cont.as_str());
    assert_eq!(continued["budget_uj"], x);
    assert_eq!(continued["chain"], serde_json::json!([cont]), "a root re-issue is a chain of its own");
    let after: Vec<&Value> = rest.iter().filter(|e| is(e, "decision")).collect();
    assert!(after.iter().all(|e| e["grant"] == cont.as_str()), "{after:?}");
    // Allowed while the continuation had joules left; the call that used
    // them up ran whole (the work ran: debited whole, its charge records the
    // breach of what it reserved); the next is denied.
    let (denied, allowed) = after.split_last().unwrap();
    assert!(!allowed.is_empty() && allowed.iter().all(|e| e["verdict"] == "allow"), "{after:?}");
    assert_eq!((denied["verdict"].as_str(), denied["reason"].as_str()), (Some("deny"), Some("budget-exceeded")));
    let debited = metered_debits(&rest);
    let (last, _) = allowed.split_last().unwrap();
    let last_uj = last["debited_uj"].as_u64().unwrap();
    assert!(
        debited >= x && debited - last_uj < x,
        "no call begun past the amended ceiling: {debited} of {x}: {after:?}"
    );
    if debited > x {
        assert_eq!(last["charge"]["breach"], "budget-exceeded", "{last}");
    }
    assert_eq!(last["remaining_uj"], 0, "{last}");
    let stopped = rest.last().unwrap();
    assert_eq!(stopped["why"], "budget-exhausted", "{stopped}");
    assert_eq!(stopped["message"], format!("stopped: budget exhausted: 0 µJ of {x} µJ remain on grant {cont}"));
    assert_eq!(stopped["spent_uj"], spent + debited);
    assert_eq!(ag.wait().code(), Some(1), "{}", ag.stderr());
    // The steered grant is superseded at the endpoint (needs
    // Gate::admit_amendment): a request on it is denied.
    let (code, v) = call(d, &addr, "root.jcp");
    assert_eq!((code, v["reason"].as_str()), (1, Some("superseded")), "{v}");
    // The run file verifies clean, active under the continuation.
    let v: Value = serde_json::from_str(&ok(d, &["run", "verify", "r.jcprun", "--json"])).unwrap();
    assert_eq!(v["clean"], true, "{v}");
    assert_eq!(v["active_grant"], cont.as_str());
    // Started again on the same run file, the agent resumes under the
    // continuation with the spend its run declared, and is stopped at once.
    let mut ag2 = agent(d, &addr, &["--checkpoint-every", "3"]);
    let started = ag2.event();
    assert_eq!(
        (started["grant"].as_str(), started["spent_uj"].as_u64()),
        (Some(cont.as_str()), Some(spent)),
        "{started}"
    );
    let rest = ag2.until(|e| is(e, "stopped"));
    assert_eq!(rest.last().unwrap()["why"], "budget-exhausted", "{rest:?}");
    assert_eq!(ag2.wait().code(), Some(1));
}

#[test]
fn c21_agent_stops_when_superseded_without_a_continuation_in_its_run_file() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 1_000_000_000);
    let (_server, addr) = serve(d);
    // A stated maximum: without one each call in flight holds the whole
    // remainder, and an amendment sent while one runs is refused (naming
    // the hold) until it settles.
    let mut ag = agent(d, &addr, &["--checkpoint-every", "0", "--max-uj", "50000000"]);
    let root = ag.event()["grant"].as_str().unwrap().to_owned();
    ag.until(|e| is(e, "decision") && e["step"] == 2);
    // The steward steers a copy of the run the agent never sees.
    std::fs::copy(d.join("r.jcprun"), d.join("steer.jcprun")).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().to_string();
    ok(
        d,
        &[
            "run",
            "checkpoint",
            "--run",
            "steer.jcprun",
            "--key",
            "agent.key",
            "--state",
            "text:x",
            "--at",
            &now,
            "--spent-uj",
            "200",
        ],
    );
    ok(
        d,
        &[
            "run",
            "amend",
            "--run",
            "steer.jcprun",
            "--key",
            "issuer.key",
            "--budget-uj",
            "1000",
            "--continuation-out",
            "cont.jcp",
        ],
    );
    // Straight from the run file: its latest amendment and what it steers.
    ok(d, &["feed", "amend", "--connect", &admin(d), "--run", "steer.jcprun"]);
    let rest = ag.until(|e| is(e, "stopped"));
    let stopped = rest.last().unwrap();
    assert_eq!(stopped["why"], "superseded", "{rest:?}");
    assert_eq!(
        stopped["message"],
        format!("stopped: grant {root} superseded, no continuation in the run file r.jcprun")
    );
    assert_eq!(rest.iter().rev().nth(1).unwrap()["reason"], "superseded");
    assert_eq!(ag.wait().code(), Some(1));
}

#[test]
fn c21_agent_waits_for_an_amendment_and_times_out() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, BIG);
    let (_server, addr) = serve(d);
    let mut ag = agent(d, &addr, &["--checkpoint-every", "2", "--wait-timeout-s", "1"]);
    let events = ag.until(|e| is(e, "stopped"));
    let cp = events.iter().find(|e| is(e, "checkpoint")).unwrap();
    let stopped = events.last().unwrap();
    assert_eq!(stopped["why"], "wait-timeout", "{events:?}");
    assert!(stopped["message"].as_str().unwrap().contains(cp["id"].as_str().unwrap()), "{stopped}");
    assert_eq!(ag.wait().code(), Some(1));
    // The checkpoint is in the run file, signed by the agent.
    let v: Value = serde_json::from_str(&ok(d, &["run", "verify", "r.jcprun", "--json"])).unwrap();
    assert_eq!(v["checkpoints"][0]["id"], cp["id"]);
    assert_eq!(v["checkpoints"][0]["spent"]["uj"], metered_debits(&events), "{v}");
    assert_eq!(v["checkpoints"][0]["spent"]["uj"], cp["spent_uj"], "{v}");
}

#[test]
fn c21_agent_waiting_at_a_checkpoint_stops_on_a_revocation_beside_the_run() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, BIG);
    let (_server, addr) = serve(d);
    let mut ag = agent(d, &addr, &["--checkpoint-every", "2"]);
    let root = ag.event()["grant"].as_str().unwrap().to_owned();
    let events = ag.until(|e| is(e, "checkpoint"));
    assert!(is(events.last().unwrap(), "checkpoint"));
    // A revocation by someone other than the issuer is ignored ...
    std::fs::create_dir_all(d.join("r.jcprun.revocations")).unwrap();
    ok(d, &["key", "new", "--out", "other.key", "--seed", &"05".repeat(32)]);
    let forged = jcp(
        d,
        &["grant", "revoke", "--grant", "root.jcp", "--key", "agent.key", "--out", "r.jcprun.revocations/forged.jcp"],
    );
    assert!(!forged.status.success(), "the CLI refuses to sign a revocation by a non-issuer");
    std::fs::write(d.join("r.jcprun.revocations/junk.jcp"), b"not a revocation").unwrap();
    // ... the issuer's, written where the console writes it, stops the waiting agent.
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
    let rest = ag.until(|e| is(e, "stopped"));
    let stopped = rest.last().unwrap();
    assert_eq!(
        (stopped["why"].as_str(), stopped["revoked"].as_str()),
        (Some("revoked"), Some(root.as_str())),
        "{rest:?}"
    );
    assert!(!rest.iter().any(|e| is(e, "decision")), "no request while waiting: {rest:?}");
    assert_eq!(ag.wait().code(), Some(1));
}

#[test]
fn c21_agent_exits_2_when_no_endpoint_listens() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, 1000);
    let addr = format!("unix:{}", d.join("none.sock").display());
    let mut args = vec![
        "agent",
        "demo",
        "--connect",
        addr.as_str(),
        "--run",
        "r.jcprun",
        "--key",
        "agent.key",
        "--chain",
        "root.jcp",
    ];
    let mut ag = Proc::spawn(d, "jcp agent demo", &args);
    assert_eq!(ag.wait().code(), Some(2));
    let mut out = String::new();
    while let Ok(l) = ag.lines.recv_timeout(Duration::from_secs(5)) {
        out += &l;
        out.push('\n');
    }
    assert!(out.contains(&format!("stopped: the endpoint at {addr} failed: [io]")), "{out}");
    let err = ag.stderr();
    assert!(err.contains("error [io]") && err.contains(&format!("connecting to {addr}")), "{err}");
    // With --json: the stopped event names the error's code.
    args.push("--json");
    let mut ag = Proc::spawn(d, "jcp agent demo", &args);
    let events = ag.until(|e| is(e, "stopped"));
    assert_eq!(
        (events.last().unwrap()["why"].as_str(), events.last().unwrap()["code"].as_str()),
        (Some("endpoint-error"), Some("io"))
    );
    assert_eq!(ag.wait().code(), Some(2));
}

/// With `--stop-with-parent` (how the console starts it), an agent waiting at
/// a checkpoint stops once the process that started it is gone: closing or
/// killing the console leaves no agent waiting for a steward who is not there.
#[cfg(unix)]
#[test]
fn c21_agent_stops_when_its_parent_is_gone() {
    use std::io::Write as _;
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, BIG);
    let (_server, addr) = serve(d);
    // The parent: a shell that starts the agent and exits when told (its stdin closes).
    let script = format!(
        "\"$JCP\" agent demo --connect '{addr}' --run r.jcprun --key agent.key --chain root.jcp --work {WORK} --interval-ms 40 --json --checkpoint-every 2 --wait-timeout-s 60 --stop-with-parent > agent.jsonl 2>&1 & read _"
    );
    let mut sh = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(d)
        .env("JCP", env!("CARGO_BIN_EXE_jcp"))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let events = || -> Vec<Value> {
        std::fs::read_to_string(d.join("agent.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let deadline = Instant::now() + WAIT;
    while !events().iter().any(|e| is(e, "checkpoint")) {
        assert!(Instant::now() < deadline, "no checkpoint: {:?}", events());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(!events().iter().any(|e| is(e, "stopped")), "it waits while its parent lives");
    sh.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(sh.wait().unwrap().success());
    while !events().iter().any(|e| is(e, "stopped")) {
        assert!(Instant::now() < deadline, "the agent outlived its parent: {:?}", events());
        std::thread::sleep(Duration::from_millis(50));
    }
    let stopped = events().into_iter().find(|e| is(e, "stopped")).unwrap();
    assert_eq!(stopped["why"], "parent-gone", "{stopped}");
}

/// `--actions N`: the agent stops cleanly after N allowed actions; every
/// one ran behind the gate, and the agent sent no outcome of its own (the
/// endpoint recorded each with its charge).
#[test]
fn s11_agent_states_no_joules_its_spend_is_what_the_endpoint_charged() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, BIG);
    let (mut server, addr) = serve(d);
    let mut ag = agent(d, &addr, &["--actions", "3", "--checkpoint-every", "0"]);
    let events = ag.until(|e| is(e, "stopped"));
    assert_eq!(ag.wait().code(), Some(0), "{}", ag.stderr());
    let stopped = events.last().unwrap();
    assert_eq!((stopped["why"].as_str(), stopped["allowed"].as_u64()), (Some("done"), Some(3)), "{stopped}");
    let spent = metered_debits(&events);
    assert_eq!(stopped["spent_uj"], spent);
    for e in events.iter().filter(|e| is(e, "decision")) {
        // Not declared self-contained: the figure is Partial and says why.
        assert_eq!(e["metered"]["energy"]["coverage"], "Partial", "{e}");
        let gaps: Vec<&str> =
            e["metered"]["gaps"].as_array().unwrap().iter().filter_map(|g| g["code"].as_str()).collect();
        assert!(gaps.contains(&"not-declared-self-contained"), "{gaps:?}");
        assert_eq!(e["output"], "burned 40 ms", "the demo ran the first line and ignored the note: {e}");
        assert!(e["reserved_uj"].as_u64().unwrap() > 0, "no stated maximum: the remainder is reserved: {e}");
    }
    assert!(server.sigterm().success(), "{}", server.stderr());
    let v: Value = serde_json::from_slice(&jcp(d, &["audit", "s.jcps", "--json"]).stdout).unwrap();
    assert_eq!(v["grants"][0]["spent_uj"], spent, "{v}");
    assert_eq!((v["receipts"]["settlements"].as_u64(), v["unresolved_total"].as_u64()), (Some(3), Some(0)), "{v}");
    assert_eq!(v["receipts"]["wire_requests"], 3, "one request per step: {v}");
}

/// A call lost behind the gate (the backend exits mid-call) stops the
/// agent: it reports nothing for it, and the decision stays unresolved,
/// its reservation debited (§4.11).
#[test]
fn s4_11_agent_stops_on_a_lost_call_and_reports_no_outcome_for_it() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, BIG);
    let (mut server, addr) = serve(d);
    let mut ag = agent(d, &addr, &["--work", "crash", "--max-uj", "300000"]);
    let events = ag.until(|e| is(e, "stopped"));
    assert_eq!(ag.wait().code(), Some(1), "{}", ag.stderr());
    let decision = events.iter().find(|e| is(e, "decision")).unwrap();
    assert_eq!((decision["verdict"].as_str(), decision["reply"].as_str()), (Some("allow"), Some("lost")), "{decision}");
    assert!(decision["charge"].is_null(), "never charged: {decision}");
    assert_eq!(decision["debited_uj"], 300_000, "the reservation stays debited: {decision}");
    let stopped = events.last().unwrap();
    assert_eq!(stopped["why"], "lost", "{stopped}");
    let msg = stopped["message"].as_str().unwrap();
    assert!(msg.contains("exit status 70") && msg.contains("unresolved"), "{msg}");
    assert_eq!((stopped["spent_uj"].as_u64(), stopped["reserved_uj"].as_u64()), (Some(300_000), Some(300_000)));
    assert_eq!(stopped["receipt"], decision["receipt"]);
    assert!(server.sigterm().success(), "{}", server.stderr());
    let v: Value = serde_json::from_slice(&jcp(d, &["audit", "s.jcps", "--json"]).stdout).unwrap();
    assert_eq!(v["unresolved_total"], 1, "not reported completed or failed by anyone: {v}");
    assert_eq!(v["grants"][0]["spent_uj"], 300_000, "{v}");
}

/// An endpoint with no backend runs no work and sends no reply: the agent,
/// which states no joules of its own, says so and exits 2.
#[test]
fn s11_agent_refuses_an_endpoint_with_nothing_behind_its_gate() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d, BIG);
    let (_server, addr) = serve_with(d, &[]);
    let mut ag = agent(d, &addr, &["--reply-timeout-s", "1"]);
    let events = ag.until(|e| is(e, "stopped"));
    assert_eq!(ag.wait().code(), Some(2), "{}", ag.stderr());
    let stopped = events.last().unwrap();
    assert_eq!(stopped["why"], "endpoint-error", "{stopped}");
    let msg = stopped["message"].as_str().unwrap();
    assert!(msg.contains("no reply within 1 s") && msg.contains("jcp serve --backend"), "{msg}");
    assert!(!events.iter().any(|e| is(e, "decision")), "no figure of its own is reported: {events:?}");
}

/// The processes whose command line has `word` among its arguments (from
/// `/proc`), zombies aside.
fn running_with(word: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, a)| a.trim_start().starts_with('Z')));
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if !zombie && cmd.split(|b| *b == 0).any(|w| w == word.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// `jcp run live` (§4.7, §11): the steward's key issues the agent its grant
/// and the run is supervised by `jcp-supervise`, the code the console's live
/// runs are, in the foreground: the run file in the runs folder, the
/// endpoint with `jcp backend demo` behind its gate, the agent's events on
/// stdout. The steward steers it with the ordinary commands (`jcp run
/// amend`, `jcp feed amend`), the agent goes on under the continuation, and
/// SIGTERM stops the agent and closes the endpoint: nothing is left running
/// and the record audits clean.
#[cfg(unix)]
#[test]
fn c21_s11_a_run_started_from_the_cli_is_supervised_by_the_same_crate_as_the_console_and_steered_with_the_cli() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    let steward = ok(d, &["key", "show", "steward.key"]).trim().to_owned();
    let mut live = Proc::spawn(
        d,
        "jcp run live",
        &[
            "run",
            "live",
            "--steward-key",
            "steward.key",
            "--runs",
            "runs",
            "--json",
            "--checkpoint-every",
            "3",
            "--interval-ms",
            "40",
            "--work",
            WORK,
            "--wait-timeout-s",
            "60",
        ],
    );
    let head = live.event();
    assert_eq!((head["event"].as_str(), head["steward"].as_str()), (Some("supervising"), Some(steward.as_str())));
    let run = head["run"].as_str().unwrap().to_owned();
    let endpoint = head["endpoint"].as_str().unwrap().to_owned();
    let root = head["grant"].as_str().unwrap().to_owned();
    let budget = head["budget_uj"].as_u64().unwrap();
    // The run file in the runs folder; the run's own folder (its endpoint's
    // record) beside it, in `live/`, as in a console workspace.
    assert!(Path::new(&run).starts_with(d.join("runs")) && run.ends_with(".jcprun"), "{head}");
    assert!(Path::new(head["stream"].as_str().unwrap()).starts_with(d.join("live")), "{head}");
    assert!(endpoint.starts_with("unix:"), "{head}");
    let started = live.event();
    assert_eq!((started["event"].as_str(), started["grant"].as_str()), (Some("started"), Some(root.as_str())));
    assert_eq!(started["agent"], head["agent"]);
    // Three allowed actions, each metered and charged behind the gate, then
    // the agent's checkpoint in the run file, where it waits for the steward.
    let first = live.until(|e| is(e, "checkpoint"));
    let cp = first.last().unwrap();
    let spent = metered_debits(&first);
    assert_eq!((cp["seq"].as_u64(), cp["spent_uj"].as_u64()), (Some(0), Some(spent)), "{cp}");
    let report: Value = serde_json::from_str(&ok(d, &["run", "verify", &run, "--json"])).unwrap();
    let first_cp = report["checkpoints"][0]["id"].as_str();
    assert_eq!((report["clean"].as_bool(), first_cp), (Some(true), cp["id"].as_str()), "{report}");
    // The steward amends it in the run file only (`jcp run amend`, as the
    // console's Amend does): the supervisor follows the run file and feeds
    // the amendment to its endpoint; a `jcp feed amend` after it changes nothing.
    let amended_uj = (budget - spent) / 2;
    let amended: Value = serde_json::from_str(&ok(
        d,
        &["run", "amend", "--run", &run, "--key", "steward.key", "--budget-uj", &amended_uj.to_string(), "--json"],
    ))
    .unwrap();
    let cont = amended["continuation"].as_str().unwrap().to_owned();
    // The agent goes on under the continuation, to its next checkpoint.
    let rest = live.until(|e| is(e, "checkpoint"));
    let followed = rest.iter().find(|e| is(e, "followed")).unwrap_or_else(|| panic!("{rest:?}"));
    assert_eq!(
        (followed["what"].as_str(), followed["continuation"].as_str()),
        (Some("amendment"), Some(cont.as_str()))
    );
    let fed: Value = serde_json::from_str(&ok(
        d,
        &["feed", "amend", "--connect", &admin_beside(&endpoint), "--run", &run, "--json"],
    ))
    .unwrap();
    assert_eq!(fed["admitted"], true, "{fed}");
    assert!(fed["message"].as_str().unwrap().contains("recorded once"), "{fed}");
    let continued = rest.iter().find(|e| is(e, "continued")).unwrap_or_else(|| panic!("{rest:?}"));
    assert_eq!(
        (continued["continuation"].as_str(), continued["budget_uj"].as_u64()),
        (Some(cont.as_str()), Some(amended_uj))
    );
    let after: Vec<&Value> = rest.iter().filter(|e| is(e, "decision")).collect();
    assert_eq!(after.len(), 3, "{rest:?}");
    assert!(after.iter().all(|e| e["verdict"] == "allow" && e["grant"] == cont.as_str()), "{after:?}");
    let more = metered_debits(&rest);
    assert_eq!(rest.last().unwrap()["grant"], cont.as_str());
    // SIGTERM: the agent is stopped, the endpoint closed, the command exits 0
    // with its last line; no agent is left running.
    assert_eq!(running_with(&run).len(), 1, "the agent runs with the run file");
    assert_eq!(live.sigterm().code(), Some(0), "{}", live.stderr());
    let ended = live.until(|e| is(e, "ended"));
    let ended = ended.last().unwrap();
    assert_eq!((ended["signal"].as_str(), ended["allowed"].as_u64()), (Some("SIGTERM"), Some(6)), "{ended}");
    assert_eq!((ended["spent_uj"].as_u64(), ended["grant"].as_str()), (Some(spent + more), Some(cont.as_str())));
    assert!(ended["ended"].as_str().unwrap().starts_with("stopped by jcp run live"), "{ended}");
    assert_eq!(running_with(&run), Vec::<u32>::new(), "no agent outlives the run");
    assert!(live.stderr().contains("SIGTERM: stopping the agent"), "{}", live.stderr());
    // The endpoint's record audits clean: every call settled by its charge,
    // the amendment recorded, nothing unresolved.
    let audit: Value =
        serde_json::from_slice(&jcp(d, &["audit", head["stream"].as_str().unwrap(), "--json"]).stdout).unwrap();
    assert_eq!(audit["clean"], true, "{audit:#}");
    let settled = (audit["receipts"]["settlements"].as_u64(), audit["unresolved_total"].as_u64());
    assert_eq!(settled, (Some(6), Some(0)), "{audit:#}");
    assert_eq!(audit["receipts"]["amendments"], 1, "{audit:#}");
    // The run file verifies clean, active under the continuation.
    let report: Value = serde_json::from_str(&ok(d, &["run", "verify", &run, "--json"])).unwrap();
    let active = report["active_grant"].as_str();
    assert_eq!((report["clean"].as_bool(), active), (Some(true), Some(cont.as_str())), "{report}");
}

/// An agent that stops on its own (here: a grant smaller than one call's
/// work, used up by the first) ends `jcp run live` with the agent's own exit
/// status, 1 for a refusal, its last line saying why.
#[test]
fn c21_s11_run_live_exits_with_the_agents_status_when_the_agent_stops_on_its_own() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "--out", "steward.key"]);
    let mut live = Proc::spawn(
        d,
        "jcp run live",
        &["run", "live", "--steward-key", "steward.key", "--runs", ".", "--json", "--budget-uj", "1000"],
    );
    let events = live.until(|e| is(e, "ended"));
    assert_eq!(live.wait().code(), Some(1), "{}", live.stderr());
    let denied = events.iter().rev().find(|e| is(e, "decision")).unwrap();
    assert_eq!((denied["verdict"].as_str(), denied["reason"].as_str()), (Some("deny"), Some("budget-exceeded")));
    let ended = events.last().unwrap();
    assert_eq!((ended["state"].as_str(), ended["exit"]["code"].as_i64()), (Some("stopped"), Some(1)), "{ended}");
    assert!(ended["signal"].is_null() && ended["ended"].as_str().unwrap().contains("budget exhausted"), "{ended}");
    assert!(d.join("live").is_dir(), "the run's folder is `live` beside the runs folder");
}

/// §4.3, §4.7: a revocation the steward puts beside the run file (as the
/// console's Revoke does, or by hand) reaches the endpoint of a run started
/// from the CLI: its supervisor follows the run file and feeds it, at the
/// next marker, so the endpoint's record holds the notice and the run ends.
#[cfg(unix)]
#[test]
fn c21_s4_3_a_revocation_beside_a_cli_run_is_fed_to_its_endpoint_by_the_supervisor() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    let mut live = Proc::spawn(
        d,
        "jcp run live",
        &[
            "run",
            "live",
            "--steward-key",
            "steward.key",
            "--runs",
            "runs",
            "--json",
            "--checkpoint-every",
            "2",
            "--interval-ms",
            "40",
            "--work",
            WORK,
            "--wait-timeout-s",
            "60",
        ],
    );
    let head = live.event();
    let run = head["run"].as_str().unwrap().to_owned();
    let stream = PathBuf::from(head["stream"].as_str().unwrap());
    live.until(|e| is(e, "checkpoint"));
    // The root grant, revoked by its issuer (the steward) beside the run.
    let root = stream.parent().unwrap().join("root.jcp");
    assert!(root.is_file(), "{}", root.display());
    let dir = jcp::steering::follow::revocations_dir(Path::new(&run));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{}.jcp", head["grant"].as_str().unwrap()));
    ok(
        d,
        &["grant", "revoke", "--grant", root.to_str().unwrap(), "--key", "steward.key", "--out", out.to_str().unwrap()],
    );
    let events = live.until(|e| is(e, "ended"));
    assert_eq!(live.wait().code(), Some(1), "{}", live.stderr());
    let followed = events.iter().find(|e| is(e, "followed")).unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!((followed["what"].as_str(), followed["grant"].as_str()), (Some("revocation"), head["grant"].as_str()));
    let audit: Value = serde_json::from_slice(&jcp(d, &["audit", stream.to_str().unwrap(), "--json"]).stdout).unwrap();
    assert_eq!(audit["receipts"]["revocation_notices"], 1, "the endpoint's record holds the notice: {audit:#}");
    assert_eq!(audit["clean"], true, "{audit:#}");
}
