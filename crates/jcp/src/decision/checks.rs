//! §7 the ordered checks of a decision: the frame's trust (§7.1), the grant
//! or chain prefix (§7 items 2–7, §4.2, §4.3, §4.7), resource and action
//! (§7.8), flow (§4.10), caveats (§4.9), then the joule and money ceilings
//! (§7.9, §4.8). The first failing check is the decision's reason.

use super::{Decision, Gate, Reason, Request, Verdict};
use crate::cbor::ContentId;
use crate::chain::{check_structure, ChainFault};
use crate::flow::FlowCeiling;
use crate::frame::Trust;
use crate::grant::{Caveat, SignedGrant};
use crate::identity::Did;

struct Deny(Reason, String);

type Step<T> = Result<T, Deny>;

fn deny<T>(r: Reason, why: impl Into<String>) -> Step<T> {
    Err(Deny(r, why.into()))
}

fn chain_key(chain: &[SignedGrant]) -> ContentId {
    if let [one] = chain {
        return one.signed_id();
    }
    let mut h = blake3::Hasher::new();
    for g in chain {
        h.update(&g.signed_id().0);
    }
    ContentId(*h.finalize().as_bytes())
}

impl Gate {
    pub(super) fn evaluate_inner(&self, req: &Request<'_>, phase: Phase) -> (Decision, Option<ContentId>) {
        let chain_ids: Vec<ContentId> = req.chain.iter().map(SignedGrant::id).collect();
        let (budget_uj, remaining) = req.chain.last().map_or((0, 0), |g| {
            let b = g.grant().budget_uj;
            (b, b.saturating_sub(self.spent(&g.id()).uj))
        });
        let mut verified_key = None;
        let result = self.run_checks(req, phase, &mut verified_key);
        let (verdict, detail) = match result {
            Ok(()) => (Verdict::Allow, String::new()),
            Err(Deny(r, why)) => (Verdict::Deny(r), why),
        };
        let d = Decision {
            verdict,
            detail,
            chain_ids,
            debited_uj: 0,
            debited_minor: 0,
            budget_uj,
            budget_remaining_uj: remaining,
            breach: None,
        };
        (d, verified_key)
    }

    fn run_checks(&self, req: &Request<'_>, phase: Phase, verified_key: &mut Option<ContentId>) -> Step<()> {
        let frame = req.frame;
        // §7.1: data never exercises a capability, on either path (C4).
        if frame.trust == Trust::Data {
            return deny(Reason::UntrustedControl, "a data frame cannot exercise a capability");
        }
        let Some(leaf) = req.chain.last() else {
            return deny(Reason::ChainBroken, "no grant presented");
        };
        let key = chain_key(req.chain);
        let cached = self.verified.contains(&key);
        if let [g] = req.chain {
            self.single_prefix(req, g, cached, phase)?;
        } else {
            self.chain_prefix(req, cached, phase)?;
        }
        if !cached {
            *verified_key = Some(key);
        }
        // §7.8: resource, then action.
        let cap = &leaf.grant().capability;
        if frame.resource != cap.resource {
            return deny(Reason::WrongResource, "the frame's resource is not the capability's resource");
        }
        if !cap.actions.contains(&frame.action) {
            return deny(Reason::ActionNotGranted, format!("action {:?} is not granted", frame.action));
        }
        // §4.10: after capability and signatures, before caveats and budget.
        let ceiling =
            FlowCeiling::compose(req.chain.iter().flat_map(|g| g.grant().caveats.iter()).filter_map(|c| match c {
                Caveat::FlowBelow(f) => Some(f),
                _ => None,
            }));
        self.check_flow(req, ceiling.as_ref())?;
        // §4.9: caveats bind on every link.
        for (link, g) in req.chain.iter().enumerate() {
            for c in &g.grant().caveats {
                if phase == Phase::Authorize && c.is_cost_dependent() {
                    continue;
                }
                if let Some(why) = caveat_fails(c, req, self.point.as_ref()) {
                    return deny(Reason::CaveatUnsatisfied, format!("link {link}: {why}"));
                }
            }
        }
        self.check_shards(req)?;
        match phase {
            Phase::Authorize => self.check_not_exhausted(req),
            Phase::Whole | Phase::Charge => self.check_budgets(req, ceiling.as_ref()),
        }
    }

    fn root_trusted(&self, resource: &ContentId, root_issuer: &Did) -> bool {
        match self.trust_roots.get(resource) {
            None => true,
            Some(roots) => roots.contains(root_issuer),
        }
    }

