//! §6.1 continuations: a handle the endpoint behind the gate returns is
//! bound to the grant of the request that returned it; a later exchange
//! naming it is decided against that grant at its own time, and finished
//! work is sealed in a closing record.

use jcp::cbor::ContentId;
use jcp::decision::{Cost, Reason, Request};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::SignedGrant;

use jcp_receipt::runtime::Recorded;

use super::core_thread::Core;
use super::decision::gate_request;
use crate::backend::{Closing, Continuation};
use crate::message::WireRequest;

/// A handle bound to the grant of the request that returned it (§6.1).
#[derive(Debug, Clone)]
pub(super) struct Binding {
    pub(super) chain: Vec<SignedGrant>,
    pub(super) frame: Frame,
    pub(super) first: ContentId,
    pub(super) last: ContentId,
    pub(super) continuations: Vec<ContentId>,
    pub(super) joules_uj: u64,
    pub(super) label: Label,
}

/// For an allowed continuation: its handle and the binding as it stands
/// after it.
pub(super) type Continued = Option<(String, Box<Binding>)>;

impl Core {
    /// §6.1: a later exchange is decided against the grant the first was
    /// decided on, at its own time; its payload must name the receipt it
    /// continues. An unknown, closed or forgotten handle is refused and
    /// sealed.
    pub(super) fn decide_continuation(
        &mut self,
        req: &WireRequest,
        handle: &str,
        cost: &Cost,
        now: u64,
    ) -> Result<(Recorded, Continued), jcp_receipt::Error> {
        let base = gate_request(req, &req.chain, cost, now);
        let Some(b) = self.handles.get(handle).cloned() else {
            let rec = self.gate.record_refusal(
                &base,
                Reason::UnknownContinuation,
                format!("handle {handle:?} was not returned to a request decided here (or is closed or forgotten)"),
            )?;
            return Ok((rec, None));
        };
        // The payload must commit to the receipt it continues.
        let payload_ok = req
            .args
            .as_deref()
            .and_then(|a| Continuation::from_bytes(a).ok())
            .is_some_and(|c| c.continues == b.last && c.handle == handle);
        let frame_ok = req.frame.kind == b.frame.kind
            && req.frame.trust == Trust::Control
            && req.frame.grant_id == b.frame.grant_id
            && req.frame.action == b.frame.action
            && req.frame.resource == b.frame.resource
            && req.frame.model == b.frame.model;
        if !payload_ok || !frame_ok {
            let why = if payload_ok {
                "the later exchange's frame is not the first request's (kind, grant, action, resource)"
            } else {
                "the later exchange's payload does not name the receipt it continues"
            };
            let rec = self.gate.record_refusal(&base, Reason::WrongResource, why)?;
            return Ok((rec, None));
        }
        // Decided against the bound chain, not whatever chain was presented.
        let rec = self.decide_or_reserve(req, &b.chain, cost, now)?;
        if !rec.decision.is_allow() {
            return Ok((rec, None));
        }
        let mut nb = b;
        nb.last = rec.receipt;
        nb.continuations.push(rec.receipt);
        // Handles are bound only behind a backend (relay mode): the
        // exchange's metered figure is added when it is charged
        // (`Core::charge`), never the figure its caller stated.
        if let Some(l) = &req.label {
            nb.label = nb.label.join(l);
        } else {
            // Not computed is not clean (§4.10): the output's label is ⊤.
            nb.label = Label::top();
        }
        self.handles.insert(handle.to_owned(), nb.clone());
        Ok((rec, Some((handle.to_owned(), Box::new(nb)))))
    }

    /// Work finished on a continuation (§6.1 item 4): the handle is
    /// forgotten, the record of the work (first receipt, continuations, the
    /// joules metered across them, the outcome's digest) is sealed into the
    /// stream, and the closing itself is sealed in the form item 4 names: a
    /// `tool-result` (`agent-reply` for an agent task) frame tagged `data`
    /// whose payload is that record's content address, decided by the gate
    /// like any frame and so debiting nothing (a data frame exercises no
    /// capability, §7: `untrusted-control`). Returns the closing receipt's
    /// id, or `None` for an unknown handle or a record that failed.
    pub(super) fn close(&mut self, handle: &str, outcome: ContentId, status: &'static str) -> Option<ContentId> {
        let b = self.handles.remove(handle)?;
        let c = Closing {
            first: b.first,
            continuations: b.continuations,
            joules_uj: b.joules_uj,
            coverage: Coverage::Partial,
            outcome,
            status,
        };
        let record = c.to_value();
        let frame = Frame {
            kind: if b.frame.kind == FrameKind::AgentTask { FrameKind::AgentReply } else { FrameKind::ToolResult },
            trust: Trust::Data,
            payload_hash: ContentId::of(&record),
            ..b.frame.clone()
        };
        let holder = b.chain.last().map(|g| g.grant().subject);
        let closed = self.gate.record_closing(&record).and_then(|_| {
            let Some(caller) = holder else {
                return Err(jcp_receipt::Error::Invalid { field: "chain", problem: "a binding with no grant".into() });
            };
            let cost = Cost::energy(Energy::new(0, Provenance::Estimator));
            let now = self.now();
            let req =
                Request { frame: &frame, chain: &b.chain, caller: &caller, cost: &cost, now, flow: Some(&b.label) };
            self.gate.decide(&req)
        });
        match closed {
            Ok(rec) => Some(rec.receipt),
            Err(e) => {
                self.record_failed(&e, format_args!("a closing record could not be written"));
                None
            }
        }
    }
}
