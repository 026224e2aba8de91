//! The bytes-layer surfaces: `json.decode`, `canonicalization.encode`,
//! `base64url.decode`, `digest.tagged`.

use super::input::{bytes_of, limits_of, out};
use crate::b64;
use crate::canon;
use crate::digest::{Domain, Tagged};
use crate::error::{Code, Error, Result};
use crate::json::{self, Map, Value};

pub(super) fn execute(surface: &str, input: &Value) -> Option<Result<Map>> {
    Some(match surface {
        "json.decode" => json_decode(input),
        "canonicalization.encode" => canonicalization_encode(input),
        "base64url.decode" => base64url_decode(input),
        "digest.tagged" => digest_tagged(input),
        _ => return None,
    })
}

fn json_decode(input: &Value) -> Result<Map> {
    let limits = limits_of(input)?;
    let value = match input.get("non_binary") {
        Some(v) => json::decode_dynamic(v, &limits)?,
        None => json::decode(&bytes_of(input)?, &limits)?,
    };
    Ok(out(vec![("value", value)]))
}

fn canonicalization_encode(input: &Value) -> Result<Map> {
    let v = json::decode(&bytes_of(input)?, &limits_of(input)?)?;
    Ok(out(vec![("encoded", Value::str(canon::canonical_string(&v)?))]))
}

fn base64url_decode(input: &Value) -> Result<Map> {
    let s = input
        .get("base64url")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::new(Code::InvalidType, "base64url", "expected a string"))?;
    let bytes = b64::decode(s)?;
    Ok(out(vec![("decoded", Value::str(b64::encode(&bytes))), ("bytes", Value::from_u64(bytes.len() as u64))]))
}

fn digest_tagged(input: &Value) -> Result<Map> {
    if let Some(declared) = input.get("declared").and_then(Value::as_str) {
        let dn = input.get("domain").and_then(Value::as_str).unwrap_or_default();
        let domain = Domain::parse(dn)
            .ok_or_else(|| Error::new(Code::InvalidConstraint, "domain", format!("{dn:?} is not a digest domain")))?;
        let t = Tagged::verify(domain, &bytes_of(input)?, declared, "declared")?;
        return Ok(out(vec![("tagged", Value::str(t.to_string())), ("verified", Value::Bool(true))]));
    }
    let s = input
        .get("tagged")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::new(Code::InvalidType, "tagged", "expected a string"))?;
    Ok(out(vec![("tagged", Value::str(Tagged::parse(s)?.to_string()))]))
}
