//! The meter as `OpenMetrics` (what `jcp meter serve` exposes on `/metrics`).
//!
//! Every energy series carries the figure's `provenance`, `coverage`, the
//! `rung` that metered it and its `domain` ([`RungId::domain`]):
//!
//! | metric | type | what |
//! |---|---|---|
//! | `jcp_meter_energy_microjoules_total` | counter | µJ of every metered window, per label set |
//! | `jcp_meter_windows_total` | counter | metered windows, per label set |
//! | `jcp_meter_window_energy_microjoules` | gauge | the last window's µJ (absent when it was a gap) |
//! | `jcp_meter_window_power_milliwatts` | gauge | the last window's mean power (absent when it was a gap) |
//! | `jcp_meter_gap_windows_total` | counter | windows no rung could meter |
//! | `jcp_meter_window_declines_total` | counter | windows in which a rung above the metering one declined, by `rung` and `code` |
//! | `jcp_meter_rung` | gauge (1) | each rung at the probe: `status` (chosen / declined / unavailable / standby) and its reason `code` |
//! | `jcp_meter_counter_liveness` | gauge (1) | each probed counter's §5 liveness `status` |
//! | `jcp_meter_counter_liveness_advanced_intervals`, `..._intervals` | gauge | what the liveness verdict rests on |
//! | `jcp_meter_probe_plausibility_rate_milliwatts` | gauge | a probed counter's implied rate, with its `verdict` |
//! | `jcp_meter_probe_plausibility_bound_milliwatts` | gauge | the `bound` it broke (`implausible`) or was held to (`not-refuted`) |
//! | `jcp_meter_window_plausibility_rate_milliwatts`, `..._bound_milliwatts` | gauge | the same for the last window's counters |
//! | `jcp_meter_plausibility_refusals_total` | counter | windows a counter was refused in, by `verdict` and `bound` |
//!
//! Two rules are held by construction and by tests on the rendered text:
//! - **a window that was not metered is absent, never a zero**: a gap adds to
//!   no energy series, and clears the last-window gauges rather than
//!   setting them to 0;
//! - **a `Partial` figure is never summed into a `Whole` one**: coverage is a
//!   label, so the two are distinct series, and the exporter sums only
//!   within one label set.
//!
//! An unjudgeable counter has a rate and no bound series: there is no
//! yardstick (§5), and a bound of 0 would read as one it broke.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::backend::RungId;
use crate::meter::{Meter, ProbeReport, Window};
use crate::plausibility::Plausibility;

/// A figure's grade and what it reads.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FigureLabels {
    /// `HwShunt`, `ModelBased` or `Estimator`.
    pub provenance: String,
    /// `Whole` or `Partial`.
    pub coverage: String,
    /// The rung that metered it.
    pub rung: String,
    /// What the rung reads.
    pub domain: String,
}

impl FigureLabels {
    /// The labels of a metered window; `None` for a gap.
    pub fn of(w: &Window) -> Option<Self> {
        let rung = w.rung?;
        Some(Self {
            provenance: w.provenance?.to_string(),
            coverage: w.coverage?.to_string(),
            rung: rung.as_str().into(),
            domain: rung.domain().into(),
        })
    }
}

/// A rung and a reason code.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeclineLabels {
    /// The rung.
    pub rung: String,
    /// Its reason code.
    pub code: String,
}

/// A rung's status at the probe.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RungLabels {
    /// The rung.
    pub rung: String,
    /// `chosen`, `declined`, `unavailable` or `standby`.
    pub status: String,
    /// The reason code (`chosen`, `rapl-permission-denied`, `standby`, ...).
    pub code: String,
}

/// One counter of a rung.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CounterLabels {
    /// The rung.
    pub rung: String,
    /// The counter (`package-0`, `gpu0`).
    pub counter: String,
}

/// A counter's liveness verdict.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LivenessLabels {
    /// The rung.
    pub rung: String,
    /// The counter.
    pub counter: String,
    /// `live`, `frozen`, `lumpy`, `too-few-advances`, `too-short`, `reset`, `unreadable`.
    pub status: String,
}

/// A counter's plausibility verdict.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabels {
    /// The rung.
    pub rung: String,
    /// The counter.
    pub counter: String,
    /// `not-refuted`, `implausible`, `unjudgeable`, `no-bound`.
    pub verdict: String,
}

/// A bound a counter's rate was held to.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BoundLabels {
    /// The rung.
    pub rung: String,
    /// The counter.
    pub counter: String,
    /// `implausible` (the bound it broke) or `not-refuted` (a bound it was held to).
    pub verdict: String,
    /// `power-limit`, `draw-ceiling`, `draw-floor`; `none` in the refusal
    /// count of an unjudgeable counter.
    pub bound: String,
}

type GaugeU = Gauge<u64, AtomicU64>;

/// A pair of families: a counter's implied rate and the bounds it was held to.
#[derive(Debug, Default)]
struct PlausibilitySeries {
    rate: Family<VerdictLabels, GaugeU>,
    bound: Family<BoundLabels, GaugeU>,
}

