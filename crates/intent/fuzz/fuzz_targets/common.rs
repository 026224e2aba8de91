//! The invariants the fuzzer checks, shared with the corpus replay test
//! (`crates/intent/tests/fuzz_corpus.rs`), so CI runs the committed corpus
//! through exactly what the fuzzer ran.

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
