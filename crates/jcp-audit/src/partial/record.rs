//! A partial audit (one job of a fleet's audit): streams read and checked
//! as a single run reads them (§8.2), each checked record kept as an entry
//! instead of accounted.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;

use jcp::cbor::ContentId;
use jcp::decision::Verdict;
use jcp_receipt::receipt::Profile;

use super::format::{
    kind_name, Entry, Hex, HexBytes, MetaEntry, Partial, PartialOptions, PartialStream, ProfileTag, ReceiptEntry,
    VerdictTag,
};
use super::{sort_streams, PARTIAL_FORMAT, SPEC};
use crate::check::{Body, Checked, Meta, Part};
use crate::engine::{self, Sink};
use crate::report::StreamSummary;
use crate::{AuditError, AuditOptions, Progress};

/// Records checked records as partial entries (the [`Sink`] of a partial audit).
#[derive(Debug, Default)]
struct Recorder {
    /// The streams recorded so far; the last is being read.
    streams: Vec<PartialStream>,
    /// The current stream's `keys` table, by value.
    keys: HashMap<[u8; 32], u32>,
    /// The current stream's `actions` table, by name.
    actions: HashMap<String, u32>,
    /// The first checked record that could not be carried (stream, offset).
    broken: Option<(String, u64)>,
}

impl Recorder {
    /// `k`'s index in the current stream's `keys` table (added if new).
    fn key(&mut self, k: &[u8; 32]) -> u32 {
        let Some(st) = self.streams.last_mut() else { return 0 };
        *self.keys.entry(*k).or_insert_with(|| {
            st.keys.push(Hex(*k));
            u32::try_from(st.keys.len() - 1).unwrap_or(u32::MAX)
        })
    }

    /// `a`'s index in the current stream's `actions` table (added if new).
    fn action(&mut self, a: &str) -> u32 {
        let Some(st) = self.streams.last_mut() else { return 0 };
        if let Some(i) = self.actions.get(a) {
            return *i;
        }
        st.actions.push(a.to_owned());
        let i = u32::try_from(st.actions.len() - 1).unwrap_or(u32::MAX);
        self.actions.insert(a.to_owned(), i);
        i
    }

    /// A sealed record's stream facts as an entry.
    fn meta(&mut self, m: &Meta) -> MetaEntry {
        MetaEntry {
            steward: self.key(&m.steward),
            dedup: Hex(m.dedup.to_be_bytes()),
            id: m.id.map(Hex),
            seq: m.seq,
            known_through: m.known_through,
        }
    }

    /// A checked record as an entry; `None` where it cannot be carried.
    fn entry(&mut self, c: Checked, chains: &[ContentId]) -> Option<Entry> {
        let at = c.offset;
        let kind = c.kind.map_or("record", kind_name);
        Some(match c.body {
            Body::Fault(f) => Entry::Fault { at: f.offset, code: f.code.code().into(), len: f.len },
            Body::Refused(code, message) => {
                Entry::Refused { at, kind: kind.into(), code: code.as_str().into(), message, id: c.refused_id.map(Hex) }
            }
            Body::WireRequest { signed } => Entry::Request { at, signed },
            Body::Receipt(f) => {
                let meta = self.meta(c.meta.as_ref()?);
                let chain_ids: Vec<ContentId> = {
                    let (start, n) = (f.chain.0 as usize, f.chain.1 as usize);
                    chains.get(start..start + n)?.to_vec()
                };
                let chain = chain_ids.iter().map(|id| self.key(&id.0)).collect();
                let (verdict, reason) = match f.verdict {
                    Verdict::Allow => (VerdictTag::Allow, None),
                    Verdict::Deny(r) => (VerdictTag::Deny, Some(r.as_str().to_owned())),
                };
                Entry::Receipt(Box::new(ReceiptEntry {
                    at,
                    meta,
                    profile: match f.profile {
                        Profile::Jcp1 => ProfileTag::Jcp1,
                        Profile::Jcp2 => ProfileTag::Jcp2,
                    },
                    grant: self.key(&f.grant_id.0),
                    subject: self.key(&f.subject),
                    verdict,
                    reason,
                    cost_uj: f.cost_uj,
                    provenance: f.provenance,
                    coverage: f.coverage,
                    measured: f.measured,
                    remaining_uj: f.budget_remaining_uj,
                    budget_uj: f.budget_uj,
                    chain,
                    breach: f.breach.map(|r| r.as_str().to_owned()),
                    money_minor: f.money_minor,
                    action: (f.verdict == Verdict::Allow).then(|| self.action(&f.action)),
                }))
            }
            Body::Outcome(receipt) => Entry::Outcome { at, meta: self.meta(c.meta.as_ref()?), receipt: Hex(receipt.0) },
            _ => Entry::Whole { at, kind: kind.into(), bytes: HexBytes(c.raw?.into_vec()) },
        })
    }
}

impl Sink for Recorder {
    fn start_stream(&mut self, summary: StreamSummary) {
        self.keys.clear();
        self.actions.clear();
        self.streams.push(PartialStream {
            path: summary.path,
            bytes: summary.bytes,
            keys: Vec::new(),
            actions: Vec::new(),
            records: Vec::new(),
            settlement_notes: Vec::new(),
            settlement_notes_refused: 0,
        });
    }

    fn take(&mut self, chunk: Vec<Part>) {
        for part in chunk {
            for c in part.checked {
                let at = c.offset;
                if let Some(e) = self.entry(c, &part.chains) {
                    if let Some(st) = self.streams.last_mut() {
                        st.records.push(e);
                    }
                } else {
                    let path = self.streams.last().map(|s| s.path.clone()).unwrap_or_default();
                    self.broken.get_or_insert((path, at));
                }
            }
        }
    }

    fn end_stream(&mut self, _s: usize) {}
}

/// Audits `paths` as one job of a fleet's audit: reads and checks every
/// stream as [`crate::audit_paths`] does and returns the partial to merge
/// (nothing is accounted here; the merge accounts everything at once).
pub fn audit_partial<P: AsRef<Path>>(
    paths: &[P],
    opts: &AuditOptions,
    progress: impl FnMut(&Progress) -> ControlFlow<()>,
) -> Result<Partial, AuditError> {
    let paths = crate::input_paths(paths)?;
    let mut rec = Recorder::default();
    crate::with_pool(opts, |pool| engine::read_into(&paths, opts, progress, pool, &mut rec))?;
    if let Some((path, offset)) = rec.broken {
        return Err(AuditError::PartialUnrecordable { path, offset });
    }
    for (st, path) in rec.streams.iter_mut().zip(&paths) {
        let (notes, refused) = jcp_receipt::settle::read_notes(path);
        st.settlement_notes = notes.iter().map(|n| HexBytes(n.to_bytes())).collect();
        st.settlement_notes_refused = refused.len() as u64;
    }
    let mut partial = Partial {
        format: PARTIAL_FORMAT.into(),
        spec: SPEC.into(),
        options: PartialOptions::of(opts),
        streams: rec.streams,
    };
    sort_streams(&mut partial.streams);
    Ok(partial)
}
