//! The conformance corpus loader (spec §15). Pure over `{path => bytes}`:
//! it verifies the index (format and corpus digest), the exact file set in
//! both directions, per-file hashes, case counts, case-id uniqueness and
//! applicability totality, and refuses a vacuous corpus.
//!
//! Index (`index.json`): `{format, files: [{path, digest, cases}], case_count,
//! applicability: {surface: [class…]}, corpus_digest}` where `corpus_digest`
//! is the corpus-index digest of the JCS index without `corpus_digest`, and
//! each file `digest` is the corpus-index digest of the file's bytes.

use std::collections::{BTreeMap, BTreeSet};

use crate::canon;
use crate::conformance::{self, Case};
use crate::digest::{Domain, Tagged};
use crate::error::{fail, Code, Error, Result};
use crate::json::{self, Map, Value};
use crate::limits::Limits;

/// The index file name.
pub const INDEX: &str = "index.json";
/// The index format tag.
pub const FORMAT: &str = "agent-blueprint-protocol-corpus-index";

/// A verified corpus.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The corpus digest: the corpus-index digest of the index without its `corpus_digest` member (§15).
    pub digest: Tagged,
    /// Case files in index order, as `(path, bytes)`.
    pub files: Vec<(String, Vec<u8>)>,
    /// Every case, with the path of the file it came from, in index order.
    pub cases: Vec<(String, Case)>,
}

/// The corpus digest of an index value (its `corpus_digest` member excluded).
pub fn corpus_digest(index: &Value) -> Result<Tagged> {
    let mut m = index.as_object().cloned().unwrap_or_default();
    m.remove("corpus_digest");
    Ok(Tagged::compute(Domain::CorpusIndex, &canon::canonical_bytes(&Value::Object(m))?))
}

/// The per-file digest.
pub fn file_digest(bytes: &[u8]) -> Tagged {
    Tagged::compute(Domain::CorpusIndex, bytes)
}

fn bad_index(detail: impl Into<String>) -> Error {
    Error::new(Code::CorpusIndexInvalid, INDEX, detail)
}

/// Loads and verifies a corpus whose applicability floor is every surface
/// of [`conformance::SURFACES`].
pub fn load(files: &BTreeMap<String, Vec<u8>>) -> Result<Corpus> {
    load_with_floor(files, conformance::SURFACES)
}

