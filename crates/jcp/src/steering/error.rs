//! §4.7 refusals: why a steering record or run is refused, with the stable
//! reason codes a verifier reports.

use crate::error::Error;

/// Why a steering record or run is refused (§4.7). Each variant has a
/// stable [`SteeringError::code`]; it travels inside [`Error::Steering`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SteeringError {
    /// A checkpoint authored by someone other than the active grant's
    /// subject (the agent).
    #[error("steer-not-agent: checkpoint author {author} is not the grant's subject {subject}")]
    NotAgent {
        /// The checkpoint's `agent`.
        author: String,
        /// The active grant's subject.
        subject: String,
    },
    /// An amendment by the agent itself: an agent cannot steer itself.
    #[error(
        "steer-self-amend: amender {amender} is the agent (the grant's subject); steering needs a distinct principal"
    )]
    SelfAmend {
        /// The amendment's `amended_by`, which is the agent.
        amender: String,
    },
    /// An amendment by someone other than the steered grant's issuer.
    #[error("steer-not-issuer: amender {amender} is not the grant's issuer {issuer}")]
    NotIssuer {
        /// The amendment's `amended_by`.
        amender: String,
        /// The steered grant's issuer.
        issuer: String,
    },
    /// An amendment or continuation that loosens the steered grant on some
    /// axis (budget above the issued budget, a later expiry, a wider grant).
    #[error("steer-widening: {0}")]
    Widening(String),
    /// An amendment budget within the issued budget but above what the grant
    /// has left at the checkpoint that stated its spend.
    #[error("steer-above-remainder: amended budget {budget_uj} µJ exceeds the remainder {ceiling_uj} µJ (issued {issued_uj} µJ, spent {spent_uj} µJ)")]
    AboveRemainder {
        /// The amendment's `budget_uj`.
        budget_uj: u64,
        /// What the grant had left at the checkpoint.
        ceiling_uj: u64,
        /// The steered grant's `budget_uj`.
        issued_uj: u64,
        /// The run-wide spend the checkpoint stated.
        spent_uj: u64,
    },
    /// An amendment bound to a different checkpoint than the one it is
    /// presented with (or than the run's latest).
    #[error("steer-wrong-checkpoint: {0}")]
    WrongCheckpoint(String),
    /// A record citing a grant that is not the run's active grant.
    #[error("steer-wrong-grant: {0}")]
    WrongGrant(String),
    /// A declared (cumulative) spend lower than an earlier one in the run.
    #[error("steer-spend-decreased: declared spend {after} µJ is below the {before} µJ declared earlier in the run")]
    SpendDecreased {
        /// The spend declared earlier in the run, µJ.
        before: u64,
        /// The lower spend this checkpoint declares, µJ.
        after: u64,
    },
    /// A checkpoint that omits its spend after an earlier one stated it.
    #[error(
        "steer-spend-omitted: the run stated its spend ({before} µJ) at an earlier checkpoint and may not go quiet"
    )]
    SpendOmitted {
        /// The spend last declared, µJ.
        before: u64,
    },
    /// The checkpoint sequence is broken: a wrong `seq`, a `prev` that is not
    /// the previous checkpoint, or a clock that runs backwards.
    #[error("steer-sequence: {0}")]
    Sequence(String),
    /// A continuation grant that is missing, unnamed by any amendment, or
    /// does not re-bind the steered grant's issuer, agent and position.
    #[error("steer-continuation: {0}")]
    Continuation(String),
    /// A checkpoint declaring more spend under the active grant than its
    /// budget (admitted: the claim is the agent's own; reported as evidence).
    #[error("steer-overspent: {spent_uj} µJ spent under a grant of {budget_uj} µJ")]
    Overspent {
        /// µJ declared under the active grant.
        spent_uj: u64,
        /// The active grant's `budget_uj`.
        budget_uj: u64,
    },
    /// Authoring onto a run that has refused records, or a new record the
    /// verifier would refuse.
    #[error("steer-run-not-clean: {count} refused record(s); first: {first}")]
    RunNotClean {
        /// How many records are refused.
        count: usize,
        /// The first refusal, for people.
        first: String,
    },
    /// A run file that could not be read or written.
    #[error("io-error: {0}")]
    Io(String),
    /// The run file's header is missing or names another format.
    #[error("run-header: {0}")]
    RunHeader(String),
    /// A run file record that does not decode. `index` counts records after
    /// the header (None = the header); `offset` is the record's first byte.
    #[error("run-file: record {} (starts at byte {offset} of the file; offsets that follow are within the record): {source}", index.map_or_else(|| "header".to_owned(), |i| format!("#{i}")))]
    RunFile {
        /// The record's index after the header; `None` = the header.
        index: Option<usize>,
        /// Byte offset in the file where the record's item starts.
        offset: usize,
        /// What is wrong inside the record.
        source: Box<Error>,
    },
}

impl SteeringError {
    /// A stable code for machines. A [`SteeringError::RunFile`] reports the
    /// code of what was wrong inside the record.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotAgent { .. } => "steer-not-agent",
            Self::SelfAmend { .. } => "steer-self-amend",
            Self::NotIssuer { .. } => "steer-not-issuer",
            Self::Widening(_) => "steer-widening",
            Self::AboveRemainder { .. } => "steer-above-remainder",
            Self::WrongCheckpoint(_) => "steer-wrong-checkpoint",
            Self::WrongGrant(_) => "steer-wrong-grant",
            Self::SpendDecreased { .. } => "steer-spend-decreased",
            Self::SpendOmitted { .. } => "steer-spend-omitted",
            Self::Sequence(_) => "steer-sequence",
            Self::Continuation(_) => "steer-continuation",
            Self::Overspent { .. } => "steer-overspent",
            Self::RunNotClean { .. } => "steer-run-not-clean",
            Self::Io(_) => "io-error",
            Self::RunHeader(_) => "run-header",
            Self::RunFile { source, .. } => source.code(),
        }
    }

    /// A steering refusal (§4.7, C21) as opposed to a run file that could
    /// not be read (see [`crate::Error::is_refusal`]).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, Self::Io(_) | Self::RunHeader(_) | Self::RunFile { .. })
    }
}

pub(super) fn steer(e: SteeringError) -> Error {
    Error::Steering(e)
}
