//! Replays the committed cargo-fuzz corpora (`crates/threshold/fuzz/corpus/<target>/`)
//! through the invariants the fuzz targets check, so every `cargo test`
//! exercises every participant-file decoder without nightly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use std::path::PathBuf;

#[test]
fn c13_fuzz_corpus_every_participant_file_decoder() {
    for (target, check) in jcp_threshold::fuzzing::TARGETS {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            let data = std::fs::read(&p).unwrap();
            if let Err(msg) = check(&data) {
                panic!("{}: {msg}", p.display());
            }
            n += 1;
        }
        assert!(n >= 10, "{target}: only {n} corpus files");
    }
}
