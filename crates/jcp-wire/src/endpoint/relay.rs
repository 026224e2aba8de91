//! §11 "The endpoint behind the enforcement point is invoked only on
//! Allow", and §6.1: after a fresh, durable allow the endpoint behind the
//! gate is called with what the gate decided over; its reply comes back as
//! data, labelled (§6.1 item 3); work that goes on is bound to the grant
//! it was decided on, and work finished on a continuation is sealed in a
//! closing record.

use std::sync::Arc;

use jcp::cbor::ContentId;
use jcp::flow::Label;
use jcp::frame::Frame;
use jcp::grant::SignedGrant;
use jcp_receipt::record::OutcomeStatus;
use tokio::io::AsyncWrite;
use tokio::sync::oneshot;

use super::continuation::Binding;
use super::core_thread::Job;
use super::decision::Answer;
use super::Shared;
use crate::backend::{Backend, BackendReply, Call, Continuation};
use crate::codec;
use crate::message::{ReplyState, WireReply, WireRequest};

/// What the relay needs of a request once the core holds the request
/// itself: the fields the gate decided over.
pub(super) struct Exchange {
    pub(super) frame: Frame,
    pub(super) args: Option<Vec<u8>>,
    pub(super) continues: Option<String>,
    pub(super) label: Option<Label>,
    /// A first request's chain, kept to bind a handle the backend returns
    /// (empty for a continuation, or with no backend).
    pub(super) chain: Vec<SignedGrant>,
}

impl Exchange {
    /// Keeps what the relay needs of `req`; `relayed`: whether an endpoint
    /// sits behind the gate.
    pub(super) fn of(req: &WireRequest, relayed: bool) -> Self {
        let continues = req.continues.clone();
        Self {
            frame: req.frame.clone(),
            args: req.args.clone(),
            chain: if relayed && continues.is_none() { req.chain.clone() } else { Vec::new() },
            continues,
            label: req.label.clone(),
        }
    }
}

/// Runs the endpoint behind the gate for an allowed request whose response
/// has left, and writes its reply. `false` once the connection is gone.
pub(super) async fn relay<S: AsyncWrite + Unpin>(
    shared: &Arc<Shared>,
    s: &mut S,
    backend: Arc<dyn Backend>,
    a: Answer,
    x: Exchange,
) -> bool {
    if !a.fresh {
        // A repeat: the decision is held, the reply is not.
        let reply = WireReply {
            receipt: a.receipt,
            state: ReplyState::Unavailable,
            handle: None,
            output: Vec::new(),
            label: Label::top(),
            closing: None,
        };
        return codec::write_frame(s, &codec::frame_value(&reply.to_value())).await.is_ok();
    }
    let reply = call_backend(backend, &x).await;
    // The exchange itself completed or failed (§4.11 outcome).
    let status =
        if matches!(reply, BackendReply::Failed(_)) { OutcomeStatus::Failed } else { OutcomeStatus::Completed };
    let _ = shared.tx.send(Job::Outcome { receipt: a.receipt, status }).await;
    // §6.1 item 3: what comes back is data, labelled as the output of the
    // first request's action joined with everything the client sent.
    let sent = match (&a.continued, &x.label) {
        (Some((_, b)), _) => b.label.clone(),
        (None, Some(l)) => l.clone(),
        (None, None) => Label::top(),
    };
    let action = a.continued.as_ref().map_or(x.frame.action.clone(), |(_, b)| b.frame.action.clone());
    let out_label = Label::untrusted_from([format!("output:{action}")]).join(&sent);
    let (state, handle, output) = match reply {
        BackendReply::Done(o) => (ReplyState::Done, None, o),
        BackendReply::Failed(o) => (ReplyState::Failed, None, o),
        BackendReply::Working { handle, status } => (ReplyState::Working, Some(handle), status),
        BackendReply::InputRequired { handle, prompt } => (ReplyState::InputRequired, Some(handle), prompt),
        // Filled in by the metered relay (issue 35); until then a lost call
        // is reported as failed output.
        BackendReply::Lost { why } => (ReplyState::Failed, None, why.into_bytes()),
    };
    let closing = follow_up(shared, &a, x, sent, state, handle.as_ref(), &output).await;
    let reply = WireReply { receipt: a.receipt, state, handle, output, label: out_label, closing };
    codec::write_frame(s, &codec::frame_value(&reply.to_value())).await.is_ok()
}

/// Calls the endpoint behind the gate off the runtime's threads with the
/// frame it allowed and the bytes its receipt sealed (a later exchange:
/// the handle and the client's answers instead of the arguments).
pub(super) async fn call_backend(backend: Arc<dyn Backend>, x: &Exchange) -> BackendReply {
    let answers = x
        .continues
        .as_ref()
        .and_then(|_| x.args.as_deref().and_then(|a| Continuation::from_bytes(a).ok()))
        .and_then(|c| c.answers);
    let f2 = x.frame.clone();
    let a2 = x.args.clone();
    let c2 = x.continues.clone();
    tokio::task::spawn_blocking(move || {
        let call = Call {
            frame: &f2,
            args: if c2.is_some() { None } else { a2.as_deref() },
            continues: c2.as_deref().map(|h| (h, answers.as_deref())),
        };
        backend.call(call)
    })
    .await
    .unwrap_or_else(|_| BackendReply::Failed(b"the endpoint behind the gate panicked".to_vec()))
}

/// What the reply's state asks of the core (§6.1): work that goes on binds
/// its handle to the grant this request was decided on (the first time) or
/// keeps the binding moving; work finished on a continuation is sealed in
/// a closing record, whose id is returned.
pub(super) async fn follow_up(
    shared: &Arc<Shared>,
    a: &Answer,
    x: Exchange,
    sent: Label,
    state: ReplyState,
    handle: Option<&String>,
    output: &[u8],
) -> Option<ContentId> {
    match (state, handle, &a.continued) {
        (ReplyState::Working | ReplyState::InputRequired, Some(h), cont) => {
            let binding = match cont {
                Some((_, b)) => b.as_ref().clone(),
                None => Binding {
                    chain: x.chain,
                    frame: x.frame,
                    first: a.receipt,
                    last: a.receipt,
                    continuations: Vec::new(),
                    joules_uj: 0,
                    label: sent,
                },
            };
            let _ = shared.tx.send(Job::Bind { handle: h.clone(), binding: Box::new(binding) }).await;
            None
        }
        (ReplyState::Done | ReplyState::Failed, _, Some((h, _))) => {
            let (tx, rx) = oneshot::channel();
            let st = if state == ReplyState::Done { "done" } else { "failed" };
            let close = Job::Close { handle: h.clone(), outcome: ContentId::of_bytes(output), status: st, tx };
            if shared.tx.send(close).await.is_ok() {
                rx.await.ok().flatten()
            } else {
                None
            }
        }
        _ => None,
    }
}
