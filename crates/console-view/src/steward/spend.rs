//! A run's spend against its ceiling over time (issue 39, "the steward's
//! live run"; §4.7): each checkpoint's cumulative spend, the ceiling in
//! force at it (spend plus remainder), amendments marked, and where the
//! remainder runs out at the rate of the last two checkpoints, so a steward
//! sees at a glance whether a run is on course. Only what the checkpoints
//! state is drawn: a checkpoint whose spend or remainder is not stated is
//! left out, never drawn as zero.

use std::fmt::Write;

use plotters::prelude::*;
use serde::{Deserialize, Serialize};
#[cfg(test)]
use ts_rs::TS;

use crate::run::RunView;
use crate::ViewError;

/// The chart and what it says in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SpendChart {
    /// The chart, SVG from plotters; `None` with fewer than two checkpoints that state their spend.
    pub svg: Option<String>,
    /// The course in words: spend against ceiling, and when the remainder runs out at the current rate.
    pub text: String,
}

/// One checkpoint as the chart reads it: seconds since the first, cumulative
/// spend and the ceiling in force, µJ, and whether the steward amended there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    seq: u64,
    t: u64,
    spent: u64,
    ceiling: u64,
    amended: bool,
}

fn points(view: &RunView) -> Vec<Point> {
    let t0 = view.checkpoints.first().map_or(0, |c| c.at);
    view.checkpoints
        .iter()
        .filter_map(|c| {
            let spent = c.spent.uj?;
            let rest = c.remainder.uj.filter(|_| c.remainder.known)?;
            Some(Point {
                seq: c.seq,
                t: c.at.saturating_sub(t0),
                spent,
                ceiling: spent.saturating_add(rest),
                amended: !c.amendments.is_empty(),
            })
        })
        .collect()
}

/// When the remainder runs out at the rate between the last two points:
/// seconds after the last one; `None` where no time passed or nothing was spent.
fn exhaustion(p: &[Point]) -> Option<(u64, u64)> {
    let [.., a, b] = p else { return None };
    let (dt, ds) = (b.t.checked_sub(a.t)?, b.spent.checked_sub(a.spent)?);
    if dt == 0 || ds == 0 {
        return None;
    }
    let left = b.ceiling.saturating_sub(b.spent);
    // µJ per second, and the seconds the remainder lasts at it (rounded up: never sooner than the rate says).
    Some((ds / dt, u64::try_from((u128::from(left) * u128::from(dt)).div_ceil(u128::from(ds))).unwrap_or(u64::MAX)))
}

fn duration_words(s: u64) -> String {
    match s {
        0..=119 => format!("{s} s"),
        120..=7_199 => format!("{} min", s / 60),
        7_200..=172_799 => format!("{} h", s / 3_600),
        _ => format!("{} days", s / 86_400),
    }
}

/// The spend chart of a verified run.
pub fn spend_chart(view: &RunView) -> Result<SpendChart, ViewError> {
    let p = points(view);
    let Some(last) = p.last().copied() else {
        return Ok(SpendChart { svg: None, text: "No checkpoint states its spend yet: nothing to chart.".into() });
    };
    let mut text = format!(
        "Spent {} of {} in force at checkpoint {}",
        crate::format_uj(last.spent),
        crate::format_uj(last.ceiling),
        last.seq
    );
    let ahead = exhaustion(&p);
    match ahead {
        Some((rate, secs)) => {
            let _ = write!(
                text,
                "; at the rate between the last two checkpoints ({}) the remainder lasts about {} more.",
                jcp::energy::format_power(rate, 1_000).unwrap_or_default(),
                duration_words(secs)
            );
        }
        None => text.push_str(
            "; no rate yet (the last two checkpoints are in the same second, or nothing was spent between them).",
        ),
    }
    if p.len() < 2 {
        return Ok(SpendChart { svg: None, text });
    }
    let svg = draw(&p, ahead.map(|(_, s)| s))?;
    Ok(SpendChart { svg: Some(svg), text })
}

