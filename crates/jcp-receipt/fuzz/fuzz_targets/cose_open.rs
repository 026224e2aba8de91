//! Fuzzes the JCR-1 decoders (COSE envelope, receipt core, outcome and
//! revocation cores, settlement notes): typed errors, never a panic; and differentially, the
//! zero-copy reader of the audit's hot path against the `coset` reference
//! path (and its checked view): it may decline (and fall back), but never
//! accepts what the reference refuses, and what both accept is the same record.
#![no_main]
use jcp_receipt::receipt::OpenedReceipt;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut dids = jcp_receipt::cose::DidCache::new();
    let reference = OpenedReceipt::open_coset(data, &mut dids);
    match OpenedReceipt::open(data, &mut dids) {
        Ok(o) => {
            let r = reference.as_ref().expect("accepted by the hot path but refused by coset");
            assert_eq!(o.core, r.core);
            assert_eq!((&o.sealed.tbs, o.sealed.id, o.sealed.position), (&r.sealed.tbs, r.sealed.id, r.sealed.position));
            let _ = o.verify(None);
        }
        Err(e) => assert_eq!(Some(e.code()), reference.as_ref().err().map(|e| e.code())),
    }
    // The audit's checked view: never of what coset refuses; materialized,
    // the same core.
    if let Some((v, _)) = OpenedReceipt::open_view(data, &mut dids) {
        let r = reference.as_ref().expect("a view of a record coset refuses");
        assert_eq!(jcp_receipt::receipt::ReceiptCore::from_view(&v, &mut dids).as_ref(), Ok(&r.core));
    }
    let unsealed = OpenedReceipt::open_unsealed(data, &mut dids);
    assert_eq!(unsealed.is_ok(), reference.is_ok());
    let hot = jcp_receipt::open::open_outcome_unsealed(data, &mut dids);
    let reference = jcp_receipt::record::open_outcome_coset(data, &mut dids);
    assert_eq!(hot.is_ok(), reference.is_ok());
    if let (Ok((a, _)), Ok((b, _))) = (hot, reference) {
        assert_eq!(a, b);
    }
    let _ = jcp_receipt::record::open_revocation(data, &mut dids);
    // A settlement note (§4.11): refused with a typed error, or its canonical bytes.
    if let Ok(n) = jcp_receipt::settle::SignedSettlementNote::from_bytes(data) {
        assert_eq!(n.to_bytes(), data);
    }
});
