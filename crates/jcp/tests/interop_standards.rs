//! Published standard vectors from `../shared/interop/standards/` (§2, §3).

use jcp::cbor::{self, ContentId, DecodeError, Profile, Value};
use jcp::identity::{Did, IdentityError, Keypair};

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

#[test]
fn s3_rfc8949_appendix_a_definite_items_round_trip_canonically() {
    let cases = testkit::interop_json("standards/cbor/appendix_a.json");
    let mut checked = 0;
    for c in cases.as_array().unwrap() {
        let bytes = unhex(c["hex"].as_str().unwrap());
        match cbor::decode(&bytes, Profile::Deterministic) {
            Ok(v) => {
                // Whatever we accept must be the one canonical encoding of its value.
                assert_eq!(v.encode(), bytes, "{} accepted but not canonical", c["hex"]);
                checked += 1;
            }
            Err(e) => {
                // Refused items must be ones a deterministic encoder never writes:
                // indefinite lengths, or non-preferred floats.
                // RFC 8949 §3.3 also makes two-byte simple values below 32
                // (RFC 7049's `f818`) not well-formed.
                let bad_simple = bytes.len() == 2 && bytes[0] == 0xf8 && bytes[1] < 0x20;
                assert!(
                    matches!(e, DecodeError::IndefiniteLength { .. } | DecodeError::NonShortestFloat { .. })
                        || (bad_simple && matches!(e, DecodeError::NonShortest { .. }))
                        || !c["roundtrip"].as_bool().unwrap_or(false),
                    "{} refused: {e}",
                    c["hex"]
                );
            }
        }
    }
    assert!(checked >= 60, "only {checked} appendix A items decoded");
}

