//! The one Ed25519 acceptance rule (spec §2, §7 "pure and deterministic",
//! §11; docs/decisions.md "§2 one Ed25519 predicate"). Every path that
//! checks a JCP signature uses it: a signature alone ([`verify`], behind
//! [`crate::identity::Did::verify`]) and many at once
//! ([`crate::identity::batch::verify_batch`]), so no verdict depends on
//! batching, batch size, order or thread count.
//!
//! A signature `(R, S)` by key `A` over `M` is accepted when:
//! 1. `A` and `R` are canonical encodings of curve points (RFC 8032 §5.1.3:
//!    `y < p`, and not `x = 0` with the sign bit set) and neither is of small
//!    order;
//! 2. `S < ℓ` (RFC 8032 §5.1.7);
//! 3. the cofactored group equation holds: `[8]([S]B − [k]A − R) = 0`, with
//!    `k = SHA-512(R ‖ A ‖ M) mod ℓ` (RFC 8032 §5.1.7 "sufficient, but not
//!    required" form, which ZIP-215 and ed25519-zebra use).
//!
//! With the cofactored equation a batch's random combination is the
//! identity exactly when every signature's is (up to 2⁻¹²⁸), because every
//! term lies in the prime-order subgroup once multiplied by 8: batching can
//! neither accept what alone is refused nor refuse what alone is accepted.
//! What this accepts beyond `verify_strict` (cofactorless) is a signature
//! whose `R` or `A` carries a small-order component the equation ignores:
//! only the key's holder can make one (`k` hashes `R` and `A`), and no
//! honest signer does.

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::IsIdentity;
use sha2::{Digest, Sha512};

/// A point from its 32-byte encoding, or `None` when the encoding is not
/// the canonical one of a curve point or the point is of small order.
pub fn point(bytes: &[u8; 32]) -> Option<EdwardsPoint> {
    if !encoding_allowed(bytes) {
        return None;
    }
    CompressedEdwardsY(*bytes).decompress()
}

/// Whether `bytes` may encode a point the predicate takes: `y < p` and not
/// one of the encodings of a small-order point (see [`point`]), checked on
/// the bytes alone (for a key whose point is already decoded).
pub fn encoding_allowed(bytes: &[u8; 32]) -> bool {
    // Canonical `y < p = 2²⁵⁵ − 19` (decompression lets `y ≥ p` through).
    // The other non-canonical form, a set sign bit on `x = 0`, is only
    // possible for `y = ±1`, two points of small order, refused below.
    let y_at_least_p = bytes[31] & 0x7f == 0x7f && bytes[1..31].iter().all(|&b| b == 0xff) && bytes[0] >= 0xed;
    !y_at_least_p && !small_order_encodings().contains(bytes)
}

/// Every encoding with `y < p` of a point of small order: the eight torsion
/// points' own, and the two with the sign bit set on `x = 0` (`y = ±1`).
/// A byte comparison instead of `[8]P = 0` on every `R` of a batch.
fn small_order_encodings() -> &'static [[u8; 32]; 10] {
    static TABLE: std::sync::OnceLock<[[u8; 32]; 10]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [[0u8; 32]; 10];
        let mut n = 0;
        for p in curve25519_dalek::constants::EIGHT_TORSION {
            let e = p.compress().to_bytes();
            t[n] = e;
            n += 1;
            // x = 0 (the identity and the point of order 2): the sign bit's other value
            if p.compress().to_bytes() == (-p).compress().to_bytes() {
                let mut flipped = e;
                flipped[31] ^= 0x80;
                t[n] = flipped;
                n += 1;
            }
        }
        t
    })
}

/// `S` of a signature, when canonical (`< ℓ`).
pub fn scalar_s(sig: &[u8; 64]) -> Option<Scalar> {
    let mut s = [0u8; 32];
    s.copy_from_slice(&sig[32..]);
    Option::from(Scalar::from_canonical_bytes(s))
}

/// `k = SHA-512(R ‖ A ‖ M) mod ℓ`, the message given in pieces hashed in order.
pub fn challenge<P: AsRef<[u8]>>(r: &[u8], a: &[u8; 32], message: &[P]) -> [u8; 64] {
    let mut h = Sha512::default();
    h.update(r);
    h.update(a);
    for piece in message {
        h.update(piece.as_ref());
    }
    h.finalize().into()
}

/// The predicate over one signature: see the module's rule. `key` is the
/// 32-byte public key, `message` the signed bytes in pieces.
pub fn verify<P: AsRef<[u8]>>(key: &[u8; 32], message: &[P], sig: &[u8; 64]) -> bool {
    let Some(a) = point(key) else {
        return false;
    };
    verify_at(&a, key, message, sig)
}

/// [`verify`] with the key's point already decoded (and checked by [`point`]).
pub fn verify_at<P: AsRef<[u8]>>(a: &EdwardsPoint, key: &[u8; 32], message: &[P], sig: &[u8; 64]) -> bool {
    let mut r_bytes = [0u8; 32];
    r_bytes.copy_from_slice(&sig[..32]);
    let (Some(r), Some(s)) = (point(&r_bytes), scalar_s(sig)) else {
        return false;
    };
    let k = Scalar::from_bytes_mod_order_wide(&challenge(&r_bytes, key, message));
    // [S]B − [k]A − R, times the cofactor.
    let sb_minus_ka = EdwardsPoint::vartime_double_scalar_mul_basepoint(&k, &(-a), &s);
    (sb_minus_ka - r).mul_by_cofactor().is_identity()
}

/// The base point (for the batch equation).
pub(crate) const BASE: EdwardsPoint = ED25519_BASEPOINT_POINT;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn s2_a_point_encoding_is_refused_unless_canonical_and_not_of_small_order() {
        let b = ED25519_BASEPOINT_POINT.compress().to_bytes();
        assert!(point(&b).is_some());
        // y = p + 2 (non-canonical for y = 2, whatever point that is), y = p: refused.
        let mut big = [0xffu8; 32];
        big[31] = 0x7f;
        big[0] = 0xed + 2;
        assert!(point(&big).is_none());
        big[0] = 0xed;
        assert!(point(&big).is_none());
        // The identity, and the identity with the sign bit set (x = 0): small order.
        let mut id = [0u8; 32];
        id[0] = 1;
        assert!(point(&id).is_none());
        id[31] = 0x80;
        assert!(point(&id).is_none());
        // Every small-order point, and the table is exactly the encodings that
        // decode to one: ten distinct ones, each of small order.
        for t in curve25519_dalek::constants::EIGHT_TORSION {
            assert!(point(t.compress().as_bytes()).is_none());
        }
        let table = small_order_encodings();
        for (i, e) in table.iter().enumerate() {
            assert!(CompressedEdwardsY(*e).decompress().unwrap().is_small_order(), "{i}");
            assert!(!table[..i].contains(e), "{i} repeats");
        }
        // and no other encoding decodes to a small-order point: a sample of points plus torsion
        for k in 1u64..200 {
            for t in curve25519_dalek::constants::EIGHT_TORSION {
                let e = (EdwardsPoint::mul_base(&Scalar::from(k)) + t).compress().to_bytes();
                assert!(point(&e).is_some(), "mixed order is not small order");
            }
        }
        // Decoding agrees with the point's own encoding wherever it accepts.
        for k in 1u64..64 {
            let e = EdwardsPoint::mul_base(&Scalar::from(k)).compress().to_bytes();
            assert_eq!(point(&e).unwrap().compress().to_bytes(), e);
        }
    }
}
