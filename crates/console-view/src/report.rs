//! The audit report as HTML (spec §8, §8.2): every field the engine
//! serialised, as nested tables, so the console shows exactly the numbers
//! `jcp audit --json` prints. The same fragment is shown in the app and
//! wrapped into a self-contained HTML file (inline style, inline SVG charts,
//! no scripts, nothing remote) for export.

use std::fmt::Write;

use plotters::prelude::*;
use serde_json::Value;

use crate::{escape_html, ViewError};

/// Human heading for a JSON key: `failed_by_reason` → `failed by reason`;
/// an energy's unit suffix goes (`budget_uj` → `budget`: its cell says the unit).
fn heading(key: &str) -> String {
    escape_html(&key.strip_suffix("_uj").unwrap_or(key).replace('_', " "))
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "—".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        // A content id (64 hex digits) shortened, the whole on hover (issue 39).
        Value::String(s) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
            format!("<code class=\"id\" title=\"{s}\">{}…</code>", &s[..16])
        }
        Value::String(s) => escape_html(s),
        Value::Array(_) | Value::Object(_) => String::new(),
    }
}

/// `n` with its thousands apart (`131 251`), as a person reads a byte offset.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    out
}

/// The audit's answer in one line, counting what it found (issue 39, "the
/// Auditor's answer first"): clean with what was checked, or every finding
/// by code, where the first one is, what failed verification and what is
/// unresolved. Empty for a report that is not an audit's.
pub fn answer(report: &Value) -> String {
    let Some(clean) = report.get("clean").and_then(Value::as_bool) else { return String::new() };
    let streams = report.get("streams").and_then(Value::as_array).map_or(0, Vec::len) as u64;
    let receipts = report.get("receipts");
    let count_of = |k: &str| receipts.and_then(|r| r.get(k)).and_then(Value::as_u64).unwrap_or(0);
    let (total, verified, failed) = (count_of("total"), count_of("verified"), count_of("failed"));
    let unresolved = report.get("unresolved_total").and_then(Value::as_u64).unwrap_or(0);
    let in_streams = crate::plural(streams, "stream", "streams");
    let mut out = if clean {
        format!("Clean: {verified} of {total} receipts in {in_streams} verified, every budget replayed; no findings.")
    } else {
        let mut by_code: Vec<(String, u64)> = report
            .get("findings_by_code")
            .and_then(Value::as_object)
            .map(|m| m.iter().filter_map(|(k, v)| v.as_u64().map(|c| (k.clone(), c))).collect())
            .unwrap_or_default();
        by_code.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let count: u64 = by_code.iter().map(|(_, c)| c).sum();
        let codes: Vec<String> = by_code.iter().map(|(k, c)| format!("{c} {k}")).collect();
        let mut line = format!("{} in {in_streams}", crate::plural(count, "finding", "findings"));
        if !codes.is_empty() {
            line.push_str(": ");
            line.push_str(&codes.join(", "));
        }
        let first = report.get("findings").and_then(Value::as_array).and_then(|f| f.first());
        if let Some(f) = first {
            let code = f.get("code").and_then(Value::as_str).unwrap_or("a finding");
            match (f.get("offset").and_then(Value::as_u64), f.get("stream").and_then(Value::as_u64)) {
                (Some(o), Some(s)) => {
                    let _ = write!(line, "; the first, {code}, at byte {} of stream {s}", grouped(o));
                }
                (Some(o), None) => {
                    let _ = write!(line, "; the first, {code}, at byte {}", grouped(o));
                }
                _ => {}
            }
        }
        line.push('.');
        if failed > 0 {
            let _ = write!(line, " {failed} of {total} receipts failed verification and count nothing.");
        }
        line
    };
    if unresolved > 0 {
        let _ = write!(out, " {} unresolved (§4.11).", crate::plural(unresolved, "decision is", "decisions are"));
    }
    out
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

/// The keys of a list of objects, in the order they first appear: one
/// table column each.
fn columns(items: &[Value]) -> Vec<&str> {
    let mut cols: Vec<&str> = Vec::new();
    for m in items.iter().filter_map(Value::as_object) {
        for k in m.keys() {
            if !cols.contains(&k.as_str()) {
                cols.push(k);
            }
        }
    }
    cols
}

/// Renders any JSON value as HTML: objects as key/value tables, arrays of
/// objects as one table with a column per key, nested values recursively.
pub fn value_html(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) if map.is_empty() => out.push_str("<span class=\"none\">none</span>"),
        // An exact ratio (`jcp_meter`'s `Ratio`, e.g. a §5.5 floor in ppm) as `num/den`.
        Value::Object(map)
            if map.len() == 2
                && map.get("num").is_some_and(Value::is_u64)
                && map.get("den").is_some_and(Value::is_u64) =>
        {
            out.push_str(&scalar(&map["num"]));
            out.push('/');
            out.push_str(&scalar(&map["den"]));
        }
        Value::Object(map) => {
            out.push_str("<table class=\"kv\"><tbody>");
            for (k, v) in map {
                out.push_str("<tr><th>");
                out.push_str(&heading(k));
                out.push_str("</th>");
                cell(k, v, out);
                out.push_str("</tr>");
            }
            out.push_str("</tbody></table>");
        }
        Value::Array(items) if items.is_empty() => out.push_str("<span class=\"none\">none</span>"),
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let cols = columns(items);
            out.push_str("<table class=\"rows\"><thead><tr>");
            for c in &cols {
                out.push_str("<th>");
                out.push_str(&heading(c));
                out.push_str("</th>");
            }
            out.push_str("</tr></thead><tbody>");
            for it in items {
                out.push_str("<tr>");
                for c in &cols {
                    cell(c, it.get(*c).unwrap_or(&Value::Null), out);
                }
                out.push_str("</tr>");
            }
            out.push_str("</tbody></table>");
        }
        Value::Array(items) if items.iter().all(is_scalar) => {
            out.push_str("<ul class=\"list\">");
            for it in items {
                out.push_str("<li>");
                out.push_str(&scalar(it));
                out.push_str("</li>");
            }
            out.push_str("</ul>");
        }
        Value::Array(items) => {
            out.push_str("<ol class=\"list\">");
            for it in items {
                out.push_str("<li>");
                value_html(it, out);
                out.push_str("</li>");
            }
            out.push_str("</ol>");
        }
        other => out.push_str(&scalar(other)),
    }
}

