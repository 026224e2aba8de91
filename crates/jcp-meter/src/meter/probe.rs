//! The probe (§5.1 "the metering ladder"): walking the ladder best first and
//! choosing the rung that meters the windows. A counter rung is chosen only
//! while every one of its counters is live (§5.1) and not refuted by the
//! board's bounds (§5.6); rungs 3 and 4 are recorded as unavailable: off
//! macOS they do not exist, on macOS this meter does not implement them;
//! rungs 5 and 6 stand by below a chosen counter rung.

use std::sync::Arc;
use std::time::Duration;

use jcp::energy::{Coverage, Provenance};
use serde::Serialize;

use super::sampler::CounterSamples;
use super::window::plausibility_of;
use super::{not_live_code, read_failed_code, sample_step_ns, Active, Meter, MeterConfig};
use crate::backend::{CounterBackend, CounterInfo, Decline, DrawReading, RungId};
use crate::clock::Clock;
use crate::estimate::HostId;
use crate::liveness::{judge, CounterLiveness, LiveTracker, LivenessRule};
use crate::plausibility::{fmt_mw, Plausibility};
use crate::rapl::wrap_bound_mw;

/// What became of a rung at the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RungStatus {
    /// The rung meters the windows.
    Chosen,
    /// The rung was tried and declined.
    Declined,
    /// This meter cannot use the rung here: the platform lacks it (code
    /// `not-available-on-platform`), or the platform has it and this meter
    /// does not implement it (code `not-implemented`: rungs 3 and 4 on macOS).
    Unavailable,
    /// Below the chosen rung: used when a window degrades (or, for a counter rung, not probed).
    Standby,
}

impl RungStatus {
    /// The stable code (as serialised: `chosen`, `declined`, `unavailable`, `standby`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chosen => "chosen",
            Self::Declined => "declined",
            Self::Unavailable => "unavailable",
            Self::Standby => "standby",
        }
    }
}

/// A counter's probe record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterReport {
    /// The counter.
    pub info: CounterInfo,
    /// Its liveness over the probe.
    pub liveness: Option<CounterLiveness>,
    /// Its plausibility over the probe, where judged.
    pub plausibility: Option<Plausibility>,
}

/// One rung at the probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RungReport {
    /// The rung.
    pub rung: RungId,
    /// Its name for people.
    pub title: &'static str,
    /// Chosen, declined, unavailable or standby.
    pub status: RungStatus,
    /// The grade it gives.
    pub provenance: Provenance,
    /// The coverage it gives.
    pub coverage: Coverage,
    /// A stable reason code.
    pub code: &'static str,
    /// Why it was chosen, declined or left standing by.
    pub why: String,
    /// What the person can do, where something can be done.
    pub fix: Option<String>,
    /// Per-counter liveness and plausibility.
    pub counters: Vec<CounterReport>,
    /// What the backend saw and left out.
    pub notes: Vec<String>,
}

/// The ladder as probed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeReport {
    /// The host the ladder was probed on.
    pub host: HostId,
    /// `std::env::consts::OS`.
    pub platform: &'static str,
    /// The rung that meters the windows; `None` when nothing can (estimate off, no calibration, no counter).
    pub chosen: Option<RungId>,
    /// Every rung, best first.
    pub rungs: Vec<RungReport>,
    /// Monotonic start and end of the probe, ns.
    pub started_ns: u64,
    /// Monotonic end of the probe, ns.
    pub ended_ns: u64,
}

impl ProbeReport {
    /// The report of `rung`.
    pub fn rung(&self, rung: RungId) -> Option<&RungReport> {
        self.rungs.iter().find(|r| r.rung == rung)
    }
}

