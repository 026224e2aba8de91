#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // benchmark code, like tests
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::too_many_lines,
    clippy::many_single_char_names
)]
//! The enforcement endpoint (§11) over loopback TCP with durable recording
//! (group commit on a stream in the target directory, a real disk), against
//! the in-process decision measured in the same run on the same requests.
//!
//! * endpoint: `Endpoint::open` + `Endpoint::serve` on a tokio
//!   multi-thread runtime (one worker per core); 1, 8 and 64 clients on the
//!   same runtime, each its own connection and its own grant (a budget no
//!   run exhausts: everything is allowed), each sending its share of
//!   `JCP_WIRE_BENCH_N` (default 20 000) pre-signed, pre-framed requests one
//!   after another. Signing and framing are the client's cost and are done
//!   before the clock starts. Latency is per request, from the first byte
//!   sent to the whole response read and decoded. The clients are a load
//!   generator on the crate's framing over a buffered socket; the 64-client
//!   run is repeated with `jcp_wire::client::Client`.
//! * open loop: 64 clients (`jcp_wire::client::Client`) on a fixed
//!   schedule of `JCP_WIRE_BENCH_PACE` decisions/s in all (default 10 000;
//!   comma-separated for several), whatever the endpoint does; latency from
//!   each request's due time when its client was held up by the previous
//!   answer (no coordinated omission). The closed-loop runs measure the
//!   endpoint at saturation, where by Little's law the mean latency is the
//!   number of clients over the rate; the open-loop runs measure the
//!   latency of a given load.
//! * baseline: the same requests decided in-process, one thread, by a
//!   fresh `jcp::decision::Gate` (`Gate::decide`), each after verifying
//!   its caller's signature the way the endpoint does
//!   (`WireRequest::verify_signature`): no wire, no seal, no record. The
//!   endpoint/baseline ratio is what the wire and durability cost.
//! * breakdown (same run, one thread, no wire): the caller signature
//!   alone, `Gate::decide` alone, and the endpoint's core work without
//!   the wire: verify, request record, decide, seal, append, one
//!   `fdatasync` per 64 decisions (`DurableGate`, group commit).
//! * CPU: the process's user + system time over the run (`/proc/self/stat`,
//!   endpoint and clients together) per decision, and the share of the
//!   cores it kept busy.
//!
//! The endpoint's clock is pinned (every stamp is inside the window
//! however long a run takes), so the remembered-request table holds every
//! request at the end; its size for a full 30 s window at the 64-client
//! rate is projected with `endpoint::remembered_table_bytes`.
//!
//! Modes: `cargo test -p jcp-wire --benches`: 96 requests per
//! configuration, once, no figures kept. `JCP_WIRE_BENCH_ONESHOT=1 cargo
//! bench -p jcp-wire --bench wire`: one timed pass of everything, best of
//! `JCP_WIRE_BENCH_REPEAT` (default 2) interleaved rounds, printed as a
//! table (what docs/performance.md quotes). `cargo bench -p jcp-wire
//! --bench wire`: criterion over the 64-client endpoint and the baseline.
//! `JCP_WIRE_BENCH_PROFILE=64` (or 1, 8; `JCP_WIRE_BENCH_CLIENT=jcp` for
//! `Client`): that configuration alone, once, for `perf record`.
//! `JCP_WIRE_BENCH_FLOOR=1` (with `ONESHOT`): the endpoint against the
//! floor (`wire/floor.rs`), every round shown. `JCP_WIRE_BENCH_COMMIT_US`:
//! the endpoint's commit interval, µs (default the endpoint's, 500).
//! `JCP_WIRE_BENCH_STRICT=1`: the endpoint checks every caller signature
//! alone (`CallerSignatures::Strict`) instead of in batches; the floor
//! mode runs both, interleaved (`EndpointStrict` is the strict one).

#[path = "wire/floor.rs"]
mod floor;
#[path = "wire/harness.rs"]
mod harness;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use jcp::cbor::{self, ContentId, Value};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::Energy;
use jcp::flow::Label;
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp_receipt::runtime::DurableGate;
use jcp_receipt::stream::RecordKind;
use jcp_receipt::writer::Durability;
use jcp_wire::client::Client;
use jcp_wire::codec;
use jcp_wire::endpoint::{remembered_table_bytes, Address, Config, Endpoint, StatsSnapshot};
use jcp_wire::message::{Outbound, RequestBody, WireRequest};

