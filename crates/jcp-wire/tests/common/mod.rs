//! Fixtures for the wire tests: seeded keys, grants, a served endpoint on a
//! temp-dir stream, signed requests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use jcp::cbor::ContentId;
use jcp::decision::Gate;
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp_wire::backend::Backend;
use jcp_wire::endpoint::{Address, Config, Endpoint, OpenReport};
use jcp_wire::message::{RequestBody, WireRequest};

pub const T0: u64 = 1_800_000_000;

/// The runtime every wire test runs its endpoint and clients on: two workers.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

pub fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

pub fn steward() -> Keypair {
    key(90)
}
pub fn issuer() -> Keypair {
    key(1)
}
pub fn agent() -> Keypair {
    key(2)
}

pub fn resource() -> ContentId {
    ContentId::of_bytes(b"resource: the search tool")
}

pub fn grant(budget: u64, nonce: u8) -> SignedGrant {
    grant_by(&issuer(), budget, nonce)
}

/// A root grant to the agent issued by `by`.
pub fn grant_by(by: &Keypair, budget: u64, nonce: u8) -> SignedGrant {
    Grant {
        issuer: by.did(),
        subject: agent().did(),
        capability: Capability { resource: resource(), actions: vec!["read".into(), "write".into()] },
        budget_uj: budget,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [nonce; 16],
    }
    .sign(by)
    .unwrap()
}

pub fn frame(g: &SignedGrant, payload: &[u8]) -> Frame {
    Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: g.id(),
        action: "read".into(),
        resource: g.grant().capability.resource,
        payload_hash: ContentId::of_bytes(payload),
        model: None,
    }
}

/// A request on `g` for `uj`, stamped `now`, with the argument `payload`.
pub fn request(g: &SignedGrant, uj: u64, payload: &[u8], now: u64) -> WireRequest {
    RequestBody {
        frame: frame(g, payload),
        chain: vec![g.clone()],
        cost: Energy::hardware(uj),
        money: None,
        label: Some(Label::bottom()),
        args: Some(payload.to_vec()),
        continues: None,
        now,
    }
    .sign(&agent())
}

/// [`request`] with another cost: a request on `g` stating `cost`.
pub fn request_costing(g: &SignedGrant, cost: Energy, payload: &[u8], now: u64) -> WireRequest {
    let base = request(g, 1, payload, now);
    RequestBody {
        frame: base.frame,
        chain: base.chain,
        cost,
        money: None,
        label: base.label,
        args: base.args,
        continues: None,
        now,
    }
    .sign(&agent())
}

/// A settable clock shared with an endpoint.
#[derive(Clone)]
pub struct TestClock(pub Arc<AtomicU64>);

impl TestClock {
    pub fn new(t: u64) -> Self {
        Self(Arc::new(AtomicU64::new(t)))
    }
    pub fn set(&self, t: u64) {
        self.0.store(t, Ordering::SeqCst);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    pub fn clock(&self) -> jcp_wire::endpoint::Clock {
        let a = self.0.clone();
        Arc::new(move || a.load(Ordering::SeqCst))
    }
}

/// The operator's feed key the test endpoints are configured with (§4.3).
pub fn feed_key() -> Keypair {
    key(90)
}

pub fn config(stream: &Path, clock: &TestClock) -> Config {
    let mut c = Config::new(stream);
    c.clock = clock.clock();
    c.known_through = Some(0);
    c.feed_keys = vec![feed_key().did()];
    c.frame_timeout = std::time::Duration::from_millis(500);
    c
}

/// A served endpoint: TCP on an ephemeral port and a Unix socket.
pub struct Served {
    pub endpoint: Endpoint,
    pub report: OpenReport,
    pub tcp: Address,
    pub unix: Address,
    tasks: Vec<tokio::task::JoinHandle<Result<(), jcp_wire::WireError>>>,
}

impl Served {
    pub async fn start(
        cfg: Config,
        dir: &Path,
        backend: Option<Arc<dyn Backend>>,
    ) -> Result<Self, jcp_wire::WireError> {
        Self::start_gated(cfg, dir, backend, Gate::new()).await
    }

