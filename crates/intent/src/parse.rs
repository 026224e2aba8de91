//! The decoder of outside bytes: strict RFC 8259 JSON text into [`Value`],
//! with `JSON.parse`'s data model (doubles, UTF-16 strings with lone
//! surrogates) and none of its leniency where leniency would let two readers
//! see two documents.
//!
//! Hand-written rather than `serde_json` because the canonical form must be
//! reproducible for *any* JSON input (issue 6), and `serde_json` cannot
//! represent a lone surrogate (`"\ud800"`), which `JSON.parse` accepts and
//! `JSON.stringify` writes back as `\ud800` (§4.3). Differences from
//! `JSON.parse`, each a refusal (docs/decisions.md, "intent"):
//! - a repeated key in one object (`JSON.parse` keeps the last silently);
//! - a number literal that overflows to infinity (§3: numbers are finite);
//! - input that is not UTF-8, or starts with a byte-order mark;
//! - nesting deeper than [`MAX_NESTING`] (bindings are bounded at 20 anyway).

use std::collections::HashSet;

use crate::error::IntentError;
use crate::value::{push_surrogate, JsString, Object, Value};

/// How deep the decoder follows arrays and objects. A vector file wraps a
/// binding two levels down and a binding may nest 20, so 128 is ample; the
/// bound keeps recursion (and a fuzzer) off the end of the stack.
pub const MAX_NESTING: usize = 128;

/// Decodes one JSON text.
pub fn parse(bytes: &[u8]) -> Result<Value, IntentError> {
    let text = std::str::from_utf8(bytes).map_err(|e| IntentError::NotUtf8 { offset: e.valid_up_to() })?;
    parse_str(text)
}

