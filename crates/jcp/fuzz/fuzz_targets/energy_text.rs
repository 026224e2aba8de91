#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = jcp::fuzzing::energy_text(data) {
        panic!("{e}");
    }
});
