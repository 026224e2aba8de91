//! Test doubles for hardware: fake powercap trees and recorded traces.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use jcp_meter::clock::ManualClock;
use jcp_meter::estimate::{FixedUtil, HostId};
use jcp_meter::rapl::RaplReader;
use jcp_meter::trace::{Trace, TraceBackend, TraceCounter, TraceSample, TRACE_FORMAT};
use jcp_meter::{Backends, CounterBackend, RungId};

pub fn host() -> HostId {
    HostId {
        hostname: "test-host".into(),
        machine: Some("0011223344556677".into()),
        cpu: "Test CPU".into(),
        logical_cpus: 4,
        os: "linux".into(),
    }
}

/// Reads a file as an unprivileged user would: a file without any read bit is
/// permission denied (the tests run as root, who reads everything).
pub fn unprivileged_read(p: &Path) -> std::io::Result<String> {
    let mode = std::fs::metadata(p)?.permissions().mode();
    if mode & 0o444 == 0 {
        return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
    }
    std::fs::read_to_string(p).map(|s| s.trim().to_owned())
}

/// A fake `/sys/class/powercap` (flattened the way the class directory lists zones).
pub struct FakePowercap {
    pub dir: tempfile::TempDir,
}

impl FakePowercap {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("intel-rapl")).unwrap(); // the control type: not a zone
        Self { dir }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    pub fn zone(&self, entry: &str, name: &str, energy: u64, max: u64) -> &Self {
        let z = self.dir.path().join(entry);
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(z.join("energy_uj"), format!("{energy}\n")).unwrap();
        std::fs::write(z.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
        self
    }

    pub fn set(&self, entry: &str, energy: u64) {
        std::fs::write(self.dir.path().join(entry).join("energy_uj"), format!("{energy}\n")).unwrap();
    }

    /// Writes one of the zone's power-limit files (`constraint_0_power_limit_uw`, …), µW.
    pub fn limit(&self, entry: &str, file: &str, uw: u64) -> &Self {
        std::fs::write(self.dir.path().join(entry).join(file), format!("{uw}\n")).unwrap();
        self
    }

    pub fn deny(&self, entry: &str) {
        let p = self.dir.path().join(entry).join("energy_uj");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o000)).unwrap();
    }

    /// A typical client laptop: package-0, its sub-zones, psys, and MMIO duplicates.
    pub fn laptop(&self) -> &Self {
        self.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850)
            .zone("intel-rapl:0:0", "core", 500, 262_143_328_850)
            .zone("intel-rapl:0:1", "uncore", 10, 262_143_328_850)
            .zone("intel-rapl:0:2", "dram", 20, 65_712_999_613)
            .zone("intel-rapl:1", "psys", 5_000, 262_143_328_850)
            .zone("intel-rapl-mmio:0", "package-0", 1_000, 262_143_328_850);
        std::fs::create_dir_all(self.dir.path().join("intel-rapl-mmio")).unwrap();
        self
    }
}

pub fn rapl(fake: &FakePowercap) -> RaplReader {
    RaplReader::with_read_fn(fake.root(), unprivileged_read)
}

pub fn backends(counters: Vec<Box<dyn CounterBackend>>, clock: &ManualClock, util: Option<u32>) -> Backends {
    Backends {
        counters,
        util: Box::new(FixedUtil { permille: util, cpus: 4 }),
        clock: Arc::new(clock.clone()),
        host: host(),
    }
}

/// A trace sampled every `step_ns` for `n` samples; `f(t_ns) -> (values, draws)`.
pub fn trace(
    rung: RungId,
    counters: Vec<TraceCounter>,
    step_ns: u64,
    n: u64,
    f: impl Fn(u64) -> (Vec<Option<u64>>, Vec<Option<u64>>),
) -> Trace {
    let samples = (0..n)
        .map(|i| {
            let t = i * step_ns;
            let (uj, draw_mw) = f(t);
            TraceSample { t_ns: t, uj, draw_mw, util_permille: Some(500) }
        })
        .collect();
    Trace { format: TRACE_FORMAT.into(), rung, host: Some(host()), counters, samples }
}

pub fn gpu(limit: Option<u64>, draw: bool) -> TraceCounter {
    TraceCounter {
        name: "gpu0 NVIDIA GeForce RTX 4050 Laptop GPU".into(),
        max_range_uj: None,
        power_limit_mw: limit,
        draw_exposed: draw,
    }
}

pub fn replay(t: Trace) -> Box<dyn CounterBackend> {
    Box::new(TraceBackend::new(t))
}

/// µJ accrued by `mw` over `t_ns`.
pub fn uj(mw: u64, t_ns: u64) -> u64 {
    mw * t_ns / 1_000_000
}
pub mod procs;
