//! `jcp meter`: local energy meters (spec §5, §5.1).
//!
//! - `jcp meter [--interval-ms N] [--count N] [--csv | --json]`: probes the
//!   ladder, then streams windows live: a compact table, CSV, or one JSON
//!   object per line, each with its provenance and coverage, the rung that
//!   metered it and every rung above with why it did not. `--replay TRACE`
//!   meters a recorded counter trace instead of this machine.
//!   `--out SESSION [--occupancy NAME]` also records the windows as a
//!   session file (`jcp-meter-session/1`) for `jcp energy`.
//! - `jcp meter probe [--json]`: every rung, chosen or declined, why, and
//!   what the person can do about it.
//! - `jcp meter record --out TRACE`: records the first counter rung that
//!   opens as a trace; with none, says why, writes nothing and exits 1.
//! - `jcp meter serve --listen HOST:PORT`: meters in the background, window
//!   after window, and serves the meter as `OpenMetrics` at
//!   `http://HOST:PORT/metrics` (energy by provenance, coverage, rung and
//!   domain; each rung's status; liveness and plausibility findings) until
//!   SIGTERM or SIGINT. `--replay TRACE` serves a recorded trace's windows.
//! - `jcp meter calibrate [--from-trace TRACE] [--out FILE]`: measures rung
//!   5's active power against a live RAPL counter (or a recorded one) and
//!   stores it with where it was measured. With no live counter it says so,
//!   stores nothing and exits 1.
//!
//! Exit codes: 0 clean, 1 calibration impossible here, 2 unreadable input or
//! a bad option.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use jcp_meter::clock::ManualClock;
use jcp_meter::estimate::{default_calibration_path, Calibration, HostId};
use jcp_meter::exposition::MeterExporter;
use jcp_meter::meter::calibrate_from_trace;
use jcp_meter::plausibility::fmt_mw;
use jcp_meter::trace::{Trace, TraceBackend, TraceUtil};
use jcp_meter::{Backends, Meter, MeterConfig, ProbeReport, RungStatus, Window};

use crate::out;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct MeterArgs {
    #[command(subcommand)]
    pub command: Option<MeterCommand>,
    #[command(flatten)]
    pub stream: StreamArgs,
}

#[derive(Debug, Subcommand)]
pub enum MeterCommand {
    /// Shows every rung of the ladder and why it was chosen or declined.
    Probe(ProbeArgs),
    /// Measures rung 5's power against a live counter and stores it with where it was measured.
    Calibrate(CalibrateArgs),
    /// Records a counter rung's readings as a trace (jcp-meter-trace/1) for --replay and calibrate --from-trace.
    Record(RecordArgs),
    #[command(
        about = "Meters in the background and serves the windows as OpenMetrics text at http://HOST:PORT/metrics"
    )]
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: Source,
    /// Where to serve /metrics: HOST:PORT (port 0 picks a free one).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: String,
    /// The start and stop summaries as JSON lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The powercap sysfs root.
    #[arg(long, default_value = jcp_meter::rapl::POWERCAP_ROOT)]
    pub powercap_root: PathBuf,
    /// Where to write the trace.
    #[arg(long)]
    pub out: PathBuf,
    /// How long to record, ms.
    #[arg(long, default_value_t = 2000)]
    pub duration_ms: u64,
    /// Sample interval, ms.
    #[arg(long, default_value_t = 50)]
    pub step_ms: u64,
    /// Burn CPU while recording (gives a package counter something to count).
    #[arg(long)]
    pub burn: bool,
    /// The result as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct Source {
    /// The powercap sysfs root.
    #[arg(long, default_value = jcp_meter::rapl::POWERCAP_ROOT)]
    pub powercap_root: PathBuf,
    /// A calibration file for rung 5 (from `jcp meter calibrate`).
    #[arg(long)]
    pub calibration: Option<PathBuf>,
    /// Meter a recorded counter trace (jcp-meter-trace/1) instead of this machine.
    #[arg(long)]
    pub replay: Option<PathBuf>,
    /// No estimate: windows no rung above can meter are gaps.
    #[arg(long)]
    pub no_estimate: bool,
    /// Window length, ms.
    #[arg(long, default_value_t = 1000)]
    pub interval_ms: u64,
}

