//! The crate's one error enum: refusals to mint, read or combine the files
//! of a threshold ceremony (§2.2). Each variant has a stable kebab-case
//! [`ThresholdError::code`], and its message starts with that code.

use jcp::cbor::{DecodeError, SchemaError};
use jcp::identity::IdentityError;

/// Errors of threshold actors; each has a stable [`ThresholdError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ThresholdError {
    /// A file that is not canonical det-CBOR (§3).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// Canonical CBOR that is not the participant file it was read as.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A group key that is not a usable `did:key` (§2).
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// A participant file of another kind than the one asked for.
    #[error("wrong-file-type: expected a {expected} file, found {found:?}")]
    WrongType {
        /// The file type asked for (a [`crate::ParticipantFile::TYPE`]).
        expected: &'static str,
        /// The type the file names.
        found: String,
    },
    /// The FROST payload inside a file does not decode.
    #[error("bad-frost-encoding: {object}: {problem}")]
    FrostEncoding {
        /// The FROST object being decoded or encoded (`KeyPackage`,
        /// `VerifyingKey`, `Signature`, …).
        object: &'static str,
        /// The FROST library's description of the failure.
        problem: String,
    },
    /// A FROST payload that decodes but is not its one canonical encoding
    /// (trailing or re-spelled bytes): one file form per value.
    #[error("non-canonical-frost: {object}: the payload does not re-encode to the bytes given")]
    NonCanonicalFrost {
        /// The FROST object whose bytes do not re-encode as given.
        object: &'static str,
    },
    /// A participant identifier outside 1..=65535.
    #[error("bad-identifier: {0}")]
    BadIdentifier(String),
    /// Threshold parameters FROST refuses (2 ≤ k ≤ n).
    #[error("bad-parameters: {0}")]
    BadParameters(String),
    /// Files of one ceremony that disagree: an envelope naming another
    /// participant than its payload, a share of another group, a package
    /// addressed to someone else, a duplicate.
    #[error("participant-mismatch: {object}: {problem}")]
    Mismatch {
        /// The file or package that disagrees with the others.
        object: &'static str,
        /// How it disagrees, for a person.
        problem: String,
    },
    /// A group descriptor whose verifying shares do not lie on one
    /// polynomial of degree k−1 through the group key.
    #[error("group-inconsistent: {0}")]
    GroupInconsistent(String),
    /// Fewer signers than the threshold: one share of a 2-of-3 never signs.
    #[error("too-few-signers: {have} of the {need} signers the group requires")]
    TooFewSigners {
        /// Signers present.
        have: usize,
        /// The group's threshold k.
        need: u16,
    },
    /// Distributed key generation refused a package (bad proof of
    /// knowledge, a share that does not match its sender's commitment…).
    #[error("dkg-refused: {problem}{}", culprits_text(.culprits))]
    DkgRefused {
        /// What FROST refused, for a person.
        problem: String,
        /// The participant identifiers FROST blames (empty when it names none).
        culprits: Vec<u16>,
    },
    /// A signing round refused its inputs (missing or mismatched commitment).
    #[error("signing-refused: {0}")]
    SigningRefused(String),
    /// One or more signature shares that do not verify under their signer's
    /// verifying share (FROST's cheater detection names them).
    #[error("invalid-signature-share: shares of participants {culprits:?} do not verify")]
    InvalidSignatureShare {
        /// The participant identifiers whose shares do not verify.
        culprits: Vec<u16>,
    },
    /// An aggregate that does not verify (the one Ed25519 predicate) under the group
    /// key: nothing unverifiable ever leaves [`crate::sign::aggregate`].
    #[error("aggregate-does-not-verify: the aggregate is not a valid Ed25519 signature by {group}")]
    AggregateDoesNotVerify {
        /// The group's `did:key`.
        group: String,
    },
    /// A file that could not be read or written.
    #[error("io: {path}: {problem}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's (or serializer's) description of the failure.
        problem: String,
    },
}

fn culprits_text(c: &[u16]) -> String {
    if c.is_empty() {
        String::new()
    } else {
        format!(" (participants {c:?})")
    }
}

impl ThresholdError {
    /// A stable code for machines and the console.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Decode(e) => e.code(),
            Self::Schema(e) => e.code(),
            Self::Identity(e) => e.code(),
            Self::WrongType { .. } => "wrong-file-type",
            Self::FrostEncoding { .. } => "bad-frost-encoding",
            Self::NonCanonicalFrost { .. } => "non-canonical-frost",
            Self::BadIdentifier(_) => "bad-identifier",
            Self::BadParameters(_) => "bad-parameters",
            Self::Mismatch { .. } => "participant-mismatch",
            Self::GroupInconsistent(_) => "group-inconsistent",
            Self::TooFewSigners { .. } => "too-few-signers",
            Self::DkgRefused { .. } => "dkg-refused",
            Self::SigningRefused(_) => "signing-refused",
            Self::InvalidSignatureShare { .. } => "invalid-signature-share",
            Self::AggregateDoesNotVerify { .. } => "aggregate-does-not-verify",
            Self::Io { .. } => "io",
        }
    }

    pub(crate) fn mismatch(object: &'static str, problem: impl Into<String>) -> Self {
        Self::Mismatch { object, problem: problem.into() }
    }
}
