//! §8 the framework adapters: what each agent framework emits for a tool
//! call, plus the operator's tool binding and the producer's trusted
//! context, becomes a binding (§3), its canonical form (§4) and its hash (§5).
//!
//! | framework | record | action | parameters | call id |
//! |---|---|---|---|---|
//! | `openai` | Responses API `function_call` item (the Agents SDK's function tools emit the same) | `name` | `arguments`, a JSON text | `call_id` |
//! | `vercel` | AI SDK `tool-call` part (`generateText`, `streamText`) | `toolName` | `input` | `toolCallId` |
//! | `langchain` | `ToolCall` (`AIMessage.tool_calls`, a LangGraph `ToolNode`'s input) | `name` | `args` | `id` (optional) |
//! | `mcp` | JSON-RPC `tools/call` request ([`crate::mcp`]) | `params.name` | `params.arguments` | `id` |
//!
//! The agent supplies the tool name and the arguments and nothing else. The
//! operator's tool binding ([`McpToolBinding`], whose shape serves every
//! framework) names the action, the system, the operation
//! and the arguments the tool takes, and derives the target from the
//! arguments by its template; the trusted context supplies the tenant, the
//! intent id, the capture and expiry instants, the actor, the idempotency
//! key and any further context. The framework's call id is kept in
//! `context.tool_call_id` for correlation, never as the idempotency key.
//!
//! Refused, never repaired (each a typed [`IntentError`] naming the member):
//! a record of another framework ([`IntentError::FrameworkMismatch`]), a
//! record that carries a property the agent must not supply, at its top
//! level or as an undeclared argument ([`IntentError::RecordForbiddenKey`]),
//! any other member the record's shape does not name, a malformed member
//! ([`IntentError::RecordInvalid`]), another tool, an undeclared argument, a
//! target that cannot be filled, and a trusted context that sets a key the
//! adapter sets.

use std::fmt;

use serde::Serialize;

use crate::binding::{self, Actor, Captured, Proposal};
use crate::error::IntentError;
use crate::mcp::{self, McpToolBinding, McpTrustedContext};
use crate::parse;
use crate::value::{JsString, Object, Value};

/// A framework whose tool-call record this crate binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// The OpenAI Responses API's `function_call` item (and the Agents SDK's function tools).
    #[serde(rename = "openai")]
    OpenAi,
    /// The Vercel AI SDK's `tool-call` part.
    Vercel,
    /// LangChain's `ToolCall`.
    #[serde(rename = "langchain")]
    LangChain,
    /// The Model Context Protocol's `tools/call` request.
    Mcp,
}

impl Framework {
    /// Every framework, in the order §8's rubric lists them.
    pub const ALL: [Framework; 4] = [Framework::OpenAi, Framework::Vercel, Framework::LangChain, Framework::Mcp];

    /// The name the CLI and the vectors use (`openai`, `vercel`, `langchain`, `mcp`).
    pub fn name(self) -> &'static str {
        match self {
            Framework::OpenAi => "openai",
            Framework::Vercel => "vercel",
            Framework::LangChain => "langchain",
            Framework::Mcp => "mcp",
        }
    }

    /// The framework named `name`.
    pub fn from_name(name: &str) -> Result<Self, IntentError> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| IntentError::FrameworkUnknown { name: name.into() })
    }

    /// What its record is, in words.
    pub fn record_kind(self) -> &'static str {
        match self {
            Framework::OpenAi => "an OpenAI Responses API function_call item",
            Framework::Vercel => "a Vercel AI SDK tool-call part",
            Framework::LangChain => "a LangChain ToolCall",
            Framework::Mcp => "an MCP tools/call request",
        }
    }

    /// §8's rubric for this framework: each of the eight capabilities and
    /// whether the framework's own record carries it or the adapter adds it.
    pub fn coverage(self) -> [(&'static str, Coverage); 8] {
        let parameters = if self == Framework::OpenAi { Coverage::Adapter } else { Coverage::Native };
        [
            ("action_identity", Coverage::Native),
            ("parameters", parameters),
            ("target_identity", Coverage::Adapter),
            ("principal", Coverage::Adapter),
            ("expiry", Coverage::Adapter),
            ("idempotency", Coverage::Adapter),
            ("intent_digest", Coverage::Adapter),
            ("effect_correlation", Coverage::Native),
        ]
    }

    fn shape(self) -> Option<&'static RecordShape> {
        match self {
            Framework::OpenAi => Some(&OPENAI),
            Framework::Vercel => Some(&VERCEL),
            Framework::LangChain => Some(&LANGCHAIN),
            Framework::Mcp => None,
        }
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// §8's labels: where a capability of the binding comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Coverage {
    /// The framework's own record carries it.
    #[serde(rename = "native")]
    Native,
    /// The producer adds it (the tool binding and the trusted context).
    #[serde(rename = "adapter")]
    Adapter,
}

