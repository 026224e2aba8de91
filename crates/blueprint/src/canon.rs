//! RFC 8785 JSON Canonicalization Scheme (spec §4).
//!
//! Numbers use ECMA-262 `Number.prototype.toString` via the `ryu-js` crate;
//! members are ordered by UTF-16 code units; strings escape only what
//! §3.2.2.2 requires. Decoding is done by [`crate::json`]; this module only
//! writes, and [`decode_canonical`] is the canonical-first gate (§3).

use crate::error::{fail, Code, Result};
use crate::json::{self, Number, Value, MAX_SAFE_INTEGER};
use crate::limits::Limits;

/// ECMAScript `ToString(Number)` of a finite double (`-0` → `"0"`).
pub fn format_f64(f: f64) -> String {
    if f == 0.0 {
        return "0".to_string();
    }
    let mut buf = ryu_js::Buffer::new();
    buf.format_finite(f).to_string()
}

/// The canonical (JCS) bytes of `v`.
pub fn canonical_bytes(v: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    write_value(v, &mut out, "$")?;
    Ok(out)
}

/// The canonical bytes as a string (JCS output is always UTF-8).
pub fn canonical_string(v: &Value) -> Result<String> {
    let bytes = canonical_bytes(v)?;
    String::from_utf8(bytes)
        .map_err(|_| crate::error::Error::new(Code::InvalidEncoding, "$", "canonical output not UTF-8"))
}

/// Canonical-first decoding (§3): decode under `limits`, re-encode, and
/// refuse with `non_canonical_bytes` unless the input was already canonical.
pub fn decode_canonical(bytes: &[u8], limits: &Limits) -> Result<Value> {
    let v = json::decode(bytes, limits)?;
    let again = canonical_bytes(&v)?;
    if again != bytes {
        let at = again.iter().zip(bytes).position(|(a, b)| a != b).unwrap_or(again.len().min(bytes.len()));
        return fail(Code::NonCanonicalBytes, format!("byte {at}"), "input differs from its RFC 8785 canonical form");
    }
    Ok(v)
}

fn write_value(v: &Value, out: &mut Vec<u8>, path: &str) -> Result<()> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(Number::Int(i)) => {
            if i.abs() > MAX_SAFE_INTEGER {
                return fail(
                    Code::IntegerMagnitude,
                    path,
                    format!("integer {i} is outside ±(2^53−1) and has no exact ECMAScript form"),
                );
            }
            let mut b = itoa_buf(*i);
            out.append(&mut b);
        }
        Value::Number(Number::Float(f)) => {
            if !f.is_finite() {
                return fail(Code::InvalidNumber, path, "NaN and Infinity have no JSON form (RFC 8785 §3.2.2.3)");
            }
            out.extend_from_slice(format_f64(*f).as_bytes());
        }
        Value::String(s) => write_string(s, out),
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(x, out, path)?;
            }
            out.push(b']');
        }
        Value::Object(m) => {
            let pairs = m.pairs();
            let mut idx: Vec<usize> = (0..pairs.len()).collect();
            idx.sort_by(|&a, &b| utf16_cmp(&pairs[a].0, &pairs[b].0));
            out.push(b'{');
            for (n, &i) in idx.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_string(&pairs[i].0, out);
                out.push(b':');
                write_value(&pairs[i].1, out, path)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn itoa_buf(i: i64) -> Vec<u8> {
    i.to_string().into_bytes()
}

/// Orders two member names by their UTF-16 code units (RFC 8785 §3.2.3).
/// UTF-8 byte order equals code point order, which differs from UTF-16
/// order only when a supplementary character meets U+E000..U+FFFF, so the
/// byte comparison is used until the first differing character.
pub fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let common = ab.iter().zip(bb).position(|(x, y)| x != y);
    let Some(pos) = common else {
        return ab.len().cmp(&bb.len());
    };
    if ab[pos] < 0x80 && bb[pos] < 0x80 {
        return ab[pos].cmp(&bb[pos]);
    }
    // Back up to the start of the differing character and compare in UTF-16.
    let mut start = pos;
    while start > 0 && !a.is_char_boundary(start) {
        start -= 1;
    }
    a[start..].encode_utf16().cmp(b[start..].encode_utf16())
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match c {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            0x08 => Some(b"\\b"),
            0x0C => Some(b"\\f"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x00..=0x1F => None,
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        if let Some(e) = esc {
            out.extend_from_slice(e);
        } else {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(c >> 4)]);
            out.push(HEX[usize::from(c & 0xF)]);
        }
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}
