//! §11 framing and serving: each connection reads length-prefixed frames
//! (a declared length over the cap, a frame that stops half way or a body
//! that is not canonical is refused and the connection closed), decodes the
//! message, checks a request's caller signature on the runtime's threads,
//! and hands it to the core thread. A client that misbehaves holds nothing
//! but its own task.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use jcp::cbor::{self, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use super::core_thread::Job;
use super::limits::Source;
use super::relay::{relay, Exchange};
use super::Shared;
use crate::codec;
use crate::error::WireError;
use crate::message::{ChainMemo, Feed, FeedAnswer, Inbound, WireRequest};

/// Whom a connection's feed messages come from (§4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FeedTrust {
    /// The operator: the owner-only admin socket, or in-process.
    Admin,
    /// Anyone who can connect: a revocation or amendment must be signed by
    /// a configured feed key.
    Network,
}

/// §4.3: a feed message as the core may take it. A signed one is admitted
/// from any connection when its key is configured and its signature (over
/// the inner message, marker included) holds, and is unwrapped; an unsigned
/// revocation or amendment — whose marker no signature covers — only from
/// the admin socket or in-process. Outcomes and statements carry their
/// senders' own signatures and no marker. A refusal is the answer.
pub(super) fn authenticate_feed(keys: &[jcp::identity::Did], feed: Feed, trust: FeedTrust) -> Result<Feed, FeedAnswer> {
    let refuse =
        |code: &str, message: String| FeedAnswer { admitted: false, code: code.into(), message, known_through: None };
    match feed {
        Feed::Signed { feed, by, sig } => {
            if !keys.contains(&by) {
                return Err(refuse(
                    "feed-unauthenticated",
                    format!("{by} is not one of this endpoint's feed keys (jcp serve --feed-key)"),
                ));
            }
            if !by.verify(&feed.to_value().encode(), &sig) {
                return Err(refuse("bad-signature", format!("the feed's signature does not verify under {by}")));
            }
            Ok(*feed)
        }
        f if f.carries_marker() && trust != FeedTrust::Admin => Err(refuse(
            "feed-unauthenticated",
            "a revocation or amendment carries a marker no signature covers: sign it with a configured feed key (jcp feed … --key, jcp serve --feed-key) or send it over the admin socket (jcp serve --admin unix:PATH)".into(),
        )),
        f => Ok(f),
    }
}

