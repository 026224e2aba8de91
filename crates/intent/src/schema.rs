//! `schema.json` (JSON Schema 2020-12), generated from the validator's own
//! rule table ([`crate::binding::BINDING`]) and bounds
//! ([`crate::canonical::LIMITS`]), so the two cannot disagree on anything a
//! schema can state. `conformance/intent/schema.json` is this output; a test
//! holds the committed file to it (`jcp intent schema` regenerates it).
//!
//! What JSON Schema can state, it states: fixed key sets, required keys,
//! lengths, patterns, the unsafe keys at every depth, the per-array bound,
//! and the depth bound (unrolled: one `$defs` entry per depth, the one past
//! the bound being `false`). Two bounds are sums over the whole document and
//! no schema keyword states them: 5,000 entries and 100 KiB of canonical
//! bytes. The schema's `description` says so, and the vectors that hold
//! those two bounds are marked `"schema": "not-expressible"`.

use serde_json::{json, Map, Value as Json};

use crate::binding::{Field, Shape, BINDING_FIELDS};
use crate::canonical::{FORBIDDEN_KEYS, LIMITS};

/// The `$id` of the generated schema.
pub const SCHEMA_ID: &str = "https://example.invalid/jcp-console/conformance/intent/schema.json";

fn def_name(depth: usize) -> String {
    format!("json_at_depth_{depth}")
}

fn json_ref(depth: usize) -> Json {
    json!({ "$ref": format!("#/$defs/{}", def_name(depth)) })
}

fn safe_names() -> Json {
    json!({ "not": { "enum": FORBIDDEN_KEYS } })
}

/// An object whose every value is a JSON value at `depth + 1`.
fn any_object(depth: usize) -> Json {
    json!({
        "type": "object",
        "propertyNames": safe_names(),
        "additionalProperties": json_ref(depth + 1),
    })
}

fn shape(s: &Shape, depth: usize) -> Json {
    match s {
        Shape::Const(c) => json!({ "type": "string", "const": c }),
        Shape::Text { min, max, pattern, format } => {
            let mut m = Map::new();
            m.insert("type".into(), json!("string"));
            if let Some(f) = format {
                m.insert("format".into(), json!(f));
            }
            if let Some(n) = min {
                m.insert("minLength".into(), json!(n));
            }
            if let Some(n) = max {
                m.insert("maxLength".into(), json!(n));
            }
            if let Some(p) = pattern {
                m.insert("pattern".into(), json!(p));
            }
            Json::Object(m)
        }
        Shape::AnyObject => any_object(depth),
        Shape::Record { fields, open } => Json::Object(record(fields, *open, depth)),
    }
}

fn record(fields: &[Field], open: bool, depth: usize) -> Map<String, Json> {
    let mut props = Map::new();
    for f in fields {
        props.insert(f.name.into(), shape(&f.shape, depth + 1));
    }
    let required: Vec<&str> = fields.iter().filter(|f| f.required).map(|f| f.name).collect();
    let mut m = Map::new();
    m.insert("type".into(), json!("object"));
    m.insert("properties".into(), Json::Object(props));
    m.insert("required".into(), json!(required));
    if open {
        m.insert("propertyNames".into(), safe_names());
        m.insert("additionalProperties".into(), json_ref(depth + 1));
    } else {
        m.insert("additionalProperties".into(), json!(false));
    }
    m
}

/// The schema as a JSON value.
pub fn schema() -> Json {
    let body = record(BINDING_FIELDS, false, 0);
    let mut root = Map::new();
    root.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
    root.insert("$id".into(), json!(SCHEMA_ID));
    root.insert("title".into(), json!("agent-safe.intent/1 binding"));
    root.insert(
        "description".into(),
        json!(format!(
            "The execution intent as it is hashed: keys sorted as a sorted-then-reinserted ECMAScript object enumerates them, \
             encoded by JSON.stringify, digested with SHA-256; every property is inside the hash. Generated from the jcp `intent` \
             crate's validator. Besides what this schema states, a binding is refused beyond {} entries (array elements plus object \
             properties, over the whole binding) or {} bytes of canonical form, and string lengths count UTF-16 code units.",
            LIMITS.max_entries, LIMITS.max_bytes
        )),
    );
    root.extend(body);
    let mut defs = Map::new();
    // Values inside `context` start at depth 2, inside `action.parameters` at 3.
    for depth in 2..=LIMITS.max_depth {
        defs.insert(
            def_name(depth),
            json!({
                "anyOf": [
                    { "type": ["null", "boolean", "number", "string"] },
                    { "type": "array", "maxItems": LIMITS.max_array_len, "items": json_ref(depth + 1) },
                    any_object(depth),
                ]
            }),
        );
    }
    defs.insert(def_name(LIMITS.max_depth + 1), json!(false));
    root.insert("$defs".into(), Json::Object(defs));
    Json::Object(root)
}

/// The schema as the committed file holds it: two-space indented, one
/// trailing newline.
pub fn schema_text() -> Result<String, serde_json::Error> {
    let mut s = serde_json::to_string_pretty(&schema())?;
    s.push('\n');
    Ok(s)
}
