//! Ed25519 batch verification with repeated keys merged.
//!
//! A receipt stream is sealed by one steward, or a handful: every signature
//! in a batch of 64 is usually under the same key. `ed25519_dalek::verify_batch`
//! checks the random linear combination
//!
//! ```text
//! [-Σ zᵢ·sᵢ]B + Σ [zᵢ]Rᵢ + Σ [zᵢ·hᵢ]Aᵢ == identity
//! ```
//!
//! as one multiscalar multiplication over 2n + 1 points. When Aᵢ repeats,
//! `Σ [zᵢ·hᵢ]A = [Σ zᵢ·hᵢ]A`, so the same group element is computed over
//! n + 1 + k points (k distinct keys): the per-point cost (a lookup table and
//! about one addition per six bits of a full-size scalar) is paid once per
//! key instead of once per signature.
//!
//! Everything else is `ed25519_dalek::verify_batch` 2.2 step for step, so the
//! two accept exactly the same batches (the tests hold them equal on valid,
//! corrupted and random inputs): the same `hᵢ = SHA-512(R ‖ A ‖ M)`, the
//! same canonical-`s` check, the same merlin transcript deriving the 128-bit
//! `zᵢ` from every `hᵢ` and `sᵢ`, the same cofactorless identity check. It
//! is written here, on curve25519-dalek's multiscalar multiplication, only
//! because ed25519-dalek does not merge repeated keys; the curve arithmetic
//! is the library's.
//!
//! Two entry points. [`verify_batch`] is dalek's acceptance exactly (the
//! audit's). [`verify_batch_refusing_small_order`] also refuses, as
//! `verify_strict` does, a small-order `R` or key (the endpoint's caller
//! check, docs/decisions.md "§2, §11 callers' signatures in batches"). What
//! either accepts satisfies RFC 8032 §5.1.7's group equation for every
//! signature: a random combination of the per-signature differences is the
//! identity only if each difference is (up to a 2⁻¹²⁸ chance) of small
//! order, which the cofactored equation `[8][S]B = [8]R + [8][k]A` ignores.
//! What `verify_strict` refuses beyond that (a mixed-order `R` whose
//! small-order part the batch weights happen to cancel) only the key's own
//! holder can make: `k` hashes `R`, so no one else can move it.

use core::iter::once;

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use ed25519_dalek::VerifyingKey;
use merlin::Transcript;
use sha2::{Digest, Sha512};

/// `ed25519_dalek`'s batch RNG finaliser: the transcript alone seeds the
/// `zᵢ` (deterministic batch verification).
struct ZeroRng;

impl rand_core::RngCore for ZeroRng {
    fn next_u32(&mut self) -> u32 {
        rand_core::impls::next_u32_via_fill(self)
    }

    fn next_u64(&mut self) -> u64 {
        rand_core::impls::next_u64_via_fill(self)
    }

