//! The Evidence of a reconcile (ABP §13) as rows a person reads: the
//! verdict, each step of the pinned order with its checks, the effective
//! bounds and clamps (§9), the findings, and everything the pass did NOT
//! verify. A step that produced no check is shown as not run, never as
//! passed.

use std::path::PathBuf;

use blueprint::canon;
use blueprint::json::Value;
use blueprint::limits::Limits;
use blueprint::reconcile::{self, Evidence};
use serde::{Deserialize, Serialize};
#[cfg(test)]
use ts_rs::TS;

use super::{locate, read, reconcile_files, JsonLocation, ReconcileFiles};
use crate::ViewError;

/// One check of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct CheckRow {
    /// What was checked (`blueprint`, `deployment signature[0] kid=…`).
    pub subject: String,
    /// Whether it passed.
    pub verified: bool,
    /// The protocol's error code when it did not.
    pub code: Option<String>,
    /// The crate's words.
    pub detail: String,
    /// Where in which file the failure points, when its subject names a
    /// place (a byte offset of a decode error, or a JSON pointer).
    pub location: Option<JsonLocation>,
}

/// One step of the pinned order (ABP §13).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct StepRow {
    /// `canonical`, `digest`, `negotiation`, `structure`, `portability`, `signatures`, `bind`, `bounds`.
    pub step: String,
    /// `passed` (every check passed, nothing left open), `partial` (checks
    /// passed but part of the step was not verified), `failed`, or `not_run`
    /// (no check ran: not reached, or nothing to check) — never `passed`
    /// without a check.
    pub status: crate::tags::StepStatus,
    /// The checks the step ran, in order.
    pub checks: Vec<CheckRow>,
    /// What in this step was not verified, and why.
    pub not_verified: Vec<NotVerifiedRow>,
}

/// Something the pass did not establish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct NotVerifiedRow {
    /// The surface (`tenancy`, `binding_attestation_freshness`, `bounds`, …).
    pub surface: String,
    /// Why, in the crate's words.
    pub reason: String,
    /// `host_owned` (the protocol can never establish it), `not_reached`
    /// (an earlier step failed), or `missing_input` (the host did not supply
    /// what it needs, or the artifact carries nothing to check).
    pub kind: crate::tags::NotVerifiedKind,
}

/// A named bound value, in words (`40 EUR`, `internal`, `16000`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct BoundRow {
    /// The bound (`max_cost`, `classification_ceiling`, …).
    pub bound: String,
    /// Its value in words.
    pub value: String,
}

/// One narrowing of a requested bound (clamp evidence, ABP §9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ClampRow {
    /// The bound.
    pub bound: String,
    /// A protected bound (narrowed only under an acknowledge posture).
    pub protected: bool,
    /// What the blueprint requested, in words.
    pub requested: String,
    /// What is in effect, in words.
    pub effective: String,
}

/// A protocol error: code, where, what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct FindingRow {
    /// The protocol's code (`digest_mismatch`, …).
    pub code: String,
    /// Where (a JSON pointer or a subject).
    pub subject: String,
    /// What.
    pub detail: String,
    /// Where in which file (the first failing check's location).
    pub location: Option<JsonLocation>,
}

/// Which host input the pass had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct InputRow {
    /// `trusted keys`, `host bounds`, `live tool descriptors`.
    pub name: String,
    /// The file, when supplied.
    pub path: Option<String>,
}

/// The reconcile report as the developer's view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct BlueprintReportView {
    /// The blueprint's id and release (`demo.console/summarize release 3`), when readable.
    pub title: String,
    /// The Blueprint file.
    pub blueprint_path: String,
    /// The Deployment file.
    pub deployment_path: String,
    /// The host inputs supplied (and those not).
    pub inputs: Vec<InputRow>,
    /// `consistent` or `inconsistent` (the same as `jcp blueprint reconcile`'s exit 0 / 1).
    pub verdict: crate::tags::Consistency,
    /// The verdict in words, with what it does not mean.
    pub verdict_text: String,
    /// The Blueprint's content digest, when computed.
    pub blueprint_digest: Option<String>,
    /// The Deployment's digest, when computed.
    pub deployment_digest: Option<String>,
    /// Every step of the pinned order.
    pub steps: Vec<StepRow>,
    /// The first failure, when there is one.
    pub first_failure: Option<FindingRow>,
    /// The effective bounds, when the bounds step ran.
    pub effective_bounds: Vec<BoundRow>,
    /// Clamp evidence.
    pub clamps: Vec<ClampRow>,
    /// Everything not verified (never empty: ABP §13).
    pub not_verified: Vec<NotVerifiedRow>,
    /// The Evidence exactly as `jcp blueprint reconcile --json` prints it.
    #[cfg_attr(test, ts(type = "unknown"))]
    pub evidence: serde_json::Value,
}

