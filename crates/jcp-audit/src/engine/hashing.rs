//! The engine's map keys and hasher: record ids, content ids and did:key
//! public keys, already uniformly distributed by blake3 and key generation.

use std::collections::{HashMap, HashSet};

/// The engine's maps are keyed by blake3-derived ids and did:keys, which
/// are uniformly distributed already: the hasher folds the first eight
/// bytes of each written field instead of running `SipHash` over all of them
/// (a third of the accounting's time went to hashing). Keys reach the maps
/// only from records whose signature verified, so colliding them on purpose
/// needs a steward's key and grinds blake3 or key generation per key.
pub(super) type Fast = std::hash::BuildHasherDefault<IdHasher>;

/// The [`Fast`] hasher's state.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut w = [0u8; 8];
        let n = bytes.len().min(8);
        w[..n].copy_from_slice(&bytes[..n]);
        self.write_u64(u64::from_le_bytes(w));
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(26) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A map keyed by ids or keys, with the [`Fast`] hasher.
pub(super) type Map<K, V> = HashMap<K, V, Fast>;
/// A parsed did's public-key bytes: the engine keys its maps by them and
/// spells the did (`did_string_of`) only in the report.
pub(super) type Key = [u8; 32];
/// A set of ids, with the [`Fast`] hasher.
pub(super) type Set<K> = HashSet<K, Fast>;
