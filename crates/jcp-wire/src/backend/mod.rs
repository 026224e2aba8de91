//! The endpoint behind the gate (§11: "invoked only on Allow"), and the
//! §6.1 continuation payload a later exchange carries.
//!
//! | module | what |
//! |---|---|
//! | [`protocol`] | `jcp-backend/1`: the call and answer messages between an endpoint and a backend process, and blocking framing for a backend program |
//! | [`process`] | [`ProcessBackend`]: a child process speaking `jcp-backend/1`, reaped and restarted after a lost call |
//! | [`pipe`] | writing a child's input without blocking, within a time (Unix) |

#[cfg(unix)]
pub mod pipe;
pub mod process;
pub mod protocol;

pub use process::{ProcessBackend, ProcessOptions};
pub use protocol::{read_frame_sync, write_frame_sync, AnswerState, BackendAnswer, BackendCall, BACKEND_CAP};

use jcp::cbor::{self, ContentId, Fields, Value};
use jcp::frame::Frame;

use crate::error::WireError;

/// One call of the endpoint behind the gate. Built by the enforcement
/// point from the fields it decided over (§6.1 item 3): the frame it
/// decided, the argument bytes the receipt sealed, the handle it bound.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The frame the gate allowed.
    pub frame: &'a Frame,
    /// The argument bytes (their content id is the frame's payload hash).
    pub args: Option<&'a [u8]>,
    /// For a later exchange: the handle it continues, and the client's
    /// answers (already flow-checked).
    pub continues: Option<(&'a str, Option<&'a [u8]>)>,
}

/// What the endpoint behind the gate answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendReply {
    /// The work is done; its output.
    Done(Vec<u8>),
    /// The work failed; what it said.
    Failed(Vec<u8>),
    /// The work goes on under a handle the endpoint minted; a status text.
    Working {
        /// The handle (a bearer string until the gate binds it to a grant).
        handle: String,
        /// Status text.
        status: Vec<u8>,
    },
    /// The work needs the client's answers, sent with the handle.
    InputRequired {
        /// The handle.
        handle: String,
        /// What it asks.
        prompt: Vec<u8>,
    },
    /// The endpoint behind the gate stopped mid-call (it crashed, or its
    /// pipe closed) before answering: whether the work took effect is not
    /// knowable (§4.11). Never a success, never a failure: the decision
    /// stays unresolved, its debit held.
    Lost {
        /// What was seen (exit status, signal, the read that failed).
        why: String,
    },
}

/// A call sent to the endpoint behind the gate whose reply is still to
/// come ([`Backend::send`]): what waits for it, run on a thread that may
/// block.
pub type Awaiting = Box<dyn FnOnce() -> BackendReply + Send>;

/// The endpoint behind the enforcement point. Called on a blocking thread,
/// only after an allow was recorded durably.
pub trait Backend: Send + Sync + 'static {
    /// Runs one call.
    fn call(&self, call: Call<'_>) -> BackendReply;

    /// Sends one call without waiting for its reply, where sending never
    /// blocks for long (a line written to a pipe the endpoint behind the
    /// gate reads): what waits for the reply. The relay then sends from
    /// the thread the decision was made on, and only the wait goes to a
    /// thread that may block (one hand-off between threads fewer before
    /// the work starts; issue 36). `None`: this backend does not split a
    /// call, and nothing was sent ([`Backend::call`] runs it, on a
    /// blocking thread). [`Backend::prepare`] must be quick for a backend
    /// that sends here. Default: `None`.
    fn send(&self, _call: Call<'_>) -> Option<Awaiting> {
        None
    }

    /// Whether [`Backend::send`] sends (decided once, before a span opens
    /// for the call). Default: `false`.
    fn sends_quickly(&self) -> bool {
        false
    }

    /// Readies the endpoint behind the gate for the next call (a process
    /// backend starts a fresh child after a lost call here), so that
    /// [`Backend::tree_root`] names the process the call will run in
    /// before its span opens. Default: nothing to ready.
    fn prepare(&self) {}

    /// The root of the process tree that runs the work, when it runs in
    /// another process the enforcement point can read (its pid): the
    /// endpoint meters each call as a span over that tree (§5.1 rung 3,
    /// §11 "the cost is the holder's measurement"). `None`: the work runs
    /// on the endpoint's own threads, metered as such.
    fn tree_root(&self) -> Option<u32> {
        None
    }

    /// The operator's declaration that the tree hands no work to a process
    /// outside it (§5.1): without it no figure of the tree is `Whole`.
    fn self_contained(&self) -> bool {
        false
    }
}

