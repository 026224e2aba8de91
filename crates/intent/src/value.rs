//! The JSON data model as ECMAScript's `JSON.parse` produces it, because the
//! canonical form is defined over that model (§4): every number is an IEEE
//! 754 double, and a string is a sequence of UTF-16 code units that may hold
//! a lone surrogate (`"\ud800"` is valid JSON text and a valid JS string).
//!
//! Rust's `String` cannot hold a lone surrogate, so [`JsString`] stores text
//! as WTF-8: plain UTF-8 for well-formed text, with a lone surrogate written
//! as its generalized three-byte UTF-8 form (`ED A0..BF xx`). Well-formed
//! text, the overwhelming case, is byte-identical to its UTF-8.

use std::cmp::Ordering;
use std::fmt;

/// A JSON string with ECMAScript semantics (UTF-16 code units, lone
/// surrogates allowed), stored as WTF-8.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JsString(Vec<u8>);

impl JsString {
    /// Well-formed text.
    pub fn new(text: &str) -> Self {
        Self(text.as_bytes().to_vec())
    }

    /// Builds a string from UTF-16 code units, keeping lone surrogates.
    pub fn from_utf16(units: &[u16]) -> Self {
        let mut out = Vec::with_capacity(units.len());
        for r in char::decode_utf16(units.iter().copied()) {
            match r {
                Ok(c) => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                Err(e) => push_surrogate(&mut out, e.unpaired_surrogate()),
            }
        }
        Self(out)
    }

    pub(crate) fn from_wtf8_unchecked(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The WTF-8 bytes (UTF-8 when [`Self::is_well_formed`]).
    pub fn as_wtf8(&self) -> &[u8] {
        &self.0
    }

    /// The text, when it holds no lone surrogate.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// No lone surrogate (well-formed UTF-16; I-JSON).
    pub fn is_well_formed(&self) -> bool {
        self.as_str().is_some()
    }

    /// The UTF-16 code units, as ECMAScript sees the string.
    pub fn utf16_units(&self) -> Utf16Units<'_> {
        Utf16Units { bytes: &self.0, pending: None }
    }

    /// `String.prototype.length`: the number of UTF-16 code units.
    pub fn utf16_len(&self) -> usize {
        self.utf16_units().count()
    }

    /// Compares two strings by UTF-16 code unit, as ECMAScript's default
    /// `Array.prototype.sort` does (§4.1).
    pub fn cmp_utf16(&self, other: &Self) -> Ordering {
        cmp_utf16(&self.0, &other.0)
    }
}

impl From<&str> for JsString {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<String> for JsString {
    fn from(text: String) -> Self {
        Self(text.into_bytes())
    }
}

impl PartialEq<str> for JsString {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for JsString {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

/// Shows the string as a JSON string literal (lone surrogates as `\uXXXX`),
/// so an error message never carries raw control characters.
impl fmt::Display for JsString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::with_capacity(self.0.len() + 2);
        crate::canonical::write_json_string(&mut out, &self.0);
        f.write_str(&String::from_utf8_lossy(&out))
    }
}

impl fmt::Debug for JsString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

pub(crate) fn push_surrogate(out: &mut Vec<u8>, unit: u16) {
    // Generalized UTF-8 of a code point in D800..=DFFF: 1110_1101 10xx_xxxx 10xx_xxxx.
    let [hi, lo] = unit.to_be_bytes();
    out.push(0xE0 | (hi >> 4));
    out.push(0x80 | ((hi & 0x0F) << 2) | (lo >> 6));
    out.push(0x80 | (lo & 0x3F));
}

/// Iterator over the UTF-16 code units of WTF-8 bytes.
#[derive(Debug, Clone)]
pub struct Utf16Units<'a> {
    bytes: &'a [u8],
    pending: Option<u16>,
}

