//! Compatibility (spec §10): build identities are exact or an error.

use crate::error::{fail, Code, Result};
use crate::json::Value;

/// One exact build identity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Identity {
    pub kind: String,
    pub name: String,
    pub version: String,
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
    let list = deployment
        .get("build_identities")
        .and_then(Value::as_array)
        .unwrap_or_default();
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
