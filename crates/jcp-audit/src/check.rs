//! The parallel half of the audit: decode every record of a chunk and check
//! its signature (batched), independent of order. Accounting (the serial
//! half, in stream order) is in `engine`.

use ed25519_dalek::VerifyingKey;
use jcp::cbor::ContentId;
use jcp::decision::{Reason, Verdict};
use jcp::energy::{Coverage, Provenance};
use jcp::grant::SignedGrant;
use jcp::identity::Did;
use jcp_receipt::cose::{DidCache, Unsealed};
use jcp_receipt::receipt::{CoreView, OpenedReceipt, Profile, ReceiptCore};
use jcp_receipt::record::{self, OutcomeRecord, RevocationNotice};
use jcp_receipt::stream::{Batch, BatchItem, Fault, RecordKind};
use rayon::prelude::*;

use crate::codes::FindingCode;
use crate::Verification;

/// A record after decoding and signature checking.
#[derive(Debug)]
pub(crate) enum Body {
    Receipt(Facts),
    /// An outcome: the id of the receipt it names.
    Outcome(ContentId),
    /// A settlement of the metered path's reservation (§4.9, §4.11).
    Settlement(Box<SettlementFacts>),
    Revocation(Box<RevocationNotice>),
    /// A budget-channel statement the point recorded (§4.5).
    Statement(Box<record::StatementNotice>),
    /// An amendment notice (§4.7 soft revoke at the recording point).
    Amendment(Box<jcp_receipt::record::AmendmentNotice>),
    /// A closing record of continued work (§6.1 item 4); sealed.
    Closing,
    /// A wire request record (§11): unsealed, paired with the receipt
    /// after it; counted; whether its caller signature verifies.
    WireRequest {
        /// The caller's signature over the request verifies.
        signed: bool,
    },
    Grant(Box<SignedGrant>),
    /// The record was refused: a reason code and a sentence.
    Refused(FindingCode, String),
    Fault(Fault),
}

/// What the accounting reads of a settlement record: the reservation it
/// takes back (the receipt it carries, opened here, off the accounting's
/// path) and the receipt that settles it.
#[derive(Debug)]
pub(crate) struct SettlementFacts {
    /// The reservation receipt's record id.
    pub reservation: ContentId,
    /// Its core: what its accounting added.
    pub core: ReceiptCore,
    /// Its `known_through` (the revocation classes it was counted under).
    pub known_through: Option<u64>,
    /// The record id of the receipt that settles it.
    pub settled_by: ContentId,
}

/// What the accounting reads of a receipt: read from its checked view
/// (no typed core is built on the hot path), or from a typed core where
/// the record is not in the minted layout. Compact: the accounting walks
/// these records, so chain ids live in their part's arena ([`Part::chains`]).
#[derive(Debug)]
pub(crate) struct Facts {
    pub profile: Profile,
    pub grant_id: ContentId,
    /// The subject's public-key bytes.
    pub subject: [u8; 32],
    pub verdict: Verdict,
    pub cost_uj: u64,
    pub provenance: Provenance,
    pub coverage: Coverage,
    /// The cost rests on a measurement: a hardware grade carrying its
    /// measured figure (§5). A bare `HwShunt` label does not.
    pub measured: bool,
    pub budget_remaining_uj: u64,
    pub budget_uj: u64,
    /// Where this receipt's chain ids (root first) are in its part's
    /// arena: start and count; count 0 for a single-grant decision.
    pub chain: (u32, u32),
    pub breach: Option<Reason>,
    /// The money cost's minor units, for a priced decision.
    pub money_minor: Option<u64>,
    /// The action, kept for an allow only (the report names it if the
    /// allow has no outcome); empty, not allocated, for a deny.
    pub action: String,
}

