//! The one error type of this crate. Every variant is a refusal the profile
//! (or this implementation's fail-closed reading of it) names, with a stable
//! `code()` that the CLI, the vectors under `conformance/intent/refusals/` and
//! the reports use. The codes of §3 are the reference implementation's own
//! (`INTENT_TOO_DEEP`, `UNSAFE_INTENT_KEY`, ...), so a report from either
//! runtime reads the same.

/// Why a document, a binding, a proposal or an MCP call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IntentError {
    /// The input bytes are not UTF-8 (JSON text is UTF-8, RFC 8259 §8.1).
    #[error("input is not UTF-8: invalid byte sequence at offset {offset}")]
    NotUtf8 {
        /// The byte offset of the first invalid sequence.
        offset: usize,
    },
    /// The input is not JSON text.
    #[error("invalid JSON at byte {offset}: {reason}")]
    JsonSyntax {
        /// The byte offset where the text stops being JSON.
        offset: usize,
        /// What was expected there.
        reason: &'static str,
    },
    /// An object names the same key twice; `JSON.parse` would keep the last,
    /// another parser the first, so the document is refused (docs/decisions.md).
    #[error("duplicate key {key} in the object at {path}")]
    DuplicateKey {
        /// The object's path (`$.action.parameters`).
        path: String,
        /// The repeated key.
        key: String,
    },
    /// The document nests deeper than the decoder follows.
    #[error("JSON nested deeper than {limit} levels at byte {offset}")]
    NestingLimit {
        /// The byte offset where the decoder stopped following.
        offset: usize,
        /// How deep the decoder follows.
        limit: usize,
    },
    /// §3: numbers MUST be finite (a literal such as `1e400` overflows to infinity).
    #[error("number at {path} is not finite")]
    InvalidNumber {
        /// Where the number is (`$.action.parameters.x`).
        path: String,
    },
    /// §3: a key named `__proto__`, `constructor` or `prototype`.
    #[error("key {key} at {path} is refused (__proto__, constructor and prototype are never hashed)")]
    UnsafeKey {
        /// The object's path.
        path: String,
        /// The refused key.
        key: String,
    },
    /// §3: nesting depth beyond the bound.
    #[error("value at {path} is nested deeper than {limit}")]
    TooDeep {
        /// The first value past the bound.
        path: String,
        /// The bound (§3: 20).
        limit: usize,
    },
    /// §3: more entries (array elements plus object properties, at every depth) than the bound.
    #[error("more than {limit} entries (array elements and object properties); the one past the bound is at {path}")]
    TooComplex {
        /// The entry past the bound.
        path: String,
        /// The bound (§3: 5,000).
        limit: usize,
    },
    /// §3: one array longer than the bound.
    #[error("array at {path} has {len} elements, more than {limit}")]
    ArrayTooLarge {
        /// The array's path.
        path: String,
        /// Its length.
        len: usize,
        /// The bound (§3: 1,000).
        limit: usize,
    },
    /// §3: canonical form longer than the bound.
    #[error("canonical form is longer than {limit} bytes")]
    TooLarge {
        /// The bound, bytes (§3: 100 KiB).
        limit: usize,
    },
    /// §3: the binding (or one of its fixed objects) is not a JSON object.
    #[error("{path} must be a JSON object")]
    NotAnObject {
        /// The path that must hold an object (`$` for the binding itself).
        path: String,
    },
    /// §3: a fixed key set extended by a key it does not name.
    #[error("key {key} is not allowed in {path} (its key set is fixed)")]
    UnknownKey {
        /// The object's path.
        path: String,
        /// The key its key set does not name.
        key: String,
    },
    /// §3 / schema: a required property is absent.
    #[error("required property {path} is missing")]
    MissingKey {
        /// The missing property's path (`$.actor.id`).
        path: String,
    },
    /// §3 / schema: a property's value breaks its constraint.
    #[error("{path} must be {expected}")]
    InvalidValue {
        /// The property's path.
        path: String,
        /// What its value must be (e.g. `a string of 1..=200 UTF-16 code units`).
        expected: String,
    },
    /// §9: a `protocol_version` this implementation does not implement.
    #[error("protocol_version {found} is not implemented (only agent-safe.intent/1)")]
    UnsupportedVersion {
        /// The `protocol_version` found (or its JSON type, when it is not a string).
        found: String,
    },
    /// §3: the agent's proposal carries something besides type, resource and parameters.
    #[error("the agent's proposal may carry only type, resource and parameters; it carries {key}")]
    ProposalForbiddenKey {
        /// The property the agent may not supply.
        key: String,
    },
    /// §3: the agent's proposal is malformed.
    #[error("proposal {path} must be {expected}")]
    ProposalInvalid {
        /// The property's path in the proposal (`$.parameters`).
        path: String,
        /// What it must be.
        expected: String,
    },
    /// §3: the trusted context already names a key the producer sets itself.
    #[error("trusted context may not set {key}: the producer sets it")]
    ContextReservedKey {
        /// The reserved key (`idempotency_key`, or one the MCP adapter sets).
        key: String,
    },
    /// §8 / I-JSON: a lone surrogate in a value whose digest must not depend on the writer.
    #[error("string at {path} holds a lone surrogate (not I-JSON)")]
    NotIJson {
        /// The string's path.
        path: String,
    },
    /// §8: the MCP `tools/call` request is malformed.
    #[error("MCP tools/call request: {path} must be {expected}")]
    McpInvocationInvalid {
        /// The request member's path (`$.method`, `$.params.arguments`).
        path: String,
        /// What it must be.
        expected: String,
    },
    /// §8: the request names another tool than the binding governs.
    #[error("MCP tool {found} is not the bound tool {expected}")]
    McpToolMismatch {
        /// The tool the binding governs.
        expected: String,
        /// The tool the request names.
        found: String,
    },
    /// §8: an argument the tool binding does not declare (refused, never dropped).
    #[error("MCP argument {name} is not declared by the tool binding")]
    McpArgumentsInvalid {
        /// The undeclared argument.
        name: String,
    },
    /// §8: the target template cannot be filled from the arguments.
    #[error("MCP target cannot be resolved: {reason}")]
    McpTargetUnresolved {
        /// Which placeholder could not be filled, and why.
        reason: String,
    },
    /// §8: the framework named is not one this crate has an adapter for.
    #[error("no adapter for framework {name:?} (openai, vercel, langchain or mcp)")]
    FrameworkUnknown {
        /// The name given.
        name: String,
    },
    /// §8: the record is recognisably another framework's tool-call record.
    #[error("the record is {found}'s tool-call record, not {expected}'s")]
    FrameworkMismatch {
        /// The framework whose adapter was asked.
        expected: &'static str,
        /// The framework the record belongs to.
        found: &'static str,
    },
    /// §8: the framework's tool-call record is malformed.
    #[error("{framework} record: {path} must be {expected}")]
    RecordInvalid {
        /// The framework whose record it is (`openai`, `vercel`, `langchain`).
        framework: &'static str,
        /// The record member's path (`$.arguments`, `$.toolName`).
        path: String,
        /// What it must be.
        expected: String,
    },
    /// §3, §8: the record carries a property the binding takes only from the
    /// trusted runtime (a tenant, an actor, an expiry, an idempotency key, a
    /// context, a target), at the top level or as an undeclared argument.
    #[error("{framework} record carries {key} at {path}: the agent may not supply it")]
    RecordForbiddenKey {
        /// The framework whose record it is.
        framework: &'static str,
        /// Where the key is (`$`, `$.arguments`).
        path: String,
        /// The key the agent may not supply.
        key: String,
    },
    /// §8: the record calls another tool than the one the tool binding declares.
    #[error("{framework} record calls tool {found}, not the bound tool {expected}")]
    FrameworkToolMismatch {
        /// The framework whose record it is.
        framework: &'static str,
        /// The tool the binding declares.
        expected: String,
        /// The tool the record names.
        found: String,
    },
    /// §8: an argument the tool binding does not declare (refused, never dropped).
    #[error("{framework} record: argument {name} at {path} is not declared by the tool binding")]
    FrameworkArgumentsInvalid {
        /// The framework whose record it is.
        framework: &'static str,
        /// The record member holding the arguments (`$.args`).
        path: String,
        /// The undeclared argument.
        name: String,
    },
    /// §8: the tool binding's target template cannot be filled from the record's arguments.
    #[error("{framework} record: target cannot be resolved: {reason}")]
    FrameworkTargetUnresolved {
        /// The framework whose record it is.
        framework: &'static str,
        /// Which placeholder could not be filled, and why.
        reason: String,
    },
    /// §8: the capture context (the operator's tool binding and the trusted
    /// context) is malformed, or names what the framework's adapter does not use.
    #[error("capture context: {path} must be {expected}")]
    CaptureContextInvalid {
        /// The member's path (`$.tool_binding.target`, `$.trusted_context.actor.id`).
        path: String,
        /// What it must be.
        expected: String,
    },
    /// A constraint pattern of the validator failed to compile (a defect, never input's fault).
    #[error("internal: validator pattern {pattern} does not compile")]
    PatternUnavailable {
        /// The pattern.
        pattern: &'static str,
    },
}

