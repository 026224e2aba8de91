//! The store's one error enum: every way the workspace file can be
//! refused or fail, each naming the file and what to do.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// Everything that can go wrong with the store. Each variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file exists but is not a `SQLite` database, or fails its integrity check.
    #[error("the workspace store {path} is damaged ({detail}); it was left untouched — move it aside to start a new workspace, or restore it from a backup")]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// What `SQLite` reported.
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
    /// Any other `SQLite` failure, with its words.
    #[error("the workspace store {path} failed: {detail}")]
    Sqlite {
        /// The store file.
        path: PathBuf,
        /// What `SQLite` reported.
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

    pub(crate) fn from_sqlite(path: &Path, e: &rusqlite::Error) -> Self {
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
