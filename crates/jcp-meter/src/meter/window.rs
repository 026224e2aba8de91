//! Windows (§5.1, §5.2): metering one window at the chosen rung, and
//! degrading it. Every window carries integer µJ, its provenance and coverage,
//! the rung that metered it and every rung above that one with why it did
//! not; a counter that fails the window degrades it to rung 5 or 6, and with
//! neither the window is a gap (no figure, never a zero).
//!
//! Inside a window every counter is read at the rung's sample step: each
//! interval is wrap-corrected on its own (so a window spanning many wraps
//! counts every one), checked for a wrap it was too long to rule out, and fed
//! to the counter's liveness over the life of the meter. A window's decline
//! names every counter's findings ([`CounterFinding`]), each kind apart.

use std::sync::Arc;
use std::time::Duration;

use jcp::energy::{Coverage, Energy, Provenance};
use serde::Serialize;

use super::{read_failed_code, Active, Meter};
use crate::backend::{CounterBackend, DrawReading, RungId};
use crate::clock::Clock;
use crate::estimate::energy_uj;
use crate::liveness::LiveStatus;
use crate::plausibility::{check, fmt_mw, BoundInput, BoundKind, Plausibility};
use crate::rapl::{may_hide_a_wrap, wrap_delta};

/// A rung above the one that metered a window, and why it did not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowDecline {
    /// The rung.
    pub rung: RungId,
    /// A stable reason code (owned, so a recorded session reads back: [`crate::session`]).
    /// Where several counters failed the window, the gravest of their
    /// findings' codes ([`CounterFault::code`], in [`CounterFault`]'s order).
    pub code: String,
    /// Why.
    pub why: String,
    /// Each counter's findings against the window, every counter's and every
    /// kind, never only the first (empty for a decline made at the probe or
    /// a read that failed for the whole rung).
    pub findings: Vec<CounterFinding>,
}

/// Why one counter cannot give a window a hardware grade (§5, §5.1). The
/// variants are in order of gravity: a window's decline code is its gravest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "code")]
pub enum CounterFault {
    /// It went backwards where it has no wrap range (NVML: a reset).
    #[serde(rename = "counter-reset")]
    Reset {
        /// The value before, µJ.
        from_uj: u64,
        /// The value after, µJ.
        to_uj: u64,
    },
    /// It did not advance across the window.
    #[serde(rename = "counter-not-advancing")]
    NotAdvancing,
    /// It was not live by the §5 rule throughout the window: it stopped
    /// advancing (or advanced in lumps) inside it, or had not yet shown
    /// itself live again after an earlier lapse.
    #[serde(rename = "counter-not-live")]
    NotLive {
        /// Its liveness status at the window's end ([`crate::liveness::LiveStatus::code`]).
        status: &'static str,
        /// Sample intervals inside the window.
        intervals: usize,
        /// Of those, the ones in which it advanced.
        advanced: usize,
    },
    /// An interval between two reads was long enough for the counter to run
    /// round its whole range unseen: a wrap may be missing from the figure.
    #[serde(rename = "counter-wrap-unobservable")]
    WrapUnobservable {
        /// The longest such interval, ns.
        gap_ns: u64,
        /// The rate the counter is taken not to exceed, mW ([`crate::rapl::wrap_bound_mw`]).
        bound_mw: u64,
        /// Its range, µJ.
        max_range_uj: u64,
    },
    /// Its rate broke a bound (§5 plausibility).
    #[serde(rename = "counter-implausible")]
    Implausible {
        /// The implied rate, mW.
        rate_mw: u64,
        /// The bound it broke.
        bound: BoundKind,
        /// The bound's value, mW.
        bound_mw: u64,
    },
    /// Its board's draw is exposed but no usable sample remained (§5
    /// plausibility): no finding about the counter, and no hardware grade.
    #[serde(rename = "counter-unjudgeable")]
    Unjudgeable {
        /// The implied rate, mW.
        rate_mw: u64,
        /// Why no yardstick remained.
        reason: String,
    },
}

