//! # jcp-meter — local energy meters with honest provenance (JCP §5)
//!
//! **Measured when the platform exposes it, estimated when it doesn't — and
//! the provenance always says which.** This crate meters the machine it runs
//! on in windows (1 s by default), each with integer µJ, a provenance, a
//! coverage, the rung that metered it and every rung above that one with why
//! it did not. Above the meter it carries the spec's honesty rules for energy
//! figures: `efficiency/1` outcome receipts (§5.2), traceability (§5.3),
//! dynamism (§5.4), conservation (§5.5) and physical bounds (§5.6).
//!
//! ## The ladder (§5.1)
//! | rung | backend | grade |
//! |---|---|---|
//! | 1 | [`rapl::RaplReader`]: powercap `package-<n>` zones, read often enough to see every wrap and wrap-corrected, held to the packages' published power limits; for spans, where powercap is not readable or not live, [`span::PerfRapl`]: the `perf_event` RAPL PMU's `power/energy-pkg/`, one system-wide counter per package (needs `CAP_PERFMON` or `kernel.perf_event_paranoid` ≤ 0) | `HwShunt`, `Whole` (a span: apportioned, `ModelBased`) |
//! | 2 | [`nvml::NvmlReader`]: GPU total-energy counter, loaded at run time | `HwShunt`, `Partial` |
//! | 3, 4 | per-process energy and `IOReport`: macOS only, and not implemented by this meter there either; reported unavailable, saying which is true where it runs and which rung meters instead | — |
//! | 5 | time × [`estimate::Calibration`] measured on this host | `ModelBased` |
//! | 6 | utilisation × [`estimate::EstimatorConfig`] default power | `Estimator` |
//!
//! A counter rung is chosen only while every one of its counters is live
//! ([`liveness`]) and, where the board exposes a bound, plausible
//! ([`plausibility`]). Liveness is judged over the life of the meter, not
//! only at the probe ([`liveness::LiveTracker`]). A window whose counter fails
//! degrades to rung 5 or 6, its decline naming every counter's findings
//! ([`meter::CounterFinding`]).
//!
//! ## Using the meter
//! ```no_run
//! use jcp_meter::{Meter, MeterConfig};
//! let mut meter = Meter::system(MeterConfig::default(), std::path::Path::new(jcp_meter::rapl::POWERCAP_ROOT))?;
//! let report = meter.probe();            // every rung, chosen or declined, and why
//! println!("metering with {:?}", report.chosen);
//! for _ in 0..3 {
//!     let w = meter.next_window();       // blocks until the window ends
//!     println!("{:?} µJ {:?} {:?}", w.energy_uj, w.provenance, w.coverage);
//! }
//! # Ok::<(), jcp_meter::Error>(())
//! ```
//! ## Spans
//! [`span::SpanMeter`] meters one piece of work instead of a window: start
//! over this process's threads or a process tree ([`span::Target`]), stop,
//! get one [`span::SpanFigure`] with the tree's CPU time, its energy at the
//! best grade available and every gap named (§5.1 rung 3's tree rules, read
//! from Linux `/proc`). Its RAPL reading comes through powercap or, where
//! powercap is not readable, the `perf_event` RAPL PMU ([`span::PerfRapl`],
//! tested through [`span::ScriptedPkgCounters`]: package counters that
//! advance by a script or freeze); a permission problem is a named decline
//! with its fix, never zero watts.
//!
//! For a UI that polls, [`LiveMeter`] runs the meter on its own thread and
//! hands over finished windows with [`LiveMeter::drain`]. Every result type
//! is `serde::Serialize`: [`Window`], [`ProbeReport`], [`RungReport`].
//!
//! Tests and replays put fake sysfs trees ([`rapl::RaplReader::new`] takes
//! the root), recorded traces ([`trace::TraceBackend`]) and a
//! [`clock::ManualClock`] behind [`Backends`].
//!
//! ## Above the meter
//! - [`efficiency`]: the `efficiency/1` outcome receipt, [`efficiency::read_payload`], [`efficiency::verify`], [`efficiency::aggregate`].
//! - [`traceability`]: an outcome's activities by content id, the signed residual, floors.
//! - [`dynamism`]: per-window grades, declared baselines, evidenced causes, three kinds of "look".
//! - [`conservation`]: the exact ppm floor (§5.5) and the physical bound (§5.6).
//! - [`session`]: recorded windows (`jcp-meter-session/1`); [`declared`]: baselines, causes, power envelopes.
//! - [`layers`]: the four layers over those files, for `jcp energy` and the console.
//!
//! ## Exposition
//! [`exposition::MeterMetrics`] is the meter as `OpenMetrics` (what
//! `jcp meter serve` exposes): energy by provenance, coverage, rung and
//! domain, each rung's status, liveness and plausibility findings;
//! [`exposition::MeterExporter`] samples into it on its own thread.
//!
//! Every refusal is an [`Error`] with a stable [`Error::code`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod clock;
pub mod conservation;
pub mod declared;
pub mod dynamism;
pub mod efficiency;
mod error;
pub mod estimate;
pub mod exposition;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod layers;
mod live;
pub mod liveness;
pub mod meter;
pub mod nvml;
pub mod plausibility;
pub mod rapl;
pub mod session;
pub mod span;
pub mod trace;
pub mod traceability;
#[cfg(feature = "vectors")]
pub mod vectors;

pub use backend::{CounterBackend, Decline, RungId};
pub use error::Error;
pub use live::LiveMeter;
pub use meter::{Backends, Meter, MeterConfig, ProbeReport, RungReport, RungStatus, Window, WindowDecline};
pub use span::{Span, SpanConfig, SpanFigure, SpanMeter, Target};
