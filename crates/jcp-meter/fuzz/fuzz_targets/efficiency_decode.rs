//! efficiency/1 receipts from outside bytes: `read_payload` (a core) and `verify` (a sealed receipt).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jcp_meter::fuzzing::efficiency(data);
});
