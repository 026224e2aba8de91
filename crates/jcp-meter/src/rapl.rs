//! §5.1 rung 1: RAPL package counters from Linux powercap sysfs.
//!
//! Only top-level zones of the `intel-rapl` control type whose `name` is
//! `package-<n>` (or `package-<n>-die-<m>` on multi-die parts) are read, every
//! socket's, each wrap-corrected at its own `max_energy_range_uj`. Nothing else
//! is summed or probed: `psys` already includes the packages, `dram` is not CPU
//! energy, sub-zones (`intel-rapl:0:0`) are parts of their package, and
//! `intel-rapl-mmio:*` zones republish the same package counters through
//! another interface (summing them beside the MSR zones counts twice).
//!
//! The sysfs root is configurable (default `/sys/class/powercap`) so tests lay
//! out fake trees with the same shape.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::backend::{CounterBackend, CounterInfo, Decline, RungId};

/// The default powercap root.
pub const POWERCAP_ROOT: &str = "/sys/class/powercap";

/// The fix for a root-only `energy_uj` (Linux ≥ 5.10, CVE-2020-8694).
pub const PERMISSION_FIX: &str = "energy_uj is readable by root only (Linux 5.10+, CVE-2020-8694). Run as root, or grant read access until reboot: `sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj`; to keep it, add a udev rule such as /etc/udev/rules.d/70-rapl.rules: SUBSYSTEM==\"powercap\", ACTION==\"add\", RUN+=\"/bin/chmod a+r /sys%p/energy_uj\" (this lets any local user read package energy; that is the side channel the kernel closed, so decide whether that is acceptable here).";

/// A zone seen and left out, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedZone {
    /// The sysfs entry.
    pub entry: String,
    /// Its `name`, where readable.
    pub name: Option<String>,
    /// Why it is not summed.
    pub why: String,
}

#[derive(Debug, Clone)]
struct Zone {
    name: String,
    energy: PathBuf,
    max_range: u64,
    /// The largest power limit the zone publishes, mW ([`zone_power_limit_mw`]).
    limit_mw: Option<u64>,
}

/// How the reader reads one sysfs file (the real one is [`read_file`]).
/// Tests that run as root substitute a reader that honours the fake tree's
/// permission bits as an unprivileged user would meet them.
pub type ReadFn = fn(&Path) -> std::io::Result<String>;

/// Reads a sysfs file, trimmed.
pub fn read_file(p: &Path) -> std::io::Result<String> {
    fs::read_to_string(p).map(|s| s.trim().to_owned())
}

/// Reads RAPL package counters under a powercap root.
#[derive(Debug, Clone)]
pub struct RaplReader {
    root: PathBuf,
    zones: Vec<Zone>,
    skipped: Vec<SkippedZone>,
    read: ReadFn,
}

/// Whether `name` is `package-<n>` or `package-<n>-die-<m>`.
pub fn is_package_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some(rest) = name.strip_prefix("package-") else {
        return false;
    };
    match rest.split_once("-die-") {
        Some((p, d)) => digits(p) && digits(d),
        None => digits(rest),
    }
}

/// Splits `intel-rapl:0` into (`intel-rapl`, [`0`]); `None` for a control-type entry.
fn split_zone(entry: &str) -> Option<(&str, Vec<&str>)> {
    let mut parts = entry.split(':');
    let control = parts.next()?;
    let idx: Vec<&str> = parts.collect();
    if idx.is_empty() || idx.iter().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some((control, idx))
}

impl RaplReader {
    /// A reader over `root` (use [`POWERCAP_ROOT`] for the real one).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self::with_read_fn(root, read_file)
    }

    /// A reader over `root` that reads files with `read`.
    pub fn with_read_fn(root: impl Into<PathBuf>, read: ReadFn) -> Self {
        Self { root: root.into(), zones: Vec::new(), skipped: Vec::new(), read }
    }

    /// The zones seen and left out by the last `open`.
    pub fn skipped(&self) -> &[SkippedZone] {
        &self.skipped
    }

    fn skip(&mut self, entry: &str, name: Option<String>, why: impl Into<String>) {
        self.skipped.push(SkippedZone { entry: entry.to_owned(), name, why: why.into() });
    }
}

