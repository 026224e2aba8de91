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
use crate::backend::{Awaiting, Backend, BackendReply, Call, Continuation};
use crate::codec;
use crate::message::{ReplyState, WireReply, WireRequest};
use crate::metering::{CallFigure, CallMeter, CallTarget, WallClock};

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
/// has left, metered (§11 relay mode), and writes its reply. The work's
/// figure is charged (§4.9 phase two) before the reply leaves, and the
/// reply carries the charge receipt; a call lost mid-way is never charged
/// and its decision stays unresolved (§4.11). `false` once the connection
/// is gone.
pub(super) async fn relay<S: AsyncWrite + Unpin>(
    shared: &Arc<Shared>,
    s: &mut S,
    backend: Arc<dyn Backend>,
    a: Answer,
    x: Exchange,
) -> bool {
    if !a.fresh {
        // A repeat: the decision is held, the reply is not.
        let reply = WireReply::unavailable(a.receipt);
        return super::serve::write_answer(shared, s, &codec::frame_value(&reply.to_value())).await.is_ok();
    }
    let (reply, figure) = call_backend(shared, backend, &x).await;
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
        BackendReply::Lost { why } => {
            // Never charged, never reported completed or failed (§4.11).
            let _ = shared.tx.send(Job::Lost { reservation: a.receipt, why: why.clone() }).await;
            let reply = WireReply {
                metered: Some(figure),
                ..WireReply::of(a.receipt, ReplyState::Lost, None, why.into_bytes(), out_label)
            };
            return super::serve::write_answer(shared, s, &codec::frame_value(&reply.to_value())).await.is_ok();
        }
    };
    let status = if state == ReplyState::Failed { OutcomeStatus::Failed } else { OutcomeStatus::Completed };
    let (tx, rx) = oneshot::channel();
    let charge = Job::Charge {
        reservation: a.receipt,
        energy: figure.energy,
        handle: a.continued.as_ref().map(|(h, _)| h.clone()),
        status,
        tx,
    };
    let charged = if shared.tx.send(charge).await.is_ok() { rx.await.ok() } else { None };
    let charged = charged.unwrap_or_else(|| Err("the endpoint's core stopped before the charge".into()));
    let closing = match &charged {
        Ok(_) => follow_up(shared, &a, x, sent, (state, handle.as_ref(), &output), figure.energy.uj).await,
        Err(_) => None,
    };
    let mut reply =
        WireReply { closing, metered: Some(figure), ..WireReply::of(a.receipt, state, handle, output, out_label) };
    match charged {
        Ok(rec) => reply.charge = Some(rec.sealed),
        Err(why) => {
            tracing::warn!(receipt = %a.receipt, "a relayed call's charge was not recorded; it stays unresolved: {why}");
            reply.charge_refused = Some(why);
        }
    }
    super::serve::write_answer(shared, s, &codec::frame_value(&reply.to_value())).await.is_ok()
}

/// Calls the endpoint behind the gate with the frame it allowed and the
/// bytes its receipt sealed (a later exchange: the handle and the client's
/// answers instead of the arguments), inside a span of the endpoint's
/// meter over the process tree that runs it. One call at a time per
/// endpoint: two calls inside one tree would each be in the other's span.
/// A backend that sends quickly ([`Backend::send`]) over a tree is sent
/// the call from this thread, its span opened here, and only the wait
/// for its reply goes to a blocking thread; any other is called wholly
/// off the runtime's threads.
pub(super) async fn call_backend(
    shared: &Arc<Shared>,
    backend: Arc<dyn Backend>,
    x: &Exchange,
) -> (BackendReply, CallFigure) {
    let answers = x
        .continues
        .as_ref()
        .and_then(|_| x.args.as_deref().and_then(|a| Continuation::from_bytes(a).ok()))
        .and_then(|c| c.answers);
    let owned = Owned { frame: x.frame.clone(), args: x.args.clone(), continues: x.continues.clone(), answers };
    let meter = shared.meter.clone();
    // What a call that panics is shown at: wall time, no process read.
    let fallback = WallClock.start(CallTarget::OwnThreads);
    let lost = || {
        // The call panicked: whether its work took effect is not knowable.
        (BackendReply::Lost { why: "the endpoint behind the gate panicked mid-call".into() }, fallback.stop())
    };
    // A call readied but not over a tree keeps its turn (and is not readied twice).
    let mut readied = None;
    if backend.sends_quickly() {
        let one = shared.relay_lock.clone().lock_owned().await;
        // Sent from this thread: a panic here is the call's, as on a blocking thread.
        let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            backend.prepare();
            let root = backend.tree_root()?;
            let span = meter.start(CallTarget::Tree { root, self_contained: backend.self_contained() });
            // Nothing sent: called as any other, in the span opened.
            let wait: Awaiting = backend.send(owned.call()).unwrap_or_else(|| {
                let (backend, owned) = (backend.clone(), owned.clone());
                Box::new(move || backend.call(owned.call()))
            });
            Some((span, wait))
        }));
        match started {
            Ok(Some((span, wait))) => {
                return tokio::task::spawn_blocking(move || {
                    let _one = one;
                    let reply = wait();
                    (reply, span.stop())
                })
                .await
                .unwrap_or_else(|_| lost());
            }
            Err(_) => return lost(),
            // Not over a tree: called wholly on a blocking thread, below.
            Ok(None) => readied = Some(one),
        }
    }
    let one_at_a_time = shared.relay_lock.clone();
    tokio::task::spawn_blocking(move || {
        let _one = readied.unwrap_or_else(|| {
            let one = one_at_a_time.blocking_lock_owned();
            backend.prepare();
            one
        });
        let target = match backend.tree_root() {
            Some(root) => CallTarget::Tree { root, self_contained: backend.self_contained() },
            None => CallTarget::OwnThreads,
        };
        let span = meter.start(target);
        let reply = backend.call(owned.call());
        (reply, span.stop())
    })
    .await
    .unwrap_or_else(|_| lost())
}

/// A call's parts, owned, to be called on another thread.
#[derive(Clone)]
struct Owned {
    frame: Frame,
    args: Option<Vec<u8>>,
    continues: Option<String>,
    answers: Option<Vec<u8>>,
}

impl Owned {
    fn call(&self) -> Call<'_> {
        Call {
            frame: &self.frame,
            args: if self.continues.is_some() { None } else { self.args.as_deref() },
            continues: self.continues.as_deref().map(|h| (h, self.answers.as_deref())),
        }
    }
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
    (state, handle, output): (ReplyState, Option<&String>, &[u8]),
    metered_uj: u64,
) -> Option<ContentId> {
    match (state, handle, &a.continued) {
        // The first exchange's work goes on: its handle is bound to the
        // grant, with the joules metered so far (§6.1 item 4). A later
        // exchange's binding is the core's own, moved on when it was
        // decided and charged.
        (ReplyState::Working | ReplyState::InputRequired, Some(h), None) => {
            let binding = Binding {
                chain: x.chain,
                frame: x.frame,
                first: a.receipt,
                last: a.receipt,
                continuations: Vec::new(),
                joules_uj: metered_uj,
                label: sent,
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
