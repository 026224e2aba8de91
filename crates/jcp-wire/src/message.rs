//! §11 messages: `WireRequest { frame, chain, caller, cost, now, signature }`
//! and `WireResponse { decision, receipt }`, plus the binding's own
//! messages (revocation and amendment feeds, the reply of the endpoint
//! behind the gate). Every message is a canonical det-CBOR map whose key
//! set is closed: an unknown field is refused, never forwarded (§4.10).
//!
//! Optional request fields are omitted when absent, so a request that uses
//! none of them is exactly §11's six fields:
//! `money` (§4.8), `label` (§4.10: the argument's label; absent = not
//! computed), `args` (the argument bytes forwarded to the endpoint behind
//! the gate; their content id MUST equal the frame's `payload_hash`, so the
//! receipt seals them), `continues` (§6.1: the handle a later exchange
//! names).
//!
//! | module | message |
//! |---|---|
//! | `request` | §11 `WireRequest`, signed by its caller |
//! | `response` | §11 `WireResponse`: the decision and the sealed receipt |
//! | `reply` | §6.1 the reply of the endpoint behind the gate |
//! | `feed` | revocation (§4.3), amendment (§4.7), outcome (§4.11) and statement (§4.5) feeds |
//! | `statement` | §4.5 the ask for a point's statement, and its answer |

mod feed;
mod reply;
mod request;
mod response;
mod statement;

use jcp::cbor::{self, ContentId, Fields, Value};

pub use feed::{Feed, FeedAnswer, SignedOutcome};
pub use reply::{ReplyState, WireReply};
pub use request::{
    ChainMemo, RequestBody, WireRequest, MAX_ACTION_LEN, MAX_CHAIN_LEN, MAX_CURRENCY_LEN, MAX_HANDLE_LEN,
};
pub use response::{WireDecision, WireResponse};
use statement::read_ask;
pub use statement::{statement_answer, statement_ask};

use crate::error::WireError;

/// Any message a client may send the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A decision request (§11).
    Request(Box<WireRequest>),
    /// A feed message.
    Feed(Box<Feed>),
    /// §4.5: asks the endpoint for its signed statement of its cumulative
    /// allowed spend on a channel grant (`{msg: "statement-ask", grant_id}`).
    StatementAsk(ContentId),
}

impl Inbound {
    /// Decodes a frame body: canonical det-CBOR, then the message. A map
    /// with a `msg` member is a feed message; any other map is a request.
    pub fn decode(body: &[u8]) -> Result<Self, WireError> {
        Self::decode_with(body, &mut ChainMemo::default())
    }

    /// [`Inbound::decode`] for a connection, which keeps the chain its
    /// last request presented in `memo`. A request is read straight from
    /// its bytes (checked as canonical exactly as the tree decoder checks
    /// them); anything else, or a request that is not valid, goes through
    /// the value tree, which gives the same message or says what is wrong.
    pub fn decode_with(body: &[u8], memo: &mut ChainMemo) -> Result<Self, WireError> {
        if let Some(entries) = cbor::map_spans_strict(body)? {
            if !entries.iter().any(|&(k, _)| k == "msg") {
                if let Some(r) = WireRequest::from_spans(&entries, memo) {
                    return Ok(Self::Request(Box::new(r)));
                }
            }
        }
        Self::decode_tree(body)
    }

    /// Decodes a frame body through a value tree of the whole (the
    /// reference the direct request reader is checked against).
    pub fn decode_tree(body: &[u8]) -> Result<Self, WireError> {
        let v = crate::codec::decode_body(body)?;
        let kind = v.get("msg").map(|m| match m {
            Value::Text(t) => Ok(t.clone()),
            _ => Err(WireError::schema("message", "msg: expected text")),
        });
        match kind {
            None => Ok(Self::Request(Box::new(WireRequest::from_value(&v)?))),
            Some(Ok(k)) if k == "statement-ask" => Ok(Self::StatementAsk(read_ask(&v)?)),
            Some(k) => Ok(Self::Feed(Box::new(Feed::from_value(&k?, &v)?))),
        }
    }
}

/// Any message the endpoint sends a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outbound {
    /// The response to a request.
    Response(WireResponse),
    /// The reply of the endpoint behind the gate, after an allow.
    Reply(WireReply),
    /// The answer to a feed message.
    FeedAnswer(FeedAnswer),
    /// A point's signed statement, answering a statement ask (§4.5).
    Statement(jcp::channel::SignedStatement),
    /// The endpoint refused a frame (and closed the connection).
    Error {
        /// The refusal's code ([`WireError::code`]).
        code: String,
        /// What was wrong, and where.
        message: String,
    },
}

impl Outbound {
    /// Decodes a frame body sent by an endpoint.
    pub fn decode(body: &[u8]) -> Result<Self, WireError> {
        let v = crate::codec::decode_body(body)?;
        match v.get("msg") {
            None => Ok(Self::Response(WireResponse::from_value(&v)?)),
            Some(Value::Text(t)) if t == "reply" => Ok(Self::Reply(WireReply::from_value(&v)?)),
            Some(Value::Text(t)) if t == "feed-answer" => Ok(Self::FeedAnswer(FeedAnswer::from_value(&v)?)),
            Some(Value::Text(t)) if t == "statement" => {
                let mut f = Fields::new("StatementAnswer", &v)?;
                f.text("msg")?;
                let st = jcp::channel::SignedStatement::from_value(f.req("statement")?)?;
                f.finish()?;
                Ok(Self::Statement(st))
            }
            Some(Value::Text(t)) if t == "error" => {
                let mut f = Fields::new("Error", &v)?;
                f.text("msg")?;
                let code = f.text("code")?.to_owned();
                let message = f.text("message")?.to_owned();
                f.finish()?;
                Ok(Self::Error { code, message })
            }
            Some(other) => Err(WireError::schema("message", format!("unknown endpoint message {other:?}"))),
        }
    }
}
