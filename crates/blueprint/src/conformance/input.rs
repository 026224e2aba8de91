//! Case-input readers shared by the surface families: the reference's input
//! forms (`text` / `base64url` / `non_binary` bytes, `bounds` overrides, key
//! lists) and the output-map helpers.

use crate::b64;
use crate::error::{fail, Code, Error, Result};
use crate::json::{Map, Value};
use crate::limits::Limits;
use crate::signature::KeySet;

/// The decoder limits of a case: `input.bounds` overrides, else the defaults.
pub fn limits_of(input: &Value) -> Result<Limits> {
    match input.get("bounds") {
        None => Ok(Limits::default()),
        Some(b) => Limits::new(b),
    }
}

/// The input bytes: `text` (UTF-8) or `base64url`; `non_binary` is the
/// reference's marker for "the caller passed something that is not bytes".
pub fn bytes_of(input: &Value) -> Result<Vec<u8>> {
    if let Some(Value::String(t)) = input.get("text") {
        return Ok(t.as_bytes().to_vec());
    }
    if let Some(Value::String(b)) = input.get("base64url") {
        return b64::decode(b);
    }
    match input.get("non_binary").or_else(|| input.get("text")) {
        Some(other) => fail(Code::InvalidType, "$", format!("expected bytes, got {}", other.kind())),
        None => fail(Code::InvalidType, "input", "no text, base64url or non_binary input"),
    }
}

/// A required text member (`invalid_type` when absent or not a string).
pub fn text<'a>(input: &'a Value, k: &str) -> Result<&'a str> {
    input.get(k).and_then(Value::as_str).ok_or_else(|| Error::new(Code::InvalidType, k, "expected text"))
}

/// Trusted keys: the reference's list `[{key_id, key}]`, or the map
/// `{kid: key}` of this project's older cases. Absent: no key.
pub fn keys_of(input: &Value) -> Result<KeySet> {
    match input.get("keys") {
        None => Ok(KeySet::new()),
        Some(list @ Value::Array(_)) => KeySet::from_list(list, "keys"),
        Some(Value::Object(m)) => {
            let mut ks = KeySet::new();
            for (kid, x) in m.iter() {
                let raw = b64::decode(x.as_str().unwrap_or_default())?;
                let key: [u8; 32] = raw
                    .try_into()
                    .map_err(|_| Error::new(Code::SignatureKeyUnsupported, kid, "an Ed25519 public key is 32 bytes"))?;
                ks.insert(kid.clone(), key);
            }
            Ok(ks)
        }
        Some(other) => fail(Code::InvalidType, "keys", format!("expected a key list, got {}", other.kind())),
    }
}

/// A list of strings as a JSON array.
pub fn strings(list: &[String]) -> Value {
    Value::Array(list.iter().map(Value::str).collect())
}

/// An output map from `(name, value)` pairs.
pub fn out(pairs: Vec<(&str, Value)>) -> Map {
    Map::from_pairs(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}