    /// §7 items 2–7 for a single grant.
    fn single_prefix(&self, req: &Request<'_>, g: &SignedGrant, cached: bool, phase: Phase) -> Step<()> {
        let grant = g.grant();
        if grant.parent.is_some() {
            return deny(Reason::ChainBroken, "a delegated grant is never decided alone (§4.2): present its chain");
        }
        // At the charge the authority was judged at phase one (`Phase::Charge`).
        let charge = phase == Phase::Charge;
        if !charge && self.revoked.contains(&g.id()) {
            return deny(Reason::Revoked, format!("grant {} is revoked", g.id()));
        }
        if let Some(am) = self.superseded.get(&g.id()).filter(|_| !charge) {
            return deny(
                Reason::Superseded,
                format!("grant {} was superseded by amendment {am}: the run goes on under its continuation", g.id()),
            );
        }
        if !self.root_trusted(&req.frame.resource, &grant.issuer) {
            return deny(Reason::UntrustedRoot, format!("{} is not a trust root for this resource", grant.issuer));
        }
        if req.frame.grant_id != g.id() {
            return deny(Reason::WrongResource, "the frame names another grant");
        }
        if *req.caller != grant.subject {
            return deny(Reason::WrongSubject, format!("caller {} is not the subject {}", req.caller, grant.subject));
        }
        if !cached && !g.verify_signature() {
            return deny(Reason::BadSignature, "the issuer's signature does not verify");
        }
        if grant.expired_at(req.now) {
            return deny(Reason::Expired, format!("expired at {} (now {})", grant.expiry, req.now));
        }
        Ok(())
    }

    /// §7 for a chain, in its order: "structure and signatures first …, then
    /// revocation against every link, expiry of every link, the leaf-level
    /// checks above" (the root's trust, the grant id, the caller).
    fn chain_prefix(&self, req: &Request<'_>, cached: bool, phase: Phase) -> Step<()> {
        if !cached {
            check_structure(req.chain).or_else(|f| match f {
                ChainFault::Attenuation { .. } => deny(Reason::AttenuationViolation, f.to_string()),
                _ => deny(Reason::ChainBroken, f.to_string()),
            })?;
            if let Some(link) = req.chain.iter().position(|g| !g.verify_signature()) {
                return deny(Reason::BadSignature, format!("link {link}: the issuer's signature does not verify"));
            }
        }
        let charge = phase == Phase::Charge;
        if let Some(link) = req.chain.iter().position(|g| !charge && self.revoked.contains(&g.id())) {
            return deny(Reason::Revoked, format!("link {link} ({}) is revoked", req.chain[link].id()));
        }
        if let Some(link) = req.chain.iter().position(|g| !charge && self.superseded.contains_key(&g.id())) {
            return deny(
                Reason::Superseded,
                format!("link {link} ({}) was superseded by an amendment", req.chain[link].id()),
            );
        }
        if let Some(link) = req.chain.iter().position(|g| g.grant().expired_at(req.now)) {
            return deny(Reason::Expired, format!("link {link} expired at {}", req.chain[link].grant().expiry));
        }
        let (Some(root), Some(leaf)) = (req.chain.first(), req.chain.last()) else {
            return deny(Reason::ChainBroken, "empty chain");
        };
        if !self.root_trusted(&req.frame.resource, &root.grant().issuer) {
            return deny(
                Reason::UntrustedRoot,
                format!("root issuer {} is not a trust root for this resource", root.grant().issuer),
            );
        }
        if req.frame.grant_id != leaf.id() {
            return deny(Reason::WrongResource, "the frame names another grant than the chain's leaf");
        }
        if *req.caller != leaf.grant().subject {
            return deny(
                Reason::WrongSubject,
                format!("caller {} is not the leaf subject {}", req.caller, leaf.grant().subject),
            );
        }
        Ok(())
    }

