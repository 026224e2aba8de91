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
