//! `jcp stream`: write demo streams, hold a stream's writer lock, replay a
//! stream as its enforcement point would on restart (spec §8.1, §4.11).
//!
//! - `jcp stream demo OUT [--receipts N] [--tamper K] [--unresolved U] [--seed S] [--fast]`
//! - `jcp stream demo --fleet N --out DIR [--receipts K] [--seed S] [--fast]`: N
//!   points' streams under one sharded root, a revocation reaching them at
//!   different markers, one violation (§4.5, §4.3; `jcp_receipt::fleet`).
//! - `jcp stream hold PATH [--seconds N]`: takes the single-writer lock and
//!   holds it (exit 2 with `stream-locked` when another writer holds it).
//! - `jcp stream replay PATH [--seed S]`: reopens as the demo steward,
//!   replays through a fresh gate, cuts a torn tail; exit 1 when anything
//!   was refused or is unresolved.
//! - `jcp stream show PATH --at OFFSET | --id ID`: one record (or framing
//!   fault) as it is on disk, decoded, its signature checked alone, with the
//!   offsets of the records on either side: what an audit finding names
//!   (`jcp_audit::record`, §8.1, §8.2).
//! - `jcp stream settle PATH --receipt ID --status completed|failed --note TEXT --key K`:
//!   an operator's signed settlement note of an unresolved decision (§4.11).

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jcp::decision::Gate;
use jcp_receipt::demo::{self, DemoOptions};
use jcp_receipt::runtime::DurableGate;
use jcp_receipt::writer::{Durability, StreamWriter};

use crate::out;

#[derive(Debug, Args)]
pub struct StreamArgs {
    #[command(subcommand)]
    pub command: StreamCommand,
}

#[derive(Debug, Subcommand)]
pub enum StreamCommand {
    /// Writes a deterministic demo stream (real grants, a real gate, mixed allow/deny).
    Demo(DemoArgs),
    /// Takes a stream's single-writer lock and holds it (§4.11).
    Hold(HoldArgs),
    /// Replays a stream as its (demo) enforcement point would on restart.
    Replay(ReplayArgs),
    /// Shows one record as it is on disk, found by the byte offset or the id an audit finding names: decoded, its signature checked alone, with the records on either side (§8.1, §8.2)
    Show(ShowArgs),
    /// Settles an unresolved decision as an operator (§4.11): a signed note beside the stream; energy stays debited, nothing is retried.
    Settle(SettleArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["at", "id"])))]