const T0: u64 = 1_800_000_000;
const CLIENTS: [usize; 3] = [1, 8, 64];
const WINDOW_S: u64 = 30;

fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn requests_per_config() -> usize {
    if !bench_mode() {
        return 96;
    }
    std::env::var("JCP_WIRE_BENCH_N").ok().and_then(|s| s.parse().ok()).unwrap_or(20_000)
}

fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

fn steward() -> Keypair {
    key(90)
}

fn resource() -> ContentId {
    ContentId::of_bytes(b"resource: the search tool")
}

/// Client `i`'s own grant: a budget no run exhausts.
fn grant(i: usize) -> SignedGrant {
    let mut nonce = [0u8; 16];
    nonce[..8].copy_from_slice(&(i as u64).to_be_bytes());
    Grant {
        issuer: key(1).did(),
        subject: key(2).did(),
        capability: Capability { resource: resource(), actions: vec!["read".into()] },
        budget_uj: 1 << 60,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce,
    }
    .sign(&key(1))
    .unwrap()
}

/// `n` requests, dealt round-robin to `clients` clients: signed now, not
/// while the clock runs.
fn requests(clients: usize, n: usize) -> Vec<Vec<WireRequest>> {
    let agent = key(2);
    let grants: Vec<SignedGrant> = (0..clients).map(grant).collect();
    let mut out: Vec<Vec<WireRequest>> = vec![Vec::with_capacity(n / clients + 1); clients];
    for j in 0..n {
        let c = j % clients;
        let g = &grants[c];
        let args = format!("search: item {j} for client {c}").into_bytes();
        let frame = Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: g.id(),
            action: "read".into(),
            resource: resource(),
            payload_hash: ContentId::of_bytes(&args),
            model: None,
        };
        let body = RequestBody {
            frame,
            chain: vec![g.clone()],
            cost: Energy::hardware(1_000),
            money: None,
            label: Some(Label::bottom()),
            args: Some(args),
            continues: None,
            now: T0,
        };
        out[c].push(body.sign(&agent));
    }
    out
}

fn scratch() -> tempfile::TempDir {
    // The target directory, not a tmpfs: `fdatasync` must reach a disk.
    let base = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

/// One endpoint configuration's figures.
#[derive(Debug, Clone)]
struct Run {
    clients: usize,
    server: Server,
    how: Gen,
    /// Open loop: the offered rate (decisions/s, all clients together);
    /// `None` for the closed loop (each client sends as soon as answered).
    pace: Option<f64>,
    n: usize,
    wall: Duration,
    p50: Duration,
    p99: Duration,
    max: Duration,
    /// `fdatasync`s of the stream over the run.
    syncs: u64,
    /// The endpoint's own counters (`None` for the floor).
    stats: Option<StatsSnapshot>,
    /// Where the endpoint's share of the latency went, from its own
    /// histograms ([`stages`]; `None` for the floor).
    stages: Option<String>,
    stream_bytes: u64,
    /// CPU time of the whole process (endpoint and clients) during the run.
    cpu: Option<Duration>,
}

impl Run {
    fn rate(&self) -> f64 {
        self.n as f64 / self.wall.as_secs_f64()
    }

    /// CPU µs per decision (endpoint + clients), and the share of the
    /// machine's cores busy during the run.
    fn cpu_per_decision(&self) -> Option<(f64, f64)> {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
        self.cpu.map(|c| (c.as_secs_f64() * 1e6 / self.n as f64, c.as_secs_f64() / self.wall.as_secs_f64() / cores))
    }
}

/// This process's CPU time so far (user + system), from `/proc/self/stat`
/// (clock ticks, 10 ms): a figure over seconds, not a timer.
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// How a benchmark client talks to the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gen {
    /// A load generator: the crate's framing (`codec::write_frame`,
    /// `codec::read_frame`, `Outbound::decode`) over a buffered socket, so
    /// a response is one read. The clients share the machine's two cores
    /// with the endpoint; this keeps their share small.
    Buffered,
    /// `jcp_wire::client::Client` (`send_raw` + `recv`), which reads
    /// through a buffer too and decodes each answer as a `Outbound`.
    Client,
}

enum Conn {
    Buffered(tokio::io::BufReader<tokio::net::TcpStream>),
    Client(Client),
}

