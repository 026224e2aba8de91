//! # jcp-receipt — JCR-1 receipts and the receipt stream as write-ahead log
//!
//! Spec `jcp-v0.3.md` §8 (the receipt), §8.1 (the stream is the log), §4.11
//! (durable spend, one writer, record before the action, unresolved
//! decisions), §4.3 (revocation propagation markers), §9 C5, C14, C16, C23.
//!
//! | module | what |
//! |---|---|
//! | [`cose`] | the JCR-1 envelope: tagged `COSE_Sign1`, `EdDSA`, `kid` = steward did (via `coset`) |
//! | [`receipt`] | the `jcp/2` core, legacy `jcp/1` verification, sealing and verifying |
//! | [`record`] | outcome records, settlements of the metered path, revocation and amendment notices (also JCR-1 envelopes) |
//! | [`open`] | opening records: the zero-copy reader for the layout this crate mints, else the reference (`coset`) reader |
//! | [`stream`] | the framed file format and the fault-tolerant streaming reader |
//! | [`writer`] | the single writer: exclusive OS lock, fsync per record, torn-tail cut |
//! | [`runtime`] | [`runtime::DurableGate`]: decide → seal → fsync → act → outcome; replay on open |
//! | `demo` | deterministic demo streams for the CLI, console, tests and benchmark (feature `demo`) |
//! | `fleet` | a deterministic fleet: N points under one sharded root, a revocation reaching them at different markers, one violation (feature `demo`) |
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use jcp_receipt::runtime::{DurableGate, RunResult};
//! # let (path, steward, gate) = (std::path::Path::new("s.jcps"), jcp::identity::Keypair::generate(), jcp::decision::Gate::new());
//! // Opens as the only writer, replays the stream through the gate first.
//! let (mut point, replay) = DurableGate::open(path, steward, gate)?;
//! for u in &replay.unresolved { eprintln!("unresolved: {} held by {}", u.receipt, u.holder); }
//! # Ok(()) }
//! ```
//!
//! Non-goals: the audit report (see `jcp-audit`), transport.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cose;
#[cfg(feature = "demo")]
pub mod demo;
pub mod error;
mod fast;
mod fields;
#[cfg(feature = "demo")]
pub mod fleet;
pub mod open;
mod raw;
pub mod receipt;
pub mod record;
pub mod runtime;
pub mod settle;
pub mod stream;
pub mod writer;

pub use error::Error;
pub use receipt::{verify_receipt, Profile, ReceiptCore, VerifiedReceipt};
