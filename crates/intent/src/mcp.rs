//! §8 the MCP adapter: a JSON-RPC `tools/call` request, an operator's tool
//! binding and the trusted context become an Agent-Safe binding, with the
//! digest of the canonical arguments in `context.mcp_arguments_digest`.
//!
//! The model supplies the tool name and the arguments and nothing else; the
//! operator's tool binding names the action, the system and operation, the
//! arguments the tool accepts and the target template; the target is
//! derived from the arguments, never accepted from the caller. Refused, never
//! repaired: a request that is not a `tools/call`, another tool than the one
//! bound, an argument the binding does not declare (dropping it would leave
//! an argument the authority never saw), a target that cannot be filled.
//! Every argument is in `action.parameters`, and therefore in the hash.

use crate::binding::{capture, Actor, Captured, DownstreamTarget, Proposal, TrustedContext};
use crate::canonical::{self, Path};
use crate::error::IntentError;
use crate::value::{Object, Value};

/// At most this many placeholders in a target template.
pub const MAX_TEMPLATE_PLACEHOLDERS: usize = 16;

/// What an operator declares about one tool, in trusted configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolBinding {
    /// The tool name the server publishes.
    pub tool: String,
    /// The Agent-Safe `action.type` it becomes.
    pub action: String,
    /// The `downstream_target.system` a call to it reaches.
    pub system: String,
    /// The `downstream_target.operation` a call to it invokes.
    pub operation: String,
    /// The `downstream_target.environment`, when the operator names one.
    pub environment: Option<String>,
    /// `crm:customer:{customerId}`: every placeholder must be a scalar argument.
    pub target: String,
    /// The arguments that decide what the action does (for reviewers and
    /// evidence; every argument is hashed regardless).
    pub consequential: Vec<String>,
    /// The arguments the tool accepts; any other is refused.
    pub arguments: Vec<String>,
}

/// What the host runtime knows about the call, as against what the model sent.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTrustedContext {
    /// `tenant_id`: the tenant the call is made for (a UUID).
    pub tenant_id: String,
    /// `intent_id`: this intent's identifier (a UUID).
    pub intent_id: String,
    /// `captured_at`: when the host captured the call (RFC 3339 date-time).
    pub captured_at: String,
    /// `expires_at`: after when authority over the call lapses (RFC 3339 date-time).
    pub expires_at: String,
    /// `actor`: who is calling, as the host authenticated it.
    pub actor: Actor,
    /// The host's retry identity; rides in `context.idempotency_key` (§3).
    pub idempotency_key: String,
    /// The server holding the tool, when the host runs more than one.
    pub server: Option<String>,
    /// How the call arrived (`stdio`, `streamable-http`).
    pub transport: Option<String>,
    /// The principal the host authenticated, when it did.
    pub principal: Option<String>,
    /// Further trusted context; may not name a key the adapter sets.
    pub context: Object,
}

/// A bound MCP invocation: the captured intent and the arguments digest the
/// guard recomputes right before dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundMcpInvocation {
    /// The intent the call became: binding, canonical form and hash.
    pub captured: Captured,
    /// The digest of the call's canonical arguments (as in
    /// `context.mcp_arguments_digest`), which the guard recomputes from the
    /// arguments about to be dispatched.
    pub arguments_digest: String,
}

/// Context keys the adapter sets itself.
pub const ADAPTER_CONTEXT_KEYS: [&str; 8] = [
    "ingress",
    "mcp_tool",
    "mcp_arguments_digest",
    "mcp_consequential",
    "mcp_server",
    "mcp_transport",
    "tool_call_id",
    "claimed_principal",
];

fn invalid(path: &str, expected: &str) -> IntentError {
    IntentError::McpInvocationInvalid { path: path.into(), expected: expected.into() }
}

/// The digest of a JSON value's canonical form, refusing what is not I-JSON
/// (a lone surrogate would be written differently by another JSON writer).
pub fn arguments_digest(arguments: &Value) -> Result<String, IntentError> {
    assert_i_json(arguments, &Path::Root)?;
    let c = canonical::canonical_json(arguments)?;
    Ok(canonical::intent_hash(c.as_bytes()))
}

fn assert_i_json(v: &Value, at: &Path<'_>) -> Result<(), IntentError> {
    match v {
        Value::String(s) if !s.is_well_formed() => Err(IntentError::NotIJson { path: at.render() }),
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, x)| assert_i_json(x, &Path::Index(at, i))),
        Value::Object(o) => o.iter().try_for_each(|(k, x)| {
            let here = Path::Key(at, k);
            if k.is_well_formed() {
                assert_i_json(x, &here)
            } else {
                Err(IntentError::NotIJson { path: here.render() })
            }
        }),
        _ => Ok(()),
    }
}

/// Fills a target template from the arguments by one linear scan (no
/// regular expression over the model's values). A placeholder with no
/// argument, an argument that is not a non-empty string, a finite number or
/// a boolean, a stray or unterminated brace, more than
/// [`MAX_TEMPLATE_PLACEHOLDERS`] placeholders, or a result outside 1..=500
/// UTF-16 code units is a refusal.
pub fn fill_target(template: &str, args: &Object) -> Result<String, IntentError> {
    fill_template(template, args).map_err(|reason| IntentError::McpTargetUnresolved { reason })
}

