//! # jcp-audit — one pass over receipt streams, a verdict you can defend
//!
//! Spec `jcp-v0.3.md` §8 (receipts), §8.1 (the stream is the log), §8.2
//! (group accounting; failures counted, never skipped), §4.3 (revocation
//! propagation: explicable / violation / unverifiable), §4.11 (unresolved
//! decisions), §5.2 (coverage), §5.5 (conservation), §9 C5, C14, C16, C23.
//!
//! ## Entry point (for the console and the CLI)
//!
//! ```no_run
//! use std::ops::ControlFlow;
//! use jcp_audit::{audit_paths, AuditOptions, Progress};
//!
//! # fn main() -> Result<(), jcp_audit::AuditError> {
//! let report = audit_paths(&["a.jcps", "b.jcps"], &AuditOptions::default(), |p: &Progress| {
//!     if let Progress::Advanced { bytes_done, bytes_total, .. } = p {
//!         eprintln!("{bytes_done}/{bytes_total}");
//!     }
//!     ControlFlow::Continue(()) // return ControlFlow::Break(()) to cancel
//! })?;
//! println!("{}", report.render_text());
//! std::process::exit(report.exit_code()); // 0 clean, 1 findings
//! # }
//! ```
//!
//! * [`audit_paths`] reads every stream once, **streaming** (memory is a chunk
//!   of records plus the per-grant state plus the duplicate set, 16–32 bytes
//!   per signed record: 55 MiB peak for a million receipts),
//!   decoding and verifying signatures on all cores (rayon), accounting in
//!   stream order. Progress is reported per chunk; `ControlFlow::Break`
//!   cancels with [`AuditError::Cancelled`].
//! * [`Report`] and everything in it is `serde::Serialize` (the `--json`
//!   output and the console's IPC payload). [`Report::exit_code`] is 0 when
//!   clean and 1 when there is any finding; an unreadable stream is an
//!   [`AuditError`] (the CLI's exit 2).
//! * Nothing is skipped (§8.2): every record is either verified and
//!   accounted, or counted under a named reason with its byte offset.
//!
//! ## What the report holds
//! receipts verified / failed by reason; framing faults (torn tail, garbage,
//! oversized, corrupt) at byte offsets; duplicates, out-of-order records and
//! sequence gaps; per-grant budgets replayed (issued, spent, remaining, the
//! money dimension, chain links); group accounting by `(grant_id, subject)`;
//! revocation findings; unresolved decisions naming their holder;
//! provenance and coverage floors; and a §5.5 conservation line per grant
//! (exact integer µJ, the ppm floor `1_000_000 / budget`, measured or modelled).
//!
//! Non-goals: writing streams (see `jcp-receipt`), deciding anything.
#![forbid(unsafe_code)]

pub mod batch;
mod check;
mod engine;
pub mod phases;
pub mod report;
mod seen;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use jcp::identity::Did;

pub use report::{Finding, Report};

/// How signatures are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verification {
    /// Ed25519 batch verification, 64 at a time ([`batch::verify_batch`]:
    /// `ed25519_dalek::verify_batch`'s equation with a repeated key's terms
    /// merged); a failing batch is re-checked one by one with `verify_strict`
    /// to name the failing records (docs/decisions.md, "audit batch verification").
    #[default]
    Batch,
    /// `verify_strict` on every signature.
    Strict,
}

/// Audit options.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AuditOptions {
    /// Stewards whose receipts are accepted (C5). Empty: any steward's
    /// signature is accepted and every steward is listed in the report.
    pub expected_stewards: Vec<Did>,
    /// Worker threads for decoding and verification; 0 = all cores.
    pub threads: usize,
    /// Signature checking mode.
    pub verification: Verification,
    /// Records per parallel chunk (progress is reported once per chunk).
    pub chunk_records: usize,
    /// Findings kept with full detail; counts by code are always complete.
    pub max_findings: usize,
}

impl Default for AuditOptions {
    fn default() -> Self {
        Self {
            expected_stewards: Vec::new(),
            threads: 0,
            verification: Verification::Batch,
            chunk_records: 4096,
            max_findings: 10_000,
        }
    }
}

/// Progress of an audit, for a console progress bar.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Progress {
    /// A stream is about to be read.
    StreamStarted {
        /// Index in the input list.
        index: usize,
        /// Its path.
        path: PathBuf,
        /// Its size in bytes.
        bytes_total: u64,
    },
    /// A chunk of records was accounted.
    Advanced {
        /// Stream index.
        index: usize,
        /// Bytes of this stream read so far.
        bytes_done: u64,
        /// Its size.
        bytes_total: u64,
        /// Records accounted so far, over all streams.
        records: u64,
    },
    /// All streams read; the report is being assembled.
    Finishing,
}

/// Why an audit produced no report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// A stream could not be opened or read.
    #[error("io: {path}: {message}")]
    Io {
        /// The stream.
        path: String,
        /// What failed.
        message: String,
    },
    /// A file that is not a JCP stream (no header).
    #[error("not-a-stream: {path} does not start with the JCP stream header")]
    NotAStream {
        /// The file.
        path: String,
    },
    /// No stream was given.
    #[error("no-input: no stream to audit")]
    NoInput,
    /// The progress callback asked to stop.
    #[error("cancelled: the audit was cancelled")]
    Cancelled,
    /// The worker pool could not be built.
    #[error("threads: {0}")]
    Threads(String),
}

impl AuditError {
    /// A stable code for machines (`{code, message}`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { .. } => "io",
            Self::NotAStream { .. } => "not-a-stream",
            Self::NoInput => "no-input",
            Self::Cancelled => "cancelled",
            Self::Threads(_) => "threads",
        }
    }
}

/// Audits one or many streams in one pass and returns the report.
///
/// `progress` is called when each stream starts and after each chunk;
/// returning `ControlFlow::Break(())` cancels the audit.
pub fn audit_paths<P: AsRef<Path>>(
    paths: &[P],
    opts: &AuditOptions,
    progress: impl FnMut(&Progress) -> ControlFlow<()>,
) -> Result<Report, AuditError> {
    if paths.is_empty() {
        return Err(AuditError::NoInput);
    }
    let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
    if opts.threads == 0 {
        engine::run(&paths, opts, progress, None)
    } else {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads)
            .build()
            .map_err(|e| AuditError::Threads(e.to_string()))?;
        engine::run(&paths, opts, progress, Some(&pool))
    }
}
