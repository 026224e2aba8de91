//! The upstream MCP server: a child process spoken to over stdio (MCP's
//! stdio transport: one JSON-RPC message a line). Everything it sends is
//! routed by one reader thread: the answer to a call the gateway relayed
//! goes to the call waiting for it (behind the gate, where it is metered
//! and charged before the client sees it); the answer to a `tools/list`
//! is marked with what the grant allows; anything else (its requests,
//! notifications, other answers) goes to the client unchanged.
//!
//! As a [`Backend`] it runs one allowed call: the `tools/call` request is
//! rebuilt from the sealed binding (§8: the tool, its arguments and the
//! call's id as the receipt's payload hash binds them), so what reaches the
//! tool is exactly what was decided.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use jcp_wire::backend::{Awaiting, Backend, BackendReply, Call};
use serde_json::{json, Value};

use crate::input::{SendError, Sent, Unsent, UpstreamInput};
use crate::{lock, GatewayError};

/// The longest line the gateway reads from either side (a message over it
/// is dropped and logged; a call waiting for it is then lost at its timeout).
pub const MAX_LINE: usize = 8 << 20;

/// The most requests of the client's that may wait for their answers at
/// once (each holds its id): past it, a request is refused.
pub const MAX_IN_FLIGHT: usize = 4096;

/// What the reader hands a waiting call.
#[derive(Debug)]
enum Routed {
    /// The upstream's answer: the message and its line.
    Answer(Value, Vec<u8>),
    /// The upstream stopped (or the client cancelled) before answering.
    Lost(String),
    /// The call's line never reached the upstream: it did not run.
    NotRun(String),
}

/// Marks a `tools/list` result's tools with what the grant allows.
pub type Annotate = Box<dyn Fn(&mut Value) + Send + Sync>;

/// Turns the upstream's answer to a relayed call into the client's (the
/// gateway's `_meta` added); `None`: it is not an answer to that call.
pub type AnswerFor = Box<dyn FnOnce(Value) -> Option<Value> + Send>;

/// The one relayed call whose answer goes to the client as soon as the
/// reader has it (before the call's span ends and its charge is recorded).
struct Early {
    /// The call's key ([`id_key`]).
    key: String,
    /// How its answer is made the client's, once the decision is known.
    build: Option<AnswerFor>,
    /// The upstream's answer, when it came before `build`.
    answer: Option<Value>,
    /// Whether the client has its answer.
    delivered: bool,
}

/// The early answer's hand-over between the reader thread and the call's
/// task, under one lock, so that the client gets the answer once: from the
/// reader where the call was allowed before the answer came, from the
/// call's task where the answer came first, from the settled reply where
/// neither happened before the call was over.
#[derive(Default)]
struct EarlySlot(Mutex<Option<Early>>);

impl EarlySlot {
    /// A call's answer is to go early (replacing any earlier call's).
    fn arm(&self, key: String) {
        *lock(&self.0) = Some(Early { key, build: None, answer: None, delivered: false });
    }

    /// The call is allowed: the client's answer, if the upstream's came already.
    fn allow(&self, build: AnswerFor) -> Option<Value> {
        let mut g = lock(&self.0);
        let e = g.as_mut()?;
        if let Some(a) = e.answer.take() {
            build(a).inspect(|_| e.delivered = true)
        } else {
            e.build = Some(build);
            None
        }
    }

    /// The upstream answered call `key` with `v`: the client's answer,
    /// where the call is armed and allowed (else kept for [`EarlySlot::allow`]).
    fn answered(&self, key: &str, v: &Value) -> Option<Value> {
        let mut g = lock(&self.0);
        let e = g.as_mut().filter(|e| e.key == key && !e.delivered)?;
        if let Some(build) = e.build.take() {
            build(v.clone()).inspect(|_| e.delivered = true)
        } else {
            e.answer = Some(v.clone());
            None
        }
    }

    /// The call is over: whether the client got its answer from here.
    fn take(&self) -> bool {
        lock(&self.0).take().is_some_and(|e| e.delivered)
    }
}

