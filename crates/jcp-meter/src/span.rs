//! Span metering (§5.1, §5.2): start over a target, stop, get one figure.
//!
//! A target is this process's own threads ([`Target::OwnThreads`]) or a
//! process tree the meter can read ([`Target::Tree`]: the server a gateway
//! relays a call to, and its descendants). At each end the tree is read from
//! Linux `/proc` — every member by pid and start time, its CPU time, its
//! reaped descendants' CPU time, its children through every thread — by a
//! walk confirmed by a second one, with every member's threads at rest. The
//! tree's CPU time over the span is the advance of every member present at
//! both ends plus the whole CPU time of every member born inside it.
//!
//! The energy is never graded better than how it was obtained:
//! - RAPL package energy over the span (through powercap where it is
//!   readable and live, else through the `perf_event` RAPL PMU where it opens
//!   and is live: [`PerfRapl`]), apportioned by the tree's share of the
//!   machine's CPU time: a real reading apportioned by a model, `ModelBased`,
//!   `measured` absent (the reading is of the machine, written down in
//!   [`SpanPart`]);
//! - the GPU's energy over the span (NVML) apportioned by the tree's
//!   per-process utilisation where the driver reports it, else a named gap;
//! - time × a host-calibrated power scaled by the tree's CPU time, `ModelBased`;
//! - time × the documented default power scaled by CPU time, `Estimator`.
//!
//! The figure is `Whole` only when nothing was seen missing AND the operator
//! declared the tree self-contained (§5.1: never `Whole` on an empty list
//! alone); every gap is named ([`gap`]).
//!
//! ```no_run
//! use jcp_meter::span::{SpanConfig, SpanMeter, Target};
//! let meter = SpanMeter::system(SpanConfig::default());
//! println!("{:?}", meter.probe().cpu);
//! let span = meter.start(Target::Tree { root: 1234, self_contained: false })?;
//! // ... the work ...
//! let figure = span.stop();
//! println!("{} µJ {:?} {:?} {:?}", figure.uj, figure.provenance, figure.coverage, figure.gaps);
//! # Ok::<(), jcp_meter::Error>(())
//! ```

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jcp::energy::{Coverage, Provenance};
use serde::Serialize;

use crate::backend::{CounterBackend, CounterInfo, Decline, RungId};
use crate::estimate::{energy_uj, Calibration, EstimatorConfig, HostId};
use crate::liveness::{CounterLiveness, LivenessRule};
use crate::rapl::{RaplReader, ReadFn};
use crate::Error;

pub mod perf;
pub mod procfs;
mod sources;
mod tree;

pub use perf::{PerfRapl, ScriptedPkgCounters, PERF_POWER_PMU};
pub use sources::{GpuSource, NvmlGpu, TraceGpu};
pub use tree::ChildrenListing;
use tree::{EndBounds, Scope, Walker};

/// The gap codes (stable, kebab-case). Each makes a figure `Partial` (§5.2).
pub mod gap {
    /// A descendant was reaped inside the span (a member's reaped-descendant
    /// CPU time moved), unless it had already exited at the start.
    pub const REAPED_IN_SPAN: &str = "reaped-in-span";
    /// A member exited inside the span: its record is final and counted, its GPU use unknown.
    pub const EXITED_IN_SPAN: &str = "exited-in-span";
    /// A member present at the start was gone at the stop.
    pub const GONE_AT_STOP: &str = "gone-at-stop";
    /// A member present at the stop that started before the span was not read at its start.
    pub const UNREAD_AT_START: &str = "unread-at-start";
    /// A member could not be read, or its children could not be listed.
    pub const UNREADABLE: &str = "unreadable";
    /// A member had a thread running, runnable or in an uninterruptible wait at the start.
    pub const UNSETTLED_AT_START: &str = "unsettled-at-start";
    /// A member had a thread running, runnable or in an uninterruptible wait at the stop.
    pub const UNSETTLED_AT_STOP: &str = "unsettled-at-stop";
    /// No two walks agreed at the start before the meter stopped waiting.
    pub const UNCONFIRMED_AT_START: &str = "unconfirmed-at-start";
    /// No two walks agreed at the stop before the meter stopped waiting.
    pub const UNCONFIRMED_AT_STOP: &str = "unconfirmed-at-stop";
    /// The tree's root was gone (or never there) at the start.
    pub const ROOT_GONE_AT_START: &str = "root-gone-at-start";
    /// The GPU's share of the tree could not be attributed.
    pub const GPU_UNATTRIBUTED: &str = "gpu-unattributed";
    /// The operator did not declare the tree self-contained (§5.1).
    pub const NOT_DECLARED_SELF_CONTAINED: &str = "not-declared-self-contained";
    /// Every code.
    pub const ALL: [&str; 12] = [
        REAPED_IN_SPAN,
        EXITED_IN_SPAN,
        GONE_AT_STOP,
        UNREAD_AT_START,
        UNREADABLE,
        UNSETTLED_AT_START,
        UNSETTLED_AT_STOP,
        UNCONFIRMED_AT_START,
        UNCONFIRMED_AT_STOP,
        ROOT_GONE_AT_START,
        GPU_UNATTRIBUTED,
        NOT_DECLARED_SELF_CONTAINED,
    ];
}

