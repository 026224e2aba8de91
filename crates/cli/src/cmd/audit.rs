//! `jcp audit STREAM... [--json]`: one pass over receipt streams (spec §8,
//! §8.1, §8.2, §4.3, §4.11, §5.5). Exit 0 clean, 1 findings, 2 unreadable.
//! `--reference` runs the slow, obviously-correct reference audit instead
//! (the same report, byte for byte in its JSON).
//!
//! A fleet's audit as parallel jobs (`jcp_audit::partial`):
//! - `jcp audit --partial OUT.json STREAM...` checks the streams and writes
//!   a mergeable partial (exit 0 when written, 2 when a stream is unreadable);
//! - `jcp audit merge PARTIAL.json... [--json] [--partial OUT.json]` gives the
//!   report a single run over all the streams (ordered by path) gives, or
//!   writes the partials merged into one.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jcp::identity::Did;
use jcp_audit::{audit_paths, AuditOptions, Progress, Report, Verification};

use crate::out;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
#[allow(clippy::struct_excessive_bools)] // independent command-line flags
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: Option<AuditCommand>,
    /// Stream files to audit together (one report).
    #[arg(required = true)]
    pub streams: Vec<PathBuf>,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
    /// Accept receipts only from this steward (repeatable); others fail `wrong-steward` (C5).
    #[arg(long = "steward")]
    pub stewards: Vec<String>,
    /// Worker threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Check every signature alone instead of in batches (the same Ed25519 predicate, the same verdicts).
    #[allow(clippy::doc_markdown, reason = "clap help text, shown as written: not markdown")]
    #[arg(long)]
    pub strict: bool,
    /// Progress on stderr.
    #[arg(long)]
    pub progress: bool,
    /// Writes a mergeable partial audit of the streams to this file instead
    /// of a report (`jcp audit merge` reads it).
    #[arg(long, value_name = "OUT.json")]
    pub partial: Option<PathBuf>,
    /// Runs the reference audit instead (`jcp_audit::reference`): one record
    /// at a time, every signature checked alone with the one Ed25519 predicate, no batching,
    /// caches or threads. Slow; the same report.
    #[arg(long, conflicts_with = "partial")]
    pub reference: bool,
    /// The issuer's revocation log (`jcp-revocation-log/1`, as `jcp feed revoke --log` writes it): each
    /// revocation is judged at the marker the issuer issued it at; a point that recorded another marker,
    /// and a recorded revocation the log does not hold, are findings (§4.3). Needs --log-key.
    #[arg(long, value_name = "LOG", requires = "log_keys", conflicts_with = "partial")]
    pub revocation_log: Option<PathBuf>,
    /// A feed key whose signature the revocation log's entries must carry (repeatable).
    #[arg(long = "log-key", value_name = "DID", requires = "revocation_log")]
    pub log_keys: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Merges partial audits: the report of all their streams in one run.
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Partial audit files (`jcp audit --partial`).
    #[arg(required = true)]
    pub partials: Vec<PathBuf>,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
    /// Writes the partials merged into one partial instead of a report.
    #[arg(long, value_name = "OUT.json")]
    pub partial: Option<PathBuf>,
}

fn options(args: &AuditArgs) -> anyhow::Result<AuditOptions> {
    let mut expected = Vec::new();
    for s in &args.stewards {
        let d = Did::parse(s).map_err(|e| out::coded(e.code(), format!("--steward {s}: {e}")))?;
        expected.push(d);
    }
    let revocation_log = match &args.revocation_log {
        None => None,
        Some(path) => {
            let keys = args
                .log_keys
                .iter()
                .map(|k| Did::parse(k).map_err(|e| out::coded(e.code(), format!("--log-key {k}: {e}"))))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let bytes = std::fs::read(path)
                .map_err(|e| out::coded("io", format!("reading the revocation log {}: {e}", path.display())))?;
            let log = jcp::revocation_log::IssuerLog::read(&bytes, &keys)
                .map_err(|e| out::coded(e.code(), format!("{}: {e}", path.display())))?;
            Some(std::sync::Arc::new(log))
        }
    };
    Ok(AuditOptions {
        expected_stewards: expected,
        threads: args.threads,
        verification: if args.strict { Verification::Strict } else { Verification::Batch },
        revocation_log,
        ..AuditOptions::default()
    })
}

fn emit_report(json: bool, report: &Report) -> anyhow::Result<ExitCode> {
    out::emit(json, report, || report.render_text())?;
    Ok(ExitCode::from(if report.clean { out::CLEAN } else { out::FINDINGS }))
}

pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    if let Some(AuditCommand::Merge(m)) = args.command {
        return merge(&m);
    }
    let opts = options(&args)?;
    let show = args.progress;
    let progress = |p: &Progress| {
        if show {
            if let Progress::Advanced { index, bytes_done, bytes_total, records } = p {
                eprintln!("stream {index}: {bytes_done}/{bytes_total} bytes, {records} records");
            }
        }
        ControlFlow::Continue(())
    };
    if let Some(out_path) = &args.partial {
        let partial = jcp_audit::audit_partial(&args.streams, &opts, progress).map_err(|e| out::crate_err(&e))?;
        jcp_audit::write_partial(out_path, &partial).map_err(|e| out::crate_err(&e))?;
        let records: usize = partial.streams.iter().map(|s| s.records.len()).sum();
        let summary = serde_json::json!({"partial": out_path, "format": partial.format, "streams": partial.streams.len(), "records": records});
        out::emit(args.json, &summary, || {
            format!(
                "wrote partial {} ({}): {} stream(s), {records} records\n{}",
                out_path.display(),
                partial.format,
                partial.streams.len(),
                jcp_audit::partial::describe(&partial)
            )
        })?;
        return Ok(ExitCode::from(out::CLEAN));
    }
    let report = if args.reference {
        jcp_audit::audit_reference(&args.streams, &opts)
    } else {
        audit_paths(&args.streams, &opts, progress)
    };
    let mut report = report.map_err(|e| out::crate_err(&e))?;
    if !args.reference {
        // A gateway's stream: every recorded call's intent recomputed (the console's Auditor does the same).
        jcp_gateway::intents::check_audit(&mut report, &args.streams)
            .map_err(|e| out::coded(e.code(), e.to_string()))?;
    }
    emit_report(args.json, &report)
}

fn merge(m: &MergeArgs) -> anyhow::Result<ExitCode> {
    if let Some(out_path) = &m.partial {
        let mut parts = Vec::with_capacity(m.partials.len());
        for p in &m.partials {
            parts.push((p.display().to_string(), jcp_audit::read_partial(p).map_err(|e| out::crate_err(&e))?));
        }
        let merged = jcp_audit::merge(&parts).map_err(|e| out::crate_err(&e))?;
        jcp_audit::write_partial(out_path, &merged).map_err(|e| out::crate_err(&e))?;
        let summary =
            serde_json::json!({"partial": out_path, "format": merged.format, "streams": merged.streams.len()});
        out::emit(m.json, &summary, || {
            format!(
                "wrote merged partial {}: {} stream(s)\n{}",
                out_path.display(),
                merged.streams.len(),
                jcp_audit::partial::describe(&merged)
            )
        })?;
        return Ok(ExitCode::from(out::CLEAN));
    }
    let report = jcp_audit::merge_report_files(&m.partials).map_err(|e| out::crate_err(&e))?;
    emit_report(m.json, &report)
}
