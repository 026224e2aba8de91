//! The console's demo Blueprint and Deployments (ABP): generated with the
//! crate's own encoder and digests, signed with a fixed demo key, written
//! with the host's inputs beside them. Built with the `demo` feature.

use std::path::Path;

use blueprint::artifact::{self, Kind};
use blueprint::json::{Map, Value};
use blueprint::{b64, canon, signature};

use super::ReconcileFiles;
use crate::ViewError;

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
