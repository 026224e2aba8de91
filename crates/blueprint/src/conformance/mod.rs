//! The conformance runner (spec §15) for case files in the reference format
//! `{format, cases: [{class, id, surface, input, expected: {verdict, …}}]}`,
//! executing the reference's sixteen surfaces under their own names and
//! input forms, one module per surface family:
//! [`bytes`] (json, canonicalization, base64url, digest),
//! [`artifacts`] (blueprint, deployment, signature, schema),
//! [`negotiation`] (negotiation, extension), [`bounds`] (bounds, algebra),
//! [`federation`] (portability, compatibility, federation decode and
//! `verify_commitment`), and [`project`] (this project's `corpus.load` and
//! `reconcile.run`).
//!
//! A case passes when the verdict matches and, for `valid`, it pins at least
//! one output and every pinned output is equal (a verdict-only valid case
//! is a vacuous green and never passes), or, for `invalid`, the error code
//! is the expected one. A file that cannot be read as a case file, or that
//! names a surface this runner does not know, is that file's failure: every
//! other file still runs and is reported.

mod artifacts;
mod bounds;
mod bytes;
pub mod federation;
mod input;
mod negotiation;
mod project;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::canon;
use crate::digest::{Domain, Tagged};
use crate::error::{fail, Code, Error, Result};
use crate::json::{self, Map, Value};
use crate::limits::Limits;

/// The format tag of a case file.
pub const FORMAT: &str = "agent-blueprint-protocol-conformance-cases";

/// The sixteen surfaces of the reference's 16-surface × 31-class floor,
/// under the reference's own names.
pub const SURFACES: &[&str] = &[
    "base64url.decode",
    "blueprint.decode",
    "bounds.new",
    "bounds_algebra.intersect",
    "canonicalization.encode",
    "compatibility.verify",
    "deployment.decode",
    "digest.tagged",
    "extension.resolve",
    "federation.decode",
    "federation.verify_commitment",
    "json.decode",
    "negotiation.negotiate",
    "portability.scan",
    "schema.validate_instance",
    "signature.verify",
];

/// The 31 classes of the reference's current applicability floor (16
/// surfaces × 31 classes, 90 required cells): the 29 of the 88-case release
/// and the two the `com.example.platform/estate-contract` registration added,
/// `extension_schema_unavailable` and `extension_deprecated_retained`.
pub const CLASSES: &[&str] = &[
    "valid",
    "boundary_near",
    "exact_bound",
    "maximum_plus_one",
    "invalid_encoding",
    "invalid_duplicate",
    "invalid_type",
    "invalid_constraint",
    "invalid_cardinality",
    "unknown_member",
    "tamper_meaningful_byte",
    "digest_mismatch",
    "signature_invalid",
    "revision_above_max",
    "revision_below_min",
    "required_field_unsupported",
    "required_field_not_covered",
    "extension_unknown_critical",
    "extension_unknown_optional_roundtrip",
    "extension_criticality_conflict",
    "extension_schema_unavailable",
    "extension_deprecated_retained",
    "bound_widening_operational",
    "bound_widening_protected",
    "forbidden_portable_value",
    "compatibility_range_rejected",
    "binding_stale",
    "federation_state_unmappable",
    "federation_terminal_conflict",
    "audience_mismatch",
    "terminal_equivocation",
];

/// The reference release this project implements (docs/decisions.md,
/// "Agent Blueprint Protocol: the release this project implements").
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Release {
    /// The reference package.
    pub reference: &'static str,
    /// Its conformance corpus digest.
    pub corpus_digest: &'static str,
    /// Its registry digest (bound into that corpus's index).
    pub registry_digest: &'static str,
    /// Cases in that corpus.
    pub cases: usize,
    /// The floor: surfaces × classes.
    pub surfaces: usize,
    /// The floor's classes ([`CLASSES`]).
    pub classes: usize,
    /// Required cells of the floor.
    pub required_cells: usize,
}

/// The release this build implements.
pub const RELEASE: Release = Release {
    reference: "baselabs/agent_blueprint_protocol, the release registering com.example.platform/estate-contract (ADR 2026-08-25)",
    corpus_digest: "sha-256:vMyREM8ggUqVvGG0y2e4Gf-KmpksJjnx2eF8UjtpVP8",
    registry_digest: "sha-256:FG2f38K0hba8tTP7iUaw7vHjgcnN_5F5Mp0v4G6UDVs",
    cases: 96,
    surfaces: 16,
    classes: 31,
    required_cells: 90,
};

