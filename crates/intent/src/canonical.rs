//! §4 canonical form and §5 intent hash.
//!
//! The canonical form is, byte for byte, what the reference algorithm
//! produces: `JSON.stringify` of the value after every object's keys were
//! sorted with the default `Array.prototype.sort` and re-inserted into a
//! fresh object. Re-inserting has one consequence the prose of §4 does not
//! spell out and the vectors under `conformance/intent/vectors/` pin: an
//! ECMAScript object enumerates *array-index* keys (`"0"`, `"7"`,
//! `"4294967294"`: canonical decimal integers below 2^32 - 1) first, in
//! ascending numeric order, and only then its other keys in insertion order.
//! So `{"b":1,"10":2,"9":3}` canonicalizes to `{"9":3,"10":2,"b":1}`, not
//! to the UTF-16 order `{"10":2,"9":3,"b":1}`.
//!
//! The §3 bounds and refusals are checked in the same pass, before a byte
//! is hashed: depth, array length, entry count, unsafe keys, finite numbers,
//! and the canonical length.

use std::cmp::Ordering;

use sha2::{Digest, Sha256};

use crate::error::IntentError;
use crate::value::{JsString, Object, Value};

/// §3 bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Canonical bytes, at most (100 KiB).
    pub max_bytes: usize,
    /// Depth of any value, the root being at depth 0.
    pub max_depth: usize,
    /// Array elements plus object properties, counted over the whole value.
    pub max_entries: usize,
    /// Elements of any one array.
    pub max_array_len: usize,
}

/// The bounds of §3: 100 KiB, depth 20, 5,000 entries, 1,000 elements.
pub const LIMITS: Limits = Limits { max_bytes: 100 * 1024, max_depth: 20, max_entries: 5_000, max_array_len: 1_000 };

impl Default for Limits {
    fn default() -> Self {
        LIMITS
    }
}

/// §3: keys refused at every depth.
pub const FORBIDDEN_KEYS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// A canonicalized value and its intent hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Canonical {
    /// The canonical form (§4); always well-formed UTF-8.
    pub canonical_json: String,
    /// `sha256:` and the lowercase hex SHA-256 of the canonical bytes (§5).
    pub intent_hash: String,
}

/// The canonical form of `value` under the §3 bounds.
pub fn canonical_json(value: &Value) -> Result<String, IntentError> {
    canonical_json_with(value, &LIMITS)
}

/// The canonical form under the given bounds.
pub fn canonical_json_with(value: &Value, limits: &Limits) -> Result<String, IntentError> {
    let mut w = Writer { out: Vec::with_capacity(1024), entries: 0, limits, num: ryu_js::Buffer::new() };
    w.value(value, 0, &Path::Root)?;
    if w.out.len() > limits.max_bytes {
        return Err(IntentError::TooLarge { limit: limits.max_bytes });
    }
    // Every byte written is UTF-8: ASCII punctuation, escapes, number text,
    // and string content copied from WTF-8 whose surrogates were escaped.
    String::from_utf8(w.out).map_err(|_| IntentError::NotIJson { path: "$".into() })
}

/// §5: `sha256:` + lowercase hex of SHA-256 over the bytes.
pub fn intent_hash(canonical: &[u8]) -> String {
    let digest = Sha256::digest(canonical);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    s.push_str(&hex::encode(digest));
    s
}

/// Canonical form and hash of any JSON value under the §3 bounds (a
/// canonicalization case: no binding rules apply).
pub fn canonicalize(value: &Value) -> Result<Canonical, IntentError> {
    let canonical_json = canonical_json(value)?;
    let intent_hash = intent_hash(canonical_json.as_bytes());
    Ok(Canonical { canonical_json, intent_hash })
}

/// A path to a value, built on the stack as the walk descends and turned
/// into text only for an error.
pub(crate) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a JsString),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    pub(crate) fn render(&self) -> String {
        match self {
            Path::Root => "$".to_owned(),
            Path::Key(parent, k) => {
                let mut s = parent.render();
                s.push('.');
                match k.as_str() {
                    Some(t) => s.push_str(t),
                    None => s.push_str(&k.to_string()),
                }
                s
            }
            Path::Index(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }
}

struct Writer<'l> {
    out: Vec<u8>,
    entries: usize,
    limits: &'l Limits,
    num: ryu_js::Buffer,
}

