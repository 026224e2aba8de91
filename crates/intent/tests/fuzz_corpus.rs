//! Replays the committed fuzz corpus (crates/intent/fuzz/corpus/) through
//! the fuzz target's own checks, so CI (which does not fuzz) still runs it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../fuzz/fuzz_targets/common.rs"]
mod common;

#[test]
fn fuzz_corpus_decode_canonicalize_replays_clean() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode_canonicalize");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        common::check(&data);
        n += 1;
    }
    assert!(n >= 24, "corpus has {n} files");
}
