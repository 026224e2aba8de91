//! §2, §7: the one Ed25519 predicate, published as vectors
//! (`conformance/jcp/v1/ed25519.json`) and held on every path: alone
//! (`Did::verify`) and in batches of 1, 2 and 64 (`identity::batch`), in
//! every position of the batch. Each vector says what the predicate accepts
//! (`accept`) and what a stock cofactorless verifier (`verify_strict`)
//! says (`cofactorless`), so an implementer can see the one place they part:
//! a small-order component in `R` or in the key, which only the key's
//! holder can put there. Regenerate with `JCP_UPDATE_VECTORS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use curve25519_dalek::constants::EIGHT_TORSION;
use curve25519_dalek::{EdwardsPoint, Scalar};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use jcp::identity::{batch, Did, Keypair};
use serde_json::{json, Value};
use sha2::{Digest, Sha512};

const PATH: &str = "conformance/jcp/v1/ed25519.json";

fn k(r: &[u8], a: &[u8], m: &[u8]) -> Scalar {
    Scalar::from_bytes_mod_order_wide(&Sha512::new().chain_update(r).chain_update(a).chain_update(m).finalize().into())
}

/// A signature by secret scalar `a` under the public encoding `pub_a`, with
/// nonce point `[r]B + small` (small: a point of small order, or identity).
fn sign_raw(a: Scalar, pub_a: &[u8; 32], m: &[u8], r: u64, small: EdwardsPoint) -> [u8; 64] {
    let big_r = (EdwardsPoint::mul_base(&Scalar::from(r)) + small).compress().to_bytes();
    let s = Scalar::from(r) + k(&big_r, pub_a, m) * a;
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&big_r);
    sig[32..].copy_from_slice(s.as_bytes());
    sig
}

fn case(name: &str, key: &[u8; 32], m: &[u8], sig: &[u8; 64], accept: bool) -> Value {
    let cofactorless = VerifyingKey::from_bytes(key)
        .is_ok_and(|vk| !vk.is_weak() && vk.verify_strict(m, &Signature::from_bytes(sig)).is_ok());
    json!({"name": name, "key": hex::encode(key), "message": hex::encode(m), "signature": hex::encode(sig),
           "accept": accept, "cofactorless": cofactorless})
}

/// The vectors, built from fixed seeds.
fn vectors() -> Value {
    let sk = SigningKey::from_bytes(&[0x42; 32]);
    let a = sk.to_scalar();
    let pub_a = sk.verifying_key().to_bytes();
    let kp = Keypair::from_seed([0x42; 32]).unwrap();
    let m = b"jcp one ed25519 predicate";
    let mut cases = vec![case("honest", &pub_a, m, &kp.sign(m), true)];
    for t in 1..8 {
        let sig = sign_raw(a, &pub_a, m, 1000 + t as u64, EIGHT_TORSION[t]);
        cases.push(case(&format!("mixed-order R, torsion {t}"), &pub_a, m, &sig, true));
    }
    // A key with a small-order component: A = [a]B + T. Its holder signs honestly with a.
    for t in [1usize, 4] {
        let mixed = (EdwardsPoint::mul_base(&a) + EIGHT_TORSION[t]).compress().to_bytes();
        let sig = sign_raw(a, &mixed, m, 77, EdwardsPoint::default());
        cases.push(case(&format!("mixed-order key, torsion {t}"), &mixed, m, &sig, true));
    }
    // Refused: an R of small order (the identity, and torsion alone).
    cases.push(case("small-order R (identity)", &pub_a, m, &sign_raw(a, &pub_a, m, 0, EdwardsPoint::default()), false));
    cases.push(case("small-order R (torsion 1)", &pub_a, m, &sign_raw(a, &pub_a, m, 0, EIGHT_TORSION[1]), false));
    // Refused: S + ℓ (not canonical), the same signature otherwise.
    let mut big_s = kp.sign(m);
    let s = Scalar::from_canonical_bytes(big_s[32..].try_into().unwrap()).unwrap();
    let l_plus: [u8; 32] = {
        // ℓ = 2^252 + 27742317777372353535851937790883648493; S + ℓ fits in 256 bits.
        const L: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
        ];
        add_le(s.as_bytes(), &L)
    };
    big_s[32..].copy_from_slice(&l_plus);
    cases.push(case("S + l (not canonical)", &pub_a, m, &big_s, false));
    // Refused: another message, another key.
    cases.push(case("another message", &pub_a, b"jcp one ed25519 predicatf", &kp.sign(m), false));
    let other = Keypair::from_seed([0x43; 32]).unwrap();
    cases.push(case("another key", other.did().public_bytes(), m, &kp.sign(m), false));
    json!({"format": "jcp-ed25519-predicate/1",
           "rule": "accept iff key and R are canonical encodings of points not of small order, S < l, and [8]([S]B - [k]A - R) = 0 with k = SHA-512(R || A || M) mod l; the same verdict alone and in any batch",
           "cases": cases})
}

