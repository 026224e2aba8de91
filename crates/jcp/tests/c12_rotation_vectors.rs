//! Replays `conformance/jcp/v1/rotation.json` (§2.1, C12) from disk through
//! the real key log decoder and verifier, and fails if regenerating the
//! vectors changes a byte.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use jcp::grant::SignedGrant;
use jcp::rotation::{verify_grant_signature, KeyLog};
use serde_json::{json, Value};

fn load() -> Value {
    let p = testkit::conformance("jcp/v1/rotation.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

fn outcome<T: serde::Serialize>(r: Result<T, jcp::Error>) -> Value {
    match r {
        Ok(v) => json!({"ok": v}),
        Err(e) => json!({"refused": e.code()}),
    }
}

#[test]
fn c12_rotation_vectors_regenerate_byte_identically() {
    let on_disk = std::fs::read_to_string(testkit::conformance("jcp/v1/rotation.json")).unwrap();
    assert_eq!(
        jcp::rotation::vectors::generate_text().unwrap(),
        on_disk,
        "regenerating conformance/jcp/v1/rotation.json changed it: run `cargo run -p jcp --features vectors --bin gen-rotation-vectors` and review the diff"
    );
}

#[test]
fn c12_rotation_vectors_replay_from_disk() {
    let v = load();
    let mut seen = Vec::new();
    let mut two = None;
    for l in v["logs"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        let bytes = hex::decode(l["log"].as_str().unwrap()).unwrap();
        // An empty log is refused at decode; every other log decodes and
        // round-trips, and the verdict is the verifier's.
        let got = match KeyLog::from_bytes(&bytes) {
            Ok(log) => {
                assert_eq!(log.to_bytes(), bytes, "{name} round-trips");
                if name == "two-rotations" {
                    two = Some(log.verify().unwrap());
                }
                outcome(log.verify())
            }
            Err(e) => json!({"refused": e.code()}),
        };
        assert_eq!(got, l["expected"], "{name}");
        let code = got.get("refused").map_or("ok", |c| c.as_str().unwrap()).to_owned();
        seen.push((name.to_owned(), code));
    }
    let state = two.unwrap();
    let keys = v["keys"].as_array().unwrap();
    let did = |n: &str| keys.iter().find(|k| k["name"] == n).unwrap()["did"].clone();
    assert_eq!(serde_json::to_value(state.identity()).unwrap(), did("identity"), "the identity is the inception DID");
    assert_eq!(serde_json::to_value(state.current()).unwrap(), did("k2"));
    for g in v["grants"].as_array().unwrap() {
        let name = g["name"].as_str().unwrap();
        let grant = SignedGrant::from_bytes(&hex::decode(g["grant"].as_str().unwrap()).unwrap()).unwrap();
        let got = outcome(verify_grant_signature(&grant, &state).map(|()| "verified"));
        assert_eq!(got, g["expected"], "{name}");
        seen.push((name.to_owned(), got.get("refused").map_or("ok", |c| c.as_str().unwrap()).to_owned()));
    }
    // The vectors say what their names claim.
    let expect = [
        ("inception", "ok"),
        ("one-rotation", "ok"),
        ("two-rotations", "ok"),
        ("thief-with-current-key-rotates", "rotation-hash-mismatch"),
        ("thief-rotates-to-own-key", "rotation-hash-mismatch"),
        ("sequence-gap", "rotation-sequence-gap"),
        ("replayed-rotation", "rotation-sequence-gap"),
        ("inception-not-seq-zero", "rotation-sequence-gap"),
        ("parent-mismatch", "rotation-parent-mismatch"),
        ("rotation-without-parent", "rotation-parent-mismatch"),
        ("inception-names-a-parent", "rotation-parent-mismatch"),
        ("rotation-signed-by-the-old-key", "bad-signature"),
        ("inception-signed-by-another-key", "bad-signature"),
        ("rotation-names-another-identity", "rotation-wrong-identity"),
        ("inception-current-is-not-the-identity", "rotation-wrong-identity"),
        ("empty-log", "rotation-empty-log"),
        ("signed-by-the-current-key", "ok"),
        ("signed-by-the-first-rotated-key", "rotation-superseded-key"),
        ("signed-by-the-inception-key", "rotation-superseded-key"),
        ("signed-by-the-thief", "bad-signature"),
        ("issued-in-another-identity", "rotation-wrong-identity"),
    ];
    let got: Vec<(&str, &str)> = seen.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(got, expect);
}
