//! §7 conformance, offline: given a vector (or a bare binding), recompute
//! the canonical bytes and the hash and say whether they agree.
//!
//! Document kinds:
//! - a **binding vector** `{binding, canonical_json?, intent_hash?, mutations?}`
//!   whose binding has a `protocol_version` (§7.3: it must also be accepted
//!   under §3), optionally with mutations (§7.4: each reproduces, and no two
//!   hashes across the base and the mutations are equal);
//! - a **canonicalization vector**: the same wrapper around any other JSON
//!   object (§7: only the bytes and the hash are pinned);
//! - a **framework vector** (§8): a binding vector that also carries the
//!   framework's `record`, the operator's `tool_binding` and the
//!   `trusted_context`; the adapter ([`crate::frameworks`]) must derive the
//!   same binding from them (a vector without `tool_binding`, the
//!   reference's shape, is checked from its binding only);
//! - a **refusal vector** `{refusal: CODE, binding | binding_text | proposal
//!   | record}`: the input must be refused with that code (this project's
//!   negative vectors for §3 and §8);
//! - a **suite** `{cases: [vector, ...]}`: every case must pass;
//! - a **bare binding** (an object with `protocol_version`): its bytes and
//!   hash are computed for the caller to compare (not pinned).

use serde::Serialize;

use crate::binding::{self, Proposal};
use crate::canonical::{self, Canonical};
use crate::error::IntentError;
use crate::frameworks;
use crate::parse;
use crate::value::Value;

/// One thing that did not reproduce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What did not reproduce: a stable code (`CANONICAL_MISMATCH`, `HASH_MISMATCH`,
    /// `MUTATION_NOT_DISTINCT`, `REFUSAL_CODE_MISMATCH`, …).
    pub code: &'static str,
    /// The mutation's path or case index, or the place in the binding; `None` for the base.
    pub path: Option<String>,
    /// What the document pinned (or what it should have held), where it says.
    pub expected: Option<String>,
    /// What this implementation computed instead, where it computed anything.
    pub computed: Option<String>,
}

/// What kind of document was verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A binding vector, or a bare binding: a whole binding (with
    /// `protocol_version`), also accepted under §3 (§7.3), with its mutations (§7.4).
    Binding,
    /// A canonicalization vector: any other JSON object, only its bytes and hash pinned (§7).
    Canonical,
    /// A refusal vector: the input must be refused with the named code.
    Refusal,
    /// A suite of cases, each verified as its own document.
    Suite,
    /// None of those; never `ok`.
    Unrecognised,
}

/// The verdict on one document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// What kind of document it was.
    pub kind: Kind,
    /// Whether everything reproduced (no finding, and a document of a known kind).
    pub ok: bool,
    /// Whether the document pinned a hash (or a refusal) to reproduce.
    pub pinned: bool,
    /// The base binding's canonical form (§4), as computed here.
    pub canonical_json: Option<String>,
    /// The base binding's intent hash (§5), as computed here.
    pub intent_hash: Option<String>,
    /// Mutations checked (§7.4).
    pub mutations: usize,
    /// Distinct hashes across the base and its mutations.
    pub hashes: usize,
    /// Cases of a suite.
    pub cases: usize,
    /// Whether the binding was also derived from the vector's framework
    /// record through this crate's adapter (§8), and matched.
    pub derived: bool,
    /// Everything that did not reproduce; empty when `ok`.
    pub findings: Vec<Finding>,
}

impl Report {
    fn new(kind: Kind) -> Self {
        Self {
            kind,
            ok: false,
            pinned: false,
            canonical_json: None,
            intent_hash: None,
            mutations: 0,
            hashes: 0,
            cases: 0,
            derived: false,
            findings: Vec::new(),
        }
    }

    fn finish(mut self) -> Self {
        self.ok = self.findings.is_empty() && self.kind != Kind::Unrecognised;
        self
    }

    fn finding(
        &mut self,
        code: &'static str,
        path: Option<String>,
        expected: Option<String>,
        computed: Option<String>,
    ) {
        self.findings.push(Finding { code, path, expected, computed });
    }
}

fn describe(e: &IntentError) -> String {
    format!("{}: {e}", e.code())
}

