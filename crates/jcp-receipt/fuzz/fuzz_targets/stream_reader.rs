//! Fuzzes the stream reader: any bytes after the header must yield records
//! and faults that together account for every byte, never a panic; reading
//! in batches (the audit's way) must yield exactly what the iterator yields.
#![no_main]
use jcp_receipt::stream::{Batch, Item, Reader, FRAME_OVERHEAD, HEADER};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut bytes = HEADER.to_vec();
    bytes.extend_from_slice(data);
    let Ok(reader) = Reader::new(bytes.as_slice()) else {
        return;
    };
    let mut covered = 0u64;
    let mut items = Vec::new();
    for item in reader {
        match &item {
            Item::Record(r) => {
                covered += (r.payload.len() + FRAME_OVERHEAD) as u64;
                let mut dids = jcp_receipt::cose::DidCache::new();
                let _ = jcp_receipt::receipt::OpenedReceipt::open(&r.payload, &mut dids);
            }
            Item::Fault(f) => covered += f.len,
        }
        items.push(item);
    }
    assert_eq!(covered, data.len() as u64, "every byte is a record or a named fault");
    let max = 1 + data.first().map_or(0, |b| usize::from(b % 4));
    let Ok(mut reader) = Reader::new(bytes.as_slice()) else {
        panic!("the header read once");
    };
    let mut batch = Batch::new();
    let mut batched = Vec::new();
    while reader.read_batch(max, &mut batch) > 0 {
        batched.extend(batch.items().iter().map(|it| batch.to_item(it)));
    }
    assert_eq!(batched, items, "batch reading equals the iterator");
});
