//! §2/§3: replays every committed fuzz corpus file through the same property
//! the cargo-fuzz target checks (CI has no nightly fuzzing).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[test]
fn s3_fuzz_corpus_replays_without_violations() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("fuzz corpus dir") {
        let p = e.expect("entry").path();
        let bytes = std::fs::read(&p).expect("read");
        if let Some(v) = blueprint::fuzzing::exercise(&bytes) {
            panic!("{}: {v}", p.display());
        }
        n += 1;
    }
    assert!(n >= 30, "the committed corpus has {n} files");
}

#[test]
fn s3_fuzz_property_holds_on_hand_picked_edge_inputs() {
    // The property is not vacuous: feed it inputs that exercise each branch.
    assert!(blueprint::fuzzing::exercise(b"{\"b\":1,\"a\":[1.0,2]}").is_none());
    assert!(blueprint::fuzzing::exercise(b"\xff").is_none());
    assert!(blueprint::fuzzing::exercise(&[b'['; 100]).is_none());
}
