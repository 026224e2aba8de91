//! The MCP Streamable HTTP transport (MCP 2025-06-18 "Transports"): the
//! gateway's session served at one HTTP endpoint (`--listen
//! http://127.0.0.1:PORT/mcp`) instead of over stdio. The session itself is
//! the same [`Gateway::serve`]: each posted message becomes one input line,
//! and each message for the client is routed to the HTTP response it
//! belongs to.
//!
//! - `POST` carries one JSON-RPC message. A notification or a response (to
//!   a server's request) is answered `202 Accepted`. A request is answered
//!   as an SSE stream (`text/event-stream`, when the client accepts it)
//!   that carries the progress notifications of that request (a call held
//!   at a checkpoint reports progress) and ends with its response; or, for
//!   a client that accepts only `application/json`, with the response alone.
//! - `GET` opens the one standalone SSE stream: server requests and
//!   notifications not tied to a request go there (kept, up to
//!   [`BACKLOG`], until one is open; else on an open request's stream).
//! - `DELETE` ends the session: the client's input ends, the calls in
//!   flight finish and the upstream is closed, as when a stdio client
//!   closes its input.
//!
//! One gateway serves one session (its run): the `initialize` that opens it
//! gets an `Mcp-Session-Id`; every later message must carry it (`400`
//! without, `404` with another or after the session ended), and a second
//! `initialize` is refused `409`. The session's negotiated
//! `MCP-Protocol-Version` header, when sent, must match (`400`). An
//! `Origin` other than a loopback one (or one given with `--allow-origin`)
//! is refused `403` (DNS rebinding), and the endpoint binds loopback only:
//! it has no authentication of its own, and whoever reaches it spends the
//! grant (docs/decisions.md). No verdict depends on the transport: the
//! calls are decided one at a time in the order their POSTs arrived.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::header::{HeaderMap, HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE, ORIGIN};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Value};

use crate::session::{route, Route};
use crate::upstream::MAX_LINE;
use crate::{lock, Events, Gateway, GatewayError, Summary};

/// Server messages kept for a standalone stream not yet open.
pub const BACKLOG: usize = 1024;
/// The most connections served at once; past it a connection is closed on accept.
pub const MAX_CONNECTIONS: usize = 64;
/// How often an open SSE stream gets a comment, so that a call held at a
/// checkpoint for long is not cut by an idle timeout on the way.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to send a request's body, once its headers
/// are in: a body that trickles or never comes is answered `408` and its
/// connection's slot freed (one of [`MAX_CONNECTIONS`]).
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may read nothing of what is written to it (once its
/// socket's buffers are full) before its connection is ended: an answer,
/// or an SSE stream never read, otherwise holds a connection slot and
/// gathers the session's messages in memory for ever.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

type Body = BoxBody<Bytes, Infallible>;

/// Where the gateway serves MCP over HTTP, from `http://HOST:PORT/PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAddr {
    /// The socket address (loopback only).
    pub socket: SocketAddr,
    /// The endpoint's path (`/mcp` when the URL names none).
    pub path: String,
}

impl std::str::FromStr for HttpAddr {
    type Err = GatewayError;

    fn from_str(s: &str) -> Result<Self, GatewayError> {
        let bad = |why: &str| GatewayError::Listen(format!("{s:?}: {why}"));
        let rest = s.strip_prefix("http://").ok_or_else(|| bad("expected http://HOST:PORT[/PATH]"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/mcp"),
        };
        let authority = match authority.strip_prefix("localhost:") {
            Some(port) => format!("127.0.0.1:{port}"),
            None => authority.to_owned(),
        };
        let socket: SocketAddr =
            authority.parse().map_err(|e| bad(&format!("the host and port are not an IP socket address ({e})")))?;
        if !socket.ip().is_loopback() {
            return Err(bad(
                "not a loopback address: the gateway's MCP endpoint has no authentication of its own, and whoever reaches it spends the grant, so it listens on loopback only",
            ));
        }
        if path.contains(['?', '#']) || path.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(bad("the path must be a plain path"));
        }
        Ok(Self { socket, path: path.to_owned() })
    }
}

