//! jcp-meter-causes/1 files from outside bytes (strict decoding, read-back).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jcp_meter::fuzzing::causes(data);
});