fn canonical(v: &Value) -> String {
    // Values in Evidence were decoded by the crate, so they re-encode; if one
    // ever did not, show the debug form rather than nothing.
    canon::canonical_string(v).unwrap_or_else(|_| format!("{v:?}"))
}

/// A bound value for people: `40 EUR` for a cost, the ordinal (with any
/// markers) for a classification, a word unquoted, a number as is; anything
/// else as canonical JSON. (The Evidence in the view keeps the exact values.)
fn bound_text(v: &Value) -> String {
    if let Some(s) = v.as_str() {
        return s.to_owned();
    }
    if let (Some(amount), Some(currency)) = (v.get("amount"), v.get("currency").and_then(Value::as_str)) {
        return format!("{} {currency}", canonical(amount));
    }
    if let (Some(ordinal), Some(markers)) =
        (v.get("ordinal").and_then(Value::as_str), v.get("markers").and_then(Value::as_array))
    {
        let marks: Vec<String> =
            markers.iter().map(|m| m.as_str().map_or_else(|| canonical(m), str::to_owned)).collect();
        return if marks.is_empty() { ordinal.to_owned() } else { format!("{ordinal} + {}", marks.join(", ")) };
    }
    canonical(v)
}

/// Which step a not-verified surface belongs to, if any.
fn step_of(surface: &str) -> Option<&'static str> {
    if let Some(step) = reconcile::STEPS.iter().find(|s| **s == surface) {
        return Some(step);
    }
    if surface.starts_with("extension ") {
        Some("negotiation")
    } else if surface.ends_with(" signatures") {
        Some("signatures")
    } else if surface.starts_with("binding_") {
        Some("bind")
    } else if surface == "host_bounds" {
        Some("bounds")
    } else {
        None
    }
}

fn not_verified_row(surface: &str, reason: &str) -> NotVerifiedRow {
    let kind = if reconcile::HOST_OWNED.contains(&surface) {
        crate::tags::NotVerifiedKind::HostOwned
    } else if reconcile::STEPS.contains(&surface) {
        crate::tags::NotVerifiedKind::NotReached
    } else {
        crate::tags::NotVerifiedKind::MissingInput
    };
    NotVerifiedRow { surface: surface.to_owned(), reason: reason.to_owned(), kind }
}

