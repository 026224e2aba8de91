//! The bounded JSON Schema 2020-12 dialect and its instance validator.
//!
//! Hand-written: the protocol needs a *bounded* dialect (closed keyword set,
//! local `$ref` only, no cycles, a complexity ceiling) with the protocol's own
//! error codes, which general validators (e.g. `jsonschema`) neither enforce
//! nor report.

use crate::error::{fail, Code, Result};
use crate::json::{escape_pointer, Map, Value};

/// The only dialect URI accepted (as `Schema.validate_instance`'s `dialect`).
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";
/// The complexity ceiling (the reference's metered sum: nodes + keywords +
/// `oneOf` branches + 4 × depth).
pub const CEILING: usize = 512;

/// The closed 16-keyword dialect, in the canonical evaluation order (the
/// FIRST failing keyword in this order is the reported reason, whatever the
/// document's member order), then `$defs`.
const KEYWORD_ORDER: &[&str] = &[
    "$ref",
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "required",
    "properties",
    "items",
    "additionalProperties",
    "oneOf",
];
const TYPES: &[&str] = &["null", "boolean", "object", "array", "number", "integer", "string"];

/// Validates a schema document against the bounded dialect: a root object
/// or boolean (`schema_invalid_shape`), only the 16 keywords
/// (`schema_keyword_not_allowed`), each keyword's value of its form
/// (`schema_keyword_value_invalid`), the metered complexity at most
/// [`CEILING`] (`schema_complexity_exceeded`), every `$ref` resolvable
/// (`schema_ref_unresolvable`) and no `$ref` cycle (`schema_ref_cycle`).
pub fn check_schema(schema: &Value, path: &str) -> Result<()> {
    if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
        return fail(
            Code::SchemaInvalidShape,
            path,
            format!("a schema is an object or a boolean, got {}", schema.kind()),
        );
    }
    let mut meter = Meter::default();
    walk(schema, path, 0, &mut meter)?;
    check_refs(schema, path)
}

/// A schema document's metered complexity (nodes + keywords + `oneOf`
/// branches + 4 × depth), checked against [`CEILING`] by [`check_schema`].
pub fn complexity(schema: &Value) -> Result<usize> {
    let mut meter = Meter::default();
    walk(schema, "", 0, &mut meter)?;
    Ok(meter.sum())
}

fn sub(path: &str, seg: &str) -> String {
    format!("{path}/{}", escape_pointer(seg))
}

/// The complexity meter: every document node, every keyword, every `oneOf`
/// branch, and the deepest document position (weighted 4).
#[derive(Debug, Default)]
struct Meter {
    nodes: usize,
    keywords: usize,
    branches: usize,
    depth: usize,
}

impl Meter {
    fn sum(&self) -> usize {
        self.nodes + self.keywords + self.branches + 4 * self.depth
    }

    fn over(&self, path: &str) -> Result<()> {
        if self.sum() > CEILING {
            return fail(
                Code::SchemaComplexityExceeded,
                path,
                format!("metered complexity above {CEILING} (nodes + keywords + branches + 4 × depth)"),
            );
        }
        Ok(())
    }

    /// A data value (a keyword's non-schema value) at `depth`: its nodes only.
    fn data(&mut self, v: &Value, depth: usize) {
        self.nodes += 1;
        self.depth = self.depth.max(depth);
        match v {
            Value::Array(a) => a.iter().for_each(|x| self.data(x, depth + 1)),
            Value::Object(m) => m.iter().for_each(|(_, x)| self.data(x, depth + 1)),
            _ => {}
        }
    }
}

fn is_schema(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Bool(_))
}

/// A schema at document position `level` (its path length).
fn walk(s: &Value, path: &str, level: usize, meter: &mut Meter) -> Result<()> {
    meter.nodes += 1;
    meter.depth = meter.depth.max(level + 1);
    let Value::Object(m) = s else {
        return Ok(());
    };
    meter.over(path)?;
    for (k, v) in m.iter() {
        let p = sub(path, k);
        meter.keywords += 1;
        if !KEYWORD_ORDER.contains(&k.as_str()) && k != "$defs" {
            return fail(Code::SchemaKeywordNotAllowed, p, "keyword outside the bounded 16-keyword dialect");
        }
        keyword_value(k, v, &p)?;
        match k.as_str() {
            "$ref" => {}
            "oneOf" => {
                let list: &[Value] = v.as_array().map_or(&[], |a| a);
                meter.branches += list.len();
                meter.nodes += 1;
                meter.depth = meter.depth.max(level + 2);
                for (i, s2) in list.iter().enumerate() {
                    walk(s2, &sub(&p, &i.to_string()), level + 2, meter)?;
                }
            }
            "properties" | "$defs" => {
                meter.nodes += 1;
                meter.depth = meter.depth.max(level + 2);
                if let Value::Object(props) = v {
                    for (name, s2) in props.iter() {
                        walk(s2, &sub(&p, name), level + 2, meter)?;
                    }
                }
            }
            "items" | "additionalProperties" => walk(v, &p, level + 1, meter)?,
            _ => meter.data(v, level + 2),
        }
        meter.over(&p)?;
    }
    Ok(())
}

