//! §15: the project's own corpus under conformance/blueprint/ — the loader
//! verifies per-file hashes, the exact file set, counts, ids, applicability
//! and the corpus digest; a vacuous or tampered corpus fails; every case passes.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};

use blueprint::conformance::{self, SURFACES};
use blueprint::corpus::{self, INDEX};
use blueprint::error::Code;

fn files() -> BTreeMap<String, Vec<u8>> {
    let root = testkit::conformance("blueprint");
    let mut out = BTreeMap::new();
    out.insert(INDEX.to_string(), std::fs::read(root.join(INDEX)).expect("index"));
    for e in std::fs::read_dir(root.join("cases")).expect("cases") {
        let p = e.expect("e").path();
        out.insert(format!("cases/{}", p.file_name().expect("n").to_string_lossy()), std::fs::read(&p).expect("read"));
    }
    out
}

#[test]
fn s15_own_corpus_loads_and_every_case_passes() {
    let c = corpus::load(&files()).expect("verified corpus");
    assert!(c.cases.len() >= 120, "{}", c.cases.len());
    let report = conformance::run_files(&c.files).expect("run");
    let fails: Vec<String> = report
        .results
        .iter()
        .filter(|r| !r.passed)
        .map(|r| format!("{}: expected {} got {}", r.id, r.expected, r.got))
        .collect();
    assert!(fails.is_empty(), "{}", fails.join("\n"));
    assert_eq!(report.passed, c.cases.len());
    for s in SURFACES {
        assert!(report.surfaces.contains_key(*s), "{s} has no case");
    }
}

#[test]
fn s12_own_corpus_has_an_invalid_case_for_every_byte_reachable_code() {
    let c = corpus::load(&files()).expect("corpus");
    let expected: BTreeSet<String> = c
        .cases
        .iter()
        .filter_map(|(_, k)| k.expected.get("code").and_then(blueprint::json::Value::as_str).map(str::to_string))
        .collect();
    // Only reachable through the API, never from input bytes: an Int outside
    // the window cannot be decoded, and the mapping table is compiled in.
    let api_only = ["integer_magnitude", "federation_mapping_conflict"];
    let missing: Vec<&str> =
        Code::ALL.iter().map(|c| c.as_str()).filter(|c| !expected.contains(*c) && !api_only.contains(c)).collect();
    assert!(missing.is_empty(), "codes without an invalid case: {missing:?}");
    for l in blueprint::limits::Limit::ALL {
        assert!(expected.contains(&format!("ceiling:{}", l.as_str())), "ceiling:{}", l.as_str());
    }
    for c in &expected {
        assert!(Code::parse(c).is_some() || c.starts_with("ceiling:"), "{c} is not in the vocabulary");
    }
}

#[test]
fn s15_tampered_corpus_fails_closed() {
    let base = files();
    // one flipped byte in a case file
    let mut t = base.clone();
    let f = t.get_mut("cases/json-decode.json").expect("file");
    let i = f.iter().position(|b| *b == b'1').expect("digit");
    f[i] = b'2';
    assert_eq!(corpus::load(&t).expect_err("hash").code(), "corpus_hash_mismatch");
    // a missing file
    let mut t = base.clone();
    t.remove("cases/bounds-new.json");
    assert_eq!(corpus::load(&t).expect_err("set").code(), "corpus_file_set_mismatch");
    // an extra file
    let mut t = base.clone();
    t.insert("cases/extra.json".into(), b"{}".to_vec());
    assert_eq!(corpus::load(&t).expect_err("set").code(), "corpus_file_set_mismatch");
    // an edited index without a new corpus digest
    let mut t = base.clone();
    let idx = String::from_utf8(t[INDEX].clone()).expect("utf8").replacen("\"valid\"", "\"valid_x\"", 1);
    t.insert(INDEX.into(), idx.into_bytes());
    assert_eq!(corpus::load(&t).expect_err("index").code(), "corpus_hash_mismatch");
    // no index at all
    let mut t = base;
    t.remove(INDEX);
    assert_eq!(corpus::load(&t).expect_err("index").code(), "corpus_index_invalid");
}