    fn fill_bytes(&mut self, _dest: &mut [u8]) {}

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for ZeroRng {}

/// True when every signature in the batch verifies (the same answer as
/// `ed25519_dalek::verify_batch`); false on any failure or a length mismatch.
/// A false batch says nothing about which one failed: check each alone.
/// Each message is given as the pieces it is made of (hashed in order, so
/// a message need not be copied together first); one piece is the message.
pub fn verify_batch<M: AsRef<[P]>, P: AsRef<[u8]>>(
    messages: &[M],
    signatures: &[[u8; 64]],
    keys: &[&VerifyingKey],
) -> bool {
    batch_equation(messages, signatures, keys, false)
}

/// [`verify_batch`], and false as well where any signature's `R` or any key
/// is of small order (`verify_strict`'s two refusals beyond the equation).
/// A `did:key` key is never of small order (parsing refuses it); the check
/// of the key stays so the function holds for any `VerifyingKey`.
pub fn verify_batch_refusing_small_order<M: AsRef<[P]>, P: AsRef<[u8]>>(
    messages: &[M],
    signatures: &[[u8; 64]],
    keys: &[&VerifyingKey],
) -> bool {
    batch_equation(messages, signatures, keys, true)
}

fn batch_equation<M: AsRef<[P]>, P: AsRef<[u8]>>(
    messages: &[M],
    signatures: &[[u8; 64]],
    keys: &[&VerifyingKey],
    refuse_small_order: bool,
) -> bool {
    let n = signatures.len();
    if messages.len() != n || keys.len() != n {
        return false;
    }
    let mut transcript = Transcript::new(b"ed25519 batch verification");
    let mut hrams: Vec<[u8; 64]> = Vec::with_capacity(n);
    for ((sig, key), msg) in signatures.iter().zip(keys).zip(messages) {
        let mut h = Sha512::default();
        h.update(&sig[..32]);
        h.update(key.as_bytes());
        for piece in msg.as_ref() {
            h.update(piece.as_ref());
        }
        hrams.push(h.finalize().into());
    }
    for hram in &hrams {
        transcript.append_message(b"hram", hram);
    }
    for sig in signatures {
        transcript.append_message(b"sig.s", &sig[32..]);
    }
    let mut rng = transcript.build_rng().finalize(&mut ZeroRng);

    let mut s_sum = Scalar::ZERO;
    let mut zs: Vec<Scalar> = Vec::with_capacity(n);
    let mut rs: Vec<Option<EdwardsPoint>> = Vec::with_capacity(n);
    // (key bytes, key point, Σ zᵢ·hᵢ) per distinct key, in first-seen order.
    let mut groups: Vec<(&[u8; 32], EdwardsPoint, Scalar)> = Vec::new();
    for ((sig, key), hram) in signatures.iter().zip(keys).zip(&hrams) {
        let mut s_bytes = [0u8; 32];
        s_bytes.copy_from_slice(&sig[32..]);
        let Some(s) = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes)) else {
            return false;
        };
        let mut r_bytes = [0u8; 32];
        r_bytes.copy_from_slice(&sig[..32]);
        let mut zb = [0u8; 16];
        rand_core::RngCore::fill_bytes(&mut rng, &mut zb);
        let z = Scalar::from(u128::from_le_bytes(zb));
        s_sum += z * s;
        let zh = z * Scalar::from_bytes_mod_order_wide(hram);
        match groups.iter_mut().find(|g| g.0 == key.as_bytes()) {
            Some(g) => g.2 += zh,
            // A key's order is checked once, with its first signature.
            None if refuse_small_order && key.is_weak() => return false,
            None => groups.push((key.as_bytes(), key.to_edwards(), zh)),
        }
        zs.push(z);
        let r = CompressedEdwardsY(r_bytes).decompress();
        if refuse_small_order && r.is_none_or(|r| r.is_small_order()) {
            return false;
        }
        rs.push(r);
    }
    let scalars = once(-s_sum).chain(zs).chain(groups.iter().map(|g| g.2));
    let points = once(Some(ED25519_BASEPOINT_POINT)).chain(rs).chain(groups.iter().map(|g| Some(g.1)));
    EdwardsPoint::optional_multiscalar_mul(scalars, points).is_some_and(|p| p.is_identity())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, Signer, SigningKey};
    use proptest::prelude::*;

    fn keys(k: usize) -> Vec<SigningKey> {
        (0..k).map(|i| SigningKey::from_bytes(&[u8::try_from(i + 1).unwrap(); 32])).collect()
    }

    fn batch(n: usize, k: usize) -> (Vec<Vec<u8>>, Vec<[u8; 64]>, Vec<VerifyingKey>) {
        let ks = keys(k);
        let msgs: Vec<Vec<u8>> = (0..n).map(|i| format!("receipt {i}").into_bytes()).collect();
        let sigs = msgs.iter().enumerate().map(|(i, m)| ks[i % k].sign(m).to_bytes()).collect();
        let vks = (0..n).map(|i| ks[i % k].verifying_key()).collect();
        (msgs, sigs, vks)
    }

    /// Both verifiers on the same inputs.
    fn both(msgs: &[Vec<u8>], sigs: &[[u8; 64]], vks: &[VerifyingKey]) -> (bool, bool) {
        let m: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        let k: Vec<&VerifyingKey> = vks.iter().collect();
        // Ours takes each message in pieces: split every one at a different place.
        let pieces: Vec<[&[u8]; 2]> = m
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let c = i % (x.len() + 1);
                [&x[..c], &x[c..]]
            })
            .collect();
        let ours = verify_batch(&pieces, sigs, &k);
        assert_eq!(ours, verify_batch(&m.iter().map(|x| [*x]).collect::<Vec<_>>(), sigs, &k));
        let s: Vec<Signature> = sigs.iter().map(Signature::from_bytes).collect();
        let theirs = ed25519_dalek::verify_batch(&m, &s, vks).is_ok();
        (ours, theirs)
    }

    #[test]
    fn s8_2_valid_batches_verify_like_dalek_with_one_or_many_keys() {
        for (n, k) in [(1, 1), (2, 1), (64, 1), (64, 3), (64, 64), (7, 2)] {
            let (m, s, v) = batch(n, k);
            assert_eq!(both(&m, &s, &v), (true, true), "n={n} k={k}");
        }
    }

    #[test]
    fn s8_2_each_kind_of_corruption_fails_like_dalek() {
        let (m, s, v) = batch(64, 2);
        // A changed message.
        let mut m1 = m.clone();
        m1[17][0] ^= 1;
        assert_eq!(both(&m1, &s, &v), (false, false));
        // A changed R (still a point or not), a changed s, a non-canonical s (s + ℓ).
        for (byte, bit) in [(3usize, 0x10u8), (40, 0x01), (63, 0x10)] {
            let mut s1 = s.clone();
            s1[5][byte] ^= bit;
            assert_eq!(both(&m, &s1, &v), (false, false), "byte {byte}");
        }
        let mut s2 = s.clone();
        // ℓ = 2^252 + 27742317777372353535851937790883648493, little-endian.
        let l: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
        ];
        let mut carry = 0u16;
        for i in 0..32 {
            let t = u16::from(s2[9][32 + i]) + u16::from(l[i]) + carry;
            s2[9][32 + i] = (t & 0xff) as u8;
            carry = t >> 8;
        }
        assert_eq!(both(&m, &s2, &v), (false, false), "s + l is refused as non-canonical");
        // The right signature under the wrong key (keys swapped between two entries).
        let mut v1 = v.clone();
        v1.swap(0, 1);
        assert_eq!(both(&m, &s, &v1), (false, false));
        // Lengths that disagree.
        let mr: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
        let kr: Vec<&VerifyingKey> = v.iter().collect();
        assert!(!verify_batch(&mr[..63].iter().map(|x| [*x]).collect::<Vec<_>>(), &s, &kr));
    }

    /// A signature its signer crafted with a small-order part in `R`
    /// ([`crate::identity::Keypair::sign_with_small_order_r_for_tests`]).
    fn crafted(key: &SigningKey, msg: &[u8], r: u64, t: usize) -> [u8; 64] {
        crate::identity::Keypair::from_seed(key.to_bytes()).unwrap().sign_with_small_order_r_for_tests(msg, r, t)
    }

    /// RFC 8032 §5.1.7, the cofactored group equation `[8][S]B = [8]R + [8][k]A`.
    fn cofactored(msg: &[u8], sig: &[u8; 64], key: &VerifyingKey) -> bool {
        let Some(r) = CompressedEdwardsY(sig[..32].try_into().unwrap()).decompress() else { return false };
        let Some(s) = Option::<Scalar>::from(Scalar::from_canonical_bytes(sig[32..].try_into().unwrap())) else {
            return false;
        };
        let mut h = Sha512::default();
        h.update(&sig[..32]);
        h.update(key.as_bytes());
        h.update(msg);
        let k = Scalar::from_bytes_mod_order_wide(&h.finalize().into());
        (EdwardsPoint::mul_base(&s) - r - k * key.to_edwards()).mul_by_cofactor().is_identity()
    }

    #[test]
    fn s2_a_small_order_r_is_refused_as_verify_strict_refuses_it() {
        let ks = keys(1);
        let (mut m, mut s, v) = batch(8, 1);
        m[3] = b"crafted".to_vec();
        s[3] = crafted(&ks[0], &m[3], 0, 0);
        assert!(v[3].verify_strict(&m[3], &Signature::from_bytes(&s[3])).is_err());
        assert_eq!(both(&m, &s, &v), (true, true), "dalek's batch accepts R = identity");
        let mr: Vec<[&[u8]; 1]> = m.iter().map(|x| [x.as_slice()]).collect();
        let kr: Vec<&VerifyingKey> = v.iter().collect();
        assert!(!verify_batch_refusing_small_order(&mr, &s, &kr));
        // Without it the rest still verifies.
        assert!(verify_batch_refusing_small_order(
            &[&mr[..3], &mr[4..]].concat(),
            &[&s[..3], &s[4..]].concat(),
            &[&kr[..3], &kr[4..]].concat()
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn s8_2_merged_keys_accept_exactly_what_dalek_accepts(
            n in 1usize..40,
            k in 1usize..5,
            flips in proptest::collection::vec((0usize..40, 0usize..64, 0u8..8), 0..3),
        ) {
            let (m, mut s, v) = batch(n, k);
            for (i, byte, bit) in flips {
                s[i % n][byte] ^= 1 << bit;
            }
            let (ours, theirs) = both(&m, &s, &v);
            prop_assert_eq!(ours, theirs);
            let mr: Vec<[&[u8]; 1]> = m.iter().map(|x| [x.as_slice()]).collect();
            let kr: Vec<&VerifyingKey> = v.iter().collect();
            prop_assert_eq!(verify_batch_refusing_small_order(&mr, &s, &kr), theirs);
        }

        /// Whatever the batch accepts, each of its signatures satisfies the
        /// cofactored equation: signer-crafted mixed-order `R`s and broken
        /// messages among honest signatures never slip a prime-order
        /// difference through.
        #[test]
        fn s2_what_a_batch_accepts_satisfies_rfc8032s_group_equation(
            n in 2usize..12,
            crafts in proptest::collection::vec((0usize..12, 1u64..u64::MAX, 1usize..8), 1..4),
            broken in proptest::option::of(0usize..12),
        ) {
            let ks = keys(2);
            let (mut m, mut s, v) = batch(n, 2);
            for &(i, r, t) in &crafts {
                s[i % n] = crafted(&ks[(i % n) % 2], &m[i % n], r, t);
            }
            if let Some(b) = broken {
                m[b % n].push(b'!');
            }
            let mr: Vec<[&[u8]; 1]> = m.iter().map(|x| [x.as_slice()]).collect();
            let kr: Vec<&VerifyingKey> = v.iter().collect();
            if verify_batch_refusing_small_order(&mr, &s, &kr) {
                for i in 0..n {
                    prop_assert!(cofactored(&m[i], &s[i], &v[i]), "signature {} fails the group equation", i);
                }
                prop_assert!(broken.is_none());
            }
        }
    }
}
