//! Decoding one record through the typed receipt path (`coset` only) and
//! checking its steward (C5) and its signature (the one Ed25519 predicate, `jcp::identity::ed25519`).

use crate::FindingCode;
use jcp::cbor::{ContentId, Value};
use jcp::grant::SignedGrant;
use jcp::identity::Did;
use jcp_receipt::cose::{self, DidCache, Sealed};
use jcp_receipt::receipt::OpenedReceipt;
use jcp_receipt::receipt::ReceiptCore;
use jcp_receipt::record::{self, AmendmentNotice, OutcomeRecord, RevocationNotice, StatementNotice};
use jcp_receipt::stream::RecordKind;

/// A record after decoding and its signature check.
pub(crate) enum Opened {
    /// Refused: its reason code and a sentence.
    Refused(FindingCode, String),
    /// A grant whose issuer signature verified.
    Grant(Box<SignedGrant>),
    /// A wire request record (unsealed).
    /// Whether its caller signature verifies (§11).
    WireRequest { signed: bool },
    /// A sealed record whose steward is accepted and whose signature verified.
    Signed(Box<Sealed>, Signed),
}

/// What a verified sealed record holds.
pub(crate) enum Signed {
    Receipt(Box<ReceiptCore>),
    /// An outcome naming a receipt id.
    Outcome(ContentId),
    /// A settlement: the reservation receipt it takes back (its id, core
    /// and `known_through`) and the receipt that settles it.
    Settlement {
        reservation: ContentId,
        core: Box<ReceiptCore>,
        known_through: Option<u64>,
        settled_by: ContentId,
    },
    Revocation(Box<RevocationNotice>),
    Amendment(Box<AmendmentNotice>),
    Closing,
    Statement(Box<StatementNotice>),
}

pub(super) fn refused(e: &jcp_receipt::error::Error) -> Opened {
    Opened::Refused(FindingCode::of_refusal(e.code()), e.to_string())
}

/// Decodes one record through the typed (`coset`) path and checks its
/// steward (C5) and then its signature (the one Ed25519 predicate, `jcp::identity::ed25519`).
pub(crate) fn open_record(kind: RecordKind, payload: &[u8], expected: &[Did]) -> Opened {
    let dids = &mut DidCache::new();
    let (sealed, body) = match kind {
        RecordKind::Receipt => match OpenedReceipt::open_coset(payload, dids) {
            Ok(o) => (o.sealed, Signed::Receipt(Box::new(o.core))),
            Err(e) => return refused(&e),
        },
        RecordKind::Outcome => match record::open_outcome_record_coset(payload, dids) {
            Ok((OutcomeRecord::Outcome(o), sealed)) => (sealed, Signed::Outcome(o.receipt)),
            Ok((OutcomeRecord::Settlement(st), sealed)) => match st.open_reservation_coset(dids) {
                Ok(r) => {
                    let body = Signed::Settlement {
                        reservation: st.reservation_id(),
                        core: Box::new(r.core),
                        known_through: r.sealed.position.known_through,
                        settled_by: st.settled_by,
                    };
                    (sealed, body)
                }
                Err(e) => {
                    return Opened::Refused(
                        FindingCode::of_refusal(e.code()),
                        format!("settlement: its reservation receipt: {e}"),
                    )
                }
            },
            Err(e) => return refused(&e),
        },
        RecordKind::Revocation => match record::open_revocation(payload, dids) {
            Ok((n, sealed)) => (sealed, Signed::Revocation(Box::new(n))),
            Err(e) => return refused(&e),
        },
        RecordKind::Amendment => match record::open_amendment(payload, dids) {
            Ok((a, sealed)) => (sealed, Signed::Amendment(Box::new(a))),
            Err(e) => return refused(&e),
        },
        RecordKind::Statement => match record::open_statement(payload, dids) {
            Ok((n, sealed)) => (sealed, Signed::Statement(Box::new(n))),
            Err(e) => return refused(&e),
        },
        RecordKind::Closing => match cose::open(payload, dids) {
            Ok((sealed, core)) if core.get("jcp_record") == Some(&Value::text("closing")) => (sealed, Signed::Closing),
            Ok(_) => {
                return Opened::Refused(
                    FindingCode::ClosingInvalid,
                    "a sealed record that is not a closing record".into(),
                )
            }
            Err(e) => return refused(&e),
        },
        RecordKind::Request => {
            return match jcp::cbor::decode_strict(payload) {
                Ok(v)
                    if matches!(v.get("request"), Some(Value::Bytes(_)))
                        && matches!(v.get("decided_at"), Some(Value::Uint(_))) =>
                {
                    let Some(Value::Bytes(b)) = v.get("request") else { unreachable!("matched above") };
                    match crate::words::request_signature_ok(b) {
                        Some(signed) => Opened::WireRequest { signed },
                        None => Opened::Refused(
                            FindingCode::RequestRecordInvalid,
                            "a request record whose request is not a caller-signed request".into(),
                        ),
                    }
                }
                Ok(_) => Opened::Refused(
                    FindingCode::RequestRecordInvalid,
                    "a request record without its request bytes and decision time".into(),
                ),
                Err(e) => Opened::Refused(FindingCode::of_refusal(e.code()), e.to_string()),
            }
        }
        RecordKind::Grant => {
            return match SignedGrant::from_bytes(payload) {
                Ok(g) if g.verify_signature() => Opened::Grant(Box::new(g)),
                Ok(g) => Opened::Refused(
                    FindingCode::BadSignature,
                    format!("grant {} does not verify under its issuer {}", g.id(), g.grant().issuer),
                ),
                Err(e) => Opened::Refused(FindingCode::of_refusal(e.code()), e.to_string()),
            }
        }
    };
    if !expected.is_empty() && !expected.contains(&sealed.steward) {
        return Opened::Refused(
            FindingCode::WrongSteward,
            format!("sealed by {}, which is not an expected steward", sealed.steward),
        );
    }
    match record::verify_sealed(&sealed, None) {
        Ok(()) => Opened::Signed(Box::new(sealed), body),
        Err(e) => refused(&e),
    }
}
