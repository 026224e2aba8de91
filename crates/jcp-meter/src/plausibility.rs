//! §5 plausibility: a live counter can still count something other than what
//! it claims. Where a bound is readable independently of the counter — the
//! board's maximum power limit, the board's power draw — the counter's implied
//! rate is checked against it, both ways.
//!
//! The rules as implemented (each held by a test below):
//! - the rate is `ΔµJ / Δt`, compared by exact integer cross-multiplication,
//!   never through a rounded quotient;
//! - a rate above the static power limit refutes (the limit is never discarded);
//! - each draw sample above the limit is impossible and is discarded alone;
//!   the rest stay;
//! - a rate above the mean usable draw plus the draw's ±5 W accuracy refutes;
//! - a rate under a quarter of the mean usable draw, after the 5 W accuracy
//!   is taken off it, refutes — except near idle (see [`NEAR_IDLE_MW`]);
//! - draw readable but no usable sample left: *unjudgeable*, not implausible;
//! - no bound readable at all: the requirement does not apply.
//!
//! A counter inside both bounds is *not refuted*; that is never a finding that
//! it is correct.

use serde::Serialize;

/// The draw reading's own accuracy, ±5 W (§5).
pub const DRAW_ACCURACY_MW: u64 = 5_000;

/// The board counts as near idle, and the floor does not fire, when its mean
/// usable draw is at most this (10 W) or at most a tenth of its power limit
/// (docs/decisions.md, "§5 near idle").
pub const NEAR_IDLE_MW: u64 = 10_000;

/// What the check is given for one span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoundInput {
    /// The counter's advance over the span, µJ.
    pub counter_delta_uj: u64,
    /// The span, ns.
    pub span_ns: u64,
    /// The board's maximum power limit, mW, where readable.
    pub power_limit_mw: Option<u64>,
    /// Whether the platform exposes the board's draw at all.
    pub draw_exposed: bool,
    /// Draw samples taken inside the span, mW.
    pub draw_samples_mw: Vec<u64>,
}

/// A draw sample thrown out as impossible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Discarded {
    /// Its index among the span's samples.
    pub index: usize,
    /// Its value, mW.
    pub draw_mw: u64,
    /// The static limit it exceeded, mW.
    pub limit_mw: u64,
}

/// Which bound a refusal broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundKind {
    /// The board's maximum power limit (static; never discarded).
    PowerLimit,
    /// The mean usable draw plus its accuracy.
    DrawCeiling,
    /// A quarter of the mean usable draw less its accuracy.
    DrawFloor,
}

impl BoundKind {
    /// The stable code (as serialised: `power-limit`, `draw-ceiling`, `draw-floor`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PowerLimit => "power-limit",
            Self::DrawCeiling => "draw-ceiling",
            Self::DrawFloor => "draw-floor",
        }
    }

    /// What the bound is, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Self::PowerLimit => "board power limit",
            Self::DrawCeiling => "draw ceiling (mean draw + 5 W)",
            Self::DrawFloor => "draw floor ((mean draw - 5 W) / 4)",
        }
    }
}

/// The finding for one span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Plausibility {
    /// Inside every readable bound. Not a finding that the counter is right.
    NotRefuted {
        /// The implied rate, mW (rounded down; the comparison was exact).
        rate_mw: u64,
        /// The bounds it was held to.
        bounds: Vec<(BoundKind, u64)>,
        /// Whether the floor applied (false near idle).
        floor_applied: bool,
        /// Samples discarded as impossible.
        discarded: Vec<Discarded>,
    },
    /// Outside a bound: the counter must not give a hardware-graded figure.
    Implausible {
        /// The implied rate, mW.
        rate_mw: u64,
        /// The bound it broke.
        bound: BoundKind,
        /// The bound's value, mW.
        bound_mw: u64,
        /// Samples discarded as impossible.
        discarded: Vec<Discarded>,
    },
    /// The draw is readable but no usable sample remains: no yardstick, no
    /// finding about the counter. Still not admissible.
    Unjudgeable {
        /// The implied rate, mW.
        rate_mw: u64,
        /// Why no yardstick remains.
        reason: String,
        /// Samples discarded as impossible.
        discarded: Vec<Discarded>,
    },
    /// No bound is readable: the requirement does not apply (liveness stands alone).
    NoBound {
        /// The implied rate, mW.
        rate_mw: u64,
    },
}