/// Surfaces this project adds beyond the reference's floor.
pub const PROJECT_SURFACES: &[&str] = &["corpus.load", "reconcile.run"];

/// Whether the runner executes `surface`.
pub fn is_known(surface: &str) -> bool {
    SURFACES.contains(&surface) || PROJECT_SURFACES.contains(&surface)
}

/// One case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The conformance class the case exercises (a column of the §15 applicability floor).
    pub class: String,
    /// The case id, unique within the corpus (`corpus_case_id_duplicate`).
    pub id: String,
    /// The surface the case runs (a row of the floor, e.g. `canonicalize`), see [`SURFACES`].
    pub surface: String,
    /// The surface's input, in the reference's input form.
    pub input: Value,
    /// The expected result: `{verdict: "valid", …output members}` or `{verdict: "invalid", code}`.
    pub expected: Value,
}

/// Parses a case file's structure (bounded decode; not canonical-first, case
/// files are human-edited). Malformed files or cases deny
/// `corpus_case_invalid`. Surfaces are judged by the runner, not here.
pub fn parse_case_file(bytes: &[u8], name: &str) -> Result<Vec<Case>> {
    let v = json::decode(bytes, &Limits::default())
        .map_err(|e| Error::new(Code::CorpusCaseInvalid, name, format!("{}: {}", e.code(), e.detail())))?;
    if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return fail(Code::CorpusCaseInvalid, name, format!("format must be {FORMAT:?}"));
    }
    let Some(list) = v.get("cases").and_then(Value::as_array) else {
        return fail(Code::CorpusCaseInvalid, name, "expected a `cases` array");
    };
    let mut out = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let at = format!("{name}#{i}");
        let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(class), Some(id), Some(surface), Some(input), Some(expected)) =
            (s("class"), s("id"), s("surface"), c.get("input"), c.get("expected"))
        else {
            return fail(Code::CorpusCaseInvalid, at, "a case needs class, id, surface, input and expected");
        };
        match expected.get("verdict").and_then(Value::as_str) {
            Some("valid") => {}
            Some("invalid") if expected.get("code").and_then(Value::as_str).is_some() => {}
            _ => return fail(Code::CorpusCaseInvalid, at, "expected.verdict must be valid, or invalid with a code"),
        }
        out.push(Case { class, id, surface, input: input.clone(), expected: expected.clone() });
    }
    Ok(out)
}

/// A parsed case file whose every case names a known surface.
fn runnable_case_file(bytes: &[u8], name: &str) -> Result<Vec<Case>> {
    let cases = parse_case_file(bytes, name)?;
    if let Some((i, c)) = cases.iter().enumerate().find(|(_, c)| !is_known(&c.surface)) {
        return fail(
            Code::CorpusCaseInvalid,
            format!("{name}#{i}"),
            format!("unknown surface {:?} (case {})", c.surface, c.id),
        );
    }
    Ok(cases)
}