pub struct ShowArgs {
    /// The stream.
    pub stream: PathBuf,
    /// The byte offset where the record starts (a finding's `offset`).
    #[arg(long)]
    pub at: Option<u64>,
    /// The record's id: a receipt's or record's content id, or a grant's id (64 hex digits).
    #[arg(long)]
    pub id: Option<String>,
    /// The record as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SettleArgs {
    /// The stream.
    pub stream: PathBuf,
    /// The unresolved decision's receipt id (as `jcp audit` lists it).
    #[arg(long)]
    pub receipt: String,
    /// `completed` or `failed`.
    #[arg(long)]
    pub status: String,
    /// Why, in words (signed with the note).
    #[arg(long)]
    pub note: String,
    /// The operator's (steward's) key file.
    #[arg(long)]
    pub key: PathBuf,
    /// The settlement as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Output stream (created; an existing stream is appended to).
    #[arg(required_unless_present = "fleet", conflicts_with = "fleet")]
    pub out: Option<PathBuf>,
    /// Writes a fleet instead: N points' streams (`point-NN.jcps`) under one
    /// root grant sharded N ways, a revocation reaching them at different
    /// markers and one violation (§4.5, §4.3).
    #[arg(long, requires = "out_dir", conflicts_with_all = ["tamper", "unresolved"], value_parser = clap::value_parser!(u16).range(2..=999))]
    pub fleet: Option<u16>,
    /// The fleet's directory (with `--fleet`).
    #[arg(long = "out", requires = "fleet")]
    pub out_dir: Option<PathBuf>,
    /// Decision receipts to write (per point with `--fleet`, default 200 / 12).
    #[arg(long)]
    pub receipts: Option<u64>,
    /// Receipts to tamper with afterwards (caught by their signatures).
    #[arg(long, default_value_t = 0)]
    pub tamper: u64,
    /// Allowed decisions left without an outcome.
    #[arg(long, default_value_t = 0)]
    pub unresolved: u64,
    /// Seed for keys and nonces.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Skip the per-record fsync (generator only; never for enforcement).
    #[arg(long)]
    pub fast: bool,
    /// The summary as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HoldArgs {
    /// The stream.
    pub path: PathBuf,
    /// How long to hold it.
    #[arg(long, default_value_t = 3600)]
    pub seconds: u64,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The stream.
    pub path: PathBuf,
    /// The demo seed whose steward wrote it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

fn fleet(a: &DemoArgs, points: usize, dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let durability = if a.fast { Durability::GeneratorOnly } else { Durability::SyncEachRecord };
    let opts = jcp_receipt::fleet::FleetOptions::new(points, a.receipts.unwrap_or(12), a.seed, durability)
        .ok_or_else(|| out::coded("fleet-too-small", "a fleet needs at least 2 points and 2 receipts per point"))?;
    let sum = jcp_receipt::fleet::write_fleet(dir, &opts).map_err(|e| out::crate_err(&e))?;
    out::emit(a.json, &sum, || {
        use std::fmt::Write as _;
        let mut s = format!(
            "wrote {} points' streams to {} under root {} ({} µJ, sharded); revocation at marker {}\n",
            sum.points.len(),
            dir.display(),
            sum.root,
            sum.root_budget_uj,
            sum.revocation_marker
        );
        for p in &sum.points {
            let heard = p.heard_at.map_or(String::new(), |m| format!(", heard at known_through {m}"));
            let _ = writeln!(
                s,
                "  {} {:?}: {} receipts ({} allow, {} deny){heard}",
                p.path.display(),
                p.role,
                p.receipts,
                p.allows,
                p.denies
            );
        }
        let _ = write!(s, "the one violation: point {} at offset {}", sum.violation.0, sum.violation.1);
        s
    })?;
    Ok(ExitCode::from(out::CLEAN))
}

pub fn run(args: StreamArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        StreamCommand::Demo(a) => {
            if let (Some(n), Some(dir)) = (a.fleet, &a.out_dir) {
                return fleet(&a, usize::from(n), dir);
            }
            let out_path = a.out.clone().unwrap_or_default();
            let opts = DemoOptions {
                receipts: a.receipts.unwrap_or(200),
                tamper: a.tamper,
                unresolved: a.unresolved,
                seed: a.seed,
                durability: if a.fast { Durability::GeneratorOnly } else { Durability::SyncEachRecord },
            };
            let sum = demo::write_demo(&out_path, &opts).map_err(|e| out::crate_err(&e))?;
            out::emit(a.json, &sum, || {
                format!(
                    "wrote {}: {} receipts ({} allow, {} deny), {} grants, {} tampered, {} unresolved, {} bytes\nsteward {}",
                    out_path.display(),
                    sum.receipts,
                    sum.allows,
                    sum.denies,
                    sum.grants,
                    sum.tampered_offsets.len(),
                    sum.unresolved,
                    sum.bytes,
                    sum.steward
                )
            })?;
            Ok(ExitCode::from(out::CLEAN))
        }
        StreamCommand::Hold(a) => {
            let (w, torn) =
                StreamWriter::open(&a.path, Durability::SyncEachRecord, |_| {}).map_err(|e| out::crate_err(&e))?;
            let mut so = std::io::stdout().lock();
            writeln!(
                so,
                "holding {} (torn tail cut: {})",
                a.path.display(),
                torn.map_or("none".into(), |t| format!("{} bytes at {}", t.len, t.offset))
            )?;
            so.flush()?;
            drop(so);
            std::thread::sleep(std::time::Duration::from_secs(a.seconds));
            w.close().map_err(|e| out::crate_err(&e))?;
            Ok(ExitCode::from(out::CLEAN))
        }
        StreamCommand::Settle(a) => {
            let receipt = jcp::cbor::ContentId::parse(&a.receipt).ok_or_else(|| {
                out::coded("invalid-content-id", format!("--receipt {:?} is not 64 lowercase hex digits", a.receipt))
            })?;
            let status = match a.status.as_str() {
                "completed" => jcp_receipt::record::OutcomeStatus::Completed,
                "failed" => jcp_receipt::record::OutcomeStatus::Failed,
                other => return Err(out::coded("invalid-status", format!("--status {other:?}: completed or failed"))),
            };
            let key = super::core::read_key(&a.key)?;
            let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let (note, path) = jcp_audit::settle(&a.stream, &receipt, status, &a.note, &key, at)
                .map_err(|e| out::coded(e.code(), e.to_string()))?;
            let n = note.note();
            out::emit(
                a.json,
                &serde_json::json!({"note": note.id(), "path": path, "receipt": n.receipt, "holder": n.holder.to_did_string(), "status": n.status.as_str(), "settled_by": n.settled_by.to_did_string(), "at": n.at}),
                || {
                    format!("settled {} {} (held by {}) by {}: note {} written to {}\nits energy stays debited; the decision stays unresolved in the record, with this note beside it", n.receipt, n.status.as_str(), n.holder, n.settled_by, note.id(), path.display())
                },
            )?;
            Ok(ExitCode::from(out::CLEAN))
        }
        StreamCommand::Show(a) => show(&a),
        StreamCommand::Replay(a) => {
            let cast = demo::cast(a.seed).map_err(|e| out::crate_err(&e))?;
            let (dg, report) = DurableGate::open(&a.path, cast.steward, Gate::new()).map_err(|e| out::crate_err(&e))?;
            dg.close().map_err(|e| out::crate_err(&e))?;
            let findings = report.rejected_total() > 0 || !report.unresolved.is_empty() || !report.faults.is_empty();
            out::emit(a.json, &report, || {
                let mut s = format!(
                    "replayed {}: {} receipts verified, {} allows re-debited, {} refused, {} unresolved, torn tail cut: {}\n",
                    a.path.display(),
                    report.verified,
                    report.replayed_allows,
                    report.rejected_total(),
                    report.unresolved.len(),
                    report.torn_cut.map_or("none".into(), |t| format!("{} bytes at {}", t.len, t.offset))
                );
                for (code, n) in &report.rejected {
                    let _ = writeln!(s, "  refused {code}: {n}");
                }
                for u in &report.unresolved {
                    let _ =
                        writeln!(s, "  unresolved @{}: {} {} µJ held by {}", u.offset, u.action, u.cost_uj, u.holder);
                }
                s
            })?;
            Ok(ExitCode::from(if findings { out::FINDINGS } else { out::CLEAN }))
        }
    }
}

