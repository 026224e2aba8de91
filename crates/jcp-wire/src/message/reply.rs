//! §6.1 the reply of the endpoint behind the gate, sent after the response
//! of an allowed request: its output, admitted as data and labelled
//! (§6.1 item 3), and the handle of work that goes on.

use jcp::cbor::{self, ContentId, Fields, Value};
use jcp::flow::Label;

use crate::error::WireError;
use crate::metering::CallFigure;

/// What the endpoint behind the gate answered, sent after the response of
/// an allowed request (§6.1): admitted as `data`, labelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireReply {
    /// The receipt of the exchange this answers.
    pub receipt: ContentId,
    /// `done`, `working` (a handle to poll) or `input-required`, or
    /// `unavailable` for a repeat whose reply this endpoint no longer holds.
    pub state: ReplyState,
    /// The handle of work that goes on.
    pub handle: Option<String>,
    /// The output or status text (data: never control).
    pub output: Vec<u8>,
    /// The output's label: the first request's action's output, joined
    /// with everything the client has sent the work (§6.1 item 3).
    pub label: Label,
    /// On `done` after continuations: the closing record's id.
    pub closing: Option<ContentId>,
    /// §11 relay mode: the sealed charge receipt (§4.9 phase two) of what
    /// the endpoint metered this exchange's work at.
    pub charge: Option<Vec<u8>>,
    /// §11 relay mode: why the charge was not recorded (the decision then
    /// stays unresolved, its reservation debited).
    pub charge_refused: Option<String>,
    /// §11 relay mode: the figure the endpoint metered, with its gaps.
    pub metered: Option<CallFigure>,
}

/// The state a reply reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyState {
    /// The work is done; `output` is its outcome.
    Done,
    /// The work goes on; poll with `continues = handle`.
    Working,
    /// The work needs answers; send them with `continues = handle`.
    InputRequired,
    /// The work failed.
    Failed,
    /// A repeated request: the reply is not held (the decision is).
    Unavailable,
    /// The endpoint behind the gate stopped mid-call: whether the work
    /// took effect is not known; the decision stays unresolved (§4.11).
    Lost,
}

impl ReplyState {
    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Working => "working",
            Self::InputRequired => "input-required",
            Self::Failed => "failed",
            Self::Unavailable => "unavailable",
            Self::Lost => "lost",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::Done, Self::Working, Self::InputRequired, Self::Failed, Self::Unavailable, Self::Lost]
            .into_iter()
            .find(|x| x.as_str() == s)
    }
}

impl WireReply {
    /// A reply with nothing charged, metered or closed (yet).
    pub fn of(receipt: ContentId, state: ReplyState, handle: Option<String>, output: Vec<u8>, label: Label) -> Self {
        Self { receipt, state, handle, output, label, closing: None, charge: None, charge_refused: None, metered: None }
    }

    /// The reply to a repeat: the decision is held, the reply is not.
    pub fn unavailable(receipt: ContentId) -> Self {
        Self::of(receipt, ReplyState::Unavailable, None, Vec::new(), Label::top())
    }

    /// The canonical message value.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("msg", Some(Value::text("reply"))),
            ("receipt", Some(Value::text(self.receipt.to_hex()))),
            ("state", Some(Value::text(self.state.as_str()))),
            ("handle", self.handle.clone().map(Value::Text)),
            ("output", Some(Value::Bytes(self.output.clone()))),
            ("label", Some(self.label.to_value())),
            ("closing", self.closing.map(|c| Value::text(c.to_hex()))),
            ("charge", self.charge.clone().map(Value::Bytes)),
            ("charge_refused", self.charge_refused.clone().map(Value::Text)),
            ("metered", self.metered.as_ref().map(CallFigure::to_value)),
        ])
    }

    /// Reads a reply.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("WireReply", v)?;
        if f.text("msg")? != "reply" {
            return Err(f.error("msg", "expected \"reply\"").into());
        }
        let receipt = f.cid("receipt")?;
        let s = f.text("state")?;
        let state = ReplyState::parse(s).ok_or_else(|| f.error("state", format!("unknown state {s:?}")))?;
        let handle = f.opt_text("handle")?.map(str::to_owned);
        let Value::Bytes(output) = f.req("output")? else {
            return Err(f.error("output", "expected bytes").into());
        };
        let output = output.clone();
        let label = Label::from_value(f.req("label")?)?;
        let closing = f.opt_cid("closing")?;
        let charge = match f.opt("charge") {
            None => None,
            Some(Value::Bytes(b)) => Some(b.clone()),
            Some(_) => return Err(f.error("charge", "expected bytes").into()),
        };
        let charge_refused = f.opt_text("charge_refused")?.map(str::to_owned);
        let metered = f.opt("metered").map(CallFigure::from_value).transpose()?;
        f.finish()?;
        Ok(Self { receipt, state, handle, output, label, closing, charge, charge_refused, metered })
    }
}
