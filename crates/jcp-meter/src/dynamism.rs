//! §5.4 dynamism: what a deviation establishes, and what it never does.
//!
//! - Provenance and coverage are per window ([`DynamismReport::grades`] counts
//!   them; there is no one grade for a series).
//! - A [`Baseline`] declares where it was measured ([`Scope`]: host,
//!   occupancy, window length) and is applied nowhere else; an undeclared
//!   baseline is inapplicable.
//! - A [`Cause`] explains a deviation only with the content id of the
//!   reading that supports it; [`Cause::new`] refuses one without.
//! - A phenomenon shorter than a window, or a window with no reading, is
//!   *unresolvable*, never within band.
//! - Unexplained, inapplicable and unresolvable windows are counted apart;
//!   there is no single score and no verdict of intent.

use std::collections::{BTreeMap, HashMap};

use jcp::cbor::ContentId;
use jcp::energy::{Coverage, Provenance};
use serde::{Deserialize, Serialize};

use crate::estimate::HostId;
use crate::meter::Window;
use crate::Error;

/// Where an expectation was measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// The silicon.
    pub host: HostId,
    /// The occupancy (e.g. `idle`, `one-model-serving`), as the operator names it.
    pub occupancy: String,
    /// The sampling window, ns.
    pub window_ns: u64,
}

/// An expected band of energy per window, and where it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// Where it was measured; `None` is an undeclared baseline (inapplicable everywhere).
    pub scope: Option<Scope>,
    /// The band's low end, µJ per `window_ns`.
    pub low_uj: u64,
    /// The band's high end, µJ per `window_ns`.
    pub high_uj: u64,
}

/// A named operational cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CauseKind {
    /// The part hit a thermal limit.
    ThermalLimit,
    /// Other work shared the host.
    HostContention,
    /// Caches and pools were cold.
    ColdStart,
    /// The clock frequency moved.
    FrequencyScaling,
    /// The meter did not cover the whole window.
    MeterCoverageGap,
}

/// A cause and the reading that supports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// What.
    pub kind: CauseKind,
    /// The content id of the supporting reading.
    pub evidence: ContentId,
}

impl Cause {
    /// A cause; refused without evidence (§5.4).
    pub fn new(kind: CauseKind, evidence: Option<ContentId>) -> Result<Self, Error> {
        match evidence {
            Some(evidence) => Ok(Self { kind, evidence }),
            None => Err(Error::CauseWithoutEvidence {
                cause: serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
            }),
        }
    }
}

/// What one window establishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "assessment", rename_all = "kebab-case")]
pub enum Assessment {
    /// Inside the band.
    WithinBand,
    /// Outside the band, with an evidenced cause.
    Explained {
        /// The cause.
        cause: Cause,
    },
    /// Outside the band, nothing explains it: a request for a look, not a finding of wrongdoing.
    Unexplained {
        /// The window's µJ.
        energy_uj: u64,
        /// The band scaled to the window, µJ (low, high).
        band_uj: (u64, u64),
    },
    /// No yardstick applies here.
    Inapplicable {
        /// Why.
        why: String,
    },
    /// The window could not have seen it.
    Unresolvable {
        /// Why.
        why: String,
    },
}

/// One window's grade and assessment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowAssessment {
    /// The window's sequence number.
    pub seq: u64,
    /// Its provenance (`None` for a gap).
    pub provenance: Option<Provenance>,
    /// Its coverage (`None` for a gap).
    pub coverage: Option<Coverage>,
    /// What it establishes.
    pub assessment: Assessment,
}

/// A series' assessment: counts kept apart, no single score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DynamismReport {
    /// Per window.
    pub windows: Vec<WindowAssessment>,
    /// Windows per provenance label (`gap` for none).
    pub grades: BTreeMap<String, u64>,
    /// Within band.
    pub within_band: u64,
    /// Explained with evidence.
    pub explained: u64,
    /// "Look at this".
    pub unexplained: u64,
    /// "We have no yardstick".
    pub inapplicable: u64,
    /// "We could not have seen it".
    pub unresolvable: u64,
}

