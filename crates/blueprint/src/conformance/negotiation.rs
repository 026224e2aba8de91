//! The evolution surfaces: `negotiation.negotiate`, `extension.resolve`.

use super::input::{out, strings};
use crate::error::{Code, Error, Result};
use crate::json::{self, Map, Value};
use crate::negotiation::{self, Support};
use crate::registry;

pub(super) fn execute(surface: &str, input: &Value) -> Option<Result<Map>> {
    Some(match surface {
        "negotiation.negotiate" => negotiate(input),
        "extension.resolve" => resolve(input),
        _ => return None,
    })
}

fn support_of(input: &Value) -> Result<Support> {
    Support::from_value(input.get("support").unwrap_or(&Value::Null))
}

fn negotiate(input: &Value) -> Result<Map> {
    let support = support_of(input)?;
    let n = negotiation::negotiate(input.get("artifact").unwrap_or(&Value::Null), &support)?;
    Ok(out(vec![
        ("revision", Value::Number(json::Number::Int(n.revision))),
        ("critical", strings(&n.extensions.critical)),
        ("optional", strings(&n.extensions.optional)),
        ("quarantined", strings(&n.extensions.quarantined)),
        ("retained", strings(&n.extensions.retained)),
        ("notices", notices(&n.extensions)),
        ("required_core_fields", strings(&n.required_core_fields)),
    ]))
}

fn resolve(input: &Value) -> Result<Map> {
    let support = support_of(input)?;
    let ext = input
        .get("artifact")
        .and_then(|a| a.get("extensions"))
        .ok_or_else(|| Error::new(Code::MissingRequiredField, "/extensions", "absent"))?;
    let r = registry::resolve(ext, &support.registry, &support.schemas)?;
    Ok(out(vec![
        ("critical", strings(&r.critical)),
        ("optional", strings(&r.optional)),
        ("quarantined", strings(&r.quarantined)),
        ("retained", strings(&r.retained)),
        ("notices", notices(&r)),
    ]))
}

/// The typed notices, in resolution order (critical bodies, then optional).
fn notices(r: &registry::Resolution) -> Value {
    Value::Array(r.notices.iter().map(|n| Value::str(n.notice)).collect())
}
