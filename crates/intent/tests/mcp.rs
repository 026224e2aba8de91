//! §8 the MCP adapter's refusals: a request is bound whole or refused,
//! never repaired.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use intent::mcp::{bind_tools_call, fill_target, McpToolBinding, McpTrustedContext};
use intent::{Actor, Object, Value};

fn tool() -> McpToolBinding {
    McpToolBinding {
        tool: "refund_order".into(),
        action: "refund_order".into(),
        system: "shop".into(),
        operation: "refunds/create".into(),
        environment: None,
        target: "shop:order:{orderId}".into(),
        consequential: vec!["orderId".into(), "amountMinor".into()],
        arguments: vec!["orderId".into(), "amountMinor".into(), "reason".into()],
    }
}

fn trusted() -> McpTrustedContext {
    McpTrustedContext {
        tenant_id: "00000000-0000-4000-8000-000000000002".into(),
        intent_id: "11111111-1111-4111-8111-111111111111".into(),
        captured_at: "2026-08-14T10:00:00.000Z".into(),
        expires_at: "2026-08-14T10:01:00.000Z".into(),
        actor: Actor {
            id: "agent".into(),
            actor_type: "AI_AGENT".into(),
            runtime: Some("mcp".into()),
            trust_level: None,
        },
        idempotency_key: "refund-1".into(),
        server: None,
        transport: None,
        principal: None,
        context: Object::new(),
    }
}

fn call(text: &str) -> Value {
    intent::parse(text.as_bytes()).unwrap()
}

const OK: &str = r#"{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"refund_order","arguments":{"orderId":"o-1","amountMinor":350}}}"#;

#[test]
fn s8_tools_call_becomes_a_binding_with_the_arguments_digest() {
    let b = bind_tools_call(&call(OK), &tool(), &trusted()).unwrap();
    let binding = &b.captured.binding;
    assert_eq!(binding.pointer_dotted("action.resource").and_then(Value::as_str), Some("shop:order:o-1"));
    assert_eq!(
        binding.pointer_dotted("context.mcp_arguments_digest").and_then(Value::as_str),
        Some(b.arguments_digest.as_str())
    );
    assert_eq!(b.arguments_digest, intent::intent_hash(br#"{"amountMinor":350,"orderId":"o-1"}"#));
    assert_eq!(binding.pointer_dotted("context.tool_call_id").and_then(Value::as_str), Some("c1"));
    assert_eq!(binding.pointer_dotted("context.idempotency_key").and_then(Value::as_str), Some("refund-1"));
    // Every argument is in the hash: a changed argument is another intent.
    let other = OK.replace("350", "351");
    let b2 = bind_tools_call(&call(&other), &tool(), &trusted()).unwrap();
    assert_ne!(b2.captured.intent_hash, b.captured.intent_hash);
}

#[test]
fn s8_undeclared_argument_is_refused_not_dropped() {
    let text = OK.replace(r#""amountMinor":350"#, r#""amountMinor":350,"force":true"#);
    assert_eq!(bind_tools_call(&call(&text), &tool(), &trusted()).unwrap_err().code(), "MCP_ARGUMENTS_INVALID");
}

#[test]
fn s8_another_tool_is_refused() {
    let text = OK.replace(r#""name":"refund_order""#, r#""name":"delete_order""#);
    assert_eq!(bind_tools_call(&call(&text), &tool(), &trusted()).unwrap_err().code(), "MCP_TOOL_MISMATCH");
}

#[test]
fn s8_not_a_tools_call_request_is_refused() {
    for bad in [
        OK.replace("tools/call", "tools/list"),
        OK.replace(r#""jsonrpc":"2.0","#, ""),
        OK.replace(r#""id":"c1","#, ""),
        OK.replace(r#""id":"c1""#, r#""id":null"#),
        OK.replace(r#""params":{"#, r#""params":{"_meta":{"progressToken":1},"#),
        OK.replace(r#""method""#, r#""extra":1,"method""#),
        OK.replace(r#""arguments":{"orderId":"o-1","amountMinor":350}"#, r#""arguments":[1]"#),
    ] {
        assert_eq!(
            bind_tools_call(&call(&bad), &tool(), &trusted()).unwrap_err().code(),
            "MCP_INVOCATION_INVALID",
            "{bad}"
        );
    }
}

#[test]
fn s8_target_that_cannot_be_filled_is_refused() {
    let args = |t: &str| call(t).as_object().unwrap().clone();
    assert_eq!(fill_target("a:{x}", &args(r#"{"y":1}"#)).unwrap_err().code(), "MCP_TARGET_UNRESOLVED");
    assert_eq!(fill_target("a:{x}", &args(r#"{"x":""}"#)).unwrap_err().code(), "MCP_TARGET_UNRESOLVED");
    assert_eq!(fill_target("a:{x}", &args(r#"{"x":{"k":1}}"#)).unwrap_err().code(), "MCP_TARGET_UNRESOLVED");
    assert_eq!(fill_target("a:{x", &args(r#"{"x":"v"}"#)).unwrap_err().code(), "MCP_TARGET_UNRESOLVED");
    assert_eq!(fill_target("a:}x", &args(r#"{"x":"v"}"#)).unwrap_err().code(), "MCP_TARGET_UNRESOLVED");
    assert_eq!(fill_target(&"{x}".repeat(17), &args(r#"{"x":"v"}"#)).unwrap_err().code(), "MCP_TARGET_UNRESOLVED");
    assert_eq!(
        fill_target("{x}", &args(&format!(r#"{{"x":"{}"}}"#, "v".repeat(501)))).unwrap_err().code(),
        "MCP_TARGET_UNRESOLVED"
    );
    assert_eq!(fill_target("n:{x}:{y}:{z}", &args(r#"{"x":1e21,"y":true,"z":-0}"#)).unwrap(), "n:1e+21:true:0");
}

#[test]
fn s8_lone_surrogate_in_arguments_is_refused_for_the_digest() {
    let text = OK.replace(r#""o-1""#, r#""o-\ud800""#);
    assert_eq!(bind_tools_call(&call(&text), &tool(), &trusted()).unwrap_err().code(), "JCS_NOT_I_JSON");
}

#[test]
fn s3_trusted_context_cannot_preempt_keys_the_producer_sets() {
    for key in ["idempotency_key", "mcp_arguments_digest", "ingress"] {
        let mut t = trusted();
        t.context.insert(key, "x".into());
        assert_eq!(bind_tools_call(&call(OK), &tool(), &t).unwrap_err().code(), "CONTEXT_RESERVED_KEY", "{key}");
    }
}
