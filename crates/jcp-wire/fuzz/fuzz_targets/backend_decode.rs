//! Fuzzes what an endpoint reads from its backend process (`jcp-backend/1`,
//! `docs/backend-protocol.md`): bytes are framed with a small cap through
//! `codec::split` and the blocking reader the backend's stdout is read with
//! (`backend::read_frame_sync`, which must agree), and every whole body,
//! and the input itself, is read as a `BackendAnswer`. Typed refusals
//! only, never a panic; whatever is accepted re-encodes to exactly its
//! bytes and carries a handle exactly when its state needs one. The checks
//! live in `jcp_wire::fuzzing` so the corpus replay test
//! (`tests/fuzz_corpus.rs`) runs them in every `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = jcp_wire::fuzzing::backend_decode(data) {
        panic!("{e}");
    }
});