impl RaplReader {
    /// The root's entries, sorted; declined where there is no powercap interface or it cannot be listed.
    fn list_entries(&self) -> Result<Vec<String>, Decline> {
        let root = self.root.display().to_string();
        let entries = match fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(Decline::new(
                    "rapl-no-powercap",
                    format!("{root} does not exist: this kernel exposes no powercap interface (no RAPL driver loaded, or a virtual machine or container that does not pass RAPL through)"),
                )
                .with_fix("On bare-metal Intel or AMD Linux load the driver: `sudo modprobe intel_rapl_msr` (AMD packages need Linux 5.8+). Virtual machines and most containers do not expose RAPL; the meter falls back to a lower rung."));
            }
            Err(e) => {
                return Err(Decline::new("rapl-unreadable", format!("cannot list {root}: {e}"))
                    .with_fix(format!("Make {root} listable by this user.")));
            }
        };
        let mut names: Vec<String> =
            entries.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned())).collect();
        names.sort();
        Ok(names)
    }

    /// Whether `entry` is a top-level `intel-rapl` zone named `package-<n>`
    /// not seen before: its name and directory, or `None` (recorded as
    /// skipped, with why, unless it is not a zone at all).
    fn package_zone(&mut self, entry: &str) -> Option<(String, PathBuf)> {
        let (control, idx) = split_zone(entry)?;
        let dir = self.root.join(entry);
        let name = (self.read)(&dir.join("name")).ok();
        if control != "intel-rapl" {
            let why = if control == "intel-rapl-mmio" {
                "an MMIO zone republishes the package counters of the MSR interface: summing both counts twice"
            } else {
                "not a RAPL control type"
            };
            self.skip(entry, name, why);
            return None;
        }
        if idx.len() != 1 {
            self.skip(entry, name, "a sub-zone (part of its package), not a top-level package zone");
            return None;
        }
        let Some(name) = name else {
            self.skip(entry, None, "its name file is unreadable");
            return None;
        };
        if !is_package_name(&name) {
            let why = match name.as_str() {
                "psys" => "psys already includes the packages: summing it beside them counts their energy twice",
                "dram" => "a dram zone is not CPU energy",
                _ => "not a package-<n> zone",
            };
            self.skip(entry, Some(name), why);
            return None;
        }
        if self.zones.iter().any(|z| z.name == name) {
            self.skip(entry, Some(name), "a second zone with the same package name: read once");
            return None;
        }
        Some((name, dir))
    }

    /// Opens a package zone: its wrap range must be a positive integer and
    /// its counter readable. A counter only root may read is noted in
    /// `permission_denied` and the zone kept for now, so that every such path
    /// is named at once before the rung is declined.
    fn open_zone(
        &self,
        entry: &str,
        name: String,
        dir: &Path,
        permission_denied: &mut Vec<String>,
    ) -> Result<Zone, Decline> {
        let max_range = match (self.read)(&dir.join("max_energy_range_uj")).map(|s| s.parse::<u64>()) {
            Ok(Ok(m)) if m > 0 => m,
            Ok(_) => {
                return Err(Decline::new("rapl-no-range", format!("{entry} ({name}): max_energy_range_uj is not a positive integer, so a wrap cannot be corrected")));
            }
            Err(e) => {
                return Err(Decline::new(
                    "rapl-no-range",
                    format!("{entry} ({name}): max_energy_range_uj unreadable: {e}"),
                ));
            }
        };
        let energy = dir.join("energy_uj");
        match (self.read)(&energy) {
            Ok(s) if s.parse::<u64>().is_ok() => {}
            Ok(s) => {
                return Err(Decline::new(
                    "rapl-unreadable",
                    format!("{}: `{s}` is not a counter value", energy.display()),
                ));
            }
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                permission_denied.push(energy.display().to_string());
            }
            Err(e) => {
                return Err(Decline::new("rapl-unreadable", format!("{}: {e}", energy.display())));
            }
        }
        let limit_mw = zone_power_limit_mw(dir, self.read);
        Ok(Zone { name, energy, max_range, limit_mw })
    }

    /// The decline when no package zone was found, naming what was seen instead.
    fn no_package_zone_decline(&self) -> Decline {
        let root = self.root.display().to_string();
        let seen = if self.skipped.is_empty() {
            "no zones at all".to_owned()
        } else {
            format!(
                "only {}",
                self.skipped
                    .iter()
                    .map(|s| format!("{} ({})", s.entry, s.name.as_deref().unwrap_or("?")))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Decline::new("rapl-no-package-zone", format!("{root} has no top-level package-<n> zone: {seen}"))
            .with_fix("This CPU or kernel publishes no RAPL package counter; the meter falls back to a lower rung.")
    }
}

/// The decline when some package counters are readable by root only: a counter this user cannot read gives no figure.
fn permission_denied_decline(paths: &[String]) -> Decline {
    let n = paths.len();
    Decline::new(
        "rapl-permission-denied",
        format!("permission denied reading {} ({n} package counter{}); a counter this user cannot read gives no figure, never a zero", paths.join(", "), if n == 1 { "" } else { "s" }),
    )
    .with_fix(PERMISSION_FIX)
}

impl CounterBackend for RaplReader {
    fn rung(&self) -> RungId {
        RungId::Rapl
    }

    fn open(&mut self) -> Result<Vec<CounterInfo>, Decline> {
        self.zones.clear();
        self.skipped.clear();
        let mut permission_denied = Vec::new();
        for entry in self.list_entries()? {
            let Some((name, dir)) = self.package_zone(&entry) else {
                continue;
            };
            let zone = self.open_zone(&entry, name, &dir, &mut permission_denied)?;
            self.zones.push(zone);
        }
        if !permission_denied.is_empty() {
            self.zones.clear();
            return Err(permission_denied_decline(&permission_denied));
        }
        if self.zones.is_empty() {
            return Err(self.no_package_zone_decline());
        }
        Ok(self
            .zones
            .iter()
            .map(|z| CounterInfo {
                name: z.name.clone(),
                source: z.energy.display().to_string(),
                max_range_uj: Some(z.max_range),
            })
            .collect())
    }

    /// Each package's largest published power limit (§5 plausibility, and the
    /// rate [`wrap_bound_mw`] starts from): [`zone_power_limit_mw`].
    fn power_limits_mw(&mut self) -> Vec<Option<u64>> {
        self.zones.iter().map(|z| z.limit_mw).collect()
    }

    fn notes(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|z| format!("left out {} ({}): {}", z.entry, z.name.as_deref().unwrap_or("?"), z.why))
            .collect()
    }

    fn read(&mut self, _now_ns: u64) -> Result<Vec<u64>, String> {
        self.zones
            .iter()
            .map(|z| {
                let s = (self.read)(&z.energy).map_err(|e| format!("{}: {e}", z.energy.display()))?;
                let v =
                    s.parse::<u64>().map_err(|_| format!("{}: `{s}` is not a counter value", z.energy.display()))?;
                if v > z.max_range {
                    return Err(format!("{}: {v} exceeds max_energy_range_uj {}", z.energy.display(), z.max_range));
                }
                Ok(v)
            })
            .collect()
    }
}

