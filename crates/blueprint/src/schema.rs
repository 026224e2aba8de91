//! The bounded JSON Schema 2020-12 dialect and its instance validator.
//!
//! Hand-written: the protocol needs a *bounded* dialect (closed keyword set,
//! local `$ref` only, no cycles, a complexity ceiling) with the protocol's own
//! error codes, which general validators (e.g. `jsonschema`) neither enforce
//! nor report.

use crate::error::{fail, Code, Result};
use crate::json::{escape_pointer, Map, Value};

/// The only dialect URI accepted in `$schema`.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";
/// Most subschemas one document may hold.
pub const MAX_SUBSCHEMAS: usize = 256;
/// Deepest subschema nesting.
pub const MAX_DEPTH: usize = 32;

const KEYWORDS: &[&str] = &[
    "$schema",
    "$defs",
    "$ref",
    "title",
    "description",
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "anyOf",
    "allOf",
];
const TYPES: &[&str] = &["null", "boolean", "object", "array", "number", "integer", "string"];

/// Validates a schema document against the bounded dialect.
pub fn check_schema(schema: &Value, path: &str) -> Result<()> {
    let mut count = 0usize;
    walk(schema, path, 0, &mut count, true)?;
    check_refs(schema, path)
}

fn sub(path: &str, seg: &str) -> String {
    format!("{path}/{}", escape_pointer(seg))
}

fn walk(s: &Value, path: &str, depth: usize, count: &mut usize, root: bool) -> Result<()> {
    *count += 1;
    if *count > MAX_SUBSCHEMAS || depth > MAX_DEPTH {
        return fail(
            Code::SchemaComplexityExceeded,
            path,
            format!("more than {MAX_SUBSCHEMAS} subschemas or deeper than {MAX_DEPTH}"),
        );
    }
    let m = match s {
        Value::Bool(_) => return Ok(()),
        Value::Object(m) => m,
        other => {
            return fail(
                Code::SchemaInvalidShape,
                path,
                format!("a schema is an object or a boolean, got {}", other.kind()),
            )
        }
    };
    for k in m.keys() {
        if !KEYWORDS.contains(&k.as_str()) {
            return fail(Code::SchemaKeywordNotAllowed, sub(path, k), "keyword outside the bounded dialect");
        }
    }
    if let Some(d) = m.get("$schema") {
        if !root || d.as_str() != Some(DIALECT) {
            return fail(Code::SchemaDialectUnknown, sub(path, "$schema"), format!("only {DIALECT} at the root"));
        }
    }
    let bad = |k: &str, why: &str| fail::<()>(Code::SchemaKeywordValueInvalid, sub(path, k), why.to_string());
    for (k, v) in m.iter() {
        let p = sub(path, k);
        match k.as_str() {
            "title" | "description" | "$ref" if v.as_str().is_none() => {
                bad(k, "expected a string")?;
            }
            "type" => {
                let ok = match v {
                    Value::String(t) => TYPES.contains(&t.as_str()),
                    Value::Array(a) => {
                        !a.is_empty() && a.iter().all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t)))
                    }
                    _ => false,
                };
                if !ok {
                    bad(k, "expected a JSON type name or a non-empty array of them")?;
                }
            }
            "enum" if v.as_array().is_none_or(<[Value]>::is_empty) => {
                bad(k, "expected a non-empty array")?;
            }
            "required" => {
                let ok = v.as_array().is_some_and(|a| {
                    a.iter().all(|x| x.as_str().is_some()) && a.iter().enumerate().all(|(i, x)| !a[..i].contains(x))
                });
                if !ok {
                    bad(k, "expected an array of unique strings")?;
                }
            }
            "minItems" | "maxItems" | "minLength" | "maxLength" if v.as_i64().is_none_or(|n| n < 0) => {
                bad(k, "expected a non-negative integer")?;
            }
            "minimum" | "maximum" if !matches!(v, Value::Number(_)) => {
                bad(k, "expected a number")?;
            }
            "properties" | "$defs" => {
                let Value::Object(props) = v else {
                    return bad(k, "expected an object of schemas");
                };
                for (name, s2) in props.iter() {
                    walk(s2, &sub(&p, name), depth + 1, count, false)?;
                }
            }
            "additionalProperties" | "items" => walk(v, &p, depth + 1, count, false)?,
            "anyOf" | "allOf" => {
                let Some(list) = v.as_array().filter(|a| !a.is_empty()) else {
                    return bad(k, "expected a non-empty array of schemas");
                };
                for (i, s2) in list.iter().enumerate() {
                    walk(s2, &sub(&p, &i.to_string()), depth + 1, count, false)?;
                }
            }
            // `$schema` is checked above; `const` admits any value; the rest need no check of their own.
            _ => {}
        }
    }
    Ok(())
}