/// Verifies one JSON text (a vector file's bytes). A file that is not JSON
/// is an error, not a finding: the caller reports it as unreadable.
pub fn verify_bytes(bytes: &[u8]) -> Result<Report, IntentError> {
    Ok(verify_document(&parse::parse(bytes)?))
}

/// Verifies one decoded document.
pub fn verify_document(doc: &Value) -> Report {
    let Some(obj) = doc.as_object() else {
        return unrecognised();
    };
    if obj.contains_key("refusal") {
        return verify_refusal(doc);
    }
    if let Some(cases) = obj.get("cases") {
        return verify_suite(cases);
    }
    match obj.get("binding") {
        Some(b @ Value::Object(_)) => verify_vector(doc, b, true),
        None if obj.contains_key("protocol_version") => verify_vector(doc, doc, false),
        Some(_) | None => unrecognised(),
    }
}

fn unrecognised() -> Report {
    let mut r = Report::new(Kind::Unrecognised);
    r.finding("DOCUMENT_UNRECOGNISED", None, Some("a vector, a refusal vector, a suite or a binding".into()), None);
    r.finish()
}

fn verify_suite(cases: &Value) -> Report {
    let mut r = Report::new(Kind::Suite);
    r.pinned = true;
    let Some(items) = cases.as_array() else {
        r.finding("SUITE_INVALID", None, Some("cases to be an array".into()), None);
        return r.finish();
    };
    r.cases = items.len();
    for (i, case) in items.iter().enumerate() {
        let sub = verify_document(case);
        for f in sub.findings {
            let path = Some(match f.path {
                Some(p) => format!("cases[{i}] {p}"),
                None => format!("cases[{i}]"),
            });
            r.findings.push(Finding { path, ..f });
        }
    }
    r.finish()
}

/// The outcome of running a refusal vector's input through the rule it names.
fn attempt(obj: &crate::value::Object) -> Result<Result<(), IntentError>, &'static str> {
    if let Some(p) = obj.get("proposal") {
        return Ok(Proposal::from_value(p).map(|_| ()));
    }
    if obj.contains_key("record") {
        return frameworks::capture_vector(obj)
            .map(|r| r.map(|_| ()))
            .ok_or("a record with its framework, tool_binding and trusted_context");
    }
    let subject = obj.get("subject").and_then(Value::as_str).unwrap_or("binding");
    let decoded;
    let input = match (obj.get("binding"), obj.get("binding_text").and_then(Value::as_str)) {
        (Some(b), None) => b,
        (None, Some(text)) => match parse::parse_str(text) {
            Ok(v) => {
                decoded = v;
                &decoded
            }
            Err(e) => return Ok(Err(e)),
        },
        _ => return Err("exactly one of binding, binding_text or proposal"),
    };
    match subject {
        "binding" => Ok(binding::accept(input).map(|_| ())),
        "canonical" => Ok(canonical::canonicalize(input).map(|_| ())),
        _ => Err("subject to be \"binding\" or \"canonical\""),
    }
}

fn verify_refusal(doc: &Value) -> Report {
    let mut r = Report::new(Kind::Refusal);
    r.pinned = true;
    let Some(obj) = doc.as_object() else {
        return unrecognised();
    };
    let Some(code) = obj.get("refusal").and_then(Value::as_str) else {
        r.finding("REFUSAL_VECTOR_INVALID", None, Some("refusal to be a code string".into()), None);
        return r.finish();
    };
    match attempt(obj) {
        Err(what) => r.finding("REFUSAL_VECTOR_INVALID", None, Some(what.into()), None),
        Ok(Ok(())) => r.finding("REFUSAL_NOT_REFUSED", None, Some(code.into()), Some("accepted".into())),
        Ok(Err(e)) if e.code() == code => {}
        Ok(Err(e)) => r.finding("REFUSAL_CODE_MISMATCH", None, Some(code.into()), Some(describe(&e))),
    }
    r.finish()
}

/// Canonical form and hash of a vector's binding: a whole binding (one
/// that has `protocol_version`) must also be accepted under §3.
fn compute(binding: &Value, whole: bool) -> (Result<Canonical, IntentError>, Option<IntentError>) {
    let c = canonical::canonicalize(binding);
    let rules = if whole && c.is_ok() { binding::validate(binding).err() } else { None };
    (c, rules)
}

