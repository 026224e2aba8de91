//! Replays the committed fuzz corpora (crates/jcp-receipt/fuzz/corpus/) through
//! the same decoders and invariants the fuzz targets check, so CI (no nightly
//! fuzzing) still runs them. `JCP_REGEN_CORPUS=1` rewrites the seed files
//! from a tiny demo stream (the fuzzer's own finds are added beside them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::similar_names,
    clippy::many_single_char_names,
    clippy::items_after_statements
)]

use std::path::{Path, PathBuf};

use jcp_receipt::cose::DidCache;
use jcp_receipt::demo::{self, DemoOptions};
use jcp_receipt::receipt::OpenedReceipt;
use jcp_receipt::stream::{Item, Reader, FRAME_OVERHEAD, HEADER};
use jcp_receipt::writer::Durability;
use jcp_receipt::Error;

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("corpus").join(target)
}

/// The `stream_reader` invariant: every byte after the header is covered by
/// exactly one record or one named fault.
fn check_stream(data: &[u8]) -> (usize, usize) {
    let mut bytes = HEADER.to_vec();
    bytes.extend_from_slice(data);
    let reader = Reader::new(bytes.as_slice()).unwrap();
    let (mut covered, mut recs, mut faults) = (0u64, 0, 0);
    for item in reader {
        match item {
            Item::Record(r) => {
                covered += (r.payload.len() + FRAME_OVERHEAD) as u64;
                recs += 1;
                let _ = OpenedReceipt::open(&r.payload, &mut DidCache::new());
            }
            Item::Fault(f) => {
                covered += f.len;
                faults += 1;
            }
        }
    }
    assert_eq!(covered, data.len() as u64);
    (recs, faults)
}

fn regen() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("seed.jcps");
    demo::write_demo(
        &p,
        &DemoOptions { receipts: 6, tamper: 1, unresolved: 1, seed: 3, durability: Durability::GeneratorOnly },
    )
    .unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let body = bytes[HEADER.len()..].to_vec();
    let s = corpus("stream_reader");
    std::fs::create_dir_all(&s).unwrap();
    let w = |name: &str, b: &[u8]| std::fs::write(s.join(name), b).unwrap();
    // Keep seeds small: the first few records.
    let items: Vec<Item> = Reader::new(bytes.as_slice()).unwrap().collect();
    let mut small = Vec::new();
    let mut payloads = Vec::new();
    for it in &items {
        if let Item::Record(r) = it {
            if small.len() < 6000 {
                small.extend(jcp_receipt::stream::frame(r.kind, &r.payload).unwrap());
            }
            payloads.push((r.kind, r.payload.clone()));
        }
    }
    w("valid-records", &small);
    w("truncated", &small[..small.len() - 37]);
    let mut flip = small.clone();
    flip[200] ^= 0x10;
    w("bit-flip", &flip);
    let mut len_flip = small.clone();
    len_flip[7] ^= 0x01;
    w("length-flip", &len_flip);
    let mut garbage = b"garbage!".to_vec();
    garbage.extend_from_slice(&small);
    w("leading-garbage", &garbage);
    let mut over = b"JRec\x01\xff\xff\xff\xff".to_vec();
    over.extend_from_slice(&small[..400]);
    w("oversized", &over);
    w("magic-only", b"JRec");
    w("empty", b"");
    let _ = body;
    let c = corpus("cose_open");
    std::fs::create_dir_all(&c).unwrap();
    let signed = payloads.iter().filter(|(k, _)| *k != jcp_receipt::stream::RecordKind::Grant);
    for (i, (kind, pl)) in signed.enumerate().take(8) {
        std::fs::write(c.join(format!("record-{i:02}-{kind:?}")), pl).unwrap();
    }
    let (_, first) = payloads.iter().find(|(k, _)| *k == jcp_receipt::stream::RecordKind::Receipt).unwrap();
    std::fs::write(c.join("valid-receipt"), first).unwrap();
    std::fs::write(c.join("truncated-receipt"), &first[..first.len() / 2]).unwrap();
    let mut untagged = first.clone();
    untagged.remove(0);
    std::fs::write(c.join("untagged"), untagged).unwrap();
    let mut longform = vec![0xd2, 0x98, 0x04];
    longform.extend_from_slice(&first[2..]);
    std::fs::write(c.join("long-form-array"), longform).unwrap();
    std::fs::write(c.join("empty"), b"").unwrap();
    // Settlement notes (§4.11), decoded by the same target.
    let k = jcp::identity::Keypair::from_seed([5; 32]).unwrap();
    let note = jcp_receipt::settle::SettlementNote {
        receipt: jcp::cbor::ContentId::of(&jcp::cbor::Value::text("seed")),
        holder: jcp::identity::Keypair::from_seed([6; 32]).unwrap().did(),
        status: jcp_receipt::record::OutcomeStatus::Completed,
        text: "settled by the operator".into(),
        settled_by: k.did(),
        at: 1,
    }
    .sign(&k)
    .unwrap()
    .to_bytes();
    std::fs::write(c.join("settlement-note"), &note).unwrap();
    let mut forged = note.clone();
    let i = forged.windows(8).position(|w| w == b"operator").unwrap();
    forged[i] = b'O';
    std::fs::write(c.join("settlement-note-forged"), forged).unwrap();
}

