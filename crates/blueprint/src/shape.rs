//! The one generic, table-driven closed-world engine (spec §2). It knows
//! tables, never domains: artifacts describe their members as [`Field`]
//! tables and the engine applies the pinned failure precedence at every
//! object level:
//!
//! unknown member → missing required → type → constraint → cardinality →
//! nested → (cross-field hooks, run by the caller afterwards).

use crate::error::{fail, Code, Error, Result};
use crate::json::{escape_pointer, Map, Value};

/// A string constraint: `Err((code, why))` when the value is refused.
pub type StrCheck = fn(&str) -> std::result::Result<(), (Code, &'static str)>;

/// A member type.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    /// A string with a constraint.
    Str(StrCheck),
    /// An integer (integer-tagged; a float-tagged value is `invalid_type`).
    Int {
        /// The smallest value allowed (`invalid_constraint` below it).
        min: i64,
        /// The largest value allowed.
        max: i64,
    },
    /// A boolean.
    Bool,
    /// A string from a closed set.
    Enum(&'static [&'static str]),
    /// A closed object.
    Obj(&'static [Field]),
    /// An array with a cardinality window.
    Arr {
        /// The type of every item.
        item: &'static Ty,
        /// The fewest items allowed (`invalid_cardinality` below it).
        min: usize,
        /// The most items allowed.
        max: usize,
    },
    /// An object with free member names (each checked by `key`) and typed values.
    Map {
        /// The check every member name passes.
        key: StrCheck,
        /// The type of every member value.
        value: &'static Ty,
        /// The most members allowed (`invalid_cardinality` above it).
        max: usize,
    },
    /// A bounded JSON Schema 2020-12 document ([`crate::schema`]).
    Schema,
    /// Either of two types: the first whose shallow type matches is used.
    Either(&'static Ty, &'static Ty),
    /// Anything (opaque payloads; scanned elsewhere).
    Any,
}

/// One member of a closed object.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The member name.
    pub name: &'static str,
    /// Whether its absence is `missing_required_field`.
    pub required: bool,
    /// Its type.
    pub ty: Ty,
}

/// A required member.
pub const fn req(name: &'static str, ty: Ty) -> Field {
    Field { name, required: true, ty }
}

/// An optional member.
pub const fn opt(name: &'static str, ty: Ty) -> Field {
    Field { name, required: false, ty }
}

fn child(path: &str, seg: &str) -> String {
    format!("{path}/{}", escape_pointer(seg))
}

/// Checks `v` against a closed object table.
pub fn check_object(v: &Value, fields: &'static [Field], path: &str) -> Result<()> {
    check(v, &Ty::Obj(fields), path)
}

/// Checks `v` against `ty` (the value's own type is assumed checked by the caller
/// for nested use; at the top it is checked here).
pub fn check(v: &Value, ty: &Ty, path: &str) -> Result<()> {
    shallow_type(v, ty, path)?;
    constraint(v, ty, path)?;
    cardinality(v, ty, path)?;
    nested(v, ty, path)
}

fn resolve<'a>(v: &Value, ty: &'a Ty) -> &'a Ty {
    match ty {
        Ty::Either(a, b) => {
            if type_ok(v, a) {
                resolve(v, a)
            } else {
                resolve(v, b)
            }
        }
        other => other,
    }
}

fn type_ok(v: &Value, ty: &Ty) -> bool {
    match ty {
        Ty::Str(_) | Ty::Enum(_) => matches!(v, Value::String(_)),
        Ty::Int { .. } => v.as_i64().is_some(),
        Ty::Bool => matches!(v, Value::Bool(_)),
        Ty::Obj(_) | Ty::Map { .. } => matches!(v, Value::Object(_)),
        Ty::Arr { .. } => matches!(v, Value::Array(_)),
        Ty::Schema => matches!(v, Value::Object(_) | Value::Bool(_)),
        Ty::Either(a, b) => type_ok(v, a) || type_ok(v, b),
        Ty::Any => true,
    }
}

fn expected(ty: &Ty) -> &'static str {
    match ty {
        Ty::Str(_) | Ty::Enum(_) => "string",
        Ty::Int { .. } => "integer",
        Ty::Bool => "boolean",
        Ty::Obj(_) | Ty::Map { .. } => "object",
        Ty::Arr { .. } => "array",
        Ty::Schema => "schema (object or boolean)",
        Ty::Either(..) => "one of the allowed types",
        Ty::Any => "any",
    }
}

fn shallow_type(v: &Value, ty: &Ty, path: &str) -> Result<()> {
    if type_ok(v, ty) {
        Ok(())
    } else {
        fail(Code::InvalidType, path, format!("expected {}, got {}", expected(ty), v.kind()))
    }
}

fn constraint(v: &Value, ty: &Ty, path: &str) -> Result<()> {
    match (resolve(v, ty), v) {
        (Ty::Str(check), Value::String(s)) => check(s).map_err(|(code, why)| Error::new(code, path, why)),
        (Ty::Int { min, max }, _) => {
            let i = v.as_i64().unwrap_or_default();
            if i < *min || i > *max {
                return fail(Code::InvalidConstraint, path, format!("{i} is outside [{min}, {max}]"));
            }
            Ok(())
        }
        (Ty::Enum(set), Value::String(s)) => {
            if set.contains(&s.as_str()) {
                Ok(())
            } else {
                fail(Code::InvalidConstraint, path, format!("{s:?} is not one of {set:?}"))
            }
        }
        _ => Ok(()),
    }
}

