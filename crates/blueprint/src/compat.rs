//! Compatibility (spec §10): build identities are exact or an error.

use crate::error::{fail, Code, Error, Result};
use crate::json::Value;

/// One exact build identity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Identity {
    /// What is identified (`package`, `image`, …); with `name` it keys the entry (no duplicates).
    pub kind: String,
    /// The component's name within its kind.
    pub name: String,
    /// An exact version: a range expression denies `compatibility_identity_inexact`.
    pub version: String,
    /// The component's tagged content digest.
    pub digest: String,
}

fn field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// Checks a `build_identities` list: exact versions, no duplicate (kind, name).
pub fn check_identities(list: &[Value]) -> Result<Vec<Identity>> {
    let mut out: Vec<Identity> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let id = Identity {
            kind: field(v, "kind").to_string(),
            name: field(v, "name").to_string(),
            version: field(v, "version").to_string(),
            digest: field(v, "digest").to_string(),
        };
        if let Err((code, why)) = crate::artifact::exact_version(&id.version) {
            return fail(code, format!("/build_identities/{i}/version"), why);
        }
        if out.iter().any(|o| o.kind == id.kind && o.name == id.name) {
            return fail(
                Code::CompatibilityDuplicateEntry,
                format!("/build_identities/{i}"),
                format!("{}/{} appears twice", id.kind, id.name),
            );
        }
        out.push(id);
    }
    Ok(out)
}

/// `verify_compatibility/2`: every `required` identity (kind, name, version,
/// digest) must appear exactly in the deployment's `build_identities`.
pub fn verify_compatibility(deployment: &Value, required: &[Identity]) -> Result<()> {
    let list = deployment.get("build_identities").and_then(Value::as_array).unwrap_or_default();
    let have = check_identities(list)?;
    for (i, r) in required.iter().enumerate() {
        if let Err((code, why)) = crate::artifact::exact_version(&r.version) {
            return fail(code, format!("required/{i}/version"), why);
        }
        match have.iter().find(|h| h.kind == r.kind && h.name == r.name) {
            None => {
                return fail(
                    Code::CompatibilityEntryMissing,
                    format!("required/{i}"),
                    format!("{}/{} is not in build_identities", r.kind, r.name),
                );
            }
            Some(h) if h.version != r.version || h.digest != r.digest => {
                return fail(
                    Code::CompatibilityIdentityInexact,
                    format!("required/{i}"),
                    format!(
                        "{}/{}: have {}@{}, require {}@{}",
                        r.kind, r.name, h.version, h.digest, r.version, r.digest
                    ),
                );
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn observed_identity(v: &Value, at: &str) -> Result<Identity> {
    let m = v.as_object().ok_or_else(|| Error::new(Code::InvalidType, at, "expected {kind, name, version, digest}"))?;
    let get = |k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Error::new(Code::InvalidType, format!("{at}/{k}"), "expected a string"))
    };
    if m.len() != 4 {
        return fail(Code::InvalidType, at, "an identity has exactly kind, name, version and digest");
    }
    Ok(Identity { kind: get("kind")?, name: get("name")?, version: get("version")?, digest: get("digest")? })
}

/// `Compatibility.verify(deployment, observed)` in the reference's form:
/// `observed` is the host's list of resolved identities. Every manifest
/// `build_identities` entry needs exactly one observed identity with the
/// exact `(kind, name, version, digest)` tuple: none is
/// `compatibility_entry_missing`, two are `compatibility_duplicate_entry`;
/// a range on either side is `compatibility_identity_inexact`; a malformed
/// observed entry is `invalid_type`. Observed identities the manifest does
/// not name are evidence-neutral. Returns the verified identities.
pub fn verify_observed(deployment: &Value, observed: &[Value]) -> Result<Vec<Identity>> {
    let manifest = match deployment.get("build_identities") {
        Some(Value::Array(a)) if a.is_empty() => {
            return fail(Code::InvalidCardinality, "/build_identities", "a manifest names at least one build identity")
        }
        Some(Value::Array(a)) => check_identities(a)?,
        Some(_) => return fail(Code::InvalidType, "/build_identities", "expected an array"),
        None => return fail(Code::MissingRequiredField, "/build_identities", "absent"),
    };
    let mut seen = Vec::new();
    for (i, v) in observed.iter().enumerate() {
        let at = format!("identities/{i}");
        let id = observed_identity(v, &at)?;
        if let Err((code, why)) = crate::artifact::exact_version(&id.version) {
            return fail(code, format!("{at}/version"), why);
        }
        seen.push(id);
    }
    for (i, want) in manifest.iter().enumerate() {
        let at = format!("/build_identities/{i}");
        match seen.iter().filter(|o| *o == want).count() {
            0 => {
                return fail(
                    Code::CompatibilityEntryMissing,
                    at,
                    format!(
                        "no observed identity is exactly {}/{}@{} {}",
                        want.kind, want.name, want.version, want.digest
                    ),
                )
            }
            1 => {}
            n => {
                return fail(
                    Code::CompatibilityDuplicateEntry,
                    at,
                    format!("{n} observed identities match {}/{}", want.kind, want.name),
                )
            }
        }
    }
    Ok(manifest)
}
