//! §3 decoding: the strict and deterministic readers, refusing every input
//! that is not the one canonical encoding of its value, with the offset of
//! the first offending byte.

use std::cmp::Ordering;

use super::{Profile, Value, MAX_DEPTH};

/// Where and why a byte string is not canonical CBOR (§3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended inside an item.
    #[error("truncated CBOR at byte {offset}")]
    Truncated {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
    },
    /// Bytes follow the single top-level item.
    #[error("trailing bytes after the CBOR item at byte {offset}")]
    TrailingBytes {
        /// Byte offset of the first byte after the item.
        offset: usize,
    },
    /// An indefinite-length item (additional info 31).
    #[error("indefinite-length item at byte {offset}")]
    IndefiniteLength {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
    },
    /// An integer or length not in its shortest form.
    #[error("non-shortest integer or length encoding at byte {offset}")]
    NonShortest {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
    },
    /// Reserved additional information 28–30.
    #[error("reserved additional information at byte {offset}")]
    Reserved {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
    },
    /// Map keys out of canonical order.
    #[error("map keys out of canonical order at byte {offset}")]
    UnsortedKeys {
        /// Byte offset of the key out of order.
        offset: usize,
    },
    /// The same key twice in one map.
    #[error("duplicate map key at byte {offset}")]
    DuplicateKey {
        /// Byte offset of the second occurrence of the key.
        offset: usize,
    },
    /// A float, bool, null, undefined, simple value or tag in a signed core.
    #[error("{what} not allowed in a signed core at byte {offset}")]
    Forbidden {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
        /// The kind of item refused (`float`, `tag`, `negative integer`, …).
        what: &'static str,
    },
    /// A float not in its preferred (shortest exact) width.
    #[error("float not in its shortest exact width at byte {offset}")]
    NonShortestFloat {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
    },
    /// A map key that is not text in a JCP object.
    #[error("non-text map key at byte {offset}")]
    NonTextKey {
        /// Byte offset of the key.
        offset: usize,
    },
    /// Text that is not UTF-8.
    #[error("invalid UTF-8 in text string at byte {offset}")]
    InvalidUtf8 {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH} at byte {offset}")]
    TooDeep {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
    },
    /// A declared length larger than the input that remains.
    #[error("declared length {len} exceeds the remaining input at byte {offset}")]
    LengthTooLarge {
        /// Byte offset of the offending item's head in the input.
        offset: usize,
        /// The declared length.
        len: u64,
    },
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

/// One entry of a map read by [`map_spans_strict`]: its text key and the
/// canonical bytes of its value.
pub type MapSpan<'a> = (&'a str, &'a [u8]);

/// Checks `bytes` exactly as [`decode_strict`] does (the same checks in the
/// same order, so the same error for the same input) without building a
/// value tree, and, when the item is a map, returns its entries in order as
/// text keys and the canonical bytes of their values. `Ok(None)`: a
/// canonical item that is not a map.
///
/// For readers that go from bytes to an object without a tree (the wire
/// endpoint's request decoder): a value's bytes decode on their own to the
/// very value the whole decode holds under that key, since canonical
/// decoding depends on nothing around an item but its depth, and each
/// value has been checked here at its depth in the whole.
pub fn map_spans_strict(bytes: &[u8]) -> Result<Option<Vec<MapSpan<'_>>>, DecodeError> {
    let mut d = Decoder { bytes, pos: 0, profile: Profile::Strict };
    let ib = *bytes.first().ok_or(DecodeError::Truncated { offset: 0 })?;
    if ib >> 5 != 5 {
        d.skip(0)?;
        d.end()?;
        return Ok(None);
    }
    d.pos = 1;
    let n = d.length(ib & 0x1f, 0)?;
    let mut entries = Vec::with_capacity(n);
    let mut prev_key = None;
    for _ in 0..n {
        let ((), key_at, key_end) = d.key(&mut prev_key, |d| d.skip(1))?;
        let value_at = d.pos;
        d.skip(1)?;
        let key = text_of(&bytes[key_at..key_end]).ok_or(DecodeError::NonTextKey { offset: key_at })?;
        entries.push((key, &bytes[value_at..d.pos]));
    }
    d.end()?;
    Ok(Some(entries))
}

/// The text of one canonical text item filling `span`; `None` for any
/// other item (or bytes after it).
pub fn text_of(span: &[u8]) -> Option<&str> {
    std::str::from_utf8(string_of(span, 3)?).ok()
}

/// The bytes of one canonical byte-string item filling `span`.
pub fn bytes_of(span: &[u8]) -> Option<&[u8]> {
    string_of(span, 2)
}

/// The value of one canonical unsigned integer filling `span`.
pub fn uint_of(span: &[u8]) -> Option<u64> {
    let mut d = Decoder { bytes: span, pos: 0, profile: Profile::Strict };
    let ib = d.byte().ok()?;
    if ib >> 5 != 0 {
        return None;
    }
    let v = d.argument(ib & 0x1f, 0).ok()?;
    (d.pos == span.len()).then_some(v)
}