/// Loads and verifies a corpus against an explicit floor of surfaces, each of
/// which needs at least one valid and one invalid case.
pub fn load_with_floor(files: &BTreeMap<String, Vec<u8>>, floor: &[&str]) -> Result<Corpus> {
    let index_bytes = files.get(INDEX).ok_or_else(|| bad_index("no index.json"))?;
    let index = json::decode(index_bytes, &Limits::default())
        .map_err(|e| bad_index(format!("{}: {}", e.code(), e.detail())))?;
    if index.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(bad_index(format!("format must be {FORMAT:?}")));
    }
    let listed = index.get("files").and_then(Value::as_array).ok_or_else(|| bad_index("expected a files array"))?;
    let declared_total =
        index.get("case_count").and_then(Value::as_i64).ok_or_else(|| bad_index("expected case_count"))?;
    let applicability =
        index.get("applicability").and_then(Value::as_object).ok_or_else(|| bad_index("expected applicability"))?;
    let declared_digest =
        index.get("corpus_digest").and_then(Value::as_str).ok_or_else(|| bad_index("expected corpus_digest"))?;
    let declared_digest = Tagged::parse(declared_digest).map_err(|e| bad_index(e.detail().to_string()))?;
    let digest = corpus_digest(&index)?;
    if digest != declared_digest {
        return fail(Code::CorpusHashMismatch, INDEX, format!("index declares {declared_digest}, computed {digest}"));
    }
    if listed.is_empty() || declared_total == 0 {
        return fail(Code::CorpusEmpty, INDEX, "a corpus with no case proves nothing");
    }
    // exact file set, both directions
    let mut entries = Vec::new();
    for (i, f) in listed.iter().enumerate() {
        let path =
            f.get("path").and_then(Value::as_str).ok_or_else(|| bad_index(format!("files/{i}: expected path")))?;
        let fd =
            f.get("digest").and_then(Value::as_str).ok_or_else(|| bad_index(format!("files/{i}: expected digest")))?;
        let count =
            f.get("cases").and_then(Value::as_i64).ok_or_else(|| bad_index(format!("files/{i}: expected cases")))?;
        entries.push((path.to_string(), fd.to_string(), count));
    }
    let listed_set: BTreeSet<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    if listed_set.len() != entries.len() {
        return fail(Code::CorpusFileSetMismatch, INDEX, "a file is listed twice");
    }
    for p in files.keys().filter(|p| p.as_str() != INDEX) {
        if !listed_set.contains(p.as_str()) {
            return fail(Code::CorpusFileSetMismatch, p, "present but not listed in the index");
        }
    }
    for p in &listed_set {
        if !files.contains_key(*p) {
            return fail(Code::CorpusFileSetMismatch, *p, "listed in the index but absent");
        }
    }
    // per-file hashes, parse, counts
    let mut out_files = Vec::new();
    let mut cases = Vec::new();
    let mut total = 0i64;
    for (path, fd, count) in &entries {
        let bytes = files.get(path).map(Vec::as_slice).unwrap_or_default();
        let got = file_digest(bytes);
        if got.to_string() != *fd {
            return fail(Code::CorpusHashMismatch, path, format!("index says {fd}, file hashes to {got}"));
        }
        let parsed = conformance::parse_case_file(bytes, path)?;
        if i64::try_from(parsed.len()).unwrap_or(i64::MAX) != *count {
            return fail(
                Code::CorpusCountMismatch,
                path,
                format!("index says {count} cases, file has {}", parsed.len()),
            );
        }
        total += *count;
        cases.extend(parsed.into_iter().map(|c| (path.clone(), c)));
        out_files.push((path.clone(), bytes.to_vec()));
    }
    if total != declared_total {
        return fail(Code::CorpusCountMismatch, INDEX, format!("case_count {declared_total}, files hold {total}"));
    }
    // ids unique
    let mut ids = BTreeSet::new();
    for (path, c) in &cases {
        if !ids.insert(c.id.as_str()) {
            return fail(Code::CorpusCaseIdDuplicate, path, format!("case id {:?} repeats", c.id));
        }
    }
    // applicability totality
    for surface in floor {
        if !applicability.contains_key(surface) {
            return fail(Code::CorpusApplicabilityIncomplete, *surface, "surface has no applicability row");
        }
    }
    for (surface, classes) in applicability.iter() {
        let surface = &surface.as_str();
        let Some(classes) = classes.as_array() else {
            return Err(bad_index(format!("applicability.{surface}: expected an array of classes")));
        };
        let has_valid = cases
            .iter()
            .any(|(_, c)| c.surface == *surface && c.expected.get("verdict").and_then(Value::as_str) == Some("valid"));
        let has_invalid = cases.iter().any(|(_, c)| {
            c.surface == *surface && c.expected.get("verdict").and_then(Value::as_str) == Some("invalid")
        });
        if !has_valid || !has_invalid {
            return fail(
                Code::CorpusApplicabilityIncomplete,
                *surface,
                "needs at least one valid and one invalid case",
            );
        }
        for class in classes {
            let class = class.as_str().unwrap_or_default();
            if !cases.iter().any(|(_, c)| c.surface == *surface && c.class == class) {
                return fail(
                    Code::CorpusApplicabilityIncomplete,
                    format!("{surface}/{class}"),
                    "required cell has no case",
                );
            }
        }
    }
    Ok(Corpus { digest, files: out_files, cases })
}

/// Builds an index for `files` (the generator's side of [`load`]).
pub fn build_index(files: &[(String, Vec<u8>)], applicability: &BTreeMap<String, Vec<String>>) -> Result<Value> {
    let mut list = Vec::new();
    let mut total = 0u64;
    for (path, bytes) in files {
        // Counted from the raw `cases` array so that an index can describe
        // (and the loader then refuse) a file with malformed cases.
        let doc = json::decode(bytes, &Limits::default())
            .map_err(|e| Error::new(Code::CorpusCaseInvalid, path, e.detail().to_string()))?;
        let n = doc.get("cases").and_then(Value::as_array).map_or(0, <[Value]>::len) as u64;
        total += n;
        list.push(Value::Object(Map::from_pairs(vec![
            ("cases".into(), Value::from_u64(n)),
            ("digest".into(), Value::str(file_digest(bytes).to_string())),
            ("path".into(), Value::str(path)),
        ])));
    }
    let app = Value::Object(Map::from_pairs(
        applicability.iter().map(|(k, v)| (k.clone(), Value::Array(v.iter().map(Value::str).collect()))).collect(),
    ));
    let mut m = Map::from_pairs(vec![
        ("applicability".into(), app),
        ("case_count".into(), Value::from_u64(total)),
        ("files".into(), Value::Array(list)),
        ("format".into(), Value::str(FORMAT)),
    ]);
    let d = corpus_digest(&Value::Object(m.clone()))?;
    m.insert("corpus_digest", Value::str(d.to_string()));
    Ok(Value::Object(m))
}