#[allow(clippy::cast_precision_loss, reason = "µJ and seconds as chart coordinates: f64 precision is plenty")]
fn draw(p: &[Point], runs_out_after: Option<u64>) -> Result<String, ViewError> {
    let mut svg = String::new();
    let last = p[p.len() - 1];
    // Show the projection, but never let a far one flatten the run itself.
    let end = runs_out_after.map_or(last.t, |s| last.t.saturating_add(s.min(last.t.max(1) * 3)));
    let max_uj = p.iter().map(|q| q.ceiling.max(q.spent)).max().unwrap_or(1).max(1);
    let (div, unit) = crate::chart::unit_for(max_uj);
    {
        let root = SVGBackend::with_string(&mut svg, (720, 260)).into_drawing_area();
        let draw = || -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .margin(10)
                .caption("Spend against the ceiling in force", ("sans-serif", 14))
                .x_label_area_size(42)
                .y_label_area_size(64)
                .build_cartesian_2d(0f64..(end.max(1) as f64) * 1.02, 0f64..(max_uj as f64 / div) * 1.1)?;
            chart
                .configure_mesh()
                .light_line_style(WHITE.mix(0.0))
                .x_labels(8)
                .y_labels(6)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .x_desc("seconds since the first checkpoint")
                .y_desc(unit)
                .label_style(("sans-serif", 11))
                .draw()?;
            let xy = |t: u64, uj: u64| (t as f64, uj as f64 / div);
            let ceiling = RGBColor(0xa0, 0x46, 0x1d);
            let spent = RGBColor(0x2b, 0x4a, 0x66);
            // The ceiling is a step: it holds until the steward amends, and an
            // amendment at a checkpoint sets the next ceiling from there.
            let mut steps = Vec::with_capacity(p.len() * 2);
            for (i, q) in p.iter().enumerate() {
                steps.push(xy(q.t, q.ceiling));
                if let Some(n) = p.get(i + 1) {
                    steps.push(if q.amended { xy(q.t, n.ceiling) } else { xy(n.t, q.ceiling) });
                }
            }
            chart
                .draw_series(LineSeries::new(steps, ceiling.stroke_width(2)))?
                .label("ceiling in force")
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], ceiling.stroke_width(2)));
            chart
                .draw_series(LineSeries::new(p.iter().map(|q| xy(q.t, q.spent)), spent.stroke_width(2)))?
                .label("spent")
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], spent.stroke_width(2)));
            chart.draw_series(p.iter().map(|q| Circle::new(xy(q.t, q.spent), 3, spent.filled())))?;
            // Amendments: where the steward set a new ceiling.
            chart.draw_series(p.iter().filter(|q| q.amended).map(|q| {
                EmptyElement::at(xy(q.t, q.ceiling))
                    + TriangleMarker::new((0, 0), 6, ceiling.filled())
                    + Text::new("amended", (6, -14), ("sans-serif", 11))
            }))?;
            if let Some(s) = runs_out_after {
                let at = last.t.saturating_add(s);
                let projected = RGBColor(0x7a, 0x8e, 0xa3);
                // Cut where the chart ends (plotters would squeeze a point past
                // its edge onto it, bending the line): the same slope, shorter.
                let to = if at <= end {
                    xy(at, last.ceiling)
                } else {
                    let f = (end - last.t) as f64 / (at - last.t) as f64;
                    (end as f64, (last.spent as f64 + (last.ceiling - last.spent) as f64 * f) / div)
                };
                chart
                    .draw_series(DashedLineSeries::new([xy(last.t, last.spent), to], 6, 4, projected.stroke_width(1)))?
                    .label("at the current rate")
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], projected.stroke_width(1)));
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK.mix(0.3))
                .label_font(("sans-serif", 11))
                .draw()?;
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| ViewError::Chart(e.to_string()))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(t: u64, spent: u64, ceiling: u64, amended: bool) -> Point {
        Point { seq: t, t, spent, ceiling, amended }
    }

    #[test]
    fn s4_7_the_remainder_runs_out_at_the_rate_of_the_last_two_checkpoints() {
        // 1 J a second between the last two; 10 J left: 10 s.
        let p = [
            pt(0, 0, 100_000_000, false),
            pt(10, 90_000_000, 100_000_000, false),
            pt(20, 100_000_000, 110_000_000, true),
        ];
        assert_eq!(exhaustion(&p), Some((1_000_000, 10)));
        // No time between them, or nothing spent: no rate, never a made-up one.
        assert_eq!(exhaustion(&[pt(5, 1, 10, false), pt(5, 2, 10, false)]), None);
        assert_eq!(exhaustion(&[pt(1, 2, 10, false), pt(5, 2, 10, false)]), None);
        assert_eq!(exhaustion(&[pt(1, 2, 10, false)]), None);
        let svg = draw(&p, Some(10)).unwrap();
        assert!(svg.contains("amended") && svg.contains("ceiling in force") && svg.contains("at the current rate"));
        assert_eq!(duration_words(7_500), "2 h");
    }
}
