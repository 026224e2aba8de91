//! The ladder (§5.1) and live windows.
//!
//! [`Meter::probe`] walks the ladder best first: it opens each counter rung,
//! watches every counter of it for liveness (§5) — burning CPU on the probing
//! thread for RAPL — checks plausibility where a bound is readable, and
//! chooses the first rung that passes. Every rung gets a [`RungReport`]:
//! chosen, declined (with the code, why and the fix), unavailable on this
//! platform, or standby below the chosen one.
//!
//! [`Meter::next_window`] then waits out one window and meters it: integer µJ,
//! provenance and coverage, monotonic start and end, the rung that metered it
//! and every rung above that one with why it did not. A counter rung whose
//! counter fails the window (a read error, a counter that did not advance, a
//! reset, an implausible rate) degrades that window to rung 5 or 6: the grade
//! goes down, never stays. With the estimate switched off and no calibration,
//! such a window is a gap: no figure, never a zero.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use jcp::energy::{Coverage, Energy, Provenance};
use serde::Serialize;

use crate::backend::{CounterBackend, CounterInfo, Decline, DrawReading, RungId};
use crate::clock::{Clock, MonotonicClock};
use crate::estimate::{energy_uj, Calibration, CalibrationSource, EstimatorConfig, HostId, SysinfoUtil, UtilSource};
use crate::liveness::{judge, CounterLiveness, LivenessRule};
use crate::plausibility::{check, BoundInput, Plausibility};
use crate::rapl::{wrap_delta, RaplReader};
use crate::Error;

/// How the meter runs.
#[derive(Debug, Clone)]
pub struct MeterConfig {
    /// Window length (default 1 s).
    pub interval: Duration,
    /// The liveness probe's sample interval (default 50 ms).
    pub probe_step: Duration,
    /// The liveness probe's number of intervals (default 8: 400 ms).
    pub probe_intervals: usize,
    /// Draw samples per window where a counter's board draw is exposed (default 4).
    pub draw_samples_per_window: u32,
    /// The liveness rule (default [`LivenessRule::SPEC`]).
    pub liveness: LivenessRule,
    /// The estimator's default power.
    pub estimator: EstimatorConfig,
    /// A host calibration for rung 5.
    pub calibration: Option<Calibration>,
    /// Whether rung 6 meters what nothing above could (default true). Off,
    /// such windows are gaps.
    pub estimate_fallback: bool,
}

impl Default for MeterConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            probe_step: Duration::from_millis(50),
            probe_intervals: 8,
            draw_samples_per_window: 4,
            liveness: LivenessRule::SPEC,
            estimator: EstimatorConfig::default(),
            calibration: None,
            estimate_fallback: true,
        }
    }
}

impl MeterConfig {
    /// Refuses intervals the meter cannot keep.
    pub fn validate(&self) -> Result<(), Error> {
        if self.interval < Duration::from_millis(10) || self.interval > Duration::from_secs(3600) {
            return Err(Error::BadInterval { detail: format!("window {:?} is outside 10 ms ..= 1 h", self.interval) });
        }
        if self.probe_step.is_zero() || self.probe_intervals == 0 {
            return Err(Error::BadInterval {
                detail: "the liveness probe needs at least one interval of non-zero length".into(),
            });
        }
        if self.draw_samples_per_window == 0 {
            return Err(Error::BadInterval { detail: "at least one draw sample per window".into() });
        }
        Ok(())
    }
}

/// Everything the meter reads: counter rungs in ladder order, utilisation, the clock, this host.
#[derive(Debug)]
pub struct Backends {
    /// Counter rungs, best first.
    pub counters: Vec<Box<dyn CounterBackend>>,
    /// CPU utilisation for the estimate.
    pub util: Box<dyn UtilSource>,
    /// The monotonic clock.
    pub clock: Arc<dyn Clock>,
    /// Where this meter runs.
    pub host: HostId,
}

impl Backends {
    /// The real hardware: RAPL under `powercap_root`, NVML, sysinfo, the monotonic clock.
    pub fn system(powercap_root: &Path) -> Self {
        Self {
            counters: vec![Box::new(RaplReader::new(powercap_root)), Box::new(crate::nvml::NvmlReader::new())],
            util: Box::new(SysinfoUtil::new()),
            clock: Arc::new(MonotonicClock::new()),
            host: HostId::this_host(),
        }
    }
}