impl Conn {
    async fn connect(addr: &Address, how: Gen) -> Self {
        match (how, addr) {
            (Gen::Buffered, Address::Tcp(a)) => {
                let s = tokio::net::TcpStream::connect(a).await.unwrap();
                s.set_nodelay(true).unwrap();
                Self::Buffered(tokio::io::BufReader::new(s))
            }
            (Gen::Client, a) => Self::Client(Client::connect(a).await.unwrap()),
            (how, a) => panic!("{how:?} over {a}"),
        }
    }

    /// Sends one request and reads its answer: the endpoint's, decoded;
    /// the floor's (a framed receipt) decoded as CBOR, `None`.
    async fn call(&mut self, framed: &[u8], server: Server) -> Option<Outbound> {
        match self {
            Self::Buffered(s) => {
                codec::write_frame(s.get_mut(), framed).await.unwrap();
                let body = codec::read_frame(s, codec::DEFAULT_CAP).await.unwrap().unwrap();
                match server {
                    Server::Endpoint | Server::EndpointStrict => Some(Outbound::decode(&body).unwrap()),
                    Server::Floor => {
                        assert!(matches!(codec::decode_body(&body).unwrap(), Value::Bytes(_)));
                        None
                    }
                }
            }
            Self::Client(c) => {
                assert_ne!(server, Server::Floor, "the floor is measured with the load generator");
                c.send_raw(framed).await.unwrap();
                Some(c.recv().await.unwrap())
            }
        }
    }
}

/// When client `i` of `clients` sends its `k`-th request, open loop at
/// `rate` decisions/s in all: the clients take turns, evenly spaced.
fn due(start: Instant, rate: f64, clients: usize, i: usize, k: usize) -> Instant {
    start + Duration::from_secs_f64((k * clients + i) as f64 / rate)
}

/// What serves a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// `jcp_wire::endpoint::Endpoint`.
    Endpoint,
    /// The endpoint checking every caller signature alone
    /// (`CallerSignatures::Strict`, `jcp serve --strict-signatures`).
    EndpointStrict,
    /// The floor (`floor::Floor`): the endpoint's threads and wire doing
    /// only what every decision must cost.
    Floor,
}

/// Serves a fresh endpoint (or the floor) on a fresh stream and runs
/// `reqs` (one list per client) through it over loopback TCP.
///
/// Closed loop (`pace: None`): each client sends its next request as soon
/// as the last is answered, so the clients offer all the load the endpoint
/// can take, and latency is the queue at saturation (Little's law).
/// Open loop (`pace: Some(rate)`): each request has a due time on a fixed
/// schedule of `rate` decisions/s in all, whatever the endpoint does. A
/// client still has one request in flight; when an answer comes after its
/// next request's due time, that request's latency is counted from its
/// due time, not from when it could be sent (no coordinated omission: a
/// backlog shows as latency). When the client is early it waits for the
/// due time (tokio's timer, 1 ms steps, so requests leave in bursts) and
/// latency counts from when it actually sent.
fn run_endpoint(rt: &tokio::runtime::Runtime, reqs: &[Vec<WireRequest>], how: Gen, pace: Option<f64>) -> Run {
    run_server(rt, reqs, Server::Endpoint, how, pace)
}

