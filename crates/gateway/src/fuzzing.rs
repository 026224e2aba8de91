//! The checks the cargo-fuzz target `gateway_decode` runs over any bytes
//! (`crates/gateway/fuzz`), shared with the corpus replay in every `cargo
//! test` (`tests/fuzz_corpus.rs`). Everything the gateway reads from
//! outside: the operator's bindings file, the client's lines, the
//! upstream's lines, and the sealed binding a call is rebuilt from. Typed
//! refusals only, never a panic; what is accepted keeps its promise.

use intent::binding::Actor;
use intent::mcp::{bind_tools_call, McpToolBinding, McpTrustedContext};
use serde_json::Value;

use crate::upstream::{read_line_bounded, request_of_binding};
use crate::Bindings;

/// A binding of server-everything's `echo` (its target names the message).
pub fn tool() -> McpToolBinding {
    McpToolBinding {
        tool: "echo".into(),
        action: "echo".into(),
        system: "everything".into(),
        operation: "echo".into(),
        environment: None,
        target: "everything:{message}".into(),
        consequential: vec!["message".into()],
        arguments: vec!["message".into(), "n".into()],
    }
}

/// A fixed trusted context (tenant, ids, times, the agent as actor).
pub fn trusted() -> McpTrustedContext {
    McpTrustedContext {
        tenant_id: "5b0c8a0e-8a47-4d4e-9b39-5a1d2f0c7e11".into(),
        intent_id: "0f6f0d2c-5d0e-4a59-9d36-9f3f6b8e2a10".into(),
        captured_at: "2026-12-06T00:00:00Z".into(),
        expires_at: "2026-12-06T00:05:00Z".into(),
        actor: Actor { id: "did:key:z6Mkfuzz".into(), actor_type: "agent".into(), runtime: None, trust_level: None },
        idempotency_key: "0f6f0d2c-5d0e-4a59-9d36-9f3f6b8e2a10".into(),
        server: Some("everything".into()),
        transport: Some("stdio".into()),
        principal: None,
        context: intent::Object::new(),
    }
}

/// A runtime for the asynchronous reader (no I/O driver: it reads memory).
#[allow(clippy::expect_used)] // a fuzzing harness: no runtime, no fuzzing
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().expect("a current-thread runtime"))
}

/// One input through every reader. `Err` names a broken promise.
pub fn gateway_decode(data: &[u8]) -> Result<(), String> {
    // The bindings file: a typed refusal or bindings whose every tool reads back.
    if let Ok(b) = Bindings::from_json(data) {
        if b.len() > crate::bindings::MAX_BINDINGS {
            return Err(format!("{} bindings accepted, more than the bound", b.len()));
        }
    }
    // Lines as either side sends them: bounded, and each line either not
    // JSON, or routed; a client's tools/call binds or is refused typed.
    let mut r = std::io::BufReader::with_capacity(1024, data);
    let mut buf = Vec::new();
    let mut lines = 0;
    let mut read = Vec::new();
    loop {
        match read_line_bounded(&mut r, &mut buf) {
            Ok(false) => break,
            Ok(true) => read.push(Some(buf.clone())),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                read.push(None);
                continue;
            }
            Err(e) => return Err(format!("reading lines from memory failed: {e}")),
        }
        lines += 1;
        if lines > data.len() + 1 {
            return Err("more lines than bytes".into());
        }
        if buf.len() > crate::upstream::MAX_LINE {
            return Err(format!("a line of {} bytes passed the bound", buf.len()));
        }
        line(&buf)?;
    }
    // The reader of a client on the runtime's thread reads the same lines
    // and refuses the same ones, however its buffer splits them.
    let async_read = runtime().block_on(async {
        let mut r = tokio::io::BufReader::with_capacity(7, data);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            match crate::upstream::read_line_bounded_async(&mut r, &mut buf).await {
                Ok(false) => return Ok(out),
                Ok(true) => out.push(Some(buf.clone())),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => out.push(None),
                Err(e) => return Err(format!("reading lines from memory on the runtime failed: {e}")),
            }
        }
    })?;
    if async_read != read {
        return Err(format!(
            "the runtime's reader read {} lines, the thread's {}, or other ones",
            async_read.len(),
            read.len()
        ));
    }
    // The sealed binding a relayed call is rebuilt from.
    if let Ok(req) = request_of_binding(data) {
        if req.get("method").and_then(Value::as_str) != Some("tools/call") {
            return Err(format!("a rebuilt request is not a tools/call: {req}"));
        }
    }
    Ok(())
}

fn line(bytes: &[u8]) -> Result<(), String> {
    // Streamable HTTP: a body made one line routes as the body does, and a
    // line for the client is routed to its stream.
    if let Ok((v, _)) = crate::session::route(bytes) {
        let flat = crate::http::one_line(bytes);
        match crate::session::route(&flat[..flat.len() - 1]) {
            Ok((w, _)) if w == v => {}
            other => return Err(format!("a POSTed body made one line routes otherwise: {other:?}")),
        }
    }
    if let Ok(s) = std::str::from_utf8(bytes) {
        crate::http::deliver_check(s)?;
    }
    // No tools/call is forwarded undecided, and only objects are forwarded.
    if let Ok((v, r)) = crate::session::route(bytes) {
        if !v.is_object() {
            return Err(format!("a value that is not an object was routed: {v}"));
        }
        let is_call = v.get("method").and_then(Value::as_str) == Some("tools/call");
        if is_call != matches!(r, crate::session::Route::Call(_)) {
            return Err(format!("a tools/call routed as {r:?}, or another message as a call: {v}"));
        }
    }
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else { return Ok(()) };
    // The upstream's answer to a call reaches the client as a tool result
    // or a JSON-RPC error, never as garbage.
    if let Some(id) = v.get("id") {
        let meta = serde_json::json!({"jcp/receipt": "r"});
        if let Some(a) = crate::session::upstream_answer(id, v.clone(), meta) {
            if let Some(why) = crate::upstream::malformed_call_answer(&a) {
                return Err(format!("an answer for the client is not a tool result or error ({why}): {a}"));
            }
        }
    }
    if v.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Ok(());
    }
    let Ok(req) = crate::session::tools_call_value(bytes) else { return Ok(()) };
    let Ok(bound) = bind_tools_call(&req, &tool(), &trusted()) else { return Ok(()) };
    // Accepted: the canonical form re-derives the same hash, and the
    // request rebuilt from it names the bound tool and its arguments.
    let canon = intent::canonicalize(&bound.captured.binding)
        .map_err(|e| format!("a bound intent does not canonicalise: {e}"))?;
    if canon.intent_hash != bound.captured.intent_hash || canon.canonical_json != bound.captured.canonical_json {
        return Err("the bound intent's hash does not re-derive".into());
    }
    let rebuilt = request_of_binding(bound.captured.canonical_json.as_bytes())?;
    if rebuilt.pointer("/params/name").and_then(Value::as_str) != Some("echo") {
        return Err(format!("the rebuilt request names another tool: {rebuilt}"));
    }
    let sent = v.pointer("/params/arguments").cloned().unwrap_or_else(|| serde_json::json!({}));
    let got = rebuilt.pointer("/params/arguments").cloned().unwrap_or(Value::Null);
    if !same_json(&sent, &got) {
        return Err(format!("the rebuilt arguments {got} are not the call's {sent}"));
    }
    Ok(())
}

/// JSON equality with numbers compared as doubles (the canonical form
/// writes them as ECMAScript does; the value is the same).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}
