//! Windows (§5.1, §5.2): metering one window at the chosen rung, and
//! degrading it. Every window carries integer µJ, its provenance and coverage,
//! the rung that metered it and every rung above that one with why it did
//! not; a counter that fails the window degrades it to rung 5 or 6, and with
//! neither the window is a gap (no figure, never a zero).

use std::sync::Arc;
use std::time::Duration;

use jcp::energy::{Coverage, Energy, Provenance};
use serde::Serialize;

use super::{read_failed_code, Active, Meter};
use crate::backend::{CounterBackend, DrawReading, RungId};
use crate::clock::Clock;
use crate::estimate::energy_uj;
use crate::plausibility::{check, BoundInput, Plausibility};
use crate::rapl::wrap_delta;

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
        let draws = self.wait_out_window(clock.as_ref(), start, interval);
        let end = clock.now_ns().max(start);
        let util = self.backends.util.sample(end);
        let outcome = self.read_counter_rung(start, end, &draws);
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
                });
            }
            w.gap = Some("no rung could meter this window (no live counter, no host calibration, estimate off): a gap, not a zero".into());
        }
        w.declined = all_declines;
        self.last_end = end;
        self.seq += 1;
        w
    }

    /// Waits until `start + interval`, sampling the board draw of the chosen
    /// counter rung `draw_samples_per_window` times on the way where one is
    /// exposed; returns each counter's draw readings.
    fn wait_out_window(&mut self, clock: &dyn Clock, start: u64, interval: u64) -> Vec<Vec<DrawReading>> {
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
        draws
    }

    /// Reads the chosen counter rung (if any) at the window's end.
    fn read_counter_rung(&mut self, start: u64, end: u64, draws: &[Vec<DrawReading>]) -> CounterOutcome {
        let mut outcome = CounterOutcome { metered: None, counters: Vec::new(), declined: Vec::new() };
        if let Some(active) = self.active.as_mut() {
            let rung = self.backends.counters[active.index].rung();
            match counter_window(&mut *self.backends.counters[active.index], active, start, end, draws) {
                Ok((total, deltas)) => {
                    outcome.counters = deltas;
                    outcome.metered = Some((total, rung));
                }
                Err((code, why, deltas)) => {
                    outcome.counters = deltas;
                    outcome.declined.push(WindowDecline { rung, code: code.to_owned(), why });
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
                    .map(|x| WindowDecline { rung: x.rung, code: x.code.to_owned(), why: x.why.clone() })
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

/// Why a counter rung failed a window: the decline code, why, and the per-counter advances it did read.
type WindowFailure = (&'static str, String, Vec<CounterDelta>);

/// Reads the chosen counter rung at the window's end and takes each counter's
/// advance from the previous read: a failed read, a missing baseline, a
/// counter that did not advance or went backwards (a reset), or an advance
/// the board's bounds refute fails the window.
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