impl Facts {
    fn of_view(v: &CoreView<'_>, chain: (u32, u32)) -> Self {
        Self {
            profile: v.profile,
            grant_id: v.grant_id,
            subject: v.subject_key,
            verdict: v.verdict,
            cost_uj: v.cost_uj,
            provenance: v.provenance,
            coverage: v.coverage,
            measured: v.rests_on_measurement(),
            budget_remaining_uj: v.budget_remaining_uj,
            budget_uj: v.budget_uj,
            chain,
            breach: v.breach,
            money_minor: v.money.map(|(_, m)| m),
            action: if v.verdict == Verdict::Allow { v.action.to_owned() } else { String::new() },
        }
    }

    fn of(c: ReceiptCore, chain: (u32, u32)) -> Self {
        Self {
            profile: c.profile,
            grant_id: c.grant_id,
            subject: *c.subject.public_bytes(),
            verdict: c.verdict,
            cost_uj: c.cost_uj,
            provenance: c.provenance,
            coverage: c.coverage,
            measured: c.energy().rests_on_measurement(),
            budget_remaining_uj: c.budget_remaining_uj,
            budget_uj: c.budget_uj,
            chain,
            breach: c.breach,
            money_minor: c.money.map(|m| m.minor),
            action: if c.verdict == Verdict::Allow { c.action } else { String::new() },
        }
    }

    /// Every grant an allow debits, root first (`chains`: its part's arena).
    pub fn debited_ids<'a>(&'a self, chains: &'a [ContentId]) -> &'a [ContentId] {
        let (start, n) = (self.chain.0 as usize, self.chain.1 as usize);
        jcp_receipt::receipt::debited_ids(&self.grant_id, chains.get(start..start + n).unwrap_or_default())
    }
}

/// One worker's share of a chunk, checked: its records in order and the
/// chain ids their receipts name (one arena, so a chained receipt costs no
/// allocation of its own).
#[derive(Debug, Default)]
pub(crate) struct Part {
    pub checked: Vec<Checked>,
    pub chains: Vec<ContentId>,
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
    /// The record's bytes, kept for the rare kinds a partial audit carries
    /// whole (grants, revocation, amendment and statement notices, closing
    /// records, settlements): `None` for receipts, outcomes and the rest.
    pub raw: Option<Box<[u8]>>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    /// The steward's public-key bytes (a parsed [`Did`]'s; the engine keys
    /// its maps by them and spells the did only in the report).
    pub steward: [u8; 32],
    /// Duplicate detection: the first 128 bits of the signature's `R`. `R`
    /// is the signer's per-message nonce commitment, so two verified records
    /// share it only when they are the same signed bytes (or the signer
    /// reused a nonce across messages, which gives away its key); either way
    /// the second is reported, never silently merged.
    pub dedup: u128,
    /// The record id (blake3 of its bytes), computed only where something
    /// refers to it: an allow receipt, which its outcome names.
    pub id: Option<[u8; 32]>,
    pub seq: Option<u64>,
    pub known_through: Option<u64>,
}

/// A decoded record before its signature is checked.
enum Opened<'a> {
    Signed(Body, Unsealed<'a>),
    Done(Body),
}

/// The stream facts of a sealed record: steward, duplicate key, position
/// (the record id is filled in where something refers to it).
pub(crate) fn meta_of(sealed: &Unsealed<'_>) -> Meta {
    let mut r_prefix = [0u8; 16];
    r_prefix.copy_from_slice(&sealed.signature[..16]);
    Meta {
        steward: *sealed.steward.public_bytes(),
        dedup: u128::from_be_bytes(r_prefix),
        id: None,
        seq: sealed.position.seq,
        known_through: sealed.position.known_through,
    }
}

/// Whether a checked body is one a partial audit carries as its bytes.
fn kept_whole(body: &Body) -> bool {
    matches!(
        body,
        Body::Grant(_)
            | Body::Settlement(_)
            | Body::Revocation(_)
            | Body::Statement(_)
            | Body::Amendment(_)
            | Body::Closing
    )
}

