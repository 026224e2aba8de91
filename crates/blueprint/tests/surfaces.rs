//! §8/§10/§12/§14/§15: the surfaces the reference corpus exercises beyond the
//! published interop files — the runner's file-level failures and counts,
//! `schema.validate_instance`, `portability.scan`, `signature.verify` over an
//! entry and a key list, `compatibility.verify` over observed identities, and
//! the host-supplied extension schema registry.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::conformance::{self, run_files};
use blueprint::json::{self, Value};
use blueprint::limits::Limits;
use blueprint::registry::{self, Registry, SchemaRegistry};
use blueprint::signature::{self, KeySet};
use blueprint::{b64, canon, compat, portability, schema, Code};
use ed25519_dalek::{Signer, SigningKey};

fn j(t: &str) -> Value {
    json::decode(t.as_bytes(), &Limits::default()).expect("json")
}

fn file(cases: &str) -> Vec<u8> {
    format!(r#"{{"format":"agent-blueprint-protocol-conformance-cases","cases":[{cases}]}}"#).into_bytes()
}

const OK_CASE: &str = r#"{"class":"valid","id":"ok-1","surface":"portability.scan","input":{"text":"{\"kind\":\"ordinary\"}"},"expected":{"verdict":"valid","clean":true}}"#;

#[test]
fn s15_unknown_surface_fails_its_file_only() {
    let files = vec![
        ("a.json".to_string(), file(OK_CASE)),
        (
            "b.json".to_string(),
            file(r#"{"class":"valid","id":"x-1","surface":"no.such","input":{},"expected":{"verdict":"valid","x":1}}"#),
        ),
        ("c.json".to_string(), b"not json".to_vec()),
        ("d.json".to_string(), file(OK_CASE.replace("ok-1", "ok-2").as_str())),
    ];
    let r = run_files(&files).expect("a run with bad files still reports");
    assert_eq!((r.passed, r.failed, r.files_run), (2, 0, 2));
    assert_eq!(r.file_failures.len(), 2);
    assert_eq!(r.file_failures[0].file, "b.json");
    assert_eq!(r.file_failures[0].code, "corpus_case_invalid");
    assert!(r.file_failures[0].detail.contains("no.such"));
    assert_eq!(r.file_failures[1].file, "c.json");
    assert!(!r.green, "a file that did not run is never green");
}

#[test]
fn s15_report_refuses_a_vacuous_green() {
    // a verdict-only valid expectation pins nothing: it never passes
    let vacuous = file(
        r#"{"class":"valid","id":"v-1","surface":"portability.scan","input":{"text":"{}"},"expected":{"verdict":"valid"}}"#,
    );
    let r = run_files(&[("v.json".into(), vacuous)]).expect("run");
    assert_eq!((r.passed, r.failed, r.green), (0, 1, false));
    // no case at all is refused outright
    let e = run_files(&[("e.json".into(), file(""))]).expect_err("empty");
    assert_eq!(e.code(), "corpus_empty");
    // only bad files: a red report, not a refusal and not a green
    let r = run_files(&[("x.json".into(), b"[]".to_vec())]).expect("red");
    assert_eq!((r.passed, r.green, r.file_failures.len()), (0, false, 1));
    // a real pass is green and names the floor surfaces it did not cover
    let r = run_files(&[("a.json".into(), file(OK_CASE))]).expect("run");
    assert!(r.green);
    assert_eq!(r.missing_surfaces.len(), conformance::SURFACES.len() - 1);
}

#[test]
fn s15_report_counts_per_surface_and_per_class() {
    let cases = [
        OK_CASE.to_string(),
        r#"{"class":"forbidden_portable_value","id":"p-2","surface":"portability.scan","input":{"text":"{\"api_key\":\"x\"}"},"expected":{"verdict":"invalid","code":"forbidden_portable_value"}}"#.to_string(),
        r#"{"class":"forbidden_portable_value","id":"p-3","surface":"portability.scan","input":{"text":"{\"kind\":\"x\"}"},"expected":{"verdict":"invalid","code":"forbidden_portable_value"}}"#.to_string(),
        r#"{"class":"valid","id":"s-1","surface":"schema.validate_instance","input":{"schema":{"type":"integer"},"instance":1},"expected":{"verdict":"valid","valid":true}}"#.to_string(),
    ];
    let r = run_files(&[("m.json".into(), file(&cases.join(",")))]).expect("run");
    let t = |passed, failed| conformance::Tally { passed, failed };
    assert_eq!(r.surfaces["portability.scan"], t(2, 1));
    assert_eq!(r.surfaces["schema.validate_instance"], t(1, 0));
    assert_eq!(r.classes["valid"], t(2, 0));
    assert_eq!(r.classes["forbidden_portable_value"], t(1, 1));
    assert_eq!(r.matrix["portability.scan"]["forbidden_portable_value"], t(1, 1));
    let json = serde_json::to_value(&r).expect("serialize");
    assert_eq!(json["surfaces"]["portability.scan"]["failed"], 1);
}

#[test]
fn s15_run_corpus_dir_verifies_the_own_corpus_and_reports_its_digest() {
    let dir = testkit::conformance("blueprint");
    let r = conformance::run_corpus_dir(&dir).expect("own corpus");
    assert!(r.green, "{:?}", r.results.iter().filter(|x| !x.passed).collect::<Vec<_>>());
    assert!(r.missing_surfaces.is_empty());
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).expect("index")).expect("json");
    assert_eq!(r.corpus_digest.as_deref(), index["corpus_digest"].as_str());
    // a plain folder of case files runs without an index
    let interop = conformance::run_corpus_dir(&testkit::interop("agent-blueprint-protocol/cases")).expect("interop");
    assert_eq!((interop.passed, interop.corpus_digest), (68, None));
    // an unreadable path is refused, typed
    let e = conformance::run_corpus_dir(std::path::Path::new("/no/such/corpus")).expect_err("absent");
    assert_eq!(e.code(), "corpus_file_set_mismatch");
}

