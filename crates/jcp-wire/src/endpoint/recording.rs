//! §4.11 and §11 "What the endpoint holds survives it": each admitted
//! request is recorded (a [`RecordKind::Request`] record, its receipt right
//! behind it) before it is decided, and on restart the replay of the record
//! rebuilds the memory of requests still inside the window.

use jcp::cbor::{self, ContentId, Fields, Item, Value};
use jcp_receipt::runtime::ReplayReport;
use jcp_receipt::stream::{RecordKind, FRAME_OVERHEAD};

use super::decided_once::{Entry, Remembered};
use crate::error::WireError;
use crate::message::WireRequest;

/// What opening found in the record.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OpenReport {
    /// The gate's replay (spend, revocations, unresolved decisions).
    pub replay: ReplayReport,
    /// Requests recorded in the stream.
    pub requests_recorded: u64,
    /// Of those, remembered again (stamp still inside the window).
    pub requests_remembered: u64,
    /// Request records that could not be read (counted, not trusted).
    pub requests_unreadable: u64,
    /// Closing records in the stream.
    pub closings: u64,
}

/// A request's record: the request as admitted and the time it was decided.
pub(super) fn request_record(req_bytes: &[u8], decided_at: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(req_bytes.len() + 24);
    // Canonical key order: "request" (7 bytes) before "decided_at" (10).
    cbor::write_map(
        &mut out,
        &mut [("request", Some(Item::Bytes(req_bytes))), ("decided_at", Some(Item::Uint(decided_at)))],
    );
    out
}

/// Reads a request record: the request and its decision time.
pub fn read_request_record(payload: &[u8]) -> Result<(WireRequest, u64), WireError> {
    let v = cbor::decode_strict(payload)?;
    let mut f = Fields::new("RequestRecord", &v)?;
    let Value::Bytes(b) = f.req("request")? else {
        return Err(f.error("request", "expected bytes").into());
    };
    let req = WireRequest::from_value(&cbor::decode_strict(b)?)?;
    let at = f.uint("decided_at")?;
    f.finish()?;
    Ok((req, at))
}

/// The replay's visit of each record as [`super::Endpoint::open`] reads the
/// stream back: counts request and closing records and remembers each
/// request whose stamp is still inside the window (§11, decided once).
pub(super) struct Replayed {
    pub(super) now: u64,
    pub(super) window_s: u64,
    /// The requests remembered again, by id.
    pub(super) table: Remembered,
    pub(super) recorded: u64,
    pub(super) unreadable: u64,
    pub(super) closings: u64,
    /// A request read but not yet matched to its receipt: (stamp, the
    /// receipt's expected offset, id).
    pub(super) awaiting: Option<(u64, u64, ContentId)>,
}

impl Replayed {
    /// Nothing read yet; `now` is the endpoint's clock at open.
    pub(super) fn new(now: u64, window_s: u64) -> Self {
        Self { now, window_s, table: Remembered::default(), recorded: 0, unreadable: 0, closings: 0, awaiting: None }
    }

    /// One record of the stream. A request record is remembered only when
    /// the record right after it is its receipt (they are written together;
    /// a torn batch may have kept the one and cut the other).
    pub(super) fn visit(&mut self, offset: u64, kind: RecordKind, payload: &[u8]) {
        if let Some((stamp, at, id)) = self.awaiting.take() {
            if kind == RecordKind::Receipt && offset == at && stamp.abs_diff(self.now) <= self.window_s {
                self.table.insert(id, Entry { stamp, receipt_at: at });
            }
        }
        match kind {
            RecordKind::Request => {
                self.recorded += 1;
                match read_request_record(payload) {
                    Ok((req, _)) => {
                        let at = offset + (FRAME_OVERHEAD + payload.len()) as u64;
                        self.awaiting = Some((req.now, at, req.id()));
                    }
                    Err(_) => self.unreadable += 1,
                }
            }
            RecordKind::Closing => self.closings += 1,
            _ => {}
        }
    }

    /// What opening found, beside the gate's own replay.
    pub(super) fn report(&self, replay: ReplayReport) -> OpenReport {
        OpenReport {
            replay,
            requests_recorded: self.recorded,
            requests_remembered: self.table.len() as u64,
            requests_unreadable: self.unreadable,
            closings: self.closings,
        }
    }
}
