//! The crate's one error enum. Each variant has a stable `code()` and its
//! `Display` starts with it; the codes are the spec's reason words where
//! the spec has one (`bad-signature`, `wrong-steward`, `unknown-profile`)
//! and named stream findings otherwise.

use jcp::cbor::{DecodeError, SchemaError};
use jcp::identity::IdentityError;

/// Why a sealed record (a JCR-1 receipt, an outcome, a revocation notice)
/// does not open or does not verify (§8, §9 C5, C23), and why a stream file
/// cannot be opened, written or read (§8.1, §4.11).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- sealed records (§8) ----
    /// Not a tagged (18) `COSE_Sign1` structure.
    #[error("cose-malformed: {0}")]
    CoseMalformed(String),
    /// The COSE bytes are well-formed but not their one canonical encoding
    /// (long-form heads, a non-empty unprotected header, a non-deterministic
    /// protected header).
    #[error("cose-non-canonical: {0}")]
    CoseNonCanonical(String),
    /// The protected header does not name `EdDSA` (-8).
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
    Invalid {
        /// The core field (or, outside a core, the argument) that is wrong.
        field: &'static str,
        /// What is wrong with its value, for a person.
        problem: String,
    },
    /// The profile tag is not one this verifier implements (§8: refuse, never assume).
    #[error("unknown-profile: {0:?} is not a profile this verifier implements")]
    UnknownProfile(String),
    /// The core's `steward` is not the COSE `kid`.
    #[error("steward-mismatch: core names {core} but the COSE kid is {kid}")]
    StewardMismatch {
        /// The `did:key` the core's `steward` field names.
        core: String,
        /// The `did:key` the envelope's protected `kid` names (the signer).
        kid: String,
    },
    /// Sealed by another steward than the one the verifier expects (C5).
    #[error("wrong-steward: expected {expected}, sealed by {found}")]
    WrongSteward {
        /// The `did:key` of the steward the verifier trusts for this stream.
        expected: String,
        /// The `did:key` that sealed the record.
        found: String,
    },
    /// The signature does not verify under the steward's key.
    #[error("bad-signature: the signature does not verify under {0}")]
    BadSignature(String),
    /// An attempt to mint the retired `jcp/1` profile (§8: MUST NOT).
    #[error("legacy-mint-refused: jcp/1 is never minted (§8); only jcp/2")]
    LegacyMintRefused,

    // ---- stream files (§8.1, §4.11) ----
    /// An I/O failure, with the path.
    #[error("io: {path}: {message}")]
    Io {
        /// The file (empty when raised before one is known: see [`Error::at_path`]).
        path: String,
        /// The operating system's description of the failure.
        message: String,
    },
    /// The file does not start with the stream header.
    #[error("not-a-stream: {path} does not start with the JCP stream header")]
    NotAStream {
        /// The file (empty when raised before one is known: see [`Error::at_path`]).
        path: String,
    },
    /// Another writer holds the stream (§4.11: one writer per record).
    #[error("stream-locked: {path} is held by another writer; a second writer must not start (§4.11, one writer per record)")]
    Locked {
        /// The stream file another writer holds.
        path: String,
    },
    /// The platform cannot take an exclusive lock (§4.11: fail to open rather than proceed).
    #[error(
        "lock-unsupported: {path}: exclusive locking is not available here ({detail}); refusing to open for writing"
    )]
    LockUnsupported {
        /// The stream file that could not be locked.
        path: String,
        /// The operating system's reason the lock is unavailable.
        detail: String,
    },
    /// A record to append is larger than the format allows.
    #[error("record-oversized: {len} bytes exceeds the {max}-byte record limit")]
    Oversized {
        /// The payload's length in bytes.
        len: usize,
        /// The format's limit ([`crate::stream::MAX_RECORD_LEN`]).
        max: usize,
    },
    /// The revocation-knowledge marker would go backwards (§4.3: monotonic).
    #[error("marker-regressed: known_through {new} is below the stated {old}")]
    MarkerRegressed {
        /// The `known_through` marker already stated.
        old: u64,
        /// The smaller marker refused.
        new: u64,
    },
    /// A revocation refused by the core (authority, signature).
    #[error("revocation-refused: {0}")]
    Revocation(jcp::Error),
    /// An amendment refused by the core (§4.7: signature, binding, amender,
    /// widening, above the remainder); the code is the core's.
    #[error("{0} (the amendment is refused)")]
    AmendmentRefused(jcp::Error),
    /// A budget-channel statement refused by the core (§4.5: forged, stale,
    /// regressing, wrong grant, non-member, no channel); the code is the core's.
    #[error("{0} (the statement is refused)")]
    StatementRefused(jcp::Error),
    /// An outcome for a decision this writer did not record, or recorded twice.
    #[error("outcome-unknown: {0}")]
    OutcomeUnknown(String),
}