impl Plausibility {
    /// Whether the counter may give a hardware-graded figure for the span.
    pub fn admits(&self) -> bool {
        matches!(self, Self::NotRefuted { .. } | Self::NoBound { .. })
    }

    /// The stable verdict code (as serialised: `not-refuted`, `implausible`,
    /// `unjudgeable`, `no-bound`).
    pub fn verdict(&self) -> &'static str {
        match self {
            Self::NotRefuted { .. } => "not-refuted",
            Self::Implausible { .. } => "implausible",
            Self::Unjudgeable { .. } => "unjudgeable",
            Self::NoBound { .. } => "no-bound",
        }
    }

    /// The implied rate, mW.
    pub fn rate_mw(&self) -> u64 {
        match self {
            Self::NotRefuted { rate_mw, .. }
            | Self::Implausible { rate_mw, .. }
            | Self::Unjudgeable { rate_mw, .. }
            | Self::NoBound { rate_mw } => *rate_mw,
        }
    }

    /// The bounds the rate was held to, with their values, mW: for
    /// `implausible` the one it broke; for `not-refuted` every one it was
    /// held to; none for `unjudgeable` (no yardstick) and `no-bound`.
    pub fn bounds(&self) -> Vec<(BoundKind, u64)> {
        match self {
            Self::NotRefuted { bounds, .. } => bounds.clone(),
            Self::Implausible { bound, bound_mw, .. } => vec![(*bound, *bound_mw)],
            Self::Unjudgeable { .. } | Self::NoBound { .. } => Vec::new(),
        }
    }

    /// A one-line account for people.
    pub fn describe(&self) -> String {
        match self {
            Self::NotRefuted { rate_mw, .. } => format!("not refuted at {}", fmt_mw(*rate_mw)),
            Self::Implausible { rate_mw, bound, bound_mw, discarded } => format!(
                "implausible: counter rate {} breaks the {} of {}{}",
                fmt_mw(*rate_mw),
                bound.describe(),
                fmt_mw(*bound_mw),
                discarded_note(discarded)
            ),
            Self::Unjudgeable { rate_mw, reason, discarded } => {
                format!("unjudgeable (counter rate {}): {reason}{}", fmt_mw(*rate_mw), discarded_note(discarded))
            }
            Self::NoBound { rate_mw } => {
                format!("no independent bound readable (rate {})", fmt_mw(*rate_mw))
            }
        }
    }
}

fn discarded_note(d: &[Discarded]) -> String {
    if d.is_empty() {
        String::new()
    } else {
        format!("; {} impossible draw sample(s) discarded", d.len())
    }
}

/// Milliwatts as watts with three decimals.
pub fn fmt_mw(mw: u64) -> String {
    format!("{}.{:03} W", mw / 1000, mw % 1000)
}

/// The implied rate in mW, rounded down: µJ/ns × 10⁶ = mW.
pub fn rate_mw(delta_uj: u64, span_ns: u64) -> u64 {
    if span_ns == 0 {
        return u64::MAX;
    }
    u64::try_from(u128::from(delta_uj) * 1_000_000 / u128::from(span_ns)).unwrap_or(u64::MAX)
}

/// `delta/span > bound_mw` exactly.
fn above(delta_uj: u64, span_ns: u64, bound_mw: u64) -> bool {
    u128::from(delta_uj) * 1_000_000 > u128::from(bound_mw) * u128::from(span_ns)
}

