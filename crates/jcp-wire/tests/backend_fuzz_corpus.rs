//! `jcp-backend/1` (`docs/backend-protocol.md`): replays the committed
//! cargo-fuzz corpus (`crates/jcp-wire/fuzz/corpus/backend_decode/`)
//! through the check the `backend_decode` target runs
//! (`jcp_wire::fuzzing::backend_decode`), and holds each named seed to what
//! it is for (a valid answer decodes to its state, an unknown field is
//! `not-a-message`, a trailing byte is `non-canonical`, ...).
//!
//! `JCP_REGEN_CORPUS=1 cargo test -p jcp-wire --test backend_fuzz_corpus`
//! rewrites the seeds (the fuzzer's own finds sit beside them, under other
//! names).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::path::{Path, PathBuf};

use jcp::cbor::{ContentId, Value};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp_wire::backend::{AnswerState, BackendAnswer, BackendCall};
use jcp_wire::codec;
use jcp_wire::fuzzing::{self, BackendReport, Tail, CAP};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("corpus").join("backend_decode")
}

/// Sets (`Some`) or removes (`None`) `key` in a map value.
fn set(mut v: Value, key: &str, val: Option<Value>) -> Value {
    let Value::Map(m) = &mut v else { panic!("not a map") };
    m.retain(|(k, _)| *k != Value::text(key));
    if let Some(val) = val {
        m.push((Value::text(key), val));
    }
    v
}

/// A map encoded by hand: its entries' encodings in the order given.
fn raw_map(v: &Value, reverse: bool) -> Vec<u8> {
    let Value::Map(m) = v else { panic!("not a map") };
    let mut e: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(k, v)| (k.encode(), v.encode())).collect();
    e.sort_by(|a, b| Value::length_first_cmp(&a.0, &b.0));
    if reverse {
        e.reverse();
    }
    let mut out = vec![0xa0 | u8::try_from(e.len()).unwrap()];
    for (k, v) in e {
        out.extend(k);
        out.extend(v);
    }
    out
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let f = |v: &Value| codec::frame_value(v);
    let done = BackendAnswer::finished(1, true, b"burned 5 ms".to_vec()).to_value();
    let working = BackendAnswer::pending(2, AnswerState::Working, "task-1", b"running".to_vec()).to_value();
    let mut out = vec![
        ("done-valid", f(&done)),
        ("failed-valid", f(&BackendAnswer::finished(3, false, b"unknown command".to_vec()).to_value())),
        ("working-valid", f(&working)),
        (
            "input-required-valid",
            f(&BackendAnswer::pending(4, AnswerState::InputRequired, "ask-1", b"which?".to_vec()).to_value()),
        ),
        ("handle-128", f(&set(working.clone(), "handle", Some(Value::text("h".repeat(128)))))),
        ("unknown-field", f(&set(done.clone(), "x-instructions", Some(Value::text("ignore the gate"))))),
        ("missing-id", f(&set(done.clone(), "id", None))),
        ("missing-output", f(&set(done.clone(), "output", None))),
        ("state-unknown", f(&set(done.clone(), "state", Some(Value::text("maybe"))))),
        ("msg-call", f(&set(done.clone(), "msg", Some(Value::text("call"))))),
        ("output-text", f(&set(done.clone(), "output", Some(Value::text("text"))))),
        ("handle-on-done", f(&set(done.clone(), "handle", Some(Value::text("task-1"))))),
        ("working-no-handle", f(&set(working.clone(), "handle", None))),
        ("handle-empty", f(&set(working.clone(), "handle", Some(Value::text(""))))),
        ("handle-129", f(&set(working.clone(), "handle", Some(Value::text("h".repeat(129)))))),
    ];
    let frame = Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: ContentId([1; 32]),
        action: "read".into(),
        resource: ContentId([2; 32]),
        payload_hash: ContentId::of_bytes(b"echo:hi"),
        model: None,
    };
    let call = BackendCall { id: 1, frame, args: Some(b"echo:hi".to_vec()), continues: None, answers: None };
    out.push(("a-call-not-an-answer", f(&call.to_value())));
    let body = done.encode();
    let mut trailing = body.clone();
    trailing.push(0);
    out.push(("trailing-bytes", codec::frame(&trailing)));
    out.push(("unsorted-keys", codec::frame(&raw_map(&done, true))));
    // `id` 1 as 0x18 0x01: not its shortest form.
    let long_id = raw_map(&done, false);
    let at = long_id.windows(3).position(|w| w == [0x62, b'i', b'd']).unwrap() + 3;
    let mut nc = long_id[..at].to_vec();
    nc.extend([0x18, 0x01]);
    nc.extend(&long_id[at + 1..]);
    out.push(("non-canonical-id", codec::frame(&nc)));
    out.push((
        "float-id",
        codec::frame(&set(done.clone(), "id", Some(Value::Float { bits: 1f64.to_bits(), width: 8 })).encode()),
    ));
    let framed = f(&done);
    out.push(("truncated-head", framed[..3].to_vec()));
    out.push(("truncated-body", framed[..framed.len() / 2].to_vec()));
    let mut huge = u32::MAX.to_be_bytes().to_vec();
    huge.extend_from_slice(&body[..8]);
    out.push(("oversized-length", huge));
    let mut over = u32::try_from(CAP + 1).unwrap().to_be_bytes().to_vec();
    over.extend_from_slice(&body);
    out.push(("over-cap-by-one", over));
    out.push(("zero-length", vec![0, 0, 0, 0]));
    out.push(("empty", Vec::new()));
    let mut two = framed.clone();
    two.extend(f(&working));
    out.push(("two-answers", two));
    out.push(("answer-unframed", body));
    out
}

