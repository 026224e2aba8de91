//! Detached signatures (spec §6): RFC 7515 compact serialization with the
//! RFC 7797 unencoded (`b64=false`) detached payload, Ed25519 only, verified
//! with `ed25519-dalek`'s `verify_strict`; small-order keys are refused.
//! Verify-only: no function here accepts a private key, and keys come only
//! from the host.

use std::collections::BTreeMap;

use ed25519_dalek::{Signature, VerifyingKey};

use crate::b64;
use crate::canon;
use crate::digest::Tagged;
use crate::error::{fail, Code, Error, Result};
use crate::json::{self, Value};
use crate::limits::Limits;

/// Host-supplied trusted keys by key id.
#[derive(Debug, Clone, Default)]
pub struct KeySet {
    keys: BTreeMap<String, [u8; 32]>,
}

impl KeySet {
    /// An empty set (every signature then reads `signature_key_unsupported`).
    pub fn new() -> KeySet {
        KeySet::default()
    }

    /// Adds a raw 32-byte Ed25519 public key.
    pub fn insert(&mut self, kid: impl Into<String>, key: [u8; 32]) {
        self.keys.insert(kid.into(), key);
    }

    /// Key ids.
    pub fn ids(&self) -> impl Iterator<Item = &String> {
        self.keys.keys()
    }

    /// The reference's key-list form `[{key_id, key: base64url}]` (the
    /// conformance cases' `keys`). A malformed entry is `invalid_type`.
    pub fn from_list(v: &Value, at: &str) -> Result<KeySet> {
        let list = v.as_array().ok_or_else(|| Error::new(Code::InvalidType, at, "expected [{key_id, key}]"))?;
        let mut out = KeySet::new();
        for (i, k) in list.iter().enumerate() {
            let here = format!("{at}/{i}");
            let (Some(kid), Some(x)) = (k.get("key_id").and_then(Value::as_str), k.get("key").and_then(Value::as_str))
            else {
                return fail(Code::InvalidType, here, "expected {key_id, key}");
            };
            let raw: [u8; 32] = b64::decode(x)
                .ok()
                .and_then(|r| r.try_into().ok())
                .ok_or_else(|| Error::new(Code::InvalidType, &here, "key must be 32 bytes of unpadded base64url"))?;
            out.insert(kid, raw);
        }
        Ok(out)
    }

    /// Parses a keys file: `{kid: base64url-key, ...}`, a JWK set
    /// `{keys: [{kty: "OKP", crv: "Ed25519", kid, x}]}`, or the key-list
    /// form `[{key_id, key}]`.
    pub fn from_json(bytes: &[u8]) -> Result<KeySet> {
        let v = json::decode(bytes, &Limits::default())?;
        if let Value::Array(_) = v {
            return KeySet::from_list(&v, "keys");
        }
        let mut out = KeySet::new();
        let raw = |s: &str, at: &str| -> Result<[u8; 32]> {
            let k = b64::decode(s)?;
            k.try_into().map_err(|_| Error::new(Code::SignatureKeyUnsupported, at, "an Ed25519 public key is 32 bytes"))
        };
        if let Some(Value::Array(jwks)) = v.get("keys") {
            for (i, k) in jwks.iter().enumerate() {
                let at = format!("keys/{i}");
                if k.get("kty").and_then(Value::as_str) != Some("OKP")
                    || k.get("crv").and_then(Value::as_str) != Some("Ed25519")
                {
                    return fail(Code::SignatureKeyUnsupported, at, "only OKP/Ed25519 keys");
                }
                if k.get("d").is_some() {
                    return fail(Code::SignatureKeyUnsupported, at, "private key material is never accepted");
                }
                let (Some(kid), Some(x)) = (k.get("kid").and_then(Value::as_str), k.get("x").and_then(Value::as_str))
                else {
                    return fail(Code::SignatureMalformed, at, "expected kid and x");
                };
                out.insert(kid, raw(x, &at)?);
            }
            return Ok(out);
        }
        let m = v.as_object().ok_or_else(|| Error::new(Code::InvalidType, "keys", "expected an object"))?;
        for (kid, x) in m.iter() {
            let s =
                x.as_str().ok_or_else(|| Error::new(Code::InvalidType, format!("keys/{kid}"), "expected base64url"))?;
            out.insert(kid.clone(), raw(s, kid)?);
        }
        Ok(out)
    }

    fn get(&self, kid: &str) -> Option<&[u8; 32]> {
        self.keys.get(kid)
    }
}

