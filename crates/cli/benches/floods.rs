//! Issue 34's figures: a well-behaved client's latency on `jcp serve` under
//! each flood the hostile review found, against the same client on the
//! quiet endpoint, in one run; the record's growth per flooded request; the
//! endpoint's resident memory while silent connections hold its per-peer
//! caps. Goal: the good client's p99 stays within 2× of quiet, the endpoint
//! never enters a failed state, memory and disk stay inside the limits
//! configured.
//!
//! The good client calls at 50 calls/s from 127.0.0.1; each flood comes
//! from its own loopback addresses (127.0.0.2 …): silent connections, half
//! frames declaring the largest length the endpoint reads, half-sent
//! `/metrics` headers, requests whose caller signature is garbage, and
//! statement asks (50 back to back on each connection) for channels the
//! endpoint does not hold, as fast as one task sends them.
//! Criterion measures one good call on the quiet endpoint; under `cargo
//! bench` only, each flood runs for `JCP_FLOOD_S` seconds (default 60) and
//! the figures are printed (`JCP_FLOODS=Silent,HalfFrames` runs only those
//! beside the quiet baseline).
//!
//! `cargo bench -p jcp-cli --bench floods` (docs/performance.md, "Under
//! floods").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp_wire::client::Client;
use jcp_wire::codec;

#[path = "../tests/support/served.rs"]
mod served;
use served::{cast, from, scrape, Serve};

/// A 1 000 J grant to the agent, and `jcp serve` with /metrics and `extra` flags.
fn setup(dir: &std::path::Path, extra: &[&str]) -> (Serve, SignedGrant, Keypair) {
    let (g, agent, _, root) = cast(dir, 1_000_000_000_000);
    let serve = Serve::start(dir, &[&["--trust-root", &root, "--first-frame-timeout-s", "2"][..], extra].concat());
    (serve, g, agent)
}