fn run_server(
    rt: &tokio::runtime::Runtime,
    reqs: &[Vec<WireRequest>],
    server: Server,
    how: Gen,
    pace: Option<f64>,
) -> Run {
    let clients = reqs.len();
    let n: usize = reqs.iter().map(Vec::len).sum();
    let framed: Vec<Vec<Vec<u8>>> =
        reqs.iter().map(|rs| rs.iter().map(|r| codec::frame_value(&r.to_value())).collect()).collect();
    let receipt = harness::receipt_len(&reqs[0][0]);
    let dir = scratch();
    let path = dir.path().join("bench.jcps");
    rt.block_on(async {
        let (listener, addr) = Address::Tcp("127.0.0.1:0".into()).bind().await.unwrap();
        let jcp_wire::endpoint::Listener::Tcp(tcp) = listener else { unreachable!() };
        let (wall, mut lat, cpu, syncs, stats, stages) = match server {
            Server::Endpoint | Server::EndpointStrict => {
                let mut cfg = Config::new(&path);
                cfg.clock = Arc::new(|| T0);
                cfg.window_s = WINDOW_S;
                // `JCP_WIRE_BENCH_COMMIT_US`: the commit interval, µs (default the endpoint's).
                if let Some(us) = std::env::var("JCP_WIRE_BENCH_COMMIT_US").ok().and_then(|s| s.parse().ok()) {
                    cfg.commit_interval = Duration::from_micros(us);
                }
                // `JCP_WIRE_BENCH_STRICT=1`: every caller signature alone (`--strict-signatures`).
                if server == Server::EndpointStrict || std::env::var("JCP_WIRE_BENCH_STRICT").is_ok_and(|v| v == "1") {
                    cfg.caller_signatures = jcp_wire::endpoint::CallerSignatures::Strict;
                }
                let (ep, _) = Endpoint::open(cfg, steward(), Gate::new(), None).unwrap();
                let serving = {
                    let ep = ep.clone();
                    tokio::spawn(async move { ep.serve(jcp_wire::endpoint::Listener::Tcp(tcp)).await })
                };
                let (wall, lat, cpu) = harness::drive(&addr, framed, server, how, pace).await;
                let stats = ep.stats();
                let stages = ep.render_metrics().ok().map(|t| stages(&t));
                serving.abort();
                ep.shutdown().await.unwrap();
                assert_eq!((stats.decided, stats.allowed), (n as u64, n as u64), "{stats:?}");
                (wall, lat, cpu, stats.commits, Some(stats), stages)
            }
            Server::Floor => {
                let floor = Arc::new(floor::Floor::start(&path, steward(), receipt));
                let serving = tokio::spawn(floor.clone().serve(tcp, key(2).did()));
                let (wall, lat, cpu) = harness::drive(&addr, framed, server, how, pace).await;
                serving.abort();
                (wall, lat, cpu, floor.syncs(), None, None)
            }
        };
        lat.sort_unstable();
        let stream_bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        Run {
            clients,
            server,
            how,
            pace,
            n,
            wall,
            p50: pct(&lat, 0.50),
            p99: pct(&lat, 0.99),
            max: pct(&lat, 1.0),
            syncs,
            stats,
            stream_bytes,
            cpu,
            stages,
        }
    })
}

/// What the gate is asked for `r` at the pinned time.
fn gate_request<'a>(r: &'a WireRequest, cost: &'a Cost) -> Request<'a> {
    Request { frame: &r.frame, chain: &r.chain, caller: &r.caller, cost, now: T0, flow: r.label.as_ref() }
}

/// The baseline: in-process decisions, caller signature included.
fn baseline(reqs: &[WireRequest]) -> Duration {
    let mut gate = Gate::new();
    let t = Instant::now();
    for r in reqs {
        assert!(r.verify_signature());
        let cost: Cost = r.decision_cost();
        let d = gate.decide(&gate_request(r, &cost));
        assert!(d.is_allow());
    }
    t.elapsed()
}

fn caller_signatures_only(reqs: &[WireRequest]) -> Duration {
    let t = Instant::now();
    for r in reqs {
        assert!(r.verify_signature());
    }
    t.elapsed()
}

fn gate_only(reqs: &[WireRequest]) -> Duration {
    let mut gate = Gate::new();
    let t = Instant::now();
    for r in reqs {
        let cost: Cost = r.decision_cost();
        let d = gate.decide(&gate_request(r, &cost));
        assert!(d.is_allow());
    }
    t.elapsed()
}

/// The endpoint's core work without the wire or tokio: verify, record the
/// request, decide, seal, append; one sync per 64 decisions.
fn durable_no_wire(reqs: &[WireRequest]) -> (Duration, u64) {
    let dir = scratch();
    let (mut dg, _) =
        DurableGate::open_with(&dir.path().join("core.jcps"), steward(), Gate::new(), Durability::GroupCommit).unwrap();
    let t = Instant::now();
    let mut syncs = 0;
    for (i, r) in reqs.iter().enumerate() {
        assert!(r.verify_signature());
        let _id = r.id();
        let record =
            cbor::map([("request", Some(Value::Bytes(r.to_bytes()))), ("decided_at", Some(Value::Uint(T0)))]).encode();
        dg.append_record(RecordKind::Request, &record).unwrap();
        let cost: Cost = r.decision_cost();
        let rec = dg.decide(&gate_request(r, &cost)).unwrap();
        assert!(rec.decision.is_allow());
        if i % 64 == 63 {
            dg.commit().unwrap();
            syncs += 1;
        }
    }
    dg.commit().unwrap();
    let d = t.elapsed();
    dg.close().unwrap();
    (d, syncs + 1)
}

