//! Issue 36's speed goal: the latency `jcp gateway` adds to an MCP tool
//! call. The same minimal stdio MCP client (a line of JSON-RPC out, its
//! answer back) calls the same tool (`echo` of
//! `@modelcontextprotocol/server-everything`, from npm) on three sessions
//! started side by side: the server directly; the server behind `jcp
//! gateway` (each call bound, decided with a durable reservation, relayed
//! and answered, then metered as a span over the server's tree and charged
//! durably before the next call); and the server behind a gateway with
//! `--settle-before-answer` (the answer after the charge). Criterion
//! measures one call back to back on each; then, under `cargo bench` only,
//! calls are paced at 1 and at 50 calls/s, the sessions interleaved, and
//! the added latency is reported at p50 and p99 (a gateway's percentile
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

/// The three sessions: direct; behind the gateway (its record in
/// `dir/g.jcps`), answering first; and behind a second gateway
/// (`dir/s.jcps`) with `--settle-before-answer`.
fn sessions(dir: &Path) -> (Mcp, Mcp, Mcp) {
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
    let gateway = |stream: &str, extra: &[&str]| gateway_of(dir, env!("CARGO_BIN_EXE_jcp"), stream, extra);
    (Mcp::start(direct), gateway("g.jcps", &[]), gateway("s.jcps", &["--settle-before-answer"]))
}

/// A session behind `jcp gateway` as `bin` runs it, its record `dir/stream`.
fn gateway_of(dir: &Path, bin: &str, stream: &str, extra: &[&str]) -> Mcp {
    let server = repo().join("crates/gateway/tests/npm/node_modules/.bin/mcp-server-everything");
    {
        let mut gw = Command::new(bin);
        gw.current_dir(dir).args([
            "gateway",
            "--chain",
            "root.jcp",
            "--key",
            "agent.key",
            "--steward-key",
            "steward.key",
            "--stream",
            stream,
            "--tools",
            "tools.json",
            "--max-uj",
            "1000000000",
        ]);
        gw.args(extra).arg("--").arg(&server).arg("stdio");
        Mcp::start(gw)
    }
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

/// Paced calls, the sessions interleaved (each tick, one call on each,
/// the order rotated so none always follows another): (p50, p99) of each.
fn paced(sessions: &mut [&mut Mcp], per_s: u32, n: u64) -> Vec<(Duration, Duration)> {
    let gap = Duration::from_secs(1) / per_s;
    let k = sessions.len();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); k];
    let start = Instant::now();
    for i in 0..n {
        for j in 0..k {
            let s = (j + usize::try_from(i).unwrap()) % k;
            times[s].push(sessions[s].echo(i));
        }
        let due = start + gap * u32::try_from(i + 1).unwrap();
        if let Some(w) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
    }
    times.iter_mut().map(|t| (pct(t, 0.5), pct(t, 0.99))).collect()
}

/// The disk under the record at the same pace, alone: `n` appends of
/// 2.4 KB (about a reservation's record) each followed by `fdatasync`, one
/// every `1/per_s` s, in `dir` (the record's filesystem). Every allowed
/// call waits for one such sync before its tool runs (§4.11), so this is a
/// floor under what the gateway adds at that pace on this machine.
fn disk_floor(dir: &std::path::Path, per_s: u32, n: u64) -> (Duration, Duration) {
    use std::io::Write;
    let gap = Duration::from_secs(1) / per_s;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("floor.bin")).unwrap();
    let chunk = vec![0x5a; 2400];
    let mut t = Vec::new();
    for _ in 0..n {
        std::thread::sleep(gap);
        let t0 = Instant::now();
        f.write_all(&chunk).unwrap();
        f.sync_data().unwrap();
        t.push(t0.elapsed());
    }
    (pct(&mut t, 0.5), pct(&mut t, 0.99))
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (mut direct, mut gw, mut settled) = sessions(dir.path());
    // Warm all three (node's first calls, the gateways' first record writes).
    for i in 0..20 {
        direct.echo(i);
        gw.echo(i);
        settled.echo(i);
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
    g.bench_function("echo_through_gateway_settle_before_answer", |b| {
        b.iter(|| {
            n += 1;
            settled.echo(n)
        });
    });
    g.finish();
    // The paced runs only under `cargo bench` (`cargo test --benches` runs each function once).
    if std::env::args().any(|a| a == "--bench") {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        // `JCP_GATEWAY_BASELINE=/path/to/an/older/jcp`: a fourth session,
        // behind that binary's gateway, interleaved with the others (an A/B
        // of two builds in the same run).
        let mut baseline = std::env::var("JCP_GATEWAY_BASELINE").ok().map(|bin| {
            let mut b = gateway_of(dir.path(), &bin, "b.jcps", &[]);
            for i in 0..20 {
                b.echo(i);
            }
            b
        });
        // `JCP_GATEWAY_PACED=20x2000,50x1000`: other rates and counts (calls/s × calls).
        let runs: Vec<(u32, u64)> = std::env::var("JCP_GATEWAY_PACED").map_or_else(
            |_| vec![(1, 60), (50, 1000)],
            |v| {
                v.split(',')
                    .map(|r| {
                        let (a, b) = r.split_once('x').expect("JCP_GATEWAY_PACED: RATExCALLS,...");
                        (a.trim().parse().expect("a rate"), b.trim().parse().expect("a count"))
                    })
                    .collect()
            },
        );
        for (rate, calls) in runs {
            let mut all: Vec<&mut Mcp> = vec![&mut direct, &mut gw, &mut settled];
            if let Some(b) = baseline.as_mut() {
                all.push(b);
            }
            let r = paced(&mut all, rate, calls);
            let (d50, d99) = r[0];
            println!("gateway paced {rate}/s, {calls} calls each: direct p50 {:.3} ms p99 {:.3} ms", ms(d50), ms(d99));
            let mut rows = vec![(r[1], "gateway (answer first)"), (r[2], "gateway --settle-before-answer")];
            if r.len() > 3 {
                rows.push((r[3], "baseline gateway (JCP_GATEWAY_BASELINE, answer first)"));
            }
            for ((g50, g99), name) in rows {
                println!(
                    "  {name}: p50 {:.3} ms p99 {:.3} ms; added p50 {:.3} ms p99 {:.3} ms",
                    ms(g50),
                    ms(g99),
                    ms(g50) - ms(d50),
                    ms(g99) - ms(d99),
                );
            }
            let (f50, f99) = disk_floor(dir.path(), rate, calls.min(30));
            println!(
                "  the record's disk alone at {rate}/s ({} appends of 2.4 KB + fdatasync, after the run): p50 {:.3} ms p99 {:.3} ms",
                calls.min(30),
                ms(f50),
                ms(f99)
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
