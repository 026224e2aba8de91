//! Replays `conformance/jcp/v1/threshold.json` from disk through the real
//! decoders and aggregation, and fails if regenerating changes a byte.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use jcp_threshold::dkg::{Round1Package, Round1Secret, Round2Package, Round2Secret};
use jcp_threshold::sign::{self, Commitments, Nonces, SignatureShare};
use jcp_threshold::{GroupDescriptor, KeyShare, ParticipantFile, ThresholdError};

fn load() -> serde_json::Value {
    let p = testkit::conformance("jcp/v1/threshold.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

fn b(v: &serde_json::Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

fn all<T: ParticipantFile>(v: &serde_json::Value) -> Vec<T> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let bytes = b(x);
            let t = T::from_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", T::TYPE));
            assert_eq!(t.to_bytes(), bytes, "{} round-trips", T::TYPE);
            t
        })
        .collect()
}

#[test]
fn c13_threshold_vectors_regenerate_byte_identically() {
    let on_disk = std::fs::read_to_string(testkit::conformance("jcp/v1/threshold.json")).unwrap();
    assert_eq!(
        jcp_threshold::vectors::generate_text().unwrap(),
        on_disk,
        "regenerating conformance/jcp/v1/threshold.json changed it: run `cargo run -p jcp-threshold --features vectors --bin gen-threshold-vectors` and review the diff"
    );
}

#[test]
fn c13_c18_threshold_vectors_replay_from_disk() {
    let v = load();
    // Dealer and DKG files decode; every key share belongs to its group.
    for part in ["dealer", "dkg"] {
        let group = GroupDescriptor::from_bytes(&b(&v[part]["group"])).unwrap();
        assert_eq!(group.group().to_did_string(), v[part]["group_did"].as_str().unwrap());
        for s in all::<KeyShare>(&v[part]["key_shares"]) {
            group.check_share(&s).unwrap();
        }
    }
    let _: Vec<Round1Secret> = all(&v["dkg"]["round1_secrets"]);
    let _: Vec<Round1Package> = all(&v["dkg"]["round1"]);
    let _: Vec<Round2Secret> = all(&v["dkg"]["round2_secrets"]);
    let _: Vec<Round2Package> = all(&v["dkg"]["round2"]);
    // The ceremony: the published shares aggregate to the published
    // signature, which verifies under the group did.
    let group = GroupDescriptor::from_bytes(&b(&v["dkg"]["group"])).unwrap();
    let msg = b(&v["signing"]["message"]);
    let _: Vec<Nonces> = all(&v["signing"]["nonces"]);
    let commitments: Vec<Commitments> = all(&v["signing"]["commitments"]);
    let shares: Vec<SignatureShare> = all(&v["signing"]["signature_shares"]);
    let sig = sign::aggregate(&group, &commitments, &msg, &shares).unwrap();
    assert_eq!(sig.to_vec(), b(&v["signing"]["signature"]));
    assert!(group.group().verify(&msg, &sig));
    // Ceremony refusals.
    for r in v["ceremony_refusals"].as_array().unwrap() {
        let who: Vec<u16> =
            r["signers"].as_array().unwrap().iter().map(|x| u16::try_from(x.as_u64().unwrap()).unwrap()).collect();
        let pick = |id: &u16| commitments.iter().position(|c| c.identifier() == *id).unwrap();
        let cs: Vec<_> = who.iter().map(|id| commitments[pick(id)].clone()).collect();
        let ss: Vec<_> = who.iter().map(|id| shares[pick(id)].clone()).collect();
        let m = r.get("message").map_or_else(|| msg.clone(), b);
        let e = sign::aggregate(&group, &cs, &m, &ss).unwrap_err();
        assert_eq!(e.code(), r["code"].as_str().unwrap(), "{}", r["name"]);
    }
    // File refusals, each with its code.
    for r in v["refusals"].as_array().unwrap() {
        let bytes = b(&r["bytes"]);
        let code = match r["type"].as_str().unwrap() {
            "jcp-threshold/group" => GroupDescriptor::from_bytes(&bytes).map(|_| ()),
            "jcp-threshold/key-share" => KeyShare::from_bytes(&bytes).map(|_| ()),
            "jcp-threshold/commitments" => Commitments::from_bytes(&bytes).map(|_| ()),
            "jcp-threshold/signature-share" => SignatureShare::from_bytes(&bytes).map(|_| ()),
            other => panic!("unexpected type {other}"),
        }
        .map_err(|e: ThresholdError| e.code())
        .unwrap_err();
        assert_eq!(code, r["code"].as_str().unwrap(), "{}", r["name"]);
    }
}
