//! Replays every committed fuzz corpus file through its decoder (CI has no nightly fuzzing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("corpus")
        .join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    assert!(out.len() >= 5, "{target}: the corpus is nearly empty");
    out
}

#[test]
fn s5_2_fuzz_corpus_efficiency_decode_replays() {
    let files = corpus("efficiency_decode");
    let mut accepted = 0;
    for (p, b) in &files {
        jcp_meter::fuzzing::efficiency(b);
        accepted += usize::from(
            jcp_meter::efficiency::read_payload(b).is_ok()
                || jcp_meter::efficiency::verify(b).is_ok(),
        );
        let _ = p;
    }
    assert!(
        accepted >= 6 && accepted < files.len(),
        "the corpus holds accepted and refused inputs ({accepted}/{})",
        files.len()
    );
}

#[test]
fn s5_1_fuzz_corpus_trace_decode_replays() {
    let files = corpus("trace_decode");
    let mut accepted = 0;
    for (_, b) in &files {
        jcp_meter::fuzzing::trace(b);
        accepted += usize::from(jcp_meter::trace::Trace::from_bytes(b).is_ok());
    }
    assert!(
        accepted >= 5 && accepted < files.len(),
        "{accepted}/{}",
        files.len()
    );
}

#[test]
fn s5_1_fuzz_corpus_calibration_decode_replays() {
    let files = corpus("calibration_decode");
    let mut accepted = 0;
    for (_, b) in &files {
        jcp_meter::fuzzing::calibration(b);
        accepted += usize::from(
            std::str::from_utf8(b)
                .ok()
                .is_some_and(|t| jcp_meter::estimate::Calibration::from_json(t).is_ok()),
        );
    }
    assert_eq!(accepted, 1, "only good.json is a valid calibration");
}

#[test]
fn s5_1_trace_decoder_names_what_is_wrong() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/trace_decode");
    for (file, code) in [
        ("bad-format.json", "trace-unsupported-format"),
        ("bad-time.json", "trace-time-not-monotonic"),
        ("bad-width.json", "trace-counter-count"),
        ("bad-range.json", "trace-value-out-of-range"),
        ("bad-rung.json", "trace-malformed"),
        ("extra-field.json", "trace-malformed"),
        ("not-json.json", "trace-malformed"),
        ("not-utf8", "trace-malformed"),
    ] {
        let b = std::fs::read(dir.join(file)).unwrap();
        assert_eq!(
            jcp_meter::trace::Trace::from_bytes(&b).unwrap_err().code(),
            code,
            "{file}"
        );
    }
}
