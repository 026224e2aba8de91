//! Receipt streams a person opened (spec §8.1) and the last audit of each.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::{to_i64, to_u64, Store, StoreError};

/// An opened stream and its last audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRecord {
    /// Absolute path of the stream file.
    pub path: String,
    /// When it was (last) opened, Unix ms.
    pub opened_at_ms: u64,
    /// Its size when opened.
    pub size_bytes: u64,
    /// The verdict of its last audit, if one finished.
    pub last_verdict: Option<String>,
    /// The last audit report exactly as the engine serialised it.
    pub last_audit: Option<serde_json::Value>,
    /// When the last audit finished, Unix ms.
    pub last_audit_at_ms: Option<u64>,
}

/// One `streams` row as read: path, opened at, size, last verdict, last
/// audit (JSON), audited at.
type StreamColumns = (String, i64, i64, Option<String>, Option<String>, Option<i64>);

impl Store {
    /// Records that a stream was opened (again); keeps its last audit. A
    /// stream the person opens is no longer one they took off ([`Store::is_forgotten`]).
    pub fn record_stream_opened(&self, path: &str, size_bytes: u64, at_ms: u64) -> Result<(), StoreError> {
        self.remember(path)?;
        self.conn
            .execute(
                "INSERT INTO streams (path, opened_at_ms, size_bytes) VALUES (?1, ?2, ?3)
                 ON CONFLICT(path) DO UPDATE SET opened_at_ms = excluded.opened_at_ms, size_bytes = excluded.size_bytes",
                params![path, to_i64(at_ms, &self.path, "open time")?, to_i64(size_bytes, &self.path, "stream size")?],
            )
            .map_err(|e| self.err(&e))?;
        Ok(())
    }

    /// Stores the finished audit of a stream (the report as the engine serialised it).
    pub fn record_audit(
        &self,
        path: &str,
        verdict: &str,
        report: &serde_json::Value,
        at_ms: u64,
    ) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE streams SET last_verdict = ?2, last_audit_json = ?3, last_audit_at_ms = ?4 WHERE path = ?1",
                params![path, verdict, report.to_string(), to_i64(at_ms, &self.path, "audit time")?],
            )
            .map_err(|e| self.err(&e))?;
        if n == 0 {
            return Err(StoreError::InvalidRecord {
                path: self.path.clone(),
                what: "audit",
                detail: format!("stream {path} was never opened in this workspace"),
            });
        }
        Ok(())
    }

    /// One stream's record.
    pub fn stream(&self, path: &str) -> Result<Option<StreamRecord>, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT path, opened_at_ms, size_bytes, last_verdict, last_audit_json, last_audit_at_ms FROM streams WHERE path = ?1",
                params![path],
                Self::stream_row,
            )
            .optional()
            .map_err(|e| self.err(&e))?;
        row.map(|r| self.stream_from_row(r)).transpose()
    }

    /// Takes the stream at `path` off the workspace, with its last audit
    /// (the file is not touched); `false` when it was not listed.
    /// Nothing the console lists by itself (the demo) puts it back.
    pub fn forget_stream(&self, path: &str, at_ms: u64) -> Result<bool, StoreError> {
        let n = self.conn.execute("DELETE FROM streams WHERE path = ?1", params![path]).map_err(|e| self.err(&e))?;
        if n > 0 {
            self.mark_forgotten(path, at_ms)?;
        }
        Ok(n > 0)
    }

    /// Whether the person took `path` off the workspace (a stream or an
    /// item) and has not opened it since: the demo and the runs folder do
    /// not list it again.
    pub fn is_forgotten(&self, path: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT 1 FROM forgotten WHERE path = ?1", params![path], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.err(&e))
    }

    pub(crate) fn mark_forgotten(&self, path: &str, at_ms: u64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO forgotten (path, at_ms) VALUES (?1, ?2) ON CONFLICT(path) DO UPDATE SET at_ms = excluded.at_ms",
                params![path, to_i64(at_ms, &self.path, "forget time")?],
            )
            .map_err(|e| self.err(&e))?;
        Ok(())
    }

    pub(crate) fn remember(&self, path: &str) -> Result<(), StoreError> {
        self.conn.execute("DELETE FROM forgotten WHERE path = ?1", params![path]).map_err(|e| self.err(&e))?;
        Ok(())
    }

    /// Every opened stream, most recently opened first.
    pub fn streams(&self) -> Result<Vec<StreamRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, opened_at_ms, size_bytes, last_verdict, last_audit_json, last_audit_at_ms FROM streams ORDER BY opened_at_ms DESC, path")
            .map_err(|e| self.err(&e))?;
        let rows = stmt.query_map([], Self::stream_row).map_err(|e| self.err(&e))?;
        let mut out = Vec::new();
        for r in rows {
            out.push(self.stream_from_row(r.map_err(|e| self.err(&e))?)?);
        }
        Ok(out)
    }

    fn stream_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StreamColumns> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
    }

    fn stream_from_row(
        &self,
        (path, opened, size, verdict, json, at): StreamColumns,
    ) -> Result<StreamRecord, StoreError> {
        let last_audit = json
            .map(|j| {
                serde_json::from_str(&j).map_err(|e| StoreError::InvalidRecord {
                    path: self.path.clone(),
                    what: "audit report",
                    detail: format!("stream {path}: {e}"),
                })
            })
            .transpose()?;
        Ok(StreamRecord {
            opened_at_ms: to_u64(opened, &self.path, "open time")?,
            size_bytes: to_u64(size, &self.path, "stream size")?,
            last_verdict: verdict,
            last_audit,
            last_audit_at_ms: at.map(|a| to_u64(a, &self.path, "audit time")).transpose()?,
            path,
        })
    }
}
