//! Domain-separated SHA-256 digests in the tagged `sha-256:<base64url>` form
//! (spec §5): `SHA-256(separator || 0x00 || bytes)`.

use sha2::{Digest as _, Sha256};

use crate::error::{fail, Code, Result};

/// The digest purposes and their separators (§5 table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// Blueprint content: `agent-blueprint-protocol/blueprint-content`.
    BlueprintContent,
    /// Deployment content: `agent-blueprint-protocol/deployment-content`.
    DeploymentContent,
    /// Federation envelope: `agent-blueprint-protocol/federation-envelope`.
    FederationEnvelope,
    /// Signature input: `agent-blueprint-protocol/signature` (§6).
    Signature,
    /// Extension body schemas (a registry entry's `schema_digest`).
    ExtensionSchema,
    /// The compiled extension registry's own digest.
    ExtensionRegistry,
    /// Conformance report: `agent-blueprint-protocol/conformance-report`.
    ConformanceReport,
    /// Corpus index: `agent-blueprint-protocol/corpus-index` (§15).
    CorpusIndex,
}

impl Domain {
    /// The separator bytes.
    pub fn separator(self) -> &'static str {
        match self {
            Domain::BlueprintContent => "agent-blueprint-protocol/blueprint-content",
            Domain::DeploymentContent => "agent-blueprint-protocol/deployment-content",
            Domain::FederationEnvelope => "agent-blueprint-protocol/federation-envelope",
            Domain::Signature => "agent-blueprint-protocol/signature",
            Domain::ExtensionSchema => "agent-blueprint-protocol/extension-schema",
            Domain::ExtensionRegistry => "agent-blueprint-protocol/extension-registry",
            Domain::ConformanceReport => "agent-blueprint-protocol/conformance-report",
            Domain::CorpusIndex => "agent-blueprint-protocol/corpus-index",
        }
    }

    /// Parses the `snake_case` domain name used by case files.
    pub fn parse(s: &str) -> Option<Domain> {
        Some(match s {
            "blueprint_content" => Domain::BlueprintContent,
            "deployment_content" => Domain::DeploymentContent,
            "federation_envelope" => Domain::FederationEnvelope,
            "signature" => Domain::Signature,
            "extension_schema" => Domain::ExtensionSchema,
            "extension_registry" => Domain::ExtensionRegistry,
            "conformance_report" => Domain::ConformanceReport,
            "corpus_index" => Domain::CorpusIndex,
            _ => return None,
        })
    }
}

/// A SHA-256 digest; displays in the tagged wire form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tagged(pub [u8; 32]);

/// The only algorithm tag of this release.
pub const TAG: &str = "sha-256:";

impl Tagged {
    /// Digests `bytes` under `domain`.
    pub fn compute(domain: Domain, bytes: &[u8]) -> Tagged {
        let mut h = Sha256::new();
        h.update(domain.separator().as_bytes());
        h.update([0u8]);
        h.update(bytes);
        Tagged(h.finalize().into())
    }

    /// Parses the tagged form: unknown algorithm tag →
    /// `digest_algorithm_unsupported`; anything else malformed →
    /// `digest_encoding_invalid`.
    pub fn parse(s: &str) -> Result<Tagged> {
        let Some(body) = s.strip_prefix(TAG) else {
            let looks_tagged = s.split_once(':').is_some_and(|(alg, body)| {
                !alg.is_empty()
                    && alg.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !body.is_empty()
            });
            if looks_tagged {
                return fail(Code::DigestAlgorithmUnsupported, s, "only sha-256 is supported");
            }
            return fail(Code::DigestEncodingInvalid, s, "expected sha-256:<43 base64url characters>");
        };
        if body.len() != 43 {
            return fail(Code::DigestEncodingInvalid, s, format!("body has {} characters, expected 43", body.len()));
        }
        let bytes = crate::b64::decode(body)
            .map_err(|e| crate::error::Error::new(Code::DigestEncodingInvalid, s, e.detail().to_string()))?;
        let arr: [u8; 32] = bytes
            .try_into()
            .map_err(|_| crate::error::Error::new(Code::DigestEncodingInvalid, s, "body is not 32 bytes"))?;
        Ok(Tagged(arr))
    }

    /// Verifies that `declared` is the digest of `bytes` under `domain`.
    pub fn verify(domain: Domain, bytes: &[u8], declared: &str, subject: &str) -> Result<Tagged> {
        let want = Tagged::parse(declared)?;
        let got = Tagged::compute(domain, bytes);
        if want != got {
            return fail(Code::DigestMismatch, subject, format!("declared {want}, computed {got}"));
        }
        Ok(got)
    }
}

impl std::fmt::Display for Tagged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{TAG}{}", crate::b64::encode(&self.0))
    }
}

impl serde::Serialize for Tagged {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
