//! The developer's view of an Agent Blueprint Protocol reconcile (ABP §13):
//! reads a Blueprint, its Deployment and the host's inputs from disk, runs
//! `blueprint::reconcile` exactly as `jcp blueprint reconcile … --json` does,
//! and maps the Evidence to rows a person reads — the verdict, each step of
//! the pinned order with its checks, the effective bounds and clamps, and
//! everything the pass did NOT verify. A step that produced no check is
//! shown as not run, never as passed; a consistent record is shown as
//! evidence with its gaps, never as "clean".
//!
//! Modules: the reconcile's inputs are read here; [`report`] maps the
//! Evidence to rows, [`locate`] points a refusal at its line and column,
//! [`conformance`] shows a conformance corpus run (§15), and [`demo`] (the
//! `demo` feature) writes the console's demo Blueprint + Deployment
//! (generated with the crate's own encoder and digests, signed with a demo key).

pub mod conformance;
#[cfg(feature = "demo")]
pub mod demo;
pub mod locate;
pub mod report;

pub use conformance::{
    conformance_view, run_conformance, ConformanceCaseRow, ConformanceCell, ConformanceFileFailure, ConformanceTally,
    ConformanceView,
};
#[cfg(feature = "demo")]
pub use demo::{demo_texts, write_demo, DemoReconcile, DEMO_KEY_ID, DEMO_OPERATION};
pub use locate::{locate, JsonLocation};
pub use report::{
    report, report_view, title_of, BlueprintReportView, BoundRow, CheckRow, ClampRow, FindingRow, InputRow,
    NotVerifiedRow, StepRow,
};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use blueprint::binding::BindingInputs;
use blueprint::limits::Limits;
use blueprint::reconcile::{self, Evidence, Inputs};
use blueprint::signature::KeySet;
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use crate::ViewError;

/// The files one reconcile reads: the two artifacts and the host's inputs
/// (each optional input, when absent, shows up in `not_verified`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileFiles {
    /// The Blueprint Core artifact.
    pub blueprint: PathBuf,
    /// The Deployment Manifest.
    pub deployment: PathBuf,
    /// Trusted Ed25519 keys (`{kid: base64url}` or a JWK set), as `--keys`.
    pub keys: Option<PathBuf>,
    /// Host bounds (13 members), as `--host-bounds`.
    pub host_bounds: Option<PathBuf>,
    /// Live tool descriptor digests `{logical_operation: "sha-256:…"}`, as `--descriptors`.
    pub descriptors: Option<PathBuf>,
}

fn read(path: &Path) -> Result<Vec<u8>, ViewError> {
    std::fs::read(path).map_err(|e| ViewError::Unreadable { path: path.to_path_buf(), detail: e.to_string() })
}

fn bad_input(path: &Path, e: &blueprint::Error) -> ViewError {
    ViewError::BlueprintInput { path: path.to_path_buf(), code: e.code(), detail: e.to_string() }
}

/// Builds the reconcile inputs from the host's files, the way
/// `jcp blueprint reconcile --keys --host-bounds --descriptors` does.
pub fn inputs(files: &ReconcileFiles) -> Result<Inputs, ViewError> {
    let mut inputs = Inputs::default();
    if let Some(p) = &files.keys {
        inputs.keys = KeySet::from_json(&read(p)?).map_err(|e| bad_input(p, &e))?;
    }
    if let Some(p) = &files.host_bounds {
        inputs.host_bounds =
            Some(blueprint::json::decode(&read(p)?, &Limits::default()).map_err(|e| bad_input(p, &e))?);
    }
    if let Some(p) = &files.descriptors {
        let v = blueprint::json::decode(&read(p)?, &Limits::default()).map_err(|e| bad_input(p, &e))?;
        let m = v.as_object().ok_or_else(|| ViewError::BlueprintInput {
            path: p.clone(),
            code: "invalid_type".into(),
            detail: "expected an object {logical_operation: \"sha-256:…\"}".into(),
        })?;
        let mut descriptors = BTreeMap::new();
        for (op, digest) in m.iter() {
            let d = digest.as_str().ok_or_else(|| ViewError::BlueprintInput {
                path: p.clone(),
                code: "invalid_type".into(),
                detail: format!("{op}: expected a tagged digest string"),
            })?;
            descriptors.insert(op.clone(), d.to_owned());
        }
        inputs.binding = BindingInputs { descriptors, ..BindingInputs::default() };
    }
    Ok(inputs)
}

/// Runs the reconcile over the files. Unreadable files are errors; anything
/// wrong inside the artifacts is evidence (the pass never fails).
pub fn reconcile_files(files: &ReconcileFiles) -> Result<Evidence, ViewError> {
    let bp = read(&files.blueprint)?;
    let dep = read(&files.deployment)?;
    let inputs = inputs(files)?;
    Ok(reconcile::reconcile(&bp, &dep, &inputs))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The IPC types of this view (checked with the others in `ipc`).
    pub(crate) fn generated() -> Vec<(String, String)> {
        macro_rules! all {
            ($($t:ty),*) => { vec![$( (<$t as TS>::name(), <$t as TS>::export_to_string().unwrap()) ),*] };
        }
        all!(
            JsonLocation,
            CheckRow,
            StepRow,
            NotVerifiedRow,
            BoundRow,
            ClampRow,
            FindingRow,
            InputRow,
            BlueprintReportView,
            ConformanceTally,
            ConformanceCell,
            ConformanceCaseRow,
            ConformanceFileFailure,
            ConformanceView
        )
    }
}