/// What became of a rung at the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RungStatus {
    /// The rung meters the windows.
    Chosen,
    /// The rung was tried and declined.
    Declined,
    /// The rung does not exist on this platform.
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
    /// Where.
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

/// A rung above the one that metered a window, and why it did not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowDecline {
    /// The rung.
    pub rung: RungId,
    /// A stable reason code (owned, so a recorded session reads back: [`crate::session`]).
    pub code: String,
    /// Why.
    pub why: String,
}

/// One counter's advance over a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterDelta {
    /// The counter.
    pub counter: String,
    /// Its advance, µJ (`None` where it could not be read).
    pub delta_uj: Option<u64>,
    /// Whether it wrapped inside the window.
    pub wrapped: bool,
    /// Its plausibility, where judged.
    pub plausibility: Option<Plausibility>,
}

/// One metered window. Every row carries its provenance and coverage; a gap
/// carries neither, and no energy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Window {
    /// 0, 1, 2, …
    pub seq: u64,
    /// Monotonic start, ns since the meter's epoch.
    pub start_ns: u64,
    /// Monotonic end, ns.
    pub end_ns: u64,
    /// Wall-clock start, Unix ms (display only).
    pub start_unix_ms: u64,
    /// Wall-clock end, Unix ms (display only).
    pub end_unix_ms: u64,
    /// Integer µJ; `None` for a gap.
    pub energy_uj: Option<u64>,
    /// How the figure was obtained; `None` for a gap.
    pub provenance: Option<Provenance>,
    /// How much it covers; `None` for a gap.
    pub coverage: Option<Coverage>,
    /// The rung that metered it.
    pub rung: Option<RungId>,
    /// Every rung above `rung`, with why it did not meter this window.
    pub declined: Vec<WindowDecline>,
    /// Why there is no figure, for a gap.
    pub gap: Option<String>,
    /// The counter rung's per-counter advances, where one was read.
    pub counters: Vec<CounterDelta>,
    /// CPU utilisation over the window, ‰, where read.
    pub util_permille: Option<u32>,
    /// Anything else the figure rests on (e.g. an assumed full load).
    pub note: Option<String>,
}

impl Window {
    /// The figure as a core [`Energy`]; `None` for a gap.
    pub fn energy(&self) -> Option<Energy> {
        Some(Energy { uj: self.energy_uj?, provenance: self.provenance?, coverage: self.coverage? })
    }

    /// The window's length, ns.
    pub fn span_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

#[derive(Debug)]
struct Active {
    index: usize,
    infos: Vec<CounterInfo>,
    limits: Vec<Option<u64>>,
    draw_exposed: Vec<bool>,
    baseline: Option<(u64, Vec<u64>)>,
}

/// The meter: probe once, then take windows.
#[derive(Debug)]
pub struct Meter {
    config: MeterConfig,
    backends: Backends,
    report: Option<ProbeReport>,
    active: Option<Active>,
    calibration_ok: bool,
    last_end: u64,
    seq: u64,
}

fn not_live_code(r: RungId) -> &'static str {
    match r {
        RungId::Nvml => "nvml-not-live",
        _ => "rapl-not-live",
    }
}

fn read_failed_code(r: RungId) -> &'static str {
    match r {
        RungId::Nvml => "nvml-read-failed",
        _ => "rapl-read-failed",
    }
}

fn platform_unavailable(rung: RungId) -> RungReport {
    let why = match rung {
        RungId::ProcessEnergy => {
            "per-process CPU energy (proc_pid_rusage ri_energy_nj) exists only on macOS; not available on this platform"
        }
        _ => "Apple IOReport energy counters exist only on macOS; not available on this platform",
    };
    RungReport {
        rung,
        title: rung.title(),
        status: RungStatus::Unavailable,
        provenance: rung.provenance(),
        coverage: rung.coverage(),
        code: "not-available-on-platform",
        why: why.into(),
        fix: None,
        counters: vec![],
        notes: vec![],
    }
}

