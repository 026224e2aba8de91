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
    let (_, index) = read_index(files)?;
    load_own(files, &index, floor)
}

/// `index.json`'s bytes and its decoded value.
fn read_index(files: &BTreeMap<String, Vec<u8>>) -> Result<(&[u8], Value)> {
    let index_bytes = files.get(INDEX).ok_or_else(|| bad_index("no index.json"))?;
    let index = json::decode(index_bytes, &Limits::default())
        .map_err(|e| bad_index(format!("{}: {}", e.code(), e.detail())))?;
    Ok((index_bytes, index))
}

/// The index's `corpus_digest`, checked to be its own (`corpus_hash_mismatch` otherwise).
fn verified_digest(index: &Value) -> Result<Tagged> {
    let declared =
        index.get("corpus_digest").and_then(Value::as_str).ok_or_else(|| bad_index("expected corpus_digest"))?;
    let declared = Tagged::parse(declared).map_err(|e| bad_index(e.detail().to_string()))?;
    let digest = corpus_digest(index)?;
    if digest != declared {
        return fail(Code::CorpusHashMismatch, INDEX, format!("index declares {declared}, computed {digest}"));
    }
    Ok(digest)
}

/// [`load_with_floor`] over an index already decoded.
fn load_own(files: &BTreeMap<String, Vec<u8>>, index: &Value, floor: &[&str]) -> Result<Corpus> {
    if index.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(bad_index(format!("format must be {FORMAT:?}")));
    }
    let listed = index.get("files").and_then(Value::as_array).ok_or_else(|| bad_index("expected a files array"))?;
    let declared_total =
        index.get("case_count").and_then(Value::as_i64).ok_or_else(|| bad_index("expected case_count"))?;
    let applicability =
        index.get("applicability").and_then(Value::as_object).ok_or_else(|| bad_index("expected applicability"))?;
    let digest = verified_digest(index)?;
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

/// The reference's index format tag (the corpus its package ships under
/// `priv/conformance/`; docs/decisions.md, "Agent Blueprint Protocol: the
/// release this project implements").
pub const REFERENCE_FORMAT: &str = "agent-blueprint-protocol-conformance-corpus-index";

/// The least number of floor cells with a case in a reference corpus of
/// the current release (its 16 × 31 floor's required cells).
pub const REFERENCE_REQUIRED_CELLS: usize = 90;

/// Loads a corpus folder in either index format: this project's
/// ([`FORMAT`], [`load`]) or the reference's ([`REFERENCE_FORMAT`],
/// [`load_reference`]).
pub fn load_any(files: &BTreeMap<String, Vec<u8>>) -> Result<Corpus> {
    let (index_bytes, index) = read_index(files)?;
    if index.get("format").and_then(Value::as_str) == Some(REFERENCE_FORMAT) {
        reference_from(files, index_bytes, &index)
    } else {
        load_own(files, &index, conformance::SURFACES)
    }
}

fn sha256_b64(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    crate::b64::encode(&sha2::Sha256::digest(bytes))
}

/// Loads and verifies a corpus in the reference's own index format, as its
/// loader does (spec §15): the index is canonical bytes and its
/// `corpus_digest` is the corpus-index digest of the index without it;
/// `total_cases` is not zero; every listed path is under `cases/`,
/// `schemas/`, `vectors/` (`.json`) or `raw/` (`.raw`), listed once; the
/// file set is exact in both directions; each file's SHA-256 is its
/// `sha256_base64url`; per-file and total counts agree (data files hold
/// none); case ids are unique; each case's surface and class are of the
/// floor, and a valid case pins an output; applicability names all 16
/// surfaces × 31 classes, each leaf a count equal to the cases observed in
/// that cell or `{n_a: reason}` with none, and at least
/// [`REFERENCE_REQUIRED_CELLS`] cells hold a case; a case's `raw_file` is
/// present with its stated hash. A case's `schema_file` is resolved from the
/// corpus's `schemas/` into its `schema` member, so the runner sees the
/// shipped document. Not checked (docs/decisions.md): the index's
/// `registry_digest` against this build (the reference's registry-digest
/// form is not public outside its package; it is reported instead), and the
/// re-derivation of tamper cases from their base case.
pub fn load_reference(files: &BTreeMap<String, Vec<u8>>) -> Result<Corpus> {
    let (index_bytes, index) = read_index(files)?;
    reference_from(files, index_bytes, &index)
}

