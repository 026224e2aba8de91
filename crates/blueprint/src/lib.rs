//! Agent Blueprint Protocol (spec: `shared/spec/agent-blueprint-protocol.md`).
//!
//! **Non-authorizing.** This crate validates structure, canonical bytes,
//! bounds, compatibility and evidence. Nothing it returns grants authority:
//! every result — a fully green one included — is evidence, and
//! [`reconcile::Evidence::not_verified`] always names what the host still owns.
//!
//! Layers, strictly downward: bytes ([`json`], [`canon`], [`b64`], [`digest`],
//! [`limits`]) → artifacts ([`shape`], [`schema`], [`predicate`],
//! [`portability`], [`artifact`]) → algebra ([`registry`], [`negotiation`],
//! [`bounds`], [`compat`], [`binding`], [`signature`], [`federation`]) →
//! [`reconcile`] → conformance tooling ([`conformance`], [`corpus`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod artifact;
pub mod b64;
pub mod binding;
pub mod bounds;
pub mod canon;
pub mod compat;
pub mod conformance;
pub mod corpus;
pub mod digest;
pub mod error;
pub mod federation;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod json;
pub mod limits;
pub mod negotiation;
pub mod portability;
pub mod predicate;
pub mod reconcile;
pub mod registry;
pub mod schema;
pub mod shape;
pub mod signature;

pub use error::{Code, Error, Result};

// The facade (spec §16): delegates, never implements.
pub use artifact::{decode_blueprint, decode_deployment};
pub use bounds::intersect;
pub use canon::canonical_bytes;
pub use compat::verify_compatibility;
pub use conformance::{run_corpus_dir, Report as CorpusReport};
pub use federation::{decode_envelope as decode_federation_envelope, federation_mapping};
pub use negotiation::negotiate;
pub use reconcile::{reconcile, Evidence, Inputs};
