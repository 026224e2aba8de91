//! `jcp energy`: the energy layers above the meter (spec §5.3–§5.6), over
//! the files the meter records (`jcp meter --count N --out SESSION`) and the
//! receipts a stream holds. The CLI reads files and renders; the rules are
//! `jcp_meter::layers`.
//!
//! - `jcp energy trace OUTCOME ACTIVITY...`: a sealed `efficiency/1` outcome
//!   through the activity files it names by content id: the signed
//!   residual, never clamped; an activity bound twice is refused (§5.3).
//! - `jcp energy reconcile --grant ID --windows SESSION STREAM...`: exact
//!   conservation of the grant's spend against the recorded windows, with
//!   the basis of the floor; Partial windows and gaps are never summed into
//!   a whole (§5.5).
//! - `jcp energy bounds --windows SESSION --envelope FILE`: each window
//!   "refuted" or "not refuted" against a part's power envelope, never
//!   verified (§5.6).
//! - `jcp energy dynamism --windows SESSION --baseline FILE [--causes FILE]`:
//!   windows against a declared baseline, unexplained / inapplicable /
//!   unresolvable kept apart (§5.4).
//!
//! Exit codes: 0 clean, 1 a refusal or a finding (see each command), 2
//! unreadable input.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jcp::cbor::ContentId;
use jcp_meter::conservation::BoundVerdict;
use jcp_meter::declared::{baseline_of_session, baseline_to_json, load_baseline, Causes, EnvelopeFile};
use jcp_meter::dynamism::Assessment;
use jcp_meter::layers::{self, Word};
use jcp_meter::session::Session;

use crate::out;

#[derive(Debug, Args)]
pub struct EnergyArgs {
    #[command(subcommand)]
    pub command: EnergyCommand,
}

#[derive(Debug, Subcommand)]
pub enum EnergyCommand {
    /// §5.3: an outcome's activities by content id and the signed residual.
    Trace(TraceArgs),
    /// §5.5: exact conservation of a grant's spend against recorded windows.
    Reconcile(ReconcileArgs),
    /// §5.6: recorded windows against a part's power envelope: refuted or not refuted.
    Bounds(BoundsArgs),
    /// §5.4: recorded windows against a declared baseline, three kinds of look kept apart.
    Dynamism(DynamismArgs),
    /// §5.4: declares a baseline from a recorded session: the band of its Whole windows, scoped to its host, occupancy and window length.
    Baseline(BaselineArgs),
}

#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// The recorded session (jcp-meter-session/1) that shows what normal looks like here.
    #[arg(long)]
    pub windows: PathBuf,
    /// The baseline file to write (jcp-meter-baseline/1; must not exist).
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The sealed efficiency/1 outcome receipt.
    pub outcome: PathBuf,
    /// Activity files (canonical det-CBOR maps with `joules_uj` and `provenance`), found by the content id of their bytes.
    pub activities: Vec<PathBuf>,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The grant whose spend is reconciled (content id, 64 hex).
    #[arg(long)]
    pub grant: String,
    /// The recorded session (jcp-meter-session/1) of the span the grant's work ran in.
    #[arg(long)]
    pub windows: PathBuf,
    /// Receipt streams holding the grant's receipts.
    #[arg(required = true)]
    pub streams: Vec<PathBuf>,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BoundsArgs {
    /// The recorded session.
    #[arg(long)]
    pub windows: PathBuf,
    /// The part's power envelope (jcp-meter-envelope/1).
    #[arg(long)]
    pub envelope: PathBuf,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DynamismArgs {
    /// The recorded session.
    #[arg(long)]
    pub windows: PathBuf,
    /// The declared baseline (jcp-meter-baseline/1).
    #[arg(long)]
    pub baseline: PathBuf,
    /// Evidenced causes by window (jcp-meter-causes/1).
    #[arg(long)]
    pub causes: Option<PathBuf>,
    /// The shortest phenomenon looked for, ns: windows longer than it are unresolvable.
    #[arg(long)]
    pub phenomenon_ns: Option<u64>,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

/// A meter error: a refusal exits 1, unreadable input 2.
fn meter_err(e: &jcp_meter::Error, message: String) -> anyhow::Error {
    if e.is_refusal() {
        out::refused(e.code(), message)
    } else {
        out::coded(e.code(), message)
    }
}

fn err(e: &jcp_meter::Error) -> anyhow::Error {
    meter_err(e, e.to_string())
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| out::coded("io", format!("{}: {e}", path.display())))
}

fn status(findings: bool) -> ExitCode {
    ExitCode::from(if findings { out::FINDINGS } else { out::CLEAN })
}

pub fn run(args: EnergyArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        EnergyCommand::Trace(a) => trace(&a),
        EnergyCommand::Reconcile(a) => reconcile(&a),
        EnergyCommand::Bounds(a) => bounds(&a),
        EnergyCommand::Dynamism(a) => dynamism(&a),
        EnergyCommand::Baseline(a) => baseline(&a),
    }
}

