//! Content ids of many short byte strings at once (§3: a content id is
//! `blake3` of the canonical bytes).
//!
//! An auditor computes the id of every allow receipt it reads (its outcome
//! names it), and receipts are one BLAKE3 chunk (≤ 1 024 bytes) each. Hashed
//! one at a time, each chunk is a serial chain of compressions on one SIMD
//! lane; BLAKE3's own kernels hash up to 16 chunks side by side
//! (`hash_many`: 4 lanes SSE4.1, 8 AVX2, 16 AVX-512). blake3 exposes those
//! kernels only through its `#[doc(hidden)]` `platform` module, so this
//! module pins the exact blake3 version (`=1.8.7`, the workspace's
//! `blake3-pinned`: only this crate is pinned, not the protocol core), uses nothing but that module's safe functions, and is held to
//! `blake3::hash` by a differential test over every length 0..=1 100 and a
//! property test over random batches (docs/decisions.md, "§3 record ids
//! in batches"). Inputs longer than one chunk, or empty, go to `blake3::hash`.
//!
//! Hand-written because no crate offers "hash many independent short
//! messages" over BLAKE3's SIMD lanes; the compression itself is blake3's.

use blake3::platform::Platform;
use blake3::{IncrementCounter, BLOCK_LEN, CHUNK_LEN};
use blake3_pinned as blake3;

use jcp::cbor::ContentId;

// BLAKE3's IV and domain flags, as the BLAKE3 specification gives them
// (the same values as blake3's private constants; `s3_constants_are_blake3s`
// and the differential tests below fail if any differs).
const CHUNK_START: u8 = 1 << 0;
const CHUNK_END: u8 = 1 << 1;
const ROOT: u8 = 1 << 3;
const IV: [u32; 8] =
    [0x6A09_E667, 0xBB67_AE85, 0x3C6E_F372, 0xA54F_F53A, 0x510E_527F, 0x9B05_688C, 0x1F83_D9AB, 0x5BE0_CD19];

/// The widest kernel's lanes (AVX-512); narrower kernels loop inside.
const LANES: usize = 16;

/// Writes `ContentId::of_bytes(inputs[i])` into `out[i]` for every `i`
/// below both lengths, hashing inputs of equal block count together. Give
/// `out` the length of `inputs`: inputs past its end are not hashed, and
/// slots of `out` past the inputs are left as they are.
pub fn content_ids(inputs: &[&[u8]], out: &mut [ContentId]) {
    let platform = Platform::detect();
    // Indices by the number of full blocks before the last block (0..=15);
    // everything outside 1..=CHUNK_LEN bytes is hashed on its own.
    let mut by_blocks: [Vec<usize>; CHUNK_LEN / BLOCK_LEN] = Default::default();
    for (i, input) in inputs.iter().enumerate().take(out.len()) {
        if input.is_empty() || input.len() > CHUNK_LEN {
            out[i] = ContentId::of_bytes(input);
        } else {
            by_blocks[(input.len() - 1) / BLOCK_LEN].push(i);
        }
    }
    for (k, group) in by_blocks.iter().enumerate() {
        for lanes in group.chunks(LANES) {
            let mut cvs = [[0u8; 32]; LANES];
            let cvs = &mut cvs[..lanes.len()];
            if k == 0 {
                for cv in cvs.iter_mut() {
                    *cv = words_to_bytes(&IV);
                }
            } else if !leading_blocks(platform, k, inputs, lanes, cvs) {
                // Not reached (k is 1..=15 here); hashed one by one if it were.
                for &i in lanes {
                    out[i] = ContentId::of_bytes(inputs[i]);
                }
                continue;
            }
            for (&i, cv) in lanes.iter().zip(cvs.iter()) {
                out[i] = ContentId(last_block(platform, cv, &inputs[i][k * BLOCK_LEN..], k == 0));
            }
        }
    }
}

