//! The bounded JSON decoder (spec §2, §3) and its value model.
//!
//! Hand-written rather than `serde_json` because the protocol needs things
//! `serde_json` does not give: every ceiling of the family enforced while
//! parsing (not after), duplicate members refused, pure-digit lexemes above
//! 2^53−1 tagged per the integer window rule, lone surrogates refused, and a
//! pinned failure precedence:
//!
//! input type (`invalid_type`) → `ceiling:bytes` → UTF-8 validity
//! (`invalid_encoding`) → the first failure in document order (syntax,
//! numbers, strings, duplicates, the other ceilings) → `trailing_bytes`.

use std::collections::HashSet;

use crate::error::{fail, Code, Error, Result};
use crate::limits::{Limit, Limits};

/// 2^53 − 1: the largest integer every ECMAScript number represents exactly.
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// A JSON number as the protocol sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// An integer inside the ±(2^53−1) window (pure-digit lexeme).
    Int(i64),
    /// A double: a fraction/exponent lexeme, or a pure-digit lexeme above the
    /// window whose ECMAScript serialization reproduces it exactly.
    Float(f64),
}

impl Number {
    /// The numeric value as a double.
    pub fn as_f64(self) -> f64 {
        match self {
            // Inside the window the conversion is exact.
            #[allow(clippy::cast_precision_loss)]
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

/// Object members in document order (unique names: the decoder refuses
/// duplicates).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Map(Vec<(String, Value)>);

impl Map {
    /// An empty map.
    pub fn new() -> Map {
        Map(Vec::new())
    }
    /// From pairs (caller guarantees unique names).
    pub fn from_pairs(pairs: Vec<(String, Value)>) -> Map {
        Map(pairs)
    }
    /// Member by name.
    pub fn get(&self, k: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v)
    }
    /// Whether a member exists.
    pub fn contains_key(&self, k: &str) -> bool {
        self.get(k).is_some()
    }
    /// Members in document order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
    /// Member names in document order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }
    /// Number of members.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Inserts or replaces.
    pub fn insert(&mut self, k: impl Into<String>, v: Value) {
        let k = k.into();
        if let Some(slot) = self.0.iter_mut().find(|(n, _)| *n == k) {
            slot.1 = v;
        } else {
            self.0.push((k, v));
        }
    }
    /// Removes a member, returning it.
    pub fn remove(&mut self, k: &str) -> Option<Value> {
        let i = self.0.iter().position(|(n, _)| n == k)?;
        Some(self.0.remove(i).1)
    }
    pub(crate) fn pairs(&self) -> &[(String, Value)] {
        &self.0
    }
}

/// A decoded JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, with its integer or float tag (§3 integer window).
    Number(Number),
    /// A string (valid UTF-8; a lone surrogate escape is refused).
    String(String),
    /// An array, in order.
    Array(Vec<Value>),
    /// An object: members in document order, names unique (I-JSON).
    Object(Map),
}

impl Value {
    /// The JSON type name, for error details.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(Number::Int(_)) => "integer",
            Value::Number(Number::Float(_)) => "float",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    /// An integer-tagged number (never a float-tagged one, §3 integer window).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i),
            _ => None,
        }
    }
    /// A string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// A boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// An object.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
    /// An array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// Object member by name (None for non-objects).
    pub fn get(&self, k: &str) -> Option<&Value> {
        self.as_object().and_then(|m| m.get(k))
    }
    /// A non-negative integer value.
    pub fn from_u64(n: u64) -> Value {
        Value::Number(Number::Int(i64::try_from(n).unwrap_or(i64::MAX)))
    }
    /// Builds a string value.
    pub fn str(s: impl Into<String>) -> Value {
        Value::String(s.into())
    }

    /// Semantic equality: numbers compare by value across tags.
    pub fn same(&self, other: &Value) -> bool {
        match (self, other) {
            // Exact numeric identity is intended: both sides are IEEE doubles.
            #[allow(clippy::float_cmp)]
            (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
            (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y)),
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v.same(w)))
            }
            (a, b) => a == b,
        }
    }

    /// Converts from a `serde_json::Value` (numbers via their shortest
    /// round-trip text, then the integer window rule).
    pub fn from_serde(v: &serde_json::Value) -> Result<Value> {
        Ok(match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                let text = n.to_string();
                number_from_lexeme(&text, &|| "$".to_string())?
            }
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => Value::Array(a.iter().map(Value::from_serde).collect::<Result<_>>()?),
            serde_json::Value::Object(o) => Value::Object(Map(o
                .iter()
                .map(|(k, v)| Ok((k.clone(), Value::from_serde(v)?)))
                .collect::<Result<_>>()?)),
        })
    }

    /// Converts into a `serde_json::Value` (for display and host APIs).
    pub fn to_serde(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(Number::Int(i)) => serde_json::Value::from(*i),
            Value::Number(Number::Float(f)) => {
                serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, serde_json::Value::Number)
            }
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::Array(a) => serde_json::Value::Array(a.iter().map(Value::to_serde).collect()),
            Value::Object(m) => serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_serde())).collect()),
        }
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(Number::Int(i)) => s.serialize_i64(*i),
            Value::Number(Number::Float(f)) => s.serialize_f64(*f),
            Value::String(x) => s.serialize_str(x),
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Object(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m.iter() {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Decodes `bytes` under `limits` (see the module doc for the precedence).
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Value> {
    if bytes.len() as u64 > limits.bytes {
        return Err(Error::ceiling(
            Limit::Bytes,
            "$",
            format!("{} bytes exceed the limit of {}", bytes.len(), limits.bytes),
        ));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return fail(Code::InvalidEncoding, format!("byte {}", e.valid_up_to()), "input is not valid UTF-8"),
    };
    let mut p = Parser { s: text.as_bytes(), i: 0, limits, nodes: 0 };
    p.ws();
    let v = p.value(0, &Loc::Root)?;
    p.ws();
    if p.i != p.s.len() {
        return fail(Code::TrailingBytes, format!("byte {}", p.i), "bytes follow the top-level value");
    }
    Ok(v)
}

/// Decodes a dynamically typed input (a host boundary that may hand over
/// anything): only a string of bytes is decodable, anything else is
/// `invalid_type` (the first step of the precedence).
pub fn decode_dynamic(input: &Value, limits: &Limits) -> Result<Value> {
    match input {
        Value::String(s) => decode(s.as_bytes(), limits),
        other => fail(Code::InvalidType, "$", format!("expected bytes, got {}", other.kind())),
    }
}

/// A JSON pointer built lazily: rendered only when an error names it.
#[derive(Clone, Copy)]
enum Loc<'a> {
    Root,
    Key(&'a Loc<'a>, &'a str),
    Idx(&'a Loc<'a>, usize),
}

impl Loc<'_> {
    fn render(&self) -> String {
        match self {
            Loc::Root => "$".to_string(),
            Loc::Key(p, k) => format!("{}/{}", p.render(), escape_pointer(k)),
            Loc::Idx(p, i) => format!("{}/{i}", p.render()),
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    limits: &'a Limits,
    nodes: u64,
}

fn at(i: usize) -> String {
    format!("byte {i}")
}

impl Parser<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, b: u8) -> Result<()> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            fail(Code::InvalidSyntax, at(self.i), format!("expected '{}'", b as char))
        }
    }

    fn node(&mut self, path: &Loc<'_>) -> Result<()> {
        self.nodes += 1;
        if self.nodes > self.limits.nodes {
            return Err(Error::ceiling(Limit::Nodes, path.render(), format!("more than {} values", self.limits.nodes)));
        }
        Ok(())
    }

    fn value(&mut self, depth: u64, path: &Loc<'_>) -> Result<Value> {
        self.node(path)?;
        match self.peek() {
            None => fail(Code::InvalidSyntax, at(self.i), "unexpected end of input"),
            Some(b'{') => self.object(depth + 1, path),
            Some(b'[') => self.array(depth + 1, path),
            Some(b'"') => {
                let s = self.string(path)?;
                if s.len() as u64 > self.limits.string {
                    return Err(Error::ceiling(
                        Limit::String,
                        path.render(),
                        format!("string of {} bytes exceeds {}", s.len(), self.limits.string),
                    ));
                }
                Ok(Value::String(s))
            }
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(path),
            Some(c) => fail(Code::InvalidSyntax, at(self.i), format!("unexpected character {:?}", c as char)),
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> Result<Value> {
        if self.s.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            Ok(v)
        } else {
            fail(Code::InvalidSyntax, at(self.i), "invalid literal")
        }
    }

    fn enter(&self, depth: u64, path: &Loc<'_>) -> Result<()> {
        if depth > self.limits.depth {
            return Err(Error::ceiling(
                Limit::Depth,
                path.render(),
                format!("nesting deeper than {}", self.limits.depth),
            ));
        }
        Ok(())
    }

    fn object(&mut self, depth: u64, path: &Loc<'_>) -> Result<Value> {
        self.enter(depth, path)?;
        self.i += 1;
        let mut pairs: Vec<(String, Value)> = Vec::new();
        // Linear scan while small; a set of names once the object grows.
        let mut seen: Option<HashSet<String>> = None;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Value::Object(Map(pairs)));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return fail(Code::InvalidSyntax, at(self.i), "expected a member name");
            }
            let key = self.string(path)?;
            let child = Loc::Key(path, &key);
            if key.len() as u64 > self.limits.key {
                return Err(Error::ceiling(
                    Limit::Key,
                    child.render(),
                    format!("member name of {} bytes exceeds {}", key.len(), self.limits.key),
                ));
            }
            if pairs.len() as u64 >= self.limits.members {
                return Err(Error::ceiling(
                    Limit::Members,
                    path.render(),
                    format!("more than {} members", self.limits.members),
                ));
            }
            let repeated = match &mut seen {
                Some(set) => !set.insert(key.clone()),
                None if pairs.len() >= 16 => {
                    let mut set: HashSet<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
                    let r = !set.insert(key.clone());
                    seen = Some(set);
                    r
                }
                None => pairs.iter().any(|(k, _)| *k == key),
            };
            if repeated {
                return fail(Code::DuplicateMember, child.render(), "member name repeats (I-JSON)");
            }
            self.ws();
            self.expect(b':')?;
            self.ws();
            let v = self.value(depth, &child)?;
            pairs.push((key, v));
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(Map(pairs)));
                }
                _ => return fail(Code::InvalidSyntax, at(self.i), "expected ',' or '}'"),
            }
        }
    }

    fn array(&mut self, depth: u64, path: &Loc<'_>) -> Result<Value> {
        self.enter(depth, path)?;
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            if items.len() as u64 >= self.limits.items {
                return Err(Error::ceiling(
                    Limit::Items,
                    path.render(),
                    format!("more than {} items", self.limits.items),
                ));
            }
            let child = Loc::Idx(path, items.len());
            let v = self.value(depth, &child)?;
            items.push(v);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                _ => return fail(Code::InvalidSyntax, at(self.i), "expected ',' or ']'"),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let Some(h) = self.s.get(self.i..self.i + 4) else {
            return fail(Code::InvalidSyntax, at(self.i), "truncated \\u escape");
        };
        let mut v = 0u32;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return fail(Code::InvalidSyntax, at(self.i), "invalid \\u escape"),
            };
            v = v * 16 + u32::from(d);
        }
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self, path: &Loc<'_>) -> Result<String> {
        let start = self.i;
        self.i += 1; // opening quote
        let mut out = String::new();
        let mut run = self.i;
        loop {
            let Some(c) = self.peek() else {
                return fail(Code::InvalidSyntax, at(start), "unterminated string");
            };
            match c {
                b'"' => {
                    out.push_str(self.slice(run, self.i));
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(self.slice(run, self.i));
                    self.i += 1;
                    let Some(e) = self.peek() else {
                        return fail(Code::InvalidSyntax, at(self.i), "unterminated escape");
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                                    return fail(Code::InvalidEncoding, path.render(), "lone high surrogate escape");
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return fail(
                                        Code::InvalidEncoding,
                                        path.render(),
                                        "high surrogate not followed by a low surrogate",
                                    );
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return fail(Code::InvalidEncoding, path.render(), "lone low surrogate escape");
                            } else {
                                hi
                            };
                            match char::from_u32(cp) {
                                Some(ch) => out.push(ch),
                                None => {
                                    return fail(
                                        Code::InvalidEncoding,
                                        path.render(),
                                        "escape is not a Unicode scalar value",
                                    )
                                }
                            }
                        }
                        _ => return fail(Code::InvalidSyntax, at(self.i - 1), "invalid escape"),
                    }
                    run = self.i;
                }
                0x00..=0x1F => return fail(Code::InvalidSyntax, at(self.i), "raw control character in string"),
                _ => self.i += 1,
            }
        }
    }

    fn slice(&self, a: usize, b: usize) -> &str {
        // The input was validated as UTF-8 and a/b sit on ASCII boundaries.
        std::str::from_utf8(&self.s[a..b]).unwrap_or_default()
    }

    fn number(&mut self, path: &Loc<'_>) -> Result<Value> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let digits = |p: &mut Self| {
            let s = p.i;
            while let Some(b'0'..=b'9') = p.peek() {
                p.i += 1;
            }
            p.i - s
        };
        let int_start = self.i;
        let n = digits(self);
        if n == 0 {
            return fail(Code::InvalidNumber, at(start), "number without digits");
        }
        if n > 1 && self.s[int_start] == b'0' {
            return fail(Code::InvalidNumber, at(start), "leading zero");
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return fail(Code::InvalidNumber, at(start), "fraction without digits");
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if digits(self) == 0 {
                return fail(Code::InvalidNumber, at(start), "exponent without digits");
            }
        }
        let lexeme = self.slice(start, self.i);
        if lexeme.len() as u64 > self.limits.number_lexeme {
            return Err(Error::ceiling(
                Limit::NumberLexeme,
                path.render(),
                format!("number lexeme of {} bytes exceeds {}", lexeme.len(), self.limits.number_lexeme),
            ));
        }
        number_from_lexeme(lexeme, &|| path.render())
    }
}

