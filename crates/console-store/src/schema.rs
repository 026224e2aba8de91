//! The schema: numbered migrations (append only), applied in one
//! immediate transaction; a file from a newer console is refused.

use crate::{Store, StoreError};

/// The schema, one migration per entry; `PRAGMA user_version` is the number
/// applied. Append only: a released migration is never edited.
const MIGRATIONS: &[&str] = &[
    // 1: streams + last audit, energy windows, steward actions.
    "CREATE TABLE streams (
        path TEXT PRIMARY KEY NOT NULL,
        opened_at_ms INTEGER NOT NULL,
        size_bytes INTEGER NOT NULL,
        last_verdict TEXT,
        last_audit_json TEXT,
        last_audit_at_ms INTEGER
    );
    CREATE TABLE energy_windows (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        start_ms INTEGER NOT NULL,
        end_ms INTEGER NOT NULL,
        uj INTEGER,
        provenance TEXT,
        coverage TEXT,
        rung TEXT,
        CHECK ((uj IS NULL) = (provenance IS NULL)),
        CHECK ((uj IS NULL) = (coverage IS NULL)),
        CHECK (end_ms >= start_ms)
    );
    CREATE TABLE steward_actions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at_ms INTEGER NOT NULL,
        action TEXT NOT NULL,
        subject TEXT NOT NULL,
        detail_json TEXT NOT NULL
    );",
    // 2: the workspace's other items (blueprint reconciles, runs), listed
    // beside the streams in the workspace overview.
    "CREATE TABLE workspace_items (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (kind IN ('blueprint', 'run')),
        label TEXT NOT NULL,
        path TEXT NOT NULL,
        detail_json TEXT NOT NULL,
        added_at_ms INTEGER NOT NULL,
        last_status TEXT,
        last_opened_at_ms INTEGER,
        UNIQUE (kind, path)
    );",
    // 3: what the person took off the workspace, so that nothing the console
    // lists by itself (the demo, the runs folder) puts it back.
    "CREATE TABLE forgotten (
        path TEXT PRIMARY KEY NOT NULL,
        at_ms INTEGER NOT NULL
    );",
];

impl Store {
    pub(crate) fn migrate(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| StoreError::from_sqlite(&path, &e);
        let supported = u32::try_from(MIGRATIONS.len()).unwrap_or(u32::MAX);
        let found: u32 = self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(err)?;
        if found > supported {
            return Err(StoreError::NewerSchema { path, found, supported });
        }
        // IMMEDIATE takes the write lock up front: a second writer is told it is locked.
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(err)?;
        let found: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(err)?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.execute_batch(sql).map_err(err)?;
            tx.pragma_update(None, "user_version", i + 1).map_err(err)?;
        }
        tx.commit().map_err(err)
    }
}
