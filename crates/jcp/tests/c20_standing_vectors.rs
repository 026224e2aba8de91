//! Replays `conformance/jcp/v1/standing.json` (§4.6, C20) from disk through
//! the real policy and ledger decoders, the policy verifier and the firing
//! operation, and fails if regenerating the vectors changes a byte.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use jcp::chain::verify_chain;
use jcp::grant::SignedGrant;
use jcp::identity::{Did, Keypair};
use jcp::standing::{verify_policy, FiringRequest, MintLedger, SignedMintPolicy};
use serde_json::{json, Value};

fn load() -> Value {
    let p = testkit::conformance("jcp/v1/standing.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

fn bytes(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

fn key(v: &Value, name: &str) -> Keypair {
    let k = v["keys"].as_array().unwrap().iter().find(|k| k["name"] == name).unwrap();
    Keypair::from_seed(bytes(&k["seed"]).try_into().unwrap()).unwrap()
}

#[test]
fn c20_standing_vectors_regenerate_byte_identically() {
    let on_disk = std::fs::read_to_string(testkit::conformance("jcp/v1/standing.json")).unwrap();
    assert_eq!(
        jcp::standing::vectors::generate_text().unwrap(),
        on_disk,
        "regenerating conformance/jcp/v1/standing.json changed it: run `cargo run -p jcp --features vectors --bin gen-standing-vectors` and review the diff"
    );
}

#[test]
fn c20_standing_vectors_replay_policies_from_disk() {
    let v = load();
    let mut seen = Vec::new();
    for p in v["policies"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        let grant = SignedGrant::from_bytes(&bytes(&p["grant"])).unwrap();
        let policy = SignedMintPolicy::from_bytes(&bytes(&p["policy"])).unwrap();
        assert_eq!(policy.to_bytes(), bytes(&p["policy"]), "{name} round-trips");
        let got = match verify_policy(&grant, &policy) {
            Ok(()) => json!({"ok": "verified"}),
            Err(e) => json!({"refused": e.code()}),
        };
        assert_eq!(got, p["expected"], "{name}");
        seen.push(got.get("refused").map_or("ok".to_owned(), |c| c.as_str().unwrap().to_owned()));
    }
    assert_eq!(
        seen,
        [
            "ok",
            "ok",
            "standing-policy-amplifies",
            "standing-policy-amplifies",
            "standing-policy-amplifies",
            "standing-not-issuer",
            "bad-signature",
            "standing-policy-unbound",
            "standing-not-held-by-issuer",
            "delegation-forbidden"
        ]
    );
}

#[test]
fn c20_standing_vectors_replay_firings_from_disk() {
    let v = load();
    let issuer = key(&v, "issuer");
    let mallory = key(&v, "mallory");
    let mut seen = Vec::new();
    for f in v["firings"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        let grant = SignedGrant::from_bytes(&bytes(&f["grant"])).unwrap();
        let policy = SignedMintPolicy::from_bytes(&bytes(&f["policy"])).unwrap();
        let before = bytes(&f["ledger_before"]);
        let mut ledger = MintLedger::from_bytes(&before).unwrap();
        assert_eq!(ledger.to_bytes(), before, "{name} ledger round-trips");
        let r = &f["request"];
        let request = FiringRequest {
            event_class: jcp::cbor::ContentId::parse(r["event_class"].as_str().unwrap()).unwrap(),
            subject: Did::parse(r["subject"].as_str().unwrap()).unwrap(),
            budget_uj: r["budget_uj"].as_u64(),
            nonce: Some(bytes(&r["nonce"]).try_into().unwrap()),
        };
        let minter = if name == "minter-is-not-the-holder" { &mallory } else { &issuer };
        let got = match ledger.fire(&grant, &policy, minter, &request, r["now"].as_u64().unwrap()) {
            Ok(child) => {
                verify_chain(&[grant.clone(), child.clone()]).unwrap();
                assert_eq!(child.grant().parent, Some(grant.id()), "{name}");
                json!({"ok": {"child": hex::encode(child.to_bytes()), "child_id": child.id(), "child_budget_uj": child.grant().budget_uj}})
            }
            Err(e) => {
                assert_eq!(ledger.to_bytes(), before, "{name}: a refused firing leaves the ledger unchanged");
                json!({"refused": e.code()})
            }
        };
        assert_eq!(got, f["expected"], "{name}");
        assert_eq!(hex::encode(ledger.to_bytes()), f["ledger_after"].as_str().unwrap(), "{name}");
        seen.push((name.to_owned(), got.get("refused").map_or("ok".to_owned(), |c| c.as_str().unwrap().to_owned())));
    }
    let expect = [
        ("first-firing", "ok"),
        ("second-firing-smaller-slice", "ok"),
        ("wrong-event-class", "standing-wrong-event-class"),
        ("slice-above-per-firing", "standing-slice-exceeds-policy"),
        ("minter-is-not-the-holder", "not-holder"),
        ("grant-expired", "standing-grant-expired"),
        ("third-firing", "ok"),
        ("count-exhausted", "standing-firings-exhausted"),
        ("budget-first", "ok"),
        ("budget-second", "ok"),
        ("cumulative-spend-past-the-grant", "standing-budget-exhausted"),
        ("budget-exactly-to-the-grant", "ok"),
        ("budget-spent", "standing-budget-exhausted"),
        ("ledger-of-another-policy", "standing-ledger-mismatch"),
        ("policy-of-another-grant", "standing-policy-unbound"),
        ("policy-signature-forged", "bad-signature"),
    ];
    let got: Vec<(&str, &str)> = seen.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(got, expect);
}
