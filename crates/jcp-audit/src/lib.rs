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
//! * A fleet's audit runs as parallel jobs ([`partial`]): [`audit_partial`]
//!   reads and checks some streams and returns a [`Partial`] (written with
//!   [`write_partial`], read strictly with [`read_partial`]);
//!   [`merge_report`] accounts any set of partials into the report
//!   [`audit_paths`] gives over all their streams ordered by path, byte for
//!   byte in its JSON; [`merge`] merges partials into one (associative,
//!   order-independent).
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
//!
//! ## Features (all off in a shipped build)
//! * `fuzzing`: `jcp_audit::fuzzing`, the invariants the `fuzz/` targets
//!   check (the fuzz crate and this crate's tests turn it on).
//! * `ts`: ts-rs derives on [`FindingCode`] and [`Authority`], for the
//!   console's TypeScript unions.
//! * `phase-timing`: the benchmark's phase timers ([`phases`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// Ed25519 batch verification, moved to the protocol core (the endpoint
/// checks callers' signatures with it too); re-exported where it was.
pub use jcp::identity::batch;
mod check;
mod codes;
pub mod energy;
mod engine;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod ids;
mod issuer_log;
pub mod partial;
pub mod phases;
pub mod record;
pub mod reference;
pub mod report;
mod seen;
mod words;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use jcp::identity::Did;

pub use codes::{Authority, FindingCode, FINDING_CODES};
pub use partial::{
    audit_partial, merge, merge_report, merge_report_files, read_partial, write_partial, Partial, PARTIAL_FORMAT,
};
pub use reference::audit_reference;
pub use report::{Finding, IntentCheck, Report};

/// How signatures are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verification {
    /// Ed25519 batch verification, 64 at a time ([`batch::verify_batch`]:
    /// `ed25519_dalek::verify_batch`'s equation with a repeated key's terms
    /// merged); a failing batch is re-checked one by one
    /// to name the failing records (docs/decisions.md, "audit batch verification").
    #[default]
    Batch,
    /// the one Ed25519 predicate on every signature alone (the same verdicts as batches).
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
    /// §4.3: the issuer's revocation log, read and checked
    /// ([`jcp::revocation_log::IssuerLog::read`]): each revocation is judged
    /// at the marker the issuer issued it at, and the points' notices
    /// against it. Not part of a partial audit (a merge takes none).
    #[serde(skip)]
    pub revocation_log: Option<std::sync::Arc<jcp::revocation_log::IssuerLog>>,
}