/// Where the messages for the client go: a queue a writer takes them off
/// (the gateway's own messages, and every message of a session whose
/// client is not a stream the reader may write itself), and, for a stdio
/// session, the client's output itself, which the upstream's reader thread
/// writes straight to (one hand-off between threads fewer for each answer;
/// the writer takes the same lock, so lines never interleave).
#[derive(Clone)]
pub struct ClientSink {
    queue: tokio::sync::mpsc::UnboundedSender<String>,
    direct: Option<SharedOutput>,
}

/// The client's output, shared by the writer thread and the upstream's reader.
pub type SharedOutput = Arc<Mutex<Box<dyn Write + Send>>>;

impl std::fmt::Debug for ClientSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSink").field("direct", &self.direct.is_some()).finish_non_exhaustive()
    }
}

impl ClientSink {
    /// Everything through `queue`.
    pub fn queued(queue: tokio::sync::mpsc::UnboundedSender<String>) -> Self {
        Self { queue, direct: None }
    }

    /// Through `queue` from the runtime's tasks; written to `out` at once
    /// by a thread that may block ([`ClientSink::send_now`]).
    pub fn direct(queue: tokio::sync::mpsc::UnboundedSender<String>, out: SharedOutput) -> Self {
        Self { queue, direct: Some(out) }
    }

    /// Queues a message (never blocks: for the runtime's tasks).
    pub fn send(&self, line: String) {
        let _ = self.queue.send(line);
    }

    /// Writes a message now where the client's output is shared (the
    /// caller is a thread of its own, which may block on it), else queues
    /// it. A failed write is the writer's to find: the client has gone.
    pub fn send_now(&self, line: String) {
        match &self.direct {
            Some(out) => {
                let _ = write_line(out, &line);
            }
            None => self.send(line),
        }
    }
}

/// Writes one message and its newline to the client's output, flushed,
/// under its lock (so no other line interleaves).
pub fn write_line(out: &SharedOutput, line: &str) -> std::io::Result<()> {
    let mut w = lock(out);
    w.write_all(&with_newline(line.as_bytes()))?;
    w.flush()
}

/// `line` and its newline in one buffer: one write, so the reader on the
/// other end of a pipe is woken once, for the whole line.
pub(crate) fn with_newline(line: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(line.len() + 1);
    b.extend_from_slice(line);
    b.push(b'\n');
    b
}

struct Routing {
    pending: Mutex<HashMap<String, mpsc::SyncSender<Routed>>>,
    /// Relayed calls that ended without their answer (past their timeout,
    /// or cancelled by the client): an answer that comes after all is
    /// dropped, not sent to a client that was answered already.
    ended: Mutex<HashSet<String>>,
    /// Relayed calls the client cancelled (MCP "Cancellation": not answered),
    /// until their waiter has ended ([`Upstream::take_cancelled`]).
    cancelled: Mutex<HashSet<String>>,
    early: EarlySlot,
    lists: Mutex<HashSet<String>>,
    /// The ids of the client's requests not yet over: a call from when it
    /// is queued until it is settled, any other request until the upstream
    /// answers it. A request whose id is among them is refused, so an
    /// answer is never taken for another request's ([`Upstream::claim`]).
    in_flight: Mutex<HashSet<String>>,
    /// Dropped when the upstream's output ends, so the client's writer
    /// ends once everything the upstream sent has been written.
    to_client: Mutex<Option<ClientSink>>,
    annotate: Annotate,
    /// Why the upstream's output ended, once it has.
    closed: Mutex<Option<String>>,
    child: Mutex<Child>,
}

impl Routing {
    /// A message of the upstream's, from the reader thread.
    fn to_client(&self, line: String) {
        let sink = lock(&self.to_client).clone();
        if let Some(tx) = sink {
            tx.send_now(line);
        }
    }
}

/// A JSON-RPC id as a map key: its JSON text (`1` and `"1"` differ, as they must).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// The upstream MCP server behind the gate.
pub struct Upstream {
    pid: u32,
    command: String,
    input: Arc<UpstreamInput>,
    routing: Arc<Routing>,
    timeout: Duration,
    self_contained: bool,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("pid", &self.pid).field("command", &self.command).finish_non_exhaustive()
    }
}

