//! RAPL package energy through the `perf_event` RAPL PMU (`power/energy-pkg/`,
//! §5.1 rung 1 where powercap is not readable): how a user without read
//! access to powercap's `energy_uj` but with `CAP_PERFMON` (or a permissive
//! `kernel.perf_event_paranoid`) gets a hardware reading.
//!
//! [`PerfRapl`] opens the event through the `perf-event2` crate (the
//! `perf_event_open` syscall is its `unsafe`, not this crate's): the PMU's
//! `type` and the event's `config` from sysfs, system-wide (pid −1) on the
//! first CPU of each package. [`ScriptedPkgCounters`] is its test double:
//! package counters that advance by a script, or freeze. Both are
//! [`CounterBackend`]s, probed and read exactly as powercap is.
//!
//! The count is 64-bit, in units of `scale` joules (2⁻³² J on Intel and AMD)
//! from when the event was opened: it wraps only after 2³² J (about 250 days
//! at 200 W), which does not happen in practice; the reader still gives it
//! that range so a wrap would be corrected as powercap's is.

use std::io;
use std::path::{Path, PathBuf};

use crate::backend::{CounterBackend, CounterInfo, Decline, RungId};

/// The `perf_event` RAPL PMU's sysfs directory.
pub const PERF_POWER_PMU: &str = "/sys/bus/event_source/devices/power";

/// Where CPUs' package ids are read (`cpu<N>/topology/physical_package_id`).
pub const CPU_SYSFS: &str = "/sys/devices/system/cpu";

/// The fix for a permission error from `perf_event_open`.
pub const PERF_PERMISSION_FIX: &str = "A system-wide RAPL perf event needs CAP_PERFMON (or CAP_SYS_ADMIN) or kernel.perf_event_paranoid <= 0. Grant the binary the capability: `sudo setcap cap_perfmon+ep <binary>`, or lower the restriction: `sudo sysctl kernel.perf_event_paranoid=0` (persist it in /etc/sysctl.d/).";

/// The `energy-pkg` event as sysfs describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct PmuEvent {
    /// The PMU's `type` (`perf_event_attr.type`).
    pub pmu_type: u32,
    /// The event file's text (`event=0x02`).
    pub event: String,
    /// Joules per count (`events/energy-pkg.scale`).
    pub scale: f64,
    /// `Joules` (`events/energy-pkg.unit`).
    pub unit: String,
}

impl PmuEvent {
    fn seen(&self) -> String {
        format!("PMU type {}, energy-pkg = {}, scale {} {}", self.pmu_type, self.event, self.scale, self.unit)
    }
}

/// Reads the RAPL PMU's `energy-pkg` event from sysfs under `pmu`; declines
/// `perf-rapl-no-pmu` where the PMU is not there and `perf-rapl-no-energy-pkg`
/// where its event, scale, unit (joules) or type cannot be read.
pub fn discover(pmu: &Path) -> Result<PmuEvent, Decline> {
    let read = |p: PathBuf| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    if !pmu.exists() {
        return Err(Decline::new(
            "perf-rapl-no-pmu",
            format!("{} does not exist: the kernel exposes no RAPL perf PMU (a virtual machine, a CPU without RAPL, or a kernel built without it)", pmu.display()),
        )
        .with_fix("On bare-metal Intel or AMD Linux the `power` PMU is built into the kernel's perf RAPL driver (CONFIG_PERF_EVENTS_INTEL_RAPL / perf/x86/rapl); virtual machines do not expose it."));
    }
    let event = read(pmu.join("events/energy-pkg"));
    let scale = read(pmu.join("events/energy-pkg.scale")).and_then(|s| s.parse::<f64>().ok());
    let unit = read(pmu.join("events/energy-pkg.unit"));
    let pmu_type = read(pmu.join("type")).and_then(|s| s.parse::<u32>().ok());
    match (event, scale, unit, pmu_type) {
        (Some(event), Some(scale), Some(unit), Some(pmu_type))
            if unit.eq_ignore_ascii_case("joules") && scale.is_finite() && scale > 0.0 =>
        {
            Ok(PmuEvent { pmu_type, event, scale, unit })
        }
        _ => Err(Decline::new(
            "perf-rapl-no-energy-pkg",
            format!(
                "{} has no readable energy-pkg event with a positive scale in joules and a PMU type",
                pmu.display()
            ),
        )),
    }
}

