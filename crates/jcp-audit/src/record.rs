//! One record of a stream, shown as it is on disk (§8.1: the stream is the
//! log): found by its byte offset (where a finding points) or by the id a
//! finding names (a receipt's or record's content id, a grant's id), decoded,
//! its signature checked alone with the one Ed25519 predicate, with the
//! offsets of the records before and after it so a reader can walk the log.
//!
//! This is the auditor's view of what a finding names; it decides nothing.
//! Whether the record's sealer is a steward the auditor trusts is the audit's
//! question (`--steward`, C5), not this one's: the check here says only
//! whether the signature verifies under the key the record names.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use jcp::cbor::{self, ContentId, Value};
use jcp::grant::SignedGrant;
use jcp_receipt::cose::{self, DidCache};
use jcp_receipt::stream::{FaultCode, Item, Reader, RecordKind};
use serde::Serialize;

use crate::reference::open::{open_record, Opened};
use crate::{AuditError, FindingCode};

/// The most bytes of a framing fault shown (as hex).
pub const FAULT_BYTES_SHOWN: usize = 256;

/// How a record is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locate {
    /// The record or fault that starts at this byte offset.
    At(u64),
    /// The first record whose id is this: a sealed record's or a request
    /// record's content id (blake3 of its bytes, the id receipts and
    /// findings use), or a grant record's grant id.
    Id(ContentId),
}

/// What the signature check of one record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum RecordCheck {
    /// Decoded, and its signature verifies under the key it names.
    Verified {
        /// What was checked, in words.
        what: String,
    },
    /// Refused: the audit's code and what was wrong.
    Refused {
        /// The finding code the audit gives this refusal.
        code: FindingCode,
        /// What was wrong.
        message: String,
    },
    /// A framing fault: no record could be read here.
    NotARecord {
        /// The fault's code (`record-corrupt`, `torn-tail`, …).
        code: String,
    },
}

/// One record (or framing fault) of a stream.
#[derive(Debug, Clone, Serialize)]
pub struct RecordView {
    /// The stream.
    pub stream: String,
    /// The byte offset where it starts.
    pub offset: u64,
    /// The byte offset just after it.
    pub end: u64,
    /// Its number in the stream (1 for the first record or fault).
    pub number: u64,
    /// Its kind (`receipt`, `outcome`, `grant`, …), or `fault`.
    pub kind: String,
    /// Its id: a receipt's or record's content id, a grant's id; none for a fault.
    pub id: Option<ContentId>,
    /// The payload's length in bytes.
    pub payload_bytes: u64,
    /// The key that sealed or signed it, where it names one.
    pub signer: Option<String>,
    /// The signature check, alone, under the key it names.
    pub check: RecordCheck,
    /// Its content: the sealed core, the grant or the request as decoded
    /// (byte strings as hex; nested canonical CBOR decoded beside them),
    /// or for a fault its first bytes as hex.
    pub body: serde_json::Value,
    /// Where the record before it starts.
    pub prev: Option<u64>,
    /// Where the record after it starts.
    pub next: Option<u64>,
}

struct Seen {
    offset: u64,
    end: u64,
    /// A record's kind, or the code of a framing fault.
    kind: Result<RecordKind, FaultCode>,
    payload: Vec<u8>,
}

fn io(path: &Path, e: &std::io::Error) -> AuditError {
    AuditError::Io { path: path.display().to_string(), message: e.to_string() }
}

/// The id [`Locate::Id`] matches for a record.
fn id_of(kind: RecordKind, payload: &[u8]) -> ContentId {
    match kind {
        RecordKind::Grant => SignedGrant::from_bytes(payload).map_or_else(|_| ContentId::of_bytes(payload), |g| g.id()),
        _ => ContentId::of_bytes(payload),
    }
}

