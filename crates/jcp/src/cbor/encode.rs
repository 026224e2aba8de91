//! §3 encoding: every value written in its one canonical form (RFC 8949
//! §4.2.1: shortest heads, definite lengths, map keys sorted bytewise).

use std::cmp::Ordering;

use super::Value;

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
                // Every key encoded once, into one buffer (not one vector
                // per key), then the entries sorted by their keys' bytes.
                let mut keys = Vec::with_capacity(entries.len() * 12);
                let mut enc: Vec<(usize, usize, &Value)> = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let start = keys.len();
                    k.encode_into(&mut keys);
                    enc.push((start, keys.len(), v));
                }
                enc.sort_by(|a, b| keys[a.0..a.1].cmp(&keys[b.0..b.1]));
                write_head(out, 5, usize_u64(enc.len()));
                for (start, end, v) in enc {
                    out.extend_from_slice(&keys[start..end]);
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

    /// Compares two keys in RFC 7049 §3.9 "length-first" order: for keys of
    /// one major type (text keys, as [`write_map`] writes) the same as
    /// §4.2.1's bytewise order of their encodings.
    pub fn length_first_cmp(a: &[u8], b: &[u8]) -> Ordering {
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
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

/// One value of a map written straight from borrowed fields by
/// [`write_map`] (no value tree, no owned copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// An unsigned integer.
    Uint(u64),
    /// A text string.
    Text(&'a str),
    /// A byte string.
    Bytes(&'a [u8]),
    /// A content id, as the text of its lowercase hex (§3).
    Id(&'a super::ContentId),
    /// An array of content ids, each as the text of its hex.
    Ids(&'a [super::ContentId]),
    /// A `did:key`, as the text of its canonical spelling (§2).
    Did(&'a crate::identity::Did),
}

impl Item<'_> {
    /// The value this item writes (what [`write_map`] is held
    /// byte-identical to).
    pub fn to_value(&self) -> Value {
        match *self {
            Self::Uint(n) => Value::Uint(n),
            Self::Text(s) => Value::text(s),
            Self::Bytes(b) => Value::Bytes(b.to_vec()),
            Self::Id(c) => Value::text(c.to_hex()),
            Self::Ids(cs) => Value::Array(cs.iter().map(|c| Value::text(c.to_hex())).collect()),
            Self::Did(d) => Value::text(d.to_did_string()),
        }
    }

    /// Appends this item's canonical encoding to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Uint(n) => write_head(out, 0, n),
            Self::Text(s) => {
                write_head(out, 3, usize_u64(s.len()));
                out.extend_from_slice(s.as_bytes());
            }
            Self::Bytes(b) => {
                write_head(out, 2, usize_u64(b.len()));
                out.extend_from_slice(b);
            }
            Self::Id(c) => write_hex(out, c),
            Self::Ids(cs) => {
                write_head(out, 4, usize_u64(cs.len()));
                for c in cs {
                    write_hex(out, c);
                }
            }
            Self::Did(d) => {
                let s = d.to_did_string();
                Item::Text(&s).write(out);
            }
        }
    }
}

fn write_hex(out: &mut Vec<u8>, c: &super::ContentId) {
    // A text of 64 bytes: head 0x78 0x40.
    out.extend_from_slice(&[0x78, 0x40]);
    out.extend_from_slice(&c.hex_digits());
}

/// Appends the canonical encoding of the map of the present entries
/// (`None`s left out, as [`map`] does) to `out`, straight from borrowed
/// fields: the same bytes as `map(..).encode()` of the same entries. Entries
/// listed in canonical key order (text keys: shorter first, then bytewise)
/// are written as listed; any other listing is sorted first, so the order
/// a caller lists in is a matter of speed, never of the bytes.
pub fn write_map(out: &mut Vec<u8>, entries: &mut [(&str, Option<Item<'_>>)]) {
    // Text keys share a major type, so length-first order is canonical order.
    let key_order = |a: &str, b: &str| Value::length_first_cmp(a.as_bytes(), b.as_bytes());
    if !entries.windows(2).all(|w| key_order(w[0].0, w[1].0) == Ordering::Less) {
        entries.sort_by(|a, b| key_order(a.0, b.0));
    }
    write_head(out, 5, usize_u64(entries.iter().filter(|(_, v)| v.is_some()).count()));
    for (k, v) in entries.iter() {
        if let Some(v) = v {
            Item::Text(k).write(out);
            v.write(out);
        }
    }
}
