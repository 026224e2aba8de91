#![no_main]
//! Every decoder over arbitrary bytes: no panic, codes stay in the closed
//! vocabulary, and canonicalization is a fixed point of decoding.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(violation) = blueprint::fuzzing::exercise(data) {
        panic!("{violation}");
    }
});
