//! `jcp serve`, `jcp call`, `jcp feed`: the enforcement point on the wire
//! (spec §11, §4.3 propagation, §4.7 amendments, §4.11).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use jcp::cbor::ContentId;
use jcp::decision::{Gate, Verdict};
use jcp::energy::{Coverage, Energy};
use jcp::frame::Frame;
use jcp::revocation::SignedRevocation;
use jcp::steering::{SignedAmendment, SignedCheckpoint};
use jcp_wire::backend::{Backend, ProcessBackend, ProcessOptions};
use jcp_wire::endpoint::{Address, Config, Endpoint};
use jcp_wire::message::{Feed, RequestBody, WireRequest, WireResponse};
use serde_json::json;

use super::core::{
    build_frame, core_err, parse_did, parse_label, parse_money, parse_provenance, parse_resource, read_bytes,
    read_grant, read_key, read_steward_key, FrameFlags,
};
use crate::out::{coded, emit, CLEAN, FINDINGS};

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}

pub(crate) fn wire_err(e: &jcp_wire::WireError) -> anyhow::Error {
    coded(e.code(), e.to_string())
}

pub(crate) fn parse_addr(s: &str) -> anyhow::Result<Address> {
    s.parse::<Address>().map_err(|e| wire_err(&e))
}

// ------------------------------------------------------------------ serve

/// A gate trusting each `RESOURCE=DID` (`--trust-root`; RESOURCE as hex or text:NAME).
pub(crate) fn gate_trusting(roots: &[String]) -> anyhow::Result<Gate> {
    let mut gate = Gate::new();
    for tr in roots {
        let (r, d) =
            tr.split_once('=').ok_or_else(|| coded("invalid-trust-root", format!("{tr:?}: expected RESOURCE=DID")))?;
        gate.add_trust_root(parse_resource(r)?, parse_did(d)?);
    }
    Ok(gate)
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen: tcp:HOST:PORT or unix:PATH (repeatable).
    #[arg(long = "listen", required = true, num_args = 1)]
    listen: Vec<String>,
    /// The record: the receipt stream this endpoint writes (as its only writer).
    #[arg(long)]
    stream: PathBuf,
    /// The endpoint's (steward's) key file: it seals every receipt.
    #[arg(long)]
    steward_key: PathBuf,
    /// A trust root RESOURCE=DID (repeatable; RESOURCE as hex or text:NAME).
    #[arg(long = "trust-root")]
    trust_roots: Vec<String>,
    /// The freshness window in seconds (§11).
    #[arg(long, default_value_t = 30)]
    window_s: u64,
    /// The revocation-knowledge marker stated before the feed delivers anything (§4.3). Without it, an
    /// endpoint with a feed (--admin or --feed-key) states 0; one with none states no marker, so its
    /// allows are unverifiable for revocation, never explicable by default.
    #[arg(long)]
    known_through: Option<u64>,
    /// A feed key's did (repeatable): a revocation or amendment signed by it (`jcp feed … --key`) is
    /// admitted from any connection; the signature covers the marker (§4.3). Unsigned ones are
    /// taken only over --admin.
    #[arg(long = "feed-key")]
    feed_keys: Vec<String>,
    /// Serve with a plaintext steward key (`jcp key new` without a passphrase). Without it the steward
    /// key must be encrypted at rest (`jcp key new --passphrase-file F`, JCP_PASSPHRASE_FILE=F).
    #[allow(clippy::doc_markdown, reason = "clap help text, shown as written: not markdown")]
    #[arg(long)]
    plaintext_key: bool,
    /// The operator's admin socket (unix:PATH, made owner-only): feeds sent there may be unsigned.
    /// Serve agents on --listen, never here.
    #[arg(long)]
    admin: Option<String>,
    /// The largest message body accepted, bytes: at most (and by default) the largest body whose record fits one stream record; a larger cap is refused at start (cap-above-record).
    #[arg(long, default_value_t = jcp_wire::codec::MAX_ENDPOINT_CAP)]
    cap: usize,
    /// The least time between two syncs of the record, µs: decisions made meanwhile share the next sync (0: sync each batch at once). Nothing is answered before its sync either way.
    #[arg(long, default_value_t = 500)]
    commit_interval_us: u64,
    /// The most connections served at once; past it (or past --max-per-peer for one address) a
    /// connection is answered `busy` and closed. Lowered to fit the open-file limit.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// The most connections one TCP peer address holds at once (an IPv6 peer counted by its /64).
    #[arg(long, default_value_t = 1024)]
    max_per_peer: usize,
    /// How long a new connection may take to start its first frame, s.
    #[arg(long, default_value_t = 10)]
    first_frame_timeout_s: u64,
    /// Threads of the admission runtime: connections are accepted and served there, at a lower scheduling
    /// priority, until their first authenticated request is answered, then with the clients already admitted
    /// (a flood of connections that never authenticate costs those threads first). 0: one runtime for all.
    #[arg(long, default_value_t = 1)]
    admission_threads: usize,
    /// How long a connection may stay silent between frames, s (an agent waiting at a checkpoint keeps its connection).
    #[arg(long, default_value_t = 7200)]
    idle_timeout_s: u64,
    /// The most frame-body bytes read at once over all connections: a frame whose declared length does not
    /// fit what is left is answered `busy` (half-sent frames cannot hold memory without bound). Connections not
    /// yet admitted hold at most half of it; frames of 16 KiB or less take nothing from it.
    #[arg(long, default_value_t = 64 << 20)]
    body_bytes_in_flight: usize,
    /// Requests, feeds and statement asks one source (a TCP address, a Unix socket's user) may send a second, with a burst of
    /// twice that; past it, `rate-limited` before anything is decided or recorded. 0: no limit (the default).
    #[arg(long, default_value_t = 0)]
    requests_per_source: u32,
    /// Refusals one source may cost a second (requests refused before they are decided, such as a bad
    /// signature or a stale stamp, or shed by --record-high-water; feeds that do not authenticate; statement
    /// asks for a channel this endpoint does not hold), with a burst of twice that; past it, the source is
    /// answered `rate-limited` until it has room again. 0: no limit.
    #[arg(long, default_value_t = jcp_wire::endpoint::DEFAULT_REFUSALS_PER_SOURCE)]
    refusals_per_source: u32,
    /// The record's high-water mark, bytes: once the stream is this long, requests that are not authenticated
    /// (a signature that does not verify, a stale stamp, a chain no --trust-root anchors) are answered
    /// `unrecorded` and not recorded; authenticated ones go on. Accepts K, M, G suffixes (powers of 1024).
    #[arg(long, value_parser = parse_bytes)]
    record_high_water: Option<u64>,
    /// The record's limit, bytes: once the stream is this long nothing more is decided or admitted
    /// (`unrecorded`). Accepts K, M, G suffixes. Must be above --record-high-water.
    #[arg(long, value_parser = parse_bytes)]
    record_max_bytes: Option<u64>,
    /// Check every caller's signature alone (the one Ed25519 predicate, as batches use), instead of the requests of one core batch together (the default; a batch that fails is checked again one by one). Batches accept nothing outside RFC 8032's group equation; see docs/decisions.md, "§2, §11 callers' signatures in batches".
    #[arg(long)]
    strict_signatures: bool,
    /// A budget channel's grant: this endpoint is one of its points (§4.5); needs --point-key and --peer.
    #[arg(long, requires_all = ["point_key", "peers"])]
    channel_grant: Option<PathBuf>,
    /// This point's key file: it signs the point's channel statements (§4.5).
    #[arg(long, requires = "channel_grant")]
    point_key: Option<PathBuf>,
    /// A peer point's did on the channel (repeatable).
    #[arg(long = "peer", requires = "channel_grant")]
    peers: Vec<String>,
    #[arg(
        long,
        value_name = "HOST:PORT",
        help = "Also serve the endpoint's OpenMetrics exposition at http://HOST:PORT/metrics (decisions by verdict and reason, commit latency, remembered requests, known_through, spend per grant)"
    )]
    metrics: Option<String>,
    /// Print the start and stop summaries as JSON lines.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    backend: BackendFlags,
}

