//! `jcp-backend/1`: how an enforcement point calls the endpoint behind it
//! when that endpoint is a child process (`docs/backend-protocol.md`).
//!
//! The framing is §11's: a 4-byte big-endian length, then one canonical
//! det-CBOR map, at most [`BACKEND_CAP`] bytes each way. The endpoint writes
//! a [`BackendCall`] to the child's stdin and reads one [`BackendAnswer`]
//! from its stdout; one call is in flight at a time. Both decoders are
//! strict (closed world): an unknown or missing field is
//! [`WireError::NotAMessage`] naming it, a body that is not canonical is
//! [`WireError::NonCanonical`].
//!
//! [`read_frame_sync`] and [`write_frame_sync`] are the blocking framing a
//! backend program written in Rust uses on its stdin and stdout.

use std::io::{Read, Write};

use jcp::cbor::{self, Fields, Value};
use jcp::frame::Frame;

use super::{BackendReply, Call};
use crate::error::WireError;
use crate::message::MAX_HANDLE_LEN;

/// The protocol's name and version, as the documentation names it.
pub const PROTOCOL: &str = "jcp-backend/1";

/// The cap on one message body, each way: 1 MiB.
pub const BACKEND_CAP: usize = 1 << 20;

/// One call, endpoint → backend: `{msg: "call", id, frame, args?,
/// continues?, answers?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendCall {
    /// The call's number within one backend process: 1, 2, 3, …
    pub id: u64,
    /// The frame the gate allowed.
    pub frame: Frame,
    /// The argument bytes the receipt sealed (a first request).
    pub args: Option<Vec<u8>>,
    /// The handle a later exchange continues (§6.1).
    pub continues: Option<String>,
    /// The client's answers to an `input-required` (only with `continues`).
    pub answers: Option<Vec<u8>>,
}

/// What the backend says of the call, in a [`BackendAnswer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerState {
    /// `done`: the work is finished; `output` is its output.
    Done,
    /// `failed`: the work failed; `output` says how.
    Failed,
    /// `working`: the work goes on under `handle`; `output` is a status.
    Working,
    /// `input-required`: the work needs the client's answers, sent with
    /// `handle`; `output` is what it asks.
    InputRequired,
}

impl AnswerState {
    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Working => "working",
            Self::InputRequired => "input-required",
        }
    }

    /// Reads the wire text.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "done" => Self::Done,
            "failed" => Self::Failed,
            "working" => Self::Working,
            "input-required" => Self::InputRequired,
            _ => return None,
        })
    }

    /// Whether the state carries a handle (and must).
    pub fn has_handle(self) -> bool {
        matches!(self, Self::Working | Self::InputRequired)
    }
}

/// One answer, backend → endpoint: `{msg: "reply", id, state, output,
/// handle?}`. `handle` is present exactly when the state is `working` or
/// `input-required`, and has 1..=128 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendAnswer {
    /// The id of the call it answers.
    pub id: u64,
    /// What became of the call.
    pub state: AnswerState,
    /// The output, status text or prompt.
    pub output: Vec<u8>,
    /// The handle of work that goes on.
    pub handle: Option<String>,
}

fn opt_bytes(f: &mut Fields<'_>, field: &'static str) -> Result<Option<Vec<u8>>, WireError> {
    match f.opt(field) {
        None => Ok(None),
        Some(Value::Bytes(b)) => Ok(Some(b.clone())),
        Some(_) => Err(f.error(field, "expected bytes").into()),
    }
}

fn check_msg(f: &mut Fields<'_>, want: &'static str) -> Result<(), WireError> {
    let msg = f.text("msg")?;
    if msg == want {
        Ok(())
    } else {
        Err(f.error("msg", format!("expected {want:?}, got {msg:?}")).into())
    }
}

fn handle_ok(h: &str) -> bool {
    !h.is_empty() && h.len() <= MAX_HANDLE_LEN
}

