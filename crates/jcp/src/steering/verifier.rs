//! §4.7 the run verifier: a state machine over a run's records that
//! [`Run::verify`](super::Run::verify) feeds the whole run and the authoring
//! routines feed each new record, so both sides apply one implementation.

use super::amendment::check_amendment_rules;
use super::continuation::continuation_under;
use super::{
    amend_ceiling, check_declared_spend, steer, verify_checkpoint, AmendmentRow, CheckpointRow, Finding, GrantRow,
    Record, Remainder, RunReport, SignedAmendment, SignedCheckpoint, SteeringError, UnknownReason, RUN_FORMAT,
};
use crate::cbor::ContentId;
use crate::error::Error;
use crate::grant::SignedGrant;
use crate::rotation::KeyRing;

#[derive(Debug, Clone)]
pub(super) struct LastCheckpoint {
    pub(super) cp: SignedCheckpoint,
    pub(super) row: usize,
    pub(super) amended: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub(super) index: usize,
    pub(super) am: SignedAmendment,
    pub(super) steered: SignedGrant,
    pub(super) row: usize,
}

/// The run verifier as a state machine over records: [`Run::verify`] feeds
/// it the whole run; the authoring routines feed it the new record after
/// the run, so both sides apply one implementation.
#[derive(Debug, Clone)]
pub(super) struct Verifier {
    pub(super) active: Option<SignedGrant>,
    /// Run-wide spend at which the active grant began.
    pub(super) base: Option<u64>,
    pub(super) last: Option<LastCheckpoint>,
    /// Highest admitted declared spend.
    pub(super) high: Option<u64>,
    pub(super) pending: Option<Pending>,
    pub(super) report: RunReport,
    /// Key logs of rotated signers (§2.1).
    pub(super) keys: KeyRing,
}

impl Verifier {
    pub(super) fn start(grant: &SignedGrant, keys: KeyRing) -> Self {
        let g = grant.grant();
        let signed = keys.verify_grant(grant);
        let ok = signed.is_ok();
        let mut report = RunReport {
            format: RUN_FORMAT,
            clean: true,
            run_grant: grant.id(),
            agent: g.subject,
            issuer: g.issuer,
            issued_budget_uj: g.budget_uj,
            active_grant: None,
            active_budget_uj: None,
            latest_spent: None,
            remainder: Remainder::Unknown { reason: UnknownReason::NotStated },
            records: 1,
            grants: vec![GrantRow {
                index: 0,
                id: grant.id(),
                role: "run",
                issuer: g.issuer,
                subject: g.subject,
                budget_uj: g.budget_uj,
                expiry: g.expiry,
                verdict: if ok { "ok" } else { "refused" },
            }],
            checkpoints: Vec::new(),
            unattached_amendments: Vec::new(),
            findings: Vec::new(),
        };
        if let Err(e) = &signed {
            report.findings.push(finding(0, "grant", grant.id(), e, false));
        }
        Self { active: ok.then(|| grant.clone()), base: Some(0), last: None, high: None, pending: None, report, keys }
    }

    fn refuse(&mut self, index: usize, kind: &'static str, id: ContentId, e: &Error) {
        self.report.findings.push(finding(index, kind, id, e, false));
    }

    /// A pending amendment not followed by its continuation: refused here,
    /// and the steered grant stays superseded (fail closed).
    fn close_pending(&mut self) {
        if let Some(p) = self.pending.take() {
            self.refuse(
                p.index,
                "amendment",
                p.am.id(),
                &steer(SteeringError::Continuation(format!(
                    "the continuation grant {} does not follow the amendment",
                    p.am.amendment().continuation
                ))),
            );
        }
    }

    pub(super) fn step(&mut self, index: usize, record: &Record) {
        self.report.records = index + 1;
        if !matches!(record, Record::Grant(_)) {
            self.close_pending();
        }
        match record {
            Record::Grant(g) => self.grant(index, g),
            Record::Checkpoint(c) => self.checkpoint(index, c),
            Record::Amendment(a) => self.amendment(index, a),
        }
    }