/// Binds `addr` (port 0: any free one): the listener and the address it got.
pub async fn bind(addr: &HttpAddr) -> Result<(tokio::net::TcpListener, HttpAddr), GatewayError> {
    let bad = |e: std::io::Error| GatewayError::Listen(format!("http://{}{}: {e}", addr.socket, addr.path));
    let l = tokio::net::TcpListener::bind(addr.socket).await.map_err(bad)?;
    let socket = l.local_addr().map_err(bad)?;
    Ok((l, HttpAddr { socket, path: addr.path.clone() }))
}

/// One request's response stream: an SSE stream, or a single JSON reply.
struct Pending {
    tx: tokio::sync::mpsc::UnboundedSender<Bytes>,
    sse: bool,
}

/// What the HTTP side and the dispatcher share.
struct Hub {
    /// The session's id, once `initialize` was received.
    session: Option<String>,
    /// The session ended (DELETE, or the gateway is closing).
    ended: bool,
    /// The protocol version the upstream answered `initialize` with.
    version: Option<String>,
    /// The `initialize` request in flight (its id), whose answer names the version.
    init_id: Option<String>,
    /// Requests awaiting their response, by their id's JSON.
    pending: HashMap<String, Pending>,
    /// Progress tokens of requests on SSE streams → the request's id.
    progress: HashMap<String, String>,
    /// The standalone stream (GET).
    standalone: Option<tokio::sync::mpsc::UnboundedSender<Bytes>>,
    /// Server messages waiting for a stream.
    backlog: VecDeque<Bytes>,
    /// The session's input; dropped when the session ends.
    input: Option<std::sync::mpsc::Sender<Vec<u8>>>,
}

impl Hub {
    /// Routes one message for the client (a line from the session).
    fn deliver(&mut self, line: &str, events: &Events) {
        let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let event = sse_event(line);
        let method = v.get("method").and_then(Value::as_str);
        let id = v.get("id").filter(|i| !i.is_null()).map(Value::to_string);
        match (method, id) {
            // A response: to the request it answers; the stream ends with it.
            (None, Some(id)) => {
                if self.init_id.as_deref() == Some(id.as_str()) {
                    self.init_id = None;
                    self.version = v.pointer("/result/protocolVersion").and_then(Value::as_str).map(str::to_owned);
                }
                self.progress.retain(|_, req| *req != id);
                if let Some(p) = self.pending.remove(&id) {
                    let body = if p.sse { event } else { Bytes::from(line.to_owned()) };
                    if p.tx.send(body).is_err() {
                        tracing::warn!("http: the client left before the answer to request {id} could reach it");
                        events.emit(&json!({"event": "answer-undelivered", "id": id}));
                    }
                    return;
                }
                self.general(event, events);
            }
            (Some("notifications/progress"), None) => {
                let token = v.pointer("/params/progressToken").map(Value::to_string);
                let to = token.and_then(|t| self.progress.get(&t)).and_then(|id| self.pending.get(id));
                match to {
                    Some(p) if p.tx.send(event.clone()).is_ok() => {}
                    _ => self.general(event, events),
                }
            }
            _ => self.general(event, events),
        }
    }

    /// A message tied to no request: the standalone stream, else an open
    /// request's stream, else kept until a standalone stream opens.
    fn general(&mut self, event: Bytes, events: &Events) {
        if let Some(s) = &self.standalone {
            if s.send(event.clone()).is_ok() {
                return;
            }
            self.standalone = None;
        }
        if let Some(p) = self.pending.values().find(|p| p.sse && !p.tx.is_closed()) {
            if p.tx.send(event.clone()).is_ok() {
                return;
            }
        }
        if self.backlog.len() >= BACKLOG {
            self.backlog.pop_front();
            tracing::warn!("http: {BACKLOG} server messages wait for a stream; the oldest is dropped");
            events.emit(&json!({"event": "message-dropped", "why": "no stream open to the client", "kept": BACKLOG}));
        }
        self.backlog.push_back(event);
    }

