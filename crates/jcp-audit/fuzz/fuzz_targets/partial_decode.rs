#![no_main]
use libfuzzer_sys::fuzz_target;

// A partial audit file (`jcp audit merge` reads it): strict decoding never
// panics, and what decodes round-trips and merges.
fuzz_target!(|data: &[u8]| {
    if let Err(e) = jcp_audit::fuzzing::partial_decode(data) {
        panic!("{e}");
    }
});