/// The chaining values after the first `k` (1..=15) full blocks of each
/// input in `lanes`, side by side: `hash_many` over `64·k`-byte prefixes,
/// `CHUNK_START` on the first block and no `CHUNK_END` (the chunk goes on).
/// False (nothing written) for a `k` outside 1..=15.
fn leading_blocks(platform: Platform, k: usize, inputs: &[&[u8]], lanes: &[usize], cvs: &mut [[u8; 32]]) -> bool {
    macro_rules! dispatch {
        ($($k:literal)*) => {
            match k {
                $($k => {
                    const N: usize = $k * BLOCK_LEN;
                    let mut prefixes: [&[u8; N]; LANES] = [&[0; N]; LANES];
                    for (p, &i) in prefixes.iter_mut().zip(lanes) {
                        // Input i has more than k blocks (grouped so), so the prefix exists.
                        if let Some(head) = inputs[i].first_chunk::<N>() {
                            *p = head;
                        }
                    }
                    platform.hash_many::<N>(
                        &prefixes[..lanes.len()],
                        &IV,
                        0,
                        IncrementCounter::No,
                        0,
                        CHUNK_START,
                        0,
                        cvs.as_flattened_mut(),
                    );
                    true
                })*
                _ => false,
            }
        };
    }
    dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
}

/// The root hash from the chaining value before the last block and that
/// block (1..=64 bytes): `CHUNK_END` and `ROOT`, `CHUNK_START` if it is the only one.
fn last_block(platform: Platform, cv: &[u8; 32], tail: &[u8], only: bool) -> [u8; 32] {
    let mut words = bytes_to_words(cv);
    let tail = &tail[..tail.len().min(BLOCK_LEN)];
    let mut block = [0u8; BLOCK_LEN];
    block[..tail.len()].copy_from_slice(tail);
    let flags = CHUNK_END | ROOT | if only { CHUNK_START } else { 0 };
    // At most 64 (cut above), so it fits; the caller passes what follows
    // the full blocks, never empty.
    let len = u8::try_from(tail.len()).unwrap_or(0);
    platform.compress_in_place(&mut words, &block, len, 0, flags);
    words_to_bytes(&words)
}

fn bytes_to_words(b: &[u8; 32]) -> [u32; 8] {
    std::array::from_fn(|i| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]))
}

fn words_to_bytes(w: &[u32; 8]) -> [u8; 32] {
    let mut b = [0u8; 32];
    for (c, w) in b.chunks_exact_mut(4).zip(w) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    /// §3: the batched id is blake3 of the bytes, for every length a chunk
    /// can hold and past it, each on its own.
    #[test]
    fn s3_batched_ids_equal_blake3_for_every_length() {
        for len in 0..=1100 {
            let b = bytes(len, 7);
            let mut out = [ContentId([0; 32])];
            content_ids(&[&b], &mut out);
            assert_eq!(out[0], ContentId::of_bytes(&b), "length {len}");
        }
    }

    /// §3: a batch that fills every lane of every group (and leaves some
    /// groups ragged) gives each input its own id, in place.
    #[test]
    fn s3_full_and_ragged_lanes_keep_each_input_its_id() {
        let inputs: Vec<Vec<u8>> = (0..200).map(|i| bytes(700 + (i * 37) % 400, i as u8)).collect();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let mut out = vec![ContentId([0; 32]); refs.len()];
        content_ids(&refs, &mut out);
        for (i, b) in inputs.iter().enumerate() {
            assert_eq!(out[i], ContentId::of_bytes(b), "input {i} ({} bytes)", b.len());
        }
    }

    /// The flags and IV above are BLAKE3's: one compression of an empty
    /// message from them is the published hash of "".
    #[test]
    fn s3_constants_are_blake3s() {
        assert_eq!(
            hex::encode(last_block(Platform::detect(), &words_to_bytes(&IV), &[0u8; 0][..], true)),
            // blake3("") from the BLAKE3 test vectors; last_block pads an empty tail.
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
    }

    proptest! {
        /// §3: random batches of random bytes, ids equal to blake3's.
        #[test]
        fn s3_random_batches_equal_blake3(inputs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..1300), 0..80)) {
            let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            let mut out = vec![ContentId([0; 32]); refs.len()];
            content_ids(&refs, &mut out);
            for (i, b) in inputs.iter().enumerate() {
                prop_assert_eq!(out[i], ContentId::of_bytes(b));
            }
        }
    }
}
