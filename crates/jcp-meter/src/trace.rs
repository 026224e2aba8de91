//! Recorded counter traces (`jcp-meter-trace/1`): a counter rung's readings
//! over time, replayed behind [`CounterBackend`] by tests, by
//! `jcp meter --replay` and by `jcp meter calibrate --from-trace`.
//!
//! ```json
//! {"format":"jcp-meter-trace/1","rung":"nvml","host":null,
//!  "counters":[{"name":"gpu0","max_range_uj":null,"power_limit_mw":65000,"draw_exposed":true}],
//!  "samples":[{"t_ns":0,"uj":[1000],"draw_mw":[14800],"util_permille":250}]}
//! ```
//!
//! A trace is outside bytes: [`Trace::from_json`] refuses unknown fields,
//! timestamps that do not strictly increase, sample rows of the wrong width
//! and values past a counter's declared range, each with a typed error.

use serde::{Deserialize, Serialize};

use crate::backend::{CounterBackend, CounterInfo, Decline, DrawReading, RungId};
use crate::estimate::HostId;
use crate::Error;

/// The trace format tag.
pub const TRACE_FORMAT: &str = "jcp-meter-trace/1";

/// One recorded counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceCounter {
    /// Its name.
    pub name: String,
    /// Its wrap range, µJ; `null` where a decrease is a reset.
    pub max_range_uj: Option<u64>,
    /// The board's maximum power limit, mW, where it was readable.
    #[serde(default)]
    pub power_limit_mw: Option<u64>,
    /// Whether the board's draw was exposed.
    #[serde(default)]
    pub draw_exposed: bool,
}

/// One sample of every counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSample {
    /// Monotonic time, ns since the trace began.
    pub t_ns: u64,
    /// Each counter's value, µJ; `null` where the read failed.
    pub uj: Vec<Option<u64>>,
    /// Each counter's board draw, mW; absent or `null` where not read.
    #[serde(default)]
    pub draw_mw: Vec<Option<u64>>,
    /// CPU utilisation over the interval before this sample, ‰.
    #[serde(default)]
    pub util_permille: Option<u32>,
}

/// A recorded trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// [`TRACE_FORMAT`].
    pub format: String,
    /// The counter rung recorded.
    pub rung: RungId,
    /// Where it was recorded, where known.
    #[serde(default)]
    pub host: Option<HostId>,
    /// The counters.
    pub counters: Vec<TraceCounter>,
    /// The samples, in time order.
    pub samples: Vec<TraceSample>,
}

impl Trace {
    /// Decodes and checks a trace.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let t: Self = serde_json::from_str(text).map_err(|e| Error::TraceMalformed {
            at: format!("line {} column {}", e.line(), e.column()),
            detail: e.to_string(),
        })?;
        t.validate()?;
        Ok(t)
    }

    /// Decodes bytes (UTF-8 JSON).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let text = std::str::from_utf8(bytes).map_err(|e| Error::TraceMalformed {
            at: format!("byte {}", e.valid_up_to()),
            detail: "not UTF-8".into(),
        })?;
        Self::from_json(text)
    }

    /// Checks the invariants `from_json` promises.
    pub fn validate(&self) -> Result<(), Error> {
        if self.format != TRACE_FORMAT {
            return Err(Error::TraceUnsupported { found: self.format.clone() });
        }
        if !matches!(self.rung, RungId::Rapl | RungId::Nvml) {
            return Err(Error::TraceMalformed {
                at: "rung".into(),
                detail: format!("`{}` is not a counter rung", self.rung),
            });
        }
        if self.counters.is_empty() {
            return Err(Error::TraceMalformed { at: "counters".into(), detail: "no counter".into() });
        }
        let n = self.counters.len();
        let mut previous: Option<u64> = None;
        for (index, s) in self.samples.iter().enumerate() {
            if let Some(p) = previous {
                if s.t_ns <= p {
                    return Err(Error::TraceTimeNotMonotonic { index, t_ns: s.t_ns, previous_ns: p });
                }
            }
            previous = Some(s.t_ns);
            if s.uj.len() != n {
                return Err(Error::TraceCounterCount { index, expected: n, got: s.uj.len() });
            }
            if !s.draw_mw.is_empty() && s.draw_mw.len() != n {
                return Err(Error::TraceCounterCount { index, expected: n, got: s.draw_mw.len() });
            }
            if let Some(u) = s.util_permille {
                if u > 1000 {
                    return Err(Error::TraceMalformed {
                        at: format!("samples[{index}].util_permille"),
                        detail: format!("{u} is above 1000"),
                    });
                }
            }
            for (counter, (v, c)) in s.uj.iter().zip(&self.counters).enumerate() {
                if let (Some(v), Some(max)) = (v, c.max_range_uj) {
                    if *v > max {
                        return Err(Error::TraceValueOutOfRange { index, counter, value: *v, max });
                    }
                }
            }
        }
        Ok(())
    }

    /// The content id (blake3, hex) of the trace's bytes as given.
    pub fn content_id(bytes: &[u8]) -> String {
        blake3::hash(bytes).to_hex().to_string()
    }

    /// The sample published at `now_ns`: the last one at or before it.
    pub fn at(&self, now_ns: u64) -> Option<&TraceSample> {
        let i = self.samples.partition_point(|s| s.t_ns <= now_ns);
        i.checked_sub(1).map(|i| &self.samples[i])
    }

    /// The time of the last sample.
    pub fn end_ns(&self) -> u64 {
        self.samples.last().map_or(0, |s| s.t_ns)
    }
}