#[test]
fn s3_rfc8949_4_2_1_key_order_example() {
    let v = testkit::interop_json("standards/cbor/rfc8949_4.2.1_key_order.json");
    let keys: Vec<Value> = v["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| cbor::decode(&unhex(k["hex"].as_str().unwrap()), Profile::Deterministic).unwrap())
        .collect();
    let map = Value::Map(keys.iter().cloned().map(|k| (k, Value::Uint(0))).collect());
    assert_eq!(hex::encode(map.encode()), v["map_all_keys_to_0_core_deterministic_hex"].as_str().unwrap());
    // The length-first encoding is refused by the §4.2.1 decoder: keys out of order.
    let lf = unhex(v["map_all_keys_to_0_length_first_hex"].as_str().unwrap());
    assert!(matches!(cbor::decode(&lf, Profile::Deterministic), Err(DecodeError::UnsortedKeys { .. })));
    // Text keys: both orders agree, and the strict profile produces them.
    let t = &v["text_key_example"];
    let m = Value::Map(vec![(Value::text("aa"), Value::Uint(1)), (Value::text("z"), Value::Uint(2))]);
    assert_eq!(hex::encode(m.encode()), t["deterministic_hex"].as_str().unwrap());
    let btree = unhex(t["btreemap_order_hex_as_emitted_by_ciborium_0_2_2"].as_str().unwrap());
    assert!(matches!(cbor::decode_strict(&btree), Err(DecodeError::UnsortedKeys { .. })));
    // The strict (JCP) profile refuses non-text keys outright.
    let mixed = unhex(v["map_all_keys_to_0_core_deterministic_hex"].as_str().unwrap());
    assert!(cbor::decode_strict(&mixed).is_err());
}

#[test]
fn s3_dcbor_invalid_vectors_that_apply_to_4_2_1_are_refused() {
    // dCBOR is stricter than §4.2.1 (e.g. numeric reduction of floats); every
    // invalid vector must at least be refused by the strict JCP profile, and
    // those about integer/length encoding, ordering and duplicates by the
    // generic deterministic decoder too.
    let cases = testkit::interop_json("standards/cbor/dcbor-hildjj/invalid.json");
    let mut generic_refused = 0;
    for c in cases.as_array().unwrap() {
        let bytes = unhex(c["hex"].as_str().unwrap());
        if c["notes"].as_str().is_some_and(|n| n.contains("NFC")) {
            // Unicode normalization is a dCBOR rule, not §4.2.1: JCP signs the
            // exact text it was given (docs/decisions.md, §3).
            assert!(cbor::decode_strict(&bytes).is_ok());
            continue;
        }
        assert!(cbor::decode_strict(&bytes).is_err(), "strict accepted {}", c["hex"]);
        if cbor::decode(&bytes, Profile::Deterministic).is_err() {
            generic_refused += 1;
        }
    }
    assert!(generic_refused >= 10, "generic decoder refused only {generic_refused}");
}

#[test]
fn s3_dcbor_valid_vectors_without_floats_or_simple_values_decode_strictly() {
    let cases = testkit::interop_json("standards/cbor/dcbor-hildjj/valid.json");
    let mut n = 0;
    for c in cases.as_array().unwrap() {
        let bytes = unhex(c["hex"].as_str().unwrap());
        if let Ok(v) = cbor::decode_strict(&bytes) {
            assert_eq!(v.encode(), bytes);
            n += 1;
        }
    }
    assert!(n > 0);
}

#[test]
fn s3_blake3_official_vectors() {
    let v = testkit::interop_json("standards/blake3/test_vectors.json");
    for c in v["cases"].as_array().unwrap() {
        let len = usize::try_from(c["input_len"].as_u64().unwrap()).unwrap();
        let input: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
        let expected = &c["hash"].as_str().unwrap()[..64];
        assert_eq!(ContentId::of_bytes(&input).to_hex(), expected, "len {len}");
    }
}

#[test]
fn s2_didkey_ed25519_vectors_from_seeds() {
    let v = testkit::interop_json("standards/didkey/ed25519-x25519.json");
    let mut n = 0;
    for (did, doc) in v.as_object().unwrap() {
        let seed: [u8; 32] = unhex(doc["seed"].as_str().unwrap()).try_into().unwrap();
        let kp = Keypair::from_seed(seed).unwrap();
        assert_eq!(&kp.did().to_did_string(), did);
        assert_eq!(Did::parse(did).unwrap(), kp.did());
        n += 1;
    }
    assert_eq!(n, 5, "the interop file holds five seeds");
}

#[test]
fn s2_x25519_did_keys_are_refused_as_wrong_codec() {
    let v = testkit::interop_json("standards/didkey/x25519.json");
    let docs = v["didDocument"].as_object().unwrap();
    assert!(!docs.is_empty());
    for did in docs.keys() {
        assert!(matches!(Did::parse(did), Err(IdentityError::WrongCodec(0xec))), "{did}");
    }
}

#[test]
fn s2_rfc8032_vectors_sign_and_verify() {
    let v = testkit::interop_json("standards/ed25519/rfc8032_ed25519.json");
    for c in v["vectors"].as_array().unwrap() {
        let seed: [u8; 32] = unhex(c["secret_key"].as_str().unwrap()).try_into().unwrap();
        let kp = Keypair::from_seed(seed).unwrap();
        assert_eq!(hex::encode(kp.did().public_bytes()), c["public_key"].as_str().unwrap());
        let msg = unhex(c["message"].as_str().unwrap());
        let sig: [u8; 64] = unhex(c["signature"].as_str().unwrap()).try_into().unwrap();
        assert_eq!(kp.sign(&msg), sig, "{}", c["name"]);
        assert!(kp.did().verify(&msg, &sig));
    }
}

/// Our verification: the key must parse as a `Did` (small-order and
/// non-canonical refused) and the signature must pass the one predicate.
fn jcp_verifies(pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    let (Ok(pk), Ok(sig)) = (<[u8; 32]>::try_from(pk), <[u8; 64]>::try_from(sig)) else { return false };
    Did::from_public_bytes(pk).is_ok_and(|d| d.verify(msg, &sig))
}

#[test]
fn s2_wycheproof_ed25519_the_one_predicate_matches_every_verdict() {
    let v = testkit::interop_json("standards/ed25519/wycheproof/ed25519_test.json");
    let mut n = 0;
    for g in v["testGroups"].as_array().unwrap() {
        let pk = unhex(g["publicKey"]["pk"].as_str().unwrap());
        for t in g["tests"].as_array().unwrap() {
            let ok = jcp_verifies(&pk, &unhex(t["msg"].as_str().unwrap()), &unhex(t["sig"].as_str().unwrap()));
            let expected = t["result"].as_str().unwrap() == "valid";
            assert_eq!(ok, expected, "tcId {} ({})", t["tcId"], t["comment"]);
            n += 1;
        }
    }
    assert_eq!(n, 151);
}

/// The one Ed25519 predicate in a batch of `size`: the case first, then
/// `size - 1` genuine signatures by another key (the batch's verdict is the
/// case's, since the others are all accepted).
fn jcp_verifies_in_a_batch(pk: &[u8], msg: &[u8], sig: &[u8], size: usize) -> bool {
    let (Ok(pk), Ok(sig)) = (<[u8; 32]>::try_from(pk), <[u8; 64]>::try_from(sig)) else { return false };
    let Ok(did) = Did::from_public_bytes(pk) else { return false };
    let other = Keypair::from_seed([7; 32]).unwrap();
    let other_did = other.did().clone();
    let msgs: Vec<Vec<u8>> =
        (0..size).map(|i| if i == 0 { msg.to_vec() } else { format!("m{i}").into_bytes() }).collect();
    let sigs: Vec<[u8; 64]> = (0..size).map(|i| if i == 0 { sig } else { other.sign(&msgs[i]) }).collect();
    let keys: Vec<&ed25519_dalek::VerifyingKey> =
        (0..size).map(|i| if i == 0 { did.verifying_key() } else { other_did.verifying_key() }).collect();
    let pieces: Vec<[&[u8]; 1]> = msgs.iter().map(|m| [m.as_slice()]).collect();
    jcp::identity::batch::verify_batch(&pieces, &sigs, &keys)
}

#[test]
fn s2_speccheck_edge_cases_get_the_one_predicates_verdict_alone_and_in_batches_of_1_2_and_64() {
    // ed25519-speccheck's twelve cases. The one predicate (docs/decisions.md
    // "§2 one Ed25519 predicate"): cofactored equation, canonical encodings,
    // no small-order R or key, canonical S. It accepts what the cofactored
    // verifiers accept (Zebra's column: 3, 4, 5, and 0-2, 9, 10, 11) less the
    // small-order keys and Rs (0, 1, 2) and the non-canonical encodings
    // (9, 10, 11): cases 3 (both equations), 4 and 5 (a mixed-order R or key
    // that only the cofactored equation forgives). "Dalek strict" accepts 3 alone.
    let v = testkit::interop_json("standards/ed25519/speccheck/cases.json");
    let cases: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let h = |k: &str| unhex(c[k].as_str().unwrap());
            (h("pub_key"), h("message"), h("signature"))
        })
        .collect();
    assert_eq!(cases.len(), 12);
    let expected: Vec<bool> = (0..12).map(|i| (3..=5).contains(&i)).collect();
    let alone: Vec<bool> = cases.iter().map(|(k, m, s)| jcp_verifies(k, m, s)).collect();
    assert_eq!(alone, expected, "alone");
    for size in [1, 2, 64] {
        let batched: Vec<bool> = cases.iter().map(|(k, m, s)| jcp_verifies_in_a_batch(k, m, s, size)).collect();
        assert_eq!(batched, expected, "in batches of {size}");
    }
    // Stock cofactorless verify_strict refuses 4 and 5: the one place the predicate accepts more.
    let strict = |(k, m, s): &(Vec<u8>, Vec<u8>, Vec<u8>)| {
        let (Ok(k), Ok(s)) = (<[u8; 32]>::try_from(k.as_slice()), <[u8; 64]>::try_from(s.as_slice())) else {
            return false;
        };
        ed25519_dalek::VerifyingKey::from_bytes(&k)
            .is_ok_and(|vk| vk.verify_strict(m, &ed25519_dalek::Signature::from_bytes(&s)).is_ok())
    };
    assert_eq!(cases.iter().map(strict).collect::<Vec<_>>(), (0..12).map(|i| i == 3).collect::<Vec<_>>());
}
