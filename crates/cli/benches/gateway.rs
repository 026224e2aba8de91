//! Issue 36's speed goal: the latency `jcp gateway` adds to an MCP tool
//! call. The same minimal stdio MCP client (a line of JSON-RPC out, its
//! answer back) calls the same tool (`echo` of
//! `@modelcontextprotocol/server-everything`, from npm) on two sessions
//! started side by side: the server directly, and the server behind `jcp
//! gateway` (each call bound, decided with a durable reservation, relayed,
//! metered as a span over the server's tree, charged durably). Criterion
//! measures one call back to back on each; then, under `cargo bench` only,
//! calls are paced at 1 and at 50 calls/s, direct and gateway interleaved,
//! and the added latency is reported at p50 and p99 (gateway's percentile
//! less direct's, same run). Goal: p50 ≤ 1 ms, p99 ≤ 5 ms added.
//!
//! `cargo bench -p jcp-cli --bench gateway` (docs/performance.md, "The MCP
//! gateway's added latency"); the servers come from `scripts/setup.sh`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One MCP session over a child's stdio.
struct Mcp {
    child: Child,
    tx: ChildStdin,
    rx: BufReader<ChildStdout>,
    next: u64,
}

impl Mcp {
    fn start(mut cmd: Command) -> Self {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let tx = child.stdin.take().unwrap();
        let rx = BufReader::new(child.stdout.take().unwrap());
        let mut m = Self { child, tx, rx, next: 1 };
        m.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "jcp-bench", "version": "1"}}),
        );
        m.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.tx, "{v}").unwrap();
        self.tx.flush().unwrap();
    }

    /// A request and its answer (notifications in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.rx.read_line(&mut line).unwrap() > 0, "the session closed");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    fn echo(&mut self, n: u64) -> Duration {
        let t = Instant::now();
        let a = self.request("tools/call", json!({"name": "echo", "arguments": {"message": format!("m{n}")}}));
        let d = t.elapsed();
        assert!(a["result"]["isError"] != true, "{a}");
        d
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn jcp(dir: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_jcp")).current_dir(dir).args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The two sessions: direct, and behind the gateway (its record in `dir`).
fn sessions(dir: &Path) -> (Mcp, Mcp) {
    let server = repo().join("crates/gateway/tests/npm/node_modules/.bin/mcp-server-everything");
    assert!(server.exists(), "run scripts/setup.sh: {} is missing", server.display());
    jcp(dir, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    jcp(dir, &["key", "new", "--out", "issuer.key", "--seed", &"01".repeat(32)]);
    jcp(dir, &["key", "new", "--out", "agent.key", "--seed", &"02".repeat(32)]);
    let agent = jcp(dir, &["key", "show", "agent.key"]).trim().to_owned();
    jcp(
        dir,
        &[
            "grant",
            "issue",
            "--key",
            "issuer.key",
            "--subject",
            &agent,
            "--resource",
            "text:everything",
            "--actions",
            "echo",
            "--budget-uj",
            &(u64::MAX / 4).to_string(),
            "--nonce",
            &"00".repeat(16),
            "--out",
            "root.jcp",
        ],
    );
    std::fs::write(
        dir.join("tools.json"),
        r#"{"tools":[{"tool":"echo","action":"echo","system":"everything","operation":"echo","target":"everything:echo","arguments":["message"]}]}"#,
    )
    .unwrap();
    let mut direct = Command::new(&server);
    direct.arg("stdio");
    let mut gw = Command::new(env!("CARGO_BIN_EXE_jcp"));
    gw.current_dir(dir).args([
        "gateway",
        "--chain",
        "root.jcp",
        "--key",
        "agent.key",
        "--steward-key",
        "steward.key",
        "--stream",
        "g.jcps",
        "--tools",
        "tools.json",
        "--max-uj",
        "1000000000",
        "--",
    ]);
    gw.arg(&server).arg("stdio");
    (Mcp::start(direct), Mcp::start(gw))
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

/// Paced calls, direct and gateway interleaved: (p50, p99) of each, µs.
fn paced(direct: &mut Mcp, gw: &mut Mcp, per_s: u32, n: u64) -> ((Duration, Duration), (Duration, Duration)) {
    let gap = Duration::from_secs(1) / per_s;
    let (mut d, mut g) = (Vec::new(), Vec::new());
    let start = Instant::now();
    for i in 0..n {
        // Alternate which goes first, so neither always follows the other.
        if i % 2 == 0 {
            d.push(direct.echo(i));
            g.push(gw.echo(i));
        } else {
            g.push(gw.echo(i));
            d.push(direct.echo(i));
        }
        let due = start + gap * u32::try_from(i + 1).unwrap();
        if let Some(w) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
    }
    ((pct(&mut d, 0.5), pct(&mut d, 0.99)), (pct(&mut g, 0.5), pct(&mut g, 0.99)))
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (mut direct, mut gw) = sessions(dir.path());
    // Warm both (node's first calls, the gateway's first record writes).
    for i in 0..20 {
        direct.echo(i);
        gw.echo(i);
    }
    let mut g = c.benchmark_group("gateway");
    g.sample_size(30).measurement_time(Duration::from_secs(6));
    let mut n = 0;
    g.bench_function("echo_direct", |b| {
        b.iter(|| {
            n += 1;
            direct.echo(n)
        });
    });
    g.bench_function("echo_through_gateway", |b| {
        b.iter(|| {
            n += 1;
            gw.echo(n)
        });
    });
    g.finish();
    // The paced runs only under `cargo bench` (`cargo test --benches` runs each function once).
    if std::env::args().any(|a| a == "--bench") {
        for (rate, calls) in [(1, 60), (50, 1000)] {
            let ((d50, d99), (g50, g99)) = paced(&mut direct, &mut gw, rate, calls);
            println!(
                "gateway paced {rate}/s, {calls} calls each: direct p50 {:.3} ms p99 {:.3} ms; gateway p50 {:.3} ms p99 {:.3} ms; added p50 {:.3} ms p99 {:.3} ms",
                d50.as_secs_f64() * 1e3,
                d99.as_secs_f64() * 1e3,
                g50.as_secs_f64() * 1e3,
                g99.as_secs_f64() * 1e3,
                (g50.as_secs_f64() - d50.as_secs_f64()) * 1e3,
                (g99.as_secs_f64() - d99.as_secs_f64()) * 1e3,
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
