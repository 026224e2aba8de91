//! §11 deciding one request at the endpoint's own clock: a repeat inside
//! the window gets its first response; a stale or unauthenticated request
//! is refused before it is decided (sealed and recorded, never
//! remembered); an admitted request is recorded, then decided, and
//! remembered. A record that cannot be written (an I/O failure) makes
//! every answer `unrecorded`; a request that cannot be recorded for its
//! own reasons is refused alone.

use std::sync::atomic::Ordering;

use jcp::cbor::ContentId;
use jcp::decision::{Cost, Reason, Request, Verdict};
use jcp::grant::SignedGrant;
use jcp_receipt::runtime::Recorded;
use jcp_receipt::stream::RecordKind;

use super::continuation::Continued;
use super::core_thread::Core;
use super::decided_once::Entry;
use super::recording::request_record;
use crate::message::{WireDecision, WireRequest, WireResponse};

/// What the core answers a decision job.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) framed: Vec<u8>,
    pub(super) receipt: ContentId,
    pub(super) allow: bool,
    /// Whether it was decided now (not a repeat, not refused before deciding).
    pub(super) fresh: bool,
    /// For an allowed continuation: the binding as it stands after it.
    pub(super) continued: Continued,
    /// The verdict the caller gets (for the exposition).
    pub(super) verdict: Verdict,
    /// Answered from memory: not decided again.
    pub(super) repeat: bool,
}

/// A framed `WireResponse` (§11).
pub(super) fn framed_response(d: WireDecision, receipt: Vec<u8>) -> Vec<u8> {
    WireResponse { decision: d, receipt }.framed()
}

/// The decision as the wire carries it: `cost_uj` is debited only on allow.
pub(super) fn wire_decision(verdict: Verdict, cost_uj: u64, budget_uj: u64, remaining: u64) -> WireDecision {
    WireDecision {
        verdict,
        debited_uj: if verdict == Verdict::Allow { cost_uj } else { 0 },
        budget_uj,
        budget_remaining_uj: remaining,
    }
}

/// What the gate decides over: the request's frame, caller and label, at
/// the endpoint's clock `now` (§11), against `chain` (the presented one, or
/// the one a continuation's handle is bound to, §6.1).
pub(super) fn gate_request<'a>(
    req: &'a WireRequest,
    chain: &'a [SignedGrant],
    cost: &'a Cost,
    now: u64,
) -> Request<'a> {
    Request { frame: &req.frame, chain, caller: &req.caller, cost, now, flow: req.label.as_ref() }
}

/// The decision a recorded receipt states, as the caller gets it.
pub(super) fn answer_of(rec: Recorded, fresh: bool, continued: Continued) -> Answer {
    let d = &rec.decision;
    // What the decision debited: the cost on a plain allow, the
    // reservation in relay mode (§4.9 phase one), nothing on a deny.
    let wd = wire_decision(d.verdict, d.debited_uj, d.budget_uj, d.budget_remaining_uj);
    Answer {
        allow: fresh && d.is_allow(),
        verdict: d.verdict,
        framed: framed_response(wd, rec.sealed),
        receipt: rec.receipt,
        fresh,
        continued,
        repeat: false,
    }
}

impl Core {
    /// Refuses `req` `unrecorded` (§11: the record cannot be written): sealed
    /// but not recorded, never remembered.
    pub(super) fn unrecorded(&mut self, req: &WireRequest, why: &str) -> Answer {
        self.stats.unrecorded.fetch_add(1, Ordering::Relaxed);
        let cost = req.decision_cost();
        let r = gate_request(req, &req.chain, &cost, self.now());
        let (d, bytes) = match self.gate.seal_unrecorded(&r, why) {
            Ok(x) => x,
            Err(e) => {
                // Not even sealable: answer with an empty receipt; the
                // decision says unrecorded.
                tracing::error!("sealing an unrecorded refusal failed: {e}");
                (self.gate.refusal(&r, Reason::Unrecorded, why), Vec::new())
            }
        };
        let receipt = ContentId::of_bytes(&bytes);
        let wd = wire_decision(d.verdict, req.cost.uj, d.budget_uj, d.budget_remaining_uj);
        Answer {
            framed: framed_response(wd, bytes),
            receipt,
            allow: false,
            fresh: false,
            continued: None,
            verdict: d.verdict,
            repeat: false,
        }
    }

    /// A record that could not be written for `req`. Only an I/O failure
    /// of the record fails it (every later request is then `unrecorded`
    /// until a restart, and it is logged as an error); anything else — a
    /// record over the stream's limit, a core that cannot be sealed — is
    /// this request's alone: it is refused `unrecorded`, logged, and the
    /// next request is decided as if it had not come.
    pub(super) fn record_error(&mut self, req: &WireRequest, e: &jcp_receipt::Error) -> Answer {
        self.record_failed(e, format_args!("a request could not be recorded and is refused alone"));
        self.unrecorded(req, &e.to_string())
    }