/// Something of the tree's energy over the span the figure does not hold (§5.1, §5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// One of [`gap::ALL`].
    pub code: &'static str,
    /// The member concerned, where one is.
    pub pid: Option<u32>,
    /// What was seen.
    pub detail: String,
}

impl Gap {
    /// A gap.
    pub fn new(code: &'static str, pid: Option<u32>, detail: impl Into<String>) -> Self {
        Self { code, pid, detail: detail.into() }
    }
}

/// What a span meters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "target", rename_all = "kebab-case")]
pub enum Target {
    /// This process's own threads: a computation on them that hands nothing
    /// to another process (§5.1 rung 3: not made `Partial` by a child the
    /// process happens to have). The caller choosing this target states that.
    OwnThreads,
    /// The process tree rooted at `root` (§5.1, "another process tree").
    Tree {
        /// The root's pid.
        root: u32,
        /// The operator's declaration that the tree hands no work to a
        /// process outside it (§5.1); without it the figure is `Partial`.
        self_contained: bool,
    },
}

/// How spans read their ends, and the ladder's parameters.
#[derive(Debug, Clone)]
pub struct SpanConfig {
    /// How long an end waits for members to come to rest and for two walks to agree (default 5 ms).
    pub settle_wait: Duration,
    /// The pause between tries (default 100 µs).
    pub poll: Duration,
    /// The most pairs of walks tried at an end (default 16).
    pub max_walk_pairs: u32,
    /// The liveness rule for the counters (default [`LivenessRule::SPEC`]).
    pub liveness: LivenessRule,
    /// The liveness probe's step (default 50 ms) ...
    pub probe_step: Duration,
    /// ... and its number of intervals (default 8: 400 ms).
    pub probe_intervals: usize,
    /// The estimator's default power (rung 6).
    pub estimator: EstimatorConfig,
}

impl Default for SpanConfig {
    fn default() -> Self {
        Self {
            settle_wait: Duration::from_millis(5),
            poll: Duration::from_micros(100),
            max_walk_pairs: 16,
            liveness: LivenessRule::SPEC,
            probe_step: Duration::from_millis(50),
            probe_intervals: 8,
            estimator: EstimatorConfig::default(),
        }
    }
}

/// Where a span's energy comes from: the real machine, or test doubles.
#[derive(Debug)]
pub struct SpanSources {
    /// The powercap root (`None`: no RAPL through powercap).
    pub powercap_root: Option<PathBuf>,
    /// How powercap files are read ([`crate::rapl::read_file`]).
    pub powercap_read: ReadFn,
    /// RAPL package counters through the `perf_event` RAPL PMU, tried where
    /// powercap is not readable or not live ([`PerfRapl`]; tests:
    /// [`ScriptedPkgCounters`]). `None`: not tried.
    pub perf_rapl: Option<Box<dyn CounterBackend>>,
    /// The GPU (`None`: no GPU source).
    pub gpu: Option<Box<dyn GpuSource>>,
    /// A host calibration for rung 5, checked against `host`; or why there is none.
    pub calibration: Result<Calibration, Decline>,
    /// This host.
    pub host: HostId,
    /// How children are listed (`None`: detect).
    pub children: Option<ChildrenListing>,
}

impl SpanSources {
    /// The real machine: powercap under [`crate::rapl::POWERCAP_ROOT`], the
    /// perf PMU, NVML, the calibration file at its default path.
    pub fn system() -> Self {
        let calibration = match crate::estimate::default_calibration_path() {
            Some(p) => match std::fs::read_to_string(&p) {
                Ok(t) => {
                    Calibration::from_json(&t).map_err(|e| Decline::new(e.code(), format!("{}: {e}", p.display())))
                }
                Err(e) => Err(no_calibration(&format!("{}: {e}", p.display()))),
            },
            None => Err(no_calibration("no HOME or XDG_CONFIG_HOME to find it under")),
        };
        Self {
            powercap_root: Some(PathBuf::from(crate::rapl::POWERCAP_ROOT)),
            powercap_read: crate::rapl::read_file,
            perf_rapl: Some(Box::new(PerfRapl::system())),
            gpu: Some(Box::new(NvmlGpu::new())),
            calibration,
            host: HostId::this_host(),
            children: None,
        }
    }
}

fn no_calibration(why: &str) -> Decline {
    Decline::new("calibration-absent", format!("no host calibration: {why}"))
        .with_fix("On a host with a live RAPL counter, `jcp meter calibrate` measures one.")
}

