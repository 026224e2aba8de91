//! The live energy chart (spec §5, §5.2): one bar per window, coloured by
//! provenance; a Partial window is drawn pale with an outline and a "P";
//! a window without a reading is a hatched gap with no bar — never a zero.

use console_store::WindowRecord;
use jcp::energy::{Coverage, Provenance};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::ViewError;

/// The colour of a provenance grade (shared with the front end's table).
pub fn provenance_colour(p: Provenance) -> RGBColor {
    match p {
        Provenance::HwShunt => RGBColor(0x2e, 0x9e, 0x6a),
        Provenance::ModelBased => RGBColor(0xe0, 0xa5, 0x26),
        Provenance::Estimator => RGBColor(0x7a, 0x8e, 0xa3),
    }
}

/// What each grade and mark on the chart means (the legend's words).
pub const LEGEND: &[(&str, &str)] = &[
    ("HwShunt", "hardware reading from a live, plausible counter"),
    ("ModelBased", "model calibrated on this host"),
    ("Estimator", "nothing calibrated (e.g. default power)"),
    ("Partial", "covers part of the work; the rest is unmeasured, not zero"),
    ("gap", "no reading in this window (not zero)"),
];

const GAP: RGBColor = RGBColor(0xb8, 0xb8, 0xb8);

/// The chart always has room for this many windows.
pub const MIN_SLOTS: usize = 30;

/// Picks a unit so the largest reading reads naturally: (divisor, label).
pub(crate) fn unit_for(max_uj: u64) -> (f64, &'static str) {
    if max_uj < 1_000 {
        (1.0, "µJ")
    } else if max_uj < 1_000_000 {
        (1e3, "mJ")
    } else if max_uj < 1_000_000_000 {
        (1e6, "J")
    } else {
        (1e9, "kJ")
    }
}

/// Most x-axis labels the chart shows.
pub const MAX_X_LABELS: usize = 8;

/// Which windows carry an x-axis label (indices into the windows, oldest
/// first): the newest, then evenly back in time, at most [`MAX_X_LABELS`].
/// Labels are drawn under real windows only. (Letting plotters space ticks
/// evenly over all slots put them on the empty slots in front of a young
/// history, so the first 30 windows had blank labels.)
fn label_positions(windows: usize) -> Vec<usize> {
    let step = windows.div_ceil(MAX_X_LABELS).max(1);
    let mut at: Vec<usize> = (0..windows).rev().step_by(step).collect();
    at.reverse();
    at
}

/// Renders the last windows (oldest first) as an SVG document of the given size.
pub fn energy_chart_svg(windows: &[WindowRecord], width: u32, height: u32) -> Result<String, ViewError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        draw(&root, windows).map_err(|e| ViewError::Chart(e.to_string()))?;
        root.present().map_err(|e| ViewError::Chart(e.to_string()))?;
    }
    Ok(svg)
}

/// The plotted area's coordinates: slots on x, the chosen unit on y.
type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The chart's scale: how many slots, where the real windows start, the
/// unit readings are shown in and the top of the y axis.
struct Scale {
    slots: usize,
    offset: usize,
    div: f64,
    unit: &'static str,
    y_top: f64,
}

impl Scale {
    /// At least [`MIN_SLOTS`] slots, newest at the right, so a bar keeps its
    /// width as history fills; the y axis 18% above the largest reading.
    #[allow(clippy::cast_precision_loss, reason = "a reading in µJ shown as a bar height: f64 precision is plenty")]
    fn of(windows: &[WindowRecord]) -> Self {
        let slots = windows.len().max(MIN_SLOTS);
        let max_uj = windows.iter().filter_map(|w| w.energy.map(|e| e.uj)).max().unwrap_or(0);
        let (div, unit) = unit_for(max_uj);
        let y_top = if max_uj == 0 { 1.0 } else { max_uj as f64 / div * 1.18 };
        Self { slots, offset: slots - windows.len(), div, unit, y_top }
    }
}

/// The whole drawing, top to bottom: the plot with its axes, the x labels,
/// one bar (or gap) per window, then the legend below.
#[allow(clippy::cast_precision_loss, reason = "slot counts as chart coordinates: far below f64's exact range")]
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    windows: &[WindowRecord],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (_, height) = root.dim_in_pixel();
    let legend_h = 64;
    let (plot_area, legend_area) = root.split_vertically(height.saturating_sub(legend_h));
    let scale = Scale::of(windows);
    let caption = if windows.iter().all(|w| w.energy.is_none()) {
        "Energy per window — no readings yet"
    } else {
        "Energy per window"
    };
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(10)
        .caption(caption, ("sans-serif", 16))
        .x_label_area_size(28)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..scale.slots as f64, 0f64..scale.y_top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_labels(0)
        .y_desc(format!("energy ({})", scale.unit))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .label_style(("sans-serif", 12))
        .draw()?;
    draw_x_labels(root, &chart, windows, &scale)?;
    draw_bars(&mut chart, windows, &scale)?;
    draw_legend(&legend_area)
}

