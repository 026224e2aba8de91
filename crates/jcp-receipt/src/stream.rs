//! The stream file format (§8.1: the receipt stream is the write-ahead log).
//!
//! ```text
//! file    = header record*
//! header  = "JCPSTRM" 0x01                                  (8 bytes)
//! record  = magic kind len payload crc
//! magic   = "JRec"                                          (4 bytes, resync point)
//! kind    = u8   (1 receipt, 2 outcome, 3 grant, 4 revocation notice)
//! len     = u32 big-endian, at most MAX_RECORD_LEN
//! crc     = `CRC-32` (IEEE) of kind ‖ len ‖ payload, u32 big-endian
//! ```
//!
//! The CRC detects torn and corrupted storage; it is not a security check
//! (the signatures are). The reader never stops at bad bytes: it reports a
//! [`Fault`] with its byte offset and resynchronises on the next magic. A
//! final record that is incomplete, or whose checksum fails with nothing
//! after it, is a **torn tail**: reported, never read as a record, and cut by
//! the next writer to open the stream.

use std::io::Read;

use crate::error::Error;

/// The 8-byte stream header.
pub const HEADER: &[u8; 8] = b"JCPSTRM\x01";
/// The 4-byte record magic.
pub const MAGIC: &[u8; 4] = b"JRec";
/// The largest payload a record may carry.
pub const MAX_RECORD_LEN: usize = 64 * 1024;
/// Bytes of framing around a payload.
pub const FRAME_OVERHEAD: usize = 4 + 1 + 4 + 4;

/// What a record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordKind {
    /// A JCR-1 decision receipt (§8).
    Receipt,
    /// The outcome of a recorded decision (§4.11).
    Outcome,
    /// A signed grant the stream's decisions refer to (§4).
    Grant,
    /// A revocation notice with its feed marker (§4.3).
    Revocation,
    /// A wire request as the endpoint admitted it, with the time it was
    /// decided and the receipt that answered it (§11 "what the endpoint
    /// holds survives it").
    Request,
    /// An admitted amendment: the steered grant, the signed checkpoint and
    /// amendment, and the continuation grant (§4.7 soft revoke).
    Amendment,
    /// The closing record of a piece of continued work (§6.1 item 4).
    Closing,
    /// A budget-channel statement this point admitted from a peer or signed
    /// itself (§4.5), sealed by the recording point.
    Statement,
}

impl RecordKind {
    /// The kind byte.
    pub fn byte(self) -> u8 {
        match self {
            Self::Receipt => 1,
            Self::Outcome => 2,
            Self::Grant => 3,
            Self::Revocation => 4,
            Self::Request => 5,
            Self::Amendment => 6,
            Self::Closing => 7,
            Self::Statement => 8,
        }
    }

    /// The kind's name, as it serialises (`receipt`, `outcome`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Receipt => "receipt",
            Self::Outcome => "outcome",
            Self::Grant => "grant",
            Self::Revocation => "revocation",
            Self::Request => "request",
            Self::Amendment => "amendment",
            Self::Closing => "closing",
            Self::Statement => "statement",
        }
    }

    /// Parses a kind byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Receipt,
            2 => Self::Outcome,
            3 => Self::Grant,
            4 => Self::Revocation,
            5 => Self::Request,
            6 => Self::Amendment,
            7 => Self::Closing,
            8 => Self::Statement,
            _ => return None,
        })
    }
}

/// A named problem in the framing, at a byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultCode {
    /// Bytes that are not a record where a record should start.
    Garbage,
    /// A declared length above [`MAX_RECORD_LEN`].
    Oversized,
    /// The record's checksum does not match, or its length runs past the end
    /// while valid records follow (a corrupted record).
    ChecksumMismatch,
    /// A record of a kind this reader does not know.
    UnknownKind,
    /// The final record is incomplete or fails its checksum with nothing
    /// after it: a crash mid-append. Never read as a record.
    TornTail,
}

impl FaultCode {
    /// Stable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::Garbage => "garbage",
            Self::Oversized => "record-oversized",
            Self::ChecksumMismatch => "record-corrupt",
            Self::UnknownKind => "unknown-record-kind",
            Self::TornTail => "torn-tail",
        }
    }
}

