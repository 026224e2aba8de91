//! JCP Console's UI-free view models, rendered in Rust so the front end only
//! places them: the live energy chart (plotters → SVG), the CSV/JSON exports
//! of energy windows (provenance and coverage on every row, gaps as gaps) and
//! the self-contained HTML audit report.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod authority;
pub mod blueprint;
pub mod chart;
pub mod energy;
pub mod export;
pub mod intent;
pub mod ipc;
pub mod report;
pub mod run;
pub mod session;
pub mod steward;
pub mod tags;

/// Everything that can go wrong rendering a view.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// plotters failed to draw the chart.
    #[error("the energy chart could not be drawn: {0}")]
    Chart(String),
    /// The CSV writer failed.
    #[error("the CSV export could not be written: {0}")]
    Csv(String),
    /// JSON serialisation failed.
    #[error("the JSON export could not be written: {0}")]
    Json(String),
    /// A file the view needs could not be read.
    #[error("cannot read {}: {detail}", path.display())]
    Unreadable {
        /// The file.
        path: std::path::PathBuf,
        /// What the OS said.
        detail: String,
    },
    /// A host input of a Blueprint reconcile (keys, host bounds, descriptors) was refused.
    #[error("the reconcile input {} was refused ({code}): {detail}", path.display())]
    BlueprintInput {
        /// The file.
        path: std::path::PathBuf,
        /// The Agent Blueprint Protocol's code.
        code: String,
        /// What was wrong.
        detail: String,
    },
    /// A Blueprint conformance corpus was refused (its index does not verify) or could not be read.
    #[error("the conformance corpus {} was refused ({code}): {detail}", path.display())]
    BlueprintCorpus {
        /// The folder or file.
        path: std::path::PathBuf,
        /// The Agent Blueprint Protocol's code.
        code: String,
        /// What was wrong.
        detail: String,
    },
    /// The demo artifacts could not be generated (a defect: they are fixed).
    #[error("the demo blueprint could not be generated: {0}")]
    Demo(String),
    /// A run file could not be read or decoded (JCP §4.7).
    #[error("the run {} could not be read ({code}): {detail}", path.display())]
    Run {
        /// The file.
        path: std::path::PathBuf,
        /// The core's error code.
        code: String,
        /// What was wrong, naming the record.
        detail: String,
    },
    /// A steward's action was refused — before anything was signed — by
    /// the core's rule `code` (§4.3, §4.7).
    #[error("refused before signing ({code}): {detail}")]
    Refused {
        /// The run file, where there is one.
        path: std::path::PathBuf,
        /// The core's reason code (e.g. `steer-above-remainder`).
        code: &'static str,
        /// The rule in words.
        detail: String,
    },
    /// A signed artifact could not be written (nothing else was changed).
    #[error("{} could not be written: {detail}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// What the OS said.
        detail: String,
    },
    /// The steward's form does not parse (a caveat, a figure).
    #[error("the form is not complete: {0}")]
    Form(String),
    /// A document offered to a view is larger than the view reads.
    #[error("{0}")]
    TooLarge(String),
    /// A recorded session, baseline, causes or stream was refused (§5.4, §5.5).
    #[error("{} was refused ({code}): {detail}", path.display())]
    Energy {
        /// The file.
        path: std::path::PathBuf,
        /// The meter's or audit's code.
        code: String,
        /// What was wrong.
        detail: String,
    },
    /// An audit report handed to the view lacks a figure the view shows, or
    /// holds one outside the audit's vocabulary (§8.2): refused, never shown as 0.
    #[error("the audit report cannot be shown: {0}")]
    ReportShape(String),
    /// A demo file could not be written.
    #[error("the demo file {} could not be written: {detail}", path.display())]
    DemoWrite {
        /// The file.
        path: std::path::PathBuf,
        /// What the OS said.
        detail: String,
    },
}

impl ViewError {
    /// A stable code for the front end.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Chart(_) => "view.chart",
            Self::Csv(_) => "view.csv",
            Self::Json(_) => "view.json",
            Self::Unreadable { .. } => "view.unreadable",
            Self::BlueprintInput { .. } => "blueprint.bad_input",
            Self::BlueprintCorpus { .. } => "blueprint.corpus_refused",
            Self::Demo(_) => "demo.blueprint",
            Self::Run { .. } => "run.unreadable",
            Self::DemoWrite { .. } => "demo.write_failed",
            Self::Refused { code, .. } => code,
            Self::Form(_) => "steward.bad_form",
            Self::TooLarge(_) => "input.too_large",
            Self::Write { .. } => "steward.write_failed",
            Self::Energy { .. } => "energy.refused",
            Self::ReportShape(_) => "audit.report_shape",
        }
    }
}

/// Escapes text for HTML/SVG element content and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `n` with its noun (`1 window`, `3 windows`; the verb too where it follows: `1 window covers`).
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Energy for people: the one formatter ([`jcp::energy::format_uj`], truncating).
pub use jcp::energy::format_uj;