/// The first online CPU of each package, by package id, from
/// `cpu<N>/topology/physical_package_id` under `cpu_root`.
pub fn package_cpus(cpu_root: &Path) -> io::Result<Vec<(u32, usize)>> {
    let mut first: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(cpu_root)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(cpu) = name.to_str().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        // An offline CPU has no topology directory: it is skipped.
        let Ok(pkg) = std::fs::read_to_string(entry.path().join("topology/physical_package_id")) else {
            continue;
        };
        let Ok(pkg) = pkg.trim().parse::<u32>() else {
            continue;
        };
        let e = first.entry(pkg).or_insert(cpu);
        *e = (*e).min(cpu);
    }
    Ok(first.into_iter().collect())
}

/// A count of `scale` joules each, in µJ (rounded down; monotone in `count`).
pub fn scaled_uj(count: u64, scale: f64) -> u64 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let uj = (count as f64 * (scale * 1e6)).floor() as u64;
    uj
}

/// What a failed `perf_event_open` (or its enable) means: a permission error
/// (`EACCES`, `EPERM`) is `perf-rapl-permission` with its fix; anything else
/// `perf-rapl-open-failed`. Never a zero.
pub fn open_decline(err: &io::Error, seen: &str, cpu: usize) -> Decline {
    const EPERM: i32 = 1;
    const EACCES: i32 = 13;
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .map_or_else(|| "unreadable".to_owned(), |s| s.trim().to_owned());
    if matches!(err.raw_os_error(), Some(EPERM | EACCES)) || err.kind() == io::ErrorKind::PermissionDenied {
        return Decline::new(
            "perf-rapl-permission",
            format!("{seen}; perf_event_open on CPU {cpu} was refused ({err}): a system-wide perf event needs CAP_PERFMON (this process {} it) or kernel.perf_event_paranoid <= 0 (it is {paranoid})", if has_perfmon() { "holds" } else { "lacks" }),
        )
        .with_fix(PERF_PERMISSION_FIX);
    }
    Decline::new("perf-rapl-open-failed", format!("{seen}; perf_event_open on CPU {cpu} failed: {err}"))
        .with_fix(format!("Read the same counters through powercap instead: {}", crate::rapl::PERMISSION_FIX))
}

/// Whether this process holds `CAP_PERFMON` (38) or `CAP_SYS_ADMIN` (21), from `/proc/self/status`.
fn has_perfmon() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .is_some_and(|c| c & (1 << 38) != 0 || c & (1 << 21) != 0)
}

/// RAPL package energy through the `perf_event` RAPL PMU: one system-wide
/// `power/energy-pkg/` counter on the first CPU of each package, read in µJ.
pub struct PerfRapl {
    pmu: PathBuf,
    cpu_root: PathBuf,
    scale: f64,
    #[cfg(target_os = "linux")]
    counters: Vec<perf_event::Counter>,
}

impl std::fmt::Debug for PerfRapl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfRapl").field("pmu", &self.pmu).field("cpu_root", &self.cpu_root).finish_non_exhaustive()
    }
}

impl PerfRapl {
    /// A reader of the PMU at `pmu` ([`PERF_POWER_PMU`]) with CPUs under
    /// `cpu_root` ([`CPU_SYSFS`]); nothing is opened until `open`.
    pub fn new(pmu: impl Into<PathBuf>, cpu_root: impl Into<PathBuf>) -> Self {
        Self {
            pmu: pmu.into(),
            cpu_root: cpu_root.into(),
            scale: 0.0,
            #[cfg(target_os = "linux")]
            counters: Vec::new(),
        }
    }

