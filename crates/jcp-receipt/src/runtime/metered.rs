//! The two-phase metered path at a durable point (§4.9, §4.11): phase one
//! holds a **reservation** and records it before the action runs; phase two
//! charges the measured cost, records its receipt, then a settlement that
//! takes the reservation back. Stopped in between, the reservation stays
//! debited and unresolved (fail closed).

use jcp::cbor::ContentId;
use jcp::decision::{Authorization, Decision, Request, Verdict};
use jcp::grant::SignedGrant;

use super::{DurableGate, Recorded};
use crate::error::Error;
use crate::record::{self, Settlement};
use crate::stream::RecordKind;

/// Phase one of the metered path, recorded (§4.9, §4.11): the gate's
/// authorization and the reservation receipt that holds the debit until
/// [`DurableGate::charge`] settles it. If the point stops before that, the
/// reservation is what replay finds: an allow with no outcome (unresolved,
/// naming the holder) whose held debit stays debited.
#[derive(Debug)]
pub struct Reserved {
    /// Phase one's token (what the charge presents to the gate).
    pub auth: Authorization,
    /// The reservation receipt: an allow of what phase one holds
    /// ([`Gate::reservation`](jcp::decision::Gate::reservation)), sealed
    /// and recorded.
    pub reservation: Recorded,
}

/// A reservation recorded and not yet settled: what its settlement takes back.
#[derive(Debug)]
pub(super) struct Held {
    bytes: Vec<u8>,
    pub(super) chain_ids: Vec<ContentId>,
    pub(super) uj: u64,
    minor: u64,
    tainted: bool,
}

impl DurableGate {
    /// Phase one of the two-phase metered path (§4.9), recorded before the
    /// action runs (§4.11). A refusal is recorded as a deny receipt. On
    /// allow the point holds a **reservation**
    /// ([`Gate::reservation`](jcp::decision::Gate::reservation): the
    /// most the charge could debit without a breach — a `MaxCostUj` bound,
    /// else every link's remainder down to the smallest) and seals and
    /// records it as an allow receipt of that cost, graded `Estimator`: the
    /// action may run once this returns (after [`DurableGate::commit`]
    /// under group commit). A point that stops before the charge leaves that
    /// receipt with no outcome: replay reports it unresolved, naming the
    /// holder, and its held debit stays debited (fail closed). If the
    /// reservation cannot be recorded nothing is held and the error is
    /// returned: the action must not run.
    pub fn authorize(&mut self, req: &Request<'_>) -> Result<Result<Reserved, Recorded>, Error> {
        self.authorize_within(req, None)
    }

    /// [`DurableGate::authorize`] with the reservation's joules bounded by
    /// `ceiling_uj` as well (the caller's stated maximum, or an operator's
    /// per-call ceiling, §11 relay mode): the charge of a measured figure
    /// above what was reserved records a breach (`budget-exceeded`) and is
    /// debited whole all the same (fail closed: the joules were spent).
    pub fn authorize_within(
        &mut self,
        req: &Request<'_>,
        ceiling_uj: Option<u64>,
    ) -> Result<Result<Reserved, Recorded>, Error> {
        let auth = match self.gate.authorize(req) {
            Ok(a) => a,
            Err(d) => return self.record_decision(d, req).map(Err),
        };
        let mut cost = self.gate.reservation(req);
        if let Some(c) = ceiling_uj {
            cost.energy.uj = cost.energy.uj.min(c);
        }
        let held_req = Request { cost: &cost, ..*req };
        let chain_ids: Vec<ContentId> = req.chain.iter().map(SignedGrant::id).collect();
        let (uj, minor) = (cost.energy.uj, cost.money.as_ref().map_or(0, |m| m.minor));
        let tainted = req.flow.is_some_and(|l| !l.is_bottom());
        self.gate.replay_debit(&chain_ids, uj, minor, tainted);
        let budget_uj = req.chain.last().map_or(0, |g| g.grant().budget_uj);
        let spent = chain_ids.last().map_or(0, |id| self.gate.spent(id).uj);
        let d = Decision {
            verdict: Verdict::Allow,
            detail: "reservation: phase one of the metered path holds this until the charge settles it".into(),
            chain_ids: chain_ids.clone(),
            debited_uj: uj,
            debited_minor: minor,
            budget_uj,
            budget_remaining_uj: budget_uj.saturating_sub(spent),
            breach: None,
        };
        match self.record_decision(d, &held_req) {
            Ok(rec) => {
                self.held.insert(rec.receipt, Held { bytes: rec.sealed.clone(), chain_ids, uj, minor, tainted });
                Ok(Ok(Reserved { auth, reservation: rec }))
            }
            Err(e) => {
                // Not recorded: not held, and the action must not run.
                self.gate.release(&chain_ids, uj, minor, tainted);
                Err(e)
            }
        }
    }

    /// Phase two (§4.9): charges the measured cost and records the allow
    /// receipt of the measured cost (a debit-point breach in its `breach`
    /// field), then a settlement record ([`Settlement`]) that releases the
    /// reservation. The breach is judged without the action's own hold;
    /// the receipt states the remainder as the record stands when it is
    /// written, the hold still in it (the settlement, the next record, takes
    /// it back), so replay and audit re-derive every stated figure. If the
    /// point stops between the two records, both debits stay: the
    /// reservation remains unresolved (fail closed, never lower).
    pub fn charge(&mut self, reserved: Reserved, req: &Request<'_>) -> Result<Recorded, Error> {
        let Reserved { auth, reservation } = reserved;
        let Some(h) = self.held.remove(&reservation.receipt) else {
            return Err(Error::OutcomeUnknown(format!(
                "no held reservation {} (never recorded here, already settled, or resolved by an outcome)",
                reservation.receipt
            )));
        };
        self.gate.release(&h.chain_ids, h.uj, h.minor, h.tainted);
        let charged = self.gate.charge(auth, req);
        self.gate.replay_debit(&h.chain_ids, h.uj, h.minor, h.tainted);
        let mut d = match charged {
            Ok(d) => d,
            Err(e) => {
                self.held.insert(reservation.receipt, h);
                return Err(Error::Invalid { field: "chain_ids", problem: e.to_string() });
            }
        };
        if let Some(leaf) = d.chain_ids.last() {
            d.budget_remaining_uj = d.budget_uj.saturating_sub(self.gate.spent(leaf).uj);
        }
        // A measured figure above what phase one reserved is debited whole
        // (the work ran) and recorded as a breach of the reservation.
        if d.breach.is_none() && req.cost.energy.uj > h.uj {
            d.breach = Some(jcp::decision::Reason::BudgetExceeded);
            d.detail = format!("measured {} µJ above the {} µJ reserved for it", req.cost.energy.uj, h.uj);
        }
        let rec = self.record_decision(d, req)?;
        let st = Settlement { reservation: h.bytes, settled_by: rec.receipt, steward: self.steward_did };
        let pos = self.position();
        let bytes = record::seal_core(&st.to_value(), pos, &self.steward);
        // Not recorded: the reservation stays held and unresolved.
        self.writer.append(RecordKind::Outcome, &bytes)?;
        self.gate.release(&h.chain_ids, h.uj, h.minor, h.tainted);
        self.pending.remove(&reservation.receipt);
        Ok(rec)
    }
}
