//! # JCP — the Joule Context Protocol core
//!
//! Modules follow the specification (`jcp-v0.3.md`):
//!
//! | module | spec |
//! |---|---|
//! | [`cbor`] | §3 canonical det-CBOR, content ids |
//! | [`identity`] | §2 actors as Ed25519 `did:key` |
//! | [`rotation`] | §2.1 identity continuity: pre-committed key rotation, key logs (C12) |
//! | [`energy`] | §5 provenance, §5.2 coverage, costs |
//! | [`grant`] | §4 grants, §4.1 attenuation, §4.4 depth, §4.5 shards, §4.8 money, §4.9 caveats |
//! | [`chain`] | §4.2 chain verification |
//! | [`revocation`] | §4.3 revocation |
//! | [`standing`] | §4.6 standing grants: mint policies, mint ledgers, firings (C20) |
//! | [`channel`] | §4.5 receipt-settled budget channels: statements, settlement, overdraft proofs (C17) |
//! | [`steering`] | §4.7 checkpoints, amendments, continuations, run files (C21) |
//! | [`flow`] | §4.10 labels, ceilings, taint floors |
//! | [`frame`] | §6 frames |
//! | [`decision`] | §7 the decision, trust roots, budgets, the two-phase metered path |
//!
//! Goals: every decoder of outside bytes is strict and returns a typed error;
//! the decision is pure and deterministic (the clock is an argument).
//! Non-goals: transport (see `jcp-wire`), metering (see `jcp-meter`).
//!
//! Features (none is on by default; none is part of the shipped library):
//! `vectors` — the conformance-vector generators (`jcp::vectors` and the
//! `vectors` module of [`channel`], [`rotation`], [`standing`], [`steering`])
//! behind the `gen-*-vectors` bins; `fuzzing` — the invariants the cargo-fuzz
//! targets check (`fuzzing`); `demo` — the deterministic demo run
//! (`steering::demo`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cbor;
pub mod chain;
pub mod channel;
pub mod decision;
pub mod energy;
pub mod error;
pub mod flow;
pub mod frame;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod grant;
pub mod identity;
pub mod revocation;
pub mod revocation_log;
pub mod rotation;
pub mod standing;
pub mod steering;
#[cfg(feature = "vectors")]
pub mod vectors;

pub use error::Error;
