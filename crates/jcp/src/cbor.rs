//! Spec §3: canonical det-CBOR (RFC 8949 §4.2.1) and content ids.
//!
//! Hand-written rather than built on `ciborium` because ciborium 0.2 does not
//! write deterministic CBOR by itself (struct fields in declaration order,
//! `BTreeMap<String, _>` in Rust string order, indefinite lengths when serde
//! gives no length) and its decoder accepts every non-canonical form this
//! module must refuse. The encoder here sorts map keys itself and the decoder
//! refuses every input that is not the one canonical encoding of its value.
//!
//! Key order: RFC 8949 §4.2.1 sorts by the bytewise order of the keys'
//! encodings; the §3 text says "length-first then bytewise". The two agree for
//! keys of one major type (the header carries the length), and every JCP
//! object has text keys only; the strict profile refuses any other key type,
//! so the two readings can never disagree on bytes we accept or produce
//! (docs/decisions.md, "§3 key order").

use std::cmp::Ordering;
use std::fmt;

/// Maximum nesting depth the decoder accepts.
pub const MAX_DEPTH: usize = 64;

/// A CBOR data item. Maps keep their entries in canonical order once encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Major type 0.
    Uint(u64),
    /// Major type 1: the value is `-1 - n`.
    Nint(u64),
    /// Major type 2.
    Bytes(Vec<u8>),
    /// Major type 3.
    Text(String),
    /// Major type 4.
    Array(Vec<Value>),
    /// Major type 5.
    Map(Vec<(Value, Value)>),
    /// Major type 6.
    Tag(u64, Box<Value>),
    /// Major type 7 simple values (20 false, 21 true, 22 null, 23 undefined, …).
    Simple(u8),
    /// Major type 7 floats: the raw bits and their width in bytes (2, 4, 8).
    Float { bits: u64, width: u8 },
}

/// Where and why a byte string is not canonical CBOR (§3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended inside an item.
    #[error("truncated CBOR at byte {offset}")]
    Truncated { offset: usize },
    /// Bytes follow the single top-level item.
    #[error("trailing bytes after the CBOR item at byte {offset}")]
    TrailingBytes { offset: usize },
    /// An indefinite-length item (additional info 31).
    #[error("indefinite-length item at byte {offset}")]
    IndefiniteLength { offset: usize },
    /// An integer or length not in its shortest form.
    #[error("non-shortest integer or length encoding at byte {offset}")]
    NonShortest { offset: usize },
    /// Reserved additional information 28–30.
    #[error("reserved additional information at byte {offset}")]
    Reserved { offset: usize },
    /// Map keys out of canonical order.
    #[error("map keys out of canonical order at byte {offset}")]
    UnsortedKeys { offset: usize },
    /// The same key twice in one map.
    #[error("duplicate map key at byte {offset}")]
    DuplicateKey { offset: usize },
    /// A float, bool, null, undefined, simple value or tag in a signed core.
    #[error("{what} not allowed in a signed core at byte {offset}")]
    Forbidden { offset: usize, what: &'static str },
    /// A float not in its preferred (shortest exact) width.
    #[error("float not in its shortest exact width at byte {offset}")]
    NonShortestFloat { offset: usize },
    /// A map key that is not text in a JCP object.
    #[error("non-text map key at byte {offset}")]
    NonTextKey { offset: usize },
    /// Text that is not UTF-8.
    #[error("invalid UTF-8 in text string at byte {offset}")]
    InvalidUtf8 { offset: usize },
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH} at byte {offset}")]
    TooDeep { offset: usize },
    /// A declared length larger than the input that remains.
    #[error("declared length {len} exceeds the remaining input at byte {offset}")]
    LengthTooLarge { offset: usize, len: u64 },
}

