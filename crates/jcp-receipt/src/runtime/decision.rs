//! A decision's life at a durable point (§4.11): decided by the gate (§7),
//! sealed as a JCR-1 receipt, allow and deny alike (§8), made durable,
//! **then** acted on, then its outcome recorded. Also the refusals a point
//! makes before the gate decides (§11).

use jcp::cbor::ContentId;
use jcp::decision::{Decision, Reason, Request, Verdict};
use jcp::grant::SignedGrant;

use super::{DurableGate, Unresolved};
use crate::error::Error;
use crate::receipt::ReceiptCore;
use crate::record::{self, Outcome, OutcomeStatus};
use crate::stream::RecordKind;

/// A decision that was sealed and recorded.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The gate's decision.
    pub decision: Decision,
    /// The receipt's id (what an outcome names).
    pub receipt: ContentId,
    /// Byte offset of the receipt record.
    pub offset: u64,
    /// The sealed receipt's bytes (what a wire response carries).
    pub sealed: Vec<u8>,
}

/// What [`DurableGate::run`] returns.
#[derive(Debug)]
pub enum RunResult<T, E> {
    /// Denied: the action did not run (the deny receipt is recorded).
    Denied(Recorded),
    /// Allowed; the action ran and its outcome is recorded.
    Ran(Recorded, Result<T, E>),
}

impl DurableGate {
    /// Seals `decision` as a `jcp/2` receipt at the next stream position and
    /// appends it durably (§4.11: before the caller may act); an allow stays
    /// pending until its outcome is recorded.
    pub(super) fn record_decision(&mut self, decision: Decision, req: &Request<'_>) -> Result<Recorded, Error> {
        if decision.is_allow() {
            self.record_shards(req.chain)?;
        }
        let core = ReceiptCore::from_decision(&decision, req, self.steward_did)?;
        let pos = self.position();
        let bytes = core.seal(pos, &self.steward)?;
        let receipt = ContentId::of_bytes(&bytes);
        // Durable before the caller may run the action (§4.11).
        let offset = self.writer.append(RecordKind::Receipt, &bytes)?;
        if decision.is_allow() {
            self.pending.insert(
                receipt,
                Unresolved {
                    receipt,
                    offset,
                    grant_id: core.grant_id,
                    holder: core.subject,
                    steward: self.steward_did,
                    action: core.action.clone(),
                    cost_uj: core.cost_uj,
                },
            );
        }
        Ok(Recorded { decision, receipt, offset, sealed: bytes })
    }

    /// §4.5: a shard bound to this point and its parent are recorded before
    /// the first allow through them, so replay knows this point's shard of
    /// the parent again and the audit can check the binding and the split.
    fn record_shards(&mut self, chain: &[SignedGrant]) -> Result<(), Error> {
        for w in chain.windows(2) {
            if w[1].grant().bound_point() == Some(&self.steward_did) && !self.grants.contains_key(&w[1].id()) {
                if !self.grants.contains_key(&w[0].id()) {
                    self.record_grant(&w[0])?;
                }
                self.record_grant(&w[1])?;
            }
        }
        Ok(())
    }

    /// A refusal made before the gate decides (§11: a stale or
    /// unauthenticated request, a continuation naming an unknown handle):
    /// a deny with `reason`, nothing debited, the leaf's ceiling and
    /// remainder as the gate holds them.
    pub fn refusal(&self, req: &Request<'_>, reason: Reason, detail: impl Into<String>) -> Decision {
        let chain_ids: Vec<ContentId> = req.chain.iter().map(SignedGrant::id).collect();
        let (budget_uj, budget_remaining_uj) = req.chain.last().map_or((0, 0), |g| {
            let b = g.grant().budget_uj;
            (b, b.saturating_sub(self.gate.spent(&g.id()).uj))
        });
        Decision {
            verdict: Verdict::Deny(reason),
            detail: detail.into(),
            chain_ids,
            debited_uj: 0,
            debited_minor: 0,
            budget_uj,
            budget_remaining_uj,
            breach: None,
        }
    }

    /// Seals and records a refusal made before the gate decides (see
    /// [`DurableGate::refusal`]): the refused request is evidence too.
    pub fn record_refusal(
        &mut self,
        req: &Request<'_>,
        reason: Reason,
        detail: impl Into<String>,
    ) -> Result<Recorded, Error> {
        let d = self.refusal(req, reason, detail);
        self.record_decision(d, req)
    }

    /// Seals a refusal WITHOUT recording it: only for `unrecorded` (§11),
    /// when the record cannot be written. Returns the decision and the
    /// sealed bytes.
    pub fn seal_unrecorded(
        &mut self,
        req: &Request<'_>,
        detail: impl Into<String>,
    ) -> Result<(Decision, Vec<u8>), Error> {
        let d = self.refusal(req, Reason::Unrecorded, detail);
        let core = ReceiptCore::from_decision(&d, req, self.steward_did)?;
        let pos = self.position();
        let bytes = core.seal(pos, &self.steward)?;
        Ok((d, bytes))
    }

    /// Decides (§7), seals the receipt (allow and deny alike, §8) and makes
    /// it durable. On allow the caller runs the action only after this
    /// returns, then calls [`DurableGate::complete`].
    pub fn decide(&mut self, req: &Request<'_>) -> Result<Recorded, Error> {
        let d = self.gate.decide(req);
        self.record_decision(d, req)
    }

    /// Records the outcome of an allowed action (durably).
    pub fn complete(&mut self, receipt: &ContentId, status: OutcomeStatus) -> Result<u64, Error> {
        if !self.pending.contains_key(receipt) {
            return Err(Error::OutcomeUnknown(format!(
                "no pending decision {receipt} (never recorded here, or already settled)"
            )));
        }
        let o = Outcome { receipt: *receipt, status, steward: self.steward_did };
        let pos = self.position();
        let bytes = record::seal_core(&o.to_value(), pos, &self.steward);
        let at = self.writer.append(RecordKind::Outcome, &bytes)?;
        self.pending.remove(receipt);
        // A reservation resolved by an outcome keeps its held debit and can
        // no longer be settled by a charge.
        self.held.remove(receipt);
        Ok(at)
    }

    /// Decide, record, run `action` only on allow, record its outcome.
    pub fn run<T, E>(
        &mut self,
        req: &Request<'_>,
        action: impl FnOnce() -> Result<T, E>,
    ) -> Result<RunResult<T, E>, Error> {
        let rec = self.decide(req)?;
        if !rec.decision.is_allow() {
            return Ok(RunResult::Denied(rec));
        }
        let out = action();
        let status = if out.is_ok() { OutcomeStatus::Completed } else { OutcomeStatus::Failed };
        self.complete(&rec.receipt, status)?;
        Ok(RunResult::Ran(rec, out))
    }
}
