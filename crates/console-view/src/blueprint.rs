//! The developer's view of an Agent Blueprint Protocol reconcile (ABP §13):
//! reads a Blueprint, its Deployment and the host's inputs from disk, runs
//! `blueprint::reconcile` exactly as `jcp blueprint reconcile … --json` does,
//! and maps the Evidence to rows a person reads — the verdict, each step of
//! the pinned order with its checks, the effective bounds and clamps, and
//! everything the pass did NOT verify. A step that produced no check is
//! shown as not run, never as passed; a consistent record is shown as
//! evidence with its gaps, never as "clean".
//!
//! It also writes the console's demo Blueprint + Deployment (generated here
//! with the crate's own encoder and digests, signed with a demo key).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use blueprint::artifact::{self, Kind};
use blueprint::binding::BindingInputs;
use blueprint::json::{Map, Value};
use blueprint::limits::Limits;
use blueprint::reconcile::{self, Evidence, Inputs};
use blueprint::signature::KeySet;
use blueprint::{b64, canon, signature};
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

// ---------------------------------------------------------------- the view

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

/// A place in an artifact a failure points at: the file, and either a byte
/// offset (decode errors: shown as line and column with the line's text) or
/// a JSON pointer (structure errors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct JsonLocation {
    /// `blueprint` or `deployment`.
    pub artifact: String,
    /// The file.
    pub file: String,
    /// The byte offset, for a decode error.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub byte: Option<u64>,
    /// 1-based line of that byte.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub line: Option<u64>,
    /// 1-based column (in characters) of that byte.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub column: Option<u64>,
    /// The JSON pointer, for a structure error (`/signatures/0/kid`).
    pub pointer: Option<String>,
    /// The line's text (at most 160 characters around the column), when the file reads.
    pub excerpt: Option<String>,
    /// The caret's 0-based character position within `excerpt`.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub caret: Option<u64>,
    /// In words: `deployment.json line 3, column 12` or `blueprint.json at /signatures/0`.
    pub text: String,
}

/// Line, column (1-based, characters) and the line's text around a byte offset.
fn line_col(bytes: &[u8], offset: usize) -> (u64, u64, String, u64) {
    let offset = offset.min(bytes.len());
    let before = &bytes[..offset];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line_end = bytes[offset..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| offset + i);
    let line = before.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let head = String::from_utf8_lossy(&bytes[line_start..offset]).chars().count();
    let text: Vec<char> =
        String::from_utf8_lossy(&bytes[line_start..line_end]).trim_end_matches('\r').chars().collect();
    // A window of 160 characters that keeps the caret in view.
    let from = head.saturating_sub(80);
    let excerpt: String = text.iter().skip(from).take(160).collect();
    (line, head as u64 + 1, excerpt, (head - from) as u64)
}

/// The location a check's subject (`blueprint byte 21`, `deployment /signatures/0`) names.
pub fn locate(subject: &str, files: &ReconcileFiles) -> Option<JsonLocation> {
    let (artifact, rest) = subject.split_once(' ')?;
    let path = match artifact {
        "blueprint" => &files.blueprint,
        "deployment" => &files.deployment,
        _ => return None,
    };
    let file = path.display().to_string();
    let name = path.file_name().map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
    if let Some(n) = rest.strip_prefix("byte ").and_then(|n| n.trim().parse::<usize>().ok()) {
        let (line, column, excerpt, caret) = match std::fs::read(path) {
            Ok(bytes) => {
                let (l, c, e, k) = line_col(&bytes, n);
                (Some(l), Some(c), Some(e), Some(k))
            }
            Err(_) => (None, None, None, None),
        };
        let text = match (line, column) {
            (Some(l), Some(c)) => format!("{name} line {l}, column {c} (byte {n})"),
            _ => format!("{name} byte {n}"),
        };
        return Some(JsonLocation {
            artifact: artifact.to_owned(),
            file,
            byte: Some(n as u64),
            line,
            column,
            pointer: None,
            excerpt,
            caret,
            text,
        });
    }
    let pointer = rest.split_whitespace().next().filter(|p| p.starts_with('/'))?;
    Some(JsonLocation {
        artifact: artifact.to_owned(),
        file,
        byte: None,
        line: None,
        column: None,
        pointer: Some(pointer.to_owned()),
        excerpt: None,
        caret: None,
        text: format!("{name} at {pointer}"),
    })
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

// ---------------------------------------------------------------- the demo

/// The demo's producer key id (its public key is written to `keys.json`).
pub const DEMO_KEY_ID: &str = "demo-producer";
/// The demo's one logical operation.
pub const DEMO_OPERATION: &str = "demo.console.fetch";

/// A fixed demo signing key: the demo must be the same on every machine
/// (its digests are shown and compared in tests). It signs nothing but the
/// demo artifacts, and only its public half is trusted, through `keys.json`.
fn demo_key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[0x5d; 32])
}

