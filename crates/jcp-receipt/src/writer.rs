//! The single writer of a stream (§4.11).
//!
//! Opening for writing takes an **exclusive OS lock** on the file
//! (`File::try_lock`, an `flock`/`LockFileEx` claim the operating system
//! releases when the process dies, so a crash leaves nothing to clean up).
//! A second writer fails to start with [`Error::Locked`]; a platform
//! without locking fails to open ([`Error::LockUnsupported`]) rather
//! than proceed. On open the existing records are scanned: a torn final
//! record is reported and **cut** (the file is truncated to the last whole
//! record) before anything is appended.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::stream::{self, Fault, FaultCode, Item, Reader, RecordKind, HEADER};

/// How appends reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `fsync` (data) after every record: what §4.11 requires of an
    /// enforcement point. The default.
    SyncEachRecord,
    /// Group commit: appends are gathered in the writer's memory and
    /// reach the file in one write at [`StreamWriter::flush`] (or
    /// [`StreamWriter::commit`], which then makes every record so far
    /// durable with one sync). The writer's owner must commit (or flush and
    /// sync the file) before any effect of those records (an action, a
    /// response) is visible: §4.11's order holds per batch. What an
    /// enforcement point serving many clients uses: a batch of records
    /// costs one write, not one per record.
    GroupCommit,
    /// No per-record sync (one at close). Only for **generating** demo and
    /// benchmark streams: it voids §4.11's durability and must never back
    /// an enforcement point.
    GeneratorOnly,
}

/// A torn tail that was cut on open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TornCut {
    /// Where the torn record started (the new file length).
    pub offset: u64,
    /// How many bytes were cut.
    pub len: u64,
}

/// The exclusive appender of one stream file.
#[derive(Debug)]
pub struct StreamWriter {
    file: File,
    path: PathBuf,
    len: u64,
    durability: Durability,
    syncs: u64,
    /// The length known durable.
    committed_len: u64,
    /// Group commit: framed records appended but not yet written to the
    /// file (they end at `len`).
    gathered: Vec<u8>,
    /// A write to the file failed part way: what is in it past the last
    /// whole write is unknown, so nothing more is written (fail closed; the
    /// next open cuts a torn tail).
    broken: Option<String>,
    /// Test hook: appends still to succeed before one fails (`None`: none fails).
    fail_after: Option<u64>,
    /// Test hook: the next write of gathered records fails.
    fail_flush: bool,
}

/// §4.11 "one writer per record": the lock taken, or the refusal to open —
/// held by another writer (`stream-locked`), or not available at all
/// (`lock-unsupported`: the implementation "MUST fail to open the record
/// rather than proceed").
fn claim(locked: Result<(), std::fs::TryLockError>, path: &Path) -> Result<(), Error> {
    match locked {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked { path: path.display().to_string() }),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::LockUnsupported { path: path.display().to_string(), detail: e.to_string() })
        }
    }
}

