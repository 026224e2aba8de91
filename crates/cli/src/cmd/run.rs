//! `jcp run`: steering a long run (spec §4.7, conformance class C21) from the
//! command line. A run travels as a `*.jcprun` file (a CBOR sequence: a
//! `jcp-run/1` header, then the grant, checkpoints, amendments and
//! continuation grants in order); `checkpoint` and `amend` append to it,
//! refusing — before anything is signed — what the verifier would refuse.
//! `live` starts a run and supervises it in the foreground (`run/live.rs`,
//! `jcp-supervise`: the console's live runs are the same code).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use jcp::cbor::{ContentId, Value};
use jcp::energy::Provenance;
use jcp::grant::SignedGrant;
use jcp::steering::{self, AmendInput, CheckpointInput, Remainder, Run, RunReport, Spent, UnknownReason};
use serde_json::json;

use crate::cmd::core::{parse_caveat, read_key};

mod live;
use crate::out::{coded, emit, CLEAN, FINDINGS};

/// `jcp run`: checkpoints, amendments and run verification (§4.7).
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(subcommand)]
    cmd: RunCmd,
}

#[derive(Debug, Subcommand)]
enum RunCmd {
    /// Writes a deterministic demo run (a steward's grant, 7 checkpoints, one amendment and its continuation).
    Demo {
        /// The run file to write (overwritten).
        path: PathBuf,
        /// Keys, nonces and figures derive from this seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
    /// Verifies a run file: exit 0 clean, 1 findings, 2 unreadable.
    Verify {
        path: PathBuf,
        /// A key log of a steward that rotated its key (§2.1): the run's
        /// grants and amendments in its name are checked under its current
        /// key. Repeatable. Without it such a run is refused on its signatures.
        #[arg(long = "key-log", value_name = "FILE")]
        key_logs: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Starts a run file under a grant (a signed grant file from `jcp grant issue`).
    New {
        /// The run's grant.
        #[arg(long)]
        grant: PathBuf,
        /// The run file to create (must not exist).
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Appends a checkpoint signed by the agent (the active grant's subject).
    Checkpoint(CheckpointArgs),
    /// Appends an amendment at the latest checkpoint, signed by the grant's issuer, and its continuation grant.
    Amend(AmendArgs),
    /// Starts a steered demo run and supervises it in the foreground, as the console does (jcp-supervise): the steward's key issues the agent a grant, the run file goes into --runs, the endpoint serves with `jcp backend demo` behind its gate, the agent's events stream out; SIGINT/SIGTERM stops it.
    Live(live::LiveArgs),
}

// The flags of `jcp run checkpoint` (its help is the variant's doc line).
#[derive(Debug, Args)]
struct CheckpointArgs {
    /// The run file (appended to).
    #[arg(long)]
    run: PathBuf,
    /// The agent's key file.
    #[arg(long)]
    key: PathBuf,
    /// The state commitment: 64 hex digits, or text:NAME.
    #[arg(long)]
    state: String,
    /// Unix seconds of the checkpoint.
    #[arg(long)]
    at: u64,
    /// The run's cumulative spend in µJ (omit to state none: it is then unknown, never zero).
    #[arg(long)]
    spent_uj: Option<u64>,
    /// Provenance of the spend: `HwShunt`, `ModelBased` or `Estimator`.
    #[arg(long, requires = "spent_uj")]
    provenance: Option<String>,
    /// The nonce as 32 hex digits (default: fresh randomness).
    #[arg(long)]
    nonce: Option<String>,
    #[arg(long)]
    json: bool,
}

// The flags of `jcp run amend` (its help is the variant's doc line).
#[derive(Debug, Args)]
struct AmendArgs {
    /// The run file (appended to).
    #[arg(long)]
    run: PathBuf,
    /// The issuer's key file.
    #[arg(long)]
    key: PathBuf,
    /// The new budget in µJ (at most what the grant has left at the checkpoint).
    #[arg(long)]
    budget_uj: u64,
    /// A new, earlier expiry (unix seconds).
    #[arg(long)]
    expiry: Option<u64>,
    /// A new instruction-set commitment: 64 hex digits, or text:NAME.
    #[arg(long)]
    instructions: Option<String>,
    /// A caveat the continuation adds (repeatable; Name=argument as `jcp grant issue --caveat`, e.g. MaxCostUj=100).
    #[arg(long = "caveat")]
    caveats: Vec<String>,
    /// Also write the continuation grant to this file.
    #[arg(long)]
    continuation_out: Option<PathBuf>,
    /// The amendment's nonce as 32 hex digits (default: fresh randomness).
    #[arg(long)]
    nonce: Option<String>,
    /// The continuation grant's nonce as 32 hex digits (default: fresh randomness).
    #[arg(long)]
    continuation_nonce: Option<String>,
    #[arg(long)]
    json: bool,
}

use crate::out::core_err;

fn read_run(path: &Path) -> anyhow::Result<Run> {
    Run::read(path).map_err(|e| core_err(path, &e))
}

/// Replaces the whole run ([`Run::replace`]): a temporary with a random
/// name created exclusively, synced and renamed over it, so an interrupted
/// write never leaves half a record and a symlink the agent planted in the
/// run's folder never turns the steward's write elsewhere (issue 34, "Files
/// the agent can reach").
fn write_run(path: &Path, run: &Run) -> anyhow::Result<()> {
    run.replace(path, "cli").map_err(|e| core_err(path, &e))
}

fn commitment(s: &str, what: &str) -> anyhow::Result<ContentId> {
    match s.strip_prefix("text:") {
        Some(name) => Ok(ContentId::of(&Value::text(name))),
        None => ContentId::parse(s).ok_or_else(|| {
            coded("invalid-content-id", format!("{what}: {s:?} is not 64 lowercase hex digits (or text:NAME)"))
        }),
    }
}

fn nonce_arg(n: Option<&String>, flag: &str) -> anyhow::Result<Option<[u8; 16]>> {
    n.map(|s| {
        hex::decode(s)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| coded("invalid-nonce", format!("{flag} must be 32 hex digits")))
    })
    .transpose()
}

fn uj(n: u64) -> String {
    // The exact figure, with the one formatter's words beside it from 1 mJ up.
    if n < 1_000 {
        format!("{n} µJ")
    } else {
        format!("{n} µJ ({})", jcp::energy::format_uj(n))
    }
}

fn remainder_text(r: Remainder) -> String {
    match r {
        Remainder::Known { uj: n } => uj(n),
        Remainder::Unknown { reason: UnknownReason::NotStated } => "unknown (spend not stated)".into(),
        Remainder::Unknown { reason: UnknownReason::Refused } => "not judged (refused)".into(),
        Remainder::Unknown { reason: UnknownReason::BaseUnknown } => {
            format!("unknown ({})", UnknownReason::BaseUnknown.as_str())
        }
    }
}

fn report_human(r: &RunReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "run {} ({})", r.run_grant, r.format);
    let _ = writeln!(s, "  steward (issuer)  {}", r.issuer);
    let _ = writeln!(s, "  agent (subject)   {}", r.agent);
    let _ = writeln!(s, "  issued budget     {}", uj(r.issued_budget_uj));
    match (r.active_grant, r.active_budget_uj) {
        (Some(g), Some(b)) => {
            let _ = writeln!(s, "  active grant      {g} ({})", uj(b));
        }
        _ => {
            let _ = writeln!(s, "  active grant      none (the run has no authority left)");
        }
    }
    let _ = writeln!(s, "  remainder         {}", remainder_text(r.remainder));
    let _ = writeln!(
        s,
        "\n  {:>4}  {:>4}  {:>11}  {:<44}  {:<34}  {:<8}  id",
        "rec", "seq", "at", "spent", "remainder", "verdict"
    );
    for c in &r.checkpoints {
        let spent = c.spent.map_or_else(|| "not stated".to_owned(), |sp| format!("{} {}", uj(sp.uj), sp.provenance));
        let verdict =
            if c.codes.is_empty() { c.verdict.to_owned() } else { format!("{} [{}]", c.verdict, c.codes.join(",")) };
        let _ = writeln!(
            s,
            "  {:>4}  {:>4}  {:>11}  {:<44}  {:<34}  {:<8}  {}",
            c.index,
            c.seq,
            c.at,
            spent,
            remainder_text(c.remainder),
            verdict,
            &c.id.to_hex()[..16]
        );
        for a in &c.amendments {
            let _ = writeln!(
                s,
                "        ↳ amendment #{} by the steward: budget {} (ceiling {}){}{}; continuation {} {}",
                a.index,
                uj(a.budget_uj),
                uj(a.ceiling_uj),
                a.expiry.map_or_else(String::new, |e| format!(", expiry {e}")),
                a.instructions.map_or_else(String::new, |i| format!(", instructions {}", &i.to_hex()[..16])),
                &a.continuation.to_hex()[..16],
                if a.continuation_verified { "(verified)" } else { "(NOT verified)" }
            );
        }
    }
    if r.findings.is_empty() {
        let _ = writeln!(s, "\nverdict: clean ({} records)", r.records);
    } else {
        let _ = writeln!(s, "\nfindings:");
        for f in &r.findings {
            let _ =
                writeln!(s, "  record #{} {} {}: [{}] {}", f.index, f.kind, &f.id.to_hex()[..16], f.code, f.message);
        }
        let _ = writeln!(s, "\nverdict: {} finding(s) in {} records", r.findings.len(), r.records);
    }
    s
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        RunCmd::Demo { path, seed, json } => demo(&path, seed, json),
        RunCmd::Verify { path, key_logs, json } => verify(&path, &key_logs, json),
        RunCmd::New { grant, out, json } => start(&grant, &out, json),
        RunCmd::Checkpoint(a) => checkpoint(a),
        RunCmd::Amend(a) => amend(a),
        RunCmd::Live(a) => live::live(a),
    }
}

/// `jcp run demo`: the deterministic demo run, written and verified.
fn demo(path: &Path, seed: u64, json: bool) -> anyhow::Result<ExitCode> {
    let s = steering::demo::write_demo_run(path, seed).map_err(|e| core_err(path, &e))?;
    emit(json, &s, || {
        format!(
            "demo run written to {} (seed {seed}): {} records, {} checkpoints, {} amendment(s), {} bytes, {}\n  run grant {}\n  steward   {}\n  agent     {}",
            path.display(),
            s.records,
            s.checkpoints,
            s.amendments,
            s.bytes,
            if s.clean { "verifies clean" } else { "HAS FINDINGS" },
            s.run_grant,
            s.issuer,
            s.agent
        )
    })?;
    Ok(ExitCode::from(if s.clean { CLEAN } else { FINDINGS }))
}

/// `jcp run verify`: the run verified (§4.7), under the key logs of
/// stewards that rotated their keys (§2.1).
fn verify(path: &Path, key_logs: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let mut ring = jcp::rotation::KeyRing::new();
    for f in key_logs {
        ring.add(&crate::cmd::identity::read_log(f)?).map_err(|e| core_err(f, &e))?;
    }
    let run = read_run(path)?.with_key_ring(ring);
    let report = run.verify().map_err(|e| core_err(path, &e))?;
    emit(json, &report, || report_human(&report))?;
    Ok(ExitCode::from(if report.clean { CLEAN } else { FINDINGS }))
}

/// `jcp run new`: a run file started under a verified grant.
fn start(grant: &Path, out: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(grant).with_context(|| format!("reading {}", grant.display()))?;
    let g = SignedGrant::from_bytes(&bytes).map_err(|e| core_err(grant, &e))?;
    if !g.verify_signature() {
        return Err(coded("bad-signature", format!("{}: the grant's signature does not verify", grant.display())));
    }
    if out.exists() {
        return Err(coded("file-exists", format!("{} exists; a run is started once", out.display())));
    }
    let run = Run::new(g.clone());
    write_run(out, &run)?;
    emit(json, &json!({"run": out, "grant": g.id(), "agent": g.grant().subject, "issuer": g.grant().issuer}), || {
        format!("run {} started under grant {}", out.display(), g.id())
    })?;
    Ok(ExitCode::from(CLEAN))
}

/// `jcp run checkpoint`: a checkpoint signed by the agent, appended.
fn checkpoint(a: CheckpointArgs) -> anyhow::Result<ExitCode> {
    let CheckpointArgs { run: path, key, state, at, spent_uj, provenance, nonce, json } = a;
    let mut run = read_run(&path)?;
    let agent = read_key(&key)?;
    let spent = match spent_uj {
        None => None,
        Some(n) => {
            let p = provenance.as_deref().unwrap_or("Estimator");
            let provenance = Provenance::parse(p).ok_or_else(|| {
                coded("invalid-provenance", format!("{p:?}: expected HwShunt, ModelBased or Estimator"))
            })?;
            Some(Spent { uj: n, provenance })
        }
    };
    let input = CheckpointInput {
        state: commitment(&state, "--state")?,
        at,
        spent,
        nonce: nonce_arg(nonce.as_ref(), "--nonce")?,
    };
    let cp = run.checkpoint(&agent, input).map_err(|e| core_err(&path, &e))?;
    write_run(&path, &run)?;
    let c = cp.checkpoint();
    emit(json, &json!({"id": cp.id(), "seq": c.seq, "grant_id": c.grant_id, "checkpoint": c, "run": path}), || {
        format!(
            "checkpoint seq {} ({}) appended to {}\n  spent {}",
            c.seq,
            cp.id(),
            path.display(),
            c.spent.map_or_else(|| "not stated".to_owned(), |s| format!("{} {}", uj(s.uj), s.provenance))
        )
    })?;
    Ok(ExitCode::from(CLEAN))
}

/// `jcp run amend`: an amendment at the latest checkpoint and its
/// continuation grant, signed by the grant's issuer, appended.
fn amend(a: AmendArgs) -> anyhow::Result<ExitCode> {
    let AmendArgs {
        run: path,
        key,
        budget_uj,
        expiry,
        instructions,
        caveats,
        continuation_out,
        nonce,
        continuation_nonce,
        json,
    } = a;
    let mut run = read_run(&path)?;
    let issuer = read_key(&key)?;
    let input = AmendInput {
        budget_uj,
        expiry,
        instructions: instructions.as_deref().map(|i| commitment(i, "--instructions")).transpose()?,
        nonce: nonce_arg(nonce.as_ref(), "--nonce")?,
        continuation_nonce: nonce_arg(continuation_nonce.as_ref(), "--continuation-nonce")?,
        add_caveats: caveats.iter().map(|c| parse_caveat(c)).collect::<anyhow::Result<Vec<_>>>()?,
    };
    let (am, cont) = run.amend(&issuer, input).map_err(|e| core_err(&path, &e))?;
    write_run(&path, &run)?;
    if let Some(out) = &continuation_out {
        std::fs::write(out, cont.to_bytes()).with_context(|| format!("writing {}", out.display()))?;
    }
    let a = am.amendment();
    emit(
        json,
        &json!({"id": am.id(), "amendment": a, "continuation": cont.id(), "continuation_grant": cont.grant(), "run": path}),
        || {
            format!(
                "amendment {} appended to {}\n  at checkpoint {}\n  budget {}\n  continuation grant {}",
                am.id(),
                path.display(),
                a.checkpoint,
                uj(a.budget_uj),
                cont.id()
            )
        },
    )?;
    Ok(ExitCode::from(CLEAN))
}