/// A framing fault: what, where, and how many bytes it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Fault {
    /// The fault.
    pub code: FaultCode,
    /// Byte offset in the file.
    pub offset: u64,
    /// How many bytes were skipped.
    pub len: u64,
}

/// One framed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Byte offset of the record's magic in the file.
    pub offset: u64,
    /// Its kind.
    pub kind: RecordKind,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// What the reader yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A well-framed record.
    Record(Record),
    /// A framing fault (the reader continues after it).
    Fault(Fault),
}

/// An item as the reader finds it, before its payload is copied out.
enum Next {
    Record { offset: u64, kind: RecordKind, at: usize, len: usize },
    Fault(Fault),
}

/// Items read in one go ([`Reader::read_batch`]): the framed records in one
/// buffer, the one they were read into (no payload copied), which goes back
/// to the reader as its next buffer on the next batch.
#[derive(Debug, Default)]
pub struct Batch {
    bytes: Vec<u8>,
    items: Vec<BatchItem>,
}

/// One item of a [`Batch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchItem {
    /// A well-framed record; its payload is [`Batch::payload`].
    Record {
        /// Byte offset of the record's magic in the file.
        offset: u64,
        /// Its kind.
        kind: RecordKind,
        /// Where its payload starts in the batch's buffer.
        start: usize,
        /// The payload's length.
        len: usize,
    },
    /// A framing fault (the reader continues after it).
    Fault(Fault),
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// The items, in stream order.
    pub fn items(&self) -> &[BatchItem] {
        &self.items
    }

    /// An item in the iterator's owned form ([`Item`]), its payload copied.
    pub fn to_item(&self, item: &BatchItem) -> Item {
        match *item {
            BatchItem::Record { offset, kind, .. } => {
                Item::Record(Record { offset, kind, payload: self.payload(item).to_vec() })
            }
            BatchItem::Fault(f) => Item::Fault(f),
        }
    }

    /// A record item's payload (empty for a fault).
    pub fn payload(&self, item: &BatchItem) -> &[u8] {
        match *item {
            BatchItem::Record { start, len, .. } => self.bytes.get(start..start + len).unwrap_or_default(),
            BatchItem::Fault(_) => &[],
        }
    }
}

/// Frames a payload.
pub fn frame(kind: RecordKind, payload: &[u8]) -> Result<Vec<u8>, crate::error::Error> {
    if payload.len() > MAX_RECORD_LEN {
        return Err(crate::error::Error::Oversized { len: payload.len(), max: MAX_RECORD_LEN });
    }
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX).to_be_bytes();
    let mut out = Vec::with_capacity(payload.len() + FRAME_OVERHEAD);
    out.extend_from_slice(MAGIC);
    out.push(kind.byte());
    out.extend_from_slice(&len);
    out.extend_from_slice(payload);
    let crc = crc_of(&out[MAGIC.len()..]);
    out.extend_from_slice(&crc.to_be_bytes());
    Ok(out)
}

/// The frame's CRC-32 over its kind, length and payload, which lie back to
/// back in a frame (`framed` = those bytes): one pass, no per-field update.
fn crc_of(framed: &[u8]) -> u32 {
    crc32fast::hash(framed)
}

/// A streaming record reader over any byte source. Memory is bounded by
/// one read buffer plus one record (at most [`MAX_RECORD_LEN`]).
#[derive(Debug)]
pub struct Reader<R> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    /// Leading bytes of `buf` a refill must keep in place: the records a
    /// batch has framed so far ([`Reader::read_batch`]); 0 otherwise.
    keep: usize,
    /// File offset of `buf[start]`.
    offset: u64,
    eof: bool,
    done: bool,
    io_error: Option<std::io::Error>,
}

const CHUNK: usize = 256 * 1024;