/// Parses a public key, refusing non-points and small-order keys.
pub fn verifying_key(bytes: &[u8; 32], kid: &str) -> Result<VerifyingKey> {
    let key = VerifyingKey::from_bytes(bytes)
        .map_err(|_| Error::new(Code::SignatureKeyUnsupported, kid, "not a valid Ed25519 point"))?;
    if key.is_weak() {
        return fail(Code::SignatureKeyUnsupported, kid, "small-order Ed25519 key");
    }
    Ok(key)
}

/// Verifies a compact JWS whose payload is supplied detached (`header..sig`)
/// or attached (`header.payload.sig`). Honors `b64` per RFC 7797 (which must
/// then be listed in `crit`); any other `crit` parameter is refused.
pub fn verify_compact(compact: &str, detached_payload: Option<&[u8]>, key: &[u8; 32]) -> Result<()> {
    let parts: Vec<&str> = compact.split('.').collect();
    let [h, p, s] = parts.as_slice() else {
        return fail(Code::SignatureMalformed, "jws", "expected three dot-separated parts");
    };
    let header = json::decode(&b64::decode(h)?, &Limits::default())?;
    let alg = header.get("alg").and_then(Value::as_str).unwrap_or_default();
    if alg != "EdDSA" {
        return fail(Code::SignatureAlgorithmUnsupported, "jws.alg", format!("{alg:?}: only EdDSA (Ed25519)"));
    }
    let crit: Vec<&str> = match header.get("crit") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(_) => return fail(Code::SignatureMalformed, "jws.crit", "expected an array"),
    };
    if crit.iter().any(|c| *c != "b64") {
        return fail(Code::SignatureMalformed, "jws.crit", "unsupported critical header parameter");
    }
    let b64_payload = match header.get("b64") {
        None => true,
        Some(Value::Bool(b)) => {
            if !crit.contains(&"b64") {
                return fail(Code::SignatureMalformed, "jws.b64", "b64 must be listed in crit (RFC 7797 §6)");
            }
            *b
        }
        Some(_) => return fail(Code::SignatureMalformed, "jws.b64", "expected a boolean"),
    };
    let mut input = h.as_bytes().to_vec();
    input.push(b'.');
    match (detached_payload, p.is_empty()) {
        (Some(payload), true) => {
            if b64_payload {
                input.extend_from_slice(b64::encode(payload).as_bytes());
            } else {
                input.extend_from_slice(payload);
            }
        }
        (None, false) => {
            if !b64_payload {
                return fail(Code::SignatureMalformed, "jws", "an unencoded payload is supplied detached here");
            }
            input.extend_from_slice(p.as_bytes());
        }
        _ => return fail(Code::SignatureMalformed, "jws", "payload must be either attached or detached"),
    }
    verify_raw(&input, s, key, "jws")
}

fn verify_raw(input: &[u8], sig_b64: &str, key: &[u8; 32], kid: &str) -> Result<()> {
    let sig = b64::decode(sig_b64).map_err(|e| Error::new(Code::SignatureMalformed, kid, e.detail().to_string()))?;
    let sig: [u8; 64] =
        sig.try_into().map_err(|_| Error::new(Code::SignatureMalformed, kid, "an Ed25519 signature is 64 bytes"))?;
    verify_bytes(input, &sig, key, kid)
}

/// Ed25519 over raw bytes: small-order keys refused, then `verify_strict`
/// (which also refuses non-canonical and small-order `R`).
pub fn verify_bytes(input: &[u8], sig: &[u8; 64], key: &[u8; 32], kid: &str) -> Result<()> {
    let vk = verifying_key(key, kid)?;
    vk.verify_strict(input, &Signature::from_bytes(sig))
        .map_err(|_| Error::new(Code::SignatureNotVerified, kid, "Ed25519 verification failed"))
}

/// The detached payload: `JCS(signed_attributes)`, unencoded (RFC 7797).
/// The JWS signing input is `BASE64URL(JCS(protected)) || "." || payload`.
/// The reference's corpus signatures verify over exactly these bytes; §6's
/// "separator, zero byte" prefix does not (docs/decisions.md, §6: the
/// corpus is the truth).
pub fn signing_payload(signed_attributes: &Value) -> Result<Vec<u8>> {
    canon::canonical_bytes(signed_attributes)
}