/// `jcp stream show`: exit 0 when the record verifies, 1 when it is refused
/// or is a framing fault, 2 when there is no such record.
fn show(a: &ShowArgs) -> anyhow::Result<ExitCode> {
    use jcp_audit::record::{self, Locate, RecordCheck};
    let locate = match (a.at, &a.id) {
        (Some(at), _) => Locate::At(at),
        (None, Some(id)) => Locate::Id(
            jcp::cbor::ContentId::parse(id)
                .ok_or_else(|| out::coded("bad-id", format!("--id {id:?} is not 64 hexadecimal digits")))?,
        ),
        (None, None) => return Err(out::coded("no-record-named", "give --at OFFSET or --id ID")),
    };
    let v = record::show(&a.stream, locate).map_err(|e| out::coded(e.code(), e.to_string()))?;
    let ok = matches!(v.check, RecordCheck::Verified { .. });
    out::emit(a.json, &v, || {
        let mut s =
            format!("{} #{} at byte {} ({} bytes) of {}\n", v.kind, v.number, v.offset, v.end - v.offset, v.stream);
        if let Some(id) = &v.id {
            let _ = writeln!(s, "  id        {id}");
        }
        if let Some(k) = &v.signer {
            let _ = writeln!(s, "  signer    {k}");
        }
        let check = match &v.check {
            RecordCheck::Verified { what } => format!("verified: {what}"),
            RecordCheck::Refused { code, message } => format!("REFUSED {}: {message}", code.as_str()),
            RecordCheck::NotARecord { code } => format!("not a record: {code}"),
        };
        let _ = writeln!(s, "  check     {check}");
        let near = |o: Option<u64>| o.map_or("none".to_owned(), |o| format!("at byte {o}"));
        let _ = writeln!(s, "  before    {}\n  after     {}", near(v.prev), near(v.next));
        let body = serde_json::to_string_pretty(&v.body).unwrap_or_default();
        for line in body.lines() {
            let _ = writeln!(s, "  {line}");
        }
        s
    })?;
    Ok(ExitCode::from(if ok { out::CLEAN } else { out::FINDINGS }))
}
