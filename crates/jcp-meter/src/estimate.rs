//! §5.1 rungs 5 and 6: time × a host-calibrated power (`ModelBased`) and the
//! estimate, utilisation × a documented default power (`Estimator`).
//!
//! ## The documented default power (rung 6)
//! Nothing on this host calibrated it, so the figure is graded `Estimator`:
//!
//! `P = DEFAULT_BASE_MW + utilisation × logical_cpus × DEFAULT_PER_CPU_MW`
//!
//! with a 5 W base and 4 W per logical CPU at full utilisation — a round
//! figure for desktop- and laptop-class x86 cores under load, not a
//! measurement. Where utilisation cannot be read the estimate assumes full
//! load (the figure can only be too high, which spends a budget sooner rather
//! than admitting work it cannot cover) and says so on the window.
//!
//! ## Calibration (rung 5)
//! A [`Calibration`] is an active power measured on a host against a live
//! counter, stored with where it was measured ([`HostId`]). It is applied
//! only on that host; anywhere else it is another host's calibration, which
//! §5.1 counts as an estimate, and the meter refuses it.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::backend::RungId;
use crate::Error;

/// The estimate's base power, mW (documented default; see the module docs).
pub const DEFAULT_BASE_MW: u64 = 5_000;
/// The estimate's power per logical CPU at full utilisation, mW.
pub const DEFAULT_PER_CPU_MW: u64 = 4_000;

/// µJ for `mw` over `span_ns` (mW × ns = 10⁻⁶ µJ), rounded down.
pub fn energy_uj(mw: u64, span_ns: u64) -> u64 {
    u64::try_from(u128::from(mw) * u128::from(span_ns) / 1_000_000).unwrap_or(u64::MAX)
}

/// The estimator's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EstimatorConfig {
    /// Base power, mW.
    pub base_mw: u64,
    /// Power per logical CPU at full utilisation, mW.
    pub per_cpu_mw: u64,
}

impl Default for EstimatorConfig {
    fn default() -> Self {
        Self { base_mw: DEFAULT_BASE_MW, per_cpu_mw: DEFAULT_PER_CPU_MW }
    }
}

impl EstimatorConfig {
    /// The estimated power at `util_permille` (0..=1000) on `cpus` logical CPUs.
    pub fn power_mw(&self, util_permille: u32, cpus: u32) -> u64 {
        let util = u64::from(util_permille.min(1000));
        self.base_mw.saturating_add(self.per_cpu_mw.saturating_mul(u64::from(cpus)).saturating_mul(util) / 1000)
    }
}

/// CPU utilisation over the interval since the previous sample.
pub trait UtilSource: Send + fmt::Debug {
    /// Utilisation in ‰ since the previous call; `None` when unreadable.
    fn sample(&mut self, now_ns: u64) -> Option<u32>;
    /// Logical CPUs.
    fn logical_cpus(&self) -> u32;
}

/// Utilisation from `sysinfo` (`/proc/stat` on Linux).
pub struct SysinfoUtil {
    sys: sysinfo::System,
    cpus: u32,
}

impl fmt::Debug for SysinfoUtil {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SysinfoUtil").field("cpus", &self.cpus).finish_non_exhaustive()
    }
}

impl Default for SysinfoUtil {
    fn default() -> Self {
        Self::new()
    }
}

impl SysinfoUtil {
    /// Starts sampling (the first sample primes the counters).
    pub fn new() -> Self {
        let mut sys = sysinfo::System::new_with_specifics(
            sysinfo::RefreshKind::nothing().with_cpu(sysinfo::CpuRefreshKind::nothing().with_cpu_usage()),
        );
        sys.refresh_cpu_usage();
        let cpus = u32::try_from(sys.cpus().len()).unwrap_or(u32::MAX).max(1);
        Self { sys, cpus }
    }
}

impl UtilSource for SysinfoUtil {
    fn sample(&mut self, _now_ns: u64) -> Option<u32> {
        self.sys.refresh_cpu_usage();
        let u = self.sys.global_cpu_usage();
        if u.is_finite() && u >= 0.0 {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "percent → per mille, clamped to full load: the cast is of a finite value in 0..=1000"
            )]
            Some((u * 10.0).round().min(1000.0) as u32)
        } else {
            None
        }
    }

    fn logical_cpus(&self) -> u32 {
        self.cpus
    }
}

