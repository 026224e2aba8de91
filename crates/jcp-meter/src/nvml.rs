//! §5.1 rung 2: the NVML GPU total-energy counter → `HwShunt`, `Partial`.
//!
//! `libnvidia-ml` is loaded at run time by `nvml-wrapper`; a machine without
//! the driver declines the rung with the reason, and runs on. The counter is
//! read in mJ and carried in µJ. It has no wrap range: a decrease is a reset
//! (a driver reload), not a wrap. The board's maximum power limit and its
//! instantaneous draw are the independent bounds of §5 plausibility.

use std::fmt;

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

use crate::backend::{CounterBackend, CounterInfo, Decline, DrawReading, RungId};

/// Reads every NVIDIA GPU's total-energy counter.
pub struct NvmlReader {
    nvml: Option<Nvml>,
    devices: Vec<u32>,
}

impl fmt::Debug for NvmlReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvmlReader").field("loaded", &self.nvml.is_some()).field("devices", &self.devices).finish()
    }
}

impl Default for NvmlReader {
    fn default() -> Self {
        Self::new()
    }
}

impl NvmlReader {
    /// A reader; nothing is loaded until `open`.
    pub fn new() -> Self {
        Self { nvml: None, devices: Vec::new() }
    }
}

const DRIVER_FIX: &str = "If this machine has an NVIDIA GPU, install the NVIDIA driver (it ships libnvidia-ml.so.1); otherwise there is nothing to do and the meter uses a lower rung.";

fn init_decline(e: &NvmlError) -> Decline {
    match e {
        NvmlError::LibloadingError(inner) => Decline::new(
            "nvml-library-missing",
            format!("libnvidia-ml could not be loaded ({inner}): no NVIDIA driver on this machine"),
        )
        .with_fix(DRIVER_FIX),
        NvmlError::LibraryNotFound => {
            Decline::new("nvml-library-missing", "libnvidia-ml was not found").with_fix(DRIVER_FIX)
        }
        NvmlError::DriverNotLoaded => Decline::new("nvml-driver-not-loaded", "the NVIDIA kernel driver is not loaded")
            .with_fix("Load the driver (`sudo modprobe nvidia`) or reboot after installing it."),
        NvmlError::NoPermission => Decline::new("nvml-no-permission", "NVML refused this user")
            .with_fix("Run as a user with access to /dev/nvidia*."),
        other => Decline::new("nvml-init-failed", format!("NVML did not initialise: {other}")),
    }
}

impl CounterBackend for NvmlReader {
    fn rung(&self) -> RungId {
        RungId::Nvml
    }

    fn open(&mut self) -> Result<Vec<CounterInfo>, Decline> {
        self.devices.clear();
        let nvml = Nvml::init().map_err(|e| init_decline(&e))?;
        let count = nvml
            .device_count()
            .map_err(|e| Decline::new("nvml-init-failed", format!("NVML could not count devices: {e}")))?;
        if count == 0 {
            return Err(Decline::new("nvml-no-device", "NVML is loaded but reports no GPU"));
        }
        let mut infos = Vec::new();
        for i in 0..count {
            let dev =
                nvml.device_by_index(i).map_err(|e| Decline::new("nvml-device-unreadable", format!("GPU {i}: {e}")))?;
            let name = dev.name().unwrap_or_else(|_| "unnamed".to_owned());
            match dev.total_energy_consumption() {
                Ok(_) => {}
                Err(NvmlError::NotSupported) => {
                    // Every GPU's counter must be read or the figure claims a domain it does not read.
                    return Err(Decline::new(
                        "nvml-energy-counter-unsupported",
                        format!("GPU {i} ({name}) has no total-energy counter (NVML reports it from Volta on)"),
                    ));
                }
                Err(e) => {
                    return Err(Decline::new(
                        "nvml-device-unreadable",
                        format!("GPU {i} ({name}): total energy unreadable: {e}"),
                    ))
                }
            }
            self.devices.push(i);
            infos.push(CounterInfo {
                name: format!("gpu{i} {name}"),
                source: format!("nvml device {i}"),
                max_range_uj: None,
            });
        }
        self.nvml = Some(nvml);
        Ok(infos)
    }

    fn read(&mut self, _now_ns: u64) -> Result<Vec<u64>, String> {
        let nvml = self.nvml.as_ref().ok_or("NVML is not open")?;
        self.devices
            .iter()
            .map(|&i| {
                let dev = nvml.device_by_index(i).map_err(|e| format!("GPU {i}: {e}"))?;
                let mj = dev.total_energy_consumption().map_err(|e| format!("GPU {i}: {e}"))?;
                mj.checked_mul(1000).ok_or_else(|| format!("GPU {i}: counter {mj} mJ overflows µJ"))
            })
            .collect()
    }

    fn power_limits_mw(&mut self) -> Vec<Option<u64>> {
        let Some(nvml) = self.nvml.as_ref() else {
            return vec![None; self.devices.len()];
        };
        self.devices
            .iter()
            .map(|&i| {
                let dev = nvml.device_by_index(i).ok()?;
                // The board's maximum limit; the enforced one where the range is not readable.
                dev.power_management_limit_constraints()
                    .map(|c| u64::from(c.max_limit))
                    .or_else(|_| dev.enforced_power_limit().map(u64::from))
                    .ok()
                    .filter(|l| *l > 0)
            })
            .collect()
    }

    fn read_draw(&mut self, _now_ns: u64) -> Vec<DrawReading> {
        let Some(nvml) = self.nvml.as_ref() else {
            return vec![DrawReading::NotExposed; self.devices.len()];
        };
        self.devices
            .iter()
            .map(|&i| match nvml.device_by_index(i).and_then(|d| d.power_usage()) {
                Ok(mw) => DrawReading::Sample { mw: u64::from(mw) },
                Err(NvmlError::NotSupported) => DrawReading::NotExposed,
                Err(e) => DrawReading::Unreadable { detail: e.to_string() },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s5_1_nvml_missing_driver_is_a_declined_rung_not_a_failure() {
        let mut r = NvmlReader::new();
        match r.open() {
            // This build machine has no NVIDIA driver: the rung is declined with a reason.
            Err(d) => {
                assert!(d.code.starts_with("nvml-"), "{d:?}");
                assert!(!d.why.is_empty());
            }
            // On a machine with a GPU, the counters are real.
            Ok(c) => assert!(!c.is_empty()),
        }
    }

    #[test]
    fn s5_1_nvml_library_missing_has_a_fix() {
        let d = init_decline(&NvmlError::LibraryNotFound);
        assert_eq!(d.code, "nvml-library-missing");
        assert!(d.fix.is_some());
    }
}