impl DecodeError {
    /// A stable code for machines.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Truncated { .. } => "cbor-truncated",
            Self::TrailingBytes { .. } => "cbor-trailing-bytes",
            Self::IndefiniteLength { .. } => "cbor-indefinite-length",
            Self::NonShortest { .. } => "cbor-non-shortest",
            Self::Reserved { .. } => "cbor-reserved",
            Self::UnsortedKeys { .. } => "cbor-unsorted-keys",
            Self::DuplicateKey { .. } => "cbor-duplicate-key",
            Self::Forbidden { .. } => "cbor-forbidden-type",
            Self::NonShortestFloat { .. } => "cbor-non-shortest-float",
            Self::NonTextKey { .. } => "cbor-non-text-key",
            Self::InvalidUtf8 { .. } => "cbor-invalid-utf8",
            Self::TooDeep { .. } => "cbor-too-deep",
            Self::LengthTooLarge { .. } => "cbor-length-too-large",
        }
    }

    /// The byte offset the error refers to.
    pub fn offset(&self) -> usize {
        match *self {
            Self::Truncated { offset }
            | Self::TrailingBytes { offset }
            | Self::IndefiniteLength { offset }
            | Self::NonShortest { offset }
            | Self::Reserved { offset }
            | Self::UnsortedKeys { offset }
            | Self::DuplicateKey { offset }
            | Self::Forbidden { offset, .. }
            | Self::NonShortestFloat { offset }
            | Self::NonTextKey { offset }
            | Self::InvalidUtf8 { offset }
            | Self::TooDeep { offset }
            | Self::LengthTooLarge { offset, .. } => offset,
        }
    }
}

/// Which items a decode admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// JCP signed cores and content-addressed objects (§3): no floats, bools,
    /// nulls, simple values, tags or negative integers; text map keys only.
    Strict,
    /// Generic RFC 8949 §4.2.1 deterministic CBOR: any definite-length item in
    /// its one canonical form.
    Deterministic,
}

// ---------------------------------------------------------------- encoding

fn write_head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    if n < 24 {
        out.push(m | u8::try_from(n).unwrap_or(0));
    } else if let Ok(b) = u8::try_from(n) {
        out.push(m | 0x18);
        out.push(b);
    } else if let Ok(s) = u16::try_from(n) {
        out.push(m | 0x19);
        out.extend_from_slice(&s.to_be_bytes());
    } else if let Ok(w) = u32::try_from(n) {
        out.push(m | 0x1a);
        out.extend_from_slice(&w.to_be_bytes());
    } else {
        out.push(m | 0x1b);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn usize_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl Value {
    /// Text value.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Text(s.into())
    }

    /// Canonical encoding (RFC 8949 §4.2.1): shortest heads, definite
    /// lengths, map entries sorted by the bytewise order of encoded keys.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        self.encode_into(&mut out);
        out
    }

    /// Appends the canonical encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Self::Uint(n) => write_head(out, 0, *n),
            Self::Nint(n) => write_head(out, 1, *n),
            Self::Bytes(b) => {
                write_head(out, 2, usize_u64(b.len()));
                out.extend_from_slice(b);
            }
            Self::Text(s) => {
                write_head(out, 3, usize_u64(s.len()));
                out.extend_from_slice(s.as_bytes());
            }
            Self::Array(items) => {
                write_head(out, 4, usize_u64(items.len()));
                for it in items {
                    it.encode_into(out);
                }
            }
            Self::Map(entries) => {
                let mut enc: Vec<(Vec<u8>, &Value)> = entries.iter().map(|(k, v)| (k.encode(), v)).collect();
                enc.sort_by(|a, b| a.0.cmp(&b.0));
                write_head(out, 5, usize_u64(enc.len()));
                for (k, v) in enc {
                    out.extend_from_slice(&k);
                    v.encode_into(out);
                }
            }
            Self::Tag(t, v) => {
                write_head(out, 6, *t);
                v.encode_into(out);
            }
            Self::Simple(s) => write_head(out, 7, u64::from(*s)),
            Self::Float { bits, width } => match width {
                2 => {
                    out.push(0xf9);
                    out.extend_from_slice(&(u16::try_from(*bits & 0xffff).unwrap_or(0)).to_be_bytes());
                }
                4 => {
                    out.push(0xfa);
                    out.extend_from_slice(&(u32::try_from(*bits & 0xffff_ffff).unwrap_or(0)).to_be_bytes());
                }
                _ => {
                    out.push(0xfb);
                    out.extend_from_slice(&bits.to_be_bytes());
                }
            },
        }
    }

    /// The map entry for a text key, when `self` is a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Self::Map(entries) => entries.iter().find_map(|(k, v)| match k {
                Self::Text(t) if t == key => Some(v),
                _ => None,
            }),
            _ => None,
        }
    }

    /// Compares two keys in RFC 7049 §3.9 "length-first" order (used only to
    /// report the difference from §4.2.1 in tests and docs).
    pub fn length_first_cmp(a: &[u8], b: &[u8]) -> Ordering {
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
    }
}

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

    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
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
#[allow(clippy::cast_possible_truncation)] // `packed` is masked to 32 bits
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