/// A fixed utilisation (tests, replays).
#[derive(Debug, Clone, Copy)]
pub struct FixedUtil {
    /// ‰, or `None` for unreadable.
    pub permille: Option<u32>,
    /// Logical CPUs.
    pub cpus: u32,
}

impl UtilSource for FixedUtil {
    fn sample(&mut self, _now_ns: u64) -> Option<u32> {
        self.permille
    }
    fn logical_cpus(&self) -> u32 {
        self.cpus
    }
}

/// Where a measurement was taken (§5.1 rung 5, §5.4 baselines).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostId {
    /// The host name.
    pub hostname: String,
    /// blake3 of `/etc/machine-id` (first 16 hex digits), where readable.
    pub machine: Option<String>,
    /// The CPU model.
    pub cpu: String,
    /// Logical CPUs.
    pub logical_cpus: u32,
    /// The operating system (`linux`, `macos`, …).
    pub os: String,
}

impl HostId {
    /// This host.
    pub fn this_host() -> Self {
        let mut sys = sysinfo::System::new_with_specifics(
            sysinfo::RefreshKind::nothing().with_cpu(sysinfo::CpuRefreshKind::nothing()),
        );
        sys.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
        let cpu = sys.cpus().first().map_or_else(|| "unknown".to_owned(), |c| c.brand().trim().to_owned());
        let machine = std::fs::read("/etc/machine-id").ok().map(|b| hex::encode(&blake3::hash(&b).as_bytes()[..8]));
        Self {
            hostname: sysinfo::System::host_name().unwrap_or_else(|| "unknown".to_owned()),
            machine,
            cpu,
            logical_cpus: u32::try_from(sys.cpus().len()).unwrap_or(u32::MAX),
            os: std::env::consts::OS.to_owned(),
        }
    }
}

impl fmt::Display for HostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}, {} logical CPUs, {}", self.hostname, self.cpu, self.logical_cpus, self.os)?;
        if let Some(m) = &self.machine {
            write!(f, ", machine {m}")?;
        }
        f.write_str(")")
    }
}

/// The calibration file format tag.
pub const CALIBRATION_FORMAT: &str = "jcp-meter-calibration/1";

/// Where a calibration's power came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationSource {
    /// The counter rung measured against (only `rapl`: the CPU package domain).
    pub rung: RungId,
    /// The counters summed.
    pub counters: Vec<String>,
    /// The content id (blake3, hex) of the recorded trace, when calibrated from one.
    pub trace: Option<String>,
    /// The load applied while measuring.
    pub load: String,
}

/// An active power measured on a host against a live counter (§5.1 rung 5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// [`CALIBRATION_FORMAT`].
    pub format: String,
    /// The measured active power, mW.
    pub active_mw: u64,
    /// Where it was measured.
    pub measured_on: HostId,
    /// What it was measured against.
    pub source: CalibrationSource,
    /// The span measured, ns.
    pub span_ns: u64,
    /// The energy the counters read over the span, µJ.
    pub energy_uj: u64,
    /// When (Unix ms).
    pub measured_at_unix_ms: u64,
}