fn is_whole_binding(v: &Value) -> bool {
    v.as_object().is_some_and(|o| o.contains_key("protocol_version"))
}

fn verify_vector(doc: &Value, binding: &Value, wrapped: bool) -> Report {
    let whole = is_whole_binding(binding);
    let mut r = Report::new(if whole { Kind::Binding } else { Kind::Canonical });
    let (base, rules) = compute(binding, whole);
    let base = match base {
        Ok(b) => b,
        Err(e) => {
            r.finding("BINDING_INVALID", None, Some("a bounded JSON object".into()), Some(describe(&e)));
            return r.finish();
        }
    };
    if let Some(e) = rules {
        r.finding("BINDING_INVALID", None, Some("a binding accepted under §3".into()), Some(describe(&e)));
    }
    let field = |name: &str| if wrapped { doc.as_object().and_then(|o| o.get(name)) } else { None };
    if let Some(expected) = field("canonical_json") {
        if expected.as_js_string().is_none_or(|e| e != base.canonical_json.as_str()) {
            r.finding("CANONICAL_MISMATCH", None, Some(show(expected)), Some(base.canonical_json.clone()));
        }
    }
    if let Some(expected) = field("intent_hash") {
        r.pinned = true;
        if expected.as_str() != Some(base.intent_hash.as_str()) {
            r.finding("HASH_MISMATCH", None, Some(show(expected)), Some(base.intent_hash.clone()));
        }
    }
    let mut hashes = vec![base.intent_hash.clone()];
    if let Some(m) = field("mutations") {
        match m.as_array() {
            Some(items) => {
                r.mutations = items.len();
                for (i, mutation) in items.iter().enumerate() {
                    verify_mutation(&mut r, binding, whole, i, mutation, &mut hashes);
                }
            }
            None => r.finding("MUTATION_INVALID", None, Some("mutations to be an array".into()), None),
        }
    }
    r.hashes = hashes.len();
    if let Some(derived) = doc.as_object().filter(|_| wrapped).and_then(frameworks::capture_vector) {
        check_derived(&mut r, derived, &base);
    }
    r.canonical_json = Some(base.canonical_json);
    r.intent_hash = Some(base.intent_hash);
    r.finish()
}

/// §8: a framework vector that carries its record and tool binding must
/// also be what the adapter makes of them.
fn check_derived(r: &mut Report, derived: Result<frameworks::RecordCapture, IntentError>, base: &Canonical) {
    match derived {
        Err(e) => r.finding(
            "FRAMEWORK_NOT_DERIVED",
            Some("record".into()),
            Some(base.intent_hash.clone()),
            Some(describe(&e)),
        ),
        Ok(c) if c.captured.canonical_json != base.canonical_json => r.finding(
            "FRAMEWORK_BINDING_MISMATCH",
            Some("record".into()),
            Some(base.canonical_json.clone()),
            Some(c.captured.canonical_json),
        ),
        Ok(_) => r.derived = true,
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.as_str().map_or_else(|| s.to_string(), str::to_owned),
        other => canonical::canonical_json(other).unwrap_or_else(|_| format!("<{}>", other.type_name())),
    }
}