/// How the upstream is started.
#[derive(Debug, Clone)]
pub struct UpstreamOptions {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// How long one call may take before it is cancelled upstream and lost
    /// (and how long the server may read nothing of what waits for it on its
    /// input before that input is given up on).
    pub timeout: Duration,
    /// The operator's declaration that the server hands no work to a
    /// process outside its tree (§5.1): without it no figure is `Whole`.
    pub self_contained: bool,
}

/// What a relayed call's waiter makes of what was routed to it.
fn reply_of(routed: Routed) -> BackendReply {
    match routed {
        Routed::Answer(v, line) => {
            let failed = v.get("error").is_some()
                || malformed_call_answer(&v).is_some()
                || v.pointer("/result/isError").and_then(Value::as_bool).unwrap_or(false);
            if failed {
                BackendReply::Failed(line)
            } else {
                BackendReply::Done(line)
            }
        }
        Routed::Lost(why) => BackendReply::Lost { why },
        Routed::NotRun(why) => BackendReply::Failed(format!("not run: {why}").into_bytes()),
    }
}

/// A relayed call with no answer within `timeout`: withdrawn where not a
/// byte of it reached the server (it did not run); else cancelled upstream
/// and lost (§4.11: it may have run), unless its end came as the time ran out.
fn timed_out(
    routing: &Routing,
    input: &UpstreamInput,
    key: String,
    req: &Value,
    timeout: Duration,
    rx: &mpsc::Receiver<Routed>,
) -> BackendReply {
    let secs = timeout.as_secs_f64();
    if input.withdraw(&key) {
        lock(&routing.pending).remove(&key);
        return BackendReply::Failed(
            format!(
                "not run: no answer within {secs} s, and the call never reached the upstream, which had not read the {} bytes ahead of it",
                input.queued()
            )
            .into_bytes(),
        );
    }
    if lock(&routing.pending).remove(&key).is_some() {
        // Its answer, should it come after all, is not the client's.
        lock(&routing.ended).insert(key);
    } else if let Ok(routed) = rx.try_recv() {
        // What came as the time ran out.
        return reply_of(routed);
    }
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": req.get("id"), "reason": "jcp gateway: the call ran past its timeout"}});
    let why = match (input.send(cancel.to_string().as_bytes()), input.stuck()) {
        (_, Some(stuck)) => format!("no answer within {secs} s, and {stuck}"),
        (Ok(Sent::Written), None) => format!("no answer within {secs} s; the call was cancelled upstream"),
        (Ok(Sent::Queued), None) => format!(
            "no answer within {secs} s; its cancellation waits for the upstream to read its input ({} bytes ahead of it)",
            input.queued()
        ),
        (Err(e), None) => format!("no answer within {secs} s; its cancellation was {e}"),
    };
    BackendReply::Lost { why }
}

impl Upstream {
    /// Starts the server, its stdin and stdout piped, its stderr the gateway's.
    pub fn spawn(opts: &UpstreamOptions, to_client: ClientSink, annotate: Annotate) -> Result<Arc<Self>, GatewayError> {
        let (program, args) =
            opts.command.split_first().ok_or_else(|| GatewayError::Upstream("no upstream command given".into()))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| GatewayError::Upstream(format!("starting {program:?}: {e}")))?;
        let pid = child.id();
        let stdin = child.stdin.take();
        let stdout =
            child.stdout.take().ok_or_else(|| GatewayError::Upstream("the upstream's stdout was not piped".into()))?;
        let routing = Arc::new(Routing {
            pending: Mutex::new(HashMap::new()),
            ended: Mutex::new(HashSet::new()),
            cancelled: Mutex::new(HashSet::new()),
            early: EarlySlot::default(),
            lists: Mutex::new(HashSet::new()),
            in_flight: Mutex::new(HashSet::new()),
            to_client: Mutex::new(Some(to_client)),
            annotate,
            closed: Mutex::new(None),
            child: Mutex::new(child),
        });
        let r = routing.clone();
        // Calls dropped from the input before a byte of them was written did
        // not run (and no answer of the server's can come for them).
        let unsent: Unsent = Box::new(move |keys, why| {
            for key in keys {
                if let Some(tx) = lock(&r.pending).remove(key) {
                    let _ = tx.send(Routed::NotRun(format!("the call never reached the upstream: {why}")));
                }
            }
        });
        let input = UpstreamInput::start(stdin, opts.timeout, unsent)
            .map_err(|e| GatewayError::Upstream(format!("starting the upstream's input writer: {e}")))?;
        let r = routing.clone();
        std::thread::Builder::new()
            .name("jcp-gateway-upstream".into())
            .spawn(move || read_upstream(&r, stdout))
            .map_err(|e| GatewayError::Upstream(format!("starting the upstream reader: {e}")))?;
        Ok(Arc::new(Self {
            pid,
            command: opts.command.join(" "),
            input: Arc::new(input),
            routing,
            timeout: opts.timeout,
            self_contained: opts.self_contained,
        }))
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The command line it was started with.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Why its output ended, once it has.
    pub fn closed(&self) -> Option<String> {
        lock(&self.routing.closed).clone()
    }