impl Default for AuditOptions {
    fn default() -> Self {
        Self {
            expected_stewards: Vec::new(),
            threads: 0,
            verification: Verification::Batch,
            chunk_records: 4096,
            max_findings: 10_000,
            revocation_log: None,
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
    /// A settlement names a decision the stream does not hold unresolved
    /// (§4.11: only an unresolved decision is settled, once).
    #[error("settle-not-unresolved: {0}")]
    NotUnresolved(String),
    /// The settlement note could not be signed or written.
    #[error("settle-note: {0}")]
    Note(String),
    /// A partial audit file that is not JSON (or has bytes after it).
    #[error("partial-unreadable: {file}: {message}")]
    PartialUnreadable {
        /// The partial.
        file: String,
        /// What the JSON reader said (with line and column).
        message: String,
    },
    /// A partial of another format or spec version: refused, never read
    /// as this one.
    #[error("partial-version: {file}: {field} is {found}, this audit reads {expected}")]
    PartialVersion {
        /// The partial.
        file: String,
        /// `format` or `spec`.
        field: String,
        /// What it states.
        found: String,
        /// What this audit reads.
        expected: &'static str,
    },
    /// A field of a partial is missing, unknown, repeated, of the wrong
    /// type or value, or names what it cannot.
    #[error("partial-field: {file}: {field}: {message}")]
    PartialField {
        /// The partial.
        file: String,
        /// Where in it (`streams[0].records[12].grant`).
        field: String,
        /// What was wrong.
        message: String,
    },
    /// Partials audited under different options, given to one merge.
    #[error("partial-mismatch: {file}: {field} {message}")]
    PartialMismatch {
        /// The partial that differs from the first.
        file: String,
        /// The option.
        field: String,
        /// How.
        message: String,
    },
    /// A checked record a partial audit could not carry (an internal
    /// inconsistency; the partial is not written).
    #[error("partial-unrecordable: {path}: the record at {offset} could not be carried into the partial")]
    PartialUnrecordable {
        /// The stream.
        path: String,
        /// The record's offset.
        offset: u64,
    },
    /// No record or framing fault starts at the offset asked for
    /// ([`record::show`]); the records on either side are named.
    #[error("no-record-at: {path}: nothing starts at byte {offset}{}", near(*.before, *.after))]
    NoRecordAt {
        /// The stream.
        path: String,
        /// The offset asked for.
        offset: u64,
        /// Where the record before it starts.
        before: Option<u64>,
        /// Where the record after it starts.
        after: Option<u64>,
    },
    /// No record of the stream has the id asked for ([`record::show`]).
    #[error("no-record-with-id: {path}: no record has the id {id}")]
    NoRecordWithId {
        /// The stream.
        path: String,
        /// The id asked for.
        id: String,
    },
}

/// Why the stream `path` could not be opened by its reader: not a stream,
/// or an I/O error (its message as the reader gives it). One mapping for
/// the engine, the reference audit and `record::show`.
pub(crate) fn reader_error(path: String, e: jcp_receipt::Error) -> AuditError {
    match e {
        jcp_receipt::Error::NotAStream { .. } => AuditError::NotAStream { path },
        jcp_receipt::Error::Io { message, .. } => AuditError::Io { path, message },
        e => AuditError::Io { path, message: e.to_string() },
    }
}

/// The records on either side of an offset, in words.
fn near(before: Option<u64>, after: Option<u64>) -> String {
    match (before, after) {
        (Some(b), Some(a)) => format!(" (records start at {b} and {a})"),
        (Some(b), None) => format!(" (the last record starts at {b})"),
        (None, Some(a)) => format!(" (the first record starts at {a})"),
        (None, None) => " (the stream holds no record)".into(),
    }
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
            Self::NotUnresolved(_) => "settle-not-unresolved",
            Self::Note(_) => "settle-note",
            Self::PartialUnreadable { .. } => "partial-unreadable",
            Self::PartialVersion { .. } => "partial-version",
            Self::PartialField { .. } => "partial-field",
            Self::PartialMismatch { .. } => "partial-mismatch",
            Self::PartialUnrecordable { .. } => "partial-unrecordable",
            Self::NoRecordAt { .. } => "no-record-at",
            Self::NoRecordWithId { .. } => "no-record-with-id",
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
    let paths = input_paths(paths)?;
    let mut report = with_pool(opts, |pool| engine::run(&paths, opts, progress, pool))?;
    attach_settlements(&mut report, &paths);
    Ok(report)
}

/// The streams to audit, as owned paths; an empty list is [`AuditError::NoInput`].
fn input_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<PathBuf>, AuditError> {
    if paths.is_empty() {
        return Err(AuditError::NoInput);
    }
    Ok(paths.iter().map(|p| p.as_ref().to_path_buf()).collect())
}

/// Runs `f` on the pool `opts` asks for (`threads` 0: the global one).
fn with_pool<R>(
    opts: &AuditOptions,
    f: impl FnOnce(Option<&rayon::ThreadPool>) -> Result<R, AuditError>,
) -> Result<R, AuditError> {
    if opts.threads == 0 {
        f(None)
    } else {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads)
            .build()
            .map_err(|e| AuditError::Threads(e.to_string()))?;
        f(Some(&pool))
    }
}

/// Settles an unresolved decision of `stream` as an operator (§4.11): the
/// audit of the stream must list `receipt` as unresolved and not yet
/// settled; the note names its holder as the record does, is signed with
/// `key` and written beside the stream. Nothing in the stream changes, the
/// decision's energy stays debited, and nothing is retried.
pub fn settle(
    stream: &Path,
    receipt: &jcp::cbor::ContentId,
    status: jcp_receipt::record::OutcomeStatus,
    text: &str,
    key: &jcp::identity::Keypair,
    at: u64,
) -> Result<(jcp_receipt::settle::SignedSettlementNote, PathBuf), AuditError> {
    let report = audit_paths(&[stream], &AuditOptions::default(), |_| ControlFlow::Continue(()))?;
    let line = report.unresolved.iter().find(|u| u.receipt == *receipt).ok_or_else(|| {
        AuditError::NotUnresolved(format!(
            "{}: decision {receipt} is not unresolved in this stream (it has an outcome, or is not there)",
            stream.display()
        ))
    })?;
    if let Some(st) = &line.settled {
        return Err(AuditError::NotUnresolved(format!(
            "{}: decision {receipt} was already settled {} by {}",
            stream.display(),
            st.status,
            st.settled_by
        )));
    }
    let holder = jcp::identity::Did::parse(&line.holder).map_err(|e| AuditError::Note(e.to_string()))?;
    let note = jcp_receipt::settle::SettlementNote {
        receipt: *receipt,
        holder,
        status,
        text: text.to_owned(),
        settled_by: key.did(),
        at,
    }
    .sign(key)
    .map_err(|e| AuditError::Note(e.to_string()))?;
    let path = jcp_receipt::settle::write_note(stream, &note)
        .map_err(|e| AuditError::Note(format!("writing beside {}: {e}", stream.display())))?;
    Ok((note, path))
}

/// Shows each operator's settlement note (§4.11, `<stream>.settlements/`)
/// beside the unresolved decision it names: the note must verify and name
/// a decision unresolved in that stream, with its holder. A note that does
/// not is counted as refused. Nothing about the decision changes: it stays
/// unresolved in the record, its energy debited, its finding kept.
fn attach_settlements(report: &mut report::Report, paths: &[PathBuf]) {
    for (i, path) in paths.iter().enumerate() {
        let (notes, refused) = jcp_receipt::settle::read_notes(path);
        attach_notes(report, i, &notes, refused.len() as u64);
    }
}

/// Stream `i`'s verified settlement notes beside its unresolved decisions,
/// `refused` more counted as refused (a partial audit carries both).
pub(crate) fn attach_notes(
    report: &mut report::Report,
    i: usize,
    notes: &[jcp_receipt::settle::SignedSettlementNote],
    refused: u64,
) {
    report.settlement_notes_refused += refused;
    for n in notes {
        let note = n.note();
        let line = report
            .unresolved
            .iter_mut()
            .find(|u| u.stream == i && u.receipt == note.receipt && u.holder == note.holder.to_did_string());
        match line {
            Some(u) if u.settled.is_none() => {
                u.settled = Some(report::SettledLine {
                    status: note.status.as_str(),
                    settled_by: note.settled_by.to_did_string(),
                    at: note.at,
                    text: note.text.clone(),
                    note: n.id(),
                });
                report.unresolved_settled += 1;
            }
            _ => report.settlement_notes_refused += 1,
        }
    }
}

#[cfg(test)]
mod finding_codes_tests {
    use super::{FindingCode, FINDING_CODES};

