//! The steward's read-only view of a run (JCP §4.7): reads a run file with
//! `jcp::steering::Run::read`, verifies it with `Run::verify` (the same
//! report `jcp run verify --json` prints), and maps the report to rows: each
//! checkpoint's sequence, its declared spend with provenance — or "not
//! stated", never zero — the remainder, or "unknown" (never the full budget
//! when the spend is not stated), its amendments and their continuations,
//! and the verdict on every record.

use std::path::Path;

use jcp::steering::{Remainder, Run, RunReport, Spent, UnknownReason};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use crate::{format_uj, ViewError};

/// The core's record verdict word as the closed set; a word the core does
/// not use reads as refused (fail closed: never shown as ok).
fn record_verdict(v: &str) -> crate::tags::RecordVerdict {
    match v {
        "ok" => crate::tags::RecordVerdict::Ok,
        "finding" => crate::tags::RecordVerdict::Finding,
        _ => crate::tags::RecordVerdict::Refused,
    }
}

fn spent_text(s: Option<&Spent>) -> String {
    match s {
        Some(s) => format!("{}, {}", format_uj(s.uj), s.provenance.as_str()),
        None => "not stated".to_owned(),
    }
}

/// A remainder as shown: known with its figure, or unknown with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RemainderCell {
    /// Whether the remainder is known.
    pub known: bool,
    /// Microjoules left, only when known.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub uj: Option<u64>,
    /// In words (`1.234 J`, or `unknown — no spend stated`).
    pub text: String,
}

pub(crate) fn remainder_cell(r: &Remainder) -> RemainderCell {
    match r {
        Remainder::Known { uj } => RemainderCell { known: true, uj: Some(*uj), text: format_uj(*uj) },
        Remainder::Unknown { reason } => RemainderCell {
            known: false,
            uj: None,
            text: match reason {
                UnknownReason::NotStated => "unknown — no spend stated".to_owned(),
                UnknownReason::BaseUnknown => "unknown — the spend when this grant began was not stated".to_owned(),
                UnknownReason::Refused => "unknown — refused".to_owned(),
            },
        },
    }
}

/// A declared spend as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SpendCell {
    /// Cumulative µJ, absent when not stated (never 0 for "not stated").
    #[cfg_attr(test, ts(type = "number | null"))]
    pub uj: Option<u64>,
    /// The §5 grade of the figure, absent when not stated.
    pub provenance: Option<String>,
    /// The figure in words (`1.234 J`), absent when not stated.
    pub amount: Option<String>,
    /// In words (`1.234 J, HwShunt`, or `not stated`).
    pub text: String,
}

fn spend_cell(s: Option<&Spent>) -> SpendCell {
    SpendCell {
        uj: s.map(|s| s.uj),
        provenance: s.map(|s| s.provenance.as_str().to_owned()),
        amount: s.map(|s| format_uj(s.uj)),
        text: spent_text(s),
    }
}

/// An amendment at a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AmendmentLine {
    /// Record index in the run file.
    #[cfg_attr(test, ts(type = "number"))]
    pub index: u64,
    /// Content id.
    pub id: String,
    /// Who amended (the steward).
    pub amended_by: String,
    /// The budget it sets, in words.
    pub budget: String,
    /// The most it could set at this checkpoint, in words.
    pub ceiling: String,
    /// New expiry (Unix seconds), if changed.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub expiry: Option<u64>,
    /// New instructions (content id), if any.
    pub instructions: Option<String>,
    /// The continuation grant it names.
    pub continuation: String,
    /// Whether that continuation was found and verified.
    pub continuation_verified: bool,
}

/// One checkpoint of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct CheckpointLine {
    /// Record index in the run file.
    #[cfg_attr(test, ts(type = "number"))]
    pub index: u64,
    /// Checkpoint sequence number.
    #[cfg_attr(test, ts(type = "number"))]
    pub seq: u64,
    /// Content id.
    pub id: String,
    /// The grant it was made under.
    pub grant_id: String,
    /// When (Unix seconds, as the agent signed it).
    #[cfg_attr(test, ts(type = "number"))]
    pub at: u64,
    /// The cumulative spend it declares.
    pub spent: SpendCell,
    /// What the active grant has left.
    pub remainder: RemainderCell,
    /// The most an amendment here may set, in words; absent when the checkpoint was refused.
    pub amend_ceiling: Option<String>,
    /// Amendments made at this checkpoint.
    pub amendments: Vec<AmendmentLine>,
    /// Ok, finding or refused.
    pub verdict: crate::tags::RecordVerdict,
    /// The reason codes behind a finding or refusal.
    pub codes: Vec<String>,
}