#[derive(Debug, Args)]
pub struct StreamArgs {
    #[command(flatten)]
    pub source: Source,
    /// Stop after N windows (default: run until interrupted, or to the end of a replay).
    #[arg(long)]
    pub count: Option<u64>,
    /// CSV rows.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// One JSON object per window, per line.
    #[arg(long)]
    pub json: bool,
    /// Also record the windows as a session file (jcp-meter-session/1) for `jcp energy`; needs --count, or a replay's end.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The occupancy to declare for the recorded session (§5.4: a baseline applies only at the occupancy it was measured at).
    #[arg(long, requires = "out")]
    pub occupancy: Option<String>,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub source: Source,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The powercap sysfs root.
    #[arg(long, default_value = jcp_meter::rapl::POWERCAP_ROOT)]
    pub powercap_root: PathBuf,
    /// Calibrate from a recorded RAPL trace (which must name its host) instead of a live counter.
    #[arg(long)]
    pub from_trace: Option<PathBuf>,
    /// Where to store the calibration (default: $XDG_CONFIG_HOME/jcp/meter-calibration.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// How long to burn and measure, ms.
    #[arg(long, default_value_t = 5000)]
    pub duration_ms: u64,
    /// The result as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn read_trace(path: &Path) -> anyhow::Result<(Trace, String)> {
    let bytes = std::fs::read(path).map_err(|e| out::coded("io", format!("{}: {e}", path.display())))?;
    let trace = Trace::from_bytes(&bytes).map_err(|e| out::coded(e.code(), format!("{}: {e}", path.display())))?;
    Ok((trace, Trace::content_id(&bytes)))
}

/// The meter for `source`, the end of a replayed trace (ns) and the trace's content id, if any.
fn build(source: &Source) -> anyhow::Result<(Meter, Option<(u64, String)>)> {
    let calibration =
        source.calibration.as_deref().map(Calibration::load).transpose().map_err(|e| out::crate_err(&e))?;
    let config = MeterConfig {
        interval: Duration::from_millis(source.interval_ms),
        calibration,
        estimate_fallback: !source.no_estimate,
        ..MeterConfig::default()
    };
    config.validate().map_err(|e| out::crate_err(&e))?;
    if let Some(path) = &source.replay {
        let (trace, id) = read_trace(path)?;
        let end = (trace.end_ns(), id);
        let host = trace.host.clone().unwrap_or_else(HostId::this_host);
        let backends = Backends {
            counters: vec![Box::new(TraceBackend::new(trace.clone()))],
            util: Box::new(TraceUtil::new(trace, host.logical_cpus.max(1))),
            clock: Arc::new(ManualClock::new()),
            host,
        };
        return Ok((Meter::new(config, backends).map_err(|e| out::crate_err(&e))?, Some(end)));
    }
    Ok((Meter::system(config, &source.powercap_root).map_err(|e| out::crate_err(&e))?, None))
}

pub fn run(args: MeterArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(MeterCommand::Probe(p)) => probe(&p),
        Some(MeterCommand::Calibrate(c)) => calibrate(&c),
        Some(MeterCommand::Record(r)) => record(&r),
        Some(MeterCommand::Serve(s)) => serve(&s),
        None => stream(&args.stream),
    }
}

fn probe_text(r: &ProbeReport) -> String {
    let mut s = format!("host: {}\n", r.host);
    match r.chosen {
        Some(c) => {
            let _ = writeln!(s, "chosen: {c} ({}, {})", c.provenance(), c.coverage());
        }
        None => s += "chosen: none: windows are gaps\n",
    }
    for x in &r.rungs {
        let status = if x.status == RungStatus::Chosen { "CHOSEN" } else { x.status.as_str() };
        let _ = writeln!(
            s,
            "\n{} [{status}] {} -> {}, {}\n  why ({}): {}",
            x.title, x.rung, x.provenance, x.coverage, x.code, x.why
        );
        if let Some(fix) = &x.fix {
            let _ = writeln!(s, "  fix: {fix}");
        }
        for c in &x.counters {
            let live = c.liveness.as_ref().map(|l| {
                format!(
                    "advanced in {}/{} intervals over {} ms: {}",
                    l.advanced,
                    l.intervals,
                    l.span_ns / 1_000_000,
                    serde_json::to_value(&l.status)
                        .ok()
                        .and_then(|v| v.get("status").and_then(|x| x.as_str().map(str::to_owned)))
                        .unwrap_or_default()
                )
            });
            let _ = writeln!(
                s,
                "  counter {} ({}): {}",
                c.info.name,
                c.info.source,
                live.unwrap_or_else(|| "not observed".into())
            );
            if let Some(p) = &c.plausibility {
                let _ = writeln!(s, "    plausibility: {}", p.describe());
            }
        }
        for n in &x.notes {
            let _ = writeln!(s, "  {n}");
        }
    }
    s
}

