//! The gateway's one error type: each variant a reason a caller (the
//! operator starting it, or an MCP client whose call it refuses) is told,
//! with its code.

/// Why the gateway refused something.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The tool bindings file is not what it must be (where, and what).
    #[error("tool bindings {at}: {why}")]
    BindingsInvalid {
        /// Where in the file (`$.tools[2].resource`).
        at: String,
        /// What is wrong there.
        why: String,
    },
    /// A `tools/call` names a tool the operator bound no action to: refused, never guessed.
    #[error("no binding for tool {tool:?}: the operator's tool bindings name no action for it, so the gateway refuses it rather than guess")]
    ToolUnbound {
        /// The tool the call named.
        tool: String,
    },
    /// The call could not become an Agent-Safe binding (§8 MCP adapter).
    #[error("the call does not bind: {0}")]
    Intent(#[from] intent::IntentError),
    /// The upstream MCP server could not be started or spoken to.
    #[error("upstream: {0}")]
    Upstream(String),
    /// The enforcement point refused or failed.
    #[error("enforcement point: {0}")]
    Wire(#[from] jcp_wire::WireError),
    /// The run file could not be opened, read, written or followed (§4.7).
    #[error("{message}")]
    Run {
        /// The code (`run-grant-mismatch`, `steer-run-not-clean`, …).
        code: &'static str,
        /// What happened, naming the run file.
        message: String,
    },
    /// The MCP endpoint's address (`--listen http://…`) is not one the gateway serves.
    #[error("--listen {0}")]
    Listen(String),
    /// Reading or writing the client's stream, or a file.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl GatewayError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BindingsInvalid { .. } => "bindings-invalid",
            Self::ToolUnbound { .. } => "tool-unbound",
            Self::Intent(e) => e.code(),
            Self::Upstream(_) => "upstream-failed",
            Self::Wire(e) => e.code(),
            Self::Run { code, .. } => code,
            Self::Listen(_) => "listen-invalid",
            Self::Io { .. } => "io",
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }
}
