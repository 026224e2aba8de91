//! Replays the committed cargo-fuzz corpora (`crates/jcp/fuzz/corpus/<target>/`)
//! through the same invariants the fuzz targets check, so every CI run
//! exercises them without nightly.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

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
fn s5_fuzz_corpus_energy_text() {
    replay("energy_text", jcp::fuzzing::energy_text);
    assert!(
        accepted("energy_text", |d| std::str::from_utf8(d).is_ok_and(|t| jcp::energy::parse_energy(t).is_ok())) >= 10
    );
}

#[test]
fn s4_3_fuzz_corpus_revocation_log() {
    replay("revocation_log", jcp::fuzzing::revocation_log);
    let accepted = accepted("revocation_log", |d| {
        let key = jcp::identity::Keypair::from_seed([77; 32]).unwrap().did();
        jcp::revocation_log::IssuerLog::read(d, &[key]).is_ok_and(|l| !l.entries().is_empty())
    });
    assert!(accepted >= 3, "the corpus holds logs that read, with entries: {accepted}");
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

/// How many corpus files of `target` the decoder accepts (a corpus of
/// rejects alone would not exercise what follows decoding).
fn accepted(target: &str, decodes: fn(&[u8]) -> bool) -> usize {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    std::fs::read_dir(&dir).unwrap().filter(|e| decodes(&std::fs::read(e.as_ref().unwrap().path()).unwrap())).count()
}

#[test]
fn c12_fuzz_corpus_keylog_decode() {
    replay("keylog_decode", jcp::fuzzing::keylog_decode);
    assert!(accepted("keylog_decode", |d| jcp::rotation::KeyLog::from_bytes(d).is_ok()) >= 10);
}

#[test]
fn c20_fuzz_corpus_policy_decode() {
    replay("policy_decode", jcp::fuzzing::policy_decode);
    assert!(accepted("policy_decode", |d| jcp::standing::SignedMintPolicy::from_bytes(d).is_ok()) >= 10);
}

#[test]
fn c20_fuzz_corpus_ledger_decode() {
    replay("ledger_decode", jcp::fuzzing::ledger_decode);
    assert!(accepted("ledger_decode", |d| jcp::standing::MintLedger::from_bytes(d).is_ok()) >= 10);
}

#[test]
fn c17_fuzz_corpus_statement_decode() {
    replay("statement_decode", jcp::fuzzing::statement_decode);
}

#[test]
fn s2_fuzz_corpus_key_file_decode() {
    replay("key_file_decode", jcp::fuzzing::key_file_decode);
    assert!(accepted("key_file_decode", |d| jcp::identity::KeyFile::decode(d).is_ok()) >= 2);
}
