//! Agent-Safe Intent §8 / JCP §11: replays the committed cargo-fuzz corpus
//! (`crates/gateway/fuzz/corpus/gateway_decode/`) through the check the
//! `gateway_decode` target runs (`jcp_gateway::fuzzing::gateway_decode`), so
//! every `cargo test` exercises it without nightly, and holds the named
//! seeds to what they are for.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::path::{Path, PathBuf};

use jcp_gateway::fuzzing::gateway_decode;
use jcp_gateway::upstream::{read_line_bounded, request_of_binding};
use jcp_gateway::{Bindings, GatewayError};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/gateway_decode")
}

fn seed(name: &str) -> Vec<u8> {
    std::fs::read(corpus().join(name)).unwrap()
}

#[test]
fn asi_s8_s11_every_corpus_input_is_refused_typed_or_keeps_its_promise() {
    let mut n = 0;
    for e in std::fs::read_dir(corpus()).unwrap() {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        if let Err(why) = gateway_decode(&bytes) {
            panic!("{}: {why}", p.display());
        }
        n += 1;
    }
    assert!(n >= 11, "the corpus is missing seeds ({n})");
}

#[test]
fn asi_s8_the_named_seeds_are_what_they_are_for() {
    assert_eq!(Bindings::from_json(&seed("bindings_valid.json")).unwrap().len(), 1);
    for (name, at) in
        [("bindings_argument_twice.json", "$.tools[0].arguments"), ("bindings_unknown_field.json", "$.tools[0]")]
    {
        match Bindings::from_json(&seed(name)) {
            Err(GatewayError::BindingsInvalid { at: got, .. }) => assert!(got.starts_with(at), "{name}: {got}"),
            other => panic!("{name}: {other:?}"),
        }
    }
    let rebuilt = request_of_binding(&seed("sealed_binding.json")).unwrap();
    assert_eq!(rebuilt["params"]["name"], "echo");
    // The upstream's lines: four, the empty one included.
    let bytes = seed("upstream_lines.jsonl");
    let mut r = std::io::BufReader::new(&bytes[..]);
    let mut buf = Vec::new();
    let mut lines = 0;
    while read_line_bounded(&mut r, &mut buf).unwrap() {
        lines += 1;
    }
    assert_eq!(lines, 4);
    // The upstream's answers to calls: each garbage one named, the error answer kept.
    let garbage = seed("upstream_garbage_answers.jsonl");
    let named: Vec<Option<String>> = garbage
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| jcp_gateway::upstream::malformed_call_answer(&serde_json::from_slice(l).unwrap()))
        .collect();
    assert_eq!(named.iter().filter(|w| w.is_some()).count(), 5, "{named:?}");
    assert_eq!(named.last(), Some(&None));
    // Binding outcomes of the client seeds, through the adapter the gateway uses.
    let v = jcp_gateway::session::tools_call_value(seed("call_with_progress_token.jsonl").trim_ascii()).unwrap();
    let intent::Value::Object(o) = &v else { panic!("{v:?}") };
    let Some(intent::Value::Object(p)) = o.get("params") else { panic!() };
    assert!(p.get("_meta").is_none(), "the progress token is the session's, not bound");
}
