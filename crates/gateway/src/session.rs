//! One MCP session through the gateway: the client's messages in (a line
//! each), the upstream's and the gateway's out. Every `tools/call` is bound
//! (§8 MCP adapter), decided by the endpoint's durable gate (the receipt's
//! payload hash is the BLAKE3 content id of the binding's canonical JSON,
//! whose SHA-256 is its intent hash), and on allow relayed, metered over the
//! upstream's process tree and charged (§11 relay mode): the answer goes
//! back as soon as the upstream gives it, the charge is recorded before the
//! next call is decided. Everything else passes through unchanged.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use intent::mcp::{bind_tools_call, McpTrustedContext};
use jcp::cbor::ContentId;
use jcp::energy::{Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp_wire::endpoint::Endpoint;
use jcp_wire::message::{Feed, ReplyState, RequestBody, WireReply};
use serde_json::{json, Value};

use crate::bindings::Bindings;
use crate::steer::{RunState, Steered};
use crate::upstream::Upstream;
use crate::{lock, GatewayError};

/// The client's messages, a line each.
pub enum ClientInput {
    /// Read on a blocking thread (a file, a terminal, the HTTP session's posts).
    Blocking(Box<dyn std::io::Read + Send>),
    /// Read on the runtime's own thread (a pipe or socket made non-blocking:
    /// the line reaches its call with no hand-off between threads).
    Async(Box<dyn tokio::io::AsyncRead + Unpin + Send>),
}

impl std::fmt::Debug for ClientInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Blocking(_) => "ClientInput::Blocking",
            Self::Async(_) => "ClientInput::Async",
        })
    }
}

impl ClientInput {
    /// Standard input: read on the runtime where it is a pipe or a socket
    /// that is this process's input alone (not also its output, whose
    /// blocking writes a non-blocking descriptor would break), else on a
    /// blocking thread. Call inside the runtime.
    pub fn stdin() -> Self {
        if let Some(r) = async_stdin() {
            tracing::debug!("the client's input is read on the runtime (a pipe or socket of its own)");
            Self::Async(r)
        } else {
            tracing::debug!("the client's input is read on a thread of its own");
            Self::Blocking(Box::new(std::io::stdin()))
        }
    }

    /// Starts the task that reads lines of at most
    /// [`crate::upstream::MAX_LINE`] bytes into `tx` (a longer one is
    /// refused as `InvalidData` and the next read whole) until the input
    /// ends or `tx` is closed.
    fn read_lines(self, tx: tokio::sync::mpsc::Sender<std::io::Result<Vec<u8>>>) -> tokio::task::JoinHandle<()> {
        match self {
            Self::Blocking(input) => tokio::task::spawn_blocking(move || {
                let mut r = std::io::BufReader::with_capacity(64 << 10, input);
                let mut buf = Vec::new();
                while let Some((message, last)) = handed(crate::upstream::read_line_bounded(&mut r, &mut buf), &buf) {
                    if tx.blocking_send(message).is_err() || last {
                        return;
                    }
                }
            }),
            Self::Async(input) => tokio::spawn(async move {
                let mut r = tokio::io::BufReader::with_capacity(64 << 10, input);
                let mut buf = Vec::new();
                while let Some((message, last)) =
                    handed(crate::upstream::read_line_bounded_async(&mut r, &mut buf).await, &buf)
                {
                    if tx.send(message).await.is_err() || last {
                        return;
                    }
                }
            }),
        }
    }
}

/// What one bounded read hands the session: the line, or the error (and
/// whether reading stops after it: any error but a line over the bound);
/// `None` at the end of the input.
fn handed(read: std::io::Result<bool>, buf: &[u8]) -> Option<(std::io::Result<Vec<u8>>, bool)> {
    match read {
        Ok(true) => Some((Ok(buf.to_vec()), false)),
        Ok(false) => None,
        Err(e) => {
            let last = e.kind() != std::io::ErrorKind::InvalidData;
            Some((Err(e), last))
        }
    }
}

/// Standard input as a non-blocking pipe or socket of the runtime's, where
/// it is one and is not also standard output (same device and inode).
fn async_stdin() -> Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let file = std::fs::File::from(fd);
    let meta = file.metadata().ok()?;
    if let Ok(out) = std::io::stdout().as_fd().try_clone_to_owned().map(std::fs::File::from) {
        if out.metadata().is_ok_and(|o| o.dev() == meta.dev() && o.ino() == meta.ino()) {
            return None;
        }
    }
    let kind = meta.file_type();
    if kind.is_fifo() {
        let rx = tokio::net::unix::pipe::Receiver::from_file(file).ok()?;
        return Some(Box::new(rx));
    }
    if kind.is_socket() {
        let sock = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
        // A Unix socket only (an inherited TCP socket stays on the blocking path).
        sock.local_addr().ok()?;
        sock.set_nonblocking(true).ok()?;
        let sock = tokio::net::UnixStream::from_std(sock).ok()?;
        return Some(Box::new(sock));
    }
    None
}

