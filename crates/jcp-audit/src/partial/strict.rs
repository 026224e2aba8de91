//! Reading a partial strictly, and writing one: the format and spec it
//! states checked first, then every field, table index, code and record,
//! and only its one encoding read (what it re-encodes to).

use std::path::Path;

use jcp::identity::Did;
use serde::Deserialize;

use super::format::Partial;
use super::load::load;
use super::{cmp_streams, PARTIAL_FORMAT, SPEC};
use crate::AuditError;

impl Partial {
    /// The partial as JSON (one line).
    pub fn to_json(&self) -> Result<Vec<u8>, AuditError> {
        serde_json::to_vec(self).map_err(|e| AuditError::Io { path: "partial".into(), message: e.to_string() })
    }

    /// Reads a partial strictly; `file` names it in every error.
    pub fn from_json(file: &str, bytes: &[u8]) -> Result<Self, AuditError> {
        #[derive(Deserialize)]
        struct Head {
            format: Option<serde_json::Value>,
            spec: Option<serde_json::Value>,
        }
        let field =
            |field: &str, message: String| AuditError::PartialField { file: file.into(), field: field.into(), message };
        let head: Head = serde_json::from_slice(bytes)
            .map_err(|e| AuditError::PartialUnreadable { file: file.into(), message: e.to_string() })?;
        for (name, want, got) in [("format", PARTIAL_FORMAT, head.format), ("spec", SPEC, head.spec)] {
            match got {
                None => return Err(field(name, "missing".into())),
                Some(serde_json::Value::String(s)) if s == want => {}
                Some(v) => {
                    return Err(AuditError::PartialVersion {
                        file: file.into(),
                        field: name.into(),
                        found: v.to_string(),
                        expected: want,
                    })
                }
            }
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let p: Partial = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            field(&path, e.into_inner().to_string())
        })?;
        de.end().map_err(|e| AuditError::PartialUnreadable { file: file.into(), message: e.to_string() })?;
        p.check(file)?;
        // One encoding per partial: what decodes must be exactly what it
        // re-encodes to (compact, fields in order, absent rather than null,
        // objects as objects), so no second spelling of a partial is read.
        let canonical = p.to_json()?;
        if canonical != bytes {
            let at = canonical.iter().zip(bytes).position(|(a, b)| a != b).unwrap_or(canonical.len().min(bytes.len()));
            return Err(field(&format!("byte {at}"), "not the canonical encoding (compact JSON as `jcp audit --partial` writes it: fields in order, absent rather than null, no escapes it does not need)".into()));
        }
        Ok(p)
    }

    /// Everything beyond the JSON types: options, tables, codes, records.
    fn check(&self, file: &str) -> Result<(), AuditError> {
        let field = |field: String, message: String| AuditError::PartialField { file: file.into(), field, message };
        let o = &self.options;
        for (i, s) in o.expected_stewards.iter().enumerate() {
            Did::parse(s).map_err(|e| field(format!("options.expected_stewards[{i}]"), e.to_string()))?;
            if i > 0 && o.expected_stewards[i - 1] >= *s {
                return Err(field(format!("options.expected_stewards[{i}]"), "not sorted, or repeated".into()));
            }
        }
        if !["batch", "strict"].contains(&o.verification.as_str()) {
            return Err(field("options.verification".into(), format!("{:?}: batch or strict", o.verification)));
        }
        usize::try_from(o.max_findings).map_err(|_| field("options.max_findings".into(), "too large".into()))?;
        if self.streams.is_empty() {
            return Err(field("streams".into(), "no stream".into()));
        }
        for (i, st) in self.streams.iter().enumerate() {
            load(st, i, file, &format!("streams[{i}]"))?;
            if i > 0 && cmp_streams(&self.streams[i - 1], st) == std::cmp::Ordering::Greater {
                return Err(field(format!("streams[{i}]"), "streams are not in merge order (by path)".into()));
            }
        }
        Ok(())
    }
}

/// Reads a partial file strictly.
pub fn read_partial(path: &Path) -> Result<Partial, AuditError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| AuditError::Io { path: name.clone(), message: e.to_string() })?;
    Partial::from_json(&name, &bytes)
}

/// Writes a partial file.
pub fn write_partial(path: &Path, partial: &Partial) -> Result<(), AuditError> {
    let bytes = partial.to_json()?;
    std::fs::write(path, bytes).map_err(|e| AuditError::Io { path: path.display().to_string(), message: e.to_string() })
}
