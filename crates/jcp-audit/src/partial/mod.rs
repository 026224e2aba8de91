//! Partial audits: a fleet's streams audited as parallel jobs (§4.3
//! propagation, §4.5 shards, §8.2), then merged into the one report a single
//! run over all of them gives, byte for byte.
//!
//! The expensive half of an audit (reading, decoding, checking every
//! signature) is per record and independent of order; the accounting (the
//! duplicate set, per-steward remainders, revocations against allows of
//! other points, §4.11 unresolved decisions, the findings cap) is serial and
//! crosses streams. A partial therefore carries each stream's **checked
//! records** as the accounting reads them — the facts of every receipt, its
//! steward, marker, sequence and duplicate key, outcomes by the receipt they
//! name, refusals and framing faults with their codes, and the rare records
//! (grants, revocation notices with their `known_through` markers,
//! amendments, statements, settlements, closings) as their bytes — with the
//! stream's settlement notes. `merge` replays them through the same
//! accounting, streams ordered by path, so the merged report is the single
//! run's over those paths in that order (docs/decisions.md, "fleet audits").
//!
//! The file is JSON, versioned ([`PARTIAL_FORMAT`], the spec it applies),
//! strictly decoded: unknown or duplicate fields, wrong types, non-lowercase
//! hex, an unknown code, an index outside its table and a record that does
//! not open are each an [`AuditError`](crate::AuditError) naming the file and the field; and
//! a partial is read only in its one encoding (what it re-encodes to). A
//! partial states the options that change a report (expected stewards,
//! verification, the findings cap); partials made under different ones are
//! refused together, since no single run gives their merge.
//!
//! The modules follow a partial's life: `format` (the file's types and
//! their one encoding), `strict` (reading it strictly, writing it),
//! `record` (a partial audit: streams read and checked, their records
//! kept), `load` (a stream's entries back as the accounting's records)
//! and `merge` (partials merged, and their report).

mod format;
mod load;
mod merge;
mod record;
mod strict;

use std::fmt::Write as _;

use jcp_receipt::cose::DidCache;

pub use format::{
    Entry, Hex, HexBytes, MetaEntry, Partial, PartialOptions, PartialStream, ProfileTag, ReceiptEntry, VerdictTag,
};
pub use merge::{merge, merge_report, merge_report_files};
pub use record::audit_partial;
pub use strict::{read_partial, write_partial};

/// The format tag a partial states (and a merge requires).
pub const PARTIAL_FORMAT: &str = "jcp-audit-partial/1";
/// The spec whose audit a partial carries.
const SPEC: &str = "jcp-v0.3";

/// Merge order: by path, then size, then content (a total order up to
/// identical streams, so the order never depends on which partial a stream
/// came from).
fn cmp_streams(a: &PartialStream, b: &PartialStream) -> std::cmp::Ordering {
    let ser = |s: &PartialStream| serde_json::to_vec(s).unwrap_or_default();
    a.path.cmp(&b.path).then(a.bytes.cmp(&b.bytes)).then_with(|| ser(a).cmp(&ser(b)))
}

/// Streams in merge order.
fn sort_streams(streams: &mut [PartialStream]) {
    streams.sort_by(cmp_streams);
}

/// One line per stream of a partial, for the CLI's human output, with the
/// revocation notices it carries: the revoked grant, the marker `M` it was
/// issued at and the point's `known_through` when it recorded it (§4.3).
pub fn describe(p: &Partial) -> String {
    let mut s = String::new();
    let mut dids = DidCache::new();
    for st in &p.streams {
        let _ = writeln!(s, "  {} ({} bytes, {} records)", st.path, st.bytes, st.records.len());
        for e in &st.records {
            let Entry::Whole { at, kind, bytes } = e else { continue };
            if kind != "revocation" {
                continue;
            }
            if let Ok((n, sealed)) = jcp_receipt::record::open_revocation(&bytes.0, &mut dids) {
                let heard = sealed.position.known_through.map_or("no marker".into(), |k| format!("known_through {k}"));
                let _ = writeln!(
                    s,
                    "    @{at}: revocation of {} at marker {}, recorded at {heard}",
                    n.revocation.revocation().grant_id,
                    n.marker
                );
            }
        }
    }
    s
}
