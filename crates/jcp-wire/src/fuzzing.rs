//! Invariants checked by the cargo-fuzz targets `wire_decode` and
//! `backend_decode` (at the end: a backend process's answers)
//! (`crates/jcp-wire/fuzz`) and by the corpus replay test
//! (`tests/fuzz_corpus.rs`), so CI (no nightly fuzzing) runs the committed
//! corpus too. [`wire_decode`] returns `Err` with a description when a
//! promise is broken; the fuzz target panics on it. Decoding must never
//! panic on any input.
//!
//! The promises (§11, §3):
//! * framing: [`codec::split`] (the synchronous reader) and
//!   [`codec::read_frame`] (the client's reader) agree on every input:
//!   the same bodies, the same need for more bytes, the same refusal of a
//!   length over the cap (before any body byte is read);
//! * one wire form: every message [`Inbound::decode`] or
//!   [`Outbound::decode`] accepts re-encodes to exactly the body it came
//!   from (a request through `to_bytes()`), and the strict det-CBOR decode
//!   of an accepted body re-encodes to it too;
//! * a request's `args` are sealed: their content id is the frame's
//!   `payload_hash`; its chain has 1..=16 links; its handle 1..=128 bytes;
//! * the direct request reader ([`Inbound::decode_with`], what the
//!   endpoint runs) gives exactly what the value tree gives: the same
//!   message or the same refusal, whatever chain its memo holds;
//! * refusals are typed: a body that is not canonical det-CBOR is
//!   `non-canonical`, a canonical body that is not the message is
//!   `not-a-message`, or (§5) a request whose cost's grade and measured
//!   figure disagree `energy-unmeasured`, `energy-measured-estimate` or
//!   `energy-below-measured`; nothing else.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use jcp::cbor::ContentId;

use crate::codec;
use crate::error::WireError;
use crate::message::{ChainMemo, Feed, Inbound, Outbound, MAX_CHAIN_LEN, MAX_HANDLE_LEN};

/// The cap the target frames with: small, so the over-cap refusal is
/// reached by small inputs.
pub const CAP: usize = 4096;

/// What one body decoded to: the message's name, or the refusal's code.
pub type Decoded = Result<&'static str, &'static str>;

/// How the input ended after its whole frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Exactly at a frame boundary.
    End,
    /// Inside a frame: this many bytes of it were there.
    NeedsMore(usize),
    /// A declared length over [`CAP`], refused before its body.
    Oversized(u64),
}

/// What [`wire_decode`] saw (the replay test checks the named seeds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Each whole frame's body read as an inbound and as an outbound message.
    pub frames: Vec<(Decoded, Decoded)>,
    /// How the framed reading ended.
    pub tail: Tail,
    /// The whole input read as one body (no length prefix).
    pub raw: (Decoded, Decoded),
}

/// Polls a future that never waits (a read from a byte slice) to its end.
fn ready<F: Future>(f: F) -> Option<F::Output> {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// Checks a refusal's code against what the strict decode said.
fn refusal(e: &WireError, canonical: bool, what: &str) -> Result<&'static str, String> {
    let code = e.code();
    let want = if canonical { "not-a-message" } else { "non-canonical" };
    let grade = matches!(e, WireError::Cost(_)) && canonical;
    if code == want || grade {
        Ok(code)
    } else {
        Err(format!(
            "{what}: refused {code:?} ({e}), expected {want:?} (the body is{} canonical det-CBOR)",
            if canonical { "" } else { " not" }
        ))
    }
}

fn same(what: &str, got: &[u8], body: &[u8]) -> Result<(), String> {
    if got == body {
        Ok(())
    } else {
        Err(format!(
            "{what} accepted but re-encodes to other bytes:\n body {}\n  got {}",
            hex::encode(body),
            hex::encode(got)
        ))
    }
}

thread_local! {
    /// One connection's chain memo across every body this thread checks,
    /// so the corpus replay meets it both holding the body's own chain
    /// and holding another.
    static MEMO: std::cell::RefCell<ChainMemo> = std::cell::RefCell::default();
}

