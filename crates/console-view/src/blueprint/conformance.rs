//! A Blueprint conformance corpus run (ABP §15) as the developer's view:
//! the per-surface and per-class tallies, the surface × class matrix, each
//! case, and the files that could not be run.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
#[cfg(test)]
use ts_rs::TS;

use crate::ViewError;

/// One row of a conformance count: a surface or a class, with its counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConformanceTally {
    /// The surface (`signature.verify`) or class (`audience_mismatch`).
    pub name: String,
    /// Cases that passed.
    pub passed: u32,
    /// Cases that failed.
    pub failed: u32,
}

/// One cell of the surface × class matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConformanceCell {
    /// The surface (`federation.verify_commitment`).
    pub surface: String,
    /// The conformance class (`audience_mismatch`).
    pub class: String,
    /// Cases that passed.
    pub passed: u32,
    /// Cases that failed.
    pub failed: u32,
}

/// One case's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConformanceCaseRow {
    /// The case file.
    pub file: String,
    /// The case id.
    pub id: String,
    /// The surface (`federation.verify_commitment`).
    pub surface: String,
    /// The conformance class (`audience_mismatch`).
    pub class: String,
    /// Whether the case passed.
    pub passed: bool,
    /// What the case expects (`invalid audience_mismatch`, `valid clean=true`).
    pub expected: String,
    /// What the runner got.
    pub got: String,
}

/// A case file that could not run (its own failure; the others still ran).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConformanceFileFailure {
    /// The case file.
    pub file: String,
    /// Why it did not run (`corpus_case_invalid`).
    pub code: String,
    /// What was wrong, and where.
    pub detail: String,
}

/// A conformance run over a corpus folder, as the Blueprint view shows it:
/// the same counts as `jcp blueprint conformance --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConformanceView {
    /// The folder (or file) that ran.
    pub path: String,
    /// At least one case ran, none failed and every file ran: never a vacuous green.
    pub green: bool,
    /// Cases that passed.
    pub passed: u32,
    /// Cases that failed.
    pub failed: u32,
    /// Case files that ran.
    pub files_run: u32,
    /// The verified corpus digest when the folder holds an `index.json`.
    pub corpus_digest: Option<String>,
    /// Digest of the results (conformance-report domain).
    pub report_digest: String,
    /// Surfaces of the 16-surface floor with no case in this run.
    pub missing_surfaces: Vec<String>,
    /// Classes of the 31-class floor with no case in this run.
    pub missing_classes: Vec<String>,
    /// The floor this build expects and the reference release it implements, as words.
    pub floor: String,
    /// Counts per surface, by name.
    pub surfaces: Vec<ConformanceTally>,
    /// Counts per class, by name.
    pub classes: Vec<ConformanceTally>,
    /// The surface × class matrix, by surface then class.
    pub matrix: Vec<ConformanceCell>,
    /// Case files that could not run.
    pub file_failures: Vec<ConformanceFileFailure>,
    /// Every case, in file order.
    pub cases: Vec<ConformanceCaseRow>,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn tallies(m: &BTreeMap<String, blueprint::conformance::Tally>) -> Vec<ConformanceTally> {
    m.iter()
        .map(|(name, t)| ConformanceTally { name: name.clone(), passed: count(t.passed), failed: count(t.failed) })
        .collect()
}

/// The view of a conformance report.
pub fn conformance_view(path: &Path, r: &blueprint::CorpusReport) -> ConformanceView {
    ConformanceView {
        path: path.display().to_string(),
        green: r.green,
        passed: count(r.passed),
        failed: count(r.failed),
        files_run: count(r.files_run),
        corpus_digest: r.corpus_digest.clone(),
        report_digest: r.report_digest.clone(),
        missing_surfaces: r.missing_surfaces.clone(),
        missing_classes: r.missing_classes.clone(),
        floor: format!(
            "Floor: {} surfaces × {} classes ({} required cells), the reference corpus {} ({} cases).",
            r.release.surfaces, r.release.classes, r.release.required_cells, r.release.corpus_digest, r.release.cases
        ),
        surfaces: tallies(&r.surfaces),
        classes: tallies(&r.classes),
        matrix: r
            .matrix
            .iter()
            .flat_map(|(surface, row)| {
                row.iter().map(move |(class, t)| ConformanceCell {
                    surface: surface.clone(),
                    class: class.clone(),
                    passed: count(t.passed),
                    failed: count(t.failed),
                })
            })
            .collect(),
        file_failures: r
            .file_failures
            .iter()
            .map(|f| ConformanceFileFailure { file: f.file.clone(), code: f.code.clone(), detail: f.detail.clone() })
            .collect(),
        cases: r
            .results
            .iter()
            .map(|c| ConformanceCaseRow {
                file: c.file.clone(),
                id: c.id.clone(),
                surface: c.surface.clone(),
                class: c.class.clone(),
                passed: c.passed,
                expected: c.expected.clone(),
                got: c.got.clone(),
            })
            .collect(),
    }
}

/// Runs a corpus folder (verified first when it holds `index.json`), a
/// folder of case files, or one case file — `blueprint::run_corpus_dir`, as
/// `jcp blueprint conformance` does. A corpus that does not verify, or a
/// path that cannot be read, is `BlueprintCorpus`.
pub fn run_conformance(path: &Path) -> Result<ConformanceView, ViewError> {
    let r = blueprint::run_corpus_dir(path).map_err(|e| ViewError::BlueprintCorpus {
        path: path.to_path_buf(),
        code: e.code(),
        detail: e.to_string(),
    })?;
    Ok(conformance_view(path, &r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abp_15_conformance_view_shows_the_same_matrix_as_the_cli() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/blueprint");
        let v = run_conformance(&dir).unwrap();
        assert!(v.green && v.failed == 0 && v.missing_surfaces.is_empty());
        let r = blueprint::run_corpus_dir(&dir).unwrap();
        assert_eq!(v.surfaces.len(), r.surfaces.len());
        assert_eq!(v.cases.len(), r.results.len());
        let cell = v
            .matrix
            .iter()
            .find(|c| c.surface == "federation.verify_commitment" && c.class == "audience_mismatch")
            .unwrap();
        assert_eq!((cell.passed, cell.failed), (2, 0));
        assert_eq!(v.corpus_digest, r.corpus_digest);
        let e = run_conformance(Path::new("/no/such/corpus")).unwrap_err();
        assert_eq!(e.code(), "blueprint.corpus_refused");
    }
}
