//! The types the console's shell sends to its front end. Defined once here;
//! the TypeScript in `ui/src/gen/` is generated from them by ts-rs
//! (`cargo test -p console-view` writes it) and never edited by hand.

use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

/// An error as the front end receives it: a stable code and words for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct UiError {
    /// Stable, dotted code (e.g. `store.locked`).
    pub code: String,
    /// What happened and what to do, in words.
    pub message: String,
}

impl UiError {
    /// Builds one.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.to_owned(), message: message.into() }
    }
}

/// Whether a part of the console can work in this build, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct Availability {
    /// True when it works.
    pub available: bool,
    /// Why not, in words, when it does not.
    pub reason: Option<String>,
}

/// The workspace store's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct StoreInfo {
    /// The SQLite file.
    #[allow(
        clippy::doc_markdown,
        reason = "a product's name in prose; the line is also the generated TypeScript's comment"
    )]
    pub path: String,
    /// Whether it opened; when not, the console runs on an in-memory store and says so.
    pub persistent: bool,
    /// Why it did not open.
    pub error: Option<UiError>,
    /// Energy windows kept.
    pub window_retention: u32,
}

/// What the console is and what it can do right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AppInfo {
    /// Console version.
    pub version: String,
    /// The workspace folder.
    pub workspace: String,
    /// The store.
    pub store: StoreInfo,
    /// The local meter (crates/jcp-meter).
    pub meter: Availability,
    /// The audit engine (crates/jcp-audit).
    pub audit: Availability,
    /// Demo streams prepared in the workspace on first start.
    pub demo_streams: Vec<String>,
    /// A workspace item the app's arguments asked to open (`--blueprint F --deployment F`).
    #[cfg_attr(test, ts(type = "number | null"))]
    pub open_at_start: Option<i64>,
    /// The app was opened with stream files (`jcp-console S.jcps…`): it
    /// opens on the Auditor, where their audit (or why it did not start) is.
    pub audit_at_start: bool,
}

/// One energy window as shown and exported; a gap has no energy and no grades.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct WindowRow {
    /// Store sequence number.
    #[cfg_attr(test, ts(type = "number"))]
    pub seq: i64,
    /// Start, Unix ms.
    #[cfg_attr(test, ts(type = "number"))]
    pub start_ms: u64,
    /// End, Unix ms.
    #[cfg_attr(test, ts(type = "number"))]
    pub end_ms: u64,
    /// Integer µJ, absent for a gap.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub energy_uj: Option<u64>,
    /// The figure in words by the one formatter (`jcp::energy::format_uj`), absent for a gap.
    pub energy_text: Option<String>,
    /// Its average power in words (the one formatter, `jcp::energy::format_power`); `None` for a gap.
    pub power_text: Option<String>,
    /// The grade, absent for a gap.
    pub provenance: Option<crate::tags::Provenance>,
    /// `Whole` or `Partial`, absent for a gap.
    pub coverage: Option<crate::tags::Coverage>,
    /// The rung that produced it.
    pub rung: Option<String>,
}

/// One rung of the metering ladder (§5.1) and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RungRow {
    /// The rung's name.
    pub name: String,
    /// Chosen, declined or unavailable.
    pub status: crate::tags::RungStatus,
    /// The grade it would give.
    pub provenance: Option<crate::tags::Provenance>,
    /// Why it was chosen or declined.
    pub why: String,
    /// What the person can do about it, where something can be done.
    pub fix: Option<String>,
}

/// The live energy view's whole state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct EnergySnapshot {
    /// Whether a meter runs.
    pub meter: Availability,
    /// Recent windows, oldest first (from the store).
    pub windows: Vec<WindowRow>,
    /// The chart of those windows, SVG from plotters.
    pub chart_svg: String,
    /// The ladder as last probed.
    pub ladder: Vec<RungRow>,
    /// The window length the meter uses.
    #[cfg_attr(test, ts(type = "number"))]
    pub window_ms: u64,
    /// Each running live run's latest call, metered behind its endpoint's
    /// gate, in words ([`crate::steward::metered_line`]): per call, beside
    /// the machine's windows; empty when no live run has one.
    pub live_metered: Vec<String>,
    /// What the figures are, said first ([`crate::energy::headline`]).
    pub headline: crate::energy::EnergyHeadline,
    /// The windows' energy summed ([`crate::energy::span_total`]).
    pub total: crate::energy::SpanTotal,
}

