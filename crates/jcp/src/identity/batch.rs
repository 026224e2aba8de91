//! Ed25519 batch verification with repeated keys merged, under the one
//! Ed25519 predicate ([`super::ed25519`]).
//!
//! A receipt stream is sealed by one steward, or a handful: every signature
//! in a batch of 64 is usually under the same key. The batch checks the
//! random linear combination, times the cofactor,
//!
//! ```text
//! [8]([-Σ zᵢ·sᵢ]B + Σ [zᵢ]Rᵢ + Σ [zᵢ·hᵢ]Aᵢ) == identity
//! ```
//!
//! as one multiscalar multiplication. When Aᵢ repeats,
//! `Σ [zᵢ·hᵢ]A = [Σ zᵢ·hᵢ]A`, so it runs over n + 1 + k points (k distinct
//! keys) instead of 2n + 1: the per-point cost is paid once per key.
//!
//! Each signature first passes the predicate's own checks (canonical,
//! non-small-order `R` and key, canonical `s`); the weights `zᵢ` are 128
//! bits drawn from a merlin transcript of every `hᵢ = SHA-512(R ‖ A ‖ M)` and
//! `sᵢ` (as `ed25519_dalek::verify_batch` draws them). Because the equation
//! is cofactored, every term `[8](sᵢB − hᵢAᵢ − Rᵢ)` lies in the prime-order
//! subgroup, and their weighted sum is the identity only if each is (up to a
//! 2⁻¹²⁸ chance): a batch accepts exactly the signatures that
//! [`super::ed25519::verify`] accepts one by one, whatever else is in it.
//! It is written here, on curve25519-dalek's multiscalar multiplication,
//! because ed25519-dalek's batch is cofactorless (its verdict on a
//! mixed-order `R` depends on the weights, so on the rest of the batch) and
//! does not merge repeated keys; the curve arithmetic is the library's.

use core::iter::once;

use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use ed25519_dalek::VerifyingKey;
use merlin::Transcript;

use super::ed25519;

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