    /// Ends the session: its input closes (the gateway then finishes).
    fn end(&mut self) {
        self.ended = true;
        self.input = None;
    }
}

fn sse_event(line: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {line}\n\n"))
}

/// An SSE body: each item a complete event.
struct SseBody(tokio::sync::mpsc::UnboundedReceiver<Bytes>);

impl hyper::body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

/// The session's input as a reader: each posted message one line.
struct Input {
    rx: std::sync::mpsc::Receiver<Vec<u8>>,
    buf: Vec<u8>,
    at: usize,
}

impl std::io::Read for Input {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.buf.len() {
            match self.rx.recv() {
                Ok(b) => {
                    self.buf = b;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Who may call: the endpoint's path and the origins let through.
struct Policy {
    path: String,
    origins: Vec<String>,
    /// How long a write to the client may make no progress before its
    /// connection is ended ([`WRITE_TIMEOUT`]).
    write_timeout: Duration,
}

impl Policy {
    /// §"Security Warning" of the transport: an `Origin` is checked on every
    /// request; a loopback origin or one the operator named is let through.
    fn origin_ok(&self, headers: &HeaderMap) -> bool {
        let Some(o) = headers.get(ORIGIN) else { return true };
        let Ok(o) = o.to_str() else { return false };
        if self.origins.iter().any(|a| a.eq_ignore_ascii_case(o)) {
            return true;
        }
        let host = o.strip_prefix("http://").or_else(|| o.strip_prefix("https://")).unwrap_or("");
        let host = match host.strip_prefix('[') {
            Some(h) => h.split(']').next().unwrap_or(""),
            None => host.split(':').next().unwrap_or(""),
        };
        matches!(host, "localhost" | "127.0.0.1" | "::1")
    }
}

fn accepts(headers: &HeaderMap, what: &str) -> bool {
    headers.get_all(ACCEPT).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|m| {
        let m = m.split(';').next().unwrap_or("").trim();
        m.eq_ignore_ascii_case(what) || m == "*/*" || (m == "text/*" && what.starts_with("text/"))
    })
}

fn plain(status: StatusCode, why: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{why}\n"))).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// A JSON-RPC error as the HTTP answer, with `status`.
fn rpc(status: StatusCode, id: &Value, code: i64, message: &str) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// Serves `gateway`'s session at `addr` on `listener` until the session
/// ends (the client's DELETE, or `shutdown`), then returns its summary.
/// `from_upstream`/`to_client` are the channel the upstream was spawned with.
pub async fn serve_session(
    gateway: &Gateway,
    listener: tokio::net::TcpListener,
    addr: &HttpAddr,
    origins: Vec<String>,
    from_upstream: tokio::sync::mpsc::UnboundedReceiver<String>,
    to_client: tokio::sync::mpsc::UnboundedSender<String>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Summary, GatewayError> {
    let (input_tx, input_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let hub = Arc::new(Mutex::new(Hub {
        session: None,
        ended: false,
        version: None,
        init_id: None,
        pending: HashMap::new(),
        progress: HashMap::new(),
        standalone: None,
        backlog: VecDeque::new(),
        input: Some(input_tx),
    }));
    let events = gateway.events().clone();
    let writer = {
        let (hub, events) = (hub.clone(), events.clone());
        let mut from_upstream = from_upstream;
        tokio::spawn(async move {
            while let Some(line) = from_upstream.recv().await {
                lock(&hub).deliver(&line, &events);
            }
            // Nothing more comes: every open stream ends.
            let mut h = lock(&hub);
            h.pending.clear();
            h.standalone = None;
        })
    };
    let keepalive = {
        let hub = hub.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(KEEPALIVE);
            loop {
                tick.tick().await;
                let h = lock(&hub);
                let ping = Bytes::from_static(b": keep-alive\n\n");
                for p in h.pending.values().filter(|p| p.sse) {
                    let _ = p.tx.send(ping.clone());
                }
                if let Some(s) = &h.standalone {
                    let _ = s.send(ping.clone());
                }
            }
        })
    };
    let policy = Arc::new(Policy { path: addr.path.clone(), origins, write_timeout: WRITE_TIMEOUT });
    let server = {
        let hub = hub.clone();
        tokio::spawn(accept_loop(listener, hub, policy, events.clone()))
    };
    let on_shutdown = {
        let hub = hub.clone();
        tokio::spawn(async move {
            shutdown.await;
            lock(&hub).end();
        })
    };
    let input = Input { rx: input_rx, buf: Vec::new(), at: 0 };
    let summary = gateway.serve(crate::session::ClientInput::Blocking(Box::new(input)), writer, to_client).await;
    lock(&hub).end();
    on_shutdown.abort();
    keepalive.abort();
    // The last answers were routed before `serve` returned; their bodies
    // drain on the connections' own tasks. A moment for them, then stop.
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.abort();
    summary
}

async fn accept_loop(listener: tokio::net::TcpListener, hub: Arc<Mutex<Hub>>, policy: Arc<Policy>, events: Events) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("http: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tracing::warn!("http: {MAX_CONNECTIONS} connections open; {peer} closed on accept");
            drop(stream);
            continue;
        };
        let (hub, policy, events) = (hub.clone(), policy.clone(), events.clone());
        let write_timeout = policy.write_timeout;
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let (hub, policy, events) = (hub.clone(), policy.clone(), events.clone());
                async move { Ok::<_, Infallible>(handle(req, &hub, &policy, &events).await) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
            let io = jcp_metrics::WriteDeadline::new(stream, write_timeout);
            if let Err(e) = builder.serve_connection(TokioIo::new(io), service).await {
                tracing::debug!("http: connection from {peer} ended: {e}");
            }
            drop(permit);
        });
    }
}

/// One HTTP request at the MCP endpoint.
async fn handle(req: Request<Incoming>, hub: &Mutex<Hub>, policy: &Policy, events: &Events) -> Response<Body> {
    if req.uri().path() != policy.path {
        return plain(StatusCode::NOT_FOUND, &format!("the MCP endpoint is {}", policy.path));
    }
    if !policy.origin_ok(req.headers()) {
        return plain(
            StatusCode::FORBIDDEN,
            "this Origin may not call the gateway (loopback origins, and --allow-origin)",
        );
    }
    match *req.method() {
        Method::POST => post(req, hub, events).await,
        Method::GET => get(&req, hub),
        Method::DELETE => delete(&req, hub, events),
        _ => {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "POST, GET or DELETE");
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST, GET, DELETE"));
            r
        }
    }
}

