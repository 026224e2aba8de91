//! Replays every committed fuzz corpus file through its decoder (CI has no nightly fuzzing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("corpus").join(target);
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
        accepted +=
            usize::from(jcp_meter::efficiency::read_payload(b).is_ok() || jcp_meter::efficiency::verify(b).is_ok());
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
    assert!(accepted >= 5 && accepted < files.len(), "{accepted}/{}", files.len());
}

#[test]
fn s5_1_fuzz_corpus_calibration_decode_replays() {
    let files = corpus("calibration_decode");
    let mut accepted = 0;
    for (_, b) in &files {
        jcp_meter::fuzzing::calibration(b);
        accepted += usize::from(
            std::str::from_utf8(b).ok().is_some_and(|t| jcp_meter::estimate::Calibration::from_json(t).is_ok()),
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
        assert_eq!(jcp_meter::trace::Trace::from_bytes(&b).unwrap_err().code(), code, "{file}");
    }
}

/// Replays `target`'s corpus through `fuzz` and checks each named file's
/// outcome: `Ok` for accepted, else the error code.
fn replay_named(
    target: &str,
    fuzz: fn(&[u8]),
    decode: fn(&[u8]) -> Result<(), jcp_meter::Error>,
    expected: &[(&str, &str)],
) {
    let files = corpus(target);
    assert!(files.len() >= 10, "{target}: a corpus of at least 10 files");
    let (mut accepted, mut refused) = (0, 0);
    for (p, b) in &files {
        fuzz(b);
        let name = p.file_name().unwrap().to_str().unwrap();
        let got = match decode(b) {
            Ok(()) => {
                accepted += 1;
                "ok".to_owned()
            }
            Err(e) => {
                refused += 1;
                e.code().to_owned()
            }
        };
        let want = expected
            .iter()
            .find(|(f, _)| *f == name)
            .map_or_else(|| panic!("{target}/{name}: no expected outcome listed"), |(_, c)| *c);
        assert_eq!(got, want, "{target}/{name}");
    }
    assert!(accepted >= 3 && refused >= 7, "{target}: {accepted} accepted, {refused} refused");
}

#[test]
fn s5_4_fuzz_corpus_session_decode_replays_with_typed_errors() {
    replay_named(
        "session_decode",
        jcp_meter::fuzzing::session,
        |b| jcp_meter::session::Session::from_bytes("corpus", b).map(|_| ()),
        &[
            ("good-rapl.json", "ok"),
            ("good-gap.json", "ok"),
            ("good-nvml-partial.json", "ok"),
            ("good-estimate.json", "ok"),
            ("good-replay.json", "ok"),
            ("bad-format.json", "unsupported-format"),
            ("bad-overclaim.json", "window-grade-overclaimed"),
            ("bad-nvml-whole.json", "window-grade-overclaimed"),
            ("bad-overlap.json", "windows-overlap"),
            ("bad-type.json", "session-malformed"),
            ("bad-unknown-field.json", "session-malformed"),
            ("bad-no-window.json", "session-malformed"),
            ("bad-gap-with-grade.json", "session-malformed"),
            ("bad-zero-span.json", "session-malformed"),
            ("bad-declined-below.json", "session-malformed"),
            ("bad-seq-order.json", "session-malformed"),
            ("bad-replay-id.json", "session-malformed"),
            ("truncated.json", "session-malformed"),
            ("not-json.json", "session-malformed"),
            ("not-utf8", "session-malformed"),
            ("duplicate-key.json", "session-malformed"),
            ("trailing.json", "session-malformed"),
        ],
    );
}

#[test]
fn s5_4_fuzz_corpus_baseline_decode_replays_with_typed_errors() {
    replay_named(
        "baseline_decode",
        jcp_meter::fuzzing::baseline,
        |b| jcp_meter::declared::baseline_from_bytes("corpus", b).map(|_| ()),
        &[
            ("good-scoped.json", "ok"),
            ("good-undeclared.json", "ok"),
            ("good-point-band.json", "ok"),
            ("bad-inverted.json", "baseline-malformed"),
            ("bad-zero-window.json", "baseline-malformed"),
            ("bad-empty-occupancy.json", "baseline-malformed"),
            ("bad-unknown-field.json", "baseline-malformed"),
            ("bad-host-extra.json", "baseline-malformed"),
            ("bad-format.json", "unsupported-format"),
            ("bad-type.json", "baseline-malformed"),
            ("truncated.json", "baseline-malformed"),
            ("not-object.json", "baseline-malformed"),
            ("no-format.json", "baseline-malformed"),
        ],
    );
}

#[test]
fn s5_4_fuzz_corpus_causes_decode_replays_with_typed_errors() {
    replay_named(
        "causes_decode",
        jcp_meter::fuzzing::causes,
        |b| jcp_meter::declared::Causes::from_bytes("corpus", b).map(|_| ()),
        &[
            ("good-one.json", "ok"),
            ("good-none.json", "ok"),
            ("good-every-kind.json", "ok"),
            ("refused-no-evidence.json", "cause-without-evidence"),
            ("refused-null-evidence.json", "cause-without-evidence"),
            ("bad-evidence-hex.json", "causes-malformed"),
            ("bad-evidence-upper.json", "causes-malformed"),
            ("bad-dup-seq.json", "causes-malformed"),
            ("bad-kind.json", "causes-malformed"),
            ("bad-unknown-field.json", "causes-malformed"),
            ("truncated.json", "causes-malformed"),
            ("bad-format.json", "unsupported-format"),
            ("not-utf8", "causes-malformed"),
        ],
    );
}

#[test]
fn s5_6_fuzz_corpus_envelope_decode_replays_with_typed_errors() {
    replay_named(
        "envelope_decode",
        jcp_meter::fuzzing::envelope,
        |b| jcp_meter::declared::EnvelopeFile::from_bytes("corpus", b).map(|_| ()),
        &[
            ("good.json", "ok"),
            ("good-two-rungs.json", "ok"),
            ("good-with-source.json", "ok"),
            ("good-zero-idle.json", "ok"),
            ("bad-inverted.json", "envelope-malformed"),
            ("bad-zero-burst.json", "envelope-malformed"),
            ("bad-no-rungs.json", "envelope-malformed"),
            ("bad-dup-rung.json", "envelope-malformed"),
            ("bad-unknown-rung.json", "envelope-malformed"),
            ("bad-empty-part.json", "envelope-malformed"),
            ("bad-unknown-field.json", "envelope-malformed"),
            ("bad-format.json", "unsupported-format"),
            ("truncated.json", "envelope-malformed"),
            ("bad-negative.json", "envelope-malformed"),
        ],
    );
}

#[test]
fn s5_1_fuzz_corpus_proc_stat_decode_replays_with_typed_errors() {
    replay_named(
        "proc_stat_decode",
        jcp_meter::fuzzing::proc_stat,
        |b| jcp_meter::span::procfs::parse_stat(b).map(|_| ()),
        &[
            ("good-self.txt", "ok"),
            ("good-comm-parens.txt", "ok"),
            ("good-zombie.txt", "ok"),
            ("good-kernel-thread.txt", "ok"),
            ("good-space-comm.txt", "ok"),
            ("bad-empty.txt", "proc-stat-malformed"),
            ("bad-no-close.txt", "proc-stat-malformed"),
            ("bad-negative-cutime.txt", "proc-stat-malformed"),
            ("bad-short.txt", "proc-stat-malformed"),
            ("bad-state.txt", "proc-stat-malformed"),
            ("bad-pid.txt", "proc-stat-malformed"),
            ("bad-not-utf8.txt", "proc-stat-malformed"),
            ("bad-overflow.txt", "proc-stat-malformed"),
            ("bad-paren-order.txt", "proc-stat-malformed"),
        ],
    );
}