/// True when every signature in the batch satisfies the one Ed25519
/// predicate ([`super::ed25519::verify`]); false on any failure or a length
/// mismatch. A false batch says nothing about which one failed: check each
/// alone, which gives the same verdicts. Each message is given as the pieces
/// it is made of (hashed in order, so a message need not be copied together
/// first); one piece is the message.
pub fn verify_batch<M: AsRef<[P]>, P: AsRef<[u8]>>(
    messages: &[M],
    signatures: &[[u8; 64]],
    keys: &[&VerifyingKey],
) -> bool {
    let count = signatures.len();
    if messages.len() != count || keys.len() != count {
        return false;
    }
    let mut transcript = Transcript::new(b"ed25519 batch verification");
    let mut hrams: Vec<[u8; 64]> = Vec::with_capacity(count);
    for ((sig, key), msg) in signatures.iter().zip(keys).zip(messages) {
        hrams.push(ed25519::challenge(&sig[..32], key.as_bytes(), msg.as_ref()));
    }
    for hram in &hrams {
        transcript.append_message(b"hram", hram);
    }
    for sig in signatures {
        transcript.append_message(b"sig.s", &sig[32..]);
    }
    let mut rng = transcript.build_rng().finalize(&mut ZeroRng);

    let mut s_sum = Scalar::ZERO;
    let mut zs: Vec<Scalar> = Vec::with_capacity(count);
    let mut rs: Vec<EdwardsPoint> = Vec::with_capacity(count);
    // (key bytes, key point, Σ zᵢ·hᵢ) per distinct key, in first-seen order.
    let mut groups: Vec<(&[u8; 32], EdwardsPoint, Scalar)> = Vec::new();
    for ((sig, key), hram) in signatures.iter().zip(keys).zip(&hrams) {
        let Some(s_i) = ed25519::scalar_s(sig) else {
            return false;
        };
        let mut r_bytes = [0u8; 32];
        r_bytes.copy_from_slice(&sig[..32]);
        let Some(r_i) = ed25519::point(&r_bytes) else {
            return false;
        };
        let mut zb = [0u8; 16];
        rand_core::RngCore::fill_bytes(&mut rng, &mut zb);
        let z = Scalar::from(u128::from_le_bytes(zb));
        s_sum += z * s_i;
        let zh = z * Scalar::from_bytes_mod_order_wide(hram);
        match groups.iter_mut().find(|g| g.0 == key.as_bytes()) {
            Some(g) => g.2 += zh,
            // A key's encoding and order are checked once, with its first signature.
            // (A `VerifyingKey` holds its decoded point: the checks are on its bytes.)
            None if ed25519::encoding_allowed(key.as_bytes()) => groups.push((key.as_bytes(), key.to_edwards(), zh)),
            None => return false,
        }
        zs.push(z);
        rs.push(r_i);
    }
    let scalars = once(-s_sum).chain(zs).chain(groups.iter().map(|g| g.2));
    let points = once(ed25519::BASE).chain(rs).chain(groups.iter().map(|g| g.1));
    EdwardsPoint::vartime_multiscalar_mul(scalars, points).mul_by_cofactor().is_identity()
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

    fn alone(msg: &[u8], sig: &[u8; 64], key: &VerifyingKey) -> bool {
        ed25519::verify(key.as_bytes(), &[msg], sig)
    }

    #[test]
    fn s2_a_small_order_r_is_refused_alone_and_in_a_batch() {
        let ks = keys(1);
        let (mut m, mut s, v) = batch(8, 1);
        m[3] = b"crafted".to_vec();
        s[3] = crafted(&ks[0], &m[3], 0, 0);
        assert!(v[3].verify_strict(&m[3], &Signature::from_bytes(&s[3])).is_err());
        assert_eq!(both(&m, &s, &v), (false, true), "dalek's batch accepts R = identity; the predicate does not");
        assert!(!alone(&m[3], &s[3], &v[3]));
        let mr: Vec<[&[u8]; 1]> = m.iter().map(|x| [x.as_slice()]).collect();
        let kr: Vec<&VerifyingKey> = v.iter().collect();
        // Without it the rest still verifies.
        assert!(verify_batch(
            &[&mr[..3], &mr[4..]].concat(),
            &[&s[..3], &s[4..]].concat(),
            &[&kr[..3], &kr[4..]].concat()
        ));
    }

    /// A mixed-order `R` (a small-order part its signer added): refused by
    /// `verify_strict` (cofactorless), accepted by the one predicate, alone
    /// and in every batch, whatever the rest of the batch is.
    #[test]
    fn s2_a_mixed_order_r_gets_one_verdict_alone_and_in_batches_of_1_2_and_64() {
        let ks = keys(2);
        let (m, mut s, v) = batch(64, 2);
        for (i, t) in [(5usize, 1usize), (17, 2), (40, 4), (63, 7)] {
            s[i] = crafted(&ks[i % 2], &m[i], 1000 + i as u64, t);
            assert!(v[i].verify_strict(&m[i], &Signature::from_bytes(&s[i])).is_err(), "cofactorless refuses {i}");
            assert!(alone(&m[i], &s[i], &v[i]), "the predicate accepts {i}");
        }
        let mr: Vec<[&[u8]; 1]> = m.iter().map(|x| [x.as_slice()]).collect();
        let kr: Vec<&VerifyingKey> = v.iter().collect();
        for size in [1usize, 2, 64] {
            for at in (0..64).step_by(size) {
                let end = (at + size).min(64);
                assert!(verify_batch(&mr[at..end], &s[at..end], &kr[at..end]), "size {size} at {at}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Honest signatures and random corruption: the cofactored batch and
        /// dalek's cofactorless one agree (a flipped bit moves `R` or `s` by
        /// a point of large order, which both equations see).
        #[test]
        fn s8_2_merged_keys_accept_what_dalek_accepts_on_honest_and_corrupted_batches(
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
        }

        /// §7: the verdict on each signature is the same alone and in any
        /// batch, of any size and order: a batch accepts exactly when every
        /// one of its signatures is accepted alone. Signer-crafted
        /// mixed-order and small-order `R`s and broken messages among honest
        /// signatures.
        #[test]
        fn s2_a_batch_accepts_exactly_when_each_signature_alone_is_accepted(
            n in 2usize..24,
            crafts in proptest::collection::vec((0usize..24, 0u64..u64::MAX, 0usize..8), 1..5),
            broken in proptest::option::of(0usize..24),
            rotate in 0usize..24,
            size in 1usize..9,
        ) {
            let ks = keys(2);
            let (mut m, mut s, mut v) = batch(n, 2);
            for &(i, r, t) in &crafts {
                s[i % n] = crafted(&ks[(i % n) % 2], &m[i % n], r, t);
            }
            if let Some(b) = broken {
                m[b % n].push(b'!');
            }
            m.rotate_left(rotate % n);
            s.rotate_left(rotate % n);
            v.rotate_left(rotate % n);
            let verdicts: Vec<bool> = (0..n).map(|i| alone(&m[i], &s[i], &v[i])).collect();
            let mr: Vec<[&[u8]; 1]> = m.iter().map(|x| [x.as_slice()]).collect();
            let kr: Vec<&VerifyingKey> = v.iter().collect();
            for at in (0..n).step_by(size) {
                let end = (at + size).min(n);
                prop_assert_eq!(
                    verify_batch(&mr[at..end], &s[at..end], &kr[at..end]),
                    verdicts[at..end].iter().all(|x| *x),
                    "batch {}..{}", at, end
                );
            }
            prop_assert_eq!(verify_batch(&mr, &s, &kr), verdicts.iter().all(|x| *x));
        }
    }
}