/// The x labels: each under the centre of a real window (see
/// [`label_positions`]), saying how long before the newest window it ended.
#[allow(clippy::cast_precision_loss, reason = "slot indices as chart coordinates: far below f64's exact range")]
fn draw_x_labels<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &Plot<'_, DB>,
    windows: &[WindowRecord],
    scale: &Scale,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let newest_end = windows.last().map_or(0, |w| w.end_ms);
    let ago = |w: &WindowRecord| -> String {
        let secs = newest_end.saturating_sub(w.end_ms) / 1000;
        if secs == 0 {
            "now".to_owned()
        } else {
            format!("-{secs} s")
        }
    };
    let label_font = TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for i in label_positions(windows.len()) {
        let (px, py) = chart.backend_coord(&((i + scale.offset) as f64 + 0.5, 0.0));
        root.draw(&PathElement::new(vec![(px, py), (px, py + 4)], BLACK.stroke_width(1)))?;
        root.draw(&Text::new(ago(&windows[i]), (px, py + 7), label_font.clone()))?;
    }
    Ok(())
}

/// One bar per window, coloured by provenance (§5); a Partial window pale,
/// outlined and marked "P" (§5.2); a window without a reading a hatched
/// gap with no bar — never a zero.
#[allow(clippy::cast_precision_loss, reason = "slot indices and µJ readings as chart coordinates")]
fn draw_bars<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    windows: &[WindowRecord],
    scale: &Scale,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let y_top = scale.y_top;
    for (i, w) in windows.iter().enumerate() {
        let slot = (i + scale.offset) as f64;
        let (x0, x1) = (slot + 0.12, slot + 0.88);
        match w.energy {
            None => {
                // A gap: a hatched column and no bar at all.
                chart.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, y_top)], GAP.mix(0.18).filled())))?;
                let steps = 6;
                chart.draw_series((0..steps).map(|k| {
                    let y0 = y_top * f64::from(k) / f64::from(steps);
                    let y1 = y_top * f64::from(k + 1) / f64::from(steps);
                    PathElement::new(vec![(x0, y0), (x1, y1)], GAP.stroke_width(1))
                }))?;
            }
            Some(e) => {
                let y = e.uj as f64 / scale.div;
                let colour = provenance_colour(e.provenance);
                if e.coverage == Coverage::Partial {
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, y)],
                        colour.mix(0.35).filled(),
                    )))?;
                    chart.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, y)], colour.stroke_width(2))))?;
                    chart.draw_series(std::iter::once(Text::new(
                        "P",
                        (slot + 0.35, y + y_top * 0.07),
                        ("sans-serif", 12).into_font().color(&BLACK),
                    )))?;
                } else {
                    chart.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, y)], colour.filled())))?;
                }
            }
        }
    }
    Ok(())
}

/// The legend: what each grade and mark means ([`LEGEND`]), a swatch and
/// its words, wrapped to the legend's width.
fn draw_legend<DB: DrawingBackend>(
    legend_area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let font = ("sans-serif", 12).into_font();
    let mut x = 12i32;
    let mut y = 8i32;
    let (lw, _) = legend_area.dim_in_pixel();
    for (name, meaning) in LEGEND {
        let label = format!("{name} — {meaning}");
        let item_w = 26 + i32::try_from(label.chars().count()).unwrap_or(80) * 6;
        if x + item_w > i32::try_from(lw).unwrap_or(800) && x > 12 {
            x = 12;
            y += 22;
        }
        let swatch = [(x, y), (x + 14, y + 14)];
        match *name {
            "HwShunt" => legend_area.draw(&Rectangle::new(swatch, provenance_colour(Provenance::HwShunt).filled()))?,
            "ModelBased" => {
                legend_area.draw(&Rectangle::new(swatch, provenance_colour(Provenance::ModelBased).filled()))?;
            }
            "Estimator" => {
                legend_area.draw(&Rectangle::new(swatch, provenance_colour(Provenance::Estimator).filled()))?;
            }
            "Partial" => {
                legend_area.draw(&Rectangle::new(swatch, BLACK.mix(0.15).filled()))?;
                legend_area.draw(&Rectangle::new(swatch, BLACK.stroke_width(2)))?;
            }
            _ => {
                legend_area.draw(&Rectangle::new(swatch, GAP.mix(0.18).filled()))?;
                legend_area.draw(&PathElement::new(vec![(x, y + 14), (x + 14, y)], GAP.stroke_width(1)))?;
            }
        }
        legend_area.draw(&Text::new(label, (x + 20, y + 1), font.clone()))?;
        x += item_w + 18;
    }
    Ok(())
}