fn cardinality(v: &Value, ty: &Ty, path: &str) -> Result<()> {
    match (resolve(v, ty), v) {
        (Ty::Arr { min, max, .. }, Value::Array(a)) => {
            if a.len() < *min || a.len() > *max {
                return fail(Code::InvalidCardinality, path, format!("{} entries, allowed {min}..={max}", a.len()));
            }
            Ok(())
        }
        (Ty::Map { max, .. }, Value::Object(m)) => {
            if m.len() > *max {
                return fail(Code::InvalidCardinality, path, format!("{} entries, at most {max}", m.len()));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn nested(v: &Value, ty: &Ty, path: &str) -> Result<()> {
    match (resolve(v, ty), v) {
        (Ty::Obj(fields), Value::Object(m)) => object_level(m, fields, path),
        (Ty::Arr { item, .. }, Value::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                check(x, item, &child(path, &i.to_string()))?;
            }
            Ok(())
        }
        (Ty::Map { key, value, .. }, Value::Object(m)) => {
            for (k, x) in m.iter() {
                let p = child(path, k);
                key(k).map_err(|(code, why)| Error::new(code, &p, why))?;
                check(x, value, &p)?;
            }
            Ok(())
        }
        (Ty::Schema, _) => crate::schema::check_schema(v, path),
        _ => Ok(()),
    }
}

fn object_level(m: &Map, fields: &[Field], path: &str) -> Result<()> {
    // 1. unknown member (document order)
    for k in m.keys() {
        if !fields.iter().any(|f| f.name == k) {
            return fail(Code::UnknownMember, child(path, k), "not a member of this closed object");
        }
    }
    // 2. missing required (table order)
    for f in fields {
        if f.required && !m.contains_key(f.name) {
            return fail(Code::MissingRequiredField, child(path, f.name), "required member is absent");
        }
    }
    let present = || fields.iter().filter_map(|f| m.get(f.name).map(|v| (f, v)));
    // 3. type
    for (f, v) in present() {
        shallow_type(v, &f.ty, &child(path, f.name))?;
    }
    // 4. constraint
    for (f, v) in present() {
        constraint(v, &f.ty, &child(path, f.name))?;
    }
    // 5. cardinality
    for (f, v) in present() {
        cardinality(v, &f.ty, &child(path, f.name))?;
    }
    // 6. nested
    for (f, v) in present() {
        nested(v, &f.ty, &child(path, f.name))?;
    }
    Ok(())
}

// ---- shared string checks -------------------------------------------------

/// A non-empty printable string of at most 256 bytes.
pub fn text(s: &str) -> std::result::Result<(), (Code, &'static str)> {
    if s.is_empty() || s.len() > 256 || s.chars().any(char::is_control) {
        return Err((Code::InvalidConstraint, "expected 1..=256 bytes of printable text"));
    }
    Ok(())
}

/// A lowercase dotted identifier (`example.demo`, `record_summary`).
pub fn ident(s: &str) -> std::result::Result<(), (Code, &'static str)> {
    let ok = !s.is_empty()
        && s.len() <= 128
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-' | b'/'))
        && s.as_bytes()[0].is_ascii_lowercase();
    if ok {
        Ok(())
    } else {
        Err((Code::InvalidConstraint, "expected a lowercase identifier ([a-z][a-z0-9._/-]*, at most 128 bytes)"))
    }
}

/// A tagged digest (its own codes on failure).
pub fn digest(s: &str) -> std::result::Result<(), (Code, &'static str)> {
    match crate::digest::Tagged::parse(s) {
        Ok(_) => Ok(()),
        Err(e) => {
            Err((e.fixed_code().unwrap_or(Code::DigestEncodingInvalid), "expected sha-256:<43 base64url characters>"))
        }
    }
}

/// An RFC 3339 UTC timestamp (`YYYY-MM-DDTHH:MM:SS[.fff]Z`).
pub fn timestamp(s: &str) -> std::result::Result<(), (Code, &'static str)> {
    match parse_timestamp_ms(s) {
        Some(_) => Ok(()),
        None => Err((Code::InvalidConstraint, "expected an RFC 3339 UTC timestamp YYYY-MM-DDTHH:MM:SS[.fff]Z")),
    }
}

/// Milliseconds since the Unix epoch of a strict RFC 3339 UTC timestamp.
pub fn parse_timestamp_ms(s: &str) -> Option<i64> {
    let bytes = s.as_bytes();
    if bytes.len() < 20 || *bytes.last()? != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        if t.bytes().all(|c| c.is_ascii_digit()) {
            t.parse().ok()
        } else {
            None
        }
    };
    if bytes[4] != b'-' || bytes[7] != b'-' || bytes[10] != b'T' || bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (y, mo, d, hour, mi, se) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    let mut ms = 0;
    let rest = &s[19..s.len() - 1];
    if !rest.is_empty() {
        let frac = rest.strip_prefix('.')?;
        if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let padded = format!("{frac:0<3}");
        ms = padded[..3].parse().ok()?;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let dim = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&mo) || d < 1 || d > dim[usize::try_from(mo - 1).ok()?] || hour > 23 || mi > 59 || se > 59 {
        return None;
    }
    // days from civil (Howard Hinnant's algorithm)
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + mi) * 60_000 + se * 1000 + ms)
}

/// Requires `v` to be an object (top-level artifacts).
pub fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map> {
    match v {
        Value::Object(m) => Ok(m),
        other => fail(Code::InvalidType, path, format!("expected an object, got {}", other.kind())),
    }
}
