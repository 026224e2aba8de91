//! Spec §7: the decision. Pure and deterministic over the gate's state; the
//! clock is an argument. Also §4.2 (chained decisions, conservation across
//! siblings), §4.3 (revocation on both paths), §4.8 (dual ceilings), §4.9
//! (caveats, the two-phase metered path), §4.10 (flow), trust roots (C15).

use std::collections::{HashMap, HashSet};

use crate::cbor::ContentId;
use crate::chain::{check_structure, ChainFault};
use crate::channel::{ChannelPoint, SignedStatement, Statement};
use crate::energy::Energy;
use crate::error::Error;
use crate::flow::{FlowCeiling, Label, TaintFloor};
use crate::frame::{Frame, Trust};
use crate::grant::{Caveat, Funds, SignedGrant};
use crate::identity::Did;
use crate::revocation::SignedRevocation;
use crate::steering::{SignedAmendment, SignedCheckpoint};

/// The spec's deny reasons (§7, §4.2, §4.8, §4.9, §4.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum Reason {
    /// §7.1 a `data` frame never exercises a capability.
    UntrustedControl,
    /// §4.3 the grant or an ancestor is revoked.
    Revoked,
    /// §7.3 the (root) issuer is not a configured trust root.
    UntrustedRoot,
    /// §7.4/§7.8 the frame names another grant or resource.
    WrongResource,
    /// §7.5 the caller is not the grant's subject.
    WrongSubject,
    /// §7.6 a signature does not verify.
    BadSignature,
    /// §7.7 expired.
    Expired,
    /// §7.8 the action is not granted.
    ActionNotGranted,
    /// §7.9 the joule ceiling would be passed.
    BudgetExceeded,
    /// §4.8 the money ceiling would be passed.
    FundsExceeded,
    /// §4.8 a cost in another currency.
    CurrencyMismatch,
    /// §4.9 a caveat does not hold.
    CaveatUnsatisfied,
    /// §4.2 structurally invalid chain, or a delegated grant decided alone.
    ChainBroken,
    /// §4.2 a hop amplifies.
    AttenuationViolation,
    /// §4.10 the argument's label is above the ceiling or refused by the floor.
    FlowViolation,
    /// §4.10 provenance was not computed; fails closed.
    FlowNotComputed,
    /// §11 the request's freshness stamp is outside the endpoint's window.
    StaleRequest,
    /// §11 the endpoint could not record the request: it is not decided.
    Unrecorded,
    /// §4.7 the grant was steered: an admitted amendment superseded it (a
    /// soft revoke); the run goes on under its continuation grant.
    Superseded,
    /// §6.1 a later exchange names a handle the endpoint did not return to a
    /// request it decided, or one it has closed or forgotten.
    UnknownContinuation,
}

impl Reason {
    /// The wire code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UntrustedControl => "untrusted-control",
            Self::Revoked => "revoked",
            Self::UntrustedRoot => "untrusted-root",
            Self::WrongResource => "wrong-resource",
            Self::WrongSubject => "wrong-subject",
            Self::BadSignature => "bad-signature",
            Self::Expired => "expired",
            Self::ActionNotGranted => "action-not-granted",
            Self::BudgetExceeded => "budget-exceeded",
            Self::FundsExceeded => "funds-exceeded",
            Self::CurrencyMismatch => "currency-mismatch",
            Self::CaveatUnsatisfied => "caveat-unsatisfied",
            Self::ChainBroken => "chain-broken",
            Self::AttenuationViolation => "attenuation-violation",
            Self::FlowViolation => "flow-violation",
            Self::FlowNotComputed => "flow-not-computed",
            Self::StaleRequest => "stale-request",
            Self::Unrecorded => "unrecorded",
            Self::Superseded => "superseded",
            Self::UnknownContinuation => "unknown-continuation",
        }
    }

    /// Parses a wire code.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| r.as_str() == s)
    }

    /// Every reason.
    pub const ALL: [Reason; 20] = [
        Self::UntrustedControl,
        Self::Revoked,
        Self::UntrustedRoot,
        Self::WrongResource,
        Self::WrongSubject,
        Self::BadSignature,
        Self::Expired,
        Self::ActionNotGranted,
        Self::BudgetExceeded,
        Self::FundsExceeded,
        Self::CurrencyMismatch,
        Self::CaveatUnsatisfied,
        Self::ChainBroken,
        Self::AttenuationViolation,
        Self::FlowViolation,
        Self::FlowNotComputed,
        Self::StaleRequest,
        Self::Unrecorded,
        Self::Superseded,
        Self::UnknownContinuation,
    ];
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an action costs: metered energy and, for a priced action, money.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Cost {
    /// The metered energy (µJ with provenance and coverage).
    pub energy: Energy,
    /// The money cost, if the action is priced.
    pub money: Option<Funds>,
}