impl BackendCall {
    /// The call the endpoint sends for `call`, numbered `id`.
    pub fn of(id: u64, call: &Call<'_>) -> Self {
        Self {
            id,
            frame: call.frame.clone(),
            args: call.args.map(<[u8]>::to_vec),
            continues: call.continues.map(|(h, _)| h.to_owned()),
            answers: call.continues.and_then(|(_, a)| a).map(<[u8]>::to_vec),
        }
    }

    /// The canonical value.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("msg", Some(Value::text("call"))),
            ("id", Some(Value::Uint(self.id))),
            ("frame", Some(self.frame.to_value())),
            ("args", self.args.clone().map(Value::Bytes)),
            ("continues", self.continues.as_deref().map(Value::text)),
            ("answers", self.answers.clone().map(Value::Bytes)),
        ])
    }

    /// Reads the canonical value (strict: every field known, `answers`
    /// only with `continues`, a handle of 1..=128 bytes).
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("BackendCall", v)?;
        check_msg(&mut f, "call")?;
        let id = f.uint("id")?;
        let frame = Frame::from_value(f.req("frame")?)?;
        let args = opt_bytes(&mut f, "args")?;
        let continues = f.opt_text("continues")?.map(str::to_owned);
        if continues.as_deref().is_some_and(|h| !handle_ok(h)) {
            return Err(f.error("continues", format!("a handle has 1..={MAX_HANDLE_LEN} bytes")).into());
        }
        let answers = opt_bytes(&mut f, "answers")?;
        if answers.is_some() && continues.is_none() {
            return Err(f.error("answers", "answers come only with `continues`").into());
        }
        f.finish()?;
        Ok(Self { id, frame, args, continues, answers })
    }

    /// Reads a message body: canonical det-CBOR, then [`Self::from_value`].
    pub fn decode(body: &[u8]) -> Result<Self, WireError> {
        Self::from_value(&cbor::decode_strict(body)?)
    }
}

impl BackendAnswer {
    /// A `done` or `failed` answer (no handle).
    pub fn finished(id: u64, ok: bool, output: impl Into<Vec<u8>>) -> Self {
        let state = if ok { AnswerState::Done } else { AnswerState::Failed };
        Self { id, state, output: output.into(), handle: None }
    }

    /// A `working` or `input-required` answer under `handle`.
    pub fn pending(id: u64, state: AnswerState, handle: impl Into<String>, output: impl Into<Vec<u8>>) -> Self {
        Self { id, state, output: output.into(), handle: Some(handle.into()) }
    }

    /// The canonical value.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("msg", Some(Value::text("reply"))),
            ("id", Some(Value::Uint(self.id))),
            ("state", Some(Value::text(self.state.as_str()))),
            ("output", Some(Value::Bytes(self.output.clone()))),
            ("handle", self.handle.as_deref().map(Value::text)),
        ])
    }

    /// Reads the canonical value (strict: every field known; a handle
    /// exactly with `working` and `input-required`, of 1..=128 bytes).
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("BackendAnswer", v)?;
        check_msg(&mut f, "reply")?;
        let id = f.uint("id")?;
        let st = f.text("state")?;
        let state = AnswerState::parse(st).ok_or_else(|| f.error("state", format!("unknown state {st:?}")))?;
        let output = match f.req("output")? {
            Value::Bytes(b) => b.clone(),
            _ => return Err(f.error("output", "expected bytes").into()),
        };
        let handle = f.opt_text("handle")?.map(str::to_owned);
        match (&handle, state.has_handle()) {
            (None, true) => return Err(f.error("handle", format!("required with state {st:?}")).into()),
            (Some(_), false) => return Err(f.error("handle", format!("not allowed with state {st:?}")).into()),
            (Some(h), true) if !handle_ok(h) => {
                return Err(f.error("handle", format!("a handle has 1..={MAX_HANDLE_LEN} bytes")).into())
            }
            _ => {}
        }
        f.finish()?;
        Ok(Self { id, state, output, handle })
    }

    /// Reads a message body: canonical det-CBOR, then [`Self::from_value`].
    pub fn decode(body: &[u8]) -> Result<Self, WireError> {
        Self::from_value(&cbor::decode_strict(body)?)
    }

    /// What the endpoint makes of it.
    pub fn into_reply(self) -> BackendReply {
        match (self.state, self.handle) {
            (AnswerState::Done, _) => BackendReply::Done(self.output),
            (AnswerState::Failed, _) => BackendReply::Failed(self.output),
            (AnswerState::Working, Some(handle)) => BackendReply::Working { handle, status: self.output },
            (AnswerState::InputRequired, Some(handle)) => BackendReply::InputRequired { handle, prompt: self.output },
            // Unreachable through `from_value`; a hand-built answer without
            // its handle cannot be continued, so nothing goes on.
            (AnswerState::Working | AnswerState::InputRequired, None) => {
                BackendReply::Failed(b"the backend's answer lacks its handle".to_vec())
            }
        }
    }
}