    fn grant(&mut self, index: usize, g: &SignedGrant) {
        let gr = g.grant();
        let mut row = GrantRow {
            index,
            id: g.id(),
            role: "continuation",
            issuer: gr.issuer,
            subject: gr.subject,
            budget_uj: gr.budget_uj,
            expiry: gr.expiry,
            verdict: "refused",
        };
        let Some(p) = self.pending.take() else {
            self.report.grants.push(row);
            self.refuse(
                index,
                "grant",
                g.id(),
                &steer(SteeringError::Continuation(
                    "a grant after the first must be the continuation named by the amendment just before it".into(),
                )),
            );
            return;
        };
        match continuation_under(&p.steered, p.am.amendment(), g, &self.keys) {
            Ok(()) => {
                row.verdict = "ok";
                // The continuation begins at the spend stated where it was
                // steered; unknown if that checkpoint stated none.
                let at = self.report.checkpoints.get(p.row).and_then(|r| r.spent.map(|s| s.uj));
                self.base = at;
                self.report.remainder = match at {
                    Some(_) => Remainder::Known { uj: gr.budget_uj },
                    None => Remainder::Unknown { reason: UnknownReason::BaseUnknown },
                };
                self.active = Some(g.clone());
                if let Some(r) = self.report.checkpoints.get_mut(p.row) {
                    if let Some(a) = r.amendments.iter_mut().find(|a| a.index == p.index) {
                        a.continuation_verified = true;
                    }
                }
            }
            Err(e) => self.refuse(index, "grant", g.id(), &e),
        }
        self.report.grants.push(row);
    }

    pub(super) fn checkpoint_rules(&self, cp: &SignedCheckpoint) -> Result<(), Error> {
        let c = cp.checkpoint();
        let Some(active) = &self.active else {
            if !cp.verify_signature() {
                return Err(Error::BadSignature { object: "Checkpoint", signer: c.agent.to_string() });
            }
            return Err(steer(SteeringError::WrongGrant(format!(
                "checkpoint cites grant {}, but the run has no active grant here",
                c.grant_id
            ))));
        };
        verify_checkpoint(active, cp)?;
        let (want_seq, want_prev, last_at) = match &self.last {
            None => (0, None, 0),
            Some(l) => (l.cp.checkpoint().seq.saturating_add(1), Some(l.cp.id()), l.cp.checkpoint().at),
        };
        if c.seq != want_seq || c.prev != want_prev {
            return Err(steer(SteeringError::Sequence(format!(
                "checkpoint has seq {} prev {}; the run expects seq {want_seq} prev {}",
                c.seq,
                c.prev.map_or_else(|| "none".to_owned(), |p| p.to_hex()),
                want_prev.map_or_else(|| "none".to_owned(), |p| p.to_hex())
            ))));
        }
        if c.at < last_at {
            return Err(steer(SteeringError::Sequence(format!(
                "checkpoint at {} precedes the previous checkpoint's {last_at}",
                c.at
            ))));
        }
        check_declared_spend(c, self.high)?;
        Ok(())
    }

    fn checkpoint(&mut self, index: usize, cp: &SignedCheckpoint) {
        let c = cp.checkpoint();
        let mut row = CheckpointRow {
            index,
            seq: c.seq,
            id: cp.id(),
            grant_id: c.grant_id,
            state: c.state,
            at: c.at,
            spent: c.spent,
            // Replaced below once the checkpoint is admitted; a refused
            // checkpoint's claims are not judged.
            remainder: Remainder::Unknown { reason: UnknownReason::Refused },
            amend_ceiling_uj: None,
            amendments: Vec::new(),
            verdict: "refused",
            codes: Vec::new(),
        };
        if let Err(e) = self.checkpoint_rules(cp) {
            row.codes.push(e.code());
            self.report.checkpoints.push(row);
            self.refuse(index, "checkpoint", cp.id(), &e);
            return;
        }
        let Some(active) = &self.active else { return };
        let budget = active.grant().budget_uj;
        let (ceiling, remainder) = amend_ceiling(budget, self.base, c.spent.map(|s| s.uj));
        row.remainder = remainder;
        row.amend_ceiling_uj = Some(ceiling);
        row.verdict = "ok";
        if let (Some(s), Some(b)) = (c.spent, self.base) {
            let under = s.uj.saturating_sub(b);
            if under > budget {
                let e = steer(SteeringError::Overspent { spent_uj: under, budget_uj: budget });
                row.verdict = "finding";
                row.codes.push(e.code());
                self.report.findings.push(finding(index, "checkpoint", cp.id(), &e, true));
            }
        }
        if let Some(s) = c.spent {
            self.high = Some(s.uj);
            self.report.latest_spent = Some(s);
        }
        self.report.remainder = remainder;
        self.report.checkpoints.push(row);
        self.last = Some(LastCheckpoint { cp: cp.clone(), row: self.report.checkpoints.len() - 1, amended: false });
    }