#[test]
fn s15_index_edits_that_are_redigested_are_still_caught() {
    use blueprint::json::{self, Value};
    let base = files();
    let redigest = |f: &dyn Fn(&mut blueprint::json::Map)| {
        let mut v = json::decode(&base[INDEX], &blueprint::limits::Limits::default()).expect("index");
        if let Value::Object(m) = &mut v {
            f(m);
            let d = corpus::corpus_digest(&Value::Object(m.clone())).expect("d");
            m.insert("corpus_digest", Value::str(d.to_string()));
        }
        let mut t = base.clone();
        t.insert(INDEX.into(), blueprint::canon::canonical_bytes(&v).expect("b"));
        corpus::load(&t)
    };
    assert_eq!(
        redigest(&|m| m.insert("case_count", Value::from_u64(1))).expect_err("count").code(),
        "corpus_count_mismatch"
    );
    assert_eq!(
        redigest(&|m| {
            let mut app = m.get("applicability").and_then(Value::as_object).cloned().expect("app");
            app.insert("json.decode", Value::Array(vec![Value::str("no_such_class")]));
            m.insert("applicability", Value::Object(app));
        })
        .expect_err("app")
        .code(),
        "corpus_applicability_incomplete"
    );
    assert_eq!(
        redigest(&|m| {
            m.insert("files", Value::Array(vec![]));
            m.insert("case_count", Value::from_u64(0));
        })
        .expect_err("empty")
        .code(),
        "corpus_empty"
    );
}

#[test]
fn s15_corpus_is_reproducible_from_its_generator_index() {
    // The committed index equals the one rebuilt from the committed files.
    let base = files();
    let idx = blueprint::json::decode(&base[INDEX], &blueprint::limits::Limits::default()).expect("idx");
    let app: BTreeMap<String, Vec<String>> = idx
        .get("applicability")
        .and_then(blueprint::json::Value::as_object)
        .expect("app")
        .iter()
        .map(|(k, v)| {
            (k.clone(), v.as_array().expect("a").iter().map(|x| x.as_str().expect("s").to_string()).collect())
        })
        .collect();
    let list: Vec<(String, Vec<u8>)> = idx
        .get("files")
        .and_then(blueprint::json::Value::as_array)
        .expect("files")
        .iter()
        .map(|f| {
            let p = f.get("path").and_then(blueprint::json::Value::as_str).expect("p").to_string();
            let b = base[&p].clone();
            (p, b)
        })
        .collect();
    let rebuilt = corpus::build_index(&list, &app).expect("rebuild");
    assert_eq!(
        blueprint::canon::canonical_bytes(&rebuilt).expect("b"),
        blueprint::canon::canonical_bytes(&idx).expect("b")
    );
}

#[test]
fn s15_own_corpus_covers_the_16_surfaces_in_the_reference_input_forms() {
    let c = corpus::load(&files()).expect("own corpus");
    // every surface of the reference's floor has cases, under its own name
    for s in SURFACES {
        assert!(c.cases.iter().any(|(_, k)| k.surface == *s), "{s} has no case");
    }
    // the five surfaces whose files the interop folder does not publish use
    // the reference's input members (runner.ex @6182b2d8)
    let forms: &[(&str, &[&[&str]])] = &[
        ("signature.verify", &[&["entry", "keys"], &["entry"], &["keys", "text"]]),
        ("compatibility.verify", &[&["observed", "text"]]),
        ("federation.verify_commitment", &[&["context", "envelope"]]),
        ("portability.scan", &[&["text"]]),
        ("schema.validate_instance", &[&["instance", "schema"], &["dialect", "instance", "schema"]]),
    ];
    for (surface, allowed) in forms {
        let mut reference_form = 0;
        for (_, k) in c.cases.iter().filter(|(_, k)| k.surface == *surface) {
            let keys: Vec<&str> = k.input.as_object().expect("input object").keys().map(String::as_str).collect();
            assert!(allowed.contains(&keys.as_slice()), "{}: input {keys:?}", k.id);
            if keys.as_slice() != ["keys", "text"] {
                reference_form += 1;
            }
        }
        assert!(reference_form >= 5, "{surface}: {reference_form} cases in the reference's form");
    }
    // key lists are the reference's [{key_id, key}] wherever they appear
    for (_, k) in c.cases.iter().filter(|(_, k)| k.surface == "federation.verify_commitment") {
        if let Some(keys) = k.input.get("context").and_then(|x| x.get("keys")) {
            for e in keys.as_array().expect("key list") {
                assert!(e.get("key_id").is_some() && e.get("key").is_some(), "{}", k.id);
            }
        }
    }
}

