//! The enforcement endpoint (§11 over TCP and Unix sockets, §4.11, §6.1).
//!
//! One **core** thread owns the [`DurableGate`] (the single writer of the
//! record) and decides requests in arrival order. It takes requests in
//! batches: each is decided and appended, then one sync makes the batch
//! durable (group commit), and only then do the batch's responses leave
//! and the actions behind its allows run. The sync runs on a second
//! thread, so the core decides the next batch while the last one is made
//! durable; batches queued during a sync share the next one. Connection
//! tasks read and decode frames, take each request's id and write
//! responses, so a client that misbehaves holds nothing but its own task.
//! The core checks the callers' signatures of a batch together before it
//! decides any of them ([`CallerSignatures`]; a batch that fails is checked
//! again one by one).
//!
//! "Decided once": every decided request is remembered by its id (the
//! content id of what the caller signed) with the stream offset of its
//! receipt while its stamp is inside the window. A repeat re-reads that
//! receipt and answers the same bytes; nothing is decided, debited or
//! recorded again. Each decided request is recorded as a
//! `Request` record immediately followed by its receipt, so on
//! restart the replay of the record rebuilds the table (and the spend, and
//! the revocations, through [`DurableGate`]'s own replay) before anything new
//! is decided.
//!
//! | module | spec |
//! |---|---|
//! | `config` | how an endpoint runs: window, cap, marker (§4.3), channels (§4.5) |
//! | `address` | where it listens: `tcp:HOST:PORT`, `unix:PATH` (§11 byte streams) |
//! | `serve` | §11 framing and serving: frames, messages, caller authentication |
//! | `core_thread` | the record's single writer, deciding in arrival order (§4.11) |
//! | `decision` | §11 deciding one request: window, signature, record, decide |
//! | `decided_once` | §11 "a request is decided once": the memory and its repeats |
//! | `recording` | §4.11 request records and the restart replay |
//! | `group_commit` | §4.11 the record precedes every response: batched syncs |
//! | `admission` | the feeds: revocations (§4.3), statements (§4.5), amendments (§4.7), outcomes (§4.11) |
//! | `continuation` | §6.1 handles bound to grants, later exchanges, closing records |
//! | `relay` | §11/§6.1 the endpoint behind the gate, invoked only on a durable allow |
//! | `stats` | the operator's counters |

mod address;
mod admission;
mod charge;
mod config;
mod continuation;
mod core_thread;
mod decided_once;
mod decision;
mod group_commit;
pub mod limits;
mod recording;
mod relay;
mod serve;
mod stats;

use std::collections::HashMap;
use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jcp::cbor::ContentId;
use jcp::channel::{Ledger, SignedStatement};
use jcp::decision::Gate;
use jcp::identity::Keypair;
use jcp_receipt::runtime::DurableGate;
use jcp_receipt::writer::Durability;
use tokio::sync::{mpsc, oneshot};

pub use address::{bind_all, remove_socket, unix_path, Address, Listener};
pub use config::{system_clock, CallerSignatures, ChannelSetup, Clock, Config, CoreMode, DEFAULT_REFUSALS_PER_SOURCE};
pub use decided_once::{remembered_table_bytes, REMEMBERED_ENTRY_BYTES, REMEMBERED_INDEX_BYTES};
pub use recording::{read_request_record, OpenReport};
pub use stats::{Stats, StatsSnapshot};

use crate::backend::Backend;
use crate::error::WireError;
use crate::message::{Feed, FeedAnswer, WireRequest};
use crate::metering::CallMeter;
use crate::metrics::WireMetrics;
use core_thread::{Core, CoreLink, Job, Signed};
use decided_once::identify;
use group_commit::Syncer;
use recording::Replayed;
use serve::{serve_conn, serve_conn_as, Conn, Stage};