/// Replays a [`Trace`] as a counter backend: a read at `now` returns the
/// sample published at `now`; past the trace's end a read fails (a gap in
/// the counter, never a zero).
#[derive(Debug, Clone)]
pub struct TraceBackend {
    trace: Trace,
}

impl TraceBackend {
    /// A replay of `trace`.
    pub fn new(trace: Trace) -> Self {
        Self { trace }
    }

    /// The trace.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }
}

impl CounterBackend for TraceBackend {
    fn rung(&self) -> RungId {
        self.trace.rung
    }

    fn open(&mut self) -> Result<Vec<CounterInfo>, Decline> {
        if self.trace.samples.is_empty() {
            return Err(Decline::new("trace-empty", "the recorded trace has no sample"));
        }
        Ok(self
            .trace
            .counters
            .iter()
            .map(|c| CounterInfo {
                name: c.name.clone(),
                source: "recorded trace".into(),
                max_range_uj: c.max_range_uj,
            })
            .collect())
    }

    fn read(&mut self, now_ns: u64) -> Result<Vec<u64>, String> {
        if now_ns > self.trace.end_ns() {
            return Err(format!("the trace ended at {} ns", self.trace.end_ns()));
        }
        let s = self.trace.at(now_ns).ok_or_else(|| format!("no sample at or before {now_ns} ns"))?;
        s.uj.iter()
            .zip(&self.trace.counters)
            .map(|(v, c)| v.ok_or_else(|| format!("{}: read failed in the recording at {} ns", c.name, s.t_ns)))
            .collect()
    }

    fn power_limits_mw(&mut self) -> Vec<Option<u64>> {
        self.trace.counters.iter().map(|c| c.power_limit_mw).collect()
    }

    fn read_draw(&mut self, now_ns: u64) -> Vec<DrawReading> {
        let sample = self.trace.at(now_ns);
        self.trace
            .counters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if !c.draw_exposed {
                    return DrawReading::NotExposed;
                }
                match sample.and_then(|s| s.draw_mw.get(i).copied().flatten()) {
                    Some(mw) => DrawReading::Sample { mw },
                    None => DrawReading::Unreadable { detail: "no draw recorded at this time".into() },
                }
            })
            .collect()
    }
}

/// Utilisation replayed from a trace's `util_permille` column.
#[derive(Debug, Clone)]
pub struct TraceUtil {
    trace: Trace,
    cpus: u32,
}

impl TraceUtil {
    /// Replays `trace`'s utilisation on `cpus` logical CPUs.
    pub fn new(trace: Trace, cpus: u32) -> Self {
        Self { trace, cpus }
    }
}

impl crate::estimate::UtilSource for TraceUtil {
    fn sample(&mut self, now_ns: u64) -> Option<u32> {
        self.trace.at(now_ns).and_then(|s| s.util_permille)
    }
    fn logical_cpus(&self) -> u32 {
        self.cpus
    }
}

/// Records `intervals` samples, `step` apart, of the first counter rung in
/// `backends` that opens, as a trace naming `host`. With `burn` the recording
/// thread burns CPU between samples (as the liveness probe does), so a
/// package counter has something to count. Nothing is judged here: a
/// recorded trace is judged when it is replayed or calibrated from.
pub fn record(
    backends: &mut [Box<dyn CounterBackend>],
    clock: &dyn crate::clock::Clock,
    step: std::time::Duration,
    intervals: usize,
    burn: bool,
    host: HostId,
) -> Result<Trace, Error> {
    let mut why = Vec::new();
    for backend in backends.iter_mut() {
        let rung = backend.rung();
        let infos = match backend.open() {
            Ok(i) => i,
            Err(d) => {
                why.push(format!("{rung}: {} ({})", d.why, d.code));
                continue;
            }
        };
        let limits = backend.power_limits_mw();
        let t0 = clock.now_ns();
        let mut samples = Vec::with_capacity(intervals + 1);
        let mut draw_exposed = vec![false; infos.len()];
        for i in 0..=intervals {
            if i > 0 {
                clock.pause(step, burn);
            }
            let now = clock.now_ns();
            let uj: Vec<Option<u64>> = match backend.read(now) {
                Ok(v) => v.into_iter().map(Some).collect(),
                Err(_) => vec![None; infos.len()],
            };
            let draws = backend.read_draw(now);
            let draw_mw: Vec<Option<u64>> = (0..infos.len())
                .map(|c| match draws.get(c) {
                    Some(DrawReading::Sample { mw }) => {
                        draw_exposed[c] = true;
                        Some(*mw)
                    }
                    Some(DrawReading::Unreadable { .. }) => {
                        draw_exposed[c] = true;
                        None
                    }
                    _ => None,
                })
                .collect();
            samples.push(TraceSample { t_ns: now - t0, uj, draw_mw, util_permille: None });
        }
        let counters = infos
            .iter()
            .enumerate()
            .map(|(c, i)| TraceCounter {
                name: i.name.clone(),
                max_range_uj: i.max_range_uj,
                power_limit_mw: limits.get(c).copied().flatten(),
                draw_exposed: draw_exposed[c],
            })
            .collect();
        let t = Trace { format: TRACE_FORMAT.into(), rung, host: Some(host), counters, samples };
        t.validate()?;
        return Ok(t);
    }
    Err(Error::NoLiveCounter { detail: format!("no counter rung opened to record: {}", why.join("; ")) })
}