/// An accepted connection.
pub(super) enum Conn {
    Tcp(tokio::net::TcpStream),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

/// The `error` message a refused frame is answered with before its
/// connection closes.
pub(super) fn error_frame(e: &WireError) -> Vec<u8> {
    codec::frame_value(&cbor::map([
        ("msg", Some(Value::text("error"))),
        ("code", Some(Value::text(e.code()))),
        ("message", Some(Value::text(e.to_string()))),
    ]))
}

/// The endpoint's budget for frame bodies in flight (issue 34,
/// per-connection memory), as one connection draws on it.
#[derive(Clone, Copy)]
pub(super) struct BodyBudget<'a> {
    /// Every connection's frames: at most `all_max` bytes declared at once.
    pub(super) all: (&'a Arc<tokio::sync::Semaphore>, usize),
    /// For a connection not yet admitted, the share that all such
    /// connections may hold together (half the whole), drawn on as well:
    /// their half frames cannot take what admitted clients read.
    pub(super) unadmitted: Option<(&'a Arc<tokio::sync::Semaphore>, usize)>,
}

impl BodyBudget<'_> {
    /// Holds `n` declared bytes until the permits are dropped, or `busy`.
    /// A frame no larger than what a connection holds for any frame it
    /// reads ([`codec::FIRST_ALLOCATION`]) holds nothing: its memory is
    /// bounded by the connection count, and a well-behaved client's small
    /// request is never refused for a flood's half frames.
    fn hold(self, n: usize) -> Result<Vec<tokio::sync::OwnedSemaphorePermit>, WireError> {
        if n <= codec::FIRST_ALLOCATION {
            return Ok(Vec::new());
        }
        let permits = u32::try_from(n).unwrap_or(u32::MAX);
        let take = |(pool, max): (&Arc<tokio::sync::Semaphore>, usize), whose: &str| {
            pool.clone().try_acquire_many_owned(permits).map_err(|_| {
                WireError::Busy(format!(
                    "the endpoint reads at most {max} frame-body bytes at once over {whose}; try again"
                ))
            })
        };
        let mut held = Vec::with_capacity(2);
        if let Some(share) = self.unadmitted {
            held.push(take(share, "connections not yet admitted")?);
        }
        held.push(take(self.all, "all connections")?);
        Ok(held)
    }
}

/// The share of a body budget of `budget` bytes that connections not yet
/// admitted may hold together: half, but never less than one largest
/// frame (`cap`) the budget holds, so a first request the budget could
/// read is never refused for the share alone.
pub(super) fn unadmitted_share(budget: usize, cap: usize) -> usize {
    (budget / 2).max(cap.min(budget)).max(1)
}

/// Reads one frame: waits at most `wait` for a frame to start (`Idle` past
/// it; `first` says whether this is the connection's first frame), then at
/// most `timeout` for the rest (a half frame that hangs is cut).
pub(super) async fn next_frame<S: AsyncRead + Unpin>(
    s: &mut S,
    cap: usize,
    timeout: Duration,
    (wait, first): (Duration, bool),
    bodies: BodyBudget<'_>,
) -> Result<Option<Vec<u8>>, WireError> {
    use tokio::io::AsyncReadExt;
    let mut lead = [0u8; 1];
    let n = match tokio::time::timeout(wait, s.read(&mut lead)).await {
        Ok(r) => r.map_err(|e| WireError::io("reading", e))?,
        Err(_) => return Err(WireError::Idle { secs: wait.as_secs(), first }),
    };
    if n == 0 {
        return Ok(None);
    }
    let rest = async {
        let mut head = [0u8; 4];
        head[0] = lead[0];
        s.read_exact(&mut head[1..]).await.map_err(|_| WireError::Truncated { got: 1, want: 4 })?;
        let declared = u32::from_be_bytes(head);
        let n = usize::try_from(declared).unwrap_or(usize::MAX);
        if n > cap {
            return Err(WireError::Oversized { declared: u64::from(declared), cap });
        }
        // The declared length is held from the endpoint's body budget while
        // the body is read (given back once it is): past the budget, busy.
        let _held = bodies.hold(n)?;
        codec::read_body(s, n).await
    };
    match tokio::time::timeout(timeout, rest).await {
        Ok(r) => r.map(Some),
        Err(_) => Err(WireError::Timeout { secs: timeout.as_secs() }),
    }
}

/// A connection's place in its peer address's count, given back when the
/// connection ends.
pub(super) struct PeerSlot {
    peers: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
    /// `None`: a peer with no address (a Unix socket), not counted.
    peer: Option<std::net::IpAddr>,
}

impl PeerSlot {
    /// Counts one more connection of `peer`, unless it holds `max` already (`None`).
    pub(super) fn take(
        peers: &Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
        peer: Option<std::net::IpAddr>,
        max: usize,
    ) -> Option<Self> {
        if let Some(ip) = peer {
            let mut m = peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let n = m.entry(ip).or_insert(0);
            if *n >= max {
                return None;
            }
            *n += 1;
        }
        Some(Self { peers: peers.clone(), peer })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let Some(ip) = self.peer else { return };
        let mut m = self.peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = m.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&ip);
            }
        }
    }
}

/// Answers a connection past a cap with a `busy` error frame and closes
/// it. The frame (about a hundred bytes) almost always fits the fresh
/// socket's send buffer and is written at once, on the accepting task, with
/// no task or timer of its own (issue 34, figures: under a connection flood
/// at the cap every refused connection used to cost a task and a timer
/// beside the good clients'); only a frame that does not fit goes to a task
/// that gives it a second.
pub(super) fn refuse_busy(conn: Conn, why: String) {
    let frame = error_frame(&WireError::Busy(why));
    let written = match &conn {
        Conn::Tcp(s) => s.try_write(&frame),
        #[cfg(unix)]
        Conn::Unix(s) => s.try_write(&frame),
    };
    if matches!(written, Ok(n) if n == frame.len()) {
        return;
    }
    let frame = match written {
        Ok(n) => frame[n..].to_vec(),
        Err(_) => frame,
    };
    tokio::spawn(async move {
        let send = async {
            match conn {
                Conn::Tcp(mut s) => codec::write_frame(&mut s, &frame).await,
                #[cfg(unix)]
                Conn::Unix(mut s) => codec::write_frame(&mut s, &frame).await,
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), send).await;
    });
}