    /// Sends one message line (the newline is added). Never blocks on the
    /// server: what its input does not take now waits for it (bounded).
    pub fn send_line(&self, line: &[u8]) -> Result<(), GatewayError> {
        self.input.send(line).map(drop).map_err(|e| GatewayError::Upstream(e.to_string()))
    }

    /// Relays one call: its `tools/call` line is written to the server now,
    /// and what is returned waits for the answer (or the timeout, after
    /// which the call is cancelled upstream and lost).
    fn relay(&self, call: Call<'_>) -> Awaiting {
        let req = match call.args.ok_or_else(|| "the call carries no binding".to_owned()).and_then(request_of_binding) {
            Ok(r) => r,
            // Nothing was sent: the tool did not run.
            Err(why) => return Box::new(move || BackendReply::Failed(why.into_bytes())),
        };
        let key = req.get("id").map(id_key).unwrap_or_default();
        if let Some(why) = self.closed() {
            return Box::new(move || {
                BackendReply::Failed(format!("not run: the upstream server had already stopped ({why})").into_bytes())
            });
        }
        let (tx, rx) = mpsc::sync_channel(1);
        lock(&self.routing.pending).insert(key.clone(), tx);
        if let Err(e) = self.input.send_call(req.to_string().as_bytes(), &key) {
            lock(&self.routing.pending).remove(&key);
            return match e {
                // Not a byte of the call reached the server: the tool did not run.
                SendError::NotSent(why) => {
                    Box::new(move || BackendReply::Failed(format!("not run: {why}").into_bytes()))
                }
                SendError::Broken(why) => Box::new(move || BackendReply::Lost { why }),
            };
        }
        let (routing, input, timeout) = (self.routing.clone(), self.input.clone(), self.timeout);
        Box::new(move || match rx.recv_timeout(timeout) {
            Ok(routed) => reply_of(routed),
            Err(_) => timed_out(&routing, &input, key, &req, timeout, &rx),
        })
    }

    /// The upstream's answer to the relayed call `id` (the client's id, which
    /// the call is relayed under) is to go to the client as soon as the
    /// reader has it, as well as to the call waiting behind the gate; how
    /// it is made the client's comes once the call is allowed
    /// ([`Upstream::answer_with`]). One at a time: a later call replaces an
    /// earlier one.
    pub fn answer_first(&self, id: &Value) {
        self.routing.early.arm(id_key(id));
    }

    /// The call is allowed: its answer goes to the client made so by
    /// `build`, now if the upstream has already given it (queued, from the
    /// runtime's task that calls this), else by the reader thread when it does.
    pub fn answer_with(&self, build: AnswerFor) {
        if let Some(a) = self.routing.early.allow(build) {
            let sink = lock(&self.routing.to_client).clone();
            if let Some(tx) = sink {
                tx.send(a.to_string());
            }
        }
    }

    /// The call is over (denied, settled or lost): whether the client got
    /// its answer early. Afterwards nothing more of it goes to the client
    /// from here.
    pub fn take_answered(&self) -> bool {
        self.routing.early.take()
    }

