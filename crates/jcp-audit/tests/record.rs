//! The records a finding names (§8.2: every failure counted with its byte
//! offset; §8.1: the stream is the log): each finding's offset opens the
//! record or fault there, each id a finding names opens the record with
//! that id, and a reader can walk the log record by record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use jcp::cbor::ContentId;
use jcp_audit::record::{show, Locate, RecordCheck};
use jcp_audit::{audit_paths, AuditError, AuditOptions, FindingCode, Report};
use jcp_receipt::demo::{self, DemoOptions};
use jcp_receipt::writer::Durability;

fn demo_stream(dir: &Path, tamper: u64, unresolved: u64) -> (PathBuf, demo::DemoSummary) {
    let p = dir.join("s.jcps");
    let s = demo::write_demo(
        &p,
        &DemoOptions { receipts: 60, tamper, unresolved, seed: 11, durability: Durability::GeneratorOnly },
    )
    .unwrap();
    (p, s)
}

fn audit(p: &Path) -> Report {
    audit_paths(&[p], &AuditOptions::default(), |_| ControlFlow::Continue(())).unwrap()
}

/// Every 64-hex-digit word of a sentence.
fn ids_in(message: &str) -> Vec<ContentId> {
    message.split(|c: char| !c.is_ascii_hexdigit()).filter(|w| w.len() == 64).filter_map(ContentId::parse).collect()
}

#[test]
fn s8_2_each_finding_opens_the_record_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let (p, sum) = demo_stream(dir.path(), 2, 1);
    let report = audit(&p);
    assert!(!report.findings.is_empty());
    for f in &report.findings {
        let v = show(&p, Locate::At(f.offset)).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        assert_eq!(v.offset, f.offset);
        assert!(v.end > v.offset);
        if sum.tampered_offsets.contains(&f.offset) {
            // A tampered receipt is refused alone, with the audit's code.
            assert_eq!(f.code, FindingCode::BadSignature);
            assert_eq!(v.kind, "receipt");
            match &v.check {
                RecordCheck::Refused { code, .. } => assert_eq!(*code, FindingCode::BadSignature),
                other => panic!("a tampered receipt checked {other:?}"),
            }
            assert!(v.signer.is_some(), "the record names the key it was sealed under");
        }
    }
    // Every tampered receipt was a finding, and each opens.
    let at: BTreeSet<u64> = report.findings.iter().map(|f| f.offset).collect();
    for off in &sum.tampered_offsets {
        assert!(at.contains(off), "tampered record at {off} is not a finding");
    }
}

#[test]
fn s8_2_an_id_a_finding_names_opens_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), 2, 1);
    let report = audit(&p);
    // The unresolved decision names its receipt; the receipt is in the stream.
    let u = report.unresolved.first().expect("one unresolved decision");
    let v = show(&p, Locate::Id(u.receipt)).unwrap();
    assert_eq!(v.kind, "receipt");
    assert_eq!(v.id, Some(u.receipt));
    assert!(matches!(v.check, RecordCheck::Verified { .. }), "{:?}", v.check);
    // A grant a finding names opens the grant record (its grant id, not its bytes' hash).
    let grant = report.grants.first().expect("grants").grant_id;
    let g = show(&p, Locate::Id(grant)).unwrap();
    assert_eq!(g.kind, "grant");
    assert_eq!(g.id, Some(grant));
    assert!(g.signer.as_deref().is_some_and(|s| s.starts_with("did:key:")));
    // Each id in a finding's sentence that is a record of this stream opens;
    // one that is not (an orphan outcome's missing decision) is refused by name.
    let mut opened = 0;
    for f in &report.findings {
        for id in ids_in(&f.message) {
            match show(&p, Locate::Id(id)) {
                Ok(v) => {
                    assert_eq!(v.id, Some(id));
                    opened += 1;
                }
                Err(AuditError::NoRecordWithId { id: named, .. }) => assert_eq!(named, id.to_hex()),
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert!(opened > 0, "some finding names a record of the stream");
    let missing = ContentId([7; 32]);
    let e = show(&p, Locate::Id(missing)).unwrap_err();
    assert_eq!(e.code(), "no-record-with-id");
}

#[test]
fn s8_1_the_log_walks_record_by_record() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), 0, 0);
    let report = audit(&p);
    let mut at = Some(8u64);
    let mut seen = 0u64;
    let mut prev = None;
    while let Some(off) = at {
        let v = show(&p, Locate::At(off)).unwrap();
        seen += 1;
        assert_eq!(v.number, seen);
        assert_eq!(v.prev, prev);
        if let Some(n) = v.next {
            assert_eq!(n, v.end, "records follow one another with nothing between");
        }
        prev = Some(off);
        at = v.next;
    }
    assert_eq!(seen, report.streams[0].records);
    assert_eq!(prev.map(|_| ()), Some(()));
}

#[test]
fn s8_1_an_offset_inside_a_record_names_the_records_around_it() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), 0, 0);
    let first = show(&p, Locate::At(8)).unwrap();
    let e = show(&p, Locate::At(9)).unwrap_err();
    match &e {
        AuditError::NoRecordAt { offset, before, after, .. } => {
            assert_eq!((*offset, *before, *after), (9, Some(8), first.next));
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("records start at 8 and"), "{e}");
    let len = std::fs::metadata(&p).unwrap().len();
    let e = show(&p, Locate::At(len + 10)).unwrap_err();
    assert_eq!(e.code(), "no-record-at");
    let e = show(&dir.path().join("absent.jcps"), Locate::At(8)).unwrap_err();
    assert_eq!(e.code(), "io");
    let not = dir.path().join("not.jcps");
    std::fs::write(&not, b"hello, not a stream").unwrap();
    assert_eq!(show(&not, Locate::At(8)).unwrap_err().code(), "not-a-stream");
}

#[test]
fn s8_2_a_corrupt_record_opens_as_a_fault_with_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), 0, 0);
    let third = {
        let a = show(&p, Locate::At(8)).unwrap();
        let b = show(&p, Locate::At(a.next.unwrap())).unwrap();
        b.next.unwrap()
    };
    // Flip a payload byte of the third record: its checksum fails.
    let mut bytes = std::fs::read(&p).unwrap();
    let i = usize::try_from(third).unwrap() + 20;
    bytes[i] ^= 0xff;
    std::fs::write(&p, &bytes).unwrap();
    let report = audit(&p);
    let f = report.findings.iter().find(|f| f.offset == third).expect("the corrupt record is a finding");
    assert_eq!(f.code.as_str(), "record-corrupt");
    let v = show(&p, Locate::At(third)).unwrap();
    assert_eq!(v.kind, "fault");
    assert!(matches!(&v.check, RecordCheck::NotARecord { code } if code == "record-corrupt"));
    let hex = v.body["bytes_hex"].as_str().unwrap();
    assert!(hex.starts_with("4a526563"), "a fault shows its bytes from its start (the magic): {hex}");
    assert!(v.id.is_none());
    assert!(v.next.is_some(), "the log goes on after a fault");
}

#[test]
fn s8_2_fuzz_corpus_record_show() {
    // The `record_show` target's committed corpus (demo streams, fleet
    // points, streams cut, flipped, with garbage, empty or not a stream):
    // every finding opens, the log walks, every record opens by its id.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/record_show");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        if let Err(e) = jcp_audit::fuzzing::record_show(&data) {
            panic!("{}: {e}", p.display());
        }
        n += 1;
    }
    assert!(n >= 10, "only {n} corpus files");
}