/// One keyword's value, of its form (`schema_keyword_value_invalid`).
fn keyword_value(key: &str, value: &Value, at: &str) -> Result<()> {
    let non_negative_integer = |value: &Value| match value {
        Value::Number(n) => {
            let f = n.as_f64();
            f >= 0.0 && f.fract() == 0.0
        }
        _ => false,
    };
    let ok = match key {
        "type" => match value {
            Value::String(t) => TYPES.contains(&t.as_str()),
            Value::Array(a) => {
                !a.is_empty()
                    && a.iter().all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t)))
                    && a.iter().enumerate().all(|(i, x)| !a[..i].iter().any(|y| y.same(x)))
            }
            _ => false,
        },
        "enum" => matches!(value, Value::Array(_)),
        "minimum" | "maximum" => matches!(value, Value::Number(_)),
        "minLength" | "maxLength" | "minItems" | "maxItems" => non_negative_integer(value),
        "required" => value.as_array().is_some_and(|a| {
            a.iter().all(|x| x.as_str().is_some())
                && a.iter().enumerate().all(|(i, x)| !a[..i].iter().any(|y| y.same(x)))
        }),
        "properties" | "$defs" => value.as_object().is_some_and(|m| m.iter().all(|(_, s)| is_schema(s))),
        "items" | "additionalProperties" => is_schema(value),
        "oneOf" => value.as_array().is_some_and(|a| !a.is_empty() && a.iter().all(is_schema)),
        "$ref" => match value.as_str() {
            None => false,
            Some(r) if ref_target(r).is_none() => {
                return fail(
                    Code::SchemaKeywordNotAllowed,
                    at,
                    format!("$ref {r:?}: only a document-local #/$defs/<name> pointer"),
                )
            }
            Some(_) => true,
        },
        // `const` admits any value.
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        fail(Code::SchemaKeywordValueInvalid, at, format!("{key}: value not of the keyword's form"))
    }
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
                ("oneOf", Value::Array(a)) => a.iter().for_each(|x| collect_refs(x, out)),
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

/// Validates `instance` against a schema that passed [`check_schema`],
/// keyword by keyword in the canonical order ([`KEYWORD_ORDER`]), the first
/// failure being the reason: `invalid_type` (`type`, a `false` schema),
/// `invalid_constraint` (`enum`, `const`, `minimum`/`maximum`,
/// `minLength`/`maxLength`), `invalid_cardinality` (`minItems`/`maxItems`,
/// a `required` member absent, a member `additionalProperties: false`
/// closes out, not exactly one `oneOf` branch matching).
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

/// A `min*`/`max*` keyword (`name`, its value `arg`) against what the
/// instance measures (`None`: the keyword does not apply to its type).
fn bound(name: &str, arg: &Value, measured: Option<f64>, code: Code, what: &str, path: &str) -> Result<()> {
    let (Some(val), Value::Number(lim)) = (measured, arg) else {
        return Ok(());
    };
    let lim = lim.as_f64();
    let within = if name.starts_with("min") { val >= lim } else { val <= lim };
    if within {
        Ok(())
    } else {
        fail(code, path, format!("{what} outside {name} {}", show(arg)))
    }
}

fn validate_in(v: &Value, schema: &Value, root: &Value, path: &str, depth: usize) -> Result<()> {
    // The document is acyclic and metered, so this only bounds a hand-built schema.
    if depth > CEILING {
        return fail(Code::SchemaComplexityExceeded, path, "validation nested too deeply");
    }
    let kw = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return fail(Code::InvalidType, path, "schema `false` admits nothing"),
        Value::Object(kw) => kw,
        _ => return fail(Code::SchemaInvalidShape, path, "not a schema"),
    };
    for &k in KEYWORD_ORDER {
        let Some(x) = kw.get(k) else {
            continue;
        };
        keyword(k, x, kw, v, root, path, depth)?;
    }
    Ok(())
}

