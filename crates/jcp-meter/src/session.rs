//! Recorded sessions (`jcp-meter-session/1`): the meter's windows written to
//! a file, each with its provenance, coverage and rung, so the layers above
//! the meter (§5.4 dynamism, §5.5 conservation, §5.6 bounds) can be run over
//! them later, by `jcp energy` or the console.
//!
//! ```json
//! {"format":"jcp-meter-session/1",
//!  "host":{"hostname":"h","machine":null,"cpu":"c","logical_cpus":8,"os":"linux"},
//!  "occupancy":"idle","interval_ns":1000000000,"replay_of":null,
//!  "windows":[{"seq":0,"start_ns":0,"end_ns":1000000000,"start_unix_ms":0,"end_unix_ms":1000,
//!              "energy_uj":7000000,"provenance":"HwShunt","coverage":"Whole","rung":"rapl",
//!              "declined":[],"gap":null}]}
//! ```
//!
//! [`Session::from_bytes`] refuses, by file and field: another format tag,
//! unknown or duplicate fields, no window, a zero-length window, windows out
//! of order or overlapping ([`Error::WindowsOverlap`]: a sum over them would
//! count joules twice), a figure without its grade or a gap with one, and a
//! grade better than the window's rung gives ([`Error::WindowGradeOverclaimed`]).
//! Counter deltas and plausibility details stay in the live stream
//! (`jcp meter --json`); the session keeps what the layers above read.

use std::path::Path;

use jcp::energy::{Coverage, Provenance};
use serde::{Deserialize, Serialize};

use crate::backend::RungId;
use crate::declared::{decode, malformed, read_file, write_file, FileFormat};
use crate::estimate::HostId;
use crate::meter::{Window, WindowDecline};
use crate::Error;

/// The session file's tag.
pub const SESSION_FORMAT: &str = "jcp-meter-session/1";

/// A rung above the one that metered a window, and why it did not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionDecline {
    /// The rung.
    pub rung: RungId,
    /// Its reason code.
    pub code: String,
    /// Why.
    pub why: String,
}

/// One recorded window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionWindow {
    /// Sequence number.
    pub seq: u64,
    /// Monotonic start, ns since the meter's epoch.
    pub start_ns: u64,
    /// Monotonic end, ns.
    pub end_ns: u64,
    /// Wall-clock start, Unix ms.
    pub start_unix_ms: u64,
    /// Wall-clock end, Unix ms.
    pub end_unix_ms: u64,
    /// µJ; `null` for a gap.
    pub energy_uj: Option<u64>,
    /// The figure's provenance; `null` for a gap.
    pub provenance: Option<Provenance>,
    /// Its coverage; `null` for a gap.
    pub coverage: Option<Coverage>,
    /// The rung that metered it; `null` for a gap.
    pub rung: Option<RungId>,
    /// The rungs above it that did not, and why.
    pub declined: Vec<SessionDecline>,
    /// Why there is no figure; `null` unless a gap.
    pub gap: Option<String>,
}

/// A recorded session of windows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// [`SESSION_FORMAT`].
    pub format: String,
    /// The host the windows were metered on (or the host a replayed trace names).
    pub host: HostId,
    /// The occupancy the operator declared for the session (§5.4); `null`
    /// when undeclared, and then no baseline applies to it.
    pub occupancy: Option<String>,
    /// The meter's window length, ns.
    pub interval_ns: u64,
    /// The content id (blake3 hex) of the counter trace replayed, when the
    /// windows are a replay and not this machine's live reading.
    pub replay_of: Option<String>,
    /// The windows, in order.
    pub windows: Vec<SessionWindow>,
}

impl SessionWindow {
    /// The recorded form of a meter window.
    pub fn of(w: &Window) -> Self {
        Self {
            seq: w.seq,
            start_ns: w.start_ns,
            end_ns: w.end_ns,
            start_unix_ms: w.start_unix_ms,
            end_unix_ms: w.end_unix_ms,
            energy_uj: w.energy_uj,
            provenance: w.provenance,
            coverage: w.coverage,
            rung: w.rung,
            declined: w
                .declined
                .iter()
                .map(|d| SessionDecline { rung: d.rung, code: d.code.clone(), why: d.why.clone() })
                .collect(),
            gap: w.gap.clone(),
        }
    }

    /// The window as the assessors read it (no counter detail: it is not recorded).
    pub fn to_window(&self) -> Window {
        Window {
            seq: self.seq,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            start_unix_ms: self.start_unix_ms,
            end_unix_ms: self.end_unix_ms,
            energy_uj: self.energy_uj,
            provenance: self.provenance,
            coverage: self.coverage,
            rung: self.rung,
            declined: self
                .declined
                .iter()
                .map(|d| WindowDecline { rung: d.rung, code: d.code.clone(), why: d.why.clone(), findings: Vec::new() })
                .collect(),
            gap: self.gap.clone(),
            counters: Vec::new(),
            util_permille: None,
            note: None,
        }
    }
}