/// The advance of a counter with range `max` from `a` to `b`, wrap-corrected.
/// The counter runs over `0..=max` and steps from `max` back to `0`, so a
/// value below its predecessor advanced `(max − a) + 1 + b`. (The kernel's
/// step is one energy unit, ~15–61 µJ, which sysfs does not publish; counting
/// it as 1 µJ is exact for µJ-grained counters and at most one unit short per
/// wrap on hardware: docs/decisions.md, "§5.1 RAPL wrap".) One wrap per
/// interval at most: the meter reads every counter often enough that one
/// interval cannot hold two ([`wrap_time_ns`], [`may_hide_a_wrap`]).
pub fn wrap_delta(a: u64, b: u64, max: u64) -> u64 {
    if b >= a {
        b - a
    } else {
        max.saturating_sub(a).saturating_add(1).saturating_add(b)
    }
}

/// The largest power limit a package zone publishes, mW: the greatest
/// positive `constraint_<n>_power_limit_uw` or `constraint_<n>_max_power_uw`
/// in its directory (long-term, short-term and peak limits alike: a package
/// may run above its long-term limit for a while, never above all of them),
/// rounded up to the next mW. `None` where none is readable. Read through
/// `read`, so a limit only root may read is no limit here.
pub fn zone_power_limit_mw(dir: &Path, read: ReadFn) -> Option<u64> {
    let entries = fs::read_dir(dir).ok()?;
    entries
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|f| is_power_limit_file(f))
        .filter_map(|f| read(&dir.join(&f)).ok()?.parse::<u64>().ok())
        .filter(|uw| *uw > 0)
        .max()
        .map(|uw| uw.div_ceil(1000))
}