impl CounterFault {
    /// The stable code (as serialised).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Reset { .. } => "counter-reset",
            Self::NotAdvancing => "counter-not-advancing",
            Self::NotLive { .. } => "counter-not-live",
            Self::WrapUnobservable { .. } => "counter-wrap-unobservable",
            Self::Implausible { .. } => "counter-implausible",
            Self::Unjudgeable { .. } => "counter-unjudgeable",
        }
    }

    /// The fault a plausibility verdict makes, where it does not admit the counter.
    pub fn of_plausibility(p: &Plausibility) -> Option<Self> {
        match p {
            Plausibility::Implausible { rate_mw, bound, bound_mw, .. } => {
                Some(Self::Implausible { rate_mw: *rate_mw, bound: *bound, bound_mw: *bound_mw })
            }
            Plausibility::Unjudgeable { rate_mw, reason, .. } => {
                Some(Self::Unjudgeable { rate_mw: *rate_mw, reason: reason.clone() })
            }
            Plausibility::NotRefuted { .. } | Plausibility::NoBound { .. } => None,
        }
    }

    /// Its place in the order of gravity (0 gravest).
    fn rank(&self) -> u8 {
        match self {
            Self::Reset { .. } => 0,
            Self::NotAdvancing => 1,
            Self::NotLive { .. } => 2,
            Self::WrapUnobservable { .. } => 3,
            Self::Implausible { .. } => 4,
            Self::Unjudgeable { .. } => 5,
        }
    }

    /// A one-line account for people.
    pub fn describe(&self) -> String {
        match self {
            Self::Reset { from_uj, to_uj } => format!("went from {from_uj} to {to_uj}: a reset, not a wrap"),
            Self::NotAdvancing => "did not advance in this window".into(),
            Self::NotLive { status, intervals, advanced } => format!(
                "not live throughout the window ({status}; advanced in {advanced} of its {intervals} sample intervals)"
            ),
            Self::WrapUnobservable { gap_ns, bound_mw, max_range_uj } => format!(
                "{gap_ns} ns between two reads: at up to {} it could have run round its {max_range_uj} µJ range unseen, so a wrap may be missing",
                fmt_mw(*bound_mw)
            ),
            Self::Implausible { rate_mw, bound, bound_mw } => {
                format!("implausible: rate {} breaks the {} of {}", fmt_mw(*rate_mw), bound.describe(), fmt_mw(*bound_mw))
            }
            Self::Unjudgeable { rate_mw, reason } => format!("unjudgeable (rate {}): {reason}", fmt_mw(*rate_mw)),
        }
    }
}

/// One counter's finding against a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterFinding {
    /// The counter.
    pub counter: String,
    /// What it did.
    #[serde(flatten)]
    pub fault: CounterFault,
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
    /// How many times it wrapped inside the window (each seen between two reads).
    pub wraps: u64,
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
        Some(Energy { uj: self.energy_uj?, provenance: self.provenance?, coverage: self.coverage?, measured: None })
    }

    /// The window's length, ns.
    pub fn span_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// What the chosen counter rung made of a window: its figure and rung, its
/// per-counter advances, and (when it failed the window) why.
struct CounterOutcome {
    /// The figure, µJ, and the rung that read it; `None` when the window degrades.
    metered: Option<(u64, RungId)>,
    /// Per-counter advances, where read.
    counters: Vec<CounterDelta>,
    /// Why the counter rung did not meter this window.
    declined: Vec<WindowDecline>,
}

/// One counter over a window, read at every sample.
#[derive(Debug, Clone, Default)]
struct CounterRun {
    /// Its advance, µJ, each interval wrap-corrected.
    delta: u64,
    /// Wraps seen.
    wraps: u64,
    /// The first decrease of a counter without a wrap range.
    reset: Option<(u64, u64)>,
    /// The longest interval that could have hidden a whole wrap, ns.
    hidden_gap_ns: Option<u64>,
    /// Whether it was live when the window opened.
    live_at_start: bool,
    /// Whether it fell out of the liveness rule (or was restarted) inside the window.
    lapsed: bool,
    /// Sample intervals inside the window.
    intervals: usize,
    /// Of those, the ones in which it advanced.
    advanced: usize,
}

/// Every counter of the chosen rung over one window, as sampled.
#[derive(Debug, Clone, Default)]
struct WindowRead {
    /// The first failed read inside the window.
    failed: Option<String>,
    /// Whether the window opened without a reading at its start.
    no_baseline: bool,
    /// Per counter.
    runs: Vec<CounterRun>,
}