/// Rungs 3 and 4, which this meter does not read: recorded as unavailable,
/// never imitated, saying what is true where it runs (`on_macos`: built for
/// macOS, where both exist and are not implemented here; elsewhere they do
/// not exist) and which rung meters the windows instead (`instead`; `None`:
/// none does, the windows are gaps).
fn platform_unavailable(rung: RungId, on_macos: bool, instead: Option<RungId>) -> RungReport {
    let (what, needs) = match rung {
        RungId::ProcessEnergy => {
            ("per-process CPU energy (proc_pid_rusage ri_energy_nj)", "a foreign call into libproc (proc_pid_rusage)")
        }
        _ => (
            "Apple IOReport energy counters",
            "foreign calls into IOReport, a private framework with no published interface",
        ),
    };
    let instead = match instead {
        Some(r) => format!("the windows are metered by rung {} instead", r.title()),
        None => "no rung meters the windows instead: they are gaps".to_owned(),
    };
    let d = if on_macos {
        Decline::new(
            "not-implemented",
            format!("{what}: present on this platform (macOS) but not implemented in this meter; reading it takes {needs}, and this crate forbids unsafe code and links no binding that makes it; {instead}"),
        )
    } else {
        Decline::new(
            "not-available-on-platform",
            format!("{what}: exists only on macOS, not on this platform ({}); {instead}", std::env::consts::OS),
        )
    };
    rung_report(rung, RungStatus::Unavailable, d, vec![], vec![])
}

/// A rung's report from its decline (or its reason for being chosen).
fn rung_report(
    rung: RungId,
    status: RungStatus,
    d: Decline,
    counters: Vec<CounterReport>,
    notes: Vec<String>,
) -> RungReport {
    RungReport {
        rung,
        title: rung.title(),
        status,
        provenance: rung.provenance(),
        coverage: rung.coverage(),
        code: d.code,
        why: d.why,
        fix: d.fix,
        counters,
        notes,
    }
}

/// A rung that can meter (rung 5 or 6): chosen when nothing above it was, standby below the chosen one.
fn choose_unless_chosen(chosen: &mut Option<RungId>, rung: RungId, why: String) -> (RungStatus, Decline) {
    if chosen.is_some() {
        (RungStatus::Standby, Decline::new("standby", why))
    } else {
        *chosen = Some(rung);
        (RungStatus::Chosen, Decline::new("chosen", why))
    }
}

impl Meter {
    /// Walks the ladder and chooses a rung (§5.1). Re-probing resets the windows' baseline.
    pub fn probe(&mut self) -> &ProbeReport {
        let clock = Arc::clone(&self.backends.clock);
        let started_ns = clock.now_ns();
        self.active = None;
        let (mut rungs, mut chosen) = self.probe_counter_rungs();
        let (status, d) = self.calibrated_rung(&mut chosen);
        rungs.push(rung_report(RungId::Calibrated, status, d, vec![], vec![]));
        let (status, d) = self.estimate_rung(&mut chosen);
        rungs.push(rung_report(RungId::Estimate, status, d, vec![], vec![]));
        // Rungs 3 and 4 are not read by this meter: recorded, never imitated.
        let on_macos = cfg!(target_os = "macos");
        rungs.push(platform_unavailable(RungId::ProcessEnergy, on_macos, chosen));
        rungs.push(platform_unavailable(RungId::Ioreport, on_macos, chosen));
        rungs.sort_by_key(|r| r.rung);
        let ended_ns = clock.now_ns();
        // Prime utilisation so the first window's figure covers the window only.
        let _ = self.backends.util.sample(ended_ns);
        self.last_end = ended_ns;
        &*self.report.insert(ProbeReport {
            host: self.backends.host.clone(),
            platform: std::env::consts::OS,
            chosen,
            rungs,
            started_ns,
            ended_ns,
        })
    }

