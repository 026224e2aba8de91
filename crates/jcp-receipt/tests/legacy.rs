//! §8 profile versioning (C23): the published `jcp/1` set.
//!
//! **Test-only generator.** Nothing in the library mints `jcp/1`
//! (`ReceiptCore::seal` refuses it). The legacy set in
//! `conformance/jcp/v1/legacy_jcp1.json` is sealed HERE, by hand, with
//! `coset`, from fixed seeds (Ed25519 is deterministic), so regenerating it
//! must reproduce every byte: `s8_legacy_jcp1_regeneration_is_byte_identical`
//! fails otherwise. To (re)write the file after a deliberate change:
//! `JCP_REGEN_LEGACY=1 cargo test -p jcp-receipt --test legacy`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use coset::TaggedCborSerializable;
use jcp::cbor::{self, ContentId, Value};
use jcp::identity::{Did, Keypair};
use jcp_receipt::receipt::{verify_receipt, Profile};
use serde_json::json;

const FILE: &str = "jcp/v1/legacy_jcp1.json";

fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

/// A `jcp/1` core: §8's list without `payload_hash`.
fn jcp1_core(
    tag: &str,
    steward: &Did,
    verdict: &str,
    reason: Option<&str>,
    cost: u64,
    prov: &str,
    partial: bool,
) -> Value {
    let grant = ContentId::of(&Value::text("legacy/grant"));
    let resource = ContentId::of(&Value::text("legacy/resource"));
    cbor::map([
        ("jcp_receipt", Some(Value::text(tag))),
        ("grant_id", Some(Value::text(grant.to_hex()))),
        ("issuer", Some(Value::text(key(0x31).did().to_did_string()))),
        ("subject", Some(Value::text(key(0x32).did().to_did_string()))),
        ("resource", Some(Value::text(resource.to_hex()))),
        ("action", Some(Value::text("invoke"))),
        ("frame_kind", Some(Value::text("tool-call"))),
        ("trust", Some(Value::text("control"))),
        ("verdict", Some(Value::text(verdict))),
        ("deny_reason", reason.map(Value::text)),
        ("cost_uj", Some(Value::Uint(cost))),
        ("energy_provenance", Some(Value::text(prov))),
        ("energy_coverage", partial.then(|| Value::text("Partial"))),
        ("budget_remaining_uj", Some(Value::Uint(if verdict == "allow" { 1_000_000 - cost } else { 1_000_000 }))),
        ("budget_uj", Some(Value::Uint(1_000_000))),
        ("steward", Some(Value::text(steward.to_did_string()))),
    ])
}

fn seal_legacy(core: &Value, steward: &Keypair) -> Vec<u8> {
    let protected = coset::HeaderBuilder::new()
        .algorithm(coset::iana::Algorithm::EdDSA)
        .key_id(steward.did().to_did_string().into_bytes())
        .build();
    coset::CoseSign1Builder::new()
        .protected(protected)
        .payload(core.encode())
        .create_signature(b"", |m| steward.sign(m).to_vec())
        .build()
        .to_tagged_vec()
        .unwrap()
}

fn with(core: &Value, field: &str, v: Value) -> Value {
    let Value::Map(mut e) = core.clone() else { panic!() };
    e.retain(|(k, _)| *k != Value::text(field));
    e.push((Value::text(field), v));
    Value::Map(e)
}

