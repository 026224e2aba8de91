//! C-neg: expired, forged and wrong-caller frames are denied with the precise
//! reason; canonical CBOR rejects floats and bools.

mod common;
use common::*;
use jcp::cbor::{self, DecodeError};
use jcp::decision::{Gate, Reason, Verdict};

#[test]
fn cneg_expired_grant_is_denied_expired() {
    let (issuer, agent) = (key(1), key(2));
    let mut g = root_grant(&issuer, &agent, 100);
    g.expiry = NOW;
    let g = g.sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let f = frame_for(&g, "read");
    let d = decide_at(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1), NOW);
    assert_eq!(d.verdict, Verdict::Deny(Reason::Expired));
    let d = decide_at(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1), NOW - 1);
    assert_eq!(d.verdict, Verdict::Allow);
}

#[test]
fn cneg_forged_grant_is_denied_bad_signature() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 100);
    // Flip one bit of the signature.
    let mut bytes = g.to_bytes();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    let forged = jcp::grant::SignedGrant::from_bytes(&bytes).unwrap();
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&forged, "read"), std::slice::from_ref(&forged), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::BadSignature));
}

#[test]
fn cneg_wrong_caller_is_denied_wrong_subject() {
    let (issuer, agent, mallory) = (key(1), key(2), key(3));
    let g = signed_root(&issuer, &agent, 100);
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&g, "read"), std::slice::from_ref(&g), &mallory.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::WrongSubject));
}

#[test]
fn cneg_canonical_cbor_rejects_floats_and_bools() {
    for bytes in [&[0xf5u8][..], &[0xf4], &[0xf6], &[0xfb, 0, 0, 0, 0, 0, 0, 0, 0], &[0xa1, 0x61, 0x61, 0xf5]] {
        assert!(matches!(cbor::decode_strict(bytes), Err(DecodeError::Forbidden { .. })), "{bytes:?}");
    }
    // A grant with a bool smuggled into a field is refused before any semantic read.
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 100);
    let mut v = g.to_value();
    if let cbor::Value::Map(e) = &mut v {
        e.push((cbor::Value::text("zz"), cbor::Value::Simple(21)));
    }
    let err = jcp::grant::SignedGrant::from_bytes(&v.encode()).unwrap_err();
    assert_eq!(err.code(), "cbor-forbidden-type");
}

#[test]
fn cneg_unknown_field_in_a_grant_is_refused() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 100);
    let mut v = g.grant().to_value();
    if let cbor::Value::Map(e) = &mut v {
        e.push((cbor::Value::text("admin"), cbor::Value::Uint(1)));
    }
    let err = jcp::grant::Grant::from_value(&v).unwrap_err();
    assert_eq!(err.code(), "schema-unknown-field");
}

#[test]
fn s4_signed_grant_round_trips_byte_exactly() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 100);
    let bytes = g.to_bytes();
    let back = jcp::grant::SignedGrant::from_bytes(&bytes).unwrap();
    assert_eq!(back, g);
    assert_eq!(back.to_bytes(), bytes);
    assert!(back.verify_signature());
}