/// One table cell of field `key`: an energy (`…_uj`) in words with its
/// exact µJ on hover and in `data-exact`; another number as it is.
fn cell(key: &str, v: &Value, out: &mut String) {
    match v.as_u64() {
        Some(uj) if key.ends_with("_uj") => {
            let _ = write!(
                out,
                "<td class=\"num energy\" data-exact=\"{uj}\" title=\"{uj} µJ exactly\">{}</td>",
                escape_html(&crate::format_uj(uj))
            );
        }
        _ => {
            out.push_str(if v.is_number() { "<td class=\"num\">" } else { "<td>" });
            value_html(v, out);
            out.push_str("</td>");
        }
    }
}

/// Every object in the report whose values are all non-negative integers
/// (counts by reason, and the like), with its path, for charting.
fn count_maps<'a>(prefix: &str, v: &'a Value, out: &mut Vec<(String, Vec<(&'a str, u64)>)>) {
    if let Value::Object(map) = v {
        let counts: Option<Vec<(&str, u64)>> = map.iter().map(|(k, v)| v.as_u64().map(|n| (k.as_str(), n))).collect();
        match counts {
            Some(c) if c.len() >= 2 && !prefix.is_empty() => out.push((prefix.to_owned(), c)),
            _ => {
                for (k, v) in map {
                    let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    count_maps(&p, v, out);
                }
            }
        }
    }
}

/// A horizontal bar chart of one count map, as SVG.
#[allow(clippy::cast_precision_loss, reason = "counts as bar lengths: f64 precision is plenty")]
pub fn counts_chart_svg(title: &str, counts: &[(&str, u64)]) -> Result<String, ViewError> {
    let mut svg = String::new();
    let rows = u32::try_from(counts.len()).unwrap_or(u32::MAX).min(40);
    let height = 60 + rows * 24;
    {
        let root = SVGBackend::with_string(&mut svg, (640, height)).into_drawing_area();
        let draw = || -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
            root.fill(&WHITE)?;
            let max = counts.iter().map(|c| c.1).max().unwrap_or(0).max(1) as f64;
            let n = counts.len();
            let mut chart = ChartBuilder::on(&root)
                .margin(8)
                .caption(title, ("sans-serif", 14))
                .x_label_area_size(20)
                .y_label_area_size(10)
                .build_cartesian_2d(0f64..max * 1.15, 0f64..n as f64)?;
            // Each bar carries its own "name: count" label, so no name is ever
            // dropped by the axis's choice of tick positions.
            chart
                .configure_mesh()
                .disable_y_mesh()
                .light_line_style(WHITE.mix(0.0))
                .y_labels(0)
                // Counts are whole: a tick only where the axis meets an integer.
                .x_labels(usize::try_from(counts.iter().map(|c| c.1).max().unwrap_or(0)).unwrap_or(10).clamp(1, 10) + 1)
                .x_label_formatter(&|x| if (x - x.round()).abs() < 1e-9 { format!("{x:.0}") } else { String::new() })
                .label_style(("sans-serif", 11))
                .draw()?;
            for (i, (name, c)) in counts.iter().enumerate() {
                let y = (n - 1 - i) as f64;
                let v = *c as f64;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y + 0.15), (v, y + 0.85)],
                    RGBColor(0x3a, 0x6e, 0xa5).mix(0.8).filled(),
                )))?;
                chart.draw_series(std::iter::once(Text::new(
                    format!("{}: {c}", name.replace('_', " ")),
                    (0.0, y + 0.62),
                    ("sans-serif", 12),
                )))?;
            }
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| ViewError::Chart(e.to_string()))?;
    }
    Ok(svg)
}