    /// Request `id` of the client's begins: refused (with why) where a
    /// request of that id is not over yet (JSON-RPC 2.0 §4, MCP "Requests":
    /// an id is unique; two in flight would each take the other's answer,
    /// and a call's recorded outcome would be another request's), or where
    /// [`MAX_IN_FLIGHT`] are. Released by [`Upstream::release`], or when
    /// the upstream answers a request that is not a call.
    pub fn claim(&self, id: &Value) -> Result<(), String> {
        let key = id_key(id);
        let mut f = lock(&self.routing.in_flight);
        if f.contains(&key) {
            return Err(format!("request id {key} is already in use by a request not yet answered"));
        }
        if f.len() >= MAX_IN_FLIGHT {
            return Err(format!("{MAX_IN_FLIGHT} requests are already waiting for their answers"));
        }
        f.insert(key);
        Ok(())
    }

    /// Request `id` is over (a call settled, or a request not sent).
    pub fn release(&self, id: &Value) {
        lock(&self.routing.in_flight).remove(&id_key(id));
    }

    /// The answer to request `id` is a `tools/list` result to mark.
    pub fn expect_list(&self, id: &Value) {
        lock(&self.routing.lists).insert(id_key(id));
    }

    /// The `tools/list` request `id` was not sent after all.
    pub fn forget_list(&self, id: &Value) {
        lock(&self.routing.lists).remove(&id_key(id));
    }

    /// The client cancelled request `id`: a relayed call waiting for it is
    /// lost (whether the tool took effect is not known, §4.11), or, where
    /// no byte of it has reached the upstream yet, withdrawn (it did not run).
    pub fn cancel(&self, id: &Value) -> bool {
        let key = id_key(id);
        let withdrawn = self.input.withdraw(&key);
        match lock(&self.routing.pending).remove(&key) {
            Some(tx) => {
                // Marked before its waiter is woken, so the waiter's session sees it.
                lock(&self.routing.cancelled).insert(key.clone());
                if !withdrawn {
                    // Its answer, should it come after all, is not the client's.
                    lock(&self.routing.ended).insert(key);
                }
                let _ = tx.send(if withdrawn {
                    Routed::NotRun("cancelled by the client before it reached the upstream".into())
                } else {
                    Routed::Lost("cancelled by the client while the tool ran".into())
                });
                true
            }
            None => false,
        }
    }

    /// Whether the client cancelled relayed call `id` (then it is not
    /// answered); asked once, when the call has ended.
    pub fn take_cancelled(&self, id: &Value) -> bool {
        lock(&self.routing.cancelled).remove(&id_key(id))
    }