    fn amendment_rules(&self, am: &SignedAmendment) -> Result<(SignedGrant, usize, u64), Error> {
        let a = am.amendment();
        self.keys.verify(&a.amended_by, "Amendment", &am.bytes, &am.signature)?;
        let Some(last) = &self.last else {
            return Err(steer(SteeringError::WrongCheckpoint(format!(
                "amendment cites checkpoint {}, but the run has no admitted checkpoint before it",
                a.checkpoint
            ))));
        };
        if a.checkpoint != last.cp.id() {
            return Err(steer(SteeringError::WrongCheckpoint(format!(
                "amendment cites checkpoint {}; an amendment steers the run's latest checkpoint {}",
                a.checkpoint,
                last.cp.id()
            ))));
        }
        let Some(active) = &self.active else {
            return Err(steer(SteeringError::WrongGrant(
                "the grant of this checkpoint was already steered; the run has no active grant here".into(),
            )));
        };
        if last.amended {
            return Err(steer(SteeringError::WrongGrant("this checkpoint was already amended".into())));
        }
        let ceiling = check_amendment_rules(active, &last.cp, a, self.base)?;
        Ok((active.clone(), last.row, ceiling))
    }

    fn amendment(&mut self, index: usize, am: &SignedAmendment) {
        match self.amendment_rules(am) {
            Err(e) => {
                let code = e.code();
                let row = self.last.as_ref().filter(|l| l.cp.id() == am.amendment().checkpoint).map(|l| l.row);
                match row.and_then(|r| self.report.checkpoints.get_mut(r)) {
                    Some(r) => r.codes.push(code),
                    None => self.report.unattached_amendments.push(index),
                }
                self.refuse(index, "amendment", am.id(), &e);
            }
            Ok((steered, row, ceiling)) => {
                let a = am.amendment();
                if let Some(r) = self.report.checkpoints.get_mut(row) {
                    r.amendments.push(AmendmentRow {
                        index,
                        id: am.id(),
                        amended_by: a.amended_by,
                        budget_uj: a.budget_uj,
                        ceiling_uj: ceiling,
                        expiry: a.expiry,
                        instructions: a.instructions,
                        continuation: a.continuation,
                        continuation_verified: false,
                    });
                }
                if let Some(l) = &mut self.last {
                    l.amended = true;
                }
                // The steered grant is superseded now (a soft revoke); the
                // run resumes only under a verified continuation.
                self.active = None;
                self.pending = Some(Pending { index, am: am.clone(), steered, row });
            }
        }
    }

    pub(super) fn finish(mut self) -> RunReport {
        self.close_pending();
        self.report.findings.sort_by_key(|f| f.index);
        self.report.active_grant = self.active.as_ref().map(SignedGrant::id);
        self.report.active_budget_uj = self.active.as_ref().map(|g| g.grant().budget_uj);
        if self.active.is_none() {
            self.report.remainder = Remainder::Known { uj: 0 };
        }
        self.report.clean = self.report.findings.is_empty();
        self.report
    }
}

fn finding(index: usize, kind: &'static str, id: ContentId, e: &Error, admitted: bool) -> Finding {
    Finding { index, kind, id, code: e.code(), message: e.to_string(), admitted }
}
