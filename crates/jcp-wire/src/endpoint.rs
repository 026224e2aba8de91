//! The enforcement endpoint (§11 over TCP and Unix sockets, §4.11, §6.1).
//!
//! One **core** thread owns the [`DurableGate`] (the single writer of the
//! record) and decides requests in arrival order. It takes requests in
//! batches: each is decided and appended, then one sync makes the batch
//! durable (group commit), and only then do the batch's responses leave
//! and the actions behind its allows run. The sync runs on a second
//! thread, so the core decides the next batch while the last one is made
//! durable; batches queued during a sync share the next one. Connection
//! tasks read and decode
//! frames, check the caller's signature (on every core of the machine) and
//! write responses, so a client that misbehaves holds nothing but its own
//! task.
//!
//! "Decided once": every decided request is remembered by its id (the
//! content id of what the caller signed) with the stream offset of its
//! receipt while its stamp is inside the window. A repeat re-reads that
//! receipt and answers the same bytes; nothing is decided, debited or
//! recorded again. Each decided request is recorded as a
//! [`RecordKind::Request`] record immediately followed by its receipt, so on
//! restart the replay of the record rebuilds the table (and the spend, and
//! the revocations, through [`DurableGate`]'s own replay) before anything new
//! is decided.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jcp::cbor::{self, ContentId, Fields, Value};
use jcp::channel::{Ledger, SignedStatement};
use jcp::decision::{Cost, Gate, Reason, Request, Verdict};
use jcp::energy::Coverage;
use jcp::flow::Label;
use jcp::frame::{Frame, Trust};
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp_receipt::record::OutcomeStatus;
use jcp_receipt::runtime::{DurableGate, ReplayReport};
use jcp_receipt::stream::{RecordKind, FRAME_OVERHEAD};
use jcp_receipt::writer::Durability;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

use crate::backend::{Backend, BackendReply, Call, Closing, Continuation};
use crate::codec;
use crate::error::WireError;
use crate::message::{Feed, FeedAnswer, Inbound, ReplyState, WireDecision, WireReply, WireRequest, WireResponse};
use crate::metrics::WireMetrics;

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
    /// The largest message body accepted (default 1 MiB).
    pub cap: usize,
    /// The most requests made durable by one sync (group commit).
    pub batch_max: usize,
    /// The revocation-knowledge marker this point states before its feed
    /// has delivered anything (§4.3); `None` states none.
    pub known_through: Option<u64>,
    /// How long a started frame may take to arrive whole.
    pub frame_timeout: Duration,
    /// The most connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// The endpoint's clock.
    pub clock: Clock,
    /// §4.5 budget channels this endpoint is a point of.
    pub channels: Vec<ChannelSetup>,
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
            .field("known_through", &self.known_through)
            .field("frame_timeout", &self.frame_timeout)
            .field("max_connections", &self.max_connections)
            .field("channels", &self.channels)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Defaults: 30 s window, 1 MiB cap, batches of up to 512, marker 0,
    /// 10 s frame timeout, 4 096 connections, the system clock.
    pub fn new(stream: impl Into<PathBuf>) -> Self {
        Self {
            stream: stream.into(),
            window_s: 30,
            cap: codec::DEFAULT_CAP,
            batch_max: 512,
            known_through: Some(0),
            frame_timeout: Duration::from_secs(10),
            max_connections: 4096,
            clock: system_clock(),
            channels: Vec::new(),
        }
    }
}

/// What opening found in the record.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OpenReport {
    /// The gate's replay (spend, revocations, unresolved decisions).
    pub replay: ReplayReport,
    /// Requests recorded in the stream.
    pub requests_recorded: u64,
    /// Of those, remembered again (stamp still inside the window).
    pub requests_remembered: u64,
    /// Request records that could not be read (counted, not trusted).
    pub requests_unreadable: u64,
    /// Closing records in the stream.
    pub closings: u64,
}

/// Counters an operator (and the benchmark) reads.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests decided (allow or deny) and recorded.
    pub decided: AtomicU64,
    /// Of those, allows.
    pub allowed: AtomicU64,
    /// Repeats answered from memory.
    pub repeats: AtomicU64,
    /// Refused as stale.
    pub stale: AtomicU64,
    /// Refused: the caller's signature did not verify.
    pub impersonated: AtomicU64,
    /// Refused `unrecorded`.
    pub unrecorded: AtomicU64,
    /// Syncs (group commits).
    pub commits: AtomicU64,
    /// Requests remembered now.
    pub remembered: AtomicU64,
    /// Frames refused (bad framing or message); their connections closed.
    pub refused_frames: AtomicU64,
}

/// A snapshot of [`Stats`].
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct StatsSnapshot {
    /// See [`Stats::decided`].
    pub decided: u64,
    /// See [`Stats::allowed`].
    pub allowed: u64,
    /// See [`Stats::repeats`].
    pub repeats: u64,
    /// See [`Stats::stale`].
    pub stale: u64,
    /// See [`Stats::impersonated`].
    pub impersonated: u64,
    /// See [`Stats::unrecorded`].
    pub unrecorded: u64,
    /// See [`Stats::commits`].
    pub commits: u64,
    /// See [`Stats::remembered`].
    pub remembered: u64,
    /// Bytes the remembered-request table holds (entries × their size,
    /// with the hash table's control bytes; an estimate from capacity).
    pub remembered_bytes: u64,
    /// See [`Stats::refused_frames`].
    pub refused_frames: u64,
}

/// A remembered request: its stamp and where its receipt is.
#[derive(Debug, Clone, Copy)]
struct Entry {
    stamp: u64,
    receipt_at: u64,
}

/// The bytes one remembered request costs in the table: key, value and
/// one control byte (hashbrown), before the table's spare capacity.
pub const REMEMBERED_ENTRY_BYTES: usize = std::mem::size_of::<(ContentId, Entry)>() + 1;

/// A handle bound to the grant of the request that returned it (§6.1).
#[derive(Debug, Clone)]
struct Binding {
    chain: Vec<SignedGrant>,
    frame: Frame,
    first: ContentId,
    last: ContentId,
    continuations: Vec<ContentId>,
    joules_uj: u64,
    label: Label,
}

/// A request's record: the request as admitted and the time it was decided.
fn request_record(req_bytes: Vec<u8>, decided_at: u64) -> Vec<u8> {
    cbor::map([("request", Some(Value::Bytes(req_bytes))), ("decided_at", Some(Value::Uint(decided_at)))]).encode()
}

/// A request's identity and whether its caller's signature verifies
/// ([`WireRequest::id`] and [`WireRequest::verify_signature`]), from one
/// copy of the signed bytes rather than two encodings. `bytes` are the
/// request's canonical bytes (`req.to_bytes()`).
fn authenticate(req: &WireRequest, bytes: &[u8]) -> (ContentId, bool) {
    let signed = signed_bytes_of(req, bytes);
    debug_assert!(signed == req.signed_bytes(), "signed bytes cut from the body differ from the encoded ones");
    (ContentId::of_bytes(&signed), req.caller.verify(&signed, &req.signature))
}

