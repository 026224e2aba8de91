//! Recorded counter traces (jcp-meter-trace/1) from outside bytes, replayed through the ladder.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jcp_meter::fuzzing::trace(data);
});