// ---------------------------------------------------------------- decoding

/// Decodes one canonical item filling all of `bytes`.
pub fn decode(bytes: &[u8], profile: Profile) -> Result<Value, DecodeError> {
    let mut d = Decoder { bytes, pos: 0, profile };
    let v = d.item(0)?;
    if d.pos != bytes.len() {
        return Err(DecodeError::TrailingBytes { offset: d.pos });
    }
    Ok(v)
}

/// Decodes one canonical item from the start of `bytes` and returns it with
/// the number of bytes it used (for framed streams).
pub fn decode_prefix(bytes: &[u8], profile: Profile) -> Result<(Value, usize), DecodeError> {
    let mut d = Decoder { bytes, pos: 0, profile };
    let v = d.item(0)?;
    Ok((v, d.pos))
}

/// Decodes in the strict JCP profile (§3).
pub fn decode_strict(bytes: &[u8]) -> Result<Value, DecodeError> {
    decode(bytes, Profile::Strict)
}

struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
    profile: Profile,
}

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let start = self.pos;
        let end = start.checked_add(n).ok_or(DecodeError::Truncated { offset: start })?;
        if end > self.bytes.len() {
            return Err(DecodeError::Truncated { offset: start });
        }
        self.pos = end;
        Ok(&self.bytes[start..end])
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    /// Reads the argument of a head with additional info `ai`, refusing
    /// non-shortest forms (§4.2.1 "preferred serialization" of integers).
    fn argument(&mut self, ai: u8, head_at: usize) -> Result<u64, DecodeError> {
        let v = match ai {
            0..=23 => return Ok(u64::from(ai)),
            24 => {
                let v = u64::from(self.byte()?);
                if v < 24 {
                    return Err(DecodeError::NonShortest { offset: head_at });
                }
                v
            }
            25 => {
                let b = self.take(2)?;
                let v = u64::from(u16::from_be_bytes([b[0], b[1]]));
                if v <= 0xff {
                    return Err(DecodeError::NonShortest { offset: head_at });
                }
                v
            }
            26 => {
                let b = self.take(4)?;
                let v = u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                if v <= 0xffff {
                    return Err(DecodeError::NonShortest { offset: head_at });
                }
                v
            }
            27 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                let v = u64::from_be_bytes(a);
                if v <= 0xffff_ffff {
                    return Err(DecodeError::NonShortest { offset: head_at });
                }
                v
            }
            28..=30 => return Err(DecodeError::Reserved { offset: head_at }),
            _ => return Err(DecodeError::IndefiniteLength { offset: head_at }),
        };
        Ok(v)
    }

    fn length(&mut self, ai: u8, head_at: usize) -> Result<usize, DecodeError> {
        let n = self.argument(ai, head_at)?;
        let remaining = self.bytes.len() - self.pos;
        match usize::try_from(n) {
            Ok(len) if len <= remaining => Ok(len),
            _ => Err(DecodeError::LengthTooLarge { offset: head_at, len: n }),
        }
    }

    fn item(&mut self, depth: usize) -> Result<Value, DecodeError> {
        let head_at = self.pos;
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep { offset: head_at });
        }
        let ib = self.byte()?;
        let major = ib >> 5;
        let ai = ib & 0x1f;
        match major {
            0 => Ok(Value::Uint(self.argument(ai, head_at)?)),
            1 => {
                let n = self.argument(ai, head_at)?;
                if self.profile == Profile::Strict {
                    // JCP objects are flat uint/text cores: no field is ever
                    // negative, so a negative integer is refused outright.
                    return Err(DecodeError::Forbidden { offset: head_at, what: "negative integer" });
                }
                Ok(Value::Nint(n))
            }
            2 => {
                let n = self.length(ai, head_at)?;
                Ok(Value::Bytes(self.take(n)?.to_vec()))
            }
            3 => {
                let n = self.length(ai, head_at)?;
                let raw = self.take(n)?;
                let s = std::str::from_utf8(raw).map_err(|_| DecodeError::InvalidUtf8 { offset: head_at })?;
                Ok(Value::Text(s.to_owned()))
            }
            4 => {
                let n = self.length(ai, head_at)?;
                // Each element takes at least one byte: `length` bounded n by the input.
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.item(depth + 1)?);
                }
                Ok(Value::Array(items))
            }
            5 => {
                let n = self.length(ai, head_at)?;
                let mut entries = Vec::with_capacity(n);
                let mut prev_key: Option<(usize, usize)> = None;
                for _ in 0..n {
                    let key_at = self.pos;
                    let key = self.item(depth + 1)?;
                    let key_end = self.pos;
                    if self.profile == Profile::Strict && !matches!(key, Value::Text(_)) {
                        return Err(DecodeError::NonTextKey { offset: key_at });
                    }
                    if let Some((ps, pe)) = prev_key {
                        match self.bytes[ps..pe].cmp(&self.bytes[key_at..key_end]) {
                            Ordering::Less => {}
                            Ordering::Equal => return Err(DecodeError::DuplicateKey { offset: key_at }),
                            Ordering::Greater => return Err(DecodeError::UnsortedKeys { offset: key_at }),
                        }
                    }
                    prev_key = Some((key_at, key_end));
                    let value = self.item(depth + 1)?;
                    entries.push((key, value));
                }
                Ok(Value::Map(entries))
            }
            6 => {
                let tag = self.argument(ai, head_at)?;
                if self.profile == Profile::Strict {
                    return Err(DecodeError::Forbidden { offset: head_at, what: "tag" });
                }
                let inner = self.item(depth + 1)?;
                Ok(Value::Tag(tag, Box::new(inner)))
            }
            _ => self.simple_or_float(ai, head_at),
        }
    }

    fn simple_or_float(&mut self, ai: u8, head_at: usize) -> Result<Value, DecodeError> {
        let strict = self.profile == Profile::Strict;
        match ai {
            0..=23 => {
                if strict {
                    let what = match ai {
                        20 | 21 => "bool",
                        22 => "null",
                        23 => "undefined",
                        _ => "simple value",
                    };
                    return Err(DecodeError::Forbidden { offset: head_at, what });
                }
                Ok(Value::Simple(ai))
            }
            24 => {
                let v = self.byte()?;
                if strict {
                    return Err(DecodeError::Forbidden { offset: head_at, what: "simple value" });
                }
                if v < 32 {
                    // RFC 8949 §3.3: two-byte simple values below 32 are not well-formed.
                    return Err(DecodeError::NonShortest { offset: head_at });
                }
                Ok(Value::Simple(v))
            }
            25..=27 => {
                let width = 1u8 << (ai - 24);
                let raw = self.take(usize::from(width))?;
                let mut a = [0u8; 8];
                a[8 - raw.len()..].copy_from_slice(raw);
                let bits = u64::from_be_bytes(a);
                if strict {
                    return Err(DecodeError::Forbidden { offset: head_at, what: "float" });
                }
                if shortest_float_width(bits, width) != width {
                    return Err(DecodeError::NonShortestFloat { offset: head_at });
                }
                Ok(Value::Float { bits, width })
            }
            28..=30 => Err(DecodeError::Reserved { offset: head_at }),
            _ => Err(DecodeError::IndefiniteLength { offset: head_at }),
        }
    }
}