impl Cost {
    /// An energy-only cost.
    pub fn energy(energy: Energy) -> Self {
        Self { energy, money: None }
    }
}

/// One decision's inputs (§7).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The frame.
    pub frame: &'a Frame,
    /// The grant (one link) or the full chain, root first.
    pub chain: &'a [SignedGrant],
    /// The caller's identity.
    pub caller: &'a Did,
    /// The metered cost (ignored by [`Gate::authorize`]).
    pub cost: &'a Cost,
    /// The enforcement point's clock, unix seconds.
    pub now: u64,
    /// The argument's label; `None` = provenance not computed (§4.10).
    pub flow: Option<&'a Label>,
}

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "lowercase")]
pub enum Verdict {
    /// Allowed (and debited).
    Allow,
    /// Denied, with the first failing check's reason; nothing debited.
    Deny(Reason),
}

/// A decision and what it did to the budget.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// A sentence saying why (empty on a plain allow).
    pub detail: String,
    /// Every grant id the decision concerns, root first (one for a single grant).
    pub chain_ids: Vec<ContentId>,
    /// µJ debited from every link (0 on deny).
    pub debited_uj: u64,
    /// Money debited from every link, in the cost's minor units (0 on deny).
    pub debited_minor: u64,
    /// The leaf grant's joule ceiling.
    pub budget_uj: u64,
    /// The leaf grant's remaining joules after this decision.
    pub budget_remaining_uj: u64,
    /// A breach found at the debit point of the two-phase path (§4.9): the
    /// work ran, its joules were debited, and the breach is recorded here.
    pub breach: Option<Reason>,
}

impl Decision {
    /// Whether the verdict is allow.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// The deny reason, if any.
    pub fn reason(&self) -> Option<Reason> {
        match self.verdict {
            Verdict::Allow => None,
            Verdict::Deny(r) => Some(r),
        }
    }
}

/// Accumulated spend against one grant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Spend {
    /// µJ spent (may exceed the budget only through a debit-point overrun).
    pub uj: u64,
    /// Money spent, minor units.
    pub minor: u64,
    /// µJ spent on calls whose argument was not ⊥ (§4.10 tainted allowance).
    pub tainted_uj: u64,
}

/// Proof that phase one of the metered path passed (§4.9). Only
/// [`Gate::authorize`] makes one. It does NOT say that cost-dependent
/// caveats passed: those are listed in `pending` and run at the debit point.
#[derive(Debug)]
pub struct Authorization {
    chain_ids: Vec<ContentId>,
    /// Cost-dependent caveats still to be enforced at the debit point.
    pub pending: Vec<Caveat>,
}