/// A grant of the run (the run's own, continuations).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct GrantLine {
    /// Record index.
    #[cfg_attr(test, ts(type = "number"))]
    pub index: u64,
    /// Content id.
    pub id: String,
    /// `run` or `continuation`.
    pub role: String,
    /// Budget in words.
    pub budget: String,
    /// Expiry, Unix seconds.
    #[cfg_attr(test, ts(type = "number"))]
    pub expiry: u64,
    /// Ok or refused.
    pub verdict: crate::tags::RecordVerdict,
}

/// A finding on one record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RunFinding {
    /// Record index.
    #[cfg_attr(test, ts(type = "number"))]
    pub index: u64,
    /// `grant`, `checkpoint` or `amendment`.
    pub kind: String,
    /// The reason code.
    pub code: String,
    /// In words.
    pub message: String,
    /// Whether the record was admitted nonetheless (e.g. overspent).
    pub admitted: bool,
}

/// The run as the steward's view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RunView {
    /// The run file.
    pub path: String,
    /// `clean` or `findings` (as `jcp run verify`'s exit 0 / 1).
    pub verdict: crate::tags::Verdict,
    /// The verdict in words.
    pub verdict_text: String,
    /// The run's grant id.
    pub run_grant: String,
    /// The steward (issuer).
    pub issuer: String,
    /// The agent.
    pub agent: String,
    /// The budget first issued, in words.
    pub issued_budget: String,
    /// The budget of the grant now in force, in words; absent when no grant is active.
    pub active_budget: Option<String>,
    /// The latest stated spend.
    pub latest_spent: SpendCell,
    /// What is left now.
    pub remainder: RemainderCell,
    /// Records in the file.
    #[cfg_attr(test, ts(type = "number"))]
    pub records: u64,
    /// The run's grants.
    pub grants: Vec<GrantLine>,
    /// Every checkpoint, in order.
    pub checkpoints: Vec<CheckpointLine>,
    /// Findings on any record.
    pub findings: Vec<RunFinding>,
    /// Refused amendments whose checkpoint is not the latest admitted (record indexes).
    #[cfg_attr(test, ts(type = "Array<number>"))]
    pub unattached_amendments: Vec<u64>,
    /// The report exactly as `jcp run verify --json` prints it.
    #[cfg_attr(test, ts(type = "unknown"))]
    pub report: serde_json::Value,
    /// Who stands behind the run's grants: a rotated steward's key log, a
    /// threshold issuer (k-of-n), a standing grant and its ledger (§2.1,
    /// §2.2, §4.6), from the files beside the run.
    pub authority: crate::authority::AuthorityView,
}

fn n(i: usize) -> u64 {
    u64::try_from(i).unwrap_or(u64::MAX)
}