/// A running endpoint's shared part: what connection tasks hold.
struct Shared {
    /// Where jobs go to the core.
    tx: CoreLink,
    stats: Arc<Stats>,
    metrics: Arc<WireMetrics>,
    cap: usize,
    frame_timeout: Duration,
    first_frame_timeout: Duration,
    idle_timeout: Duration,
    backend: Option<Arc<dyn Backend>>,
    stopping: AtomicBool,
    conns: Arc<tokio::sync::Semaphore>,
    /// Connections held by each TCP peer address, and the most one may hold.
    peers: Arc<Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
    max_per_peer: usize,
    max_connections: usize,
    caller_signatures: CallerSignatures,
    /// §11 relay mode: what each relayed call is metered with.
    meter: Arc<dyn CallMeter>,
    /// §11 relay mode: one call at a time behind the gate (each call's
    /// span holds the whole tree).
    relay_lock: Arc<tokio::sync::Mutex<()>>,
    /// §4.3: the configured feed keys.
    feed_keys: Vec<jcp::identity::Did>,
    /// Frame-body bytes being read, over every connection (a permit per byte).
    bodies: Arc<tokio::sync::Semaphore>,
    bodies_max: usize,
    /// The share of `bodies` that connections not yet admitted may hold
    /// together ([`serve::BodyBudget`]), and its size: half, or one
    /// largest frame where half the budget is less.
    bodies_unadmitted: Arc<tokio::sync::Semaphore>,
    bodies_unadmitted_max: usize,
    /// Issue 34: requests a source may send, and refusals it may cost, a second.
    requests: Option<limits::Limiter>,
    refusals: Option<limits::Limiter>,
}

impl Shared {
    /// The connection cap.
    fn conns_max(&self) -> usize {
        self.max_connections
    }

    /// The body budget a connection at `stage` draws on: the whole, and
    /// for one not yet admitted the unadmitted share as well. (Without
    /// admission no connection is told from another: the whole only.)
    fn body_budget(&self, stage: serve::Stage) -> serve::BodyBudget<'_> {
        serve::BodyBudget {
            all: (&self.bodies, self.bodies_max),
            unadmitted: (stage == serve::Stage::Admission)
                .then_some((&self.bodies_unadmitted, self.bodies_unadmitted_max)),
        }
    }

    /// A request's identity, and its caller's signature checked here
    /// ([`CallerSignatures::Strict`]) or handed to the core to check with
    /// its batch.
    fn authenticate(&self, req: &WireRequest, bytes: &[u8]) -> (ContentId, Signed) {
        let (id, signed) = identify(req, bytes);
        let signed = match self.caller_signatures {
            CallerSignatures::Strict => Signed::Checked(core_thread::verify_alone(req, &signed, &self.metrics)),
            CallerSignatures::Batched => Signed::Unchecked(signed),
        };
        (id, signed)
    }
}

/// An enforcement endpoint: open it on its record, then serve listeners.
#[derive(Clone)]
pub struct Endpoint {
    shared: Arc<Shared>,
    core: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
    /// Where connections are served until authenticated, if anywhere.
    admission: Arc<Admission>,
}

/// The runtime that accepts connections and serves each until its first
/// authenticated request is answered ([`Config::admission_threads`]):
/// its threads run at a lower priority than the endpoint's own, so what
/// unauthenticated traffic costs is paid last. Shut down (without waiting)
/// with the endpoint's last handle.
struct Admission(Option<tokio::runtime::Runtime>);