    /// Decides one request (§11): the answer the caller gets.
    pub(super) fn decide(&mut self, req: &WireRequest, req_bytes: &[u8], id: ContentId, signed_ok: bool) -> Answer {
        let now = self.now();
        self.sweep(now);
        if let Some(why) = self.failed.clone() {
            return self.unrecorded(req, &format!("the record cannot be written: {why}"));
        }
        // A repeat inside the window: the first response, nothing else.
        if let Some(e) = self.table.get(&id) {
            if self.in_window(e.stamp, now) {
                return self.answer_repeat(req, e);
            }
        }
        if let Some(why) = self.record_full() {
            return self.shed(req, &why);
        }
        let above = self.above_high_water();
        if let Some((reason, why)) = self.refusal_before_deciding(req, now, signed_ok) {
            if let Some(mark) = above {
                return self.shed(req, &format!("{}: {why}; the record is past its high-water mark of {mark} bytes, so a request that is not authenticated is not recorded", reason.as_str()));
            }
            return self.refuse(req, now, reason, why);
        }
        if let Some(mark) = above.filter(|_| !self.anchored_chain(req)) {
            return self.shed(
                req,
                &format!("the record is past its high-water mark of {mark} bytes: a request whose chain no trust root of its resource anchors is not recorded"),
            );
        }
        self.admit(req, req_bytes, id, now)
    }

    /// The record's length now.
    fn record_len(&self) -> u64 {
        self.gate.writer().len()
    }

    /// Why nothing more is recorded (issue 34): the record has reached the
    /// operator's limit. Logged once.
    pub(super) fn record_full(&mut self) -> Option<String> {
        let max = self.record_limits.max?;
        let len = self.record_len();
        (len >= max).then(|| {
            if !self.record_limits.full_logged {
                self.record_limits.full_logged = true;
                tracing::error!(len, max, "the record has reached its limit: nothing more is decided until the operator makes room (jcp serve --record-max-bytes)");
            }
            format!("the record has reached its limit of {max} bytes (it holds {len}): nothing more is decided here until the operator makes room")
        })
    }

    /// The high-water mark, once the record has passed it (issue 34);
    /// passing it either way is logged.
    fn above_high_water(&mut self) -> Option<u64> {
        let mark = self.record_limits.high_water?;
        let above = self.record_len() >= mark;
        if above != self.record_limits.past_mark {
            self.record_limits.past_mark = above;
            if above {
                tracing::warn!(mark, "the record passed its high-water mark: requests that are not authenticated are answered unrecorded and not recorded");
            } else {
                tracing::info!(mark, "the record is below its high-water mark again");
            }
        }
        above.then_some(mark)
    }

    /// Whether a trust root of the request's resource anchors its chain
    /// (a continuation: the chain its handle was bound to here, after an
    /// allow). An endpoint with no trust root for the resource anchors
    /// nothing: past the high-water mark its requests are shed.
    fn anchored_chain(&self, req: &WireRequest) -> bool {
        if req.continues.is_some() {
            return true;
        }
        let gate = self.gate.gate();
        req.chain.first().is_some_and(|root| gate.anchors(&req.frame.resource, &root.grant().issuer))
    }

    /// Answered `unrecorded` without recording anything (issue 34): the
    /// record is past its high-water mark and the request is not
    /// authenticated, or the record is full. Sealed, so the caller holds
    /// the steward's word for it; counted; nothing is remembered.
    fn shed(&mut self, req: &WireRequest, why: &str) -> Answer {
        self.stats.shed.fetch_add(1, Ordering::Relaxed);
        self.metrics.shed();
        self.unrecorded(req, why)
    }

    /// A repeat: the first response, read back from the record.
    pub(super) fn answer_repeat(&mut self, req: &WireRequest, e: Entry) -> Answer {
        self.stats.repeats.fetch_add(1, Ordering::Relaxed);
        match self.repeat(e) {
            Ok(a) => a,
            Err(why) => self.unrecorded(req, &format!("the recorded response cannot be read back: {why}")),
        }
    }

    /// Why a request is refused before it is decided: its stamp is outside
    /// the window (`stale-request`), or its caller's signature does not
    /// verify (`bad-signature`).
    pub(super) fn refusal_before_deciding(
        &self,
        req: &WireRequest,
        now: u64,
        signed_ok: bool,
    ) -> Option<(Reason, String)> {
        if !self.in_window(req.now, now) {
            self.stats.stale.fetch_add(1, Ordering::Relaxed);
            Some((
                Reason::StaleRequest,
                format!(
                    "stamp {} is {} s from the endpoint's clock {now}; window {} s",
                    req.now,
                    req.now.abs_diff(now),
                    self.window_s
                ),
            ))
        } else if !signed_ok {
            self.stats.impersonated.fetch_add(1, Ordering::Relaxed);
            Some((Reason::BadSignature, format!("the caller's signature does not verify under {}", req.caller)))
        } else {
            None
        }
    }

