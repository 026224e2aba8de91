//! Replays the committed cargo-fuzz corpora (`crates/jcp/fuzz/corpus/<target>/`)
//! through the same invariants the fuzz targets check, so every CI run
//! exercises them without nightly.

use std::path::PathBuf;

fn replay(target: &str, check: fn(&[u8]) -> Result<(), String>) {
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

#[test]
fn s3_fuzz_corpus_cbor_decode() {
    replay("cbor_decode", jcp::fuzzing::cbor_decode);
}

#[test]
fn s4_fuzz_corpus_grant_decode() {
    replay("grant_decode", jcp::fuzzing::grant_decode);
}

#[test]
fn s4_2_fuzz_corpus_chain_decode() {
    replay("chain_decode", jcp::fuzzing::chain_decode);
}

#[test]
fn c17_fuzz_corpus_statement_decode() {
    replay("statement_decode", jcp::fuzzing::statement_decode);
}
