//! The meter (§5.1): probe the ladder once, then meter windows.
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
//! and every rung above that one with why it did not. Inside the window every
//! counter is read at the rung's sample step ([`sample_step_ns`]: often
//! enough that no interval can hide a whole RAPL wrap), each interval
//! wrap-corrected and summed, and each interval fed to the counter's
//! [`LiveTracker`]: liveness is judged over the life of the meter, not only
//! at the probe. A counter rung whose counter fails the window (a read error,
//! a counter that did not advance or did not stay live, a reset, samples too
//! sparse to rule out a missed wrap, an implausible or unjudgeable rate)
//! degrades that window to rung 5 or 6: the grade goes down, never stays.
//! With the estimate switched off and no calibration, such a window is a
//! gap: no figure, never a zero.
//!
//! The code follows those steps, a module each:
//! - `probe`: walking the ladder and choosing a rung ([`ProbeReport`]);
//! - `sampler`: reading every counter of a rung at steps ([`CounterSamples`]),
//!   for the probe's liveness and the calibration;
//! - `window`: metering one window and degrading it ([`Window`]);
//! - `calibration`: rung 5's host calibration against the live counter.
//!
//! Every item keeps its path here (`jcp_meter::meter::Window`, …).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::{CounterBackend, CounterInfo, RungId};
use crate::clock::{Clock, MonotonicClock};
use crate::estimate::{Calibration, EstimatorConfig, HostId, SysinfoUtil, UtilSource};
use crate::liveness::{LiveTracker, LivenessRule};
use crate::rapl::{wrap_bound_mw, wrap_time_ns, RaplReader};
use crate::Error;

mod calibration;
mod probe;
mod sampler;
mod window;

pub use calibration::{calibrate_from_trace, calibration_from_samples, CalibrationSamples};
pub use probe::{CounterReport, ProbeReport, RungReport, RungStatus};
pub use sampler::CounterSamples;
pub use window::{CounterDelta, CounterFault, CounterFinding, Window, WindowDecline};

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

/// The counter rung the probe chose, as the windows read it.
#[derive(Debug)]
struct Active {
    /// Its index in [`Backends::counters`].
    index: usize,
    /// Its counters, as opened.
    infos: Vec<CounterInfo>,
    /// Each counter's board power limit, mW, where readable.
    limits: Vec<Option<u64>>,
    /// Whether each counter's board draw was exposed at the probe.
    draw_exposed: Vec<bool>,
    /// The last reading (monotonic ns, one value per counter): the next sample's start.
    baseline: Option<(u64, Vec<u64>)>,
    /// How often every counter is read, ns ([`sample_step_ns`]).
    step_ns: u64,
    /// Each counter's wrap bound, mW ([`wrap_bound_mw`]; unused for a counter without a range).
    wrap_bounds: Vec<u64>,
    /// Each counter's liveness over the life of the meter, seeded by the probe.
    live: Vec<LiveTracker>,
}

/// The shortest sample step the meter takes, ns (1 ms). A counter whose
/// range it cannot see round at this pace gets windows too sparse to grade.
pub const MIN_SAMPLE_STEP_NS: u64 = 1_000_000;

/// How often the meter reads every counter of a rung, ns: the probe's step,
/// or a quarter of the shortest time any of the rung's wrapping counters
/// takes to run round its range at its wrap bound ([`wrap_bound_mw`]: twice
/// its largest published power limit, else 2 kW), whichever is shorter, and
/// never under [`MIN_SAMPLE_STEP_NS`] (docs/decisions.md, "§5.1 RAPL
/// sampling"). `limits` are the counters' power limits, mW.
pub fn sample_step_ns(probe_step: Duration, infos: &[CounterInfo], limits: &[Option<u64>]) -> u64 {
    let probe = u64::try_from(probe_step.as_nanos()).unwrap_or(u64::MAX).max(1);
    infos
        .iter()
        .enumerate()
        .filter_map(|(c, i)| {
            let max = i.max_range_uj?;
            Some((wrap_time_ns(max, wrap_bound_mw(limits.get(c).copied().flatten())) / 4).max(MIN_SAMPLE_STEP_NS))
        })
        .fold(probe, u64::min)
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

/// The decline code of a counter rung whose counters were not live at the probe.
fn not_live_code(r: RungId) -> &'static str {
    match r {
        RungId::Nvml => "nvml-not-live",
        _ => "rapl-not-live",
    }
}

/// The decline code of a counter rung whose read failed.
fn read_failed_code(r: RungId) -> &'static str {
    match r {
        RungId::Nvml => "nvml-read-failed",
        _ => "rapl-read-failed",
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
}
