//! §10/§13: binding and reconcile in the pinned order
//! with Evidence whose `not_verified` always names the host-owned surfaces.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod signatures_support {
    include!("support/sign.rs");
}

use blueprint::artifact::{self, Kind};
use blueprint::binding::{verify_binding, BindingInputs};
use blueprint::canon;
use blueprint::json::{self, Map, Value};
use blueprint::limits::Limits;
use blueprint::reconcile::{reconcile, Inputs, HOST_OWNED, STEPS};
use blueprint::signature::KeySet;
use ed25519_dalek::SigningKey;

fn golden(name: &str) -> Vec<u8> {
    std::fs::read(testkit::interop(&format!("agent-blueprint-protocol/vectors/{name}"))).expect("golden")
}

fn j(t: &str) -> Value {
    json::decode(t.as_bytes(), &Limits::default()).expect("json")
}

fn edit(bytes: &[u8], kind: Kind, f: impl FnOnce(&mut Map)) -> Vec<u8> {
    let mut v = json::decode(bytes, &Limits::default()).expect("json");
    if let Value::Object(m) = &mut v {
        f(m);
        let d = artifact::compute_digest(kind, m).expect("digest");
        m.insert(kind.digest_member(), Value::str(d.to_string()));
    }
    canon::canonical_bytes(&v).expect("bytes")
}

fn host_owned_named(ev: &blueprint::reconcile::Evidence) {
    for s in HOST_OWNED {
        assert!(ev.not_verified.iter().any(|n| n.surface == s), "{s} missing from not_verified");
    }
}

#[test]
fn s13_golden_pair_reconciles_with_evidence_never_a_decision() {
    let ev = reconcile(&golden("blueprint-golden.json"), &golden("deployment-golden.json"), &Inputs::default());
    host_owned_named(&ev);
    let steps: Vec<&str> = ev.checks.iter().map(|c| c.step).collect();
    let mut last = 0;
    for s in &steps {
        let i = STEPS.iter().position(|x| x == s).expect("known step");
        assert!(i >= last, "steps out of pinned order: {steps:?}");
        last = i;
    }
    assert_eq!(last, STEPS.len() - 1, "reached bounds");
    // the golden signatures name keys the host did not supply
    assert!(!ev.consistent);
    assert_eq!(ev.signatures.iter().filter(|c| c.code.as_deref() == Some("signature_key_unsupported")).count(), 2);
    assert_eq!(ev.clamps.len(), 0);
    assert_eq!(ev.effective_bounds.as_ref().and_then(|b| b.get("max_tokens")).and_then(Value::as_i64), Some(100_000));
    // complete as JSON
    let s = serde_json::to_value(&ev).expect("serialize");
    for k in ["checks", "effective_bounds", "clamps", "not_verified", "signatures", "consistent"] {
        assert!(s.get(k).is_some(), "{k}");
    }
}

#[test]
fn s13_signed_pair_is_consistent_and_still_names_what_it_did_not_verify() {
    let sk = SigningKey::from_bytes(&[9u8; 32]);
    let bp = signatures_support::signed(Kind::Blueprint, &golden("blueprint-golden.json"), &sk, "bk", "blueprint");
    let dep = signatures_support::signed(Kind::Deployment, &golden("deployment-golden.json"), &sk, "bk", "deployment");
    let mut keys = KeySet::new();
    keys.insert("bk", sk.verifying_key().to_bytes());
    let ev = reconcile(&bp, &dep, &Inputs { keys, ..Inputs::default() });
    assert!(ev.consistent, "{}", ev.to_text());
    host_owned_named(&ev);
    assert!(ev.not_verified.len() >= 7);
}

#[test]
fn s13_first_denial_stops_later_steps_which_are_reported_not_verified() {
    let mut dep = golden("deployment-golden.json");
    dep.insert(1, b' ');
    let ev = reconcile(&golden("blueprint-golden.json"), &dep, &Inputs::default());
    assert!(!ev.consistent);
    assert_eq!(ev.first_failure.as_ref().map(blueprint::Error::code).as_deref(), Some("non_canonical_bytes"));
    for s in &STEPS[1..] {
        assert!(ev.not_verified.iter().any(|n| n.surface == *s), "{s}");
    }
    host_owned_named(&ev);
    // digest comes before structure in reconcile
    let tampered = {
        let v = json::decode(&golden("blueprint-golden.json"), &Limits::default()).expect("j");
        let mut m = v.as_object().expect("o").clone();
        m.insert("zz_extra", Value::Null);
        canon::canonical_bytes(&Value::Object(m)).expect("b")
    };
    let ev = reconcile(&tampered, &golden("deployment-golden.json"), &Inputs::default());
    assert_eq!(ev.first_failure.as_ref().map(blueprint::Error::code).as_deref(), Some("digest_mismatch"));
}