/// Whether `source` may send one more request, feed or statement ask now
/// (issue 34): within its request rate (a token taken) and with a refusal
/// left to cost (each of them can be refused). `Err`: the refusal to answer with.
fn within_limits(shared: &Shared, source: Source) -> Result<(), WireError> {
    let limited = |l: &super::limits::Limiter, what: &str| WireError::RateLimited {
        source_name: source.to_string(),
        what: format!("{what} ({} a second)", l.rate().per_s),
        retry_ms: l.wait_ms(source).max(1),
    };
    if let Some(l) = &shared.requests {
        if !l.take(source) {
            return Err(limited(l, "sends more requests than this endpoint takes from one source"));
        }
    }
    match &shared.refusals {
        Some(l) if !l.has(source) => {
            Err(limited(l, "has been refused more often than this endpoint answers one source"))
        }
        _ => Ok(()),
    }
}

/// Writes `framed` to the peer within the frame timeout: a peer that reads
/// nothing of its answers is closed, not held for ever (issue 34).
pub(super) async fn write_answer<S: AsyncWrite + Unpin>(
    shared: &Shared,
    s: &mut S,
    framed: &[u8],
) -> Result<(), WireError> {
    codec::write_frame_within(s, framed, shared.frame_timeout).await
}

/// `source` was refused something before the core decided it: one refusal off its budget.
fn charge_refusal(shared: &Shared, source: Source) {
    if let Some(l) = &shared.refusals {
        l.take(source);
    }
}

/// Serves one connection until it closes, its peer sends a frame that is
/// refused, or the core stops. `source` is what its rate limits count by.
pub(super) async fn serve_conn<S: AsyncRead + AsyncWrite + Unpin>(
    shared: Arc<Shared>,
    s: S,
    trust: FeedTrust,
    source: Source,
) {
    let _ = serve_conn_as(shared, s, trust, source, Stage::Whole).await;
}

/// What part of a connection's life [`serve_conn_as`] serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// All of it.
    Whole,
    /// Until its first authenticated request (or admitted feed) is answered: the stream is
    /// then handed back, with what was read of it and not yet decoded, to
    /// be served on the endpoint's own runtime (`Config::admission_threads`).
    Admission,
    /// The rest of a connection admitted on the admission runtime: its
    /// first frame was sent long ago, so the idle timeout applies.
    Admitted,
}

/// A connection whose first authenticated request was answered on the
/// admission runtime: the stream, and what was read of it and not yet
/// decoded (frames a client sent behind that request).
pub(super) struct Authenticated<S> {
    pub(super) stream: S,
    pub(super) read_ahead: Vec<u8>,
    /// The call behind the gate that request was allowed, still to run:
    /// on the endpoint's runtime, never on the admission runtime's threads
    /// (its blocking threads run at their priority, and a backend's child
    /// started from one would inherit it).
    pub(super) relay: Option<Box<Relay>>,
}

impl<S: AsyncRead> Authenticated<S> {
    /// `s` handed over as it stands: its stream and what its buffer holds.
    fn of(s: tokio::io::BufReader<S>, relay: Option<Box<Relay>>) -> Self {
        let read_ahead = s.buffer().to_vec();
        Self { stream: s.into_inner(), read_ahead, relay }
    }
}

/// An allowed request's call behind the gate, still to run ([`relay`]).
pub(super) struct Relay {
    pub(super) backend: Arc<dyn crate::backend::Backend>,
    pub(super) answer: super::decision::Answer,
    pub(super) exchange: Exchange,
}

impl Relay {
    /// Runs it, writing its reply to `s`; `false` once the connection is gone.
    pub(super) async fn run<S: AsyncWrite + Unpin>(self, shared: &Arc<Shared>, s: &mut S) -> bool {
        relay(shared, s, self.backend, self.answer, self.exchange).await
    }
}

