//! The energy a span reads (§5.1): RAPL package counters over the span,
//! through powercap or the `perf_event` RAPL PMU ([`super::perf`]); the
//! GPU's energy through NVML or a recorded trace; and the liveness probe
//! that decides, once, whether a counter may be read at all.

use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

use crate::backend::{CounterBackend, CounterInfo, Decline};
use crate::liveness::{judge, CounterLiveness, LivenessRule};
use crate::rapl::wrap_delta;
use crate::trace::{Trace, TraceBackend};

/// A GPU energy counter and the driver's per-process utilisation, as a span
/// reads them (§5.1 rung 2, apportioned to a tree).
pub trait GpuSource: Send + Sync + fmt::Debug {
    /// Finds the GPUs; a decline says why there is no GPU reading. `absent`
    /// is true where the decline means there is no GPU here at all (no
    /// driver, no device): the tree cannot have used one, so no gap.
    fn open(&self) -> Result<Vec<CounterInfo>, (Decline, bool)>;
    /// Every GPU's total-energy counter, µJ.
    fn read_uj(&self) -> Result<Vec<u64>, String>;
    /// The tree's share of the GPUs' time between two reads, ‰ of one
    /// device's capacity summed over devices (`pids` are the tree's members
    /// at either end); `Err` where the driver does not report it.
    fn tree_util_permille(&self, pids: &[u32], since: Instant) -> Result<u32, String>;
}

/// The real NVML: energy from `nvmlDeviceGetTotalEnergyConsumption`,
/// per-process SM utilisation from `nvmlDeviceGetProcessUtilization`.
pub struct NvmlGpu {
    nvml: Mutex<Option<Nvml>>,
    devices: Mutex<Vec<u32>>,
    epoch: (Instant, u64),
}

impl fmt::Debug for NvmlGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvmlGpu").finish_non_exhaustive()
    }
}

impl Default for NvmlGpu {
    fn default() -> Self {
        Self::new()
    }
}

impl NvmlGpu {
    /// Nothing is loaded until `open`.
    pub fn new() -> Self {
        let unix_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        Self { nvml: Mutex::new(None), devices: Mutex::new(Vec::new()), epoch: (Instant::now(), unix_us) }
    }

    fn unix_us(&self, at: Instant) -> u64 {
        let d = at.saturating_duration_since(self.epoch.0);
        self.epoch.1.saturating_add(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }
}

impl GpuSource for NvmlGpu {
    fn open(&self) -> Result<Vec<CounterInfo>, (Decline, bool)> {
        let mut reader = crate::nvml::NvmlReader::new();
        let infos = reader.open().map_err(|d| {
            let absent = matches!(d.code, "nvml-library-missing" | "nvml-driver-not-loaded" | "nvml-no-device");
            (d, absent)
        })?;
        let nvml = Nvml::init().map_err(|e| (Decline::new("nvml-init-failed", e.to_string()), false))?;
        *self.devices.lock().map_err(|_| (Decline::new("nvml-init-failed", "poisoned"), false))? =
            (0..u32::try_from(infos.len()).unwrap_or(0)).collect();
        *self.nvml.lock().map_err(|_| (Decline::new("nvml-init-failed", "poisoned"), false))? = Some(nvml);
        Ok(infos)
    }

    fn read_uj(&self) -> Result<Vec<u64>, String> {
        let nvml = self.nvml.lock().map_err(|_| "poisoned".to_owned())?;
        let nvml = nvml.as_ref().ok_or("NVML is not open")?;
        let devices = self.devices.lock().map_err(|_| "poisoned".to_owned())?;
        devices
            .iter()
            .map(|&i| {
                let mj = nvml
                    .device_by_index(i)
                    .and_then(|d| d.total_energy_consumption())
                    .map_err(|e| format!("GPU {i}: {e}"))?;
                mj.checked_mul(1000).ok_or_else(|| format!("GPU {i}: {mj} mJ overflows µJ"))
            })
            .collect()
    }