fn baseline(a: &BaselineArgs) -> anyhow::Result<ExitCode> {
    let session = Session::load(&a.windows).map_err(|e| err(&e))?;
    let b = baseline_of_session(&session).map_err(|e| err(&e))?;
    if a.out.exists() {
        return Err(out::coded(
            "file-exists",
            format!("{} exists; a declared baseline is not overwritten", a.out.display()),
        ));
    }
    std::fs::write(&a.out, baseline_to_json(&b)).map_err(|e| out::coded("io", format!("{}: {e}", a.out.display())))?;
    out::emit(a.json, &serde_json::json!({"written": a.out.display().to_string(), "baseline": b}), || {
        format!(
            "wrote {}: {} – {} µJ per window, for occupancy {:?} on this session's host and window length\n",
            a.out.display(),
            b.low_uj,
            b.high_uj,
            b.scope.as_ref().map_or("", |s| s.occupancy.as_str())
        )
    })?;
    Ok(status(false))
}

fn trace(a: &TraceArgs) -> anyhow::Result<ExitCode> {
    let outcome = read(&a.outcome)?;
    let mut activities = Vec::with_capacity(a.activities.len());
    for p in &a.activities {
        activities.push((p.display().to_string(), read(p)?));
    }
    let r = layers::trace_files(&outcome, &activities)
        .map_err(|e| meter_err(&e, format!("{}: {e}", a.outcome.display())))?;
    out::emit(a.json, &r, || {
        let t = &r.trace;
        let mut s = format!(
            "outcome {} ({}) signed by {}\n  outcome {} µJ, activities {} µJ, residual {} µJ{}\n  floor: {} {}\n",
            r.outcome_id,
            r.outcome,
            r.steward,
            t.outcome_uj,
            t.accounted_uj,
            t.residual_uj,
            t.finding.map_or_else(String::new, |f| format!(
                " — FINDING {f}: the bound activities claim more than the outcome admits"
            )),
            t.provenance_floor,
            t.coverage_floor
        );
        for x in &t.activities {
            let _ = writeln!(s, "  activity {} {} µJ {} {}", x.id, x.energy.uj, x.energy.provenance, x.energy.coverage);
        }
        for u in &r.unbound {
            let _ = writeln!(s, "  not named by the outcome, not summed: {} ({})", u.file, u.id);
        }
        s
    })?;
    Ok(status(r.trace.finding.is_some()))
}

fn reconcile(a: &ReconcileArgs) -> anyhow::Result<ExitCode> {
    let grant = ContentId::parse(&a.grant).ok_or_else(|| {
        out::coded("invalid-content-id", format!("--grant {:?} is not 64 lowercase hex digits", a.grant))
    })?;
    let session = Session::load(&a.windows).map_err(|e| err(&e))?;
    let r = jcp_audit::energy::reconcile_grant(&a.streams, &grant, &session).map_err(|e| err(&e))?;
    out::emit(a.json, &r, || {
        let sp = &r.spend;
        let mut s = format!(
            "grant {}: budget {} µJ, debited {} µJ by {} allows ({} µJ measured, {} µJ modelled, {})\n  windows: {} ({} Whole = {} µJ; {} Partial = {} µJ kept apart; {} gaps)\n  basis: {:?}\n  {}\n",
            sp.grant_id,
            sp.budget_uj,
            sp.debited_uj,
            sp.allows,
            sp.measured_uj,
            sp.modelled_uj,
            sp.coverage,
            r.windows,
            r.whole_windows,
            r.whole_uj,
            r.partial_windows.len(),
            r.partial_uj,
            r.gap_windows.len(),
            r.basis,
            r.statement
        );
        s.push_str(if r.balanced { "  BALANCED\n" } else { "  NOT BALANCED\n" });
        s
    })?;
    Ok(status(!r.balanced))
}