/// Serves a connection for `stage`: `Some` when an [`Stage::Admission`]
/// connection's first authenticated request was answered, otherwise
/// `None` once it closed (or was closed).
pub(super) async fn serve_conn_as<S: AsyncRead + AsyncWrite + Unpin>(
    shared: Arc<Shared>,
    s: S,
    trust: FeedTrust,
    source: Source,
    stage: Stage,
) -> Option<Authenticated<S>> {
    // Buffered reads: a frame's length and body (and any frames a client
    // sent behind it) come in one read from the socket, not three.
    // Writes go straight through.
    let mut s = tokio::io::BufReader::new(s);
    let mut memo = ChainMemo::default();
    let mut wait =
        if stage == Stage::Admitted { (shared.idle_timeout, false) } else { (shared.first_frame_timeout, true) };
    loop {
        let read = next_frame(&mut s, shared.cap, shared.frame_timeout, wait, shared.body_budget(stage)).await;
        wait = (shared.idle_timeout, false);
        let read_at = std::time::Instant::now();
        let read =
            read.and_then(|b| b.map(|body| Inbound::decode_with(&body, &mut memo).map(|m| (body, m))).transpose());
        let (body, msg) = match read {
            Ok(Some(x)) => x,
            // The peer closed, or fell silent: closed without a word (an
            // error frame written to a client that merely waits would be
            // read as the answer to the next request it sends; the agents
            // reconnect and send the same request again, decided once).
            Ok(None) | Err(WireError::Idle { .. }) => return None,
            Err(e) => {
                // A refused frame closes its connection, with the refusal.
                shared.stats.refused_frames.fetch_add(1, Ordering::Relaxed);
                shared.metrics.refused_frame(e.code());
                let _ = write_answer(&shared, &mut s, &error_frame(&e)).await;
                return None;
            }
        };
        // Issue 34: a source past its rates is answered before the core
        // sees anything (nothing decided, nothing recorded) and closed.
        // Statement asks too: each is a job for the core, asked by anyone.
        if matches!(msg, Inbound::Request(_) | Inbound::Feed(_) | Inbound::StatementAsk(_)) {
            if let Err(e) = within_limits(&shared, source) {
                shared.stats.rate_limited.fetch_add(1, Ordering::Relaxed);
                shared.metrics.rate_limited();
                tracing::debug!(source = %source, "{e}");
                let _ = write_answer(&shared, &mut s, &error_frame(&e)).await;
                return None;
            }
        }
        let ok = match msg {
            Inbound::Request(req) => match handle_request(&shared, &mut s, req, body, read_at, source, stage).await {
                Handled::Gone => false,
                Handled::Answered => true,
                Handled::Admitted(relay) => return Some(Authenticated::of(s, relay)),
            },
            Inbound::StatementAsk(grant_id) => {
                let (tx, rx) = oneshot::channel();
                if shared.tx.send(Job::Statement { grant_id, tx }).await.is_err() {
                    return None;
                }
                let framed = match rx.await {
                    Ok(Ok(st)) => codec::frame_value(&crate::message::statement_answer(&st)),
                    Ok(Err(a)) => {
                        // No such channel here (or no record): a refusal, and its source pays for it.
                        charge_refusal(&shared, source);
                        codec::frame_value(&a.to_value())
                    }
                    Err(_) => return None,
                };
                write_answer(&shared, &mut s, &framed).await.is_ok()
            }
            Inbound::Feed(feed) => {
                let feed = match authenticate_feed(&shared.feed_keys, *feed, trust) {
                    Ok(f) => Box::new(f),
                    Err(refused) => {
                        charge_refusal(&shared, source);
                        tracing::warn!(code = %refused.code, "feed refused: {}", refused.message);
                        if write_answer(&shared, &mut s, &codec::frame_value(&refused.to_value())).await.is_err() {
                            return None;
                        }
                        continue;
                    }
                };
                let (tx, rx) = oneshot::channel();
                if shared.tx.send(Job::Feed { feed, tx }).await.is_err() {
                    return None;
                }
                let Ok(a) = rx.await else { return None };
                if write_answer(&shared, &mut s, &codec::frame_value(&a.to_value())).await.is_err() {
                    return None;
                }
                // An admitted feed was authenticated (a feed key's
                // signature, or its sender's own): it admits the connection.
                if a.admitted && stage == Stage::Admission {
                    return Some(Authenticated::of(s, None));
                }
                true
            }
        };
        if !ok {
            return None;
        }
    }
}

/// A socket taken off one runtime ([`Movable::into_std`]) and on by
/// another ([`Movable::from_std`]).
pub(super) trait Movable: Sized + AsyncRead + AsyncWrite + Unpin + Send + 'static {
    type Std: Send + 'static;
    fn into_std(self) -> std::io::Result<Self::Std>;
    fn from_std(std: Self::Std) -> std::io::Result<Self>;
}

