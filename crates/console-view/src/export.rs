//! Energy window exports (spec §5, §5.2): every row carries its provenance
//! and coverage; a window without a reading is exported as a gap with an
//! empty energy and `none` grades — never as 0 µJ.

use console_store::WindowRecord;
use serde::Serialize;

use crate::ViewError;

/// One exported row (the JSON shape; CSV has the same columns).
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct ExportRow<'a> {
    /// Store sequence number.
    pub seq: i64,
    /// Window start, Unix ms.
    pub start_ms: u64,
    /// Window end, Unix ms.
    pub end_ms: u64,
    /// `"reading"` or `"gap"`.
    pub reading: &'static str,
    /// Integer µJ; `null` for a gap.
    pub energy_uj: Option<u64>,
    /// The same figure in words, by the one formatter (`jcp::energy::format_uj`); `null` for a gap.
    pub energy: Option<String>,
    /// `HwShunt` / `ModelBased` / `Estimator`; `null` for a gap.
    pub provenance: Option<&'static str>,
    /// `Whole` / `Partial`; `null` for a gap.
    pub coverage: Option<&'static str>,
    /// The rung that produced the reading.
    pub rung: Option<&'a str>,
}

fn rows(windows: &[WindowRecord]) -> impl Iterator<Item = ExportRow<'_>> {
    windows.iter().map(|w| ExportRow {
        seq: w.seq,
        start_ms: w.start_ms,
        end_ms: w.end_ms,
        reading: if w.energy.is_some() { "reading" } else { "gap" },
        energy_uj: w.energy.map(|e| e.uj),
        energy: w.energy.map(|e| crate::format_uj(e.uj)),
        provenance: w.energy.map(|e| e.provenance.as_str()),
        coverage: w.energy.map(|e| e.coverage.as_str()),
        rung: w.rung.as_deref(),
    })
}

/// CSV with a header row; a gap's grades are written `none`, its energy empty.
pub fn windows_csv(windows: &[WindowRecord]) -> Result<String, ViewError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["seq", "start_ms", "end_ms", "reading", "energy_uj", "energy", "provenance", "coverage", "rung"])
        .map_err(|e| ViewError::Csv(e.to_string()))?;
    for r in rows(windows) {
        w.write_record([
            r.seq.to_string(),
            r.start_ms.to_string(),
            r.end_ms.to_string(),
            r.reading.to_owned(),
            r.energy_uj.map(|u| u.to_string()).unwrap_or_default(),
            r.energy.unwrap_or_default(),
            r.provenance.unwrap_or("none").to_owned(),
            r.coverage.unwrap_or("none").to_owned(),
            r.rung.unwrap_or("").to_owned(),
        ])
        .map_err(|e| ViewError::Csv(e.to_string()))?;
    }
    let bytes = w.into_inner().map_err(|e| ViewError::Csv(e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| ViewError::Csv(e.to_string()))
}

/// A JSON array of rows (pretty-printed).
pub fn windows_json(windows: &[WindowRecord]) -> Result<String, ViewError> {
    let v: Vec<ExportRow<'_>> = rows(windows).collect();
    serde_json::to_string_pretty(&v).map_err(|e| ViewError::Json(e.to_string()))
}
