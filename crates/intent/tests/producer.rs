//! §3 the producer (the `IntentCapture` role): the agent's proposal plus the
//! trusted context becomes a binding, accepted, canonicalized and hashed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use intent::{capture, Actor, DownstreamTarget, Object, Proposal, TrustedContext, Value};

fn trusted() -> TrustedContext {
    let mut context = Object::new();
    context.insert("source", "conformance".into());
    TrustedContext {
        tenant_id: "00000000-0000-4000-8000-000000000002".into(),
        intent_id: "11111111-1111-4111-8111-111111111111".into(),
        captured_at: "2026-08-14T10:00:00.000Z".into(),
        expires_at: "2026-08-14T10:01:00.000Z".into(),
        actor: Actor {
            id: "synthetic-refund-agent".into(),
            actor_type: "AI_AGENT".into(),
            runtime: Some("mcp".into()),
            trust_level: None,
        },
        downstream_target: DownstreamTarget {
            system: "shopify".into(),
            operation: "refund".into(),
            environment: None,
            endpoint: Some("POST /refunds".into()),
        },
        idempotency_key: "refund-synthetic-1001-v1".into(),
        context,
        expected_effect_digest: None,
    }
}

const PROPOSAL: &str = r#"{"type":"refund_order","resource":"shopify:order:synthetic-1","parameters":{"amountMinor":35000,"currency":"USD","orderId":"synthetic-1"}}"#;

/// The producer reproduces the spec's first binding (§5) from its parts.
#[test]
fn s5_producer_reproduces_the_pinned_first_binding() {
    let proposal = Proposal::from_value(&intent::parse(PROPOSAL.as_bytes()).unwrap()).unwrap();
    let c = capture(&proposal, &trusted()).unwrap();
    assert_eq!(c.intent_hash, "sha256:aff2fd3aa1a7557a77f20afa5583f56eb0c39529304b31f69ee78e1e7b53e316");
    let doc = testkit::interop_json("agent-safe-intent/agent-safe-intent-v1.json");
    assert_eq!(c.binding, Value::from(&doc["binding"]));
}

#[test]
fn s3_proposal_carrying_anything_but_type_resource_parameters_is_refused() {
    for extra in [
        r#""context":{"idempotency_key":"mine"}"#,
        r#""actor":{"id":"admin","type":"HUMAN"}"#,
        r#""expires_at":"2099-01-01T00:00:00Z""#,
        r#""expected_effect_digest":"sha256:00""#,
        r#""idempotency_key":"mine""#,
    ] {
        let text = PROPOSAL.replacen('{', &format!("{{{extra},"), 1);
        let err = Proposal::from_value(&intent::parse(text.as_bytes()).unwrap()).unwrap_err();
        assert_eq!(err.code(), "PROPOSAL_FORBIDDEN_KEY", "{text}");
    }
}

#[test]
fn s3_proposal_missing_parameters_is_refused() {
    let err = Proposal::from_value(&intent::parse(br#"{"type":"a","resource":"r"}"#).unwrap()).unwrap_err();
    assert_eq!(err.code(), "PROPOSAL_INVALID");
}

#[test]
fn s3_idempotency_key_is_the_producers_not_the_trusted_context_extras() {
    let proposal = Proposal::from_value(&intent::parse(PROPOSAL.as_bytes()).unwrap()).unwrap();
    let mut t = trusted();
    t.context.insert("idempotency_key", "other".into());
    assert_eq!(capture(&proposal, &t).unwrap_err().code(), "CONTEXT_RESERVED_KEY");
}

#[test]
fn s3_producer_refuses_rather_than_repairs() {
    let proposal =
        Proposal::from_value(&intent::parse(PROPOSAL.replace("refund_order", "Refund Order").as_bytes()).unwrap())
            .unwrap();
    assert_eq!(capture(&proposal, &trusted()).unwrap_err().code(), "BINDING_INVALID_VALUE");
    let mut big = Object::new();
    big.insert("items", Value::Array(vec![Value::Null; 1001]));
    let p = Proposal { action_type: "a".into(), resource: "r".into(), parameters: big };
    assert_eq!(capture(&p, &trusted()).unwrap_err().code(), "INTENT_ARRAY_TOO_LARGE");
}

/// §9: adding the optional `expected_effect_digest` changes nothing for a
/// binding without it, and is inside the hash when present.
#[test]
fn s9_expected_effect_digest_is_optional_and_inside_the_hash() {
    let proposal = Proposal::from_value(&intent::parse(PROPOSAL.as_bytes()).unwrap()).unwrap();
    let without = capture(&proposal, &trusted()).unwrap();
    let mut t = trusted();
    t.expected_effect_digest = Some(format!("sha256:{}", "ab".repeat(32)));
    let with = capture(&proposal, &t).unwrap();
    assert_ne!(with.intent_hash, without.intent_hash);
    assert!(with.canonical_json.contains("\"expected_effect_digest\":\"sha256:abab"));
}