/// Decodes a record whose signature a partial audit already checked
/// (`crate::partial`): its body and stream facts, without checking the
/// signature again; `Err` with the refusal's code when it does not decode.
pub(crate) fn reopen(
    kind: RecordKind,
    payload: &[u8],
    dids: &mut DidCache,
    chains: &mut Vec<ContentId>,
) -> Result<(Body, Option<Meta>), String> {
    match open(kind, payload, dids, chains) {
        Opened::Signed(body, sealed) => Ok((body, Some(meta_of(&sealed)))),
        Opened::Done(Body::Refused(code, msg)) => Err(format!("{code}: {msg}")),
        Opened::Done(body) => Ok((body, None)),
    }
}

fn open<'a>(kind: RecordKind, payload: &'a [u8], dids: &mut DidCache, chains: &mut Vec<ContentId>) -> Opened<'a> {
    let mut chain = |ids: &mut dyn Iterator<Item = ContentId>| {
        let start = chains.len();
        chains.extend(ids);
        // A part holds at most 1 024 records of at most 64 KiB
        // (`MAX_RECORD_LEN`) each: its arena stays far below u32::MAX ids.
        (u32::try_from(start).unwrap_or(u32::MAX), u32::try_from(chains.len() - start).unwrap_or(0))
    };
    match kind {
        RecordKind::Receipt => {
            // The minted layout is read as a checked view; anything else
            // through the typed path, which reads it or names the error.
            if let Some((v, u)) = OpenedReceipt::open_view(payload, dids) {
                let ch = chain(&mut v.chain_ids(dids));
                return Opened::Signed(Body::Receipt(Facts::of_view(&v, ch)), u);
            }
            match OpenedReceipt::open_unsealed(payload, dids) {
                Ok((core, u)) => {
                    let ch = chain(&mut core.chain_ids.iter().copied());
                    Opened::Signed(Body::Receipt(Facts::of(core, ch)), u)
                }
                Err(e) => Opened::Done(Body::Refused(FindingCode::of_refusal(e.code()), e.to_string())),
            }
        }
        // An outcome costs what it did before settlements existed: the
        // same zero-copy reader first; only another shape is read further.
        RecordKind::Outcome => match jcp_receipt::open::open_outcome_record_unsealed(payload, dids) {
            Ok((OutcomeRecord::Outcome(o), u)) => Opened::Signed(Body::Outcome(o.receipt), u),
            Ok((OutcomeRecord::Settlement(st), u)) => match st.open_reservation(dids) {
                Ok(r) => Opened::Signed(
                    Body::Settlement(Box::new(SettlementFacts {
                        reservation: st.reservation_id(),
                        core: r.core,
                        known_through: r.sealed.position.known_through,
                        settled_by: st.settled_by,
                    })),
                    u,
                ),
                Err(e) => Opened::Done(Body::Refused(
                    FindingCode::of_refusal(e.code()),
                    format!("settlement: its reservation receipt: {e}"),
                )),
            },
            Err(e) => Opened::Done(Body::Refused(FindingCode::of_refusal(e.code()), e.to_string())),
        },
        RecordKind::Revocation => match record::open_revocation(payload, dids) {
            Ok((r, s)) => Opened::Signed(Body::Revocation(Box::new(r)), s.into()),
            Err(e) => Opened::Done(Body::Refused(FindingCode::of_refusal(e.code()), e.to_string())),
        },
        RecordKind::Amendment => match record::open_amendment(payload, dids) {
            Ok((a, s)) => Opened::Signed(Body::Amendment(Box::new(a)), s.into()),
            Err(e) => Opened::Done(Body::Refused(FindingCode::of_refusal(e.code()), e.to_string())),
        },
        RecordKind::Statement => match record::open_statement(payload, dids) {
            Ok((n, s)) => Opened::Signed(Body::Statement(Box::new(n)), s.into()),
            Err(e) => Opened::Done(Body::Refused(FindingCode::of_refusal(e.code()), e.to_string())),
        },
        RecordKind::Closing => match jcp_receipt::cose::open(payload, dids) {
            Ok((s, core)) if core.get("jcp_record").is_some_and(|v| *v == jcp::cbor::Value::text("closing")) => {
                Opened::Signed(Body::Closing, s.into())
            }
            Ok(_) => Opened::Done(Body::Refused(
                FindingCode::ClosingInvalid,
                "a sealed record that is not a closing record".into(),
            )),
            Err(e) => Opened::Done(Body::Refused(FindingCode::of_refusal(e.code()), e.to_string())),
        },
        RecordKind::Request => match jcp::cbor::decode_strict(payload) {
            Ok(v) if matches!(v.get("decided_at"), Some(jcp::cbor::Value::Uint(_))) => match v.get("request") {
                Some(jcp::cbor::Value::Bytes(b)) => match crate::words::request_signature_ok(b) {
                    Some(signed) => Opened::Done(Body::WireRequest { signed }),
                    None => Opened::Done(Body::Refused(
                        FindingCode::RequestRecordInvalid,
                        "a request record whose request is not a caller-signed request".into(),
                    )),
                },
                _ => Opened::Done(Body::Refused(
                    FindingCode::RequestRecordInvalid,
                    "a request record without its request bytes and decision time".into(),
                )),
            },
            Ok(_) => Opened::Done(Body::Refused(
                FindingCode::RequestRecordInvalid,
                "a request record without its request bytes and decision time".into(),
            )),
            Err(e) => Opened::Done(Body::Refused(FindingCode::of_refusal(e.code()), e.to_string())),
        },
        RecordKind::Grant => match SignedGrant::from_bytes(payload) {
            Ok(g) if g.verify_signature() => Opened::Done(Body::Grant(Box::new(g))),
            Ok(g) => Opened::Done(Body::Refused(
                FindingCode::BadSignature,
                format!("grant {} does not verify under its issuer {}", g.id(), g.grant().issuer),
            )),
            Err(e) => Opened::Done(Body::Refused(FindingCode::of_refusal(e.code()), e.to_string())),
        },
    }
}