impl Session {
    /// A session of `windows` metered on `host` with `interval_ns` windows.
    pub fn new(
        host: HostId,
        occupancy: Option<String>,
        interval_ns: u64,
        replay_of: Option<String>,
        windows: &[Window],
    ) -> Self {
        Self {
            format: SESSION_FORMAT.into(),
            host,
            occupancy,
            interval_ns,
            replay_of,
            windows: windows.iter().map(SessionWindow::of).collect(),
        }
    }

    /// Decodes and checks a session; `file` names the bytes in errors.
    pub fn from_bytes(file: &str, bytes: &[u8]) -> Result<Self, Error> {
        let s: Self = decode(FileFormat::Session, file, bytes)?;
        s.validate(file)?;
        Ok(s)
    }

    /// Reads a session file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        Self::from_bytes(&path.display().to_string(), &read_file(path)?)
    }

    /// The windows as the assessors ([`crate::dynamism::assess`],
    /// [`crate::conservation::check_shape`]) read them.
    pub fn to_windows(&self) -> Vec<Window> {
        self.windows.iter().map(SessionWindow::to_window).collect()
    }

    /// Checks every promise of [`Session::from_bytes`].
    pub fn validate(&self, file: &str) -> Result<(), Error> {
        let f = FileFormat::Session;
        let bad = |field: String, detail: String| malformed(f, file, field, detail);
        if self.format != SESSION_FORMAT {
            return Err(Error::FileUnsupported {
                file: file.to_owned(),
                expected: SESSION_FORMAT,
                found: self.format.clone(),
            });
        }
        if self.interval_ns == 0 {
            return Err(bad("interval_ns".into(), "0 ns is no window".into()));
        }
        if self.occupancy.as_deref().is_some_and(|o| o.trim().is_empty()) {
            return Err(bad("occupancy".into(), "empty: name it, or write null for undeclared".into()));
        }
        if let Some(id) = &self.replay_of {
            if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                return Err(bad("replay_of".into(), format!("`{id}` is not a content id (64 lowercase hex digits)")));
            }
        }
        if self.windows.is_empty() {
            return Err(bad("windows".into(), "no window".into()));
        }
        let mut previous: Option<&SessionWindow> = None;
        for (i, w) in self.windows.iter().enumerate() {
            let at = |field: &str| format!("windows[{i}].{field}");
            if w.end_ns <= w.start_ns {
                return Err(bad(at("end_ns"), format!("{} ns does not follow start_ns {} ns", w.end_ns, w.start_ns)));
            }
            if let Some(p) = previous {
                if w.seq <= p.seq {
                    return Err(bad(at("seq"), format!("{} does not follow {}", w.seq, p.seq)));
                }
                if w.start_ns < p.end_ns {
                    return Err(Error::WindowsOverlap {
                        file: file.to_owned(),
                        index: i,
                        start_ns: w.start_ns,
                        previous_end_ns: p.end_ns,
                    });
                }
            }
            previous = Some(w);
            match (w.energy_uj, w.provenance, w.coverage, w.rung, &w.gap) {
                (Some(_), Some(p), Some(c), Some(r), None) => {
                    if p != r.provenance() {
                        return Err(Error::WindowGradeOverclaimed {
                            file: file.to_owned(),
                            index: i,
                            seq: w.seq,
                            detail: format!("graded {p}, but a figure of rung {r} is {}", r.provenance()),
                        });
                    }
                    if c > r.coverage() {
                        return Err(Error::WindowGradeOverclaimed {
                            file: file.to_owned(),
                            index: i,
                            seq: w.seq,
                            detail: format!("coverage {c}, but a figure of rung {r} is {}", r.coverage()),
                        });
                    }
                }
                (None, None, None, None, Some(_)) => {}
                (None, ..) => {
                    return Err(bad(at("gap"), "a window without a figure is a gap: it carries a gap reason and no provenance, coverage or rung".into()));
                }
                (Some(_), ..) => {
                    return Err(bad(
                        at("provenance"),
                        "a figure carries its provenance, coverage and rung, and no gap reason".into(),
                    ));
                }
            }
            for (j, d) in w.declined.iter().enumerate() {
                if w.rung.is_some_and(|r| d.rung >= r) {
                    return Err(bad(
                        format!("windows[{i}].declined[{j}].rung"),
                        format!("{} is not above the rung that metered the window", d.rung),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Writes `session` to `path` (the console's "record a session").
pub fn record_to(path: &Path, session: &Session) -> Result<(), Error> {
    write_file(path, session)
}
