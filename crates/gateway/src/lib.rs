//! `jcp gateway` (§11 relay mode; Agent-Safe Intent v1 §8): a drop-in MCP
//! server an agent's client launches instead of the tool server. It starts
//! the real server as its child and passes the session through, but every
//! `tools/call` is bound into an Agent-Safe intent, decided by a durable
//! JCP gate (recorded before the tool runs), and on allow relayed, metered
//! as a span over the server's process tree and charged with that figure;
//! a denial comes back as an MCP tool error naming its reason and receipt.
//! The agent states no cost and holds no key.
//!
//! | module | what |
//! |---|---|
//! | [`bindings`] | the operator's tool bindings: tool → action, target, resource |
//! | [`upstream`] | the upstream server: spawned, routed, and the [`jcp_wire::backend::Backend`] behind the gate |
//! | [`input`] | the upstream's input: lines written without blocking the session, bounded, given up on when the server stops reading |
//! | [`intents`] | the auditor's side: every recorded call's binding, payload hash, intent hash and receipts re-derived |
//! | [`steer`] | long runs: checkpoints written as the holder, calls held until the steward amends or revokes |
//! | [`prepare`] | a run set up: the steward's grant to a fresh agent key, the run file, the line an MCP client launches |
//! | [`http`] | the MCP Streamable HTTP transport: the session served at one HTTP endpoint (`--listen http://…`) |
//! | [`session`] | one MCP session: pass-through, and each `tools/call` bound, decided, relayed, charged |

#![warn(missing_docs)]

pub mod bindings;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod http;
pub mod input;
pub mod intents;
pub mod prepare;
pub mod session;
pub mod steer;
pub mod upstream;

/// A mutex's guard, poisoned or not: every lock in this crate guards
/// state that stays consistent at each step, so a panic elsewhere does not
/// make it unreadable.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub use bindings::{Bindings, ToolBinding};
pub use error::GatewayError;
pub use intents::{gateway_intents, verify_intents, IntentsReport, RecordedCall};
pub use session::{ClientInput, Events, Gateway, Settings, Summary};
pub use upstream::{ClientSink, Upstream, UpstreamOptions};
