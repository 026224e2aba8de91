//! The durable enforcement point (§4.11, §8.1): a [`Gate`] whose every
//! decision is sealed and recorded — and made durable — **before** the
//! action runs, whose outcome is recorded after, and which on open
//! re-establishes spend by **replaying its own verified receipts through the
//! gate** before it decides anything new (C14, C16).
//!
//! | module | what |
//! |---|---|
//! | this one | [`DurableGate`]: opening as the single writer, its state, records of the layers above |
//! | `decision` | §4.11 decide → seal → record → act → outcome: [`Recorded`], [`RunResult`], refusals made before the gate |
//! | `metered` | §4.9 the two-phase metered path: a recorded reservation ([`Reserved`]), then the charge that settles it |
//! | `revocation` | §4.3 revocations admitted with their feed marker, and the `known_through` marker |
//! | `steering` | §4.7 amendments (soft revoke) admitted and recorded |
//! | `channel` | §4.5 budget-channel statements: a peer's admitted, this point's own issued |
//! | `replay` | §8.1 replay on open: every record re-verified and re-applied, [`ReplayReport`], [`Unresolved`] |

use std::collections::HashMap;
use std::path::Path;

use jcp::cbor::ContentId;
use jcp::decision::Gate;
use jcp::grant::SignedGrant;
use jcp::identity::{Did, Keypair};

use crate::cose::Position;
use crate::error::Error;
use crate::record;
use crate::stream::RecordKind;
use crate::writer::{Durability, StreamWriter};

mod channel;
mod decision;
mod metered;
mod replay;
mod revocation;
mod steering;

pub use decision::{Recorded, RunResult};
use metered::Held;
pub use metered::Reserved;
use replay::Replay;
pub use replay::{ReplayReport, Unresolved};

/// A gate bound to its stream: one writer, decisions recorded before actions.
#[derive(Debug)]
pub struct DurableGate {
    gate: Gate,
    writer: StreamWriter,
    steward: Keypair,
    steward_did: Did,
    next_seq: u64,
    known_through: Option<u64>,
    pending: replay::Pending,
    grants: HashMap<ContentId, SignedGrant>,
    /// Reservations recorded by [`DurableGate::authorize`], not yet settled.
    held: HashMap<ContentId, Held>,
}

impl DurableGate {
    /// Opens the stream at `path` as its single writer (§4.11), replays it
    /// through `gate` (configured with trust roots and floors, no spend) and
    /// returns the enforcement point ready to decide, with what replay found.
    pub fn open(path: &Path, steward: Keypair, gate: Gate) -> Result<(Self, ReplayReport), Error> {
        Self::open_with(path, steward, gate, Durability::SyncEachRecord)
    }

    /// [`DurableGate::open`] with an explicit durability (see [`Durability`]).
    pub fn open_with(
        path: &Path,
        steward: Keypair,
        gate: Gate,
        durability: Durability,
    ) -> Result<(Self, ReplayReport), Error> {
        Self::open_with_records(path, steward, gate, durability, &mut |_, _, _| {})
    }

    /// [`DurableGate::open_with`], showing every record to `extra` (offset,
    /// kind, payload; in stream order, before the gate replays it), so the
    /// layers above can read their own records ([`RecordKind::Request`],
    /// [`RecordKind::Closing`]) and pair them with the gate's.
    pub fn open_with_records(
        path: &Path,
        steward: Keypair,
        gate: Gate,
        durability: Durability,
        extra: &mut dyn FnMut(u64, RecordKind, &[u8]),
    ) -> Result<(Self, ReplayReport), Error> {
        let steward_did = steward.did();
        // §4.5: the point's identity, which a shard's `PointIs` names, is
        // the key that seals its receipts (so the audit can check it).
        let mut gate = gate;
        gate.set_point(steward_did);
        let mut st = Replay::new(gate, steward_did, extra);
        let (writer, torn) = StreamWriter::open(path, durability, |item| st.visit(item))?;
        let replayed = st.finish(torn);
        let me = Self {
            gate: replayed.gate,
            writer,
            steward,
            steward_did,
            next_seq: replayed.max_seq.map_or(0, |s| s.saturating_add(1)),
            known_through: replayed.report.known_through,
            pending: replayed.pending,
            grants: replayed.grants,
            held: HashMap::new(),
        };
        Ok((me, replayed.report))
    }

