//! Fuzzes the JCR-1 decoders (COSE envelope, receipt core, outcome and
//! revocation cores): typed errors, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut dids = jcp_receipt::cose::DidCache::new();
    if let Ok(o) = jcp_receipt::receipt::OpenedReceipt::open(data, &mut dids) {
        let _ = o.verify(None);
    }
    let _ = jcp_receipt::record::open_outcome(data, &mut dids);
    let _ = jcp_receipt::record::open_revocation(data, &mut dids);
});