impl Admission {
    /// A runtime of `threads` workers, each at `nice` 19; `threads` 0: none.
    fn start(threads: usize) -> Result<Self, WireError> {
        if threads == 0 {
            return Ok(Self(None));
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("jcp-admission")
            .on_thread_start(lower_priority)
            .enable_all()
            .build()
            .map_err(|e| WireError::io("starting the admission runtime", e))?;
        Ok(Self(Some(rt)))
    }

    fn handle(&self) -> Option<&tokio::runtime::Handle> {
        self.0.as_ref().map(tokio::runtime::Runtime::handle)
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Lowers the calling thread's scheduling priority (`nice` 19, the lowest): a thread
/// that serves unauthenticated connections yields to the endpoint's own.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // Linux threads have their own niceness: this thread's id names it.
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(tid), 19) {
            tracing::debug!("the admission thread's priority could not be lowered: {e}");
        }
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("stats", &self.stats()).finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Opens the record as its only writer (a held stream fails to start:
    /// §4.11), replays it through `gate` (spend, revocations, amendments)
    /// and rebuilds the memory of requests whose stamp is still inside the
    /// window, then starts the core. Nothing is decided before this returns.
    pub fn open(
        config: Config,
        steward: Keypair,
        gate: Gate,
        backend: Option<Arc<dyn Backend>>,
    ) -> Result<(Self, OpenReport), WireError> {
        if config.cap > crate::codec::MAX_ENDPOINT_CAP {
            return Err(WireError::CapAboveRecord { cap: config.cap, max: crate::codec::MAX_ENDPOINT_CAP });
        }
        let now = (config.clock)();
        // Channels are configuration, before replay re-admits their statements.
        let (gate, point_keys) = join_channels(gate, &config.channels)?;
        let mut replayed = Replayed::new(now, config.window_s);
        let (mut gate, replay) = DurableGate::open_with_records(
            &config.stream,
            steward,
            gate,
            Durability::GroupCommit,
            &mut |offset, kind, payload: &[u8]| replayed.visit(offset, kind, payload),
        )?;
        if let Some(k) = config.known_through {
            if gate.known_through().is_none_or(|have| have < k) {
                gate.set_known_through(k)?;
            }
        }
        let read = File::open(&config.stream)
            .map_err(|e| WireError::io(format!("opening {} to read", config.stream.display()), e))?;
        let stats = Arc::new(Stats::default());
        stats.remembered.store(replayed.table.len() as u64, Ordering::Relaxed);
        stats.remembered_bytes.store(replayed.table.bytes(), Ordering::Relaxed);
        stats.unresolved.store(gate.pending_len() as u64, Ordering::Relaxed);
        let report = replayed.report(replay);
        // Jobs reach a core thread through a channel; a core on the
        // caller's thread takes them under its lock, and has none.
        let channel = (config.core != CoreMode::OnCaller).then(|| mpsc::channel(config.batch_max.max(1) * 4));
        let metrics = Arc::new(WireMetrics::new());
        metrics.known_through(gate.known_through());
        let anchored = gate.gate().has_trust_roots();
        for (id, spend) in gate.gate().spent_grants() {
            metrics.replayed(&id, spend.uj, anchored);
        }
        let group_commit = channel.as_ref().filter(|_| config.core == CoreMode::GroupCommit);
        let (to_sync, unsynced, sync_thread, sync_here) = if let Some((tx, _)) = group_commit {
            let (to_sync, unsynced, thread) =
                Syncer::start(&config.stream, config.commit_interval, tx.downgrade(), &stats, &metrics)?;
            (Some(to_sync), unsynced, Some(thread), None)
        } else {
            // The core syncs itself: nothing ever comes back unsynced.
            let (_, unsynced) = std::sync::mpsc::channel();
            (None, unsynced, None, Some(group_commit::Durable::open(&config.stream)?))
        };
        let core = Core {
            gate,
            read,
            syncer: to_sync,
            sync_thread,
            sync_here,
            unsynced,
            table: replayed.table,
            handles: HashMap::new(),
            window_s: config.window_s,
            clock: config.clock,
            failed: None,
            stats: stats.clone(),
            point_keys,
            metrics: metrics.clone(),
            relay: backend.is_some().then_some(core_thread::RelayMode { ceiling_uj: config.call_ceiling_uj }),
            reserved: HashMap::new(),
            record_limits: core_thread::RecordLimits {
                high_water: config.record_high_water,
                max: config.record_max,
                past_mark: false,
                full_logged: false,
            },
        };
        let batch_max = config.batch_max.max(1);
        let admission = Admission::start(config.admission_threads)?;
        // The ladder probes its counters once (a short burn), and only
        // where a backend's calls are to be metered.
        let meter: Arc<dyn CallMeter> = match (&config.meter, &backend) {
            (Some(m), _) => m.clone(),
            (None, Some(_)) => Arc::new(jcp_meter::span::SpanMeter::system(jcp_meter::span::SpanConfig::default())),
            (None, None) => Arc::new(crate::metering::WallClock),
        };
        let (tx, handle) = match channel {
            None => (CoreLink::Caller(Box::new(Mutex::new(Some(core)))), None),
            Some((tx, rx)) => {
                let handle = std::thread::Builder::new()
                    .name("jcp-endpoint-core".into())
                    .spawn(move || core.run(rx, batch_max))
                    .map_err(|e| WireError::io("starting the endpoint's core thread", e))?;
                (CoreLink::Thread(tx), Some(handle))
            }
        };
        let bodies_max = config.body_bytes_in_flight.max(1);
        let unadmitted_share = serve::unadmitted_share(bodies_max, config.cap);
        let shared = Arc::new(Shared {
            tx,
            stats,
            metrics,
            cap: config.cap,
            frame_timeout: config.frame_timeout,
            first_frame_timeout: config.first_frame_timeout,
            idle_timeout: config.idle_timeout,
            peers: Arc::new(Mutex::new(std::collections::HashMap::new())),
            max_per_peer: config.max_per_peer.max(1),
            max_connections: config.max_connections.max(1),
            backend,
            stopping: AtomicBool::new(false),
            conns: Arc::new(tokio::sync::Semaphore::new(config.max_connections.max(1))),
            caller_signatures: config.caller_signatures,
            meter,
            relay_lock: Arc::new(tokio::sync::Mutex::new(())),
            feed_keys: config.feed_keys.clone(),
            bodies: Arc::new(tokio::sync::Semaphore::new(bodies_max)),
            bodies_max,
            bodies_unadmitted: Arc::new(tokio::sync::Semaphore::new(unadmitted_share)),
            bodies_unadmitted_max: unadmitted_share,
            requests: config.requests_per_source.map(limits::Limiter::new),
            refusals: config.refusals_per_source.map(limits::Limiter::new),
        });
        Ok((Self { shared, core: Arc::new(Mutex::new(handle)), admission: Arc::new(admission) }, report))
    }

    /// Counters now.
    pub fn stats(&self) -> StatsSnapshot {
        let s = &self.shared.stats;
        let remembered = s.remembered.load(Ordering::Relaxed);
        StatsSnapshot {
            decided: s.decided.load(Ordering::Relaxed),
            allowed: s.allowed.load(Ordering::Relaxed),
            repeats: s.repeats.load(Ordering::Relaxed),
            stale: s.stale.load(Ordering::Relaxed),
            impersonated: s.impersonated.load(Ordering::Relaxed),
            unrecorded: s.unrecorded.load(Ordering::Relaxed),
            commits: s.commits.load(Ordering::Relaxed),
            remembered,
            remembered_bytes: s.remembered_bytes.load(Ordering::Relaxed),
            refused_frames: s.refused_frames.load(Ordering::Relaxed),
            admitted: s.admitted.load(Ordering::Relaxed),
            unresolved: s.unresolved.load(Ordering::Relaxed),
            signatures_batched: s.signatures_batched.load(Ordering::Relaxed),
            signature_batches: s.signature_batches.load(Ordering::Relaxed),
            signature_batches_failed: s.signature_batches_failed.load(Ordering::Relaxed),
            charged: s.charged.load(Ordering::Relaxed),
            lost: s.lost.load(Ordering::Relaxed),
            shed: s.shed.load(Ordering::Relaxed),
            rate_limited: s.rate_limited.load(Ordering::Relaxed),
        }
    }

    /// The endpoint's metrics registry (decisions, commit latency, the
    /// revocation marker, spend per grant).
    pub fn metrics(&self) -> Arc<WireMetrics> {
        self.shared.metrics.clone()
    }

    /// The exposition now (`jcp serve --metrics`): a complete `OpenMetrics` message.
    pub fn render_metrics(&self) -> Result<String, std::fmt::Error> {
        let s = &self.shared.stats;
        self.shared.metrics.render(s.remembered.load(Ordering::Relaxed), s.unresolved.load(Ordering::Relaxed))
    }

    /// Decides one request in-process (through the same core, record and
    /// memory as a socket request): the response's framed bytes. A request
    /// the socket would refuse (over the cap, a field over its bound) is
    /// refused here the same way, before the core sees it.
    pub async fn submit(&self, req: WireRequest) -> Result<Vec<u8>, WireError> {
        let bytes = req.to_bytes();
        if bytes.len() > self.shared.cap {
            return Err(WireError::Oversized { declared: bytes.len() as u64, cap: self.shared.cap });
        }
        req.check_bounds()?;
        let (id, signed) = self.shared.authenticate(&req, &bytes);
        let (tx, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Job::Decide { req: Box::new(req), bytes, id, signed, tx, handed: std::time::Instant::now() })
            .await
            .map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))?;
        let a = rx.await.map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))?;
        Ok(a.framed)
    }

    /// Hands a feed message to the core (recorded, then applied): the
    /// operator's in-process path, trusted as the admin socket is (a
    /// signed message is still checked against the feed keys).
    pub async fn feed(&self, feed: Feed) -> Result<FeedAnswer, WireError> {
        let feed = match serve::authenticate_feed(&self.shared.feed_keys, feed, serve::FeedTrust::Admin) {
            Ok(f) => f,
            Err(refused) => return Ok(refused),
        };
        let (tx, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Job::Feed { feed: Box::new(feed), tx })
            .await
            .map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))?;
        rx.await.map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))
    }

    /// §4.5: this point's signed statement of its cumulative allowed spend
    /// on a channel grant, or the refusal (`channel-unknown`, `unrecorded`).
    pub async fn statement(&self, grant_id: ContentId) -> Result<Result<SignedStatement, FeedAnswer>, WireError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Job::Statement { grant_id, tx })
            .await
            .map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))?;
        rx.await.map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))
    }

    /// §4.5: the merged ledger of a channel as this point holds it (its
    /// own last statement and its peers' admitted ones); `None` where it
    /// runs no channel on the grant.
    pub async fn channel_ledger(&self, grant_id: ContentId) -> Result<Option<Ledger>, WireError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Job::Ledger { grant_id, tx })
            .await
            .map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))?;
        rx.await.map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))
    }

    /// §4.3: the revocation-knowledge marker this point states now (what
    /// its receipts state as `known_through`); `None` when it states none.
    /// A revocation a composing tool admits itself (found beside a run, not
    /// from a feed) goes in at the next marker, so no decision already made
    /// reads as made in knowledge of it.
    pub async fn known_through(&self) -> Result<Option<u64>, WireError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Job::KnownThrough { tx })
            .await
            .map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))?;
        rx.await.map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))
    }

    /// A client connected to this endpoint in-process: its connection is
    /// served exactly as a socket's (the same frames, caps, decisions,
    /// relay and replies), over an in-memory stream instead of a socket.
    /// What a composing tool (`jcp gateway`) uses to put its own callers
    /// behind this gate without a socket between them. The connection
    /// holds one of the endpoint's connection permits while it is open;
    /// `None` once the endpoint is stopping or every permit is taken.
    pub fn connect_local(&self) -> Option<crate::client::Client> {
        if self.shared.stopping.load(Ordering::Acquire) {
            return None;
        }
        let permit = self.shared.conns.clone().try_acquire_owned().ok()?;
        let (ours, theirs) = tokio::io::duplex(crate::codec::DEFAULT_CAP + 64);
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let _permit = permit;
            serve_conn(shared, theirs, serve::FeedTrust::Network, limits::Source::Local).await;
        });
        Some(crate::client::Client::over_memory(ours))
    }

    /// Serves one listener until [`Endpoint::shutdown`]. A connection past
    /// the cap (the endpoint's, or its peer address's) is accepted, answered
    /// `busy` and closed: the backlog never fills with clients that wait.
    pub async fn serve(&self, listener: Listener) -> Result<(), WireError> {
        self.serve_as(listener, serve::FeedTrust::Network).await
    }

    /// Serves the operator's admin socket until [`Endpoint::shutdown`]: a
    /// Unix socket made owner-only (0600), whose connections are served as
    /// any other's, except that a revocation or amendment may come
    /// unsigned (§4.3: the operator sets the marker). A connection from a
    /// process of another user than the socket's owner is closed. A TCP
    /// listener is refused (`bad-address`): the admin path is local.
    pub async fn serve_admin(&self, listener: Listener) -> Result<(), WireError> {
        #[cfg(unix)]
        if let Listener::Unix(l) = &listener {
            use std::os::unix::fs::PermissionsExt;
            let path = l
                .local_addr()
                .ok()
                .and_then(|a| a.as_pathname().map(std::path::Path::to_path_buf))
                .ok_or_else(|| WireError::BadAddress("the admin socket has no path".into()))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| WireError::io("making the admin socket owner-only", e))?;
            return self.serve_as(listener, serve::FeedTrust::Admin).await;
        }
        Err(WireError::BadAddress("the admin socket is a Unix socket (unix:PATH), not TCP".into()))
    }

    async fn serve_as(&self, listener: Listener, trust: serve::FeedTrust) -> Result<(), WireError> {
        #[cfg(unix)]
        let owner = match (&listener, trust) {
            (Listener::Unix(l), serve::FeedTrust::Admin) => {
                use std::os::unix::fs::MetadataExt;
                l.local_addr()
                    .ok()
                    .and_then(|a| a.as_pathname().and_then(|p| std::fs::metadata(p).ok()))
                    .map(|m| m.uid())
            }
            _ => None,
        };
        #[cfg(not(unix))]
        let owner = None;
        let shared = self.shared.clone();
        // The admin socket is the operator's own (owner-only, its peers'
        // user checked): never served behind admission, so a flood cannot
        // delay the operator's feeds.
        let admission = self.admission.handle().filter(|_| trust == serve::FeedTrust::Network);
        let Some(admission) = admission else {
            accept_loop(shared, listener, trust, owner, None).await;
            return Ok(());
        };
        // Connections are accepted and served on the admission runtime
        // until their first authenticated request is answered, then on this
        // one (`Config::admission_threads`).
        let here = tokio::runtime::Handle::current();
        let listener = listener.into_std()?;
        // Stopped with this future (a serving task aborted stops accepting).
        let mut accepting = AbortOnDrop(admission.spawn(async move {
            match Listener::from_std(listener) {
                Ok(l) => accept_loop(shared, l, trust, owner, Some(here)).await,
                Err(e) => tracing::error!("the admission runtime could not take the listener: {e}"),
            }
        }));
        (&mut accepting.0)
            .await
            .map_err(|e| WireError::Stopped(format!("the admission runtime's accept loop ended: {e}")))
    }

    /// The admission runtime ([`Config::admission_threads`]), where what
    /// anyone may reach without authenticating is best served (`jcp
    /// serve` serves `/metrics` there); `None` without one.
    pub fn admission(&self) -> Option<tokio::runtime::Handle> {
        self.admission.handle().cloned()
    }

    /// Stops deciding: the core finishes the batch in hand, syncs and
    /// closes the record (its lock goes with it).
    pub async fn shutdown(&self) -> Result<(), WireError> {
        self.shared.stopping.store(true, Ordering::Release);
        let (tx, rx) = oneshot::channel();
        if self.shared.tx.send(Job::Shutdown { tx }).await.is_err() {
            return Ok(());
        }
        let r = rx.await.map_err(|_| WireError::Stopped("the core stopped before closing".into()))?;
        let handle = self.core.lock().ok().and_then(|mut g| g.take());
        if let Some(h) = handle {
            let _ = tokio::task::spawn_blocking(move || h.join()).await;
        }
        r.map_err(WireError::Stopped)
    }
}