fn sha256_tagged(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    blueprint::digest::Tagged(sha2::Sha256::digest(bytes).into()).to_string()
}

fn val(j: &serde_json::Value) -> Result<Value, ViewError> {
    Value::from_serde(j).map_err(|e| ViewError::Demo(e.to_string()))
}

/// The live tool the demo deployment binds, as the host would describe it.
fn demo_descriptor() -> serde_json::Value {
    serde_json::json!({"name": DEMO_OPERATION, "operation_kind": "read", "input": {"type": "object"}, "output": {"type": "object"}})
}

fn demo_blueprint() -> serde_json::Value {
    serde_json::json!({
        "blueprint_id": "demo.console/summarize",
        "capability_requirements": [{
            "approval_trait": "none", "argument_schema": {"type": "object"}, "authority_trait": "local_policy",
            "classification_ceiling": "internal", "impact_class": "ordinary", "operation_family": DEMO_OPERATION,
            "operation_kind": "read", "result_schema": {"type": "object"}
        }],
        "ceilings": {"max_attempts": 2, "max_concurrency": 1, "max_cost": {"amount": 50, "currency": "EUR"}, "max_depth": 4,
                     "max_descendants": 8, "max_elapsed_ms": 30000, "max_fan_out": 2, "max_tokens": 20000},
        "classification_ceiling": "internal",
        "content_digest": "",
        "effect_intents": [],
        "evaluation_assertions": [{"kind": "predicate", "port": "summary", "predicate": {"op": "exists", "path": "/text"}}],
        "extensions": {"critical": {}, "optional": {}},
        "input_ports": [{"classification_ceiling": "internal", "name": "document", "required": true, "schema": {"type": "object"}}],
        "output_contract": {"classification_ceiling": "internal", "port": "summary"},
        "output_ports": [{"classification_ceiling": "internal", "name": "summary", "required": true,
                          "schema": {"properties": {"text": {"type": "string"}}, "type": "object"}}],
        "producer": {"created_at": "2026-11-01T00:00:00Z", "identity": "demo.console", "toolchain": "jcp.console"},
        "protocol_revision": 1,
        "release_number": 3,
        "required_core_fields": ["ceilings"],
        "triggers": ["manual"]
    })
}

fn demo_host_bounds(max_cost: u64, max_tokens: u64) -> serde_json::Value {
    serde_json::json!({"approval_trait": "none", "authority_trait": "local_policy", "classification_ceiling": "internal", "disclosure_ceiling": "summary",
        "effect_impact_ceiling": "ordinary", "max_attempts": 2, "max_concurrency": 1, "max_cost": {"amount": max_cost, "currency": "EUR"},
        "max_depth": 4, "max_descendants": 8, "max_elapsed_ms": 30000, "max_fan_out": 2, "max_tokens": max_tokens})
}

