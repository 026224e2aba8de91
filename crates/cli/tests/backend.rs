//! The endpoint behind the gate as a real process: `ProcessBackend`
//! (jcp-wire) driving `jcp backend demo` over `jcp-backend/1`
//! (docs/backend-protocol.md), and `jcp serve --backend -- jcp backend demo`
//! relaying an allowed call's reply to `jcp call` (§11 "invoked only on
//! Allow", §4.11 unresolved calls, §6.1 continuations).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jcp::cbor::{ContentId, Value};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp_wire::backend::{Backend, BackendAnswer, BackendReply, Call, ProcessBackend, ProcessOptions, BACKEND_CAP};

#[path = "support/cli.rs"]
mod cli;
use cli::{jcp, keys_and_root};

fn jcp_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_jcp"))
}

fn opts(timeout: Duration) -> ProcessOptions {
    ProcessOptions { call_timeout: timeout, ..ProcessOptions::default() }
}

/// `jcp backend demo`, with a call timeout.
fn demo(timeout: Duration) -> ProcessBackend {
    let args = ["backend", "demo"].map(OsString::from).to_vec();
    ProcessBackend::spawn(jcp_exe(), args, opts(timeout)).unwrap()
}

/// `sh -c SCRIPT` as a backend (a misbehaving one).
fn sh(script: &str, timeout: Duration) -> ProcessBackend {
    let args = ["-c", script].map(OsString::from).to_vec();
    ProcessBackend::spawn(PathBuf::from("/bin/sh"), args, opts(timeout)).unwrap()
}

fn frame(args: &[u8]) -> Frame {
    Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: ContentId([1; 32]),
        action: "read".into(),
        resource: ContentId([2; 32]),
        payload_hash: ContentId::of_bytes(args),
        model: None,
    }
}

/// A first call with `args`.
fn first(b: &ProcessBackend, args: &str) -> BackendReply {
    let f = frame(args.as_bytes());
    b.call(Call { frame: &f, args: Some(args.as_bytes()), continues: None })
}

/// A later exchange continuing `handle`.
fn later(b: &ProcessBackend, handle: &str, answers: Option<&[u8]>) -> BackendReply {
    let f = frame(b"");
    b.call(Call { frame: &f, args: None, continues: Some((handle, answers)) })
}

fn done(r: BackendReply) -> String {
    match r {
        BackendReply::Done(o) => String::from_utf8(o).unwrap(),
        other => panic!("expected done, got {other:?}"),
    }
}

fn failed(r: BackendReply) -> String {
    match r {
        BackendReply::Failed(o) => String::from_utf8(o).unwrap(),
        other => panic!("expected failed, got {other:?}"),
    }
}

fn lost(r: BackendReply) -> String {
    match r {
        BackendReply::Lost { why } => why,
        other => panic!("expected lost, got {other:?}"),
    }
}

/// `/proc/PID/stat` after the `(comm)`: state, ppid, …
fn stat(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(s.rsplit_once(')')?.1.split_whitespace().map(str::to_owned).collect())
}

fn ppid(pid: u32) -> Option<u32> {
    stat(pid)?.get(1)?.parse().ok()
}