/// Where an export went; `None` when the person cancelled the dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ExportResult {
    /// The file written.
    pub path: Option<String>,
    /// Bytes written.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
}

/// How far an audit has got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AuditProgress {
    /// Bytes read so far over all streams.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes_done: u64,
    /// Bytes in all streams.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes_total: u64,
    /// Records processed so far.
    #[cfg_attr(test, ts(type = "number"))]
    pub records: u64,
}

/// One audit job as the front end sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AuditJob {
    /// Job number (increasing).
    #[cfg_attr(test, ts(type = "number"))]
    pub id: u64,
    /// The streams.
    pub paths: Vec<String>,
    /// Running, done, cancelled or failed.
    pub state: crate::tags::JobState,
    /// Progress.
    pub progress: AuditProgress,
    /// Time since start (or total time when finished).
    #[cfg_attr(test, ts(type = "number"))]
    pub elapsed_ms: u64,
    /// The verdict when done.
    pub verdict: Option<crate::tags::Verdict>,
    /// Why it failed.
    pub error: Option<UiError>,
}

/// A finished audit's report: the engine's JSON (as `jcp audit --json`
/// prints it) and the same report as an HTML fragment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AuditReportView {
    /// The job.
    #[cfg_attr(test, ts(type = "number"))]
    pub id: u64,
    /// The verdict.
    pub verdict: crate::tags::Verdict,
    /// Findings by code, every one counted (from the report's `findings_by_code`).
    pub findings_by_code: Vec<crate::tags::FindingCount>,
    /// The engine's report.
    #[cfg_attr(test, ts(type = "unknown"))]
    pub report: serde_json::Value,
    /// The report rendered by `report::report_fragment`.
    pub html: String,
    /// The verdict in one line that counts what was found (`report::answer`).
    pub answer: String,
}

/// One record a finding names, as the Auditor's record panel shows it
/// (`jcp stream show`; `jcp_audit::record`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RecordPanel {
    /// The stream's place in the audit's list.
    pub stream_index: u32,
    /// The stream's file.
    pub stream: String,
    /// Where it starts (byte offset).
    #[cfg_attr(test, ts(type = "number"))]
    pub offset: u64,
    /// Just after it.
    #[cfg_attr(test, ts(type = "number"))]
    pub end: u64,
    /// Its number in the stream (1 for the first).
    #[cfg_attr(test, ts(type = "number"))]
    pub number: u64,
    /// `receipt`, `outcome`, `grant`, `revocation`, `request`, `amendment`, `closing`, `statement`, or `fault`.
    pub kind: String,
    /// Its id, where it has one.
    pub id: Option<String>,
    /// The key that sealed or signed it.
    pub signer: Option<String>,
    /// `verified`, `refused` or `not-a-record`.
    pub check: String,
    /// The refusal's or the fault's code.
    pub check_code: Option<String>,
    /// What the check says, in words.
    pub check_message: String,
    /// Where the record before it starts.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub prev: Option<u64>,
    /// Where the record after it starts.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub next: Option<u64>,
    /// Its content as HTML (the report's tables; every value escaped).
    pub html: String,
}

/// A file or folder as the web view holds it (issue 34): an opaque handle,
/// which is what it sends back, and the path, shown to the person only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct FileHandle {
    /// What a command takes to name this file.
    pub handle: String,
    /// Where it is, to show.
    pub path: String,
}

/// An opened stream and its last verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct StreamRow {
    /// The file.
    pub path: String,
    /// Its handle: what `audit_start` takes (issue 34).
    pub handle: String,
    /// Size when opened.
    #[cfg_attr(test, ts(type = "number"))]
    pub size_bytes: u64,
    /// Opened at, Unix ms.
    #[cfg_attr(test, ts(type = "number"))]
    pub opened_at_ms: u64,
    /// Last verdict, if audited.
    pub last_verdict: Option<crate::tags::Verdict>,
}