/// Accepts and serves connections until the endpoint stops. With
/// `admit_to`, each connection is served here until its first
/// authenticated request is answered, then handed to that runtime.
async fn accept_loop(
    shared: Arc<Shared>,
    listener: Listener,
    trust: serve::FeedTrust,
    owner: Option<u32>,
    admit_to: Option<tokio::runtime::Handle>,
) {
    loop {
        if shared.stopping.load(Ordering::Acquire) {
            return;
        }
        let accepted = match &listener {
            Listener::Tcp(l) => l.accept().await.map(|(s, peer)| (Conn::Tcp(s), Some(limits::peer_of(peer.ip())))),
            #[cfg(unix)]
            Listener::Unix(l) => l.accept().await.map(|(s, _)| (Conn::Unix(s), None)),
        };
        let (conn, peer) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // A failed accept (a reset before accept, fd exhaustion)
                // is the peer's or the moment's; keep serving.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Ok(permit) = shared.conns.clone().try_acquire_owned() else {
            serve::refuse_busy(conn, format!("the endpoint serves {} connections at most", shared.conns_max()));
            continue;
        };
        let Some(held) = serve::PeerSlot::take(&shared.peers, peer, shared.max_per_peer) else {
            serve::refuse_busy(conn, format!("one address holds {} connections at most", shared.max_per_peer));
            continue;
        };
        let shared = shared.clone();
        let admit_to = admit_to.clone();
        tokio::spawn(async move {
            let slots = (permit, held);
            match conn {
                Conn::Tcp(s) => {
                    let _ = s.set_nodelay(true);
                    let source = peer.map_or(limits::Source::Local, limits::Source::Ip);
                    serve_accepted(shared, s, trust, source, slots, admit_to).await;
                }
                #[cfg(unix)]
                Conn::Unix(s) => {
                    // The admin socket serves its owner's processes only.
                    let uid = s.peer_cred().ok().map(|c| c.uid());
                    if trust == serve::FeedTrust::Admin && uid != owner {
                        tracing::warn!("admin socket: a connection from another user than its owner, closed");
                        return;
                    }
                    let source = uid.map_or(limits::Source::Local, limits::Source::Uid);
                    serve_accepted(shared, s, trust, source, slots, admit_to).await;
                }
            }
        });
    }
}