    /// The counter rungs, best first: each is probed until one is chosen; those below it stand by unprobed.
    fn probe_counter_rungs(&mut self) -> (Vec<RungReport>, Option<RungId>) {
        let mut rungs = Vec::new();
        let mut chosen: Option<RungId> = None;
        for index in 0..self.backends.counters.len() {
            let rung = self.backends.counters[index].rung();
            if let Some(c) = chosen {
                let d = Decline::new("not-probed", format!("not probed: rung `{c}` above it was chosen"));
                rungs.push(rung_report(rung, RungStatus::Standby, d, vec![], vec![]));
                continue;
            }
            let (result, counters) = self.probe_counter(index);
            let notes = self.backends.counters[index].notes();
            match result {
                Ok(active) => {
                    let why = format!(
                        "every counter ({}) live over the probe{}",
                        active.infos.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", "),
                        if rung == RungId::Nvml { " and not refuted by the board's bounds" } else { "" }
                    );
                    rungs.push(rung_report(rung, RungStatus::Chosen, Decline::new("chosen", why), counters, notes));
                    chosen = Some(rung);
                    self.active = Some(active);
                }
                Err(d) => rungs.push(rung_report(rung, RungStatus::Declined, d, counters, notes)),
            }
        }
        (rungs, chosen)
    }

    /// Rung 5: time × a power calibrated on this host, if a calibration measured here is loaded.
    fn calibrated_rung(&mut self, chosen: &mut Option<RungId>) -> (RungStatus, Decline) {
        self.calibration_ok = false;
        match &self.config.calibration {
            None => (RungStatus::Declined, Decline::new("no-calibration", "no host calibration is loaded").with_fix("Run `jcp meter calibrate` on this host while a RAPL counter is live, then pass the file with --calibration.")),
            Some(c) => match c.check_host(&self.backends.host) {
                Ok(()) => {
                    self.calibration_ok = true;
                    let why = format!("{} measured on this host against {} ({})", fmt_mw(c.active_mw), c.source.rung, c.source.counters.join(", "));
                    choose_unless_chosen(chosen, RungId::Calibrated, why)
                }
                Err(e) => (RungStatus::Declined, Decline::new("calibration-measured-elsewhere", e.to_string()).with_fix("Calibrate again on this host: another host's calibration is only an estimate here.")),
            },
        }
    }

    /// Rung 6: utilisation × the documented default power, unless the estimate is switched off.
    fn estimate_rung(&self, chosen: &mut Option<RungId>) -> (RungStatus, Decline) {
        if !self.config.estimate_fallback {
            return (
                RungStatus::Declined,
                Decline::new(
                    "estimate-disabled",
                    "the estimate is switched off: windows nothing above can meter are gaps",
                ),
            );
        }
        let e = &self.config.estimator;
        let why = format!(
            "utilisation x documented default power ({} + {} per logical CPU at full load, {} logical CPUs); nothing calibrated it",
            fmt_mw(e.base_mw),
            fmt_mw(e.per_cpu_mw),
            self.backends.util.logical_cpus()
        );
        choose_unless_chosen(chosen, RungId::Estimate, why)
    }

    /// Probes counter rung `index`: opens it, samples every counter over the
    /// probe at the rung's sample step ([`super::sample_step_ns`]), and admits
    /// it only if every counter is live (§5.1), no interval could have hidden
    /// a wrap, and no counter is refuted by the board's bounds (§5.6).
    fn probe_counter(&mut self, index: usize) -> (Result<Active, Decline>, Vec<CounterReport>) {
        let clock = Arc::clone(&self.backends.clock);
        let cfg = &self.config;
        let backend = &mut self.backends.counters[index];
        let rung = backend.rung();
        let infos = match backend.open() {
            Ok(i) => i,
            Err(d) => return (Err(d), vec![]),
        };
        let mut limits = backend.power_limits_mw();
        limits.resize(infos.len(), None);
        let burn = backend.probe_burns_cpu();
        let step_ns = sample_step_ns(cfg.probe_step, &infos, &limits);
        let pace = ProbePace::new(cfg, step_ns);
        let read = sample_probe(backend.as_mut(), clock.as_ref(), pace, infos.len(), burn);
        let mut reports: Vec<CounterReport> =
            infos.iter().map(|i| CounterReport { info: i.clone(), liveness: None, plausibility: None }).collect();
        let (samples, draws) = match read {
            Ok(s) => s,
            Err(e) => {
                let why = format!("a counter read failed during the liveness probe: {e}");
                return (Err(Decline::new(read_failed_code(rung), why)), reports);
            }
        };
        if let Err(d) = judge_liveness(cfg.liveness, pace, rung, burn, &infos, &samples, &mut reports) {
            return (Err(d), reports);
        }
        let wrap_bounds: Vec<u64> = limits.iter().map(|l| wrap_bound_mw(*l)).collect();
        if let Err(d) = judge_wraps(&infos, &samples, &wrap_bounds) {
            return (Err(d), reports);
        }
        let draw_exposed: Vec<bool> =
            draws.iter().map(|d| d.iter().any(|d| !matches!(d, DrawReading::NotExposed))).collect();
        let bounds = ProbeBounds { limits: &limits, draw_exposed: &draw_exposed, draws: &draws };
        if let Err(d) = judge_plausibility(&infos, &samples, &bounds, &mut reports) {
            return (Err(d), reports);
        }
        let live = (0..infos.len()).map(|c| seed_liveness(cfg.liveness, &samples, c)).collect();
        let baseline = samples.last_read();
        (Ok(Active { index, infos, limits, draw_exposed, baseline, step_ns, wrap_bounds, live }), reports)
    }
}