    /// Closes the server's input (MCP stdio shutdown), waits up to
    /// `grace` for it to exit, then kills it.
    pub fn close(&self, grace: Duration) {
        self.input.close();
        let deadline = std::time::Instant::now() + grace;
        loop {
            let mut c = lock(&self.routing.child);
            match c.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if std::time::Instant::now() >= deadline => {
                    let _ = c.kill();
                    let _ = c.wait();
                    return;
                }
                Ok(None) => {}
            }
            drop(c);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Why the upstream's answer to a `tools/call` is neither an MCP
/// `CallToolResult` (a `result` object whose `content` is an array and
/// whose `isError`, if any, is a boolean) nor a JSON-RPC error (an `error`
/// object with an integer `code` and a string `message`), exactly one of
/// the two; `None` where it is one of them.
pub fn malformed_call_answer(answer: &Value) -> Option<String> {
    match (answer.get("result"), answer.get("error")) {
        (Some(_), Some(_)) => Some("it has both a result and an error".to_owned()),
        (None, None) => Some("it has neither a result nor an error".to_owned()),
        (None, Some(e)) => {
            let Some(obj) = e.as_object() else {
                return Some(format!("its error is not an object but {}", json_kind(e)));
            };
            if !obj.get("code").is_some_and(|c| c.is_i64() || c.is_u64()) {
                return Some("its error has no integer code".to_owned());
            }
            if !obj.get("message").is_some_and(Value::is_string) {
                return Some("its error has no message".to_owned());
            }
            None
        }
        (Some(r), None) => {
            let Some(obj) = r.as_object() else {
                return Some(format!("its result is not an object but {}", json_kind(r)));
            };
            match obj.get("content") {
                Some(Value::Array(_)) => {}
                Some(other) => return Some(format!("its result's content is not an array but {}", json_kind(other))),
                None => return Some("its result has no content".to_owned()),
            }
            match obj.get("isError") {
                None | Some(Value::Bool(_)) => None,
                Some(other) => Some(format!("its result's isError is not a boolean but {}", json_kind(other))),
            }
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The `tools/call` request a sealed binding names: the tool
/// (`context.mcp_tool`), its arguments (`action.parameters`) and the
/// call's id (`context.tool_call_id`).
pub fn request_of_binding(canonical: &[u8]) -> Result<Value, String> {
    let b: Value = serde_json::from_slice(canonical).map_err(|e| format!("the sealed binding is not JSON: {e}"))?;
    let tool = b.pointer("/context/mcp_tool").and_then(Value::as_str).ok_or("the binding names no context.mcp_tool")?;
    let id = b.pointer("/context/tool_call_id").ok_or("the binding names no context.tool_call_id")?;
    let arguments = b.pointer("/action/parameters").ok_or("the binding has no action.parameters")?;
    Ok(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}))
}

impl Backend for Upstream {
    fn call(&self, call: Call<'_>) -> BackendReply {
        self.relay(call)()
    }

    /// A line written to the server's input: sent from the thread the
    /// call was decided on ([`Backend::send`]).
    fn send(&self, call: Call<'_>) -> Option<Awaiting> {
        Some(self.relay(call))
    }

    fn sends_quickly(&self) -> bool {
        true
    }

    fn tree_root(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn self_contained(&self) -> bool {
        self.self_contained
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes (without its newline) into
/// `buf`; `Ok(false)` at the end. A longer line is read to its end and
/// refused as `InvalidData`, so the next one is read whole.
pub fn read_line_bounded<R: BufRead>(r: &mut R, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut line = LineState::start(buf);
    loop {
        let chunk = r.fill_buf()?;
        let (used, done) = line.take(chunk);
        r.consume(used);
        if let Some(done) = done {
            return done;
        }
    }
}

/// [`read_line_bounded`] on an asynchronous reader: the same lines, the
/// same refusal of one over [`MAX_LINE`].
pub async fn read_line_bounded_async<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    use tokio::io::AsyncBufReadExt;
    let mut line = LineState::start(buf);
    loop {
        let chunk = r.fill_buf().await?;
        let (used, done) = line.take(chunk);
        r.consume(used);
        if let Some(done) = done {
            return done;
        }
    }
}

/// One bounded line being read, a buffered chunk at a time.
struct LineState<'a> {
    buf: &'a mut Vec<u8>,
    over: bool,
}

impl<'a> LineState<'a> {
    fn start(buf: &'a mut Vec<u8>) -> Self {
        buf.clear();
        Self { buf, over: false }
    }

    /// Takes what it needs of `chunk` (empty: the end of the input): how
    /// many bytes it used, and the read's result once the line is done.
    fn take(&mut self, chunk: &[u8]) -> (usize, Option<std::io::Result<bool>>) {
        let over_limit = || std::io::Error::new(std::io::ErrorKind::InvalidData, "a line over the limit");
        if chunk.is_empty() {
            return (0, Some(if self.over { Err(over_limit()) } else { Ok(!self.buf.is_empty()) }));
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !self.over && self.buf.len() + take <= MAX_LINE {
            self.buf.extend_from_slice(&chunk[..take]);
        } else {
            self.over = true;
            self.buf.clear();
        }
        let used = if done { take + 1 } else { take };
        if !done {
            return (used, None);
        }
        if self.over {
            return (used, Some(Err(over_limit())));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        (used, Some(Ok(true)))
    }
}

fn is_answer(v: &Value) -> bool {
    v.get("method").is_none() && v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some())
}

fn read_upstream(r: &Routing, out: impl Read) {
    let mut out = BufReader::with_capacity(64 << 10, out);
    let mut buf = Vec::new();
    loop {
        match read_line_bounded(&mut out, &mut buf) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                tracing::warn!("upstream: a message over {MAX_LINE} bytes was dropped");
                continue;
            }
            Err(e) => {
                tracing::warn!("upstream: reading its output: {e}");
                break;
            }
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut v: Value = match serde_json::from_slice(&buf) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!("upstream: a line that is not JSON was dropped ({e})");
                continue;
            }
        };
        if is_answer(&v) {
            let key = v.get("id").map(id_key).unwrap_or_default();
            let waiting = lock(&r.pending).remove(&key);
            if let Some(tx) = waiting {
                // The client's answer, if the call is allowed already:
                // written here, after the slot's lock is released.
                let first = r.early.answered(&key, &v);
                if let Some(a) = first {
                    r.to_client(a.to_string());
                }
                let _ = tx.send(Routed::Answer(v, buf.clone()));
                continue;
            }
            if lock(&r.ended).remove(&key) {
                tracing::warn!(
                    "upstream: an answer to call {key} after the call had ended (timed out or cancelled) was dropped"
                );
                continue;
            }
            // Not a call's (a call's id is released when it is settled).
            lock(&r.in_flight).remove(&key);
            if lock(&r.lists).remove(&key) {
                (r.annotate)(&mut v);
                r.to_client(v.to_string());
                continue;
            }
        }
        r.to_client(String::from_utf8_lossy(&buf).into_owned());
    }
    drop(lock(&r.to_client).take());
    let status = {
        let mut c = lock(&r.child);
        // The output ends as the process exits; give it a moment to be reaped.
        let mut s = None;
        for _ in 0..50 {
            if let Ok(Some(st)) = c.try_wait() {
                s = Some(st);
                break;
            }
            drop(c);
            std::thread::sleep(Duration::from_millis(10));
            c = lock(&r.child);
        }
        s
    };
    let why = match status {
        Some(s) => format!("the upstream server exited ({s})"),
        None => "the upstream server closed its output".to_owned(),
    };
    *lock(&r.closed) = Some(why.clone());
    for (_, tx) in lock(&r.pending).drain() {
        let _ = tx.send(Routed::Lost(why.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON-RPC 2.0 §4 (ids unique among requests in flight), §11 (bounded):
    /// an id held by a request not yet over is refused, a released one may
    /// be used again, and at most `MAX_IN_FLIGHT` are held at once.
    #[test]
    fn s11_a_request_id_in_flight_is_refused_and_the_ids_held_are_bounded() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let opts = UpstreamOptions {
            command: vec!["sh".into(), "-c".into(), "sleep 30".into()],
            timeout: Duration::from_secs(30),
            self_contained: false,
        };
        let up = Upstream::spawn(&opts, ClientSink::queued(tx), Box::new(|_| {})).unwrap();
        up.claim(&json!(1)).unwrap();
        let e = up.claim(&json!(1)).unwrap_err();
        assert!(e.contains("request id 1 is already in use"), "{e}");
        // Another type is another id (JSON-RPC: "1" is not 1).
        up.claim(&json!("1")).unwrap();
        up.release(&json!(1));
        up.claim(&json!(1)).unwrap();
        for i in 2..MAX_IN_FLIGHT {
            up.claim(&json!(i)).unwrap();
        }
        let e = up.claim(&json!("one too many")).unwrap_err();
        assert!(e.contains("requests are already waiting"), "{e}");
        up.close(Duration::from_millis(10));
    }

    #[test]
    fn s11_an_answer_to_a_call_is_a_tool_result_or_an_error_and_anything_else_is_named() {
        let ok = [
            json!({"id": 1, "result": {"content": []}}),
            json!({"id": 1, "result": {"content": [{"type": "text", "text": "t"}], "isError": true}}),
            json!({"id": 1, "error": {"code": -32602, "message": "unknown tool"}}),
        ];
        for a in ok {
            assert_eq!(malformed_call_answer(&a), None, "{a}");
        }
        let bad = [
            (json!({"id": 1, "result": 42}), "its result is not an object but a number"),
            (json!({"id": 1, "result": {}}), "its result has no content"),
            (json!({"id": 1, "result": {"content": "x"}}), "its result's content is not an array but a string"),
            (json!({"id": 1, "result": {"content": [], "isError": "yes"}}), "isError is not a boolean but a string"),
            (json!({"id": 1, "error": "boom"}), "its error is not an object but a string"),
            (json!({"id": 1, "error": {"code": 1.5, "message": "m"}}), "its error has no integer code"),
            (json!({"id": 1, "error": {"code": 1}}), "its error has no message"),
            (json!({"id": 1, "result": {"content": []}, "error": {"code": 1, "message": "m"}}), "both"),
            (json!({"id": 1}), "neither"),
        ];
        for (a, why) in bad {
            let got = malformed_call_answer(&a).unwrap_or_default();
            assert!(got.contains(why), "{a}: {got}");
        }
    }

    #[test]
    fn s11_a_line_over_the_limit_is_refused_and_the_next_is_read_whole() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"a\":1}\r\nlast");
        let mut r = BufReader::with_capacity(1 << 16, &input[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line_bounded(&mut r, &mut buf).unwrap_err().kind(), std::io::ErrorKind::InvalidData);
        assert!(read_line_bounded(&mut r, &mut buf).unwrap());
        assert_eq!(buf, b"{\"a\":1}");
        assert!(read_line_bounded(&mut r, &mut buf).unwrap());
        assert_eq!(buf, b"last");
        assert!(!read_line_bounded(&mut r, &mut buf).unwrap());
    }

    fn echo_answer(id: u64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}})
    }