/// What a session runs under.
#[derive(Debug)]
pub struct Settings {
    /// The grant chain, root first: the leaf's subject is the holder.
    pub chain: Vec<SignedGrant>,
    /// The holder's key: the gateway signs each request with it (the agent never sees it).
    pub holder: Keypair,
    /// The operator's tool bindings.
    pub bindings: Bindings,
    /// The tenant the calls are made for (a UUID, Agent-Safe `tenant_id`).
    pub tenant_id: String,
    /// The server's name in each binding's `context.mcp_server`.
    pub server: String,
    /// The most one call may reserve, µJ (0: none stated; the endpoint's
    /// per-call ceiling and the grant's remainder bound it).
    pub max_uj: u64,
    /// How long to wait for a relayed call's reply (the upstream's timeout and a margin).
    pub reply_timeout: Duration,
    /// Checkpoints and the steward's steering (§4.7), when the run is steered.
    pub steer: Option<crate::steer::SteerOptions>,
    /// The chain `tools/list` is marked against ([`annotator`]): the given
    /// chain, then each continuation's the run goes on under.
    pub marks: Marks,
    /// Answer an allowed call only once its charge is recorded, with the
    /// charge receipt and the metered figure in its `_meta`. Off (the
    /// default), the upstream's answer goes to the client as soon as it
    /// arrives, and the call's span, charge and outcome are recorded after
    /// it, before the next call is decided (docs/decisions.md, "The
    /// gateway answers first and settles before the next call").
    pub settle_before_answer: bool,
}

/// The chain in force (root first), shared by the session and the `tools/list` marks.
pub type Marks = Arc<Mutex<Vec<SignedGrant>>>;

/// What the session did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// `tools/call` requests seen.
    pub calls: u64,
    /// Allowed, relayed and answered (completed or failed).
    pub allowed: u64,
    /// Denied by the gate (each with a receipt).
    pub denied: u64,
    /// Refused before the gate: no binding, or the call did not bind.
    pub refused: u64,
    /// Allowed and lost (the upstream stopped, hung or the client cancelled): unresolved.
    pub lost: u64,
}

/// A line-per-event log of the session (`--events`), for the console and
/// for people: each call with its tool, intent hash, verdict, receipt and
/// metered figure.
#[derive(Debug, Clone, Default)]
pub struct Events(Option<Arc<Mutex<std::fs::File>>>);

impl Events {
    /// Appends to `path`.
    pub fn to_file(path: &std::path::Path) -> Result<Self, GatewayError> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| GatewayError::io(format!("opening {}", path.display()), e))?;
        Ok(Self(Some(Arc::new(Mutex::new(f)))))
    }

    /// Writes one event (a failure to write is logged, never fatal to the session).
    pub fn emit(&self, v: &Value) {
        if let Some(f) = &self.0 {
            let mut f = lock(f);
            if let Err(e) = writeln!(f, "{v}") {
                tracing::warn!("gateway events: {e}");
            }
        }
    }
}

/// The gateway: an endpoint with the upstream behind its gate.
#[derive(Debug)]
pub struct Gateway {
    endpoint: Endpoint,
    upstream: Arc<Upstream>,
    settings: Arc<Settings>,
    events: Events,
    client_name: Arc<Mutex<Option<String>>>,
    summary: Arc<Mutex<Summary>>,
    run_state: Mutex<Option<RunState>>,
    /// Set once the client's input has ended: a call held at a checkpoint stops waiting.
    closing: Arc<std::sync::atomic::AtomicBool>,
    /// The calls not yet decided, and which of them the client cancelled.
    waiting: Arc<Mutex<Waiting>>,
}

/// The client's calls queued or held, not yet at the gate (by [`crate::upstream::id_key`]),
/// and those of them it cancelled (MCP "Cancellation"): a cancelled call is
/// never decided, so it never runs. Bounded by the calls in the queue; one
/// call an id, since a request whose id is held is refused ([`Upstream::claim`]).
#[derive(Debug, Default)]
struct Waiting {
    calls: std::collections::HashSet<String>,
    cancelled: std::collections::HashSet<String>,
}

impl Waiting {
    fn queued(&mut self, key: String) {
        self.calls.insert(key);
    }

    /// The client cancelled `key`: marked where it is still waiting.
    fn cancel(&mut self, key: String) {
        if self.calls.contains(&key) {
            self.cancelled.insert(key);
        }
    }

    fn is_cancelled(&self, key: &str) -> bool {
        self.cancelled.contains(key)
    }

    /// The call leaves the queue (to the gate, or cancelled): whether it
    /// was cancelled.
    fn leave(&mut self, key: &str) -> bool {
        self.calls.remove(key);
        self.cancelled.remove(key)
    }
}

/// A client's `tools/call` line as the MCP adapter binds it: read by the
/// intent crate's JSON reader (UTF-16 strings, lone surrogates kept), with
/// `params._meta` taken off: a progress token is the session's, not the
/// tool's, so it is neither forwarded nor bound (docs/decisions.md).
pub fn tools_call_value(line: &[u8]) -> Result<intent::Value, intent::IntentError> {
    let mut req = intent::parse(line)?;
    if let intent::Value::Object(o) = &mut req {
        if let Some(intent::Value::Object(p)) = o.get_mut("params") {
            p.remove("_meta");
        }
    }
    Ok(req)
}

/// Where a client's message goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// A `tools/call` request: bound, decided, relayed (its id).
    Call(Value),
    /// A `tools/list` request: its answer is marked (its id).
    List(Value),
    /// `initialize`: the client's name is noted; passed through.
    Initialize,
    /// `notifications/cancelled` for a request id: a relayed call waiting for it is lost; passed through.
    Cancelled(Value),
    /// Anything else that is one JSON-RPC message: passed through unchanged.
    Forward,
}

/// Why a client's message was refused before it reached the upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The JSON-RPC error code.
    pub code: i64,
    /// What was wrong.
    pub message: String,
    /// The id to answer, where the message had one (`null` where it could not be read).
    pub answer_id: Option<Value>,
}