impl<R: Read> Reader<R> {
    /// Reads and checks the header; the reader then yields records. Why a
    /// stream cannot be read at all is [`Error::NotAStream`] or
    /// [`Error::Io`], with an empty path: the reader does not know it, the
    /// caller names it ([`Error::at_path`]).
    pub fn new(src: R) -> Result<Self, Error> {
        let mut r = Self {
            src,
            buf: Vec::with_capacity(CHUNK * 2),
            start: 0,
            keep: 0,
            offset: 0,
            eof: false,
            done: false,
            io_error: None,
        };
        r.fill(HEADER.len()).map_err(|e| Error::io(std::path::Path::new(""), &e))?;
        if r.avail() < HEADER.len() || &r.buf[..HEADER.len()] != HEADER {
            return Err(Error::NotAStream { path: String::new() });
        }
        r.consume(HEADER.len());
        Ok(r)
    }

    /// Bytes consumed so far (the offset of the next record).
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// An I/O error that ended reading early, if one did.
    pub fn take_io_error(&mut self) -> Option<std::io::Error> {
        self.io_error.take()
    }

    fn avail(&self) -> usize {
        self.buf.len() - self.start
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    /// Ensures at least `n` bytes are buffered unless the source ends first.
    fn fill(&mut self, n: usize) -> std::io::Result<()> {
        if self.avail() >= n || self.eof {
            return Ok(());
        }
        if self.start > self.keep {
            self.buf.drain(self.keep..self.start);
            self.start = self.keep;
        }
        while self.avail() < n && !self.eof {
            let want = (n - self.avail()).max(CHUNK);
            let old = self.buf.len();
            // Appended into spare capacity (no zero-fill first); retried
            // when interrupted; returns short only at the end of the source.
            match (&mut self.src).take(want as u64).read_to_end(&mut self.buf) {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Scans forward from `from` (relative to `start`) for the next magic,
    /// consuming what it has scanned (all but 3 bytes, as a magic may
    /// straddle a refill) so memory stays bounded over long garbage.
    /// Returns the magic's position relative to the new `start`.
    fn find_magic(&mut self, mut from: usize) -> std::io::Result<Option<usize>> {
        loop {
            self.fill(from + MAGIC.len())?;
            let hay = &self.buf[self.start..];
            if hay.len() < from + MAGIC.len() {
                return Ok(None);
            }
            if let Some(p) = hay[from..].windows(MAGIC.len()).position(|w| w == MAGIC) {
                return Ok(Some(from + p));
            }
            if self.eof {
                return Ok(None);
            }
            let keep = MAGIC.len() - 1;
            let drop = hay.len() - keep;
            self.consume(drop);
            from = 0;
            self.fill(keep + CHUNK)?;
        }
    }

    /// Whether a well-framed record with a valid checksum starts at `rel`.
    fn valid_record_at(&mut self, rel: usize) -> std::io::Result<bool> {
        self.fill(rel + 9)?;
        let b = &self.buf[self.start..];
        if b.len() < rel + 9 || &b[rel..rel + 4] != MAGIC {
            return Ok(false);
        }
        let len = u32::from_be_bytes([b[rel + 5], b[rel + 6], b[rel + 7], b[rel + 8]]) as usize;
        if len > MAX_RECORD_LEN {
            return Ok(false);
        }
        self.fill(rel + 9 + len + 4)?;
        let b = &self.buf[self.start..];
        if b.len() < rel + 9 + len + 4 {
            return Ok(false);
        }
        let crc = u32::from_be_bytes([b[rel + 9 + len], b[rel + 10 + len], b[rel + 11 + len], b[rel + 12 + len]]);
        Ok(crc == crc_of(&b[rel + 4..rel + 9 + len]))
    }

    /// Skips to the next valid record after `from`, reporting the skipped
    /// bytes as one fault that starts at the current offset. When nothing
    /// valid follows, the fault runs to the end of the input and the reader
    /// is done.
    fn skip_fault(&mut self, code: FaultCode, from: usize) -> std::io::Result<Fault> {
        let at = self.offset;
        let mut search = from;
        loop {
            match self.find_magic(search)? {
                Some(p) if self.valid_record_at(p)? => {
                    self.consume(p);
                    return Ok(Fault { code, offset: at, len: self.offset - at });
                }
                Some(p) => search = p + 1,
                None => {
                    loop {
                        let n = self.avail();
                        self.consume(n);
                        if self.eof {
                            break;
                        }
                        self.fill(CHUNK)?;
                    }
                    self.done = true;
                    return Ok(Fault { code, offset: at, len: self.offset - at });
                }
            }
        }
    }

    fn next_item(&mut self) -> std::io::Result<Option<Item>> {
        Ok(self.next_raw()?.map(|n| match n {
            Next::Record { offset, kind, at, len } => {
                Item::Record(Record { offset, kind, payload: self.buf[at..at + len].to_vec() })
            }
            Next::Fault(f) => Item::Fault(f),
        }))
    }

    /// Reads up to `max` items into `batch` (emptied first), its records in
    /// the buffer they were read into. Returns the number of items read (0 at
    /// the end of the stream). An I/O error ends reading as it does for the
    /// iterator ([`Reader::take_io_error`]).
    pub fn read_batch(&mut self, max: usize, batch: &mut Batch) -> usize {
        batch.items.clear();
        // Records are framed where they were read and the buffer is handed
        // to the batch whole (no copy of any payload): while framing, a
        // refill keeps the bytes up to the last record in place (`keep`).
        self.buf.drain(..self.start);
        self.start = 0;
        while batch.items.len() < max {
            match self.next_raw() {
                Ok(Some(Next::Record { offset, kind, at, len })) => {
                    // Right after the previous record, so a batch holds its
                    // records and nothing that was skipped between them.
                    let frame = at - 9..self.start;
                    let to = self.keep;
                    if frame.start > to {
                        self.buf.copy_within(frame.clone(), to);
                    }
                    self.keep = to + frame.len();
                    batch.items.push(BatchItem::Record { offset, kind, start: to + 9, len });
                }
                Ok(Some(Next::Fault(f))) => batch.items.push(BatchItem::Fault(f)),
                Ok(None) => break,
                Err(e) => {
                    self.io_error = Some(e);
                    self.done = true;
                    break;
                }
            }
        }
        // The batch takes the buffer; the reader keeps what is past the
        // last record (a partial record at most) in the batch's old one.
        let mut rest = std::mem::take(&mut batch.bytes);
        rest.clear();
        rest.extend_from_slice(&self.buf[self.start..]);
        self.buf.truncate(self.keep);
        batch.bytes = std::mem::replace(&mut self.buf, rest);
        self.start = 0;
        self.keep = 0;
        batch.items.len()
    }

    /// The next item, a record's payload left in `buf[at..at + len]` (valid
    /// until the next read).
    fn next_raw(&mut self) -> std::io::Result<Option<Next>> {
        if self.done {
            return Ok(None);
        }
        self.fill(9)?;
        let n = self.avail();
        if n == 0 {
            self.done = true;
            return Ok(None);
        }
        let at = self.offset;
        if n < 9 {
            // An incomplete head at the end: torn.
            self.consume(n);
            self.done = true;
            return Ok(Some(Next::Fault(Fault { code: FaultCode::TornTail, offset: at, len: n as u64 })));
        }
        let b = &self.buf[self.start..];
        if &b[..4] != MAGIC {
            return self.skip_fault(FaultCode::Garbage, 1).map(|f| Some(Next::Fault(f)));
        }
        let kind_b = b[4];
        let len = u32::from_be_bytes([b[5], b[6], b[7], b[8]]) as usize;
        if len > MAX_RECORD_LEN {
            return self.skip_fault(FaultCode::Oversized, 1).map(|f| Some(Next::Fault(f)));
        }
        let total = 9 + len + 4;
        self.fill(total)?;
        if self.avail() < total {
            // Runs past the end. If a valid record follows somewhere, this is
            // a corrupted length; otherwise a torn final record.
            let f = self.skip_fault(FaultCode::TornTail, 1)?;
            let f = if self.done { f } else { Fault { code: FaultCode::ChecksumMismatch, ..f } };
            return Ok(Some(Next::Fault(f)));
        }
        let b = &self.buf[self.start..];
        let crc = u32::from_be_bytes([b[9 + len], b[10 + len], b[11 + len], b[12 + len]]);
        if crc != crc_of(&b[4..9 + len]) {
            // Trust the length when the next record (or the end) is where it says.
            self.fill(total + 4)?;
            let after_ok = self.avail() == total || self.valid_record_at(total)?;
            if after_ok {
                let at_end = self.avail() == total;
                self.consume(total);
                let code = if at_end { FaultCode::TornTail } else { FaultCode::ChecksumMismatch };
                if at_end {
                    self.done = true;
                }
                return Ok(Some(Next::Fault(Fault { code, offset: at, len: total as u64 })));
            }
            return self.skip_fault(FaultCode::ChecksumMismatch, 1).map(|f| Some(Next::Fault(f)));
        }
        let Some(kind) = RecordKind::from_byte(kind_b) else {
            self.consume(total);
            return Ok(Some(Next::Fault(Fault { code: FaultCode::UnknownKind, offset: at, len: total as u64 })));
        };
        let payload_at = self.start + 9;
        self.consume(total);
        Ok(Some(Next::Record { offset: at, kind, at: payload_at, len }))
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        match self.next_item() {
            Ok(i) => i,
            Err(e) => {
                self.io_error = Some(e);
                self.done = true;
                None
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// A stream of many refills: records of every size up to the limit,
    /// runs of garbage longer than a refill, a corrupt record, a magic
    /// inside garbage, and a torn tail.
    fn big_stream(seed: u32) -> Vec<u8> {
        let mut b = HEADER.to_vec();
        let mut x = 0x2545_f491_u32 ^ seed;
        for i in 0..900usize {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let len = match i % 9 {
                0 => MAX_RECORD_LEN,
                1 => 0,
                2 => (x as usize) % 40_000,
                _ => 200 + (x as usize) % 1500,
            };
            let payload: Vec<u8> = (0..len).map(|j| u8::try_from(j % 256).unwrap() ^ x.to_le_bytes()[0]).collect();
            let kind = [RecordKind::Receipt, RecordKind::Outcome, RecordKind::Grant][i % 3];
            let mut rec = frame(kind, &payload).unwrap();
            if i % 97 == 50 + seed as usize {
                let n = rec.len();
                rec[n - 1] ^= 0xff; // a checksum that does not match
            }
            b.extend_from_slice(&rec);
            if i % 211 == 100 + seed as usize {
                // Garbage longer than a refill, with a stray magic inside.
                b.extend((0..3 * CHUNK + 17).map(|j| {
                    if j == CHUNK {
                        b'J'
                    } else {
                        u8::try_from(j % 251).unwrap() | 0x80
                    }
                }));
                b.extend_from_slice(MAGIC);
                b.extend_from_slice(&[0xff; 40]);
            }
        }
        let torn = b.len() - 7;
        b.truncate(torn);
        b
    }

    #[test]
    fn s8_1_batches_over_many_refills_yield_what_the_iterator_yields_in_bounded_memory() {
        for (seed, max) in [(0, 1), (1, 2), (2, 7), (3, 64), (4, 100_000), (5, 4096)] {
            let bytes = big_stream(seed);
            let expected: Vec<Item> = Reader::new(&bytes[..]).unwrap().collect();
            assert!(expected.iter().filter(|i| matches!(i, Item::Fault(_))).count() >= 8);
            let mut reader = Reader::new(&bytes[..]).unwrap();
            let mut batch = Batch::new();
            let mut got = Vec::new();
            let mut most = 0;
            while reader.read_batch(max, &mut batch) > 0 {
                got.extend(batch.items().iter().map(|it| batch.to_item(it)));
                // The reader holds at most a partial record between batches;
                // a batch holds its records and not the garbage between them.
                let framed: usize = batch
                    .items()
                    .iter()
                    .filter(|it| matches!(it, BatchItem::Record { .. }))
                    .map(|it| batch.payload(it).len() + FRAME_OVERHEAD)
                    .sum();
                assert!(reader.buf.len() <= MAX_RECORD_LEN + FRAME_OVERHEAD + CHUNK, "batch size {max}");
                assert_eq!(batch.bytes.len(), framed, "batch size {max}");
                most = most.max(batch.bytes.len());
            }
            assert!(reader.take_io_error().is_none());
            assert_eq!(got, expected, "batch size {max}");
            assert!(most > 0);
        }
    }
}