/// Reads one frame from a blocking reader. `Ok(None)` on a clean end of
/// stream before a frame starts; a stream that ends inside a frame is
/// [`WireError::Truncated`]; a declared length over `cap` is
/// [`WireError::Oversized`], refused before any body byte is read.
pub fn read_frame_sync(r: &mut impl Read, cap: usize) -> Result<Option<Vec<u8>>, WireError> {
    let mut head = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut head[got..]) {
            Ok(0) => return if got == 0 { Ok(None) } else { Err(WireError::Truncated { got, want: 4 }) },
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(WireError::io("reading a frame length", e)),
        }
    }
    let declared = u32::from_be_bytes(head);
    let n = usize::try_from(declared).unwrap_or(usize::MAX);
    if n > cap {
        return Err(WireError::Oversized { declared: u64::from(declared), cap });
    }
    let mut body = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match r.read(&mut body[got..]) {
            Ok(0) => return Err(WireError::Truncated { got: got + 4, want: n + 4 }),
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(WireError::io("reading a frame body", e)),
        }
    }
    Ok(Some(body))
}

/// Writes one value as a frame to a blocking writer, and flushes it. A
/// body over `cap` is refused ([`WireError::Oversized`]) and nothing is
/// written.
pub fn write_frame_sync(w: &mut impl Write, value: &Value, cap: usize) -> Result<(), WireError> {
    let framed = crate::codec::frame_value(value);
    let n = framed.len() - 4;
    if n > cap {
        return Err(WireError::Oversized { declared: u64::try_from(n).unwrap_or(u64::MAX), cap });
    }
    w.write_all(&framed).map_err(|e| WireError::io("writing a frame", e))?;
    w.flush().map_err(|e| WireError::io("flushing a frame", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jcp::cbor::ContentId;
    use jcp::frame::{FrameKind, Trust};

    fn frame() -> Frame {
        Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: ContentId([1; 32]),
            action: "read".into(),
            resource: ContentId([2; 32]),
            payload_hash: ContentId::of_bytes(b"echo:hi"),
            model: None,
        }
    }

    fn call() -> BackendCall {
        BackendCall { id: 7, frame: frame(), args: Some(b"echo:hi".to_vec()), continues: None, answers: None }
    }

    /// Sets (or adds) `key` in a map value.
    fn set(mut v: Value, key: &str, val: Option<Value>) -> Value {
        let Value::Map(m) = &mut v else { panic!("not a map") };
        m.retain(|(k, _)| *k != Value::text(key));
        if let Some(val) = val {
            m.push((Value::text(key), val));
        }
        v
    }

    fn refusal(r: Result<impl std::fmt::Debug, WireError>) -> (String, String) {
        let e = r.expect_err("refused");
        (e.code().to_owned(), e.to_string())
    }

    #[test]
    fn backend_call_round_trips_with_and_without_its_optional_fields() {
        let first = call();
        let bytes = first.to_value().encode();
        assert_eq!(BackendCall::decode(&bytes).unwrap(), first);
        let later = BackendCall {
            id: 8,
            frame: frame(),
            args: None,
            continues: Some("task-1".into()),
            answers: Some(b"yes".to_vec()),
        };
        let bytes = later.to_value().encode();
        let back = BackendCall::decode(&bytes).unwrap();
        assert_eq!(back, later);
        assert_eq!(back.to_value().encode(), bytes, "one wire form");
    }

    #[test]
    fn backend_call_of_a_continuation_carries_the_handle_and_answers_not_the_args() {
        let f = frame();
        let c = Call { frame: &f, args: None, continues: Some(("ask-1", Some(b"blue"))) };
        let bc = BackendCall::of(3, &c);
        assert_eq!(
            (bc.id, bc.args, bc.continues.as_deref(), bc.answers.as_deref()),
            (3, None, Some("ask-1"), Some(&b"blue"[..]))
        );
    }

    #[test]
    fn backend_answer_round_trips_in_every_state() {
        for a in [
            BackendAnswer::finished(1, true, b"out".to_vec()),
            BackendAnswer::finished(2, false, b"no".to_vec()),
            BackendAnswer::pending(3, AnswerState::Working, "task-1", b"running".to_vec()),
            BackendAnswer::pending(4, AnswerState::InputRequired, "ask-1", b"which?".to_vec()),
        ] {
            let bytes = a.to_value().encode();
            let back = BackendAnswer::decode(&bytes).unwrap();
            assert_eq!(back, a);
            assert_eq!(back.to_value().encode(), bytes);
        }
    }

    #[test]
    fn backend_answer_maps_to_the_backend_reply() {
        let w = BackendAnswer::pending(3, AnswerState::Working, "task-1", b"running".to_vec());
        assert_eq!(w.into_reply(), BackendReply::Working { handle: "task-1".into(), status: b"running".to_vec() });
        let i = BackendAnswer::pending(4, AnswerState::InputRequired, "ask-1", b"which?".to_vec());
        assert_eq!(i.into_reply(), BackendReply::InputRequired { handle: "ask-1".into(), prompt: b"which?".to_vec() });
        assert_eq!(BackendAnswer::finished(1, true, b"x".to_vec()).into_reply(), BackendReply::Done(b"x".to_vec()));
        assert_eq!(BackendAnswer::finished(1, false, b"x".to_vec()).into_reply(), BackendReply::Failed(b"x".to_vec()));
    }

    #[test]
    fn backend_answer_refuses_unknown_and_missing_fields_naming_them() {
        let v = BackendAnswer::finished(1, true, b"x".to_vec()).to_value();
        let (code, msg) = refusal(BackendAnswer::from_value(&set(v.clone(), "x-extra", Some(Value::Uint(1)))));
        assert_eq!(code, "not-a-message");
        assert!(msg.contains("x-extra"), "{msg}");
        for field in ["msg", "id", "state", "output"] {
            let (code, msg) = refusal(BackendAnswer::from_value(&set(v.clone(), field, None)));
            assert_eq!(code, "not-a-message", "{field}");
            assert!(msg.contains(&format!("`{field}`")), "{field}: {msg}");
        }
    }

    #[test]
    fn backend_answer_refuses_a_bad_state_msg_or_handle_naming_the_field() {
        let v = BackendAnswer::finished(1, true, b"x".to_vec()).to_value();
        let cases = [
            (set(v.clone(), "state", Some(Value::text("maybe"))), "state"),
            (set(v.clone(), "msg", Some(Value::text("call"))), "msg"),
            (set(v.clone(), "output", Some(Value::text("text, not bytes"))), "output"),
            (set(v.clone(), "id", Some(Value::text("1"))), "id"),
            // done with a handle; working without one; an empty and a long handle.
            (set(v.clone(), "handle", Some(Value::text("task-1"))), "handle"),
            (set(v.clone(), "state", Some(Value::text("working"))), "handle"),
            (set(set(v.clone(), "state", Some(Value::text("working"))), "handle", Some(Value::text(""))), "handle"),
            (
                set(
                    set(v.clone(), "state", Some(Value::text("input-required"))),
                    "handle",
                    Some(Value::text("h".repeat(129))),
                ),
                "handle",
            ),
        ];
        for (bad, field) in cases {
            let (code, msg) = refusal(BackendAnswer::from_value(&bad));
            assert_eq!(code, "not-a-message", "{msg}");
            assert!(msg.contains(field), "{field}: {msg}");
        }
        // A 128-byte handle is the longest allowed.
        let ok = set(set(v, "state", Some(Value::text("working"))), "handle", Some(Value::text("h".repeat(128))));
        assert!(BackendAnswer::from_value(&ok).is_ok());
    }

    #[test]
    fn backend_answer_refuses_a_non_canonical_body() {
        let mut bytes = BackendAnswer::finished(1, true, b"x".to_vec()).to_value().encode();
        bytes.push(0);
        assert_eq!(BackendAnswer::decode(&bytes).unwrap_err().code(), "non-canonical");
    }

    #[test]
    fn backend_call_refuses_unknown_missing_and_misplaced_fields() {
        let v = call().to_value();
        let (code, msg) = refusal(BackendCall::from_value(&set(v.clone(), "x-instructions", Some(Value::text("y")))));
        assert_eq!(code, "not-a-message");
        assert!(msg.contains("x-instructions"), "{msg}");
        for field in ["msg", "id", "frame"] {
            let (_, msg) = refusal(BackendCall::from_value(&set(v.clone(), field, None)));
            assert!(msg.contains(&format!("`{field}`")), "{field}: {msg}");
        }
        let (_, msg) = refusal(BackendCall::from_value(&set(v.clone(), "answers", Some(Value::Bytes(b"a".to_vec())))));
        assert!(msg.contains("answers"), "{msg}");
        let (_, msg) = refusal(BackendCall::from_value(&set(v.clone(), "continues", Some(Value::text("")))));
        assert!(msg.contains("continues"), "{msg}");
        let (_, msg) = refusal(BackendCall::from_value(&set(v, "msg", Some(Value::text("reply")))));
        assert!(msg.contains("msg"), "{msg}");
    }

    #[test]
    fn sync_framing_reads_what_it_writes_and_refuses_over_the_cap_and_truncation() {
        let mut buf = Vec::new();
        write_frame_sync(&mut buf, &call().to_value(), BACKEND_CAP).unwrap();
        write_frame_sync(&mut buf, &BackendAnswer::finished(1, true, b"x".to_vec()).to_value(), BACKEND_CAP).unwrap();
        let mut r = &buf[..];
        let a = read_frame_sync(&mut r, BACKEND_CAP).unwrap().unwrap();
        assert_eq!(BackendCall::decode(&a).unwrap(), call());
        let b = read_frame_sync(&mut r, BACKEND_CAP).unwrap().unwrap();
        assert_eq!(BackendAnswer::decode(&b).unwrap().output, b"x");
        assert!(read_frame_sync(&mut r, BACKEND_CAP).unwrap().is_none(), "a clean end");
        // Over the cap: refused from the prefix alone.
        let mut r = &[0u8, 0, 0, 17, 1][..];
        assert!(matches!(read_frame_sync(&mut r, 16), Err(WireError::Oversized { declared: 17, cap: 16 })));
        // Truncated in the prefix and in the body.
        assert!(matches!(read_frame_sync(&mut &[0u8, 0][..], 16), Err(WireError::Truncated { got: 2, want: 4 })));
        assert!(matches!(
            read_frame_sync(&mut &[0u8, 0, 0, 3, 1][..], 16),
            Err(WireError::Truncated { got: 5, want: 7 })
        ));
        // A writer refuses a body over its cap and writes nothing.
        let mut out = Vec::new();
        assert!(matches!(write_frame_sync(&mut out, &call().to_value(), 8), Err(WireError::Oversized { .. })));
        assert!(out.is_empty());
    }
}