/// The payload of a later exchange (§6.1 item 1): it commits to the id of
/// the receipt it continues, so one piece of work's receipts chain. Its
/// canonical bytes are the request's `args`; their content id the frame's
/// `payload_hash`, which the receipt seals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation {
    /// The receipt this exchange continues (the first, or the previous
    /// continuation's).
    pub continues: ContentId,
    /// The handle.
    pub handle: String,
    /// The client's answers, if the work asked for input.
    pub answers: Option<Vec<u8>>,
}

impl Continuation {
    /// The canonical value.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("continues", Some(Value::text(self.continues.to_hex()))),
            ("handle", Some(Value::text(self.handle.as_str()))),
            ("answers", self.answers.clone().map(Value::Bytes)),
        ])
    }

    /// Canonical bytes (a later exchange's `args`).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads canonical bytes.
    pub fn from_bytes(b: &[u8]) -> Result<Self, WireError> {
        let v = cbor::decode_strict(b)?;
        let mut f = Fields::new("Continuation", &v)?;
        let continues = f.cid("continues")?;
        let handle = f.text("handle")?.to_owned();
        let answers = match f.opt("answers") {
            None => None,
            Some(Value::Bytes(b)) => Some(b.clone()),
            Some(_) => return Err(f.error("answers", "expected bytes").into()),
        };
        f.finish()?;
        Ok(Self { continues, handle, answers })
    }
}

/// The closing record of a continued piece of work (§6.1 item 4): the
/// first receipt, every continuation's receipt, the joules metered across
/// them, the outcome's digest, and whether that sum covers the work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closing {
    /// The first request's receipt.
    pub first: ContentId,
    /// Every continuation's receipt, in order.
    pub continuations: Vec<ContentId>,
    /// µJ metered across the exchanges.
    pub joules_uj: u64,
    /// `Partial` unless the meter read the work between the exchanges
    /// (§5.2): the endpoint works inside no exchange's span.
    pub coverage: jcp::energy::Coverage,
    /// The outcome's content id.
    pub outcome: ContentId,
    /// `done` or `failed`.
    pub status: &'static str,
}

impl Closing {
    /// The canonical value (sealed as a JCR-1 record in the stream).
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("jcp_record", Some(Value::text("closing"))),
            ("first", Some(Value::text(self.first.to_hex()))),
            ("continuations", Some(Value::Array(self.continuations.iter().map(|c| Value::text(c.to_hex())).collect()))),
            ("joules_uj", Some(Value::Uint(self.joules_uj))),
            ("energy_coverage", Some(Value::text(self.coverage.as_str()))),
            ("outcome", Some(Value::text(self.outcome.to_hex()))),
            ("status", Some(Value::text(self.status))),
        ])
    }

    /// Reads the canonical value.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("Closing", v)?;
        if f.text("jcp_record")? != "closing" {
            return Err(f.error("jcp_record", "expected \"closing\"").into());
        }
        let first = f.cid("first")?;
        let Value::Array(items) = f.req("continuations")? else {
            return Err(f.error("continuations", "expected an array").into());
        };
        let continuations = items
            .iter()
            .map(|i| match i {
                Value::Text(t) => ContentId::parse(t)
                    .ok_or_else(|| WireError::schema("Closing", "continuations: expected content ids")),
                _ => Err(WireError::schema("Closing", "continuations: expected content ids")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let joules_uj = f.uint("joules_uj")?;
        let coverage = match f.text("energy_coverage")? {
            "Whole" => jcp::energy::Coverage::Whole,
            "Partial" => jcp::energy::Coverage::Partial,
            other => return Err(f.error("energy_coverage", format!("unknown coverage {other:?}")).into()),
        };
        let outcome = f.cid("outcome")?;
        let status = match f.text("status")? {
            "done" => "done",
            "failed" => "failed",
            other => return Err(f.error("status", format!("unknown status {other:?}")).into()),
        };
        f.finish()?;
        Ok(Self { first, continuations, joules_uj, coverage, outcome, status })
    }
}
