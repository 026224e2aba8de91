//! §4.7 runs: a grant, then checkpoints, amendments and continuations in
//! order, and their verification.

use super::verifier::Verifier;
use super::{steer, Finding, Record, RunReport, SteeringError};
use crate::error::Error;
use crate::grant::SignedGrant;
use crate::rotation::KeyRing;

/// One run: its grant, then checkpoints, amendments and continuations in
/// order (§4.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub(super) records: Vec<Record>,
    /// The key logs its signers' signatures are checked with (§2.1); empty
    /// by default, so a rotated steward's records are refused unless the
    /// caller presents the steward's log ([`Run::with_key_ring`]).
    pub(super) keys: KeyRing,
}

impl Run {
    /// A new run under `grant`.
    pub fn new(grant: SignedGrant) -> Self {
        Self { records: vec![Record::Grant(grant)], keys: KeyRing::new() }
    }

    /// Builds a run from records as given (record 0 must be a grant).
    pub fn from_records(records: Vec<Record>) -> Result<Self, Error> {
        match records.first() {
            Some(Record::Grant(_)) => Ok(Self { records, keys: KeyRing::new() }),
            _ => Err(steer(SteeringError::RunHeader("a run's first record is its grant".into()))),
        }
    }

    /// The records in order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The latest `at` of any checkpoint in the run (0 with none): a new
    /// checkpoint is stamped no earlier, so a clock that stepped back
    /// cannot put checkpoints out of order.
    pub fn latest_checkpoint_at(&self) -> u64 {
        self.records
            .iter()
            .filter_map(|r| match r {
                Record::Checkpoint(c) => Some(c.checkpoint().at),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// The records, to take apart (tests, tools).
    pub fn into_records(self) -> Vec<Record> {
        self.records
    }

    /// The run's grant (record 0).
    pub fn grant(&self) -> Option<&SignedGrant> {
        match self.records.first() {
            Some(Record::Grant(g)) => Some(g),
            _ => None,
        }
    }

    /// Checks every grant and amendment signature with `keys` (§2.1): a
    /// steward that rotated its key signs under its current key, and its
    /// records verify only when its key log is in the ring. Verification
    /// and authoring onto the run both use it.
    #[must_use]
    pub fn with_key_ring(mut self, keys: KeyRing) -> Self {
        self.keys = keys;
        self
    }

    /// The key ring signatures are checked with.
    pub fn key_ring(&self) -> &KeyRing {
        &self.keys
    }

    pub(super) fn verifier(&self) -> Option<Verifier> {
        let mut v = Verifier::start(self.grant()?, self.keys.clone());
        for (i, r) in self.records.iter().enumerate().skip(1) {
            v.step(i, r);
        }
        Some(v)
    }

    /// Verifies the whole run (§4.7, C21) and reports every finding.
    pub fn verify(&self) -> Result<RunReport, Error> {
        let v = self
            .verifier()
            .ok_or_else(|| steer(SteeringError::RunHeader("a run's first record is its grant".into())))?;
        Ok(v.finish())
    }

    /// The verifier after the run, refusing to author onto a run that is not
    /// clean (pending amendments are not yet findings here).
    pub(super) fn clean_state(&self) -> Result<Verifier, Error> {
        let v = self
            .verifier()
            .ok_or_else(|| steer(SteeringError::RunHeader("a run's first record is its grant".into())))?;
        let refused: Vec<&Finding> = v.report.findings.iter().filter(|f| !f.admitted).collect();
        if let Some(f) = refused.first() {
            return Err(steer(SteeringError::RunNotClean {
                count: refused.len(),
                first: format!("record #{} {}: {}", f.index, f.kind, f.message),
            }));
        }
        Ok(v)
    }

    /// Appends a record as given (no checks: a verifier judges it later).
    pub fn push(&mut self, record: Record) {
        self.records.push(record);
    }
}
