//! `/proc/<pid>/stat` lines and `children` lists from outside bytes (§5.1 span metering).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jcp_meter::fuzzing::proc_stat(data);
});