/// The whole signing input of a signature entry (§6 with RFC 7797):
/// `BASE64URL(JCS(protected)) || "." || JCS(signed_attributes)` — the one
/// place these bytes are built, for the signer and the verifier alike.
pub fn signing_input(protected: &Value, signed_attributes: &Value) -> Result<Vec<u8>> {
    let mut input = b64::encode(&canon::canonical_bytes(protected)?).into_bytes();
    input.push(b'.');
    input.extend_from_slice(&signing_payload(signed_attributes)?);
    Ok(input)
}

/// One signature check: evidence, never a decision.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SignatureCheck {
    /// The position in the artifact's `signatures` (or `attestations`) array.
    pub index: usize,
    /// The `kid` of the protected header: which host-supplied key it names.
    pub key_id: String,
    /// The signed purpose (`blueprint`, `deployment`, `federation-envelope`), or `attestation`.
    pub purpose: String,
    /// Whether it verified: evidence only, never an authorization.
    pub verified: bool,
    /// The §12 code of a failed check (`signature_key_unsupported`, …).
    pub code: Option<String>,
    /// What was found.
    pub detail: String,
}

const PURPOSES: &[&str] = &["blueprint", "deployment", "federation-envelope"];

fn exactly(v: &Value, names: &[&str]) -> bool {
    v.as_object().is_some_and(|m| m.len() == names.len() && names.iter().all(|n| m.contains_key(n)))
}

/// The envelope checks every entry passes before any key is used, in the
/// reference's order: the entry is exactly `{protected, signature,
/// signed_attributes}`, the header exactly `{alg, b64, crit, kid}` with
/// `alg` `EdDSA` (`signature_algorithm_unsupported` otherwise), `b64:false`,
/// `crit:["b64"]`; the signed attributes exactly the five members with
/// `algorithm` Ed25519, a tagged `content_digest`, a `Z` `created_at`, a
/// dot-free `key_id` equal to `kid` and a known `purpose`; the signature 64
/// bytes of strict base64url. Every other fault is `signature_malformed`.
/// Returns `(kid, protected, signed_attributes)`.
fn envelope(entry: &Value) -> Result<(String, &Value, &Value)> {
    let malformed = |at: &str, why: &str| Error::new(Code::SignatureMalformed, at, why);
    if !exactly(entry, &["protected", "signature", "signed_attributes"]) {
        return Err(malformed("signature", "an entry is exactly {protected, signature, signed_attributes}"));
    }
    let (Some(prot), Some(attrs)) = (entry.get("protected"), entry.get("signed_attributes")) else {
        return Err(malformed("signature", "absent members"));
    };
    if !exactly(prot, &["alg", "b64", "crit", "kid"]) {
        return Err(malformed("protected", "a header is exactly {alg, b64, crit, kid}"));
    }
    let kid = text_of(prot, "kid");
    match prot.get("alg") {
        Some(Value::String(a)) if a == "EdDSA" => {}
        Some(Value::String(a)) => {
            return fail(Code::SignatureAlgorithmUnsupported, &kid, format!("alg {a:?}: only EdDSA"))
        }
        _ => return Err(malformed(&kid, "alg is not a string")),
    }
    let crit_ok =
        prot.get("crit").and_then(Value::as_array).is_some_and(|c| c.len() == 1 && c[0].as_str() == Some("b64"));
    if prot.get("b64") != Some(&Value::Bool(false)) || !crit_ok || kid.is_empty() {
        return Err(malformed(&kid, "protected header must carry b64:false, crit:[\"b64\"] and a kid"));
    }
    if !exactly(attrs, &["algorithm", "content_digest", "created_at", "key_id", "purpose"]) {
        return Err(malformed(
            &kid,
            "signed_attributes are exactly {algorithm, content_digest, created_at, key_id, purpose}",
        ));
    }
    match attrs.get("algorithm") {
        Some(Value::String(a)) if a == "Ed25519" => {}
        Some(Value::String(a)) => {
            return fail(Code::SignatureAlgorithmUnsupported, &kid, format!("algorithm {a:?}: only Ed25519"))
        }
        _ => return Err(malformed(&kid, "algorithm is not a string")),
    }
    if Tagged::parse(&text_of(attrs, "content_digest")).is_err() {
        return Err(malformed(&kid, "content_digest is not a tagged digest"));
    }
    let created = text_of(attrs, "created_at");
    if created.len() != 20 || crate::shape::parse_timestamp_ms(&created).is_none() {
        return Err(malformed(&kid, "created_at is not YYYY-MM-DDTHH:MM:SSZ"));
    }
    let key_id = text_of(attrs, "key_id");
    if key_id.is_empty() || key_id.contains('.') || key_id != kid {
        return Err(malformed(&kid, "signed key_id must be non-empty, dot-free and equal to the header kid"));
    }
    if !PURPOSES.contains(&text_of(attrs, "purpose").as_str()) {
        return Err(malformed(&kid, "unknown purpose"));
    }
    if !matches!(entry.get("signature"), Some(Value::String(_))) {
        return Err(malformed(&kid, "signature is not a string"));
    }
    Ok((kid, prot, attrs))
}