/// What the caller signed (every field but `signature`, canonical), cut
/// from the request's canonical bytes instead of encoded again. In a
/// canonical request map `signature` is the last entry (no field name of
/// a request sorts after it: none is longer than 9 bytes, and of the
/// 9-byte ones `continues` < `signature`), so the signed bytes are the map
/// with one entry fewer and its last 76 bytes (`"signature"`, a 64-byte
/// string) gone. Anything else falls back to encoding.
fn signed_bytes_of(req: &WireRequest, bytes: &[u8]) -> Vec<u8> {
    const TAIL: usize = 1 + 9 + 2 + 64;
    let cut = bytes.len().checked_sub(TAIL).filter(|&at| at > 0);
    if let (Some(at), Some(&head)) = (cut, bytes.first()) {
        let tail = &bytes[at..];
        // A map of 1..=23 entries has a one-byte head 0xa1..=0xb7.
        if (0xa1..=0xb7).contains(&head) && tail[..12] == *b"\x69signature\x58\x40" && tail[12..] == req.signature {
            let mut out = Vec::with_capacity(at);
            out.push(head - 1);
            out.extend_from_slice(&bytes[1..at]);
            return out;
        }
    }
    req.signed_bytes()
}

/// Reads a request record: the request and its decision time.
pub fn read_request_record(payload: &[u8]) -> Result<(WireRequest, u64), WireError> {
    let v = cbor::decode_strict(payload)?;
    let mut f = Fields::new("RequestRecord", &v)?;
    let Value::Bytes(b) = f.req("request")? else {
        return Err(f.error("request", "expected bytes").into());
    };
    let req = WireRequest::from_value(&cbor::decode_strict(b)?)?;
    let at = f.uint("decided_at")?;
    f.finish()?;
    Ok((req, at))
}

/// §4.5: a point's signed statement, or the refusal to sign one.
type StatementAnswer = Result<SignedStatement, FeedAnswer>;

enum Job {
    /// `bytes` are the request's canonical bytes (`req.to_bytes()`): the
    /// frame body it was decoded from, so the core does not encode it again.
    Decide {
        req: Box<WireRequest>,
        bytes: Vec<u8>,
        id: ContentId,
        signed_ok: bool,
        tx: oneshot::Sender<Answer>,
    },
    Feed {
        feed: Box<Feed>,
        tx: oneshot::Sender<FeedAnswer>,
    },
    Outcome {
        receipt: ContentId,
        status: OutcomeStatus,
    },
    Bind {
        handle: String,
        binding: Box<Binding>,
    },
    Close {
        handle: String,
        outcome: ContentId,
        status: &'static str,
        tx: oneshot::Sender<Option<ContentId>>,
    },
    Shutdown {
        tx: oneshot::Sender<Result<(), String>>,
    },
    /// §4.5: this point's signed statement on a channel grant.
    Statement {
        grant_id: ContentId,
        tx: oneshot::Sender<StatementAnswer>,
    },
    /// §4.5: the channel's merged ledger as this point holds it.
    Ledger {
        grant_id: ContentId,
        tx: oneshot::Sender<Option<Ledger>>,
    },
    /// The sync thread has handed batches back (their sync failed).
    Wake,
}

/// A decided batch whose records are appended up to `end` (the stream's
/// length after it): its answers leave only once a sync covers `end`.
#[derive(Default)]
struct Pending {
    end: u64,
    decided: Vec<(oneshot::Sender<Answer>, Answer, Box<WireRequest>)>,
    fed: Vec<(oneshot::Sender<FeedAnswer>, FeedAnswer)>,
    closed: Vec<(oneshot::Sender<Option<ContentId>>, Option<ContentId>)>,
    stated: Vec<(oneshot::Sender<StatementAnswer>, StatementAnswer)>,
}

impl Pending {
    /// The batch is durable: its answers leave.
    fn release(self, metrics: &WireMetrics) {
        for (tx, a, _) in self.decided {
            metrics.answered(a.verdict, a.repeat);
            let _ = tx.send(a);
        }
        for (tx, a) in self.fed {
            let _ = tx.send(a);
        }
        for (tx, c) in self.closed {
            let _ = tx.send(c);
        }
        for (tx, a) in self.stated {
            let _ = tx.send(a);
        }
    }
}

/// `fdatasync` of the stream (a test can make it fail).
fn sync_stream(file: &File) -> std::io::Result<()> {
    #[cfg(test)]
    if tests::FAIL_SYNC.load(Ordering::SeqCst) {
        return Err(std::io::Error::other("injected sync failure"));
    }
    file.sync_data()
}

/// The group commit, off the core thread: makes decided batches durable
/// in order, one `fdatasync` for every batch queued while the previous one
/// ran, then lets their answers leave, while the core decides the next
/// batch. The sync is on its own handle to the stream file (a sync makes
/// the file's data durable whichever handle wrote it); the core thread
/// remains the only writer. Once a sync fails nothing more is synced:
/// every batch it holds then or gets after goes back to the core, which
/// answers it `unrecorded` (§11).
struct Syncer {
    file: File,
    /// The stream length known durable.
    synced: u64,
    failed: Option<String>,
    rx: std::sync::mpsc::Receiver<Pending>,
    back: std::sync::mpsc::Sender<(String, Pending)>,
    wake: mpsc::WeakSender<Job>,
    stats: Arc<Stats>,
    metrics: Arc<WireMetrics>,
}

impl Syncer {
    fn run(mut self) {
        while let Ok(first) = self.rx.recv() {
            let mut group = vec![first];
            while let Ok(p) = self.rx.try_recv() {
                group.push(p);
            }
            // Lengths only grow: the last batch's end covers the group.
            let end = group.iter().map(|p| p.end).max().unwrap_or(0);
            if self.failed.is_none() && end > self.synced {
                let started = std::time::Instant::now();
                match sync_stream(&self.file) {
                    Ok(()) => {
                        self.metrics.committed(started.elapsed().as_secs_f64());
                        self.synced = end;
                        self.stats.commits.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        tracing::error!("syncing the record failed: {e}");
                        self.failed = Some(format!("syncing the record: {e}"));
                    }
                }
            }
            match &self.failed {
                None => group.into_iter().for_each(|p| p.release(&self.metrics)),
                Some(why) => {
                    for p in group {
                        let _ = self.back.send((why.clone(), p));
                    }
                    if let Some(tx) = self.wake.upgrade() {
                        // A full queue wakes the core anyway.
                        let _ = tx.try_send(Job::Wake);
                    }
                }
            }
        }
    }
}

/// What the core answers a decision job.
#[derive(Debug)]
struct Answer {
    framed: Vec<u8>,
    receipt: ContentId,
    allow: bool,
    /// Whether it was decided now (not a repeat, not refused before deciding).
    fresh: bool,
    /// For an allowed continuation: the binding as it stands after it.
    continued: Option<(String, Box<Binding>)>,
    /// The verdict the caller gets (for the exposition).
    verdict: Verdict,
    /// Answered from memory: not decided again.
    repeat: bool,
}

struct Core {
    gate: DurableGate,
    read: File,
    /// Hands appended batches to the sync thread (`None` once stopping).
    syncer: Option<std::sync::mpsc::Sender<Pending>>,
    sync_thread: Option<std::thread::JoinHandle<()>>,
    /// Batches whose sync failed, back from the sync thread.
    unsynced: std::sync::mpsc::Receiver<(String, Pending)>,
    table: HashMap<ContentId, Entry>,
    handles: HashMap<String, Binding>,
    window_s: u64,
    clock: Clock,
    failed: Option<String>,
    stats: Arc<Stats>,
    last_sweep: u64,
    /// §4.5: this point's key per channel grant.
    point_keys: HashMap<ContentId, Keypair>,
    metrics: Arc<WireMetrics>,
}