impl Iterator for Utf16Units<'_> {
    type Item = u16;

    fn next(&mut self) -> Option<u16> {
        if let Some(low) = self.pending.take() {
            return Some(low);
        }
        let (cp, len) = decode_wtf8(self.bytes)?;
        self.bytes = &self.bytes[len..];
        if let Ok(unit) = u16::try_from(cp) {
            return Some(unit);
        }
        // A supplementary code point: its surrogate pair. Each half is
        // masked to 10 bits, so the casts cannot truncate.
        let v = cp - 0x1_0000;
        #[allow(clippy::cast_possible_truncation)]
        let (high, low) = (((v >> 10) & 0x3FF) as u16, (v & 0x3FF) as u16);
        self.pending = Some(0xDC00 | low);
        Some(0xD800 | high)
    }
}

/// Decodes one code point (surrogates included) from the front of WTF-8
/// bytes. The bytes come from this crate's own decoder or from `&str`, so
/// they are well-formed WTF-8; a truncated sequence ends the iteration.
fn decode_wtf8(b: &[u8]) -> Option<(u32, usize)> {
    let lead = *b.first()?;
    let (len, init) = match lead {
        0x00..=0x7F => return Some((u32::from(lead), 1)),
        0xC0..=0xDF => (2, u32::from(lead & 0x1F)),
        0xE0..=0xEF => (3, u32::from(lead & 0x0F)),
        _ => (4, u32::from(lead & 0x07)),
    };
    let tail = b.get(1..len)?;
    let cp = tail.iter().fold(init, |acc, &c| (acc << 6) | u32::from(c & 0x3F));
    Some((cp, len))
}

/// UTF-16 code unit order over WTF-8 bytes. UTF-8 byte order is code point
/// order, which agrees with UTF-16 order except where a supplementary
/// character meets a unit at or above U+D800; so the shared prefix is
/// skipped bytewise and the rest compared unit by unit from the first
/// differing character.
pub(crate) fn cmp_utf16(a: &[u8], b: &[u8]) -> Ordering {
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if common == a.len() || common == b.len() {
        return a.len().cmp(&b.len());
    }
    let (x, y) = (a[common], b[common]);
    if x < 0x80 && y < 0x80 {
        return x.cmp(&y);
    }
    // Back up to the start of the character both strings share a prefix of.
    let mut start = common;
    while start > 0 && (a[start] & 0xC0) == 0x80 {
        start -= 1;
    }
    let ua = Utf16Units { bytes: &a[start..], pending: None };
    let ub = Utf16Units { bytes: &b[start..], pending: None };
    ua.cmp(ub)
}

/// An object: its members in document order, keys unique (the decoder
/// refuses a repeated key; [`Object::insert`] replaces).
#[derive(Clone, Default)]
pub struct Object {
    members: Vec<(JsString, Value)>,
}

impl Object {
    /// An object with no members.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn from_members_unchecked(members: Vec<(JsString, Value)>) -> Self {
        Self { members }
    }

    /// How many members it holds.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether it holds no member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The value under `key` (a `&str` never equals a key that holds a lone surrogate).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value under `key`, to change in place.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.members.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether a member is named `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key`, replacing an existing value in place; returns the old one.
    pub fn insert(&mut self, key: impl Into<JsString>, value: Value) -> Option<Value> {
        let key = key.into();
        if let Some(slot) = self.members.iter_mut().find(|(k, _)| *k == key) {
            return Some(std::mem::replace(&mut slot.1, value));
        }
        self.members.push((key, value));
        None
    }

    /// Removes the member named `key`, keeping the others' order; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.members.iter().position(|(k, _)| k == key)?;
        Some(self.members.remove(at).1)
    }

    /// Members in document (insertion) order.
    pub fn iter(&self) -> impl Iterator<Item = (&JsString, &Value)> {
        self.members.iter().map(|(k, v)| (k, v))
    }

    /// Member keys in document (insertion) order.
    pub fn keys(&self) -> impl Iterator<Item = &JsString> {
        self.members.iter().map(|(k, _)| k)
    }

    pub(crate) fn members(&self) -> &[(JsString, Value)] {
        &self.members
    }
}

/// Two objects are equal when they hold the same keys with equal values,
/// whatever their order (member order never reaches the canonical form).
impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.members.iter().all(|(k, v)| other.members.iter().any(|(k2, v2)| k == k2 && v == v2))
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.members.iter().map(|(k, v)| (k, v))).finish()
    }
}

