//! §7/§8: negotiation, the extension registry and the criticality table,
//! and the byte-exact round trip of unknown optional extensions (property-tested).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;

use blueprint::canon;
use blueprint::json::{self, Value};
use blueprint::limits::Limits;
use blueprint::negotiation::{negotiate, Support};
use blueprint::registry::{self, namespace_check, Criticality, Entry, Registry, State};
use proptest::prelude::*;

fn j(t: &str) -> Value {
    json::decode(t.as_bytes(), &Limits::default()).expect("json")
}

fn artifact(ext: &str, rev: i64, required: &str) -> Value {
    j(&format!(
        r#"{{"content_digest":"sha-256:x","extensions":{ext},"protocol_revision":{rev},"required_core_fields":{required}}}"#
    ))
}

fn registry_with(ns: &str, criticality: Criticality, state: State) -> Registry {
    Registry {
        entries: vec![Entry { namespace: ns.into(), owner: "t".into(), criticality, state, schema_digest: None }],
    }
}

#[test]
fn s7_revision_is_a_set_both_directions_fail_closed() {
    let s = Support::this_release();
    let ok = negotiate(&artifact(r#"{"critical":{},"optional":{}}"#, 1, "[]"), &s).expect("rev 1");
    assert_eq!(ok.revision, 1);
    assert_eq!(
        negotiate(&artifact(r#"{"critical":{},"optional":{}}"#, 2, "[]"), &s).expect_err("above").code(),
        "protocol_revision_unsupported"
    );
    let mut gap = Support::this_release();
    gap.revisions = vec![1, 3];
    assert_eq!(
        negotiate(&artifact(r#"{"critical":{},"optional":{}}"#, 2, "[]"), &gap).expect_err("gap").code(),
        "protocol_revision_unsupported"
    );
    assert_eq!(
        negotiate(&artifact(r#"{"critical":{},"optional":{}}"#, 0, "[]"), &s).expect_err("below").code(),
        "invalid_constraint"
    );
}

#[test]
fn s7_required_core_fields_three_checks() {
    let s = Support::this_release();
    let e = r#"{"critical":{},"optional":{}}"#;
    assert_eq!(
        negotiate(&artifact(e, 1, r#"["blueprint_id","ceilings"]"#), &s).expect("ok").required_core_fields,
        vec!["blueprint_id", "ceilings"]
    );
    assert_eq!(
        negotiate(&artifact(e, 1, r#"["no_such"]"#), &s).expect_err("unknown").code(),
        "required_core_field_unsupported"
    );
    assert_eq!(
        negotiate(&artifact(e, 1, r#"["attestations"]"#), &s).expect_err("evidence-only").code(),
        "required_core_field_not_digest_covered"
    );
    assert_eq!(
        negotiate(&artifact(e, 1, r#"["content_digest"]"#), &s).expect_err("digest").code(),
        "required_core_field_not_digest_covered"
    );
    let mut narrow = Support::this_release();
    narrow.core_fields = vec!["blueprint_id".into()];
    assert_eq!(
        negotiate(&artifact(e, 1, r#"["ceilings"]"#), &narrow).expect_err("unsupported").code(),
        "required_core_field_unsupported"
    );
}

#[test]
fn s7_criticality_table_every_cell() {
    let ns = "com.example.t/ext";
    let ext = |side: &str| {
        j(&format!(
            r#"{{"critical":{{{}}},"optional":{{{}}}}}"#,
            if side == "c" { format!("\"{ns}\":{{}}") } else { String::new() },
            if side == "o" { format!("\"{ns}\":{{\"k\":1}}") } else { String::new() }
        ))
    };
    let schemas = BTreeMap::new();
    let r = |reg: &Registry, side: &str| registry::resolve(&ext(side), reg, &schemas);
    let empty = Registry { entries: vec![] };
    // unregistered
    assert_eq!(r(&empty, "c").expect_err("x").code(), "extension_unknown_critical");
    assert_eq!(r(&empty, "o").expect("q").quarantined, vec![ns]);
    // reserved
    let reserved = registry_with(ns, Criticality::Optional, State::Reserved);
    assert_eq!(r(&reserved, "c").expect_err("x").code(), "extension_unknown_critical");
    let q = r(&reserved, "o").expect("q");
    assert_eq!(
        (q.retained.len(), q.quarantined.len(), q.notices[0].notice),
        (1, 0, "extension_unknown_optional_retained")
    );
    // active, matching
    assert_eq!(r(&registry_with(ns, Criticality::Optional, State::Active), "o").expect("ok").optional, vec![ns]);
    // active, mismatching (both directions)
    assert_eq!(
        r(&registry_with(ns, Criticality::Optional, State::Active), "c").expect_err("x").code(),
        "extension_criticality_conflict"
    );
    assert_eq!(
        r(&registry_with(ns, Criticality::Critical, State::Active), "o").expect_err("x").code(),
        "extension_criticality_conflict"
    );
    // deprecated: supported + notice
    let d = r(&registry_with(ns, Criticality::Optional, State::Deprecated), "o").expect("dep");
    assert_eq!((d.optional.len(), d.notices[0].notice), (1, "extension_deprecated"));
    // deprecated, criticality mismatching: the conflict holds for every live state
    assert_eq!(
        r(&registry_with(ns, Criticality::Critical, State::Deprecated), "o").expect_err("x").code(),
        "extension_criticality_conflict"
    );
    // retired
    assert_eq!(
        r(&registry_with(ns, Criticality::Critical, State::Retired), "c").expect_err("x").code(),
        "extension_retired"
    );
    let rt = r(&registry_with(ns, Criticality::Optional, State::Retired), "o").expect("retained");
    assert_eq!((rt.retained.len(), rt.quarantined.len(), rt.notices[0].notice), (1, 0, "extension_retired"));
}

#[test]
fn s8_critical_bodies_need_the_registered_schema() {
    let s = Support::this_release();
    let ext = j(r#"{"critical":{"com.example/federation":{"issuer":"org-a"}},"optional":{}}"#);
    let ok = registry::resolve(&ext, &s.registry, &s.schemas).expect("shipped schema");
    assert_eq!(ok.critical, vec!["com.example/federation"]);
    assert_eq!(
        registry::resolve(&ext, &s.registry, &BTreeMap::new()).expect_err("none").code(),
        "extension_schema_unavailable"
    );
    let mut other = BTreeMap::new();
    other.insert("com.example/federation".to_string(), j(r#"{"type":"object"}"#));
    assert_eq!(
        registry::resolve(&ext, &s.registry, &other).expect_err("swap").code(),
        "extension_schema_digest_mismatch"
    );
    // the body must validate against the schema
    let bad = j(r#"{"critical":{"com.example/federation":{"issuer":5}},"optional":{}}"#);
    assert_eq!(registry::resolve(&bad, &s.registry, &s.schemas).expect_err("body").code(), "invalid_type");
    // a registered critical namespace without a published schema digest cannot validate
    let graph = j(r#"{"critical":{"com.example.commerce/graph":{}},"optional":{}}"#);
    assert_eq!(
        registry::resolve(&graph, &s.registry, &s.schemas).expect_err("unpublished").code(),
        "extension_schema_unavailable"
    );
}

#[test]
fn s7_payloads_cannot_carry_bounds_or_core_members() {
    let s = Support::this_release();
    for body in [r#"{"max_cost":5}"#, r#"{"deep":[{"classification_ceiling":"public"}]}"#, r#"{"content_digest":"x"}"#]
    {
        let ext = j(&format!(r#"{{"critical":{{}},"optional":{{"com.example.z/q":{body}}}}}"#));
        assert_eq!(
            registry::resolve(&ext, &s.registry, &s.schemas).expect_err(body).code(),
            "extension_payload_forbidden",
            "{body}"
        );
    }
}

#[test]
fn s7_same_namespace_on_both_sides_is_a_duplicate() {
    let ns = "com.example.t/ext";
    let reg = registry_with(ns, Criticality::Critical, State::Retired);
    let both = j(&format!(r#"{{"critical":{{"{ns}":{{}}}},"optional":{{"{ns}":{{}}}}}}"#));
    assert_eq!(registry::resolve(&both, &reg, &BTreeMap::new()).expect_err("dup").code(), "extension_duplicate");
    // A live (active or deprecated) namespace on both sides contradicts its registered criticality on one.
    let deprecated = registry_with(ns, Criticality::Critical, State::Deprecated);
    assert_eq!(
        registry::resolve(&both, &deprecated, &BTreeMap::new()).expect_err("conflict").code(),
        "extension_criticality_conflict"
    );
    let unregistered = Registry { entries: vec![] };
    assert_eq!(
        registry::resolve(&both, &unregistered, &BTreeMap::new()).expect_err("dup").code(),
        "extension_duplicate"
    );
    let active = registry_with(ns, Criticality::Critical, State::Active);
    assert_eq!(
        registry::resolve(&both, &active, &BTreeMap::new()).expect_err("conflict").code(),
        "extension_criticality_conflict"
    );
    let reg2 = Registry { entries: vec![] };
    let opt_only = j(&format!(r#"{{"critical":{{}},"optional":{{"{ns}":{{}}}}}}"#));
    registry::resolve(&opt_only, &reg2, &BTreeMap::new()).expect("single");
}

#[test]
fn s8_namespace_form() {
    for ok in ["com.example.commerce/graph", "com.example/federation", "org.a-b.c/x-1"] {
        namespace_check(ok).unwrap_or_else(|_| panic!("{ok}"));
    }
    for bad in [
        "Com.example/x",
        "com.example",
        "com.example/a/b",
        "https://example.com/x",
        "//example.com/x",
        "example/x",
        "com.example/",
        "com..x/y",
    ] {
        assert!(namespace_check(bad).is_err(), "{bad}");
    }
    let s = Support::this_release();
    let ext = j(r#"{"critical":{},"optional":{"https://evil.example/x":{}}}"#);
    assert_eq!(
        registry::resolve(&ext, &s.registry, &s.schemas).expect_err("uri").code(),
        "extension_namespace_invalid"
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-9_007_199_254_740_991i64..=9_007_199_254_740_991).prop_map(|i| Value::Number(json::Number::Int(i))),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| Value::Number(json::Number::Float(f))),
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\u{e9}\u{ff3a}\u{10000}]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(json::Map::from_pairs(m.into_iter().collect()))),
        ]
    })
}

proptest! {
    /// §7: an unknown optional extension round-trips byte-exactly:
    /// decode → to_value → encode is a fixed point, and it is quarantined.
    #[test]
    fn s7_unknown_optional_extension_roundtrips_byte_exactly(payload in arb_json()) {
        let mut ext = json::Map::new();
        let mut optional = json::Map::new();
        optional.insert("com.example.unknown/thing", payload);
        ext.insert("critical", Value::Object(json::Map::new()));
        ext.insert("optional", Value::Object(optional));
        let ext = Value::Object(ext);
        let bytes = canon::canonical_bytes(&ext).expect("encode");
        let decoded = canon::decode_canonical(&bytes, &Limits::default()).expect("canonical decode");
        let again = canon::canonical_bytes(&decoded).expect("re-encode");
        prop_assert_eq!(&again, &bytes);
        let s = Support::this_release();
        match registry::resolve(&decoded, &s.registry, &s.schemas) {
            Ok(r) => prop_assert_eq!(r.quarantined, vec!["com.example.unknown/thing".to_string()]),
            Err(e) => prop_assert_eq!(e.code(), "extension_payload_forbidden"),
        }
    }
}

/// §8 at the current release: `com.example.platform/estate-contract` is
/// registered critical with a digest pin; the schema this host ships is the
/// pinned one, sits inside the dialect's complexity ceiling, and a body is
/// validated against it. `com.example.platform/estate` is deprecated.
#[test]
fn s8_estate_contract_is_pinned_and_its_shipped_schema_is_the_pin() {
    let s = Support::this_release();
    let e = s.registry.get("com.example.platform/estate-contract").expect("registered");
    assert_eq!((e.criticality, e.state), (Criticality::Critical, State::Active));
    let shipped = &s.schemas["com.example.platform/estate-contract"];
    assert_eq!(registry::schema_digest(shipped).expect("digest").to_string(), registry::ESTATE_CONTRACT_PIN);
    assert_eq!(e.schema_digest.map(|d| d.to_string()).as_deref(), Some(registry::ESTATE_CONTRACT_PIN));
    assert!(blueprint::schema::complexity(shipped).expect("metered") <= blueprint::schema::CEILING);
    let dep = s.registry.get("com.example.platform/estate").expect("registered");
    assert_eq!((dep.criticality, dep.state), (Criticality::Optional, State::Deprecated));
    let body = |cond: &str| {
        j(&format!(
            r#"{{"critical":{{"com.example.platform/estate-contract":{{"asset_materialization_window":{{"definition":{{"name":"d","version":1}},"window_days":null}},"objective_condition":{cond}}}}},"optional":{{}}}}"#
        ))
    };
    let leaf = r#"{"definition":{"name":"d","version":1},"op":"materialization_present"}"#;
    let ok = registry::resolve(&body(leaf), &s.registry, &s.schemas).expect("a leaf");
    assert_eq!(ok.critical, vec!["com.example.platform/estate-contract"]);
    // three tiers pass, a fourth is no oneOf branch: invalid_cardinality
    let tiers = |n: usize| (0..n).fold(leaf.to_string(), |inner, _| format!(r#"{{"args":[{inner}],"op":"not"}}"#));
    registry::resolve(&body(&tiers(3)), &s.registry, &s.schemas).expect("three tiers");
    assert_eq!(
        registry::resolve(&body(&tiers(4)), &s.registry, &s.schemas).expect_err("four").code(),
        "invalid_cardinality"
    );
    // a version below 1 inside a leaf: the leaf matches no branch
    let bad = r#"{"definition":{"name":"d","version":0},"op":"materialization_present"}"#;
    assert_eq!(registry::resolve(&body(bad), &s.registry, &s.schemas).expect_err("v0").code(), "invalid_cardinality");
}

/// §8: a host's registry entry for a compiled namespace is lifecycle-only:
/// its state is taken, its criticality is not (the registry's alone), and
/// compiled entries the host does not name stay in force.
#[test]
fn s8_host_registry_is_lifecycle_only_over_the_compiled_registry() {
    let host = j(
        r#"{"com.example/federation":{"criticality":"optional","state":"deprecated"},"org.own/thing":{"criticality":"optional","state":"active"}}"#,
    );
    let reg = Registry::from_support(&host).expect("layered");
    let fed = reg.get("com.example/federation").expect("compiled");
    assert_eq!((fed.criticality, fed.state), (Criticality::Critical, State::Deprecated));
    assert_eq!(reg.get("org.own/thing").expect("host's").criticality, Criticality::Optional);
    assert!(reg.get("com.example.commerce/graph").is_some(), "compiled entries the host does not name stay");
    let swapped = j(
        r#"{"com.example/federation":{"criticality":"critical","state":"active","schema_digest":"sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}"#,
    );
    assert_eq!(Registry::from_support(&swapped).expect_err("pin").code(), "extension_schema_digest_mismatch");
}