/// The probe's pace: its sample step and how many intervals it takes. Where
/// the rung's sample step is shorter than the configured probe step (a
/// wrapping counter that could run round its range faster), the probe takes
/// more, shorter intervals over the same span.
#[derive(Debug, Clone, Copy)]
struct ProbePace {
    /// The sample step.
    step: Duration,
    /// The number of intervals.
    intervals: usize,
}

impl ProbePace {
    fn new(cfg: &MeterConfig, step_ns: u64) -> Self {
        let span = u128::from(u64::try_from(cfg.probe_step.as_nanos()).unwrap_or(u64::MAX))
            * u128::try_from(cfg.probe_intervals).unwrap_or(u128::MAX);
        let intervals = span.div_ceil(u128::from(step_ns.max(1)));
        Self {
            step: Duration::from_nanos(step_ns),
            intervals: usize::try_from(intervals).unwrap_or(usize::MAX).max(cfg.probe_intervals),
        }
    }
}

/// A counter's liveness over the life of the meter, seeded with the probe's intervals.
fn seed_liveness(rule: LivenessRule, samples: &CounterSamples, c: usize) -> LiveTracker {
    let mut live = LiveTracker::new(rule);
    for (t, v) in samples.times.windows(2).zip(samples.of(c).windows(2)) {
        live.observe(t[1].saturating_sub(t[0]), v[1] != v[0]);
    }
    live
}

/// §5.1 wraparound: a probe interval long enough for a wrapping counter to
/// run round its whole range unseen (the probing thread was held up) leaves
/// the probe's figures unknown; the rung is declined.
fn judge_wraps(infos: &[CounterInfo], samples: &CounterSamples, wrap_bounds: &[u64]) -> Result<(), Decline> {
    let mut hidden = Vec::new();
    for (c, info) in infos.iter().enumerate() {
        let Some(max) = info.max_range_uj else { continue };
        if let Some(gap) = samples.hidden_wrap_gap_ns(c, max, wrap_bounds[c]) {
            hidden.push(format!(
                "{}: {gap} ns between two reads, time enough at up to {} to run round its {max} µJ range unseen",
                info.name,
                fmt_mw(wrap_bounds[c])
            ));
        }
    }
    if hidden.is_empty() {
        return Ok(());
    }
    Err(Decline::new(
        "counter-wrap-unobservable",
        format!("a wrap may be missing from the probe: {}", hidden.join("; ")),
    ))
}

/// Reads every counter `pace.intervals + 1` times, `pace.step` apart
/// (burning CPU in between where the rung asks), and the board draw after
/// each step; fails on the first read that fails.
fn sample_probe(
    backend: &mut dyn CounterBackend,
    clock: &dyn Clock,
    pace: ProbePace,
    n: usize,
    burn: bool,
) -> Result<(CounterSamples, Vec<Vec<DrawReading>>), String> {
    let mut samples = CounterSamples::with_capacity(n, pace.intervals + 1);
    let mut draws: Vec<Vec<DrawReading>> = vec![Vec::new(); n];
    for step in 0..=pace.intervals {
        if step > 0 {
            clock.pause(pace.step, burn);
        }
        let t = clock.now_ns();
        match backend.read(t)? {
            v if v.len() == n => samples.record(t, v),
            v => return Err(format!("a read gave {} values for {n} counters", v.len())),
        }
        if step > 0 {
            for (c, d) in backend.read_draw(t).into_iter().take(n).enumerate() {
                draws[c].push(d);
            }
        }
    }
    Ok((samples, draws))
}

