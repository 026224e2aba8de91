//! Replays the committed `run_decode` cargo-fuzz corpus
//! (`crates/jcp/fuzz/corpus/run_decode/`) through the invariant the fuzz
//! target checks (§4.7 run files), so CI runs it without nightly.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use std::path::PathBuf;

#[test]
fn c21_fuzz_corpus_run_decode() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/run_decode");
    let mut n = 0;
    let mut accepted = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        if let Err(msg) = jcp::fuzzing::run_decode(&data) {
            panic!("{}: {msg}", p.display());
        }
        accepted += usize::from(jcp::steering::Run::from_bytes(&data).is_ok());
        n += 1;
    }
    assert!(n >= 10, "run_decode: only {n} corpus files");
    // The corpus holds real runs too, not only rejects.
    assert!(accepted >= 3, "run_decode: only {accepted} corpus files decode");
}