/// Serves an accepted connection holding `slots`: wholly here, or with
/// `admit_to`, here until its first authenticated request is answered and
/// then on that runtime ([`admit`]).
async fn serve_accepted<S: serve::Movable>(
    shared: Arc<Shared>,
    s: S,
    trust: serve::FeedTrust,
    source: limits::Source,
    slots: (tokio::sync::OwnedSemaphorePermit, serve::PeerSlot),
    admit_to: Option<tokio::runtime::Handle>,
) {
    let Some(main) = admit_to else {
        let _slots = slots;
        serve_conn(shared, s, trust, source).await;
        return;
    };
    let Some(a) = serve_conn_as(shared.clone(), s, trust, source, Stage::Admission).await else {
        return;
    };
    match a.stream.into_std() {
        Ok(std) => admit::<S>(&main, shared, slots, (std, a.read_ahead, a.relay), trust, source),
        Err(e) => tracing::warn!("an admitted connection could not be handed over: {e}"),
    }
}

/// A connection whose first authenticated request was answered on the
/// admission runtime, served on from here on `main` (its connection slots
/// with it): that request's call behind the gate first, if it has one
/// still to run, then what the client sent behind it.
fn admit<S: serve::Movable>(
    main: &tokio::runtime::Handle,
    shared: Arc<Shared>,
    slots: (tokio::sync::OwnedSemaphorePermit, serve::PeerSlot),
    (std, read_ahead, relay): (S::Std, Vec<u8>, Option<Box<serve::Relay>>),
    trust: serve::FeedTrust,
    source: limits::Source,
) {
    shared.stats.admitted.fetch_add(1, Ordering::Relaxed);
    main.spawn(async move {
        let _slots = slots;
        let mut s = match S::from_std(std) {
            Ok(s) => serve::Prefixed::new(read_ahead, s),
            Err(e) => {
                tracing::warn!("an admitted connection could not be taken on: {e}");
                return;
            }
        };
        if let Some(r) = relay {
            if !r.run(&shared, &mut s).await {
                return;
            }
        }
        let _ = serve_conn_as(shared, s, trust, source, Stage::Admitted).await;
    });
}

