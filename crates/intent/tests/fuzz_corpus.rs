//! Replays the committed fuzz corpus (crates/intent/fuzz/corpus/) through
//! the fuzz target's own checks, so CI (which does not fuzz) still runs it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../fuzz/fuzz_targets/common.rs"]
mod common;

#[test]
fn fuzz_corpus_decode_canonicalize_replays_clean() {
    let n = replay("decode_canonicalize", common::check);
    assert!(n >= 24, "corpus has {n} files");
}

fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        check(&data);
        n += 1;
    }
    n
}

#[test]
fn fuzz_corpus_s8_framework_record_replays_clean() {
    let n = replay("framework_record", common::check_record);
    assert!(n >= 11, "corpus has {n} files");
}

#[test]
fn fuzz_corpus_s8_capture_context_replays_clean() {
    let n = replay("capture_context", common::check_capture_context);
    assert!(n >= 7, "corpus has {n} files");
}