/// Judges one span (§5 plausibility).
pub fn check(input: &BoundInput) -> Plausibility {
    let rate = rate_mw(input.counter_delta_uj, input.span_ns);
    let d = input.counter_delta_uj;
    let span = input.span_ns;
    if span == 0 {
        return Plausibility::Unjudgeable { rate_mw: rate, reason: "the span has no length".into(), discarded: vec![] };
    }
    // Impossible draw samples go one by one; the static limit never does.
    let mut discarded = Vec::new();
    let mut usable: Vec<u64> = Vec::with_capacity(input.draw_samples_mw.len());
    for (index, &s) in input.draw_samples_mw.iter().enumerate() {
        match input.power_limit_mw {
            Some(limit) if s > limit => discarded.push(Discarded { index, draw_mw: s, limit_mw: limit }),
            _ => usable.push(s),
        }
    }
    let mut bounds = Vec::new();
    if let Some(limit) = input.power_limit_mw {
        if above(d, span, limit) {
            return Plausibility::Implausible {
                rate_mw: rate,
                bound: BoundKind::PowerLimit,
                bound_mw: limit,
                discarded,
            };
        }
        bounds.push((BoundKind::PowerLimit, limit));
    }
    if !input.draw_exposed {
        if input.power_limit_mw.is_none() {
            return Plausibility::NoBound { rate_mw: rate };
        }
        return Plausibility::NotRefuted { rate_mw: rate, bounds, floor_applied: false, discarded };
    }
    if usable.is_empty() {
        let reason = if input.draw_samples_mw.is_empty() {
            "the board's draw is exposed but no sample was read in the span".to_owned()
        } else {
            "every draw sample in the span was impossible (above the board's own limit)".to_owned()
        };
        return Plausibility::Unjudgeable { rate_mw: rate, reason, discarded };
    }
    let n = u128::try_from(usable.len()).unwrap_or(u128::MAX);
    let sum: u128 = usable.iter().map(|&s| u128::from(s)).sum();
    let mean_mw = u64::try_from(sum / n).unwrap_or(u64::MAX);
    // Ceiling: rate > mean + 5 W  ⇔  d·10⁶·n > (sum + 5000·n)·span.
    let lhs = u128::from(d) * 1_000_000 * n;
    let ceiling_sum = sum + u128::from(DRAW_ACCURACY_MW) * n;
    let ceiling_mw = u64::try_from(ceiling_sum / n).unwrap_or(u64::MAX);
    if lhs > ceiling_sum * u128::from(span) {
        return Plausibility::Implausible {
            rate_mw: rate,
            bound: BoundKind::DrawCeiling,
            bound_mw: ceiling_mw,
            discarded,
        };
    }
    bounds.push((BoundKind::DrawCeiling, ceiling_mw));
    let near_idle = mean_mw <= NEAR_IDLE_MW || input.power_limit_mw.is_some_and(|l| mean_mw.saturating_mul(10) <= l);
    let mut floor_applied = false;
    if !near_idle {
        let accuracy_sum = u128::from(DRAW_ACCURACY_MW) * n;
        if sum > accuracy_sum {
            // Floor: rate < (mean − 5 W)/4  ⇔  4·d·10⁶·n < (sum − 5000·n)·span.
            let floor_sum = sum - accuracy_sum;
            let floor_mw = u64::try_from(floor_sum / n / 4).unwrap_or(u64::MAX);
            floor_applied = true;
            if 4 * lhs < floor_sum * u128::from(span) {
                return Plausibility::Implausible {
                    rate_mw: rate,
                    bound: BoundKind::DrawFloor,
                    bound_mw: floor_mw,
                    discarded,
                };
            }
            bounds.push((BoundKind::DrawFloor, floor_mw));
        }
    }
    Plausibility::NotRefuted { rate_mw: rate, bounds, floor_applied, discarded }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn input(watts_mw: u64, limit: Option<u64>, draws: &[u64]) -> BoundInput {
        BoundInput {
            counter_delta_uj: watts_mw * 1000, // over 1 s: mW × 1 s = mW·1000 µJ
            span_ns: S,
            power_limit_mw: limit,
            draw_exposed: true,
            draw_samples_mw: draws.to_vec(),
        }
    }

    #[test]
    fn s5_plausibility_rtx4050_counter_at_4x_draw_is_implausible() {
        // 14.8 W board draw, counter running at 4× (59.2 W), limit 65 W.
        let p = check(&input(59_200, Some(65_000), &[14_800; 8]));
        assert!(
            matches!(
                p,
                Plausibility::Implausible { bound: BoundKind::DrawCeiling, bound_mw: 19_800, rate_mw: 59_200, .. }
            ),
            "{p:?}"
        );
        assert!(!p.admits());
    }

    #[test]
    fn s5_plausibility_rtx4050_counter_at_30x_breaks_the_static_limit() {
        let p = check(&input(444_000, Some(65_000), &[14_800; 8]));
        assert!(
            matches!(
                p,
                Plausibility::Implausible { bound: BoundKind::PowerLimit, bound_mw: 65_000, rate_mw: 444_000, .. }
            ),
            "{p:?}"
        );
    }

    #[test]
    fn s5_plausibility_590w_wake_spike_is_discarded_alone() {
        let p = check(&input(59_200, Some(65_000), &[590_000, 14_800, 14_800, 14_800]));
        match p {
            Plausibility::Implausible { bound: BoundKind::DrawCeiling, bound_mw, ref discarded, .. } => {
                assert_eq!(bound_mw, 19_800);
                assert_eq!(discarded, &[Discarded { index: 0, draw_mw: 590_000, limit_mw: 65_000 }]);
            }
            other => panic!("expected a draw-ceiling finding, got {other:?}"),
        }
        // Had the spike stayed in the mean, the bound would have excused the counter:
        let with_spike = check(&input(59_200, None, &[590_000, 14_800, 14_800, 14_800]));
        assert!(with_spike.admits(), "the mutation this test guards against: {with_spike:?}");
    }

    #[test]
    fn s5_plausibility_only_spikes_is_unjudgeable_not_implausible() {
        let p = check(&input(14_000, Some(65_000), &[590_000, 600_000]));
        assert!(matches!(p, Plausibility::Unjudgeable { .. }), "{p:?}");
        assert!(!p.admits());
    }

    #[test]
    fn s5_plausibility_static_limit_still_refutes_when_draw_is_unusable() {
        let p = check(&input(100_000, Some(65_000), &[590_000]));
        assert!(matches!(p, Plausibility::Implausible { bound: BoundKind::PowerLimit, .. }), "{p:?}");
    }

    #[test]
    fn s5_plausibility_two_sided_floor_refutes_slow_counter() {
        // Board at 40 W, counter at 8 W: under (40 − 5)/4 = 8.75 W.
        let p = check(&input(8_000, Some(115_000), &[40_000; 4]));
        assert!(matches!(p, Plausibility::Implausible { bound: BoundKind::DrawFloor, bound_mw: 8_750, .. }), "{p:?}");
        // At 9 W it is not refuted.
        assert!(check(&input(9_000, Some(115_000), &[40_000; 4])).admits());
    }

    #[test]
    fn s5_plausibility_floor_does_not_fire_near_idle() {
        // Board at 8 W: near idle, a counter accruing almost nothing is fine.
        let p = check(&input(100, Some(65_000), &[8_000; 4]));
        assert!(matches!(p, Plausibility::NotRefuted { floor_applied: false, .. }), "{p:?}");
        // A big board idling at 60 W of a 700 W limit is near idle too.
        let p = check(&input(1_000, Some(700_000), &[60_000; 4]));
        assert!(matches!(p, Plausibility::NotRefuted { floor_applied: false, .. }), "{p:?}");
    }

    #[test]
    fn s5_plausibility_within_five_watts_is_not_refuted() {
        let p = check(&input(19_800, Some(65_000), &[14_800; 4]));
        assert!(p.admits(), "{p:?}");
        let p = check(&BoundInput { counter_delta_uj: 19_800_001, ..input(0, Some(65_000), &[14_800; 4]) });
        assert!(!p.admits(), "one µJ over the ceiling refutes: {p:?}");
    }

    #[test]
    fn s5_plausibility_no_bound_readable_does_not_apply() {
        let p = check(&BoundInput { draw_exposed: false, ..input(500_000, None, &[]) });
        assert_eq!(p, Plausibility::NoBound { rate_mw: 500_000 });
        assert!(p.admits());
    }

    #[test]
    fn s5_plausibility_exposed_draw_with_no_sample_is_unjudgeable() {
        let p = check(&input(10_000, None, &[]));
        assert!(matches!(p, Plausibility::Unjudgeable { .. }));
    }

    #[test]
    fn s5_plausibility_records_rate_and_bound() {
        let a = check(&input(21_000, Some(65_000), &[14_800; 4]));
        let b = check(&input(444_000, Some(65_000), &[14_800; 4]));
        let (
            Plausibility::Implausible { rate_mw: ra, bound_mw: ba, .. },
            Plausibility::Implausible { rate_mw: rb, bound_mw: bb, .. },
        ) = (a, b)
        else {
            panic!("both refused")
        };
        assert_eq!((ra, ba, rb, bb), (21_000, 19_800, 444_000, 65_000));
    }
}