impl Coverage {
    /// The rubric's word for it.
    pub fn label(self) -> &'static str {
        match self {
            Coverage::Native => "native",
            Coverage::Adapter => "adapter",
        }
    }
}

/// Keys that name what the binding takes only from the trusted runtime. A
/// record (or an undeclared argument) carrying one is refused as
/// [`IntentError::RecordForbiddenKey`]: the agent would be naming its own
/// tenant, principal, expiry, retry identity, context or target.
pub const FORBIDDEN_RECORD_KEYS: [&str; 27] = [
    "protocol_version",
    "protocolVersion",
    "tenant",
    "tenant_id",
    "tenantId",
    "intent_id",
    "intentId",
    "captured_at",
    "capturedAt",
    "expires_at",
    "expiresAt",
    "expiry",
    "ttl_seconds",
    "ttlSeconds",
    "actor",
    "principal",
    "context",
    "idempotency_key",
    "idempotencyKey",
    "downstream_target",
    "downstreamTarget",
    "target",
    "resource",
    "expected_effect_digest",
    "expectedEffectDigest",
    "action",
    "proposal",
];

fn is_forbidden(key: &str) -> bool {
    FORBIDDEN_RECORD_KEYS.contains(&key)
}

/// `path.key`, the key written as a JSON string where it holds a control
/// character, a lone surrogate, a dot or a quote.
fn member(path: &str, key: &JsString) -> String {
    match key.as_str() {
        Some(k) if !k.chars().any(|c| c.is_control() || c == '.' || c == '"') => format!("{path}.{k}"),
        _ => format!("{path}.{key}"),
    }
}

/// A record member besides the type, the call id, the name and the arguments.
#[derive(Debug)]
enum Extra {
    /// Any string (OpenAI's item `id`, not the call id).
    AnyString,
    /// Exactly this string (OpenAI's `status`: only a completed call is bound).
    Text(&'static str),
    /// Exactly `false` (Vercel's `providerExecuted`: a call the provider ran has no intent left to gate).
    False,
    /// Any object, never hashed (Vercel's `providerMetadata`: the provider's note, which never reaches the tool).
    AnyObject,
}

/// How one framework spells a tool call.
#[derive(Debug)]
struct RecordShape {
    framework: Framework,
    /// The value of `type`.
    tag: &'static str,
    /// Whether `type` must be present.
    tag_required: bool,
    /// The member holding the framework's call id.
    id: &'static str,
    /// Whether the call id must be present (LangChain's is optional and may be `null`).
    id_required: bool,
    /// The member naming the tool.
    name: &'static str,
    /// The member holding the arguments.
    args: &'static str,
    /// Whether the arguments are a JSON text of an object (OpenAI) rather than an object.
    args_text: bool,
    /// Every other member the record may carry.
    extra: &'static [(&'static str, Extra)],
}

static OPENAI: RecordShape = RecordShape {
    framework: Framework::OpenAi,
    tag: "function_call",
    tag_required: true,
    id: "call_id",
    id_required: true,
    name: "name",
    args: "arguments",
    args_text: true,
    extra: &[("id", Extra::AnyString), ("status", Extra::Text("completed"))],
};