/// Applies the integer window rule (§3) to a syntactically valid lexeme.
pub(crate) fn number_from_lexeme(lexeme: &str, path: &dyn Fn() -> String) -> Result<Value> {
    let pure_digits = !lexeme.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if pure_digits {
        let mag = lexeme.trim_start_matches('-');
        if mag.len() <= 16 {
            if let Ok(i) = lexeme.parse::<i64>() {
                if i.abs() <= MAX_SAFE_INTEGER {
                    return Ok(Value::Number(Number::Int(i)));
                }
            }
        }
        // Above the window: a float iff its ECMAScript form is the lexeme.
        let f: f64 =
            lexeme.parse().map_err(|_| Error::new(Code::InvalidNumber, path(), format!("{lexeme} is not a number")))?;
        if f.is_finite() && crate::canon::format_f64(f) == lexeme {
            return Ok(Value::Number(Number::Float(f)));
        }
        return fail(
            Code::NumberNotDoubleExpressible,
            path(),
            format!("{lexeme} is above ±(2^53−1) and no double serializes to it exactly"),
        );
    }
    let f: f64 =
        lexeme.parse().map_err(|_| Error::new(Code::InvalidNumber, path(), format!("{lexeme} is not a number")))?;
    if !f.is_finite() {
        return fail(Code::NumberNotDoubleExpressible, path(), format!("{lexeme} overflows a double"));
    }
    Ok(Value::Number(Number::Float(f)))
}

/// RFC 6901 escaping of one pointer segment.
pub fn escape_pointer(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}