    /// The gate (its spend is the replayed spend plus what was decided since).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The gate, mutably, for configuration (trust roots, floors). Decisions
    /// must go through [`DurableGate::decide`] so they are recorded.
    pub fn gate_config(&mut self) -> &mut Gate {
        &mut self.gate
    }

    /// The writer (for its sync count and length).
    pub fn writer(&self) -> &StreamWriter {
        &self.writer
    }

    /// Fault injection for tests: the next record this point writes fails
    /// as a full disk would (see [`StreamWriter::fail_next_append_for_tests`]).
    #[doc(hidden)]
    pub fn fail_next_append_for_tests(&mut self) {
        self.writer.fail_next_append_for_tests();
    }

    /// Fault injection for tests: the next write of gathered records fails
    /// part way (see [`StreamWriter::fail_next_flush_for_tests`]).
    #[doc(hidden)]
    pub fn fail_next_flush_for_tests(&mut self) {
        self.writer.fail_next_flush_for_tests();
    }

    /// Fault injection for tests: `ok` more records are written, the one
    /// after fails (see [`StreamWriter::fail_append_after_for_tests`]).
    #[doc(hidden)]
    pub fn fail_append_after_for_tests(&mut self, ok: u64) {
        self.writer.fail_append_after_for_tests(ok);
    }

    /// This enforcement point's identity.
    pub fn steward(&self) -> Did {
        self.steward_did
    }

    /// The recorded decision `receipt` names, while its outcome is not
    /// recorded.
    pub fn pending_of(&self, receipt: &ContentId) -> Option<Unresolved> {
        self.pending.unresolved(receipt, self.steward_did)
    }

    /// Decisions recorded whose outcome is not yet recorded.
    pub fn pending(&self) -> impl Iterator<Item = Unresolved> + '_ {
        self.pending.all(self.steward_did)
    }

    /// How many recorded allows await their outcome (each held in memory,
    /// under 100 bytes, until it is recorded).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    fn position(&mut self) -> Position {
        let seq = self.next_seq;
        self.next_seq += 1;
        Position { seq: Some(seq), known_through: self.known_through }
    }

    /// Records a grant in the stream so an auditor can read its budget,
    /// ceiling and parent (the grant is self-authenticating).
    pub fn record_grant(&mut self, grant: &SignedGrant) -> Result<u64, Error> {
        let at = self.writer.append(RecordKind::Grant, &grant.to_bytes())?;
        self.grants.insert(grant.id(), grant.clone());
        Ok(at)
    }

    /// Under [`Durability::GroupCommit`]: makes every record appended so far
    /// durable with one sync. Nothing decided since the last commit may be
    /// acted on or answered before this returns `Ok`.
    pub fn commit(&mut self) -> Result<(), Error> {
        self.writer.commit()
    }

    /// Under [`Durability::GroupCommit`]: writes the records gathered since
    /// the last flush to the file in one write, not yet durable (a sync of
    /// the file, on any handle, makes them so: what an endpoint whose syncs
    /// run on another thread does). See [`StreamWriter::flush`].
    pub fn flush(&mut self) -> Result<(), Error> {
        self.writer.flush()
    }

    /// Appends a record of a layer above (a wire request, a closing
    /// record) to the stream; durable at the next commit (or at once under
    /// [`Durability::SyncEachRecord`]). Returns its offset.
    pub fn append_record(&mut self, kind: RecordKind, payload: &[u8]) -> Result<u64, Error> {
        match kind {
            RecordKind::Request | RecordKind::Closing => self.writer.append(kind, payload),
            other => Err(Error::Invalid {
                field: "kind",
                problem: format!("{other:?} records are written by the gate itself"),
            }),
        }
    }

    /// Seals `core` as a JCR-1 record of this steward at the next stream
    /// position and appends it as a closing record (§6.1 item 4). Returns
    /// the record's id (blake3 of its sealed bytes) and offset; durable at
    /// the next commit.
    pub fn record_closing(&mut self, core: &jcp::cbor::Value) -> Result<(ContentId, u64), Error> {
        let pos = self.position();
        let bytes = record::seal_core(core, pos, &self.steward);
        let at = self.writer.append(RecordKind::Closing, &bytes)?;
        Ok((ContentId::of_bytes(&bytes), at))
    }

    /// The next stream position (sequence number and `known_through`) for a
    /// sealed record of a layer above.
    pub fn next_position(&mut self) -> Position {
        self.position()
    }

    /// Syncs and releases the stream (the lock goes with it).
    pub fn close(self) -> Result<(), Error> {
        self.writer.close()
    }
}