/// The width in bytes of the preferred serialization of a float given in
/// `width` bytes (RFC 8949 §4.1: the shortest width that keeps the value).
fn shortest_float_width(bits: u64, width: u8) -> u8 {
    let value: f64 = match width {
        2 => f64::from(half_to_f32(u16::try_from(bits).unwrap_or(0))),
        4 => f64::from(f32::from_bits(u32::try_from(bits).unwrap_or(0))),
        _ => f64::from_bits(bits),
    };
    if value.is_nan() {
        // Preferred NaN is the half-width quiet NaN 0x7e00.
        return if width == 2 && bits == 0x7e00 { 2 } else { 0 };
    }
    #[allow(clippy::cast_possible_truncation)]
    let as32 = value as f32;
    if f64::from(as32).to_bits() != value.to_bits() {
        return 8;
    }
    if f32_is_exact_half(as32) {
        return 2;
    }
    4
}

fn half_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let mant = u32::from(h & 0x3ff);
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // subnormal: value = m * 2^-24
            #[allow(clippy::cast_precision_loss)]
            let v = (m as f32) * f32::from_bits(0x3380_0000); // 2^-24
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

fn f32_is_exact_half(f: f32) -> bool {
    if f == 0.0 || f.is_infinite() {
        return true;
    }
    let bits = f.to_bits();
    let exp_field = (bits >> 23) & 0xff;
    if exp_field == 0 || exp_field == 0xff {
        // f32 subnormals are far below half precision's range; NaN is handled by the caller.
        return false;
    }
    let exp = i64::from(exp_field) - 127;
    let significand = 0x0080_0000 | (bits & 0x007f_ffff);
    if (-14..=15).contains(&exp) {
        // A half normal keeps 10 fraction bits: the low 13 of the 23 must be zero.
        return bits & 0x1fff == 0;
    }
    if exp < -14 {
        // A half subnormal is k * 2^-24: the significand must lose -(exp + 1) zero bits.
        let need = -(exp + 1);
        return need <= 24 && i64::from(significand.trailing_zeros()) >= need;
    }
    false
}