fn framed_response(d: WireDecision, receipt: Vec<u8>) -> Vec<u8> {
    codec::frame_value(&WireResponse { decision: d, receipt }.to_value())
}

fn wire_decision(verdict: Verdict, cost_uj: u64, budget_uj: u64, remaining: u64) -> WireDecision {
    WireDecision {
        verdict,
        debited_uj: if verdict == Verdict::Allow { cost_uj } else { 0 },
        budget_uj,
        budget_remaining_uj: remaining,
    }
}

impl Core {
    /// The spend now counted against each of `grants`, for the exposition.
    fn note_spend(&self, grants: &[ContentId]) {
        for id in grants {
            self.metrics.spent(id, self.gate.gate().spent(id).uj);
        }
    }

    fn now(&self) -> u64 {
        (self.clock)()
    }

    fn in_window(&self, stamp: u64, now: u64) -> bool {
        stamp.abs_diff(now) <= self.window_s
    }

    /// Forgets requests whose stamp has left the window (a repeat of one is
    /// stale anyway), at most once a second.
    fn sweep(&mut self, now: u64) {
        if now == self.last_sweep {
            return;
        }
        self.last_sweep = now;
        let w = self.window_s;
        self.table.retain(|_, e| e.stamp.saturating_add(w) >= now);
        self.stats.remembered.store(self.table.len() as u64, Ordering::Relaxed);
    }

