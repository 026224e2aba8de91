//! The artifact surfaces: `blueprint.decode`, `deployment.decode`,
//! `signature.verify`, `schema.validate_instance`.

use super::input::{bytes_of, keys_of, limits_of, out};
use crate::artifact;
use crate::binding::{self, BindingInputs};
use crate::error::{fail, Code, Error, Result};
use crate::json::{self, Map, Value};
use crate::limits::Limits;
use crate::schema;
use crate::signature::{self, KeySet};

pub(super) fn execute(surface: &str, input: &Value) -> Option<Result<Map>> {
    Some(match surface {
        "blueprint.decode" => blueprint_decode(input),
        "deployment.decode" => deployment_decode(input),
        "signature.verify" => signature_verify(input),
        "schema.validate_instance" => schema_validate_instance(input),
        _ => return None,
    })
}

fn blueprint_decode(input: &Value) -> Result<Map> {
    let a = artifact::decode_blueprint(&bytes_of(input)?, &limits_of(input)?)?;
    Ok(out(vec![("digest", Value::str(a.digest.to_string()))]))
}

fn deployment_decode(input: &Value) -> Result<Map> {
    let limits = limits_of(input)?;
    let a = artifact::decode_deployment(&bytes_of(input)?, &limits)?;
    if let Some(b) = input.get("binding") {
        let text = b
            .get("blueprint")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::new(Code::InvalidType, "binding.blueprint", "expected text"))?;
        let bp = artifact::decode_blueprint(text.as_bytes(), &limits)?;
        let inputs = BindingInputs {
            now: b.get("now").and_then(Value::as_str).map(str::to_string),
            max_attestation_age_ms: b.get("max_attestation_age_ms").and_then(Value::as_i64),
            descriptors: b
                .get("descriptors")
                .and_then(Value::as_object)
                .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))).collect())
                .unwrap_or_default(),
        };
        binding::verify_binding(&a, &bp, &inputs)?;
    }
    Ok(out(vec![("digest", Value::str(a.digest.to_string()))]))
}

/// The reference's form: `{entry: <signature entry JSON text>, keys:
/// [{key_id, key}]}` → `Signature.verify(entry, keys)`. This project's
/// artifact form `{text: <artifact>, keys}` additionally verifies every
/// signature and attestation of a decoded artifact against its own digest.
fn signature_verify(input: &Value) -> Result<Map> {
    if let Some(entry) = input.get("entry") {
        let text = entry.as_str().ok_or_else(|| Error::new(Code::InvalidType, "entry", "expected JSON text"))?;
        let entry = json::decode(text.as_bytes(), &Limits::default())?;
        let keys = match input.get("keys") {
            Some(list) => KeySet::from_list(list, "keys")?,
            None => return fail(Code::InvalidType, "keys", "expected [{key_id, key}]"),
        };
        signature::verify_signature(&entry, &keys)?;
        return Ok(out(vec![("verified", Value::Bool(true))]));
    }
    let bytes = bytes_of(input)?;
    let probe = json::decode(&bytes, &Limits::default())?;
    let kind =
        if probe.get("deployment_digest").is_some() { artifact::Kind::Deployment } else { artifact::Kind::Blueprint };
    let a = artifact::decode(kind, &bytes, &limits_of(input)?)?;
    let keys = keys_of(input)?;
    let sigs = a.get("signatures").and_then(Value::as_array).unwrap_or_default();
    let mut checks = signature::verify_all(sigs, kind.purpose(), &a.digest, &keys);
    checks.extend(signature::verify_attestations(a.get("attestations").and_then(Value::as_array).unwrap_or_default()));
    if let Some(c) = checks.iter().find(|c| !c.verified) {
        let code = c.code.as_deref().and_then(Code::parse).unwrap_or(Code::SignatureNotVerified);
        return fail(code, format!("signature[{}]", c.index), c.detail.clone());
    }
    Ok(out(vec![("verified", Value::Bool(true)), ("checks", Value::from_u64(checks.len() as u64))]))
}

/// `{schema, instance, dialect?}` → `Schema.validate_instance`.
fn schema_validate_instance(input: &Value) -> Result<Map> {
    let schema = match input.get("schema") {
        // Not an object or a boolean: `schema_invalid_shape`, from the schema check itself.
        Some(s) => s,
        None if input.get("schema_file").is_some() => {
            return fail(
                Code::InvalidType,
                "schema_file",
                "schema files of a corpus data folder are not supplied to this runner",
            )
        }
        None => return fail(Code::InvalidType, "schema", "absent"),
    };
    let instance = input.get("instance").ok_or_else(|| Error::new(Code::InvalidType, "instance", "absent"))?;
    let dialect = match input.get("dialect") {
        None => None,
        Some(Value::String(d)) => Some(d.as_str()),
        Some(_) => return fail(Code::InvalidType, "dialect", "expected a dialect URI"),
    };
    schema::validate_instance(schema, instance, dialect)?;
    Ok(out(vec![("valid", Value::Bool(true))]))
}