    /// The quoted codes in `s`: kebab-case literals (`"bad-signature"`) and,
    /// after `=> ` or as a `finding(…)` argument, single words (`"garbage"`).
    fn literals(s: &str, single_words: bool) -> Vec<String> {
        let mut out = Vec::new();
        let parts: Vec<&str> = s.split('"').collect();
        for (i, p) in parts.iter().enumerate() {
            if i % 2 == 0 || p.is_empty() {
                continue;
            }
            let ok_chars = p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && p.as_bytes()[0].is_ascii_lowercase()
                && !p.ends_with('-');
            let before = parts[i - 1];
            let kebab = p.contains('-');
            let coded = before.ends_with("=> ") || before.trim_end().ends_with("o,") || before.ends_with("Refused(");
            if ok_chars && (kebab || (single_words && coded)) {
                out.push((*p).to_owned());
            }
        }
        out
    }

    fn read(rel: &str) -> String {
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
    }

    /// The `code()` bodies of the error types whose codes reach a finding.
    fn code_bodies(src: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = src;
        while let Some(at) = rest.find("fn code(") {
            let body = &rest[at..];
            let end = body.find("\n    }\n").unwrap_or(body.len());
            out.push(body[..end].to_owned());
            rest = &body[end..];
        }
        out
    }