impl Calibration {
    /// Reads a stored calibration, refusing anything malformed.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let c: Self = serde_json::from_str(text).map_err(|e| Error::CalibrationMalformed { detail: e.to_string() })?;
        if c.format != CALIBRATION_FORMAT {
            return Err(Error::CalibrationMalformed {
                detail: format!("format `{}` is not `{CALIBRATION_FORMAT}`", c.format),
            });
        }
        if c.source.rung != RungId::Rapl {
            return Err(Error::CalibrationWrongDomain {
                detail: format!(
                    "measured against `{}`; only the RAPL package counters read the CPU domain the estimate covers",
                    c.source.rung
                ),
            });
        }
        if c.span_ns == 0 || c.active_mw == 0 {
            return Err(Error::CalibrationMalformed { detail: "a calibration over no time or at no power".into() });
        }
        if energy_uj(c.active_mw, c.span_ns).abs_diff(c.energy_uj) > c.energy_uj / 1000 + 1 {
            return Err(Error::CalibrationMalformed {
                detail: format!(
                    "active_mw {} does not follow from {} µJ over {} ns",
                    c.active_mw, c.energy_uj, c.span_ns
                ),
            });
        }
        Ok(c)
    }

    /// Loads a calibration file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.display().to_string(), detail: e.to_string() })?;
        Self::from_json(&text)
    }

    /// Writes it as pretty JSON.
    pub fn store(&self, path: &Path) -> Result<(), Error> {
        let io = |e: &dyn fmt::Display| Error::Io { path: path.display().to_string(), detail: e.to_string() };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io(&e))?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| io(&e))?;
        std::fs::write(path, text + "\n").map_err(|e| io(&e))
    }

    /// Refuses a calibration measured on another host.
    pub fn check_host(&self, here: &HostId) -> Result<(), Error> {
        if &self.measured_on == here {
            Ok(())
        } else {
            Err(Error::CalibrationMeasuredElsewhere {
                measured_on: self.measured_on.to_string(),
                here: here.to_string(),
            })
        }
    }

    /// Builds a calibration from a counter advance.
    pub fn from_measurement(
        energy_uj: u64,
        span_ns: u64,
        measured_on: HostId,
        source: CalibrationSource,
        measured_at_unix_ms: u64,
    ) -> Result<Self, Error> {
        if span_ns == 0 {
            return Err(Error::ZeroSpan);
        }
        let active_mw = crate::plausibility::rate_mw(energy_uj, span_ns);
        if active_mw == 0 {
            return Err(Error::NoLiveCounter { detail: "the counter advanced by less than 1 mW over the span".into() });
        }
        Ok(Self {
            format: CALIBRATION_FORMAT.into(),
            active_mw,
            measured_on,
            source,
            span_ns,
            energy_uj,
            measured_at_unix_ms,
        })
    }
}

/// The default calibration path: `$XDG_CONFIG_HOME/jcp/meter-calibration.json`
/// (or `~/.config/jcp/…`).
pub fn default_calibration_path() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".config")))?;
    Some(base.join("jcp").join("meter-calibration.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> HostId {
        HostId {
            hostname: name.into(),
            machine: Some("00".into()),
            cpu: "test".into(),
            logical_cpus: 4,
            os: "linux".into(),
        }
    }

    fn src() -> CalibrationSource {
        CalibrationSource {
            rung: RungId::Rapl,
            counters: vec!["package-0".into()],
            trace: None,
            load: "all CPUs".into(),
        }
    }

    #[test]
    fn s5_1_estimate_power_is_utilisation_times_default() {
        let c = EstimatorConfig::default();
        assert_eq!(c.power_mw(0, 2), 5_000);
        assert_eq!(c.power_mw(500, 2), 9_000);
        assert_eq!(c.power_mw(1000, 2), 13_000);
        assert_eq!(c.power_mw(5000, 2), 13_000, "utilisation is clamped to full load");
        assert_eq!(energy_uj(9_000, 1_000_000_000), 9_000_000);
    }

    #[test]
    fn s5_1_rung5_calibration_from_another_host_is_refused() {
        let c = Calibration::from_measurement(30_000_000, 1_000_000_000, host("a"), src(), 0).unwrap();
        assert_eq!(c.active_mw, 30_000);
        assert!(c.check_host(&host("a")).is_ok());
        assert_eq!(c.check_host(&host("b")).unwrap_err().code(), "calibration-measured-elsewhere");
    }

    #[test]
    fn s5_1_rung5_calibration_round_trips_and_refuses_tampering() {
        let c = Calibration::from_measurement(30_000_000, 1_000_000_000, host("a"), src(), 7).unwrap();
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(Calibration::from_json(&text).unwrap(), c);
        let tampered = text.replace("\"active_mw\":30000", "\"active_mw\":3000");
        assert_eq!(Calibration::from_json(&tampered).unwrap_err().code(), "calibration-malformed");
        let nvml = text.replace("\"rung\":\"rapl\"", "\"rung\":\"nvml\"");
        assert_eq!(Calibration::from_json(&nvml).unwrap_err().code(), "calibration-wrong-domain");
        let extra = text.replacen('{', "{\"x\":1,", 1);
        assert_eq!(Calibration::from_json(&extra).unwrap_err().code(), "calibration-malformed");
    }
}
