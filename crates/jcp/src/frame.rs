//! Spec §6: the typed frame, one envelope for tools and agents.

use crate::cbor::{self, ContentId, Fields, Value};
use crate::error::Error;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum FrameKind {
    /// A tool invocation.
    ToolCall,
    /// A tool's output.
    ToolResult,
    /// A task for an agent.
    AgentTask,
    /// An agent's reply.
    AgentReply,
}

impl FrameKind {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolCall => "tool-call",
            Self::ToolResult => "tool-result",
            Self::AgentTask => "agent-task",
            Self::AgentReply => "agent-reply",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::parse_bytes(s.as_bytes())
    }

    /// [`FrameKind::parse`] over raw bytes (a decoder need not check UTF-8
    /// before comparing with the four ASCII names).
    pub fn parse_bytes(s: &[u8]) -> Option<Self> {
        Some(match s {
            b"tool-call" => Self::ToolCall,
            b"tool-result" => Self::ToolResult,
            b"agent-task" => Self::AgentTask,
            b"agent-reply" => Self::AgentReply,
            _ => return None,
        })
    }
}

/// `control` may exercise a capability; `data` (untrusted output) never may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Trust {
    /// Principal-directed control.
    Control,
    /// Untrusted data (tool and agent outputs).
    Data,
}

impl Trust {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Control => "control",
            Self::Data => "data",
        }
    }
}

/// A frame (§6).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Frame {
    /// What it carries.
    pub kind: FrameKind,
    /// Control or data.
    pub trust: Trust,
    /// The grant this frame exercises.
    pub grant_id: ContentId,
    /// The action.
    pub action: String,
    /// The resource.
    pub resource: ContentId,
    /// Content id of the payload acted upon.
    pub payload_hash: ContentId,
    /// The model the action runs (§4.9 `ModelIn`); omitted when absent.
    pub model: Option<ContentId>,
}

impl Frame {
    /// Canonical CBOR form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("kind", Some(Value::text(self.kind.as_str()))),
            ("trust", Some(Value::text(self.trust.as_str()))),
            ("grant_id", Some(Value::text(self.grant_id.to_hex()))),
            ("action", Some(Value::text(self.action.as_str()))),
            ("resource", Some(Value::text(self.resource.to_hex()))),
            ("payload_hash", Some(Value::text(self.payload_hash.to_hex()))),
            ("model", self.model.map(|m| Value::text(m.to_hex()))),
        ])
    }

    /// The frame's content id.
    pub fn id(&self) -> ContentId {
        ContentId::of(&self.to_value())
    }

    /// Reads the canonical form.
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("Frame", v)?;
        let kind_s = f.text("kind")?;
        let kind = FrameKind::parse(kind_s).ok_or_else(|| f.error("kind", format!("unknown frame kind {kind_s:?}")))?;
        let trust = match f.text("trust")? {
            "control" => Trust::Control,
            "data" => Trust::Data,
            other => return Err(f.error("trust", format!("unknown trust {other:?}")).into()),
        };
        let grant_id = f.cid("grant_id")?;
        let action = f.text("action")?.to_owned();
        let resource = f.cid("resource")?;
        let payload_hash = f.cid("payload_hash")?;
        let model = f.opt_cid("model")?;
        f.finish()?;
        Ok(Self { kind, trust, grant_id, action, resource, payload_hash, model })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}
