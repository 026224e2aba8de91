//! Rung 5's host calibration (§5.1 "time × a power calibrated on this
//! host"): the active power measured against the live RAPL package counters
//! while every logical CPU burns, or read from a recorded RAPL trace. A
//! calibration always says where, when and against what it was measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::sampler::CounterSamples;
use super::Meter;
use crate::backend::{CounterInfo, RungId};
use crate::estimate::{Calibration, CalibrationSource, HostId};
use crate::liveness::{judge, LivenessRule};
use crate::plausibility::fmt_mw;
use crate::rapl::wrap_bound_mw;
use crate::Error;

impl Meter {
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
        let limits = active.limits.clone();
        let clock = Arc::clone(&self.backends.clock);
        // At least the probe's intervals, and never further apart than the
        // rung's sample step, so that every wrap is seen (§5.1).
        let paced = u64::try_from(duration.as_nanos().div_ceil(u128::from(active.step_ns.max(1)))).unwrap_or(u64::MAX);
        let steps = self.config.probe_intervals.max(5).max(usize::try_from(paced).unwrap_or(usize::MAX));
        let step = duration / u32::try_from(steps).unwrap_or(u32::MAX);
        let helpers = self.backends.util.logical_cpus().saturating_sub(1);
        let burn = CpuBurn::start(helpers);
        let backend = &mut self.backends.counters[active.index];
        let mut samples = CounterSamples::with_capacity(infos.len(), 0);
        let mut failure = None;
        for s in 0..=steps {
            if s > 0 {
                clock.pause(step, true);
            }
            let t = clock.now_ns();
            match backend.read(t) {
                Ok(v) => samples.record(t, v),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        burn.stop();
        if let Some(e) = failure {
            return Err(Error::NoLiveCounter { detail: format!("a read failed while calibrating: {e}") });
        }
        calibration_from_samples(
            self.config.liveness,
            &CalibrationSamples { infos: &infos, limits: &limits, samples: &samples },
            self.backends.host.clone(),
            None,
            format!("{} logical CPUs burning", helpers + 1),
            measured_at_unix_ms,
        )
    }
}

/// Helper threads spinning on every other logical CPU while the calibrating thread reads the counters.
struct CpuBurn {
    /// Tells the helpers to stop.
    stop: Arc<AtomicBool>,
    /// The helpers.
    threads: Vec<JoinHandle<()>>,
}

impl CpuBurn {
    /// Starts `helpers` spinning threads.
    fn start(helpers: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..helpers)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.rotate_left(5) ^ 0x9e37);
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }

    /// Stops the helpers and waits for them.
    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// The counters a calibration is measured against, and their samples.
#[derive(Debug, Clone, Copy)]
pub struct CalibrationSamples<'a> {
    /// The counters.
    pub infos: &'a [CounterInfo],
    /// Each counter's power limit, mW, where readable (its wrap bound starts from it).
    pub limits: &'a [Option<u64>],
    /// Their values over the calibration.
    pub samples: &'a CounterSamples,
}

/// Builds a calibration from counter samples, requiring every counter live
/// over them (§5.1) and read often enough that no interval could have hidden
/// a whole wrap at its wrap bound ([`wrap_bound_mw`] of its power limit,
/// mW): the active power is the counters' summed advance over the samples'
/// span. `trace` names the recording the samples came from, if any; `load`
/// says what the CPUs were doing.
pub fn calibration_from_samples(
    rule: LivenessRule,
    counters: &CalibrationSamples<'_>,
    host: HostId,
    trace: Option<String>,
    load: String,
    measured_at_unix_ms: u64,
) -> Result<Calibration, Error> {
    let CalibrationSamples { infos, limits, samples } = *counters;
    let mut total: u64 = 0;
    for (c, info) in infos.iter().enumerate() {
        let l = judge(rule, &info.name, &samples.times, samples.of(c), info.max_range_uj);
        if !l.status.is_live() {
            return Err(Error::NoLiveCounter {
                detail: format!("{} was not live while calibrating: {:?}", info.name, l.status),
            });
        }
        if let Some(max) = info.max_range_uj {
            let bound = wrap_bound_mw(limits.get(c).copied().flatten());
            if let Some(gap_ns) = samples.hidden_wrap_gap_ns(c, max, bound) {
                return Err(Error::CalibrationWrapUnobservable {
                    detail: format!(
                        "{}: {gap_ns} ns between two samples, time enough at up to {} to run round its {max} µJ range unseen; a wrap may be missing, so the power would read low",
                        info.name,
                        fmt_mw(bound)
                    ),
                });
            }
        }
        let delta = samples.advance_uj(c, info);
        total = total.checked_add(delta).ok_or(Error::Overflow { what: "calibration energy" })?;
    }
    let source =
        CalibrationSource { rung: RungId::Rapl, counters: infos.iter().map(|i| i.name.clone()).collect(), trace, load };
    Calibration::from_measurement(total, samples.span_ns(), host, source, measured_at_unix_ms)
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
    let mut samples =
        CounterSamples { times: trace.samples.iter().map(|s| s.t_ns).collect(), values: vec![Vec::new(); infos.len()] };
    for s in &trace.samples {
        for (c, v) in s.uj.iter().enumerate() {
            let v = v.ok_or_else(|| Error::NoLiveCounter {
                detail: format!("{}: a read failed in the recording at {} ns", infos[c].name, s.t_ns),
            })?;
            samples.values[c].push(v);
        }
    }
    let limits: Vec<Option<u64>> = trace.counters.iter().map(|c| c.power_limit_mw).collect();
    calibration_from_samples(
        LivenessRule::SPEC,
        &CalibrationSamples { infos: &infos, limits: &limits, samples: &samples },
        host,
        Some(trace_id),
        "as recorded in the trace".into(),
        measured_at_unix_ms,
    )
}
