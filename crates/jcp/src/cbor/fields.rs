//! §3 typed reading: [`Fields`], the closed-world reader of a canonical map
//! into a JCP object, and [`SchemaError`], why a map is not that object.

use super::{ContentId, Value};

/// Why a canonical item is not the JCP object it was read as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The item is not a map.
    #[error("{object}: expected a map")]
    NotAMap {
        /// The object being read (`Grant`, `Checkpoint`, …).
        object: &'static str,
    },
    /// A required field is missing.
    #[error("{object}: missing field `{field}`")]
    Missing {
        /// The object being read (`Grant`, `Checkpoint`, …).
        object: &'static str,
        /// The required field.
        field: &'static str,
    },
    /// A field the object does not define (closed world).
    #[error("{object}: unknown field `{field}`")]
    Unknown {
        /// The object being read (`Grant`, `Checkpoint`, …).
        object: &'static str,
        /// The key the object does not define.
        field: String,
    },
    /// A field of the wrong type or value.
    #[error("{object}.{field}: {problem}")]
    Invalid {
        /// The object being read (`Grant`, `Checkpoint`, …).
        object: &'static str,
        /// The field.
        field: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
}

impl SchemaError {
    /// A stable code for machines.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotAMap { .. } => "schema-not-a-map",
            Self::Missing { .. } => "schema-missing-field",
            Self::Unknown { .. } => "schema-unknown-field",
            Self::Invalid { .. } => "schema-invalid-field",
        }
    }
}

/// Reads the fields of a JCP object map: every field must be taken, so a map
/// with a field the object does not define is refused by [`Fields::finish`].
#[derive(Debug)]
pub struct Fields<'a> {
    object: &'static str,
    entries: Vec<(&'a str, &'a Value)>,
    taken: Vec<bool>,
}

impl<'a> Fields<'a> {
    /// Starts reading `value` as the object named `object`.
    pub fn new(object: &'static str, value: &'a Value) -> Result<Self, SchemaError> {
        let Value::Map(entries) = value else {
            return Err(SchemaError::NotAMap { object });
        };
        let mut out = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let Value::Text(k) = k else {
                return Err(SchemaError::Unknown { object, field: format!("{k:?}") });
            };
            out.push((k.as_str(), v));
        }
        let taken = vec![false; out.len()];
        Ok(Self { object, entries: out, taken })
    }

    fn invalid(&self, field: &'static str, problem: impl Into<String>) -> SchemaError {
        SchemaError::Invalid { object: self.object, field, problem: problem.into() }
    }

    /// Takes an optional field.
    pub fn opt(&mut self, field: &'static str) -> Option<&'a Value> {
        let i = self.entries.iter().position(|(k, _)| *k == field)?;
        self.taken[i] = true;
        Some(self.entries[i].1)
    }

    /// Takes a required field.
    pub fn req(&mut self, field: &'static str) -> Result<&'a Value, SchemaError> {
        self.opt(field).ok_or(SchemaError::Missing { object: self.object, field })
    }

    /// A required text field.
    pub fn text(&mut self, field: &'static str) -> Result<&'a str, SchemaError> {
        match self.req(field)? {
            Value::Text(s) => Ok(s),
            _ => Err(self.invalid(field, "expected text")),
        }
    }

    /// An optional text field.
    pub fn opt_text(&mut self, field: &'static str) -> Result<Option<&'a str>, SchemaError> {
        match self.opt(field) {
            None => Ok(None),
            Some(Value::Text(s)) => Ok(Some(s)),
            Some(_) => Err(self.invalid(field, "expected text")),
        }
    }

    /// A required unsigned integer field.
    pub fn uint(&mut self, field: &'static str) -> Result<u64, SchemaError> {
        match self.req(field)? {
            Value::Uint(n) => Ok(*n),
            _ => Err(self.invalid(field, "expected an unsigned integer")),
        }
    }

    /// An optional unsigned integer field.
    pub fn opt_uint(&mut self, field: &'static str) -> Result<Option<u64>, SchemaError> {
        match self.opt(field) {
            None => Ok(None),
            Some(Value::Uint(n)) => Ok(Some(*n)),
            Some(_) => Err(self.invalid(field, "expected an unsigned integer")),
        }
    }

    /// A required byte string of exactly `N` bytes.
    pub fn bytes_n<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], SchemaError> {
        match self.req(field)? {
            Value::Bytes(b) if b.len() == N => {
                let mut out = [0u8; N];
                out.copy_from_slice(b);
                Ok(out)
            }
            Value::Bytes(b) => Err(self.invalid(field, format!("expected {N} bytes, got {}", b.len()))),
            _ => Err(self.invalid(field, "expected a byte string")),
        }
    }

    /// A required content id (64 lowercase hex digits).
    pub fn cid(&mut self, field: &'static str) -> Result<ContentId, SchemaError> {
        let s = self.text(field)?;
        ContentId::parse(s).ok_or_else(|| self.invalid(field, "expected a content id (64 lowercase hex digits)"))
    }

    /// An optional content id.
    pub fn opt_cid(&mut self, field: &'static str) -> Result<Option<ContentId>, SchemaError> {
        match self.opt_text(field)? {
            None => Ok(None),
            Some(s) => ContentId::parse(s)
                .map(Some)
                .ok_or_else(|| self.invalid(field, "expected a content id (64 lowercase hex digits)")),
        }
    }

    /// A required array of text.
    pub fn text_array(&mut self, field: &'static str) -> Result<Vec<String>, SchemaError> {
        match self.req(field)? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::Text(s) => Ok(s.clone()),
                    _ => Err(self.invalid(field, "expected an array of text")),
                })
                .collect(),
            _ => Err(self.invalid(field, "expected an array")),
        }
    }

    /// Refuses any field that was not taken (closed world).
    pub fn finish(self) -> Result<(), SchemaError> {
        match self.taken.iter().position(|t| !t) {
            Some(i) => Err(SchemaError::Unknown { object: self.object, field: self.entries[i].0.to_owned() }),
            None => Ok(()),
        }
    }

    /// An error for `field` (for callers validating further).
    pub fn error(&self, field: &'static str, problem: impl Into<String>) -> SchemaError {
        self.invalid(field, problem)
    }
}