impl PlausibilitySeries {
    fn register(&self, reg: &mut Registry, phase: &str, what: &str) {
        reg.register_with_unit(
            format!("{phase}_plausibility_rate"),
            format!("§5 plausibility: {what} counter's implied rate, with its verdict"),
            Unit::Other("milliwatts".into()),
            self.rate.clone(),
        );
        reg.register_with_unit(
            format!("{phase}_plausibility_bound"),
            format!("§5 plausibility: the bound {what} counter broke (verdict implausible) or was held to (not-refuted); none when unjudgeable"),
            Unit::Other("milliwatts".into()),
            self.bound.clone(),
        );
    }

    fn clear(&self) {
        self.rate.clear();
        self.bound.clear();
    }

    fn set(&self, rung: &str, counter: &str, p: &Plausibility) {
        let verdict = p.verdict().to_owned();
        self.rate
            .get_or_create(&VerdictLabels { rung: rung.into(), counter: counter.into(), verdict: verdict.clone() })
            .set(p.rate_mw());
        for (kind, mw) in p.bounds() {
            self.bound
                .get_or_create(&BoundLabels {
                    rung: rung.into(),
                    counter: counter.into(),
                    verdict: verdict.clone(),
                    bound: kind.as_str().into(),
                })
                .set(mw);
        }
    }
}

/// The meter's registry and what each window and probe records into it.
#[derive(Debug)]
pub struct MeterMetrics {
    registry: Registry,
    /// Held for writing while a window or probe is recorded, for reading
    /// while rendering: a scrape never sees half a window.
    turn: RwLock<()>,
    energy: Family<FigureLabels, Counter>,
    windows: Family<FigureLabels, Counter>,
    last_energy: Family<FigureLabels, GaugeU>,
    last_power: Family<FigureLabels, GaugeU>,
    gaps: Counter,
    declines: Family<DeclineLabels, Counter>,
    rungs: Family<RungLabels, GaugeU>,
    liveness: Family<LivenessLabels, GaugeU>,
    advanced: Family<CounterLabels, GaugeU>,
    intervals: Family<CounterLabels, GaugeU>,
    probe_plausibility: PlausibilitySeries,
    window_plausibility: PlausibilitySeries,
    refusals: Family<BoundLabels, Counter>,
    /// The counter rung the probe chose, whose counters windows carry.
    counter_rung: Mutex<Option<RungId>>,
}

impl Default for MeterMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl MeterMetrics {
    /// An empty registry: no series until a probe or window is recorded.
    pub fn new() -> Self {
        let mut m = Self {
            registry: Registry::with_prefix("jcp_meter"),
            turn: RwLock::new(()),
            energy: Family::default(),
            windows: Family::default(),
            last_energy: Family::default(),
            last_power: Family::default(),
            gaps: Counter::default(),
            declines: Family::default(),
            rungs: Family::default(),
            liveness: Family::default(),
            advanced: Family::default(),
            intervals: Family::default(),
            probe_plausibility: PlausibilitySeries::default(),
            window_plausibility: PlausibilitySeries::default(),
            refusals: Family::default(),
            counter_rung: Mutex::new(None),
        };
        let r = &mut m.registry;
        let uj = || Unit::Other("microjoules".into());
        r.register_with_unit("energy", "Energy of every metered window (§5), by provenance, coverage, rung and domain; a Partial series is never summed into a Whole one, and a gap adds nothing", uj(), m.energy.clone());
        r.register("windows", "Metered windows, by provenance, coverage, rung and domain", m.windows.clone());
        r.register_with_unit(
            "window_energy",
            "The last window's energy; absent when it was a gap (never a zero)",
            uj(),
            m.last_energy.clone(),
        );
        r.register_with_unit(
            "window_power",
            "The last window's mean power; absent when it was a gap",
            Unit::Other("milliwatts".into()),
            m.last_power.clone(),
        );
        r.register("gap_windows", "Windows no rung could meter: no figure, not a zero", m.gaps.clone());
        r.register(
            "window_declines",
            "Windows in which a rung above the metering one did not meter, by rung and reason code (§5.1)",
            m.declines.clone(),
        );
        r.register("rung", "Each rung of the ladder at the probe (§5.1): status chosen, declined, unavailable or standby, with its reason code", m.rungs.clone());
        r.register("counter_liveness", "§5 liveness of each probed counter: 1 on its status", m.liveness.clone());
        r.register(
            "counter_liveness_advanced_intervals",
            "Probe intervals in which the counter advanced",
            m.advanced.clone(),
        );
        r.register("counter_liveness_intervals", "Probe intervals observed", m.intervals.clone());
        m.probe_plausibility.register(r, "probe", "a probed");
        m.window_plausibility.register(r, "window", "the last window's");
        r.register("plausibility_refusals", "Windows in which a counter was refused by §5 plausibility, by verdict and the bound it broke (none: unjudgeable)", m.refusals.clone());
        m
    }

