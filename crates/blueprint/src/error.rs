//! The closed error vocabulary (spec §12): the 74 codes of this release plus the
//! parameterized ceiling family `ceiling:<limit>` over the eight decoder limits.
//!
//! Every failure in this crate is an [`Error`]: a variant per code carrying the
//! subject (where: a JSON pointer, a member name, a namespace) and a detail
//! (what was wrong). [`Error::code`] gives the stable wire spelling.

use crate::limits::Limit;

macro_rules! vocabulary {
    ($($variant:ident => $code:literal,)*) => {
        /// The 74 fixed codes (the ceiling family is [`Error::Ceiling`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Code {
            $(
                #[doc = concat!("`", $code, "` (§12).")]
                $variant,
            )*
        }

        impl Code {
            /// Every fixed code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable wire spelling.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// Parses a wire spelling.
            pub fn parse(s: &str) -> Option<Code> {
                match s { $($code => Some(Code::$variant),)* _ => None }
            }
        }

        /// A typed failure: one variant per code of the closed vocabulary.
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        pub enum Error {
            $(
                #[doc = concat!("`", $code, "`")]
                #[error("{}: {subject}: {detail}", $code)]
                $variant {
                    /// Where: a JSON pointer, a member name, a namespace.
                    subject: String,
                    /// What was wrong.
                    detail: String,
                },
            )*
            /// `ceiling:<limit>`: a decoder limit was exceeded.
            #[error("ceiling:{}: {subject}: {detail}", limit.as_str())]
            Ceiling {
                /// The decoder limit that was exceeded.
                limit: Limit,
                /// Where: a JSON pointer.
                subject: String,
                /// What was wrong (the size found and the limit).
                detail: String,
            },
        }

        impl Error {
            /// Builds the error for `code`.
            pub fn new(code: Code, subject: impl Into<String>, detail: impl Into<String>) -> Error {
                let (subject, detail) = (subject.into(), detail.into());
                match code { $(Code::$variant => Error::$variant { subject, detail },)* }
            }

            /// The fixed code, or `None` for the ceiling family.
            pub fn fixed_code(&self) -> Option<Code> {
                match self { $(Error::$variant { .. } => Some(Code::$variant),)* Error::Ceiling { .. } => None }
            }

            /// Subject: where the failure is.
            pub fn subject(&self) -> &str {
                match self { $(Error::$variant { subject, .. })|* | Error::Ceiling { subject, .. } => subject }
            }

            /// Detail: what was wrong.
            pub fn detail(&self) -> &str {
                match self { $(Error::$variant { detail, .. })|* | Error::Ceiling { detail, .. } => detail }
            }
        }
    };
}