/// What runs behind the gate (`--backend -- CMD ARGS…`).
#[derive(Debug, Args)]
struct BackendFlags {
    /// Run the endpoint behind the gate: the program and its arguments follow `--` (`--backend -- jcp backend demo`). It speaks jcp-backend/1 on its stdin and stdout (docs/backend-protocol.md), is called only after a durable allow, one call at a time; its stderr is this endpoint's. Without it this endpoint only decides: its callers must be the holders that ran and metered the work (§11).
    #[arg(long, requires = "backend_cmd")]
    backend: bool,
    /// The longest one backend call may take, seconds: past it the backend process is killed and the call is lost (unresolved, §4.11); the next call starts a fresh process.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    backend_timeout_s: u64,
    /// The operator's declaration (§5.1) that the backend's process tree hands no work to a process outside it.
    #[arg(long, requires = "backend")]
    backend_self_contained: bool,
    /// The backend program and its arguments (after `--backend --`).
    #[arg(last = true, value_name = "CMD", requires = "backend")]
    backend_cmd: Vec<OsString>,
    /// The most one relayed call may reserve, µJ (§4.9 phase one), whatever its caller states; a call metered above what it reserved is debited whole and its charge records the breach.
    #[arg(long, requires = "backend")]
    call_ceiling_uj: Option<u64>,
}

/// The meter behind the gate: the span ladder (§5.1) over the backend's
/// process tree, probed once; what it will meter with, for the start line.
pub(crate) fn start_meter(config: &mut Config) -> (serde_json::Value, String) {
    let meter = jcp_meter::span::SpanMeter::system(jcp_meter::span::SpanConfig::default());
    let probe = meter.probe();
    config.meter = Some(std::sync::Arc::new(meter));
    let declined: Vec<String> = probe
        .declined
        .iter()
        .map(|d| {
            let fix = d.decline.fix.as_ref().map_or(String::new(), |f| format!(" (fix: {f})"));
            format!("{} {}: {}{fix}", d.source, d.decline.code, d.decline.why)
        })
        .collect();
    let text = format!(
        "jcp serve: each call metered as a span over the backend's process tree: {} (rung {}); declined: {}\n",
        probe.cpu.as_str(),
        probe.rung.as_str(),
        if declined.is_empty() { "none".to_owned() } else { declined.join("; ") }
    );
    (serde_json::to_value(&probe).unwrap_or(serde_json::Value::Null), text)
}

/// Starts the endpoint behind the gate, when `--backend` names one.
fn start_backend(a: &BackendFlags) -> anyhow::Result<Option<std::sync::Arc<ProcessBackend>>> {
    let Some((program, args)) = a.backend_cmd.split_first().filter(|_| a.backend) else { return Ok(None) };
    let opts = ProcessOptions {
        call_timeout: std::time::Duration::from_secs(a.backend_timeout_s),
        self_contained: a.backend_self_contained,
        ..ProcessOptions::default()
    };
    let b = ProcessBackend::spawn(PathBuf::from(program), args.to_vec(), opts).map_err(|e| wire_err(&e))?;
    Ok(Some(std::sync::Arc::new(b)))
}

/// What is behind the gate, for the start line: JSON, and a text line.
fn backend_said(b: Option<&ProcessBackend>) -> (serde_json::Value, String) {
    match b {
        Some(b) => {
            let program = b.program().display().to_string();
            let (pid, sc) = (b.tree_root(), b.self_contained());
            (
                json!({"program": program, "pid": pid, "self_contained": sc}),
                format!(
                    "jcp serve: backend {program} (pid {}; self-contained: {}): called only after a durable allow, one call at a time\n",
                    pid.map_or_else(|| "none".to_owned(), |p| p.to_string()),
                    if sc { "declared" } else { "not declared" }
                ),
            )
        }
        None => (
            serde_json::Value::Null,
            "jcp serve: no backend: a decision service only; its callers must be the holders that ran and metered the work (§11)\n"
                .to_owned(),
        ),
    }
}

