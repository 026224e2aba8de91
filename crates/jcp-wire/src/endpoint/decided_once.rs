//! §11 "A request is decided once": every decided request is remembered by
//! its id (the content id of what the caller signed) with the stream offset
//! of its receipt while its stamp is inside the window. A repeat re-reads
//! that receipt and answers the same bytes; nothing is decided, debited or
//! recorded again. Caller authentication (§11) shares the signed bytes the
//! id is taken from.

use std::collections::{BTreeMap, HashMap};
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

/// The bytes one remembered request costs in the stamp index (its id,
/// in its stamp's list), before the lists' spare capacity.
pub const REMEMBERED_INDEX_BYTES: usize = std::mem::size_of::<ContentId>();

/// At most this many expired requests are forgotten per decision: the
/// forgetting keeps pace with the remembering (one in, up to this many
/// out) without ever pausing the core thread for a whole second's worth.
const FORGET_PER_DECISION: usize = 16;

/// The bytes the remembered requests take for `n` requests, at most: the
/// table (hashbrown keeps a power-of-two bucket count at most 7/8 full)
/// and the stamp index (each stamp's list at most twice its length).
pub fn remembered_table_bytes(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let buckets = (n.saturating_mul(8) / 7).max(4).next_power_of_two();
    buckets
        .saturating_mul(REMEMBERED_ENTRY_BYTES as u64)
        .saturating_add(n.saturating_mul(2 * REMEMBERED_INDEX_BYTES as u64))
}

/// The remembered requests (§11 "decided once"): by id, and their ids by
/// stamp, so that forgetting what has left the window takes time in
/// proportion to what is forgotten, a few at a time, and never a pass
/// over everything remembered.
#[derive(Debug, Default)]
pub(super) struct Remembered {
    table: HashMap<ContentId, Entry>,
    by_stamp: BTreeMap<u64, Vec<ContentId>>,
}

impl Remembered {
    /// The request remembered as `id`.
    pub(super) fn get(&self, id: &ContentId) -> Option<Entry> {
        self.table.get(id).copied()
    }

    /// Remembers a request. The same id always has the same stamp (the
    /// stamp is part of what the id is taken from).
    pub(super) fn insert(&mut self, id: ContentId, e: Entry) {
        if self.table.insert(id, e).is_none() {
            self.by_stamp.entry(e.stamp).or_default().push(id);
        }
    }

    /// How many requests are remembered.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// Forgets at most `budget` requests whose stamp has left the window
    /// `window_s` before `now`, oldest stamps first. A request left in for
    /// a while longer is harmless: a repeat is checked against the window
    /// before it is looked up. Returns how many were forgotten.
    pub(super) fn forget_expired(&mut self, now: u64, window_s: u64, mut budget: usize) -> usize {
        let mut forgotten = 0;
        while budget > 0 {
            let Some(mut first) = self.by_stamp.first_entry() else { break };
            if first.key().saturating_add(window_s) >= now {
                break;
            }
            let ids = first.get_mut();
            while budget > 0 {
                let Some(id) = ids.pop() else { break };
                self.table.remove(&id);
                budget -= 1;
                forgotten += 1;
            }
            if ids.is_empty() {
                first.remove();
            }
        }
        forgotten
    }

    /// The bytes held now: the table's buckets and the index's lists.
    pub(super) fn bytes(&self) -> u64 {
        let buckets = if self.table.capacity() == 0 { 0 } else { (self.table.capacity() * 8 / 7).next_power_of_two() };
        let lists: usize = self.by_stamp.values().map(Vec::capacity).sum();
        (buckets * REMEMBERED_ENTRY_BYTES + lists * REMEMBERED_INDEX_BYTES) as u64
    }
}