fn bounds(a: &BoundsArgs) -> anyhow::Result<ExitCode> {
    let session = Session::load(&a.windows).map_err(|e| err(&e))?;
    let envelope = EnvelopeFile::load(&a.envelope).map_err(|e| err(&e))?;
    let r = layers::bounds(&session, &envelope).map_err(|e| err(&e))?;
    out::emit(a.json, &r, || {
        let mut s = format!(
            "{} (burst {} mW, idle {} mW): {} refuted, {} not refuted, {} not held\n",
            r.part, r.envelope.burst_mw, r.envelope.idle_mw, r.refuted, r.not_refuted, r.not_held
        );
        for w in &r.windows {
            let what = match (&w.verdict, &w.not_held) {
                (Some(BoundVerdict::NotRefuted { rate_mw }), _) => {
                    format!("{} at {rate_mw} mW", Word::NotRefuted.as_str())
                }
                (Some(BoundVerdict::RefutedAbove { rate_mw, burst_mw }), _) => {
                    format!("{} at {rate_mw} mW, above the burst rating {burst_mw} mW", Word::Refuted.as_str())
                }
                (Some(BoundVerdict::RefutedBelow { rate_mw, idle_mw }), _) => {
                    format!("{} at {rate_mw} mW, below the idle floor {idle_mw} mW", Word::Refuted.as_str())
                }
                (None, Some(why)) => format!("not held: {why}"),
                (None, None) => "not held".into(),
            };
            let _ = writeln!(s, "  window {}: {what}", w.seq);
        }
        if r.not_refuted > 0 {
            s.push_str("  not refuted is not verified: a figure inside the envelope is only not impossible\n");
        }
        s
    })?;
    // Nothing held is nothing checked: not clean.
    Ok(status(r.refuted > 0 || r.not_refuted == 0))
}

fn dynamism(a: &DynamismArgs) -> anyhow::Result<ExitCode> {
    let session = Session::load(&a.windows).map_err(|e| err(&e))?;
    let baseline = load_baseline(&a.baseline).map_err(|e| err(&e))?;
    let causes = match &a.causes {
        Some(p) => Causes::load(p).map_err(|e| err(&e))?,
        None => Causes::default(),
    };
    let r = layers::dynamism(&session, Some(&baseline), &causes, a.phenomenon_ns);
    out::emit(a.json, &r, || {
        let mut s = format!(
            "{} windows: {} within band, {} explained; look at this: {} unexplained; no yardstick: {} inapplicable; could not have seen it: {} unresolvable\n  grades: {}\n",
            r.windows.len(),
            r.within_band,
            r.explained,
            r.unexplained,
            r.inapplicable,
            r.unresolvable,
            r.grades.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        );
        for w in &r.windows {
            let what = match &w.assessment {
                Assessment::WithinBand => "within band".to_owned(),
                Assessment::Explained { cause } => format!("explained: {:?} (evidence {})", cause.kind, cause.evidence),
                Assessment::Unexplained { energy_uj, band_uj } => {
                    format!("unexplained: {energy_uj} µJ outside {}..{} µJ — a request for a look, not a finding of wrongdoing", band_uj.0, band_uj.1)
                }
                Assessment::Inapplicable { why } => format!("inapplicable: {why}"),
                Assessment::Unresolvable { why } => format!("unresolvable: {why}"),
            };
            let _ = writeln!(s, "  window {}: {what}", w.seq);
        }
        s
    })?;
    Ok(status(r.unexplained + r.inapplicable + r.unresolvable > 0))
}
