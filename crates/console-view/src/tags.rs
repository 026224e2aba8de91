//! The closed sets the console shows — provenance and coverage (JCP §5,
//! §5.2), verdicts, job and step states, the audit's finding codes
//! (`jcp_audit::FindingCode`, derived there) — as Rust enums whose
//! TypeScript unions ts-rs generates into `ui/src/gen/`, so the front end
//! compares against names the compiler checks, never against free strings
//! it maps by hand.

use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

/// How a figure was obtained (JCP §5), as shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub enum Provenance {
    /// A hardware reading from a live, plausible counter.
    HwShunt,
    /// A model calibrated on this host.
    ModelBased,
    /// Nothing calibrated.
    Estimator,
}

impl Provenance {
    /// The grade's name, as the protocol writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HwShunt => "HwShunt",
            Self::ModelBased => "ModelBased",
            Self::Estimator => "Estimator",
        }
    }
}

impl From<jcp::energy::Provenance> for Provenance {
    fn from(p: jcp::energy::Provenance) -> Self {
        match p {
            jcp::energy::Provenance::HwShunt => Self::HwShunt,
            jcp::energy::Provenance::ModelBased => Self::ModelBased,
            jcp::energy::Provenance::Estimator => Self::Estimator,
        }
    }
}

/// How much of the work a figure covers (JCP §5.2), as shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub enum Coverage {
    /// All of it.
    Whole,
    /// Part of it: never shown as a total.
    Partial,
}

impl Coverage {
    /// The coverage's name, as the protocol writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Whole => "Whole",
            Self::Partial => "Partial",
        }
    }
}

impl From<jcp::energy::Coverage> for Coverage {
    fn from(c: jcp::energy::Coverage) -> Self {
        match c {
            jcp::energy::Coverage::Whole => Self::Whole,
            jcp::energy::Coverage::Partial => Self::Partial,
        }
    }
}

/// An audit's or a run verification's verdict: `clean` exactly when the
/// command (`jcp audit`, `jcp run verify`) exits 0. "Not computed" is never
/// one of them: where there is no verdict the field is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No finding at all.
    Clean,
    /// At least one finding.
    Findings,
}

impl Verdict {
    /// From "is it clean".
    pub fn of(clean: bool) -> Self {
        if clean {
            Self::Clean
        } else {
            Self::Findings
        }
    }

    /// The word the store keeps.
    pub fn as_str(self) -> &'static str {
        self.word()
    }

    /// The stored word back; anything else is not a verdict.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "clean" => Some(Self::Clean),
            "findings" => Some(Self::Findings),
            _ => None,
        }
    }
}

/// One record's verdict in a run (JCP §4.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum RecordVerdict {
    /// Verified.
    Ok,
    /// Verified, with a finding.
    Finding,
    /// Refused.
    Refused,
}

/// A Blueprint reconcile's verdict (ABP §13): exit 0 / 1 of `jcp blueprint reconcile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    /// Every check passed (still evidence, not an authorization).
    Consistent,
    /// A check failed.
    Inconsistent,
}

impl Consistency {
    /// The word the store keeps.
    pub fn as_str(self) -> &'static str {
        self.word()
    }
}

/// How a step of the pinned order went (ABP §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Every check passed and nothing was left open.
    Passed,
    /// Checks passed, part of the step was not verified.
    Partial,
    /// A check failed.
    Failed,
    /// No check ran: never shown as passed.
    NotRun,
}

/// Why a surface was not verified (ABP §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum NotVerifiedKind {
    /// The host owns it; the protocol cannot establish it.
    HostOwned,
    /// An earlier step denied.
    NotReached,
    /// An input was not supplied.
    MissingInput,
}

/// An audit job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Reading.
    Running,
    /// Finished with a report.
    Done,
    /// Stopped by the person.
    Cancelled,
    /// Stopped by an error.
    Failed,
}

/// What became of a rung of the metering ladder (JCP §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum RungStatus {
    /// It meters.
    Chosen,
    /// Present but refused (not live, not plausible, not permitted).
    Declined,
    /// Not on this machine.
    Unavailable,
    /// Below the chosen rung: used when a window degrades.
    Standby,
}

/// A kind of workspace item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A receipt stream (opened by path).
    Stream,
    /// A run with checkpoints.
    Run,
    /// A Blueprint reconcile.
    Blueprint,
}

/// Findings of one code, counted exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct FindingCount {
    /// The code (the audit's closed vocabulary, `jcp_audit::FindingCode`).
    #[cfg_attr(test, ts(type = "FindingCode"))]
    pub code: jcp_audit::FindingCode,
    /// How many.
    #[cfg_attr(test, ts(type = "number"))]
    pub count: u64,
}

