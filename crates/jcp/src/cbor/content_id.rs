//! §3 content ids: `blake3` of an object's canonical bytes, lowercase hex
//! on the wire.

use std::fmt;

use super::Value;

/// A content id: `blake3(canonical_cbor(value))`, lowercase hex on the wire (§3).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentId(pub [u8; 32]);

impl ContentId {
    /// The id of canonical bytes.
    pub fn of_bytes(canonical: &[u8]) -> Self {
        Self(*blake3::hash(canonical).as_bytes())
    }

    /// The id of a value (encodes it canonically first).
    pub fn of(value: &Value) -> Self {
        Self::of_bytes(&value.encode())
    }

    /// Lowercase hex. Written digit by digit into a string of the right
    /// size (the `hex` crate's `encode` collects an iterator of chars, and
    /// a decision spells a dozen ids).
    pub fn to_hex(&self) -> String {
        self.hex_digits().iter().map(|&d| char::from(d)).collect()
    }

    /// The 64 lowercase hex digits, as bytes (for writers that put them
    /// straight into an encoding).
    pub fn hex_digits(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (pair, b) in out.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 0x0f)];
        }
        out
    }

    /// Parses exactly 64 lowercase hex digits; anything else is refused.
    /// One pass over the bytes: receipt and stream decoders call this for
    /// every id they read (six per chained receipt).
    pub fn parse(s: &str) -> Option<Self> {
        Self::parse_bytes(s.as_bytes())
    }

    /// [`ContentId::parse`] over raw bytes (64 lowercase hex digits), so a
    /// decoder need not validate UTF-8 first: anything outside `0-9a-f` is
    /// refused here anyway.
    pub fn parse_bytes(b: &[u8]) -> Option<Self> {
        if b.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        let mut ok = true;
        for (o, chunk) in out.chunks_exact_mut(4).zip(b.chunks_exact(8)) {
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            let (bytes, valid) = hex8(u64::from_le_bytes(w));
            ok &= valid;
            o.copy_from_slice(&bytes);
        }
        ok.then_some(Self(out))
    }
}

/// Eight lowercase hex digits (one `u64`, first digit in the low byte) to
/// four bytes, and whether all eight were `0-9a-f`. SWAR: every byte is
/// range-checked and converted at once, without a branch or a table per
/// digit; receipts carry six or more ids, and every decoder of them comes
/// through here. Exhaustively tested against the definition (every byte
/// value at every position) in `s3_content_id_is_blake3_of_canonical_bytes_lowercase_hex`.
#[allow(clippy::cast_possible_truncation, reason = "`packed` is masked to 32 bits")]
fn hex8(w: u64) -> ([u8; 4], bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // For 7-bit bytes, `b + (0x80 - lo)` sets the byte's high bit iff b >= lo,
    // with no carry into the next byte; so does `b + (0x7f - hi)` iff b > hi.
    let ascii = w & HIGH == 0;
    let ge = |lo: u64| w.wrapping_add(ONES * (0x80 - lo));
    let gt = |hi: u64| w.wrapping_add(ONES * (0x7f - hi));
    let digit = ge(0x30) & !gt(0x39) & HIGH;
    let lower = ge(0x61) & !gt(0x66) & HIGH;
    let valid = ascii && (digit | lower) == HIGH;
    // '0'..'9' -> low nibble; 'a'..'f' -> low nibble + 9.
    let nib = (w & (ONES * 0x0f)) + (lower >> 7) * 9;
    // Pair up: byte 2k is the high nibble of output byte k.
    let hi = nib & 0x00ff_00ff_00ff_00ff;
    let lo = (nib >> 8) & 0x00ff_00ff_00ff_00ff;
    let pairs = (hi << 4) | lo; // each 16-bit lane holds one output byte
    let packed = (pairs | (pairs >> 8)) & 0x0000_ffff_0000_ffff;
    let packed = (packed | (packed >> 16)) & 0xffff_ffff;
    ((packed as u32).to_le_bytes(), valid)
}

impl fmt::Debug for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentId({})", self.to_hex())
    }
}

impl fmt::Display for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl serde::Serialize for ContentId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for ContentId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).ok_or_else(|| serde::de::Error::custom("content id must be 64 lowercase hex digits"))
    }
}