/// Maps an Evidence record to the view. `files` names what was read.
pub fn report_view(ev: &Evidence, files: &ReconcileFiles, title: &str) -> Result<BlueprintReportView, ViewError> {
    let not_verified: Vec<NotVerifiedRow> =
        ev.not_verified.iter().map(|n| not_verified_row(&n.surface, &n.reason)).collect();
    let steps = reconcile::STEPS
        .iter()
        .map(|step| {
            let checks: Vec<CheckRow> = ev
                .checks
                .iter()
                .filter(|c| c.step == *step)
                .map(|c| CheckRow {
                    subject: c.subject.clone(),
                    verified: c.verified,
                    code: c.code.clone(),
                    detail: c.detail.clone(),
                    location: if c.verified { None } else { locate(&c.subject, files) },
                })
                .collect();
            let open: Vec<NotVerifiedRow> =
                not_verified.iter().filter(|n| step_of(&n.surface) == Some(step)).cloned().collect();
            let status = if checks.iter().any(|c| !c.verified) {
                crate::tags::StepStatus::Failed
            } else if checks.is_empty() {
                crate::tags::StepStatus::NotRun
            } else if open.is_empty() {
                crate::tags::StepStatus::Passed
            } else {
                crate::tags::StepStatus::Partial
            };
            StepRow { step: (*step).to_owned(), status, checks, not_verified: open }
        })
        .collect();
    let effective_bounds = match &ev.effective_bounds {
        Some(Value::Object(m)) => m.iter().map(|(k, v)| BoundRow { bound: k.clone(), value: bound_text(v) }).collect(),
        _ => Vec::new(),
    };
    let clamps = ev
        .clamps
        .iter()
        .map(|c| ClampRow {
            bound: c.bound.clone(),
            protected: c.protected,
            requested: bound_text(&c.requested),
            effective: bound_text(&c.effective),
        })
        .collect();
    let first_failure = ev.first_failure.as_ref().map(|e| FindingRow {
        code: e.code(),
        subject: e.subject().to_owned(),
        detail: e.detail().to_owned(),
        location: ev.checks.iter().find(|c| !c.verified).and_then(|c| locate(&c.subject, files)),
    });
    let open = not_verified.len();
    let verdict_text = match (&first_failure, ev.consistent) {
        (_, true) => format!(
            "Consistent: every check this protocol can run passed. {open} surface(s) were not verified (listed below). This is evidence, not an authorization."
        ),
        (Some(f), false) => format!("Inconsistent: {} at {}: {}", f.code, if f.subject.is_empty() { "—" } else { &f.subject }, f.detail),
        (None, false) => "Inconsistent: a check failed (see the steps).".to_owned(),
    };
    let evidence = serde_json::to_value(ev).map_err(|e| ViewError::Json(e.to_string()))?;
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    Ok(BlueprintReportView {
        title: title.to_owned(),
        blueprint_path: files.blueprint.display().to_string(),
        deployment_path: files.deployment.display().to_string(),
        inputs: vec![
            InputRow { name: "trusted keys".into(), path: path(&files.keys) },
            InputRow { name: "host bounds".into(), path: path(&files.host_bounds) },
            InputRow { name: "live tool descriptors".into(), path: path(&files.descriptors) },
        ],
        verdict: if ev.consistent {
            crate::tags::Consistency::Consistent
        } else {
            crate::tags::Consistency::Inconsistent
        },
        verdict_text,
        blueprint_digest: ev.blueprint_digest.map(|d| d.to_string()),
        deployment_digest: ev.deployment_digest.map(|d| d.to_string()),
        steps,
        first_failure,
        effective_bounds,
        clamps,
        not_verified,
        evidence,
    })
}

/// The blueprint's `blueprint_id` and `release_number` as a title, read
/// leniently (a title only; the reconcile itself judges the bytes).
pub fn title_of(blueprint_bytes: &[u8]) -> Option<String> {
    let v = blueprint::json::decode(blueprint_bytes, &Limits::default()).ok()?;
    let id = v.get("blueprint_id")?.as_str()?.to_owned();
    Some(match v.get("release_number").and_then(Value::as_i64) {
        Some(n) => format!("{id} release {n}"),
        None => id,
    })
}

/// Reads, reconciles and maps in one call (what the console's command does).
pub fn report(files: &ReconcileFiles) -> Result<BlueprintReportView, ViewError> {
    let ev = reconcile_files(files)?;
    let title = title_of(&read(&files.blueprint)?).unwrap_or_else(|| files.blueprint.display().to_string());
    report_view(&ev, files, &title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abp_13_host_owned_surfaces_are_classed_host_owned() {
        for s in reconcile::HOST_OWNED {
            assert_eq!(not_verified_row(s, "x").kind, crate::tags::NotVerifiedKind::HostOwned);
            assert_eq!(step_of(s), None);
        }
        assert_eq!(not_verified_row("bind", "not reached").kind, crate::tags::NotVerifiedKind::NotReached);
        assert_eq!(step_of("binding_attestation_freshness"), Some("bind"));
        assert_eq!(step_of("deployment signatures"), Some("signatures"));
    }

    #[test]
    fn abp_9_bound_values_read_as_words() {
        let v = |j: serde_json::Value| Value::from_serde(&j).unwrap();
        assert_eq!(bound_text(&v(serde_json::json!({"amount": 40, "currency": "EUR"}))), "40 EUR");
        assert_eq!(bound_text(&v(serde_json::json!({"markers": [], "ordinal": "internal"}))), "internal");
        assert_eq!(
            bound_text(&v(serde_json::json!({"markers": ["pci", "phi"], "ordinal": "restricted"}))),
            "restricted + pci, phi"
        );
        assert_eq!(bound_text(&v(serde_json::json!("summary"))), "summary");
        assert_eq!(bound_text(&v(serde_json::json!(16000))), "16000");
    }
}
