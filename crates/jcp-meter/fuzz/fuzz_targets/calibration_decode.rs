//! Stored calibrations (jcp-meter-calibration/1) from outside bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jcp_meter::fuzzing::calibration(data);
});
