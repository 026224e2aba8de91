//! The late surfaces: `portability.scan`, `compatibility.verify`,
//! `federation.decode` (envelope + state codecs) and
//! `federation.verify_commitment`.

use std::collections::BTreeMap;

use super::input::{bytes_of, limits_of, out, text};
use crate::artifact;
use crate::compat;
use crate::digest::Tagged;
use crate::error::{fail, Code, Error, Result};
use crate::federation::{self, Context, ReceiptFact};
use crate::json::{self, Map, Value};
use crate::limits::Limits;
use crate::portability;
use crate::signature::KeySet;

pub(super) fn execute(surface: &str, input: &Value) -> Option<Result<Map>> {
    Some(match surface {
        "portability.scan" => portability_scan(input),
        "compatibility.verify" => compatibility_verify(input),
        "federation.decode" => federation_decode(input),
        "federation.verify_commitment" => verify_commitment(input),
        _ => return None,
    })
}

/// `{text}` → decode → `Portability.scan` over the whole value.
fn portability_scan(input: &Value) -> Result<Map> {
    let v = json::decode(&bytes_of(input)?, &limits_of(input)?)?;
    portability::scan(&v, "", &[], Code::ForbiddenPortableValue)?;
    Ok(out(vec![("clean", Value::Bool(true))]))
}

/// `{text: <deployment>, observed: {identities: [...]}}`.
fn compatibility_verify(input: &Value) -> Result<Map> {
    let a = artifact::decode_deployment(&bytes_of(input)?, &limits_of(input)?)?;
    let observed =
        input.get("observed").and_then(|o| o.get("identities")).and_then(Value::as_array).ok_or_else(|| {
            Error::new(Code::InvalidType, "observed", "expected {identities: [{kind, name, version, digest}]}")
        })?;
    let verified = compat::verify_observed(&a.value, observed)?;
    Ok(out(vec![("verified", Value::Bool(true)), ("identities", Value::from_u64(verified.len() as u64))]))
}

const CODECS: &[&str] = &["to_a2a_state", "from_a2a_state", "to_mcp_state", "from_mcp_state"];

fn federation_decode(input: &Value) -> Result<Map> {
    if let Some(k) = CODECS.iter().find(|k| input.get(k).is_some()) {
        let s = text(input, k)?;
        let value = match *k {
            "to_a2a_state" => federation::to_a2a(s)?,
            "from_a2a_state" => federation::from_a2a(s)?,
            "to_mcp_state" => federation::to_mcp(s)?.to_string(),
            _ => federation::from_mcp(s)?.to_string(),
        };
        let named = match *k {
            "to_a2a_state" => "a2a_state",
            "to_mcp_state" => "mcp_state",
            _ => "state",
        };
        return Ok(out(vec![(named, Value::str(&value)), ("value", Value::str(&value))]));
    }
    let e = federation::decode_envelope(&bytes_of(input)?, &limits_of(input)?)?;
    Ok(out(vec![("canonical", Value::str(e.canonical)), ("decoded", Value::Bool(true))]))
}

fn pin(ctx: &Value, k: &str) -> Result<Option<String>> {
    match ctx.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => fail(Code::InvalidType, format!("context.{k}"), "expected a string"),
    }
}

fn prior(v: &Value, i: usize) -> Result<ReceiptFact> {
    let at = format!("context.prior_receipts/{i}");
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Error::new(Code::InvalidType, format!("{at}/{k}"), "expected a string"))
    };
    Ok(ReceiptFact {
        task_identity: s("task_identity")?,
        terminal_state: s("terminal_state")?,
        terminal_commitment: Tagged::parse(&s("commitment")?)
            .map_err(|e| Error::new(Code::InvalidType, format!("{at}/commitment"), e.detail()))?,
    })
}

/// The reference's receiving-context form: `{keys?, issuer?, subject?,
/// audience?, issuer_key_sets?, created_after?, created_before?,
/// prior_receipts?}`; an absent `keys` is the empty pool.
pub fn context_of(ctx: &Value) -> Result<Context> {
    if !matches!(ctx, Value::Object(_)) {
        return fail(Code::InvalidType, "context", "expected an object");
    }
    let keys = match ctx.get("keys") {
        None => KeySet::new(),
        Some(list) => KeySet::from_list(list, "context.keys")?,
    };
    let issuer_key_sets = match ctx.get("issuer_key_sets") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            let mut sets = BTreeMap::new();
            for (issuer, list) in m.iter() {
                sets.insert(issuer.clone(), KeySet::from_list(list, &format!("context.issuer_key_sets/{issuer}"))?);
            }
            Some(sets)
        }
        Some(_) => return fail(Code::InvalidType, "context.issuer_key_sets", "expected an object"),
    };
    let prior_receipts = match ctx.get("prior_receipts") {
        None => Vec::new(),
        Some(Value::Array(list)) => list.iter().enumerate().map(|(i, v)| prior(v, i)).collect::<Result<_>>()?,
        Some(_) => return fail(Code::InvalidType, "context.prior_receipts", "expected an array"),
    };
    Ok(Context {
        keys,
        issuer: pin(ctx, "issuer")?,
        subject: pin(ctx, "subject")?,
        audience: pin(ctx, "audience")?,
        issuer_key_sets,
        created_after: pin(ctx, "created_after")?,
        created_before: pin(ctx, "created_before")?,
        prior_receipts,
    })
}

/// `{envelope: <envelope JSON text>, context}` → decode →
/// `Federation.verify_commitment`.
fn verify_commitment(input: &Value) -> Result<Map> {
    let env = federation::decode_envelope(text(input, "envelope")?.as_bytes(), &Limits::default())?;
    let ctx = context_of(input.get("context").unwrap_or(&Value::Object(Map::default())))?;
    let fact = federation::verify_commitment(&env.value, &ctx)?;
    Ok(out(vec![
        ("task_identity", Value::str(&fact.task_identity)),
        ("terminal_state", Value::str(&fact.terminal_state)),
        ("terminal_commitment", Value::str(fact.terminal_commitment.to_string())),
    ]))
}