#[test]
fn s13_operational_clamps_are_evidence_protected_narrowing_is_denied() {
    let host = j(
        r#"{"approval_trait":"none","authority_trait":"none","classification_ceiling":"internal","disclosure_ceiling":"summary","effect_impact_ceiling":"ordinary","max_attempts":1,"max_concurrency":2,"max_cost":{"amount":1000,"currency":"USD"},"max_depth":8,"max_descendants":64,"max_elapsed_ms":60000,"max_fan_out":4,"max_tokens":100000}"#,
    );
    let ev = reconcile(
        &golden("blueprint-golden.json"),
        &golden("deployment-golden.json"),
        &Inputs { host_bounds: Some(host), ..Inputs::default() },
    );
    assert_eq!(ev.clamps.len(), 1);
    assert_eq!(ev.clamps[0].bound, "max_attempts");
    let host = j(
        r#"{"approval_trait":"none","authority_trait":"none","classification_ceiling":"public","disclosure_ceiling":"summary","effect_impact_ceiling":"ordinary","max_attempts":3,"max_concurrency":2,"max_cost":{"amount":1000,"currency":"USD"},"max_depth":8,"max_descendants":64,"max_elapsed_ms":60000,"max_fan_out":4,"max_tokens":100000}"#,
    );
    let ev = reconcile(
        &golden("blueprint-golden.json"),
        &golden("deployment-golden.json"),
        &Inputs { host_bounds: Some(host), ..Inputs::default() },
    );
    let b = ev.checks.iter().find(|c| c.step == "bounds").expect("bounds check");
    assert_eq!((b.verified, b.code.as_deref()), (false, Some("protected_bound_clamp_denied")));
    assert!(ev.effective_bounds.is_none());
}

fn pair() -> (artifact::Artifact, Vec<u8>) {
    let bp = artifact::decode_blueprint(&golden("blueprint-golden.json"), &Limits::default()).expect("bp");
    (bp, golden("deployment-golden.json"))
}

#[test]
fn s10_binding_pinned_deny_order() {
    let (bp, dep_bytes) = pair();
    let dep = |f: &dyn Fn(&mut Map)| {
        artifact::decode_deployment(&edit(&dep_bytes, Kind::Deployment, |m| f(m)), &Limits::default()).expect("dep")
    };
    let ok = dep(&|_| {});
    verify_binding(&ok, &bp, &BindingInputs::default()).expect("golden binds");
    let lifecycle = dep(&|m| {
        m.insert("lifecycle", j(r#"{"activated_at":"2026-08-20T00:00:00Z","state":"suspended"}"#));
    });
    assert_eq!(
        verify_binding(&lifecycle, &bp, &BindingInputs::default()).expect_err("x").code(),
        "lifecycle_state_invalid"
    );
    let incomplete = dep(&|m| {
        let tb = m.get("tool_bindings").and_then(Value::as_array).expect("tb")[..1].to_vec();
        m.insert("tool_bindings", Value::Array(tb));
    });
    assert_eq!(
        verify_binding(&incomplete, &bp, &BindingInputs::default()).expect_err("x").code(),
        "binding_incomplete"
    );
    let recovery = dep(&|m| {
        m.insert("effect_owner", j(r#"{"adapter_identity":"example.adapters.effects","idempotency":{"key_derivation":"host","recovery":"best_effort"}}"#));
    });
    assert_eq!(
        verify_binding(&recovery, &bp, &BindingInputs::default()).expect_err("x").code(),
        "no_authoritative_recovery"
    );
    let stale = BindingInputs {
        now: Some("2026-08-21T00:00:00Z".into()),
        max_attestation_age_ms: Some(1000),
        ..BindingInputs::default()
    };
    assert_eq!(verify_binding(&ok, &bp, &stale).expect_err("x").code(), "binding_attestation_stale");
    let fresh = BindingInputs {
        now: Some("2026-08-20T00:00:01Z".into()),
        max_attestation_age_ms: Some(1000),
        ..BindingInputs::default()
    };
    assert!(verify_binding(&ok, &bp, &fresh).expect("fresh").freshness_verified);
    let mut rug = BindingInputs::default();
    rug.descriptors
        .insert("example.demo.read_shape".into(), "sha-256:VpMcbixeDnkz4W6WwFyJVm3BG_n8s1jEZANpZLvZEKI".into());
    rug.descriptors.insert("record_summary".into(), "sha-256:zenFB2mNSBmxJWG4DLIWcNyvFdf85m5Ic-BUmWOU02w".into());
    assert_eq!(verify_binding(&ok, &bp, &rug).expect_err("x").code(), "binding_descriptor_mismatch");
}

#[test]
fn s14_registered_extension_payloads_are_scanned_in_reconcile() {
    let bp = edit(&golden("blueprint-golden.json"), Kind::Blueprint, |m| {
        m.insert(
            "extensions",
            j(r#"{"critical":{"com.example/federation":{"issuer":"0123456789abcdef0123456789abcdef"}},"optional":{}}"#),
        );
    });
    let dep = edit(&golden("deployment-golden.json"), Kind::Deployment, |m| {
        let d = artifact::compute_digest(
            Kind::Blueprint,
            json::decode(&bp, &Limits::default()).expect("b").as_object().expect("o"),
        )
        .expect("d");
        m.insert(
            "blueprint_release",
            j(&format!(r#"{{"blueprint_id":"example.demo/echo","content_digest":"{d}","release_number":1}}"#)),
        );
    });
    let ev = reconcile(&bp, &dep, &Inputs::default());
    assert_eq!(
        ev.first_failure.as_ref().map(blueprint::Error::code).as_deref(),
        Some("nonportable_content"),
        "{}",
        ev.to_text()
    );
}