impl StreamWriter {
    /// Opens (creating if absent) `path` for writing: takes the exclusive
    /// lock, checks the header, feeds every existing item to `visit`, and
    /// cuts a torn tail. Returns the writer and the cut, if any.
    pub fn open(
        path: &Path,
        durability: Durability,
        mut visit: impl FnMut(&Item),
    ) -> Result<(Self, Option<TornCut>), Error> {
        let io = |e| Error::io(path, &e);
        let existed = path.exists();
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io)?;
        claim(file.try_lock(), path)?;
        let mut w = Self {
            file,
            path: path.to_path_buf(),
            len: 0,
            durability,
            syncs: 0,
            committed_len: 0,
            gathered: Vec::new(),
            broken: None,
            fail_after: None,
            fail_flush: false,
        };
        let size = w.file.metadata().map_err(io)?.len();
        if size < HEADER.len() as u64 {
            // A new file, or one whose creation was torn before its header
            // was whole: only a prefix of the header may be there.
            let mut head = vec![0u8; usize::try_from(size).unwrap_or(0)];
            std::io::Read::read_exact(&mut w.file, &mut head).map_err(io)?;
            if !HEADER.starts_with(&head) {
                return Err(Error::NotAStream { path: path.display().to_string() });
            }
            w.file.set_len(0).map_err(io)?;
            w.file.seek(SeekFrom::Start(0)).map_err(io)?;
            w.file.write_all(HEADER).map_err(io)?;
            w.file.sync_all().map_err(io)?;
            if !existed {
                sync_dir(path);
            }
            w.len = HEADER.len() as u64;
            w.committed_len = w.len;
            return Ok((w, None));
        }
        let mut torn = None;
        {
            let reader_file = w.file.try_clone().map_err(io)?;
            let mut reader = Reader::new(std::io::BufReader::new(reader_file)).map_err(|e| e.at_path(path))?;
            for item in reader.by_ref() {
                if let Item::Fault(Fault { code: FaultCode::TornTail, offset, len }) = item {
                    torn = Some(TornCut { offset, len });
                }
                visit(&item);
            }
            if let Some(e) = reader.take_io_error() {
                return Err(io(e));
            }
        }
        w.len = match torn {
            Some(t) => {
                w.file.set_len(t.offset).map_err(io)?;
                w.file.sync_all().map_err(io)?;
                t.offset
            }
            None => size,
        };
        w.file.seek(SeekFrom::Start(w.len)).map_err(io)?;
        w.committed_len = w.len;
        Ok((w, torn))
    }

    /// Appends one record and, under [`Durability::SyncEachRecord`], makes
    /// it durable before returning; under [`Durability::GroupCommit`] it is
    /// gathered for the next [`StreamWriter::flush`]. Returns the record's
    /// offset.
    pub fn append(&mut self, kind: RecordKind, payload: &[u8]) -> Result<u64, Error> {
        self.refuse_if_broken()?;
        match self.fail_after {
            Some(0) => {
                self.fail_after = None;
                let e = std::io::Error::other("injected append failure (a test's fault injection)");
                return Err(Error::io(&self.path, &e));
            }
            Some(n) => self.fail_after = Some(n - 1),
            None => {}
        }
        let framed = stream::frame(kind, payload)?;
        let at = self.len;
        if self.durability == Durability::GroupCommit {
            self.gathered.extend_from_slice(&framed);
            self.len += framed.len() as u64;
            return Ok(at);
        }
        let io = |e| Error::io(&self.path, &e);
        self.file.write_all(&framed).map_err(io)?;
        self.len += framed.len() as u64;
        if self.durability == Durability::SyncEachRecord {
            self.file.sync_data().map_err(io)?;
            self.syncs += 1;
            self.committed_len = self.len;
        }
        Ok(at)
    }

    /// Writes the records gathered under [`Durability::GroupCommit`] to the
    /// file in one write (not yet durable: [`StreamWriter::commit`], or a
    /// sync of the file, makes them so). A no-op when none is gathered.
    /// A write that fails leaves the writer refusing everything after it:
    /// the file may hold part of the gathered records.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.refuse_if_broken()?;
        if self.gathered.is_empty() {
            return Ok(());
        }
        let written = if std::mem::take(&mut self.fail_flush) {
            // Part of the batch reaches the file, as when a disk fills mid-write.
            let half = &self.gathered[..self.gathered.len() / 2];
            self.file
                .write_all(half)
                .and_then(|()| Err(std::io::Error::other("injected write failure (a test's fault injection)")))
        } else {
            self.file.write_all(&self.gathered)
        };
        if let Err(e) = written {
            let e = Error::io(&self.path, &e);
            self.broken = Some(e.to_string());
            return Err(e);
        }
        self.gathered.clear();
        Ok(())
    }

    /// Refuses to write after a failed write (see [`StreamWriter::flush`]).
    fn refuse_if_broken(&self) -> Result<(), Error> {
        match &self.broken {
            None => Ok(()),
            Some(why) => Err(Error::io(
                &self.path,
                &std::io::Error::other(format!("an earlier write failed part way ({why}); nothing more is written")),
            )),
        }
    }

    /// Makes every record appended so far durable (the gathered ones
    /// written, then one `fdatasync`); a no-op when nothing was appended
    /// since the last one. Under [`Durability::SyncEachRecord`] every
    /// append already did this.
    pub fn commit(&mut self) -> Result<(), Error> {
        if self.committed_len == self.len {
            return Ok(());
        }
        self.flush()?;
        self.file.sync_data().map_err(|e| Error::io(&self.path, &e))?;
        self.syncs += 1;
        self.committed_len = self.len;
        Ok(())
    }

    /// Fault injection for tests: the next [`StreamWriter::append`] fails
    /// with an I/O error and writes nothing (as a full disk would), so a
    /// test can hold what a caller does when its record cannot be written.
    #[doc(hidden)]
    pub fn fail_next_append_for_tests(&mut self) {
        self.fail_append_after_for_tests(0);
    }

    /// Fault injection for tests: the next write of gathered records
    /// ([`StreamWriter::flush`]) writes half of them and fails, as a disk
    /// that fills mid-write would.
    #[doc(hidden)]
    pub fn fail_next_flush_for_tests(&mut self) {
        self.fail_flush = true;
    }

    /// Fault injection for tests: `ok` more appends succeed, the one after
    /// fails as [`StreamWriter::fail_next_append_for_tests`] describes.
    #[doc(hidden)]
    pub fn fail_append_after_for_tests(&mut self, ok: u64) {
        self.fail_after = Some(ok);
    }

    /// Bytes appended but not yet made durable (0 unless group commit).
    pub fn uncommitted(&self) -> u64 {
        self.len - self.committed_len
    }

    /// How many records were made durable with an explicit sync.
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    /// The stream's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Current length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether only the header is there.
    pub fn is_empty(&self) -> bool {
        self.len <= HEADER.len() as u64
    }

    /// Writes what is gathered, syncs everything and releases the lock.
    pub fn close(mut self) -> Result<(), Error> {
        self.flush()?;
        self.file.sync_all().map_err(|e| Error::io(&self.path, &e))?;
        // The lock is released when the file is dropped (and by the OS if
        // the process dies first).
        Ok(())
    }
}

/// Makes a new file's directory entry durable (best effort where the
/// platform cannot open directories).
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §4.11: "the implementation MUST fail to open the record rather than
    /// proceed" where exclusive locking is not available (a file system
    /// without `flock`), as it does where another writer holds it.
    #[test]
    fn s4_11_a_record_whose_lock_cannot_be_taken_is_not_opened() {
        let p = Path::new("/x/s.jcps");
        let unsupported = std::io::Error::new(std::io::ErrorKind::Unsupported, "flock: operation not supported");
        let e = claim(Err(std::fs::TryLockError::Error(unsupported)), p).unwrap_err();
        assert_eq!(e.code(), "lock-unsupported", "{e}");
        assert_eq!(claim(Err(std::fs::TryLockError::WouldBlock), p).unwrap_err().code(), "stream-locked");
        assert!(claim(Ok(()), p).is_ok());
    }
}