fn verify_mutation(
    r: &mut Report,
    base: &Value,
    whole: bool,
    index: usize,
    mutation: &Value,
    hashes: &mut Vec<String>,
) {
    let m = mutation.as_object();
    let path = m.and_then(|o| o.get("path")).and_then(Value::as_str);
    let label = path.map_or_else(|| format!("#{index}"), str::to_owned);
    let (Some(m), Some(mb @ Value::Object(_))) = (m, m.and_then(|o| o.get("binding"))) else {
        r.finding("MUTATION_INVALID", Some(label), Some("an object with a binding".into()), None);
        return;
    };
    let (c, rules) = compute(mb, whole);
    let c = match c {
        Ok(c) => c,
        Err(e) => {
            r.finding("MUTATION_INVALID", Some(label), Some("a bounded JSON object".into()), Some(describe(&e)));
            return;
        }
    };
    if let Some(e) = rules {
        r.finding(
            "MUTATION_INVALID",
            Some(label.clone()),
            Some("a binding accepted under §3".into()),
            Some(describe(&e)),
        );
    }
    if let Some(expected) = m.get("canonical_json") {
        if expected.as_js_string().is_none_or(|e| e != c.canonical_json.as_str()) {
            r.finding(
                "MUTATION_CANONICAL_MISMATCH",
                Some(label.clone()),
                Some(show(expected)),
                Some(c.canonical_json.clone()),
            );
        }
    }
    match m.get("intent_hash") {
        Some(expected) if expected.as_str() == Some(c.intent_hash.as_str()) => {}
        Some(expected) => {
            r.finding("MUTATION_HASH_MISMATCH", Some(label.clone()), Some(show(expected)), Some(c.intent_hash.clone()));
        }
        None => r.finding("MUTATION_INVALID", Some(label.clone()), Some("a pinned intent_hash".into()), None),
    }
    if hashes.contains(&c.intent_hash) {
        r.finding("MUTATION_NOT_DISTINCT", Some(label.clone()), None, Some(c.intent_hash.clone()));
    }
    hashes.push(c.intent_hash);
    // The mutation must be what it says: one property, the named one, changed.
    if let Some(p) = path {
        let keys: Vec<&str> = p.split('.').collect();
        let before = base.pointer_dotted(p);
        let after = mb.pointer_dotted(p);
        if before == after {
            r.finding("MUTATION_PATH_UNCHANGED", Some(label.clone()), None, None);
        }
        if let Some(v) = m.get("value") {
            if after != Some(v) {
                r.finding("MUTATION_VALUE_MISMATCH", Some(label.clone()), Some(show(v)), after.map(show));
            }
        }
        if with_value_at(mb, &keys, before).as_ref() != Some(base) {
            r.finding(
                "MUTATION_NOT_SINGLE_PROPERTY",
                Some(label),
                Some(format!("only {p} to differ from the base")),
                None,
            );
        }
    }
}

/// `v` with the property at `keys` set to `new` (or removed when `None`);
/// `None` when a parent on the way is not an object.
fn with_value_at(v: &Value, keys: &[&str], new: Option<&Value>) -> Option<Value> {
    let mut out = v.clone();
    let (last, parents) = keys.split_last()?;
    let mut cur = &mut out;
    for k in parents {
        cur = cur.as_object_mut()?.get_mut(k)?;
    }
    let obj = cur.as_object_mut()?;
    match new {
        Some(n) => {
            obj.insert(*last, n.clone());
        }
        None => {
            obj.remove(last);
        }
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// §7.3 reads "a whole binding (`protocol_version` present)": a vector
    /// whose binding names another version is a binding, and is refused
    /// (docs/decisions.md, intent), not treated as a canonicalization case.
    #[test]
    fn s7_3_vector_with_another_protocol_version_is_a_refused_binding() {
        let doc = parse::parse(br#"{"binding":{"protocol_version":"agent-safe.intent/2","x":1}}"#).unwrap();
        let r = verify_document(&doc);
        assert_eq!(r.kind, Kind::Binding);
        assert!(!r.ok);
        assert_eq!(r.findings[0].code, "BINDING_INVALID");
        assert!(r.findings[0].computed.as_deref().unwrap().starts_with("PROTOCOL_VERSION_UNSUPPORTED"));
    }

    #[test]
    fn s7_document_that_is_no_vector_is_unrecognised() {
        for text in [&b"[1]"[..], br#"{"a":1}"#, br#"{"binding":[1]}"#] {
            let r = verify_document(&parse::parse(text).unwrap());
            assert_eq!(r.kind, Kind::Unrecognised);
            assert!(!r.ok);
        }
    }

    #[test]
    fn s3_refusal_vector_that_is_accepted_fails() {
        let doc = parse::parse(br#"{"refusal":"INTENT_TOO_DEEP","subject":"canonical","binding":{"a":1}}"#).unwrap();
        let r = verify_document(&doc);
        assert!(!r.ok);
        assert_eq!(r.findings[0].code, "REFUSAL_NOT_REFUSED");
        let doc =
            parse::parse(br#"{"refusal":"INTENT_TOO_DEEP","subject":"canonical","binding":{"__proto__":1}}"#).unwrap();
        assert_eq!(verify_document(&doc).findings[0].code, "REFUSAL_CODE_MISMATCH");
    }
}