/// Routes one line from the client. Only one JSON-RPC message, an object,
/// reaches the upstream, and never a `tools/call` that the gate did not
/// decide: a batch (an array, which MCP's current revision does not
/// carry, and in which a `tools/call` would pass undecided), a value that is
/// not an object, a `method` that is not a string, a `tools/call` without
/// an id (a notification, which the gate cannot answer), and an object with
/// a key twice (two readers may not agree which `method` it names) are
/// refused. docs/decisions.md, "`jcp gateway`".
pub fn route(line: &[u8]) -> Result<(Value, Route), Refusal> {
    let refuse = |code: i64, message: String, answer_id: Option<Value>| Refusal { code, message, answer_id };
    let v: Value =
        serde_json::from_slice(line).map_err(|e| refuse(-32700, format!("parse error: {e}"), Some(Value::Null)))?;
    let Some(obj) = v.as_object() else {
        let what =
            if v.is_array() { "a batch (send each message on its own line)" } else { "not a JSON-RPC message object" };
        return Err(refuse(-32600, format!("invalid request: {what}"), Some(Value::Null)));
    };
    let id = obj.get("id").cloned();
    if let Err(intent::IntentError::DuplicateKey { path, key }) = intent::parse(line) {
        return Err(refuse(
            -32600,
            format!("invalid request: the key {key} twice in the object at {path}"),
            Some(id.unwrap_or(Value::Null)),
        ));
    }
    let method = match obj.get("method") {
        None => return Ok((v, Route::Forward)),
        Some(Value::String(m)) => m.clone(),
        Some(_) => {
            return Err(refuse(
                -32600,
                "invalid request: method is not a string".into(),
                Some(id.unwrap_or(Value::Null)),
            ))
        }
    };
    let r = match (method.as_str(), id) {
        ("tools/call", Some(id)) => Route::Call(id),
        ("tools/call", None) => {
            return Err(refuse(
                -32600,
                "a tools/call without an id (a notification) is never relayed: the gate answers every call".into(),
                None,
            ))
        }
        ("tools/list", Some(id)) => Route::List(id),
        ("initialize", Some(_)) => Route::Initialize,
        ("notifications/cancelled", None) => match v.pointer("/params/requestId") {
            Some(rid) => Route::Cancelled(rid.clone()),
            None => Route::Forward,
        },
        _ => Route::Forward,
    };
    Ok((v, r))
}

/// A fresh random UUID (version 4): a tenant or intent id.
pub fn fresh_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn rfc3339(unix: u64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp(i64::try_from(unix).unwrap_or(i64::MAX))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(&time::format_description::well_known::Rfc3339).unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// A tool error result (MCP: the call's `result` with `isError`), with the
/// gateway's code and, where the gate decided, the receipt.
fn tool_error(id: &Value, code: &str, text: &str, meta: Value) -> Value {
    let mut m = json!({"jcp/code": code});
    if let (Some(m), Value::Object(extra)) = (m.as_object_mut(), meta) {
        m.extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": text}],
        "isError": true,
        "_meta": m,
    }})
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Marks each tool of a `tools/list` answer with whether the grant's leaf
/// allows the action its binding names on its resource (`_meta`:
/// `jcp/allowed`, `jcp/why`). Each call is still decided on its own
/// (budget, expiry, revocation, caveats): this is what the grant's
/// capability says, not a decision.
pub fn annotator(bindings: Bindings, marks: Marks) -> crate::upstream::Annotate {
    Box::new(move |v: &mut Value| {
        let Some(tools) = v.pointer_mut("/result/tools").and_then(Value::as_array_mut) else {
            return;
        };
        // The chain in force now: the run's active continuation once the steward amended it.
        let chain = lock(&marks).clone();
        let Some(leaf) = chain.last() else { return };
        let (cap, leaf_id) = (leaf.grant().capability.clone(), leaf.id());
        // An `ActionIn` caveat anywhere on the chain (an amendment may add one) narrows the actions.
        let narrowed = |action: &str| {
            chain.iter().find_map(|g| {
                g.grant().caveats.iter().find_map(|c| match c {
                    jcp::grant::Caveat::ActionIn(list) if !list.iter().any(|a| a == action) => Some(g.id()),
                    _ => None,
                })
            })
        };
        for t in tools {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            let (allowed, why) = match bindings.get(&name) {
                None => (false, "no binding: the gateway refuses calls to it".to_owned()),
                Some(b) if b.resource != cap.resource => {
                    (false, format!("the grant is for another resource than {}", b.resource_text))
                }
                Some(b) if !cap.actions.contains(&b.mcp.action) => {
                    (false, format!("the grant does not allow the action {:?}", b.mcp.action))
                }
                Some(b) if narrowed(&b.mcp.action).is_some() => (
                    false,
                    format!(
                        "an ActionIn caveat of grant {} does not allow the action {:?}",
                        narrowed(&b.mcp.action).map(|g| g.to_hex()).unwrap_or_default(),
                        b.mcp.action
                    ),
                ),
                Some(b) => (
                    true,
                    format!(
                        "grant {leaf_id} allows {:?} on {}; each call is still decided (budget, expiry, revocation)",
                        b.mcp.action, b.resource_text
                    ),
                ),
            };
            if let Some(obj) = t.as_object_mut() {
                let meta = obj.entry("_meta").or_insert_with(|| json!({}));
                if let Some(m) = meta.as_object_mut() {
                    m.insert("jcp/allowed".into(), Value::Bool(allowed));
                    m.insert("jcp/why".into(), Value::String(why));
                }
            }
        }
    })
}

