//! Spec §4.7: checkpoints and amendments — steering a long run (C21).
//!
//! A running agent (a grant's `subject`) commits to its state at defined
//! boundaries: a signed [`Checkpoint`] citing the active grant, a
//! content-addressed state commitment, its position in the run and, where it
//! says, what the run has spent so far. The grant's `issuer` — a principal
//! distinct from the agent — may then steer: a signed [`Amendment`] cites the
//! checkpoint, only tightens, and is bounded by what the grant has **left**
//! there. The run resumes under a **continuation grant** the issuer re-issues
//! to the same agent, which the amendment names by content id (the link the
//! auditor checks: docs/decisions.md, "Steering (§4.7, C21)").
//!
//! Every rule is held twice: by the authoring routines ([`Run::checkpoint`],
//! [`Run::amend`]) and by the verifier ([`Run::verify`], [`verify_amendment`]),
//! which share one implementation — an enforcement point handed a signed
//! amendment never calls the amending routine, so a check that lived only
//! there would not be a check.
//!
//! On disk a run is a `*.jcprun` file: an RFC 8742 CBOR sequence of canonical
//! items — a header `{format: "jcp-run/1"}`, then one record per item, in
//! order — so a live run can be appended to without rewriting it.
//!
//! | module | §4.7 concept |
//! |---|---|
//! | `checkpoint` | the agent's signed checkpoint and its declared spend |
//! | `amendment` | the issuer's amendment and the rules it is judged by |
//! | `remainder` | what the grant has left; the ceiling of an amendment |
//! | `continuation` | the continuation grant an amendment names |
//! | `record`, `run`, `run_file` | a run's records, the run, its file form |
//! | `verifier`, `report` | the run verifier and its report |
//! | `authoring` | adding checkpoints and amendments to a run |
//! | `error` | the refusal codes |

mod amendment;
mod authoring;
mod checkpoint;
mod continuation;
#[cfg(feature = "demo")]
pub mod demo;
mod error;
pub mod files;
pub mod follow;
mod record;
mod remainder;
mod report;
mod run;
mod run_file;
#[cfg(feature = "vectors")]
pub mod vectors;
mod verifier;

pub use amendment::{verify_amendment, verify_amendment_from, Amendment, SignedAmendment};
pub use authoring::{AmendInput, AmendPlan, CheckpointInput};
pub use checkpoint::{check_declared_spend, verify_checkpoint, Checkpoint, SignedCheckpoint, Spent};
pub use continuation::verify_continuation;
use error::steer;
pub use error::SteeringError;
pub use record::Record;
pub use remainder::{amend_ceiling, Remainder, UnknownReason};
pub use report::{AmendmentRow, CheckpointRow, Finding, GrantRow, RunReport};
pub use run::Run;

/// The run file's format string (its header's `format`).
pub const RUN_FORMAT: &str = "jcp-run/1";

/// File name extension of a run file.
pub const RUN_EXTENSION: &str = "jcprun";