    #[test]
    fn finding_codes_list_every_code_the_sources_can_emit() {
        let mut want: Vec<String> = Vec::new();
        for f in [
            "../jcp/src/cbor/decode.rs",
            "../jcp/src/cbor/fields.rs",
            "../jcp/src/identity.rs",
            "../jcp/src/steering/error.rs",
            "../jcp/src/error.rs",
            "../jcp-receipt/src/error.rs",
            "../jcp-receipt/src/stream.rs",
        ] {
            let bodies = code_bodies(&read(f));
            // A module moved elsewhere must move here too, not silently read as "no codes".
            assert!(!bodies.is_empty(), "{f} has no `fn code(`: the list of error sources is stale");
            for body in bodies {
                want.extend(literals(&body, true));
            }
        }
        // The audit's own codes: the variants its accounting names.
        let mut files: Vec<String> = [
            "src/check.rs",
            "src/reference/mod.rs",
            "src/reference/open.rs",
            "src/reference/accounting.rs",
            "src/reference/close.rs",
            "src/words.rs",
            "src/report.rs",
            "src/issuer_log.rs",
        ]
        .map(str::to_owned)
        .to_vec();
        // The fast engine, a module per step of the audit.
        let engine = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
        for e in std::fs::read_dir(engine).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".rs") {
                files.push(format!("src/engine/{name}"));
            }
        }
        assert!(files.len() > 8, "the engine's modules are read");
        let own = files.iter().map(|f| read(f)).collect::<String>();
        for c in FindingCode::ALL {
            if own.contains(&format!("FindingCode::{c:?}")) {
                want.push(c.as_str().to_owned());
            }
        }
        want.sort();
        want.dedup();
        let missing: Vec<&String> = want.iter().filter(|c| !FINDING_CODES.contains(&c.as_str())).collect();
        assert!(missing.is_empty(), "codes the sources emit but FINDING_CODES lacks: {missing:?}");
        // `unlisted-refusal` is the fallback no source emits (see `FindingCode::of_refusal`).
        let stale: Vec<&&str> = FINDING_CODES
            .iter()
            .filter(|c| **c != FindingCode::UnlistedRefusal.as_str() && !want.iter().any(|w| w == *c))
            .collect();
        assert!(stale.is_empty(), "FINDING_CODES names codes no source emits: {stale:?}");
        let mut sorted = FINDING_CODES.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, FINDING_CODES, "kept sorted");
    }
}

#[cfg(test)]
mod audit_error_tests {
    use super::AuditError;

    /// §8.2: an audit that produces no report says why, code first —
    /// `Display` starts with `code()` for every variant (the match fails to
    /// compile when one is added and not listed).
    #[test]
    fn s8_2_audit_error_display_starts_with_its_code() {
        let s = || "x".to_owned();
        let all = [
            AuditError::Io { path: s(), message: s() },
            AuditError::NotAStream { path: s() },
            AuditError::NoInput,
            AuditError::Cancelled,
            AuditError::Threads(s()),
            AuditError::NotUnresolved(s()),
            AuditError::Note(s()),
            AuditError::PartialUnreadable { file: s(), message: s() },
            AuditError::PartialVersion { file: s(), field: s(), found: s(), expected: "1" },
            AuditError::PartialField { file: s(), field: s(), message: s() },
            AuditError::PartialMismatch { file: s(), field: s(), message: s() },
            AuditError::PartialUnrecordable { path: s(), offset: 1 },
            AuditError::NoRecordAt { path: s(), offset: 9, before: Some(8), after: None },
            AuditError::NoRecordWithId { path: s(), id: s() },
        ];
        for e in &all {
            match e {
                AuditError::Io { .. }
                | AuditError::NotAStream { .. }
                | AuditError::NoInput
                | AuditError::Cancelled
                | AuditError::Threads(_)
                | AuditError::NotUnresolved(_)
                | AuditError::Note(_)
                | AuditError::PartialUnreadable { .. }
                | AuditError::PartialVersion { .. }
                | AuditError::PartialField { .. }
                | AuditError::PartialMismatch { .. }
                | AuditError::PartialUnrecordable { .. }
                | AuditError::NoRecordAt { .. }
                | AuditError::NoRecordWithId { .. } => {}
            }
            let text = e.to_string();
            assert!(text.starts_with(&format!("{}: ", e.code())), "{text:?} does not start with {:?}", e.code());
        }
    }
}
