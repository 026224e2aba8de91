//! §11 relay mode: relayed decisions per second with each call metered as a
//! span over the backend's process tree (`jcp_meter::span::SpanMeter`),
//! against the same endpoint whose meter reads no process
//! (`jcp_wire::metering::WallClock`), in the same run. Each iteration is one
//! relayed call over a Unix socket: the decision (a reservation, durable),
//! the call to `jcp backend demo` (`echo:`), the charge (durable), the
//! reply. The backend is a real process; one call at a time per endpoint.
//!
//! `cargo bench -p jcp-cli --bench relay` (docs/performance.md, "Relayed
//! calls, metered").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use jcp::cbor::ContentId;
use jcp::decision::Gate;
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp_wire::backend::{ProcessBackend, ProcessOptions};
use jcp_wire::client::Client;
use jcp_wire::endpoint::{Address, Config, Endpoint};
use jcp_wire::message::{ReplyState, RequestBody, WireRequest};
use jcp_wire::metering::{CallMeter, WallClock};

fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

fn grant() -> SignedGrant {
    Grant {
        issuer: key(1).did(),
        subject: key(2).did(),
        capability: Capability { resource: ContentId::of_bytes(b"demo"), actions: vec!["read".into()] },
        budget_uj: u64::MAX / 4,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [1; 16],
    }
    .sign(&key(1))
    .unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// A distinct relayed call: `echo:<n>`.
fn request(g: &SignedGrant, n: u64) -> WireRequest {
    let args = format!("echo:{n}").into_bytes();
    RequestBody {
        frame: Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: g.id(),
            action: "read".into(),
            resource: g.grant().capability.resource,
            payload_hash: ContentId::of_bytes(&args),
            model: None,
        },
        chain: vec![g.clone()],
        cost: Energy::new(0, Provenance::Estimator),
        money: None,
        label: Some(Label::bottom()),
        args: Some(args),
        continues: None,
        now: now(),
    }
    .sign(&key(2))
}

/// An endpoint on `dir/<name>.jcps` with `jcp backend demo` behind it,
/// metered by `meter`, served on a Unix socket.
async fn serve(dir: &std::path::Path, name: &str, meter: Arc<dyn CallMeter>) -> (Endpoint, Address) {
    let backend = ProcessBackend::spawn(
        PathBuf::from(env!("CARGO_BIN_EXE_jcp")),
        ["backend", "demo"].map(OsString::from).to_vec(),
        ProcessOptions::default(),
    )
    .unwrap();
    let mut cfg = Config::new(dir.join(format!("{name}.jcps")));
    cfg.meter = Some(meter);
    let (ep, _) = Endpoint::open(cfg, key(90), Gate::new(), Some(Arc::new(backend))).unwrap();
    let (l, addr) = Address::Unix(dir.join(format!("{name}.sock"))).bind().await.unwrap();
    let e2 = ep.clone();
    tokio::spawn(async move { e2.serve(l).await });
    (ep, addr)
}

/// One relayed call: decision, reply, charge receipt.
async fn relayed(c: &mut Client, g: &SignedGrant, n: u64) {
    let r = c.call(&request(g, n)).await.unwrap();
    assert!(r.decision.is_allow(), "{r:?}");
    let reply = c.reply().await.unwrap();
    assert_eq!(reply.state, ReplyState::Done);
    assert!(reply.charge.is_some(), "charged: {reply:?}");
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let g = grant();
    let span = jcp_meter::span::SpanMeter::system(jcp_meter::span::SpanConfig::default());
    let (metered, wall) = rt.block_on(async {
        let (_, a) = serve(dir.path(), "metered", Arc::new(span)).await;
        let (_, b) = serve(dir.path(), "wall", Arc::new(WallClock)).await;
        (Client::connect(&a).await.unwrap(), Client::connect(&b).await.unwrap())
    });
    let (mut metered, mut wall) = (metered, wall);
    let n = AtomicU64::new(0);
    let mut group = c.benchmark_group("relayed call");
    group.sample_size(30).measurement_time(Duration::from_secs(6)).warm_up_time(Duration::from_secs(1));
    group.bench_function("metered: span over the backend's tree", |b| {
        b.iter(|| rt.block_on(relayed(&mut metered, &g, n.fetch_add(1, Ordering::Relaxed))));
    });
    group.bench_function("baseline: wall clock, no process read", |b| {
        b.iter(|| rt.block_on(relayed(&mut wall, &g, n.fetch_add(1, Ordering::Relaxed))));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