#[test]
fn s12_schema_validate_instance_emits_the_schema_codes() {
    let cases: &[(&str, &str, Option<&str>, &str)] = &[
        (r#"{"type":"array","maxItems":2}"#, "[1,2,3]", None, "invalid_cardinality"),
        (r#"{"type":"array","minItems":1}"#, "[]", None, "invalid_cardinality"),
        (r#"{"type":"integer","minimum":10}"#, "5", None, "invalid_constraint"),
        (r#"{"type":"object","additionalProperties":false,"properties":{}}"#, "5", None, "invalid_type"),
        (r#"{"type":"string","format":"email"}"#, "\"a\"", None, "schema_keyword_not_allowed"),
        (r#"{"type":"integer","maximum":"9"}"#, "1", None, "schema_keyword_value_invalid"),
        (r##"{"$ref":"#/$defs/none"}"##, "1", None, "schema_ref_unresolvable"),
        (r##"{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}"##, "1", None, "schema_ref_cycle"),
        (r#"{"properties":{"a":3}}"#, "{}", None, "schema_keyword_value_invalid"),
        ("3", "{}", None, "schema_invalid_shape"),
        (r#"{"$schema":"http://json-schema.org/draft-07/schema#"}"#, "1", None, "schema_keyword_not_allowed"),
        (r#"{"type":"object","required":["a"]}"#, "{}", None, "invalid_cardinality"),
        (r#"{"oneOf":[{"type":"integer"},{"type":"number"}]}"#, "1", None, "invalid_cardinality"),
        ("false", "1", None, "invalid_type"),
        (r#"{"type":"integer"}"#, "1", Some("http://json-schema.org/draft-07/schema#"), "schema_dialect_unknown"),
    ];
    for (s, i, d, code) in cases {
        let e = schema::validate_instance(&j(s), &j(i), *d).expect_err(s);
        assert_eq!(e.code(), *code, "{s} / {i}");
    }
    schema::validate_instance(
        &j(r#"{"type":"object","additionalProperties":false,"properties":{}}"#),
        &j("{}"),
        Some(schema::DIALECT),
    )
    .expect("valid");
    // The complexity ceiling (nodes + keywords + oneOf branches + 4 × depth
    // ≤ 512): `{"type":"object","properties":{…n × true}}` meters n + 17.
    let wide = |n: usize| {
        let props: Vec<String> = (0..n).map(|i| format!(r#""p{i}":true"#)).collect();
        j(&format!(r#"{{"type":"object","properties":{{{}}}}}"#, props.join(",")))
    };
    let fits = wide(schema::CEILING - 17);
    assert_eq!(schema::complexity(&fits).expect("metered"), schema::CEILING);
    schema::validate_instance(&fits, &j("{}"), None).expect("exactly the ceiling");
    let big = wide(schema::CEILING - 16);
    assert_eq!(schema::validate_instance(&big, &j("{}"), None).expect_err("big").code(), "schema_complexity_exceeded");
}

#[test]
fn s14_portability_scan_denies_at_any_depth_with_name_spelling_normalized() {
    let scan = |t: &str| portability::scan(&j(t), "", &[], Code::ForbiddenPortableValue);
    scan(r#"{"kind":"ordinary","items":[{"label":"summary","n":1}]}"#).expect("clean");
    for (t, at) in [
        (r#"{"api_key":"x"}"#, "/api_key"),
        (r#"{"a":[{"b":{"Tenant-ID":"t"}}]}"#, "/a/0/b/Tenant-ID"),
        (r#"{"a":{"PRIVATE_KEY":"k"}}"#, "/a/PRIVATE_KEY"),
        (r#"{"a":{"Row-ID":7}}"#, "/a/Row-ID"),
        (r#"{"a":["https://db.internal/orders"]}"#, "/a/0"),
        (r#"{"a":[[["-----BEGIN PRIVATE KEY-----"]]]}"#, "/a/0/0/0"),
    ] {
        let e = scan(t).expect_err(t);
        assert_eq!((e.code().as_str(), e.subject()), ("forbidden_portable_value", at), "{t}");
    }
}

fn entry(sk: &SigningKey, kid: &str, purpose: &str) -> Value {
    let attrs = j(&format!(
        r#"{{"algorithm":"Ed25519","content_digest":"sha-256:lSNm0cD67wEL0uy3EFDCBe3TA5FzvO6iCL0W0Db8HMo","created_at":"2026-08-23T00:00:00Z","key_id":"{kid}","purpose":"{purpose}"}}"#
    ));
    let prot = j(&format!(r#"{{"alg":"EdDSA","b64":false,"crit":["b64"],"kid":"{kid}"}}"#));
    let mut input = b64::encode(&canon::canonical_bytes(&prot).expect("c")).into_bytes();
    input.push(b'.');
    input.extend(canon::canonical_bytes(&attrs).expect("a"));
    let sig = b64::encode(&sk.sign(&input).to_bytes());
    j(&format!(
        r#"{{"protected":{},"signature":"{sig}","signed_attributes":{}}}"#,
        canon::canonical_string(&prot).expect("p"),
        canon::canonical_string(&attrs).expect("a")
    ))
}

#[test]
fn s10_signature_verify_over_an_entry_and_a_key_list() {
    let sk = SigningKey::from_bytes(&[9; 32]);
    let list = j(&format!(r#"[{{"key_id":"k1","key":"{}"}}]"#, b64::encode(&sk.verifying_key().to_bytes())));
    let keys = KeySet::from_list(&list, "keys").expect("keys");
    // the JWS signing input is BASE64URL(JCS(protected)) "." JCS(signed_attributes)
    let e = entry(&sk, "k1", "deployment");
    signature::verify_signature(&e, &keys).expect("verified");
    let code = |v: &Value, k: &KeySet| signature::verify_signature(v, k).expect_err("refused").code();
    assert_eq!(code(&entry(&sk, "k2", "deployment"), &keys), "signature_key_unsupported");
    assert_eq!(code(&e, &KeySet::new()), "signature_key_unsupported");
    let other = SigningKey::from_bytes(&[10; 32]);
    assert_eq!(code(&entry(&other, "k1", "deployment"), &keys), "signature_not_verified");
    let edit = |from: &str, to: &str| j(&canon::canonical_string(&e).expect("s").replace(from, to));
    assert_eq!(code(&edit(r#","crit":["b64"]"#, ""), &keys), "signature_malformed");
    assert_eq!(code(&edit(r#""alg":"EdDSA""#, r#""alg":"ES256""#), &keys), "signature_algorithm_unsupported");
    assert_eq!(
        code(&edit(r#""algorithm":"Ed25519""#, r#""algorithm":"Ed448""#), &keys),
        "signature_algorithm_unsupported"
    );
    assert_eq!(code(&edit(r#""purpose":"deployment""#, r#""purpose":"anything""#), &keys), "signature_malformed");
    assert_eq!(code(&edit("2026-08-23T00:00:00Z", "2026-08-23"), &keys), "signature_malformed");
    assert_eq!(code(&edit(r#""signature":""#, r#""signature":"!!"#), &keys), "signature_malformed");
    assert_eq!(code(&edit(r#""protected":"#, r#""extra":1,"protected":"#), &keys), "signature_malformed");
    // a signature over the §6 "separator, zero byte" payload does not verify
    // (the corpus signatures are over JCS(signed_attributes) alone)
    let attrs = e.get("signed_attributes").expect("a");
    let mut input = b64::encode(&canon::canonical_bytes(e.get("protected").expect("p")).expect("c")).into_bytes();
    input.push(b'.');
    input.extend(b"agent-blueprint-protocol/signature\0");
    input.extend(canon::canonical_bytes(attrs).expect("a"));
    let sep = canon::canonical_string(&e)
        .expect("s")
        .replace(e.get("signature").and_then(Value::as_str).expect("sig"), &b64::encode(&sk.sign(&input).to_bytes()));
    assert_eq!(code(&j(&sep), &keys), "signature_not_verified");
    // a malformed key list is a typed refusal
    assert_eq!(
        KeySet::from_list(&j(r#"[{"key_id":"k1","key":"AAAA"}]"#), "keys").expect_err("short").code(),
        "invalid_type"
    );
    assert_eq!(KeySet::from_list(&j(r#"{"k1":"x"}"#), "keys").expect_err("map").code(), "invalid_type");
}

#[test]
fn s10_compatibility_verify_matches_observed_identities_exactly() {
    let dep = j(
        r#"{"build_identities":[{"digest":"sha-256:5JPgXuHZCEXmNHvHfvBfM6jAp9JiMTvqf6y3n4YchnY","kind":"package","name":"abp","version":"0.1.0"}]}"#,
    );
    let id = |v: &str| {
        format!(
            r#"{{"digest":"sha-256:5JPgXuHZCEXmNHvHfvBfM6jAp9JiMTvqf6y3n4YchnY","kind":"package","name":"abp","version":"{v}"}}"#
        )
    };
    let obs = |items: &[String]| j(&format!("[{}]", items.join(",")));
    let run = |o: &Value| compat::verify_observed(&dep, o.as_array().expect("a"));
    assert_eq!(run(&obs(&[id("0.1.0"), id("9.9.9")])).expect("exact").len(), 1);
    for (o, code) in [
        (obs(&[id("~> 1")]), "compatibility_identity_inexact"),
        (obs(&[id("0.1.1")]), "compatibility_entry_missing"),
        (obs(&[]), "compatibility_entry_missing"),
        (obs(&[id("0.1.0"), id("0.1.0")]), "compatibility_duplicate_entry"),
        (j(r#"[{"kind":"package"}]"#), "invalid_type"),
        (j("[1]"), "invalid_type"),
    ] {
        assert_eq!(run(&o).expect_err(code).code(), code);
    }
    let empty = j(r#"{"build_identities":[]}"#);
    assert_eq!(compat::verify_observed(&empty, &[]).expect_err("empty").code(), "invalid_cardinality");
}

#[test]
fn s8_host_supplied_schema_registry_checks_digests() {
    let fed_schema = j(registry::FEDERATION_SCHEMA);
    let compiled = registry::compiled();
    let mut schemas = SchemaRegistry::new();
    let d = schemas.register(&compiled, "com.example/federation", fed_schema.clone()).expect("shipped schema");
    assert_eq!(Some(d), compiled.get("com.example/federation").and_then(|e| e.schema_digest));
    assert_eq!(
        schemas.register(&compiled, "com.example/federation", j(r#"{"type":"array"}"#)).expect_err("swap").code(),
        "extension_schema_digest_mismatch"
    );
    // a registered critical namespace whose registry entry publishes no schema
    let graph = j(r#"{"type":"object","properties":{"nodes":{"type":"array"}}}"#);
    assert_eq!(
        schemas.register(&compiled, "com.example.commerce/graph", graph.clone()).expect_err("none").code(),
        "extension_schema_unavailable"
    );
    assert_eq!(
        schemas.register(&compiled, "com.example/unregistered", graph.clone()).expect_err("unregistered").code(),
        "extension_schema_unavailable"
    );
    // A compiled namespace the registry pins no schema for stays unavailable
    // whatever digest a host declares: the host's entry is lifecycle-only there.
    let gd = registry::schema_digest(&graph).expect("digest");
    let lifecycle = Registry::from_support(&j(&format!(
        r#"{{"com.example.commerce/graph":{{"criticality":"critical","state":"active","schema_digest":"{gd}"}}}}"#
    )))
    .expect("host registry");
    assert_eq!(
        schemas.register(&lifecycle, "com.example.commerce/graph", graph.clone()).expect_err("no pin").code(),
        "extension_schema_unavailable"
    );
    // A namespace only the host registers is the host's to govern: its support
    // entry declares the digest, its schema registry supplies the schema.
    let host = Registry::from_support(&j(&format!(
        r#"{{"org.host/graph":{{"criticality":"critical","state":"active","schema_digest":"{gd}"}}}}"#
    )))
    .expect("host registry");
    schemas.register(&host, "org.host/graph", graph.clone()).expect("host-governed schema");
    let ext = j(r#"{"critical":{"org.host/graph":{"nodes":[]}},"optional":{}}"#);
    let r = registry::resolve(&ext, &host, schemas.as_map()).expect("critical body validates");
    assert_eq!(r.critical, vec!["org.host/graph".to_string()]);
    let bad = j(r#"{"critical":{"org.host/graph":{"nodes":{}}},"optional":{}}"#);
    assert_eq!(registry::resolve(&bad, &host, schemas.as_map()).expect_err("body").code(), "invalid_type");
    // without the host's digest the same body is refused
    let bare =
        Registry::from_support(&j(r#"{"org.host/graph":{"criticality":"critical","state":"active"}}"#)).expect("r");
    assert_eq!(
        registry::resolve(&ext, &bare, schemas.as_map()).expect_err("no digest").code(),
        "extension_schema_unavailable"
    );
    // a host cannot rebind a compiled-in schema digest
    assert_eq!(
        Registry::from_support(&j(&format!(
            r#"{{"com.example/federation":{{"criticality":"critical","state":"active","schema_digest":"{gd}"}}}}"#
        )))
        .expect_err("rebind")
        .code(),
        "extension_schema_digest_mismatch"
    );
    // schema digests are extension-schema domain digests of the parsed schema's JCS
    assert_eq!(
        registry::schema_digest(&fed_schema).expect("d"),
        blueprint::digest::Tagged::compute(
            blueprint::digest::Domain::ExtensionSchema,
            registry::FEDERATION_SCHEMA.as_bytes()
        )
    );
}
