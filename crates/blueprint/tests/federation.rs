//! §11: the federation profile — the 23-member envelope, the 23-row
//! mapping as data, lossy-aware state codecs, terminal commitments that
//! reproduce the reference corpus, and `verify_commitment` against the
//! receiving context.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::federation::{self, Carriage, Context, ReceiptFact};
use blueprint::json::{self, Value};
use blueprint::limits::Limits;
use blueprint::signature::KeySet;
use blueprint::{b64, canon, signature};
use ed25519_dalek::{Signer, SigningKey};

fn j(t: &str) -> Value {
    json::decode(t.as_bytes(), &Limits::default()).expect("json")
}

/// The reference corpus's valid envelope (interop `federation-decode.json`).
fn envelope() -> Value {
    let cases = testkit::interop_json("agent-blueprint-protocol/cases/federation-decode.json");
    let text =
        cases["cases"].as_array().expect("cases").iter().find(|c| c["id"] == "federation-decode-valid").expect("valid")
            ["input"]["text"]
            .as_str()
            .expect("text")
            .to_string();
    federation::decode_envelope(text.as_bytes(), &Limits::default()).expect("decode").value
}

fn sk() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

fn keys(kid: &str) -> KeySet {
    let mut k = KeySet::new();
    k.insert(kid, sk().verifying_key().to_bytes());
    k
}

/// Re-signs `env`'s receipt as a receiver would get it from an honest issuer:
/// the terminal commitment recomputed, the signature over the covered digest.
fn signed(mut env: Value, purpose: &str) -> Value {
    let commitment = federation::terminal_commitment(&env).expect("commitment");
    set(&mut env, &["evidence_receipt", "terminal_commitment"], Value::str(commitment.to_string()));
    let covered = federation::covered_digest(&env).expect("covered");
    let attrs = j(&format!(
        r#"{{"algorithm":"Ed25519","content_digest":"{covered}","created_at":"2026-08-23T00:00:00Z","key_id":"remote-key","purpose":"{purpose}"}}"#
    ));
    let prot = j(r#"{"alg":"EdDSA","b64":false,"crit":["b64"],"kid":"remote-key"}"#);
    let mut input = b64::encode(&canon::canonical_bytes(&prot).expect("c")).into_bytes();
    input.push(b'.');
    input.extend(signature::signing_payload(&attrs).expect("p"));
    let sig = b64::encode(&sk().sign(&input).to_bytes());
    set(&mut env, &["evidence_receipt", "signature", "signature"], Value::str(sig));
    set(&mut env, &["evidence_receipt", "signature", "signed_attributes"], attrs);
    env
}

fn set(v: &mut Value, path: &[&str], x: Value) {
    let Value::Object(m) = v else { panic!("object") };
    if path.len() == 1 {
        m.insert(path[0], x);
    } else {
        let mut inner = m.get(path[0]).expect("member").clone();
        set(&mut inner, &path[1..], x);
        m.insert(path[0], inner);
    }
}

fn ctx() -> Context {
    Context { keys: keys("remote-key"), ..Context::default() }
}

#[test]
fn s11_terminal_commitment_reproduces_the_reference_corpus_value() {
    // The reference's federation-verify_commitment.json receipts declare
    // this commitment for the corpus envelope's committed members.
    assert_eq!(
        federation::terminal_commitment(&envelope()).expect("c").to_string(),
        "sha-256:Ub1fvxQros48cb7vgXGpEzQwww5-DSZn9MDkY5XU5VU"
    );
}

#[test]
fn s11_mapping_is_23_rows_3_native_5_partial_15_extension() {
    let rows = federation::federation_mapping().expect("mapping");
    assert_eq!(rows.len(), 23);
    assert_eq!(federation::ENVELOPE_FIELDS.len(), 23);
    let n = |c| rows.iter().filter(|r| r.carriage == c).count();
    assert_eq!((n(Carriage::Native), n(Carriage::Partial), n(Carriage::Extension)), (3, 5, 15));
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(usize::from(r.index), i + 1);
    }
    let natives: Vec<&str> = rows.iter().filter(|r| r.carriage == Carriage::Native).map(|r| r.member).collect();
    assert_eq!(natives, ["task_identity", "recovery_handle", "checkpoint_status"]);
}

#[test]
fn s11_mapping_conflicts_are_caught() {
    let mut dup = federation::MAPPING.to_vec();
    dup.push(dup[0]);
    assert_eq!(federation::check_mapping(&dup).expect_err("dup").code(), "federation_mapping_conflict");
    let mut missing = federation::MAPPING.to_vec();
    missing.pop();
    assert_eq!(federation::check_mapping(&missing).expect_err("missing").code(), "federation_mapping_conflict");
    let mut wrong = federation::MAPPING.to_vec();
    wrong[1].carriage = Carriage::Native;
    assert_eq!(federation::check_mapping(&wrong).expect_err("verdict").code(), "federation_mapping_conflict");
}

