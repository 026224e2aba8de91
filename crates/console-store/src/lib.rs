//! JCP Console's workspace store: one `SQLite` file (WAL, numbered migrations)
//! holding the streams a person opened and their last audit, the history of
//! energy windows (bounded by a retention count), and the steward's actions.
//!
//! Failure is never silent: a file that is not a database, fails `SQLite`'s
//! integrity check, is held by another process or was written by a newer
//! console is refused with a typed error naming the file and what to do. The
//! store never deletes or recreates a file it could not read.
//!
//! One module per table family: [`windows`] (energy history), [`streams`]
//! (opened receipt streams and their last audit), [`actions`] (the
//! steward's history), [`items`] (what the workspace lists), [`schema`]
//! (the migrations) and [`error`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod actions;
pub mod error;
pub mod items;
pub mod schema;
pub mod streams;
pub mod windows;

pub use actions::StewardAction;
pub use error::StoreError;
pub use items::{ItemKind, ItemRecord};
pub use streams::StreamRecord;
pub use windows::{WindowRecord, DEFAULT_WINDOW_RETENTION};

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

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
}
