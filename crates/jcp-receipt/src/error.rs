//! The crate's error enums. Each variant has a stable `code()`; the codes
//! are the spec's reason words where the spec has one (`bad-signature`,
//! `wrong-steward`, `unknown-profile`) and named stream findings otherwise.

use jcp::cbor::{DecodeError, SchemaError};
use jcp::identity::IdentityError;

/// Why a sealed record (a JCR-1 receipt, an outcome, a revocation notice)
/// does not open or does not verify (§8, §9 C5, C23).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiptError {
    /// Not a tagged (18) `COSE_Sign1` structure.
    #[error("cose-malformed: {0}")]
    CoseMalformed(String),
    /// The COSE bytes are well-formed but not their one canonical encoding
    /// (long-form heads, a non-empty unprotected header, a non-deterministic
    /// protected header).
    #[error("cose-non-canonical: {0}")]
    CoseNonCanonical(String),
    /// The protected header does not name EdDSA (-8).
    #[error("cose-wrong-alg: the protected header must name EdDSA (-8), found {0}")]
    WrongAlgorithm(String),
    /// The protected header carries no `kid`, or one that is not a `did:key`.
    #[error("cose-bad-kid: {0}")]
    BadKid(String),
    /// A detached (nil) payload: a JCR-1 record always carries its core.
    #[error("cose-detached-payload: a JCR-1 record carries its core inline")]
    DetachedPayload,
    /// The signed core is not canonical det-CBOR (§3).
    #[error("core-non-canonical: {0}")]
    Core(#[from] DecodeError),
    /// The core is canonical CBOR but not the profile's field list.
    #[error("core-schema: {0}")]
    Schema(#[from] SchemaError),
    /// A `did:key` inside the core does not parse.
    #[error("core-bad-did: {0}")]
    Identity(#[from] IdentityError),
    /// A field value the profile does not allow (a deny reason on an allow,
    /// `energy_coverage: "Whole"`, a chain not ending at `grant_id`, ...).
    #[error("core-invalid: {field}: {problem}")]
    Invalid { field: &'static str, problem: String },
    /// The profile tag is not one this verifier implements (§8: refuse, never assume).
    #[error("unknown-profile: {0:?} is not a profile this verifier implements")]
    UnknownProfile(String),
    /// The core's `steward` is not the COSE `kid`.
    #[error("steward-mismatch: core names {core} but the COSE kid is {kid}")]
    StewardMismatch { core: String, kid: String },
    /// Sealed by another steward than the one the verifier expects (C5).
    #[error("wrong-steward: expected {expected}, sealed by {found}")]
    WrongSteward { expected: String, found: String },
    /// The signature does not verify under the steward's key.
    #[error("bad-signature: the signature does not verify under {0}")]
    BadSignature(String),
    /// An attempt to mint the retired `jcp/1` profile (§8: MUST NOT).
    #[error("legacy-mint-refused: jcp/1 is never minted (§8); only jcp/2")]
    LegacyMintRefused,
}

impl ReceiptError {
    /// A stable code for machines.
    pub fn code(&self) -> &'static str {
        match self {
            Self::CoseMalformed(_) => "cose-malformed",
            Self::CoseNonCanonical(_) => "cose-non-canonical",
            Self::WrongAlgorithm(_) => "cose-wrong-alg",
            Self::BadKid(_) => "cose-bad-kid",
            Self::DetachedPayload => "cose-detached-payload",
            Self::Core(_) => "core-non-canonical",
            Self::Schema(_) => "core-schema",
            Self::Identity(_) => "core-bad-did",
            Self::Invalid { .. } => "core-invalid",
            Self::UnknownProfile(_) => "unknown-profile",
            Self::StewardMismatch { .. } => "steward-mismatch",
            Self::WrongSteward { .. } => "wrong-steward",
            Self::BadSignature(_) => "bad-signature",
            Self::LegacyMintRefused => "legacy-mint-refused",
        }
    }
}

/// Errors opening, writing or reading a stream file (§8.1, §4.11).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// An I/O failure, with the path.
    #[error("io: {path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// The file does not start with the stream header.
    #[error("not-a-stream: {path} does not start with the JCP stream header")]
    NotAStream { path: String },
    /// Another writer holds the stream (§4.11: one writer per record).
    #[error("stream-locked: {path} is held by another writer; a second writer must not start (§4.11, one writer per record)")]
    Locked { path: String },
    /// The platform cannot take an exclusive lock (§4.11: fail to open rather than proceed).
    #[error("lock-unsupported: {path}: exclusive locking is not available here ({detail}); refusing to open for writing")]
    LockUnsupported { path: String, detail: String },
    /// A record to append is larger than the format allows.
    #[error("record-oversized: {len} bytes exceeds the {max}-byte record limit")]
    Oversized { len: usize, max: usize },
    /// Sealing failed.
    #[error(transparent)]
    Receipt(#[from] ReceiptError),
    /// The revocation-knowledge marker would go backwards (§4.3: monotonic).
    #[error("marker-regressed: known_through {new} is below the stated {old}")]
    MarkerRegressed { old: u64, new: u64 },
    /// A revocation refused by the core (authority, signature).
    #[error("revocation-refused: {0}")]
    Revocation(jcp::Error),
    /// An amendment refused by the core (§4.7: signature, binding, amender,
    /// widening, above the remainder); the code is the core's.
    #[error("amendment-refused: {0}")]
    AmendmentRefused(jcp::Error),
    /// A budget-channel statement refused by the core (§4.5: forged, stale,
    /// regressing, wrong grant, non-member, no channel); the code is the core's.
    #[error("statement-refused: {0}")]
    StatementRefused(jcp::Error),
    /// An outcome for a decision this writer did not record, or recorded twice.
    #[error("outcome-unknown: {0}")]
    OutcomeUnknown(String),
}

impl StreamError {
    /// A stable code for machines.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { .. } => "io",
            Self::NotAStream { .. } => "not-a-stream",
            Self::Locked { .. } => "stream-locked",
            Self::LockUnsupported { .. } => "lock-unsupported",
            Self::Oversized { .. } => "record-oversized",
            Self::Receipt(e) => e.code(),
            Self::MarkerRegressed { .. } => "marker-regressed",
            Self::Revocation(_) => "revocation-refused",
            Self::AmendmentRefused(e) | Self::StatementRefused(e) => e.code(),
            Self::OutcomeUnknown(_) => "outcome-unknown",
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io { path: path.display().to_string(), source }
    }
}
