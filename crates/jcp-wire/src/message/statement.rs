//! §4.5 a point's signed budget-channel statement over the wire: the ask
//! (`{msg: "statement-ask", grant_id}`) and the answer
//! (`{msg: "statement", statement}`).

use jcp::cbor::{self, ContentId, Fields, Value};

use crate::error::WireError;

/// The ask for a point's statement on a channel grant (§4.5).
pub fn statement_ask(grant_id: &ContentId) -> Value {
    cbor::map([("msg", Some(Value::text("statement-ask"))), ("grant_id", Some(Value::text(grant_id.to_hex())))])
}

/// The endpoint's answer to a statement ask: `{msg: "statement", statement}`.
pub fn statement_answer(s: &jcp::channel::SignedStatement) -> Value {
    cbor::map([("msg", Some(Value::text("statement"))), ("statement", Some(s.to_value()))])
}

/// Reads a statement ask: the channel grant it names.
pub(super) fn read_ask(v: &Value) -> Result<ContentId, WireError> {
    let mut f = Fields::new("StatementAsk", v)?;
    f.text("msg")?;
    let id = f.cid("grant_id")?;
    f.finish()?;
    Ok(id)
}