/// The session header and the protocol version header of a request after
/// `initialize`: `Err` is the answer that refuses it.
fn check_session(headers: &HeaderMap, h: &Hub) -> Result<(), Box<Response<Body>>> {
    let Some(sid) = &h.session else {
        return Err(Box::new(plain(StatusCode::BAD_REQUEST, "no session: initialize first")));
    };
    match headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        None => return Err(Box::new(plain(StatusCode::BAD_REQUEST, "the Mcp-Session-Id header is missing"))),
        Some(s) if s != sid || h.ended => {
            return Err(Box::new(plain(
                StatusCode::NOT_FOUND,
                "no such session (it ended, or was never this gateway's)",
            )))
        }
        Some(_) => {}
    }
    if let (Some(sent), Some(agreed)) = (headers.get(VERSION_HEADER), &h.version) {
        if sent.to_str().ok() != Some(agreed.as_str()) {
            return Err(Box::new(plain(
                StatusCode::BAD_REQUEST,
                &format!("MCP-Protocol-Version {sent:?} is not the session's {agreed}"),
            )));
        }
    }
    Ok(())
}

/// Why a request's body was not read.
#[derive(Debug, PartialEq, Eq)]
enum BodyRead {
    /// Over the limit.
    TooLarge,
    /// Not whole within the time given.
    Slow,
    /// The connection failed.
    Failed(String),
}

