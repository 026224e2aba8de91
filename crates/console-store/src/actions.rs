//! The steward's actions (approve, amend, revoke, settle; spec §4.7,
//! §4.3, §4.11): what was signed, by whom, on which file.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::{to_i64, to_u64, Store, StoreError};

/// Something the steward did through the console.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StewardAction {
    /// Store id.
    pub id: i64,
    /// When, Unix ms.
    pub at_ms: u64,
    /// What (e.g. `open_stream`, `audit`, `export_report`).
    pub action: String,
    /// On what (a path, a grant id).
    pub subject: String,
    /// Details as JSON.
    pub detail: serde_json::Value,
}

impl Store {
    /// Appends a steward action.
    pub fn record_action(
        &self,
        at_ms: u64,
        action: &str,
        subject: &str,
        detail: &serde_json::Value,
    ) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT INTO steward_actions (at_ms, action, subject, detail_json) VALUES (?1, ?2, ?3, ?4)",
                params![to_i64(at_ms, &self.path, "action time")?, action, subject, detail.to_string()],
            )
            .map_err(|e| self.err(&e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The most recent `limit` steward actions, newest first.
    pub fn actions(&self, limit: u32) -> Result<Vec<StewardAction>, StoreError> {
        self.actions_where(None, limit)
    }

    /// The steward's actions on one subject (a run file), oldest first:
    /// the run's history.
    pub fn actions_on(&self, subject: &str, limit: u32) -> Result<Vec<StewardAction>, StoreError> {
        let mut v = self.actions_where(Some(subject), limit)?;
        v.reverse();
        Ok(v)
    }

    fn actions_where(&self, subject: Option<&str>, limit: u32) -> Result<Vec<StewardAction>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, at_ms, action, subject, detail_json FROM steward_actions
                 WHERE ?2 IS NULL OR subject = ?2 ORDER BY id DESC LIMIT ?1",
            )
            .map_err(|e| self.err(&e))?;
        let rows = stmt
            .query_map(params![limit, subject], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .map_err(|e| self.err(&e))?;
        let mut out = Vec::new();
        for r in rows {
            let (id, at, action, subject, detail) = r.map_err(|e| self.err(&e))?;
            let detail = serde_json::from_str(&detail).map_err(|e| StoreError::InvalidRecord {
                path: self.path.clone(),
                what: "steward action",
                detail: format!("action {id}: {e}"),
            })?;
            out.push(StewardAction { id, at_ms: to_u64(at, &self.path, "action time")?, action, subject, detail });
        }
        Ok(out)
    }
}