/// The source of a span's CPU energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuSource {
    /// RAPL package counters through powercap, apportioned by CPU time.
    RaplPowercap,
    /// RAPL package counters through the `perf_event` RAPL PMU, apportioned by CPU time.
    RaplPerf,
    /// Time × a host-calibrated power, scaled by CPU time.
    Calibrated,
    /// Time × the default power, scaled by CPU time.
    Estimate,
}

impl CpuSource {
    /// The stable label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RaplPowercap => "rapl-powercap",
            Self::RaplPerf => "rapl-perf",
            Self::Calibrated => "calibrated",
            Self::Estimate => "estimate",
        }
    }

    /// The ladder rung.
    pub fn rung(self) -> RungId {
        match self {
            Self::RaplPowercap | Self::RaplPerf => RungId::Rapl,
            Self::Calibrated => RungId::Calibrated,
            Self::Estimate => RungId::Estimate,
        }
    }

    /// The grade its figure carries: an apportioned reading or a calibrated
    /// model is `ModelBased`; a default power is `Estimator`.
    pub fn provenance(self) -> Provenance {
        match self {
            Self::RaplPowercap | Self::RaplPerf | Self::Calibrated => Provenance::ModelBased,
            Self::Estimate => Provenance::Estimator,
        }
    }
}

/// A source declined at the probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceDecline {
    /// `rapl-powercap`, `rapl-perf`, `nvml`, `calibrated`.
    pub source: &'static str,
    /// Why, and the fix.
    pub decline: Decline,
}

/// The GPU at the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuStatus {
    /// Live: spans read it.
    Live,
    /// No GPU here: nothing to attribute.
    Absent,
    /// A GPU may be here but is not read: every span names the gap.
    Declined,
}

/// Which energy source a span would use, and why each better one was declined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpanProbe {
    /// The CPU energy source spans use (a span whose counter did not read it falls lower).
    pub cpu: CpuSource,
    /// Its rung.
    pub rung: RungId,
    /// Every better source, declined, with why and the fix.
    pub declined: Vec<SourceDecline>,
    /// The GPU.
    pub gpu: GpuStatus,
    /// Counter liveness at the probe (RAPL packages, GPUs).
    pub liveness: Vec<CounterLiveness>,
    /// How children are listed on this kernel.
    pub children: ChildrenListing,
    /// `/proc` clock ticks per second.
    pub clock_ticks_per_second: u64,
    /// Logical CPUs online.
    pub online_cpus: u32,
}

/// One part of a span's figure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpanPart {
    /// `rapl-powercap`, `rapl-perf`, `calibrated`, `estimate`, `nvml`.
    pub source: &'static str,
    /// The part's rung.
    pub rung: RungId,
    /// The part's grade.
    pub provenance: Provenance,
    /// The part's µJ.
    pub uj: u64,
    /// The counter's advance over the span (the machine's packages, the
    /// GPU), µJ, where a counter was read: the reading the part apportions.
    pub reading_uj: Option<u64>,
    /// How the part was apportioned or scaled, for people.
    pub basis: String,
}

/// One span's figure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpanFigure {
    /// Microjoules: the sum of the parts.
    pub uj: u64,
    /// A hardware measurement of the target's energy, where one was taken.
    /// None of this meter's sources measures a tree (RAPL reads the machine,
    /// the models scale CPU time), so it is always absent here.
    pub measured: Option<u64>,
    /// The floor of the parts' grades.
    pub provenance: Provenance,
    /// `Whole` only with no gap (and, for a tree, the declaration).
    pub coverage: Coverage,
    /// What the figure does not hold.
    pub gaps: Vec<Gap>,
    /// The target's CPU time over the span, ns (what apportioning used).
    pub cpu_ns: u64,
    /// The span's wall-clock length, ns.
    pub wall_ns: u64,
    /// The rung of the CPU part.
    pub rung: RungId,
    /// Members read at either end.
    pub members: u32,
    /// The parts summed.
    pub parts: Vec<SpanPart>,
    /// Counter sources that were chosen but did not read this span, and why.
    pub fell: Vec<Decline>,
}

#[derive(Debug)]
struct Rapl {
    /// Powercap's [`RaplReader`] or the perf PMU's [`PerfRapl`].
    reader: Mutex<Box<dyn CounterBackend>>,
    infos: Vec<CounterInfo>,
    /// [`CpuSource::RaplPowercap`] or [`CpuSource::RaplPerf`].
    source: CpuSource,
}