/// Finds one record of the stream at `path` and shows it.
///
/// # Errors
/// [`AuditError::Io`] or [`AuditError::NotAStream`] when the stream cannot
/// be read; [`AuditError::NoRecordAt`] when nothing starts at the offset
/// (naming the records on either side); [`AuditError::NoRecordWithId`] when
/// no record has the id.
pub fn show(path: &Path, locate: Locate) -> Result<RecordView, AuditError> {
    let file = File::open(path).map_err(|e| io(path, &e))?;
    // The reader buffers by itself.
    let mut reader = Reader::new(file).map_err(|e| crate::reader_error(path.display().to_string(), e))?;
    let mut prev: Option<u64> = None;
    let mut number = 0u64;
    let mut found: Option<(Seen, u64, Option<u64>)> = None;
    let mut after: Option<u64> = None;
    while let Some(item) = reader.next() {
        let end = reader.position();
        number += 1;
        let seen = match item {
            Item::Record(r) => Seen { offset: r.offset, end, kind: Ok(r.kind), payload: r.payload },
            Item::Fault(f) => Seen { offset: f.offset, end: f.offset + f.len, kind: Err(f.code), payload: Vec::new() },
        };
        if found.is_some() {
            after = Some(seen.offset);
            break;
        }
        let hit = match locate {
            Locate::At(at) => seen.offset == at,
            Locate::Id(id) => seen.kind.is_ok_and(|k| id_of(k, &seen.payload) == id),
        };
        if hit {
            found = Some((seen, number, prev));
            continue;
        }
        if let Locate::At(at) = locate {
            if seen.offset > at {
                return Err(AuditError::NoRecordAt {
                    path: path.display().to_string(),
                    offset: at,
                    before: prev,
                    after: Some(seen.offset),
                });
            }
        }
        prev = Some(seen.offset);
    }
    if let Some(e) = reader.take_io_error() {
        return Err(io(path, &e));
    }
    let Some((seen, number, prev)) = found else {
        return Err(match locate {
            Locate::At(at) => {
                AuditError::NoRecordAt { path: path.display().to_string(), offset: at, before: prev, after: None }
            }
            Locate::Id(id) => AuditError::NoRecordWithId { path: path.display().to_string(), id: id.to_hex() },
        });
    };
    Ok(view(path, &seen, number, prev, after))
}

/// A framing fault where a record should be: its code and first bytes.
fn fault_view(
    path: &Path,
    seen: &Seen,
    fault: FaultCode,
    number: u64,
    prev: Option<u64>,
    next: Option<u64>,
) -> RecordView {
    RecordView {
        stream: path.display().to_string(),
        offset: seen.offset,
        end: seen.end,
        number,
        kind: "fault".into(),
        id: None,
        payload_bytes: seen.end - seen.offset,
        signer: None,
        check: RecordCheck::NotARecord { code: fault.code().into() },
        body: fault_bytes(path, seen.offset, seen.end),
        prev,
        next,
    }
}

fn view(path: &Path, seen: &Seen, number: u64, prev: Option<u64>, next: Option<u64>) -> RecordView {
    let stream = path.display().to_string();
    let kind = match seen.kind {
        Ok(kind) => kind,
        Err(fault) => return fault_view(path, seen, fault, number, prev, next),
    };
    let payload = &seen.payload;
    let (signer, body) = decode(kind, payload);
    let check = match open_record(kind, payload, &[]) {
        Opened::Refused(code, message) => {
            // Said once: the code is the check's, not repeated in its sentence.
            let message = message.strip_prefix(&format!("{}: ", code.as_str())).map_or(message.clone(), str::to_owned);
            RecordCheck::Refused { code, message }
        }
        Opened::WireRequest { signed: true } => {
            RecordCheck::Verified { what: "the caller's signature over the request verifies".into() }
        }
        Opened::WireRequest { signed: false } => RecordCheck::Refused {
            code: FindingCode::RequestSignatureInvalid,
            message: "the caller's signature over the request does not verify".into(),
        },
        Opened::Grant(_) => RecordCheck::Verified { what: "the issuer's signature over the grant verifies".into() },
        Opened::Signed(..) => RecordCheck::Verified {
            what: "the seal verifies under the key it names (whether that steward is trusted is the audit's question)"
                .into(),
        },
    };
    RecordView {
        stream,
        offset: seen.offset,
        end: seen.end,
        number,
        kind: kind.as_str().into(),
        id: Some(id_of(kind, payload)),
        payload_bytes: payload.len() as u64,
        signer,
        check,
        body,
        prev,
        next,
    }
}

