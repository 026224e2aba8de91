#![no_main]
use libfuzzer_sys::fuzz_target;

// Any bytes as an issuer's revocation log (§4.3): never a panic; what is
// accepted is signed, ordered, and reads back the same when written again.
fuzz_target!(|data: &[u8]| {
    if let Err(e) = jcp::fuzzing::revocation_log(data) {
        panic!("{e}");
    }
});
