//! How an endpoint runs: its record, its freshness window and frame cap
//! (§11), the revocation marker it states before its feed delivers (§4.3),
//! and the budget channels it is a point of (§4.5).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jcp::grant::SignedGrant;
use jcp::identity::Keypair;

use crate::codec;
use crate::metering::CallMeter;

/// The endpoint's clock: unix seconds. Time is the endpoint's (§11).
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

/// How an endpoint runs.
#[derive(Clone)]
pub struct Config {
    /// The record: a receipt stream this endpoint opens as its only writer.
    pub stream: PathBuf,
    /// The freshness window, seconds (§11; default 30).
    pub window_s: u64,
    /// The largest message body accepted (default and most:
    /// [`codec::MAX_ENDPOINT_CAP`], so every admitted message fits its record).
    pub cap: usize,
    /// The most requests made durable by one sync (group commit).
    pub batch_max: usize,
    /// The least time between the starts of two syncs (default 500 µs):
    /// batches decided meanwhile wait and share the next sync. Nothing
    /// leaves before its sync either way; the interval trades at most that
    /// much latency for fewer syncs, each of which costs this VM's disk
    /// two exits to the host. Zero syncs as soon as a batch is decided.
    pub commit_interval: Duration,
    /// The revocation-knowledge marker this point states before its feed
    /// has delivered anything (§4.3); `None` states none.
    pub known_through: Option<u64>,
    /// How long a started frame may take to arrive whole.
    pub frame_timeout: Duration,
    /// How long a new connection may take to start its first frame.
    pub first_frame_timeout: Duration,
    /// How long a connection may stay silent between frames (an agent
    /// waiting at a checkpoint keeps its connection: the default, 2 h, is
    /// above the default wait of an hour).
    pub idle_timeout: Duration,
    /// The most connections served at once; past it a connection is
    /// accepted, answered `busy` and closed.
    pub max_connections: usize,
    /// The most connections one peer address (TCP; an IPv6 peer by its
    /// /64, [`super::limits::peer_of`]) holds at once; past it, `busy`
    /// (Unix-socket peers are the machine's own: the global cap only).
    pub max_per_peer: usize,
    /// The endpoint's clock.
    pub clock: Clock,
    /// §4.5 budget channels this endpoint is a point of.
    pub channels: Vec<ChannelSetup>,
    /// How callers' signatures are checked (§2, §11; default batched).
    pub caller_signatures: CallerSignatures,
    /// The meter each relayed call is metered with (§11 relay mode; used
    /// only with a backend). `None`: the ladder ([`jcp_meter::span::SpanMeter::system`]).
    pub meter: Option<Arc<dyn CallMeter>>,
    /// The operator's per-call ceiling, µJ (§11 relay mode): no call
    /// reserves more, whatever its caller states. `None`: the caller's
    /// stated maximum and the grant's remainder bound it.
    pub call_ceiling_uj: Option<u64>,
    /// The keys whose signature admits a revocation or an amendment feed
    /// from any connection (§4.3: the signature covers the marker). With
    /// none, such feeds are taken only from the admin socket
    /// ([`super::Endpoint::serve_admin`]) and in-process.
    pub feed_keys: Vec<jcp::identity::Did>,
    /// The most frame-body bytes the endpoint reads at once over all its
    /// connections (issue 34, per-connection memory): a frame whose declared
    /// length does not fit what is left is refused `busy` and its
    /// connection closed, so half-sent frames cannot hold memory without
    /// bound. Each frame counts its declared length until it is read.
    pub body_bytes_in_flight: usize,
    /// Requests and feed messages one source (a TCP address, a Unix
    /// socket's user) may send a second (issue 34); past it, `rate-limited`
    /// before anything is decided. `None`: no limit.
    pub requests_per_source: Option<super::limits::Rate>,
    /// Refusals one source may cost a second: requests refused before they
    /// are decided (`bad-signature`, `stale-request`) or shed by the
    /// record's high-water mark (issue 34: what unauthenticated traffic
    /// costs the record is bounded by it). Past it, the source's requests
    /// are answered `rate-limited` until its bucket refills. `None`: no limit.
    pub refusals_per_source: Option<super::limits::Rate>,
    /// The record's high-water mark, bytes: once the stream is this long,
    /// requests that cannot be authenticated (a caller signature that does
    /// not verify, a stale stamp, a chain not anchored in a trust root of
    /// its resource) are answered `unrecorded` without being recorded, and
    /// authenticated ones go on being decided. `None`: none.
    pub record_high_water: Option<u64>,
    /// The record's limit, bytes: once the stream is this long, nothing
    /// more is decided or admitted (`unrecorded`, a feed `unrecorded`):
    /// the disk the operator gave it is used up. `None`: none.
    pub record_max: Option<u64>,
    /// Where the core decides and who syncs what it decided
    /// ([`CoreMode`]). Default [`CoreMode::GroupCommit`].
    pub core: CoreMode,
    /// Threads of an admission runtime (issue 34): connections are accepted
    /// and served there, at a lower scheduling priority, until their first
    /// authenticated request (its caller's signature held, its chain
    /// trusted) is answered, and on the runtime that serves the listener
    /// from then on. A flood of connections that never authenticate then
    /// costs the threads that serve them, not the clients already admitted.
    /// 0: none (every connection on the serving runtime). Default 0.
    pub admission_threads: usize,
}