impl Writer<'_> {
    fn count(&mut self, at: &Path<'_>) -> Result<(), IntentError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(IntentError::TooComplex { path: at.render(), limit: self.limits.max_entries });
        }
        Ok(())
    }

    fn value(&mut self, v: &Value, depth: usize, at: &Path<'_>) -> Result<(), IntentError> {
        if depth > self.limits.max_depth {
            return Err(IntentError::TooDeep { path: at.render(), limit: self.limits.max_depth });
        }
        // Stop early rather than build an unbounded string; the final check
        // in `canonical_json_with` is the one that decides.
        if self.out.len() > self.limits.max_bytes {
            return Err(IntentError::TooLarge { limit: self.limits.max_bytes });
        }
        match v {
            Value::Null => self.out.extend_from_slice(b"null"),
            Value::Bool(true) => self.out.extend_from_slice(b"true"),
            Value::Bool(false) => self.out.extend_from_slice(b"false"),
            Value::Number(n) => {
                if !n.is_finite() {
                    return Err(IntentError::InvalidNumber { path: at.render() });
                }
                write_number(&mut self.out, &mut self.num, *n);
            }
            Value::String(s) => write_json_string(&mut self.out, s.as_wtf8()),
            Value::Array(items) => {
                if items.len() > self.limits.max_array_len {
                    return Err(IntentError::ArrayTooLarge {
                        path: at.render(),
                        len: items.len(),
                        limit: self.limits.max_array_len,
                    });
                }
                self.out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    let here = Path::Index(at, i);
                    self.count(&here)?;
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.value(item, depth + 1, &here)?;
                }
                self.out.push(b']');
            }
            Value::Object(obj) => self.object(obj, depth, at)?,
        }
        Ok(())
    }

    fn object(&mut self, obj: &Object, depth: usize, at: &Path<'_>) -> Result<(), IntentError> {
        let members = obj.members();
        for (k, _) in members {
            if FORBIDDEN_KEYS.iter().any(|f| k == f) {
                return Err(IntentError::UnsafeKey { path: at.render(), key: k.to_string() });
            }
        }
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_unstable_by(|&a, &b| key_order(&members[a].0, &members[b].0));
        self.out.push(b'{');
        for (n, &i) in order.iter().enumerate() {
            let (k, v) = &members[i];
            let here = Path::Key(at, k);
            self.count(&here)?;
            if n > 0 {
                self.out.push(b',');
            }
            write_json_string(&mut self.out, k.as_wtf8());
            self.out.push(b':');
            self.value(v, depth + 1, &here)?;
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// The order in which a sorted-then-reinserted ECMAScript object enumerates
/// its keys: array indices numerically first, then the rest by UTF-16 code
/// unit (keys are unique, so this is a total order over one object).
pub(crate) fn key_order(a: &JsString, b: &JsString) -> Ordering {
    match (array_index(a.as_wtf8()), array_index(b.as_wtf8())) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp_utf16(b),
    }
}

/// ECMAScript "array index": the canonical decimal form of an integer in
/// 0..=2^32 - 2 (no sign, no leading zero except "0" itself).
pub(crate) fn array_index(key: &[u8]) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || !key.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if key.len() > 1 && key[0] == b'0' {
        return None;
    }
    let n = key.iter().fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
    if n <= 4_294_967_294 {
        u32::try_from(n).ok()
    } else {
        None
    }
}

/// ECMAScript `Number::toString` (which `JSON.stringify` uses for finite
/// numbers): shortest round-trip digits, exponent form at or above 1e21 and
/// below 1e-6, and `-0` printed as `0`. `ryu-js` implements exactly that
/// algorithm; zero is special-cased so the sign never leaks.
pub(crate) fn write_number(out: &mut Vec<u8>, buf: &mut ryu_js::Buffer, n: f64) {
    if n == 0.0 {
        out.push(b'0');
    } else {
        out.extend_from_slice(buf.format_finite(n).as_bytes());
    }
}

