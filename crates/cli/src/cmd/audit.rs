//! `jcp audit STREAM... [--json]`: one pass over receipt streams (spec §8,
//! §8.1, §8.2, §4.3, §4.11, §5.5). Exit 0 clean, 1 findings, 2 unreadable.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use jcp::identity::Did;
use jcp_audit::{audit_paths, AuditError, AuditOptions, Verification};

use crate::out;

#[derive(Debug, Args)]
pub struct AuditArgs {
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
    /// Check every signature with verify_strict instead of batches.
    #[arg(long)]
    pub strict: bool,
    /// Progress on stderr.
    #[arg(long)]
    pub progress: bool,
}

fn coded(e: &AuditError) -> anyhow::Error {
    out::coded(e.code(), e.to_string())
}

pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let mut expected = Vec::new();
    for s in &args.stewards {
        let d = Did::parse(s)
            .map_err(|e| out::coded(e.code(), format!("--steward {s}: {e}")))?;
        expected.push(d);
    }
    let opts = AuditOptions {
        expected_stewards: expected,
        threads: args.threads,
        verification: if args.strict { Verification::Strict } else { Verification::Batch },
        ..AuditOptions::default()
    };
    let show = args.progress;
    let report = audit_paths(&args.streams, &opts, |p| {
        if show {
            if let jcp_audit::Progress::Advanced { index, bytes_done, bytes_total, records } = p {
                eprintln!("stream {index}: {bytes_done}/{bytes_total} bytes, {records} records");
            }
        }
        ControlFlow::Continue(())
    })
    .map_err(|e| coded(&e))?;
    out::emit(args.json, &report, || report.render_text())?;
    Ok(ExitCode::from(if report.clean { out::CLEAN } else { out::FINDINGS }))
}