/// Assesses `windows` measured in `here` against `baseline`, for a
/// phenomenon lasting at least `shortest_phenomenon_ns` (where known), with
/// evidenced causes per window sequence number.
pub fn assess(
    windows: &[Window],
    baseline: Option<&Baseline>,
    here: &Scope,
    shortest_phenomenon_ns: Option<u64>,
    causes: &HashMap<u64, Cause, impl std::hash::BuildHasher>,
) -> DynamismReport {
    let mut out = DynamismReport {
        windows: Vec::new(),
        grades: BTreeMap::new(),
        within_band: 0,
        explained: 0,
        unexplained: 0,
        inapplicable: 0,
        unresolvable: 0,
    };
    let applicable: Result<&Baseline, String> = match baseline {
        None => Err("no baseline".into()),
        Some(Baseline { scope: None, .. }) => Err("the baseline does not declare where it was measured".into()),
        Some(Baseline { scope: Some(_), .. }) if here.occupancy.is_empty() => {
            Err("the windows declare no occupancy, so no baseline can be held to them".into())
        }
        Some(b @ Baseline { scope: Some(s), .. }) => {
            if s.host != here.host {
                Err(format!("the baseline was measured on {}, not here ({})", s.host, here.host))
            } else if s.occupancy != here.occupancy {
                Err(format!("the baseline was measured at occupancy `{}`, not `{}`", s.occupancy, here.occupancy))
            } else if s.window_ns != here.window_ns {
                Err(format!("the baseline was measured with {} ns windows, not {} ns", s.window_ns, here.window_ns))
            } else {
                Ok(b)
            }
        }
    };
    for w in windows {
        *out.grades.entry(w.provenance.map_or_else(|| "gap".to_owned(), |p| p.as_str().to_owned())).or_default() += 1;
        let assessment = if let Some(ph) = shortest_phenomenon_ns.filter(|ph| *ph < w.span_ns()) {
            Assessment::Unresolvable {
                why: format!("a phenomenon of {ph} ns is shorter than this {} ns window", w.span_ns()),
            }
        } else if let Some(gap) = &w.gap {
            Assessment::Unresolvable { why: format!("no reading: {gap}") }
        } else {
            match (&applicable, w.energy()) {
                (Err(why), _) => Assessment::Inapplicable { why: why.clone() },
                (Ok(_), None) => Assessment::Unresolvable { why: "no reading".into() },
                (Ok(_), Some(e)) if e.coverage == Coverage::Partial => {
                    Assessment::Inapplicable { why: "a Partial figure does not hold the whole window's energy".into() }
                }
                (Ok(b), Some(e)) => {
                    let span = u128::from(w.span_ns());
                    let base = u128::from(here.window_ns.max(1));
                    // Compare e/span with band/base exactly.
                    let lhs = u128::from(e.uj) * base;
                    let (lo, hi) = (u128::from(b.low_uj) * span, u128::from(b.high_uj) * span);
                    if lhs >= lo && lhs <= hi {
                        Assessment::WithinBand
                    } else if let Some(c) = causes.get(&w.seq) {
                        Assessment::Explained { cause: c.clone() }
                    } else {
                        let scale = |x: u64| u64::try_from(u128::from(x) * span / base).unwrap_or(u64::MAX);
                        Assessment::Unexplained { energy_uj: e.uj, band_uj: (scale(b.low_uj), scale(b.high_uj)) }
                    }
                }
            }
        };
        match assessment {
            Assessment::WithinBand => out.within_band += 1,
            Assessment::Explained { .. } => out.explained += 1,
            Assessment::Unexplained { .. } => out.unexplained += 1,
            Assessment::Inapplicable { .. } => out.inapplicable += 1,
            Assessment::Unresolvable { .. } => out.unresolvable += 1,
        }
        out.windows.push(WindowAssessment { seq: w.seq, provenance: w.provenance, coverage: w.coverage, assessment });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::RungId;

    fn host(n: &str) -> HostId {
        HostId { hostname: n.into(), machine: None, cpu: "c".into(), logical_cpus: 2, os: "linux".into() }
    }

    fn scope(n: &str) -> Scope {
        Scope { host: host(n), occupancy: "idle".into(), window_ns: 1_000_000_000 }
    }

    fn win(seq: u64, uj: Option<u64>, p: Provenance) -> Window {
        Window {
            seq,
            start_ns: seq * 1_000_000_000,
            end_ns: (seq + 1) * 1_000_000_000,
            start_unix_ms: 0,
            end_unix_ms: 0,
            energy_uj: uj,
            provenance: uj.map(|_| p),
            coverage: uj.map(|_| Coverage::Whole),
            rung: uj.map(|_| RungId::Rapl),
            declined: vec![],
            gap: uj.is_none().then(|| "no reading".into()),
            counters: vec![],
            util_permille: None,
            note: None,
        }
    }

    fn baseline(n: Option<&str>) -> Baseline {
        Baseline { scope: n.map(scope), low_uj: 5_000_000, high_uj: 10_000_000 }
    }

    #[test]
    fn s5_4_undeclared_baseline_is_inapplicable() {
        let r = assess(
            &[win(0, Some(50_000_000), Provenance::HwShunt)],
            Some(&baseline(None)),
            &scope("a"),
            None,
            &HashMap::new(),
        );
        assert_eq!((r.inapplicable, r.unexplained), (1, 0));
    }

    #[test]
    fn s5_4_baseline_from_other_silicon_is_refused() {
        let r = assess(
            &[win(0, Some(50_000_000), Provenance::HwShunt)],
            Some(&baseline(Some("b"))),
            &scope("a"),
            None,
            &HashMap::new(),
        );
        assert_eq!(r.inapplicable, 1);
    }

    #[test]
    fn s5_4_three_kinds_of_look_are_kept_apart() {
        let ws = [
            win(0, Some(7_000_000), Provenance::HwShunt),
            win(1, Some(50_000_000), Provenance::HwShunt),
            win(2, None, Provenance::HwShunt),
            win(3, Some(60_000_000), Provenance::Estimator),
        ];
        let mut causes = HashMap::new();
        causes.insert(
            3,
            Cause::new(CauseKind::ThermalLimit, Some(ContentId::of(&jcp::cbor::Value::text("thermal reading"))))
                .unwrap(),
        );
        let r = assess(&ws, Some(&baseline(Some("a"))), &scope("a"), None, &causes);
        assert_eq!((r.within_band, r.unexplained, r.unresolvable, r.explained, r.inapplicable), (1, 1, 1, 1, 0));
        assert_eq!(r.grades.get("HwShunt"), Some(&2));
        assert_eq!(r.grades.get("gap"), Some(&1));
        assert_eq!(r.grades.get("Estimator"), Some(&1));
    }

    #[test]
    fn s5_4_phenomenon_shorter_than_window_is_unresolvable_not_within_band() {
        let r = assess(
            &[win(0, Some(7_000_000), Provenance::HwShunt)],
            Some(&baseline(Some("a"))),
            &scope("a"),
            Some(10_000_000),
            &HashMap::new(),
        );
        assert_eq!((r.unresolvable, r.within_band), (1, 0));
    }

    #[test]
    fn s5_4_cause_without_evidence_is_refused() {
        assert_eq!(Cause::new(CauseKind::ColdStart, None).unwrap_err().code(), "cause-without-evidence");
    }
}
