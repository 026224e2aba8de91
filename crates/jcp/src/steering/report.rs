//! §4.7 (C21) run reports: the verdict on a whole run, as a serde view a UI
//! can show, every finding naming its record.

use serde::Serialize;

use super::{Remainder, Spent};
use crate::cbor::ContentId;
use crate::identity::Did;

/// A violation found in a run, naming the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The record's index (0 = the run's grant; the header is not counted).
    pub index: usize,
    /// `grant`, `checkpoint` or `amendment`.
    pub kind: &'static str,
    /// The record's content id.
    pub id: ContentId,
    /// The stable reason code (`Error::code`).
    pub code: &'static str,
    /// What was wrong, for people.
    pub message: String,
    /// Whether the record was still admitted (only `steer-overspent`: the
    /// claim is the agent's own and stands as evidence). A refused record
    /// has no effect on the run.
    pub admitted: bool,
}

/// One amendment applied at a checkpoint, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AmendmentRow {
    /// The amendment's record index in the run (0 = the run's grant).
    pub index: usize,
    /// The amendment's content id.
    pub id: ContentId,
    /// The amender: the steered grant's issuer.
    pub amended_by: Did,
    /// The budget the amendment sets for the rest of the run, µJ.
    pub budget_uj: u64,
    /// The ceiling it had to respect at this checkpoint.
    pub ceiling_uj: u64,
    /// The new expiry, if any.
    pub expiry: Option<u64>,
    /// The new instruction-set commitment, if any.
    pub instructions: Option<ContentId>,
    /// The continuation grant it names.
    pub continuation: ContentId,
    /// Whether that continuation was found and verified.
    pub continuation_verified: bool,
}

/// One checkpoint of the run, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointRow {
    /// The checkpoint's record index in the run.
    pub index: usize,
    /// The checkpoint's `seq` as written (checked against its position).
    pub seq: u64,
    /// The checkpoint's content id.
    pub id: ContentId,
    /// The grant it cites as active.
    pub grant_id: ContentId,
    /// The agent's content-addressed state commitment.
    pub state: ContentId,
    /// When the agent committed, unix seconds.
    pub at: u64,
    /// The declared cumulative spend; `null` = not stated (never zero).
    pub spent: Option<Spent>,
    /// What the active grant has left here (`unknown` unless computable).
    pub remainder: Remainder,
    /// The most an amendment here may set (µJ); absent when refused.
    pub amend_ceiling_uj: Option<u64>,
    /// Amendments applied at this checkpoint.
    pub amendments: Vec<AmendmentRow>,
    /// `ok`, `finding` (admitted with a finding) or `refused`.
    pub verdict: &'static str,
    /// The codes of this record's findings.
    pub codes: Vec<&'static str>,
}

/// A grant of the run, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantRow {
    /// The grant's record index in the run (0 = the run's own grant).
    pub index: usize,
    /// The grant's content id.
    pub id: ContentId,
    /// `run` (record 0) or `continuation`.
    pub role: &'static str,
    /// The issuer (the steward).
    pub issuer: Did,
    /// The subject (the agent).
    pub subject: Did,
    /// Its `budget_uj`.
    pub budget_uj: u64,
    /// Its `expiry`, unix seconds (0 = never).
    pub expiry: u64,
    /// `ok` or `refused`.
    pub verdict: &'static str,
}

/// The verdict on a whole run (§4.7, C21): a serde-serialisable view a UI
/// can show, with every finding naming its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunReport {
    /// The run file format (`jcp-run/1`).
    pub format: &'static str,
    /// Whether the run has no findings at all (admitted or refused).
    pub clean: bool,
    /// The run's grant (record 0).
    pub run_grant: ContentId,
    /// The agent (record 0's subject).
    pub agent: Did,
    /// The steward (record 0's issuer).
    pub issuer: Did,
    /// Record 0's budget.
    pub issued_budget_uj: u64,
    /// The grant the run now spends under, if any (none after a refused
    /// continuation, or while an amendment's continuation is missing).
    pub active_grant: Option<ContentId>,
    /// The active grant's `budget_uj`.
    pub active_budget_uj: Option<u64>,
    /// The latest admitted declared spend; `null` = never stated.
    pub latest_spent: Option<Spent>,
    /// What the active grant has left at the latest admitted checkpoint.
    pub remainder: Remainder,
    /// Number of records (the header is not counted).
    pub records: usize,
    /// Grants in order.
    pub grants: Vec<GrantRow>,
    /// Checkpoints in order, each with the amendments applied there.
    pub checkpoints: Vec<CheckpointRow>,
    /// Amendments whose checkpoint could not be found (a row per amendment
    /// refused before it could be attached).
    pub unattached_amendments: Vec<usize>,
    /// Every finding, in record order.
    pub findings: Vec<Finding>,
}