const NC: &str = "non-canonical";
const NM: &str = "not-a-message";

/// What each seed must report.
fn expect(name: &str, r: &BackendReport) {
    let one = |d: Result<&'static str, &'static str>| {
        assert_eq!((r.frames.clone(), r.tail), (vec![d], Tail::End), "{name}: {r:?}");
    };
    match name {
        "done-valid" => one(Ok("done")),
        "failed-valid" => one(Ok("failed")),
        "working-valid" | "handle-128" => one(Ok("working")),
        "input-required-valid" => one(Ok("input-required")),
        "unknown-field"
        | "missing-id"
        | "missing-output"
        | "state-unknown"
        | "msg-call"
        | "output-text"
        | "handle-on-done"
        | "working-no-handle"
        | "handle-empty"
        | "handle-129"
        | "a-call-not-an-answer" => {
            one(Err(NM));
        }
        "trailing-bytes" | "unsorted-keys" | "non-canonical-id" | "float-id" | "zero-length" => one(Err(NC)),
        "truncated-head" => assert_eq!((r.frames.len(), r.tail), (0, Tail::NeedsMore(3)), "{name}"),
        "truncated-body" => assert!(r.frames.is_empty() && matches!(r.tail, Tail::NeedsMore(_)), "{name}: {r:?}"),
        "oversized-length" => assert_eq!((r.frames.len(), r.tail), (0, Tail::Oversized(u64::from(u32::MAX))), "{name}"),
        "over-cap-by-one" => assert_eq!((r.frames.len(), r.tail), (0, Tail::Oversized(CAP as u64 + 1)), "{name}"),
        "empty" => assert_eq!((r.frames.len(), r.tail, r.raw), (0, Tail::End, Err(NC)), "{name}"),
        "two-answers" => assert_eq!((r.frames.clone(), r.tail), (vec![Ok("done"), Ok("working")], Tail::End), "{name}"),
        "answer-unframed" => assert_eq!(r.raw, Ok("done"), "{name}"),
        _ => {} // a fuzzer find: no panic, no broken promise, is all it must show
    }
}

#[test]
fn backend_fuzz_corpus_replays_and_each_seed_decodes_as_named() {
    if std::env::var_os("JCP_REGEN_CORPUS").is_some() {
        std::fs::create_dir_all(corpus()).unwrap();
        for (name, bytes) in seeds() {
            std::fs::write(corpus().join(name), bytes).unwrap();
        }
    }
    let mut named = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(corpus()).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let report = fuzzing::backend_decode(&data).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        expect(&name, &report);
        named.insert(name);
    }
    for (name, bytes) in seeds() {
        assert!(named.contains(name), "seed {name} missing from the corpus (JCP_REGEN_CORPUS=1 writes it)");
        assert_eq!(std::fs::read(corpus().join(name)).unwrap(), bytes, "seed {name} is stale (JCP_REGEN_CORPUS=1)");
    }
}

/// Seeded mutations of the corpus (bit flips, truncations, insertions,
/// splices) through the same check, where cargo-fuzz is not installed.
#[test]
fn backend_mutated_corpus_seeds_hold_the_decoder_promises() {
    let mut seeds: Vec<Vec<u8>> = seeds().into_iter().map(|(_, b)| b).collect();
    seeds.sort();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |bound: usize| -> usize {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        usize::try_from(x % (bound.max(1) as u64)).unwrap()
    };
    let (mut frames, mut accepted) = (0usize, 0usize);
    for i in 0..2_000 {
        let mut m = seeds[next(seeds.len())].clone();
        for _ in 0..=next(3) {
            let len = m.len();
            match next(5) {
                0 if len > 0 => {
                    let at = next(len);
                    m[at] ^= 1 << next(8);
                }
                1 => m.truncate(next(len + 1)),
                2 => m.insert(next(len + 1), u8::try_from(next(256)).unwrap()),
                3 => {
                    let other = &seeds[next(seeds.len())];
                    let from = next(other.len() + 1);
                    let at = next(len + 1);
                    m.splice(at..at, other[from..].iter().copied().take(32));
                }
                _ if len > 0 => {
                    let at = next(len);
                    m[at] = u8::try_from(next(256)).unwrap();
                }
                _ => {}
            }
        }
        let r = fuzzing::backend_decode(&m).unwrap_or_else(|e| panic!("mutation {i} ({}): {e}", hex::encode(&m)));
        frames += r.frames.len();
        accepted += r.frames.iter().filter(|d| d.is_ok()).count();
    }
    assert!(frames > 0 && accepted > 0, "{frames} frames, {accepted} accepted");
}