#[derive(Debug)]
struct Inner {
    cfg: SpanConfig,
    rapl: Option<Rapl>,
    gpu: Option<(Box<dyn GpuSource>, Vec<CounterInfo>)>,
    calibration: Option<Calibration>,
    probe: SpanProbe,
    /// Walkers that served spans now stopped, with the `/proc` files of the
    /// trees they read still open (at most [`IDLE_WALKERS`], holding at most
    /// [`tree::OPEN_FILES`] files together).
    walkers: Mutex<Vec<Walker>>,
    /// `/proc/uptime`, kept open and read from offset 0 at each span's start.
    uptime: Option<std::fs::File>,
    /// Stops' readings kept for the next span over the same tree, at most
    /// [`IDLE_WALKERS`] (each holds its walker and that walker's files).
    carried: Mutex<Vec<Carried>>,
}

/// A span's stop reading, kept for the next span over the same tree: its
/// start, if no thread of the tree has run since (docs/decisions.md, "§5.1
/// a stop's reading is the next start's when nothing ran between").
#[derive(Debug)]
struct Carried {
    scope: Scope,
    end: tree::End,
    still: tree::Stillness,
    /// The boot time in clock ticks before `still` was read: no process
    /// of the tree was born after it while the tree stayed still.
    born_after: u64,
    /// The walker that read `still`, with its files open.
    walker: Walker,
}

/// The most walkers a meter keeps for its next spans (each holds the open
/// `/proc` files of the tree its last span read; all of them together at
/// most [`tree::OPEN_FILES`]).
const IDLE_WALKERS: usize = 4;

/// The span meter: built once, shared by reference (`Send + Sync`).
#[derive(Debug, Clone)]
pub struct SpanMeter {
    inner: Arc<Inner>,
}

/// An open span: stop it (on any thread) for its figure.
#[derive(Debug)]
pub struct Span {
    inner: Arc<Inner>,
    target: Target,
    scope: Scope,
    walker: Walker,
    start: tree::End,
    born_after: u64,
    t0: Instant,
    rapl0: Option<Result<Vec<u64>, String>>,
    gpu0: Option<Result<Vec<u64>, String>>,
}

impl SpanMeter {
    /// The real machine (see [`SpanSources::system`]). Probes counter
    /// liveness now (about 400 ms of CPU burn, only where a counter opens).
    pub fn system(cfg: SpanConfig) -> Self {
        Self::with_sources(cfg, SpanSources::system())
    }