/// [`load_reference`] over an index already decoded from `index_bytes`.
#[allow(clippy::too_many_lines)]
fn reference_from(files: &BTreeMap<String, Vec<u8>>, index_bytes: &[u8], index: &Value) -> Result<Corpus> {
    if canon::canonical_bytes(index)? != index_bytes {
        return Err(bad_index("the index is not in canonical form (RFC 8785)"));
    }
    let digest = verified_digest(index)?;
    for k in ["registry_digest", "format"] {
        if index.get(k).and_then(Value::as_str).is_none() {
            return Err(bad_index(format!("expected {k}")));
        }
    }
    if !matches!(index.get("public_key_fingerprints"), Some(Value::Array(_))) {
        return Err(bad_index("expected public_key_fingerprints"));
    }
    if index.get("protocol_revision").and_then(Value::as_i64).is_none_or(|r| r < 1) {
        return Err(bad_index("expected protocol_revision ≥ 1"));
    }
    let total = index.get("total_cases").and_then(Value::as_i64).ok_or_else(|| bad_index("expected total_cases"))?;
    if total == 0 {
        return fail(Code::CorpusEmpty, INDEX, "a corpus with no case proves nothing");
    }
    let listed = index.get("files").and_then(Value::as_array).ok_or_else(|| bad_index("expected a files array"))?;
    let mut entries: Vec<(String, String, i64)> = Vec::new();
    for (i, f) in listed.iter().enumerate() {
        let field = |k: &str| f.get(k).ok_or_else(|| bad_index(format!("files/{i}: expected {k}")));
        let path = field("path")?.as_str().ok_or_else(|| bad_index(format!("files/{i}: path")))?;
        let sha =
            field("sha256_base64url")?.as_str().ok_or_else(|| bad_index(format!("files/{i}: sha256_base64url")))?;
        let n = field("cases")?.as_i64().filter(|n| *n >= 0).ok_or_else(|| bad_index(format!("files/{i}: cases")))?;
        let allowed = |prefix: &str, ext: &str| path.starts_with(&format!("{prefix}/")) && path.ends_with(ext);
        if !(allowed("cases", ".json")
            || allowed("schemas", ".json")
            || allowed("vectors", ".json")
            || allowed("raw", ".raw"))
        {
            return Err(bad_index(format!("files/{i}: {path:?} is outside cases/, schemas/, vectors/, raw/")));
        }
        if entries.iter().any(|e| e.0 == path) {
            return Err(bad_index(format!("files/{i}: {path:?} listed twice")));
        }
        entries.push((path.to_string(), sha.to_string(), n));
    }
    entries.sort();
    for p in files.keys().filter(|p| p.as_str() != INDEX) {
        if !entries.iter().any(|e| e.0 == *p) {
            return fail(Code::CorpusFileSetMismatch, p, "present but not listed in the index");
        }
    }
    let mut data: BTreeMap<String, Value> = BTreeMap::new();
    let mut case_files: Vec<(String, Vec<Value>)> = Vec::new();
    let mut counted = 0i64;
    for (path, sha, n) in &entries {
        let Some(bytes) = files.get(path) else {
            return fail(Code::CorpusFileSetMismatch, path, "listed in the index but absent");
        };
        let got = sha256_b64(bytes);
        if got != *sha {
            return fail(Code::CorpusHashMismatch, path, format!("index says {sha}, file hashes to {got}"));
        }
        if path.starts_with("raw/") {
            if *n != 0 {
                return fail(Code::CorpusCountMismatch, path, "a data file holds no case");
            }
            continue;
        }
        let doc = json::decode(bytes, &Limits::default())
            .map_err(|e| Error::new(Code::CorpusCaseInvalid, path, e.detail().to_string()))?;
        if !path.starts_with("cases/") {
            if *n != 0 {
                return fail(Code::CorpusCountMismatch, path, "a data file holds no case");
            }
            data.insert(path.clone(), doc);
            continue;
        }
        if doc.get("format").and_then(Value::as_str) != Some(conformance::FORMAT) {
            return fail(Code::CorpusCaseInvalid, path, format!("format must be {:?}", conformance::FORMAT));
        }
        let cases = doc.get("cases").and_then(Value::as_array).map(<[Value]>::to_vec).unwrap_or_default();
        if i64::try_from(cases.len()).unwrap_or(i64::MAX) != *n {
            return fail(Code::CorpusCountMismatch, path, format!("index says {n} cases, file has {}", cases.len()));
        }
        counted += n;
        case_files.push((path.clone(), cases));
    }
    if counted != total {
        return fail(Code::CorpusCountMismatch, INDEX, format!("total_cases {total}, files hold {counted}"));
    }
    // Resolve `schema_file` and check `raw_file` bindings, then parse as the runner will.
    let mut out_files = Vec::new();
    let mut cases = Vec::new();
    for (path, list) in case_files {
        let mut resolved = Vec::new();
        for mut c in list {
            if let Some(Value::Object(input)) = c.get("input") {
                let mut input = input.clone();
                if let Some(raw) = input.get("raw_file").and_then(Value::as_str) {
                    let ok = files.get(raw).is_some_and(|b| {
                        input.get("sha256_base64url").and_then(Value::as_str) == Some(sha256_b64(b).as_str())
                    });
                    if !ok {
                        return fail(
                            Code::CorpusCaseInvalid,
                            &path,
                            format!("raw_file {raw:?} absent or not its stated hash"),
                        );
                    }
                }
                if let Some(sf) = input.get("schema_file").and_then(Value::as_str).map(str::to_string) {
                    let Some(doc) = data.get(&sf) else {
                        return fail(
                            Code::CorpusCaseInvalid,
                            &path,
                            format!("schema_file {sf:?} is not in the corpus"),
                        );
                    };
                    input.insert("schema", doc.clone());
                }
                if let Value::Object(m) = &mut c {
                    m.insert("input", Value::Object(input));
                }
            }
            resolved.push(c);
        }
        let doc = Value::Object(Map::from_pairs(vec![
            ("cases".into(), Value::Array(resolved)),
            ("format".into(), Value::str(conformance::FORMAT)),
        ]));
        let bytes = canon::canonical_bytes(&doc)?;
        let parsed = conformance::parse_case_file(&bytes, &path)?;
        cases.extend(parsed.into_iter().map(|c| (path.clone(), c)));
        out_files.push((path, bytes));
    }
    let mut ids = BTreeSet::new();
    let mut observed: BTreeMap<(String, String), i64> = BTreeMap::new();
    for (path, c) in &cases {
        if !ids.insert(c.id.as_str()) {
            return fail(Code::CorpusCaseIdDuplicate, path, format!("case id {:?} repeats", c.id));
        }
        if !conformance::SURFACES.contains(&c.surface.as_str()) || !conformance::CLASSES.contains(&c.class.as_str()) {
            return fail(
                Code::CorpusCaseInvalid,
                path,
                format!("{}: {}/{} is outside the floor", c.id, c.surface, c.class),
            );
        }
        if c.expected.get("verdict").and_then(Value::as_str) == Some("valid")
            && c.expected.as_object().is_some_and(|m| m.len() == 1)
        {
            return fail(Code::CorpusCaseInvalid, path, format!("{}: a valid case pins no output", c.id));
        }
        *observed.entry((c.surface.clone(), c.class.clone())).or_default() += 1;
    }
    let app =
        index.get("applicability").and_then(Value::as_object).ok_or_else(|| bad_index("expected applicability"))?;
    let incomplete = |at: String, why: &str| Error::new(Code::CorpusApplicabilityIncomplete, at, why.to_string());
    if app.len() != conformance::SURFACES.len() {
        return Err(incomplete("applicability".into(), "must name exactly the 16 floor surfaces"));
    }
    let mut with_case = 0usize;
    for surface in conformance::SURFACES {
        let leaves = app
            .get(surface)
            .and_then(Value::as_object)
            .ok_or_else(|| incomplete((*surface).into(), "surface has no row"))?;
        if leaves.len() != conformance::CLASSES.len() {
            return Err(incomplete((*surface).into(), "row must name exactly the 31 floor classes"));
        }
        for class in conformance::CLASSES {
            let seen = observed.get(&((*surface).to_string(), (*class).to_string())).copied().unwrap_or(0);
            let at = format!("{surface}/{class}");
            match leaves.get(class) {
                Some(Value::Number(_)) => {
                    let want = leaves.get(class).and_then(Value::as_i64).unwrap_or(-1);
                    if want != seen {
                        return Err(incomplete(at, "the cell's count is not the cases it holds"));
                    }
                    if seen > 0 {
                        with_case += 1;
                    }
                }
                Some(Value::Object(m)) if m.get("n_a").and_then(Value::as_str).is_some_and(|r| !r.is_empty()) => {
                    if seen != 0 {
                        return Err(incomplete(at, "a cell marked n_a holds a case"));
                    }
                }
                _ => return Err(incomplete(at, "expected a count or {n_a: reason}")),
            }
        }
    }
    if with_case < REFERENCE_REQUIRED_CELLS {
        return Err(incomplete(
            "applicability".into(),
            &format!("{with_case} cells hold a case; the floor requires {REFERENCE_REQUIRED_CELLS}"),
        ));
    }
    Ok(Corpus { digest, files: out_files, cases })
}
