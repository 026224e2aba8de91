// Test-only producer: the library never signs.
use blueprint::artifact::{self, Kind};
use blueprint::json::{self, Map, Value};
use blueprint::limits::Limits;
use blueprint::{b64, canon, signature};
use ed25519_dalek::{Signer, SigningKey};

/// Returns canonical artifact bytes carrying one signature over its digest.
pub fn signed(kind: Kind, bytes: &[u8], sk: &SigningKey, kid: &str, purpose: &str) -> Vec<u8> {
    let mut value = json::decode(bytes, &Limits::default()).expect("json");
    let m = value.as_object().expect("object").clone();
    let digest = artifact::compute_digest(kind, &m).expect("digest");
    let attrs = json::decode(
        format!(r#"{{"algorithm":"Ed25519","content_digest":"{digest}","created_at":"2026-08-20T00:00:00Z","key_id":"{kid}","purpose":"{purpose}"}}"#).as_bytes(),
        &Limits::default(),
    )
    .expect("attrs");
    let prot = json::decode(format!(r#"{{"alg":"EdDSA","b64":false,"crit":["b64"],"kid":"{kid}"}}"#).as_bytes(), &Limits::default()).expect("prot");
    let mut input = b64::encode(&canon::canonical_bytes(&prot).expect("c")).into_bytes();
    input.push(b'.');
    input.extend(signature::signing_payload(&attrs).expect("payload"));
    let sig = sk.sign(&input).to_bytes();
    let entry = Value::Object(Map::from_pairs(vec![
        ("protected".into(), prot),
        ("signature".into(), Value::str(b64::encode(&sig))),
        ("signed_attributes".into(), attrs),
    ]));
    if let Value::Object(m) = &mut value {
        m.insert("signatures", Value::Array(vec![entry]));
    }
    canon::canonical_bytes(&value).expect("bytes")
}
