//! §11 "The cost is the holder's measurement": the endpoint meters every
//! call it relays to the endpoint behind the gate, as a span over the
//! process tree that runs the work ([`Backend::tree_root`]; §5.1 rung 3),
//! and debits that figure through the two-phase path (§4.9, §4.11), never
//! the figure a caller stated.
//!
//! [`CallMeter`] is what the endpoint asks of a meter. Two are provided:
//! [`jcp_meter::span::SpanMeter`] (the ladder: RAPL apportioned by the
//! tree's CPU time, a host calibration, the default estimate, every gap
//! named) and [`WallClock`], which reads no process and grades wall time ×
//! a default power `Estimator`, `Partial` (the benchmark's baseline: the
//! relay without the span's reads of `/proc`).
//!
//! [`Backend::tree_root`]: crate::backend::Backend::tree_root

use std::time::Instant;

use jcp::energy::{Coverage, Energy, Provenance};
use jcp_meter::span::{Span, SpanMeter, Target};

/// One relayed call's metered figure: what is charged, and what the meter
/// saw missing from it (each a named gap, §5.2).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CallFigure {
    /// The figure charged (µJ, grade, coverage, measured).
    pub energy: Energy,
    /// The gaps, each `code` (`reaped-in-span`, `unsettled-at-stop`, …)
    /// with the member and what was seen.
    pub gaps: Vec<CallGap>,
    /// The tree's CPU time over the span, ns.
    pub cpu_ns: u64,
    /// The span's wall time, ns.
    pub wall_ns: u64,
    /// Which rung metered it (`rapl`, `calibrated`, `estimate`, `wall-clock`).
    pub rung: String,
    /// Members of the tree read.
    pub members: u32,
}

/// A gap in a call's figure (§5.1, §5.2).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CallGap {
    /// The stable code.
    pub code: String,
    /// The member concerned, where one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// What was seen.
    pub detail: String,
}

/// What a call is metered over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallTarget {
    /// The endpoint's own threads (a backend that runs in-process).
    OwnThreads,
    /// Another process tree: its root's pid, and the operator's §5.1
    /// declaration that it hands no work outside itself.
    Tree {
        /// The root's pid.
        root: u32,
        /// The declaration.
        self_contained: bool,
    },
}

/// A meter the endpoint opens a span of around each relayed call.
pub trait CallMeter: Send + Sync + 'static {
    /// Opens a span over `target`; what it returns always closes to a
    /// figure (a span that could not be opened is metered by what is left,
    /// and says so).
    fn start(&self, target: CallTarget) -> Box<dyn CallSpan>;
}

/// An open span.
pub trait CallSpan: Send {
    /// Closes the span: the call's figure.
    fn stop(self: Box<Self>) -> CallFigure;
}

impl CallMeter for SpanMeter {
    fn start(&self, target: CallTarget) -> Box<dyn CallSpan> {
        let t = match target {
            CallTarget::OwnThreads => Target::OwnThreads,
            CallTarget::Tree { root, self_contained } => Target::Tree { root, self_contained },
        };
        match SpanMeter::start(self, t) {
            Ok(span) => Box::new(TreeSpan(span)),
            Err(e) => Box::new(Unopened { at: Instant::now(), why: e.to_string(), code: e.code() }),
        }
    }
}

/// A span of the ladder's.
struct TreeSpan(Span);

impl CallSpan for TreeSpan {
    fn stop(self: Box<Self>) -> CallFigure {
        let f = self.0.stop();
        CallFigure {
            energy: Energy { uj: f.uj, provenance: f.provenance, coverage: f.coverage, measured: f.measured },
            gaps: f
                .gaps
                .into_iter()
                .map(|g| CallGap { code: g.code.to_owned(), pid: g.pid, detail: g.detail })
                .collect(),
            cpu_ns: f.cpu_ns,
            wall_ns: f.wall_ns,
            rung: f.rung.as_str().to_owned(),
            members: f.members,
        }
    }
}

/// A span the meter could not open (a target it cannot read): the call
/// is metered by wall time at the default power, `Estimator`, `Partial`,
/// and the reason is its gap.
struct Unopened {
    at: Instant,
    why: String,
    code: &'static str,
}

impl CallSpan for Unopened {
    fn stop(self: Box<Self>) -> CallFigure {
        let mut f = wall_clock_figure(self.at);
        f.gaps.push(CallGap { code: self.code.to_owned(), pid: None, detail: self.why });
        f
    }
}

