//! The decoder's fuzz property, shared by the cargo-fuzz target
//! (`fuzz/fuzz_targets/decode.rs`) and the corpus replay test, so CI without
//! nightly still runs the committed corpus through the same checks.

use crate::artifact::{self, Kind};
use crate::canon;
use crate::error::{Code, Error};
use crate::json::{self, Value};
use crate::limits::Limits;

fn vocab(e: &Error) -> Option<String> {
    let c = e.code();
    if Code::parse(&c).is_some() || c.starts_with("ceiling:") {
        None
    } else {
        Some(format!("code {c:?} is outside the vocabulary"))
    }
}

/// Runs every decoder over `bytes` and returns a description of the first
/// broken invariant, or `None`. Never panics on any input.
pub fn exercise(bytes: &[u8]) -> Option<String> {
    let limits = Limits::default();
    let decoded = json::decode(bytes, &limits);
    match &decoded {
        Ok(v) => {
            let c = match canon::canonical_bytes(v) {
                Ok(c) => c,
                Err(e) => return Some(format!("a decoded value failed to canonicalize: {e}")),
            };
            match canon::decode_canonical(&c, &limits) {
                Ok(v2) => {
                    if !v2.same(v) {
                        return Some("canonical form decodes to a different value".into());
                    }
                    if canon::canonical_bytes(&v2).ok().as_deref() != Some(c.as_slice()) {
                        return Some("canonicalization is not a fixed point".into());
                    }
                }
                Err(e) => return Some(format!("canonical bytes were refused: {e}")),
            }
        }
        Err(e) => {
            if let Some(v) = vocab(e) {
                return Some(v);
            }
        }
    }
    match canon::decode_canonical(bytes, &limits) {
        Ok(_) => {
            let again = decoded.as_ref().ok().and_then(|v| canon::canonical_bytes(v).ok());
            if again.as_deref() != Some(bytes) {
                return Some("canonical-first accepted non-canonical bytes".into());
            }
        }
        Err(e) => {
            if let Some(v) = vocab(&e) {
                return Some(v);
            }
        }
    }
    for kind in [Kind::Blueprint, Kind::Deployment] {
        if let Err(e) = artifact::decode(kind, bytes, &limits) {
            if let Some(v) = vocab(&e) {
                return Some(v);
            }
        }
    }
    if let Err(e) = crate::federation::decode_envelope(bytes, &limits) {
        if let Some(v) = vocab(&e) {
            return Some(v);
        }
    }
    if let Ok(v) = &decoded {
        let support = crate::negotiation::Support::this_release();
        let results = [
            crate::negotiation::negotiate(v, &support).err(),
            Limits::new(v).err(),
            crate::bounds::intersect_value(v).err(),
            crate::schema::check_schema(v, "$").err(),
            crate::predicate::Predicate::compile(v, None, "$").err(),
            crate::conformance::parse_case_file(bytes, "fuzz").err(),
            crate::schema::validate_instance(v, v, None).err(),
            crate::portability::scan(v, "", &[], Code::ForbiddenPortableValue).err(),
            crate::signature::KeySet::from_list(v, "keys").err(),
            crate::signature::verify_signature(v, &crate::signature::KeySet::new()).err(),
            crate::conformance::federation::context_of(v)
                .and_then(|ctx| crate::federation::verify_commitment(v, &ctx))
                .err(),
            crate::compat::verify_observed(v, v.as_array().unwrap_or_default()).err(),
        ];
        for e in results.iter().flatten() {
            if let Some(v) = vocab(e) {
                return Some(v);
            }
        }
        if let Value::Object(_) = v {
            let _ = artifact::check_structure(Kind::Blueprint, v);
        }
        // a decodable input as a corpus index (either format): refused with a typed code, never a panic
        let one = std::collections::BTreeMap::from([(crate::corpus::INDEX.to_string(), bytes.to_vec())]);
        for e in [crate::corpus::load_any(&one).err(), crate::corpus::load_reference(&one).err()].iter().flatten() {
            if let Some(v) = vocab(e) {
                return Some(v);
            }
        }
        // a decodable input run as a case file: the runner reports, never panics
        if let Ok(r) = crate::conformance::run_files(&[("fuzz".to_string(), bytes.to_vec())]) {
            for f in &r.file_failures {
                if Code::parse(&f.code).is_none() {
                    return Some(format!("file failure code {:?} is outside the vocabulary", f.code));
                }
            }
        }
    }
    None
}
