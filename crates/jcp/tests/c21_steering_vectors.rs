//! Replays `conformance/jcp/v1/steering.json` (§4.7, C21) from disk through
//! the real run decoder and verifier, and fails if regenerating the vectors
//! changes a byte.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use jcp::steering::Run;

fn load() -> serde_json::Value {
    let p = testkit::conformance("jcp/v1/steering.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

#[test]
fn c21_steering_vectors_regenerate_byte_identically() {
    let on_disk = std::fs::read_to_string(testkit::conformance("jcp/v1/steering.json")).unwrap();
    assert_eq!(
        jcp::steering::vectors::generate_text().unwrap(),
        on_disk,
        "regenerating conformance/jcp/v1/steering.json changed it: run `cargo run -p jcp --features vectors --bin gen-steering-vectors` and review the diff"
    );
}

#[test]
fn c21_steering_vectors_replay_from_disk() {
    let v = load();
    let mut seen = Vec::new();
    for r in v["runs"].as_array().unwrap() {
        let name = r["name"].as_str().unwrap();
        let bytes = hex::decode(r["run_file"].as_str().unwrap()).unwrap();
        let run = Run::from_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(run.to_bytes(), bytes, "{name} round-trips");
        let report = run.verify().unwrap();
        let e = &r["expected"];
        assert_eq!(report.clean, e["clean"].as_bool().unwrap(), "{name}");
        let got: Vec<serde_json::Value> = report
            .findings
            .iter()
            .map(|f| serde_json::json!({"index": f.index, "kind": f.kind, "id": f.id, "code": f.code, "admitted": f.admitted}))
            .collect();
        assert_eq!(serde_json::Value::Array(got), e["findings"], "{name}");
        assert_eq!(serde_json::to_value(report.active_grant).unwrap(), e["active_grant"], "{name}");
        assert_eq!(serde_json::to_value(report.remainder).unwrap(), e["remainder"], "{name}");
        let codes: Vec<(usize, &'static str)> = report.findings.iter().map(|f| (f.index, f.code)).collect();
        seen.push((name.to_owned(), codes));
    }
    // The vectors say what their names claim (a vector that drifted to
    // another outcome would otherwise replay "successfully").
    let expect: &[(&str, &[(usize, &str)])] = &[
        ("valid-steered-within-remainder", &[]),
        ("valid-amended-to-exactly-the-remainder", &[]),
        ("valid-unstated-spend-ceiling-is-the-issued-budget", &[]),
        ("above-remainder", &[(3, "steer-above-remainder"), (4, "steer-continuation")]),
        ("widening-above-issued-budget", &[(2, "steer-widening"), (3, "steer-continuation")]),
        ("agent-steers-itself", &[(2, "steer-self-amend")]),
        ("non-issuer-amends", &[(2, "steer-not-issuer")]),
        ("amendment-bound-to-another-checkpoint", &[(3, "steer-wrong-checkpoint")]),
        ("declared-spend-decreases", &[(2, "steer-spend-decreased")]),
        ("declared-spend-omitted-after-stated", &[(2, "steer-spend-omitted")]),
        ("checkpoint-by-non-agent", &[(1, "steer-not-agent")]),
        ("spliced-checkpoint-from-another-run", &[(2, "steer-wrong-grant")]),
        ("tampered-checkpoint-signature", &[(2, "bad-signature")]),
        ("checkpoint-sequence-gap", &[(2, "steer-sequence")]),
        ("continuation-wider-than-the-amendment", &[(4, "steer-widening")]),
        ("continuation-missing", &[(3, "steer-continuation"), (4, "steer-wrong-grant")]),
        ("steered-grant-used-after-continuation", &[(5, "steer-wrong-grant")]),
    ];
    assert_eq!(seen.len(), expect.len());
    for ((name, codes), (en, ec)) in seen.iter().zip(expect) {
        assert_eq!(name, en);
        assert_eq!(codes.as_slice(), *ec, "{name}");
    }
}