/// A request numbered `n`.
fn request(g: &SignedGrant, agent: &Keypair, n: u64) -> jcp_wire::message::WireRequest {
    served::request(g, agent, &n.to_be_bytes())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flood {
    Quiet,
    Silent,
    HalfFrames,
    MetricsHeaders,
    BadSignatures,
    StatementAsks,
}

/// A half frame: the largest length the endpoint reads
/// ([`codec::MAX_ENDPOINT_CAP`]; a longer one is refused at once as
/// oversized, holding nothing), then 64 bytes of it.
fn half_frame() -> Vec<u8> {
    let mut b = u32::try_from(codec::MAX_ENDPOINT_CAP).unwrap().to_be_bytes().to_vec();
    b.extend_from_slice(&[0xa1; 64]);
    b
}

/// Runs `flood` until `stop`; counts what it sent.
async fn flood(
    kind: Flood,
    tcp: String,
    metrics: String,
    g: SignedGrant,
    agent: Keypair,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
) {
    let mut held = Vec::new();
    let half = half_frame();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // Spread over addresses, as a flood from many hosts would be.
        let src = [127, 0, 1 + u8::try_from(n % 200).unwrap(), 2];
        n += 1;
        match kind {
            Flood::Quiet => tokio::time::sleep(Duration::from_millis(50)).await,
            Flood::Silent | Flood::HalfFrames | Flood::MetricsHeaders => {
                // A connection opened, what the flood sends on it, then held (the oldest let go past 6 000).
                let (conn, opening): (_, &[u8]) = match kind {
                    Flood::MetricsHeaders => {
                        (tokio::net::TcpStream::connect(&metrics).await, b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                    }
                    Flood::HalfFrames => (from(src, &tcp).await, &half),
                    _ => (from(src, &tcp).await, &[]),
                };
                if let Ok(mut s) = conn {
                    let _ = tokio::io::AsyncWriteExt::write_all(&mut s, opening).await;
                    held.push(s);
                }
                if held.len() > 6000 {
                    held.drain(..1000);
                }
                sent.fetch_add(1, Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
            Flood::StatementAsks => {
                // Fifty asks sent at once, then their answers (or the rate limit's one, and the close).
                let mut asks = Vec::new();
                for k in 0..50u64 {
                    let id = jcp::cbor::ContentId::of_bytes(&(n << 8 | k).to_be_bytes());
                    asks.extend_from_slice(&codec::frame_value(&jcp_wire::message::statement_ask(&id)));
                }
                if let Ok(s) = from(src, &tcp).await {
                    let mut c = Client::over_tcp(s);
                    if c.send_raw(&asks).await.is_ok() {
                        for _ in 0..50 {
                            match tokio::time::timeout(Duration::from_secs(2), c.recv()).await {
                                Ok(Ok(_)) => {}
                                _ => break,
                            }
                        }
                    }
                }
                sent.fetch_add(50, Ordering::Relaxed);
            }
            Flood::BadSignatures => {
                let mut r = request(&g, &agent, 1 << 40 | n);
                r.signature = [0x5a; 64];
                if let Ok(s) = from(src, &tcp).await {
                    let mut c = Client::over_tcp(s);
                    if c.send_raw(&codec::frame_value(&r.to_value())).await.is_ok() {
                        let _ = tokio::time::timeout(Duration::from_secs(2), c.recv()).await;
                    }
                }
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The `p` percentile of sorted latencies (nearest rank, as `benches/gateway.rs` takes it).
fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The endpoint's refused frames by reason code, from its `/metrics`
/// (what the flood was refused as: a flood of half frames must be cut at
/// its timeout or answered `busy`, not refused as oversized).
fn refusals(metrics: &str) -> String {
    let Some(text) = scrape(metrics) else { return "not read".into() };
    let mut codes: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("jcp_wire_refused_frames_total{code=\""))
        .filter_map(|l| l.split_once("\"} ").map(|(code, n)| format!("{code} {n}")))
        .collect();
    codes.extend(
        text.lines()
            .filter_map(|l| l.strip_prefix("jcp_wire_rate_limited_total "))
            .map(|n| format!("rate-limited {n}")),
    );
    if codes.is_empty() {
        "none".into()
    } else {
        codes.join(", ")
    }
}

/// The good client at 50 calls/s for `secs` under `kind`: its latencies,
/// what the flood sent, the record's growth, the endpoint's memory and
/// its refused frames by code.
fn measure(kind: Flood, secs: u64, extra: &[&str]) -> (Vec<Duration>, u64, u64, u64, u64, String) {
    // The flood holds thousands of sockets: this process's soft open-file limit up to its hard one.
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let _ = rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit { current: lim.maximum, maximum: lim.maximum },
    );
    let t = tempfile::tempdir().unwrap();
    let (serve, g, agent) = setup(t.path(), extra);
    // The good client on a runtime and thread of its own, the flood on
    // another (two workers): they share the machine, as two hosts' traffic
    // shares the endpoint's, but not a scheduler queue, so the good client's
    // latency is the endpoint's and the machine's, not a wait behind the
    // flood's own tasks in this process.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // `JCP_FLOOD_NICE=19`: the generator's threads at that niceness, so that
    // its own CPU (which a remote attacker spends on its own machines) is
    // taken after the endpoint's and the good client's; the endpoint's
    // kernel work for the flood's connections is still done here.
    let nice: Option<i32> = std::env::var("JCP_FLOOD_NICE").ok().map(|n| n.parse().unwrap());
    let flood_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            if let Some(n) = nice {
                rustix::process::setpriority_process(Some(rustix::thread::gettid()), n).unwrap();
            }
        })
        .build()
        .unwrap();
    let record = t.path().join("s.jcps");
    rt.block_on(async {
        // The good client is connected (and decided once) before the flood starts:
        // a flood from many addresses may fill the endpoint's connection cap, past
        // which a new connection is answered busy; one already served is kept.
        let mut good = Client::over_tcp(from([127, 0, 0, 1], &serve.tcp).await.unwrap());
        assert!(good.call(&request(&g, &agent, u64::MAX)).await.unwrap().decision.is_allow());
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let task = flood_rt.spawn(flood(
            kind,
            serve.tcp.clone(),
            serve.metrics.clone(),
            g.clone(),
            agent.clone(),
            stop.clone(),
            sent.clone(),
        ));
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = std::fs::metadata(&record).map(|m| m.len()).unwrap_or(0);
        let mut lat = Vec::new();
        let mut peak = 0;
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < Duration::from_secs(secs) {
            let due = start + Duration::from_millis(20 * n);
            tokio::time::sleep_until(due.into()).await;
            let r = request(&g, &agent, n);
            let t0 = Instant::now();
            let a = tokio::time::timeout(Duration::from_secs(10), good.call(&r)).await;
            lat.push(t0.elapsed());
            match a {
                Ok(Ok(a)) => assert!(a.decision.is_allow(), "{kind:?}: a good call was refused: {a:?}"),
                other => panic!("{kind:?}: a good call was not answered: {other:?}"),
            }
            n += 1;
            if n % 50 == 0 {
                peak = peak.max(rss_kib(serve.child.id()));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        let grown = std::fs::metadata(&record).map(|m| m.len()).unwrap_or(0) - before;
        lat.sort_unstable();
        (lat, sent.load(Ordering::Relaxed), grown, peak, n, refusals(&serve.metrics))
    })
}

fn bench(c: &mut Criterion) {
    let t = tempfile::tempdir().unwrap();
    let (serve, g, agent) = setup(t.path(), &[]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut good = rt.block_on(async { Client::over_tcp(from([127, 0, 0, 1], &serve.tcp).await.unwrap()) });
    let mut n = 0u64;
    c.bench_function("jcp serve: one good call, quiet", |b| {
        b.iter(|| {
            n += 1;
            let a = rt.block_on(good.call(&request(&g, &agent, n))).unwrap();
            assert!(a.decision.is_allow());
        });
    });
    drop(serve);
    // The floods only under `cargo bench` (`cargo test --benches` runs the function above once).
    if std::env::args().any(|a| a == "--bench") {
        let secs = std::env::var("JCP_FLOOD_S").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
        let mut quiet = (Duration::ZERO, 0.0);
        // The record's high-water mark: 1 MiB past what the setup and the first seconds write.
        let high_water = ["--record-high-water", "2M"];
        let runs: [(Flood, &[&str], &str); 7] = [
            (Flood::Quiet, &[], ""),
            (Flood::Silent, &[], ""),
            (Flood::HalfFrames, &[], ""),
            (Flood::MetricsHeaders, &[], ""),
            (Flood::BadSignatures, &[], ""),
            (Flood::BadSignatures, &high_water, " with --record-high-water 2M"),
            (Flood::StatementAsks, &[], ""),
        ];
        // `JCP_FLOODS=Quiet,Silent` runs only those (the quiet run first, always: it is the baseline).
        let only = std::env::var("JCP_FLOODS").ok();
        for (kind, extra, label) in runs {
            let name = format!("{kind:?}");
            if kind != Flood::Quiet && only.as_deref().is_some_and(|o| !o.split(',').any(|k| k == name)) {
                continue;
            }
            let (lat, sent, grown, rss, calls, refused) = measure(kind, secs, extra);
            // A flood is what it says it is: half frames the endpoint reads
            // (held, cut or `busy`), never refused at once as oversized.
            assert!(
                kind != Flood::HalfFrames || !refused.contains("frame-oversized"),
                "the half frames were refused as oversized: {refused}"
            );
            let (p50, p99) = (pct(&lat, 0.5), pct(&lat, 0.99));
            // The good calls' own growth a second, from the quiet run.
            let good_rate = grown as f64 / secs as f64;
            if kind == Flood::Quiet {
                quiet = (p99, good_rate);
            }
            let ratio = p99.as_secs_f64() / quiet.0.as_secs_f64().max(1e-9);
            let flooded = (grown as f64 - quiet.1 * secs as f64).max(0.0);
            let per = if sent > 0 { format!("{:.1}", flooded / sent as f64) } else { "—".into() };
            let _ = writeln!(
                std::io::stdout(),
                "flood {kind:?}{label} {secs} s: good calls {calls} (all allowed), p50 {:.3} ms, p99 {:.3} ms ({ratio:.2}× quiet p99); flood sent {sent}; record grew {grown} B ({per} B per flooded message beyond the good calls' own); endpoint RSS peak {rss} KiB; frames refused by code: {refused}",
                p50.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3,
            );
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