/// §5.1 liveness: every counter must have advanced by the rule over the probe.
fn judge_liveness(
    rule: LivenessRule,
    pace: ProbePace,
    rung: RungId,
    burn: bool,
    infos: &[CounterInfo],
    samples: &CounterSamples,
    reports: &mut [CounterReport],
) -> Result<(), Decline> {
    let mut not_live = Vec::new();
    for (c, info) in infos.iter().enumerate() {
        let l = judge(rule, &info.name, &samples.times, samples.of(c), info.max_range_uj);
        if !l.status.is_live() {
            not_live.push(format!(
                "{} {}",
                info.name,
                serde_json::to_value(&l.status)
                    .ok()
                    .and_then(|v| v.get("status").and_then(|s| s.as_str().map(str::to_owned)))
                    .unwrap_or_default()
            ));
        }
        reports[c].liveness = Some(l);
    }
    if not_live.is_empty() {
        return Ok(());
    }
    let what = if burn { "under the probe's CPU burn" } else { "over the probe" };
    Err(Decline::new(
        not_live_code(rung),
        format!(
            "not every counter was live {what} ({} intervals of {:?}; the rule: advancing in at least 5 intervals, 4 of every 5, over 300 ms): {}",
            pace.intervals,
            pace.step,
            not_live.join("; ")
        ),
    ))
}

/// What the board says about each counter at the probe.
struct ProbeBounds<'a> {
    /// Each counter's power limit, mW, where readable.
    limits: &'a [Option<u64>],
    /// Whether each counter's board draw was exposed.
    draw_exposed: &'a [bool],
    /// Each counter's draw readings over the probe.
    draws: &'a [Vec<DrawReading>],
}

/// §5 plausibility: a live counter whose advance the board's bounds refute
/// (or cannot judge) is not admitted. Each counter keeps its own verdict,
/// with its rate and the bound, in its report; the rung's code is
/// `counter-implausible` where any counter broke a bound (a finding about a
/// counter) and `counter-unjudgeable` only where every refused counter was
/// unjudgeable (no finding at all), however many there are.
fn judge_plausibility(
    infos: &[CounterInfo],
    samples: &CounterSamples,
    bounds: &ProbeBounds<'_>,
    reports: &mut [CounterReport],
) -> Result<(), Decline> {
    let span = samples.span_ns();
    let mut refused = Vec::new();
    let mut implausible = false;
    for (c, info) in infos.iter().enumerate() {
        let delta = samples.advance_uj(c, info);
        let p = plausibility_of(delta, span, bounds.limits[c], bounds.draw_exposed[c], &bounds.draws[c]);
        if let Some(p) = &p {
            if !p.admits() {
                implausible |= matches!(p, Plausibility::Implausible { .. });
                refused.push(format!("{}: {}", info.name, p.describe()));
            }
        }
        reports[c].plausibility = p;
    }
    if refused.is_empty() {
        return Ok(());
    }
    let code = if implausible { "counter-implausible" } else { "counter-unjudgeable" };
    Err(Decline::new(code, format!("live, but not admissible (§5 plausibility): {}", refused.join("; "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s5_1_rungs_3_and_4_on_macos_are_not_implemented_here_not_absent() {
        for rung in [RungId::ProcessEnergy, RungId::Ioreport] {
            let r = platform_unavailable(rung, true, Some(RungId::Estimate));
            assert_eq!((r.status, r.code), (RungStatus::Unavailable, "not-implemented"));
            assert!(!r.why.contains("exists only on macOS"), "false on a Mac: {}", r.why);
            assert!(r.why.contains("not implemented in this meter"), "{}", r.why);
            assert!(r.why.contains("forbids unsafe code"), "why not: {}", r.why);
            assert!(r.why.contains(RungId::Estimate.title()), "what meters instead: {}", r.why);
            let r = platform_unavailable(rung, false, Some(RungId::Rapl));
            assert_eq!(r.code, "not-available-on-platform");
            assert!(r.why.contains("exists only on macOS") && r.why.contains(RungId::Rapl.title()), "{}", r.why);
        }
        let r = platform_unavailable(RungId::Ioreport, true, None);
        assert!(r.why.contains("they are gaps"), "{}", r.why);
    }
}
