//! This project's surfaces beyond the reference's sixteen: `corpus.load`
//! (the §15 loader over an inline corpus) and `reconcile.run` (the §13 pass).

use std::collections::BTreeMap;

use super::input::{keys_of, out};
use crate::error::{Code, Error, Result};
use crate::json::{Map, Value};
use crate::reconcile;

pub(super) fn execute(surface: &str, input: &Value) -> Option<Result<Map>> {
    Some(match surface {
        "corpus.load" => corpus_load(input),
        "reconcile.run" => reconcile_run(input),
        _ => return None,
    })
}

fn corpus_load(input: &Value) -> Result<Map> {
    let m = input
        .get("files")
        .and_then(Value::as_object)
        .ok_or_else(|| Error::new(Code::InvalidType, "files", "expected {path: text}"))?;
    let files: BTreeMap<String, Vec<u8>> =
        m.iter().filter_map(|(k, v)| v.as_str().map(|t| (k.clone(), t.as_bytes().to_vec()))).collect();
    let floor: Vec<&str> = match input.get("surfaces").and_then(Value::as_array) {
        Some(list) => list.iter().filter_map(Value::as_str).collect(),
        None => super::SURFACES.to_vec(),
    };
    let c = crate::corpus::load_with_floor(&files, &floor)?;
    Ok(out(vec![("digest", Value::str(c.digest.to_string())), ("cases", Value::from_u64(c.cases.len() as u64))]))
}

fn reconcile_run(input: &Value) -> Result<Map> {
    let text = |k: &str| {
        input
            .get(k)
            .and_then(Value::as_str)
            .map(str::as_bytes)
            .ok_or_else(|| Error::new(Code::InvalidType, k, "expected text"))
    };
    let mut inputs = reconcile::Inputs {
        keys: keys_of(input)?,
        host_bounds: input.get("host_bounds").cloned(),
        ..reconcile::Inputs::default()
    };
    inputs.binding.now = input.get("now").and_then(Value::as_str).map(str::to_string);
    inputs.binding.max_attestation_age_ms = input.get("max_attestation_age_ms").and_then(Value::as_i64);
    let ev = reconcile::reconcile(text("blueprint")?, text("deployment")?, &inputs);
    if let Some(e) = ev.first_failure {
        return Err(e);
    }
    Ok(out(vec![
        ("clamp_count", Value::from_u64(ev.clamps.len() as u64)),
        ("effective", ev.effective_bounds.unwrap_or(Value::Null)),
        ("not_verified", Value::Array(ev.not_verified.iter().map(|n| Value::str(&n.surface)).collect())),
    ]))
}