impl Gateway {
    /// A gateway over an opened endpoint whose backend is `upstream`.
    /// With `settings.steer`, the run file is opened (created under the
    /// chain's leaf when absent) and followed to its active grant first.
    pub fn new(
        endpoint: Endpoint,
        upstream: Arc<Upstream>,
        mut settings: Settings,
        events: Events,
    ) -> Result<Self, GatewayError> {
        let run_state = match &settings.steer {
            Some(o) => {
                let st = RunState::open(&o.run, settings.chain.clone())?;
                settings.chain.clone_from(&st.chain);
                lock(&settings.marks).clone_from(&st.chain);
                Some(st)
            }
            None => None,
        };
        Ok(Self {
            endpoint,
            upstream,
            settings: Arc::new(settings),
            events,
            client_name: Arc::new(Mutex::new(None)),
            summary: Arc::new(Mutex::new(Summary::default())),
            run_state: Mutex::new(run_state),
            closing: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            waiting: Arc::new(Mutex::new(Waiting::default())),
        })
    }

    /// The endpoint (to serve feeds on a socket beside the session).
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The session's event log.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Runs the session until the client closes its input: then the calls
    /// in flight finish, the upstream is closed and everything it still
    /// sends reaches `output` before this returns. `from_upstream` is the
    /// receiving end of the channel the upstream was spawned with.
    /// `output` is written by a thread of its own, each message as soon as
    /// it is there, and by the upstream's reader thread where its sink
    /// shares `output` ([`crate::upstream::ClientSink::direct`]): an
    /// answer then reaches the client from the thread that read it.
    pub async fn run(
        &self,
        input: ClientInput,
        output: crate::upstream::SharedOutput,
        mut from_upstream: tokio::sync::mpsc::UnboundedReceiver<String>,
        to_client: tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Result<Summary, GatewayError> {
        let writer = tokio::task::spawn_blocking(move || {
            while let Some(line) = from_upstream.blocking_recv() {
                if crate::upstream::write_line(&output, &line).is_err() {
                    return;
                }
            }
        });
        self.serve(input, writer, to_client).await
    }

    /// [`Gateway::run`] with the client's side taken apart: `input` gives
    /// the client's messages a line each; `writer` is the task that takes
    /// everything for the client off the channel the upstream was spawned
    /// with (ended once `to_client`, the session's last sender, is dropped).
    /// The stdio session writes lines; the Streamable HTTP one
    /// ([`crate::http`]) routes each message to its HTTP response.
    pub async fn serve(
        &self,
        input: ClientInput,
        writer: tokio::task::JoinHandle<()>,
        to_client: tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Result<Summary, GatewayError> {
        let (lines_tx, mut lines) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(64);
        let input_reader = input.read_lines(lines_tx);
        // One call at a time, in the order the client sent them: a call in
        // flight holds a reservation, so a call decided beside it would get
        // a verdict that depends on timing (docs/decisions.md).
        let (calls_tx, mut calls_rx) = tokio::sync::mpsc::unbounded_channel::<(Vec<u8>, Value, Value)>();
        let ctx = self.call_context(to_client.clone());
        let answers = to_client.clone();
        let mut state = lock(&self.run_state).take();
        let worker = tokio::spawn(async move {
            while let Some((line, v, id)) = calls_rx.recv().await {
                // `None`: answered already, before the call was settled.
                if let Some(answer) = ctx.call(&line, &v, &id, &mut state).await {
                    let _ = answers.send(answer.to_string());
                }
                // Settled (or never decided): its id may be used again.
                ctx.upstream.release(&id);
            }
        });
        while let Some(line) = lines.recv().await {
            let line = match line {
                Ok(l) => l,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    let _ = to_client.send(
                        rpc_error(&Value::Null, -32600, &format!("a message over {} bytes", crate::upstream::MAX_LINE))
                            .to_string(),
                    );
                    continue;
                }
                Err(e) => {
                    tracing::warn!("reading the client: {e}");
                    break;
                }
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let (v, route) = match route(&line) {
                Ok(r) => r,
                Err(refusal) => {
                    tracing::warn!("client: a message refused before it reached the upstream: {}", refusal.message);
                    self.events
                        .emit(&json!({"event": "refused-message", "code": refusal.code, "message": refusal.message}));
                    if let Some(id) = refusal.answer_id {
                        let _ = to_client.send(rpc_error(&id, refusal.code, &refusal.message).to_string());
                    }
                    continue;
                }
            };
            let method = v.get("method").and_then(Value::as_str);
            // A request whose id another not yet answered holds is refused
            // before it reaches the gate or the upstream.
            let request_id = v.get("id").filter(|_| method.is_some());
            if let Some(id) = request_id {
                if let Err(why) = self.upstream.claim(id) {
                    self.events.emit(&json!({"event": "refused-message", "code": -32600, "message": why}));
                    let _ = to_client.send(rpc_error(id, -32600, &why).to_string());
                    continue;
                }
            }
            let listing = if let Route::List(id) = &route { Some(id.clone()) } else { None };
            match route {
                Route::Call(id) => {
                    // Decided, run and charged one at a time, in the order sent.
                    lock(&self.waiting).queued(crate::upstream::id_key(&id));
                    let _ = calls_tx.send((line, v, id));
                    continue;
                }
                Route::List(id) => self.upstream.expect_list(&id),
                Route::Initialize => {
                    let name = v.pointer("/params/clientInfo/name").and_then(Value::as_str).map(str::to_owned);
                    lock(&self.client_name).clone_from(&name);
                    self.events.emit(&json!({"event": "initialize", "client": name}));
                }
                Route::Cancelled(rid) => {
                    // Queued or held: never decided. Relayed: lost (its outcome unknown).
                    lock(&self.waiting).cancel(crate::upstream::id_key(&rid));
                    self.upstream.cancel(&rid);
                }
                Route::Forward => {}
            }
            if let Err(e) = self.upstream.send_line(&line) {
                if let Some(id) = listing {
                    // Not sent: no answer of the upstream's will come to mark.
                    self.upstream.forget_list(&id);
                }
                if let Some(id) = request_id {
                    self.upstream.release(id);
                    let _ = to_client.send(rpc_error(id, -32603, &e.to_string()).to_string());
                }
            }
        }
        self.closing.store(true, std::sync::atomic::Ordering::Release);
        drop(calls_tx);
        let _ = worker.await;
        input_reader.abort();
        let up = self.upstream.clone();
        tokio::task::spawn_blocking(move || up.close(Duration::from_secs(3)))
            .await
            .map_err(|e| GatewayError::Upstream(format!("closing the upstream: {e}")))?;
        drop(to_client);
        let _ = writer.await;
        let s = *lock(&self.summary);
        self.events.emit(&json!({"event": "closed", "summary": s}));
        Ok(s)
    }

    fn call_context(&self, to_client: tokio::sync::mpsc::UnboundedSender<String>) -> CallContext {
        CallContext {
            closing: self.closing.clone(),
            waiting: self.waiting.clone(),
            to_client,
            upstream: self.upstream.clone(),
            endpoint: self.endpoint.clone(),
            settings: self.settings.clone(),
            events: self.events.clone(),
            client_name: self.client_name.clone(),
            summary: self.summary.clone(),
        }
    }
}

/// What a call debited the run: µJ, grade, and the receipt that debited it.
#[derive(Debug, Clone, Copy)]
struct Debit {
    uj: u64,
    grade: Provenance,
    receipt: ContentId,
}

/// What one call's task holds.
struct CallContext {
    closing: Arc<std::sync::atomic::AtomicBool>,
    waiting: Arc<Mutex<Waiting>>,
    to_client: tokio::sync::mpsc::UnboundedSender<String>,
    upstream: Arc<Upstream>,
    endpoint: Endpoint,
    settings: Arc<Settings>,
    events: Events,
    client_name: Arc<Mutex<Option<String>>>,
    summary: Arc<Mutex<Summary>>,
}

impl CallContext {
    fn count(&self, f: impl FnOnce(&mut Summary)) {
        f(&mut lock(&self.summary));
    }

    /// One `tools/call`: its answer to the client (`None` where it left
    /// before the call was settled). Held first while the run waits at a
    /// checkpoint; then decided under the run's chain; its debit counted
    /// toward the next checkpoint.
    async fn call(&self, line: &[u8], v: &Value, id: &Value, state: &mut Option<RunState>) -> Option<Value> {
        self.count(|s| s.calls += 1);
        let key = crate::upstream::id_key(id);
        let cancelled = lock(&self.waiting).is_cancelled(&key);
        let held = if cancelled { None } else { self.hold(v, id, state).await };
        // Cancelled while queued or held: never decided, and (MCP
        // "Cancellation") not answered.
        if lock(&self.waiting).leave(&key) {
            self.count(|s| s.refused += 1);
            let tool = v.pointer("/params/name").and_then(Value::as_str).unwrap_or_default();
            self.events.emit(&json!({"event": "call", "tool": tool, "verdict": "cancelled", "code": "cancelled",
                "message": "the client cancelled the call before it was decided: it did not run"}));
            return None;
        }
        if let Some(answer) = held {
            return Some(answer);
        }
        let chain = state.as_ref().map_or_else(|| self.settings.chain.clone(), |s| s.chain.clone());
        let (answer, debit) = self.decide_and_relay(line, v, id, &chain).await;
        if let (Some(d), Some(st), Some(opts)) = (debit, state.as_mut(), &self.settings.steer) {
            match st.debited(opts, &self.settings.holder, d.uj, d.grade, d.receipt) {
                Ok(Some(cp)) => self.events.emit(&json!({"event": "checkpoint", "id": cp.id(),
                    "seq": cp.checkpoint().seq, "grant": cp.checkpoint().grant_id, "spent_uj": st.spent_uj(),
                    "run": opts.run})),
                Ok(None) => {}
                Err(e) => {
                    // Fail closed: a run whose checkpoint cannot be written goes no further unsteered.
                    tracing::error!("gateway: the checkpoint could not be written: {e}");
                    st.broken = Some(e.to_string());
                }
            }
        }
        answer
    }

    /// While the run waits at a checkpoint, the call waits for the steward
    /// (MCP progress to the client meanwhile, where it asked for progress).
    /// `Some` answer when the call is not to be decided: the wait timed
    /// out, the amendment could not be followed, or the run is broken.
    async fn hold(&self, v: &Value, id: &Value, state: &mut Option<RunState>) -> Option<Value> {
        let opts = self.settings.steer.clone()?;
        let st = state.as_mut()?;
        if let Some(why) = &st.broken {
            return Some(tool_error(
                id,
                "run-unwritable",
                &format!("jcp: the run cannot be checkpointed: {why}"),
                json!({}),
            ));
        }
        let cp = st.pending.as_ref()?.id();
        let token = v.pointer("/params/_meta/progressToken").cloned();
        self.events.emit(&json!({"event": "held", "checkpoint": cp, "run": opts.run}));
        let run_now = state.take()?;
        let endpoint = self.endpoint.clone();
        let to_client = self.to_client.clone();
        let closing = self.closing.clone();
        let (waiting, key) = (self.waiting.clone(), crate::upstream::id_key(id));
        let rt = tokio::runtime::Handle::current();
        let joined = tokio::task::spawn_blocking(move || {
            let mut st = run_now;
            let feed = |f: Feed| -> Result<(), String> {
                rt.block_on(async {
                    // In-process: the gateway's own follower is the operator's feed (§4.3).
                    let a = endpoint.feed(f).await.map_err(|e| e.to_string())?;
                    if a.admitted {
                        Ok(())
                    } else {
                        Err(format!("[{}] {}", a.code, a.message))
                    }
                })
            };
            let tick = |n: u64| {
                if let Some(t) = token.as_ref().filter(|_| n == 1 || n.is_multiple_of(10)) {
                    let p = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                        "progressToken": t, "progress": n,
                        "message": format!("held at checkpoint {cp}: waiting for the steward to approve, amend or revoke the run")}});
                    let _ = to_client.send(p.to_string());
                }
            };
            let r = crate::steer::wait_until(
                &opts,
                || {
                    if closing.load(std::sync::atomic::Ordering::Acquire) {
                        return Ok(Some(Steered::ClientGone));
                    }
                    if lock(&waiting).is_cancelled(&key) {
                        return Ok(Some(Steered::Cancelled));
                    }
                    st.look(
                        &opts,
                        |s, steered| {
                            // A soft revoke travels the revocation feed at its next marker (§4.3, §4.7).
                            let known = rt.block_on(endpoint.known_through()).map_err(|e| e.to_string())?;
                            feed(Feed::Amendment {
                                steered: steered.clone(),
                                checkpoint: s.cp.clone(),
                                amendment: s.am.clone(),
                                continuation: s.cont.clone(),
                                marker: Some(known.map_or(1, |k| k.saturating_add(1))),
                            })
                        },
                        |rev, g| {
                            // The next marker: no decision already made reads as made knowing it (§4.3).
                            let known = rt.block_on(endpoint.known_through()).map_err(|e| e.to_string())?;
                            let marker = known.map_or(1, |k| k.saturating_add(1));
                            feed(Feed::Revocation { revocation: rev.clone(), grant: g.clone(), marker })
                        },
                    )
                },
                tick,
            );
            (st, r)
        })
        .await;
        let (st, r) = match joined {
            Ok(x) => x,
            Err(e) => {
                return Some(tool_error(
                    id,
                    "internal",
                    &format!("jcp: waiting at the checkpoint failed: {e}"),
                    json!({}),
                ))
            }
        };
        *state = Some(st);
        self.held_outcome(r, id, cp, state.as_ref())
    }

    /// What the wait at checkpoint `cp` came to, for the held call `id`:
    /// `None` where it goes on to the gate (or, cancelled, goes nowhere).
    fn held_outcome(
        &self,
        r: Result<Steered, GatewayError>,
        id: &Value,
        cp: ContentId,
        state: Option<&RunState>,
    ) -> Option<Value> {
        match r {
            Ok(Steered::Continued(cont)) => {
                if let Some(st) = state {
                    lock(&self.settings.marks).clone_from(&st.chain);
                }
                self.events.emit(&json!({"event": "continued", "checkpoint": cp, "continuation": cont}));
                None
            }
            // Admitted at the endpoint: the call goes to the gate, which denies it `revoked`, sealed.
            Ok(Steered::Revoked(why)) => {
                self.events.emit(&json!({"event": "revoked", "checkpoint": cp, "why": why}));
                None
            }
            Ok(Steered::Cancelled) => {
                self.events.emit(&json!({"event": "held-call-dropped", "checkpoint": cp,
                    "why": "the client cancelled the call while it was held"}));
                None
            }
            Ok(Steered::ClientGone) => {
                self.events.emit(&json!({"event": "held-call-dropped", "checkpoint": cp,
                    "why": "the client closed the session while the call was held"}));
                Some(tool_error(
                    id,
                    "session-closed",
                    "jcp: the session closed while the call was held",
                    json!({"jcp/checkpoint": cp}),
                ))
            }
            Ok(Steered::TimedOut(why)) => {
                Some(tool_error(id, "checkpoint-wait-timeout", &format!("jcp: {why}"), json!({"jcp/checkpoint": cp})))
            }
            Ok(Steered::Refused(why)) => {
                Some(tool_error(id, "amendment-refused", &format!("jcp: {why}"), json!({"jcp/checkpoint": cp})))
            }
            Err(e) => Some(tool_error(id, e.code(), &format!("jcp: {e}"), json!({"jcp/checkpoint": cp}))),
        }
    }

    /// One call decided by the gate under `chain`, relayed and charged on
    /// allow: the answer, and what the run was debited (the charge, or a
    /// lost call's reservation) with its grade and receipt.
    async fn decide_and_relay(
        &self,
        line: &[u8],
        v: &Value,
        id: &Value,
        chain: &[SignedGrant],
    ) -> (Option<Value>, Option<Debit>) {
        let tool = v.pointer("/params/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let refuse = |e: GatewayError| {
            self.count(|s| s.refused += 1);
            self.events.emit(&json!({"event": "call", "tool": tool, "verdict": "refused", "code": e.code(),
                "message": e.to_string()}));
            (Some(tool_error(id, e.code(), &format!("jcp gateway refused the call: {e}"), json!({}))), None)
        };
        let Some(binding) = self.settings.bindings.get(&tool) else {
            return refuse(GatewayError::ToolUnbound { tool: tool.clone() });
        };
        let bound = match self.bind(line, binding) {
            Ok(b) => b,
            Err(e) => return refuse(e),
        };
        let canonical = bound.captured.canonical_json.into_bytes();
        let intent_hash = bound.captured.intent_hash;
        let Some(leaf) = chain.last() else {
            return refuse(GatewayError::Upstream("no grant chain".into()));
        };
        let frame = Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: leaf.id(),
            action: binding.mcp.action.clone(),
            resource: binding.resource,
            payload_hash: ContentId::of_bytes(&canonical),
            model: None,
        };
        let req = RequestBody {
            frame,
            chain: chain.to_vec(),
            // The agent states no cost: only the operator's bound on what a
            // call may reserve, graded as a bound (no reading).
            cost: Energy::new(self.settings.max_uj, Provenance::Estimator),
            money: None,
            label: None,
            args: Some(canonical),
            continues: None,
            now: unix_now(),
        }
        .sign(&self.settings.holder);
        // A reply carries the tool's whole answer (up to a line's bound) with its charge receipt and figure.
        let Some(mut client) =
            self.endpoint.connect_local().map(|c| c.with_read_cap(crate::upstream::MAX_LINE + (1 << 20)))
        else {
            return refuse(GatewayError::Upstream("the enforcement point is stopping".into()));
        };
        // The upstream's answer goes to the client as soon as it comes (the
        // relay starts once the decision is durable, which may be before
        // this task reads it): made the client's once the call is allowed.
        let early = !self.settings.settle_before_answer;
        if early {
            self.upstream.answer_first(id);
        }
        let resp = match client.call(&req).await {
            Ok(r) => r,
            Err(e) => {
                self.upstream.take_answered();
                return refuse(GatewayError::Wire(e));
            }
        };
        let receipt = resp.receipt_id();
        let base = json!({"event": "call", "tool": tool, "intent_hash": intent_hash, "receipt": receipt,
            "action": binding.mcp.action});
        if !resp.decision.is_allow() {
            self.upstream.take_answered();
            self.count(|s| s.denied += 1);
            let reason = resp.decision.reason().map_or("deny", |r| r.as_str());
            let mut ev = base;
            ev["verdict"] = "deny".into();
            ev["reason"] = reason.into();
            self.events.emit(&ev);
            return (
                Some(tool_error(
                    id,
                    reason,
                    &format!("jcp: denied ({reason}); receipt {receipt}"),
                    json!({"jcp/receipt": receipt, "jcp/intent_hash": intent_hash}),
                )),
                None,
            );
        }
        // A call with no charge leaves its reservation debited (§4.11).
        let held = Some(Debit { uj: resp.decision.debited_uj, grade: Provenance::Estimator, receipt });
        if early {
            // The tool's own answer, as soon as it comes; its span, charge and
            // outcome are recorded before the next call is decided.
            let (for_id, meta) = (id.clone(), json!({"jcp/receipt": receipt, "jcp/intent_hash": intent_hash}));
            self.upstream.answer_with(Box::new(move |a| upstream_answer(&for_id, a, meta)));
        }
        let reply = tokio::time::timeout(self.settings.reply_timeout, client.reply()).await;
        // Answered early, or cancelled by the client (MCP "Cancellation": a
        // cancelled request is not answered; its outcome is still recorded).
        let answered = self.upstream.take_answered() | self.upstream.take_cancelled(id);
        let reply = match reply {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                let lost = self.lost(id, base, &format!("no reply from the enforcement point: {e}"));
                return ((!answered).then_some(lost), held);
            }
            Err(_) => {
                let lost = self.lost(id, base, "no reply from the enforcement point in time");
                return ((!answered).then_some(lost), held);
            }
        };
        let charged = reply.charge.as_ref().and_then(|c| jcp_receipt::verify_receipt(c, None).ok()).map(|c| Debit {
            uj: c.core.cost_uj,
            grade: c.core.provenance,
            receipt: c.id,
        });
        let answer = self.relayed(id, base, &reply, charged.map(|c| c.receipt), &intent_hash);
        ((!answered).then_some(answer), charged.or(held))
    }

    fn bind(
        &self,
        line: &[u8],
        binding: &crate::bindings::ToolBinding,
    ) -> Result<intent::mcp::BoundMcpInvocation, GatewayError> {
        let req = tools_call_value(line)?;
        let now = unix_now();
        let intent_id = fresh_uuid();
        let trusted = McpTrustedContext {
            tenant_id: self.settings.tenant_id.clone(),
            intent_id: intent_id.clone(),
            captured_at: rfc3339(now),
            expires_at: rfc3339(now + 300),
            actor: intent::binding::Actor {
                id: self.settings.holder.did().to_did_string(),
                actor_type: "agent".into(),
                runtime: lock(&self.client_name).clone(),
                trust_level: None,
            },
            idempotency_key: intent_id,
            server: Some(self.settings.server.clone()),
            transport: Some("stdio".into()),
            principal: None,
            context: intent::Object::new(),
        };
        Ok(bind_tools_call(&req, &binding.mcp, &trusted)?)
    }

    fn lost(&self, id: &Value, mut ev: Value, why: &str) -> Value {
        self.count(|s| s.lost += 1);
        let receipt = ev["receipt"].as_str().unwrap_or("?").to_owned();
        ev["verdict"] = "allow".into();
        ev["state"] = "lost".into();
        ev["why"] = why.into();
        self.events.emit(&ev);
        tool_error(
            id,
            "unresolved",
            &format!("jcp: the call was allowed (receipt {receipt}) but its outcome is unknown: {why}. The decision stays unresolved, its reservation debited (§4.11)."),
            json!({"jcp/receipt": receipt}),
        )
    }

    /// The client's answer to an allowed call from the relayed reply;
    /// `charge` is the id of its verified charge receipt, if it has one.
    fn relayed(
        &self,
        id: &Value,
        mut ev: Value,
        reply: &WireReply,
        charge: Option<ContentId>,
        intent_hash: &str,
    ) -> Value {
        let metered = reply.metered.as_ref().map(|m| serde_json::to_value(m).unwrap_or(Value::Null));
        ev["verdict"] = "allow".into();
        ev["state"] = reply.state.as_str().into();
        ev["metered"] = metered.clone().unwrap_or(Value::Null);
        ev["charge"] = json!(charge);
        ev["charge_refused"] = json!(reply.charge_refused);
        if !matches!(reply.state, ReplyState::Done | ReplyState::Failed) {
            let why = String::from_utf8_lossy(&reply.output).into_owned();
            return self.lost(id, ev, &why);
        }
        self.count(|s| s.allowed += 1);
        let meta = json!({"jcp/receipt": ev["receipt"], "jcp/charge": charge, "jcp/intent_hash": intent_hash,
            "jcp/metered": metered});
        let answer =
            serde_json::from_slice::<Value>(&reply.output).ok().and_then(|a| upstream_answer(id, a, meta.clone()));
        if let Some(answer) = answer {
            self.events.emit(&ev);
            return answer;
        }
        // Not run (it never reached the upstream, the upstream had stopped
        // before the call, or the binding could not be turned back into a
        // request): the log says why, as the client is told.
        let why = String::from_utf8_lossy(&reply.output).into_owned();
        ev["why"] = why.as_str().into();
        self.events.emit(&ev);
        tool_error(id, "not-run", &format!("jcp: {why}"), meta)
    }
}