/// Executes one surface. `Ok` is the valid verdict with its outputs.
pub fn execute(surface: &str, input: &Value) -> Result<Map> {
    bytes::execute(surface, input)
        .or_else(|| artifacts::execute(surface, input))
        .or_else(|| negotiation::execute(surface, input))
        .or_else(|| bounds::execute(surface, input))
        .or_else(|| federation::execute(surface, input))
        .or_else(|| project::execute(surface, input))
        .unwrap_or_else(|| fail(Code::CorpusCaseInvalid, "surface", format!("unknown surface {surface:?}")))
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CaseResult {
    /// The case file the case came from.
    pub file: String,
    /// The case id.
    pub id: String,
    /// The surface it ran.
    pub surface: String,
    /// Its conformance class.
    pub class: String,
    /// Whether the result matched what was expected.
    pub passed: bool,
    /// What was expected, rendered for a person.
    pub expected: String,
    /// What the surface returned, rendered the same way.
    pub got: String,
}

fn show(v: &Value) -> String {
    canon::canonical_string(v).unwrap_or_else(|_| format!("{v:?}"))
}

fn failure(e: &Error) -> String {
    format!("invalid {} ({}: {})", e.code(), e.subject(), e.detail())
}

/// Compares the pinned outputs of a valid case; `None` when it pins none.
fn compare_valid(expected: &Value, got: &Map) -> Option<(bool, String, String)> {
    let pins: Vec<(&String, &Value)> =
        expected.as_object().map(|m| m.iter().filter(|(k, _)| k.as_str() != "verdict").collect()).unwrap_or_default();
    if pins.is_empty() {
        return None;
    }
    let mut ok = true;
    let (mut want, mut have) = (Vec::new(), Vec::new());
    for (k, v) in pins {
        want.push(format!("{k}={}", show(v)));
        if let Some(g) = got.get(k) {
            have.push(format!("{k}={}", show(g)));
            ok &= g.same(v);
        } else {
            have.push(format!("{k}=<absent>"));
            ok = false;
        }
    }
    Some((ok, format!("valid {}", want.join(" ")), format!("valid {}", have.join(" "))))
}

/// Runs one case.
pub fn run_case(file: &str, case: &Case) -> CaseResult {
    let verdict = case.expected.get("verdict").and_then(Value::as_str).unwrap_or_default();
    let want_code = case.expected.get("code").and_then(Value::as_str).unwrap_or_default();
    let result = execute(&case.surface, &case.input);
    let (passed, expected, got) = match (verdict, &result) {
        ("invalid", Err(e)) => (e.code() == want_code, format!("invalid {want_code}"), failure(e)),
        ("invalid", Ok(o)) => {
            (false, format!("invalid {want_code}"), format!("valid {}", show(&Value::Object(o.clone()))))
        }
        (_, Ok(o)) => compare_valid(&case.expected, o).unwrap_or_else(|| {
            (
                false,
                "valid (pins no output: a vacuous expectation never passes)".to_string(),
                format!("valid {}", show(&Value::Object(o.clone()))),
            )
        }),
        (_, Err(e)) => (false, "valid".to_string(), failure(e)),
    };
    CaseResult {
        file: file.to_string(),
        id: case.id.clone(),
        surface: case.surface.clone(),
        class: case.class.clone(),
        passed,
        expected,
        got,
    }
}

/// A case file that could not run: its own failure, reported beside the
/// results of every other file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileFailure {
    /// The case file.
    pub file: String,
    /// The failure's code (usually `corpus_case_invalid`).
    pub code: String,
    /// What was wrong with the file.
    pub detail: String,
}

/// Passed and failed counts of one row of the matrix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tally {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
}

impl Tally {
    fn add(&mut self, passed: bool) {
        if passed {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
    }
}

/// The report of a run: what `jcp blueprint conformance --json` prints and
/// the console's Blueprint view shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Cases that passed / failed (file failures are counted apart).
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Case files that ran.
    pub files_run: usize,
    /// Case files that could not run (each is that file's failure).
    pub file_failures: Vec<FileFailure>,
    /// Green only when at least one case ran, every case passed and no file
    /// failed: never a vacuous green.
    pub green: bool,
    /// The corpus digest when a verified corpus folder (with `index.json`) ran.
    pub corpus_digest: Option<String>,
    /// Floor surfaces with no case in this run (the run covers less than the
    /// 16-surface floor; informational, a single file is a legitimate run).
    pub missing_surfaces: Vec<String>,
    /// Floor classes with no case in this run (informational, as above).
    pub missing_classes: Vec<String>,
    /// The release whose floor this run is held to.
    pub release: Release,
    /// Digest of the canonical results (conformance-report domain).
    pub report_digest: String,
    /// Counts per surface.
    pub surfaces: BTreeMap<String, Tally>,
    /// Counts per class.
    pub classes: BTreeMap<String, Tally>,
    /// Counts per surface, then class: the surface × class matrix.
    pub matrix: BTreeMap<String, BTreeMap<String, Tally>>,
    /// Every case's result, in run order.
    pub results: Vec<CaseResult>,
}

impl Report {
    /// The human summary line: `N passed, M failed` (plus file failures).
    pub fn summary(&self) -> String {
        let s = format!("{} passed, {} failed", self.passed, self.failed);
        if self.file_failures.is_empty() {
            s
        } else {
            format!("{s}, {} file(s) not run", self.file_failures.len())
        }
    }
}

