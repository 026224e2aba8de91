//! Binding verification (spec §10): a Deployment binds to exactly one
//! Blueprint content digest, and then a pinned deny-ordered check runs:
//! release digest → lifecycle → completeness → recovery → attestation
//! freshness → descriptor digests.

use std::collections::BTreeMap;

use crate::artifact::Artifact;
use crate::error::{fail, Code, Result};
use crate::json::Value;
use crate::shape::parse_timestamp_ms;

/// Host inputs to binding verification.
#[derive(Debug, Clone, Default)]
pub struct BindingInputs {
    /// Current time (RFC 3339 UTC); without it freshness is not verified.
    pub now: Option<String>,
    /// Maximum attestation age in milliseconds (with `now`).
    pub max_attestation_age_ms: Option<i64>,
    /// Live tool descriptor digests by logical operation; without them the
    /// descriptor check is not verified.
    pub descriptors: BTreeMap<String, String>,
}

/// What binding verification could not establish for lack of host input.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BindingReport {
    /// Whether attestation freshness was checked (§10 `binding_attestation_stale`): only when the host supplied
    /// `now` and a maximum age.
    pub freshness_verified: bool,
    /// Whether descriptor digests were compared with live tool descriptors (§10 `binding_descriptor_mismatch`):
    /// only when the host supplied them.
    pub descriptors_verified: bool,
}

fn s<'a>(v: Option<&'a Value>, k: &str) -> &'a str {
    v.and_then(|x| x.get(k)).and_then(Value::as_str).unwrap_or_default()
}

/// Verifies that `deployment` binds `blueprint` (both decoded and valid).
pub fn verify_binding(deployment: &Artifact, blueprint: &Artifact, inputs: &BindingInputs) -> Result<BindingReport> {
    let rel = deployment.get("blueprint_release");
    let declared = s(rel, "content_digest");
    if declared != blueprint.digest.to_string() {
        return fail(
            Code::DeploymentDigestMismatch,
            "/blueprint_release/content_digest",
            format!("deployment binds {declared}, blueprint is {}", blueprint.digest),
        );
    }
    if s(rel, "blueprint_id") != s(Some(&blueprint.value), "blueprint_id")
        || rel.and_then(|r| r.get("release_number")) != blueprint.get("release_number")
    {
        return fail(Code::DeploymentDigestMismatch, "/blueprint_release", "identity differs from the blueprint's");
    }
    let life = deployment.get("lifecycle");
    if s(life, "state") != "active" {
        return fail(Code::LifecycleStateInvalid, "/lifecycle/state", format!("{:?} is not active", s(life, "state")));
    }
    let bindings = deployment.get("tool_bindings").and_then(Value::as_array).unwrap_or_default();
    let bound = |op: &str| bindings.iter().any(|b| s(Some(b), "logical_operation") == op);
    let caps = blueprint.get("capability_requirements").and_then(Value::as_array).unwrap_or_default();
    let effects = blueprint.get("effect_intents").and_then(Value::as_array).unwrap_or_default();
    for (i, c) in caps.iter().enumerate() {
        let op = s(Some(c), "operation_family");
        if !bound(op) {
            return fail(
                Code::BindingIncomplete,
                format!("/capability_requirements/{i}"),
                format!("{op:?} has no tool binding"),
            );
        }
    }
    for (i, e) in effects.iter().enumerate() {
        let op = s(Some(e), "logical_operation");
        if !bound(op) {
            return fail(
                Code::BindingIncomplete,
                format!("/effect_intents/{i}"),
                format!("{op:?} has no tool binding"),
            );
        }
    }
    let mutates = effects.iter().any(|e| s(Some(e), "operation_kind") == "mutation");
    let recovery = s(deployment.get("effect_owner").and_then(|o| o.get("idempotency")), "recovery");
    if mutates && recovery != "authoritative" {
        return fail(
            Code::NoAuthoritativeRecovery,
            "/effect_owner/idempotency/recovery",
            format!("mutating effects need authoritative recovery, got {recovery:?}"),
        );
    }
    let mut report = BindingReport::default();
    if let (Some(now), Some(max_age)) = (&inputs.now, inputs.max_attestation_age_ms) {
        let Some(now_ms) = parse_timestamp_ms(now) else {
            return fail(Code::InvalidConstraint, "now", "expected an RFC 3339 UTC timestamp");
        };
        for (i, b) in bindings.iter().enumerate() {
            let at = parse_timestamp_ms(s(Some(b), "attested_at")).unwrap_or(i64::MIN);
            let age = now_ms.saturating_sub(at);
            if age < 0 || age > max_age {
                return fail(
                    Code::BindingAttestationStale,
                    format!("/tool_bindings/{i}/attested_at"),
                    format!("attestation age {age} ms is outside [0, {max_age}]"),
                );
            }
        }
        report.freshness_verified = true;
    }
    if !inputs.descriptors.is_empty() {
        for (i, b) in bindings.iter().enumerate() {
            let op = s(Some(b), "logical_operation");
            let Some(live_digest) = inputs.descriptors.get(op) else {
                return fail(
                    Code::BindingIncomplete,
                    format!("/tool_bindings/{i}"),
                    format!("no live descriptor for {op:?}"),
                );
            };
            if live_digest != s(Some(b), "descriptor_digest") {
                return fail(
                    Code::BindingDescriptorMismatch,
                    format!("/tool_bindings/{i}/descriptor_digest"),
                    format!("bound {}, live {live_digest}", s(Some(b), "descriptor_digest")),
                );
            }
        }
        report.descriptors_verified = true;
    }
    Ok(report)
}