/// Serves the endpoint's `/metrics` on `listener`. Anyone may reach it
/// unauthenticated, so it is served on the admission runtime where there
/// is one (issue 34).
fn serve_exposition(
    endpoint: &Endpoint,
    listener: tokio::net::TcpListener,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let ep = endpoint.clone();
    let render: jcp_metrics::Render = std::sync::Arc::new(move || ep.render_metrics());
    let std = listener.into_std().context("taking the /metrics listener off its runtime")?;
    let serve = async move {
        match tokio::net::TcpListener::from_std(std) {
            Ok(l) => jcp_metrics::serve(l, render, std::future::pending()).await,
            Err(e) => eprintln!("jcp serve: the /metrics listener could not be taken on: {e}"),
        }
    };
    Ok(match endpoint.admission() {
        Some(admission) => admission.spawn(serve),
        None => tokio::spawn(serve),
    })
}

/// Binds a `/metrics` listener and says where it is.
pub(crate) async fn bind_metrics(addr: &str) -> anyhow::Result<(tokio::net::TcpListener, String)> {
    let (l, at) = jcp_metrics::bind(addr).await.map_err(|e| coded(e.code(), e.to_string()))?;
    Ok((l, format!("http://{at}{}", jcp_metrics::PATH)))
}

/// How long `jcp call` waits for its decision.
const DECISION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Descriptors kept for everything but connections: the record and its
/// lock, the backend's pipes, the runtime, standard streams, a margin.
const RESERVED_FILES: u64 = 128;

/// Raises the soft limit on open files to the hard one and fits the wire's
/// connection cap under it, with `/metrics`'s own cap
/// ([`jcp_metrics::Limits`]) and [`RESERVED_FILES`] kept aside, so that
/// neither listener can take the descriptors the other (or the record)
/// needs: the soft limit now, and the cap. Where the limit cannot be read,
/// the cap stays as configured.
fn fit_connections(wanted: usize, metrics: bool) -> (Option<u64>, usize) {
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let lim = getrlimit(Resource::Nofile);
        let target = lim.maximum.unwrap_or(1 << 20);
        if lim.current.is_some_and(|c| c < target) {
            if let Err(e) = setrlimit(Resource::Nofile, Rlimit { current: Some(target), maximum: lim.maximum }) {
                eprintln!("jcp serve: the open-file limit could not be raised to {target}: {e}");
            }
        }
        let Some(soft) = getrlimit(Resource::Nofile).current else { return (None, wanted) };
        let metrics_fds = if metrics { jcp_metrics::Limits::default().max_connections as u64 * 2 } else { 0 };
        let room = soft.saturating_sub(RESERVED_FILES + metrics_fds).max(1);
        (Some(soft), wanted.min(usize::try_from(room).unwrap_or(usize::MAX)))
    }
    #[cfg(not(unix))]
    {
        let _ = metrics;
        (None, wanted)
    }
}

pub fn run_serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let steward = read_steward_key(&a.steward_key, a.plaintext_key)?;
    let gate = gate_trusting(&a.trust_roots)?;
    let addrs = a.listen.iter().map(|s| parse_addr(s)).collect::<anyhow::Result<Vec<_>>>()?;
    let mut config = Config::new(&a.stream);
    config.window_s = a.window_s;
    let admin = feeds_of(&a, &mut config)?;
    config.cap = a.cap;
    config.commit_interval = std::time::Duration::from_micros(a.commit_interval_us);
    limits_of(&a, &mut config)?;
    if a.strict_signatures {
        config.caller_signatures = jcp_wire::endpoint::CallerSignatures::Strict;
    }
    let caller_signatures = if a.strict_signatures { "strict" } else { "batched" };
    if let (Some(g), Some(k)) = (&a.channel_grant, &a.point_key) {
        let peers = a.peers.iter().map(|p| parse_did(p)).collect::<anyhow::Result<Vec<_>>>()?;
        config.channels.push(jcp_wire::endpoint::ChannelSetup { grant: read_grant(g)?, point: read_key(k)?, peers });
    }
    let (open_files, max_connections) = fit_connections(config.max_connections, a.metrics.is_some());
    config.max_connections = max_connections;
    let rt = runtime()?;
    rt.block_on(async move {
        let steward_did = steward.did();
        // An exposition address that cannot be served is refused before the record is opened.
        let metrics = match &a.metrics {
            Some(m) => Some(bind_metrics(m).await?),
            None => None,
        };
        let backend = start_backend(&a.backend)?;
        let (backend_json, mut backend_text) = backend_said(backend.as_deref());
        let mut config = config;
        config.call_ceiling_uj = a.backend.call_ceiling_uj;
        let metering = backend.as_ref().map(|_| start_meter(&mut config));
        if let Some((_, t)) = &metering {
            backend_text += t;
        }
        let metering = metering.map(|(j, _)| j);
        let behind = backend.map(|b| b as std::sync::Arc<dyn Backend>);
        let (endpoint, report) = Endpoint::open(config, steward, gate, behind).map_err(|e| wire_err(&e))?;
        let bound = jcp_wire::endpoint::bind_all(&addrs).await.map_err(|e| wire_err(&e))?;
        let admin_bound = match &admin {
            Some(ad) => Some(ad.bind().await.map_err(|e| wire_err(&e))?),
            None => None,
        };
        let admin_at = admin_bound.as_ref().map(|(_, a)| a.to_string());
        let metrics_url = metrics.as_ref().map(|(_, u)| u.clone());
        let listening: Vec<String> = bound.iter().map(|(_, a)| a.to_string()).collect();
        let r = &report.replay;
        emit(
            a.json,
            &json!({"event": "listening", "listen": listening, "metrics": metrics_url, "admin": admin_at,
                    "feed_keys": a.feed_keys,
                    "connections": {"max": max_connections, "open_files": open_files}, "stream": a.stream, "steward": steward_did.to_did_string(),
                    "caller_signatures": caller_signatures, "backend": backend_json, "metering": metering,
                    "replayed": {"verified": r.verified, "allows": r.replayed_allows, "rejected": r.rejected_total(),
                    "unresolved": r.unresolved.len(), "requests_remembered": report.requests_remembered},
                    // §4.11: which decisions, and who held them (the first UNRESOLVED_NAMED).
                    "unresolved_decisions": r.unresolved.iter().take(UNRESOLVED_NAMED).collect::<Vec<_>>()}),
            || {
                let mut s = String::new();
                for l in &listening {
                    let _ = writeln!(s, "jcp serve: listening on {l}");
                }
                if let Some(ad) = &admin_at {
                    let _ = writeln!(s, "jcp serve: admin socket {ad} (owner-only: unsigned feeds taken here)");
                }
                if let Some(u) = &metrics_url {
                    s += "jcp serve: metrics on ";
                    s += u;
                    s += "\n";
                }
                let _ = writeln!(s,
                    "jcp serve: record {} (steward {}): replayed {} receipts ({} allows), {} refused, {} unresolved, {} requests remembered",
                    a.stream.display(),
                    steward_did,
                    r.verified,
                    r.replayed_allows,
                    r.rejected_total(),
                    r.unresolved.len(),
                    report.requests_remembered
                );
                unresolved_lines(&mut s, &r.unresolved, &a.stream);
                let _ = writeln!(s, "jcp serve: callers' signatures checked {caller_signatures}");
                let _ = writeln!(
                    s,
                    "jcp serve: at most {max_connections} connections at once{}",
                    open_files.map_or_else(String::new, |f| format!(" (open-file limit {f})"))
                );
                s += &backend_text;
                s
            },
        )?;
        let exposition = match metrics {
            None => None,
            Some((listener, _)) => Some(serve_exposition(&endpoint, listener)?),
        };
        let listeners = bound.into_iter().map(|(l, a)| (l, a, false)).chain(admin_bound.map(|(l, a)| (l, a, true)));
        let (tasks, unix_paths) = serve_listeners(&endpoint, listeners);
        wait_for_signal().await?;
        for t in &tasks {
            t.abort();
        }
        if let Some(t) = &exposition {
            t.abort();
        }
        endpoint.shutdown().await.map_err(|e| wire_err(&e))?;
        for p in unix_paths {
            jcp_wire::endpoint::remove_socket(&p);
        }
        let st = endpoint.stats();
        emit(a.json, &json!({"event": "stopped", "stats": st}), || {
            format!(
                "jcp serve: stopped; record flushed and released ({} decided, {} allowed, {} repeats, {} stale, {} impersonated, {} unrecorded, of which {} shed by the record's limits; {} rate-limited; {} allows await their outcome)\n",
                st.decided, st.allowed, st.repeats, st.stale, st.impersonated, st.unrecorded, st.shed, st.rate_limited, st.unresolved
            )
        })?;
        Ok(ExitCode::from(CLEAN))
    })
}