fn us(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

/// The endpoint's request histograms (`jcp_wire_request*_seconds`) as one
/// line each: count, mean, and the bucket bounds under which half and 99 %
/// of the requests fall.
fn stages(text: &str) -> String {
    let mut out = Vec::new();
    for (name, what) in [
        ("jcp_wire_request_seconds", "at the endpoint (frame read to answer written)"),
        ("jcp_wire_request_core_wait_seconds", "waiting for the core thread"),
        ("jcp_wire_request_durable_wait_seconds", "decided, waiting to be durable"),
    ] {
        let value = |suffix: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}_{suffix} ")))
                .and_then(|v| v.trim().parse::<f64>().ok())
        };
        let (Some(count), Some(sum)) = (value("count"), value("sum")) else { continue };
        let buckets: Vec<(f64, f64)> = text
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{name}_bucket{{le=\"")))
            .filter_map(|l| l.split_once("\"} "))
            .filter_map(|(le, n)| Some((le.parse::<f64>().unwrap_or(f64::INFINITY), n.trim().parse::<f64>().ok()?)))
            .collect();
        let under = |q: f64| {
            buckets.iter().find(|(_, n)| *n >= q * count).map_or_else(
                || "?".to_string(),
                |(le, _)| {
                    if le.is_finite() {
                        format!("≤ {:.2} ms", le * 1e3)
                    } else {
                        "over the last bucket".into()
                    }
                },
            )
        };
        out.push(format!(
            "    {what}: mean {:.2} ms, p50 {}, p99 {} ({count:.0} requests)",
            sum / count.max(1.0) * 1e3,
            under(0.5),
            under(0.99)
        ));
    }
    out.join("\n")
}

fn describe(r: &Run) -> String {
    let (cpu, busy) = r.cpu_per_decision().unwrap_or_default();
    let stages = r.stages.as_ref().filter(|s| !s.is_empty()).map_or_else(String::new, |s| format!("\n{s}"));
    let sigs = r.stats.filter(|s| s.signature_batches > 0).map_or_else(String::new, |s| {
        format!(
            ", caller signatures: {} in {} batches ({:.1} each, {} failed)",
            s.signatures_batched,
            s.signature_batches,
            s.signatures_batched as f64 / s.signature_batches as f64,
            s.signature_batches_failed
        )
    });
    format!(
        "{:?}, {} clients ({:?}{}): {:.0} decisions/s, p50 {}, p99 {}, max {}, {} syncs ({:.1} decisions per sync), {cpu:.0} µs CPU per decision (server + clients), cores {:.0}% busy{sigs}{stages}",
        r.server,
        r.clients,
        r.how,
        open_loop_label(r.pace),
        r.rate(),
        us(r.p50),
        us(r.p99),
        us(r.max),
        r.syncs,
        r.n as f64 / r.syncs.max(1) as f64,
        busy * 100.0
    )
}

/// ", open loop, offered N/s" for an open-loop run, nothing for a closed one.
fn open_loop_label(pace: Option<f64>) -> String {
    pace.map_or_else(String::new, |p| format!(", open loop, offered {p:.0}/s"))
}

/// The open-loop rates (decisions/s offered by 64 clients together):
/// `JCP_WIRE_BENCH_PACE`, comma-separated, default the 10 000/s.
fn paces() -> Vec<f64> {
    std::env::var("JCP_WIRE_BENCH_PACE")
        .ok()
        .map(|s| s.split(',').filter_map(|p| p.trim().parse::<f64>().ok()).filter(|p| *p > 0.0).collect())
        .unwrap_or_else(|| vec![10_000.0])
}

/// The configurations a one-shot run measures: every client count with
/// the load generator (closed loop), 64 clients with the crate's `Client`,
/// and 64 clients open loop at each of `paces()`.
fn configurations() -> Vec<(usize, Gen, Option<f64>)> {
    let mut c: Vec<(usize, Gen, Option<f64>)> = CLIENTS.iter().map(|&n| (n, Gen::Buffered, None)).collect();
    c.push((64, Gen::Client, None));
    c.extend(paces().into_iter().map(|p| (64, Gen::Client, Some(p))));
    c
}