/// Maps a verified run's report to the view.
pub fn run_view(
    report: &RunReport,
    path: &Path,
    authority: crate::authority::AuthorityView,
) -> Result<RunView, ViewError> {
    let checkpoints = report
        .checkpoints
        .iter()
        .map(|c| CheckpointLine {
            index: n(c.index),
            seq: c.seq,
            id: c.id.to_string(),
            grant_id: c.grant_id.to_string(),
            at: c.at,
            spent: spend_cell(c.spent.as_ref()),
            remainder: remainder_cell(&c.remainder),
            amend_ceiling: c.amend_ceiling_uj.map(format_uj),
            amendments: c
                .amendments
                .iter()
                .map(|a| AmendmentLine {
                    index: n(a.index),
                    id: a.id.to_string(),
                    amended_by: a.amended_by.to_string(),
                    budget: format_uj(a.budget_uj),
                    ceiling: format_uj(a.ceiling_uj),
                    expiry: a.expiry,
                    instructions: a.instructions.map(|i| i.to_string()),
                    continuation: a.continuation.to_string(),
                    continuation_verified: a.continuation_verified,
                })
                .collect(),
            verdict: record_verdict(c.verdict),
            codes: c.codes.iter().map(|s| (*s).to_owned()).collect(),
        })
        .collect();
    let findings: Vec<RunFinding> = report
        .findings
        .iter()
        .map(|f| RunFinding {
            index: n(f.index),
            kind: f.kind.to_owned(),
            code: f.code.to_owned(),
            message: f.message.clone(),
            admitted: f.admitted,
        })
        .collect();
    let remainder = remainder_cell(&report.remainder);
    let verdict_text = if report.clean {
        format!(
            "Clean: every record verified. Latest stated spend {}; remainder {}.",
            spent_text(report.latest_spent.as_ref()),
            remainder.text
        )
    } else {
        format!("Findings: {} record(s) with a finding (listed below).", findings.len())
    };
    Ok(RunView {
        path: path.display().to_string(),
        verdict: crate::tags::Verdict::of(report.clean),
        verdict_text,
        run_grant: report.run_grant.to_string(),
        issuer: report.issuer.to_string(),
        agent: report.agent.to_string(),
        issued_budget: format_uj(report.issued_budget_uj),
        active_budget: report.active_budget_uj.map(format_uj),
        latest_spent: spend_cell(report.latest_spent.as_ref()),
        remainder,
        records: n(report.records),
        grants: report
            .grants
            .iter()
            .map(|g| GrantLine {
                index: n(g.index),
                id: g.id.to_string(),
                role: g.role.to_owned(),
                budget: format_uj(g.budget_uj),
                expiry: g.expiry,
                verdict: record_verdict(g.verdict),
            })
            .collect(),
        checkpoints,
        findings,
        unattached_amendments: report.unattached_amendments.iter().map(|i| n(*i)).collect(),
        report: serde_json::to_value(report).map_err(|e| ViewError::Json(e.to_string()))?,
        authority,
    })
}

/// Reads (with the key logs beside it), verifies and maps a run file (what
/// the console's command does).
/// An unreadable or undecodable file is an error naming the file and the
/// record; findings in a readable run are part of the view.
pub fn report(path: &Path) -> Result<RunView, ViewError> {
    read_view(path).map(|(_, _, view)| view)
}

/// [`report`] with the run and its verification report, for a caller that
/// works on the run too (the steward's view): the file and the material
/// beside it are read once.
pub fn read_view(path: &Path) -> Result<(Run, RunReport, RunView), ViewError> {
    let bad =
        |e: &jcp::Error| ViewError::Run { path: path.to_path_buf(), code: e.code().to_string(), detail: e.to_string() };
    let (run, material) = crate::authority::read_run(path).map_err(|e| bad(&e))?;
    let report = run.verify().map_err(|e| bad(&e))?;
    let view = run_view(&report, path, crate::authority::view(&run, material))?;
    Ok((run, report, view))
}

/// Writes the demo run (`jcp::steering::demo`, seed 1) to `path` unless it
/// exists, through a temporary file renamed when whole (the `demo` feature).
#[cfg(feature = "demo")]
pub fn write_demo(path: &Path) -> Result<(), ViewError> {
    if path.exists() {
        return Ok(());
    }
    let part = path.with_extension(format!("{}.part", jcp::steering::RUN_EXTENSION));
    let w = |detail: String| ViewError::DemoWrite { path: path.to_path_buf(), detail };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| w(e.to_string()))?;
    }
    jcp::steering::demo::write_demo_run(&part, 1).map_err(|e| w(format!("{e} ({})", e.code())))?;
    std::fs::rename(&part, path).map_err(|e| w(e.to_string()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The IPC types of this view (checked with the others in `ipc`).
    pub(crate) fn generated() -> Vec<(String, String)> {
        macro_rules! all {
            ($($t:ty),*) => { vec![$( (<$t as TS>::name(), <$t as TS>::export_to_string().unwrap()) ),*] };
        }
        all!(RemainderCell, SpendCell, AmendmentLine, CheckpointLine, GrantLine, RunFinding, RunView)
    }

    #[test]
    fn s4_7_unknown_remainder_is_never_a_figure() {
        let r = remainder_cell(&Remainder::Unknown { reason: UnknownReason::NotStated });
        assert!(!r.known && r.uj.is_none());
        assert_eq!(r.text, "unknown — no spend stated");
        assert_eq!(remainder_cell(&Remainder::Unknown { reason: UnknownReason::Refused }).text, "unknown — refused");
        assert!(remainder_cell(&Remainder::Unknown { reason: UnknownReason::BaseUnknown }).uj.is_none());
        assert_eq!(spend_cell(None).text, "not stated");
        assert!(spend_cell(None).uj.is_none());
        assert_eq!(format_uj(3_600_000_000_000), "3.600 MJ (1.000 kWh)");
    }
}