    /// The real machine's PMU and CPUs.
    pub fn system() -> Self {
        Self::new(PERF_POWER_PMU, CPU_SYSFS)
    }
}

impl CounterBackend for PerfRapl {
    fn rung(&self) -> RungId {
        RungId::Rapl
    }

    fn open(&mut self) -> Result<Vec<CounterInfo>, Decline> {
        let ev = discover(&self.pmu)?;
        let seen = ev.seen();
        let packages = package_cpus(&self.cpu_root).map_err(|e| {
            Decline::new("perf-rapl-no-topology", format!("{seen}; cannot list {}: {e}", self.cpu_root.display()))
        })?;
        if packages.is_empty() {
            return Err(Decline::new(
                "perf-rapl-no-topology",
                format!("{seen}; no CPU under {} names its package", self.cpu_root.display()),
            ));
        }
        self.scale = ev.scale;
        let max_range_uj = Some(scaled_uj(u64::MAX, ev.scale));
        self.open_counters(&ev, &packages)?;
        Ok(packages
            .iter()
            .map(|(pkg, cpu)| CounterInfo {
                name: format!("perf:package-{pkg}"),
                source: format!("{}/events/energy-pkg on CPU {cpu}", self.pmu.display()),
                max_range_uj,
            })
            .collect())
    }

    fn read(&mut self, _now_ns: u64) -> Result<Vec<u64>, String> {
        #[cfg(target_os = "linux")]
        {
            let scale = self.scale;
            if self.counters.is_empty() {
                return Err("the perf RAPL counters are not open".into());
            }
            self.counters
                .iter_mut()
                .map(|c| c.read().map(|n| scaled_uj(n, scale)).map_err(|e| format!("perf energy-pkg read: {e}")))
                .collect()
        }
        #[cfg(not(target_os = "linux"))]
        Err("perf events are Linux only".into())
    }
}

impl PerfRapl {
    #[cfg(target_os = "linux")]
    fn open_counters(&mut self, ev: &PmuEvent, packages: &[(u32, usize)]) -> Result<(), Decline> {
        use perf_event::events::Dynamic;
        let seen = ev.seen();
        let bad_event = |e: &dyn std::fmt::Display| {
            Decline::new("perf-rapl-no-energy-pkg", format!("{seen}; the event does not configure: {e}"))
        };
        let mut b = Dynamic::builder(&self.pmu).map_err(|e| bad_event(&e))?;
        b.event("energy-pkg").map_err(|e| bad_event(&e))?;
        let event = b.build().map_err(|e| bad_event(&e))?;
        self.counters.clear();
        for &(_, cpu) in packages {
            // The RAPL PMU refuses any exclude flag (PERF_PMU_CAP_NO_EXCLUDE),
            // and perf-event2's builder sets exclude_kernel and exclude_hv by default.
            let mut c = perf_event::Builder::new(event)
                .any_pid()
                .one_cpu(cpu)
                .include_kernel()
                .include_hv()
                .build()
                .map_err(|e| open_decline(&e, &seen, cpu))?;
            c.enable().map_err(|e| open_decline(&e, &seen, cpu))?;
            self.counters.push(c);
        }
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    fn open_counters(&mut self, ev: &PmuEvent, _packages: &[(u32, usize)]) -> Result<(), Decline> {
        Err(Decline::new("perf-rapl-not-built", format!("{}; perf events are Linux only", ev.seen())))
    }
}

/// A test double for package counters (µJ): each read advances package `i`
/// by `steps_uj[i]`, until `frozen_after` reads, after which every value
/// stays where it is; or it declines `open` with a given decline.
#[derive(Debug, Clone)]
pub struct ScriptedPkgCounters {
    steps_uj: Vec<u64>,
    values: Vec<u64>,
    reads: usize,
    frozen_after: Option<usize>,
    open: Option<Decline>,
}

impl ScriptedPkgCounters {
    /// Packages that start at `start_uj` and advance by `steps_uj` at every read
    /// (a step of 0 is a frozen package).
    pub fn new(start_uj: u64, steps_uj: Vec<u64>) -> Self {
        let values = vec![start_uj; steps_uj.len()];
        Self { steps_uj, values, reads: 0, frozen_after: None, open: None }
    }