/// [`fill_target`]'s scan, shared with the other frameworks' adapters
/// ([`crate::frameworks`]), which wrap the reason in their own refusal.
pub(crate) fn fill_template(template: &str, args: &Object) -> Result<String, String> {
    let mut out = String::new();
    let mut placeholders = 0;
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        if rest.as_bytes()[at] == b'}' {
            return Err(format!("stray '}}' in template {template:?}"));
        }
        let after = &rest[at + 1..];
        let close = after.find('}').ok_or_else(|| format!("unterminated placeholder in {template:?}"))?;
        placeholders += 1;
        if placeholders > MAX_TEMPLATE_PLACEHOLDERS {
            return Err(format!("more than {MAX_TEMPLATE_PLACEHOLDERS} placeholders"));
        }
        let name = &after[..close];
        let value = args.get(name).ok_or_else(|| format!("no argument {name:?} for its placeholder"))?;
        match value {
            Value::String(s) => match s.as_str() {
                Some(t) if !t.is_empty() => out.push_str(t),
                _ => return Err(format!("argument {name:?} is empty or not well-formed text")),
            },
            Value::Number(n) => {
                out.push_str(&canonical::format_number(*n).ok_or_else(|| format!("argument {name:?} is not finite"))?);
            }
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            _ => return Err(format!("argument {name:?} is not a scalar")),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    let len = out.encode_utf16().count();
    if len == 0 || len > 500 {
        return Err(format!("target has {len} UTF-16 code units, outside 1..=500"));
    }
    Ok(out)
}

/// The producer's [`TrustedContext`] for a call under `tool`: the host's
/// trusted context, the tool's system, operation and environment (and the
/// endpoint, where the adapter names one), and the context the adapter
/// assembled. Shared with the other frameworks' adapters.
pub(crate) fn producer_context(
    trusted: &McpTrustedContext,
    tool: &McpToolBinding,
    endpoint: Option<String>,
    context: Object,
) -> TrustedContext {
    TrustedContext {
        tenant_id: trusted.tenant_id.clone(),
        intent_id: trusted.intent_id.clone(),
        captured_at: trusted.captured_at.clone(),
        expires_at: trusted.expires_at.clone(),
        actor: trusted.actor.clone(),
        downstream_target: DownstreamTarget {
            system: tool.system.clone(),
            operation: tool.operation.clone(),
            environment: tool.environment.clone(),
            endpoint,
        },
        idempotency_key: trusted.idempotency_key.clone(),
        context,
        expected_effect_digest: None,
    }
}

/// Binds one MCP `tools/call` request.
pub fn bind_tools_call(
    request: &Value,
    tool: &McpToolBinding,
    trusted: &McpTrustedContext,
) -> Result<BoundMcpInvocation, IntentError> {
    let req = request.as_object().ok_or_else(|| invalid("$", "a JSON-RPC request object"))?;
    if let Some(k) = req.keys().find(|k| !["jsonrpc", "id", "method", "params"].iter().any(|a| *k == a)) {
        return Err(invalid(
            &format!("$.{k}"),
            "absent (a tools/call request carries jsonrpc, id, method and params only)",
        ));
    }
    if req.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("$.jsonrpc", "\"2.0\""));
    }
    if req.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Err(invalid("$.method", "\"tools/call\""));
    }
    let id = match req.get("id") {
        Some(v @ Value::String(s)) if s.is_well_formed() => v.clone(),
        Some(v @ Value::Number(n)) if n.is_finite() => v.clone(),
        _ => return Err(invalid("$.id", "a string or a number (a request, not a notification)")),
    };
    let params = req.get("params").and_then(Value::as_object).ok_or_else(|| invalid("$.params", "an object"))?;
    // `_meta` is refused too: what reaches the tool must be what is hashed.
    if let Some(k) = params.keys().find(|k| !["name", "arguments"].iter().any(|a| *k == a)) {
        return Err(invalid(&format!("$.params.{k}"), "absent (params carry name and arguments only)"));
    }
    let name = params.get("name").and_then(Value::as_str).ok_or_else(|| invalid("$.params.name", "a string"))?;
    if name != tool.tool {
        return Err(IntentError::McpToolMismatch { expected: tool.tool.clone(), found: name.to_owned() });
    }
    let arguments = match params.get("arguments") {
        None => Object::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err(invalid("$.params.arguments", "an object")),
    };
    if let Some(k) = arguments.keys().find(|k| !tool.arguments.iter().any(|a| *k == a.as_str())) {
        return Err(IntentError::McpArgumentsInvalid { name: k.to_string() });
    }
    for k in trusted.context.keys() {
        if k == "idempotency_key" || ADAPTER_CONTEXT_KEYS.iter().any(|a| k == a) {
            return Err(IntentError::ContextReservedKey { key: k.to_string() });
        }
    }
    let args_value = Value::Object(arguments.clone());
    let digest = arguments_digest(&args_value)?;
    let target = fill_target(&tool.target, &arguments)?;
    let consequential: Vec<Value> =
        tool.consequential.iter().filter(|c| arguments.contains_key(c)).map(|c| Value::from(c.as_str())).collect();

    let mut context = Object::new();
    context.insert("ingress", "mcp".into());
    context.insert("mcp_tool", tool.tool.as_str().into());
    context.insert("mcp_arguments_digest", digest.as_str().into());
    context.insert("mcp_consequential", Value::Array(consequential));
    if let Some(s) = &trusted.server {
        context.insert("mcp_server", s.as_str().into());
    }
    if let Some(t) = &trusted.transport {
        context.insert("mcp_transport", t.as_str().into());
    }
    context.insert("tool_call_id", id);
    if let Some(p) = &trusted.principal {
        context.insert("claimed_principal", p.as_str().into());
    }
    for (k, v) in trusted.context.iter() {
        context.insert(k.clone(), v.clone());
    }
    let proposal = Proposal { action_type: tool.action.clone(), resource: target, parameters: arguments };
    let tc = producer_context(trusted, tool, None, context);
    let captured = capture(&proposal, &tc)?;
    Ok(BoundMcpInvocation { captured, arguments_digest: digest })
}
