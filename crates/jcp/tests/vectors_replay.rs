//! Replays `conformance/jcp/v1/core.json` from disk through the real decoder
//! and gate, and fails if regenerating the vectors changes a byte.

use std::collections::HashMap;

use jcp::cbor::{self, ContentId};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::Frame;
use jcp::grant::Funds;
use jcp::grant::SignedGrant;
use jcp::identity::Did;
use jcp::revocation::SignedRevocation;

fn load() -> serde_json::Value {
    let p = testkit::conformance("jcp/v1/core.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

#[test]
fn conformance_core_vectors_regenerate_byte_identically() {
    let on_disk = std::fs::read_to_string(testkit::conformance("jcp/v1/core.json")).unwrap();
    assert_eq!(jcp::vectors::generate_text().unwrap(), on_disk, "regenerating conformance/jcp/v1/core.json changed it: run `cargo run -p jcp --features vectors --bin gen-vectors` and review the diff");
}

#[test]
fn conformance_core_vectors_replay_from_disk() {
    let v = load();
    let mut grants: HashMap<ContentId, SignedGrant> = HashMap::new();
    for g in v["grants"].as_array().unwrap() {
        let bytes = hex::decode(g["signed_bytes"].as_str().unwrap()).unwrap();
        let sg = SignedGrant::from_bytes(&bytes).unwrap();
        assert_eq!(sg.to_bytes(), bytes, "{} round-trips", g["name"]);
        assert_eq!(sg.id().to_hex(), g["id"].as_str().unwrap());
        assert_eq!(hex::encode(sg.grant_bytes()), g["grant_bytes"].as_str().unwrap());
        assert_eq!(sg.verify_signature(), g["signature_valid"].as_bool().unwrap());
        grants.insert(sg.id(), sg);
    }
    let revs: HashMap<String, SignedRevocation> = v["revocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = SignedRevocation::from_bytes(&hex::decode(r["signed_bytes"].as_str().unwrap()).unwrap()).unwrap();
            assert_eq!(s.id().to_hex(), r["id"].as_str().unwrap());
            (r["name"].as_str().unwrap().to_owned(), s)
        })
        .collect();
    let mut seen = 0;
    for sc in v["scenarios"].as_array().unwrap() {
        let mut gate = Gate::new();
        let run = |gate: &mut Gate, step: &serde_json::Value| {
            let chain: Vec<SignedGrant> = step["chain"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| grants[&ContentId::parse(id.as_str().unwrap()).unwrap()].clone())
                .collect();
            let frame = Frame::from_bytes(&hex::decode(step["frame_bytes"].as_str().unwrap()).unwrap()).unwrap();
            let caller = Did::parse(step["caller"].as_str().unwrap()).unwrap();
            let money = step["money"].as_object().map(|m| Funds {
                currency: m["currency"].as_str().unwrap().into(),
                minor: m["minor"].as_u64().unwrap(),
            });
            let cost = Cost {
                energy: Energy::new(
                    step["cost_uj"].as_u64().unwrap(),
                    Provenance::parse(step["provenance"].as_str().unwrap()).unwrap(),
                ),
                money,
            };
            let flow = step["flow"]
                .as_str()
                .map(|h| Label::from_value(&cbor::decode_strict(&hex::decode(h).unwrap()).unwrap()).unwrap());
            let d = gate.decide(&Request {
                frame: &frame,
                chain: &chain,
                caller: &caller,
                cost: &cost,
                now: step["now"].as_u64().unwrap(),
                flow: flow.as_ref(),
            });
            let e = &step["expected"];
            assert_eq!(if d.is_allow() { "allow" } else { "deny" }, e["verdict"], "{}", step["name"]);
            assert_eq!(d.reason().map(|r| r.as_str()), e["reason"].as_str(), "{}", step["name"]);
            assert_eq!(d.debited_uj, e["debited_uj"].as_u64().unwrap(), "{}", step["name"]);
            assert_eq!(d.budget_remaining_uj, e["budget_remaining_uj"].as_u64().unwrap(), "{}", step["name"]);
            (step["name"].as_str().unwrap().to_owned(), d.reason().map(|r| r.as_str()))
        };
        let mut outcome = HashMap::new();
        for step in sc["steps"].as_array().unwrap() {
            let (n, r) = run(&mut gate, step);
            outcome.insert(n, r);
            seen += 1;
        }
        let rev = &revs[sc["then_admit_revocation"].as_str().unwrap()];
        let target = grants[&rev.revocation().grant_id].clone();
        gate.admit_revocation(rev, &target).unwrap();
        for step in sc["steps_after"].as_array().unwrap() {
            let (n, r) = run(&mut gate, step);
            outcome.insert(n, r);
            seen += 1;
        }
        // The vectors say what their names claim (a vector that drifted to
        // another outcome would otherwise replay "successfully").
        let expect = [
            ("plain-allow", None),
            ("plain-budget-exceeded", Some("budget-exceeded")),
            ("plain-data-frame", Some("untrusted-control")),
            ("plain-wrong-subject", Some("wrong-subject")),
            ("plain-action-not-granted", Some("action-not-granted")),
            ("chain-allow-priced", None),
            ("sibling-shares-root-budget", Some("budget-exceeded")),
            ("sibling-within-root", None),
            ("sibling-max-cost-caveat", Some("caveat-unsatisfied")),
            ("chain-funds-exceeded", Some("funds-exceeded")),
            ("chain-currency-mismatch", Some("currency-mismatch")),
            ("chain-expired", Some("expired")),
            // §7: expiry of every link precedes the leaf-level checks.
            ("chain-expired-before-caller", Some("expired")),
            // §4.8, fail closed (docs/decisions.md).
            ("chain-unpriced-against-money-ceiling", Some("currency-mismatch")),
            ("leaf-alone-chain-broken", Some("chain-broken")),
            ("spliced-chain-broken", Some("chain-broken")),
            ("child-revoked", Some("revoked")),
            ("sibling-unaffected-by-revocation", None),
        ];
        for (n, r) in expect {
            assert_eq!(outcome.get(n).copied().flatten(), r, "{n}");
        }
    }
    assert_eq!(seen, 18);
}
