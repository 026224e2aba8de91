//! Which properties make two bindings different intents (§6).
//!
//! §6: "Every property of the binding is inside the hash … A change to any
//! bound property after authorization is another intent with another hash."
//! [`compare`] walks two documents side by side and names every property
//! whose canonical form (§4) differs, so a person sees *why* two hashes
//! differ: the replica count, the cluster, the expiry, the idempotency key.
//!
//! Properties are compared by their canonical bytes, never by their text
//! as written: `-0` and `0`, or `1e2` and `100`, are the same property
//! (§4.4), while NFC and NFD forms of the same word are different ones
//! (§4.3). Two documents are the same intent exactly when they have no
//! difference, which is exactly when their intent hashes are equal.

use serde::Serialize;

use crate::canonical::{canonical_json, canonicalize, Canonical};
use crate::value::{JsString, Value};
use crate::IntentError;

/// How one property differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Present in both with different canonical values.
    Changed,
    /// Only in the second document.
    Added,
    /// Only in the first document.
    Removed,
}

/// One property that makes the two documents different intents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// Where (`$.action.parameters.replicas`, `$.context.tags[2]`).
    pub path: String,
    /// How.
    pub change: Change,
    /// Its canonical form in the first document, if there.
    pub left: Option<String>,
    /// Its canonical form in the second document, if there.
    pub right: Option<String>,
}

/// Two documents compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// The first document's canonical form and hash.
    pub left: Canonical,
    /// The second document's canonical form and hash.
    pub right: Canonical,
    /// Equal hashes: one intent.
    pub same_intent: bool,
    /// Every property that differs, in canonical key order; empty exactly when `same_intent`.
    pub differences: Vec<Difference>,
}

/// Which document of a comparison a refusal belongs to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {side} document cannot be canonicalized: {error}")]
pub struct CompareError {
    /// `first` or `second`.
    pub side: &'static str,
    /// Why.
    pub error: IntentError,
}

/// Compares two documents (bindings, or any JSON values) property by
/// property. Each must have a canonical form (§3 bounds, §4); the binding
/// rules are not applied here (a caller shows them per document with
/// [`crate::validate`]), so two refused bindings can still be compared.
pub fn compare(first: &Value, second: &Value) -> Result<Comparison, CompareError> {
    let left = canonicalize(first).map_err(|error| CompareError { side: "first", error })?;
    let right = canonicalize(second).map_err(|error| CompareError { side: "second", error })?;
    let mut differences = Vec::new();
    if left.canonical_json != right.canonical_json {
        diff("$".to_owned(), first, second, &mut differences);
    }
    let same_intent = left.intent_hash == right.intent_hash;
    Ok(Comparison { left, right, same_intent, differences })
}

/// Canonical text of a part of a document whose whole already has one (so
/// it cannot fail; a failure would be a defect, shown rather than hidden).
fn text(v: &Value) -> String {
    canonical_json(v).unwrap_or_else(|e| format!("<no canonical form: {e}>"))
}

fn key_path(parent: &str, k: &JsString) -> String {
    match k.as_str() {
        Some(t) => format!("{parent}.{t}"),
        None => format!("{parent}.{k}"),
    }
}

fn find<'a>(o: &'a crate::value::Object, k: &JsString) -> Option<&'a Value> {
    o.iter().find(|&(m, _)| m == k).map(|(_, v)| v)
}

