//! The reading half of the audit (§8.1: the stream is the log, read once):
//! each stream in chunks, every chunk decoded and its signatures checked on
//! all cores while the next is read and the previous one handed on, in
//! stream order, to a [`Sink`].

use std::fs::File;
use std::ops::ControlFlow;
use std::path::PathBuf;

use jcp_receipt::stream::{Batch, Reader};

use super::{Engine, Sink};
use crate::check::{self, Part};
use crate::report::{Report, StreamSummary};
use crate::{AuditError, AuditOptions, Progress};

fn install<R: Send>(pool: Option<&rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Runs the audit over `paths`.
pub(crate) fn run(
    paths: &[PathBuf],
    opts: &AuditOptions,
    progress: impl FnMut(&Progress) -> ControlFlow<()>,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Report, AuditError> {
    // Size the duplicate set for one signed record per KiB of input (a
    // receipt is about that; a million take 1.1 GB), so it rarely grows;
    // no more than 2 million ahead (32 MiB), beyond that it grows as filled.
    let bytes: u64 = paths.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let mut eng = Engine::new(opts, usize::try_from(bytes / 1024).unwrap_or(usize::MAX).min(1 << 21));
    read_into(paths, opts, progress, pool, &mut eng)?;
    Ok(eng.finish())
}

/// Reads and checks every stream of `paths` in turn, handing each chunk's
/// checked records to `sink` in stream order.
pub(crate) fn read_into<S: Sink>(
    paths: &[PathBuf],
    opts: &AuditOptions,
    mut progress: impl FnMut(&Progress) -> ControlFlow<()>,
    pool: Option<&rayon::ThreadPool>,
    sink: &mut S,
) -> Result<(), AuditError> {
    let chunk_records = opts.chunk_records.max(1);
    let mut records_done = 0u64;
    for (idx, path) in paths.iter().enumerate() {
        let name = path.display().to_string();
        let io = |e: std::io::Error| AuditError::Io { path: name.clone(), message: e.to_string() };
        let file = File::open(path).map_err(io)?;
        let bytes_total = file.metadata().map_err(io)?.len();
        sink.start_stream(StreamSummary { path: name.clone(), bytes: bytes_total, ..StreamSummary::default() });
        if progress(&Progress::StreamStarted { index: idx, path: path.clone(), bytes_total }).is_break() {
            return Err(AuditError::Cancelled);
        }
        let mut reader = Reader::new(file).map_err(|e| crate::reader_error(name.clone(), e))?;
        let mut prev: Option<Vec<Part>> = None;
        let mut batch = Batch::new();
        let mut next = Batch::new();
        {
            let _probe = crate::phases::probe!(READ);
            reader.read_batch(chunk_records, &mut batch);
        }
        loop {
            if let Some(e) = reader.take_io_error() {
                return Err(io(e));
            }
            let done = batch.items().is_empty();
            let prev_n = prev.as_ref().map_or(0, |p| p.iter().map(|part| part.checked.len()).sum::<usize>()) as u64;
            let expected = &opts.expected_stewards;
            let mode = opts.verification;
            let sink_ref = &mut *sink;
            let prev_chunk = prev.take();
            let (reader_ref, next_ref) = (&mut reader, &mut next);
            // Verify this chunk on all cores while the next one is read and
            // the previous one accounted (one thread: one after the other).
            let (checked, ()) = install(pool, || {
                rayon::join(
                    || check::check_chunk(&batch, idx, expected, mode),
                    || {
                        if !done {
                            let _probe = crate::phases::probe!(READ);
                            reader_ref.read_batch(chunk_records, next_ref);
                        }
                        if let Some(p) = prev_chunk {
                            sink_ref.take(p);
                        }
                    },
                )
            });
            records_done += prev_n;
            let ev =
                Progress::Advanced { index: idx, bytes_done: reader.position(), bytes_total, records: records_done };
            if progress(&ev).is_break() {
                return Err(AuditError::Cancelled);
            }
            if done {
                break;
            }
            prev = Some(checked);
            std::mem::swap(&mut batch, &mut next);
        }
        sink.end_stream(idx);
    }
    if progress(&Progress::Finishing).is_break() {
        return Err(AuditError::Cancelled);
    }
    Ok(())
}