fn string_of(span: &[u8], major: u8) -> Option<&[u8]> {
    let mut d = Decoder { bytes: span, pos: 0, profile: Profile::Strict };
    let ib = d.byte().ok()?;
    if ib >> 5 != major {
        return None;
    }
    let n = d.length(ib & 0x1f, 0).ok()?;
    // `length` bounded n by what remains: the string is the rest of the span.
    (d.pos + n == span.len()).then(|| &span[d.pos..])
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
                let mut prev_key = None;
                for _ in 0..n {
                    let (key, ..) = self.key(&mut prev_key, |d| d.item(depth + 1))?;
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

    /// Reads one map key with `read` (which decodes or skips it), then
    /// checks it is text (strict profile) and sorts after the key before it
    /// (`prev`, updated): the order of checks of the tree decoder, shared by
    /// the skipping reader so both refuse an input with the same error.
    fn key<T>(
        &mut self,
        prev: &mut Option<(usize, usize)>,
        read: impl FnOnce(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<(T, usize, usize), DecodeError> {
        let key_at = self.pos;
        let key = read(self)?;
        let key_end = self.pos;
        if self.profile == Profile::Strict && self.bytes[key_at] >> 5 != 3 {
            return Err(DecodeError::NonTextKey { offset: key_at });
        }
        if let Some((ps, pe)) = *prev {
            match self.bytes[ps..pe].cmp(&self.bytes[key_at..key_end]) {
                Ordering::Less => {}
                Ordering::Equal => return Err(DecodeError::DuplicateKey { offset: key_at }),
                Ordering::Greater => return Err(DecodeError::UnsortedKeys { offset: key_at }),
            }
        }
        *prev = Some((key_at, key_end));
        Ok((key, key_at, key_end))
    }

    /// Checks one item as [`Decoder::item`] does, building nothing.
    fn skip(&mut self, depth: usize) -> Result<(), DecodeError> {
        let head_at = self.pos;
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep { offset: head_at });
        }
        let ib = self.byte()?;
        let ai = ib & 0x1f;
        match ib >> 5 {
            0 => {
                self.argument(ai, head_at)?;
            }
            1 => {
                self.argument(ai, head_at)?;
                if self.profile == Profile::Strict {
                    return Err(DecodeError::Forbidden { offset: head_at, what: "negative integer" });
                }
            }
            2 => {
                let n = self.length(ai, head_at)?;
                self.take(n)?;
            }
            3 => {
                let n = self.length(ai, head_at)?;
                let raw = self.take(n)?;
                std::str::from_utf8(raw).map_err(|_| DecodeError::InvalidUtf8 { offset: head_at })?;
            }
            4 => {
                let n = self.length(ai, head_at)?;
                for _ in 0..n {
                    self.skip(depth + 1)?;
                }
            }
            5 => {
                let n = self.length(ai, head_at)?;
                let mut prev_key = None;
                for _ in 0..n {
                    self.key(&mut prev_key, |d| d.skip(depth + 1))?;
                    self.skip(depth + 1)?;
                }
            }
            6 => {
                self.argument(ai, head_at)?;
                if self.profile == Profile::Strict {
                    return Err(DecodeError::Forbidden { offset: head_at, what: "tag" });
                }
                self.skip(depth + 1)?;
            }
            _ => {
                self.simple_or_float(ai, head_at)?;
            }
        }
        Ok(())
    }

    fn end(&self) -> Result<(), DecodeError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes { offset: self.pos })
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
pub(super) fn shortest_float_width(bits: u64, width: u8) -> u8 {
    let value: f64 = match width {
        2 => f64::from(half_to_f32(u16::try_from(bits).unwrap_or(0))),
        4 => f64::from(f32::from_bits(u32::try_from(bits).unwrap_or(0))),
        _ => f64::from_bits(bits),
    };
    if value.is_nan() {
        // Preferred NaN is the half-width quiet NaN 0x7e00.
        return if width == 2 && bits == 0x7e00 { 2 } else { 0 };
    }
    #[allow(clippy::cast_possible_truncation, reason = "the narrowing is the test: widened back, it must be exact")]
    let as32 = value as f32;
    if f64::from(as32).to_bits() != value.to_bits() {
        return 8;
    }
    if f32_is_exact_half(as32) {
        return 2;
    }
    4
}

pub(super) fn half_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let mant = u32::from(h & 0x3ff);
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // subnormal: value = m * 2^-24
            #[allow(clippy::cast_precision_loss, reason = "a 10-bit half mantissa is exact in an f32")]
            let v = (m as f32) * f32::from_bits(0x3380_0000); // 2^-24
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

pub(super) fn f32_is_exact_half(f: f32) -> bool {
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
        return bits.trailing_zeros() >= 13;
    }
    if exp < -14 {
        // A half subnormal is k * 2^-24: the significand must lose -(exp + 1) zero bits.
        let need = -(exp + 1);
        return need <= 24 && i64::from(significand.trailing_zeros()) >= need;
    }
    false
}