/// How the endpoint checks callers' signatures (§2, §11; docs/decisions.md,
/// "§2 one Ed25519 predicate"). Both ways give every signature the same
/// verdict; they differ only in cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallerSignatures {
    /// The core checks the signatures of the requests it takes in one batch
    /// together ([`jcp::identity::batch::verify_batch`]; a lone request
    /// alone). A batch that fails is checked again one signature at a
    /// time, so a bad one is
    /// refused `bad-signature` by itself and names no one else.
    #[default]
    Batched,
    /// Every signature alone, on the connection's task
    /// (`jcp serve --strict-signatures`).
    Strict,
}

/// One budget channel an endpoint is a point of (§4.5): the grant, this
/// point's own key (it signs the point's statements) and its peers.
#[derive(Clone)]
pub struct ChannelSetup {
    /// The grant the points spend optimistically against.
    pub grant: SignedGrant,
    /// This point's key: its did is the `point` of its statements.
    pub point: Keypair,
    /// The other points of the channel.
    pub peers: Vec<jcp::identity::Did>,
}

impl std::fmt::Debug for ChannelSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelSetup")
            .field("grant", &self.grant.id())
            .field("point", &self.point.did())
            .field("peers", &self.peers)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("stream", &self.stream)
            .field("window_s", &self.window_s)
            .field("cap", &self.cap)
            .field("batch_max", &self.batch_max)
            .field("commit_interval", &self.commit_interval)
            .field("known_through", &self.known_through)
            .field("frame_timeout", &self.frame_timeout)
            .field("first_frame_timeout", &self.first_frame_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_per_peer", &self.max_per_peer)
            .field("max_connections", &self.max_connections)
            .field("channels", &self.channels)
            .field("caller_signatures", &self.caller_signatures)
            .field("meter", &self.meter.as_ref().map(|_| "set"))
            .field("call_ceiling_uj", &self.call_ceiling_uj)
            .field("feed_keys", &self.feed_keys)
            .field("body_bytes_in_flight", &self.body_bytes_in_flight)
            .field("requests_per_source", &self.requests_per_source)
            .field("refusals_per_source", &self.refusals_per_source)
            .field("record_high_water", &self.record_high_water)
            .field("record_max", &self.record_max)
            .field("core", &self.core)
            .field("admission_threads", &self.admission_threads)
            .finish_non_exhaustive()
    }
}

/// Where an endpoint's core decides, and who syncs the record before an
/// answer leaves (§4.11: a decision is durable before it is answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CoreMode {
    /// A core thread of its own decides batches, and a sync thread commits
    /// them at most every [`Config::commit_interval`] (group commit):
    /// many callers' requests share a sync (`jcp serve`).
    #[default]
    GroupCommit,
    /// A core thread of its own decides each batch and syncs it itself: one
    /// hand-off between threads fewer before an answer leaves, and no
    /// deciding while a sync runs.
    SyncsItself,
    /// The core runs on the thread that hands it a job (under a lock, one
    /// job at a time) and syncs itself: no thread is woken to decide, nor
    /// to carry the answer back. For an endpoint whose one caller decides
    /// one request at a time and can wait for the sync on its own thread
    /// (`jcp gateway`); a caller on an async runtime is held for the
    /// decision and its sync.
    OnCaller,
}

/// The refusals a source may cost a second by default (a burst of twice
/// that): far above what an honest client is refused, low enough that one
/// source's garbage grows the record by at most about 0.8 MB a second.
pub const DEFAULT_REFUSALS_PER_SOURCE: u32 = 1000;

impl Config {
    /// Defaults: 30 s window, the largest cap a record holds
    /// ([`codec::MAX_ENDPOINT_CAP`]), batches of up to 512, at least
    /// 500 µs between syncs, no marker (a point with no feed states none,
    /// §4.3), 10 s frame timeout, 10 s to the
    /// first frame, 2 h idle, 4 096 connections (1 024 a peer), the system
    /// clock, callers' signatures checked in batches, no request rate
    /// limit, [`DEFAULT_REFUSALS_PER_SOURCE`] refusals a source a second, no
    /// high-water mark or limit on the record.
    pub fn new(stream: impl Into<PathBuf>) -> Self {
        Self {
            stream: stream.into(),
            window_s: 30,
            cap: codec::MAX_ENDPOINT_CAP,
            batch_max: 512,
            commit_interval: Duration::from_micros(500),
            known_through: None,
            frame_timeout: Duration::from_secs(10),
            first_frame_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(7200),
            max_connections: 4096,
            max_per_peer: 1024,
            clock: system_clock(),
            channels: Vec::new(),
            caller_signatures: CallerSignatures::Batched,
            meter: None,
            call_ceiling_uj: None,
            feed_keys: Vec::new(),
            body_bytes_in_flight: 64 << 20,
            requests_per_source: None,
            refusals_per_source: Some(super::limits::Rate::per_second(DEFAULT_REFUSALS_PER_SOURCE)),
            record_high_water: None,
            record_max: None,
            core: CoreMode::GroupCommit,
            admission_threads: 0,
        }
    }
}