/// The findings with what each code means beside it (`why it matters`,
/// from `jcp_audit::FindingCode::meaning`); a code this console does not
/// know is left without one, never given a guessed meaning.
fn with_meanings(findings: &Value) -> Value {
    let Value::Array(items) = findings else { return findings.clone() };
    Value::Array(
        items
            .iter()
            .map(|f| {
                let mut f = f.clone();
                let meaning = f.get("code").and_then(Value::as_str).and_then(jcp_audit::FindingCode::parse);
                if let (Some(m), Value::Object(o)) = (meaning, &mut f) {
                    o.insert("why_it_matters".into(), Value::String(m.meaning().to_owned()));
                }
                f
            })
            .collect(),
    )
}

/// A sentence with each id in it (64 hex digits) a link to the record with
/// that id in stream `stream`, shown short with the whole on hover.
fn linked_ids(text: &str, stream: u64, out: &mut String) {
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest.find(|c: char| c.is_ascii_hexdigit()).unwrap_or(rest.len());
        out.push_str(&escape_html(&rest[..start]));
        rest = &rest[start..];
        let len = rest.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(rest.len());
        let (word, after) = rest.split_at(len);
        if word.len() == 64 {
            let _ = write!(
                out,
                "<a class=\"record-link id-link\" data-stream=\"{stream}\" data-id=\"{word}\" title=\"{word}: open this record\">{}…</a>",
                &word[..16]
            );
        } else {
            out.push_str(&escape_html(word));
        }
        rest = after;
    }
}

