//! The seam between the ladder and the hardware: every counter rung is a
//! [`CounterBackend`]. The real readers ([`crate::rapl::RaplReader`],
//! [`crate::nvml::NvmlReader`]) run whenever the hardware is there; tests put
//! fake sysfs trees and recorded traces ([`crate::trace::TraceBackend`]) behind
//! the same trait.

use std::fmt;

use jcp::energy::{Coverage, Provenance};
use serde::{Deserialize, Serialize};

/// The rungs of the §5.1 ladder, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RungId {
    /// 1. RAPL package counters (Linux powercap) → `HwShunt`, `Whole`.
    Rapl,
    /// 2. The NVML GPU total-energy counter → `HwShunt`, `Partial`.
    Nvml,
    /// 3. Per-process CPU energy (macOS `proc_pid_rusage`): absent off macOS, not implemented here on macOS.
    ProcessEnergy,
    /// 4. Apple `IOReport` energy counters: absent off macOS, not implemented here on macOS.
    Ioreport,
    /// 5. Time × a power calibrated on this host → `ModelBased`.
    Calibrated,
    /// 6. An estimate from utilisation × a documented default power → `Estimator`.
    Estimate,
}

impl RungId {
    /// Every rung, best first.
    pub const LADDER: [Self; 6] =
        [Self::Rapl, Self::Nvml, Self::ProcessEnergy, Self::Ioreport, Self::Calibrated, Self::Estimate];

    /// The stable label (`rapl`, `nvml`, `process-energy`, `ioreport`, `calibrated`, `estimate`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rapl => "rapl",
            Self::Nvml => "nvml",
            Self::ProcessEnergy => "process-energy",
            Self::Ioreport => "ioreport",
            Self::Calibrated => "calibrated",
            Self::Estimate => "estimate",
        }
    }

    /// A name for people.
    pub fn title(self) -> &'static str {
        match self {
            Self::Rapl => "1. RAPL package counters (powercap)",
            Self::Nvml => "2. NVML GPU total-energy counter",
            Self::ProcessEnergy => "3. per-process CPU energy (macOS)",
            Self::Ioreport => "4. Apple IOReport energy counters",
            Self::Calibrated => "5. time x calibrated power",
            Self::Estimate => "6. estimate (utilisation x default power)",
        }
    }

    /// The grade a figure from this rung carries.
    pub fn provenance(self) -> Provenance {
        match self {
            Self::Rapl | Self::Nvml | Self::ProcessEnergy | Self::Ioreport => Provenance::HwShunt,
            Self::Calibrated => Provenance::ModelBased,
            Self::Estimate => Provenance::Estimator,
        }
    }

    /// The coverage a figure from this rung carries on this meter.
    pub fn coverage(self) -> Coverage {
        match self {
            // §5.1 rung 2: NVML reads the GPU and not the CPU's share of the work.
            Self::Nvml => Coverage::Partial,
            _ => Coverage::Whole,
        }
    }

    /// The domain a figure from this rung claims to read (the `domain` label
    /// of the exposition): `cpu-package` (RAPL's package counters, and rung 5,
    /// a power calibrated against them), `gpu` (NVML), `process-cpu`
    /// (per-process CPU energy), `soc` (`IOReport`), `host` (the estimate: no
    /// counter behind it, a figure for the machine's work). docs/decisions.md,
    /// "§5.1 exposition domain".
    pub fn domain(self) -> &'static str {
        match self {
            Self::Rapl | Self::Calibrated => "cpu-package",
            Self::Nvml => "gpu",
            Self::ProcessEnergy => "process-cpu",
            Self::Ioreport => "soc",
            Self::Estimate => "host",
        }
    }

    /// Parses a label.
    pub fn parse(s: &str) -> Option<Self> {
        Self::LADDER.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for RungId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a rung was not used, and what the person could do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decline {
    /// A stable reason code (e.g. `rapl-permission-denied`).
    pub code: &'static str,
    /// What was found.
    pub why: String,
    /// What the person can do, where something can be done.
    pub fix: Option<String>,
}

impl Decline {
    /// A decline without a fix.
    pub fn new(code: &'static str, why: impl Into<String>) -> Self {
        Self { code, why: why.into(), fix: None }
    }

    /// Adds the fix.
    #[must_use]
    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// One counter a backend reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterInfo {
    /// Its name (`package-0`, `gpu0 NVIDIA …`).
    pub name: String,
    /// Where it was found (a sysfs path, an NVML device index).
    pub source: String,
    /// The counter's range, µJ, where it wraps; `None` where a decrease is a reset.
    pub max_range_uj: Option<u64>,
}

/// One reading of a board's draw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "draw", rename_all = "kebab-case")]
pub enum DrawReading {
    /// The platform exposes no draw for this counter's board.
    NotExposed,
    /// The draw is exposed but this read failed.
    Unreadable {
        /// What the read said.
        detail: String,
    },
    /// A draw sample, mW.
    Sample {
        /// Milliwatts.
        mw: u64,
    },
}

/// A counter rung's hardware (or its test double).
pub trait CounterBackend: Send + fmt::Debug {
    /// Which rung this backend serves.
    fn rung(&self) -> RungId;

    /// Finds the counters; a decline says why the rung cannot be used here.
    fn open(&mut self) -> Result<Vec<CounterInfo>, Decline>;

    /// Reads every counter, in the order `open` gave, as µJ. `now_ns` is the
    /// meter's monotonic time of the read (real readers ignore it; trace
    /// replays read the value published at that time).
    fn read(&mut self, now_ns: u64) -> Result<Vec<u64>, String>;

    /// Each counter's board maximum power limit, mW, where readable (§5 plausibility).
    fn power_limits_mw(&mut self) -> Vec<Option<u64>> {
        Vec::new()
    }

    /// Each counter's board draw now.
    fn read_draw(&mut self, _now_ns: u64) -> Vec<DrawReading> {
        Vec::new()
    }

    /// What the backend saw and left out (e.g. RAPL zones not summed), for the probe report.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the liveness probe burns CPU (RAPL: yes; NVML cannot load the GPU).
    fn probe_burns_cpu(&self) -> bool {
        self.rung() == RungId::Rapl
    }
}