fn text_of(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn key_for<'a>(keys: &'a KeySet, kid: &str) -> Result<&'a [u8; 32]> {
    keys.get(kid).ok_or_else(|| {
        Error::new(Code::SignatureKeyUnsupported, kid, "no host-supplied key has this key_id (no discovery is done)")
    })
}

fn verify_envelope(entry: &Value, prot: &Value, attrs: &Value, key: &[u8; 32], kid: &str) -> Result<()> {
    let input = signing_input(prot, attrs)?;
    verify_raw(&input, &text_of(entry, "signature"), key, kid)
}

/// `Signature.verify(entry, keys)`: one signature entry against a host key
/// set, over its own signed attributes only (which artifact or receipt it
/// names is the caller's binding step — see [`verify_entry`] and
/// `federation::verify_commitment`).
pub fn verify_signature(entry: &Value, keys: &KeySet) -> Result<()> {
    let (kid, prot, attrs) = envelope(entry)?;
    let key = key_for(keys, &kid)?;
    verify_envelope(entry, prot, attrs, key, &kid)
}

/// Verifies one signature entry against the artifact's `purpose` and digest.
pub fn verify_entry(entry: &Value, purpose: &str, digest: &Tagged, keys: &KeySet) -> Result<()> {
    let (kid, prot, attrs) = envelope(entry)?;
    let key = key_for(keys, &kid)?;
    if text_of(attrs, "purpose") != purpose {
        return fail(
            Code::SignatureNotVerified,
            &kid,
            format!("signed for purpose {:?}, not {purpose:?}", text_of(attrs, "purpose")),
        );
    }
    if text_of(attrs, "content_digest") != digest.to_string() {
        return fail(
            Code::SignatureNotVerified,
            &kid,
            format!("signed digest {} is not this artifact's {digest}", text_of(attrs, "content_digest")),
        );
    }
    verify_envelope(entry, prot, attrs, key, &kid)
}

/// Verifies every entry of `signatures`, producing check entries.
pub fn verify_all(signatures: &[Value], purpose: &str, digest: &Tagged, keys: &KeySet) -> Vec<SignatureCheck> {
    signatures
        .iter()
        .enumerate()
        .map(|(index, e)| {
            let key_id =
                e.get("protected").and_then(|p| p.get("kid")).and_then(Value::as_str).unwrap_or_default().to_string();
            match verify_entry(e, purpose, digest, keys) {
                Ok(()) => SignatureCheck {
                    index,
                    key_id,
                    purpose: purpose.into(),
                    verified: true,
                    code: None,
                    detail: "Ed25519 verify_strict passed".into(),
                },
                Err(err) => SignatureCheck {
                    index,
                    key_id,
                    purpose: purpose.into(),
                    verified: false,
                    code: Some(err.code()),
                    detail: err.detail().to_string(),
                },
            }
        })
        .collect()
}

/// Attestations: the same envelope plus a registered `kind`. The kind
/// registry is empty in this release, so every attestation is refused.
pub const ATTESTATION_KINDS: &[&str] = &[];

/// Checks attestations (each unverifiable kind is `attestation_malformed`).
pub fn verify_attestations(list: &[Value]) -> Vec<SignatureCheck> {
    list.iter()
        .enumerate()
        .map(|(index, a)| {
            let kind = a.get("kind").and_then(Value::as_str).unwrap_or_default();
            let key_id =
                a.get("protected").and_then(|p| p.get("kid")).and_then(Value::as_str).unwrap_or_default().to_string();
            let known = ATTESTATION_KINDS.contains(&kind);
            SignatureCheck {
                index,
                key_id,
                purpose: "attestation".into(),
                verified: false,
                code: Some(Code::AttestationMalformed.as_str().to_string()),
                detail: if known {
                    String::new()
                } else {
                    format!("attestation kind {kind:?} is not registered (the registry is empty)")
                },
            }
        })
        .collect()
}