    fn build_for(id: u64) -> AnswerFor {
        Box::new(move |a: Value| (a.get("id") == Some(&json!(id))).then(|| json!({"answered": a})))
    }

    #[test]
    fn s11_an_answer_that_comes_before_the_allow_goes_once_from_the_call() {
        let slot = EarlySlot::default();
        slot.arm(id_key(&json!(7)));
        // The reader has the answer first: kept, nothing delivered.
        assert_eq!(slot.answered("7", &echo_answer(7)), None);
        // The call is allowed: the kept answer is delivered from the call.
        assert_eq!(slot.allow(build_for(7)), Some(json!({"answered": echo_answer(7)})));
        // A second answer with that id is not delivered again.
        assert_eq!(slot.answered("7", &echo_answer(7)), None);
        assert!(slot.take(), "the client got its answer early");
        assert!(!slot.take(), "the slot is empty once taken");
    }

    #[test]
    fn s11_an_answer_that_comes_after_the_allow_goes_once_from_the_reader() {
        let slot = EarlySlot::default();
        slot.arm(id_key(&json!(8)));
        assert_eq!(slot.allow(build_for(8)), None);
        // Another call's answer is not this one's.
        assert_eq!(slot.answered("9", &echo_answer(9)), None);
        assert_eq!(slot.answered("8", &echo_answer(8)), Some(json!({"answered": echo_answer(8)})));
        assert_eq!(slot.answered("8", &echo_answer(8)), None);
        assert!(slot.take());
    }