// ------------------------------------------------------------ typed reading

/// Why a canonical item is not the JCP object it was read as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The item is not a map.
    #[error("{object}: expected a map")]
    NotAMap { object: &'static str },
    /// A required field is missing.
    #[error("{object}: missing field `{field}`")]
    Missing { object: &'static str, field: &'static str },
    /// A field the object does not define (closed world).
    #[error("{object}: unknown field `{field}`")]
    Unknown { object: &'static str, field: String },
    /// A field of the wrong type or value.
    #[error("{object}.{field}: {problem}")]
    Invalid { object: &'static str, field: &'static str, problem: String },
}

impl SchemaError {
    /// A stable code for machines.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotAMap { .. } => "schema-not-a-map",
            Self::Missing { .. } => "schema-missing-field",
            Self::Unknown { .. } => "schema-unknown-field",
            Self::Invalid { .. } => "schema-invalid-field",
        }
    }
}

/// Reads the fields of a JCP object map: every field must be taken, so a map
/// with a field the object does not define is refused by [`Fields::finish`].
#[derive(Debug)]
pub struct Fields<'a> {
    object: &'static str,
    entries: Vec<(&'a str, &'a Value)>,
    taken: Vec<bool>,
}

impl<'a> Fields<'a> {
    /// Starts reading `value` as the object named `object`.
    pub fn new(object: &'static str, value: &'a Value) -> Result<Self, SchemaError> {
        let Value::Map(entries) = value else {
            return Err(SchemaError::NotAMap { object });
        };
        let mut out = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let Value::Text(k) = k else {
                return Err(SchemaError::Unknown { object, field: format!("{k:?}") });
            };
            out.push((k.as_str(), v));
        }
        let taken = vec![false; out.len()];
        Ok(Self { object, entries: out, taken })
    }

    fn invalid(&self, field: &'static str, problem: impl Into<String>) -> SchemaError {
        SchemaError::Invalid { object: self.object, field, problem: problem.into() }
    }

    /// Takes an optional field.
    pub fn opt(&mut self, field: &'static str) -> Option<&'a Value> {
        let i = self.entries.iter().position(|(k, _)| *k == field)?;
        self.taken[i] = true;
        Some(self.entries[i].1)
    }

    /// Takes a required field.
    pub fn req(&mut self, field: &'static str) -> Result<&'a Value, SchemaError> {
        self.opt(field).ok_or(SchemaError::Missing { object: self.object, field })
    }

    /// A required text field.
    pub fn text(&mut self, field: &'static str) -> Result<&'a str, SchemaError> {
        match self.req(field)? {
            Value::Text(s) => Ok(s),
            _ => Err(self.invalid(field, "expected text")),
        }
    }

    /// An optional text field.
    pub fn opt_text(&mut self, field: &'static str) -> Result<Option<&'a str>, SchemaError> {
        match self.opt(field) {
            None => Ok(None),
            Some(Value::Text(s)) => Ok(Some(s)),
            Some(_) => Err(self.invalid(field, "expected text")),
        }
    }

    /// A required unsigned integer field.
    pub fn uint(&mut self, field: &'static str) -> Result<u64, SchemaError> {
        match self.req(field)? {
            Value::Uint(n) => Ok(*n),
            _ => Err(self.invalid(field, "expected an unsigned integer")),
        }
    }

    /// An optional unsigned integer field.
    pub fn opt_uint(&mut self, field: &'static str) -> Result<Option<u64>, SchemaError> {
        match self.opt(field) {
            None => Ok(None),
            Some(Value::Uint(n)) => Ok(Some(*n)),
            Some(_) => Err(self.invalid(field, "expected an unsigned integer")),
        }
    }

    /// A required byte string of exactly `N` bytes.
    pub fn bytes_n<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], SchemaError> {
        match self.req(field)? {
            Value::Bytes(b) if b.len() == N => {
                let mut out = [0u8; N];
                out.copy_from_slice(b);
                Ok(out)
            }
            Value::Bytes(b) => Err(self.invalid(field, format!("expected {N} bytes, got {}", b.len()))),
            _ => Err(self.invalid(field, "expected a byte string")),
        }
    }

    /// A required content id (64 lowercase hex digits).
    pub fn cid(&mut self, field: &'static str) -> Result<ContentId, SchemaError> {
        let s = self.text(field)?;
        ContentId::parse(s).ok_or_else(|| self.invalid(field, "expected a content id (64 lowercase hex digits)"))
    }

    /// An optional content id.
    pub fn opt_cid(&mut self, field: &'static str) -> Result<Option<ContentId>, SchemaError> {
        match self.opt_text(field)? {
            None => Ok(None),
            Some(s) => ContentId::parse(s)
                .map(Some)
                .ok_or_else(|| self.invalid(field, "expected a content id (64 lowercase hex digits)")),
        }
    }

    /// A required array of text.
    pub fn text_array(&mut self, field: &'static str) -> Result<Vec<String>, SchemaError> {
        match self.req(field)? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::Text(s) => Ok(s.clone()),
                    _ => Err(self.invalid(field, "expected an array of text")),
                })
                .collect(),
            _ => Err(self.invalid(field, "expected an array")),
        }
    }

    /// Refuses any field that was not taken (closed world).
    pub fn finish(self) -> Result<(), SchemaError> {
        match self.taken.iter().position(|t| !t) {
            Some(i) => Err(SchemaError::Unknown { object: self.object, field: self.entries[i].0.to_owned() }),
            None => Ok(()),
        }
    }

    /// An error for `field` (for callers validating further).
    pub fn error(&self, field: &'static str, problem: impl Into<String>) -> SchemaError {
        self.invalid(field, problem)
    }
}