/// The direct reader ([`Inbound::decode_with`]) against the value tree
/// ([`Inbound::decode_tree`]): the same message, or the same refusal, with
/// the chain memo holding another chain and then this body's own.
pub fn direct_agrees(body: &[u8]) -> Result<(), String> {
    let tree = Inbound::decode_tree(body).map_err(|e| (e.code(), e.to_string()));
    for pass in ["first", "second"] {
        let direct = MEMO.with(|m| Inbound::decode_with(body, &mut m.borrow_mut()));
        let direct = direct.map_err(|e| (e.code(), e.to_string()));
        if direct != tree {
            return Err(format!(
                "the direct reader ({pass} pass) gave {direct:?}, the value tree {tree:?}: {}",
                hex::encode(body)
            ));
        }
    }
    Ok(())
}

/// Reads one body as every message a peer may send, and checks the
/// promises above.
pub fn check_body(body: &[u8]) -> Result<(Decoded, Decoded), String> {
    let canonical = match codec::decode_body(body) {
        Ok(v) => {
            same("the strict decode", &v.encode(), body)?;
            true
        }
        Err(_) => false,
    };
    direct_agrees(body)?;
    let inbound = match Inbound::decode(body) {
        Ok(Inbound::Request(r)) => {
            same("a request", &r.to_bytes(), body)?;
            if let Some(a) = &r.args {
                if ContentId::of_bytes(a) != r.frame.payload_hash {
                    return Err("a request whose args are not its payload_hash was accepted".into());
                }
            }
            if r.chain.is_empty() || r.chain.len() > MAX_CHAIN_LEN {
                return Err(format!("a request with a {}-link chain was accepted", r.chain.len()));
            }
            if r.continues.as_ref().is_some_and(|h| h.is_empty() || h.len() > MAX_HANDLE_LEN) {
                return Err("a request with an out-of-range handle was accepted".into());
            }
            if r.id() != ContentId::of_bytes(&r.signed_bytes()) {
                return Err("a request's id is not the content id of what its caller signed".into());
            }
            let _ = r.verify_signature();
            Ok("request")
        }
        Ok(Inbound::Feed(f)) => {
            same("a feed message", &f.to_value().encode(), body)?;
            Ok(match *f {
                Feed::Revocation { .. } => "revocation",
                Feed::Amendment { .. } => "amendment",
                Feed::Outcome(_) => "outcome",
                Feed::Statement(_) => "statement",
                Feed::Signed { .. } => "signed-feed",
            })
        }
        Ok(Inbound::StatementAsk(id)) => {
            same("a statement ask", &crate::message::statement_ask(&id).encode(), body)?;
            Ok("statement-ask")
        }
        Err(e) => Err(refusal(&e, canonical, "inbound")?),
    };
    let outbound = match Outbound::decode(body) {
        Ok(Outbound::Response(r)) => {
            same("a response", &r.to_value().encode(), body)?;
            Ok("response")
        }
        Ok(Outbound::Reply(r)) => {
            same("a reply", &r.to_value().encode(), body)?;
            Ok("reply")
        }
        Ok(Outbound::FeedAnswer(a)) => {
            same("a feed answer", &a.to_value().encode(), body)?;
            Ok("feed-answer")
        }
        Ok(Outbound::Statement(st)) => {
            same("a statement answer", &crate::message::statement_answer(&st).encode(), body)?;
            Ok("statement")
        }
        Ok(Outbound::Error { code, message }) => {
            let v = jcp::cbor::map([
                ("msg", Some(jcp::cbor::Value::text("error"))),
                ("code", Some(jcp::cbor::Value::Text(code))),
                ("message", Some(jcp::cbor::Value::Text(message))),
            ]);
            same("an error", &v.encode(), body)?;
            Ok("error")
        }
        Err(e) => Err(refusal(&e, canonical, "outbound")?),
    };
    if (inbound.is_ok() || outbound.is_ok()) && !canonical {
        return Err("a message was accepted from a body the strict decode refuses".into());
    }
    Ok((inbound, outbound))
}