    fn tree_util_permille(&self, pids: &[u32], since: Instant) -> Result<u32, String> {
        let nvml = self.nvml.lock().map_err(|_| "poisoned".to_owned())?;
        let nvml = nvml.as_ref().ok_or("NVML is not open")?;
        let devices = self.devices.lock().map_err(|_| "poisoned".to_owned())?;
        let since_us = self.unix_us(since);
        let mut total = 0u32;
        for &i in devices.iter() {
            let samples = match nvml.device_by_index(i).and_then(|d| d.process_utilization_stats(since_us)) {
                Ok(s) => s,
                // No sample since `since`: nothing ran on the device.
                Err(NvmlError::NotFound) => Vec::new(),
                Err(e) => return Err(format!("GPU {i}: per-process utilisation: {e}")),
            };
            // Mean over the driver's sample instants of the tree's summed SM %.
            let mut stamps: Vec<u64> = samples.iter().map(|s| s.timestamp).collect();
            stamps.sort_unstable();
            stamps.dedup();
            let tree: u64 = samples.iter().filter(|s| pids.contains(&s.pid)).map(|s| u64::from(s.sm_util)).sum();
            if let Some(n) = u64::try_from(stamps.len()).ok().filter(|n| *n > 0) {
                total = total.saturating_add(u32::try_from((tree * 10 / n).min(1000)).unwrap_or(1000));
            }
        }
        Ok(total)
    }
}

/// A recorded NVML trace and a fixed per-process utilisation table (tests,
/// replays). The trace is read at the time elapsed since this source was made.
#[derive(Debug)]
pub struct TraceGpu {
    backend: Mutex<TraceBackend>,
    epoch: Instant,
    util: Option<Vec<(u32, u32)>>,
}

impl TraceGpu {
    /// A replay of `trace` (an `nvml` trace); `util` is each pid's SM
    /// utilisation in ‰, or `None` where the driver reports no per-process
    /// utilisation.
    pub fn new(trace: Trace, util: Option<Vec<(u32, u32)>>) -> Self {
        Self { backend: Mutex::new(TraceBackend::new(trace)), epoch: Instant::now(), util }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl GpuSource for TraceGpu {
    fn open(&self) -> Result<Vec<CounterInfo>, (Decline, bool)> {
        let mut b = self.backend.lock().map_err(|_| (Decline::new("trace-empty", "poisoned"), false))?;
        b.open().map_err(|d| (d, false))
    }

    fn read_uj(&self) -> Result<Vec<u64>, String> {
        let now = self.now_ns();
        self.backend.lock().map_err(|_| "poisoned".to_owned())?.read(now)
    }

    fn tree_util_permille(&self, pids: &[u32], _since: Instant) -> Result<u32, String> {
        let util = self.util.as_ref().ok_or("the driver reports no per-process utilisation")?;
        let sum: u32 = util.iter().filter(|(p, _)| pids.contains(p)).map(|(_, u)| *u).sum();
        Ok(sum.min(1000))
    }
}

/// The liveness of every counter of RAPL (burning CPU on this thread) and
/// the GPU, over `intervals` steps of `step` (§5: every counter of a domain
/// must be live).
pub(crate) fn probe_liveness(
    rule: LivenessRule,
    step: Duration,
    intervals: usize,
    rapl: Option<(&mut dyn CounterBackend, &[CounterInfo])>,
    gpu: Option<(&dyn GpuSource, &[CounterInfo])>,
) -> (Vec<CounterLiveness>, Vec<CounterLiveness>) {
    let t0 = Instant::now();
    let mut times = Vec::with_capacity(intervals + 1);
    let (mut rv, mut gv): (Vec<Vec<u64>>, Vec<Vec<u64>>) = (Vec::new(), Vec::new());
    let (mut r_err, mut g_err) = (None, None);
    let (mut rapl, gpu) = (rapl, gpu);
    for i in 0..=intervals {
        if i > 0 {
            let until = Instant::now() + step;
            if rapl.is_some() {
                while Instant::now() < until {
                    std::hint::black_box((0..1000u64).fold(0u64, |a, x| a.wrapping_mul(31).wrapping_add(x)));
                }
            } else {
                std::thread::sleep(step);
            }
        }
        times.push(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
        if let Some((b, _)) = rapl.as_mut() {
            match b.read(0) {
                Ok(v) => rv.push(v),
                Err(e) => r_err = Some(e),
            }
        }
        if let Some((g, _)) = gpu {
            match g.read_uj() {
                Ok(v) => gv.push(v),
                Err(e) => g_err = Some(e),
            }
        }
    }
    let judge_all = |infos: &[CounterInfo], values: &[Vec<u64>], err: Option<String>| -> Vec<CounterLiveness> {
        infos
            .iter()
            .enumerate()
            .map(|(c, info)| {
                if let Some(e) = &err {
                    return CounterLiveness {
                        counter: info.name.clone(),
                        intervals: 0,
                        advanced: 0,
                        span_ns: 0,
                        status: crate::liveness::LiveStatus::Unreadable { detail: e.clone() },
                    };
                }
                let column: Vec<u64> = values.iter().map(|v| v.get(c).copied().unwrap_or(0)).collect();
                judge(rule, &info.name, &times, &column, info.max_range_uj)
            })
            .collect()
    };
    let r = rapl.map_or_else(Vec::new, |(_, infos)| judge_all(infos, &rv, r_err));
    let g = gpu.map_or_else(Vec::new, |(_, infos)| judge_all(infos, &gv, g_err));
    (r, g)
}

/// The summed advance of counters `a` → `b`, each wrap-corrected at its own
/// range (RAPL) or refusing a decrease (no range: a reset), and whether any advanced.
pub(crate) fn advance(infos: &[CounterInfo], a: &[u64], b: &[u64]) -> Result<(u64, bool), String> {
    let mut sum = 0u64;
    let mut any = false;
    for ((info, &x), &y) in infos.iter().zip(a).zip(b) {
        let d = match info.max_range_uj {
            Some(max) => wrap_delta(x, y, max),
            None if y >= x => y - x,
            None => return Err(format!("{}: went back from {x} to {y} (a reset)", info.name)),
        };
        any |= d > 0;
        sum = sum.saturating_add(d);
    }
    Ok((sum, any))
}
