//! Fuzzes the stream reader: any bytes after the header must yield records
//! and faults that together account for every byte, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut bytes = jcp_receipt::stream::HEADER.to_vec();
    bytes.extend_from_slice(data);
    let reader = match jcp_receipt::stream::Reader::new(bytes.as_slice()) {
        Ok(r) => r,
        Err(_) => return,
    };
    let mut covered = 0u64;
    for item in reader {
        match item {
            jcp_receipt::stream::Item::Record(r) => {
                covered += (r.payload.len() + jcp_receipt::stream::FRAME_OVERHEAD) as u64;
                let mut dids = jcp_receipt::cose::DidCache::new();
                let _ = jcp_receipt::receipt::OpenedReceipt::open(&r.payload, &mut dids);
            }
            jcp_receipt::stream::Item::Fault(f) => covered += f.len,
        }
    }
    assert_eq!(covered, data.len() as u64, "every byte is a record or a named fault");
});