fn add_le(x: &[u8; 32], y: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut carry = 0u16;
    for i in 0..32 {
        let v = u16::from(x[i]) + u16::from(y[i]) + carry;
        out[i] = (v & 0xff) as u8;
        carry = v >> 8;
    }
    assert_eq!(carry, 0);
    out
}

fn alone(key: &[u8; 32], m: &[u8], sig: &[u8; 64]) -> bool {
    Did::from_public_bytes(*key).is_ok_and(|d| d.verify(m, sig))
}

/// The case at `at` in a batch of `size` whose other members are genuine.
fn in_batch(key: &[u8; 32], m: &[u8], sig: &[u8; 64], size: usize, at: usize) -> bool {
    let Ok(did) = Did::from_public_bytes(*key) else { return false };
    let other = Keypair::from_seed([9; 32]).unwrap();
    let other_did = other.did().clone();
    let msgs: Vec<Vec<u8>> =
        (0..size).map(|i| if i == at { m.to_vec() } else { format!("m{i}").into_bytes() }).collect();
    let sigs: Vec<[u8; 64]> = (0..size).map(|i| if i == at { *sig } else { other.sign(&msgs[i]) }).collect();
    let keys: Vec<&VerifyingKey> =
        (0..size).map(|i| if i == at { did.verifying_key() } else { other_did.verifying_key() }).collect();
    let pieces: Vec<[&[u8]; 1]> = msgs.iter().map(|x| [x.as_slice()]).collect();
    batch::verify_batch(&pieces, &sigs, &keys)
}

#[test]
fn s2_the_published_ed25519_vectors_are_what_the_generator_makes() {
    let made = serde_json::to_string_pretty(&vectors()).unwrap() + "\n";
    let path = testkit::conformance("jcp/v1/ed25519.json");
    if std::env::var_os("JCP_UPDATE_VECTORS").is_some() {
        std::fs::write(&path, &made).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(on_disk, made, "{PATH} is stale: JCP_UPDATE_VECTORS=1 cargo test -p jcp --test s2_ed25519_predicate");
}

#[test]
fn s2_one_ed25519_predicate_alone_and_in_batches_of_1_2_and_64_at_every_position() {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(testkit::conformance("jcp/v1/ed25519.json")).unwrap()).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 15);
    let mut parted = 0;
    for c in cases {
        let key: [u8; 32] = hex::decode(c["key"].as_str().unwrap()).unwrap().try_into().unwrap();
        let m = hex::decode(c["message"].as_str().unwrap()).unwrap();
        let sig: [u8; 64] = hex::decode(c["signature"].as_str().unwrap()).unwrap().try_into().unwrap();
        let want = c["accept"].as_bool().unwrap();
        let name = c["name"].as_str().unwrap();
        assert_eq!(alone(&key, &m, &sig), want, "{name}: alone");
        for (size, at) in [(1, 0), (2, 0), (2, 1), (64, 0), (64, 31), (64, 63)] {
            assert_eq!(in_batch(&key, &m, &sig, size, at), want, "{name}: batch of {size} at {at}");
        }
        if want != c["cofactorless"].as_bool().unwrap() {
            parted += 1;
            assert!(name.starts_with("mixed-order"), "{name}: the predicate and cofactorless part only on mixed order");
        }
    }
    // Nine mixed-order cases; with the torsion-4 key (order 2) this `k` is
    // even, so [k]T vanishes and the cofactorless equation holds as well.
    assert_eq!(parted, 8, "the mixed-order cases are accepted here and refused by verify_strict");
}
