//! The console's rendered views: chart, exports, report.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use console_store::WindowRecord;
use console_view::{chart, export, report};
use jcp::energy::{Coverage, Energy, Provenance};
use serde_json::json;

fn w(seq: i64, energy: Option<Energy>) -> WindowRecord {
    let start = u64::try_from(seq).unwrap() * 1000;
    WindowRecord { seq, start_ms: start, end_ms: start + 1000, energy, rung: energy.map(|_| "rapl, package-0".to_owned()) }
}

fn sample() -> Vec<WindowRecord> {
    vec![
        w(1, Some(Energy::new(3_000_000, Provenance::HwShunt))),
        w(2, None),
        w(3, Some(Energy { uj: 1_000_000, provenance: Provenance::ModelBased, coverage: Coverage::Partial })),
        w(4, Some(Energy::new(500_000, Provenance::Estimator))),
    ]
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn s5_chart_colours_by_provenance_and_draws_no_bar_for_a_gap() {
    let svg = chart::energy_chart_svg(&sample(), 800, 300).unwrap();
    assert!(svg.starts_with("<svg"));
    // One filled bar per reading, in its grade's colour.
    assert_eq!(count(&svg, "fill=\"#2E9E6A\""), 1 + 1, "HwShunt bar + legend swatch:\n{svg}");
    assert_eq!(count(&svg, "fill=\"#7A8EA3\""), 1 + 1, "Estimator bar + legend swatch");
    // The legend says what each grade means.
    for (name, meaning) in chart::LEGEND {
        assert!(svg.contains(name) && svg.contains(meaning), "legend lacks {name}");
    }
    // A gap draws the hatch, not a zero-height bar in any grade's colour.
    let only_gap = chart::energy_chart_svg(&[w(1, None)], 800, 300).unwrap();
    assert_eq!(count(&only_gap, "fill=\"#2E9E6A\""), 1, "only the legend swatch");
    assert!(only_gap.contains("no readings yet"));
}

#[test]
fn s5_2_partial_window_is_marked_on_the_chart() {
    let whole = chart::energy_chart_svg(&[w(1, Some(Energy::new(10, Provenance::ModelBased)))], 800, 300).unwrap();
    let partial = chart::energy_chart_svg(
        &[w(1, Some(Energy { uj: 10, provenance: Provenance::ModelBased, coverage: Coverage::Partial }))],
        800,
        300,
    )
    .unwrap();
    assert!(partial.contains(">\nP\n</text>"), "a Partial bar carries its P mark");
    assert!(!whole.contains(">\nP\n</text>"));
}

#[test]
fn s5_csv_export_has_provenance_and_coverage_on_every_row_and_no_zero_for_a_gap() {
    let csv = export::windows_csv(&sample()).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "seq,start_ms,end_ms,reading,energy_uj,provenance,coverage,rung");
    assert_eq!(lines[1], "1,1000,2000,reading,3000000,HwShunt,Whole,\"rapl, package-0\"");
    assert_eq!(lines[2], "2,2000,3000,gap,,none,none,");
    assert_eq!(lines[3], "3,3000,4000,reading,1000000,ModelBased,Partial,\"rapl, package-0\"");
    assert_eq!(lines.len(), 5);
}

#[test]
fn s5_json_export_gap_is_null_not_zero() {
    let v: serde_json::Value = serde_json::from_str(&export::windows_json(&sample()).unwrap()).unwrap();
    assert_eq!(v[0]["provenance"], "HwShunt");
    assert_eq!(v[0]["coverage"], "Whole");
    assert_eq!(v[1]["reading"], "gap");
    assert!(v[1]["energy_uj"].is_null() && v[1]["provenance"].is_null() && v[1]["coverage"].is_null());
    assert_eq!(v[2]["coverage"], "Partial");
}

#[test]
fn s8_2_report_fragment_shows_every_number_and_escapes_text() {
    let r = json!({
        "verdict": "findings",
        "receipts": {"verified": 998, "failed": 2},
        "failed_by_reason": {"bad_signature": 1, "truncated": 1},
        "findings": [{"reason": "bad_signature", "offset": 4096, "stream": "<a>.jcps"}],
        "unresolved": []
    });
    let html = report::report_fragment(&r).unwrap();
    for n in ["998", "4096", ">2<", ">1<"] {
        assert!(html.contains(n), "{n} missing from {html}");
    }
    assert!(html.contains("&lt;a&gt;.jcps") && !html.contains("<a>"), "text is escaped");
    assert!(html.contains("<svg"), "count maps are charted");
    assert!(html.contains("bad signature"));
    assert!(html.contains("none"), "an empty list is shown as none");
    assert!(!html.contains("style=") && !html.contains("<script"), "fragment obeys the app's CSP");
}

#[test]
fn s8_report_html_is_self_contained() {
    let r = json!({"verdict": "clean", "receipts": {"verified": 3, "failed": 0}});
    let html = report::report_html(&r, "clean", "JCP audit report", &["/data/s.jcps".to_owned()]).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("<style>") && html.contains("verdict clean"));
    assert!(!html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http"));
    assert!(html.contains("/data/s.jcps"));
    assert!(html.contains("&quot;verified&quot;: 3"), "raw JSON embedded, escaped");
}