/// A corpus in the reference's own index format (`index.json` of its
/// `priv/conformance/`), built here from synthetic cases: 16 surfaces × the
/// first six floor classes (96 cells with a case), the rest `n_a`; one
/// schema data file a case names by `schema_file`.
fn reference_corpus(
    tweak: &dyn Fn(&mut serde_json::Value, &mut BTreeMap<String, Vec<u8>>),
) -> BTreeMap<String, Vec<u8>> {
    use serde_json::{json, Value as J};
    use sha2::Digest as _;
    let canon = |v: &J| -> Vec<u8> {
        let b = serde_json::to_vec(v).expect("json");
        let parsed = blueprint::json::decode(&b, &blueprint::limits::Limits::default()).expect("decode");
        blueprint::canon::canonical_bytes(&parsed).expect("jcs")
    };
    let mut files = BTreeMap::new();
    let schema = json!({"properties": {"n": {"minimum": 1, "type": "integer"}}, "required": ["n"], "type": "object"});
    files.insert("schemas/n.schema.json".to_string(), canon(&schema));
    let mut applicability = serde_json::Map::new();
    let mut listed = Vec::new();
    let mut total = 0;
    for surface in SURFACES {
        let mut row = serde_json::Map::new();
        let mut cases = Vec::new();
        for (i, class) in conformance::CLASSES.iter().enumerate() {
            if i < 6 {
                let input = if *surface == "schema.validate_instance" && *class == "valid" {
                    json!({"instance": {"n": 2}, "schema_file": "schemas/n.schema.json"})
                } else {
                    json!({"text": "1"})
                };
                let expected = match (*surface, *class) {
                    ("schema.validate_instance", "valid") => json!({"verdict": "valid", "valid": true}),
                    (_, "valid") => json!({"verdict": "valid", "value": 1}),
                    _ => json!({"verdict": "invalid", "code": "invalid_type"}),
                };
                cases.push(json!({"class": class, "expected": expected, "id": format!("{surface}-{class}"), "input": input, "surface": surface}));
                row.insert((*class).to_string(), json!(1));
            } else {
                row.insert((*class).to_string(), json!({"n_a": "synthetic"}));
            }
        }
        applicability.insert((*surface).to_string(), J::Object(row));
        let path = format!("cases/{}.json", surface.replace('.', "-"));
        total += cases.len();
        files.insert(path.clone(), canon(&json!({"cases": cases, "format": conformance::FORMAT})));
        listed.push(path);
    }
    let mut index = json!({
        "applicability": applicability, "format": corpus::REFERENCE_FORMAT, "protocol_revision": 1,
        "public_key_fingerprints": [], "registry_digest": "sha-256:FG2f38K0hba8tTP7iUaw7vHjgcnN_5F5Mp0v4G6UDVs",
        "total_cases": total,
    });
    listed.push("schemas/n.schema.json".to_string());
    index["files"] = J::Array(
        listed
            .iter()
            .map(|p| {
                let n = if p.starts_with("cases/") { 6 } else { 0 };
                json!({"cases": n, "path": p, "sha256_base64url": blueprint::b64::encode(&sha2::Sha256::digest(&files[p]))})
            })
            .collect(),
    );
    tweak(&mut index, &mut files);
    let parsed =
        blueprint::json::decode(&serde_json::to_vec(&index).expect("json"), &blueprint::limits::Limits::default())
            .expect("index");
    index["corpus_digest"] = J::from(corpus::corpus_digest(&parsed).expect("digest").to_string());
    files.insert(INDEX.to_string(), canon(&index));
    files
}