    /// Refused before deciding: sealed and recorded, never remembered.
    pub(super) fn refuse(&mut self, req: &WireRequest, now: u64, reason: Reason, why: String) -> Answer {
        let cost = req.decision_cost();
        let base = gate_request(req, &req.chain, &cost, now);
        match self.gate.record_refusal(&base, reason, why) {
            Ok(rec) => answer_of(rec, false, None),
            Err(e) => self.record_error(req, &e),
        }
    }

    /// Admitted: the request is recorded, then decided (its receipt follows
    /// it in the stream), then remembered.
    pub(super) fn admit(&mut self, req: &WireRequest, req_bytes: &[u8], id: ContentId, now: u64) -> Answer {
        // One wire form (§11): the body a request was decoded from is its
        // canonical encoding (held by the `wire_decode` fuzz target).
        debug_assert!(req_bytes == req.to_bytes(), "a request's bytes are not its canonical encoding");
        if let Err(e) = self.gate.append_record(RecordKind::Request, &request_record(req_bytes, now)) {
            return self.record_error(req, &e);
        }
        let cost = req.decision_cost();
        let decided = match &req.continues {
            None => self.decide_or_reserve(req, &req.chain, &cost, now).map(|rec| (rec, None)),
            Some(handle) => self.decide_continuation(req, handle, &cost, now),
        };
        let (rec, continued) = match decided {
            Ok(x) => x,
            Err(e) => return self.record_error(req, &e),
        };
        let anchored = self.gate.gate().anchored(&req.frame.resource);
        self.remember(id, req.now, &rec, anchored);
        answer_of(rec, true, continued)
    }

    /// A decided request is remembered while its stamp is inside the
    /// window; the counters and the exposition follow the decision.
    /// `anchored`: the request's resource has trust roots here (the
    /// exposition gives only such grants series of their own).
    pub(super) fn remember(&mut self, id: ContentId, stamp: u64, rec: &Recorded, anchored: bool) {
        self.table.insert(id, Entry { stamp, receipt_at: rec.offset });
        self.stats.remembered.store(self.table.len() as u64, Ordering::Relaxed);
        self.stats.decided.fetch_add(1, Ordering::Relaxed);
        if rec.decision.is_allow() {
            self.stats.allowed.fetch_add(1, Ordering::Relaxed);
            if let Some(leaf) = rec.decision.chain_ids.last() {
                self.metrics.allowed(leaf, rec.decision.budget_uj, anchored);
            }
            self.note_spend(&rec.decision.chain_ids);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::atomic::Ordering;

    use jcp::decision::{Reason, Verdict};

    use super::super::group_commit::Pending;
    use super::super::tests::{decide_in, decision, grant, idle_core, key, request};
    use crate::message::{RequestBody, WireRequest};

    /// A request built past the decoder's bounds: 70 kB of `args`, or a
    /// 70 kB `action` (sealed in every receipt of it), stamped `now`.
    fn oversized(g: &jcp::grant::SignedGrant, now: u64, in_action: bool) -> WireRequest {
        let r = request(g, b"big");
        let mut body = RequestBody {
            frame: r.frame.clone(),
            chain: r.chain.clone(),
            cost: r.cost,
            money: None,
            label: r.label.clone(),
            args: None,
            continues: None,
            now,
        };
        if in_action {
            body.frame.action = "a".repeat(70_000);
        } else {
            body.args = Some(vec![7; 70_000]);
            body.frame.payload_hash = jcp::cbor::ContentId::of_bytes(&[7; 70_000]);
        }
        body.sign(&key(2))
    }

    /// The critical item of the hostile-input review: a request whose
    /// record or receipt cannot fit one stream record (70 kB of args; a
    /// 70 kB action with a garbage signature, or with a stale stamp) is
    /// refused alone. The record is not failed, and the next good request
    /// is decided and allowed.
    #[test]
    fn s11_a_request_that_cannot_be_recorded_is_refused_alone_and_the_record_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut core = idle_core(dir.path());
        let g = grant();
        let mut garbage = oversized(&g, 1_800_000_001, true);
        garbage.signature = [0x5a; 64];
        let mut p = Pending::default();
        let answers = [
            decide_in(&mut core, &mut p, &oversized(&g, 1_800_000_000, false)),
            decide_in(&mut core, &mut p, &garbage),
            decide_in(&mut core, &mut p, &oversized(&g, 1_000, true)),
            decide_in(&mut core, &mut p, &request(&g, b"good")),
        ];
        core.commit(p);
        let [args, garbage, stale, good] = answers.map(|rx| rx.blocking_recv().unwrap());
        for (what, a) in [("args", &args), ("garbage signature", &garbage), ("stale", &stale)] {
            assert_eq!(decision(&a.framed).verdict, Verdict::Deny(Reason::Unrecorded), "{what}: {a:?}");
            assert!(!a.allow && !a.fresh, "{what}");
        }
        assert!(good.allow, "a good request after them is decided and allowed: {good:?}");
        assert!(core.failed.is_none(), "the record is not failed: {:?}", core.failed);
        assert_eq!(core.stats.unrecorded.load(Ordering::Relaxed), 3);
        core.finish().unwrap();
    }
}