impl Meter {
    /// A meter over `backends`.
    pub fn new(config: MeterConfig, backends: Backends) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self { config, backends, report: None, active: None, calibration_ok: false, last_end: 0, seq: 0 })
    }

    /// The real hardware with `config`, RAPL under `powercap_root`.
    pub fn system(config: MeterConfig, powercap_root: &Path) -> Result<Self, Error> {
        Self::new(config, Backends::system(powercap_root))
    }

    /// The configuration.
    pub fn config(&self) -> &MeterConfig {
        &self.config
    }

    /// The last probe's report.
    pub fn report(&self) -> Option<&ProbeReport> {
        self.report.as_ref()
    }

    /// The host this meter runs on.
    pub fn host(&self) -> &HostId {
        &self.backends.host
    }

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

    /// Walks the ladder and chooses a rung (§5.1). Re-probing resets the windows' baseline.
    pub fn probe(&mut self) -> &ProbeReport {
        let clock = Arc::clone(&self.backends.clock);
        let started_ns = clock.now_ns();
        self.active = None;
        let mut rungs = Vec::new();
        let mut chosen: Option<RungId> = None;
        for index in 0..self.backends.counters.len() {
            let rung = self.backends.counters[index].rung();
            if let Some(c) = chosen {
                let d = Decline::new("not-probed", format!("not probed: rung `{c}` above it was chosen"));
                rungs.push(Self::rung_report(rung, RungStatus::Standby, d, vec![], vec![]));
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
                    rungs.push(Self::rung_report(
                        rung,
                        RungStatus::Chosen,
                        Decline::new("chosen", why),
                        counters,
                        notes,
                    ));
                    chosen = Some(rung);
                    self.active = Some(active);
                }
                Err(d) => rungs.push(Self::rung_report(rung, RungStatus::Declined, d, counters, notes)),
            }
        }
        // Rungs 3 and 4 exist only on macOS: recorded, never imitated.
        rungs.push(platform_unavailable(RungId::ProcessEnergy));
        rungs.push(platform_unavailable(RungId::Ioreport));
        rungs.sort_by_key(|r| r.rung);
        // Rung 5.
        self.calibration_ok = false;
        let cal = match &self.config.calibration {
            None => (RungStatus::Declined, Decline::new("no-calibration", "no host calibration is loaded").with_fix("Run `jcp meter calibrate` on this host while a RAPL counter is live, then pass the file with --calibration.")),
            Some(c) => match c.check_host(&self.backends.host) {
                Ok(()) => {
                    self.calibration_ok = true;
                    let why = format!("{} measured on this host against {} ({})", crate::plausibility::fmt_mw(c.active_mw), c.source.rung, c.source.counters.join(", "));
                    if chosen.is_some() {
                        (RungStatus::Standby, Decline::new("standby", why))
                    } else {
                        chosen = Some(RungId::Calibrated);
                        (RungStatus::Chosen, Decline::new("chosen", why))
                    }
                }
                Err(e) => (RungStatus::Declined, Decline::new("calibration-measured-elsewhere", e.to_string()).with_fix("Calibrate again on this host: another host's calibration is only an estimate here.")),
            },
        };
        rungs.push(Self::rung_report(RungId::Calibrated, cal.0, cal.1, vec![], vec![]));
        // Rung 6.
        let est = if self.config.estimate_fallback {
            let e = &self.config.estimator;
            let why = format!(
                "utilisation x documented default power ({} + {} per logical CPU at full load, {} logical CPUs); nothing calibrated it",
                crate::plausibility::fmt_mw(e.base_mw),
                crate::plausibility::fmt_mw(e.per_cpu_mw),
                self.backends.util.logical_cpus()
            );
            if chosen.is_some() {
                (RungStatus::Standby, Decline::new("standby", why))
            } else {
                chosen = Some(RungId::Estimate);
                (RungStatus::Chosen, Decline::new("chosen", why))
            }
        } else {
            (
                RungStatus::Declined,
                Decline::new(
                    "estimate-disabled",
                    "the estimate is switched off: windows nothing above can meter are gaps",
                ),
            )
        };
        rungs.push(Self::rung_report(RungId::Estimate, est.0, est.1, vec![], vec![]));
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

    fn probe_counter(&mut self, index: usize) -> (Result<Active, Decline>, Vec<CounterReport>) {
        let clock = Arc::clone(&self.backends.clock);
        let cfg = self.config.clone();
        let backend = &mut self.backends.counters[index];
        let rung = backend.rung();
        let infos = match backend.open() {
            Ok(i) => i,
            Err(d) => return (Err(d), vec![]),
        };
        let mut limits = backend.power_limits_mw();
        limits.resize(infos.len(), None);
        let burn = backend.probe_burns_cpu();
        let n = infos.len();
        let mut times = Vec::with_capacity(cfg.probe_intervals + 1);
        let mut values: Vec<Vec<u64>> = vec![Vec::with_capacity(cfg.probe_intervals + 1); n];
        let mut draws: Vec<Vec<DrawReading>> = vec![Vec::new(); n];
        let mut failure = None;
        for step in 0..=cfg.probe_intervals {
            if step > 0 {
                clock.pause(cfg.probe_step, burn);
            }
            let t = clock.now_ns();
            match backend.read(t) {
                Ok(v) if v.len() == n => {
                    times.push(t);
                    for (c, x) in v.into_iter().enumerate() {
                        values[c].push(x);
                    }
                }
                Ok(v) => {
                    failure = Some(format!("a read gave {} values for {n} counters", v.len()));
                    break;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
            if step > 0 {
                for (c, d) in backend.read_draw(t).into_iter().take(n).enumerate() {
                    draws[c].push(d);
                }
            }
        }
        let mut reports: Vec<CounterReport> =
            infos.iter().map(|i| CounterReport { info: i.clone(), liveness: None, plausibility: None }).collect();
        if let Some(e) = failure {
            return (
                Err(Decline::new(
                    read_failed_code(rung),
                    format!("a counter read failed during the liveness probe: {e}"),
                )),
                reports,
            );
        }
        let mut not_live = Vec::new();
        for (c, info) in infos.iter().enumerate() {
            let l = judge(cfg.liveness, &info.name, &times, &values[c], info.max_range_uj);
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
        if !not_live.is_empty() {
            let what = if burn { "under the probe's CPU burn" } else { "over the probe" };
            return (
                Err(Decline::new(
                    not_live_code(rung),
                    format!(
                        "not every counter was live {what} ({} intervals of {:?}; the rule: advancing in at least 5 intervals, 4 of every 5, over 300 ms): {}",
                        cfg.probe_intervals,
                        cfg.probe_step,
                        not_live.join("; ")
                    ),
                )),
                reports,
            );
        }
        let draw_exposed: Vec<bool> =
            (0..n).map(|c| draws[c].iter().any(|d| !matches!(d, DrawReading::NotExposed))).collect();
        let span = times.last().copied().unwrap_or(0).saturating_sub(times.first().copied().unwrap_or(0));
        let mut refused = Vec::new();
        let mut unjudgeable = false;
        for (c, info) in infos.iter().enumerate() {
            let delta = values[c]
                .windows(2)
                .map(|w| wrap_delta(w[0], w[1], info.max_range_uj.unwrap_or(u64::MAX)))
                .fold(0u64, u64::saturating_add);
            let p = plausibility_of(delta, span, limits[c], draw_exposed[c], &draws[c]);
            if let Some(p) = &p {
                if !p.admits() {
                    unjudgeable |= matches!(p, Plausibility::Unjudgeable { .. });
                    refused.push(format!("{}: {}", info.name, p.describe()));
                }
            }
            reports[c].plausibility = p;
        }
        if !refused.is_empty() {
            let code = if unjudgeable && refused.len() == 1 { "counter-unjudgeable" } else { "counter-implausible" };
            return (
                Err(Decline::new(code, format!("live, but not admissible (§5 plausibility): {}", refused.join("; ")))),
                reports,
            );
        }
        let baseline = times.last().map(|&t| (t, values.iter().map(|v| v.last().copied().unwrap_or(0)).collect()));
        (Ok(Active { index, infos, limits, draw_exposed, baseline }), reports)
    }

    /// Waits until the current window ends and meters it. Probes first if
    /// [`Meter::probe`] was not called.
    #[allow(clippy::too_many_lines)]
    pub fn next_window(&mut self) -> Window {
        if self.report.is_none() {
            self.probe();
        }
        let clock = Arc::clone(&self.backends.clock);
        let interval = u64::try_from(self.config.interval.as_nanos()).unwrap_or(u64::MAX);
        let start = self.last_end;
        let target = start.saturating_add(interval);
        // Draw samples inside the window where a board draw is exposed.
        let k = if self.active.as_ref().is_some_and(|a| a.draw_exposed.iter().any(|e| *e)) {
            self.config.draw_samples_per_window
        } else {
            1
        };
        let n_counters = self.active.as_ref().map_or(0, |a| a.infos.len());
        let mut draws: Vec<Vec<DrawReading>> = vec![Vec::new(); n_counters];
        for step in 1..=k {
            let due = start.saturating_add(interval / u64::from(k) * u64::from(step));
            let due = if step == k { target } else { due };
            let now = clock.now_ns();
            if due > now {
                clock.pause(Duration::from_nanos(due - now), false);
            }
            if k > 1 {
                if let Some(a) = &self.active {
                    let t = clock.now_ns();
                    for (c, d) in self.backends.counters[a.index].read_draw(t).into_iter().take(n_counters).enumerate()
                    {
                        draws[c].push(d);
                    }
                }
            }
        }
        let end = clock.now_ns().max(start);
        let util = self.backends.util.sample(end);
        let mut declined: Vec<WindowDecline> = Vec::new();
        let mut counters = Vec::new();
        let mut hw: Option<(u64, RungId)> = None;
        if let Some(active) = self.active.as_mut() {
            let rung = self.backends.counters[active.index].rung();
            match counter_window(&mut *self.backends.counters[active.index], active, start, end, &draws) {
                Ok((total, deltas)) => {
                    counters = deltas;
                    hw = Some((total, rung));
                }
                Err((code, why, deltas)) => {
                    counters = deltas;
                    declined.push(WindowDecline { rung, code: code.to_owned(), why });
                }
            }
        }
        let report = self.report.as_ref();
        let probe_declines = |below: RungId, skip: Option<RungId>| -> Vec<WindowDecline> {
            report
                .map(|r| {
                    r.rungs
                        .iter()
                        .filter(|x| x.rung < below && Some(x.rung) != skip)
                        .map(|x| WindowDecline { rung: x.rung, code: x.code.to_owned(), why: x.why.clone() })
                        .collect()
                })
                .unwrap_or_default()
        };
        let degraded_rung = declined.first().map(|d| d.rung);
        let mut w = Window {
            seq: self.seq,
            start_ns: start,
            end_ns: end,
            start_unix_ms: clock.unix_ms_at(start),
            end_unix_ms: clock.unix_ms_at(end),
            energy_uj: None,
            provenance: None,
            coverage: None,
            rung: None,
            declined: Vec::new(),
            gap: None,
            counters,
            util_permille: util,
            note: None,
        };
        let span = end - start;
        let metered_by = if let Some((uj, rung)) = hw {
            w.energy_uj = Some(uj);
            Some(rung)
        } else if self.calibration_ok {
            let mw = self.config.calibration.as_ref().map_or(0, |c| c.active_mw);
            w.energy_uj = Some(energy_uj(mw, span));
            Some(RungId::Calibrated)
        } else if self.config.estimate_fallback {
            let cpus = self.backends.util.logical_cpus();
            let permille = util.unwrap_or_else(|| {
                w.note = Some("utilisation unreadable: assumed full load".into());
                1000
            });
            w.energy_uj = Some(energy_uj(self.config.estimator.power_mw(permille, cpus), span));
            Some(RungId::Estimate)
        } else {
            None
        };
        let mut all_declines = probe_declines(metered_by.unwrap_or(RungId::Estimate), degraded_rung);
        all_declines.extend(declined);
        all_declines.sort_by_key(|d| d.rung);
        if let Some(rung) = metered_by {
            w.rung = Some(rung);
            w.provenance = Some(rung.provenance());
            w.coverage = Some(rung.coverage());
            w.declined = all_declines;
        } else {
            if let Some(r) = report.and_then(|r| r.rung(RungId::Estimate)) {
                all_declines.push(WindowDecline {
                    rung: RungId::Estimate,
                    code: r.code.to_owned(),
                    why: r.why.clone(),
                });
            }
            w.gap = Some("no rung could meter this window (no live counter, no host calibration, estimate off): a gap, not a zero".into());
            w.declined = all_declines;
        }
        self.last_end = end;
        self.seq += 1;
        w
    }

    /// Calibrates rung 5 against the chosen counter (§5.1): burns every
    /// logical CPU for `duration` while watching every counter stay live, and
    /// returns the measured active power with where it was measured. Refused
    /// unless RAPL (the CPU package domain) was chosen at the probe.
    pub fn calibrate(&mut self, duration: Duration, measured_at_unix_ms: u64) -> Result<Calibration, Error> {
        if self.report.is_none() {
            self.probe();
        }
        let report = self.report.as_ref().ok_or(Error::NoLiveCounter { detail: "no probe".into() })?;
        let Some(active) = self.active.as_ref() else {
            let why: Vec<String> = report
                .rungs
                .iter()
                .filter(|r| matches!(r.rung, RungId::Rapl | RungId::Nvml))
                .map(|r| format!("{}: {}", r.rung, r.why))
                .collect();
            return Err(Error::NoLiveCounter { detail: why.join("; ") });
        };
        let rung = self.backends.counters[active.index].rung();
        if rung != RungId::Rapl {
            return Err(Error::CalibrationWrongDomain {
                detail: format!(
                    "the live counter is `{rung}`, which reads the GPU, not the CPU work rung 5 stands in for"
                ),
            });
        }
        let infos = active.infos.clone();
        let clock = Arc::clone(&self.backends.clock);
        let steps = self.config.probe_intervals.max(5);
        let step = duration / u32::try_from(steps).unwrap_or(u32::MAX);
        let helpers = self.backends.util.logical_cpus().saturating_sub(1);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads: Vec<_> = (0..helpers)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(x.rotate_left(5) ^ 0x9e37);
                    }
                })
            })
            .collect();
        let backend = &mut self.backends.counters[active.index];
        let mut times = Vec::new();
        let mut values: Vec<Vec<u64>> = vec![Vec::new(); infos.len()];
        let mut failure = None;
        for s in 0..=steps {
            if s > 0 {
                clock.pause(step, true);
            }
            let t = clock.now_ns();
            match backend.read(t) {
                Ok(v) => {
                    times.push(t);
                    for (c, x) in v.into_iter().enumerate().take(infos.len()) {
                        values[c].push(x);
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in threads {
            let _ = t.join();
        }
        if let Some(e) = failure {
            return Err(Error::NoLiveCounter { detail: format!("a read failed while calibrating: {e}") });
        }
        calibration_from_samples(
            self.config.liveness,
            &infos,
            &times,
            &values,
            self.backends.host.clone(),
            None,
            format!("{} logical CPUs burning", helpers + 1),
            measured_at_unix_ms,
        )
    }
}

/// Builds a calibration from counter samples, requiring every counter live over them.
#[allow(clippy::too_many_arguments)]
pub fn calibration_from_samples(
    rule: LivenessRule,
    infos: &[CounterInfo],
    times: &[u64],
    values: &[Vec<u64>],
    host: HostId,
    trace: Option<String>,
    load: String,
    measured_at_unix_ms: u64,
) -> Result<Calibration, Error> {
    let mut total: u64 = 0;
    for (c, info) in infos.iter().enumerate() {
        let v = values.get(c).map_or(&[][..], Vec::as_slice);
        let l = judge(rule, &info.name, times, v, info.max_range_uj);
        if !l.status.is_live() {
            return Err(Error::NoLiveCounter {
                detail: format!("{} was not live while calibrating: {:?}", info.name, l.status),
            });
        }
        let delta = v
            .windows(2)
            .map(|w| wrap_delta(w[0], w[1], info.max_range_uj.unwrap_or(u64::MAX)))
            .fold(0u64, u64::saturating_add);
        total = total.checked_add(delta).ok_or(Error::Overflow { what: "calibration energy" })?;
    }
    let span = times.last().copied().unwrap_or(0).saturating_sub(times.first().copied().unwrap_or(0));
    let source =
        CalibrationSource { rung: RungId::Rapl, counters: infos.iter().map(|i| i.name.clone()).collect(), trace, load };
    Calibration::from_measurement(total, span, host, source, measured_at_unix_ms)
}

/// Calibrates from a recorded RAPL trace; the trace must say where it was recorded.
pub fn calibrate_from_trace(
    trace: &crate::trace::Trace,
    trace_id: String,
    measured_at_unix_ms: u64,
) -> Result<Calibration, Error> {
    if trace.rung != RungId::Rapl {
        return Err(Error::CalibrationWrongDomain {
            detail: format!(
                "the trace records `{}`; only RAPL package counters read the CPU domain rung 5 stands in for",
                trace.rung
            ),
        });
    }
    let host = trace.host.clone().ok_or_else(|| Error::CalibrationMalformed {
        detail: "the trace does not say which host it was recorded on; a calibration must say where it was measured"
            .into(),
    })?;
    let infos: Vec<CounterInfo> = trace
        .counters
        .iter()
        .map(|c| CounterInfo { name: c.name.clone(), source: "recorded trace".into(), max_range_uj: c.max_range_uj })
        .collect();
    let times: Vec<u64> = trace.samples.iter().map(|s| s.t_ns).collect();
    let mut values: Vec<Vec<u64>> = vec![Vec::new(); infos.len()];
    for s in &trace.samples {
        for (c, v) in s.uj.iter().enumerate() {
            let v = v.ok_or_else(|| Error::NoLiveCounter {
                detail: format!("{}: a read failed in the recording at {} ns", infos[c].name, s.t_ns),
            })?;
            values[c].push(v);
        }
    }
    calibration_from_samples(
        LivenessRule::SPEC,
        &infos,
        &times,
        &values,
        host,
        Some(trace_id),
        "as recorded in the trace".into(),
        measured_at_unix_ms,
    )
}

fn plausibility_of(
    delta: u64,
    span: u64,
    limit: Option<u64>,
    draw_exposed: bool,
    draws: &[DrawReading],
) -> Option<Plausibility> {
    if limit.is_none() && !draw_exposed {
        return None;
    }
    let samples =
        draws.iter().filter_map(|d| if let DrawReading::Sample { mw } = d { Some(*mw) } else { None }).collect();
    Some(check(&BoundInput {
        counter_delta_uj: delta,
        span_ns: span,
        power_limit_mw: limit,
        draw_exposed,
        draw_samples_mw: samples,
    }))
}

type WindowFailure = (&'static str, String, Vec<CounterDelta>);

fn counter_window(
    backend: &mut dyn CounterBackend,
    active: &mut Active,
    start: u64,
    end: u64,
    draws: &[Vec<DrawReading>],
) -> Result<(u64, Vec<CounterDelta>), WindowFailure> {
    let rung = backend.rung();
    let names = || {
        active
            .infos
            .iter()
            .map(|i| CounterDelta { counter: i.name.clone(), delta_uj: None, wrapped: false, plausibility: None })
            .collect::<Vec<_>>()
    };
    let values = match backend.read(end) {
        Ok(v) if v.len() == active.infos.len() => v,
        Ok(v) => {
            active.baseline = None;
            return Err((
                read_failed_code(rung),
                format!("a read gave {} values for {} counters: the window degrades", v.len(), active.infos.len()),
                names(),
            ));
        }
        Err(e) => {
            active.baseline = None;
            return Err((
                read_failed_code(rung),
                format!("the counter read failed at the window's end ({e}): the window degrades"),
                names(),
            ));
        }
    };
    let baseline = active.baseline.replace((end, values.clone()));
    let Some((t0, before)) = baseline.filter(|(t, _)| *t == start) else {
        return Err((
            "no-baseline",
            "no counter reading at the window's start (the previous read failed): the window degrades".into(),
            names(),
        ));
    };
    let _ = t0;
    let mut deltas = Vec::with_capacity(values.len());
    let mut problems = Vec::new();
    let mut code = "counter-not-advancing";
    let mut total: u64 = 0;
    for (c, info) in active.infos.iter().enumerate() {
        let (a, b) = (before[c], values[c]);
        let (delta, wrapped) = match info.max_range_uj {
            Some(max) => (wrap_delta(a, b, max), b < a),
            None if b < a => {
                problems.push(format!("{} went from {a} to {b}: a reset, not a wrap", info.name));
                code = "counter-reset";
                deltas.push(CounterDelta {
                    counter: info.name.clone(),
                    delta_uj: None,
                    wrapped: false,
                    plausibility: None,
                });
                continue;
            }
            None => (b - a, false),
        };
        if delta == 0 {
            problems.push(format!("{} did not advance in this window", info.name));
        }
        let p = plausibility_of(
            delta,
            end - start,
            active.limits.get(c).copied().flatten(),
            active.draw_exposed.get(c).copied().unwrap_or(false),
            draws.get(c).map_or(&[][..], Vec::as_slice),
        );
        if let Some(p) = &p {
            if !p.admits() && problems.is_empty() {
                code = if matches!(p, Plausibility::Unjudgeable { .. }) {
                    "counter-unjudgeable"
                } else {
                    "counter-implausible"
                };
            }
            if !p.admits() {
                problems.push(format!("{}: {}", info.name, p.describe()));
            }
        }
        total = total.saturating_add(delta);
        deltas.push(CounterDelta { counter: info.name.clone(), delta_uj: Some(delta), wrapped, plausibility: p });
    }
    if problems.is_empty() {
        Ok((total, deltas))
    } else {
        Err((code, format!("{}: the window degrades", problems.join("; ")), deltas))
    }
}