impl Movable for tokio::net::TcpStream {
    type Std = std::net::TcpStream;
    fn into_std(self) -> std::io::Result<Self::Std> {
        tokio::net::TcpStream::into_std(self)
    }
    fn from_std(std: Self::Std) -> std::io::Result<Self> {
        tokio::net::TcpStream::from_std(std)
    }
}

#[cfg(unix)]
impl Movable for tokio::net::UnixStream {
    type Std = std::os::unix::net::UnixStream;
    fn into_std(self) -> std::io::Result<Self::Std> {
        tokio::net::UnixStream::into_std(self)
    }
    fn from_std(std: Self::Std) -> std::io::Result<Self> {
        tokio::net::UnixStream::from_std(std)
    }
}

/// A stream whose first bytes are `head`: what was read of it on the
/// admission runtime and not yet decoded, served before the stream's own.
pub(super) struct Prefixed<S> {
    head: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub(super) fn new(head: Vec<u8>, inner: S) -> Self {
        Self { head, at: 0, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at < this.head.len() {
            let n = (this.head.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.head[this.at..this.at + n]);
            this.at += n;
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// What became of a request's connection once it was handled.
pub(super) enum Handled {
    /// The connection is gone (or the core stopped).
    Gone,
    /// Answered (and its call behind the gate run, if it had one).
    Answered,
    /// Answered on the admission runtime and authenticated (decided now or
    /// from memory, so its caller's signature held and its chain was
    /// trusted, never a refusal before deciding): the connection is
    /// admitted, with the allowed call behind the gate still to run.
    Admitted(Option<Box<Relay>>),
}

/// `body` is the frame body `req` was decoded from: its canonical bytes;
/// `read_at`, when the frame was read.
pub(super) async fn handle_request<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Arc<Shared>,
    s: &mut S,
    req: Box<WireRequest>,
    body: Vec<u8>,
    read_at: std::time::Instant,
    source: Source,
    stage: Stage,
) -> Handled {
    // The request's id is taken here, on the runtime's worker threads;
    // its caller's signature too where every one is checked alone,
    // otherwise by the core with its batch. The core decides what a
    // failure means (§11: sealed, not remembered).
    let (id, signed) = shared.authenticate(&req, &body);
    let (tx, rx) = oneshot::channel();
    let exchange = Exchange::of(&req, shared.backend.is_some());
    let handed = std::time::Instant::now();
    if shared.tx.send(Job::Decide { req, bytes: body, id, signed, tx, handed }).await.is_err() {
        return Handled::Gone;
    }
    let Ok(a) = rx.await else { return Handled::Gone };
    let authenticated = a.fresh || a.repeat;
    let admitted = stage == Stage::Admission && authenticated;
    let answered = || if admitted { Handled::Admitted(None) } else { Handled::Answered };
    // Neither decided now nor a repeat: refused before deciding, shed or
    // unrecorded. It costs its source one refusal (issue 34).
    if !authenticated {
        charge_refusal(shared, source);
    }
    if write_answer(shared, s, &a.framed).await.is_err() {
        return Handled::Gone;
    }
    shared.metrics.request_answered(read_at.elapsed());
    // The endpoint behind the gate runs only on a fresh allow, after the
    // allow is durable (the core answered only after its commit).
    let Some(backend) = shared.backend.clone() else { return answered() };
    if !a.allow {
        return answered();
    }
    if admitted {
        return Handled::Admitted(Some(Box::new(Relay { backend, answer: a, exchange })));
    }
    if relay(shared, s, backend, a, exchange).await {
        Handled::Answered
    } else {
        Handled::Gone
    }
}

#[cfg(test)]
mod tests {
    use super::unadmitted_share;

    /// Issue 34, per-connection memory: connections not yet admitted hold
    /// at most half the body budget, but a budget that could read one
    /// largest frame still reads it on a connection not yet admitted.
    #[test]
    fn s11_the_unadmitted_share_is_half_the_budget_but_never_less_than_one_largest_frame() {
        assert_eq!(unadmitted_share(64 << 20, 65_000), 32 << 20);
        assert_eq!(unadmitted_share(150_000, 65_000), 75_000);
        assert_eq!(unadmitted_share(100_000, 65_000), 65_000, "one largest frame");
        assert_eq!(unadmitted_share(10_000, 65_000), 10_000, "never more than the budget");
        assert_eq!(unadmitted_share(1, 65_000), 1);
    }
}
