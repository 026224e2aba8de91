//! §7 the gate: an enforcement point's decision state (trust roots, taint
//! floors, admitted revocations and amendments, spend per grant, verified
//! chains) and its two decision entry points, [`Gate::decide`] and the pure
//! [`Gate::evaluate`].

use std::collections::{HashMap, HashSet};

use super::checks::Phase;
use super::{Decision, Request, Spend};
use crate::cbor::ContentId;
use crate::channel::ChannelPoint;
use crate::error::Error;
use crate::flow::TaintFloor;
use crate::grant::SignedGrant;
use crate::identity::Did;
use crate::revocation::SignedRevocation;
use crate::steering::{SignedAmendment, SignedCheckpoint};

/// An enforcement point's decision state: trust roots, taint floors,
/// admitted revocations, spend per grant, and the cache of verified chains.
#[derive(Debug, Default, Clone)]
pub struct Gate {
    pub(super) trust_roots: HashMap<ContentId, HashSet<Did>>,
    pub(super) taint_floors: HashMap<ContentId, TaintFloor>,
    pub(super) revoked: HashSet<ContentId>,
    /// Steered grants superseded by an admitted amendment (§4.7 soft
    /// revoke): grant id → the amendment's id.
    pub(super) superseded: HashMap<ContentId, ContentId>,
    /// For each continuation admitted here: the run's declared spend when
    /// it began (`None`: that checkpoint stated none).
    pub(super) run_base: HashMap<ContentId, Option<u64>>,
    pub(super) spend: HashMap<ContentId, Spend>,
    /// §4.5 budget channels this point is a member of, by grant id: the
    /// peers' settled spend there counts against the grant's budget.
    pub(super) channels: HashMap<ContentId, ChannelPoint>,
    pub(super) verified: HashSet<ContentId>,
    /// This point's identity (§4.5 `PointIs`): the key that seals its
    /// receipts. `None`: a point that states none, where a shard bound to
    /// any point fails closed.
    pub(super) point: Option<Did>,
    /// §4.5: for each sharded parent, the shard bound to this point that it
    /// has allowed through (one live shard of a parent per point).
    pub(super) shards_here: HashMap<ContentId, ContentId>,
}

impl Gate {
    /// A gate with nothing configured: every resource open, no floors.
    pub fn new() -> Self {
        Self::default()
    }

    /// States this point's identity (§4.5): a shard carrying `PointIs` is
    /// decided here only if it names this key.
    pub fn set_point(&mut self, point: Did) {
        self.point = Some(point);
    }

    /// This point's identity, where it states one.
    pub fn point(&self) -> Option<&Did> {
        self.point.as_ref()
    }

    /// Notes that `shard` (a child of `parent` bound to this point) was
    /// allowed through here: replay's way of restoring what
    /// [`Gate::decide`] and [`Gate::authorize`] note on allow.
    pub fn note_shard(&mut self, parent: ContentId, shard: ContentId) {
        // A revoked shard's place goes to the next (rebalancing, §4.5).
        match self.shards_here.get(&parent) {
            Some(live) if !self.revoked.contains(live) => {}
            _ => {
                self.shards_here.insert(parent, shard);
            }
        }
    }

    /// The shard of `parent` bound to this point that it allowed through.
    pub fn shard_here(&self, parent: &ContentId) -> Option<ContentId> {
        self.shards_here.get(parent).copied()
    }

    /// Configures `root` as a trust root for `resource` (C15). Once any root
    /// is configured for a resource, only listed keys anchor authority.
    pub fn add_trust_root(&mut self, resource: ContentId, root: Did) {
        self.trust_roots.entry(resource).or_default().insert(root);
    }

    /// Whether `resource` has trust roots here: an allow on it then means a
    /// listed key anchored its chain (C15).
    pub fn anchored(&self, resource: &ContentId) -> bool {
        self.trust_roots.get(resource).is_some_and(|r| !r.is_empty())
    }

    /// Whether `root` is a trust root of `resource` here: a chain it
    /// issued is anchored (C15). With no trust root for the resource,
    /// nothing is.
    pub fn anchors(&self, resource: &ContentId, root: &Did) -> bool {
        self.trust_roots.get(resource).is_some_and(|r| r.contains(root))
    }

    /// Whether any resource has trust roots here.
    pub fn has_trust_roots(&self) -> bool {
        self.trust_roots.values().any(|r| !r.is_empty())
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
    /// the steered grant (`steering::verify_amendment`: the checkpoint's
    /// own signature and author, the amendment's signature, binding,
    /// amender = issuer ≠ agent, only tightening, at most the remainder the
    /// checkpoint states), the checkpoint's stated spend against the spend
    /// the run stated where this point admitted the amendment that began
    /// the steered grant (never omitted, never lower), the continuation
    /// grant against both
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
        // §4.7: a steered grant is superseded once. A second, different
        // amendment of it would hand out a second continuation from the
        // same remainder; the run goes on under the first one's
        // continuation, which is what is steered next. The same amendment
        // again checks as it did (its admission is then a no-op).
        if let Some(prev) = self.superseded.get(&steered.id()) {
            if *prev != amendment.id() {
                return Err(Error::Steering(crate::steering::SteeringError::Sequence(format!(
                    "grant {} is already superseded by amendment {prev}: a steered grant is amended once; steer its continuation",
                    steered.id()
                ))));
            }
        }
        crate::steering::verify_amendment_from(steered, checkpoint, amendment, base)?;
        // §4.7 "both the amending side and the verifying side MUST enforce
        // this": the spend the run stated where this point admitted the
        // amendment that began `steered` is what it holds; the checkpoint
        // steering `steered` may neither omit nor lower it.
        crate::steering::check_declared_spend(
            checkpoint.checkpoint(),
            self.run_base.get(&steered.id()).copied().flatten(),
        )?;
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

    /// The admitted amendment that superseded a grant here, if one did.
    pub fn superseded_by(&self, id: &ContentId) -> Option<ContentId> {
        self.superseded.get(id).copied()
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

    /// Decides and, on allow, debits every link (§7). Caches a verified chain.
    pub fn decide(&mut self, req: &Request<'_>) -> Decision {
        let (decision, verified_key) = self.evaluate_inner(req, Phase::Whole);
        if let Some(k) = verified_key {
            self.verified.insert(k);
        }
        if decision.is_allow() {
            self.debit(req, &decision.chain_ids);
            self.note_shards(req.chain);
            return self.finish(decision, req);
        }
        decision
    }

    /// §4.5: notes each link bound to this point (`PointIs`) as its
    /// parent's shard here.
    pub(super) fn note_shards(&mut self, chain: &[SignedGrant]) {
        let bound: Vec<(ContentId, ContentId)> = super::checks::bound_here(chain, self.point.as_ref()).collect();
        for (p, x) in bound {
            self.note_shard(p, x);
        }
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

    pub(super) fn debit(&mut self, req: &Request<'_>, chain_ids: &[ContentId]) {
        let minor = req.cost.money.as_ref().map_or(0, |m| m.minor);
        let tainted = req.flow.is_some_and(|l| !l.is_bottom());
        self.replay_debit(chain_ids, req.cost.energy.uj, minor, tainted);
    }

    pub(super) fn finish(&self, mut d: Decision, req: &Request<'_>) -> Decision {
        d.debited_uj = req.cost.energy.uj;
        d.debited_minor = req.cost.money.as_ref().map_or(0, |m| m.minor);
        if let Some(leaf) = d.chain_ids.last() {
            d.budget_remaining_uj = d.budget_uj.saturating_sub(self.spent(leaf).uj);
        }
        d
    }
}
