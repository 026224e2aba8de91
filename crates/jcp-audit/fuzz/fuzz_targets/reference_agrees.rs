#![no_main]
use libfuzzer_sys::fuzz_target;

// Any bytes as a receipt stream: the fast audit and the reference audit
// (`jcp_audit::reference`) give the same report JSON, or the same error.
fuzz_target!(|data: &[u8]| {
    if let Err(e) = jcp_audit::fuzzing::reference_agrees(data) {
        panic!("{e}");
    }
});