    fn read_receipt_at(&mut self, at: u64) -> Result<Vec<u8>, String> {
        let mut head = [0u8; 13];
        self.read.seek(SeekFrom::Start(at)).map_err(|e| e.to_string())?;
        self.read.read_exact(&mut head[..9]).map_err(|e| e.to_string())?;
        if head[4] != RecordKind::Receipt.byte() {
            return Err(format!("the record at offset {at} is not a receipt"));
        }
        let len = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) as usize;
        if len > jcp_receipt::stream::MAX_RECORD_LEN {
            return Err(format!("the record at offset {at} declares {len} bytes"));
        }
        let mut body = vec![0u8; len];
        self.read.read_exact(&mut body).map_err(|e| e.to_string())?;
        Ok(body)
    }

    /// The answer to a repeat: the first response, rebuilt from the
    /// recorded receipt (the decision is a function of it).
    fn repeat(&mut self, e: Entry) -> Result<Answer, String> {
        let bytes = self.read_receipt_at(e.receipt_at)?;
        let v = jcp_receipt::verify_receipt(&bytes, Some(&self.gate.steward())).map_err(|e| e.to_string())?;
        let c = &v.core;
        let d = wire_decision(c.verdict, c.cost_uj, c.budget_uj, c.budget_remaining_uj);
        let receipt = ContentId::of_bytes(&bytes);
        Ok(Answer {
            framed: framed_response(d, bytes),
            receipt,
            allow: c.is_allow(),
            fresh: false,
            continued: None,
            verdict: c.verdict,
            repeat: true,
        })
    }

    fn unrecorded(&mut self, req: &WireRequest, why: &str) -> Answer {
        self.stats.unrecorded.fetch_add(1, Ordering::Relaxed);
        let cost = req.decision_cost();
        let r = Request {
            frame: &req.frame,
            chain: &req.chain,
            caller: &req.caller,
            cost: &cost,
            now: self.now(),
            flow: req.label.as_ref(),
        };
        let (d, bytes) = match self.gate.seal_unrecorded(&r, why) {
            Ok(x) => x,
            Err(e) => {
                // Not even sealable: answer with an empty receipt; the
                // decision says unrecorded.
                tracing::error!("sealing an unrecorded refusal failed: {e}");
                (self.gate.refusal(&r, Reason::Unrecorded, why), Vec::new())
            }
        };
        let receipt = ContentId::of_bytes(&bytes);
        let wd = wire_decision(d.verdict, req.cost.uj, d.budget_uj, d.budget_remaining_uj);
        Answer {
            framed: framed_response(wd, bytes),
            receipt,
            allow: false,
            fresh: false,
            continued: None,
            verdict: d.verdict,
            repeat: false,
        }
    }

    fn fail(&mut self, why: String) {
        tracing::error!("the record failed; every later request is refused unrecorded: {why}");
        self.failed = Some(why);
    }

    fn decide(&mut self, req: &WireRequest, req_bytes: Vec<u8>, id: ContentId, signed_ok: bool) -> Answer {
        let now = self.now();
        self.sweep(now);
        if let Some(why) = self.failed.clone() {
            return self.unrecorded(req, &format!("the record cannot be written: {why}"));
        }
        // A repeat inside the window: the first response, nothing else.
        if let Some(e) = self.table.get(&id).copied() {
            if self.in_window(e.stamp, now) {
                self.stats.repeats.fetch_add(1, Ordering::Relaxed);
                return match self.repeat(e) {
                    Ok(a) => a,
                    Err(why) => self.unrecorded(req, &format!("the recorded response cannot be read back: {why}")),
                };
            }
        }
        let cost = req.decision_cost();
        let base = Request {
            frame: &req.frame,
            chain: &req.chain,
            caller: &req.caller,
            cost: &cost,
            now,
            flow: req.label.as_ref(),
        };
        // Refused before deciding: sealed and recorded, never remembered.
        let refusal = if !self.in_window(req.now, now) {
            self.stats.stale.fetch_add(1, Ordering::Relaxed);
            Some((
                Reason::StaleRequest,
                format!(
                    "stamp {} is {} s from the endpoint's clock {now}; window {} s",
                    req.now,
                    req.now.abs_diff(now),
                    self.window_s
                ),
            ))
        } else if !signed_ok {
            self.stats.impersonated.fetch_add(1, Ordering::Relaxed);
            Some((Reason::BadSignature, format!("the caller's signature does not verify under {}", req.caller)))
        } else {
            None
        };
        if let Some((reason, why)) = refusal {
            return match self.gate.record_refusal(&base, reason, why) {
                Ok(rec) => {
                    let wd = wire_decision(
                        rec.decision.verdict,
                        req.cost.uj,
                        rec.decision.budget_uj,
                        rec.decision.budget_remaining_uj,
                    );
                    Answer {
                        framed: framed_response(wd, rec.sealed),
                        receipt: rec.receipt,
                        allow: false,
                        fresh: false,
                        continued: None,
                        verdict: rec.decision.verdict,
                        repeat: false,
                    }
                }
                Err(e) => {
                    self.fail(e.to_string());
                    self.unrecorded(req, &e.to_string())
                }
            };
        }
        // Admitted: the request is recorded, then decided (its receipt
        // follows it in the stream).
        // One wire form (§11): the body a request was decoded from is its
        // canonical encoding (held by the `wire_decode` fuzz target).
        debug_assert!(req_bytes == req.to_bytes(), "a request's bytes are not its canonical encoding");
        if let Err(e) = self.gate.append_record(RecordKind::Request, &request_record(req_bytes, now)) {
            self.fail(e.to_string());
            return self.unrecorded(req, &e.to_string());
        }
        let (rec, continued) = match &req.continues {
            None => match self.gate.decide(&base) {
                Ok(rec) => (rec, None),
                Err(e) => {
                    self.fail(e.to_string());
                    return self.unrecorded(req, &e.to_string());
                }
            },
            Some(handle) => match self.decide_continuation(req, handle, &cost, now) {
                Ok(x) => x,
                Err(e) => {
                    self.fail(e.to_string());
                    return self.unrecorded(req, &e.to_string());
                }
            },
        };
        self.table.insert(id, Entry { stamp: req.now, receipt_at: rec.offset });
        self.stats.remembered.store(self.table.len() as u64, Ordering::Relaxed);
        self.stats.decided.fetch_add(1, Ordering::Relaxed);
        let allow = rec.decision.is_allow();
        if allow {
            self.stats.allowed.fetch_add(1, Ordering::Relaxed);
        }
        if allow {
            self.note_spend(&rec.decision.chain_ids);
        }
        if let Some(leaf) = rec.decision.chain_ids.last() {
            self.metrics.budget(leaf, rec.decision.budget_uj);
        }
        let wd =
            wire_decision(rec.decision.verdict, req.cost.uj, rec.decision.budget_uj, rec.decision.budget_remaining_uj);
        Answer {
            framed: framed_response(wd, rec.sealed),
            receipt: rec.receipt,
            allow,
            fresh: true,
            continued,
            verdict: rec.decision.verdict,
            repeat: false,
        }
    }

    /// §6.1: a later exchange is decided against the grant the first was
    /// decided on, at its own time; its payload must name the receipt it
    /// continues. An unknown, closed or forgotten handle is refused and
    /// sealed.
    #[allow(clippy::type_complexity)]
    fn decide_continuation(
        &mut self,
        req: &WireRequest,
        handle: &str,
        cost: &Cost,
        now: u64,
    ) -> Result<(jcp_receipt::runtime::Recorded, Option<(String, Box<Binding>)>), jcp_receipt::Error> {
        let base =
            Request { frame: &req.frame, chain: &req.chain, caller: &req.caller, cost, now, flow: req.label.as_ref() };
        let Some(b) = self.handles.get(handle).cloned() else {
            let rec = self.gate.record_refusal(
                &base,
                Reason::UnknownContinuation,
                format!("handle {handle:?} was not returned to a request decided here (or is closed or forgotten)"),
            )?;
            return Ok((rec, None));
        };
        // The payload must commit to the receipt it continues.
        let payload_ok = req
            .args
            .as_deref()
            .and_then(|a| Continuation::from_bytes(a).ok())
            .is_some_and(|c| c.continues == b.last && c.handle == handle);
        let frame_ok = req.frame.kind == b.frame.kind
            && req.frame.trust == Trust::Control
            && req.frame.grant_id == b.frame.grant_id
            && req.frame.action == b.frame.action
            && req.frame.resource == b.frame.resource
            && req.frame.model == b.frame.model;
        if !payload_ok || !frame_ok {
            let why = if payload_ok {
                "the later exchange's frame is not the first request's (kind, grant, action, resource)"
            } else {
                "the later exchange's payload does not name the receipt it continues"
            };
            let rec = self.gate.record_refusal(&base, Reason::WrongResource, why)?;
            return Ok((rec, None));
        }
        // Decided against the bound chain, not whatever chain was presented.
        let bound =
            Request { frame: &req.frame, chain: &b.chain, caller: &req.caller, cost, now, flow: req.label.as_ref() };
        let rec = self.gate.decide(&bound)?;
        if !rec.decision.is_allow() {
            return Ok((rec, None));
        }
        let mut nb = b;
        nb.last = rec.receipt;
        nb.continuations.push(rec.receipt);
        nb.joules_uj = nb.joules_uj.saturating_add(req.cost.uj);
        if let Some(l) = &req.label {
            nb.label = nb.label.join(l);
        } else {
            // Not computed is not clean (§4.10): the output's label is ⊤.
            nb.label = Label::top();
        }
        self.handles.insert(handle.to_owned(), nb.clone());
        Ok((rec, Some((handle.to_owned(), Box::new(nb)))))
    }

    fn feed(&mut self, feed: &Feed) -> FeedAnswer {
        if let Some(why) = &self.failed {
            return FeedAnswer {
                admitted: false,
                code: "unrecorded".into(),
                message: format!("the record cannot be written: {why}"),
                known_through: None,
            };
        }
        let res = match feed {
            Feed::Revocation { revocation, grant, marker } => self
                .gate
                .admit_revocation(revocation, grant, *marker)
                .map(|_| format!("revocation of {} admitted at marker {marker}", grant.id())),
            Feed::Amendment { steered, checkpoint, amendment, continuation } => {
                self.gate.admit_amendment(steered, checkpoint, amendment, continuation).map(|_| {
                    format!(
                        "amendment {} admitted: grant {} superseded by {}",
                        amendment.id(),
                        steered.id(),
                        continuation.id()
                    )
                })
            }
            Feed::Statement(st) => self.gate.admit_statement(st).map(|_| {
                let c = st.statement();
                format!(
                    "statement of {} admitted: {} µJ settled at seq {} on grant {}",
                    c.point, c.spent_uj, c.seq, c.grant_id
                )
            }),
            Feed::Outcome(o) => {
                let refuse = |code: &str, message: String| FeedAnswer {
                    admitted: false,
                    code: code.into(),
                    message,
                    known_through: None,
                };
                if !o.verify_signature() {
                    return FeedAnswer {
                        known_through: self.gate.known_through(),
                        ..refuse("bad-signature", format!("the outcome's signature does not verify under {}", o.holder))
                    };
                }
                match self.gate.pending_of(&o.receipt) {
                    None => {
                        return FeedAnswer {
                            known_through: self.gate.known_through(),
                            ..refuse("outcome-unknown", format!("no allowed decision {} awaits its outcome here (never decided here, or already settled)", o.receipt))
                        }
                    }
                    Some(p) if p.holder != o.holder => {
                        return FeedAnswer {
                            known_through: self.gate.known_through(),
                            ..refuse("wrong-subject", format!("only the holder {} reports this outcome, not {}", p.holder, o.holder))
                        }
                    }
                    Some(_) => {}
                }
                self.gate
                    .complete(&o.receipt, o.status)
                    .map(|_| format!("outcome of {} recorded: {}", o.receipt, o.status.as_str()))
            }
        };
        self.metrics.known_through(self.gate.known_through());
        if let (Ok(_), Feed::Statement(st)) = (&res, feed) {
            self.note_spend(&[st.statement().grant_id]);
        }
        match res {
            Ok(message) => FeedAnswer {
                admitted: true,
                code: "admitted".into(),
                message,
                known_through: self.gate.known_through(),
            },
            Err(e) => FeedAnswer {
                admitted: false,
                code: e.code().into(),
                message: e.to_string(),
                known_through: self.gate.known_through(),
            },
        }
    }

    /// §4.5: this point's signed statement of its cumulative allowed spend
    /// on a channel grant (a new one is recorded before it leaves).
    fn statement(&mut self, grant_id: &ContentId) -> Result<SignedStatement, FeedAnswer> {
        let refuse = |code: &str, message: String| FeedAnswer {
            admitted: false,
            code: code.into(),
            message,
            known_through: None,
        };
        if let Some(why) = &self.failed {
            return Err(refuse("unrecorded", format!("the record cannot be written: {why}")));
        }
        let Some(key) = self.point_keys.get(grant_id) else {
            let e = jcp::Error::ChannelUnknown { grant_id: grant_id.to_hex() };
            return Err(refuse(e.code(), e.to_string()));
        };
        match self.gate.issue_statement(grant_id, key) {
            Ok((s, _)) => Ok(s),
            Err(e) => Err(refuse(e.code(), e.to_string())),
        }
    }

    fn close(&mut self, handle: &str, outcome: ContentId, status: &'static str) -> Option<ContentId> {
        let b = self.handles.remove(handle)?;
        let c = Closing {
            first: b.first,
            continuations: b.continuations,
            joules_uj: b.joules_uj,
            coverage: Coverage::Partial,
            outcome,
            status,
        };
        match self.gate.record_closing(&c.to_value()) {
            Ok((id, _)) => Some(id),
            Err(e) => {
                self.fail(e.to_string());
                None
            }
        }
    }

    /// Answers a batch none of whose records is known durable: every
    /// decision in it `unrecorded`, every admission refused.
    fn answer_unrecorded(&mut self, why: &str, p: Pending) {
        for (tx, a, req) in p.decided {
            let a = if a.fresh || a.allow {
                self.unrecorded(&req, &format!("the record cannot be written: {why}"))
            } else {
                a
            };
            self.metrics.answered(a.verdict, a.repeat);
            let _ = tx.send(a);
        }
        for (tx, _) in p.fed {
            let _ = tx.send(FeedAnswer {
                admitted: false,
                code: "unrecorded".into(),
                message: format!("the record cannot be written: {why}"),
                known_through: None,
            });
        }
        for (tx, _) in p.closed {
            let _ = tx.send(None);
        }
        for (tx, _) in p.stated {
            let _ = tx.send(Err(FeedAnswer {
                admitted: false,
                code: "unrecorded".into(),
                message: format!("the record cannot be written: {why}"),
                known_through: None,
            }));
        }
    }

    /// Batches the sync thread could not make durable: the record has
    /// failed; they are answered `unrecorded`.
    fn take_unsynced(&mut self) {
        while let Ok((why, p)) = self.unsynced.try_recv() {
            if self.failed.is_none() {
                self.fail(why);
            }
            let why = self.failed.clone().unwrap_or_default();
            self.answer_unrecorded(&why, p);
        }
    }

    /// Hands a decided batch to the sync thread; its answers leave once it
    /// is durable. With the record failed, it is answered here.
    fn commit(&mut self, mut p: Pending) {
        if let Some(why) = self.failed.clone() {
            self.answer_unrecorded(&why, p);
            return;
        }
        p.end = self.gate.writer().len();
        let refused = match &self.syncer {
            Some(tx) => tx.send(p).err().map(|e| e.0),
            None => Some(p),
        };
        if let Some(p) = refused {
            self.fail("the sync thread has stopped".into());
            let why = self.failed.clone().unwrap_or_default();
            self.answer_unrecorded(&why, p);
        }
    }

    /// Waits for the sync thread to finish what it holds, answers anything
    /// it could not sync, then syncs and closes the record.
    fn finish(mut self) -> Result<(), String> {
        drop(self.syncer.take());
        if let Some(t) = self.sync_thread.take() {
            if t.join().is_err() {
                self.fail("the sync thread panicked".into());
            }
        }
        self.take_unsynced();
        self.gate.close().map_err(|e| e.to_string())
    }

    /// The core loop: take a batch, decide and append each, hand it to the
    /// sync thread (group commit: its answers leave once it is durable),
    /// take the next batch.
    fn run(mut self, mut rx: mpsc::Receiver<Job>, batch_max: usize) {
        let mut batch: Vec<Job> = Vec::with_capacity(batch_max);
        loop {
            self.take_unsynced();
            let Some(first) = rx.blocking_recv() else { break };
            batch.push(first);
            while batch.len() < batch_max {
                match rx.try_recv() {
                    Ok(j) => batch.push(j),
                    Err(_) => break,
                }
            }
            // A failed sync is known before this batch is decided.
            self.take_unsynced();
            let mut p = Pending::default();
            let mut shutdown = None;
            for job in batch.drain(..) {
                match job {
                    Job::Decide { req, bytes, id, signed_ok, tx } => {
                        let a = self.decide(&req, bytes, id, signed_ok);
                        p.decided.push((tx, a, req));
                    }
                    Job::Feed { feed, tx } => {
                        let a = self.feed(&feed);
                        p.fed.push((tx, a));
                    }
                    Job::Outcome { receipt, status } => {
                        if self.failed.is_none() {
                            if let Err(e) = self.gate.complete(&receipt, status) {
                                tracing::warn!("outcome of {receipt} not recorded: {e}");
                            }
                        }
                    }
                    Job::Bind { handle, binding } => {
                        self.handles.insert(handle, *binding);
                    }
                    Job::Close { handle, outcome, status, tx } => {
                        let c = self.close(&handle, outcome, status);
                        p.closed.push((tx, c));
                    }
                    Job::Shutdown { tx } => shutdown = Some(tx),
                    Job::Statement { grant_id, tx } => {
                        let a = self.statement(&grant_id);
                        p.stated.push((tx, a));
                    }
                    Job::Ledger { grant_id, tx } => {
                        let _ = tx.send(self.gate.gate().channel(&grant_id).map(|c| c.channel().ledger()));
                    }
                    Job::Wake => {}
                }
            }
            // Group commit: the batch is durable before anything leaves.
            self.commit(p);
            if let Some(tx) = shutdown {
                let _ = tx.send(self.finish());
                return;
            }
        }
        if let Err(e) = self.finish() {
            tracing::error!("closing the record failed: {e}");
        }
    }
}