/// Builds a map value from `(key, value)` pairs, leaving out `None`s (§3:
/// an absent optional field is omitted, so old objects keep their bytes).
pub fn map(entries: impl IntoIterator<Item = (&'static str, Option<Value>)>) -> Value {
    Value::Map(entries.into_iter().filter_map(|(k, v)| v.map(|v| (Value::text(k), v))).collect())
}

/// Text array value.
pub fn text_array<S: AsRef<str>>(items: &[S]) -> Value {
    Value::Array(items.iter().map(|s| Value::text(s.as_ref())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_map_keys_sorted_bytewise_on_encode() {
        let v = Value::Map(vec![(Value::text("z"), Value::Uint(2)), (Value::text("aa"), Value::Uint(1))]);
        assert_eq!(hex::encode(v.encode()), "a2617a0262616101");
    }

    #[test]
    fn s3_long_form_integer_refused() {
        assert!(matches!(decode_strict(&[0x18, 0x05]), Err(DecodeError::NonShortest { offset: 0 })));
        assert!(matches!(decode_strict(&[0x19, 0x00, 0xff]), Err(DecodeError::NonShortest { offset: 0 })));
    }

    #[test]
    fn s3_indefinite_length_refused() {
        assert!(matches!(decode_strict(&[0x9f, 0xff]), Err(DecodeError::IndefiniteLength { offset: 0 })));
        assert!(matches!(decode_strict(&[0x5f, 0xff]), Err(DecodeError::IndefiniteLength { offset: 0 })));
    }

    #[test]
    fn s3_duplicate_and_unsorted_keys_refused() {
        // {"a":1,"a":2}
        assert!(matches!(
            decode_strict(&[0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02]),
            Err(DecodeError::DuplicateKey { offset: 4 })
        ));
        // {"b":1,"a":2}
        assert!(matches!(
            decode_strict(&[0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02]),
            Err(DecodeError::UnsortedKeys { offset: 4 })
        ));
    }

    #[test]
    fn s3_trailing_bytes_refused() {
        assert!(matches!(decode_strict(&[0x01, 0x02]), Err(DecodeError::TrailingBytes { offset: 1 })));
    }

    #[test]
    fn s3_floats_bools_nulls_refused_in_signed_core() {
        for (bytes, what) in
            [(vec![0xf4], "bool"), (vec![0xf5], "bool"), (vec![0xf6], "null"), (vec![0xf9, 0x3c, 0x00], "float")]
        {
            match decode_strict(&bytes) {
                Err(DecodeError::Forbidden { what: w, .. }) => assert_eq!(w, what),
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn s3_huge_declared_length_is_refused_without_allocating() {
        assert!(matches!(
            decode_strict(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(DecodeError::LengthTooLarge { .. })
        ));
    }

    #[test]
    fn s3_float_width_check_agrees_with_an_exhaustive_half_search() {
        // Every half value widened to f32 is exact; its neighbours one f32 ulp
        // away are not (except where they are halves too).
        let halves: std::collections::HashSet<u32> =
            (0u16..0x7c00).chain(0x8000..0xfc00).map(|h| half_to_f32(h).to_bits()).collect();
        for h in (0u16..0x7c00).step_by(7) {
            let f = half_to_f32(h);
            assert!(f32_is_exact_half(f), "{h:#x}");
            let next = f32::from_bits(f.to_bits() + 1);
            assert_eq!(f32_is_exact_half(next), halves.contains(&next.to_bits()), "{h:#x}+1");
        }
        assert_eq!(shortest_float_width(0x3e00, 2), 2); // 1.5 as a half
        assert_eq!(shortest_float_width(0x3fc0_0000, 4), 2); // 1.5 as a single: non-preferred
        assert_eq!(shortest_float_width(0x3ff8_0000_0000_0000, 8), 2);
        assert_eq!(shortest_float_width(f64::to_bits(0.1), 8), 8);
    }

    #[test]
    fn s3_content_id_is_blake3_of_canonical_bytes_lowercase_hex() {
        let v = Value::Map(vec![(Value::text("a"), Value::Uint(1))]);
        let id = ContentId::of(&v);
        assert_eq!(id.to_hex(), hex::encode(blake3::hash(&v.encode()).as_bytes()));
        assert!(ContentId::parse(&id.to_hex().to_uppercase()).is_none());
        assert_eq!(ContentId::parse(&id.to_hex()), Some(id));
        // Every single-character change away from lowercase hex is refused,
        // and every lowercase hex digit in every position parses.
        let hexed = id.to_hex();
        for pos in [0, 1, 31, 62, 63] {
            for c in (0u8..=255).map(char::from) {
                let mut t: Vec<char> = hexed.chars().collect();
                t[pos] = c;
                let t: String = t.into_iter().collect();
                let ok = c.is_ascii_hexdigit() && !c.is_ascii_uppercase();
                assert_eq!(ContentId::parse(&t).is_some(), ok, "{c:?} at {pos}");
                if ok {
                    assert_eq!(ContentId::parse(&t).map(|p| p.to_hex()), Some(t));
                }
            }
        }
        assert!(ContentId::parse(&hexed[..63]).is_none());
        assert!(ContentId::parse(&format!("{hexed}0")).is_none());
        // The byte-level parser: every byte value (not only chars) in every
        // position; exactly the 16 lowercase hex digits pass.
        for pos in 0..64 {
            for b in 0u8..=255 {
                let mut t = hexed.clone().into_bytes();
                t[pos] = b;
                let ok = b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
                let got = ContentId::parse_bytes(&t);
                assert_eq!(got.is_some(), ok, "byte {b:#04x} at {pos}");
                if let Some(p) = got {
                    assert_eq!(p.to_hex().into_bytes(), t);
                }
            }
        }
    }
}