/// A request's body, at most `limit` bytes, whole within `within`.
async fn read_body<B>(body: B, limit: usize, within: Duration) -> Result<Bytes, BodyRead>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match tokio::time::timeout(within, Limited::new(body, limit).collect()).await {
        Err(_) => Err(BodyRead::Slow),
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(BodyRead::TooLarge),
        Ok(Err(e)) => Err(BodyRead::Failed(e.to_string())),
    }
}

async fn post(req: Request<Incoming>, hub: &Mutex<Hub>, events: &Events) -> Response<Body> {
    let headers = req.headers().clone();
    let json_ok = accepts(&headers, "application/json");
    let sse_ok = accepts(&headers, "text/event-stream");
    if !json_ok && !sse_ok {
        return plain(StatusCode::NOT_ACCEPTABLE, "Accept must list application/json and text/event-stream");
    }
    let ct = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ct.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json") {
        return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "a message is application/json");
    }
    let body = match read_body(req.into_body(), MAX_LINE, BODY_TIMEOUT).await {
        Ok(b) => b,
        Err(BodyRead::TooLarge) => {
            return rpc(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Value::Null,
                -32600,
                &format!("a message over {MAX_LINE} bytes"),
            )
        }
        Err(BodyRead::Slow) => {
            return plain(
                StatusCode::REQUEST_TIMEOUT,
                &format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs()),
            )
        }
        Err(BodyRead::Failed(e)) => return plain(StatusCode::BAD_REQUEST, &format!("reading the body: {e}")),
    };
    // The same refusals as on stdio (one object, no batch, no duplicate key,
    // no notification-form call), before anything reaches the session.
    let (v, routed) = match route(&body) {
        Ok(r) => r,
        Err(refusal) => {
            events.emit(&json!({"event": "refused-message", "code": refusal.code, "message": refusal.message}));
            return rpc(
                StatusCode::BAD_REQUEST,
                &refusal.answer_id.unwrap_or(Value::Null),
                refusal.code,
                &refusal.message,
            );
        }
    };
    let line = one_line(&body);
    let id = v.get("id").filter(|_| v.get("method").is_some()).cloned();
    let admitted = match admit(&headers, &v, &routed, id.as_ref(), sse_ok, hub) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let Some(id) = id else {
        // A notification, or the client's response to a server request.
        return if admitted.input.send(line).is_ok() {
            let mut r = Response::new(Full::new(Bytes::new()).boxed());
            *r.status_mut() = StatusCode::ACCEPTED;
            r
        } else {
            plain(StatusCode::NOT_FOUND, "the session ended")
        };
    };
    let Some(rx) = admitted.answer else {
        return rpc(StatusCode::INTERNAL_SERVER_ERROR, &id, -32603, "no stream for the answer");
    };
    if admitted.input.send(line).is_err() {
        lock(hub).pending.remove(&id.to_string());
        return plain(StatusCode::NOT_FOUND, "the session ended");
    }
    let new_session = admitted.new_session;
    let mut r = if sse_ok {
        let mut r = Response::new(SseBody(rx).boxed());
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        r.headers_mut().insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        r
    } else {
        let mut rx = rx;
        match rx.recv().await {
            Some(b) => {
                let mut r = Response::new(Full::new(b).boxed());
                r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r
            }
            None => rpc(StatusCode::OK, &id, -32603, "the session ended before this request was answered"),
        }
    };
    if let Some(sid) = new_session {
        if let Ok(v) = HeaderValue::from_str(&sid) {
            r.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    r
}

/// A posted message as one input line. In JSON a CR or LF can only be
/// whitespace between tokens (inside a string it must be escaped), so
/// each becomes a space and the message means the same.
pub(crate) fn one_line(body: &[u8]) -> Vec<u8> {
    let mut line: Vec<u8> = body.iter().map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }).collect();
    line.push(b'\n');
    line
}