    /// A meter over `sources` (tests: a fake powercap root, scripted perf
    /// counters, a GPU trace, a fixed calibration).
    ///
    /// RAPL is read through powercap where it opens and every package counter
    /// is live at the probe; else through the perf PMU where it opens and is
    /// live by the same rule (a second probe); else not at all, each decline named.
    pub fn with_sources(cfg: SpanConfig, mut sources: SpanSources) -> Self {
        let mut declined = Vec::new();
        let mut rapl = sources.powercap_root.as_ref().and_then(|root| {
            let r: Box<dyn CounterBackend> = Box::new(RaplReader::with_read_fn(root.clone(), sources.powercap_read));
            open_rapl(r, CpuSource::RaplPowercap, &mut declined)
        });
        let (gpu, mut gpu_status) = match sources.gpu.take() {
            Some(g) => match g.open() {
                Ok(infos) => (Some((g, infos)), GpuStatus::Live),
                Err((d, absent)) => {
                    declined.push(SourceDecline { source: "nvml", decline: d });
                    (None, if absent { GpuStatus::Absent } else { GpuStatus::Declined })
                }
            },
            None => (None, GpuStatus::Absent),
        };
        let (mut liveness, gl) = sources::probe_liveness(
            cfg.liveness,
            cfg.probe_step,
            cfg.probe_intervals,
            rapl.as_mut().map(|(r, i, _)| (&mut **r as &mut dyn CounterBackend, i.as_slice())),
            gpu.as_ref().map(|(g, i)| (g.as_ref(), i.as_slice())),
        );
        rapl = rapl.filter(|_| live_or_declined(&liveness, "rapl-powercap", &mut declined));
        if rapl.is_none() {
            if let Some(p) = sources.perf_rapl.take() {
                rapl = open_rapl(p, CpuSource::RaplPerf, &mut declined);
                if let Some((r, i, _)) = rapl.as_mut() {
                    let (pl, _) = sources::probe_liveness(
                        cfg.liveness,
                        cfg.probe_step,
                        cfg.probe_intervals,
                        Some((&mut **r as &mut dyn CounterBackend, i.as_slice())),
                        None,
                    );
                    rapl = rapl.filter(|_| live_or_declined(&pl, "rapl-perf", &mut declined));
                    liveness.extend(pl);
                }
            }
        }
        let gpu = match gpu {
            Some(_) if !gl.iter().all(|l| l.status.is_live()) => {
                declined.push(SourceDecline { source: "nvml", decline: not_live("nvml-not-live", &gl) });
                gpu_status = GpuStatus::Declined;
                None
            }
            g => g,
        };
        let calibration = match sources
            .calibration
            .and_then(|c| c.check_host(&sources.host).map(|()| c).map_err(|e| Decline::new(e.code(), e.to_string())))
        {
            Ok(c) => Some(c),
            Err(d) => {
                if rapl.is_none() {
                    declined.push(SourceDecline { source: "calibrated", decline: d });
                }
                None
            }
        };
        let cpu = if let Some((_, _, source)) = &rapl {
            *source
        } else if calibration.is_some() {
            CpuSource::Calibrated
        } else {
            CpuSource::Estimate
        };
        liveness.extend(gl);
        let probe = SpanProbe {
            cpu,
            rung: cpu.rung(),
            declined,
            gpu: gpu_status,
            liveness,
            children: sources.children.unwrap_or_else(ChildrenListing::detect),
            clock_ticks_per_second: procfs::clock_ticks_per_second(),
            online_cpus: procfs::online_cpus(),
        };
        let rapl = rapl.map(|(r, infos, source)| Rapl { reader: Mutex::new(r), infos, source });
        let uptime = std::fs::File::open("/proc/uptime").ok();
        Self {
            inner: Arc::new(Inner {
                cfg,
                rapl,
                gpu,
                calibration,
                probe,
                walkers: Mutex::new(Vec::new()),
                uptime,
                carried: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Which energy source a span would use now, and why each better one was declined.
    pub fn probe(&self) -> SpanProbe {
        self.inner.probe.clone()
    }

    /// Opens a span over `target`: reads its first end. Refuses only a target
    /// that names no process (pid 0); a root that is gone or unreadable gives
    /// a span whose figure names the gap.
    pub fn start(&self, target: Target) -> Result<Span, Error> {
        let scope = match target {
            Target::OwnThreads => Scope::Own { pid: std::process::id(), reader: procfs::own_tid() },
            Target::Tree { root: 0, .. } => {
                return Err(Error::SpanBadTarget { detail: "pid 0 is no process".into() });
            }
            Target::Tree { root, .. } => Scope::Tree(root),
        };
        let inner = Arc::clone(&self.inner);
        // The last stop's reading of this tree, where no thread of it has
        // run since: the tree now, read already.
        let (walker, start, born_after) = match inner.carried(scope).map(Carried::resume) {
            Some(Ok(still)) => still,
            // Nothing carried, or the tree ran since: read afresh (with the
            // carried walker and its files, where there was one).
            kept => {
                let mut walker = kept.and_then(Result::err).unwrap_or_else(|| inner.walker());
                let born_after = inner.uptime_ticks().unwrap_or(u64::MAX);
                let start = tree::read_end(&mut walker, scope, bounds(&inner.cfg));
                (walker, start, born_after)
            }
        };
        let t0 = Instant::now();
        let rapl0 = inner.rapl.as_ref().map(Rapl::read);
        let gpu0 = inner.gpu.as_ref().map(|(g, _)| g.read_uj());
        Ok(Span { inner, target, scope, walker, start, born_after, t0, rapl0, gpu0 })
    }
}

impl Carried {
    /// The carried reading as a span's first end (its walker, the reading,
    /// its `born_after`) where no thread of the tree has run since; else
    /// the walker, for a fresh reading.
    fn resume(mut self) -> Result<(Walker, tree::End, u64), Walker> {
        if self.walker.still(&self.still) {
            Ok((self.walker, self.end, self.born_after))
        } else {
            Err(self.walker)
        }
    }
}

fn bounds(cfg: &SpanConfig) -> EndBounds {
    EndBounds { settle: cfg.settle_wait, poll: cfg.poll, max_pairs: cfg.max_walk_pairs }
}

/// Opens a RAPL reader; a decline is recorded under the source's label.
fn open_rapl(
    mut r: Box<dyn CounterBackend>,
    source: CpuSource,
    declined: &mut Vec<SourceDecline>,
) -> Option<(Box<dyn CounterBackend>, Vec<CounterInfo>, CpuSource)> {
    match r.open() {
        Ok(infos) => Some((r, infos, source)),
        Err(d) => {
            declined.push(SourceDecline { source: source.as_str(), decline: d });
            None
        }
    }
}

/// Whether every counter of `l` is live; where one is not, `source` is declined `rapl-not-live`.
fn live_or_declined(l: &[CounterLiveness], source: &'static str, declined: &mut Vec<SourceDecline>) -> bool {
    let live = l.iter().all(|c| c.status.is_live());
    if !live {
        declined.push(SourceDecline { source, decline: not_live("rapl-not-live", l) });
    }
    live
}

fn not_live(code: &'static str, l: &[CounterLiveness]) -> Decline {
    let what: Vec<String> = l.iter().map(|c| format!("{}: {}", c.counter, c.status.code())).collect();
    Decline::new(
        code,
        format!("not every counter was live at the probe ({}): no hardware-derived figure", what.join(", ")),
    )
}

impl Inner {
    /// An idle walker (its files of the last tree it read still open), or a new one.
    fn walker(&self) -> Walker {
        self.walkers.lock().ok().and_then(|mut w| w.pop()).unwrap_or_else(|| Walker::new(self.probe.children))
    }

    /// Keeps a walker whose span is done for a later span: up to
    /// [`IDLE_WALKERS`], holding together no more open files than one span
    /// may ([`tree::OPEN_FILES`]); otherwise it is dropped, closing its files.
    fn walker_done(&self, mut walker: Walker) {
        walker.span_done();
        if let Ok(mut idle) = self.walkers.lock() {
            let held: usize = idle.iter().map(Walker::open_files).sum();
            if idle.len() < IDLE_WALKERS && held + walker.open_files() <= tree::OPEN_FILES {
                idle.push(walker);
            }
        }
    }

    /// The reading carried for a span over `scope`, taken from the store.
    fn carried(&self, scope: Scope) -> Option<Carried> {
        let mut c = self.carried.lock().ok()?;
        let i = c.iter().position(|x| x.scope == scope)?;
        Some(c.swap_remove(i))
    }

    /// Reads the tree of `scope` (as `last` found it) again, after its
    /// threads' `schedstat`, and keeps the reading for the next span where
    /// none of them ran meanwhile.
    fn carry_fresh(&self, scope: Scope, last: &tree::Walk, mut walker: Walker) {
        let (Some(born_after), Some(still)) = (self.uptime_ticks(), walker.stillness(last)) else {
            return self.walker_done(walker);
        };
        let end = tree::read_end(&mut walker, scope, bounds(&self.cfg));
        if let Err(walker) = self.carry(scope, still, born_after, end, walker) {
            self.walker_done(walker);
        }
    }

    /// Keeps `end` for the next span over `scope` where `still`, read
    /// before it, vouches for it and none of its threads has run since
    /// (replacing one kept for the same tree; the oldest dropped past
    /// [`IDLE_WALKERS`]); else gives the walker back.
    fn carry(
        &self,
        scope: Scope,
        still: tree::Stillness,
        born_after: u64,
        end: tree::End,
        mut walker: Walker,
    ) -> Result<(), Walker> {
        if !(still.covers(&end) && walker.still(&still)) {
            return Err(walker);
        }
        let mut c = Carried { scope, end, still, born_after, walker };
        c.walker.span_done();
        if let Ok(mut kept) = self.carried.lock() {
            kept.retain(|x| x.scope != c.scope);
            if kept.len() >= IDLE_WALKERS {
                kept.remove(0);
            }
            kept.push(c);
        }
        Ok(())
    }

    /// The boot time now in clock ticks (`/proc/uptime`, which `stat`'s start time counts in).
    fn uptime_ticks(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let hz = self.probe.clock_ticks_per_second;
        let mut buf = [0u8; 128];
        if let Some(n) = self.uptime.as_ref().and_then(|f| f.read_at(&mut buf, 0).ok()) {
            if n > 0 && n < buf.len() {
                return uptime_ticks(std::str::from_utf8(&buf[..n]).ok()?, hz);
            }
        }
        uptime_ticks(&std::fs::read_to_string("/proc/uptime").ok()?, hz)
    }
}

impl Rapl {
    fn read(&self) -> Result<Vec<u64>, String> {
        self.reader.lock().map_err(|_| "the RAPL reader's lock is poisoned".to_owned())?.read(0)
    }
}

/// The boot time in clock ticks from the text of `/proc/uptime`.
fn uptime_ticks(s: &str, hz: u64) -> Option<u64> {
    let first = s.split_ascii_whitespace().next()?;
    let (secs, frac) = first.split_once('.').unwrap_or((first, "0"));
    let secs: u64 = secs.parse().ok()?;
    let frac: String = frac.chars().chain(std::iter::repeat('0')).take(2).collect();
    let centis: u64 = frac.parse().ok()?;
    Some(secs.saturating_mul(hz).saturating_add(centis * hz / 100))
}

fn ns_u64(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `a × b / c` without overflow (0 where `c` is 0).
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    if c == 0 {
        return 0;
    }
    u64::try_from(u128::from(a) * u128::from(b) / u128::from(c)).unwrap_or(u64::MAX)
}

impl Span {
    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Reads the second end and gives the span's one figure.
    pub fn stop(mut self) -> SpanFigure {
        let inner = Arc::clone(&self.inner);
        if let Scope::Own { reader, .. } = &mut self.scope {
            // The thread stopping the span is the one reading now (it may not be the one that started it).
            *reader = procfs::own_tid();
        }
        // (A new walker allocates nothing.)
        let mut walker = std::mem::replace(&mut self.walker, Walker::new(inner.probe.children));
        // A tree's threads, before the stop's reading: if none of them ran
        // while it was read, the reading may be the next span's start.
        let still = match self.scope {
            Scope::Tree(_) => inner.uptime_ticks().and_then(|b| walker.stillness(&self.start.walk).map(|s| (s, b))),
            Scope::Own { .. } => None,
        };
        let stop = tree::read_end(&mut walker, self.scope, bounds(&inner.cfg));
        // The counters are read where the tree was read, right after each end's walks.
        let rapl1 = inner.rapl.as_ref().map(Rapl::read);
        let gpu1 = inner.gpu.as_ref().map(|(g, _)| g.read_uj());
        let wall_ns = ns_u64(self.t0.elapsed());
        match still {
            Some((s, born_after)) => {
                if let Err(walker) = inner.carry(self.scope, s, born_after, stop.clone(), walker) {
                    // The tree ran while it was read (a process finishing
                    // its answer as the stop began): once more, now that it is at rest.
                    if stop.confirmed {
                        inner.carry_fresh(self.scope, &stop.walk, walker);
                    } else {
                        inner.walker_done(walker);
                    }
                }
            }
            None => inner.walker_done(walker),
        }
        let own = self.target == Target::OwnThreads;
        let cmp = tree::compare(&self.start, &stop, self.born_after, own);
        let hz = inner.probe.clock_ticks_per_second.max(1);
        let cpu_ns = mul_div(cmp.cpu_ticks, 1_000_000_000, hz);
        let mut gaps = cmp.gaps;
        let mut fell = Vec::new();
        let mut parts = vec![self.cpu_part(rapl1.as_ref(), cpu_ns, wall_ns, &mut fell)];
        if let Some(p) = self.gpu_part(gpu1.as_ref(), &cmp.pids, &mut gaps) {
            parts.push(p);
        }
        if inner.probe.gpu == GpuStatus::Declined {
            gaps.push(Gap::new(
                gap::GPU_UNATTRIBUTED,
                None,
                "a GPU may be here and is not read (see the probe): the tree's GPU use cannot be ruled out",
            ));
        }
        if let Target::Tree { self_contained: false, .. } = self.target {
            gaps.push(Gap::new(
                gap::NOT_DECLARED_SELF_CONTAINED,
                None,
                "the operator did not declare that the tree hands no work to a process outside it (§5.1)",
            ));
        }
        let provenance = parts.iter().map(|p| p.provenance).min().unwrap_or(Provenance::Estimator);
        let coverage = if gaps.is_empty() { Coverage::Whole } else { Coverage::Partial };
        SpanFigure {
            uj: parts.iter().map(|p| p.uj).fold(0, u64::saturating_add),
            measured: None,
            provenance,
            coverage,
            gaps,
            cpu_ns,
            wall_ns,
            rung: parts.first().map_or(RungId::Estimate, |p| p.rung),
            members: cmp.members,
            parts,
            fell,
        }
    }

    /// The CPU part: RAPL apportioned where its counters read the span, else rung 5, else rung 6.
    fn cpu_part(
        &self,
        rapl1: Option<&Result<Vec<u64>, String>>,
        cpu_ns: u64,
        wall_ns: u64,
        fell: &mut Vec<Decline>,
    ) -> SpanPart {
        let inner = &self.inner;
        let cpus = u64::from(inner.probe.online_cpus.max(1));
        if let (Some(r), Some(a), Some(b)) = (&inner.rapl, &self.rapl0, rapl1) {
            match (a, b) {
                (Ok(a), Ok(b)) => match sources::advance(&r.infos, a, b) {
                    Ok((reading, true)) => {
                        let machine_ns = wall_ns.saturating_mul(cpus);
                        let uj = mul_div(reading, cpu_ns.min(machine_ns), machine_ns);
                        return SpanPart {
                            source: r.source.as_str(),
                            rung: RungId::Rapl,
                            provenance: Provenance::ModelBased,
                            uj,
                            reading_uj: Some(reading),
                            basis: format!("package energy {reading} µJ × the target's CPU time {cpu_ns} ns / the machine's CPU time {machine_ns} ns ({cpus} CPUs × {wall_ns} ns)"),
                        };
                    }
                    Ok((_, false)) => fell.push(Decline::new(
                        "rapl-did-not-advance",
                        "no package counter advanced over the span: metered by a lower rung",
                    )),
                    Err(e) => fell.push(Decline::new("rapl-read-failed", e)),
                },
                (Err(e), _) | (_, Err(e)) => fell.push(Decline::new("rapl-read-failed", e.clone())),
            }
        }
        if let Some(c) = &inner.calibration {
            let cal_cpus = u64::from(c.measured_on.logical_cpus.max(1));
            return SpanPart {
                source: CpuSource::Calibrated.as_str(),
                rung: RungId::Calibrated,
                provenance: Provenance::ModelBased,
                uj: energy_uj(c.active_mw, cpu_ns) / cal_cpus,
                reading_uj: None,
                basis: format!(
                    "calibrated {} mW with {cal_cpus} CPUs busy, per CPU × CPU time {cpu_ns} ns",
                    c.active_mw
                ),
            };
        }
        let cpus32 = inner.probe.online_cpus.max(1);
        let full_mw = inner.cfg.estimator.power_mw(1000, cpus32);
        SpanPart {
            source: CpuSource::Estimate.as_str(),
            rung: RungId::Estimate,
            provenance: Provenance::Estimator,
            uj: energy_uj(full_mw, cpu_ns) / cpus,
            reading_uj: None,
            basis: format!("default {full_mw} mW at full load on {cpus} CPUs, per CPU × CPU time {cpu_ns} ns"),
        }
    }

    /// The GPU part, where the GPU is live; a gap where its share is not attributable.
    fn gpu_part(&self, gpu1: Option<&Result<Vec<u64>, String>>, pids: &[u32], gaps: &mut Vec<Gap>) -> Option<SpanPart> {
        let (g, infos) = self.inner.gpu.as_ref()?;
        let unattributed = |gaps: &mut Vec<Gap>, why: String| gaps.push(Gap::new(gap::GPU_UNATTRIBUTED, None, why));
        let util = match g.tree_util_permille(pids, self.t0) {
            Ok(u) => u,
            Err(e) => {
                unattributed(gaps, format!("the driver does not report the tree's GPU use: {e}"));
                return None;
            }
        };
        let reading = match (self.gpu0.as_ref(), gpu1) {
            (Some(Ok(a)), Some(Ok(b))) => sources::advance(infos, a, b),
            (Some(Err(e)), _) | (_, Some(Err(e))) => Err(e.clone()),
            _ => Err("not read".into()),
        };
        match reading {
            Ok((r, advanced)) if advanced || util == 0 => Some(SpanPart {
                source: "nvml",
                rung: RungId::Nvml,
                provenance: Provenance::ModelBased,
                uj: mul_div(r, u64::from(util), 1000),
                reading_uj: Some(r),
                basis: format!("GPU energy {r} µJ × the tree's GPU utilisation {util} ‰"),
            }),
            Ok(_) => {
                unattributed(
                    gaps,
                    format!("the tree used the GPU ({util} ‰) and its energy counter did not advance over the span"),
                );
                None
            }
            Err(e) => {
                unattributed(gaps, format!("the GPU's energy was not read: {e}"));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::tree::tests::Forker;

    fn meter() -> SpanMeter {
        let sources = SpanSources {
            powercap_root: None,
            powercap_read: crate::rapl::read_file,
            perf_rapl: None,
            gpu: None,
            calibration: Err(Decline::new("calibration-absent", "none in this test")),
            host: HostId::this_host(),
            children: None,
        };
        let cfg = SpanConfig {
            settle_wait: Duration::from_millis(200),
            probe_step: Duration::from_millis(10),
            probe_intervals: 1,
            ..SpanConfig::default()
        };
        SpanMeter::with_sources(cfg, sources)
    }

    fn carried(m: &SpanMeter) -> usize {
        m.inner.carried.lock().unwrap().len()
    }

    #[test]
    fn s5_1_a_stop_reading_is_the_next_start_while_the_tree_does_not_run() {
        let mut f = Forker::spawn(2);
        let target = Target::Tree { root: f.child.id(), self_contained: true };
        let m = meter();
        let first = m.start(target).unwrap();
        assert!(first.walker.stat_reads() > 0, "the first span reads its start");
        let fig = first.stop();
        assert!(fig.gaps.is_empty(), "{fig:?}");
        assert_eq!(carried(&m), 1, "the idle tree's stop reading is kept");
        let reads = m.inner.carried.lock().unwrap()[0].walker.stat_reads();
        // Nothing of the tree ran: the next start is that reading, no `stat` read.
        let second = m.start(target).unwrap();
        assert_eq!(second.walker.stat_reads(), reads, "the carried reading is the start");
        assert_eq!(second.start.walk.members.len(), 3);
        assert_eq!(carried(&m), 0, "taken");
        let fig = second.stop();
        assert!(fig.gaps.is_empty(), "{fig:?}");
        assert_eq!(fig.members, 3);
        // The shell forks between two spans: the kept reading is not
        // vouched for, the start is read afresh and holds the new child,
        // so none of its time before the span is charged to it.
        let reads = m.inner.carried.lock().unwrap()[0].walker.stat_reads();
        f.fork_one();
        let third = m.start(target).unwrap();
        assert!(third.walker.stat_reads() > reads, "read afresh");
        assert_eq!(third.start.walk.members.len(), 4, "{:?}", third.start);
        let fig = third.stop();
        assert!(fig.gaps.is_empty(), "{fig:?}");
        assert_eq!(fig.members, 4);
    }

    #[test]
    fn s5_1_own_threads_carry_nothing() {
        let m = meter();
        let s = m.start(Target::OwnThreads).unwrap();
        drop(s.stop());
        assert_eq!(carried(&m), 0);
    }
}