/// Whether `pid` is gone (reaped), waiting up to `within`.
fn gone(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        match stat(pid) {
            None => return true,
            // Another process's pid now (reused): ours is gone.
            Some(_) if ppid(pid) != Some(std::process::id()) => return true,
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

/// CPU ms of a process: (its own threads' utime + stime, its reaped
/// children's cutime + cstime), from 10 ms ticks.
fn cpu_ms(pid: u32) -> (u64, u64) {
    let f = stat(pid).unwrap();
    let t = |i: usize| f[i].parse::<u64>().unwrap() * 10;
    // After `(comm)`: utime is field 14 of the line, index 11 here.
    (t(11) + t(12), t(13) + t(14))
}

#[test]
fn s11_the_demo_burns_cpu_where_each_command_says() {
    let b = demo(Duration::from_secs(60));
    let pid = b.tree_root().unwrap();
    let (own0, kids0) = cpu_ms(pid);
    assert_eq!(done(first(&b, "burn:200")), "burned 200 ms");
    let (own1, kids1) = cpu_ms(pid);
    assert!(own1 - own0 >= 150, "burn:200 took {} ms of the demo's CPU", own1 - own0);
    assert_eq!(done(first(&b, "thread:200")), "burned 200 ms in a second thread");
    let (own2, kids2) = cpu_ms(pid);
    assert!(own2 - own1 >= 150, "thread:200 took {} ms of the demo's CPU", own2 - own1);
    assert_eq!(kids2, kids1, "no child ran for burn: and thread:");
    assert_eq!(kids1, kids0);
    assert_eq!(done(first(&b, "child:200")), "burned 200 ms in a child process");
    let (own3, kids3) = cpu_ms(pid);
    assert!(kids3 - kids2 >= 150, "child:200 took {} ms of reaped children's CPU", kids3 - kids2);
    assert!(own3 - own2 < 150, "the demo itself burned for child:200 ({} ms)", own3 - own2);
    assert_eq!(done(first(&b, "grandchild:200")), "burned 200 ms in a grandchild process");
    let (_, kids4) = cpu_ms(pid);
    // The grandchild was reaped by the child, the child by the demo: its
    // time reaches the demo's cutime only through both waits.
    assert!(kids4 - kids3 >= 150, "grandchild:200 took {} ms of reaped descendants' CPU", kids4 - kids3);
    assert_eq!(b.restarts(), 0);
}

#[test]
fn s11_the_demo_echoes_fails_and_names_what_it_does_not_know() {
    let b = demo(Duration::from_secs(20));
    assert_eq!(done(first(&b, "echo:hello, gate")), "hello, gate");
    assert_eq!(failed(first(&b, "fail:no such file")), "no such file");
    let why = failed(first(&b, "rm:-rf"));
    assert!(why.contains("unknown command \"rm:-rf\""), "{why}");
    let why = failed(first(&b, "burn:lots"));
    assert!(why.contains("burn:MS") && why.contains("lots"), "{why}");
    let f = frame(b"");
    let why = failed(b.call(Call { frame: &f, args: None, continues: None }));
    assert!(why.contains("no command"), "{why}");
    let why = failed(later(&b, "task-99", None));
    assert!(why.contains("unknown handle \"task-99\""), "{why}");
    assert_eq!(b.restarts(), 0, "nothing here is lost");
}

#[test]
fn s4_11_a_crash_is_lost_with_its_exit_status_and_never_retried_on_the_fresh_child() {
    let b = demo(Duration::from_secs(20));
    let pid1 = b.tree_root().unwrap();
    assert_eq!(done(first(&b, "echo:before")), "before");
    let why = lost(first(&b, "crash"));
    assert!(why.contains("exit status 70"), "{why}");
    assert!(why.contains("stdout closed before it replied"), "{why}");
    assert!(why.contains(&format!("pid {pid1}")), "{why}");
    // Reaped, not respawned until a call needs it.
    assert_eq!(b.tree_root(), None);
    assert!(gone(pid1, Duration::from_secs(1)), "the crashed child {pid1} was not reaped");
    assert_eq!(b.restarts(), 0);
    // The next call runs on a fresh child: had the lost call been sent
    // again, that child would have crashed too and this call been lost.
    assert_eq!(done(first(&b, "echo:after")), "after");
    assert_eq!(b.restarts(), 1);
    let pid2 = b.tree_root().unwrap();
    assert_ne!(pid2, pid1);
    assert_eq!(done(first(&b, "echo:again")), "again");
    assert_eq!((b.restarts(), b.tree_root()), (1, Some(pid2)));
}

#[test]
fn s4_11_a_call_past_its_timeout_is_lost_and_its_child_killed() {
    let b = demo(Duration::from_secs(1));
    let pid = b.tree_root().unwrap();
    let t0 = Instant::now();
    let why = lost(first(&b, "burn:10000"));
    assert!(t0.elapsed() < Duration::from_secs(5), "waited {:?}", t0.elapsed());
    assert!(why.contains("no reply within the call timeout of 1000 ms"), "{why}");
    assert!(why.contains("killed by signal 9"), "{why}");
    assert!(gone(pid, Duration::from_secs(1)), "the timed-out child {pid} was not reaped");
    assert_eq!(done(first(&b, "echo:next")), "next");
    assert_eq!(b.restarts(), 1);
}

/// §11 (the endpoint stays available), §4.11: a child that reads nothing
/// of a call longer than its input pipe holds once held the calling
/// thread (and the relay's turn) for ever in a blocking write; now the
/// write has the call timeout too, and the call is lost, the child killed.
#[test]
fn s11_a_backend_that_reads_nothing_of_a_long_call_is_lost_at_the_call_timeout_and_killed() {
    let b = sh("sleep 60", Duration::from_secs(1));
    let pid = b.tree_root().unwrap();
    // Several times what a pipe holds (64 KiB), under the protocol's cap.
    let args = "x".repeat(300_000);
    let (tx, rx) = std::sync::mpsc::channel();
    let caller = std::thread::spawn(move || {
        let _ = tx.send(first(&b, &args));
        b
    });
    let r = rx.recv_timeout(Duration::from_secs(30)).expect("the call never returned: its write blocked");
    let why = lost(r);
    assert!(why.contains("writing call 1 failed") && why.contains("within the call timeout of 1000 ms"), "{why}");
    assert!(why.contains("killed by signal 9"), "{why}");
    assert!(gone(pid, Duration::from_secs(1)), "the child {pid} was not reaped");
    let b = caller.join().unwrap();
    assert_eq!(b.tree_root(), None, "a lost call's child is not kept");
}

#[test]
fn s11_tree_root_is_the_live_child_of_this_process_and_dropping_reaps_it() {
    let b = demo(Duration::from_secs(20));
    let pid = b.tree_root().unwrap();
    assert_eq!(ppid(pid), Some(std::process::id()), "the backend is this process's child");
    // The kernel fills a fresh image's arguments in just after the exec
    // that `spawn` waited for: read them once they are there.
    let deadline = Instant::now() + Duration::from_secs(5);
    let cmdline = loop {
        let c = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        if !c.is_empty() || Instant::now() > deadline {
            break c;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(cmdline.ends_with(b"backend\0demo\0"), "{}", String::from_utf8_lossy(&cmdline));
    // It holds the three stdio descriptors and, beyond them, only what
    // this process itself holds open across exec (what its own parent
    // left it): no descriptor the backend opened reaches the child.
    let fds = |pid: &str| -> Vec<u32> {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().to_string_lossy().parse().ok())
            .collect()
    };
    let inheritable: Vec<u32> = fds("self")
        .into_iter()
        .filter(|fd| {
            let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).map_or("0", str::trim);
            // O_CLOEXEC is 0o2000000.
            u32::from_str_radix(flags, 8).is_ok_and(|f| f & 0o2_000_000 == 0)
        })
        .collect();
    let child = fds(&pid.to_string());
    let extra: Vec<u32> = child.iter().copied().filter(|fd| *fd > 2 && !inheritable.contains(fd)).collect();
    assert!(extra.is_empty(), "the backend holds descriptors {extra:?} ({child:?}; inheritable here: {inheritable:?})");
    assert!(!b.self_contained(), "not declared");
    drop(b);
    assert!(gone(pid, Duration::from_millis(100)), "dropping the backend left {pid} running");
}

#[test]
fn s6_1_a_task_goes_on_under_its_handle_and_is_done_on_a_continuation() {
    let b = demo(Duration::from_secs(20));
    let handle = match first(&b, "task:300") {
        BackendReply::Working { handle, status } => {
            assert_eq!(status, b"started: burning 300 ms");
            handle
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(handle, "task-1");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut working = 0;
    let out = loop {
        match later(&b, &handle, None) {
            BackendReply::Working { handle: h, status } => {
                assert_eq!((h.as_str(), status.as_slice()), ("task-1", &b"running: burning 300 ms"[..]));
                working += 1;
            }
            BackendReply::Done(o) => break String::from_utf8(o).unwrap(),
            other => panic!("{other:?}"),
        }
        assert!(Instant::now() < deadline, "the task never finished");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(working >= 1, "300 ms of work was done before the first continuation");
    assert_eq!(out, "task-1 done: burned 300 ms");
    // Done is final: the handle is closed.
    assert!(failed(later(&b, &handle, None)).contains("unknown handle"));
}

#[test]
fn s6_1_an_ask_needs_input_and_a_continuation_with_answers_is_done() {
    let b = demo(Duration::from_secs(20));
    let handle = match first(&b, "ask") {
        BackendReply::InputRequired { handle, prompt } => {
            assert_eq!(prompt, b"what should I answer?");
            handle
        }
        other => panic!("{other:?}"),
    };
    // Without answers it asks again, under the same handle.
    assert!(matches!(later(&b, &handle, None), BackendReply::InputRequired { handle: h, .. } if h == handle));
    assert_eq!(done(later(&b, &handle, Some(b"blue, \x00 and green"))), "blue, \0 and green");
    assert!(failed(later(&b, &handle, Some(b"again"))).contains("unknown handle"));
}

/// A backend that writes `reply` (framed) at once and then waits.
fn replies_with(dir: &Path, name: &str, reply: &Value) -> ProcessBackend {
    let p = dir.join(name);
    std::fs::write(&p, jcp_wire::codec::frame_value(reply)).unwrap();
    sh(&format!("cat '{}'; exec sleep 30", p.display()), Duration::from_secs(10))
}

#[test]
fn s4_11_a_malformed_reply_is_lost_naming_the_field_and_its_child_killed() {
    let t = tempfile::tempdir().unwrap();
    let good = BackendAnswer::finished(1, true, b"x".to_vec()).to_value();
    let Value::Map(mut m) = good.clone() else { panic!() };
    m.push((Value::text("x-instructions"), Value::text("trust me")));
    let b = replies_with(t.path(), "unknown.bin", &Value::Map(m));
    let pid = b.tree_root().unwrap();
    let why = lost(first(&b, "echo:x"));
    assert!(why.contains("malformed reply") && why.contains("x-instructions"), "{why}");
    assert!(why.contains("killed by signal 9"), "{why}");
    assert!(gone(pid, Duration::from_secs(1)));
    // An answer to another call.
    let other = BackendAnswer::finished(99, true, b"x".to_vec()).to_value();
    let why = lost(first(&replies_with(t.path(), "other.bin", &other), "echo:x"));
    assert!(why.contains("answered call 99 to call 1"), "{why}");
    // A working answer without its handle.
    let Value::Map(mut m) = good else { panic!() };
    m.retain(|(k, _)| *k != Value::text("state"));
    m.push((Value::text("state"), Value::text("working")));
    let why = lost(first(&replies_with(t.path(), "nohandle.bin", &Value::Map(m)), "echo:x"));
    assert!(why.contains("handle") && why.contains("required"), "{why}");
}

#[test]
fn s4_11_a_reply_over_the_cap_or_cut_short_is_lost() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("big.bin");
    let over = u32::try_from(BACKEND_CAP + 1).unwrap().to_be_bytes();
    std::fs::write(&p, over).unwrap();
    let b = sh(&format!("cat '{}'; exec sleep 30", p.display()), Duration::from_secs(10));
    let why = lost(first(&b, "echo:x"));
    assert!(why.contains("over the cap") && why.contains(&format!("{}", BACKEND_CAP + 1)), "{why}");
    // Half a frame, then the backend exits 3.
    let framed = jcp_wire::codec::frame_value(&BackendAnswer::finished(1, true, b"xyz".to_vec()).to_value());
    std::fs::write(&p, &framed[..framed.len() - 2]).unwrap();
    let b = sh(&format!("cat '{}'; sleep 0.2; exit 3", p.display()), Duration::from_secs(10));
    let why = lost(first(&b, "echo:x"));
    assert!(why.contains("closed inside a reply") && why.contains("exit status 3"), "{why}");
    // A backend that closes its stdout and exits 4 once it has the call.
    let b = sh("head -c 4 >/dev/null; exit 4", Duration::from_secs(10));
    let why = lost(first(&b, "echo:x"));
    assert!(why.contains("stdout closed before it replied") && why.contains("exit status 4"), "{why}");
}

#[test]
fn s11_a_backend_that_cannot_start_is_refused_at_spawn() {
    let e = ProcessBackend::spawn(PathBuf::from("/nonexistent/backend"), Vec::new(), ProcessOptions::default())
        .unwrap_err();
    assert_eq!(e.code(), "backend-spawn");
    assert!(e.to_string().contains("/nonexistent/backend"), "{e}");
}

// ------------------------------------------------------- jcp serve --backend

fn setup(dir: &Path) {
    keys_and_root(dir, "text:search", "read", "1000");
}

/// A `jcp serve` child, killed when dropped; `first` is its first stdout line.
struct Server {
    child: Child,
    first: String,
}

impl Server {
    fn start(dir: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(jcp_exe())
            .current_dir(dir)
            .args([
                "serve",
                "--listen",
                "tcp:127.0.0.1:0",
                "--steward-key",
                "steward.key",
                "--plaintext-key",
                "--stream",
                "s.jcps",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(out).lines();
            let first = lines.next().and_then(Result::ok).unwrap_or_default();
            let _ = tx.send(first);
            // Keep draining so the child never blocks on a full pipe.
            for _ in lines.map_while(Result::ok) {}
        });
        let first = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        assert!(!first.is_empty(), "jcp serve did not start: {:?}", child.try_wait());
        Self { child, first }
    }

    /// The text start lines after the first, when started without --json.
    fn text_lines(dir: &Path, extra: &[&str]) -> String {
        let mut child = Command::new(jcp_exe())
            .current_dir(dir)
            .args([
                "serve",
                "--listen",
                "tcp:127.0.0.1:0",
                "--steward-key",
                "steward.key",
                "--plaintext-key",
                "--stream",
                "t.jcps",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut got = Vec::new();
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got);
                if text.contains("backend") && text.ends_with('\n') {
                    break;
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&got).into_owned());
        });
        let text = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let _ = child.kill();
        let _ = child.wait();
        text
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(dir: &Path, addr: &str, args_file: &str, cost: &str) -> (i32, serde_json::Value) {
    let o = jcp(
        dir,
        &[
            "call",
            "--connect",
            addr,
            "--key",
            "agent.key",
            "--chain",
            "root.jcp",
            "--cost-uj",
            cost,
            "--args-file",
            args_file,
            "--reply",
            "--reply-timeout-s",
            "20",
            "--json",
        ],
    );
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap_or(-1), v)
}

#[test]
fn s11_jcp_serve_relays_an_allowed_calls_reply_and_never_calls_its_backend_on_a_deny() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    let exe = jcp_exe();
    let exe = exe.to_str().unwrap();
    let s = Server::start(d, &["--json", "--backend", "--", exe, "backend", "demo"]);
    let start: serde_json::Value = serde_json::from_str(&s.first).unwrap();
    assert_eq!(start["event"], "listening", "{start}");
    assert_eq!(start["backend"]["program"], exe, "{start}");
    assert_eq!(start["backend"]["self_contained"], false, "{start}");
    let pid = u32::try_from(start["backend"]["pid"].as_u64().unwrap()).unwrap();
    assert_eq!(ppid(pid), Some(s.child.id()), "the backend is jcp serve's child");
    let addr = start["listen"][0].as_str().unwrap().to_owned();
    // Denied (stale: stamped an hour ago): a crash command that, relayed,
    // would kill the backend. (A stated cost over the budget is no deny
    // here: behind a backend it is only the most the call may reserve.)
    std::fs::write(d.join("crash.txt"), "crash").unwrap();
    let stale =
        (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 3600).to_string();
    let o = jcp(
        d,
        &[
            "call",
            "--connect",
            &addr,
            "--key",
            "agent.key",
            "--chain",
            "root.jcp",
            "--args-file",
            "crash.txt",
            "--now",
            &stale,
            "--reply",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let code = o.status.code().unwrap_or(-1);
    assert_eq!((code, v["verdict"].as_str(), v["reason"].as_str()), (1, Some("deny"), Some("stale-request")), "{v}");
    assert!(v.get("reply").is_none(), "a deny has no reply: {v}");
    std::thread::sleep(Duration::from_millis(200));
    let serve = s.child.id().to_string();
    let alive = stat(pid).is_some_and(|f| f[0] != "Z" && f[1] == serve);
    assert!(alive, "the backend {pid} did not survive a deny of `crash`: it was called");
    // Allowed: the backend's output comes back as the relayed reply.
    std::fs::write(d.join("echo.txt"), "echo:hello from behind the gate").unwrap();
    let (code, v) = call(d, &addr, "echo.txt", "100");
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    assert_eq!(v["reply"]["state"], "done", "{v}");
    assert_eq!(v["reply"]["output"], "hello from behind the gate", "{v}");
    assert_eq!(v["reply"]["receipt"], v["receipt"]["id"], "the reply names the allow's receipt: {v}");
    // A failing command is relayed as failed.
    std::fs::write(d.join("fail.txt"), "fail:disk full").unwrap();
    let (code, v) = call(d, &addr, "fail.txt", "100");
    assert_eq!(
        (code, v["reply"]["state"].as_str(), v["reply"]["output"].as_str()),
        (0, Some("failed"), Some("disk full")),
        "{v}"
    );
    // A clean stop reaps the backend.
    let mut s = s;
    assert!(Command::new("kill").args(["-TERM", &serve]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "jcp serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while stat(pid).is_some() {
        assert!(Instant::now() < deadline, "the backend {pid} outlived jcp serve");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn s11_jcp_serve_says_what_is_behind_its_gate() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    // No backend: a decision service, said plainly (text and JSON).
    let s = Server::start(d, &["--json"]);
    let start: serde_json::Value = serde_json::from_str(&s.first).unwrap();
    assert!(start.get("backend").is_some_and(serde_json::Value::is_null), "{start}");
    drop(s);
    let text = Server::text_lines(d, &[]);
    assert!(text.contains("jcp serve: no backend: a decision service only"), "{text}");
    assert!(text.contains("holders that ran and metered the work"), "{text}");
    let exe = jcp_exe();
    let exe = exe.to_str().unwrap();
    let text = Server::text_lines(d, &["--backend-self-contained", "--backend", "--", exe, "backend", "demo"]);
    assert!(text.contains(&format!("jcp serve: backend {exe} (pid ")), "{text}");
    assert!(text.contains("self-contained: declared"), "{text}");
    // A backend that cannot start refuses the start.
    let o = jcp(
        d,
        &[
            "serve",
            "--listen",
            "tcp:127.0.0.1:0",
            "--steward-key",
            "steward.key",
            "--plaintext-key",
            "--stream",
            "v.jcps",
            "--backend",
            "--",
            "/nonexistent/backend",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("backend-spawn"), "{}", String::from_utf8_lossy(&o.stderr));
    // A program after `--` without --backend is refused.
    let o = jcp(
        d,
        &[
            "serve",
            "--listen",
            "tcp:127.0.0.1:0",
            "--steward-key",
            "steward.key",
            "--plaintext-key",
            "--stream",
            "u.jcps",
            "--",
            exe,
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
}

// ------------------------------------------------------------ issue 35: the holder meters the work

/// [`setup`], with the root grant reissued at 1 000 J: enough for the
/// demo's burns at the default power.
fn setup_big(dir: &Path) {
    keys_and_root(dir, "text:search", "read", "1000000000");
}

/// `jcp call --reply` of `args` (written to a file) stating `cost` µJ as
/// its most: the decision and the relayed reply, metered and charged.
fn metered_call(d: &Path, addr: &str, args: &str, cost: &str) -> serde_json::Value {
    let file = format!("args-{}.txt", ContentId::of_bytes(args.as_bytes()).to_hex());
    std::fs::write(d.join(&file), args).unwrap();
    let (code, v) = call(d, addr, &file, cost);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{args}: {v}");
    v
}

/// The reply's metered figure: (µJ, grade, coverage, CPU ms, gap codes).
fn figure(v: &serde_json::Value) -> (u64, String, String, u64, Vec<String>) {
    let m = &v["reply"]["metered"];
    let gaps = m["gaps"].as_array().unwrap().iter().map(|g| g["code"].as_str().unwrap().to_owned()).collect();
    (
        m["energy"]["uj"].as_u64().unwrap(),
        m["energy"]["provenance"].as_str().unwrap().to_owned(),
        m["energy"]["coverage"].as_str().unwrap().to_owned(),
        m["cpu_ns"].as_u64().unwrap() / 1_000_000,
        gaps,
    )
}

#[test]
fn s5_1_s11_jcp_serve_meters_each_relayed_call_over_its_backends_tree_and_charges_that_figure() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup_big(d);
    let exe = jcp_exe();
    let exe = exe.to_str().unwrap();
    let s = Server::start(d, &["--json", "--backend", "--", exe, "backend", "demo"]);
    let start: serde_json::Value = serde_json::from_str(&s.first).unwrap();
    assert!(start["metering"]["cpu"].is_string(), "the start line says what meters the calls: {start}");
    let addr = start["listen"][0].as_str().unwrap().to_owned();
    let mut charged_total = 0;
    // CPU burnt on the backend's own threads is in the figure, within the
    // /proc clock's 10 ms grain and what the demo's own reads add.
    for args in ["burn:400", "thread:400"] {
        let v = metered_call(d, &addr, args, "0");
        let (uj, grade, coverage, cpu_ms, gaps) = figure(&v);
        assert!((380..2_000).contains(&cpu_ms), "{args}: {cpu_ms} ms of CPU metered for 400 ms burnt: {v}");
        assert!(uj > 0, "{args}: {v}");
        assert_eq!(coverage, "Partial", "{args}: not declared self-contained (§5.1): {v}");
        assert!(gaps.contains(&"not-declared-self-contained".to_owned()), "{args}: {gaps:?}");
        assert!(!gaps.contains(&"reaped-in-span".to_owned()), "{args}: {gaps:?}");
        // The charge receipt debits exactly the metered figure, at its grade.
        let c = &v["reply"]["charge"];
        assert_eq!((c["verified"].as_bool(), c["cost_uj"].as_u64()), (Some(true), Some(uj)), "{args}: {v}");
        assert_eq!(c["provenance"].as_str(), Some(grade.as_str()), "{args}: {v}");
        assert_ne!(grade, "HwShunt", "no process reading here is a hardware one");
        assert!(c["measured_uj"].is_null(), "{args}: an apportioned or modelled figure measures nothing: {v}");
        charged_total += uj;
    }
    // Work done in a child or a grandchild that is reaped inside the span
    // is not in any counter: the figure says so by name and is short of it.
    for args in ["child:400", "grandchild:400"] {
        let v = metered_call(d, &addr, args, "0");
        let (uj, _, coverage, cpu_ms, gaps) = figure(&v);
        assert_eq!(coverage, "Partial", "{args}: {v}");
        assert!(gaps.contains(&"reaped-in-span".to_owned()), "{args}: {gaps:?}");
        assert!(cpu_ms < 300, "{args}: the reaped descendants' 400 ms are not in the figure ({cpu_ms} ms): {v}");
        charged_total += uj;
    }
    drop(s);
    let audit = jcp(d, &["audit", "s.jcps", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let g = &v["grants"].as_array().unwrap()[0];
    assert_eq!(g["spent_uj"].as_u64(), Some(charged_total), "the grant spent what was metered: {g}");
    assert_eq!(g["conservation"]["basis"], "modelled", "{g}");
    assert_eq!(v["unresolved_total"], 0, "{v}");
    assert_eq!(v["receipts"]["settlements"], 4, "each reservation settled by its charge: {v}");
}

#[test]
fn s5_1_a_declared_self_contained_tree_at_rest_is_metered_whole() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup_big(d);
    let exe = jcp_exe();
    let exe = exe.to_str().unwrap();
    let s = Server::start(d, &["--json", "--backend-self-contained", "--backend", "--", exe, "backend", "demo"]);
    let start: serde_json::Value = serde_json::from_str(&s.first).unwrap();
    let addr = start["listen"][0].as_str().unwrap().to_owned();
    let v = metered_call(d, &addr, "burn:200", "0");
    let (_, _, coverage, cpu_ms, gaps) = figure(&v);
    assert!(cpu_ms >= 180, "{v}");
    assert_eq!((coverage.as_str(), gaps.len()), ("Whole", 0), "declared, and nothing seen missing: {v}");
    // The declaration never outweighs evidence (§5.1).
    let v = metered_call(d, &addr, "child:100", "0");
    let (_, _, coverage, _, gaps) = figure(&v);
    assert_eq!(coverage, "Partial", "{v}");
    assert!(gaps.contains(&"reaped-in-span".to_owned()), "{gaps:?}");
}

#[test]
fn s4_11_a_backend_crash_mid_call_leaves_the_decision_unresolved_in_jcp_serve_and_the_audit() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup_big(d);
    let exe = jcp_exe();
    let exe = exe.to_str().unwrap();
    let s = Server::start(d, &["--backend", "--", exe, "backend", "demo"]);
    let addr = s.first.strip_prefix("jcp serve: listening on ").unwrap().to_owned();
    let v = metered_call(d, &addr, "crash", "300");
    assert_eq!(v["reply"]["state"], "lost", "{v}");
    assert!(v["reply"]["charge"].is_null(), "never charged: {v}");
    assert!(v["reply"]["output"].as_str().unwrap().contains("exit status 70"), "{v}");
    // The next call runs on a fresh backend and is charged.
    let v = metered_call(d, &addr, "echo:after", "300");
    assert_eq!((v["reply"]["state"].as_str(), v["reply"]["charge"]["verified"].as_bool()), (Some("done"), Some(true)));
    let mut s = s;
    assert!(Command::new("kill").args(["-TERM", &s.child.id().to_string()]).status().unwrap().success());
    let mut rest = String::new();
    s.child.wait().unwrap();
    if let Some(mut out) = s.child.stdout.take() {
        let _ = out.read_to_string(&mut rest);
    }
    let audit = jcp(d, &["audit", "s.jcps", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(v["unresolved_total"], 1, "the lost call is unresolved, not completed or failed: {v}");
    let text = String::from_utf8(jcp(d, &["audit", "s.jcps"]).stdout).unwrap();
    assert!(text.contains("unresolved"), "{text}");
}

/// `jcp backend demo` runs only the first line of a call's args: what
/// follows is a note, so a caller that runs the same work twice still sends
/// two distinct requests (§11: byte-identical requests are one request), as
/// `jcp agent demo` does with its session and step.
#[test]
fn s11_the_demo_backend_runs_the_first_line_and_ignores_the_note_after_it() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup_big(d);
    let exe = jcp_exe();
    let exe = exe.to_str().unwrap();
    let s = Server::start(d, &["--json", "--backend", "--", exe, "backend", "demo"]);
    let start: serde_json::Value = serde_json::from_str(&s.first).unwrap();
    let addr = start["listen"][0].as_str().unwrap().to_owned();
    let a = metered_call(d, &addr, "echo:the same work\nstep 1", "0");
    let b = metered_call(d, &addr, "echo:the same work\nstep 2", "0");
    assert_eq!(
        (a["reply"]["output"].as_str(), b["reply"]["output"].as_str()),
        (Some("the same work"), Some("the same work"))
    );
    assert_ne!(a["receipt"]["id"], b["receipt"]["id"], "two requests, each decided and charged");
    assert!(a["reply"]["charge"]["verified"].as_bool().unwrap() && b["reply"]["charge"]["verified"].as_bool().unwrap());
    // Without a note, an unknown command is still refused by name.
    let v = metered_call(d, &addr, "nonsense\nstep 3", "0");
    assert_eq!(v["reply"]["state"], "failed", "{v}");
    assert!(v["reply"]["output"].as_str().unwrap().contains("unknown command \"nonsense\""), "{v}");
}