fn demo_deployment(blueprint_digest: &str, descriptor_digest: &str) -> serde_json::Value {
    let placeholder = sha256_tagged(b"demo build of jcp-console");
    serde_json::json!({
        "authority_requirement": {"adapter_identity": "demo.adapters.authority", "profile_identity": "demo.profiles.read-only"},
        "blueprint_release": {"blueprint_id": "demo.console/summarize", "content_digest": blueprint_digest, "release_number": 3},
        "build_identities": [{"digest": placeholder, "kind": "package", "name": "jcp_console", "version": "0.1.0"}],
        "data_bindings": [],
        "deployment_digest": "",
        "effect_owner": {"adapter_identity": "demo.adapters.effects", "idempotency": {"key_derivation": "host", "recovery": "best_effort"}},
        "eligibility": {
            "beneficiary": {"band": "operator", "kind": "beneficiary_band", "policy": "demo.policies/bands"},
            "owner": {"band": "operator", "kind": "owner_band", "policy": "demo.policies/bands"},
            "runtime_principal": {"band": "operator", "kind": "runtime_band", "policy": "demo.policies/bands"}
        },
        "evaluation_binding": {"adapter_identity": "demo.adapters.evaluations", "corpus": {"digest": placeholder, "name": "demo.corpora/summaries"}},
        "extensions": {"critical": {}, "optional": {}},
        "host_bounds": demo_host_bounds(40, 20000),
        "lifecycle": {"activated_at": "2026-11-01T00:00:00Z", "state": "active"},
        "model_policy": {"allowed_model_roles": ["summarizer"], "max_cost": {"amount": 10, "currency": "EUR"}, "max_tokens": 10000},
        "protocol_revision": 1,
        "required_core_fields": [],
        "scope_projection": {"adapter_identity": "demo.adapters.scope"},
        "signer_custody": "host_managed",
        "tool_bindings": [{"adapter_identity": "demo.adapters.tools", "attested_at": "2026-11-01T00:00:00Z",
                           "descriptor_digest": descriptor_digest, "logical_operation": DEMO_OPERATION,
                           "schema_digest": sha256_tagged(b"{\"type\":\"object\"}")}]
    })
}

/// Digests `j` as `kind` (its digest member set to the computed digest),
/// signs it with the demo key (ABP §6 detached envelope) and returns the
/// canonical text and the digest.
fn seal(kind: Kind, j: &serde_json::Value) -> Result<(String, String), ViewError> {
    use ed25519_dalek::Signer as _;
    let err = |e: blueprint::Error| ViewError::Demo(e.to_string());
    let mut v = val(j)?;
    let Value::Object(m) = &mut v else { return Err(ViewError::Demo("an artifact is an object".into())) };
    let digest = artifact::compute_digest(kind, m).map_err(err)?;
    m.insert(kind.digest_member(), Value::str(digest.to_string()));
    let attrs = val(
        &serde_json::json!({"algorithm": "Ed25519", "content_digest": digest.to_string(), "created_at": "2026-11-01T00:00:00Z",
        "key_id": DEMO_KEY_ID, "purpose": kind.purpose()}),
    )?;
    let prot = val(&serde_json::json!({"alg": "EdDSA", "b64": false, "crit": ["b64"], "kid": DEMO_KEY_ID}))?;
    let input = signature::signing_input(&prot, &attrs).map_err(err)?;
    let sig = demo_key().sign(&input).to_bytes();
    let entry = Value::Object(Map::from_pairs(vec![
        ("protected".into(), prot),
        ("signature".into(), Value::str(b64::encode(&sig))),
        ("signed_attributes".into(), attrs),
    ]));
    m.insert("signatures", Value::Array(vec![entry]));
    Ok((canon::canonical_string(&v).map_err(err)?, digest.to_string()))
}