/// `constraint_<n>_power_limit_uw` or `constraint_<n>_max_power_uw`.
fn is_power_limit_file(f: &str) -> bool {
    let Some(rest) = f.strip_prefix("constraint_") else {
        return false;
    };
    let Some((n, what)) = rest.split_once('_') else {
        return false;
    };
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && matches!(what, "power_limit_uw" | "max_power_uw")
}

/// The rate taken as the fastest a package counter can run where its zone
/// publishes no power limit: 2 kW (docs/decisions.md, "§5.1 RAPL sampling").
pub const UNBOUNDED_PACKAGE_MW: u64 = 2_000_000;

/// The fastest a wrapping counter is taken to run when ruling out a hidden
/// wrap, mW: twice its largest published power limit, or
/// [`UNBOUNDED_PACKAGE_MW`] where it publishes none.
pub fn wrap_bound_mw(limit_mw: Option<u64>) -> u64 {
    limit_mw.map_or(UNBOUNDED_PACKAGE_MW, |l| l.saturating_mul(2)).max(1)
}

/// How long a counter over `0..=max` µJ takes to wrap running at `bound_mw`, ns.
pub fn wrap_time_ns(max: u64, bound_mw: u64) -> u64 {
    let ns = (u128::from(max) + 1) * 1_000_000 / u128::from(bound_mw.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Whether an interval of `span_ns` whose wrap-corrected advance was `delta`
/// µJ could have hidden a whole further wrap of a counter over `0..=max`
/// running at no more than `bound_mw`: it could where `bound × span` reaches
/// `delta + max + 1` µJ. Exact integer arithmetic.
pub fn may_hide_a_wrap(delta: u64, span_ns: u64, max: u64, bound_mw: u64) -> bool {
    u128::from(bound_mw) * u128::from(span_ns) >= (u128::from(delta) + u128::from(max) + 1) * 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s5_1_package_zone_names() {
        for ok in ["package-0", "package-12", "package-0-die-1"] {
            assert!(is_package_name(ok), "{ok}");
        }
        for bad in [
            "psys",
            "dram",
            "core",
            "uncore",
            "package-",
            "package-x",
            "package-0-die-",
            "Package-0",
            "package-0-core-1",
        ] {
            assert!(!is_package_name(bad), "{bad}");
        }
    }

    #[test]
    fn s5_1_wrap_hidden_only_where_the_bound_could_run_a_whole_range() {
        // 100 J range at a 2 kW bound: 50 ms per wrap.
        assert_eq!(wrap_time_ns(99_999_999, 2_000_000), 50_000_000);
        assert!(!may_hide_a_wrap(0, 49_999_999, 99_999_999, 2_000_000));
        assert!(may_hide_a_wrap(0, 50_000_000, 99_999_999, 2_000_000));
        // What the interval did show counts: 10 J seen leaves 90 J short of a second wrap.
        assert!(!may_hide_a_wrap(10_000_000, 54_999_999, 99_999_999, 2_000_000));
        assert!(may_hide_a_wrap(10_000_000, 55_000_000, 99_999_999, 2_000_000));
        assert_eq!(wrap_bound_mw(Some(30_000)), 60_000);
        assert_eq!(wrap_bound_mw(None), UNBOUNDED_PACKAGE_MW);
    }

    #[test]
    fn s5_plausibility_rapl_power_limit_is_the_largest_published_constraint() {
        let dir = tempfile::tempdir().unwrap();
        let w = |f: &str, v: &str| fs::write(dir.path().join(f), v).unwrap();
        assert_eq!(zone_power_limit_mw(dir.path(), read_file), None);
        w("constraint_0_power_limit_uw", "15000000\n");
        w("constraint_0_max_power_uw", "0\n"); // unset: not a limit
        w("constraint_1_power_limit_uw", "28000500\n");
        w("constraint_2_power_limit_uw", "junk\n");
        w("constraint_1_time_window_us", "2440\n");
        w("constraint_x_power_limit_uw", "99000000\n");
        assert_eq!(zone_power_limit_mw(dir.path(), read_file), Some(28_001));
        w("constraint_0_max_power_uw", "35000000\n");
        assert_eq!(zone_power_limit_mw(dir.path(), read_file), Some(35_000));
    }

    #[test]
    fn s5_1_wrap_is_corrected_at_its_own_range() {
        assert_eq!(wrap_delta(10, 25, 100), 15);
        assert_eq!(wrap_delta(95, 5, 100), 11); // 96..=100, 0..=5
        assert_eq!(wrap_delta(262_143_328_000, 1_000, 262_143_328_850), 1_851);
    }
}