/// A record's id (its content id: blake3 of its bytes), the one its outcome names.
fn record_id(bytes: &[u8]) -> [u8; 32] {
    let _probe = crate::phases::probe!(IDS);
    ContentId::of_bytes(bytes).0
}

/// The record ids of a slice's allows, hashed side by side
/// ([`crate::ids::content_ids`]: one BLAKE3 chunk per SIMD lane).
fn record_ids(out: &mut [Checked], to_id: &[(usize, &[u8])]) {
    let _probe = crate::phases::probe!(IDS);
    let inputs: Vec<&[u8]> = to_id.iter().map(|(_, b)| *b).collect();
    let mut ids = vec![ContentId([0; 32]); inputs.len()];
    crate::ids::content_ids(&inputs, &mut ids);
    for ((i, _), id) in to_id.iter().zip(ids) {
        if let Some(m) = out[*i].meta.as_mut() {
            m.id = Some(id.0);
        }
    }
}

const BATCH: usize = 64;

thread_local! {
    /// Each worker keeps its parsed did:keys across chunks: parsing one
    /// decompresses a curve point.
    static DIDS: std::cell::RefCell<DidCache> = std::cell::RefCell::new(DidCache::new());
}

/// Decodes and verifies a slice of a batch's items (one worker's share):
/// every record is decoded first, then the signatures are checked in
/// batches of [`BATCH`], so the decoder and the verifier do not evict each
/// other's code and tables every few records (docs/performance.md).
fn check_slice(
    batch: &Batch,
    items: &[BatchItem],
    stream: usize,
    expected: &[Did],
    mode: Verification,
    dids: &mut DidCache,
) -> Part {
    let _probe = crate::phases::probe!(SLICES);
    let mut out: Vec<Checked> = Vec::with_capacity(items.len());
    // Room for a 3-hop chain per record (the arena otherwise regrows, and
    // each regrowth of a large buffer is fresh pages to fault in).
    let mut chains: Vec<ContentId> = Vec::with_capacity(items.len() * 3);
    // Indices into `out` of records awaiting a signature check, with their envelope.
    let mut pending: Vec<(usize, Unsealed<'_>, &[u8])> = Vec::with_capacity(items.len());
    // Indices into `out` of allows, whose record id their outcome names.
    let mut to_id: Vec<(usize, &[u8])> = Vec::with_capacity(items.len());
    for item in items {
        match *item {
            BatchItem::Fault(f) => {
                out.push(Checked {
                    stream,
                    offset: f.offset,
                    kind: None,
                    body: Body::Fault(f),
                    meta: None,
                    refused_id: None,
                    raw: None,
                });
            }
            BatchItem::Record { offset, kind, .. } => {
                let payload = batch.payload(item);
                match open(kind, payload, dids, &mut chains) {
                    Opened::Done(body) => {
                        let refused_id = (kind == RecordKind::Receipt).then(|| record_id(payload));
                        let raw = kept_whole(&body).then(|| payload.into());
                        out.push(Checked { stream, offset, kind: Some(kind), body, meta: None, refused_id, raw });
                    }
                    Opened::Signed(body, sealed) => {
                        let referred = match &body {
                            Body::Receipt(core) => core.verdict == Verdict::Allow,
                            _ => false,
                        };
                        // The record id is filled below, hashed with the slice's other allows.
                        let meta = meta_of(&sealed);
                        if !expected.is_empty() && !expected.contains(&sealed.steward) {
                            out.push(Checked {
                                stream,
                                offset,
                                kind: Some(kind),
                                body: Body::Refused(
                                    FindingCode::WrongSteward,
                                    format!("sealed by {}, which is not an expected steward", sealed.steward),
                                ),
                                meta: None,
                                refused_id: Some(record_id(payload)),
                                raw: None,
                            });
                            continue;
                        }
                        let raw = kept_whole(&body).then(|| payload.into());
                        out.push(Checked {
                            stream,
                            offset,
                            kind: Some(kind),
                            body,
                            meta: Some(meta),
                            refused_id: None,
                            raw,
                        });
                        if referred {
                            to_id.push((out.len() - 1, payload));
                        }
                        pending.push((out.len() - 1, sealed, payload));
                    }
                }
            }
        }
    }
    record_ids(&mut out, &to_id);
    for group in pending.chunks(BATCH) {
        verify_pending(&mut out, group, mode);
    }
    Part { checked: out, chains }
}

fn verify_pending(out: &mut [Checked], pending: &[(usize, Unsealed<'_>, &[u8])], mode: Verification) {
    let _probe = crate::phases::probe!(VERIFY);
    if pending.is_empty() {
        return;
    }
    let batch_ok = mode == Verification::Batch && {
        let msgs: Vec<[&[u8]; 4]> = pending.iter().map(|(_, s, _)| s.tbs_pieces()).collect();
        let sigs: Vec<[u8; 64]> = pending.iter().map(|(_, s, _)| s.signature).collect();
        let keys: Vec<&VerifyingKey> = pending.iter().map(|(_, s, _)| s.steward.verifying_key()).collect();
        crate::batch::verify_batch(&msgs, &sigs, &keys)
    };
    if !batch_ok {
        for (i, s, bytes) in pending {
            if let Err(e) = s.verify_signature() {
                out[*i].body = Body::Refused(FindingCode::of_refusal(e.code()), e.to_string());
                out[*i].refused_id = Some(record_id(bytes));
                out[*i].meta = None;
            }
        }
    }
}

/// Decodes and verifies a chunk on the current rayon pool: the checked
/// records in order, as the workers' consecutive parts (not flattened: the
/// accounting walks them in turn, so no record is moved twice).
pub(crate) fn check_chunk(batch: &Batch, stream: usize, expected: &[Did], mode: Verification) -> Vec<Part> {
    let items = batch.items();
    let per = (items.len() / (rayon::current_num_threads() * 4)).clamp(BATCH, 1024);
    items
        .par_chunks(per)
        .map(|slice| DIDS.with(|d| check_slice(batch, slice, stream, expected, mode, &mut d.borrow_mut())))
        .collect()
}