fn oneshot(n: usize) {
    let rt = runtime();
    let repeat: usize = std::env::var("JCP_WIRE_BENCH_REPEAT").ok().and_then(|s| s.parse().ok()).unwrap_or(2).max(1);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let configs = configurations();
    let t = Instant::now();
    let sets: Vec<Vec<Vec<WireRequest>>> = configs.iter().map(|&(c, _, _)| requests(c, n)).collect();
    println!("signed {} requests in {:.1}s (not timed)", n * configs.len(), t.elapsed().as_secs_f64());
    let flat: Vec<WireRequest> = sets[CLIENTS.len() - 1].iter().flatten().cloned().collect();
    let mut best: Vec<Option<Run>> = vec![None; configs.len()];
    let (mut base, mut sig, mut gate, mut dur) = (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
    let mut dur_syncs = 0;
    for round in 0..repeat {
        // Interleaved rounds, best of each: the machine is shared, so a
        // slow round says more about the neighbours than about the code.
        let b = baseline(&flat);
        let s = caller_signatures_only(&flat);
        let g = gate_only(&flat);
        let (d, syncs) = durable_no_wire(&flat);
        dur_syncs = syncs;
        println!(
            "round {round}: baseline {:.0}/s, caller signatures {:.0}/s, gate {:.0}/s, core work without the wire {:.0}/s",
            rate(n, b),
            rate(n, s),
            rate(n, g),
            rate(n, d)
        );
        base = base.min(b);
        sig = sig.min(s);
        gate = gate.min(g);
        dur = dur.min(d);
        for (i, (set, &(_, how, pace))) in sets.iter().zip(&configs).enumerate() {
            let r = run_endpoint(&rt, set, how, pace);
            println!("round {round}: {}", describe(&r));
            // Closed loop: the best round by rate. Open loop (the rate is
            // the schedule's): the worst round by p99, so a quiet round
            // never hides a noisy one.
            let keep = match (&best[i], pace) {
                (None, _) => true,
                (Some(b), None) => r.rate() > b.rate(),
                (Some(b), Some(_)) => r.p99 > b.p99,
            };
            if keep {
                best[i] = Some(r);
            }
        }
    }
    let base_rate = rate(n, base);
    println!();
    println!(
        "{n} requests per configuration, {cores} cores; closed loop: best of {repeat} rounds by rate; open loop: worst of {repeat} rounds by p99"
    );
    println!();
    println!("| configuration | decisions/s | vs baseline | p50 | p99 | max | syncs | decisions per sync | CPU per decision | cores busy |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!("| **baseline**: in-process `Gate::decide` + caller signature, 1 thread | {base_rate:.0} | 1.00× | — | — | — | — | — | {:.0} µs | — |", 1e6 / base_rate);
    println!(
        "| caller signature alone (`verify_signature`), 1 thread | {:.0} | {:.2}× | — | — | — | — | — | {:.0} µs | — |",
        rate(n, sig),
        rate(n, sig) / base_rate,
        1e6 / rate(n, sig)
    );
    println!(
        "| `Gate::decide` alone, 1 thread | {:.0} | {:.2}× | — | — | — | — | — | {:.1} µs | — |",
        rate(n, gate),
        rate(n, gate) / base_rate,
        1e6 / rate(n, gate)
    );
    println!(
        "| core work without the wire (`DurableGate`: verify, request record, decide, seal, append; 1 sync per 64), 1 thread | {:.0} | {:.2}× | — | — | — | {dur_syncs} | 64 | {:.0} µs | — |",
        rate(n, dur),
        rate(n, dur) / base_rate,
        1e6 / rate(n, dur)
    );
    for r in best.iter().flatten() {
        let (cpu, busy) = r.cpu_per_decision().unwrap_or_default();
        println!(
            "| endpoint, loopback TCP, group commit, {} client{}{}{} | {:.0} | {:.2}× | {} | {} | {} | {} | {:.1} | {cpu:.0} µs | {:.0} % |",
            r.clients,
            if r.clients == 1 { "" } else { "s" },
            if r.how == Gen::Client { " (`jcp_wire::client::Client`)" } else { "" },
            open_loop_label(r.pace),
            r.rate(),
            r.rate() / base_rate,
            us(r.p50),
            us(r.p99),
            us(r.max),
            r.syncs,
            r.n as f64 / r.syncs.max(1) as f64,
            busy * 100.0
        );
    }
    println!();
    let full = best.iter().flatten().find(|r| r.clients == 64 && r.how == Gen::Buffered && r.pace.is_none());
    if let Some((r, stats)) = full.and_then(|r| r.stats.map(|s| (r, s))) {
        let window = (r.rate() * WINDOW_S as f64).round() as u64;
        println!(
            "remembered-request table after the 64-client run: {} requests, {} bytes ({:.1} B per request); stream {} bytes ({:.0} B per decision)",
            stats.remembered,
            stats.remembered_bytes,
            stats.remembered_bytes as f64 / stats.remembered.max(1) as f64,
            r.stream_bytes,
            r.stream_bytes as f64 / r.n as f64
        );
        println!(
            "a full {WINDOW_S} s window at {:.0} decisions/s = {window} requests remembered = {} bytes ({:.1} MiB)",
            r.rate(),
            remembered_table_bytes(window),
            remembered_table_bytes(window) as f64 / (1024.0 * 1024.0)
        );
        println!(
            "Little's law: 64 requests always in flight / {:.0} per s = {} mean latency (p50 {}); p99 <= 5 ms needs a mean under 5 ms, i.e. more than {:.0} decisions/s",
            r.rate(),
            us(Duration::from_secs_f64(64.0 / r.rate())),
            us(r.p50),
            64.0 / 0.005
        );
    }
}

fn benches(c: &mut Criterion) {
    let n = requests_per_config();
    if bench_mode() && std::env::var_os("JCP_WIRE_BENCH_ONESHOT").is_some() {
        if std::env::var_os("JCP_WIRE_BENCH_FLOOR").is_some() {
            harness::floor_vs_endpoint(n);
        } else {
            oneshot(n);
        }
        return;
    }
    // For profilers: one configuration, once. `JCP_WIRE_BENCH_CLIENT=jcp`
    // uses `jcp_wire::client::Client`.
    if let Some(clients) =
        std::env::var("JCP_WIRE_BENCH_PROFILE").ok().filter(|_| bench_mode()).and_then(|s| s.parse::<usize>().ok())
    {
        let how =
            if std::env::var("JCP_WIRE_BENCH_CLIENT").is_ok_and(|v| v == "jcp") { Gen::Client } else { Gen::Buffered };
        let reqs = requests(clients.max(1), n);
        let pace = std::env::var("JCP_WIRE_BENCH_PACE").ok().and_then(|s| s.parse::<f64>().ok());
        println!("{}", describe(&run_endpoint(&runtime(), &reqs, how, pace)));
        return;
    }
    let rt = runtime();
    let mut g = c.benchmark_group("wire");
    g.throughput(Throughput::Elements(n as u64));
    g.sample_size(10);
    for (clients, how, pace) in configurations() {
        if bench_mode() && (clients, how, pace) != (64, Gen::Buffered, None) {
            continue;
        }
        // Each sample is a fresh endpoint on a fresh stream; its requests
        // are signed before its clock starts.
        let name = format!(
            "endpoint_{clients}_clients_{how:?}{}/{n}",
            pace.map_or_else(String::new, |p| format!("_paced_{p:.0}"))
        );
        g.bench_function(name.to_lowercase(), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let reqs = requests(clients, n);
                        run_endpoint(&rt, &reqs, how, pace).wall
                    })
                    .sum()
            });
        });
    }
    if !bench_mode() {
        // `cargo test --benches` runs the floor once too, so it cannot rot.
        let r = run_server(&rt, &requests(64, n), Server::Floor, Gen::Buffered, Some(50_000.0));
        assert!(r.syncs > 0 && r.stream_bytes > 0, "{}", describe(&r));
    }
    let flat: Vec<WireRequest> = requests(64, n).into_iter().flatten().collect();
    g.bench_function(format!("in_process_gate_baseline/{n}"), |b| {
        b.iter_custom(|iters| (0..iters).map(|_| baseline(&flat)).sum())
    });
    g.finish();
}

criterion_group!(wire_benches, benches);

fn main() {
    wire_benches();
    Criterion::default().configure_from_args().final_summary();
}