/// A running endpoint's shared part: what connection tasks hold.
struct Shared {
    tx: mpsc::Sender<Job>,
    stats: Arc<Stats>,
    metrics: Arc<WireMetrics>,
    cap: usize,
    frame_timeout: Duration,
    backend: Option<Arc<dyn Backend>>,
    stopping: AtomicBool,
    conns: Arc<tokio::sync::Semaphore>,
}

/// An enforcement endpoint: open it on its record, then serve listeners.
#[derive(Clone)]
pub struct Endpoint {
    shared: Arc<Shared>,
    core: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
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
        let now = (config.clock)();
        let mut table: HashMap<ContentId, Entry> = HashMap::new();
        let mut counts = (0u64, 0u64, 0u64); // recorded, unreadable, closings
                                             // A request record is remembered only when the record right after
                                             // it is its receipt (they are written together; a torn batch may
                                             // have kept the one and cut the other).
        let mut awaiting: Option<(u64, u64, ContentId)> = None; // (stamp, expected receipt offset, id)
        let window = config.window_s;
        let mut visit = |offset: u64, kind: RecordKind, payload: &[u8]| {
            if let Some((stamp, at, id)) = awaiting.take() {
                if kind == RecordKind::Receipt && offset == at && stamp.abs_diff(now) <= window {
                    table.insert(id, Entry { stamp, receipt_at: at });
                }
            }
            match kind {
                RecordKind::Request => {
                    counts.0 += 1;
                    match read_request_record(payload) {
                        Ok((req, _)) => {
                            let at = offset + (FRAME_OVERHEAD + payload.len()) as u64;
                            awaiting = Some((req.now, at, req.id()));
                        }
                        Err(_) => counts.1 += 1,
                    }
                }
                RecordKind::Closing => counts.2 += 1,
                _ => {}
            }
        };
        // Channels are configuration, before replay re-admits their statements.
        let mut gate = gate;
        let mut point_keys = HashMap::new();
        for c in &config.channels {
            gate.join_channel(c.grant.clone(), c.point.did(), c.peers.iter().copied())?;
            point_keys.insert(c.grant.id(), c.point.clone());
        }
        let (mut gate, replay) =
            DurableGate::open_with_records(&config.stream, steward, gate, Durability::GroupCommit, &mut visit)?;
        if let Some(k) = config.known_through {
            if gate.known_through().is_none_or(|have| have < k) {
                gate.set_known_through(k)?;
            }
        }
        let read = File::open(&config.stream)
            .map_err(|e| WireError::io(format!("opening {} to read", config.stream.display()), e))?;
        let stats = Arc::new(Stats::default());
        stats.remembered.store(table.len() as u64, Ordering::Relaxed);
        let report = OpenReport {
            replay,
            requests_recorded: counts.0,
            requests_remembered: table.len() as u64,
            requests_unreadable: counts.1,
            closings: counts.2,
        };
        let (tx, rx) = mpsc::channel(config.batch_max.max(1) * 4);
        let (to_sync, sync_rx) = std::sync::mpsc::channel();
        let (back, unsynced) = std::sync::mpsc::channel();
        let sync_file = std::fs::OpenOptions::new()
            .write(true)
            .open(&config.stream)
            .map_err(|e| WireError::io(format!("opening {} to sync", config.stream.display()), e))?;
        let metrics = Arc::new(WireMetrics::new());
        metrics.known_through(gate.known_through());
        for (id, spend) in gate.gate().spent_grants() {
            metrics.spent(&id, spend.uj);
        }
        let syncer = Syncer {
            file: sync_file,
            synced: 0,
            failed: None,
            rx: sync_rx,
            back,
            wake: tx.downgrade(),
            stats: stats.clone(),
            metrics: metrics.clone(),
        };
        let sync_thread = std::thread::Builder::new()
            .name("jcp-endpoint-sync".into())
            .spawn(move || syncer.run())
            .map_err(|e| WireError::io("starting the endpoint's sync thread", e))?;
        let core = Core {
            gate,
            read,
            syncer: Some(to_sync),
            sync_thread: Some(sync_thread),
            unsynced,
            table,
            handles: HashMap::new(),
            window_s: config.window_s,
            clock: config.clock.clone(),
            failed: None,
            stats: stats.clone(),
            last_sweep: now,
            point_keys,
            metrics: metrics.clone(),
        };
        let batch_max = config.batch_max.max(1);
        let handle = std::thread::Builder::new()
            .name("jcp-endpoint-core".into())
            .spawn(move || core.run(rx, batch_max))
            .map_err(|e| WireError::io("starting the endpoint's core thread", e))?;
        let shared = Arc::new(Shared {
            tx,
            stats,
            metrics,
            cap: config.cap,
            frame_timeout: config.frame_timeout,
            backend,
            stopping: AtomicBool::new(false),
            conns: Arc::new(tokio::sync::Semaphore::new(config.max_connections.max(1))),
        });
        Ok((Self { shared, core: Arc::new(Mutex::new(Some(handle))) }, report))
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
            remembered_bytes: remembered_table_bytes(remembered),
            refused_frames: s.refused_frames.load(Ordering::Relaxed),
        }
    }

    /// The endpoint's metrics registry (decisions, commit latency, the
    /// revocation marker, spend per grant).
    pub fn metrics(&self) -> Arc<WireMetrics> {
        self.shared.metrics.clone()
    }

    /// The exposition now (`jcp serve --metrics`): a complete `OpenMetrics` message.
    pub fn render_metrics(&self) -> Result<String, std::fmt::Error> {
        self.shared.metrics.render(self.shared.stats.remembered.load(Ordering::Relaxed))
    }

    /// Decides one request in-process (through the same core, record and
    /// memory as a socket request): the response's framed bytes.
    pub async fn submit(&self, req: WireRequest) -> Result<Vec<u8>, WireError> {
        let bytes = req.to_bytes();
        let (id, signed_ok) = authenticate(&req, &bytes);
        let (tx, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Job::Decide { req: Box::new(req), bytes, id, signed_ok, tx })
            .await
            .map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))?;
        let a = rx.await.map_err(|_| WireError::Stopped("the endpoint's core has stopped".into()))?;
        Ok(a.framed)
    }

    /// Hands a feed message to the core (recorded, then applied).
    pub async fn feed(&self, feed: Feed) -> Result<FeedAnswer, WireError> {
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

    /// Serves one listener until [`Endpoint::shutdown`].
    pub async fn serve(&self, listener: Listener) -> Result<(), WireError> {
        loop {
            if self.shared.stopping.load(Ordering::Acquire) {
                return Ok(());
            }
            let permit =
                self.shared.conns.clone().acquire_owned().await.map_err(|_| WireError::Stopped("closed".into()))?;
            let accepted = match &listener {
                Listener::Tcp(l) => l.accept().await.map(|(s, _)| Conn::Tcp(s)),
                #[cfg(unix)]
                Listener::Unix(l) => l.accept().await.map(|(s, _)| Conn::Unix(s)),
            };
            match accepted {
                Ok(conn) => {
                    let shared = self.shared.clone();
                    tokio::spawn(async move {
                        let _permit = permit;
                        match conn {
                            Conn::Tcp(s) => {
                                let _ = s.set_nodelay(true);
                                serve_conn(shared, s).await;
                            }
                            #[cfg(unix)]
                            Conn::Unix(s) => serve_conn(shared, s).await,
                        }
                    });
                }
                Err(e) => {
                    // A failed accept (a reset before accept, fd exhaustion)
                    // is the peer's or the moment's; keep serving.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
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

/// The table's bytes for `n` remembered requests: hashbrown keeps a
/// power-of-two bucket count at most 7/8 full.
pub fn remembered_table_bytes(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let buckets = (n.saturating_mul(8) / 7).max(4).next_power_of_two();
    buckets.saturating_mul(REMEMBERED_ENTRY_BYTES as u64)
}

/// A listening socket.
#[derive(Debug)]
pub enum Listener {
    /// TCP.
    Tcp(tokio::net::TcpListener),
    /// A Unix socket.
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
}

enum Conn {
    Tcp(tokio::net::TcpStream),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

/// Where to listen or connect: `tcp:HOST:PORT` or `unix:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A TCP address.
    Tcp(String),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl std::str::FromStr for Address {
    type Err = WireError;
    fn from_str(s: &str) -> Result<Self, WireError> {
        if let Some(rest) = s.strip_prefix("tcp:") {
            if rest.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) {
                return Ok(Self::Tcp(rest.to_owned()));
            }
        } else if let Some(rest) = s.strip_prefix("unix:") {
            if !rest.is_empty() {
                return Ok(Self::Unix(PathBuf::from(rest)));
            }
        }
        Err(WireError::BadAddress(s.to_owned()))
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(a) => write!(f, "tcp:{a}"),
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

impl Address {
    /// Binds a listener. A Unix path left by a process that is gone is
    /// replaced; one a live endpoint answers on is refused.
    pub async fn bind(&self) -> Result<(Listener, Address), WireError> {
        match self {
            Self::Tcp(a) => {
                let l =
                    tokio::net::TcpListener::bind(a).await.map_err(|e| WireError::io(format!("binding tcp:{a}"), e))?;
                let local = l.local_addr().map_err(|e| WireError::io("reading the bound address", e))?;
                Ok((Listener::Tcp(l), Self::Tcp(local.to_string())))
            }
            #[cfg(unix)]
            Self::Unix(p) => {
                if p.exists() {
                    if tokio::net::UnixStream::connect(p).await.is_ok() {
                        return Err(WireError::io(
                            format!("binding unix:{}", p.display()),
                            std::io::Error::new(
                                std::io::ErrorKind::AddrInUse,
                                "a live endpoint answers on this socket",
                            ),
                        ));
                    }
                    std::fs::remove_file(p)
                        .map_err(|e| WireError::io(format!("removing the stale socket {}", p.display()), e))?;
                }
                let l = tokio::net::UnixListener::bind(p)
                    .map_err(|e| WireError::io(format!("binding unix:{}", p.display()), e))?;
                Ok((Listener::Unix(l), self.clone()))
            }
            #[cfg(not(unix))]
            Self::Unix(p) => {
                Err(WireError::BadAddress(format!("unix:{} (no Unix sockets on this platform)", p.display())))
            }
        }
    }
}

fn error_frame(e: &WireError) -> Vec<u8> {
    codec::frame_value(&cbor::map([
        ("msg", Some(Value::text("error"))),
        ("code", Some(Value::text(e.code()))),
        ("message", Some(Value::text(e.to_string()))),
    ]))
}

/// Reads one frame: waits as long as it takes for a frame to start, then
/// at most `frame_timeout` for the rest (a half frame that hangs is cut).
async fn next_frame<S: AsyncRead + Unpin>(
    s: &mut S,
    cap: usize,
    timeout: Duration,
) -> Result<Option<Vec<u8>>, WireError> {
    use tokio::io::AsyncReadExt;
    let mut first = [0u8; 1];
    let n = s.read(&mut first).await.map_err(|e| WireError::io("reading", e))?;
    if n == 0 {
        return Ok(None);
    }
    let rest = async {
        let mut head = [0u8; 4];
        head[0] = first[0];
        s.read_exact(&mut head[1..]).await.map_err(|_| WireError::Truncated { got: 1, want: 4 })?;
        let declared = u32::from_be_bytes(head);
        let n = usize::try_from(declared).unwrap_or(usize::MAX);
        if n > cap {
            return Err(WireError::Oversized { declared: u64::from(declared), cap });
        }
        let mut body = vec![0u8; n];
        s.read_exact(&mut body).await.map_err(|_| WireError::Truncated { got: 4, want: n + 4 })?;
        Ok(body)
    };
    match tokio::time::timeout(timeout, rest).await {
        Ok(r) => r.map(Some),
        Err(_) => Err(WireError::Timeout { secs: timeout.as_secs() }),
    }
}

async fn serve_conn<S: AsyncRead + AsyncWrite + Unpin>(shared: Arc<Shared>, s: S) {
    // Buffered reads: a frame's length and body (and any frames a client
    // sent behind it) come in one read from the socket, not three.
    // Writes go straight through.
    let mut s = tokio::io::BufReader::new(s);
    loop {
        let body = match next_frame(&mut s, shared.cap, shared.frame_timeout).await {
            Ok(Some(b)) => b,
            Ok(None) => return,
            Err(e) => {
                shared.stats.refused_frames.fetch_add(1, Ordering::Relaxed);
                shared.metrics.refused_frame();
                let _ = codec::write_frame(&mut s, &error_frame(&e)).await;
                return;
            }
        };
        let msg = match Inbound::decode(&body) {
            Ok(m) => m,
            Err(e) => {
                shared.stats.refused_frames.fetch_add(1, Ordering::Relaxed);
                shared.metrics.refused_frame();
                let _ = codec::write_frame(&mut s, &error_frame(&e)).await;
                return;
            }
        };
        let ok = match msg {
            Inbound::Request(req) => handle_request(&shared, &mut s, req, body).await,
            Inbound::StatementAsk(grant_id) => {
                let (tx, rx) = oneshot::channel();
                if shared.tx.send(Job::Statement { grant_id, tx }).await.is_err() {
                    return;
                }
                let framed = match rx.await {
                    Ok(Ok(st)) => codec::frame_value(&crate::message::statement_answer(&st)),
                    Ok(Err(a)) => codec::frame_value(&a.to_value()),
                    Err(_) => return,
                };
                codec::write_frame(&mut s, &framed).await.is_ok()
            }
            Inbound::Feed(feed) => {
                let (tx, rx) = oneshot::channel();
                if shared.tx.send(Job::Feed { feed, tx }).await.is_err() {
                    return;
                }
                match rx.await {
                    Ok(a) => codec::write_frame(&mut s, &codec::frame_value(&a.to_value())).await.is_ok(),
                    Err(_) => false,
                }
            }
        };
        if !ok {
            return;
        }
    }
}

/// `body` is the frame body `req` was decoded from: its canonical bytes.
async fn handle_request<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Arc<Shared>,
    s: &mut S,
    req: Box<WireRequest>,
    body: Vec<u8>,
) -> bool {
    // The caller's signature is checked here, on the runtime's worker
    // threads (every core); the core thread decides what a failure means
    // (§11: sealed, not remembered).
    let (id, signed_ok) = authenticate(&req, &body);
    let (tx, rx) = oneshot::channel();
    let frame = req.frame.clone();
    let args = req.args.clone();
    let continues = req.continues.clone();
    let label = req.label.clone();
    // A first request's chain, kept to bind a handle the backend returns.
    let chain = if shared.backend.is_some() && continues.is_none() { req.chain.clone() } else { Vec::new() };
    if shared.tx.send(Job::Decide { req, bytes: body, id, signed_ok, tx }).await.is_err() {
        return false;
    }
    let Ok(a) = rx.await else { return false };
    if codec::write_frame(s, &a.framed).await.is_err() {
        return false;
    }
    // The endpoint behind the gate runs only on a fresh allow, after the
    // allow is durable (the core answered only after its commit).
    let Some(backend) = shared.backend.clone() else { return true };
    if !a.allow {
        return true;
    }
    if !a.fresh {
        let reply = WireReply {
            receipt: a.receipt,
            state: ReplyState::Unavailable,
            handle: None,
            output: Vec::new(),
            label: Label::top(),
            closing: None,
        };
        return codec::write_frame(s, &codec::frame_value(&reply.to_value())).await.is_ok();
    }
    let answers = continues
        .as_ref()
        .and_then(|_| args.as_deref().and_then(|a| Continuation::from_bytes(a).ok()))
        .and_then(|c| c.answers);
    let f2 = frame.clone();
    let a2 = args.clone();
    let c2 = continues.clone();
    let reply = tokio::task::spawn_blocking(move || {
        let call = Call {
            frame: &f2,
            args: if c2.is_some() { None } else { a2.as_deref() },
            continues: c2.as_deref().map(|h| (h, answers.as_deref())),
        };
        backend.call(call)
    })
    .await
    .unwrap_or_else(|_| BackendReply::Failed(b"the endpoint behind the gate panicked".to_vec()));
    // The exchange itself completed or failed (§4.11 outcome).
    let status =
        if matches!(reply, BackendReply::Failed(_)) { OutcomeStatus::Failed } else { OutcomeStatus::Completed };
    let _ = shared.tx.send(Job::Outcome { receipt: a.receipt, status }).await;
    // §6.1 item 3: what comes back is data, labelled as the output of the
    // first request's action joined with everything the client sent.
    let sent = match (&a.continued, &label) {
        (Some((_, b)), _) => b.label.clone(),
        (None, Some(l)) => l.clone(),
        (None, None) => Label::top(),
    };
    let action = a.continued.as_ref().map_or(frame.action.clone(), |(_, b)| b.frame.action.clone());
    let out_label = Label::untrusted_from([format!("output:{action}")]).join(&sent);
    let (state, handle, output) = match reply {
        BackendReply::Done(o) => (ReplyState::Done, None, o),
        BackendReply::Failed(o) => (ReplyState::Failed, None, o),
        BackendReply::Working { handle, status } => (ReplyState::Working, Some(handle), status),
        BackendReply::InputRequired { handle, prompt } => (ReplyState::InputRequired, Some(handle), prompt),
    };
    let mut closing = None;
    match (&state, &handle, &a.continued) {
        // Work goes on: bind the handle to the grant this request was
        // decided on (the first time), or keep the binding moving.
        (ReplyState::Working | ReplyState::InputRequired, Some(h), cont) => {
            let binding = match cont {
                Some((_, b)) => b.as_ref().clone(),
                None => Binding {
                    chain,
                    frame: frame.clone(),
                    first: a.receipt,
                    last: a.receipt,
                    continuations: Vec::new(),
                    joules_uj: 0,
                    label: sent.clone(),
                },
            };
            let _ = shared.tx.send(Job::Bind { handle: h.clone(), binding: Box::new(binding) }).await;
        }
        // Work finished on a continuation: seal the closing record.
        (ReplyState::Done | ReplyState::Failed, _, Some((h, _))) => {
            let (tx, rx) = oneshot::channel();
            let st = if state == ReplyState::Done { "done" } else { "failed" };
            if shared
                .tx
                .send(Job::Close { handle: h.clone(), outcome: ContentId::of_bytes(&output), status: st, tx })
                .await
                .is_ok()
            {
                closing = rx.await.ok().flatten();
            }
        }
        _ => {}
    }
    let reply = WireReply { receipt: a.receipt, state, handle, output, label: out_label, closing };
    codec::write_frame(s, &codec::frame_value(&reply.to_value())).await.is_ok()
}

/// Opens the endpoint and binds its listeners: what `jcp serve` runs.
pub async fn bind_all(addrs: &[Address]) -> Result<Vec<(Listener, Address)>, WireError> {
    let mut out = Vec::new();
    for a in addrs {
        out.push(a.bind().await?);
    }
    Ok(out)
}

/// The path a Unix address names, if any (to remove it at shutdown).
pub fn unix_path(a: &Address) -> Option<&Path> {
    match a {
        Address::Unix(p) => Some(p),
        Address::Tcp(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use jcp::cbor::ContentId;
    use jcp::decision::{Gate, Reason};
    use jcp::energy::{Energy, Provenance};
    use jcp::flow::Label;
    use jcp::frame::{Frame, FrameKind, Trust};
    use jcp::grant::{Capability, Grant};
    use jcp::identity::Keypair;

    use super::*;
    use crate::message::{Outbound, RequestBody};

    /// Makes the sync thread's next syncs fail (only this module's test
    /// sets it).
    pub(super) static FAIL_SYNC: AtomicBool = AtomicBool::new(false);

    fn key(n: u8) -> Keypair {
        Keypair::from_seed([n; 32]).unwrap()
    }

    fn request(g: &SignedGrant, payload: &[u8]) -> WireRequest {
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
            cost: Energy::new(10, Provenance::HwShunt),
            money: None,
            label: Some(Label::bottom()),
            args: Some(payload.to_vec()),
            continues: None,
            now: 1_800_000_000,
        }
        .sign(&key(2))
    }

    fn decision(framed: &[u8]) -> WireDecision {
        match Outbound::decode(&framed[4..]).unwrap() {
            Outbound::Response(r) => r.decision,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn s11_the_signed_bytes_cut_from_a_request_are_the_encoded_ones() {
        let g = Grant {
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
        .unwrap();
        let plain = request(&g, b"q");
        let bare = WireRequest { label: None, args: None, ..plain.clone() };
        let full = RequestBody {
            frame: plain.frame.clone(),
            chain: vec![g.clone()],
            cost: plain.cost,
            money: Some(jcp::grant::Funds { currency: "EUR".into(), minor: 7 }),
            label: Some(Label::untrusted_from(["web"])),
            args: Some(b"q".to_vec()),
            continues: Some("h".repeat(128)),
            now: 1,
        }
        .sign(&key(2));
        for r in [plain, bare, full] {
            let bytes = r.to_bytes();
            assert_eq!(signed_bytes_of(&r, &bytes), r.signed_bytes());
            assert_eq!(authenticate(&r, &bytes), (r.id(), r.verify_signature()));
        }
        // Anything that is not a request's canonical tail is encoded instead.
        let r = request(&g, b"q");
        assert_eq!(signed_bytes_of(&r, b""), r.signed_bytes());
        assert_eq!(signed_bytes_of(&r, &r.signed_bytes()), r.signed_bytes());
    }

    #[test]
    fn s11_nothing_leaves_allowed_once_a_sync_fails_and_every_later_request_is_unrecorded() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = Config::new(dir.path().join("s.jcps"));
        cfg.clock = Arc::new(|| 1_800_000_000);
        let g = Grant {
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
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (ep, _) = Endpoint::open(cfg, key(90), Gate::new(), None).unwrap();
            let first = request(&g, b"one");
            assert!(decision(&ep.submit(first.clone()).await.unwrap()).is_allow());
            assert_eq!(ep.stats().commits, 1);
            FAIL_SYNC.store(true, Ordering::SeqCst);
            // Decided and appended, but its sync fails: answered unrecorded.
            let d = decision(&ep.submit(request(&g, b"two")).await.unwrap());
            assert_eq!(d.reason(), Some(Reason::Unrecorded), "{d:?}");
            assert_eq!(d.debited_uj, 0);
            FAIL_SYNC.store(false, Ordering::SeqCst);
            // The record has failed: everything after is unrecorded, a
            // repeat of a durable decision and a feed included.
            assert_eq!(decision(&ep.submit(request(&g, b"three")).await.unwrap()).reason(), Some(Reason::Unrecorded));
            assert_eq!(decision(&ep.submit(first).await.unwrap()).reason(), Some(Reason::Unrecorded));
            let rev = jcp::revocation::Revocation::issue(&g, &key(1), Some([3; 16])).unwrap();
            let a = ep.feed(Feed::Revocation { revocation: rev, grant: g.clone(), marker: 1 }).await.unwrap();
            assert_eq!((a.admitted, a.code.as_str()), (false, "unrecorded"), "{a:?}");
            let st = ep.stats();
            assert_eq!((st.commits, st.allowed), (1, 2), "{st:?}");
            assert!(st.unrecorded >= 3, "{st:?}");
            // The exposition counts what callers got: one allow (the durable
            // one), and the allow whose sync failed as the unrecorded deny it became.
            let text = ep.render_metrics().unwrap();
            assert!(text.contains("jcp_wire_decisions_total{verdict=\"allow\",reason=\"none\"} 1\n"), "{text}");
            assert!(text.contains("jcp_wire_decisions_total{verdict=\"deny\",reason=\"unrecorded\"} 3\n"), "{text}");
            assert!(text.contains("jcp_wire_record_commit_seconds_count 1\n"), "{text}");
            ep.shutdown().await.unwrap();
        });
    }
}
