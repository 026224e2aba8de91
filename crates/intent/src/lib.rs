//! Agent-Safe Intent v1 (`agent-safe.intent/1`, `../shared/spec/agent-safe-intent-v1.md`):
//! the binding and its rules (§3), the canonical form (§4), the intent hash
//! (§5), the producer, the framework adapters (OpenAI, Vercel AI SDK,
//! LangChain, MCP; §8) and offline conformance (§7).
//!
//! ```
//! let binding = intent::parse(br#"{"b":[1.5,-0],"a":"caf\u00e9","10":1,"9":2}"#)?;
//! let c = intent::canonicalize(&binding)?;
//! assert_eq!(c.canonical_json, r#"{"9":2,"10":1,"a":"café","b":[1.5,0]}"#);
//! assert!(c.intent_hash.starts_with("sha256:"));
//! # Ok::<(), intent::IntentError>(())
//! ```
//!
//! Cycles and non-plain prototypes (§3) cannot occur in this crate's
//! [`Value`], which is a tree of plain JSON data; every other §3 refusal is
//! a typed [`IntentError`] with the reference's code.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod binding;
pub mod canonical;
pub mod compare;
pub mod error;
pub mod frameworks;
pub mod inspect;
pub mod mcp;
pub mod parse;
pub mod schema;
pub mod value;
pub mod verify;

pub use binding::{
    accept, capture, validate, Actor, Captured, DownstreamTarget, Proposal, TrustedContext, PROTOCOL_VERSION,
};
pub use canonical::{canonical_json, canonicalize, intent_hash, Canonical, Limits, LIMITS};
pub use compare::{compare, Change, CompareError, Comparison, Difference};
pub use error::IntentError;
pub use inspect::{inspect, Inspection, Refusal, Subject};
pub use parse::parse;
pub use value::{JsString, Object, Value};
