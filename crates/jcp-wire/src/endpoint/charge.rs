//! §11 relay mode, the core's half: with a backend behind the gate the
//! endpoint is the holder that runs and meters the work (§11 "the cost is
//! the holder's measurement"). An admitted request is decided by phase one
//! of the metered path (§4.9): every check but the cost, a **reservation**
//! recorded before the work runs (§4.11), bounded by the caller's stated
//! maximum and the operator's per-call ceiling. The relay meters the call
//! and hands the figure back; phase two charges it: the charge receipt, a
//! settlement that takes the reservation back, the exchange's outcome. A
//! call lost mid-way is never charged: its reservation stays debited and
//! unresolved.

use std::sync::atomic::Ordering;

use jcp::cbor::ContentId;
use jcp::decision::Cost;
use jcp::energy::Energy;
use jcp::grant::SignedGrant;
use jcp_receipt::record::OutcomeStatus;
use jcp_receipt::runtime::Recorded;

use super::core_thread::{Charged, Core, HeldCall};
use super::decision::gate_request;
use crate::message::WireRequest;

impl Core {
    /// Decides `req` against `chain` (§7): outright without a backend; in
    /// relay mode by phase one, holding a reservation until its charge.
    pub(super) fn decide_or_reserve(
        &mut self,
        req: &WireRequest,
        chain: &[SignedGrant],
        cost: &Cost,
        now: u64,
    ) -> Result<Recorded, jcp_receipt::Error> {
        let r = gate_request(req, chain, cost, now);
        let Some(mode) = self.relay else { return self.gate.decide(&r) };
        // The caller's stated maximum (0: none stated) and the operator's ceiling.
        let ceiling = [(req.cost.uj > 0).then_some(req.cost.uj), mode.ceiling_uj].into_iter().flatten().min();
        match self.gate.authorize_within(&r, ceiling)? {
            Err(denied) => Ok(denied),
            Ok(reserved) => {
                let rec = reserved.reservation.clone();
                let held = HeldCall { reserved, req: Box::new(req.clone()), chain: chain.to_vec() };
                self.reserved.insert(rec.receipt, held);
                Ok(rec)
            }
        }
    }

    /// Phase two (§4.9): charges the metered `energy` of the call
    /// `reservation` held, at the endpoint's clock, with the request's own
    /// price (§4.8), then records the exchange's outcome (§4.11) and adds
    /// the joules to the work under `handle` (§6.1 item 4). The whole
    /// figure is debited, above the reservation too (a breach then).
    pub(super) fn charge(
        &mut self,
        reservation: ContentId,
        energy: Energy,
        handle: Option<&str>,
        status: OutcomeStatus,
    ) -> Charged {
        if let Some(why) = &self.failed {
            return Err(format!("the record cannot be written: {why}"));
        }
        let Some(h) = self.reserved.remove(&reservation) else {
            return Err(format!("no reservation {reservation} is held here (charged, lost, or never made)"));
        };
        let cost = Cost { energy, money: h.req.money.clone() };
        let now = self.now();
        let r = gate_request(&h.req, &h.chain, &cost, now);
        let charged = self.gate.charge(h.reserved, &r).and_then(|rec| {
            self.gate.complete(&rec.receipt, status)?;
            Ok(rec)
        });
        let rec = charged.map_err(|e| {
            self.record_failed(&e, format_args!("the charge of {reservation} was not recorded; it stays unresolved"));
            e.to_string()
        })?;
        self.note_spend(&rec.decision.chain_ids);
        self.stats.charged.fetch_add(1, Ordering::Relaxed);
        self.stats.unresolved.store(self.gate.pending_len() as u64, Ordering::Relaxed);
        if let Some(b) = handle.and_then(|hd| self.handles.get_mut(hd)) {
            b.joules_uj = b.joules_uj.saturating_add(energy.uj);
        }
        Ok(rec)
    }

    /// The endpoint behind the gate stopped mid-call: whether the work took
    /// effect is not knowable (§4.11). The reservation is never charged and
    /// never settled: it stays debited, and the record shows the decision
    /// unresolved, naming this point as its holder.
    pub(super) fn lost(&mut self, reservation: ContentId, why: &str) {
        self.reserved.remove(&reservation);
        self.stats.lost.fetch_add(1, Ordering::Relaxed);
        self.stats.unresolved.store(self.gate.pending_len() as u64, Ordering::Relaxed);
        tracing::warn!(
            receipt = %reservation,
            "the endpoint behind the gate stopped mid-call; the decision stays unresolved, its reservation debited: {why}"
        );
    }
}