#[test]
fn s15_a_reference_format_corpus_is_verified_as_its_own_loader_does() {
    let c = corpus::load_any(&reference_corpus(&|_, _| {})).expect("verified reference-format corpus");
    assert_eq!(c.cases.len(), 96);
    // The case naming a schema file runs against the shipped document.
    let report = conformance::run_files(&c.files).expect("run");
    let r = report.results.iter().find(|r| r.id == "schema.validate_instance-valid").expect("schema_file case");
    assert!(r.passed, "{r:?}");
    // and it is the document that judges: the same case with n = 0 fails its minimum
    let c0 = corpus::load_any(&reference_corpus(&|_, f| {
        let p = "cases/schema-validate_instance.json";
        let t = String::from_utf8(f[p].clone()).expect("utf8").replace(r#"{"n":2}"#, r#"{"n":0}"#);
        f.insert(p.into(), t.into_bytes());
    }));
    assert_eq!(c0.expect_err("hash").code(), "corpus_hash_mismatch", "the edit is caught before anything runs");

    let refused = |tweak: &dyn Fn(&mut serde_json::Value, &mut BTreeMap<String, Vec<u8>>)| {
        corpus::load_any(&reference_corpus(tweak)).expect_err("refused").code()
    };
    // a file that is not its stated hash
    assert_eq!(refused(&|_, f| f.get_mut("cases/json-decode.json").expect("f").push(b' ')), "corpus_hash_mismatch");
    // a file present but not listed
    assert_eq!(
        refused(&|_, f| {
            f.insert("cases/extra.json".into(), b"{}".to_vec());
        }),
        "corpus_file_set_mismatch"
    );
    // a per-file count that is not the file's
    assert_eq!(refused(&|i, _| i["files"][0]["cases"] = 5.into()), "corpus_count_mismatch");
    // a cell marked n_a that holds a case
    assert_eq!(
        refused(&|i, _| i["applicability"]["json.decode"]["valid"] = serde_json::json!({"n_a": "x"})),
        "corpus_applicability_incomplete"
    );
    // fewer cells with a case than the floor requires
    assert_eq!(
        refused(&|i, f| {
            for s in SURFACES.iter().skip(1) {
                let p = format!("cases/{}.json", s.replace('.', "-"));
                f.remove(&p);
                i["applicability"][*s] = serde_json::Value::Object(
                    conformance::CLASSES.iter().map(|c| ((*c).to_string(), serde_json::json!({"n_a": "x"}))).collect(),
                );
                let files = i["files"].as_array_mut().expect("files");
                files.retain(|e| e["path"] != serde_json::Value::from(p.clone()));
            }
            i["total_cases"] = 6.into();
        }),
        "corpus_applicability_incomplete"
    );
    // an index whose corpus digest is not its own
    let mut f = reference_corpus(&|_, _| {});
    let mut idx: serde_json::Value = serde_json::from_slice(&f[INDEX]).expect("index");
    idx["corpus_digest"] =
        blueprint::digest::Tagged::compute(blueprint::digest::Domain::CorpusIndex, b"another index").to_string().into();
    let parsed =
        blueprint::json::decode(&serde_json::to_vec(&idx).expect("json"), &blueprint::limits::Limits::default())
            .expect("index");
    f.insert(INDEX.to_string(), blueprint::canon::canonical_bytes(&parsed).expect("jcs"));
    assert_eq!(corpus::load_any(&f).expect_err("digest").code(), "corpus_hash_mismatch");
    // an index that is not canonical bytes
    let mut f = reference_corpus(&|_, _| {});
    f.get_mut(INDEX).expect("index").insert(0, b' ');
    assert_eq!(corpus::load_any(&f).expect_err("canonical").code(), "corpus_index_invalid");
}