#[test]
fn fuzz_stream_reader_corpus_replays_with_every_byte_accounted() {
    if std::env::var_os("JCP_REGEN_CORPUS").is_some() {
        regen();
    }
    let mut n = 0;
    let mut valid = None;
    for e in std::fs::read_dir(corpus("stream_reader")).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        let got = check_stream(&data);
        if p.file_name().unwrap() == "valid-records" {
            valid = Some(got);
        }
        n += 1;
    }
    assert!(n >= 8, "corpus present");
    let (recs, faults) = valid.unwrap();
    assert!(recs > 3 && faults == 0);
}

#[test]
fn fuzz_cose_open_corpus_replays_with_typed_errors_and_the_hot_path_matches_coset() {
    let mut n = 0;
    for e in std::fs::read_dir(corpus("cose_open")).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        let mut dids = DidCache::new();
        let r = OpenedReceipt::open(&data, &mut dids);
        // The hot path (zero-copy, unsealed) agrees with the coset reference.
        let reference = OpenedReceipt::open_coset(&data, &mut dids);
        assert_eq!(r.as_ref().err().map(Error::code), reference.as_ref().err().map(Error::code));
        assert_eq!(OpenedReceipt::open_unsealed(&data, &mut dids).is_ok(), reference.is_ok());
        let hot = jcp_receipt::open::open_outcome_unsealed(&data, &mut dids);
        assert_eq!(hot.is_ok(), jcp_receipt::record::open_outcome_coset(&data, &mut dids).is_ok());
        let _ = jcp_receipt::open::open_outcome(&data, &mut dids);
        let _ = jcp_receipt::record::open_revocation(&data, &mut dids);
        let note = jcp_receipt::settle::SignedSettlementNote::from_bytes(&data);
        if let Ok(n) = &note {
            assert_eq!(n.to_bytes(), data, "an accepted note is its canonical bytes");
        }
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        match name.as_str() {
            "settlement-note" => assert!(note.is_ok(), "{note:?}"),
            "settlement-note-forged" => assert_eq!(note.unwrap_err().code(), "bad-signature"),
            "valid-receipt" => assert!(r.unwrap().verify(None).is_ok()),
            "untagged" | "long-form-array" | "truncated-receipt" | "empty" => {
                let e = r.unwrap_err();
                assert!(e.code().starts_with("cose-"), "{name}: {e}");
            }
            _ => {}
        }
        n += 1;
    }
    assert!(n >= 8, "corpus present");
}