static VERCEL: RecordShape = RecordShape {
    framework: Framework::Vercel,
    tag: "tool-call",
    tag_required: true,
    id: "toolCallId",
    id_required: true,
    name: "toolName",
    args: "input",
    args_text: false,
    extra: &[("providerExecuted", Extra::False), ("providerMetadata", Extra::AnyObject)],
};

static LANGCHAIN: RecordShape = RecordShape {
    framework: Framework::LangChain,
    tag: "tool_call",
    tag_required: false,
    id: "id",
    id_required: false,
    name: "name",
    args: "args",
    args_text: false,
    extra: &[],
};

/// Which framework's record this looks like, by the members that tell them
/// apart (`jsonrpc`/`method`, the `type` tag, `toolName`, `call_id`, `args`);
/// `None` when none does.
pub fn detect(record: &Value) -> Option<Framework> {
    let o = record.as_object()?;
    if o.contains_key("jsonrpc") || o.get("method").and_then(Value::as_str) == Some("tools/call") {
        return Some(Framework::Mcp);
    }
    match o.get("type").and_then(Value::as_str) {
        Some("function_call") => Some(Framework::OpenAi),
        Some("tool-call") => Some(Framework::Vercel),
        Some("tool_call") => Some(Framework::LangChain),
        None if o.contains_key("toolName") => Some(Framework::Vercel),
        None if o.contains_key("call_id") => Some(Framework::OpenAi),
        None if o.contains_key("args") => Some(Framework::LangChain),
        Some(_) | None => None,
    }
}

/// A tool call as the agent proposed it: the tool, its arguments and the
/// framework's call id, read from the record and nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool the agent calls.
    pub name: String,
    /// Its arguments (OpenAI's decoded from their JSON text).
    pub arguments: Object,
    /// The framework's call id, when the record has one.
    pub call_id: Option<String>,
}

/// Reads a non-MCP framework's record into a [`ToolCall`], refusing what it
/// does not name. (An MCP `tools/call` is read by [`mcp::bind_tools_call`].)
pub fn read_tool_call(framework: Framework, record: &Value) -> Result<ToolCall, IntentError> {
    check_framework(framework, record)?;
    let Some(shape) = framework.shape() else {
        return Err(IntentError::FrameworkMismatch { expected: framework.name(), found: Framework::Mcp.name() });
    };
    shape.read(record)
}

fn check_framework(framework: Framework, record: &Value) -> Result<(), IntentError> {
    match detect(record) {
        Some(found) if found != framework => {
            Err(IntentError::FrameworkMismatch { expected: framework.name(), found: found.name() })
        }
        _ => Ok(()),
    }
}

impl RecordShape {
    fn invalid(&self, path: &str, expected: impl Into<String>) -> IntentError {
        IntentError::RecordInvalid { framework: self.framework.name(), path: path.into(), expected: expected.into() }
    }

    fn names(&self, key: &str) -> bool {
        ["type", self.id, self.name, self.args].contains(&key) || self.extra.iter().any(|(e, _)| *e == key)
    }

