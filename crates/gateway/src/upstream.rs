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
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Duration;

use jcp_wire::backend::{Backend, BackendReply, Call};
use serde_json::{json, Value};

use crate::GatewayError;

/// The longest line the gateway reads from either side (a message over it
/// is dropped and logged; a call waiting for it is then lost at its timeout).
pub const MAX_LINE: usize = 8 << 20;

/// What the reader hands a waiting call.
#[derive(Debug)]
enum Routed {
    /// The upstream's answer: the message and its line.
    Answer(Value, Vec<u8>),
    /// The upstream stopped (or the client cancelled) before answering.
    Lost(String),
}

/// Marks a `tools/list` result's tools with what the grant allows.
pub type Annotate = Box<dyn Fn(&mut Value) + Send + Sync>;

/// Told the upstream's answer to one relayed call the moment the reader
/// has it (before the call's span ends and its charge is recorded): the
/// call's key ([`id_key`]) and where the answer goes.
type Answered = (String, tokio::sync::oneshot::Sender<Value>);

struct Routing {
    pending: Mutex<HashMap<String, mpsc::SyncSender<Routed>>>,
    answered: Mutex<Option<Answered>>,
    lists: Mutex<HashSet<String>>,
    /// Dropped when the upstream's output ends, so the client's writer
    /// ends once everything the upstream sent has been written.
    to_client: Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>,
    annotate: Annotate,
    /// Why the upstream's output ended, once it has.
    closed: Mutex<Option<String>>,
    child: Mutex<Child>,
}

impl Routing {
    fn to_client(&self, line: String) {
        if let Some(tx) = lock(&self.to_client).as_ref() {
            let _ = tx.send(line);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A JSON-RPC id as a map key: its JSON text (`1` and `"1"` differ, as they must).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// The upstream MCP server behind the gate.
pub struct Upstream {
    pid: u32,
    command: String,
    stdin: Mutex<Option<ChildStdin>>,
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
    /// How long one call may take before it is cancelled upstream and lost.
    pub timeout: Duration,
    /// The operator's declaration that the server hands no work to a
    /// process outside its tree (§5.1): without it no figure is `Whole`.
    pub self_contained: bool,
}

impl Upstream {
    /// Starts the server, its stdin and stdout piped, its stderr the gateway's.
    pub fn spawn(
        opts: &UpstreamOptions,
        to_client: tokio::sync::mpsc::UnboundedSender<String>,
        annotate: Annotate,
    ) -> Result<Arc<Self>, GatewayError> {
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
            answered: Mutex::new(None),
            lists: Mutex::new(HashSet::new()),
            to_client: Mutex::new(Some(to_client)),
            annotate,
            closed: Mutex::new(None),
            child: Mutex::new(child),
        });
        let r = routing.clone();
        std::thread::Builder::new()
            .name("jcp-gateway-upstream".into())
            .spawn(move || read_upstream(&r, stdout))
            .map_err(|e| GatewayError::Upstream(format!("starting the upstream reader: {e}")))?;
        Ok(Arc::new(Self {
            pid,
            command: opts.command.join(" "),
            stdin: Mutex::new(stdin),
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

    /// Sends one message line (the newline is added).
    pub fn send_line(&self, line: &[u8]) -> Result<(), GatewayError> {
        let mut g = lock(&self.stdin);
        let Some(w) = g.as_mut() else {
            return Err(GatewayError::Upstream("the upstream's input is closed".into()));
        };
        w.write_all(line)
            .and_then(|()| w.write_all(b"\n"))
            .and_then(|()| w.flush())
            .map_err(|e| GatewayError::Upstream(format!("writing to the upstream: {e}")))
    }

    /// The upstream's answer to the relayed call `id` (the client's id, which
    /// the call is relayed under) goes to `tx` as soon as the reader has it,
    /// as well as to the call waiting behind the gate. One at a time: a
    /// later one replaces an earlier one not yet told.
    pub fn tell_answer(&self, id: &Value, tx: tokio::sync::oneshot::Sender<Value>) {
        *lock(&self.routing.answered) = Some((id_key(id), tx));
    }

    /// No answer to tell any more (the call was denied, or is over).
    pub fn forget_answer(&self) {
        lock(&self.routing.answered).take();
    }

    /// The answer to request `id` is a `tools/list` result to mark.
    pub fn expect_list(&self, id: &Value) {
        lock(&self.routing.lists).insert(id_key(id));
    }

    /// The client cancelled request `id`: a relayed call waiting for it is
    /// lost (whether the tool took effect is not known, §4.11).
    pub fn cancel(&self, id: &Value) -> bool {
        match lock(&self.routing.pending).remove(&id_key(id)) {
            Some(tx) => {
                let _ = tx.send(Routed::Lost("cancelled by the client while the tool ran".into()));
                true
            }
            None => false,
        }
    }

    /// Closes the server's input (MCP stdio shutdown), waits up to
    /// `grace` for it to exit, then kills it.
    pub fn close(&self, grace: Duration) {
        drop(lock(&self.stdin).take());
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
        let req = match call.args.ok_or_else(|| "the call carries no binding".to_owned()).and_then(request_of_binding) {
            Ok(r) => r,
            // Nothing was sent: the tool did not run.
            Err(why) => return BackendReply::Failed(why.into_bytes()),
        };
        let key = req.get("id").map(id_key).unwrap_or_default();
        if let Some(why) = self.closed() {
            return BackendReply::Failed(
                format!("not run: the upstream server had already stopped ({why})").into_bytes(),
            );
        }
        let (tx, rx) = mpsc::sync_channel(1);
        lock(&self.routing.pending).insert(key.clone(), tx);
        if let Err(e) = self.send_line(req.to_string().as_bytes()) {
            lock(&self.routing.pending).remove(&key);
            return BackendReply::Lost { why: e.to_string() };
        }
        match rx.recv_timeout(self.timeout) {
            Ok(Routed::Answer(v, line)) => {
                let failed =
                    v.get("error").is_some() || v.pointer("/result/isError").and_then(Value::as_bool).unwrap_or(false);
                if failed {
                    BackendReply::Failed(line)
                } else {
                    BackendReply::Done(line)
                }
            }
            Ok(Routed::Lost(why)) => BackendReply::Lost { why },
            Err(_) => {
                lock(&self.routing.pending).remove(&key);
                let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": req.get("id"), "reason": "jcp gateway: the call ran past its timeout"}});
                let _ = self.send_line(cancel.to_string().as_bytes());
                BackendReply::Lost {
                    why: format!("no answer within {} s; the call was cancelled upstream", self.timeout.as_secs_f64()),
                }
            }
        }
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
    buf.clear();
    let mut over = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            if over {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a line over the limit"));
            }
            return Ok(!buf.is_empty());
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !over && buf.len() + take <= MAX_LINE {
            buf.extend_from_slice(&chunk[..take]);
        } else {
            over = true;
            buf.clear();
        }
        r.consume(if done { take + 1 } else { take });
        if done {
            if over {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a line over the limit"));
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(true);
        }
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
                let told = {
                    let mut a = lock(&r.answered);
                    if a.as_ref().is_some_and(|(k, _)| *k == key) {
                        a.take()
                    } else {
                        None
                    }
                };
                if let Some((_, early)) = told {
                    let _ = early.send(v.clone());
                }
                let _ = tx.send(Routed::Answer(v, buf.clone()));
                continue;
            }
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
