//! Energy windows (spec §5, §5.2): each closed window as the console keeps
//! it — its reading with provenance and coverage, or a gap, never a zero —
//! bounded by a retention count.

use jcp::energy::{Coverage, Energy, Provenance};
use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::{to_i64, to_u64, Store, StoreError};

/// Default number of energy windows kept (a day of 1 s windows).
pub const DEFAULT_WINDOW_RETENTION: u32 = 86_400;

/// One closed energy window as the console keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowRecord {
    /// Store sequence number (assigned on insert; 0 before).
    pub seq: i64,
    /// Window start, Unix milliseconds.
    pub start_ms: u64,
    /// Window end, Unix milliseconds.
    pub end_ms: u64,
    /// The reading; `None` is a gap (no reading), never a zero.
    pub energy: Option<Energy>,
    /// The ladder rung that produced the reading, when one did.
    pub rung: Option<String>,
}

/// One `energy_windows` row as read: seq, start, end, µJ, provenance,
/// coverage, rung (the last four absent together for a gap).
type WindowColumns = (i64, i64, i64, Option<i64>, Option<String>, Option<String>, Option<String>);

impl Store {
    /// Sets how many energy windows are kept (at least 1).
    pub fn set_window_retention(&mut self, windows: u32) {
        self.retention = windows.max(1);
    }

    /// The retention bound in windows.
    pub fn window_retention(&self) -> u32 {
        self.retention
    }

    /// Appends a closed window and drops the oldest beyond the retention
    /// bound, in one transaction. Returns the window's sequence number.
    pub fn record_window(&mut self, w: &WindowRecord) -> Result<i64, StoreError> {
        if w.end_ms < w.start_ms {
            return Err(StoreError::InvalidRecord {
                path: self.path.clone(),
                what: "energy window",
                detail: format!("ends ({}) before it starts ({})", w.end_ms, w.start_ms),
            });
        }
        let start = to_i64(w.start_ms, &self.path, "window start")?;
        let end = to_i64(w.end_ms, &self.path, "window end")?;
        let uj = w.energy.map(|e| to_i64(e.uj, &self.path, "window energy")).transpose()?;
        let prov = w.energy.map(|e| e.provenance.as_str());
        let cov = w.energy.map(|e| e.coverage.as_str());
        let retention = i64::from(self.retention);
        let path = self.path.clone();
        let err = |e: rusqlite::Error| StoreError::from_sqlite(&path, &e);
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute(
            "INSERT INTO energy_windows (start_ms, end_ms, uj, provenance, coverage, rung) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![start, end, uj, prov, cov, w.rung],
        )
        .map_err(err)?;
        let seq = tx.last_insert_rowid();
        tx.execute("DELETE FROM energy_windows WHERE seq <= ?1", params![seq - retention]).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(seq)
    }

    /// The most recent `limit` windows, oldest first.
    pub fn recent_windows(&self, limit: u32) -> Result<Vec<WindowRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT seq, start_ms, end_ms, uj, provenance, coverage, rung FROM
                 (SELECT * FROM energy_windows ORDER BY seq DESC LIMIT ?1) ORDER BY seq ASC",
            )
            .map_err(|e| self.err(&e))?;
        let rows = stmt
            .query_map(params![limit], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            })
            .map_err(|e| self.err(&e))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(self.window_from_row(row.map_err(|e| self.err(&e))?)?);
        }
        Ok(out)
    }

    fn window_from_row(
        &self,
        (seq, start, end, uj, prov, cov, rung): WindowColumns,
    ) -> Result<WindowRecord, StoreError> {
        let bad = |detail: String| StoreError::InvalidRecord { path: self.path.clone(), what: "energy window", detail };
        let energy = match (uj, prov, cov) {
            (None, None, None) => None,
            (Some(uj), Some(p), Some(c)) => {
                let provenance =
                    Provenance::parse(&p).ok_or_else(|| bad(format!("window {seq}: unknown provenance {p:?}")))?;
                let coverage = match c.as_str() {
                    "Whole" => Coverage::Whole,
                    "Partial" => Coverage::Partial,
                    other => return Err(bad(format!("window {seq}: unknown coverage {other:?}"))),
                };
                Some(Energy { uj: to_u64(uj, &self.path, "window energy")?, provenance, coverage, measured: None })
            }
            _ => {
                return Err(bad(format!(
                    "window {seq}: energy, provenance and coverage must be all present or all absent"
                )))
            }
        };
        Ok(WindowRecord {
            seq,
            start_ms: to_u64(start, &self.path, "window start")?,
            end_ms: to_u64(end, &self.path, "window end")?,
            energy,
            rung,
        })
    }

    /// Number of windows held.
    pub fn window_count(&self) -> Result<u64, StoreError> {
        let n: i64 =
            self.conn.query_row("SELECT COUNT(*) FROM energy_windows", [], |r| r.get(0)).map_err(|e| self.err(&e))?;
        to_u64(n, &self.path, "window count")
    }
}