    fn read(&self, record: &Value) -> Result<ToolCall, IntentError> {
        let fw = self.framework.name();
        let obj = record
            .as_object()
            .ok_or_else(|| self.invalid("$", format!("a JSON object ({})", self.framework.record_kind())))?;
        if let Some(k) = obj.keys().filter_map(JsString::as_str).find(|k| is_forbidden(k)) {
            return Err(IntentError::RecordForbiddenKey { framework: fw, path: "$".into(), key: k.to_owned() });
        }
        if let Some(k) = obj.keys().find(|k| !k.as_str().is_some_and(|k| self.names(k))) {
            let mut members = vec!["type", self.id, self.name, self.args];
            members.extend(self.extra.iter().map(|(e, _)| *e));
            return Err(self.invalid(
                &member("$", k),
                format!("absent ({} carries {} only)", self.framework.record_kind(), members.join(", ")),
            ));
        }
        match obj.get("type") {
            None if !self.tag_required => {}
            Some(v) if v.as_str() == Some(self.tag) => {}
            _ => return Err(self.invalid("$.type", format!("{:?}", self.tag))),
        }
        for (key, extra) in self.extra {
            let Some(v) = obj.get(key) else { continue };
            let ok = match extra {
                Extra::AnyString => v.as_str().is_some(),
                Extra::Text(t) => v.as_str() == Some(t),
                Extra::False => matches!(v, Value::Bool(false)),
                Extra::AnyObject => v.as_object().is_some(),
            };
            if !ok {
                let expected = match extra {
                    Extra::AnyString => "a string".to_owned(),
                    Extra::Text(t) => format!("{t:?} (only a finished call is bound)"),
                    Extra::False => "false (a call the provider already ran is not an intent to bind)".to_owned(),
                    Extra::AnyObject => "an object".to_owned(),
                };
                return Err(self.invalid(&format!("$.{key}"), expected));
            }
        }
        let call_id = match obj.get(self.id) {
            None | Some(Value::Null) if !self.id_required => None,
            Some(Value::String(s)) if s.as_str().is_some_and(|t| !t.is_empty()) => s.as_str().map(str::to_owned),
            _ => {
                let null = if self.id_required { "" } else { " or null" };
                return Err(self.invalid(&format!("$.{}", self.id), format!("a non-empty string{null}")));
            }
        };
        let name = match obj.get(self.name).and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => return Err(self.invalid(&format!("$.{}", self.name), "a non-empty string (the tool's name)")),
        };
        let arguments = self.arguments(obj.get(self.args))?;
        Ok(ToolCall { name, arguments, call_id })
    }

    fn arguments(&self, v: Option<&Value>) -> Result<Object, IntentError> {
        let path = format!("$.{}", self.args);
        if !self.args_text {
            return v.and_then(Value::as_object).cloned().ok_or_else(|| self.invalid(&path, "an object"));
        }
        let text = v
            .and_then(Value::as_str)
            .ok_or_else(|| self.invalid(&path, "a string holding the JSON text of an object"))?;
        match parse::parse_str(text) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(other) => Err(self.invalid(&path, format!("the JSON text of an object, not of {}", other.type_name()))),
            Err(e) => Err(self.invalid(&path, format!("the JSON text of an object ({}: {e})", e.code()))),
        }
    }
}

/// The producer's side of a capture, in the MCP adapter's shapes, which
/// serve every framework: the operator's tool binding (its `consequential`
/// is MCP's), the endpoint the effect is reached at (not MCP's), and the
/// trusted context (its `server`, `transport` and `principal` are MCP's).
/// A member the framework's adapter would not use is refused when read.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureContext {
    /// The operator's declaration of the tool: action, system, operation,
    /// environment, target template, declared arguments.
    pub tool: McpToolBinding,
    /// `downstream_target.endpoint`, when the operator names one (not for MCP).
    pub endpoint: Option<String>,
    /// What the runtime knows and the agent does not get to say.
    pub trusted: McpTrustedContext,
}

/// Reads an object member by member, refusing what it does not name.
struct Members<'a> {
    obj: &'a Object,
    path: String,
}

fn context_invalid(path: &str, expected: impl Into<String>) -> IntentError {
    IntentError::CaptureContextInvalid { path: path.into(), expected: expected.into() }
}

impl<'a> Members<'a> {
    fn new(v: Option<&'a Value>, path: &str, allowed: &[&str]) -> Result<Self, IntentError> {
        let obj = v.and_then(Value::as_object).ok_or_else(|| context_invalid(path, "an object"))?;
        if let Some(k) = obj.keys().find(|k| !k.as_str().is_some_and(|k| allowed.contains(&k))) {
            return Err(context_invalid(
                &format!("{path}.{k}"),
                format!("absent ({path} names {})", allowed.join(", ")),
            ));
        }
        Ok(Self { obj, path: path.to_owned() })
    }

    fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    fn opt_text(&self, key: &str) -> Result<Option<String>, IntentError> {
        match self.obj.get(key) {
            None => Ok(None),
            Some(v) => v.as_str().map(|s| Some(s.to_owned())).ok_or_else(|| context_invalid(&self.at(key), "a string")),
        }
    }

    fn text(&self, key: &str) -> Result<String, IntentError> {
        self.opt_text(key)?.ok_or_else(|| context_invalid(&self.at(key), "a string"))
    }

