//! §11 "A request is decided once": every decided request is remembered by
//! its id (the content id of what the caller signed) with the stream offset
//! of its receipt while its stamp is inside the window. A repeat re-reads
//! that receipt and answers the same bytes; nothing is decided, debited or
//! recorded again. Caller authentication (§11) shares the signed bytes the
//! id is taken from.

use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::Ordering;

use jcp::cbor::ContentId;
use jcp_receipt::stream::RecordKind;

use super::core_thread::Core;
use super::decision::{framed_response, wire_decision, Answer};
use crate::message::WireRequest;

/// A remembered request: its stamp and where its receipt is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) stamp: u64,
    pub(super) receipt_at: u64,
}

/// The bytes one remembered request costs in the table: key, value and
/// one control byte (hashbrown), before the table's spare capacity.
pub const REMEMBERED_ENTRY_BYTES: usize = std::mem::size_of::<(ContentId, Entry)>() + 1;

/// The table's bytes for `n` remembered requests: hashbrown keeps a
/// power-of-two bucket count at most 7/8 full.
pub fn remembered_table_bytes(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let buckets = (n.saturating_mul(8) / 7).max(4).next_power_of_two();
    buckets.saturating_mul(REMEMBERED_ENTRY_BYTES as u64)
}

/// A request's identity and whether its caller's signature verifies
/// ([`WireRequest::id`] and [`WireRequest::verify_signature`]), from one
/// copy of the signed bytes rather than two encodings. `bytes` are the
/// request's canonical bytes (`req.to_bytes()`).
pub(super) fn authenticate(req: &WireRequest, bytes: &[u8]) -> (ContentId, bool) {
    let signed = signed_bytes_of(req, bytes);
    debug_assert!(signed == req.signed_bytes(), "signed bytes cut from the body differ from the encoded ones");
    (ContentId::of_bytes(&signed), req.caller.verify(&signed, &req.signature))
}

/// What the caller signed (every field but `signature`, canonical), cut
/// from the request's canonical bytes instead of encoded again. In a
/// canonical request map `signature` is the last entry (no field name of
/// a request sorts after it: none is longer than 9 bytes, and of the
/// 9-byte ones `continues` < `signature`), so the signed bytes are the map
/// with one entry fewer and its last 76 bytes (`"signature"`, a 64-byte
/// string) gone. Anything else falls back to encoding.
pub(super) fn signed_bytes_of(req: &WireRequest, bytes: &[u8]) -> Vec<u8> {
    const TAIL: usize = 1 + 9 + 2 + 64;
    let cut = bytes.len().checked_sub(TAIL).filter(|&at| at > 0);
    if let (Some(at), Some(&head)) = (cut, bytes.first()) {
        let tail = &bytes[at..];
        // A map of 1..=23 entries has a one-byte head 0xa1..=0xb7.
        if (0xa1..=0xb7).contains(&head) && tail[..12] == *b"\x69signature\x58\x40" && tail[12..] == req.signature {
            let mut out = Vec::with_capacity(at);
            out.push(head - 1);
            out.extend_from_slice(&bytes[1..at]);
            return out;
        }
    }
    req.signed_bytes()
}

impl Core {
    /// Whether `stamp` is within the freshness window of `now` (§11).
    pub(super) fn in_window(&self, stamp: u64, now: u64) -> bool {
        stamp.abs_diff(now) <= self.window_s
    }

    /// Forgets requests whose stamp has left the window (a repeat of one is
    /// stale anyway), at most once a second.
    pub(super) fn sweep(&mut self, now: u64) {
        if now == self.last_sweep {
            return;
        }
        self.last_sweep = now;
        let w = self.window_s;
        self.table.retain(|_, e| e.stamp.saturating_add(w) >= now);
        self.stats.remembered.store(self.table.len() as u64, Ordering::Relaxed);
    }

    /// Reads back the receipt record at `at` in the stream.
    pub(super) fn read_receipt_at(&mut self, at: u64) -> Result<Vec<u8>, String> {
        let mut head = [0u8; 13];
        self.read.seek(SeekFrom::Start(at)).map_err(|e| e.to_string())?;
        self.read.read_exact(&mut head[..9]).map_err(|e| e.to_string())?;
        if head[4] != RecordKind::Receipt.byte() {
            return Err(format!("the record at offset {at} is not a receipt"));
        }
        let len = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) as usize;
        if len > jcp_receipt::stream::MAX_RECORD_LEN {
            return Err(format!("the record at offset {at} declares {len} bytes"));
        }
        let mut body = vec![0u8; len];
        self.read.read_exact(&mut body).map_err(|e| e.to_string())?;
        Ok(body)
    }

    /// The answer to a repeat: the first response, rebuilt from the
    /// recorded receipt (the decision is a function of it).
    pub(super) fn repeat(&mut self, e: Entry) -> Result<Answer, String> {
        let bytes = self.read_receipt_at(e.receipt_at)?;
        let v = jcp_receipt::verify_receipt(&bytes, Some(&self.gate.steward())).map_err(|e| e.to_string())?;
        let c = &v.core;
        let d = wire_decision(c.verdict, c.cost_uj, c.budget_uj, c.budget_remaining_uj);
        let receipt = ContentId::of_bytes(&bytes);
        Ok(Answer {
            framed: framed_response(d, bytes),
            receipt,
            allow: c.is_allow(),
            fresh: false,
            continued: None,
            verdict: c.verdict,
            repeat: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use jcp::cbor::ContentId;
    use jcp::flow::Label;

    use super::super::tests::{grant, key, request};
    use super::*;
    use crate::message::RequestBody;

    #[test]
    fn s11_the_signed_bytes_cut_from_a_request_are_the_encoded_ones() {
        let g = grant();
        let plain = request(&g, b"q");
        let bare = WireRequest { label: None, args: None, ..plain.clone() };
        let full = RequestBody {
            frame: plain.frame.clone(),
            chain: vec![g.clone()],
            cost: plain.cost,
            money: Some(jcp::grant::Funds { currency: "EUR".into(), minor: 7 }),
            label: Some(Label::untrusted_from(["web"])),
            args: Some(b"q".to_vec()),
            continues: Some("h".repeat(128)),
            now: 1,
        }
        .sign(&key(2));
        for r in [plain, bare, full] {
            let bytes = r.to_bytes();
            assert_eq!(signed_bytes_of(&r, &bytes), r.signed_bytes());
            assert_eq!(authenticate(&r, &bytes), (r.id(), r.verify_signature()));
        }
        // Anything that is not a request's canonical tail is encoded instead.
        let r = request(&g, b"q");
        assert_eq!(signed_bytes_of(&r, b""), r.signed_bytes());
        assert_eq!(signed_bytes_of(&r, &r.signed_bytes()), r.signed_bytes());
    }
}
