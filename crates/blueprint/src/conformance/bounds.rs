//! The bounds surfaces: `bounds.new` (decoder limits) and
//! `bounds_algebra.intersect` (the meet).

use super::input::out;
use crate::bounds;
use crate::error::Result;
use crate::json::{Map, Value};
use crate::limits::Limits;

pub(super) fn execute(surface: &str, input: &Value) -> Option<Result<Map>> {
    Some(match surface {
        "bounds.new" => {
            Limits::new(input.get("bounds").unwrap_or(&Value::Null)).map(|l| out(vec![("bounds", l.to_value())]))
        }
        "bounds_algebra.intersect" => bounds::intersect_value(input)
            .map(|r| out(vec![("effective", r.effective), ("clamp_count", Value::from_u64(r.clamp_count as u64))])),
        _ => return None,
    })
}