/// A request's identity ([`WireRequest::id`]) and the bytes its caller
/// signed, from one copy of the signed bytes rather than two encodings;
/// `bytes` are the request's canonical bytes (`req.to_bytes()`). The
/// signature over them is checked alone or with the core's batch
/// ([`super::CallerSignatures`]).
pub(super) fn identify(req: &WireRequest, bytes: &[u8]) -> (ContentId, Vec<u8>) {
    let signed = signed_bytes_of(req, bytes);
    debug_assert!(signed == req.signed_bytes(), "signed bytes cut from the body differ from the encoded ones");
    (ContentId::of_bytes(&signed), signed)
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

    /// Forgets a few requests whose stamp has left the window (a repeat
    /// of one is stale anyway): called once per decision.
    pub(super) fn sweep(&mut self, now: u64) {
        if self.table.forget_expired(now, self.window_s, FORGET_PER_DECISION) > 0 {
            self.stats.remembered.store(self.table.len() as u64, Ordering::Relaxed);
        }
    }

    /// Reads back the receipt record at `at` in the stream.
    pub(super) fn read_receipt_at(&mut self, at: u64) -> Result<Vec<u8>, String> {
        // A request decided earlier in this batch: its records are still
        // gathered in the writer (group commit), not yet in the file.
        if let Err(e) = self.gate.flush() {
            self.fail(e.to_string());
            return Err(e.to_string());
        }
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
    use jcp::flow::Label;

    use super::super::tests::{decide_in, grant, idle_core, key, request};
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
            let (id, signed) = identify(&r, &bytes);
            assert_eq!((id, r.caller.verify(&signed, &r.signature)), (r.id(), r.verify_signature()));
        }
        // Anything that is not a request's canonical tail is encoded instead.
        let r = request(&g, b"q");
        assert_eq!(signed_bytes_of(&r, b""), r.signed_bytes());
        assert_eq!(signed_bytes_of(&r, &r.signed_bytes()), r.signed_bytes());
    }

    #[test]
    fn s11_a_repeat_in_the_batch_of_its_first_gets_the_first_response() {
        // Group commit gathers a batch's records in the writer until the
        // batch is handed to the sync; a repeat decided in the same batch
        // reads its first response back from the record all the same.
        let dir = tempfile::tempdir().unwrap();
        let mut core = idle_core(dir.path());
        let g = grant();
        let r = request(&g, b"twice");
        let mut p = super::super::group_commit::Pending::default();
        let answers = [(); 2].map(|()| decide_in(&mut core, &mut p, &r));
        core.commit(p);
        let [first, again] = answers.map(|rx| rx.blocking_recv().unwrap());
        assert!(first.allow && first.fresh && !first.repeat, "{first:?}");
        assert!(again.repeat && !again.fresh, "{again:?}");
        assert_eq!(again.framed, first.framed, "the repeat gets the first response, byte for byte");
        assert_eq!(again.receipt, first.receipt);
        let st = core.stats.clone();
        assert_eq!((st.decided.load(Ordering::Relaxed), st.unrecorded.load(Ordering::Relaxed)), (1, 0));
        core.finish().unwrap();
        // The record holds the request and its receipt once.
        let f = std::fs::File::open(dir.path().join("s.jcps")).unwrap();
        let items: Vec<_> = jcp_receipt::stream::Reader::new(std::io::BufReader::new(f)).unwrap().collect();
        assert_eq!(items.len(), 2, "{items:?}");
    }

    fn id(n: u64) -> ContentId {
        ContentId::of_bytes(&n.to_be_bytes())
    }

    #[test]
    fn s11_expired_requests_are_forgotten_oldest_stamp_first_a_few_at_a_time() {
        let mut r = Remembered::default();
        // Stamps 100 (three requests), 101 (two), 140 (one), inserted out of order.
        for (n, stamp) in [(1, 101), (2, 100), (3, 140), (4, 100), (5, 101), (6, 100)] {
            r.insert(id(n), Entry { stamp, receipt_at: n * 10 });
        }
        // Remembering the same request again adds nothing (same id, same stamp).
        r.insert(id(2), Entry { stamp: 100, receipt_at: 20 });
        assert_eq!(r.len(), 6);
        // Inside the window (30 s) of now = 130 for every stamp: nothing goes.
        assert_eq!(r.forget_expired(130, 30, 16), 0);
        // now = 131: stamp 100 has left the window, 101 has not; a budget of 2 takes two of its three.
        assert_eq!(r.forget_expired(131, 30, 2), 2);
        assert_eq!(r.len(), 4);
        assert_eq!(r.forget_expired(131, 30, 16), 1);
        assert!([2, 4, 6].iter().all(|&n| r.get(&id(n)).is_none()), "stamp 100 is forgotten");
        assert!([1, 5, 3].iter().all(|&n| r.get(&id(n)).is_some()), "stamps 101 and 140 are kept");
        // now = 200: everything left has expired, taken in stamp order.
        assert_eq!(r.forget_expired(200, 30, 2), 2);
        assert_eq!(r.get(&id(3)).map(|e| e.receipt_at), Some(30), "the newest stamp goes last");
        assert_eq!(r.forget_expired(200, 30, 16), 1);
        assert_eq!((r.len(), r.forget_expired(10_000, 30, 16)), (0, 0));
    }

    #[test]
    fn s11_the_remembered_bytes_are_counted_and_bounded_by_the_projection() {
        let mut r = Remembered::default();
        assert_eq!(r.bytes(), 0);
        for n in 0..10_000 {
            r.insert(id(n), Entry { stamp: 1_000 + n / 1_000, receipt_at: n });
        }
        let held = r.bytes();
        assert!(held >= 10_000 * (REMEMBERED_ENTRY_BYTES + REMEMBERED_INDEX_BYTES) as u64, "{held}");
        assert!(held <= remembered_table_bytes(10_000), "{held} > {}", remembered_table_bytes(10_000));
    }
}