/// The meter that reads no process: wall time × the default active power
/// of [`jcp_meter::estimate::EstimatorConfig`] for one CPU, `Estimator`,
/// `Partial` (gap `tree-not-read`). Never better than what it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl CallMeter for WallClock {
    fn start(&self, _target: CallTarget) -> Box<dyn CallSpan> {
        Box::new(WallSpan(Instant::now()))
    }
}

struct WallSpan(Instant);

impl CallSpan for WallSpan {
    fn stop(self: Box<Self>) -> CallFigure {
        wall_clock_figure(self.0)
    }
}

/// Wall time since `at` × one CPU's default active power.
fn wall_clock_figure(at: Instant) -> CallFigure {
    let wall_ns = u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mw = jcp_meter::estimate::EstimatorConfig::default().power_mw(1000, 1);
    CallFigure {
        energy: Energy {
            uj: jcp_meter::estimate::energy_uj(mw, wall_ns),
            provenance: Provenance::Estimator,
            coverage: Coverage::Partial,
            measured: None,
        },
        gaps: vec![CallGap {
            code: "tree-not-read".into(),
            pid: None,
            detail: "wall time × a default power: no process of the work was read".into(),
        }],
        cpu_ns: 0,
        wall_ns,
        rung: "wall-clock".into(),
        members: 0,
    }
}

impl CallFigure {
    /// The canonical value a reply carries (`metered`): `{uj, provenance,
    /// coverage?, measured?, gaps, cpu_ns, wall_ns, rung, members}`, each
    /// gap `{code, pid?, detail}`.
    pub fn to_value(&self) -> jcp::cbor::Value {
        use jcp::cbor::{map, Value};
        let gaps = self
            .gaps
            .iter()
            .map(|g| {
                map([
                    ("code", Some(Value::text(g.code.as_str()))),
                    ("pid", g.pid.map(|p| Value::Uint(u64::from(p)))),
                    ("detail", Some(Value::text(g.detail.as_str()))),
                ])
            })
            .collect();
        map([
            ("uj", Some(Value::Uint(self.energy.uj))),
            ("provenance", Some(Value::text(self.energy.provenance.as_str()))),
            ("coverage", (self.energy.coverage == Coverage::Partial).then(|| Value::text("Partial"))),
            ("measured", self.energy.measured.map(Value::Uint)),
            ("gaps", Some(Value::Array(gaps))),
            ("cpu_ns", Some(Value::Uint(self.cpu_ns))),
            ("wall_ns", Some(Value::Uint(self.wall_ns))),
            ("rung", Some(Value::text(self.rung.as_str()))),
            ("members", Some(Value::Uint(u64::from(self.members)))),
        ])
    }

    /// Reads the canonical value (strict: every field named, none unknown).
    pub fn from_value(v: &jcp::cbor::Value) -> Result<Self, crate::WireError> {
        use jcp::cbor::{Fields, Value};
        let mut f = Fields::new("CallFigure", v)?;
        let uj = f.uint("uj")?;
        let p = f.text("provenance")?;
        let provenance =
            Provenance::parse(p).ok_or_else(|| f.error("provenance", format!("unknown provenance {p:?}")))?;
        let coverage = match f.opt_text("coverage")? {
            None => Coverage::Whole,
            Some("Partial") => Coverage::Partial,
            Some(other) => return Err(f.error("coverage", format!("{other:?}: only \"Partial\" is written")).into()),
        };
        let measured = f.opt_uint("measured")?;
        let Value::Array(items) = f.req("gaps")? else {
            return Err(f.error("gaps", "expected an array").into());
        };
        let gaps = items
            .iter()
            .map(|g| {
                let mut gf = Fields::new("CallGap", g)?;
                let code = gf.text("code")?.to_owned();
                let pid = gf.opt_uint("pid")?.map(|p| u32::try_from(p).unwrap_or(u32::MAX));
                let detail = gf.text("detail")?.to_owned();
                gf.finish()?;
                Ok(CallGap { code, pid, detail })
            })
            .collect::<Result<Vec<_>, crate::WireError>>()?;
        let cpu_ns = f.uint("cpu_ns")?;
        let wall_ns = f.uint("wall_ns")?;
        let rung = f.text("rung")?.to_owned();
        let members = u32::try_from(f.uint("members")?).unwrap_or(u32::MAX);
        f.finish()?;
        let energy = Energy { uj, provenance, coverage, measured };
        energy.check_grade().map_err(crate::WireError::Cost)?;
        Ok(Self { energy, gaps, cpu_ns, wall_ns, rung, members })
    }
}