impl FindingCount {
    /// The counts of an audit report's JSON (`findings_by_code`), in code order.
    ///
    /// Strict: a report without `findings_by_code`, a code outside the audit's
    /// vocabulary or a count that is not a whole number is refused — never read
    /// as "no findings" or as 0 (a count that is not computed is never clean).
    pub fn of_report(report: &serde_json::Value) -> Result<Vec<FindingCount>, crate::ViewError> {
        let by_code = report.get("findings_by_code").ok_or_else(|| {
            crate::ViewError::ReportShape(
                "the audit report has no findings_by_code: its findings cannot be counted".to_owned(),
            )
        })?;
        let map = <std::collections::BTreeMap<jcp_audit::FindingCode, u64>>::deserialize(by_code).map_err(|e| {
            crate::ViewError::ReportShape(format!("the audit report's findings_by_code is not codes to counts: {e}"))
        })?;
        Ok(map.into_iter().map(|(code, count)| FindingCount { code, count }).collect())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn generated() -> Vec<(String, String)> {
        macro_rules! all {
            ($($t:ty),*) => { vec![$( (<$t as TS>::name(), <$t as TS>::export_to_string().unwrap()) ),*] };
        }
        let mut v = all!(
            Provenance,
            Coverage,
            Verdict,
            RecordVerdict,
            Consistency,
            StepStatus,
            NotVerifiedKind,
            JobState,
            RungStatus,
            ItemKind
        );
        // FindingCount refers to FindingCode, which ts-rs does not know: import it by hand.
        let (name, text) = (<FindingCount as TS>::name(), <FindingCount as TS>::export_to_string().unwrap());
        let (first, rest) = text.split_once('\n').unwrap();
        v.push((name, format!("{first}\nimport type {{ FindingCode }} from \"./FindingCode\";\n{rest}")));
        // The audit's finding codes: ts-rs on jcp_audit's own enum (its `ts` feature).
        v.push(all!(jcp_audit::FindingCode).remove(0));
        v
    }

    #[test]
    fn s5_grades_serialise_as_the_wire_labels() {
        for p in
            [jcp::energy::Provenance::HwShunt, jcp::energy::Provenance::ModelBased, jcp::energy::Provenance::Estimator]
        {
            assert_eq!(serde_json::to_value(Provenance::from(p)).unwrap(), p.as_str());
        }
        for c in [jcp::energy::Coverage::Whole, jcp::energy::Coverage::Partial] {
            assert_eq!(serde_json::to_value(Coverage::from(c)).unwrap(), c.as_str());
        }
        assert_eq!(Verdict::parse(Verdict::Findings.as_str()), Some(Verdict::Findings));
        assert_eq!(Verdict::parse("not computed"), None);
    }
}

/// Each tag's wire word (what serde writes), and comparison with it, so a
/// stored word or a test can be checked against the closed set.
macro_rules! words {
    ($($t:ty { $($v:ident => $w:literal),* $(,)? })*) => {$(
        impl $t {
            /// The wire word.
            pub fn word(self) -> &'static str {
                match self { $(Self::$v => $w),* }
            }
        }
        impl PartialEq<&str> for $t {
            fn eq(&self, other: &&str) -> bool {
                self.word() == *other
            }
        }
    )*};
}

words! {
    Provenance { HwShunt => "HwShunt", ModelBased => "ModelBased", Estimator => "Estimator" }
    Coverage { Whole => "Whole", Partial => "Partial" }
    Verdict { Clean => "clean", Findings => "findings" }
    RecordVerdict { Ok => "ok", Finding => "finding", Refused => "refused" }
    Consistency { Consistent => "consistent", Inconsistent => "inconsistent" }
    StepStatus { Passed => "passed", Partial => "partial", Failed => "failed", NotRun => "not_run" }
    NotVerifiedKind { HostOwned => "host_owned", NotReached => "not_reached", MissingInput => "missing_input" }
    JobState { Running => "running", Done => "done", Cancelled => "cancelled", Failed => "failed" }
    RungStatus { Chosen => "chosen", Declined => "declined", Unavailable => "unavailable", Standby => "standby" }
    ItemKind { Stream => "stream", Run => "run", Blueprint => "blueprint" }
}

#[cfg(test)]
mod word_tests {
    use super::*;

    /// The words are exactly what serde writes (the TypeScript unions' members).
    #[test]
    fn tag_words_are_the_serialised_names() {
        macro_rules! check {
            ($($v:expr),*) => {$( assert_eq!(serde_json::to_value($v).unwrap(), $v.word()); )*};
        }
        check!(
            Provenance::HwShunt,
            Coverage::Partial,
            Verdict::Findings,
            RecordVerdict::Refused,
            Consistency::Inconsistent
        );
        check!(
            StepStatus::NotRun,
            NotVerifiedKind::MissingInput,
            JobState::Cancelled,
            RungStatus::Unavailable,
            ItemKind::Blueprint
        );
    }
}

#[cfg(test)]
mod finding_count_tests {
    use super::FindingCount;
    use jcp_audit::FindingCode;
    use serde_json::json;

    /// §8.1: the auditor's counts are the report's, code for code.
    #[test]
    fn s8_1_finding_counts_are_read_from_the_report_typed() {
        let report = json!({ "findings_by_code": { "bad-signature": 3, "amendment-invalid": 1 } });
        let counts = FindingCount::of_report(&report).unwrap();
        assert_eq!(
            counts,
            vec![
                FindingCount { code: FindingCode::AmendmentInvalid, count: 1 },
                FindingCount { code: FindingCode::BadSignature, count: 3 },
            ]
        );
        assert_eq!(FindingCount::of_report(&json!({ "findings_by_code": {} })).unwrap(), vec![]);
    }

    /// A count that was not computed is never "clean": a report without its
    /// counts, an unknown code or a count that is not a whole number is refused.
    #[test]
    fn s8_1_finding_counts_that_cannot_be_read_are_refused_not_zero() {
        for bad in [
            json!({}),
            json!({ "findings_by_code": null }),
            json!({ "findings_by_code": { "no-such-code": 1 } }),
            json!({ "findings_by_code": { "bad-signature": -1 } }),
            json!({ "findings_by_code": { "bad-signature": "3" } }),
        ] {
            let e = FindingCount::of_report(&bad).unwrap_err();
            assert!(e.to_string().contains("findings_by_code"), "{bad}: {e}");
        }
    }
}