#[test]
fn s11_state_codecs_are_lossy_aware() {
    assert_eq!(federation::to_a2a("completed").expect("a2a"), "TASK_STATE_COMPLETED");
    assert_eq!(federation::to_a2a("canceled").expect("a2a"), "TASK_STATE_CANCELED");
    assert_eq!(federation::from_a2a("TASK_STATE_AUTH_REQUIRED").expect("from"), "auth_required");
    assert_eq!(federation::from_a2a("TASK_STATE_UNSPECIFIED").expect_err("x").code(), "federation_state_unmappable");
    for s in ["rejected", "auth_required", "submitted"] {
        assert_eq!(federation::to_mcp(s).expect_err(s).code(), "federation_state_unmappable");
    }
    assert_eq!(federation::to_mcp("canceled").expect("mcp"), "cancelled");
    assert_eq!(federation::to_a2a("no-such-state").expect_err("x").code(), "invalid_type");
    assert_eq!(federation::from_mcp("cancelled").expect("mcp"), "canceled");
    assert_eq!(federation::from_mcp("paused").expect_err("x").code(), "invalid_type");
}

#[test]
fn s11_envelope_optional_members_and_cross_field_rules() {
    let base = envelope();
    let decode = |v: &Value| federation::decode_envelope(&canon::canonical_bytes(v).expect("b"), &Limits::default());
    // a checkpoint (non-terminal) envelope: status + commitment, no terminal members
    let mut cp = base.clone();
    if let Value::Object(m) = &mut cp {
        m.remove("terminal_state");
        m.remove("evidence_receipt");
        m.insert("checkpoint_status", Value::str("input_required"));
        m.insert("checkpoint_commitment", Value::str("sha-256:3cwpt1lQKYPAHLc_wv2p7lFh87JNs1L_E1sFChFvTvU"));
        m.insert(
            "checkpoint_request",
            j(r#"{"kind":"input_required","request_digest":"sha-256:3cwpt1lQKYPAHLc_wv2p7lFh87JNs1L_E1sFChFvTvU"}"#),
        );
    }
    decode(&cp).expect("checkpoint envelope");
    let mut half = cp.clone();
    if let Value::Object(m) = &mut half {
        m.remove("checkpoint_commitment");
    }
    assert_eq!(decode(&half).expect_err("half").code(), "invalid_constraint");
    let mut orphan = base.clone();
    if let Value::Object(m) = &mut orphan {
        m.remove("evidence_receipt");
    }
    assert_eq!(decode(&orphan).expect_err("orphan").code(), "invalid_constraint");
    let mut parent = base.clone();
    if let Value::Object(m) = &mut parent {
        m.insert("parent_execution_reference", Value::str("task-parent"));
    }
    assert_eq!(decode(&parent).expect_err("parent").code(), "invalid_constraint");
    if let Value::Object(m) = &mut parent {
        m.insert("initiating_subject", Value::str("subject-beta"));
    }
    decode(&parent).expect("parent with its subject");
}

#[test]
fn s11_verify_commitment_returns_the_fact_and_checks_the_audience() {
    let env = signed(envelope(), "federation-envelope");
    let fact = federation::verify_commitment(&env, &ctx()).expect("valid receipt");
    assert_eq!(fact.task_identity, "task-7f3a2c");
    assert_eq!(fact.terminal_commitment.to_string(), "sha-256:Ub1fvxQros48cb7vgXGpEzQwww5-DSZn9MDkY5XU5VU");
    let pinned = Context {
        issuer: Some("issuer-alpha".into()),
        subject: Some("subject-beta".into()),
        audience: Some("audience-gamma".into()),
        ..ctx()
    };
    federation::verify_commitment(&env, &pinned).expect("pins agree");
    for (issuer, subject, audience, at) in [
        ("x", "subject-beta", "audience-gamma", "/issuer"),
        ("issuer-alpha", "x", "audience-gamma", "/subject"),
        ("issuer-alpha", "subject-beta", "x", "/audience"),
    ] {
        let e = federation::verify_commitment(
            &env,
            &Context {
                issuer: Some(issuer.into()),
                subject: Some(subject.into()),
                audience: Some(audience.into()),
                ..ctx()
            },
        )
        .expect_err("mismatch");
        assert_eq!((e.code().as_str(), e.subject()), ("audience_mismatch", at));
    }
}

#[test]
fn s11_receipt_signature_must_verify_and_name_this_envelope() {
    let env = signed(envelope(), "federation-envelope");
    // an unknown key id, a wrong key
    assert_eq!(
        federation::verify_commitment(&env, &Context::default()).expect_err("no key").code(),
        "signature_key_unsupported"
    );
    let mut wrong = KeySet::new();
    wrong.insert("remote-key", SigningKey::from_bytes(&[8; 32]).verifying_key().to_bytes());
    assert_eq!(
        federation::verify_commitment(&env, &Context { keys: wrong, ..Context::default() })
            .expect_err("wrong key")
            .code(),
        "signature_not_verified"
    );
    // a signature lifted from another purpose
    let lifted = signed(envelope(), "deployment");
    assert_eq!(federation::verify_commitment(&lifted, &ctx()).expect_err("purpose").code(), "invalid_constraint");
    // an honestly signed receipt whose envelope was then edited
    let mut edited = env.clone();
    set(&mut edited, &["idempotency_identity"], Value::str("idem-other"));
    assert_eq!(federation::verify_commitment(&edited, &ctx()).expect_err("edited").code(), "digest_mismatch");
    // a declared commitment that does not recompute (signed as such)
    let mut lying = envelope();
    set(&mut lying, &["terminal_state"], Value::str("failed"));
    let mut lying = signed(lying, "federation-envelope");
    set(&mut lying, &["terminal_state"], Value::str("completed"));
    assert_eq!(federation::verify_commitment(&lying, &ctx()).expect_err("lying").code(), "digest_mismatch");
}

#[test]
fn s11_any_terminal_divergence_from_a_prior_receipt_conflicts() {
    let env = signed(envelope(), "federation-envelope");
    let fact = federation::verify_commitment(&env, &ctx()).expect("valid");
    let same = Context { prior_receipts: vec![fact.clone()], ..ctx() };
    federation::verify_commitment(&env, &same).expect("a repeated identical receipt is consistent");
    for prior in [
        ReceiptFact { terminal_state: "failed".into(), ..fact.clone() },
        ReceiptFact {
            terminal_commitment: blueprint::digest::Tagged::parse(
                "sha-256:T9bmo-1miBbA8FDCG23uJTtdxRPwq7oOTAITqIpuyYk",
            )
            .expect("t"),
            ..fact.clone()
        },
    ] {
        let c = Context { prior_receipts: vec![prior], ..ctx() };
        assert_eq!(
            federation::verify_commitment(&env, &c).expect_err("conflict").code(),
            "federation_terminal_conflict"
        );
    }
    let other_task = Context {
        prior_receipts: vec![ReceiptFact {
            task_identity: "task-other".into(),
            terminal_state: "failed".into(),
            ..fact
        }],
        ..ctx()
    };
    federation::verify_commitment(&env, &other_task).expect("other tasks do not conflict");
    // compare_receipts: any committed component diverging conflicts
    let a = envelope();
    let mut b = a.clone();
    set(&mut b, &["result_classification_ceiling"], j(r#"{"level":"public","markers":[]}"#));
    federation::compare_receipts(&a, &a).expect("same");
    assert_eq!(federation::compare_receipts(&a, &b).expect_err("x").code(), "federation_terminal_conflict");
}

#[test]
fn s11_issuer_key_sets_attribute_keys_to_the_claimed_issuer() {
    let env = signed(envelope(), "federation-envelope");
    let mut sets = std::collections::BTreeMap::new();
    sets.insert("issuer-alpha".to_string(), keys("remote-key"));
    let attributed = Context { issuer_key_sets: Some(sets.clone()), ..Context::default() };
    federation::verify_commitment(&env, &attributed).expect("issuer-alpha's key");
    // another issuer's key set never verifies issuer-alpha's receipt, even with the flat pool holding it
    let mut others = std::collections::BTreeMap::new();
    others.insert("issuer-omega".to_string(), keys("remote-key"));
    let e = federation::verify_commitment(&env, &Context { issuer_key_sets: Some(others), ..ctx() })
        .expect_err("cross-attribution");
    assert_eq!((e.code().as_str(), e.subject()), ("signature_key_unsupported", "/issuer"));
}

#[test]
fn s11_freshness_window_is_inclusive_and_fails_closed_on_bad_pins() {
    let env = signed(envelope(), "federation-envelope");
    let window = |after: &str, before: &str| Context {
        created_after: Some(after.into()),
        created_before: Some(before.into()),
        ..ctx()
    };
    federation::verify_commitment(&env, &window("2026-08-23T00:00:00Z", "2026-08-23T00:00:00Z")).expect("inclusive");
    assert_eq!(
        federation::verify_commitment(&env, &window("2026-08-24T00:00:00Z", "2026-09-01T00:00:00Z"))
            .expect_err("stale")
            .code(),
        "invalid_constraint"
    );
    assert_eq!(
        federation::verify_commitment(&env, &window("yesterday", "2026-09-01T00:00:00Z")).expect_err("pin").code(),
        "invalid_type"
    );
}

#[test]
fn s11_receipt_without_terminal_members_is_refused() {
    let mut env = envelope();
    if let Value::Object(m) = &mut env {
        m.remove("terminal_state");
        m.remove("evidence_receipt");
    }
    assert_eq!(federation::verify_commitment(&env, &ctx()).expect_err("x").code(), "missing_required_field");
}