/// Runs every case of every `(name, bytes)` file. A file that is not a case
/// file, or names an unknown surface, is reported as that file's failure
/// and the others still run. A run with no case and no failed file at all
/// is refused (`corpus_empty`): the report never shows a vacuous green.
pub fn run_files(files: &[(String, Vec<u8>)]) -> Result<Report> {
    let mut results = Vec::new();
    let mut file_failures = Vec::new();
    let mut files_run = 0;
    for (name, bytes) in files {
        match runnable_case_file(bytes, name) {
            Ok(cases) => {
                files_run += 1;
                results.extend(cases.iter().map(|c| run_case(name, c)));
            }
            Err(e) => file_failures.push(FileFailure {
                file: name.clone(),
                code: e.code(),
                detail: format!("{}: {}", e.subject(), e.detail()),
            }),
        }
    }
    if results.is_empty() && file_failures.is_empty() {
        return fail(Code::CorpusEmpty, "cases", "no case to run: a vacuous run is not a pass");
    }
    let mut surfaces: BTreeMap<String, Tally> = BTreeMap::new();
    let mut classes: BTreeMap<String, Tally> = BTreeMap::new();
    let mut matrix: BTreeMap<String, BTreeMap<String, Tally>> = BTreeMap::new();
    for r in &results {
        surfaces.entry(r.surface.clone()).or_default().add(r.passed);
        classes.entry(r.class.clone()).or_default().add(r.passed);
        matrix.entry(r.surface.clone()).or_default().entry(r.class.clone()).or_default().add(r.passed);
    }
    let passed = results.iter().filter(|r| r.passed).count();
    let failed = results.len() - passed;
    let summary = Value::Object(Map::from_pairs(vec![
        (
            "file_failures".into(),
            Value::Array(
                file_failures
                    .iter()
                    .map(|f| {
                        Value::Object(Map::from_pairs(vec![
                            ("code".into(), Value::str(&f.code)),
                            ("file".into(), Value::str(&f.file)),
                        ]))
                    })
                    .collect(),
            ),
        ),
        (
            "results".into(),
            Value::Array(
                results
                    .iter()
                    .map(|r| {
                        Value::Object(Map::from_pairs(vec![
                            ("id".into(), Value::str(&r.id)),
                            ("passed".into(), Value::Bool(r.passed)),
                            ("surface".into(), Value::str(&r.surface)),
                        ]))
                    })
                    .collect(),
            ),
        ),
    ]));
    let report_digest = Tagged::compute(Domain::ConformanceReport, &canon::canonical_bytes(&summary)?).to_string();
    Ok(Report {
        passed,
        failed,
        files_run,
        green: passed > 0 && failed == 0 && file_failures.is_empty(),
        file_failures,
        corpus_digest: None,
        missing_surfaces: SURFACES.iter().filter(|s| !surfaces.contains_key(**s)).map(|s| (*s).to_string()).collect(),
        missing_classes: CLASSES.iter().filter(|c| !classes.contains_key(**c)).map(|c| (*c).to_string()).collect(),
        release: RELEASE,
        report_digest,
        surfaces,
        classes,
        matrix,
        results,
    })
}

/// Case files as `(name, bytes)`.
pub type CaseFiles = Vec<(String, Vec<u8>)>;

fn unreadable(path: &Path, e: &std::io::Error) -> Error {
    Error::new(Code::CorpusFileSetMismatch, path.display().to_string(), format!("cannot read: {e}"))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(dir, &e))?;
    for e in entries {
        let path = e.map_err(|e| unreadable(dir, &e))?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| unreadable(path, &e))
}

/// The case files under `path`, named by their path, and the verified corpus
/// digest when `path` is a corpus folder. A folder holding `index.json` is a
/// corpus: its index is verified first (hashes, exact file set, counts, ids,
/// applicability, corpus digest — any failure refuses the whole corpus,
/// §15). Any other folder contributes every `*.json` below it (sorted); a
/// file is itself. A path that cannot be read is `corpus_file_set_mismatch`.
pub fn collect(path: &Path) -> Result<(CaseFiles, Option<Tagged>)> {
    if !path.is_dir() {
        return Ok((vec![(path.display().to_string(), read(path)?)], None));
    }
    let mut found = Vec::new();
    walk(path, &mut found)?;
    found.sort();
    if path.join(crate::corpus::INDEX).is_file() {
        let mut all = BTreeMap::new();
        for p in &found {
            if let Ok(rel) = p.strip_prefix(path) {
                let key = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                all.insert(key, read(p)?);
            }
        }
        let corpus = crate::corpus::load_any(&all)?;
        let files =
            corpus.files.into_iter().map(|(name, bytes)| (path.join(name).display().to_string(), bytes)).collect();
        return Ok((files, Some(corpus.digest)));
    }
    let mut files = Vec::new();
    for p in found.iter().filter(|p| {
        p.extension().is_some_and(|x| x == "json") && p.file_name().is_some_and(|n| n != crate::corpus::INDEX)
    }) {
        files.push((p.display().to_string(), read(p)?));
    }
    Ok((files, None))
}

/// Runs a corpus folder, a folder of case files, or one case file: the
/// console's Blueprint view and `jcp blueprint conformance` call this.
pub fn run_corpus_dir(path: &Path) -> Result<Report> {
    let (files, digest) = collect(path)?;
    let mut report = run_files(&files)?;
    report.corpus_digest = digest.map(|d| d.to_string());
    Ok(report)
}