/// Formats one finite number as `JSON.stringify` does.
pub fn format_number(n: f64) -> Option<String> {
    if !n.is_finite() {
        return None;
    }
    let mut out = Vec::new();
    write_number(&mut out, &mut ryu_js::Buffer::new(), n);
    String::from_utf8(out).ok()
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// ECMAScript `QuoteJSONString` over WTF-8 bytes: `"` and `\` escaped,
/// U+0008/09/0A/0C/0D as `\b \t \n \f \r`, other controls below U+0020 as
/// `\u00xx`, a lone surrogate as `\udxxx` (lowercase hex, as V8 writes it),
/// every other character (astral, U+007F, U+2028 included) as itself.
pub(crate) fn write_json_string(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut run = 0;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let needs = c < 0x20 || c == b'"' || c == b'\\' || (c == 0xED && s.get(i + 1).is_some_and(|&n| n >= 0xA0));
        if !needs {
            i += 1;
            continue;
        }
        out.extend_from_slice(&s[run..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x0D => out.extend_from_slice(b"\\r"),
            0xED => {
                // A lone surrogate in WTF-8: ED A0..BF xx.
                let unit =
                    0xD000u32 | (u32::from(s[i + 1] & 0x3F) << 6) | u32::from(s.get(i + 2).map_or(0, |b| b & 0x3F));
                out.extend_from_slice(b"\\u");
                for shift in [12u32, 8, 4, 0] {
                    out.push(HEX[((unit >> shift) & 0xF) as usize]);
                }
                i += 3;
                run = i;
                continue;
            }
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 0xF)]);
            }
        }
        i += 1;
        run = i;
    }
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn canon(text: &str) -> String {
        canonical_json(&parse(text.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn s4_4_numbers_print_as_ecmascript_number_to_string() {
        assert_eq!(
            canon("[-0,1.5,1e21,1e-7,0.000001,123456789012345680000,5e-324,1.7976931348623157e308,100,1E2,-1.5e-10]"),
            "[0,1.5,1e+21,1e-7,0.000001,123456789012345680000,5e-324,1.7976931348623157e+308,100,100,-1.5e-10]"
        );
    }

    #[test]
    fn s4_1_array_index_keys_enumerate_first_in_numeric_order() {
        assert_eq!(canon(r#"{"b":1,"10":2,"9":3,"a":4}"#), r#"{"9":3,"10":2,"a":4,"b":1}"#);
        assert_eq!(
            canon(r#"{"4294967294":1,"4294967295":2,"1":3,"01":4,"-1":5,"1.5":6}"#),
            r#"{"1":3,"4294967294":1,"-1":5,"01":4,"1.5":6,"4294967295":2}"#
        );
    }

    #[test]
    fn s4_3_escaping_matches_json_stringify() {
        assert_eq!(
            canon(r#"{"a":"\ud800x","b":"\u001f\u007f\u2028\/\b\f\n\r\t\"\\"}"#),
            "{\"a\":\"\\ud800x\",\"b\":\"\\u001f\u{7f}\u{2028}/\\b\\f\\n\\r\\t\\\"\\\\\"}"
        );
    }

    #[test]
    fn s3_unsafe_key_refused_at_any_depth() {
        for key in FORBIDDEN_KEYS {
            let text = format!(r#"{{"a":[{{"{key}":1}}]}}"#);
            assert_eq!(canonical_json(&parse(text.as_bytes()).unwrap()).unwrap_err().code(), "UNSAFE_INTENT_KEY");
        }
    }

    #[test]
    fn s3_depth_bound_counts_every_value_from_root_zero() {
        // 20 nested arrays around a scalar: the scalar is at depth 20.
        let ok = "[".repeat(20) + "1" + &"]".repeat(20);
        assert!(canonical_json(&parse(ok.as_bytes()).unwrap()).is_ok());
        let deep = "[".repeat(21) + "1" + &"]".repeat(21);
        assert_eq!(canonical_json(&parse(deep.as_bytes()).unwrap()).unwrap_err().code(), "INTENT_TOO_DEEP");
    }

    #[test]
    fn s3_non_finite_number_refused() {
        assert_eq!(canonical_json(&Value::Number(f64::NAN)).unwrap_err().code(), "INVALID_NUMBER");
        assert_eq!(canonical_json(&Value::Number(f64::INFINITY)).unwrap_err().code(), "INVALID_NUMBER");
    }
}