/// The `wire_decode` target: frames `data` with a cap of [`CAP`] through
/// both readers, checks every whole body, then checks `data` itself as one
/// body.
pub fn wire_decode(data: &[u8]) -> Result<Report, String> {
    let mut frames = Vec::new();
    let mut rest = data;
    let tail = loop {
        let split = codec::split(rest, CAP);
        let mut src = rest;
        let Some(read) = ready(codec::read_frame(&mut src, CAP)) else {
            return Err("read_frame waited on a byte slice".into());
        };
        match (split, read) {
            (Ok(Some((body, used))), Ok(Some(b))) => {
                if used != body.len() + 4 || used > rest.len() || b != body {
                    return Err(format!(
                        "split took {used} bytes for a {}-byte body; read_frame read {} bytes",
                        body.len(),
                        b.len()
                    ));
                }
                frames.push(check_body(body)?);
                rest = &rest[used..];
            }
            (Ok(None), Ok(None)) if rest.is_empty() => break Tail::End,
            (Ok(None), Err(WireError::Truncated { .. })) if !rest.is_empty() => break Tail::NeedsMore(rest.len()),
            (Err(WireError::Oversized { declared: a, cap }), Err(WireError::Oversized { declared: b, .. }))
                if a == b && cap == CAP =>
            {
                if usize::try_from(a).is_ok_and(|n| n <= CAP) {
                    return Err(format!("a {a}-byte frame refused under a cap of {CAP}"));
                }
                break Tail::Oversized(a);
            }
            (s, r) => return Err(format!("split and read_frame disagree: {s:?} vs {r:?}")),
        }
    };
    let raw = check_body(data)?;
    Ok(Report { frames, tail, raw })
}

// ------------------------------------------------------- backend_decode

/// What [`backend_decode`] saw (the replay test checks the named seeds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendReport {
    /// Each whole frame's body read as a backend's answer: its state, or
    /// the refusal's code.
    pub frames: Vec<Decoded>,
    /// How the framed reading ended.
    pub tail: Tail,
    /// The whole input read as one body (no length prefix).
    pub raw: Decoded,
}

/// Reads one body as a `jcp-backend/1` answer (what an endpoint reads from
/// its backend process) and checks its promises: accepted answers
/// re-encode to exactly the body, carry a handle of 1..=128 bytes exactly
/// when `working` or `input-required`; refusals are `non-canonical` or
/// `not-a-message` as the strict decode says.
pub fn check_backend_answer(body: &[u8]) -> Result<Decoded, String> {
    use crate::backend::protocol::BackendAnswer;
    let canonical = codec::decode_body(body).is_ok();
    match BackendAnswer::decode(body) {
        Ok(a) => {
            same("a backend answer", &a.to_value().encode(), body)?;
            if !canonical {
                return Err("a backend answer was accepted from a body the strict decode refuses".into());
            }
            let handle_ok = a.handle.as_ref().is_some_and(|h| !h.is_empty() && h.len() <= MAX_HANDLE_LEN);
            if a.state.has_handle() != handle_ok || (!a.state.has_handle() && a.handle.is_some()) {
                return Err(format!("a {} answer with handle {:?} was accepted", a.state.as_str(), a.handle));
            }
            Ok(Ok(a.state.as_str()))
        }
        Err(e) => Ok(Err(refusal(&e, canonical, "backend answer")?)),
    }
}

/// The `backend_decode` target: frames `data` with a cap of [`CAP`]
/// through [`codec::split`] and the blocking reader a backend's stdout is
/// read with ([`crate::backend::protocol::read_frame_sync`]), which must
/// agree; checks every whole body, then `data` itself as one body.
pub fn backend_decode(data: &[u8]) -> Result<BackendReport, String> {
    use crate::backend::protocol::read_frame_sync;
    let mut frames = Vec::new();
    let mut rest = data;
    let tail = loop {
        let split = codec::split(rest, CAP);
        let mut src = rest;
        match (split, read_frame_sync(&mut src, CAP)) {
            (Ok(Some((body, used))), Ok(Some(b))) => {
                if used != body.len() + 4 || b != body {
                    return Err(format!("split took {used} bytes; read_frame_sync read {} bytes", b.len()));
                }
                frames.push(check_backend_answer(body)?);
                rest = &rest[used..];
            }
            (Ok(None), Ok(None)) if rest.is_empty() => break Tail::End,
            (Ok(None), Err(WireError::Truncated { .. })) if !rest.is_empty() => break Tail::NeedsMore(rest.len()),
            (Err(WireError::Oversized { declared: a, .. }), Err(WireError::Oversized { declared: b, .. }))
                if a == b && usize::try_from(a).is_ok_and(|n| n > CAP) =>
            {
                break Tail::Oversized(a);
            }
            (s, r) => return Err(format!("split and read_frame_sync disagree: {s:?} vs {r:?}")),
        }
    };
    let raw = check_backend_answer(data)?;
    Ok(BackendReport { frames, tail, raw })
}