/// One thing in the workspace, as the overview lists it: a stream, a run
/// or a blueprint reconcile, with what to open it by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct WorkspaceItem {
    /// Stream, run or blueprint.
    pub kind: crate::tags::ItemKind,
    /// The store's id of a run or blueprint item; `null` for a stream (opened by path).
    #[cfg_attr(test, ts(type = "number | null"))]
    pub id: Option<i64>,
    /// Words for a person.
    pub label: String,
    /// The file (a stream, a run file, a reconcile's deployment), to show.
    pub path: String,
    /// Its handle: what a command takes to name it (issue 34).
    pub handle: String,
    /// The outcome when last opened (`clean`/`findings`, `consistent`/`inconsistent`, a run's verdict), if ever.
    pub last_status: Option<String>,
}

/// A steward action as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ActionRow {
    /// When, Unix ms.
    #[cfg_attr(test, ts(type = "number"))]
    pub at_ms: u64,
    /// What.
    pub action: String,
    /// On what.
    pub subject: String,
}

impl From<&console_store::WindowRecord> for WindowRow {
    fn from(w: &console_store::WindowRecord) -> Self {
        Self {
            seq: w.seq,
            start_ms: w.start_ms,
            end_ms: w.end_ms,
            energy_uj: w.energy.map(|e| e.uj),
            energy_text: w.energy.map(|e| crate::format_uj(e.uj)),
            power_text: w.energy.and_then(|e| jcp::energy::format_power(e.uj, w.end_ms.saturating_sub(w.start_ms))),
            provenance: w.energy.map(|e| e.provenance.into()),
            coverage: w.energy.map(|e| e.coverage.into()),
            rung: w.rung.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every IPC type, so the generated TypeScript covers them all.
    fn generated() -> Vec<(String, String)> {
        macro_rules! all {
            ($($t:ty),*) => { vec![$( (<$t as TS>::name(), <$t as TS>::export_to_string().unwrap()) ),*] };
        }
        let mut all = all!(
            UiError,
            Availability,
            StoreInfo,
            AppInfo,
            WindowRow,
            RungRow,
            EnergySnapshot,
            ExportResult,
            AuditProgress,
            AuditJob,
            AuditReportView,
            RecordPanel,
            FileHandle,
            StreamRow,
            ActionRow,
            WorkspaceItem,
            crate::energy::EnergyHeadline,
            crate::energy::HeadlineKind,
            crate::energy::SpanTotal
        );
        all.extend(crate::blueprint::tests::generated());
        all.extend(crate::run::tests::generated());
        all.extend(crate::authority::tests::generated());
        all.extend(crate::session::tests::generated());
        all.extend(crate::intent::tests::generated());
        all.extend(crate::tags::tests::generated());
        all.extend(crate::steward::tests::generated());
        all
    }

    /// STYLE "IPC types defined once in Rust": the committed `ui/src/gen/*.ts`
    /// must equal what ts-rs generates now. `JCP_UPDATE_TS=1` rewrites them.
    #[test]
    fn ipc_typescript_matches_rust_definitions() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/gen");
        let update = std::env::var_os("JCP_UPDATE_TS").is_some();
        if update {
            std::fs::create_dir_all(&dir).unwrap();
        }
        for (name, text) in generated() {
            let file = dir.join(format!("{name}.ts"));
            if update {
                std::fs::write(&file, &text).unwrap();
            } else {
                let committed = std::fs::read_to_string(&file).unwrap_or_else(|e| {
                    panic!("{} missing ({e}); run JCP_UPDATE_TS=1 cargo test -p console-view", file.display())
                });
                assert_eq!(
                    committed,
                    text,
                    "{} is stale; run JCP_UPDATE_TS=1 cargo test -p console-view",
                    file.display()
                );
            }
        }
    }

    #[test]
    fn s5_gap_window_row_has_no_energy_and_no_grades() {
        let w = console_store::WindowRecord { seq: 3, start_ms: 0, end_ms: 1000, energy: None, rung: None };
        let row = WindowRow::from(&w);
        let v = serde_json::to_value(&row).unwrap();
        assert!(v["energy_uj"].is_null() && v["provenance"].is_null() && v["coverage"].is_null());
    }
}