fn generate() -> String {
    let steward = key(0x30);
    let sd = steward.did();
    let mut vectors = Vec::new();
    let mut push = |name: &str, description: &str, cose: Vec<u8>, expect: &str, expected_steward: Option<Did>| {
        let mut v = json!({
            "name": name,
            "description": description,
            "steward": sd.to_did_string(),
            "cose_hex": hex::encode(cose),
            "expect": expect,
        });
        if let Some(e) = expected_steward {
            v["expected_steward"] = json!(e.to_did_string());
        }
        vectors.push(v);
    };
    let allow = jcp1_core("jcp/1", &sd, "allow", None, 2_500, "HwShunt", false);
    push("allow", "a jcp/1 allow: no payload_hash; verifies under jcp/1", seal_legacy(&allow, &steward), "valid", None);
    let deny = jcp1_core("jcp/1", &sd, "deny", Some("action-not-granted"), 2_500, "HwShunt", false);
    push("deny", "a jcp/1 deny with its reason", seal_legacy(&deny, &steward), "valid", None);
    let partial = jcp1_core("jcp/1", &sd, "allow", None, 900, "ModelBased", true);
    push(
        "allow-partial",
        "a jcp/1 allow with a Partial ModelBased figure",
        seal_legacy(&partial, &steward),
        "valid",
        None,
    );
    push(
        "wrong-steward",
        "a valid jcp/1 receipt checked against another expected steward (C5)",
        seal_legacy(&allow, &steward),
        "wrong-steward",
        Some(key(0x33).did()),
    );
    let mut tampered = seal_legacy(&allow, &steward);
    let at = tampered.windows(6).position(|w| w == b"invoke").unwrap();
    tampered[at + 5] = b'f';
    push("tampered", "the allow with one signed byte changed", tampered, "bad-signature", None);
    let with_ph = with(&allow, "payload_hash", Value::text(ContentId::of(&Value::Uint(1)).to_hex()));
    push(
        "jcp1-with-payload-hash",
        "tagged jcp/1 but carrying jcp/2's payload_hash: not jcp/1, refused",
        seal_legacy(&with_ph, &steward),
        "core-schema",
        None,
    );
    let unknown = with(&allow, "jcp_receipt", Value::text("jcp/0"));
    push(
        "unknown-profile",
        "a profile tag the verifier does not implement is refused",
        seal_legacy(&unknown, &steward),
        "unknown-profile",
        None,
    );
    let doc = json!({
        "profile": "jcp/1",
        "spec": "jcp-v0.3 §8 profile versioning, §9 C23",
        "note": "jcp/1 is never minted by the library; these were sealed by the test-only generator in crates/jcp-receipt/tests/legacy.rs from fixed seeds (regenerate: JCP_REGEN_LEGACY=1 cargo test -p jcp-receipt --test legacy)",
        "vectors": vectors,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap();
    s.push('\n');
    s
}

#[test]
fn s8_legacy_jcp1_regeneration_is_byte_identical() {
    let path = testkit::conformance(FILE);
    let fresh = generate();
    if std::env::var_os("JCP_REGEN_LEGACY").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(committed, fresh, "regenerating the legacy set changed a byte");
}

#[test]
fn c23_legacy_jcp1_vectors_verify_under_the_profile_they_name() {
    let text = std::fs::read_to_string(testkit::conformance(FILE)).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vectors = doc["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 7);
    let mut valid = 0;
    for v in vectors {
        let bytes = hex::decode(v["cose_hex"].as_str().unwrap()).unwrap();
        let expected = v["expected_steward"].as_str().map(|s| Did::parse(s).unwrap());
        let got = verify_receipt(&bytes, expected.as_ref());
        // The audit's checked view reads a legacy receipt as coset does.
        let mut dids = jcp_receipt::cose::DidCache::new();
        let view = jcp_receipt::receipt::OpenedReceipt::open_view(&bytes, &mut dids)
            .map(|(view, _)| jcp_receipt::receipt::ReceiptCore::from_view(&view, &mut dids).unwrap());
        if let Some(core) = &view {
            let coset = jcp_receipt::receipt::OpenedReceipt::open_coset(&bytes, &mut dids).unwrap();
            assert_eq!(*core, coset.core, "{}", v["name"]);
        }
        match v["expect"].as_str().unwrap() {
            "valid" => {
                assert!(view.is_some(), "{}: the minted layout has a view", v["name"]);
                let r = got.unwrap_or_else(|e| panic!("{}: {e}", v["name"]));
                assert_eq!(r.core.profile, Profile::Jcp1);
                assert_eq!(r.core.payload_hash, None);
                assert_eq!(r.core.steward.to_did_string(), v["steward"].as_str().unwrap());
                valid += 1;
            }
            code => assert_eq!(got.unwrap_err().code(), code, "{}", v["name"]),
        }
    }
    assert_eq!(valid, 3);
}
