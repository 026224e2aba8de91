#![no_main]
use libfuzzer_sys::fuzz_target;

// Any bytes as a receipt stream: every finding's offset opens its record,
// the log walks record by record, each record opens by its id
// (`jcp_audit::record::show`, what the console links a finding to).
fuzz_target!(|data: &[u8]| {
    if let Err(e) = jcp_audit::fuzzing::record_show(data) {
        panic!("{e}");
    }
});