    /// Records the probe: every rung's status, every counter's liveness and
    /// plausibility. A later probe replaces an earlier one.
    pub fn record_probe(&self, report: &ProbeReport) {
        let _turn = self.turn.write();
        self.rungs.clear();
        self.liveness.clear();
        self.advanced.clear();
        self.intervals.clear();
        self.probe_plausibility.clear();
        if let Ok(mut c) = self.counter_rung.lock() {
            *c = report.chosen.filter(|r| matches!(r, RungId::Rapl | RungId::Nvml));
        }
        for r in &report.rungs {
            let status = r.status.as_str();
            let rung = r.rung.as_str();
            self.rungs
                .get_or_create(&RungLabels { rung: rung.into(), status: status.into(), code: r.code.into() })
                .set(1);
            for c in &r.counters {
                let at = CounterLabels { rung: rung.into(), counter: c.info.name.clone() };
                if let Some(l) = &c.liveness {
                    self.liveness
                        .get_or_create(&LivenessLabels {
                            rung: rung.into(),
                            counter: c.info.name.clone(),
                            status: l.status.code().into(),
                        })
                        .set(1);
                    self.advanced.get_or_create(&at).set(l.advanced as u64);
                    self.intervals.get_or_create(&at).set(l.intervals as u64);
                }
                if let Some(p) = &c.plausibility {
                    self.probe_plausibility.set(rung, &c.info.name, p);
                }
            }
        }
    }

    /// Records one window. A metered window adds its µJ to its own label
    /// set's total and becomes the last window; a gap adds to no energy
    /// series and leaves no last-window figure.
    pub fn record_window(&self, w: &Window) {
        let _turn = self.turn.write();
        self.last_energy.clear();
        self.last_power.clear();
        self.window_plausibility.clear();
        match (FigureLabels::of(w), w.energy_uj) {
            (Some(labels), Some(uj)) => {
                self.energy.get_or_create(&labels).inc_by(uj);
                self.windows.get_or_create(&labels).inc();
                self.last_energy.get_or_create(&labels).set(uj);
                if w.span_ns() > 0 {
                    self.last_power.get_or_create(&labels).set(crate::plausibility::rate_mw(uj, w.span_ns()));
                }
            }
            _ => {
                self.gaps.inc();
            }
        }
        for d in &w.declined {
            self.declines.get_or_create(&DeclineLabels { rung: d.rung.as_str().into(), code: d.code.clone() }).inc();
        }
        // A window's counters are the probe's chosen counter rung's, whether
        // it metered the window or the window degraded below it.
        let counter_rung = self.counter_rung.lock().ok().and_then(|r| *r);
        let Some(rung) = counter_rung else { return };
        for c in &w.counters {
            let Some(p) = &c.plausibility else { continue };
            self.window_plausibility.set(rung.as_str(), &c.counter, p);
            if !p.admits() {
                let bounds = p.bounds();
                let bound = bounds.first().map_or("none", |(k, _)| k.as_str());
                self.refusals
                    .get_or_create(&BoundLabels {
                        rung: rung.as_str().into(),
                        counter: c.counter.clone(),
                        verdict: p.verdict().into(),
                        bound: bound.into(),
                    })
                    .inc();
            }
        }
    }

    /// The exposition: a complete `OpenMetrics` text message.
    pub fn render(&self) -> Result<String, fmt::Error> {
        let _turn = self.turn.read();
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &self.registry)?;
        Ok(s)
    }
}

/// A meter sampling on its own thread into a [`MeterMetrics`]: probe once,
/// then one window after another until stopped.
#[derive(Debug)]
pub struct MeterExporter {
    metrics: Arc<MeterMetrics>,
    stop: Arc<AtomicBool>,
    windows: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl MeterExporter {
    /// Starts metering on a new thread. With `until_ns` (a replayed
    /// trace's end) it stops at the first window past it, recording
    /// nothing of that window; the exposition stays as it was.
    pub fn spawn(mut meter: Meter, until_ns: Option<u64>) -> Self {
        let metrics = Arc::new(MeterMetrics::new());
        let stop = Arc::new(AtomicBool::new(false));
        let windows = Arc::new(AtomicU64::new(0));
        let (m, s, n) = (Arc::clone(&metrics), Arc::clone(&stop), Arc::clone(&windows));
        let thread = std::thread::spawn(move || {
            m.record_probe(meter.probe());
            while !s.load(Ordering::Relaxed) {
                let w = meter.next_window();
                if until_ns.is_some_and(|end| w.end_ns > end) {
                    break;
                }
                m.record_window(&w);
                n.fetch_add(1, Ordering::Relaxed);
            }
        });
        Self { metrics, stop, windows, thread: Some(thread) }
    }

    /// The registry the thread records into.
    pub fn metrics(&self) -> Arc<MeterMetrics> {
        Arc::clone(&self.metrics)
    }

    /// Windows recorded so far.
    pub fn windows(&self) -> u64 {
        self.windows.load(Ordering::Relaxed)
    }

    /// Stops after the current window and waits for the thread.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MeterExporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