vocabulary! {
    Base64urlInvalid => "base64url_invalid",
    Base64urlPadded => "base64url_padded",
    InvalidSyntax => "invalid_syntax",
    InvalidEncoding => "invalid_encoding",
    InvalidNumber => "invalid_number",
    NumberNotDoubleExpressible => "number_not_double_expressible",
    DuplicateMember => "duplicate_member",
    TrailingBytes => "trailing_bytes",
    UnknownBound => "unknown_bound",
    NonCanonicalBytes => "non_canonical_bytes",
    IntegerMagnitude => "integer_magnitude",
    UnknownMember => "unknown_member",
    MissingRequiredField => "missing_required_field",
    InvalidType => "invalid_type",
    InvalidConstraint => "invalid_constraint",
    InvalidCardinality => "invalid_cardinality",
    DigestAlgorithmUnsupported => "digest_algorithm_unsupported",
    DigestEncodingInvalid => "digest_encoding_invalid",
    DigestMismatch => "digest_mismatch",
    SignatureAlgorithmUnsupported => "signature_algorithm_unsupported",
    SignatureKeyUnsupported => "signature_key_unsupported",
    SignatureMalformed => "signature_malformed",
    SignatureNotVerified => "signature_not_verified",
    AttestationMalformed => "attestation_malformed",
    SchemaDialectUnknown => "schema_dialect_unknown",
    SchemaKeywordNotAllowed => "schema_keyword_not_allowed",
    SchemaKeywordValueInvalid => "schema_keyword_value_invalid",
    SchemaComplexityExceeded => "schema_complexity_exceeded",
    SchemaRefUnresolvable => "schema_ref_unresolvable",
    SchemaRefCycle => "schema_ref_cycle",
    SchemaInvalidShape => "schema_invalid_shape",
    PredicateOpUnknown => "predicate_op_unknown",
    PredicatePathUnresolved => "predicate_path_unresolved",
    PredicateNodesExceeded => "predicate_nodes_exceeded",
    ExtensionDuplicate => "extension_duplicate",
    ExtensionNamespaceInvalid => "extension_namespace_invalid",
    ProtocolRevisionUnsupported => "protocol_revision_unsupported",
    RequiredCoreFieldUnsupported => "required_core_field_unsupported",
    RequiredCoreFieldNotDigestCovered => "required_core_field_not_digest_covered",
    ExtensionUnknownCritical => "extension_unknown_critical",
    ExtensionCriticalityConflict => "extension_criticality_conflict",
    ExtensionRetired => "extension_retired",
    ExtensionSchemaUnavailable => "extension_schema_unavailable",
    ExtensionSchemaDigestMismatch => "extension_schema_digest_mismatch",
    ExtensionPayloadForbidden => "extension_payload_forbidden",
    BoundUnknown => "bound_unknown",
    MissingCeiling => "missing_ceiling",
    BoundSourceMissing => "bound_source_missing",
    BoundUnitMismatch => "bound_unit_mismatch",
    BoundValueInvalid => "bound_value_invalid",
    ProtectedBoundClampDenied => "protected_bound_clamp_denied",
    DeploymentDigestMismatch => "deployment_digest_mismatch",
    BindingIncomplete => "binding_incomplete",
    NoAuthoritativeRecovery => "no_authoritative_recovery",
    BindingAttestationStale => "binding_attestation_stale",
    BindingDescriptorMismatch => "binding_descriptor_mismatch",
    LifecycleStateInvalid => "lifecycle_state_invalid",
    CompatibilityIdentityInexact => "compatibility_identity_inexact",
    CompatibilityEntryMissing => "compatibility_entry_missing",
    CompatibilityDuplicateEntry => "compatibility_duplicate_entry",
    ForbiddenPortableValue => "forbidden_portable_value",
    FederationStateUnmappable => "federation_state_unmappable",
    FederationMappingConflict => "federation_mapping_conflict",
    NonportableContent => "nonportable_content",
    AudienceMismatch => "audience_mismatch",
    FederationTerminalConflict => "federation_terminal_conflict",
    CorpusIndexInvalid => "corpus_index_invalid",
    CorpusHashMismatch => "corpus_hash_mismatch",
    CorpusFileSetMismatch => "corpus_file_set_mismatch",
    CorpusCaseIdDuplicate => "corpus_case_id_duplicate",
    CorpusCountMismatch => "corpus_count_mismatch",
    CorpusApplicabilityIncomplete => "corpus_applicability_incomplete",
    CorpusEmpty => "corpus_empty",
    CorpusCaseInvalid => "corpus_case_invalid",
}

impl Error {
    /// The stable wire code: a fixed code, or `ceiling:<limit>`.
    pub fn code(&self) -> String {
        match self {
            Error::Ceiling { limit, .. } => format!("ceiling:{}", limit.as_str()),
            other => other.fixed_code().map(Code::as_str).unwrap_or_default().to_string(),
        }
    }

    /// Builds a ceiling-family error.
    pub fn ceiling(limit: Limit, subject: impl Into<String>, detail: impl Into<String>) -> Error {
        Error::Ceiling { limit, subject: subject.into(), detail: detail.into() }
    }
}

impl serde::Serialize for Error {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Error", 3)?;
        st.serialize_field("code", &self.code())?;
        st.serialize_field("subject", self.subject())?;
        st.serialize_field("detail", self.detail())?;
        st.end()
    }
}

/// Shorthand used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// `Err(Error::new(code, subject, detail))`.
pub(crate) fn fail<T>(code: Code, subject: impl Into<String>, detail: impl Into<String>) -> Result<T> {
    Err(Error::new(code, subject, detail))
}