    /// Every package stops advancing after `reads` reads.
    #[must_use]
    pub fn frozen_after(mut self, reads: usize) -> Self {
        self.frozen_after = Some(reads);
        self
    }

    /// `open` declines with `d` (a permission error, say).
    #[must_use]
    pub fn declining(mut self, d: Decline) -> Self {
        self.open = Some(d);
        self
    }
}

impl CounterBackend for ScriptedPkgCounters {
    fn rung(&self) -> RungId {
        RungId::Rapl
    }

    fn open(&mut self) -> Result<Vec<CounterInfo>, Decline> {
        if let Some(d) = &self.open {
            return Err(d.clone());
        }
        Ok((0..self.steps_uj.len())
            .map(|i| CounterInfo {
                name: format!("perf:package-{i}"),
                source: "scripted power/energy-pkg".into(),
                max_range_uj: Some(u64::MAX),
            })
            .collect())
    }

    fn read(&mut self, _now_ns: u64) -> Result<Vec<u64>, String> {
        if self.frozen_after.is_none_or(|n| self.reads < n) {
            for (v, s) in self.values.iter_mut().zip(&self.steps_uj) {
                *v = v.wrapping_add(*s);
            }
        }
        self.reads += 1;
        Ok(self.values.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s5_1_perf_count_is_scaled_to_microjoules() {
        let scale = 2.328_306_436_538_696_289_062_5e-10; // 2^-32 J
        assert_eq!(scaled_uj(1 << 32, scale), 1_000_000);
        assert_eq!(scaled_uj(3 << 31, scale), 1_500_000);
        assert_eq!(scaled_uj(0, scale), 0);
        // The full 64-bit range is 2^32 J: about 250 days at 200 W.
        assert_eq!(scaled_uj(u64::MAX, scale), 4_294_967_296_000_000);
    }

    #[test]
    fn s5_1_perf_permission_error_is_named_with_its_fix() {
        for errno in [1, 13] {
            let d = open_decline(&io::Error::from_raw_os_error(errno), "seen", 0);
            assert_eq!(d.code, "perf-rapl-permission", "{d:?}");
            let fix = d.fix.unwrap();
            assert!(fix.contains("setcap cap_perfmon+ep") && fix.contains("perf_event_paranoid=0"), "{fix}");
        }
        let d = open_decline(&io::Error::from_raw_os_error(2), "seen", 3);
        assert_eq!(d.code, "perf-rapl-open-failed");
        assert!(d.why.contains("CPU 3"), "{d:?}");
    }

    #[test]
    fn s5_1_first_cpu_of_each_package() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, pkg) in [(0, 0), (1, 1), (2, 0), (3, 1), (10, 2)] {
            let t = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{pkg}\n")).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("cpu4")).unwrap(); // offline: no topology
        std::fs::create_dir_all(dir.path().join("cpufreq")).unwrap();
        assert_eq!(package_cpus(dir.path()).unwrap(), vec![(0, 0), (1, 1), (2, 10)]);
    }

    #[test]
    fn s5_1_scripted_counters_advance_then_freeze() {
        let mut c = ScriptedPkgCounters::new(10, vec![5, 0]).frozen_after(2);
        assert_eq!(c.open().unwrap().len(), 2);
        assert_eq!(c.read(0).unwrap(), vec![15, 10]);
        assert_eq!(c.read(0).unwrap(), vec![20, 10]);
        assert_eq!(c.read(0).unwrap(), vec![20, 10]);
    }
}
