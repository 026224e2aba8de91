//! The duplicate set: every signed record accounted, by its 128-bit
//! duplicate key (`check::Meta::dedup`, the first half of the signature's
//! `R`), so that a record seen again is reported and accounted once.
//!
//! The keys are uniformly random and the set grows with the stream (1.4
//! million keys, 32 MiB for a million receipts), so nearly every insert
//! misses every cache: with a `HashSet` the misses cost 0.9 s of the 1.4 s
//! accounting of a million receipts, and the evicted lines slowed the decoder
//! and the signature checks beside it (docs/performance.md). Hand-written
//! because a general hash table cannot be asked where a key will land:
//! this one can ([`SeenSet::touch`]), so the accounting first loads the slot
//! of every key of a chunk in one pass of independent loads (the processor
//! overlaps their misses), then inserts in stream order from cache. Same
//! answers as a `HashSet<u128>`; the tests hold it to one.
//!
//! Open addressing, linear probing, at most 3/4 full, a power of two of
//! slots. The slot is a keyed multiply-shift of the key under a per-process
//! random seed, so keys chosen to collide (a steward grinding its own
//! signatures' `R`) cannot be aimed at one run of slots.

use std::hash::{BuildHasher, Hasher};

/// An empty slot; the key 0 itself is kept in [`SeenSet::zero`].
const EMPTY: u128 = 0;
const MIN_BITS: u32 = 10;

#[derive(Debug)]
pub(crate) struct SeenSet {
    slots: Vec<u128>,
    bits: u32,
    len: usize,
    zero: bool,
    seed: u64,
}

fn bits_for(n: usize) -> u32 {
    // Slots for n keys at most 3/4 full.
    let want = n.saturating_mul(4) / 3 + 1;
    want.next_power_of_two().trailing_zeros().max(MIN_BITS)
}

impl SeenSet {
    /// A set sized for `n` keys without growing.
    pub fn with_capacity(n: usize) -> Self {
        let bits = bits_for(n);
        let seed = std::collections::hash_map::RandomState::new().build_hasher().finish();
        Self { slots: vec![EMPTY; 1 << bits], bits, len: 0, zero: false, seed }
    }

    fn slot(&self, k: u128) -> usize {
        let b = k.to_le_bytes();
        let (mut lo, mut hi) = ([0u8; 8], [0u8; 8]);
        lo.copy_from_slice(&b[..8]);
        hi.copy_from_slice(&b[8..]);
        let lo = u64::from_le_bytes(lo) ^ self.seed;
        let h = (lo.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from_le_bytes(hi)).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        // The top `bits` bits (at most 2^bits slots exist, so this fits).
        usize::try_from(h >> (64 - self.bits)).unwrap_or(0)
    }

    /// Loads the first slot of every key (independent loads, so their
    /// misses overlap) so that inserting them next finds them in cache.
    pub fn touch(&self, keys: impl Iterator<Item = u128>) {
        let mut acc = 0u128;
        for k in keys {
            acc ^= self.slots.get(self.slot(k)).copied().unwrap_or(EMPTY);
        }
        std::hint::black_box(acc);
    }

    /// Adds `k`; false when it was already there.
    pub fn insert(&mut self, k: u128) -> bool {
        if k == EMPTY {
            return !std::mem::replace(&mut self.zero, true);
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        if self.place(k) {
            self.len += 1;
            true
        } else {
            false
        }
    }

    /// Puts `k` (not [`EMPTY`]) in its slot or the first empty one after;
    /// false when it is there already. The table is never full (≤ 3/4).
    fn place(&mut self, k: u128) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.slot(k);
        loop {
            match self.slots.get_mut(i) {
                Some(s) if *s == k => return false,
                Some(s) if *s == EMPTY => {
                    *s = k;
                    return true;
                }
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        self.bits += 1;
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; 1 << self.bits]);
        let keys: Vec<u128> = old.into_iter().filter(|&k| k != EMPTY).collect();
        for block in keys.chunks(256) {
            self.touch(block.iter().copied());
            for &k in block {
                self.place(k);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len + usize::from(self.zero)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn s8_2_duplicate_set_answers_like_a_hash_set_through_growth() {
        // From the smallest table through several doublings, with repeats
        // at every distance and the key 0 (the empty marker) among them.
        let mut s = SeenSet::with_capacity(0);
        let mut h = HashSet::new();
        let mut x = 0x1234_5678_9abc_def0_u128;
        for i in 0..20_000u32 {
            x = x.wrapping_mul(0x2545_f491_4f6c_dd1d_6a09_e667_f3bc_c909).wrapping_add(1);
            let k = match i % 5 {
                0 if i > 0 => x >> (i % 128), // small keys too, near 0
                1 => u128::from(i / 3),       // dense repeats
                _ => x,
            };
            let k = if i % 997 == 0 { 0 } else { k };
            assert_eq!(s.insert(k), h.insert(k), "key {k:#x} at {i}");
        }
        assert_eq!(s.len(), h.len());
        for k in &h {
            assert!(!s.insert(*k));
        }
        assert!(s.slots.len() >= 1 << MIN_BITS && s.len * 4 <= s.slots.len() * 3);
    }

    #[test]
    fn s8_2_duplicate_set_sized_ahead_does_not_grow() {
        let mut s = SeenSet::with_capacity(3_000);
        let before = s.slots.len();
        for k in 1..=3_000u128 {
            assert!(s.insert(k << 64 | k));
        }
        assert_eq!(s.slots.len(), before);
        s.touch((1..=3_000u128).map(|k| k << 64 | k));
        assert!(!s.insert(7 << 64 | 7));
    }

    proptest! {
        #[test]
        fn s8_2_duplicate_set_equals_hash_set(keys in proptest::collection::vec(prop_oneof![0u128..64, any::<u128>()], 0..3000)) {
            let mut s = SeenSet::with_capacity(keys.len() / 4);
            let mut h = HashSet::new();
            s.touch(keys.iter().copied());
            for k in keys {
                prop_assert_eq!(s.insert(k), h.insert(k));
            }
            prop_assert_eq!(s.len(), h.len());
        }
    }
}
