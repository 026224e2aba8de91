//! §4.7 authoring: the agent's checkpoint and the issuer's amendment added
//! to a run, refused by exactly the verifier's rules before anything is
//! signed.

use super::amendment::check_amendment_rules;
use super::{
    amend_ceiling, steer, Amendment, Checkpoint, Record, Remainder, Run, SignedAmendment, SignedCheckpoint, Spent,
    SteeringError,
};
use crate::cbor::ContentId;
use crate::error::Error;
use crate::grant::{check_narrows, Caveat, Grant, SignedGrant};
use crate::identity::{Did, Keypair};

/// What the agent commits at a checkpoint ([`Run::checkpoint`]).
#[derive(Debug, Clone, Copy)]
pub struct CheckpointInput {
    /// The state commitment.
    pub state: ContentId,
    /// Unix seconds.
    pub at: u64,
    /// The cumulative spend, where the agent states it.
    pub spent: Option<Spent>,
    /// The nonce (fresh randomness when `None`).
    pub nonce: Option<[u8; 16]>,
}

/// What the issuer sets at an amendment ([`Run::amend`]).
#[derive(Debug, Clone, Default)]
pub struct AmendInput {
    /// The new budget (≤ the remainder; ≤ the issued budget where the
    /// checkpoint stated no spend).
    pub budget_uj: u64,
    /// A new, earlier expiry; the continuation carries it.
    pub expiry: Option<u64>,
    /// A new instruction-set commitment.
    pub instructions: Option<ContentId>,
    /// The amendment's nonce (fresh randomness when `None`).
    pub nonce: Option<[u8; 16]>,
    /// The continuation grant's nonce (fresh randomness when `None`).
    pub continuation_nonce: Option<[u8; 16]>,
    /// Caveats the continuation carries on top of the steered grant's
    /// (§4.9: a caveat only ever narrows, so adding one tightens).
    pub add_caveats: Vec<Caveat>,
}

/// An amendment as the issuer is about to sign it ([`Run::plan_amend`]):
/// the draft and its continuation grant, both unsigned, already checked by
/// the verifier's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmendPlan {
    /// The amendment to sign.
    pub amendment: Amendment,
    /// The continuation grant to sign.
    pub continuation: Grant,
    /// The most this amendment could have set (the remainder, or the issued
    /// budget where the checkpoint stated no spend).
    pub ceiling_uj: u64,
    /// What the steered grant has left, as the checkpoint lets one know it.
    pub remainder: Remainder,
}

impl Run {
    /// The agent commits a checkpoint (§4.7): seq, prev and the active grant
    /// come from the run; the same rules as the verifier refuse a checkpoint
    /// by anyone but the agent, a decreasing spend or an omitted one.
    pub fn checkpoint(&mut self, agent: &Keypair, input: CheckpointInput) -> Result<SignedCheckpoint, Error> {
        let mut v = self.clean_state()?;
        if v.pending.is_some() {
            return Err(steer(SteeringError::Continuation(
                "the run awaits the continuation grant of its last amendment".into(),
            )));
        }
        let active = v.active.clone().ok_or_else(|| {
            steer(SteeringError::WrongGrant("the run has no active grant to checkpoint under".into()))
        })?;
        if agent.did() != active.grant().subject {
            return Err(steer(SteeringError::NotAgent {
                author: agent.did().to_string(),
                subject: active.grant().subject.to_string(),
            }));
        }
        let (seq, prev) = match &v.last {
            None => (0, None),
            Some(l) => (l.cp.checkpoint().seq.saturating_add(1), Some(l.cp.id())),
        };
        let cp = Checkpoint {
            grant_id: active.id(),
            agent: agent.did(),
            seq,
            prev,
            state: input.state,
            at: input.at,
            spent: input.spent,
            nonce: input.nonce.unwrap_or_else(crate::identity::fresh_nonce),
        }
        .sign(agent)?;
        v.checkpoint_rules(&cp)?;
        let n = v.report.findings.len();
        let record = Record::Checkpoint(cp.clone());
        v.step(self.records.len(), &record);
        // An admitted finding (an overspend the agent truthfully declares)
        // does not stop the agent from recording it.
        if let Some(f) = v.report.findings.iter().skip(n).find(|f| !f.admitted) {
            return Err(steer(SteeringError::RunNotClean { count: 1, first: f.message.clone() }));
        }
        self.records.push(record);
        Ok(cp)
    }