#[cfg(unix)]
pub(crate) async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

#[cfg(not(unix))]
pub(crate) async fn wait_for_signal() -> anyhow::Result<()> {
    tokio::signal::ctrl_c().await.context("waiting for ctrl-c")
}

// ------------------------------------------------------------------ call

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The endpoint: tcp:HOST:PORT or unix:PATH.
    #[arg(long)]
    connect: String,
    /// The caller's key file (the holder that metered the action).
    #[arg(long, required_unless_present = "request")]
    key: Option<PathBuf>,
    /// The chain, root first.
    #[arg(long = "chain", num_args = 1.., required_unless_present = "request")]
    chain: Vec<PathBuf>,
    /// A frame file (canonical CBOR). Otherwise the frame is built from the flags below.
    #[arg(long)]
    frame: Option<PathBuf>,
    #[command(flatten)]
    f: FrameFlags,
    /// The metered cost in µJ.
    #[arg(long, default_value_t = 0)]
    cost_uj: u64,
    /// HwShunt | ModelBased | Estimator.
    #[allow(clippy::doc_markdown, reason = "clap help text, shown as written: not markdown")]
    #[arg(long, default_value = "Estimator")]
    provenance: String,
    /// Mark the cost Partial (§5.2).
    #[arg(long)]
    partial: bool,
    /// The measured figure in µJ the cost rests on (§5): required with HwShunt, refused with Estimator, at most --cost-uj.
    #[allow(clippy::doc_markdown, reason = "clap help text, shown as written: not markdown")]
    #[arg(long)]
    measured_uj: Option<u64>,
    /// A money cost CURRENCY:MINOR (§4.8).
    #[arg(long)]
    money: Option<String>,
    /// The argument's label: bottom | top | INTEGRITY;ORIGINS;READERS. Absent = not computed.
    #[arg(long)]
    flow: Option<String>,
    /// A file whose bytes are the argument forwarded behind the gate; its content id becomes the payload hash.
    #[arg(long)]
    args_file: Option<PathBuf>,
    /// The freshness stamp (unix seconds). Default: now.
    #[arg(long)]
    now: Option<u64>,
    /// Also write the signed request's canonical bytes here (to present it again with --request).
    #[arg(long)]
    save_request: Option<PathBuf>,
    /// Send this saved request (canonical bytes) instead of building one.
    #[arg(long, conflicts_with_all = ["key", "chain", "frame"])]
    request: Option<PathBuf>,
    /// Write the sealed receipt's bytes here.
    #[arg(long)]
    receipt_out: Option<PathBuf>,
    /// After an allow, read and print the reply of the endpoint behind the gate (an endpoint started with --backend sends one after each allowed response).
    #[arg(long)]
    reply: bool,
    /// How long --reply waits for that reply, seconds.
    #[arg(long, default_value_t = 60, requires = "reply")]
    reply_timeout_s: u64,
    #[arg(long)]
    json: bool,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn build_request(a: &CallArgs) -> anyhow::Result<WireRequest> {
    if let Some(p) = &a.request {
        let bytes = read_bytes(p)?;
        let v = jcp_wire::codec::decode_body(&bytes).map_err(|e| coded(e.code(), format!("{}: {e}", p.display())))?;
        return WireRequest::from_value(&v).map_err(|e| coded(e.code(), format!("{}: {e}", p.display())));
    }
    let key_path = a.key.as_ref().ok_or_else(|| coded("missing-key", "--key is required to sign a new request"))?;
    let caller = read_key(key_path)?;
    let chain = a.chain.iter().map(|p| read_grant(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let leaf = chain.last().ok_or_else(|| anyhow!("--chain needs at least one grant"))?;
    let args = a.args_file.as_ref().map(|p| read_bytes(p)).transpose()?;
    let mut frame = match &a.frame {
        Some(p) => Frame::from_bytes(&read_bytes(p)?).map_err(|e| core_err(p, &e))?,
        None => build_frame(leaf, &a.f)?,
    };
    if let Some(b) = &args {
        frame.payload_hash = ContentId::of_bytes(b);
    }
    let provenance = parse_provenance(&a.provenance)?;
    let money = a.money.as_deref().map(parse_money).transpose()?;
    let body = RequestBody {
        frame,
        chain,
        cost: Energy {
            uj: a.cost_uj,
            provenance,
            coverage: if a.partial { Coverage::Partial } else { Coverage::Whole },
            measured: a.measured_uj,
        },
        money,
        label: a.flow.as_deref().map(parse_label).transpose()?,
        args,
        continues: None,
        now: a.now.unwrap_or_else(unix_now),
    };
    body.cost.check_grade().map_err(|e| crate::out::jcp_err(&e, e.to_string()))?;
    Ok(body.sign(&caller))
}

fn response_json(r: &WireResponse) -> serde_json::Value {
    let receipt = jcp_receipt::verify_receipt(&r.receipt, None);
    json!({
        "verdict": match r.decision.verdict { Verdict::Allow => "allow", Verdict::Deny(_) => "deny" },
        "reason": r.decision.reason().map(jcp::decision::Reason::as_str),
        "debited_uj": r.decision.debited_uj,
        "budget_uj": r.decision.budget_uj,
        "budget_remaining_uj": r.decision.budget_remaining_uj,
        "receipt": {
            "id": r.receipt_id(),
            "bytes": r.receipt.len(),
            "signature": if receipt.is_ok() { "valid" } else { "INVALID" },
            "steward": receipt.as_ref().ok().map(|v| v.core.steward.to_did_string()),
            "known_through": receipt.as_ref().ok().and_then(|v| v.position.known_through),
        },
    })
}

/// The relayed reply (§6.1 item 3): its output is data, labelled; in
/// relay mode the figure the endpoint metered and the charge receipt that
/// debited it (§11), read from the receipt itself.
fn reply_json(r: &jcp_wire::message::WireReply) -> serde_json::Value {
    let charge = r.charge.as_deref().map(|b| match jcp_receipt::verify_receipt(b, None) {
        Ok(v) => json!({
            "id": jcp::cbor::ContentId::of_bytes(b).to_hex(),
            "verified": true,
            "cost_uj": v.core.cost_uj,
            "provenance": v.core.provenance.as_str(),
            "coverage": v.core.coverage.as_str(),
            "measured_uj": v.core.measured,
            "breach": v.core.breach.map(jcp::decision::Reason::as_str),
            "budget_remaining_uj": v.core.budget_remaining_uj,
        }),
        Err(e) => json!({"verified": false, "code": e.code(), "message": e.to_string()}),
    });
    json!({
        "state": r.state.as_str(),
        "handle": r.handle,
        "output": String::from_utf8_lossy(&r.output),
        "output_hex": hex::encode(&r.output),
        "receipt": r.receipt.to_hex(),
        "closing": r.closing.map(|c| c.to_hex()),
        "metered": r.metered,
        "charge": charge,
        "charge_refused": r.charge_refused,
    })
}

/// The reply in words: its state and output, then what was metered and
/// charged (or why not).
fn reply_text(r: &jcp_wire::message::WireReply, j: &serde_json::Value) -> String {
    let mut s = String::new();
    let handle = r.handle.as_ref().map_or(String::new(), |h| format!(" (handle {h})"));
    let _ = writeln!(s, "reply {}{handle}: {}", r.state.as_str(), String::from_utf8_lossy(&r.output));
    if let Some(m) = &r.metered {
        let gaps: Vec<&str> = m.gaps.iter().map(|g| g.code.as_str()).collect();
        let _ = writeln!(
            s,
            "metered: {} ({}, {}; rung {}; {} process(es), {} ms CPU){}",
            jcp::energy::format_uj(m.energy.uj),
            m.energy.provenance,
            m.energy.coverage,
            m.rung,
            m.members,
            m.cpu_ns / 1_000_000,
            if gaps.is_empty() { String::new() } else { format!("; gaps: {}", gaps.join(", ")) }
        );
    }
    match (&j["charge"], &r.charge_refused, r.state) {
        (c, _, _) if c.is_object() => {
            let breach = c["breach"].as_str().map_or(String::new(), |b| format!("; breach: {b}"));
            let _ = writeln!(
                s,
                "charged: {} µJ, receipt {}{breach}",
                c["cost_uj"],
                c["id"].as_str().unwrap_or("(not verified)")
            );
        }
        (_, Some(why), _) => {
            let _ = writeln!(s, "not charged: {why} (the decision stays unresolved)");
        }
        (_, None, jcp_wire::message::ReplyState::Lost) => {
            let _ = writeln!(s, "not charged: the call was lost; the decision stays unresolved (§4.11)");
        }
        _ => {}
    }
    s
}

pub fn run_call(a: &CallArgs) -> anyhow::Result<ExitCode> {
    let addr = parse_addr(&a.connect)?;
    let req = build_request(a)?;
    if let Some(p) = &a.save_request {
        std::fs::write(p, req.to_bytes()).with_context(|| format!("writing {}", p.display()))?;
    }
    let rt = runtime()?;
    let wait = std::time::Duration::from_secs(a.reply_timeout_s);
    let called = rt.block_on(async {
        let mut c = jcp_wire::client::Client::connect(&addr).await?;
        // The decision is answered once it is durable: a minute is far past any sync.
        let resp = tokio::time::timeout(DECISION_TIMEOUT, c.call(&req))
            .await
            .map_err(|_| jcp_wire::WireError::Timeout { secs: DECISION_TIMEOUT.as_secs() })??;
        if !(a.reply && resp.decision.is_allow()) {
            return Ok((resp, None));
        }
        let reply = tokio::time::timeout(wait, c.reply())
            .await
            .map_err(|_| jcp_wire::WireError::Timeout { secs: a.reply_timeout_s })??;
        Ok::<_, jcp_wire::WireError>((resp, Some(reply)))
    });
    let (resp, reply) = called.map_err(|e| wire_err(&e))?;
    if let Some(p) = &a.receipt_out {
        std::fs::write(p, &resp.receipt).with_context(|| format!("writing {}", p.display()))?;
    }
    let mut j = response_json(&resp);
    if let Some(r) = &reply {
        j["reply"] = reply_json(r);
    }
    emit(a.json, &j, || {
        let d = &resp.decision;
        let mut s = match d.verdict {
            Verdict::Allow => format!(
                "allow: debited {} µJ; {} µJ of {} µJ remain\n",
                d.debited_uj, d.budget_remaining_uj, d.budget_uj
            ),
            Verdict::Deny(r) => {
                format!("deny ({r}): nothing debited; {} µJ of {} µJ remain\n", d.budget_remaining_uj, d.budget_uj)
            }
        };
        let _ = writeln!(
            s,
            "receipt {} ({} bytes, signature {}, steward {}, known_through {})",
            j["receipt"]["id"].as_str().unwrap_or_default(),
            resp.receipt.len(),
            j["receipt"]["signature"].as_str().unwrap_or_default(),
            j["receipt"]["steward"].as_str().unwrap_or("?"),
            j["receipt"]["known_through"].as_u64().map_or("not stated".to_owned(), |k| k.to_string()),
        );
        if let Some(r) = &reply {
            s += &reply_text(r, &j["reply"]);
        }
        s
    })?;
    Ok(ExitCode::from(if resp.decision.is_allow() { CLEAN } else { FINDINGS }))
}

// ------------------------------------------------------------------ feed

#[derive(Debug, Args)]
pub struct FeedArgs {
    #[command(subcommand)]
    cmd: FeedCmd,
}

#[derive(Debug, Subcommand)]
enum FeedCmd {
    /// Sends a signed revocation to an endpoint: recorded, then applied (§4.3, §11).
    Revoke {
        /// The endpoint: tcp:HOST:PORT or unix:PATH.
        #[arg(long)]
        connect: String,
        /// The signed revocation (`jcp grant revoke` writes one).
        #[arg(long)]
        revocation: PathBuf,
        /// The grant it revokes.
        #[arg(long)]
        grant: PathBuf,
        /// The revocation feed's marker at which it was issued (monotonic, §4.3).
        #[arg(long)]
        marker: u64,
        /// The feed key file to sign it with (its signature covers the marker): needed on any
        /// connection but the endpoint's admin socket (§4.3).
        #[arg(long)]
        key: Option<PathBuf>,
        /// The issuer's revocation log to add it to (created with its header if absent): the same
        /// signature the endpoint gets, for `jcp audit --revocation-log` (§4.3). Needs --key. Written
        /// (and synced) before it is sent: a revocation sent is always logged.
        #[arg(long, value_name = "LOG", requires = "key")]
        log: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Sends a signed checkpoint + amendment and the continuation grant: the steered grant is superseded (§4.7).
    Amend {
        /// The endpoint: tcp:HOST:PORT or unix:PATH.
        #[arg(long)]
        connect: String,
        /// The run file (`jcp run amend` wrote the amendment into it): its latest amendment is sent,
        /// with the checkpoint it steers at, the steered grant and the continuation.
        #[arg(long, conflicts_with_all = ["steered", "checkpoint", "amendment", "continuation"])]
        run: Option<PathBuf>,
        /// The steered grant (instead of --run).
        #[arg(long, requires_all = ["checkpoint", "amendment", "continuation"])]
        steered: Option<PathBuf>,
        /// The agent's signed checkpoint (instead of --run).
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// The issuer's signed amendment (instead of --run).
        #[arg(long)]
        amendment: Option<PathBuf>,
        /// The continuation grant (instead of --run).
        #[arg(long)]
        continuation: Option<PathBuf>,
        /// The revocation feed's marker at which the amendment was issued (§4.3, §4.7: a soft revoke
        /// travels the revocation feed). Without it the notice records no marker, and the audit calls
        /// other points' spend on the steered grant unverifiable rather than explicable.
        #[arg(long)]
        marker: Option<u64>,
        /// The feed key file to sign it with (its signature covers the marker): needed on any
        /// connection but the endpoint's admin socket (§4.3).
        #[arg(long)]
        key: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Reports the outcome of an allowed action as its holder: recorded, and the decision is no longer unresolved (§4.11).
    Outcome {
        /// The endpoint: tcp:HOST:PORT or unix:PATH.
        #[arg(long)]
        connect: String,
        /// The holder's key file (the allowed request's caller).
        #[arg(long)]
        key: PathBuf,
        /// The allow receipt's id (as `jcp call` prints it).
        #[arg(long)]
        receipt: String,
        /// completed | failed.
        #[arg(long)]
        status: String,
        #[arg(long)]
        json: bool,
    },
    /// Sends a peer point's signed budget-channel statement: recorded, then its settled spend counts (§4.5).
    Statement {
        /// The endpoint: tcp:HOST:PORT or unix:PATH.
        #[arg(long)]
        connect: String,
        /// The signed statement (`jcp channel statement` or `jcp feed ask-statement` writes one).
        #[arg(long)]
        statement: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Asks an endpoint for its signed statement of its cumulative allowed spend on a channel grant (§4.5).
    AskStatement {
        /// The endpoint: tcp:HOST:PORT or unix:PATH.
        #[arg(long)]
        connect: String,
        /// The channel's grant.
        #[arg(long)]
        grant: PathBuf,
        /// Where to write the signed statement.
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

pub fn run_feed(a: FeedArgs) -> anyhow::Result<ExitCode> {
    let (connect, feed, json) = match a.cmd {
        FeedCmd::Revoke { connect, revocation, grant, marker, key, log, json } => {
            let rev = SignedRevocation::from_bytes(&read_bytes(&revocation)?).map_err(|e| core_err(&revocation, &e))?;
            let grant = read_grant(&grant)?;
            if let (Some(log), Some(k)) = (&log, &key) {
                log_revocation(log, &rev, &grant, marker, &read_key(k)?)?;
            }
            let feed = Feed::Revocation { revocation: rev, grant, marker };
            (connect, sign_feed(feed, key.as_deref())?, json)
        }
        FeedCmd::Amend { connect, run, steered, checkpoint, amendment, continuation, marker, key, json } => {
            let feed = match (run, steered, checkpoint, amendment, continuation) {
                (Some(run), ..) => latest_amendment(&run, marker)?,
                (None, Some(steered), Some(checkpoint), Some(amendment), Some(continuation)) => {
                    let cp = SignedCheckpoint::from_bytes(&read_bytes(&checkpoint)?)
                        .map_err(|e| core_err(&checkpoint, &e))?;
                    let am =
                        SignedAmendment::from_bytes(&read_bytes(&amendment)?).map_err(|e| core_err(&amendment, &e))?;
                    Feed::Amendment {
                        steered: read_grant(&steered)?,
                        checkpoint: cp,
                        amendment: am,
                        continuation: read_grant(&continuation)?,
                        marker,
                    }
                }
                _ => {
                    return Err(coded(
                        "missing-argument",
                        "give --run RUN.jcprun, or all of --steered, --checkpoint, --amendment and --continuation",
                    ))
                }
            };
            (connect, sign_feed(feed, key.as_deref())?, json)
        }
        FeedCmd::Outcome { connect, key, receipt, status, json } => {
            let holder = read_key(&key)?;
            let receipt = ContentId::parse(&receipt).ok_or_else(|| {
                coded("invalid-content-id", format!("--receipt {receipt:?} is not 64 lowercase hex digits"))
            })?;
            let status = match status.as_str() {
                "completed" => jcp_receipt::record::OutcomeStatus::Completed,
                "failed" => jcp_receipt::record::OutcomeStatus::Failed,
                other => return Err(coded("invalid-status", format!("--status {other:?} is not completed|failed"))),
            };
            (connect, Feed::Outcome(jcp_wire::message::SignedOutcome::sign(receipt, status, &holder)), json)
        }
        FeedCmd::Statement { connect, statement, json } => {
            let st = jcp::channel::SignedStatement::from_bytes(&read_bytes(&statement)?)
                .map_err(|e| core_err(&statement, &e))?;
            (connect, Feed::Statement(st), json)
        }
        FeedCmd::AskStatement { connect, grant, out, json } => return ask_statement(&connect, &grant, &out, json),
    };
    let addr = parse_addr(&connect)?;
    let rt = runtime()?;
    let ans = rt
        .block_on(async {
            let mut c = jcp_wire::client::Client::connect(&addr).await?;
            c.feed(&feed).await
        })
        .map_err(|e| wire_err(&e))?;
    emit(json, &ans, || {
        format!(
            "{}: {} ({}); known_through {}\n",
            if ans.admitted { "admitted" } else { "refused" },
            ans.message,
            ans.code,
            ans.known_through.map_or("not stated".to_owned(), |k| k.to_string())
        )
    })?;
    Ok(ExitCode::from(if ans.admitted { CLEAN } else { FINDINGS }))
}

/// §4.3: the feed keys, the admin socket (a Unix address) and the marker a
/// `jcp serve` states from the start: with a feed (an admin socket or a
/// feed key), 0 unless told; with none, none.
fn feeds_of(a: &ServeArgs, config: &mut Config) -> anyhow::Result<Option<jcp_wire::endpoint::Address>> {
    config.feed_keys = a.feed_keys.iter().map(|k| parse_did(k)).collect::<anyhow::Result<Vec<_>>>()?;
    let admin = a.admin.as_deref().map(parse_addr).transpose()?;
    if let Some(ad) = &admin {
        if jcp_wire::endpoint::unix_path(ad).is_none() {
            return Err(coded("bad-address", format!("--admin {ad}: the admin socket is a Unix socket (unix:PATH)")));
        }
    }
    let fed = admin.is_some() || !config.feed_keys.is_empty();
    config.known_through = a.known_through.or(fed.then_some(0));
    Ok(admin)
}

type Serving = (Vec<tokio::task::JoinHandle<Result<(), jcp_wire::WireError>>>, Vec<std::path::PathBuf>);

/// Serves each bound listener on `endpoint` (as the admin socket where
/// marked, §4.3): the tasks, and the Unix socket paths to remove at stop.
pub(super) fn serve_listeners(
    endpoint: &jcp_wire::endpoint::Endpoint,
    listeners: impl IntoIterator<Item = (jcp_wire::endpoint::Listener, jcp_wire::endpoint::Address, bool)>,
) -> Serving {
    let mut tasks = Vec::new();
    let mut unix_paths = Vec::new();
    for (listener, addr, admin) in listeners {
        if let Some(p) = jcp_wire::endpoint::unix_path(&addr) {
            unix_paths.push(p.to_path_buf());
        }
        let ep = endpoint.clone();
        tasks.push(tokio::spawn(async move {
            if admin {
                ep.serve_admin(listener).await
            } else {
                ep.serve(listener).await
            }
        }));
    }
    (tasks, unix_paths)
}

/// Adds a revocation at `marker` to the issuer's log at `path` (§4.3):
/// the log is read first (a log that does not read, or whose last marker
/// is past this one, is refused and left as it is), then the entry is
/// appended and synced.
fn log_revocation(
    path: &std::path::Path,
    rev: &SignedRevocation,
    grant: &jcp::grant::SignedGrant,
    marker: u64,
    key: &jcp::identity::Keypair,
) -> anyhow::Result<()> {
    use jcp::revocation_log::{header_line, Entry, IssuerLog};
    use std::io::Write as _;
    let fresh = !path.exists();
    if !fresh {
        let bytes = std::fs::read(path).map_err(|e| coded("io", format!("reading {}: {e}", path.display())))?;
        let log =
            IssuerLog::read(&bytes, &[key.did()]).map_err(|e| coded(e.code(), format!("{}: {e}", path.display())))?;
        if let Some(last) = log.entries().last().filter(|l| l.marker > marker) {
            return Err(coded(
                "revocation-log-invalid",
                format!(
                    "{}: its last marker is {}, after which {marker} would go back (§4.3)",
                    path.display(),
                    last.marker
                ),
            ));
        }
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            return Err(coded("revocation-log-invalid", format!("{}: its last line is not whole", path.display())));
        }
    }
    let entry = Entry::sign(rev.clone(), grant.clone(), marker, key);
    let mut text = String::new();
    if fresh {
        text.push_str(&header_line());
        text.push('\n');
    }
    text.push_str(&entry.to_line());
    text.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| coded("io", format!("opening {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| coded("io", format!("writing {}: {e}", path.display())))
}

/// A feed message signed with the feed key in `key` (§4.3), or as it is.
fn sign_feed(feed: Feed, key: Option<&std::path::Path>) -> anyhow::Result<Feed> {
    Ok(match key {
        Some(k) => feed.signed_by(&read_key(k)?),
        None => feed,
    })
}

/// How many unresolved decisions `jcp serve` names at start (all are counted).
const UNRESOLVED_NAMED: usize = 32;

/// §4.11: each unresolved decision replay found, with the party that held
/// it and what it would settle, so the operator can ask the holder; the
/// first [`UNRESOLVED_NAMED`], then how many more and where all are listed.
fn unresolved_lines(s: &mut String, unresolved: &[jcp_receipt::runtime::Unresolved], stream: &std::path::Path) {
    for u in unresolved.iter().take(UNRESOLVED_NAMED) {
        let _ = writeln!(
            s,
            "jcp serve: unresolved: receipt {} at byte {}: {:?} on grant {}, held by {} ({} stays debited); only the holder knows whether it took effect: `jcp feed outcome` as the holder, or `jcp stream settle`",
            u.receipt,
            u.offset,
            u.action,
            u.grant_id,
            u.holder,
            jcp::energy::format_uj(u.cost_uj)
        );
    }
    if unresolved.len() > UNRESOLVED_NAMED {
        let _ = writeln!(
            s,
            "jcp serve: … and {} more unresolved; `jcp audit {}` lists every one",
            unresolved.len() - UNRESOLVED_NAMED,
            stream.display()
        );
    }
}

/// The latest amendment of a run file with what it steers: the checkpoint
/// it names, the grant that checkpoint was under, and its continuation.
fn latest_amendment(path: &std::path::Path, marker: Option<u64>) -> anyhow::Result<Feed> {
    use jcp::steering::{Record, Run};
    let run = Run::read(path).map_err(|e| core_err(path, &e))?;
    let records = run.records();
    let missing = |what: String| coded("run-incomplete", format!("{}: {what}", path.display()));
    let am = records
        .iter()
        .rev()
        .find_map(|r| if let Record::Amendment(a) = r { Some(a.clone()) } else { None })
        .ok_or_else(|| missing("the run has no amendment yet".into()))?;
    let a = am.amendment();
    let cp = records
        .iter()
        .find_map(|r| match r {
            Record::Checkpoint(c) if c.id() == a.checkpoint => Some(c.clone()),
            _ => None,
        })
        .ok_or_else(|| missing(format!("the checkpoint {} the amendment steers at is not in the run", a.checkpoint)))?;
    let grant = |id: ContentId| {
        records.iter().find_map(|r| match r {
            Record::Grant(g) if g.id() == id => Some(g.clone()),
            _ => None,
        })
    };
    let steered =
        grant(a.grant_id).ok_or_else(|| missing(format!("the steered grant {} is not in the run", a.grant_id)))?;
    let continuation = grant(a.continuation)
        .ok_or_else(|| missing(format!("the continuation {} is not in the run", a.continuation)))?;
    Ok(Feed::Amendment { steered, checkpoint: cp, amendment: am, continuation, marker })
}

/// `jcp feed ask-statement`: the endpoint's signed statement on a channel
/// grant, written to `out` (exit 1 when the endpoint refuses).
fn ask_statement(
    connect: &str,
    grant: &std::path::Path,
    out: &std::path::Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let g = read_grant(grant)?;
    let addr = parse_addr(connect)?;
    let rt = runtime()?;
    let got = rt.block_on(async {
        let mut c = jcp_wire::client::Client::connect(&addr).await?;
        c.ask_statement(&g.id()).await
    });
    let st = match got {
        Ok(st) => st,
        Err(jcp_wire::WireError::Refused { code, message }) => {
            emit(json, &json!({"admitted": false, "code": code, "message": message}), || {
                format!("refused: {message} ({code})\n")
            })?;
            return Ok(ExitCode::from(FINDINGS));
        }
        Err(e) => return Err(wire_err(&e)),
    };
    super::core::write_object(out, &st.to_bytes())?;
    let c = st.statement();
    emit(json, &json!({"id": st.id(), "statement": c, "out": out}), || {
        format!(
            "statement {}: {} spent {} µJ on grant {} at seq {}; written to {}\n",
            st.id(),
            c.point,
            c.spent_uj,
            c.grant_id,
            c.seq,
            out.display()
        )
    })?;
    Ok(ExitCode::from(CLEAN))
}

/// Issue 34: the connection caps and timeouts, the frame bodies in flight,
/// the per-source rates, and the record's high-water mark and limit.
fn limits_of(a: &ServeArgs, config: &mut Config) -> anyhow::Result<()> {
    config.max_connections = a.max_connections.max(1);
    config.max_per_peer = a.max_per_peer.max(1);
    config.admission_threads = a.admission_threads;
    config.first_frame_timeout = std::time::Duration::from_secs(a.first_frame_timeout_s.max(1));
    config.idle_timeout = std::time::Duration::from_secs(a.idle_timeout_s.max(1));
    config.body_bytes_in_flight = a.body_bytes_in_flight.max(1);
    config.requests_per_source =
        (a.requests_per_source > 0).then(|| jcp_wire::endpoint::limits::Rate::per_second(a.requests_per_source));
    config.refusals_per_source =
        (a.refusals_per_source > 0).then(|| jcp_wire::endpoint::limits::Rate::per_second(a.refusals_per_source));
    if let (Some(hw), Some(max)) = (a.record_high_water, a.record_max_bytes) {
        if hw >= max {
            return Err(coded(
                "bad-limits",
                format!("--record-high-water ({hw} bytes) must be below --record-max-bytes ({max} bytes)"),
            ));
        }
    }
    config.record_high_water = a.record_high_water;
    config.record_max = a.record_max_bytes;
    Ok(())
}

/// A byte count: digits with an optional K, M or G (powers of 1024).
fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 10),
        Some((i, 'M')) => (&t[..i], 20),
        Some((i, 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: u64 = digits.trim().parse().map_err(|_| format!("{s:?} is not a byte count (digits, then K, M or G)"))?;
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("{s:?} is more bytes than this machine counts"))
}