    fn texts(&self, key: &str, required: bool) -> Result<Vec<String>, IntentError> {
        let bad = || context_invalid(&self.at(key), "an array of strings");
        match self.obj.get(key) {
            None if !required => Ok(Vec::new()),
            None => Err(bad()),
            Some(v) => {
                v.as_array().ok_or_else(bad)?.iter().map(|x| x.as_str().map(str::to_owned).ok_or_else(bad)).collect()
            }
        }
    }
}

impl CaptureContext {
    /// Reads a capture context file: `{"tool_binding": {...}, "trusted_context": {...}}`.
    pub fn from_value(framework: Framework, v: &Value) -> Result<Self, IntentError> {
        let m = Members::new(Some(v), "$", &["tool_binding", "trusted_context"])?;
        Self::from_members(framework, m.obj.get("tool_binding"), m.obj.get("trusted_context"))
    }

    /// Reads the two members as a framework vector carries them, each with
    /// a fixed key set; a member the framework's adapter would not use is
    /// refused rather than ignored.
    pub fn from_members(
        framework: Framework,
        tool_binding: Option<&Value>,
        trusted_context: Option<&Value>,
    ) -> Result<Self, IntentError> {
        let mcp = framework == Framework::Mcp;
        let tool_keys: &[&str] = if mcp {
            &["tool", "action", "system", "operation", "environment", "target", "consequential", "arguments"]
        } else {
            &["tool", "action", "system", "operation", "environment", "endpoint", "target", "arguments"]
        };
        let t = Members::new(tool_binding, "$.tool_binding", tool_keys)?;
        let tool = McpToolBinding {
            tool: t.text("tool")?,
            action: t.text("action")?,
            system: t.text("system")?,
            operation: t.text("operation")?,
            environment: t.opt_text("environment")?,
            target: t.text("target")?,
            consequential: t.texts("consequential", false)?,
            arguments: t.texts("arguments", true)?,
        };
        let endpoint = t.opt_text("endpoint")?;
        let common = ["tenant_id", "intent_id", "captured_at", "expires_at", "actor", "idempotency_key", "context"];
        let mut trusted_keys = common.to_vec();
        if mcp {
            trusted_keys.extend(["server", "transport", "principal"]);
        }
        let c = Members::new(trusted_context, "$.trusted_context", &trusted_keys)?;
        let a = Members::new(c.obj.get("actor"), "$.trusted_context.actor", &["id", "type", "runtime", "trust_level"])?;
        let actor = Actor {
            id: a.text("id")?,
            actor_type: a.text("type")?,
            runtime: a.opt_text("runtime")?,
            trust_level: a.opt_text("trust_level")?,
        };
        let context = match c.obj.get("context") {
            None => Object::new(),
            Some(Value::Object(o)) => o.clone(),
            Some(_) => return Err(context_invalid("$.trusted_context.context", "an object")),
        };
        let trusted = McpTrustedContext {
            tenant_id: c.text("tenant_id")?,
            intent_id: c.text("intent_id")?,
            captured_at: c.text("captured_at")?,
            expires_at: c.text("expires_at")?,
            actor,
            idempotency_key: c.text("idempotency_key")?,
            server: c.opt_text("server")?,
            transport: c.opt_text("transport")?,
            principal: c.opt_text("principal")?,
            context,
        };
        Ok(Self { tool, endpoint, trusted })
    }
}

/// A framework record captured: the proposal it became, the framework's call
/// id, the MCP arguments digest (MCP only), and the binding, canonical form
/// and hash.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordCapture {
    /// The framework whose record it was.
    pub framework: Framework,
    /// The agent's proposal the record became (§3: type, resource, parameters).
    pub proposal: Proposal,
    /// The digest of the canonical arguments (MCP's `context.mcp_arguments_digest`).
    pub arguments_digest: Option<String>,
    /// The binding, its canonical form and its hash.
    pub captured: Captured,
}

/// Context keys the non-MCP adapters set themselves.
pub const ADAPTER_CONTEXT_KEYS: [&str; 2] = ["idempotency_key", "tool_call_id"];