    /// Plans the issuer's amendment at the run's latest checkpoint (§4.7)
    /// without signing anything: the continuation grant (same issuer, agent
    /// and chain position, the amended budget and expiry, the steered
    /// grant's caveats plus any added) and the amendment naming it, checked
    /// by exactly the verifier's rules — so a widening, an amount above the
    /// remainder or an amender who is not the issuer is refused here, before
    /// a signature exists.
    pub fn plan_amend(&self, issuer: &Did, input: &AmendInput) -> Result<AmendPlan, Error> {
        self.plan(issuer, input.clone())
    }

    /// [`Run::plan_amend`] taking the input: its added caveats move into
    /// the continuation grant.
    fn plan(&self, issuer: &Did, input: AmendInput) -> Result<AmendPlan, Error> {
        let v = self.clean_state()?;
        let active = v.active.clone().ok_or_else(|| {
            steer(SteeringError::WrongGrant("the run has no active grant to amend (already steered?)".into()))
        })?;
        let last = v.last.clone().ok_or_else(|| {
            steer(SteeringError::WrongCheckpoint("an amendment cites a checkpoint; the run has none yet".into()))
        })?;
        let g = active.grant();
        let mut caveats = g.caveats.clone();
        caveats.extend(input.add_caveats);
        let continuation = Grant {
            budget_uj: input.budget_uj,
            expiry: input.expiry.unwrap_or(g.expiry),
            nonce: input.continuation_nonce.unwrap_or_else(crate::identity::fresh_nonce),
            caveats,
            ..g.clone()
        };
        let draft = Amendment {
            grant_id: active.id(),
            checkpoint: last.cp.id(),
            amended_by: *issuer,
            budget_uj: input.budget_uj,
            expiry: input.expiry,
            instructions: input.instructions,
            continuation: continuation.id(),
            nonce: input.nonce.unwrap_or_else(crate::identity::fresh_nonce),
        };
        // The amending side's check: exactly the verifier's rules, before
        // any signature exists.
        check_amendment_rules(&active, &last.cp, &draft, v.base)?;
        // The continuation is checked as the verifier will check it (no
        // wider on any axis than the steered grant), on the unsigned draft.
        check_narrows(
            &Grant { delegate_depth: None, ..g.clone() },
            &Grant { delegate_depth: None, ..continuation.clone() },
        )
        .map_err(|amp| steer(SteeringError::Widening(format!("continuation widens the steered grant: {amp}"))))?;
        let stated = last.cp.checkpoint().spent.map(|s| s.uj);
        let (ceiling_uj, remainder) = amend_ceiling(g.budget_uj, v.base, stated);
        Ok(AmendPlan { amendment: draft, continuation, ceiling_uj, remainder })
    }

    /// The issuer amends the run at its latest checkpoint (§4.7): plans it
    /// ([`Run::plan_amend`], refused before anything is signed), signs the
    /// continuation grant and the amendment naming it, and appends both.
    pub fn amend(&mut self, issuer: &Keypair, input: AmendInput) -> Result<(SignedAmendment, SignedGrant), Error> {
        self.amend_signed(&issuer.did(), input, issuer, |g| g.sign(issuer))
    }

    /// [`Run::amend`] by a steward that rotated its key (§2.1 with §4.7):
    /// the amendment and its continuation name `identity` (the steward's
    /// inception DID) and are signed by `current`, which must be the key
    /// that controls it in this run's key ring ([`Run::with_key_ring`]);
    /// a superseded key is refused `rotation-superseded-key`.
    pub fn amend_as(
        &mut self,
        identity: &Did,
        current: &Keypair,
        input: AmendInput,
    ) -> Result<(SignedAmendment, SignedGrant), Error> {
        let state = self
            .keys
            .get(identity)
            .cloned()
            .ok_or_else(|| Error::BadSignature { object: "Amendment", signer: identity.to_string() })?;
        self.amend_signed(identity, input, current, |g| crate::rotation::issue_grant(g, current, &state))
    }

    fn amend_signed(
        &mut self,
        issuer: &Did,
        input: AmendInput,
        signer: &Keypair,
        sign_grant: impl FnOnce(Grant) -> Result<SignedGrant, Error>,
    ) -> Result<(SignedAmendment, SignedGrant), Error> {
        let plan = self.plan(issuer, input)?;
        let mut v = self.clean_state()?;
        let cont = sign_grant(plan.continuation)?;
        let am = plan.amendment.sign(signer);
        let n = v.report.findings.len();
        let (ra, rg) = (Record::Amendment(am.clone()), Record::Grant(cont.clone()));
        v.step(self.records.len(), &ra);
        v.step(self.records.len() + 1, &rg);
        if let Some(f) = v.report.findings.iter().skip(n).find(|f| !f.admitted) {
            return Err(steer(SteeringError::RunNotClean { count: 1, first: f.message.clone() }));
        }
        self.records.push(ra);
        self.records.push(rg);
        Ok((am, cont))
    }
}
