//! One document as a person opens it: what it is, its canonical form (§4)
//! and intent hash (§5), or the refusal with the rule it enforces (§3).
//! `jcp intent hash` and the console's Intent panel both print this, so the
//! two cannot disagree.

use serde::Serialize;

use crate::{IntentError, Value};

/// What was hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// A binding (an object with `protocol_version`): §3 rules applied, then §4, §5.
    Binding,
    /// Any other JSON value: §3 bounds and §4 only (a canonicalization case).
    Canonical,
}

/// A refusal: its stable code, the rule it enforces, and where/what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The code (`BINDING_UNKNOWN_KEY`, `JSON_SYNTAX`, …).
    pub code: &'static str,
    /// The rule, with its section.
    pub rule: &'static str,
    /// What was wrong and where (a JSON path or a byte offset).
    pub message: String,
}

impl From<&IntentError> for Refusal {
    fn from(e: &IntentError) -> Self {
        Self { code: e.code(), rule: e.rule(), message: e.to_string() }
    }
}

/// A document inspected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Inspection {
    /// What was hashed.
    pub kind: Subject,
    /// The canonical form, absent when refused.
    pub canonical_json: Option<String>,
    /// Its intent hash, absent when refused.
    pub intent_hash: Option<String>,
    /// Why it was refused.
    pub refusal: Option<Refusal>,
}

/// The document a file stands for: a vector's `binding` (an object without
/// `protocol_version` that carries one), otherwise the document itself.
pub fn subject(parsed: &Value) -> &Value {
    match parsed.as_object().filter(|o| !o.contains_key("protocol_version")).and_then(|o| o.get("binding")) {
        Some(b @ Value::Object(_)) => b,
        _ => parsed,
    }
}

/// Inspects a parsed document (its [`subject`]).
pub fn inspect_value(parsed: &Value) -> Inspection {
    let doc = subject(parsed);
    let whole = doc.as_object().is_some_and(|o| o.contains_key("protocol_version"));
    let kind = if whole { Subject::Binding } else { Subject::Canonical };
    match if whole { crate::accept(doc) } else { crate::canonicalize(doc) } {
        Ok(c) => {
            Inspection { kind, canonical_json: Some(c.canonical_json), intent_hash: Some(c.intent_hash), refusal: None }
        }
        Err(e) => Inspection { kind, canonical_json: None, intent_hash: None, refusal: Some(Refusal::from(&e)) },
    }
}

/// Parses and inspects bytes; a document that does not decode is refused
/// with the byte offset it failed at.
pub fn inspect(bytes: &[u8]) -> Result<(Value, Inspection), Refusal> {
    let parsed = crate::parse(bytes).map_err(|e| Refusal::from(&e))?;
    let i = inspect_value(&parsed);
    Ok((parsed, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_refusal_names_code_rule_and_path() {
        let (_, i) = inspect(br#"{"protocol_version":"agent-safe.intent/1","extra":1}"#).unwrap();
        let r = i.refusal.unwrap();
        assert_eq!(r.code, "BINDING_UNKNOWN_KEY");
        assert!(r.rule.starts_with("§3"), "{}", r.rule);
        assert!(i.intent_hash.is_none(), "a refused binding has no hash shown");
    }

    #[test]
    fn s4_decode_error_is_refused_with_its_offset() {
        let r = inspect(b"{\"a\":1,}").unwrap_err();
        assert_eq!(r.code, "JSON_SYNTAX");
        assert!(r.message.contains("at byte 7"), "{}", r.message);
    }

    #[test]
    fn s5_a_vector_is_inspected_by_its_binding() {
        let (_, i) = inspect(br#"{"name":"v","binding":{"b":1,"a":2}}"#).unwrap();
        assert_eq!(i.kind, Subject::Canonical);
        assert_eq!(i.canonical_json.as_deref(), Some(r#"{"a":2,"b":1}"#));
    }
}