/// An enforcement point's decision state: trust roots, taint floors,
/// admitted revocations, spend per grant, and the cache of verified chains.
#[derive(Debug, Default, Clone)]
pub struct Gate {
    trust_roots: HashMap<ContentId, HashSet<Did>>,
    taint_floors: HashMap<ContentId, TaintFloor>,
    revoked: HashSet<ContentId>,
    /// Steered grants superseded by an admitted amendment (§4.7 soft
    /// revoke): grant id → the amendment's id.
    superseded: HashMap<ContentId, ContentId>,
    /// For each continuation admitted here: the run's declared spend when
    /// it began (`None`: that checkpoint stated none).
    run_base: HashMap<ContentId, Option<u64>>,
    spend: HashMap<ContentId, Spend>,
    /// §4.5 budget channels this point is a member of, by grant id: the
    /// peers' settled spend there counts against the grant's budget.
    channels: HashMap<ContentId, ChannelPoint>,
    verified: HashSet<ContentId>,
}

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
    /// A gate with nothing configured: every resource open, no floors.
    pub fn new() -> Self {
        Self::default()
    }

    /// Configures `root` as a trust root for `resource` (C15). Once any root
    /// is configured for a resource, only listed keys anchor authority.
    pub fn add_trust_root(&mut self, resource: ContentId, root: Did) {
        self.trust_roots.entry(resource).or_default().insert(root);
    }

    /// Configures a taint floor for `resource` (§4.10).
    pub fn set_taint_floor(&mut self, resource: ContentId, floor: TaintFloor) {
        self.taint_floors.insert(resource, floor);
    }

    /// Admits a revocation after checking its authority against the grant
    /// it names (§4.3). A forged one is refused and changes nothing.
    pub fn admit_revocation(&mut self, rev: &SignedRevocation, grant: &SignedGrant) -> Result<(), Error> {
        rev.check_authority(grant)?;
        self.revoked.insert(grant.id());
        Ok(())
    }

    /// Checks an amendment as an enforcement point must before admitting it
    /// (§4.7), changing nothing: the signed checkpoint and amendment against
    /// the steered grant (`steering::verify_amendment`: signature, binding,
    /// amender = issuer ≠ agent, only tightening, at most the remainder the
    /// checkpoint states), the continuation grant against both
    /// (`steering::verify_continuation`), and — fail closed — at most the
    /// remainder by this point's own record of spend on the steered grant,
    /// which an agent's understated checkpoint cannot raise.
    pub fn check_amendment(
        &self,
        steered: &SignedGrant,
        checkpoint: &SignedCheckpoint,
        amendment: &SignedAmendment,
        continuation: &SignedGrant,
    ) -> Result<(), Error> {
        // A continuation admitted here began at the spend its amendment's
        // checkpoint stated; any other grant at 0 (the fail-closed reading).
        let base = match self.run_base.get(&steered.id()) {
            Some(b) => *b,
            None => Some(0),
        };
        crate::steering::verify_amendment_from(steered, checkpoint, amendment, base)?;
        crate::steering::verify_continuation(steered, amendment.amendment(), continuation)?;
        let recorded = self.spent(&steered.id()).uj;
        let left = steered.grant().budget_uj.saturating_sub(recorded);
        if amendment.amendment().budget_uj > left {
            return Err(Error::Steering(crate::steering::SteeringError::Widening(format!(
                "amended budget {} µJ exceeds the remainder {left} µJ this point recorded ({recorded} µJ spent of {} µJ)",
                amendment.amendment().budget_uj,
                steered.grant().budget_uj
            ))));
        }
        Ok(())
    }

    /// Admits an amendment (§4.7): after [`Gate::check_amendment`], the
    /// steered grant is superseded — a soft revoke: every decision against
    /// it, or against a chain containing it, is denied `superseded`; the run
    /// goes on under the continuation grant alone. A refused amendment
    /// changes nothing.
    pub fn admit_amendment(
        &mut self,
        steered: &SignedGrant,
        checkpoint: &SignedCheckpoint,
        amendment: &SignedAmendment,
        continuation: &SignedGrant,
    ) -> Result<(), Error> {
        self.check_amendment(steered, checkpoint, amendment, continuation)?;
        self.superseded.insert(steered.id(), amendment.id());
        self.run_base.insert(continuation.id(), checkpoint.checkpoint().spent.map(|s| s.uj));
        Ok(())
    }

    /// Whether an admitted amendment superseded a grant here.
    pub fn is_superseded(&self, id: &ContentId) -> bool {
        self.superseded.contains_key(id)
    }

    /// Whether a grant id is revoked here.
    pub fn is_revoked(&self, id: &ContentId) -> bool {
        self.revoked.contains(id)
    }

    /// The spend counted against a grant: this point's own, plus — where
    /// it runs a budget channel on the grant (§4.5) — its peers' settled
    /// spend, counted against the shared budget once admitted.
    pub fn spent(&self, id: &ContentId) -> Spend {
        let mut s = self.local_spent(id);
        if let Some(c) = self.channels.get(id) {
            s.uj = s.uj.saturating_add(c.peers_settled_uj());
        }
        s
    }

    /// Every grant with spend counted against it here (its own, or a
    /// channel peer's settled spend), with [`Gate::spent`]: what an
    /// operator's exposition lists per grant. Sorted by grant id.
    pub fn spent_grants(&self) -> Vec<(ContentId, Spend)> {
        let mut ids: Vec<ContentId> = self.spend.keys().chain(self.channels.keys()).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(|id| (id, self.spent(&id))).collect()
    }

    /// The spend this point itself allowed against a grant (what its own
    /// channel statements state, §4.5).
    pub fn local_spent(&self, id: &ContentId) -> Spend {
        self.spend.get(id).copied().unwrap_or_default()
    }

    /// Joins a budget channel on `grant` as the point `me`, with `peers`
    /// (§4.5): configuration, like a trust root. Joining again replaces the
    /// channel (and forgets what it had admitted).
    pub fn join_channel(
        &mut self,
        grant: SignedGrant,
        me: Did,
        peers: impl IntoIterator<Item = Did>,
    ) -> Result<(), Error> {
        let id = grant.id();
        self.channels.insert(id, ChannelPoint::join(grant, me, peers)?);
        Ok(())
    }

    /// The budget channel this point runs on a grant.
    pub fn channel(&self, grant_id: &ContentId) -> Option<&ChannelPoint> {
        self.channels.get(grant_id)
    }

    fn channel_of(&self, grant_id: &ContentId) -> Result<&ChannelPoint, Error> {
        self.channels.get(grant_id).ok_or_else(|| Error::ChannelUnknown { grant_id: grant_id.to_hex() })
    }

    fn channel_mut(&mut self, grant_id: &ContentId) -> Result<&mut ChannelPoint, Error> {
        self.channels.get_mut(grant_id).ok_or_else(|| Error::ChannelUnknown { grant_id: grant_id.to_hex() })
    }

    /// Whether a peer's statement would be admitted, changing nothing (§4.5).
    pub fn check_statement(&self, s: &SignedStatement) -> Result<(), Error> {
        self.channel_of(&s.statement().grant_id)?.check_peer(s)
    }

    /// Admits a peer's statement (§4.5): signature, grant, membership,
    /// not stale, not regressing. From then on its settled spend counts
    /// against the grant's budget here. A refusal changes nothing.
    pub fn admit_statement(&mut self, s: &SignedStatement) -> Result<(), Error> {
        self.channel_mut(&s.statement().grant_id)?.admit_peer(s)
    }

    /// The statement this point would sign now on a channel grant: its
    /// local spend, the next `seq`.
    pub fn next_statement(&self, grant_id: &ContentId) -> Result<Statement, Error> {
        Ok(self.channel_of(grant_id)?.next_statement(self.local_spent(grant_id).uj))
    }

    /// Whether [`Gate::note_own_statement`] would take `s`, changing nothing.
    pub fn check_own_statement(&self, s: &SignedStatement) -> Result<(), Error> {
        self.channel_of(&s.statement().grant_id)?.check_own(s)
    }

    /// Records one of this point's own signed statements on a channel.
    pub fn note_own_statement(&mut self, s: &SignedStatement) -> Result<(), Error> {
        self.channel_mut(&s.statement().grant_id)?.note_own(s)
    }

    /// Re-applies a recorded debit to every named grant (replay of a verified
    /// allow receipt, §8.1). The caller verifies the receipt first.
    pub fn replay_debit(&mut self, chain_ids: &[ContentId], uj: u64, minor: u64, tainted: bool) {
        for id in chain_ids {
            let s = self.spend.entry(*id).or_default();
            s.uj = s.uj.saturating_add(uj);
            s.minor = s.minor.saturating_add(minor);
            if tainted {
                s.tainted_uj = s.tainted_uj.saturating_add(uj);
            }
        }
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

    /// Decides and, on allow, debits every link (§7). Caches a verified chain.
    pub fn decide(&mut self, req: &Request<'_>) -> Decision {
        let (decision, verified_key) = self.evaluate_inner(req, Phase::Whole);
        if let Some(k) = verified_key {
            self.verified.insert(k);
        }
        if decision.is_allow() {
            self.debit(req, &decision.chain_ids);
            return self.finish(decision, req);
        }
        decision
    }

    /// The decision without any effect on the gate (pure).
    pub fn evaluate(&self, req: &Request<'_>) -> Decision {
        let (d, _) = self.evaluate_inner(req, Phase::Whole);
        if d.is_allow() {
            let mut d = d;
            let leaf = d.chain_ids.last().copied();
            if let Some(leaf) = leaf {
                let after = self.spent(&leaf).uj.saturating_add(req.cost.energy.uj);
                d.budget_remaining_uj = d.budget_uj.saturating_sub(after);
            }
            d.debited_uj = req.cost.energy.uj;
            d.debited_minor = req.cost.money.as_ref().map_or(0, |m| m.minor);
            return d;
        }
        d
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
        let ids: Vec<ContentId> = req.chain.iter().map(SignedGrant::id).collect();
        if ids != auth.chain_ids {
            return Err(Error::ChargeChainMismatch);
        }
        let (checked, _) = self.evaluate_inner(req, Phase::Whole);
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

    fn debit(&mut self, req: &Request<'_>, chain_ids: &[ContentId]) {
        let minor = req.cost.money.as_ref().map_or(0, |m| m.minor);
        let tainted = req.flow.is_some_and(|l| !l.is_bottom());
        self.replay_debit(chain_ids, req.cost.energy.uj, minor, tainted);
    }

    fn finish(&self, mut d: Decision, req: &Request<'_>) -> Decision {
        d.debited_uj = req.cost.energy.uj;
        d.debited_minor = req.cost.money.as_ref().map_or(0, |m| m.minor);
        if let Some(leaf) = d.chain_ids.last() {
            d.budget_remaining_uj = d.budget_uj.saturating_sub(self.spent(leaf).uj);
        }
        d
    }

    fn evaluate_inner(&self, req: &Request<'_>, phase: Phase) -> (Decision, Option<ContentId>) {
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
            self.single_prefix(req, g, cached)?;
        } else {
            self.chain_prefix(req, cached)?;
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
                if let Some(why) = caveat_fails(c, req) {
                    return deny(Reason::CaveatUnsatisfied, format!("link {link}: {why}"));
                }
            }
        }
        match phase {
            Phase::Authorize => self.check_not_exhausted(req),
            Phase::Whole => self.check_budgets(req, ceiling.as_ref()),
        }
    }

    fn root_trusted(&self, resource: &ContentId, root_issuer: &Did) -> bool {
        match self.trust_roots.get(resource) {
            None => true,
            Some(roots) => roots.contains(root_issuer),
        }
    }

    /// §7 items 2–7 for a single grant.
    fn single_prefix(&self, req: &Request<'_>, g: &SignedGrant, cached: bool) -> Step<()> {
        let grant = g.grant();
        if grant.parent.is_some() {
            return deny(Reason::ChainBroken, "a delegated grant is never decided alone (§4.2): present its chain");
        }
        if self.revoked.contains(&g.id()) {
            return deny(Reason::Revoked, format!("grant {} is revoked", g.id()));
        }
        if let Some(am) = self.superseded.get(&g.id()) {
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

    /// §7 for a chain: structure and signatures first, then revocation of
    /// every link, the root's trust, the leaf-level checks, expiry of every link.
    fn chain_prefix(&self, req: &Request<'_>, cached: bool) -> Step<()> {
        if !cached {
            check_structure(req.chain).or_else(|f| match f {
                ChainFault::Attenuation { .. } => deny(Reason::AttenuationViolation, f.to_string()),
                _ => deny(Reason::ChainBroken, f.to_string()),
            })?;
            if let Some(link) = req.chain.iter().position(|g| !g.verify_signature()) {
                return deny(Reason::BadSignature, format!("link {link}: the issuer's signature does not verify"));
            }
        }
        if let Some(link) = req.chain.iter().position(|g| self.revoked.contains(&g.id())) {
            return deny(Reason::Revoked, format!("link {link} ({}) is revoked", req.chain[link].id()));
        }
        if let Some(link) = req.chain.iter().position(|g| self.superseded.contains_key(&g.id())) {
            return deny(
                Reason::Superseded,
                format!("link {link} ({}) was superseded by an amendment", req.chain[link].id()),
            );
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
        if let Some(link) = req.chain.iter().position(|g| g.grant().expired_at(req.now)) {
            return deny(Reason::Expired, format!("link {link} expired at {}", req.chain[link].grant().expiry));
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
            let Some(money) = &req.cost.money else { continue };
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
enum Phase {
    Whole,
    Authorize,
}

/// Why a caveat does not hold for this request, or `None` when it holds.
fn caveat_fails(c: &Caveat, req: &Request<'_>) -> Option<String> {
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
    }
}