impl Error {
    /// A stable code for machines; `Display` starts with it.
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
            Self::Io { .. } => "io",
            Self::NotAStream { .. } => "not-a-stream",
            Self::Locked { .. } => "stream-locked",
            Self::LockUnsupported { .. } => "lock-unsupported",
            Self::Oversized { .. } => "record-oversized",
            Self::MarkerRegressed { .. } => "marker-regressed",
            Self::Revocation(_) => "revocation-refused",
            Self::AmendmentRefused(e) | Self::StatementRefused(e) => e.code(),
            Self::OutcomeUnknown(_) => "outcome-unknown",
        }
    }

    /// Names the file of an error raised without one ([`crate::stream::Reader::new`]).
    #[must_use]
    pub fn at_path(self, path: &std::path::Path) -> Self {
        match self {
            Self::Io { path: p, message } if p.is_empty() => Self::Io { path: path.display().to_string(), message },
            Self::NotAStream { path: p } if p.is_empty() => Self::NotAStream { path: path.display().to_string() },
            other => other,
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: &std::io::Error) -> Self {
        Self::Io { path: path.display().to_string(), message: source.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of every variant; the match fails to compile when a variant is
    /// added and not listed here.
    fn every_variant() -> Vec<Error> {
        let s = || "x".to_owned();
        let core = || jcp::Error::DelegationForbidden;
        let v = vec![
            Error::CoseMalformed(s()),
            Error::CoseNonCanonical(s()),
            Error::WrongAlgorithm(s()),
            Error::BadKid(s()),
            Error::DetachedPayload,
            Error::Core(DecodeError::NonShortest { offset: 1 }),
            Error::Schema(SchemaError::Invalid { object: "Receipt", field: "f", problem: s() }),
            Error::Identity(IdentityError::InvalidPoint),
            Error::Invalid { field: "kind", problem: s() },
            Error::UnknownProfile(s()),
            Error::StewardMismatch { core: s(), kid: s() },
            Error::WrongSteward { expected: s(), found: s() },
            Error::BadSignature(s()),
            Error::LegacyMintRefused,
            Error::io(std::path::Path::new("p"), &std::io::Error::other("gone")),
            Error::NotAStream { path: s() },
            Error::Locked { path: s() },
            Error::LockUnsupported { path: s(), detail: s() },
            Error::Oversized { len: 2, max: 1 },
            Error::MarkerRegressed { old: 2, new: 1 },
            Error::Revocation(core()),
            Error::AmendmentRefused(core()),
            Error::StatementRefused(core()),
            Error::OutcomeUnknown(s()),
        ];
        for e in &v {
            match e {
                Error::CoseMalformed(_)
                | Error::CoseNonCanonical(_)
                | Error::WrongAlgorithm(_)
                | Error::BadKid(_)
                | Error::DetachedPayload
                | Error::Core(_)
                | Error::Schema(_)
                | Error::Identity(_)
                | Error::Invalid { .. }
                | Error::UnknownProfile(_)
                | Error::StewardMismatch { .. }
                | Error::WrongSteward { .. }
                | Error::BadSignature(_)
                | Error::LegacyMintRefused
                | Error::Io { .. }
                | Error::NotAStream { .. }
                | Error::Locked { .. }
                | Error::LockUnsupported { .. }
                | Error::Oversized { .. }
                | Error::MarkerRegressed { .. }
                | Error::Revocation(_)
                | Error::AmendmentRefused(_)
                | Error::StatementRefused(_)
                | Error::OutcomeUnknown(_) => {}
            }
        }
        v
    }

    /// §8, C5: every refusal names its reason code first — `Display` starts
    /// with `code()` and a colon, for every variant of the one enum.
    #[test]
    fn c5_error_display_starts_with_its_code() {
        for e in every_variant() {
            let text = e.to_string();
            assert!(text.starts_with(&format!("{}: ", e.code())), "{text:?} does not start with {:?}", e.code());
        }
    }

    /// §8.1: the stream reader's header refusal is named by the caller's path.
    #[test]
    fn s8_1_header_refusal_is_named_by_its_path() {
        let e = crate::stream::Reader::new(&b"not a stream"[..]).err().unwrap().at_path(std::path::Path::new("a.jcps"));
        assert_eq!(e.code(), "not-a-stream");
        assert_eq!(e.to_string(), "not-a-stream: a.jcps does not start with the JCP stream header");
    }
}
