//! Merging partials: the same options required of all, their streams
//! accounted in merge order (by path) through the fast audit's accounting,
//! so the report is the single run's over those streams, byte for byte.

use std::path::PathBuf;

use jcp_receipt::settle::SignedSettlementNote;

use super::format::{Partial, PartialOptions, PartialStream};
use super::load::load;
use super::strict::read_partial;
use super::{cmp_streams, sort_streams, PARTIAL_FORMAT, SPEC};
use crate::engine::{Engine, Sink};
use crate::report::Report;
use crate::AuditError;

/// Partials merged must have been audited under the same options
/// (`parts`: each partial's file and options).
fn same_options<'a>(
    parts: impl IntoIterator<Item = (&'a str, &'a PartialOptions)>,
) -> Result<PartialOptions, AuditError> {
    let mut parts = parts.into_iter();
    let Some((first_file, first)) = parts.next() else { return Err(AuditError::NoInput) };
    for (file, b) in parts {
        let a = first;
        let differs = [
            ("options.expected_stewards", a.expected_stewards != b.expected_stewards),
            ("options.verification", a.verification != b.verification),
            ("options.max_findings", a.max_findings != b.max_findings),
        ];
        if let Some((field, _)) = differs.iter().find(|(_, d)| *d) {
            return Err(AuditError::PartialMismatch {
                file: file.to_owned(),
                field: (*field).into(),
                message: format!(
                    "differs from {first_file}'s: partials audited under different options have no single-run report"
                ),
            });
        }
    }
    Ok(first.clone())
}

/// The options every partial of `parts` states, or why they differ.
fn options_of(parts: &[(String, Partial)]) -> Result<PartialOptions, AuditError> {
    same_options(parts.iter().map(|(f, p)| (f.as_str(), &p.options)))
}

/// Merges partials (each with the file it came from) into one partial:
/// their streams together, in merge order. Associative and independent of
/// the order the partials are given in; refused when their options differ.
pub fn merge(parts: &[(String, Partial)]) -> Result<Partial, AuditError> {
    let options = options_of(parts)?;
    let mut streams: Vec<PartialStream> = parts.iter().flat_map(|(_, p)| p.streams.iter().cloned()).collect();
    sort_streams(&mut streams);
    Ok(Partial { format: PARTIAL_FORMAT.into(), spec: SPEC.into(), options, streams })
}

/// The report of partials merged: the report a single audit of all their
/// streams, in merge order (by path), gives. Each stream is accounted and
/// dropped in turn.
pub fn merge_report(parts: Vec<(String, Partial)>) -> Result<Report, AuditError> {
    let options = options_of(&parts)?;
    // Each stream with the file it came from, for errors.
    let mut streams: Vec<(PartialStream, String)> =
        parts.into_iter().flat_map(|(f, p)| p.streams.into_iter().map(move |s| (s, f.clone()))).collect();
    streams.sort_by(|a, b| cmp_streams(&a.0, &b.0));
    let mut m = Merger::new(&options, streams.iter().map(|s| s.0.records.len()).sum());
    for (st, file) in streams {
        m.add(st, &file)?;
    }
    Ok(m.finish())
}

/// The report of the partial files `paths` merged, as [`merge_report`]
/// gives, holding one file's records at a time where the files' streams do
/// not interleave in merge order (one job per stream, or per contiguous
/// share of a sorted list); otherwise every file's at once. Each file is
/// read twice: first to check it whole and learn its streams.
pub fn merge_report_files(paths: &[PathBuf]) -> Result<Report, AuditError> {
    // Pass 1: every file decoded and checked; its options and stream keys kept.
    let mut heads: Vec<Head> = Vec::with_capacity(paths.len());
    for path in paths {
        let p = read_partial(path)?;
        let keys = p.streams.iter().map(|s| (s.path.clone(), s.bytes)).collect();
        let records = p.streams.iter().map(|s| s.records.len()).sum();
        heads.push((path.display().to_string(), p.options, keys, records));
    }
    let options = same_options(heads.iter().map(|(f, o, _, _)| (f.as_str(), o)))?;
    // Files by their first stream; streaming needs their key runs to follow
    // one another strictly (no equal keys: those order by content).
    let mut order: Vec<usize> = (0..heads.len()).collect();
    order.sort_by(|&a, &b| heads[a].2.first().cmp(&heads[b].2.first()));
    let keys: Vec<&(String, u64)> = order.iter().flat_map(|&i| heads[i].2.iter()).collect();
    if !keys.windows(2).all(|w| w[0] < w[1]) {
        let mut parts = Vec::with_capacity(paths.len());
        for path in paths {
            parts.push((path.display().to_string(), read_partial(path)?));
        }
        return merge_report(parts);
    }
    let mut m = Merger::new(&options, heads.iter().map(|h| h.3).sum());
    for i in order {
        let (file, ..) = &heads[i];
        for st in read_partial(&paths[i])?.streams {
            m.add(st, file)?;
        }
    }
    Ok(m.finish())
}

/// A partial file's name, options, stream keys (path, size) and record count.
type Head = (String, PartialOptions, Vec<(String, u64)>, usize);

/// Accounts streams, in merge order, into one report.
struct Merger {
    eng: Engine,
    notes: Vec<(Vec<SignedSettlementNote>, u64)>,
}

impl Merger {
    /// A merger under `options`, its duplicate set sized for `records`.
    fn new(options: &PartialOptions, records: usize) -> Self {
        let max = usize::try_from(options.max_findings).unwrap_or(usize::MAX);
        Self { eng: Engine::for_replay(max, records), notes: Vec::new() }
    }

    /// The next stream (from `file`), accounted; its records then dropped.
    fn add(&mut self, st: PartialStream, file: &str) -> Result<(), AuditError> {
        let i = self.notes.len();
        let loaded = load(&st, i, file, &format!("streams[{i}] ({})", st.path))?;
        drop(st.records);
        self.eng.start_stream(loaded.summary);
        self.eng.take(loaded.parts);
        self.eng.end_stream(i);
        self.notes.push((loaded.notes, st.settlement_notes_refused));
        Ok(())
    }

    /// The report, each stream's settlement notes beside its unresolved
    /// decisions (§4.11).
    fn finish(self) -> Report {
        let mut report = self.eng.into_report();
        for (i, (n, refused)) in self.notes.iter().enumerate() {
            crate::attach_notes(&mut report, i, n, *refused);
        }
        report
    }
}
