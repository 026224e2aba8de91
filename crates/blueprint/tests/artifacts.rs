//! §2/§5/§10/§14: the closed worlds, golden digests, pinned precedence,
//! compatibility and portability.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::artifact::{self, Kind, BLUEPRINT_FIELDS, DEPLOYMENT_FIELDS};
use blueprint::canon;
use blueprint::json::{self, Value};
use blueprint::limits::Limits;

fn golden(name: &str) -> Vec<u8> {
    std::fs::read(testkit::interop(&format!("agent-blueprint-protocol/vectors/{name}"))).expect("golden")
}

fn value(name: &str) -> Value {
    json::decode(&golden(name), &Limits::default()).expect("json")
}

/// Re-encodes after an edit and re-digests so only the edit is under test.
fn redigest(kind: Kind, mut v: Value) -> Vec<u8> {
    let m = v.as_object().expect("obj").clone();
    let d = artifact::compute_digest(kind, &m).expect("digest");
    if let Value::Object(m) = &mut v {
        m.insert(kind.digest_member(), Value::str(d.to_string()));
    }
    canon::canonical_bytes(&v).expect("bytes")
}

fn edit(name: &str, f: impl FnOnce(&mut blueprint::json::Map)) -> Value {
    let mut v = value(name);
    if let Value::Object(m) = &mut v {
        f(m);
    }
    v
}

#[test]
fn s2_closed_worlds_have_18_and_19_members() {
    assert_eq!(BLUEPRINT_FIELDS.len(), 18);
    assert_eq!(BLUEPRINT_FIELDS.iter().filter(|f| f.required).count(), 16);
    assert_eq!(DEPLOYMENT_FIELDS.len(), 19);
    assert_eq!(DEPLOYMENT_FIELDS.iter().filter(|f| f.required).count(), 17);
    for opt in ["signatures", "attestations"] {
        assert!(BLUEPRINT_FIELDS.iter().any(|f| f.name == opt && !f.required));
        assert!(DEPLOYMENT_FIELDS.iter().any(|f| f.name == opt && !f.required));
    }
}

#[test]
fn s5_golden_digests_reproduce() {
    let bp = artifact::decode_blueprint(&golden("blueprint-golden.json"), &Limits::default()).expect("blueprint");
    assert_eq!(bp.digest.to_string(), "sha-256:b1Aw4cU5AbV9k8bdbZkRCsySDHGpTAwB-aQm57Wh7B8");
    let dep = artifact::decode_deployment(&golden("deployment-golden.json"), &Limits::default()).expect("deployment");
    assert_eq!(dep.digest.to_string(), "sha-256:tWFr0caS0AWFJd2UcB9gZv3kNjIUP8xZ08WWM_h8xgo");
    assert_eq!(
        dep.get("blueprint_release").and_then(|r| r.get("content_digest")).and_then(Value::as_str),
        Some(bp.digest.to_string().as_str())
    );
}

#[test]
fn s5_signatures_and_attestations_are_not_digest_covered() {
    let v = edit("blueprint-golden.json", |m| {
        m.insert("signatures", Value::Array(vec![]));
    });
    let bytes = canon::canonical_bytes(&v).expect("bytes");
    let a = artifact::decode_blueprint(&bytes, &Limits::default()).expect("still valid");
    assert_eq!(a.digest.to_string(), "sha-256:b1Aw4cU5AbV9k8bdbZkRCsySDHGpTAwB-aQm57Wh7B8");
}

