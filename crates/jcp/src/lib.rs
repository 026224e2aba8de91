//! # JCP — the Joule Context Protocol core
//!
//! Modules follow the specification (`jcp-v0.3.md`):
//!
//! | module | spec |
//! |---|---|
//! | [`cbor`] | §3 canonical det-CBOR, content ids |
//! | [`identity`] | §2 actors as Ed25519 `did:key` |
//! | [`energy`] | §5 provenance, §5.2 coverage, costs |
//!
//! Goals: every decoder of outside bytes is strict and returns a typed error;
//! the decision is pure and deterministic (the clock is an argument).
//! Non-goals: transport (see `jcp-wire`), metering (see `jcp-meter`).
#![forbid(unsafe_code)]

pub mod cbor;
pub mod energy;
pub mod error;
pub mod identity;

pub use error::Error;
