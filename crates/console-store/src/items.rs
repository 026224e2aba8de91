//! Workspace items: the streams, runs, blueprints and sessions the
//! workspace lists, each with its last status.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::{to_i64, to_u64, Store, StoreError};

/// What kind of workspace item (streams have their own table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A Blueprint + Deployment reconcile (Agent Blueprint Protocol).
    Blueprint,
    /// A run with checkpoints (JCP §4.7).
    Run,
}

impl ItemKind {
    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Blueprint => "blueprint",
            Self::Run => "run",
        }
    }

    /// Reads the stored word; anything else is refused.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "blueprint" => Some(Self::Blueprint),
            "run" => Some(Self::Run),
            _ => None,
        }
    }
}

/// A workspace item: a blueprint reconcile or a run, with its files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemRecord {
    /// Store id.
    pub id: i64,
    /// What it is.
    pub kind: ItemKind,
    /// Words for a person.
    pub label: String,
    /// The file that identifies it (a run's file; a reconcile's deployment).
    pub path: String,
    /// Its other files and settings, as JSON.
    pub detail: serde_json::Value,
    /// When it was added, Unix ms.
    pub added_at_ms: u64,
    /// The outcome when last opened (a reconcile's or a run's verdict).
    pub last_status: Option<String>,
    /// When it was last opened, Unix ms.
    pub last_opened_at_ms: Option<u64>,
}

/// One `items` row as read: id, kind, label, path, detail (JSON), added
/// at, last status, last opened at.
type ItemColumns = (i64, String, String, String, String, i64, Option<String>, Option<i64>);

impl Store {
    /// Adds an item (or refreshes the label and detail of the one with the
    /// same kind and path, keeping its last status). Returns its id. An
    /// item the person adds is no longer one they took off.
    pub fn add_item(
        &self,
        kind: ItemKind,
        label: &str,
        path: &str,
        detail: &serde_json::Value,
        at_ms: u64,
    ) -> Result<i64, StoreError> {
        self.remember(path)?;
        self.conn
            .query_row(
                "INSERT INTO workspace_items (kind, label, path, detail_json, added_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(kind, path) DO UPDATE SET label = excluded.label, detail_json = excluded.detail_json
                 RETURNING id",
                params![kind.as_str(), label, path, detail.to_string(), to_i64(at_ms, &self.path, "item time")?],
                |r| r.get(0),
            )
            .map_err(|e| self.err(&e))
    }

    /// Adds an item unless one of the same kind and path is there (whose
    /// label and detail are then kept: what the console named a run it
    /// started is not renamed by the folder watcher that finds its file).
    /// Returns its id.
    pub fn add_item_if_absent(
        &self,
        kind: ItemKind,
        label: &str,
        path: &str,
        detail: &serde_json::Value,
        at_ms: u64,
    ) -> Result<i64, StoreError> {
        self.conn
            .query_row(
                "INSERT INTO workspace_items (kind, label, path, detail_json, added_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(kind, path) DO UPDATE SET kind = kind
                 RETURNING id",
                params![kind.as_str(), label, path, detail.to_string(), to_i64(at_ms, &self.path, "item time")?],
                |r| r.get(0),
            )
            .map_err(|e| self.err(&e))
    }

    /// Records an item's outcome when it was opened.
    pub fn set_item_status(&self, id: i64, status: &str, at_ms: u64) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE workspace_items SET last_status = ?2, last_opened_at_ms = ?3 WHERE id = ?1",
                params![id, status, to_i64(at_ms, &self.path, "item time")?],
            )
            .map_err(|e| self.err(&e))?;
        if n == 0 {
            return Err(StoreError::InvalidRecord {
                path: self.path.clone(),
                what: "workspace item",
                detail: format!("there is no item {id}"),
            });
        }
        Ok(())
    }

    /// Takes item `id` off the workspace (its file is not touched);
    /// `false` when there was no such item. Nothing the console lists by
    /// itself (the demo, the runs folder) puts it back.
    pub fn forget_item(&self, id: i64, at_ms: u64) -> Result<bool, StoreError> {
        let Some(item) = self.item(id)? else { return Ok(false) };
        let n =
            self.conn.execute("DELETE FROM workspace_items WHERE id = ?1", params![id]).map_err(|e| self.err(&e))?;
        if n > 0 {
            self.mark_forgotten(&item.path, at_ms)?;
        }
        Ok(n > 0)
    }

    /// One item.
    pub fn item(&self, id: i64) -> Result<Option<ItemRecord>, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT id, kind, label, path, detail_json, added_at_ms, last_status, last_opened_at_ms FROM workspace_items WHERE id = ?1",
                params![id],
                Self::item_row,
            )
            .optional()
            .map_err(|e| self.err(&e))?;
        row.map(|r| self.item_from_row(r)).transpose()
    }

    /// Every item, oldest first (the order they were added).
    pub fn items(&self) -> Result<Vec<ItemRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, kind, label, path, detail_json, added_at_ms, last_status, last_opened_at_ms FROM workspace_items ORDER BY id")
            .map_err(|e| self.err(&e))?;
        let rows = stmt.query_map([], Self::item_row).map_err(|e| self.err(&e))?;
        let mut out = Vec::new();
        for r in rows {
            out.push(self.item_from_row(r.map_err(|e| self.err(&e))?)?);
        }
        Ok(out)
    }

    fn item_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ItemColumns> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
    }

    fn item_from_row(
        &self,
        (id, kind, label, path, detail, added, status, opened): ItemColumns,
    ) -> Result<ItemRecord, StoreError> {
        let bad =
            |detail: String| StoreError::InvalidRecord { path: self.path.clone(), what: "workspace item", detail };
        let kind = ItemKind::parse(&kind).ok_or_else(|| bad(format!("item {id}: unknown kind {kind:?}")))?;
        let detail = serde_json::from_str(&detail).map_err(|e| bad(format!("item {id}: {e}")))?;
        Ok(ItemRecord {
            id,
            kind,
            label,
            path,
            detail,
            added_at_ms: to_u64(added, &self.path, "item time")?,
            last_status: status,
            last_opened_at_ms: opened.map(|o| to_u64(o, &self.path, "item time")).transpose()?,
        })
    }
}
