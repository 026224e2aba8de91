//! Replays `conformance/jcp/v1/channel.json` (§4.5, C17) from disk through
//! the real statement decoder, channel and overdraft-proof verifier, and
//! fails if regenerating the vectors changes a byte.

use jcp::channel::{Channel, OverdraftProof, SignedStatement};
use jcp::grant::SignedGrant;
use jcp::identity::Did;

fn load() -> serde_json::Value {
    let p = testkit::conformance("jcp/v1/channel.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

#[test]
fn c17_channel_vectors_regenerate_byte_identically() {
    let on_disk = std::fs::read_to_string(testkit::conformance("jcp/v1/channel.json")).unwrap();
    assert_eq!(
        jcp::channel::vectors::generate_text().unwrap(),
        on_disk,
        "regenerating conformance/jcp/v1/channel.json changed it: run `cargo run -p jcp --features vectors --bin gen-channel-vectors` and review the diff"
    );
}

#[test]
fn c17_channel_vectors_replay_from_disk() {
    let v = load();
    let grant = SignedGrant::from_bytes(&hex::decode(v["grant"].as_str().unwrap()).unwrap()).unwrap();
    assert_eq!(grant.id().to_hex(), v["grant_id"].as_str().unwrap());
    let members: Vec<Did> =
        v["members"].as_array().unwrap().iter().map(|d| Did::parse(d.as_str().unwrap()).unwrap()).collect();
    let mut ch = Channel::open(grant, members).unwrap();
    let mut seen = Vec::new();
    for step in v["sequence"].as_array().unwrap() {
        let name = step["name"].as_str().unwrap();
        let bytes = hex::decode(step["statement"].as_str().unwrap()).unwrap();
        let s = SignedStatement::from_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.to_bytes(), bytes, "{name} round-trips");
        assert_eq!(serde_json::to_value(s.statement()).unwrap(), step["claim"], "{name}");
        let before = ch.clone();
        let got = match ch.admit(&s) {
            Ok(()) => "admitted",
            Err(e) => {
                assert_eq!(ch, before, "{name}: a refusal changed the channel");
                e.code()
            }
        };
        assert_eq!(got, step["expected"].as_str().unwrap(), "{name}");
        assert_eq!(serde_json::to_value(ch.ledger().total_uj).unwrap(), step["ledger_total_uj"], "{name}");
        seen.push((name.to_owned(), got));
    }
    assert_eq!(serde_json::to_value(ch.ledger()).unwrap(), v["ledger"]);
    // The vectors say what their names claim.
    let expect = [
        ("a0", "admitted"),
        ("b0", "admitted"),
        ("a1", "admitted"),
        ("b1", "admitted"),
        ("forged", "bad-signature"),
        ("stale-repeat", "statement-stale"),
        ("stale-higher", "statement-stale"),
        ("regressing", "statement-regressing"),
        ("wrong-grant", "statement-wrong-grant"),
        ("non-member", "statement-not-member"),
    ];
    assert_eq!(seen.iter().map(|(n, c)| (n.as_str(), *c)).collect::<Vec<_>>(), expect);
    assert_eq!(v["ledger"]["overdraft_uj"], 200);

    let mut proofs = Vec::new();
    for p in v["proofs"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        let bytes = hex::decode(p["proof"].as_str().unwrap()).unwrap();
        let proof = OverdraftProof::from_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(proof.to_bytes(), bytes, "{name} round-trips");
        let got = match proof.verify() {
            Ok(o) => serde_json::json!({"code": "ok", "total_uj": o.total_uj, "overdraft_uj": o.overdraft_uj}),
            Err(e) => serde_json::json!({"code": e.code()}),
        };
        assert_eq!(got, p["expected"], "{name}");
        proofs.push((name.to_owned(), got["code"].as_str().unwrap().to_owned()));
    }
    let expect = [
        ("overdraft-a1-b1", "ok"),
        ("forged-statement", "bad-signature"),
        ("duplicated-point", "statement-duplicate"),
        ("wrong-grant-statement", "statement-wrong-grant"),
        ("non-member-statement", "statement-not-member"),
        ("within-budget", "overdraft-unproven"),
        ("grant-swapped", "statement-wrong-grant"),
    ];
    assert_eq!(proofs.iter().map(|(n, c)| (n.as_str(), c.as_str())).collect::<Vec<_>>(), expect);
}