fn defs(root: &Value) -> Option<&Map> {
    root.get("$defs").and_then(Value::as_object)
}

fn ref_target(r: &str) -> Option<&str> {
    r.strip_prefix("#/$defs/").filter(|n| !n.is_empty() && !n.contains('/'))
}

fn collect_refs<'a>(s: &'a Value, out: &mut Vec<&'a str>) {
    if let Value::Object(m) = s {
        for (k, v) in m.iter() {
            match (k.as_str(), v) {
                ("$ref", Value::String(r)) => out.push(r),
                ("properties" | "$defs", Value::Object(props)) => {
                    props.iter().for_each(|(_, x)| collect_refs(x, out));
                }
                ("additionalProperties" | "items", x) => collect_refs(x, out),
                ("anyOf" | "allOf", Value::Array(a)) => a.iter().for_each(|x| collect_refs(x, out)),
                _ => {}
            }
        }
    }
}

/// Follows `$ref`s from `$defs/<n>` depth first: `schema_ref_cycle` when one
/// reaches a definition still on `stack`.
fn acyclic_from<'a>(
    n: &'a str,
    d: &'a Map,
    stack: &mut Vec<&'a str>,
    done: &mut Vec<&'a str>,
    path: &str,
) -> Result<()> {
    if done.contains(&n) {
        return Ok(());
    }
    if stack.contains(&n) {
        return fail(Code::SchemaRefCycle, path, format!("$defs/{n} reaches itself through $ref"));
    }
    stack.push(n);
    let mut next = Vec::new();
    if let Some(s) = d.get(n) {
        collect_refs(s, &mut next);
    }
    for r in next {
        if let Some(t) = ref_target(r) {
            acyclic_from(t, d, stack, done, path)?;
        }
    }
    stack.pop();
    done.push(n);
    Ok(())
}

fn check_refs(root: &Value, path: &str) -> Result<()> {
    let mut refs = Vec::new();
    collect_refs(root, &mut refs);
    let empty = Map::new();
    let d = defs(root).unwrap_or(&empty);
    for r in &refs {
        match ref_target(r) {
            Some(n) if d.contains_key(n) => {}
            _ => return fail(Code::SchemaRefUnresolvable, path, format!("$ref {r:?} is not a local #/$defs/<name>")),
        }
    }
    // The bounded dialect admits no recursion: the $defs reference graph must be acyclic.
    let mut done = Vec::new();
    for n in d.keys() {
        acyclic_from(n, d, &mut Vec::new(), &mut done, path)?;
    }
    Ok(())
}

/// Validates `instance` against a schema that passed [`check_schema`].
/// A failing instance is `invalid_type` (wrong JSON type),
/// `invalid_cardinality` (`minItems`/`maxItems`) or `invalid_constraint`
/// (any other keyword).
pub fn validate(instance: &Value, schema: &Value, path: &str) -> Result<()> {
    validate_in(instance, schema, schema, path, 0)
}

fn type_matches(v: &Value, t: &str) -> bool {
    match t {
        "null" => matches!(v, Value::Null),
        "boolean" => matches!(v, Value::Bool(_)),
        "object" => matches!(v, Value::Object(_)),
        "array" => matches!(v, Value::Array(_)),
        "number" => matches!(v, Value::Number(_)),
        "integer" => match v {
            Value::Number(n) => n.as_f64().fract() == 0.0,
            _ => false,
        },
        "string" => matches!(v, Value::String(_)),
        _ => false,
    }
}

