//! §4.7 run records: the grant, checkpoint and amendment items of a run, in
//! file order.

use super::{SignedAmendment, SignedCheckpoint};
use crate::cbor::{ContentId, SchemaError, Value};
use crate::error::Error;
use crate::grant::SignedGrant;

/// One record of a run, in file order. (Unboxed: a run holds a handful of
/// grants, and a boxed variant would cost every caller a deref for nothing.)
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "a run holds a handful of records: boxing the grant would cost every caller a deref for nothing"
)]
pub enum Record {
    /// The run's grant (record 0) or a continuation grant.
    Grant(SignedGrant),
    /// A checkpoint by the agent.
    Checkpoint(SignedCheckpoint),
    /// An amendment by the issuer.
    Amendment(SignedAmendment),
}

impl Record {
    /// `grant`, `checkpoint` or `amendment`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Grant(_) => "grant",
            Self::Checkpoint(_) => "checkpoint",
            Self::Amendment(_) => "amendment",
        }
    }

    /// The record's content id (a grant's id, a checkpoint's, an amendment's).
    pub fn id(&self) -> ContentId {
        match self {
            Self::Grant(g) => g.id(),
            Self::Checkpoint(c) => c.id(),
            Self::Amendment(a) => a.id(),
        }
    }

    /// The record's item in the run file: a one-entry map `{kind: object}`.
    pub fn to_value(&self) -> Value {
        let inner = match self {
            Self::Grant(g) => g.to_value(),
            Self::Checkpoint(c) => c.to_value(),
            Self::Amendment(a) => a.to_value(),
        };
        Value::Map(vec![(Value::text(self.kind()), inner)])
    }

    /// Reads a record item; an unknown kind is refused (closed world).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let Value::Map(entries) = v else { return Err(SchemaError::NotAMap { object: "RunRecord" }.into()) };
        let [(Value::Text(kind), inner)] = entries.as_slice() else {
            return Err(SchemaError::Invalid {
                object: "RunRecord",
                field: "kind",
                problem: "a record is a map with exactly one text key".into(),
            }
            .into());
        };
        match kind.as_str() {
            "grant" => Ok(Self::Grant(SignedGrant::from_value(inner)?)),
            "checkpoint" => Ok(Self::Checkpoint(SignedCheckpoint::from_value(inner)?)),
            "amendment" => Ok(Self::Amendment(SignedAmendment::from_value(inner)?)),
            other => Err(SchemaError::Unknown { object: "RunRecord", field: other.to_owned() }.into()),
        }
    }
}