    /// §4.5: a point enforces one live shard of a parent. A second shard
    /// of the same parent bound here (a re-sharding) is refused while the
    /// first is not revoked: otherwise sharding a parent twice would hand
    /// this point two slices of it.
    fn check_shards(&self, req: &Request<'_>) -> Step<()> {
        for (parent, shard) in bound_here(req.chain, self.point.as_ref()) {
            if let Some(live) = self.shards_here.get(&parent) {
                if *live != shard && !self.revoked.contains(live) {
                    return deny(
                        Reason::AttenuationViolation,
                        format!(
                            "shard {shard} re-shards parent {parent} here, where its shard {live} is live: a point enforces one shard of a parent (§4.5); revoke {live} to rebalance"
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    fn check_flow(&self, req: &Request<'_>, ceiling: Option<&FlowCeiling>) -> Step<()> {
        let floor = self.taint_floors.get(&req.frame.resource).filter(|f| !f.refused_origins.is_empty());
        if ceiling.is_none() && floor.is_none() {
            return Ok(());
        }
        let Some(label) = req.flow else {
            return deny(
                Reason::FlowNotComputed,
                "the argument's provenance was not computed; not computed is not clean",
            );
        };
        if let Some(c) = ceiling {
            if !label.leq(&c.ceiling) {
                return deny(Reason::FlowViolation, "the argument's label is above the grant's flow ceiling");
            }
        }
        if let Some(f) = floor {
            if f.refuses(label) {
                return deny(Reason::FlowViolation, "the resource's taint floor refuses the argument's origins");
            }
        }
        Ok(())
    }

    fn check_not_exhausted(&self, req: &Request<'_>) -> Step<()> {
        for (link, g) in req.chain.iter().enumerate() {
            if self.spent(&g.id()).uj >= g.grant().budget_uj {
                return deny(Reason::BudgetExceeded, format!("link {link} has no joules left"));
            }
        }
        Ok(())
    }

    /// §7.9 and §4.8: joule ceilings of every link first, then the tainted
    /// allowance, then each link's money ceiling.
    fn check_budgets(&self, req: &Request<'_>, ceiling: Option<&FlowCeiling>) -> Step<()> {
        let cost = req.cost.energy.uj;
        for (link, g) in req.chain.iter().enumerate() {
            let spent = self.spent(&g.id()).uj;
            let fits = spent.checked_add(cost).is_some_and(|t| t <= g.grant().budget_uj);
            if !fits {
                return deny(
                    Reason::BudgetExceeded,
                    format!("link {link}: {spent} µJ spent + {cost} µJ > budget {} µJ", g.grant().budget_uj),
                );
            }
        }
        let tainted = req.flow.is_some_and(|l| !l.is_bottom());
        if tainted {
            if let Some(allow) = ceiling.and_then(|c| c.tainted_budget_uj) {
                for (link, g) in req.chain.iter().enumerate() {
                    let spent = self.spent(&g.id()).tainted_uj;
                    if spent.checked_add(cost).is_none_or(|t| t > allow) {
                        return deny(
                            Reason::BudgetExceeded,
                            format!("link {link}: tainted allowance {allow} µJ would be passed"),
                        );
                    }
                }
            }
        }
        for (link, g) in req.chain.iter().enumerate() {
            let Some(funds) = &g.grant().budget_funds else { continue };
            // §4.8 is silent on an unpriced decision against a money
            // ceiling; skipping the ceiling would let a grant capped at
            // 1 USD allow any number of unpriced actions. Fail closed: a
            // cost in no currency is not the ceiling's currency
            // (docs/decisions.md).
            let Some(money) = &req.cost.money else {
                return deny(
                    Reason::CurrencyMismatch,
                    format!(
                        "link {link}: an unpriced action against a money ceiling of {} {}; a grant bounded in money needs a price",
                        funds.minor, funds.currency
                    ),
                );
            };
            if money.currency != funds.currency {
                return deny(
                    Reason::CurrencyMismatch,
                    format!("link {link}: cost in {} against a ceiling in {}", money.currency, funds.currency),
                );
            }
            let spent = self.spent(&g.id()).minor;
            if spent.checked_add(money.minor).is_none_or(|t| t > funds.minor) {
                return deny(
                    Reason::FundsExceeded,
                    format!("link {link}: {spent} + {} > {} {}", money.minor, funds.minor, funds.currency),
                );
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Whole,
    Authorize,
    /// Phase two of the metered path (§4.9): every check of `Whole` but
    /// revocation and supersession. The action was authorised at phase
    /// one; a revocation admitted since does not make its real joules a
    /// breach (§4.3: it is judged at the marker it was authorised at).
    Charge,
}

/// The (parent, shard) pairs of a chain whose shard is bound to `point`
/// (§4.5 `PointIs`).
pub(super) fn bound_here<'a>(
    chain: &'a [SignedGrant],
    point: Option<&'a Did>,
) -> impl Iterator<Item = (ContentId, ContentId)> + 'a {
    chain.windows(2).filter_map(move |w| {
        let bound = point.is_some() && w[1].grant().bound_point() == point;
        bound.then(|| (w[0].id(), w[1].id()))
    })
}

/// Why a caveat does not hold for this request at `point`, or `None` when it holds.
fn caveat_fails(c: &Caveat, req: &Request<'_>, point: Option<&Did>) -> Option<String> {
    match c {
        Caveat::ActionIn(set) => {
            (!set.contains(&req.frame.action)).then(|| format!("ActionIn: {:?} is not among {set:?}", req.frame.action))
        }
        Caveat::PayloadIs(p) => (req.frame.payload_hash != *p).then(|| "PayloadIs: a different payload".to_owned()),
        Caveat::CallerIs(d) => (req.caller != d).then(|| format!("CallerIs: caller is not {d}")),
        Caveat::NotBefore(t) => (req.now < *t).then(|| format!("NotBefore: now {} < {t}", req.now)),
        Caveat::NotAfter(t) => (req.now > *t).then(|| format!("NotAfter: now {} > {t}", req.now)),
        Caveat::MaxCostUj(n) => {
            (req.cost.energy.uj > *n).then(|| format!("MaxCostUj: cost {} µJ > {n} µJ", req.cost.energy.uj))
        }
        Caveat::ModelIn(models) => match req.frame.model {
            None => Some("ModelIn: the frame names no model".to_owned()),
            Some(m) if !models.contains(&m) => Some(format!("ModelIn: model {m} is not admitted")),
            Some(_) => None,
        },
        // Judged by the flow gate, before caveats.
        Caveat::FlowBelow(_) => None,
        Caveat::PointIs(d) => match point {
            Some(me) if me == d => None,
            Some(me) => Some(format!("PointIs: this shard is bound to point {d}, not this point {me} (§4.5)")),
            None => Some(format!("PointIs: this shard is bound to point {d}; this point states no identity")),
        },
    }
}