    /// With `gate` (trust roots, floors) instead of an open one.
    pub async fn start_gated(
        cfg: Config,
        dir: &Path,
        backend: Option<Arc<dyn Backend>>,
        gate: Gate,
    ) -> Result<Self, jcp_wire::WireError> {
        let (endpoint, report) = Endpoint::open(cfg, steward(), gate, backend)?;
        let (tl, tcp) = Address::Tcp("127.0.0.1:0".into()).bind().await?;
        let sock: PathBuf = dir.join(format!("ep-{}.sock", std::process::id()));
        let (ul, unix) = Address::Unix(sock).bind().await?;
        let mut tasks = Vec::new();
        for l in [tl, ul] {
            let ep = endpoint.clone();
            tasks.push(tokio::spawn(async move { ep.serve(l).await }));
        }
        Ok(Self { endpoint, report, tcp, unix, tasks })
    }

    /// The TCP listener's `host:port`, for raw sockets.
    pub fn tcp_addr(&self) -> &str {
        match &self.tcp {
            Address::Tcp(addr) => addr,
            other => panic!("not a TCP address: {other:?}"),
        }
    }

    pub async fn stop(self) {
        // Aborted and awaited: the listeners are dropped before this
        // returns, so a restart in the same folder can bind the same socket.
        for t in self.tasks {
            t.abort();
            let _ = t.await;
        }
        self.endpoint.shutdown().await.unwrap();
    }
}

/// A meter whose figures a test scripts, one per relayed call, in order:
/// for the endpoint's accounting (what is charged, summed and closed),
/// with the real span meter tested on real processes elsewhere
/// (`jcp-meter`'s span tests, `crates/cli/tests/backend.rs`). The targets it
/// was opened over are kept.
#[derive(Default)]
pub struct Scripted {
    figures: std::sync::Mutex<std::collections::VecDeque<jcp_wire::metering::CallFigure>>,
    pub targets: std::sync::Mutex<Vec<jcp_wire::metering::CallTarget>>,
}

impl Scripted {
    /// Figures of `uj` each, graded `provenance`, `Partial` with one gap.
    pub fn new(uj: &[u64], provenance: Provenance) -> Arc<Self> {
        let figures = uj
            .iter()
            .map(|&uj| jcp_wire::metering::CallFigure {
                energy: jcp::energy::Energy {
                    uj,
                    provenance,
                    coverage: jcp::energy::Coverage::Partial,
                    measured: (provenance == Provenance::HwShunt).then_some(uj),
                },
                gaps: vec![jcp_wire::metering::CallGap {
                    code: "not-declared-self-contained".into(),
                    pid: None,
                    detail: "scripted".into(),
                }],
                cpu_ns: 1_000_000,
                wall_ns: 2_000_000,
                rung: "scripted".into(),
                members: 1,
            })
            .collect();
        Arc::new(Self { figures: std::sync::Mutex::new(figures), targets: std::sync::Mutex::default() })
    }
}

struct ScriptedSpan(jcp_wire::metering::CallFigure);

impl jcp_wire::metering::CallSpan for ScriptedSpan {
    fn stop(self: Box<Self>) -> jcp_wire::metering::CallFigure {
        self.0
    }
}

impl jcp_wire::metering::CallMeter for Scripted {
    fn start(&self, target: jcp_wire::metering::CallTarget) -> Box<dyn jcp_wire::metering::CallSpan> {
        self.targets.lock().unwrap().push(target);
        let f = self.figures.lock().unwrap().pop_front().expect("a scripted figure for every relayed call");
        Box::new(ScriptedSpan(f))
    }
}

/// Every relayed call metered at `uj` (`ModelBased`, `Partial`): for tests
/// of what the gate decides around a relay, not of the meter.
pub fn fixed_meter(uj: u64) -> Arc<dyn jcp_wire::metering::CallMeter> {
    Arc::new(Fixed(uj))
}

struct Fixed(u64);

impl jcp_wire::metering::CallMeter for Fixed {
    fn start(&self, _target: jcp_wire::metering::CallTarget) -> Box<dyn jcp_wire::metering::CallSpan> {
        let s = Scripted::new(&[self.0], Provenance::ModelBased);
        let f = s.figures.lock().unwrap().pop_front().unwrap();
        Box::new(ScriptedSpan(f))
    }
}
