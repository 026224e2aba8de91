//! Fuzzes the §11 framing and the message decoders: bytes are framed with a
//! small cap through both readers (`codec::split` and `codec::read_frame`,
//! which must agree), and every whole body, and the input itself, is read
//! as every message a client or an endpoint may send. Typed refusals only,
//! never a panic; whatever is accepted re-encodes to exactly its bytes.
//! The checks live in `jcp_wire::fuzzing` so the corpus replay test
//! (`tests/fuzz_corpus.rs`) runs them in every `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = jcp_wire::fuzzing::wire_decode(data) {
        panic!("{e}");
    }
});
