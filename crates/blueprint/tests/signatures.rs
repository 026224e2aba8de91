//! §6: detached JWS (RFC 7515 + RFC 7797 b64=false), Ed25519 only,
//! `verify_strict`, small-order keys refused; host-supplied keys only.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::artifact::{self, Kind};
use blueprint::b64;
use blueprint::canon;
use blueprint::json::{self, Map, Value};
use blueprint::limits::Limits;
use blueprint::signature::{self, KeySet};
use ed25519_dalek::{Signer, SigningKey};

fn hexd(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

fn jwk_x(name: &str) -> [u8; 32] {
    let v = testkit::interop_json("standards/jws/jws_vectors.json");
    let x = v["keys"][name]["x"].as_str().expect("x");
    b64::decode(x).expect("b64").try_into().expect("32")
}

#[test]
fn s6_jws_vectors_eddsa_attached_and_b64_false_detached_verify() {
    let v = testkit::interop_json("standards/jws/jws_vectors.json");
    let key = jwk_x("rfc8037_A1_ed25519_jwk");
    let mut checked = 0;
    for vec in v["vectors"].as_array().expect("vectors") {
        let name = vec["name"].as_str().expect("name");
        let hmac = vec["key"] == "rfc7515_A1_hmac_jwk";
        let payload = vec["payload"].as_str().expect("payload").as_bytes();
        let res = if let Some(c) = vec["compact"].as_str() {
            signature::verify_compact(c, None, &key)
        } else {
            signature::verify_compact(vec["compact_detached"].as_str().expect("detached"), Some(payload), &key)
        };
        if hmac {
            assert_eq!(res.expect_err(name).code(), "signature_algorithm_unsupported", "{name}");
        } else {
            res.unwrap_or_else(|e| panic!("{name}: {e}"));
            // one flipped signature bit fails
            let c = vec["compact"].as_str().or(vec["compact_detached"].as_str()).expect("c");
            let mut sig = b64::decode(c.rsplit('.').next().expect("sig")).expect("sig b64");
            sig[0] ^= 1;
            let tampered = format!("{}.{}", &c[..c.rfind('.').expect("dot")], b64::encode(&sig));
            let det = vec["compact"].is_null().then_some(payload);
            assert_eq!(
                signature::verify_compact(&tampered, det, &key).expect_err("tamper").code(),
                "signature_not_verified"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 4);
}

#[test]
fn s6_b64_false_detached_payload_must_match() {
    let v = testkit::interop_json("standards/jws/jws_vectors.json");
    let key = jwk_x("rfc8037_A1_ed25519_jwk");
    let d = &v["vectors"][3];
    let c = d["compact_detached"].as_str().expect("c");
    assert_eq!(
        signature::verify_compact(c, Some(b"$.03"), &key).expect_err("payload").code(),
        "signature_not_verified"
    );
}

#[test]
fn s6_small_order_keys_are_refused() {
    let identity = {
        let mut k = [0u8; 32];
        k[0] = 1;
        k
    };
    let order2: [u8; 32] =
        hexd("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f").try_into().expect("32");
    for k in [identity, order2] {
        assert_eq!(signature::verifying_key(&k, "k").expect_err("weak").code(), "signature_key_unsupported");
    }
}

#[test]
fn s6_speccheck_edge_cases_only_the_strict_accept_set_passes() {
    let v = testkit::interop_json("standards/ed25519/speccheck/cases.json");
    let cases = v.as_array().expect("cases");
    let mut accepted = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let msg = hexd(c["message"].as_str().expect("m"));
        let key: [u8; 32] = hexd(c["pub_key"].as_str().expect("k")).try_into().expect("32");
        let sig: [u8; 64] = hexd(c["signature"].as_str().expect("s")).try_into().expect("64");
        if signature::verify_bytes(&msg, &sig, &key, "k").is_ok() {
            accepted.push(i);
        }
    }
    // results.md: "Dalek strict" accepts only case 3; small-order keys are refused.
    assert_eq!(accepted, vec![3]);
}

fn golden(name: &str) -> Vec<u8> {
    std::fs::read(testkit::interop(&format!("agent-blueprint-protocol/vectors/{name}"))).expect("golden")
}

#[test]
fn s6_golden_signature_without_a_supplied_key_is_key_unsupported_evidence() {
    let a = artifact::decode_blueprint(&golden("blueprint-golden.json"), &Limits::default()).expect("decode");
    let sigs = a.get("signatures").and_then(Value::as_array).expect("sigs");
    let checks = signature::verify_all(sigs, "blueprint", &a.digest, &KeySet::new());
    assert_eq!(checks.len(), 1);
    assert!(!checks[0].verified);
    assert_eq!(checks[0].code.as_deref(), Some("signature_key_unsupported"));
    assert_eq!(checks[0].key_id, "example-demo-signing-key");
}

/// Signs an artifact's digest the way a producer would (test-only: the
/// library itself never signs).
pub fn sign(kind: Kind, value: &mut Value, sk: &SigningKey, kid: &str, purpose: &str) {
    let m = value.as_object().expect("object").clone();
    let digest = artifact::compute_digest(kind, &m).expect("digest");
    let attrs = json::decode(
        format!(r#"{{"algorithm":"Ed25519","content_digest":"{digest}","created_at":"2026-08-20T00:00:00Z","key_id":"{kid}","purpose":"{purpose}"}}"#).as_bytes(),
        &Limits::default(),
    )
    .expect("attrs");
    let prot = json::decode(
        format!(r#"{{"alg":"EdDSA","b64":false,"crit":["b64"],"kid":"{kid}"}}"#).as_bytes(),
        &Limits::default(),
    )
    .expect("prot");
    let mut input = b64::encode(&canon::canonical_bytes(&prot).expect("c")).into_bytes();
    input.push(b'.');
    input.extend(signature::signing_payload(&attrs).expect("payload"));
    let sig = sk.sign(&input).to_bytes();
    let entry = Value::Object(Map::from_pairs(vec![
        ("protected".into(), prot),
        ("signature".into(), Value::str(b64::encode(&sig))),
        ("signed_attributes".into(), attrs),
    ]));
    if let Value::Object(m) = value {
        m.insert("signatures", Value::Array(vec![entry]));
    }
}

#[test]
fn s6_signature_binds_digest_purpose_and_key() {
    let sk = SigningKey::from_bytes(&[7u8; 32]);
    let mut keys = KeySet::new();
    keys.insert("k1", sk.verifying_key().to_bytes());
    let mut v = json::decode(&golden("blueprint-golden.json"), &Limits::default()).expect("decode");
    sign(Kind::Blueprint, &mut v, &sk, "k1", "blueprint");
    let bytes = canon::canonical_bytes(&v).expect("bytes");
    let a = artifact::decode_blueprint(&bytes, &Limits::default()).expect("decode signed");
    let sigs = a.get("signatures").and_then(Value::as_array).expect("sigs").to_vec();
    let ok = signature::verify_all(&sigs, "blueprint", &a.digest, &keys);
    assert!(ok[0].verified, "{ok:?}");
    // lifted onto another purpose
    let lifted = signature::verify_all(&sigs, "deployment", &a.digest, &keys);
    assert_eq!(lifted[0].code.as_deref(), Some("signature_not_verified"));
    // lifted onto another artifact digest
    let other = blueprint::digest::Tagged::compute(blueprint::digest::Domain::BlueprintContent, b"other");
    assert_eq!(
        signature::verify_all(&sigs, "blueprint", &other, &keys)[0].code.as_deref(),
        Some("signature_not_verified")
    );
    // a different key under the same kid
    let mut wrong = KeySet::new();
    wrong.insert("k1", SigningKey::from_bytes(&[8u8; 32]).verifying_key().to_bytes());
    assert_eq!(
        signature::verify_all(&sigs, "blueprint", &a.digest, &wrong)[0].code.as_deref(),
        Some("signature_not_verified")
    );
}

#[test]
fn s6_private_key_material_in_a_keys_file_is_refused() {
    let jwks = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}"#;
    assert_eq!(KeySet::from_json(jwks).expect_err("d").code(), "signature_key_unsupported");
    let ok = br#"{"k":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    assert_eq!(KeySet::from_json(ok).expect("map").ids().count(), 1);
}

#[test]
fn s6_wycheproof_ed25519_verdicts_agree() {
    let v = testkit::interop_json("standards/ed25519/wycheproof/ed25519_test.json");
    let mut n = 0;
    for g in v["testGroups"].as_array().expect("groups") {
        let key: [u8; 32] = hexd(g["publicKey"]["pk"].as_str().expect("pk")).try_into().expect("32");
        for t in g["tests"].as_array().expect("tests") {
            let msg = hexd(t["msg"].as_str().expect("msg"));
            let sig = hexd(t["sig"].as_str().expect("sig"));
            let got = match <[u8; 64]>::try_from(sig.as_slice()) {
                Ok(sig) => signature::verify_bytes(&msg, &sig, &key, "k").is_ok(),
                Err(_) => false,
            };
            let want = t["result"] == "valid";
            assert_eq!(got, want, "tcId {} {}", t["tcId"], t["comment"]);
            n += 1;
        }
    }
    assert_eq!(n, 151);
}
