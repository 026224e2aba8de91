//! Fuzzes everything `jcp gateway` reads from outside (`jcp_gateway::fuzzing`):
//! the operator's bindings file, the client's and the upstream's lines
//! (bounded, routed, a `tools/call` bound by the MCP adapter), and the
//! sealed binding a relayed call is rebuilt from. Typed refusals only,
//! never a panic; an accepted call's hash re-derives and its rebuilt
//! request names the bound tool with the call's arguments. The corpus
//! replay test (`tests/fuzz_corpus.rs`) runs the same check in every
//! `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = jcp_gateway::fuzzing::gateway_decode(data) {
        panic!("{e}");
    }
});