    #[test]
    fn s11_an_answer_after_the_call_is_over_goes_from_the_settled_reply_only() {
        let slot = EarlySlot::default();
        slot.arm(id_key(&json!(3)));
        // Denied, or settled before the upstream answered: nothing went early.
        assert!(!slot.take());
        assert_eq!(slot.answered("3", &echo_answer(3)), None);
        assert_eq!(slot.allow(build_for(3)), None);
        // An answer the builder does not take as the call's is not delivered.
        slot.arm(id_key(&json!(4)));
        assert_eq!(slot.allow(build_for(5)), None);
        assert_eq!(slot.answered("4", &echo_answer(4)), None);
        assert!(!slot.take());
    }

    #[test]
    fn s11_the_async_line_reader_reads_what_the_blocking_one_reads() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"a\":1}\r\nlast");
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            // A small buffer, so lines span several fills.
            let mut r = tokio::io::BufReader::with_capacity(7, &input[..]);
            let mut buf = Vec::new();
            let e = read_line_bounded_async(&mut r, &mut buf).await.unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
            assert!(read_line_bounded_async(&mut r, &mut buf).await.unwrap());
            assert_eq!(buf, b"{\"a\":1}");
            assert!(read_line_bounded_async(&mut r, &mut buf).await.unwrap());
            assert_eq!(buf, b"last");
            assert!(!read_line_bounded_async(&mut r, &mut buf).await.unwrap());
        });
    }

    #[test]
    fn asi_s8_the_relayed_request_is_rebuilt_from_the_sealed_binding() {
        let b = br#"{"action":{"parameters":{"message":"hi"},"resource":"r","type":"echo"},"context":{"mcp_tool":"echo","tool_call_id":7}}"#;
        let r = request_of_binding(b).unwrap();
        assert_eq!(
            r,
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}})
        );
        assert!(request_of_binding(br#"{"context":{}}"#).is_err());
    }
}