fn validate_in(v: &Value, schema: &Value, root: &Value, path: &str, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH * 2 {
        return fail(Code::SchemaComplexityExceeded, path, "validation nested too deeply");
    }
    let kw = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return fail(Code::InvalidConstraint, path, "schema `false` admits nothing"),
        Value::Object(kw) => kw,
        _ => return fail(Code::SchemaInvalidShape, path, "not a schema"),
    };
    if let Some(Value::String(r)) = kw.get("$ref") {
        let target = ref_target(r).and_then(|n| defs(root)?.get(n));
        let Some(t) = target else {
            return fail(Code::SchemaRefUnresolvable, path, format!("$ref {r:?}"));
        };
        validate_in(v, t, root, path, depth + 1)?;
    }
    if let Some(t) = kw.get("type") {
        let ok = match t {
            Value::String(t) => type_matches(v, t),
            Value::Array(a) => a.iter().filter_map(Value::as_str).any(|t| type_matches(v, t)),
            _ => false,
        };
        if !ok {
            return fail(
                Code::InvalidType,
                path,
                format!("{} does not match type {}", v.kind(), crate::canon::canonical_string(t).unwrap_or_default()),
            );
        }
    }
    if let Some(Value::Array(opts)) = kw.get("enum") {
        if !opts.iter().any(|o| o.same(v)) {
            return fail(Code::InvalidConstraint, path, "value is not in enum");
        }
    }
    if let Some(c) = kw.get("const") {
        if !c.same(v) {
            return fail(Code::InvalidConstraint, path, "value differs from const");
        }
    }
    match v {
        Value::Object(obj) => {
            let props = kw.get("properties").and_then(Value::as_object);
            if let Some(Value::Array(req)) = kw.get("required") {
                for r in req.iter().filter_map(Value::as_str) {
                    if !obj.contains_key(r) {
                        return fail(
                            Code::InvalidConstraint,
                            format!("{path}/{}", escape_pointer(r)),
                            "required by schema",
                        );
                    }
                }
            }
            for (k, x) in obj.iter() {
                let p = format!("{path}/{}", escape_pointer(k));
                match props.and_then(|pr| pr.get(k)) {
                    Some(ps) => validate_in(x, ps, root, &p, depth + 1)?,
                    None => {
                        if let Some(ap) = kw.get("additionalProperties") {
                            if matches!(ap, Value::Bool(false)) {
                                return fail(Code::InvalidConstraint, p, "additional property not allowed by schema");
                            }
                            validate_in(x, ap, root, &p, depth + 1)?;
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            let n = i64::try_from(items.len()).unwrap_or(i64::MAX);
            if kw.get("minItems").and_then(Value::as_i64).is_some_and(|lo| n < lo)
                || kw.get("maxItems").and_then(Value::as_i64).is_some_and(|hi| n > hi)
            {
                return fail(Code::InvalidCardinality, path, "item count outside minItems/maxItems");
            }
            if let Some(is) = kw.get("items") {
                for (i, x) in items.iter().enumerate() {
                    validate_in(x, is, root, &format!("{path}/{i}"), depth + 1)?;
                }
            }
        }
        Value::String(st) => {
            let n = i64::try_from(st.chars().count()).unwrap_or(i64::MAX);
            if kw.get("minLength").and_then(Value::as_i64).is_some_and(|lo| n < lo)
                || kw.get("maxLength").and_then(Value::as_i64).is_some_and(|hi| n > hi)
            {
                return fail(Code::InvalidConstraint, path, "length outside minLength/maxLength");
            }
        }
        Value::Number(num) => {
            let f = num.as_f64();
            let num_of = |k: &str| match kw.get(k) {
                Some(Value::Number(x)) => Some(x.as_f64()),
                _ => None,
            };
            if num_of("minimum").is_some_and(|lo| f < lo) || num_of("maximum").is_some_and(|hi| f > hi) {
                return fail(Code::InvalidConstraint, path, "number outside minimum/maximum");
            }
        }
        _ => {}
    }
    if let Some(Value::Array(all)) = kw.get("allOf") {
        for s2 in all {
            validate_in(v, s2, root, path, depth + 1)?;
        }
    }
    if let Some(Value::Array(any)) = kw.get("anyOf") {
        if !any.iter().any(|s2| validate_in(v, s2, root, path, depth + 1).is_ok()) {
            return fail(Code::InvalidConstraint, path, "no anyOf branch matches");
        }
    }
    Ok(())
}

/// `Schema.validate_instance(schema, instance, dialect)`: the schema must be
/// a document of the bounded dialect (`dialect`, when given, must be
/// [`DIALECT`]: else `schema_dialect_unknown`), then `instance` must satisfy
/// it. Schema faults are the `schema_*` codes, instance faults
/// `invalid_type` / `invalid_cardinality` / `invalid_constraint`.
pub fn validate_instance(schema: &Value, instance: &Value, dialect: Option<&str>) -> Result<()> {
    if let Some(d) = dialect {
        if d != DIALECT {
            return fail(Code::SchemaDialectUnknown, "dialect", format!("{d:?} is not the bounded 2020-12 dialect"));
        }
    }
    check_schema(schema, "schema")?;
    validate(instance, schema, "")
}