#[test]
fn s5_any_covered_byte_change_is_digest_mismatch() {
    let v = edit("blueprint-golden.json", |m| {
        m.insert("triggers", json::decode(br#"["manual","event"]"#, &Limits::default()).expect("t"));
    });
    let bytes = canon::canonical_bytes(&v).expect("bytes");
    assert_eq!(artifact::decode_blueprint(&bytes, &Limits::default()).expect_err("tamper").code(), "digest_mismatch");
}

#[test]
fn s2_precedence_unknown_before_missing_before_type() {
    // unknown + missing + wrong type at once: unknown wins
    let v = edit("blueprint-golden.json", |m| {
        m.insert("zz_extra", Value::Null);
        m.remove("triggers");
        m.insert("ceilings", Value::str("oops"));
    });
    let e = artifact::decode_blueprint(&redigest(Kind::Blueprint, v), &Limits::default()).expect_err("x");
    assert_eq!((e.code().as_str(), e.subject()), ("unknown_member", "/zz_extra"));
    // missing + wrong type: missing wins
    let v = edit("blueprint-golden.json", |m| {
        m.remove("triggers");
        m.insert("ceilings", Value::str("oops"));
    });
    let e = artifact::decode_blueprint(&redigest(Kind::Blueprint, v), &Limits::default()).expect_err("x");
    assert_eq!((e.code().as_str(), e.subject()), ("missing_required_field", "/triggers"));
}

#[test]
fn s2_precedence_type_before_constraint_before_cardinality_before_nested() {
    let ports = |n: usize| {
        let one = r#"{"classification_ceiling":"internal","name":"p","required":true,"schema":{"type":"object"}}"#;
        json::decode(format!("[{}]", vec![one; n].join(",")).as_bytes(), &Limits::default()).expect("ports")
    };
    // constraint (blueprint_id) + cardinality (65 ports) + type (release_number): type wins
    let v = edit("blueprint-golden.json", |m| {
        m.insert("blueprint_id", Value::str("UPPER/Case"));
        m.insert("input_ports", ports(65));
        m.insert("release_number", Value::str("1"));
    });
    assert_eq!(
        artifact::decode_blueprint(&redigest(Kind::Blueprint, v), &Limits::default()).expect_err("x").code(),
        "invalid_type"
    );
    let v = edit("blueprint-golden.json", |m| {
        m.insert("blueprint_id", Value::str("UPPER/Case"));
        m.insert("input_ports", ports(65));
    });
    assert_eq!(
        artifact::decode_blueprint(&redigest(Kind::Blueprint, v), &Limits::default()).expect_err("x").code(),
        "invalid_constraint"
    );
    // cardinality before nested (a bad nested member inside the 65)
    let v = edit("blueprint-golden.json", |m| {
        m.insert("input_ports", ports(65));
        m.insert(
            "producer",
            json::decode(
                br#"{"created_at":"yesterday","identity":"example.demo","toolchain":"t"}"#,
                &Limits::default(),
            )
            .expect("p"),
        );
    });
    assert_eq!(
        artifact::decode_blueprint(&redigest(Kind::Blueprint, v), &Limits::default()).expect_err("x").code(),
        "invalid_cardinality"
    );
}

#[test]
fn s3_float_tagged_window_value_in_a_core_field_is_invalid_type() {
    let v = edit("blueprint-golden.json", |m| {
        m.insert("release_number", json::decode(b"9007199254740992", &Limits::default()).expect("f"));
    });
    assert_eq!(
        artifact::decode_blueprint(&redigest(Kind::Blueprint, v), &Limits::default()).expect_err("x").code(),
        "invalid_type"
    );
}

#[test]
fn s3_non_canonical_artifact_bytes_are_refused_first() {
    let mut bytes = golden("blueprint-golden.json");
    bytes.insert(1, b' ');
    assert_eq!(artifact::decode_blueprint(&bytes, &Limits::default()).expect_err("x").code(), "non_canonical_bytes");
}

#[test]
fn s10_build_identities_are_exact_or_refused() {
    for (version, code) in [
        ("*", "compatibility_identity_inexact"),
        ("^0.1.0", "compatibility_identity_inexact"),
        ("0.1.x", "compatibility_identity_inexact"),
        (">=1", "compatibility_identity_inexact"),
    ] {
        let v = edit("deployment-golden.json", |m| {
            let bi = format!(
                r#"[{{"digest":"sha-256:5JPgXuHZCEXmNHvHfvBfM6jAp9JiMTvqf6y3n4YchnY","kind":"package","name":"agent_blueprint_protocol","version":"{version}"}}]"#
            );
            m.insert("build_identities", json::decode(bi.as_bytes(), &Limits::default()).expect("bi"));
        });
        assert_eq!(
            artifact::decode_deployment(&redigest(Kind::Deployment, v), &Limits::default()).expect_err(version).code(),
            code,
            "{version}"
        );
    }
    let dup = edit("deployment-golden.json", |m| {
        let one = r#"{"digest":"sha-256:5JPgXuHZCEXmNHvHfvBfM6jAp9JiMTvqf6y3n4YchnY","kind":"package","name":"abp","version":"0.1.0"}"#;
        m.insert(
            "build_identities",
            json::decode(format!("[{one},{one}]").as_bytes(), &Limits::default()).expect("bi"),
        );
    });
    assert_eq!(
        artifact::decode_deployment(&redigest(Kind::Deployment, dup), &Limits::default()).expect_err("dup").code(),
        "compatibility_duplicate_entry"
    );
}

#[test]
fn s10_verify_compatibility_is_identity_exact() {
    use blueprint::compat::{verify_compatibility, Identity};
    let dep = value("deployment-golden.json");
    let id = |v: &str, d: &str| Identity {
        kind: "package".into(),
        name: "agent_blueprint_protocol".into(),
        version: v.into(),
        digest: d.into(),
    };
    let d = "sha-256:5JPgXuHZCEXmNHvHfvBfM6jAp9JiMTvqf6y3n4YchnY";
    verify_compatibility(&dep, &[id("0.1.0", d)]).expect("exact");
    assert_eq!(verify_compatibility(&dep, &[id("0.1.1", d)]).expect_err("x").code(), "compatibility_identity_inexact");
    assert_eq!(verify_compatibility(&dep, &[id("~0.1", d)]).expect_err("x").code(), "compatibility_identity_inexact");
    let missing = Identity { kind: "image".into(), name: "other".into(), version: "1.0.0".into(), digest: d.into() };
    assert_eq!(verify_compatibility(&dep, &[missing]).expect_err("x").code(), "compatibility_entry_missing");
}

#[test]
fn s14_portability_denylists_names_and_value_shapes_at_any_depth() {
    for (member, val) in [
        ("toolchain", r#""-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----""#),
        ("toolchain", r#""https://db.internal:5432/orders""#),
        ("toolchain", r#""0123456789abcdef0123456789abcdef""#),
        ("toolchain", r#""eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln""#),
        ("Tenant-ID", r#""org-7""#),
        ("api_key", r#""x""#),
    ] {
        let v = edit("blueprint-golden.json", |m| {
            let mut producer = m.get("producer").expect("p").as_object().expect("o").clone();
            producer.insert(member, json::decode(val.as_bytes(), &Limits::default()).expect("v"));
            m.insert("producer", Value::Object(producer));
        });
        let e = artifact::decode_blueprint(&redigest(Kind::Blueprint, v), &Limits::default()).expect_err(val);
        assert_eq!(e.code(), "forbidden_portable_value", "{member}={val}");
    }
}

#[test]
fn s2_schema_dialect_is_bounded() {
    for (schema, code) in [
        (r#"{"type":"object","patternProperties":{}}"#, "schema_keyword_not_allowed"),
        // The dialect is the surface's argument, never a document member: `$schema`
        // is outside the 16 keywords, as are `anyOf`/`allOf`.
        (r#"{"$schema":"http://json-schema.org/draft-07/schema#"}"#, "schema_keyword_not_allowed"),
        (r#"{"anyOf":[{"type":"string"}]}"#, "schema_keyword_not_allowed"),
        (r#"{"oneOf":[]}"#, "schema_keyword_value_invalid"),
        (r##"{"$ref":"http://example.com/s#/x"}"##, "schema_keyword_not_allowed"),
        (r#"{"type":"objekt"}"#, "schema_keyword_value_invalid"),
        (r##"{"$ref":"#/$defs/missing"}"##, "schema_ref_unresolvable"),
        (r##"{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}"##, "schema_ref_cycle"),
        (r#"{"properties":{"a":5}}"#, "schema_keyword_value_invalid"),
        ("5", "schema_invalid_shape"),
    ] {
        let v = json::decode(schema.as_bytes(), &Limits::default()).expect("schema");
        assert_eq!(blueprint::schema::check_schema(&v, "s").expect_err(schema).code(), code, "{schema}");
    }
    // Each oneOf branch meters twice (a branch and a node): 300 of them pass 512.
    let wide = format!(r#"{{"oneOf":[{}]}}"#, vec!["true"; 300].join(","));
    let v = json::decode(wide.as_bytes(), &Limits::default()).expect("wide");
    assert_eq!(blueprint::schema::check_schema(&v, "s").expect_err("wide").code(), "schema_complexity_exceeded");
}

#[test]
fn s2_predicates_are_bounded_and_resolved() {
    use blueprint::predicate::Predicate;
    let d = |t: &str| json::decode(t.as_bytes(), &Limits::default()).expect("json");
    let schema = d(r#"{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer"}}}"#);
    let p = Predicate::compile(
        &d(r#"{"op":"and","args":[{"op":"exists","path":"/n"},{"op":"ge","path":"/n","value":2}]}"#),
        Some(&schema),
        "p",
    )
    .expect("ok");
    assert!(p.eval(&d(r#"{"n":3}"#)));
    assert!(!p.eval(&d(r#"{"n":1}"#)));
    assert_eq!(
        Predicate::compile(&d(r#"{"op":"matches","path":"/n","value":1}"#), Some(&schema), "p").expect_err("op").code(),
        "predicate_op_unknown"
    );
    assert_eq!(
        Predicate::compile(&d(r#"{"op":"eq","path":"/m","value":1}"#), Some(&schema), "p").expect_err("path").code(),
        "predicate_path_unresolved"
    );
    let many = format!(r#"{{"op":"and","args":[{}]}}"#, vec![r#"{"op":"exists","path":"/n"}"#; 64].join(","));
    assert_eq!(
        Predicate::compile(&d(&many), Some(&schema), "p").expect_err("nodes").code(),
        "predicate_nodes_exceeded"
    );
}
