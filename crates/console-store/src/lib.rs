//! JCP Console's workspace store: one SQLite file (WAL, numbered migrations)
//! holding the streams a person opened and their last audit, the history of
//! energy windows (bounded by a retention count), and the steward's actions.
//!
//! Failure is never silent: a file that is not a database, fails SQLite's
//! integrity check, is held by another process or was written by a newer
//! console is refused with a typed error naming the file and what to do. The
//! store never deletes or recreates a file it could not read.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![allow(clippy::doc_markdown)] // "SQLite" is a name, not code

use std::path::{Path, PathBuf};
use std::time::Duration;

use jcp::energy::{Coverage, Energy, Provenance};
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};
use serde::{Deserialize, Serialize};

/// Default number of energy windows kept (a day of 1 s windows).
pub const DEFAULT_WINDOW_RETENTION: u32 = 86_400;

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
];

/// Everything that can go wrong with the store. Each variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file exists but is not a SQLite database, or fails its integrity check.
    #[error("the workspace store {path} is damaged ({detail}); it was left untouched — move it aside to start a new workspace, or restore it from a backup")]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// What SQLite reported.
        detail: String,
    },
    /// Another process holds the store's write lock.
    #[error("the workspace store {path} is locked by another process (is another JCP Console open on it?); close it and try again")]
    Locked {
        /// The store file.
        path: PathBuf,
    },
    /// The file was written by a newer console with a schema this one does not know.
    #[error("the workspace store {path} has schema version {found}, newer than this console's {supported}; use a newer JCP Console (the file was left untouched)")]
    NewerSchema {
        /// The store file.
        path: PathBuf,
        /// The version found in the file.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// The file or its folder could not be opened or created.
    #[error("the workspace store {path} could not be opened: {detail}")]
    Unavailable {
        /// The store file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// A row holds a value this console refuses to read (never defaulted).
    #[error("the workspace store {path} holds an unreadable {what}: {detail}")]
    InvalidRecord {
        /// The store file.
        path: PathBuf,
        /// Which record.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// Any other SQLite failure, with SQLite's words.
    #[error("the workspace store {path} failed: {detail}")]
    Sqlite {
        /// The store file.
        path: PathBuf,
        /// What SQLite reported.
        detail: String,
    },
}

impl StoreError {
    /// A stable code for the front end and for tests.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Corrupt { .. } => "store.corrupt",
            Self::Locked { .. } => "store.locked",
            Self::NewerSchema { .. } => "store.newer_schema",
            Self::Unavailable { .. } => "store.unavailable",
            Self::InvalidRecord { .. } => "store.invalid_record",
            Self::Sqlite { .. } => "store.sqlite",
        }
    }

    fn from_sqlite(path: &Path, e: &rusqlite::Error) -> Self {
        let path = path.to_path_buf();
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => Self::Corrupt { path, detail: e.to_string() },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Self::Locked { path },
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => {
                Self::Unavailable { path, detail: e.to_string() }
            }
            _ => Self::Sqlite { path, detail: e.to_string() },
        }
    }
}

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

/// The open workspace store.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    retention: u32,
}

fn to_i64(v: u64, path: &Path, what: &'static str) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::InvalidRecord {
        path: path.to_path_buf(),
        what,
        detail: format!("{v} does not fit SQLite's integer"),
    })
}

fn to_u64(v: i64, path: &Path, what: &'static str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::InvalidRecord {
        path: path.to_path_buf(),
        what,
        detail: format!("negative value {v}"),
    })
}

impl Store {
    /// Opens (creating if absent) the store at `path`, in WAL mode, applying
    /// any migrations it lacks. A damaged, locked or newer file is refused.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::Unavailable {
                    path: path.to_path_buf(),
                    detail: format!("cannot create its folder: {e}"),
                })?;
            }
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| StoreError::from_sqlite(path, &e))?;
        Self::init(conn, path.to_path_buf())
    }

    /// A store that lives in memory only (tests, and the fallback the app
    /// states plainly when the file store is refused).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| StoreError::from_sqlite(&path, &e))?;
        Self::init(conn, path)
    }

    fn init(conn: Connection, path: PathBuf) -> Result<Self, StoreError> {
        let err = |e: rusqlite::Error| StoreError::from_sqlite(&path, &e);
        conn.busy_timeout(Duration::from_millis(1500)).map_err(err)?;
        // Reading the header is the first touch of the file: a non-database fails here.
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(err)?;
        if check != "ok" {
            return Err(StoreError::Corrupt { path, detail: format!("integrity check: {check}") });
        }
        if path.as_os_str() != ":memory:" {
            let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).map_err(err)?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Sqlite {
                    path,
                    detail: format!("could not switch to WAL (journal mode is {mode})"),
                });
            }
        }
        conn.execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;").map_err(err)?;
        let mut store = Self { conn, path, retention: DEFAULT_WINDOW_RETENTION };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
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

    fn err(&self, e: &rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(&self.path, e)
    }

    /// The file this store lives in (`:memory:` for an in-memory store).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version applied.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| self.err(&e))
    }

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
            let (seq, start, end, uj, prov, cov, rung) = row.map_err(|e| self.err(&e))?;
            out.push(self.window_from_row(seq, start, end, uj, prov, cov, rung)?);
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn window_from_row(
        &self,
        seq: i64,
        start: i64,
        end: i64,
        uj: Option<i64>,
        prov: Option<String>,
        cov: Option<String>,
        rung: Option<String>,
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
                Some(Energy { uj: to_u64(uj, &self.path, "window energy")?, provenance, coverage })
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

    /// Records that a stream was opened (again); keeps its last audit.
    pub fn record_stream_opened(&self, path: &str, size_bytes: u64, at_ms: u64) -> Result<(), StoreError> {
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

    #[allow(clippy::type_complexity)]
    fn stream_row(
        r: &rusqlite::Row<'_>,
    ) -> rusqlite::Result<(String, i64, i64, Option<String>, Option<String>, Option<i64>)> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
    }

    fn stream_from_row(
        &self,
        (path, opened, size, verdict, json, at): (String, i64, i64, Option<String>, Option<String>, Option<i64>),
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

    /// Adds an item (or refreshes the label and detail of the one with the
    /// same kind and path, keeping its last status). Returns its id.
    pub fn add_item(
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
                 ON CONFLICT(kind, path) DO UPDATE SET label = excluded.label, detail_json = excluded.detail_json
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

    #[allow(clippy::type_complexity)]
    fn item_row(
        r: &rusqlite::Row<'_>,
    ) -> rusqlite::Result<(i64, String, String, String, String, i64, Option<String>, Option<i64>)> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
    }

    fn item_from_row(
        &self,
        (id, kind, label, path, detail, added, status, opened): (
            i64,
            String,
            String,
            String,
            String,
            i64,
            Option<String>,
            Option<i64>,
        ),
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