impl WindowRead {
    /// A window opening at `start` over `active`'s counters.
    fn open(active: &Active, start: u64) -> Self {
        Self {
            failed: None,
            no_baseline: !matches!(&active.baseline, Some((t, _)) if *t == start),
            runs: active
                .live
                .iter()
                .map(|l| CounterRun { live_at_start: l.is_live(), ..CounterRun::default() })
                .collect(),
        }
    }
}

impl Meter {
    /// Waits until the current window ends and meters it. Probes first if
    /// [`Meter::probe`] was not called.
    pub fn next_window(&mut self) -> Window {
        if self.report.is_none() {
            self.probe();
        }
        let clock = Arc::clone(&self.backends.clock);
        let interval = u64::try_from(self.config.interval.as_nanos()).unwrap_or(u64::MAX);
        let start = self.last_end;
        let (end, read, draws) = self.sample_window(clock.as_ref(), start, interval);
        let util = self.backends.util.sample(end);
        let outcome = self.read_counter_rung(read, end - start, &draws);
        let degraded_rung = outcome.declined.first().map(|d| d.rung);
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
            counters: outcome.counters,
            util_permille: util,
            note: None,
        };
        let metered_by = self.figure(&mut w, outcome.metered, util, end - start);
        let mut all_declines = self.probe_declines(metered_by.unwrap_or(RungId::Estimate), degraded_rung);
        all_declines.extend(outcome.declined);
        all_declines.sort_by_key(|d| d.rung);
        if let Some(rung) = metered_by {
            w.rung = Some(rung);
            w.provenance = Some(rung.provenance());
            w.coverage = Some(rung.coverage());
        } else {
            if let Some(r) = self.report.as_ref().and_then(|r| r.rung(RungId::Estimate)) {
                all_declines.push(WindowDecline {
                    rung: RungId::Estimate,
                    code: r.code.to_owned(),
                    why: r.why.clone(),
                    findings: Vec::new(),
                });
            }
            w.gap = Some("no rung could meter this window (no live counter, no host calibration, estimate off): a gap, not a zero".into());
        }
        w.declined = all_declines;
        self.last_end = end;
        self.seq += 1;
        w
    }

    /// Waits out the window from `start` to `start + interval`, reading every
    /// counter of the chosen rung at its sample step and at the window's end,
    /// and the board draw `draw_samples_per_window` times where one is
    /// exposed. Returns the window's end (its last read), what the counters
    /// did, and each counter's draw readings.
    fn sample_window(
        &mut self,
        clock: &dyn Clock,
        start: u64,
        interval: u64,
    ) -> (u64, Option<WindowRead>, Vec<Vec<DrawReading>>) {
        let target = start.saturating_add(interval);
        // Draw samples inside the window where a board draw is exposed.
        let k = if self.active.as_ref().is_some_and(|a| a.draw_exposed.iter().any(|e| *e)) {
            u64::from(self.config.draw_samples_per_window)
        } else {
            1
        };
        let draw_due = |j: u64| if j >= k { target } else { start.saturating_add(interval / k * j) };
        let n_counters = self.active.as_ref().map_or(0, |a| a.infos.len());
        let step = self.active.as_ref().map_or(interval, |a| a.step_ns).max(1);
        let mut read = self.active.as_ref().map(|a| WindowRead::open(a, start));
        let mut draws: Vec<Vec<DrawReading>> = vec![Vec::new(); n_counters];
        let mut next_read = start.saturating_add(step).min(target);
        let mut j = 1;
        loop {
            let due = next_read.min(draw_due(j));
            let now = clock.now_ns();
            if due > now {
                clock.pause(Duration::from_nanos(due - now), false);
            }
            let t = clock.now_ns();
            if let (Some(active), Some(read)) = (self.active.as_mut(), read.as_mut()) {
                let backend = &mut *self.backends.counters[active.index];
                if t >= next_read {
                    take_sample(backend, active, read, t);
                    next_read = t.saturating_add(step).min(target);
                }
                while j <= k && t >= draw_due(j) {
                    if k > 1 {
                        for (c, d) in backend.read_draw(t).into_iter().take(n_counters).enumerate() {
                            draws[c].push(d);
                        }
                    }
                    j += 1;
                }
            }
            if t >= target {
                return (t, read, draws);
            }
        }
    }

    /// What the chosen counter rung (if any) made of the window.
    fn read_counter_rung(&mut self, read: Option<WindowRead>, span: u64, draws: &[Vec<DrawReading>]) -> CounterOutcome {
        let mut outcome = CounterOutcome { metered: None, counters: Vec::new(), declined: Vec::new() };
        if let (Some(active), Some(read)) = (self.active.as_ref(), read) {
            let rung = self.backends.counters[active.index].rung();
            match counter_window(rung, active, &read, span, draws) {
                Ok((total, deltas)) => {
                    outcome.counters = deltas;
                    outcome.metered = Some((total, rung));
                }
                Err(f) => {
                    outcome.counters = f.deltas;
                    outcome.declined.push(WindowDecline {
                        rung,
                        code: f.code.to_owned(),
                        why: f.why,
                        findings: f.findings,
                    });
                }
            }
        }
        outcome
    }

    /// The window's figure, best first: the counter rung's, else rung 5
    /// (time × the host calibration), else rung 6 (utilisation × default
    /// power), else none (a gap). Sets `energy_uj` (and a note where the
    /// estimate assumed full load) and returns the rung that metered it.
    fn figure(&self, w: &mut Window, hw: Option<(u64, RungId)>, util: Option<u32>, span: u64) -> Option<RungId> {
        if let Some((uj, rung)) = hw {
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
        }
    }

    /// The probe's declines of the rungs above `below`, except `skip` (the
    /// counter rung that failed this window, which says why itself).
    fn probe_declines(&self, below: RungId, skip: Option<RungId>) -> Vec<WindowDecline> {
        self.report
            .as_ref()
            .map(|r| {
                r.rungs
                    .iter()
                    .filter(|x| x.rung < below && Some(x.rung) != skip)
                    .map(|x| WindowDecline {
                        rung: x.rung,
                        code: x.code.to_owned(),
                        why: x.why.clone(),
                        findings: Vec::new(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// §5.6 plausibility of a counter's advance over `span` ns, where the board
/// exposes a bound (a power limit or a draw); `None` where it exposes neither.
pub(super) fn plausibility_of(
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

/// Reads every counter at `t` and folds the interval since the last read
/// into the window: each counter's advance wrap-corrected at its own range,
/// a wrap the interval was too long to rule out, a reset, and the interval's
/// liveness. A failed read fails the window and drops the baseline, and each
/// counter must show itself live again.
fn take_sample(backend: &mut dyn CounterBackend, active: &mut Active, read: &mut WindowRead, at: u64) {
    let width = active.infos.len();
    let values = match backend.read(at) {
        Ok(v) if v.len() == width => v,
        Ok(v) => return fail_sample(active, read, format!("a read gave {} values for {width} counters", v.len())),
        Err(e) => return fail_sample(active, read, format!("the counter read failed at {at} ns ({e})")),
    };
    let Some((t0, before)) = active.baseline.replace((at, values.clone())) else {
        return; // the first good read after a failed one: the next interval's start
    };
    let span = at.saturating_sub(t0);
    for (c, info) in active.infos.iter().enumerate() {
        let (was, now) = (before[c], values[c]);
        let run = &mut read.runs[c];
        match info.max_range_uj {
            Some(max) => {
                let d = wrap_delta(was, now, max);
                run.delta = run.delta.saturating_add(d);
                run.wraps += u64::from(now < was);
                if may_hide_a_wrap(d, span, max, active.wrap_bounds[c]) {
                    run.hidden_gap_ns = Some(run.hidden_gap_ns.map_or(span, |g| g.max(span)));
                }
            }
            None if now < was => {
                run.reset.get_or_insert((was, now));
                run.lapsed = true;
                active.live[c].restart(LiveStatus::Reset { interval: run.intervals });
                continue;
            }
            None => run.delta = run.delta.saturating_add(now - was),
        }
        run.intervals += 1;
        run.advanced += usize::from(now != was);
        if !active.live[c].observe(span, now != was) {
            run.lapsed = true;
        }
    }
}

/// A read failed inside the window.
fn fail_sample(active: &mut Active, read: &mut WindowRead, why: String) {
    active.baseline = None;
    for (run, live) in read.runs.iter_mut().zip(&mut active.live) {
        run.lapsed = true;
        live.restart(LiveStatus::Unreadable { detail: why.clone() });
    }
    read.failed.get_or_insert(why);
}

/// Why a counter rung failed a window.
struct WindowFailure {
    /// The decline code: the rung's (a failed read, no baseline) or the gravest counter finding's.
    code: &'static str,
    /// Why, for people.
    why: String,
    /// The per-counter advances it did read.
    deltas: Vec<CounterDelta>,
    /// Every counter's findings.
    findings: Vec<CounterFinding>,
}

/// Judges the chosen counter rung over a sampled window: a failed read or a
/// window opened without a reading fails it for the whole rung; otherwise
/// every counter is judged on its own ([`counter_findings`]) and any finding
/// fails the window, the decline naming every counter's.
fn counter_window(
    rung: RungId,
    active: &Active,
    read: &WindowRead,
    span: u64,
    draws: &[Vec<DrawReading>],
) -> Result<(u64, Vec<CounterDelta>), WindowFailure> {
    let unread = || {
        active
            .infos
            .iter()
            .map(|i| CounterDelta {
                counter: i.name.clone(),
                delta_uj: None,
                wrapped: false,
                wraps: 0,
                plausibility: None,
            })
            .collect::<Vec<_>>()
    };
    let rung_failure = |code, why| WindowFailure { code, why, deltas: unread(), findings: Vec::new() };
    if let Some(e) = &read.failed {
        return Err(rung_failure(read_failed_code(rung), format!("{e}: the window degrades")));
    }
    if read.no_baseline {
        return Err(rung_failure(
            "no-baseline",
            "no counter reading at the window's start (the previous read failed): the window degrades".into(),
        ));
    }
    let mut deltas = Vec::with_capacity(active.infos.len());
    let mut findings = Vec::new();
    let mut total: u64 = 0;
    for (c, info) in active.infos.iter().enumerate() {
        let run = &read.runs[c];
        let (delta, p, faults) = counter_findings(active, c, run, span, draws.get(c).map_or(&[][..], Vec::as_slice));
        findings.extend(faults.into_iter().map(|fault| CounterFinding { counter: info.name.clone(), fault }));
        total = total.saturating_add(delta.unwrap_or(0));
        deltas.push(CounterDelta {
            counter: info.name.clone(),
            delta_uj: delta,
            wrapped: run.wraps > 0,
            wraps: run.wraps,
            plausibility: p,
        });
    }
    let Some(gravest) = findings.iter().min_by_key(|f| f.fault.rank()) else {
        return Ok((total, deltas));
    };
    let code = gravest.fault.code();
    let why = findings.iter().map(|f| format!("{}: {}", f.counter, f.fault.describe())).collect::<Vec<_>>().join("; ");
    Err(WindowFailure { code, why: format!("{why}: the window degrades"), deltas, findings })
}

/// One counter over a window: its advance (`None` after a reset), its
/// plausibility where a bound is readable, and every fault found against it.
fn counter_findings(
    active: &Active,
    c: usize,
    run: &CounterRun,
    span: u64,
    draws: &[DrawReading],
) -> (Option<u64>, Option<Plausibility>, Vec<CounterFault>) {
    let mut faults = Vec::new();
    if let Some((from_uj, to_uj)) = run.reset {
        faults.push(CounterFault::Reset { from_uj, to_uj });
    }
    if run.reset.is_none() && run.delta == 0 {
        faults.push(CounterFault::NotAdvancing);
    }
    let live = &active.live[c];
    if !run.live_at_start || run.lapsed || !live.is_live() {
        faults.push(CounterFault::NotLive {
            status: live.status().code(),
            intervals: run.intervals,
            advanced: run.advanced,
        });
    }
    if let (Some(gap_ns), Some(max_range_uj)) = (run.hidden_gap_ns, active.infos[c].max_range_uj) {
        faults.push(CounterFault::WrapUnobservable { gap_ns, bound_mw: active.wrap_bounds[c], max_range_uj });
    }
    if run.reset.is_some() {
        return (None, None, faults);
    }
    let p = plausibility_of(
        run.delta,
        span,
        active.limits.get(c).copied().flatten(),
        active.draw_exposed.get(c).copied().unwrap_or(false),
        draws,
    );
    faults.extend(p.as_ref().and_then(CounterFault::of_plausibility));
    (Some(run.delta), p, faults)
}