/// A fault's first bytes, read again from the file (the reader skipped them).
fn fault_bytes(path: &Path, from: u64, to: u64) -> serde_json::Value {
    let want = usize::try_from(to.saturating_sub(from)).unwrap_or(usize::MAX).min(FAULT_BYTES_SHOWN);
    let mut buf = vec![0u8; want];
    let read = File::open(path).and_then(|mut f| {
        f.seek(SeekFrom::Start(from))?;
        f.read_exact(&mut buf)
    });
    match read {
        Ok(()) => serde_json::json!({
            "bytes_hex": hex(&buf),
            "shown": want,
            "of": to - from,
        }),
        Err(e) => serde_json::json!({ "unreadable": e.to_string() }),
    }
}

/// The record's signer and content as JSON.
fn decode(kind: RecordKind, payload: &[u8]) -> (Option<String>, serde_json::Value) {
    match kind {
        RecordKind::Grant | RecordKind::Request => match cbor::decode(payload, cbor::Profile::Deterministic) {
            Ok(v) => {
                let signer = match kind {
                    RecordKind::Grant => SignedGrant::from_bytes(payload).ok().map(|g| g.grant().issuer.to_string()),
                    _ => None,
                };
                (signer, to_json(&v, 0))
            }
            Err(e) => (None, serde_json::json!({ "undecodable": e.to_string(), "bytes_hex": hex(payload) })),
        },
        _ => match cose::open(payload, &mut DidCache::new()) {
            Ok((sealed, core)) => {
                let mut o = serde_json::Map::new();
                if let Some(seq) = sealed.position.seq {
                    o.insert("seq".into(), seq.into());
                }
                if let Some(k) = sealed.position.known_through {
                    o.insert("known_through".into(), k.into());
                }
                o.insert("core".into(), to_json(&core, 0));
                (Some(sealed.steward.to_string()), serde_json::Value::Object(o))
            }
            Err(e) => (None, serde_json::json!({ "undecodable": e.to_string(), "bytes_hex": hex(payload) })),
        },
    }
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    b.iter().fold(String::with_capacity(b.len() * 2), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// A CBOR item as JSON: maps as objects (a key that is not text written as
/// its JSON), byte strings as hex, with nested canonical CBOR (a request
/// inside its record, a sealed receipt inside a settlement) decoded beside
/// its hex, at most [`cbor::MAX_DEPTH`] levels down.
fn to_json(v: &Value, depth: usize) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Uint(n) => J::from(*n),
        Value::Nint(n) => n
            .checked_add(1)
            .and_then(|m| i64::try_from(m).ok())
            .map_or_else(|| J::String(format!("-1-{n}")), |m| J::from(-m)),
        Value::Text(t) => J::String(t.clone()),
        Value::Bytes(b) => {
            let nested = (depth < cbor::MAX_DEPTH && b.len() > 1)
                .then(|| cbor::decode(b, cbor::Profile::Deterministic).ok())
                .flatten()
                .filter(|n| matches!(n, Value::Map(_) | Value::Array(_) | Value::Tag(..)));
            match nested {
                Some(n) => serde_json::json!({ "bytes_hex": hex(b), "decoded": to_json(&n, depth + 1) }),
                None => J::String(hex(b)),
            }
        }
        Value::Array(items) => J::Array(items.iter().map(|i| to_json(i, depth + 1)).collect()),
        Value::Map(entries) => J::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::Text(t) => t.clone(),
                        other => to_json(other, depth + 1).to_string(),
                    };
                    (key, to_json(v, depth + 1))
                })
                .collect(),
        ),
        Value::Tag(t, inner) => serde_json::json!({ "tag": t, "value": to_json(inner, depth + 1) }),
        Value::Simple(20) => J::Bool(false),
        Value::Simple(21) => J::Bool(true),
        Value::Simple(22) => J::Null,
        Value::Simple(s) => J::String(format!("simple({s})")),
        Value::Float { bits, width } => J::String(format!("float{}(0x{bits:x})", u32::from(*width) * 8)),
    }
}