/// The upstream's own answer to call `id` with the gateway's `meta` added
/// to its result's `_meta`; `None` when it is not an answer to that call.
pub(crate) fn upstream_answer(id: &Value, mut answer: Value, meta: Value) -> Option<Value> {
    if answer.get("id") != Some(id) {
        return None;
    }
    if let Some(why) = crate::upstream::malformed_call_answer(&answer) {
        // Garbage is not handed on as the tool's answer: the client is told
        // what came, and the outcome is recorded as failed.
        let receipt = meta.get("jcp/receipt").and_then(Value::as_str).unwrap_or("?").to_owned();
        return Some(tool_error(
            id,
            "upstream-failed",
            &format!("jcp: the upstream server's answer is not an MCP tool result or error ({why}); the call was allowed (receipt {receipt}) and its outcome is recorded as failed"),
            meta,
        ));
    }
    if let Some(Value::Object(r)) = answer.get_mut("result") {
        let m = r.entry("_meta").or_insert_with(|| json!({}));
        if let (Some(m), Value::Object(extra)) = (m.as_object_mut(), meta) {
            m.extend(extra);
        }
    }
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s11_no_tools_call_reaches_the_upstream_undecided() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#;
        assert_eq!(route(call).unwrap().1, Route::Call(json!(1)));
        // A batch carrying a call, a call as a notification, two `method`s: refused, never forwarded.
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]"#;
        let r = route(batch).unwrap_err();
        assert_eq!((r.code, r.answer_id), (-32600, Some(Value::Null)));
        assert!(r.message.contains("batch"), "{}", r.message);
        let note = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#;
        assert_eq!(route(note).unwrap_err().answer_id, None, "a notification gets no answer");
        let twice = br#"{"jsonrpc":"2.0","id":2,"method":"ping","method":"tools/call","params":{"name":"echo"}}"#;
        let r = route(twice).unwrap_err();
        assert_eq!((r.code, r.answer_id), (-32600, Some(json!(2))));
        assert_eq!(route(br#"{"jsonrpc":"2.0","id":3,"method":7}"#).unwrap_err().code, -32600);
        assert_eq!(route(br#""tools/call""#).unwrap_err().code, -32600);
        assert_eq!(route(b"{not json").unwrap_err().code, -32700);
    }

    #[test]
    fn s11_everything_else_passes_through_and_the_gateway_notes_what_it_needs() {
        assert_eq!(route(br#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#).unwrap().1, Route::List(json!("l")));
        assert_eq!(
            route(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#).unwrap().1,
            Route::Initialize
        );
        let cancel = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#;
        assert_eq!(route(cancel).unwrap().1, Route::Cancelled(json!(5)));
        for fwd in [
            &br#"{"jsonrpc":"2.0","id":9,"method":"resources/list"}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":4,"method":"future/method/of/a/later/revision"}"#,
        ] {
            assert_eq!(route(fwd).unwrap().1, Route::Forward);
        }
    }
}