/// The fuzz target's check of the routing of messages for the client: any
/// line, with a request pending under the id it names, is delivered
/// without a panic and ends that request's stream when it answers it.
#[cfg(feature = "fuzzing")]
pub(crate) fn deliver_check(line: &str) -> Result<(), String> {
    let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
    let id = v.get("id").filter(|i| !i.is_null()).map(Value::to_string);
    let mut h = Hub {
        session: Some("s".into()),
        ended: false,
        version: None,
        init_id: id.clone(),
        pending: HashMap::new(),
        progress: HashMap::new(),
        standalone: None,
        backlog: VecDeque::new(),
        input: None,
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    if let Some(id) = &id {
        h.pending.insert(id.clone(), Pending { tx, sse: true });
    }
    h.deliver(line, &Events::default());
    let is_answer = v.get("method").is_none() && id.is_some();
    if is_answer && !h.pending.is_empty() {
        return Err(format!("an answer left its request pending: {line}"));
    }
    Ok(())
}

/// What [`admit`] let through: the session's input, the receiving end of
/// a request's answer stream, and the session id `initialize` opened.
struct Admitted {
    input: std::sync::mpsc::Sender<Vec<u8>>,
    answer: Option<tokio::sync::mpsc::UnboundedReceiver<Bytes>>,
    new_session: Option<String>,
}

/// The session's checks for a posted message, and, for a request, its
/// answer stream registered before the message reaches the session (so no
/// answer can outrun it). `Err` is the HTTP answer that refuses it.
fn admit(
    headers: &HeaderMap,
    v: &Value,
    routed: &Route,
    id: Option<&Value>,
    sse_ok: bool,
    hub: &Mutex<Hub>,
) -> Result<Admitted, Box<Response<Body>>> {
    let mut h = lock(hub);
    let mut new_session = None;
    if matches!(routed, Route::Initialize) {
        if h.session.is_some() {
            return Err(Box::new(rpc(
                StatusCode::CONFLICT,
                id.unwrap_or(&Value::Null),
                -32600,
                "this gateway serves one MCP session (one run); start another gateway for another",
            )));
        }
        let sid = crate::session::fresh_uuid();
        h.session = Some(sid.clone());
        h.init_id = id.map(Value::to_string);
        new_session = Some(sid);
    } else {
        check_session(headers, &h)?;
    }
    let Some(input) = h.input.clone() else {
        return Err(Box::new(plain(StatusCode::NOT_FOUND, "the session ended")));
    };
    let Some(id) = id else {
        return Ok(Admitted { input, answer: None, new_session });
    };
    let key = id.to_string();
    if h.pending.contains_key(&key) {
        return Err(Box::new(rpc(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            &format!("request id {key} is already in flight"),
        )));
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    if sse_ok {
        if let Some(token) = v.pointer("/params/_meta/progressToken") {
            h.progress.insert(token.to_string(), key.clone());
        }
    }
    h.pending.insert(key, Pending { tx, sse: sse_ok });
    Ok(Admitted { input, answer: Some(rx), new_session })
}

fn get(req: &Request<Incoming>, hub: &Mutex<Hub>) -> Response<Body> {
    if !accepts(req.headers(), "text/event-stream") {
        return plain(StatusCode::NOT_ACCEPTABLE, "the standalone stream is text/event-stream");
    }
    let mut h = lock(hub);
    if let Err(r) = check_session(req.headers(), &h) {
        return *r;
    }
    if h.standalone.as_ref().is_some_and(|s| !s.is_closed()) {
        return plain(StatusCode::CONFLICT, "the session's standalone stream is already open");
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for e in h.backlog.drain(..) {
        let _ = tx.send(e);
    }
    h.standalone = Some(tx);
    drop(h);
    let mut r = Response::new(SseBody(rx).boxed());
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn delete(req: &Request<Incoming>, hub: &Mutex<Hub>, events: &Events) -> Response<Body> {
    let mut h = lock(hub);
    if let Err(r) = check_session(req.headers(), &h) {
        return *r;
    }
    h.end();
    events.emit(&json!({"event": "session-deleted", "why": "the client ended the session (HTTP DELETE)"}));
    plain(StatusCode::OK, "the session ends: calls in flight finish, then the upstream is closed")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// A body that never comes.
    struct Never;

    impl hyper::body::Body for Never {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Poll::Pending
        }
    }

    /// §11 (the enforcement point stays available), on the HTTP transport:
    /// a body that does not arrive in time is refused (`408`), as one over
    /// the limit is (`413`), so a client that sends headers and then
    /// trickles cannot hold one of the endpoint's few connections for ever.
    #[test]
    fn s11_a_body_that_does_not_arrive_in_time_is_refused_and_one_over_the_limit_too() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let quick = Duration::from_millis(50);
            assert_eq!(read_body(Never, 10, quick).await, Err(BodyRead::Slow));
            assert_eq!(
                read_body(Full::new(Bytes::from_static(b"0123456789ab")), 10, quick).await,
                Err(BodyRead::TooLarge)
            );
            assert_eq!(read_body(Full::new(Bytes::from_static(b"{}")), 10, quick).await, Ok(Bytes::from_static(b"{}")));
        });
    }

    #[test]
    fn s11_the_mcp_endpoint_listens_on_loopback_only() {
        let a: HttpAddr = "http://127.0.0.1:0/mcp".parse().unwrap();
        assert_eq!(a.path, "/mcp");
        assert!(a.socket.ip().is_loopback());
        assert_eq!("http://localhost:8080".parse::<HttpAddr>().unwrap().path, "/mcp");
        assert!("http://[::1]:9/x".parse::<HttpAddr>().is_ok());
        for bad in ["http://0.0.0.0:8080/mcp", "http://10.0.0.1:1/mcp", "tcp:127.0.0.1:1", "http://127.0.0.1:1/a b"] {
            let e = bad.parse::<HttpAddr>().unwrap_err();
            assert_eq!(e.code(), "listen-invalid", "{bad}");
        }
    }

    #[test]
    fn s11_an_origin_other_than_loopback_is_refused_unless_named() {
        let p =
            Policy { path: "/mcp".into(), origins: vec!["https://app.example".into()], write_timeout: WRITE_TIMEOUT };
        let with = |o: &str| {
            let mut h = HeaderMap::new();
            h.insert(ORIGIN, HeaderValue::from_str(o).unwrap());
            p.origin_ok(&h)
        };
        assert!(p.origin_ok(&HeaderMap::new()));
        assert!(with("http://localhost:3000"));
        assert!(with("http://127.0.0.1"));
        assert!(with("http://[::1]:80"));
        assert!(with("https://app.example"));
        assert!(!with("http://evil.example"));
        assert!(!with("http://localhost.evil.example"));
        assert!(!with("null"));
    }

    /// A hub whose session `s` is initialized (its input goes nowhere).
    fn initialized() -> Hub {
        let (in_tx, _in_rx) = std::sync::mpsc::channel();
        Hub {
            session: Some("s".into()),
            ended: false,
            version: None,
            init_id: Some("0".into()),
            pending: HashMap::new(),
            progress: HashMap::new(),
            standalone: None,
            backlog: VecDeque::new(),
            input: Some(in_tx),
        }
    }

    /// Whether a client that opens the standalone stream and never reads
    /// it has its connection ended while the session's messages (1 MiB
    /// each, 64 at most) are written to it, with `write_timeout`; waits up to `wait`.
    fn unread_stream_is_ended(write_timeout: Duration, wait: Duration) -> bool {
        use std::io::Write;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let at = listener.local_addr().unwrap();
            let hub = Arc::new(Mutex::new(initialized()));
            let policy = Arc::new(Policy { path: "/mcp".into(), origins: Vec::new(), write_timeout });
            let events = Events::default();
            let server = tokio::spawn(accept_loop(listener, hub.clone(), policy, events.clone()));
            let mut client = std::net::TcpStream::connect(at).unwrap();
            client
                .write_all(
                    b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: s\r\n\r\n",
                )
                .unwrap();
            let big = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{}"}}}}"#,
                "x".repeat(1 << 20)
            );
            let deadline = tokio::time::Instant::now() + wait;
            let mut sent = 0;
            let ended = loop {
                {
                    let mut h = lock(&hub);
                    match &h.standalone {
                        Some(s) if s.is_closed() => break true,
                        Some(_) if sent < 64 => {
                            h.deliver(&big, &events);
                            sent += 1;
                        }
                        _ => {}
                    }
                }
                if tokio::time::Instant::now() > deadline {
                    break false;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            server.abort();
            drop(client);
            ended
        })
    }

    /// §11 (the enforcement point stays available), on the HTTP transport:
    /// a client that reads nothing of what is written to it (here the
    /// standalone SSE stream, 64 MiB of the session's messages) has its
    /// connection ended once its socket's buffers are full and the write
    /// timeout passes, freeing its slot and what waited for it; with no
    /// deadline it holds both.
    #[test]
    fn s11_a_client_that_never_reads_its_stream_is_ended_at_the_write_timeout() {
        assert!(unread_stream_is_ended(Duration::from_millis(300), Duration::from_secs(20)));
        assert!(!unread_stream_is_ended(Duration::from_secs(3600), Duration::from_secs(3)));
    }

    #[test]
    fn s11_each_message_for_the_client_reaches_the_response_it_belongs_to() {
        let events = Events::default();
        let mut h = initialized();
        let (t0, mut r0) = tokio::sync::mpsc::unbounded_channel();
        let (t1, mut r1) = tokio::sync::mpsc::unbounded_channel();
        h.pending.insert("0".into(), Pending { tx: t0, sse: false });
        h.pending.insert("\"a\"".into(), Pending { tx: t1, sse: true });
        h.progress.insert("7".into(), "\"a\"".into());
        // Progress for "a" goes to its stream; an unrelated notification
        // with no standalone stream goes to an open SSE stream.
        h.deliver(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#,
            &events,
        );
        assert!(String::from_utf8_lossy(&r1.try_recv().unwrap()).contains("\"progress\":1"));
        // The initialize answer names the version and ends its (JSON) reply.
        h.deliver(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}"#, &events);
        assert_eq!(h.version.as_deref(), Some("2025-06-18"));
        assert_eq!(
            &r0.try_recv().unwrap()[..],
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}"#
        );
        // The answer to "a" ends its stream (the sender is gone).
        h.deliver(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#, &events);
        assert!(String::from_utf8_lossy(&r1.try_recv().unwrap()).starts_with("event: message\ndata: {"));
        assert!(h.pending.is_empty() && h.progress.is_empty());
        // Nothing open: kept for the standalone stream, at most BACKLOG.
        for _ in 0..BACKLOG + 3 {
            h.deliver(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#, &events);
        }
        assert_eq!(h.backlog.len(), BACKLOG);
    }

    #[test]
    fn s11_a_posted_message_reads_back_as_one_line() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(b"{\"a\":1}\n".to_vec()).unwrap();
        tx.send(b"{\"b\":2}\n".to_vec()).unwrap();
        drop(tx);
        let mut s = String::new();
        std::io::Read::read_to_string(&mut Input { rx, buf: Vec::new(), at: 0 }, &mut s).unwrap();
        assert_eq!(s, "{\"a\":1}\n{\"b\":2}\n");
    }
}