/// The record's proposal (§3) under the operator's tool binding: the
/// bound action, the target filled from the arguments, every argument as a
/// parameter; another tool or an undeclared argument is refused.
pub fn propose(framework: Framework, call: &ToolCall, tool: &McpToolBinding) -> Result<Proposal, IntentError> {
    let fw = framework.name();
    if call.name != tool.tool {
        return Err(IntentError::FrameworkToolMismatch {
            framework: fw,
            expected: tool.tool.clone(),
            found: call.name.clone(),
        });
    }
    let args_path = framework.shape().map_or("params.arguments", |s| s.args);
    if let Some(k) = call.arguments.keys().find(|k| !tool.arguments.iter().any(|a| *k == a.as_str())) {
        let path = format!("$.{args_path}");
        return Err(match k.as_str().filter(|k| is_forbidden(k)) {
            Some(key) => IntentError::RecordForbiddenKey { framework: fw, path, key: key.to_owned() },
            None => IntentError::FrameworkArgumentsInvalid { framework: fw, path, name: k.to_string() },
        });
    }
    let resource = mcp::fill_template(&tool.target, &call.arguments)
        .map_err(|reason| IntentError::FrameworkTargetUnresolved { framework: fw, reason })?;
    Ok(Proposal { action_type: tool.action.clone(), resource, parameters: call.arguments.clone() })
}

/// Captures one framework record: reads it, makes its proposal, adds the
/// trusted context, and accepts, canonicalizes and hashes the binding.
pub fn capture_record(
    framework: Framework,
    record: &Value,
    ctx: &CaptureContext,
) -> Result<RecordCapture, IntentError> {
    check_framework(framework, record)?;
    if framework == Framework::Mcp {
        return capture_mcp(record, ctx);
    }
    let call = read_tool_call(framework, record)?;
    let proposal = propose(framework, &call, &ctx.tool)?;
    let t = &ctx.trusted;
    if let Some(k) = t.context.keys().find(|k| ADAPTER_CONTEXT_KEYS.iter().any(|a| *k == a)) {
        return Err(IntentError::ContextReservedKey { key: k.to_string() });
    }
    let mut context = t.context.clone();
    if let Some(id) = &call.call_id {
        context.insert("tool_call_id", id.as_str().into());
    }
    let trusted = mcp::producer_context(t, &ctx.tool, ctx.endpoint.clone(), context);
    let captured = binding::capture(&proposal, &trusted)?;
    Ok(RecordCapture { framework, proposal, arguments_digest: None, captured })
}

fn capture_mcp(record: &Value, ctx: &CaptureContext) -> Result<RecordCapture, IntentError> {
    if ctx.endpoint.is_some() {
        return Err(context_invalid("$.tool_binding.endpoint", "absent (the MCP adapter names no endpoint)"));
    }
    let bound = mcp::bind_tools_call(record, &ctx.tool, &ctx.trusted)?;
    let action = bound.captured.binding.as_object().and_then(|b| b.get("action"));
    let proposal =
        action.map(Proposal::from_value).ok_or_else(|| IntentError::MissingKey { path: "$.action".into() })??;
    Ok(RecordCapture {
        framework: Framework::Mcp,
        proposal,
        arguments_digest: Some(bound.arguments_digest),
        captured: bound.captured,
    })
}

/// A framework vector's own members (`framework`, `record`, `tool_binding`,
/// `trusted_context`) run through the adapter; `None` when the document
/// has no `record` (an ordinary vector), or names no `tool_binding` (the
/// reference's shape, whose adapter is the integration's own code).
pub fn capture_vector(doc: &Object) -> Option<Result<RecordCapture, IntentError>> {
    let record = doc.get("record")?;
    doc.get("tool_binding")?;
    Some((|| {
        let name = doc
            .get("framework")
            .and_then(Value::as_str)
            .ok_or_else(|| context_invalid("$.framework", "a framework name"))?;
        let framework = Framework::from_name(name)?;
        let ctx = CaptureContext::from_members(framework, doc.get("tool_binding"), doc.get("trusted_context"))?;
        capture_record(framework, record, &ctx)
    })())
}
