//! §4.9 the two-phase metered path: [`Gate::authorize`] before the work
//! (every check but the cost), [`Gate::charge`] after it (the measured cost,
//! debited even on a breach), and the reservation held between them (§4.11).

use super::checks::Phase;
use super::{Cost, Decision, Gate, Request, Verdict};
use crate::cbor::ContentId;
use crate::energy::Energy;
use crate::error::Error;
use crate::grant::{Caveat, Funds, SignedGrant};

/// Proof that phase one of the metered path passed (§4.9). Only
/// [`Gate::authorize`] makes one. It does NOT say that cost-dependent
/// caveats passed: those are listed in `pending` and run at the debit point.
#[derive(Debug)]
pub struct Authorization {
    chain_ids: Vec<ContentId>,
    /// Cost-dependent caveats still to be enforced at the debit point.
    pub pending: Vec<Caveat>,
}

impl Gate {
    /// What an enforcement point holds for a metered action between phase
    /// one and its charge (§4.9, §4.11): the most phase two could debit
    /// without a breach. Joules: the smallest remainder over the links,
    /// bounded by the smallest `MaxCostUj` of any link; money, where a link
    /// carries a money ceiling: the smallest remainder over those links, in
    /// the first one's currency. Graded `Estimator` (a bound, not a
    /// measurement), `Whole`. Pure: the caller debits it.
    pub fn reservation(&self, req: &Request<'_>) -> Cost {
        let mut uj =
            req.chain.iter().map(|g| g.grant().budget_uj.saturating_sub(self.spent(&g.id()).uj)).min().unwrap_or(0);
        for c in req.chain.iter().flat_map(|g| g.grant().caveats.iter()) {
            if let Caveat::MaxCostUj(n) = c {
                uj = uj.min(*n);
            }
        }
        let mut money: Option<Funds> = None;
        for g in req.chain {
            let Some(f) = &g.grant().budget_funds else { continue };
            let left = f.minor.saturating_sub(self.spent(&g.id()).minor);
            match &mut money {
                Some(m) => m.minor = m.minor.min(left),
                None => money = Some(Funds { currency: f.currency.clone(), minor: left }),
            }
        }
        Cost { energy: Energy::new(uj, crate::energy::Provenance::Estimator), money }
    }

    /// Takes back a debit (the inverse of [`Gate::replay_debit`], saturating
    /// at zero). Only for releasing a reservation of the metered path
    /// (§4.9, §4.11) once the charge that settles it is recorded; a
    /// decision's own debit is never given back.
    pub fn release(&mut self, chain_ids: &[ContentId], uj: u64, minor: u64, tainted: bool) {
        for id in chain_ids {
            if let Some(s) = self.spend.get_mut(id) {
                s.uj = s.uj.saturating_sub(uj);
                s.minor = s.minor.saturating_sub(minor);
                if tainted {
                    s.tainted_uj = s.tainted_uj.saturating_sub(uj);
                }
            }
        }
    }

    /// Phase one of the metered path (§4.9): every check except the
    /// cost-dependent caveats and the cost itself; nothing is debited.
    pub fn authorize(&mut self, req: &Request<'_>) -> Result<Authorization, Decision> {
        let (decision, verified_key) = self.evaluate_inner(req, Phase::Authorize);
        if let Some(k) = verified_key {
            self.verified.insert(k);
        }
        if !decision.is_allow() {
            return Err(decision);
        }
        self.note_shards(req.chain);
        let pending = req
            .chain
            .iter()
            .flat_map(|g| g.grant().caveats.iter())
            .filter(|c| c.is_cost_dependent())
            .cloned()
            .collect();
        Ok(Authorization { chain_ids: decision.chain_ids, pending })
    }

    /// Phase two (§4.9): the measured cost is charged to every link. The work
    /// has run and its joules are real, so they are debited even when a
    /// cost-dependent caveat or a ceiling is breached; the breach is recorded
    /// in the decision (`breach`), never suppressed.
    pub fn charge(&mut self, auth: Authorization, req: &Request<'_>) -> Result<Decision, Error> {
        // Charging spends the authorization: one phase one, one charge.
        let Authorization { chain_ids: authorized, .. } = auth;
        let ids: Vec<ContentId> = req.chain.iter().map(SignedGrant::id).collect();
        if ids != authorized {
            return Err(Error::ChargeChainMismatch);
        }
        let (checked, _) = self.evaluate_inner(req, Phase::Charge);
        let breach = checked.reason();
        let leaf = req.chain.last().map(|g| g.grant().budget_uj).unwrap_or_default();
        let mut d = Decision {
            verdict: Verdict::Allow,
            detail: if breach.is_some() { format!("debit-point breach: {}", checked.detail) } else { String::new() },
            chain_ids: ids,
            debited_uj: 0,
            debited_minor: 0,
            budget_uj: leaf,
            budget_remaining_uj: 0,
            breach,
        };
        self.debit(req, &d.chain_ids);
        d = self.finish(d, req);
        Ok(d)
    }
}
