//! §3 `schema.json`: generated from the validator, committed, and in
//! agreement with the validator on every vector and every refusal.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use intent::verify::{self, Kind};

fn compiled() -> jsonschema::Validator {
    jsonschema::draft202012::new(&intent::schema::schema()).expect("the generated schema compiles as 2020-12")
}

fn json_files(rel: &str) -> Vec<PathBuf> {
    let dir = testkit::conformance(rel);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn serde_doc(p: &PathBuf) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn s3_committed_schema_json_is_the_generated_one() {
    let committed = std::fs::read_to_string(testkit::conformance("intent/schema.json")).unwrap();
    let generated = intent::schema::schema_text().unwrap();
    assert!(
        committed == generated,
        "conformance/intent/schema.json is stale: regenerate with `cargo run -p intent --example schema > conformance/intent/schema.json`"
    );
}

#[test]
fn s3_schema_accepts_every_whole_binding_the_validator_accepts() {
    let schema = compiled();
    let mut checked = 0;
    let mut bindings: Vec<(String, serde_json::Value)> = Vec::new();
    for p in json_files("intent/vectors").into_iter().chain(json_files("intent/frameworks")) {
        // Canonicalization cases (no protocol_version) are outside the schema
        // (§7), and some hold lone surrogates serde_json cannot read.
        let ours = intent::parse(&std::fs::read(&p).unwrap()).unwrap();
        if ours.pointer_dotted("binding.protocol_version").is_none() {
            continue;
        }
        let doc = serde_doc(&p);
        let b = &doc["binding"];
        bindings.push((p.display().to_string(), b.clone()));
        for (i, m) in doc.get("mutations").and_then(|m| m.as_array()).into_iter().flatten().enumerate() {
            bindings.push((format!("{} mutation {i}", p.display()), m["binding"].clone()));
        }
    }
    let v1 = serde_json::from_slice::<serde_json::Value>(
        &std::fs::read(testkit::interop("agent-safe-intent/agent-safe-intent-v1.json")).unwrap(),
    )
    .unwrap();
    bindings.push(("interop agent-safe-intent-v1".into(), v1["binding"].clone()));
    for (name, b) in &bindings {
        intent::accept(&intent::Value::from(b)).unwrap_or_else(|e| panic!("validator refuses {name}: {e}"));
        let errors: Vec<String> = schema.iter_errors(b).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "schema refuses {name}: {errors:?}");
        checked += 1;
    }
    assert!(checked >= 25, "{checked}");
}

#[test]
fn s3_schema_refuses_every_refusal_the_schema_can_state() {
    let schema = compiled();
    let (mut refused, mut not_expressible) = (0, 0);
    for p in json_files("intent/refusals") {
        let doc = serde_doc(&p);
        // The validator refuses it (with the pinned code).
        let report = verify::verify_bytes(&std::fs::read(&p).unwrap()).unwrap();
        assert!(report.ok && report.kind == Kind::Refusal, "{}: {:?}", p.display(), report.findings);
        let marking = doc.get("schema").and_then(|s| s.as_str()).unwrap_or("refuses");
        if marking == "not-applicable" {
            assert!(
                doc.get("proposal").is_some() || doc.get("binding_text").is_some() || doc.get("record").is_some(),
                "{}: only proposals, framework records (§8) and raw text are outside the schema",
                p.display()
            );
            continue;
        }
        let binding = match (doc.get("binding"), doc.get("binding_text").and_then(|t| t.as_str())) {
            (Some(b), None) => b.clone(),
            (None, Some(t)) => serde_json::from_str(t).unwrap(),
            _ => panic!("{}", p.display()),
        };
        let valid = schema.is_valid(&binding);
        match marking {
            "refuses" => {
                assert!(!valid, "{}: the validator refuses it, the schema accepts it", p.display());
                refused += 1;
            }
            "not-expressible" => {
                assert!(valid, "{}: marked not-expressible but the schema refuses it", p.display());
                not_expressible += 1;
            }
            other => panic!("{}: unknown schema marking {other}", p.display()),
        }
    }
    assert!(refused >= 20, "{refused}");
    assert_eq!(not_expressible, 2, "the entry bound and the byte bound");
}

/// Decision (docs/decisions.md, intent): lengths count UTF-16 code units as
/// the reference validator does; JSON Schema counts code points, so for
/// astral text the validator is the stricter.
#[test]
fn s3_lengths_count_utf16_units_validator_stricter_than_schema_for_astral_text() {
    let doc = testkit::interop_json("agent-safe-intent/agent-safe-intent-v1.json");
    let mut b = doc["binding"].clone();
    b["actor"]["id"] = "\u{1F680}".repeat(101).into(); // 101 code points, 202 UTF-16 units
    assert!(compiled().is_valid(&b));
    assert_eq!(intent::accept(&intent::Value::from(&b)).unwrap_err().code(), "BINDING_INVALID_VALUE");
    b["actor"]["id"] = "\u{1F680}".repeat(100).into();
    assert!(compiled().is_valid(&b));
    assert!(intent::accept(&intent::Value::from(&b)).is_ok());
}
