//! The invariants the fuzzer checks, shared with the corpus replay test
//! (`crates/intent/tests/fuzz_corpus.rs`), so CI runs the committed corpus
//! through exactly what the fuzzer ran. Each fuzz target uses one of the
//! checks below, so the others are dead code in its build.

#![allow(dead_code)]

use intent::frameworks::{self, CaptureContext, Framework};

/// Decodes `data`; a document that decodes is either refused with a typed
/// error or canonicalized to a fixed point (its canonical form decodes to
/// an equal value with the same canonical form). Validation, acceptance and
/// vector verification never panic.
pub fn check(data: &[u8]) {
    let Ok(v) = intent::parse(data) else { return };
    match intent::canonicalize(&v) {
        Ok(c) => {
            assert!(c.intent_hash.starts_with("sha256:") && c.intent_hash.len() == 71);
            let again = intent::parse(c.canonical_json.as_bytes()).expect("the canonical form decodes");
            assert!(again == v, "the canonical form decodes to the same value");
            let c2 = intent::canonicalize(&again).expect("the canonical form canonicalizes");
            assert_eq!(c2, c, "canonicalization is a fixed point");
        }
        Err(e) => assert!(!e.code().is_empty()),
    }
    let _ = intent::accept(&v);
    let _ = intent::verify::verify_document(&v);
}

/// The project's framework vector for `framework` (its capture context and
/// record), compiled in so the fuzzer needs no files.
fn framework_vector(framework: Framework) -> intent::Value {
    let text = match framework {
        Framework::OpenAi => include_str!("../../../../conformance/intent/frameworks/openai.json"),
        Framework::Vercel => include_str!("../../../../conformance/intent/frameworks/vercel.json"),
        Framework::LangChain => include_str!("../../../../conformance/intent/frameworks/langchain.json"),
        Framework::Mcp => include_str!("../../../../conformance/intent/frameworks/mcp.json"),
    };
    intent::parse(text.as_bytes()).expect("the framework vector decodes")
}

fn member<'a>(doc: &'a intent::Value, key: &str) -> Option<&'a intent::Value> {
    doc.as_object().and_then(|o| o.get(key))
}

/// The first byte picks the framework (`0`..`3` in ASCII: openai, vercel,
/// langchain, mcp).
fn split(data: &[u8]) -> Option<(Framework, intent::Value)> {
    let (&selector, rest) = data.split_first()?;
    let framework = Framework::ALL[usize::from(selector) % Framework::ALL.len()];
    Some((framework, intent::parse(rest).ok()?))
}

/// A captured record's binding is accepted, hashes as captured, holds the
/// proposal's parameters as its action's, and the record was not another
/// framework's.
fn check_captured(framework: Framework, record: &intent::Value, c: &frameworks::RecordCapture) {
    let again = intent::accept(&c.captured.binding).expect("a captured binding is accepted");
    assert_eq!(again.intent_hash, c.captured.intent_hash);
    assert_eq!(again.canonical_json, c.captured.canonical_json);
    let parameters = intent::Value::Object(c.proposal.parameters.clone());
    assert!(c.captured.binding.pointer_dotted("action.parameters") == Some(&parameters));
    assert!(frameworks::detect(record).is_none_or(|f| f == framework));
}

/// Decodes a framework record (first byte: the framework) and captures it
/// under that framework's vector context: a typed refusal or an accepted
/// binding, never a panic.
pub fn check_record(data: &[u8]) {
    let Some((framework, record)) = split(data) else { return };
    let doc = framework_vector(framework);
    let ctx = CaptureContext::from_members(framework, member(&doc, "tool_binding"), member(&doc, "trusted_context"))
        .expect("the vector's context decodes");
    match frameworks::capture_record(framework, &record, &ctx) {
        Ok(c) => check_captured(framework, &record, &c),
        Err(e) => assert!(!e.code().is_empty()),
    }
}

/// Decodes a capture context (first byte: the framework) and, when it
/// decodes, captures that framework's vector record under it.
pub fn check_capture_context(data: &[u8]) {
    let Some((framework, value)) = split(data) else { return };
    let ctx = match CaptureContext::from_value(framework, &value) {
        Ok(ctx) => ctx,
        Err(e) => {
            assert_eq!(e.code(), "CAPTURE_CONTEXT_INVALID");
            return;
        }
    };
    let doc = framework_vector(framework);
    let record = member(&doc, "record").expect("the vector has a record");
    match frameworks::capture_record(framework, record, &ctx) {
        Ok(c) => check_captured(framework, record, &c),
        Err(e) => assert!(!e.code().is_empty()),
    }
}