/// A JSON value as `JSON.parse` produces it. Numbers compare with `==`, so
/// `-0` equals `0`, as it does in ECMAScript and in the canonical form.
#[derive(Clone, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number: an IEEE 754 double, as `JSON.parse` reads it (finite once accepted, §3).
    Number(f64),
    /// A string of UTF-16 code units, lone surrogates kept.
    String(JsString),
    /// An array, in order (§4: arrays keep their order).
    Array(Vec<Value>),
    /// An object (§4: its keys are sorted only when written canonically).
    Object(Object),
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("null"),
            Self::Bool(b) => write!(f, "{b}"),
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s}"),
            Self::Array(a) => f.debug_list().entries(a).finish(),
            Self::Object(o) => fmt::Debug::fmt(o, f),
        }
    }
}

impl Value {
    /// The object, when this is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Self::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The object, when this is one, to change in place.
    pub fn as_object_mut(&mut self) -> Option<&mut Object> {
        match self {
            Self::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The string, when this is one, lone surrogates and all.
    pub fn as_js_string(&self) -> Option<&JsString> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    /// The string's text, when it is a well-formed string.
    pub fn as_str(&self) -> Option<&str> {
        self.as_js_string().and_then(JsString::as_str)
    }

    /// The elements, when this is an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Self::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The value at a dotted path of object keys (`action.parameters.x`).
    pub fn pointer_dotted(&self, path: &str) -> Option<&Value> {
        path.split('.').try_fold(self, |v, key| v.as_object()?.get(key))
    }

    /// The JSON type name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "boolean",
            Self::Number(_) => "number",
            Self::String(_) => "string",
            Self::Array(_) => "array",
            Self::Object(_) => "object",
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Self::String(JsString::new(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Self::String(JsString::from(s))
    }
}

impl From<f64> for Value {
    fn from(n: f64) -> Self {
        Self::Number(n)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Self::Bool(b)
    }
}

impl From<Object> for Value {
    fn from(o: Object) -> Self {
        Self::Object(o)
    }
}

/// From `serde_json` (numbers become doubles, as `JSON.parse` makes them;
/// `serde_json` never holds a lone surrogate).
impl From<&serde_json::Value> for Value {
    fn from(v: &serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Self::Null,
            serde_json::Value::Bool(b) => Self::Bool(*b),
            serde_json::Value::Number(n) => Self::Number(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => Self::from(s.as_str()),
            serde_json::Value::Array(a) => Self::Array(a.iter().map(Self::from).collect()),
            serde_json::Value::Object(o) => {
                let mut obj = Object::new();
                for (k, v) in o {
                    obj.insert(k.as_str(), Self::from(v));
                }
                Self::Object(obj)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn s4_1_utf16_order_differs_from_code_point_order_for_astral_vs_private_use() {
        // U+FF5E (one unit 0xFF5E) sorts after U+1F680 (units 0xD83D 0xDE80) in UTF-16.
        let astral = JsString::new("\u{1F680}");
        let bmp = JsString::new("\u{FF5E}");
        assert_eq!(astral.cmp_utf16(&bmp), Ordering::Less);
        assert!(astral.as_wtf8() > bmp.as_wtf8(), "bytewise order is the opposite");
    }

    #[test]
    fn s4_3_lone_surrogate_round_trips_through_wtf8() {
        let s = JsString::from_utf16(&[0x61, 0xD800, 0x62]);
        assert!(!s.is_well_formed());
        assert_eq!(s.utf16_units().collect::<Vec<_>>(), vec![0x61, 0xD800, 0x62]);
        assert_eq!(s.utf16_len(), 3);
    }

    #[test]
    fn s4_1_lone_high_surrogate_against_pair_with_same_high_unit() {
        // "\ud83d" + "a" vs "\ud83d\ude80": second units 0x61 < 0xDE80.
        let lone = JsString::from_utf16(&[0xD83D, 0x61]);
        let pair = JsString::new("\u{1F680}");
        assert_eq!(lone.cmp_utf16(&pair), Ordering::Less);
        assert_eq!(pair.cmp_utf16(&lone), Ordering::Greater);
    }
}