/// Decodes one JSON text that is already known to be UTF-8.
pub fn parse_str(text: &str) -> Result<Value, IntentError> {
    let mut p = Parser { b: text.as_bytes(), at: 0, depth: 0, path: Vec::new() };
    p.skip_ws();
    let v = p.value()?;
    p.skip_ws();
    if p.at != p.b.len() {
        return Err(p.syntax("unexpected data after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    at: usize,
    depth: usize,
    /// Keys and indices down to the current value, for error messages.
    path: Vec<Seg>,
}

enum Seg {
    /// The key's bytes in the input (between its quotes, escapes as written):
    /// recorded without allocating, rendered only for an error.
    Key(usize, usize),
    Index(usize),
}

impl Parser<'_> {
    fn syntax(&self, reason: &'static str) -> IntentError {
        IntentError::JsonSyntax { offset: self.at, reason }
    }

    fn path_string(&self) -> String {
        let mut s = String::from("$");
        for seg in &self.path {
            match seg {
                Seg::Key(from, to) => {
                    s.push('.');
                    s.push_str(&String::from_utf8_lossy(&self.b[*from..*to]));
                }
                Seg::Index(i) => {
                    s.push('[');
                    s.push_str(&i.to_string());
                    s.push(']');
                }
            }
        }
        s
    }

    fn skip_ws(&mut self) {
        while let Some(&c) = self.b.get(self.at) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    fn value(&mut self) -> Result<Value, IntentError> {
        match self.b.get(self.at) {
            None => Err(self.syntax("unexpected end of input")),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.syntax("expected a JSON value")),
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> Result<Value, IntentError> {
        if self.b[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(v)
        } else {
            Err(self.syntax("invalid literal"))
        }
    }

    fn enter(&mut self) -> Result<(), IntentError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(IntentError::NestingLimit { offset: self.at, limit: MAX_NESTING });
        }
        Ok(())
    }

    fn array(&mut self) -> Result<Value, IntentError> {
        self.enter()?;
        self.at += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.b.get(self.at) == Some(&b']') {
            self.at += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            self.path.push(Seg::Index(items.len()));
            let v = self.value()?;
            self.path.pop();
            items.push(v);
            self.skip_ws();
            match self.b.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    break;
                }
                _ => return Err(self.syntax("expected ',' or ']' in array")),
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn object(&mut self) -> Result<Value, IntentError> {
        self.enter()?;
        self.at += 1;
        let mut members: Vec<(JsString, Value)> = Vec::new();
        // Small objects (the usual case) are checked for a repeated key by a
        // scan; a set takes over once an object grows.
        let mut seen: Option<HashSet<JsString>> = None;
        self.skip_ws();
        if self.b.get(self.at) == Some(&b'}') {
            self.at += 1;
            self.depth -= 1;
            return Ok(Value::Object(Object::from_members_unchecked(members)));
        }
        loop {
            self.skip_ws();
            if self.b.get(self.at) != Some(&b'"') {
                return Err(self.syntax("expected a string key"));
            }
            let key_from = self.at + 1;
            let key = self.string()?;
            let key_to = self.at - 1;
            let repeated = if let Some(set) = &mut seen {
                !set.insert(key.clone())
            } else {
                let dup = members.iter().any(|(k, _)| *k == key);
                if members.len() >= 16 {
                    let mut set: HashSet<JsString> = members.iter().map(|(k, _)| k.clone()).collect();
                    set.insert(key.clone());
                    seen = Some(set);
                }
                dup
            };
            if repeated {
                return Err(IntentError::DuplicateKey { path: self.path_string(), key: key.to_string() });
            }
            self.skip_ws();
            if self.b.get(self.at) != Some(&b':') {
                return Err(self.syntax("expected ':' after an object key"));
            }
            self.at += 1;
            self.skip_ws();
            self.path.push(Seg::Key(key_from, key_to));
            let v = self.value()?;
            self.path.pop();
            members.push((key, v));
            self.skip_ws();
            match self.b.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    break;
                }
                _ => return Err(self.syntax("expected ',' or '}' in object")),
            }
        }
        self.depth -= 1;
        Ok(Value::Object(Object::from_members_unchecked(members)))
    }

    fn hex4(&mut self) -> Result<u16, IntentError> {
        let digits = self.b.get(self.at..self.at + 4).ok_or_else(|| self.syntax("truncated \\u escape"))?;
        let mut v: u16 = 0;
        for &d in digits {
            let n = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(self.syntax("invalid hex digit in \\u escape")),
            };
            v = (v << 4) | u16::from(n);
        }
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<JsString, IntentError> {
        self.at += 1; // opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            // Copy the run of bytes that need no attention.
            let start = self.at;
            while let Some(&c) = self.b.get(self.at) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.at += 1;
            }
            out.extend_from_slice(&self.b[start..self.at]);
            match self.b.get(self.at) {
                None => return Err(self.syntax("unterminated string")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(JsString::from_wtf8_unchecked(out));
                }
                Some(b'\\') => {
                    self.at += 1;
                    let esc = *self.b.get(self.at).ok_or_else(|| self.syntax("unterminated escape"))?;
                    self.at += 1;
                    match esc {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0C),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let unit = self.hex4()?;
                            self.unicode_escape(unit, &mut out)?;
                        }
                        _ => {
                            self.at -= 1;
                            return Err(self.syntax("invalid escape"));
                        }
                    }
                }
                Some(_) => return Err(self.syntax("unescaped control character in string")),
            }
        }
    }

    /// A `\uXXXX` escape: a high surrogate directly followed by an escaped
    /// low one is one astral character; any other surrogate stays lone, as
    /// in a JS string.
    fn unicode_escape(&mut self, unit: u16, out: &mut Vec<u8>) -> Result<(), IntentError> {
        if (0xD800..0xDC00).contains(&unit) && self.b[self.at..].starts_with(b"\\u") {
            let save = self.at;
            self.at += 2;
            let next = self.hex4()?;
            if (0xDC00..0xE000).contains(&next) {
                let cp = 0x1_0000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(next) - 0xDC00);
                let c = char::from_u32(cp).ok_or_else(|| self.syntax("invalid surrogate pair"))?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                return Ok(());
            }
            self.at = save; // the next escape is its own character
        }
        match char::from_u32(u32::from(unit)) {
            Some(c) => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            None => push_surrogate(out, unit),
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Value, IntentError> {
        let start = self.at;
        let b = self.b;
        let mut i = self.at;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while matches!(b.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            _ => {
                self.at = i;
                return Err(self.syntax("invalid number"));
            }
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !matches!(b.get(i), Some(b'0'..=b'9')) {
                self.at = i;
                return Err(self.syntax("expected a digit after the decimal point"));
            }
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !matches!(b.get(i), Some(b'0'..=b'9')) {
                self.at = i;
                return Err(self.syntax("expected a digit in the exponent"));
            }
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        self.at = i;
        // The lexeme is ASCII by construction; Rust's float parsing is
        // correctly rounded, as ECMAScript's StringToNumber is.
        let lexeme = std::str::from_utf8(&b[start..i]).map_err(|_| self.syntax("invalid number"))?;
        let n: f64 = lexeme.parse().map_err(|_| self.syntax("invalid number"))?;
        if !n.is_finite() {
            return Err(IntentError::InvalidNumber { path: self.path_string() });
        }
        Ok(Value::Number(n))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn rfc8259_rejects_trailing_commas_leading_zeros_and_bom() {
        for bad in ["[1,]", "{\"a\":1,}", "01", "\u{feff}{}", "1.", "-", "{\"a\" 1}", "[1 2]", "\"\t\"", "nul", "{}x"] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn s3_duplicate_key_is_refused_with_its_path() {
        let err = parse(br#"{"a":{"b":1,"b":2}}"#).unwrap_err();
        assert_eq!(err.code(), "JSON_DUPLICATE_KEY");
        assert!(err.to_string().contains("$.a"), "{err}");
    }

    #[test]
    fn s3_duplicate_key_in_large_object_is_refused() {
        let mut text = String::from("{");
        for i in 0..40 {
            std::fmt::Write::write_fmt(&mut text, format_args!("\"k{i}\":{i},")).unwrap();
        }
        text.push_str("\"k3\":0}");
        assert_eq!(parse(text.as_bytes()).unwrap_err().code(), "JSON_DUPLICATE_KEY");
    }

    #[test]
    fn s3_overflowing_number_is_refused_as_not_finite() {
        assert_eq!(parse(b"{\"x\":1e400}").unwrap_err().code(), "INVALID_NUMBER");
        assert_eq!(parse(b"[-1e309]").unwrap_err().code(), "INVALID_NUMBER");
    }

    #[test]
    fn s4_3_escaped_surrogate_pair_joins_and_lone_surrogate_stays() {
        let v = parse(br#"["\ud83d\ude80","\ud83d","\ude80\ud83d","\ud83dx"]"#).unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a[0].as_str(), Some("\u{1F680}"));
        assert_eq!(a[1].as_js_string().unwrap().utf16_units().collect::<Vec<_>>(), vec![0xD83D]);
        assert_eq!(a[2].as_js_string().unwrap().utf16_units().collect::<Vec<_>>(), vec![0xDE80, 0xD83D]);
        assert_eq!(a[3].as_js_string().unwrap().utf16_units().collect::<Vec<_>>(), vec![0xD83D, 0x78]);
    }

    #[test]
    fn nesting_beyond_the_decoder_bound_is_refused_not_overflowed() {
        let deep = "[".repeat(MAX_NESTING + 1) + &"]".repeat(MAX_NESTING + 1);
        assert_eq!(parse(deep.as_bytes()).unwrap_err().code(), "JSON_NESTING_LIMIT");
        let ok = "[".repeat(MAX_NESTING) + &"]".repeat(MAX_NESTING);
        assert!(parse(ok.as_bytes()).is_ok());
    }

    #[test]
    fn invalid_utf8_is_refused() {
        assert_eq!(parse(b"\"\xff\"").unwrap_err().code(), "JSON_NOT_UTF8");
    }
}
