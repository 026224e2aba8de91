//! # jcp-wire — the `jcp/1` wire binding (spec `jcp-v0.3.md` §11)
//!
//! | module | spec |
//! |---|---|
//! | [`codec`] | §11 framing: 4-byte big-endian length + canonical det-CBOR, a cap |
//! | [`message`] | §11 `WireRequest` / `WireResponse`, the revocation, amendment, outcome and statement feeds (§4.3, §4.7, §4.11, §4.5), replies (§6.1) |
//! | [`endpoint`] | the enforcement endpoint: framing and serving, decided once, group-committed record, restart replay (§11, §4.11), feeds (§4.3, §4.5, §4.7), continuations (§6.1) |
//! | [`backend`] | the endpoint behind the gate, continuation payloads and closing records (§6.1); `jcp-backend/1` and [`backend::ProcessBackend`], a child process behind the gate (§11, §4.11) |
//! | [`metering`] | §11 "the cost is the holder's measurement": each relayed call metered as a span over the backend's process tree (§5.1), [`metering::CallMeter`] |
//! | [`client`] | a client: connect, sign, call, feed |
//! | [`error`] | the crate's one error enum, [`WireError`], with stable codes |
//! | [`metrics`] | the endpoint as `OpenMetrics`: decisions by verdict and reason, commit latency, remembered requests, `known_through`, spend per grant |
//! | `fuzzing` | the `wire_decode` fuzz target's invariants (feature `fuzzing`: the fuzz crate and the corpus replay test) |
//!
//! Goals: a request is decided once and its response survives a restart;
//! the record precedes every response and every action (§4.11); one
//! misbehaving client never stops the endpoint answering the others.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod client;
pub mod codec;
pub mod endpoint;
pub mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod message;
pub mod metering;
pub mod metrics;

pub use error::WireError;
