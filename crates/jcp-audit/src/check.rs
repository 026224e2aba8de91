//! The parallel half of the audit: decode every record of a chunk and check
//! its signature (batched), independent of order. Accounting (the serial
//! half, in stream order) is in `engine`.

use ed25519_dalek::{Signature, VerifyingKey};
use jcp::grant::SignedGrant;
use jcp::identity::Did;
use jcp_receipt::cose::{DidCache, Sealed};
use jcp_receipt::receipt::{OpenedReceipt, ReceiptCore};
use jcp_receipt::record::{self, Outcome, RevocationNotice};
use jcp_receipt::stream::{Fault, Item, RecordKind};
use rayon::prelude::*;

use crate::Verification;

/// One input item of a chunk, with its stream.
#[derive(Debug)]
pub(crate) struct Raw {
    pub stream: usize,
    pub item: Item,
}

/// A record after decoding and signature checking.
#[derive(Debug)]
pub(crate) enum Body {
    Receipt(Box<ReceiptCore>),
    Outcome(Outcome),
    Revocation(Box<RevocationNotice>),
    Grant(Box<SignedGrant>),
    /// The record was refused: a reason code and a sentence.
    Refused(&'static str, String),
    Fault(Fault),
}

/// A checked record with where it was.
#[derive(Debug)]
pub(crate) struct Checked {
    pub stream: usize,
    pub offset: u64,
    pub kind: Option<RecordKind>,
    pub body: Body,
    /// For signed records: steward, record id, stream position.
    pub meta: Option<Meta>,
    /// For a refused receipt: its record id (so its outcome is not an orphan).
    pub refused_id: Option<[u8; 32]>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub steward: Did,
    pub id: [u8; 32],
    pub seq: Option<u64>,
    pub known_through: Option<u64>,
}

/// A decoded record before its signature is checked.
enum Opened {
    Signed(Body, Sealed),
    Done(Body),
}

fn open(kind: RecordKind, payload: &[u8], dids: &mut DidCache) -> Opened {
    match kind {
        RecordKind::Receipt => match OpenedReceipt::open(payload, dids) {
            Ok(o) => Opened::Signed(Body::Receipt(Box::new(o.core)), o.sealed),
            Err(e) => Opened::Done(Body::Refused(e.code(), e.to_string())),
        },
        RecordKind::Outcome => match record::open_outcome(payload, dids) {
            Ok((o, s)) => Opened::Signed(Body::Outcome(o), s),
            Err(e) => Opened::Done(Body::Refused(e.code(), e.to_string())),
        },
        RecordKind::Revocation => match record::open_revocation(payload, dids) {
            Ok((r, s)) => Opened::Signed(Body::Revocation(Box::new(r)), s),
            Err(e) => Opened::Done(Body::Refused(e.code(), e.to_string())),
        },
        RecordKind::Grant => match SignedGrant::from_bytes(payload) {
            Ok(g) if g.verify_signature() => Opened::Done(Body::Grant(Box::new(g))),
            Ok(g) => Opened::Done(Body::Refused(
                "bad-signature",
                format!("grant {} does not verify under its issuer {}", g.id(), g.grant().issuer),
            )),
            Err(e) => Opened::Done(Body::Refused(e.code(), e.to_string())),
        },
    }
}

const BATCH: usize = 64;

thread_local! {
    /// Each worker keeps its parsed did:keys across chunks: parsing one
    /// decompresses a curve point.
    static DIDS: std::cell::RefCell<DidCache> = std::cell::RefCell::new(DidCache::new());
}

/// Decodes and verifies a slice of items (one worker's share).
fn check_slice(items: &[Raw], expected: &[Did], mode: Verification, dids: &mut DidCache) -> Vec<Checked> {
    let mut out: Vec<Checked> = Vec::with_capacity(items.len());
    // Indices into `out` of records awaiting a signature check, with their envelope.
    let mut pending: Vec<(usize, Sealed)> = Vec::with_capacity(BATCH);
    for raw in items {
        match &raw.item {
            Item::Fault(f) => out.push(Checked {
                stream: raw.stream,
                offset: f.offset,
                kind: None,
                body: Body::Fault(*f),
                meta: None,
                refused_id: None,
            }),
            Item::Record(r) => match open(r.kind, &r.payload, dids) {
                Opened::Done(body) => {
                    let refused_id = (r.kind == RecordKind::Receipt).then(|| *blake3::hash(&r.payload).as_bytes());
                    out.push(Checked { stream: raw.stream, offset: r.offset, kind: Some(r.kind), body, meta: None, refused_id });
                }
                Opened::Signed(body, sealed) => {
                    let meta = Meta {
                        steward: sealed.steward,
                        id: sealed.id.0,
                        seq: sealed.position.seq,
                        known_through: sealed.position.known_through,
                    };
                    if !expected.is_empty() && !expected.contains(&sealed.steward) {
                        out.push(Checked {
                            stream: raw.stream,
                            offset: r.offset,
                            kind: Some(r.kind),
                            body: Body::Refused(
                                "wrong-steward",
                                format!("sealed by {}, which is not an expected steward", sealed.steward),
                            ),
                            meta: None,
                            refused_id: Some(sealed.id.0),
                        });
                        continue;
                    }
                    out.push(Checked { stream: raw.stream, offset: r.offset, kind: Some(r.kind), body, meta: Some(meta), refused_id: None });
                    pending.push((out.len() - 1, sealed));
                    if pending.len() == BATCH {
                        verify_pending(&mut out, &mut pending, mode);
                    }
                }
            },
        }
    }
    verify_pending(&mut out, &mut pending, mode);
    out
}

fn verify_pending(out: &mut [Checked], pending: &mut Vec<(usize, Sealed)>, mode: Verification) {
    if pending.is_empty() {
        return;
    }
    let batch_ok = mode == Verification::Batch && {
        let msgs: Vec<&[u8]> = pending.iter().map(|(_, s)| s.tbs.as_slice()).collect();
        let sigs: Vec<Signature> = pending.iter().map(|(_, s)| Signature::from_bytes(&s.signature)).collect();
        let keys: Vec<VerifyingKey> = pending.iter().map(|(_, s)| *s.steward.verifying_key()).collect();
        ed25519_dalek::verify_batch(&msgs, &sigs, &keys).is_ok()
    };
    if !batch_ok {
        for (i, s) in pending.iter() {
            if let Err(e) = s.verify_signature() {
                out[*i].body = Body::Refused(e.code(), e.to_string());
                out[*i].refused_id = Some(s.id.0);
                out[*i].meta = None;
            }
        }
    }
    pending.clear();
}

/// Decodes and verifies a chunk on the current rayon pool, keeping order.
pub(crate) fn check_chunk(items: &[Raw], expected: &[Did], mode: Verification) -> Vec<Checked> {
    let per = (items.len() / (rayon::current_num_threads() * 4)).clamp(BATCH, 1024);
    items
        .par_chunks(per)
        .map(|slice| DIDS.with(|d| check_slice(slice, expected, mode, &mut d.borrow_mut())))
        .collect::<Vec<Vec<Checked>>>()
        .into_iter()
        .flatten()
        .collect()
}