fn diff(path: String, a: &Value, b: &Value, out: &mut Vec<Difference>) {
    match (a, b) {
        (Value::Object(left), Value::Object(right)) => {
            // Keys in canonical (UTF-16) order, each once.
            let mut keys: Vec<&JsString> =
                left.keys().chain(right.keys().filter(|key| find(left, key).is_none())).collect();
            keys.sort_by(|one, other| one.cmp_utf16(other));
            for key in keys {
                let at = key_path(&path, key);
                match (find(left, key), find(right, key)) {
                    (Some(was), Some(is)) => {
                        if text(was) != text(is) {
                            diff(at, was, is, out);
                        }
                    }
                    (Some(was), None) => {
                        out.push(Difference { path: at, change: Change::Removed, left: Some(text(was)), right: None });
                    }
                    (None, Some(is)) => {
                        out.push(Difference { path: at, change: Change::Added, left: None, right: Some(text(is)) });
                    }
                    (None, None) => {}
                }
            }
        }
        (Value::Array(left), Value::Array(right)) if left.len() == right.len() => {
            for (i, (was, is)) in left.iter().zip(right).enumerate() {
                if text(was) != text(is) {
                    diff(format!("{path}[{i}]"), was, is, out);
                }
            }
        }
        // A scalar, a change of type, or an array whose length changed: the
        // property itself differs (elements are positional, §4.5, so a
        // shorter or longer array is not a list of per-index edits).
        _ => out.push(Difference { path, change: Change::Changed, left: Some(text(a)), right: Some(text(b)) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn cmp(a: &str, b: &str) -> Comparison {
        compare(&parse(a.as_bytes()).unwrap(), &parse(b.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn s6_one_changed_property_is_named_and_the_hashes_differ() {
        let c = cmp(
            r#"{"action":{"parameters":{"replicas":3},"type":"scale"}}"#,
            r#"{"action":{"type":"scale","parameters":{"replicas":30}}}"#,
        );
        assert!(!c.same_intent);
        assert_ne!(c.left.intent_hash, c.right.intent_hash);
        assert_eq!(c.differences.len(), 1);
        let d = &c.differences[0];
        assert_eq!((d.path.as_str(), d.change), ("$.action.parameters.replicas", Change::Changed));
        assert_eq!((d.left.as_deref(), d.right.as_deref()), (Some("3"), Some("30")));
    }

    #[test]
    fn s4_key_order_and_number_spelling_are_one_intent() {
        let c = cmp(r#"{"b":-0,"a":1e2}"#, r#"{"a":100,"b":0}"#);
        assert!(c.same_intent);
        assert!(c.differences.is_empty());
    }

    #[test]
    fn s4_3_nfc_and_nfd_are_different_intents() {
        let c = cmp("{\"who\":\"caf\u{e9}\"}", "{\"who\":\"cafe\u{301}\"}");
        assert!(!c.same_intent);
        assert_eq!(c.differences[0].path, "$.who");
    }

    #[test]
    fn s6_added_removed_and_retyped_properties_are_each_named() {
        let c = cmp(r#"{"a":1,"b":{"x":[1,2]},"c":"s"}"#, r#"{"b":{"x":[1,2,3]},"c":1,"d":null}"#);
        let got: Vec<(&str, Change)> = c.differences.iter().map(|d| (d.path.as_str(), d.change)).collect();
        assert_eq!(
            got,
            vec![
                ("$.a", Change::Removed),
                ("$.b.x", Change::Changed),
                ("$.c", Change::Changed),
                ("$.d", Change::Added)
            ]
        );
    }

    #[test]
    fn s6_differences_are_empty_exactly_when_hashes_are_equal() {
        let docs =
            [r#"{"a":[1,{"b":2}]}"#, r#"{"a":[1,{"b":3}]}"#, r#"{"a":[1,{"b":2.0}]}"#, r#"{"a":[{"b":2},1]}"#, r#"{}"#];
        for x in docs {
            for y in docs {
                let c = cmp(x, y);
                assert_eq!(c.differences.is_empty(), c.same_intent, "{x} vs {y}");
            }
        }
        assert_eq!(cmp(docs[0], docs[1]).differences[0].path, "$.a[1].b");
    }

    #[test]
    fn s3_a_document_without_a_canonical_form_is_refused_naming_its_side() {
        let ok = parse(br#"{"a":1}"#).unwrap();
        let bad = parse(br#"{"__proto__":1}"#).unwrap();
        let e = compare(&ok, &bad).unwrap_err();
        assert_eq!((e.side, e.error.code()), ("second", "UNSAFE_INTENT_KEY"));
    }
}