/// The demo's files as (name, text), generated with the blueprint crate's
/// encoder: a signed Blueprint, two signed Deployments of it (the second
/// binds a tool whose live descriptor changed since it was attested — the
/// rug-pull case), the trusted key, host bounds and the live descriptors.
pub fn demo_texts() -> Result<Vec<(&'static str, String)>, ViewError> {
    let (bp, bp_digest) = seal(Kind::Blueprint, &demo_blueprint())?;
    let descriptor = canon::canonical_bytes(&val(&demo_descriptor())?).map_err(|e| ViewError::Demo(e.to_string()))?;
    let live = sha256_tagged(&descriptor);
    let (dep, _) = seal(Kind::Deployment, &demo_deployment(&bp_digest, &live))?;
    // Attested against an older descriptor than the tool now serves.
    let stale =
        sha256_tagged(b"{\"name\":\"demo.console.fetch\",\"operation_kind\":\"read\",\"version\":\"previous\"}");
    let (rug, _) = seal(Kind::Deployment, &demo_deployment(&bp_digest, &stale))?;
    let keys = serde_json::json!({ DEMO_KEY_ID: b64::encode(&demo_key().verifying_key().to_bytes()) });
    let mut descriptors = serde_json::Map::new();
    descriptors.insert(DEMO_OPERATION.to_owned(), serde_json::Value::String(live));
    let host = demo_host_bounds(40, 16000);
    let text = |j: &serde_json::Value| -> Result<String, ViewError> {
        canon::canonical_string(&val(j)?).map_err(|e| ViewError::Demo(e.to_string()))
    };
    Ok(vec![
        ("summarize.blueprint.json", bp),
        ("summarize.deployment.json", dep),
        ("summarize-rugpull.deployment.json", rug),
        ("keys.json", text(&keys)?),
        ("host-bounds.json", text(&host)?),
        ("descriptors.json", text(&serde_json::Value::Object(descriptors))?),
    ])
}

/// One demo reconcile: a label for the workspace and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoReconcile {
    /// What it shows.
    pub label: &'static str,
    /// Its files.
    pub files: ReconcileFiles,
}

/// Writes the demo files a folder lacks (each under a temporary name, then
/// renamed, so an interrupted start leaves no half file) and returns the two
/// demo reconciles: the consistent one and the rug-pull one.
pub fn write_demo(dir: &Path) -> Result<Vec<DemoReconcile>, ViewError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| ViewError::DemoWrite { path: dir.to_path_buf(), detail: e.to_string() })?;
    for (name, text) in demo_texts()? {
        let path = dir.join(name);
        if path.exists() {
            continue;
        }
        let part = dir.join(format!("{name}.part"));
        let w = |e: std::io::Error| ViewError::DemoWrite { path: path.clone(), detail: e.to_string() };
        std::fs::write(&part, text).map_err(w)?;
        std::fs::rename(&part, &path).map_err(w)?;
    }
    let files = |deployment: &str| ReconcileFiles {
        blueprint: dir.join("summarize.blueprint.json"),
        deployment: dir.join(deployment),
        keys: Some(dir.join("keys.json")),
        host_bounds: Some(dir.join("host-bounds.json")),
        descriptors: Some(dir.join("descriptors.json")),
    };
    Ok(vec![
        DemoReconcile { label: "demo blueprint: summarize, its deployment", files: files("summarize.deployment.json") },
        DemoReconcile {
            label: "demo blueprint: summarize, a deployment whose tool changed (rug-pull)",
            files: files("summarize-rugpull.deployment.json"),
        },
    ])
}

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
pub(crate) mod tests {
    use super::*;

    #[test]
    fn abp_decode_error_points_at_line_column_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let bp = dir.path().join("bp.json");
        std::fs::write(&bp, "{\"a\": 1,\n  \"b\": [1, 2,, 3]}").unwrap();
        let files = ReconcileFiles {
            blueprint: bp.clone(),
            deployment: dir.path().join("dep.json"),
            keys: None,
            host_bounds: None,
            descriptors: None,
        };
        let l = locate("blueprint byte 21", &files).unwrap();
        assert_eq!((l.line, l.column, l.byte), (Some(2), Some(13), Some(21)));
        assert_eq!(l.excerpt.as_deref(), Some("  \"b\": [1, 2,, 3]}"));
        assert_eq!(l.caret, Some(12));
        assert_eq!(l.text, "bp.json line 2, column 13 (byte 21)");
        let p = locate("deployment /signatures/0 kid=x", &files).unwrap();
        assert_eq!((p.pointer.as_deref(), p.line), (Some("/signatures/0"), None));
        assert!(locate("host bounds", &files).is_none());
    }

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