/// The findings table (issue 39, "the records it names, each linkable"):
/// the same columns as every other table of the report, but each finding's
/// offset links to the record or fault that starts there, and each id its
/// sentence names links to the record with that id (`audit_record`; inert
/// in an exported file, which has no script).
fn findings_html(findings: &Value, out: &mut String) {
    let Value::Array(items) = findings else { return value_html(findings, out) };
    if items.is_empty() || !items.iter().all(Value::is_object) {
        return value_html(findings, out);
    }
    let cols = columns(items);
    out.push_str("<table class=\"rows findings-table\"><thead><tr>");
    for c in &cols {
        let _ = write!(out, "<th>{}</th>", heading(c));
    }
    out.push_str("</tr></thead><tbody>");
    for it in items {
        let stream = it.get("stream").and_then(Value::as_u64);
        out.push_str("<tr class=\"finding\">");
        for c in &cols {
            let v = it.get(*c).unwrap_or(&Value::Null);
            match (*c, v, stream) {
                // Offset 0 is about the whole audit: nothing to open.
                ("offset", Value::Number(n), Some(st)) if n.as_u64().is_some_and(|o| o > 0) => {
                    let _ = write!(
                        out,
                        "<td class=\"num\"><a class=\"record-link\" data-stream=\"{st}\" data-at=\"{n}\" title=\"open the record at byte {n}\">{n}</a></td>"
                    );
                }
                ("message", Value::String(m), Some(st)) => {
                    out.push_str("<td>");
                    linked_ids(m, st, out);
                    out.push_str("</td>");
                }
                _ => cell(c, v, out),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
}

/// The record panel of one record (issue 39: each record a finding names
/// opens): its place, id, signer, the signature check alone, its content.
pub fn record_panel(stream_index: u32, v: &jcp_audit::record::RecordView) -> crate::ipc::RecordPanel {
    use jcp_audit::record::RecordCheck;
    let (check, check_code, check_message) = match &v.check {
        RecordCheck::Verified { what } => ("verified", None, what.clone()),
        RecordCheck::Refused { code, message } => ("refused", Some(code.as_str().to_owned()), message.clone()),
        RecordCheck::NotARecord { code } => (
            "not-a-record",
            Some(code.clone()),
            format!("no record could be read here ({} bytes): {code}", v.end - v.offset),
        ),
    };
    let mut html = String::new();
    value_html(&v.body, &mut html);
    crate::ipc::RecordPanel {
        stream_index,
        stream: v.stream.clone(),
        offset: v.offset,
        end: v.end,
        number: v.number,
        kind: v.kind.clone(),
        id: v.id.map(|i| i.to_hex()),
        signer: v.signer.clone(),
        check: check.into(),
        check_code,
        check_message,
        prev: v.prev,
        next: v.next,
        html,
    }
}

/// The report's body as an HTML fragment, answer first (issue 39): its
/// findings (what, where, why), then its top-level figures, then every
/// other part folded under its heading, the charts of its count maps last.
/// Every field the engine serialised is in it. Uses classes only, no
/// inline style, no script.
pub fn report_fragment(report: &Value) -> Result<String, ViewError> {
    let mut out = String::new();
    if let Value::Object(map) = report {
        if let Some(f) = map.get("findings") {
            out.push_str("<section class=\"field findings\"><h3>findings</h3>");
            findings_html(&with_meanings(f), &mut out);
            out.push_str("</section>");
        }
        let top: serde_json::Map<String, Value> =
            map.iter().filter(|(_, v)| is_scalar(v)).map(|(k, v)| (k.clone(), v.clone())).collect();
        if !top.is_empty() {
            out.push_str("<section class=\"field summary\"><h3>summary</h3>");
            value_html(&Value::Object(top), &mut out);
            out.push_str("</section>");
        }
        for (k, v) in map.iter().filter(|(k, v)| !is_scalar(v) && k.as_str() != "findings") {
            out.push_str("<details class=\"field\"><summary><h3>");
            out.push_str(&heading(k));
            out.push_str("</h3></summary>");
            value_html(v, &mut out);
            out.push_str("</details>");
        }
    } else {
        value_html(report, &mut out);
    }
    let mut maps = Vec::new();
    count_maps("", report, &mut maps);
    if !maps.is_empty() {
        out.push_str("<div class=\"charts\">");
        for (path, counts) in &maps {
            out.push_str("<figure class=\"count-chart\">");
            out.push_str(&counts_chart_svg(&path.replace(['_', '.'], " "), counts)?);
            out.push_str("</figure>");
        }
        out.push_str("</div>");
    }
    Ok(out)
}

const REPORT_CSS: &str = "body{font-family:system-ui,sans-serif;margin:2rem;color:#14202b}\
h1{font-size:1.4rem}h3{font-size:1rem;margin:1.2rem 0 .4rem;text-transform:capitalize}\
table{border-collapse:collapse;margin:.2rem 0}th,td{border:1px solid #cfd6dd;padding:.2rem .5rem;text-align:left;vertical-align:top}\
td.num{text-align:right;font-variant-numeric:tabular-nums}thead th{background:#eef2f6}table.kv>tbody>tr>th{background:#f6f8fa;font-weight:600}\
.verdict{display:inline-block;padding:.3rem .8rem;border-radius:4px;font-weight:700}.verdict.clean{background:#d9f2e4}.verdict.findings{background:#fde2d5}\
.charts{display:flex;flex-wrap:wrap;gap:1rem}.none{color:#7a8ea3}pre{background:#f6f8fa;padding:1rem;overflow:auto}";

/// A complete, self-contained HTML document of an audit report: inline
/// style, inline SVG charts, the raw JSON at the end; no script, nothing remote.
pub fn report_html(report: &Value, verdict: &str, title: &str, sources: &[String]) -> Result<String, ViewError> {
    let body = report_fragment(report)?;
    let raw = serde_json::to_string_pretty(report).map_err(|e| ViewError::Json(e.to_string()))?;
    let mut out = String::new();
    out.push_str("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">");
    out.push_str("<title>");
    out.push_str(&escape_html(title));
    out.push_str("</title><style>");
    out.push_str(REPORT_CSS);
    out.push_str("</style></head><body><h1>");
    out.push_str(&escape_html(title));
    out.push_str("</h1><p>Streams:</p><ul>");
    for s in sources {
        out.push_str("<li><code>");
        out.push_str(&escape_html(s));
        out.push_str("</code></li>");
    }
    out.push_str("</ul><p>Verdict: <span class=\"verdict ");
    out.push_str(&escape_html(verdict));
    out.push_str("\">");
    out.push_str(&escape_html(verdict));
    out.push_str("</span> ");
    out.push_str(&escape_html(&answer(report)));
    out.push_str("</p>");
    out.push_str(&body);
    out.push_str("<h3>Report as JSON</h3><pre>");
    out.push_str(&escape_html(&raw));
    out.push_str("</pre></body></html>\n");
    Ok(out)
}