/// Joins the §4.5 budget channels an endpoint is a point of: the gate that
/// knows them, and this point's key per channel grant.
fn join_channels(mut gate: Gate, channels: &[ChannelSetup]) -> Result<(Gate, HashMap<ContentId, Keypair>), WireError> {
    let mut point_keys = HashMap::new();
    for c in channels {
        gate.join_channel(c.grant.clone(), c.point.did(), c.peers.iter().copied())?;
        point_keys.insert(c.grant.id(), c.point.clone());
    }
    Ok((gate, point_keys))
}

/// What the endpoint's module tests share: keys and a signed request.
#[cfg(test)]
mod tests {
    use jcp::cbor::ContentId;
    use jcp::energy::Energy;
    use jcp::flow::Label;
    use jcp::frame::{Frame, FrameKind, Trust};
    use jcp::grant::{Capability, Grant, SignedGrant};
    use jcp::identity::Keypair;

    use crate::message::{Outbound, RequestBody, WireDecision, WireRequest};

    pub(super) fn key(n: u8) -> Keypair {
        Keypair::from_seed([n; 32]).unwrap()
    }

    /// A root grant from key 1 to key 2: `read` on `tool`, 1 000 µJ.
    pub(super) fn grant() -> SignedGrant {
        Grant {
            issuer: key(1).did(),
            subject: key(2).did(),
            capability: Capability { resource: ContentId::of_bytes(b"tool"), actions: vec!["read".into()] },
            budget_uj: 1000,
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

    pub(super) fn request(g: &SignedGrant, payload: &[u8]) -> WireRequest {
        RequestBody {
            frame: Frame {
                kind: FrameKind::ToolCall,
                trust: Trust::Control,
                grant_id: g.id(),
                action: "read".into(),
                resource: g.grant().capability.resource,
                payload_hash: ContentId::of_bytes(payload),
                model: None,
            },
            chain: vec![g.clone()],
            cost: Energy::hardware(10),
            money: None,
            label: Some(Label::bottom()),
            args: Some(payload.to_vec()),
            continues: None,
            now: 1_800_000_000,
        }
        .sign(&key(2))
    }

    /// An endpoint's configuration on the stream `dir/s.jcps`, its clock
    /// fixed at 1 800 000 000 (the requests' stamp).
    pub(super) fn config_in(dir: &std::path::Path) -> super::Config {
        let mut cfg = super::Config::new(dir.join("s.jcps"));
        cfg.clock = std::sync::Arc::new(|| 1_800_000_000);
        cfg
    }

    /// A core on a fresh stream in `dir`, not running: a test hands it
    /// jobs itself, so it decides the batch the test makes.
    pub(super) fn idle_core(dir: &std::path::Path) -> super::Core {
        use std::sync::Arc;
        let stream = dir.join("s.jcps");
        let (gate, _) = jcp_receipt::runtime::DurableGate::open_with(
            &stream,
            key(90),
            jcp::decision::Gate::new(),
            jcp_receipt::writer::Durability::GroupCommit,
        )
        .unwrap();
        let stats = Arc::new(super::Stats::default());
        let metrics = Arc::new(crate::metrics::WireMetrics::new());
        let (wake, _) = tokio::sync::mpsc::channel(1);
        let (to_sync, unsynced, thread) =
            super::Syncer::start(&stream, std::time::Duration::ZERO, wake.downgrade(), &stats, &metrics).unwrap();
        super::Core {
            gate,
            read: std::fs::File::open(&stream).unwrap(),
            syncer: Some(to_sync),
            sync_thread: Some(thread),
            sync_here: None,
            unsynced,
            table: super::decided_once::Remembered::default(),
            handles: std::collections::HashMap::new(),
            window_s: 30,
            clock: Arc::new(|| 1_800_000_000),
            failed: None,
            stats,
            point_keys: std::collections::HashMap::new(),
            metrics,
            relay: None,
            reserved: std::collections::HashMap::new(),
            record_limits: super::core_thread::RecordLimits::default(),
        }
    }

    /// Hands `core` one decision job for `req` in batch `p`, as a
    /// connection task would; its answer comes on the receiver.
    pub(super) fn decide_in(
        core: &mut super::Core,
        p: &mut super::group_commit::Pending,
        req: &WireRequest,
    ) -> tokio::sync::oneshot::Receiver<super::decision::Answer> {
        let bytes = req.to_bytes();
        let (id, signed) = super::identify(req, &bytes);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let handed = std::time::Instant::now();
        // Left to the core, which checks it alone (a batch of one).
        let signed = super::Signed::Unchecked(signed);
        core.run_job(super::Job::Decide { req: Box::new(req.clone()), bytes, id, signed, tx, handed }, p);
        rx
    }

    pub(super) fn decision(framed: &[u8]) -> WireDecision {
        match Outbound::decode(&framed[4..]).unwrap() {
            Outbound::Response(r) => r.decision,
            other => panic!("{other:?}"),
        }
    }
}