impl IntentError {
    /// The stable code of this refusal.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotUtf8 { .. } => "JSON_NOT_UTF8",
            Self::JsonSyntax { .. } => "JSON_SYNTAX",
            Self::DuplicateKey { .. } => "JSON_DUPLICATE_KEY",
            Self::NestingLimit { .. } => "JSON_NESTING_LIMIT",
            Self::InvalidNumber { .. } => "INVALID_NUMBER",
            Self::UnsafeKey { .. } => "UNSAFE_INTENT_KEY",
            Self::TooDeep { .. } => "INTENT_TOO_DEEP",
            Self::TooComplex { .. } => "INTENT_TOO_COMPLEX",
            Self::ArrayTooLarge { .. } => "INTENT_ARRAY_TOO_LARGE",
            Self::TooLarge { .. } => "INTENT_TOO_LARGE",
            Self::NotAnObject { .. } => "BINDING_NOT_OBJECT",
            Self::UnknownKey { .. } => "BINDING_UNKNOWN_KEY",
            Self::MissingKey { .. } => "BINDING_MISSING_KEY",
            Self::InvalidValue { .. } => "BINDING_INVALID_VALUE",
            Self::UnsupportedVersion { .. } => "PROTOCOL_VERSION_UNSUPPORTED",
            Self::ProposalForbiddenKey { .. } => "PROPOSAL_FORBIDDEN_KEY",
            Self::ProposalInvalid { .. } => "PROPOSAL_INVALID",
            Self::ContextReservedKey { .. } => "CONTEXT_RESERVED_KEY",
            Self::NotIJson { .. } => "JCS_NOT_I_JSON",
            Self::McpInvocationInvalid { .. } => "MCP_INVOCATION_INVALID",
            Self::McpToolMismatch { .. } => "MCP_TOOL_MISMATCH",
            Self::McpArgumentsInvalid { .. } => "MCP_ARGUMENTS_INVALID",
            Self::McpTargetUnresolved { .. } => "MCP_TARGET_UNRESOLVED",
            Self::FrameworkUnknown { .. } => "FRAMEWORK_UNKNOWN",
            Self::FrameworkMismatch { .. } => "FRAMEWORK_MISMATCH",
            Self::RecordInvalid { .. } => "FRAMEWORK_RECORD_INVALID",
            Self::RecordForbiddenKey { .. } => "FRAMEWORK_RECORD_FORBIDDEN_KEY",
            Self::FrameworkToolMismatch { .. } => "FRAMEWORK_TOOL_MISMATCH",
            Self::FrameworkArgumentsInvalid { .. } => "FRAMEWORK_ARGUMENTS_INVALID",
            Self::FrameworkTargetUnresolved { .. } => "FRAMEWORK_TARGET_UNRESOLVED",
            Self::CaptureContextInvalid { .. } => "CAPTURE_CONTEXT_INVALID",
            Self::PatternUnavailable { .. } => "INTERNAL_PATTERN",
        }
    }

    /// The rule of the profile (or of this implementation's documented
    /// fail-closed reading) the refusal enforces, in words with its section.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::NotUtf8 { .. } => "JSON text is UTF-8 (RFC 8259 §8.1)",
            Self::JsonSyntax { .. } => "the binding is one JSON text (RFC 8259)",
            Self::DuplicateKey { .. } => "an object names each key once: parsers disagree on which duplicate wins (docs/decisions.md)",
            Self::NestingLimit { .. } | Self::TooDeep { .. } => "§3: a producer MUST refuse a binding nested deeper than 20",
            Self::InvalidNumber { .. } => "§3: numbers MUST be finite",
            Self::UnsafeKey { .. } => "§3: objects MUST be plain: a key named __proto__, constructor or prototype is refused before anything is hashed",
            Self::TooComplex { .. } => "§3: a producer MUST refuse a binding of more than 5,000 entries",
            Self::ArrayTooLarge { .. } => "§3: a producer MUST refuse an array of more than 1,000 elements",
            Self::TooLarge { .. } => "§3: a producer MUST refuse a binding of more than 100 KiB of canonical bytes",
            Self::NotAnObject { .. } => "§3: the binding is one JSON object",
            Self::UnknownKey { .. } => "§3: an object with a fixed key set MUST NOT carry any other key",
            Self::MissingKey { .. } => "§3: the binding has exactly its top-level properties (schema.json)",
            Self::InvalidValue { .. } => "§3: each property meets its constraint (schema.json)",
            Self::UnsupportedVersion { .. } => "§9: only agent-safe.intent/1 is implemented",
            Self::ProposalForbiddenKey { .. } | Self::ProposalInvalid { .. } => {
                "§3: the agent's proposal is action.type, action.resource and action.parameters, and nothing else"
            }
            Self::ContextReservedKey { .. } => "§3: the idempotency key is the producer's, never the agent's",
            Self::NotIJson { .. } => "§8: a digested value is I-JSON (no lone surrogates)",
            Self::McpInvocationInvalid { .. }
            | Self::McpToolMismatch { .. }
            | Self::McpArgumentsInvalid { .. }
            | Self::McpTargetUnresolved { .. } => "§8: an MCP tools/call is bound only as its tool binding declares",
            Self::FrameworkUnknown { .. }
            | Self::FrameworkMismatch { .. }
            | Self::RecordInvalid { .. }
            | Self::FrameworkToolMismatch { .. }
            | Self::FrameworkArgumentsInvalid { .. }
            | Self::FrameworkTargetUnresolved { .. } => {
                "§8: a framework's tool-call record is bound only as the operator's tool binding declares"
            }
            Self::RecordForbiddenKey { .. } => {
                "§3: the agent supplies the action, the target's arguments and the parameters, and nothing else"
            }
            Self::CaptureContextInvalid { .. } => {
                "§8: the producer's tool binding and trusted context are stated whole, each member used"
            }
            Self::PatternUnavailable { .. } => "internal: the validator itself is broken (a defect, not the input's fault)",
        }
    }

    /// Whether this is a failure to decode the bytes as JSON at all (as
    /// against a refusal of a well-formed document).
    pub fn is_decode_error(&self) -> bool {
        matches!(
            self,
            Self::NotUtf8 { .. } | Self::JsonSyntax { .. } | Self::DuplicateKey { .. } | Self::NestingLimit { .. }
        )
    }
}