#[allow(clippy::too_many_lines)]
fn keyword(name: &str, arg: &Value, kw: &Map, inst: &Value, root: &Value, path: &str, depth: usize) -> Result<()> {
    #[allow(clippy::cast_precision_loss)]
    let count = |num: usize| num as f64;
    match name {
        "$ref" => {
            let target = arg.as_str().and_then(ref_target).and_then(|num| defs(root)?.get(num));
            let Some(t) = target else {
                return fail(Code::SchemaRefUnresolvable, path, format!("$ref {}", show(arg)));
            };
            validate_in(inst, t, root, path, depth + 1)
        }
        "type" => {
            let ok = match arg {
                Value::String(t) => type_matches(inst, t),
                Value::Array(a) => a.iter().filter_map(Value::as_str).any(|t| type_matches(inst, t)),
                _ => false,
            };
            if ok {
                Ok(())
            } else {
                fail(Code::InvalidType, path, format!("{} does not match type {}", inst.kind(), show(arg)))
            }
        }
        "enum" if !arg.as_array().is_some_and(|opts| opts.iter().any(|o| o.same(inst))) => {
            fail(Code::InvalidConstraint, path, "value is not in enum")
        }
        "const" if !arg.same(inst) => fail(Code::InvalidConstraint, path, "value differs from const"),
        "minimum" | "maximum" => {
            let val = match inst {
                Value::Number(num) => Some(num.as_f64()),
                _ => None,
            };
            bound(name, arg, val, Code::InvalidConstraint, "number", path)
        }
        "minLength" | "maxLength" => {
            let len = match inst {
                Value::String(st) => Some(count(st.chars().count())),
                _ => None,
            };
            bound(name, arg, len, Code::InvalidConstraint, "length", path)
        }
        "minItems" | "maxItems" => {
            let len = match inst {
                Value::Array(items) => Some(count(items.len())),
                _ => None,
            };
            bound(name, arg, len, Code::InvalidCardinality, "item count", path)
        }
        "required" => {
            let Value::Object(obj) = inst else {
                return Ok(());
            };
            for r in arg.as_array().into_iter().flatten().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    return fail(Code::InvalidCardinality, sub(path, r), "member required by the schema is absent");
                }
            }
            Ok(())
        }
        "properties" => {
            let (Value::Object(obj), Value::Object(props)) = (inst, arg) else {
                return Ok(());
            };
            for (name, ps) in props.iter() {
                if let Some(m) = obj.get(name) {
                    validate_in(m, ps, root, &sub(path, name), depth + 1)?;
                }
            }
            Ok(())
        }
        "items" => {
            let Value::Array(items) = inst else {
                return Ok(());
            };
            for (i, it) in items.iter().enumerate() {
                validate_in(it, arg, root, &sub(path, &i.to_string()), depth + 1)?;
            }
            Ok(())
        }
        "additionalProperties" => {
            let Value::Object(obj) = inst else {
                return Ok(());
            };
            // Adjacency: only the sibling `properties` of the same schema object.
            let adjacent = kw.get("properties").and_then(Value::as_object);
            for (name, m) in obj.iter().filter(|(num, _)| !adjacent.is_some_and(|a| a.contains_key(num))) {
                if matches!(arg, Value::Bool(false)) {
                    return fail(Code::InvalidCardinality, sub(path, name), "member not allowed by the schema");
                }
                validate_in(m, arg, root, &sub(path, name), depth + 1)?;
            }
            Ok(())
        }
        "oneOf" => {
            let mut passes = 0;
            for b in arg.as_array().into_iter().flatten() {
                if validate_in(inst, b, root, path, depth + 1).is_ok() {
                    passes += 1;
                    if passes > 1 {
                        break;
                    }
                }
            }
            if passes == 1 {
                Ok(())
            } else {
                fail(
                    Code::InvalidCardinality,
                    path,
                    if passes == 0 { "no oneOf branch matches" } else { "more than one oneOf branch matches" },
                )
            }
        }
        _ => Ok(()),
    }
}

fn show(v: &Value) -> String {
    crate::canon::canonical_string(v).unwrap_or_default()
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