fn probe(args: &ProbeArgs) -> anyhow::Result<ExitCode> {
    let (mut meter, _) = build(&args.source)?;
    let report = meter.probe().clone();
    out::emit(args.json, &report, || probe_text(&report))?;
    Ok(ExitCode::SUCCESS)
}

fn watts(w: &Window) -> String {
    match w.energy_uj {
        Some(uj) if w.span_ns() > 0 => fmt_mw(jcp_meter::plausibility::rate_mw(uj, w.span_ns())),
        _ => "-".into(),
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

fn declined_codes(w: &Window) -> String {
    w.declined.iter().map(|d| format!("{}:{}", d.rung, d.code)).collect::<Vec<_>>().join(";")
}

fn stream(args: &StreamArgs) -> anyhow::Result<ExitCode> {
    let (mut meter, replay) = build(&args.source)?;
    if args.out.is_some() && args.count.is_none() && replay.is_none() {
        return Err(out::coded(
            "bad-interval",
            "--out records a session of a known length: give --count N (or --replay a trace)",
        ));
    }
    let replay_end = replay.as_ref().map(|(end, _)| *end);
    let mut recorded = Vec::new();
    let report = meter.probe().clone();
    let mut stdout = std::io::stdout().lock();
    if args.csv {
        writeln!(
            stdout,
            "seq,start_ns,end_ns,start_unix_ms,end_unix_ms,energy_uj,provenance,coverage,rung,declined,gap"
        )?;
    } else if !args.json {
        let chosen = report
            .chosen
            .map_or_else(|| "none (gaps)".to_owned(), |c| format!("{c} ({}, {})", c.provenance(), c.coverage()));
        writeln!(stdout, "metering with {chosen}; `jcp meter probe` says why each rung above was declined")?;
        writeln!(
            stdout,
            "{:>5} {:>10} {:>8} {:>12} {:>10}  {:<10} {:<8} {:<10} declined above",
            "seq", "start s", "span ms", "energy uJ", "power", "grade", "coverage", "rung"
        )?;
    }
    let mut n = 0u64;
    loop {
        if args.count.is_some_and(|c| n >= c) {
            break;
        }
        let w = meter.next_window();
        if replay_end.is_some_and(|end| w.end_ns > end) && args.count.is_none() {
            break;
        }
        if args.json {
            serde_json::to_writer(&mut stdout, &w)?;
            writeln!(stdout)?;
        } else if args.csv {
            writeln!(
                stdout,
                "{},{},{},{},{},{},{},{},{},{},{}",
                w.seq,
                w.start_ns,
                w.end_ns,
                w.start_unix_ms,
                w.end_unix_ms,
                opt(w.energy_uj),
                opt(w.provenance),
                opt(w.coverage),
                opt(w.rung),
                declined_codes(&w),
                w.gap.is_some()
            )?;
        } else {
            writeln!(
                stdout,
                "{:>5} {:>10} {:>8} {:>12} {:>10}  {:<10} {:<8} {:<10} {}",
                w.seq,
                // Seconds since the meter's epoch, for display.
                format!("{}.{:03}", w.start_ns / 1_000_000_000, (w.start_ns / 1_000_000) % 1000),
                w.span_ns() / 1_000_000,
                w.energy_uj.map_or_else(|| "gap".to_owned(), |e| e.to_string()),
                watts(&w),
                opt(w.provenance),
                opt(w.coverage),
                opt(w.rung),
                declined_codes(&w)
            )?;
        }
        stdout.flush()?;
        if args.out.is_some() {
            recorded.push(w);
        }
        n += 1;
    }
    if let Some(path) = &args.out {
        let session = jcp_meter::session::Session::new(
            meter.host().clone(),
            args.occupancy.clone(),
            u64::try_from(meter.config().interval.as_nanos()).unwrap_or(u64::MAX),
            replay.map(|(_, id)| id),
            &recorded,
        );
        session.validate(&path.display().to_string()).map_err(|e| out::crate_err(&e))?;
        jcp_meter::session::record_to(path, &session).map_err(|e| out::crate_err(&e))?;
        if !args.json && !args.csv {
            writeln!(stdout, "recorded {} windows to {}", recorded.len(), path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn calibrate(args: &CalibrateArgs) -> anyhow::Result<ExitCode> {
    let here = HostId::this_host();
    let calibration = if let Some(path) = &args.from_trace {
        let (trace, id) = read_trace(path)?;
        match calibrate_from_trace(&trace, id, unix_ms()) {
            Ok(c) => c,
            Err(e) => return refuse(args.json, &e),
        }
    } else {
        let config = MeterConfig::default();
        let mut meter = Meter::system(config, &args.powercap_root).map_err(|e| out::crate_err(&e))?;
        match meter.calibrate(Duration::from_millis(args.duration_ms.max(300)), unix_ms()) {
            Ok(c) => c,
            Err(e) => return refuse(args.json, &e),
        }
    };
    let Some(path) = args.out.clone().or_else(default_calibration_path) else {
        return Err(out::coded("io", "no --out and no $HOME or $XDG_CONFIG_HOME to store the calibration in"));
    };
    calibration.store(&path).map_err(|e| out::crate_err(&e))?;
    let elsewhere = calibration.measured_on != here;
    let value = serde_json::json!({"stored": path.display().to_string(), "calibration": calibration, "measured_on_this_host": !elsewhere});
    out::emit(args.json, &value, || {
        let mut s = format!(
            "stored {}: {} active power measured on {} against {} ({}) over {} ms\n",
            path.display(),
            fmt_mw(calibration.active_mw),
            calibration.measured_on,
            calibration.source.rung,
            calibration.source.counters.join(", "),
            calibration.span_ns / 1_000_000
        );
        if elsewhere {
            let _ = writeln!(s, "note: it was measured on another host than this one ({here}); the meter refuses it here and uses it only there");
        }
        s
    })?;
    Ok(ExitCode::SUCCESS)
}

fn refuse(json: bool, e: &jcp_meter::Error) -> anyhow::Result<ExitCode> {
    let value = serde_json::json!({"stored": null, "refused": {"code": e.code(), "message": e.to_string()}});
    out::emit(json, &value, || format!("not calibrated, nothing stored ({}): {e}\n", e.code()))?;
    Ok(ExitCode::from(out::FINDINGS))
}

fn record(args: &RecordArgs) -> anyhow::Result<ExitCode> {
    if args.step_ms == 0 || args.duration_ms < args.step_ms {
        return Err(out::coded("bad-interval", "--step-ms must be positive and no longer than --duration-ms"));
    }
    let mut backends = Backends::system(&args.powercap_root);
    let intervals = usize::try_from(args.duration_ms / args.step_ms).unwrap_or(usize::MAX);
    let trace = match jcp_meter::trace::record(
        &mut backends.counters,
        &*backends.clock,
        Duration::from_millis(args.step_ms),
        intervals,
        args.burn,
        backends.host.clone(),
    ) {
        Ok(t) => t,
        Err(e) => {
            let value = serde_json::json!({"written": null, "refused": {"code": e.code(), "message": e.to_string()}});
            out::emit(args.json, &value, || format!("nothing recorded ({}): {e}\n", e.code()))?;
            return Ok(ExitCode::from(out::FINDINGS));
        }
    };
    let text = serde_json::to_string(&trace)? + "\n";
    std::fs::write(&args.out, &text).map_err(|e| out::coded("io", format!("{}: {e}", args.out.display())))?;
    let value = serde_json::json!({"written": args.out.display().to_string(), "rung": trace.rung, "counters": trace.counters.len(), "samples": trace.samples.len(), "id": Trace::content_id(text.as_bytes())});
    out::emit(args.json, &value, || {
        format!(
            "wrote {}: {} samples of {} ({} counters)\n",
            args.out.display(),
            trace.samples.len(),
            trace.rung,
            trace.counters.len()
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

fn serve(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let (meter, replay_end) = build(&args.source)?;
    let rt = super::wire::runtime()?;
    let (listener, url) = rt.block_on(super::wire::bind_metrics(&args.listen))?;
    let exporter = MeterExporter::spawn(meter, replay_end.map(|(end, _)| end));
    let metrics = exporter.metrics();
    let value = serde_json::json!({"event": "listening", "metrics": url, "interval_ms": args.source.interval_ms, "replay": args.source.replay});
    out::emit(args.json, &value, || {
        format!("jcp meter serve: metrics on {url} (a window every {} ms)\n", args.source.interval_ms)
    })?;
    std::io::stdout().flush()?;
    let render: jcp_metrics::Render = Arc::new(move || metrics.render());
    rt.block_on(async move {
        let served = tokio::spawn(jcp_metrics::serve(listener, render, std::future::pending()));
        let stopped = super::wire::wait_for_signal().await;
        served.abort();
        stopped
    })?;
    let windows = exporter.windows();
    exporter.stop();
    let value = serde_json::json!({"event": "stopped", "windows": windows});
    out::emit(args.json, &value, || format!("jcp meter serve: stopped after {windows} windows\n"))?;
    Ok(ExitCode::SUCCESS)
}
