//! The durable enforcement point (§4.11, §8.1): a [`Gate`] whose every
//! decision is sealed and recorded — and made durable — **before** the
//! action runs, whose outcome is recorded after, and which on open
//! re-establishes spend by **replaying its own verified receipts through the
//! gate** before it decides anything new (C14, C16).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use jcp::cbor::ContentId;
use jcp::decision::{Authorization, Decision, Gate, Reason, Request, Verdict};
use jcp::grant::SignedGrant;
use jcp::identity::{Did, Keypair};
use jcp::revocation::SignedRevocation;

use crate::cose::{DidCache, Position};
use crate::error::Error;
use crate::receipt::{OpenedReceipt, ReceiptCore};
use crate::record::{self, Outcome, OutcomeRecord, OutcomeStatus, RevocationNotice, Settlement};
use crate::stream::{Fault, Item, RecordKind};
use crate::writer::{Durability, StreamWriter, TornCut};

/// A decision recorded before its action ran, and not yet settled: on
/// replay, "unresolved" — whether the action took effect is not knowable
/// from the record; only its holder knows (§4.11).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unresolved {
    /// The decision receipt's id.
    pub receipt: ContentId,
    /// Byte offset of the receipt record.
    pub offset: u64,
    /// The grant decided against.
    pub grant_id: ContentId,
    /// The party that held the authority and ran the action.
    pub holder: Did,
    /// The enforcement point that recorded it.
    pub steward: Did,
    /// The action.
    pub action: String,
    /// Its debit, which stays debited.
    pub cost_uj: u64,
}

/// What replay found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReplayReport {
    /// Receipts that verified under this steward and were replayed.
    pub verified: u64,
    /// Of those, allows whose debits were re-applied.
    pub replayed_allows: u64,
    /// Records refused (bad signature, wrong steward, non-canonical, ...),
    /// counted by code: they contribute nothing.
    pub rejected: BTreeMap<&'static str, u64>,
    /// Each refused record: offset and code.
    pub rejected_at: Vec<(u64, &'static str)>,
    /// Framing faults met while reading.
    pub faults: Vec<Fault>,
    /// A torn tail that was cut before appending.
    pub torn_cut: Option<TornCut>,
    /// Allowed decisions with no recorded outcome.
    pub unresolved: Vec<Unresolved>,
    /// The largest `known_through` marker found.
    pub known_through: Option<u64>,
    /// Reservations of the metered path settled by their charge's receipt
    /// (their debit taken back, the charge's kept).
    pub settlements: u64,
}

impl ReplayReport {
    fn reject(&mut self, offset: u64, code: &'static str) {
        *self.rejected.entry(code).or_default() += 1;
        self.rejected_at.push((offset, code));
    }

    /// Total refused records.
    pub fn rejected_total(&self) -> u64 {
        self.rejected.values().sum()
    }
}

/// A decision that was sealed and recorded.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The gate's decision.
    pub decision: Decision,
    /// The receipt's id (what an outcome names).
    pub receipt: ContentId,
    /// Byte offset of the receipt record.
    pub offset: u64,
    /// The sealed receipt's bytes (what a wire response carries).
    pub sealed: Vec<u8>,
}

/// Phase one of the metered path, recorded (§4.9, §4.11): the gate's
/// authorization and the reservation receipt that holds the debit until
/// [`DurableGate::charge`] settles it. If the point stops before that, the
/// reservation is what replay finds: an allow with no outcome (unresolved,
/// naming the holder) whose held debit stays debited.
#[derive(Debug)]
pub struct Reserved {
    /// Phase one's token (what the charge presents to the gate).
    pub auth: Authorization,
    /// The reservation receipt: an allow of what phase one holds
    /// ([`Gate::reservation`]), sealed and recorded.
    pub reservation: Recorded,
}

/// A reservation recorded and not yet settled: what its settlement takes back.
#[derive(Debug)]
struct Held {
    bytes: Vec<u8>,
    chain_ids: Vec<ContentId>,
    uj: u64,
    minor: u64,
    tainted: bool,
}

/// What [`DurableGate::run`] returns.
#[derive(Debug)]
pub enum RunResult<T, E> {
    /// Denied: the action did not run (the deny receipt is recorded).
    Denied(Recorded),
    /// Allowed; the action ran and its outcome is recorded.
    Ran(Recorded, Result<T, E>),
}

/// A gate bound to its stream: one writer, decisions recorded before actions.
#[derive(Debug)]
pub struct DurableGate {
    gate: Gate,
    writer: StreamWriter,
    steward: Keypair,
    steward_did: Did,
    next_seq: u64,
    known_through: Option<u64>,
    pending: HashMap<ContentId, Unresolved>,
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
        let mut st = Replay {
            gate,
            report: ReplayReport::default(),
            dids: DidCache::new(),
            me: steward_did,
            max_seq: None,
            pending: HashMap::new(),
            grants: HashMap::new(),
            seen: HashSet::new(),
            refused: HashSet::new(),
            extra,
        };
        let (writer, torn) = StreamWriter::open(path, durability, |item| st.visit(item))?;
        let Replay { gate, mut report, max_seq, pending, grants, .. } = st;
        report.torn_cut = torn;
        let mut unresolved: Vec<Unresolved> = pending.values().cloned().collect();
        unresolved.sort_by_key(|u| u.offset);
        report.unresolved = unresolved;
        let me = Self {
            gate,
            writer,
            steward,
            steward_did,
            next_seq: max_seq.map_or(0, |s| s.saturating_add(1)),
            known_through: report.known_through,
            pending,
            grants,
            held: HashMap::new(),
        };
        Ok((me, report))
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
    pub fn pending_of(&self, receipt: &ContentId) -> Option<&Unresolved> {
        self.pending.get(receipt)
    }

    /// Decisions recorded whose outcome is not yet recorded.
    pub fn pending(&self) -> impl Iterator<Item = &Unresolved> {
        self.pending.values()
    }

    /// The revocation-knowledge marker this point states (§4.3).
    pub fn known_through(&self) -> Option<u64> {
        self.known_through
    }

    /// States how current this point's revocation knowledge is (§4.3). The
    /// marker is monotonic: a smaller one is refused.
    pub fn set_known_through(&mut self, marker: u64) -> Result<(), Error> {
        if let Some(old) = self.known_through {
            if marker < old {
                return Err(Error::MarkerRegressed { old, new: marker });
            }
        }
        self.known_through = Some(marker);
        Ok(())
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

    /// Admits a revocation (authority checked by the gate, §4.3) and records
    /// the notice with the feed marker at which it was issued. Advances this
    /// point's `known_through` to at least `marker`.
    pub fn admit_revocation(&mut self, rev: &SignedRevocation, grant: &SignedGrant, marker: u64) -> Result<u64, Error> {
        // Authority first (nothing changes for a forged one), then the
        // record, then the gate: recorded before applied (§11).
        rev.check_authority(grant).map_err(Error::Revocation)?;
        // Replay must be able to re-admit it: the grant goes in the stream too.
        if !self.grants.contains_key(&grant.id()) {
            self.record_grant(grant)?;
        }
        let before = self.known_through;
        if self.known_through.is_none_or(|k| k < marker) {
            self.known_through = Some(marker);
        }
        let notice = RevocationNotice { revocation: rev.clone(), marker, steward: self.steward_did };
        let pos = self.position();
        let appended = record::seal_core(&notice.to_value(), pos, &self.steward)
            .map_err(Error::from)
            .and_then(|bytes| self.writer.append(RecordKind::Revocation, &bytes));
        let at = match appended {
            Ok(at) => at,
            Err(e) => {
                // Not recorded: not applied, and the marker does not move.
                self.known_through = before;
                return Err(e);
            }
        };
        self.gate.admit_revocation(rev, grant).map_err(Error::Revocation)?;
        Ok(at)
    }

    /// Admits an amendment (§4.7 soft revoke): checked against the gate
    /// without changing it, recorded as a sealed amendment notice, then
    /// applied — the steered grant is superseded at this point. Replay
    /// re-admits it. A refused amendment is neither recorded nor applied.
    pub fn admit_amendment(
        &mut self,
        steered: &SignedGrant,
        checkpoint: &jcp::steering::SignedCheckpoint,
        amendment: &jcp::steering::SignedAmendment,
        continuation: &SignedGrant,
    ) -> Result<u64, Error> {
        self.gate.check_amendment(steered, checkpoint, amendment, continuation).map_err(Error::AmendmentRefused)?;
        for g in [steered, continuation] {
            if !self.grants.contains_key(&g.id()) {
                self.record_grant(g)?;
            }
        }
        let notice = record::AmendmentNotice {
            steered: steered.clone(),
            checkpoint: checkpoint.clone(),
            amendment: amendment.clone(),
            continuation: continuation.clone(),
            steward: self.steward_did,
        };
        let pos = self.position();
        let bytes = record::seal_core(&notice.to_value(), pos, &self.steward)?;
        let at = self.writer.append(RecordKind::Amendment, &bytes)?;
        self.gate.admit_amendment(steered, checkpoint, amendment, continuation).map_err(Error::AmendmentRefused)?;
        Ok(at)
    }

    fn record_statement(&mut self, statement: &jcp::channel::SignedStatement) -> Result<u64, Error> {
        let notice = record::StatementNotice { statement: statement.clone(), steward: self.steward_did };
        let pos = self.position();
        let bytes = record::seal_core(&notice.to_value(), pos, &self.steward)?;
        self.writer.append(RecordKind::Statement, &bytes)
    }

    /// Admits a peer's budget-channel statement (§4.5): checked against the
    /// gate without changing it (signature, grant, membership, not stale,
    /// not regressing), recorded as a sealed statement notice, then applied
    /// — from then on the peer's settled spend counts against the grant's
    /// budget here. Replay re-admits it. A refused statement is neither
    /// recorded nor applied.
    pub fn admit_statement(&mut self, statement: &jcp::channel::SignedStatement) -> Result<u64, Error> {
        self.gate.check_statement(statement).map_err(Error::StatementRefused)?;
        let at = self.record_statement(statement)?;
        self.gate.admit_statement(statement).map_err(Error::StatementRefused)?;
        Ok(at)
    }

    /// This point's signed statement of its cumulative allowed spend on a
    /// channel grant (§4.5), signed with its point key. While its local
    /// spend is what its last statement stated, that statement is returned
    /// again (nothing recorded); otherwise a new one at the next `seq` is
    /// signed and recorded before it is returned, so a restart never signs
    /// a `seq` twice. The bool says whether it was recorded now.
    pub fn issue_statement(
        &mut self,
        grant_id: &ContentId,
        point: &Keypair,
    ) -> Result<(jcp::channel::SignedStatement, bool), Error> {
        let next = self.gate.next_statement(grant_id).map_err(Error::StatementRefused)?;
        let last = self.gate.channel(grant_id).and_then(|c| c.last_own().cloned());
        if let Some(last) = last.filter(|l| l.statement().spent_uj == next.spent_uj) {
            return Ok((last, false));
        }
        let signed = next.sign(point).map_err(Error::StatementRefused)?;
        // Checked as it will be applied (its point is this channel's).
        self.gate.check_own_statement(&signed).map_err(Error::StatementRefused)?;
        self.record_statement(&signed)?;
        self.gate.note_own_statement(&signed).map_err(Error::StatementRefused)?;
        Ok((signed, true))
    }

    fn record_decision(&mut self, decision: Decision, req: &Request<'_>) -> Result<Recorded, Error> {
        let core = ReceiptCore::from_decision(&decision, req, self.steward_did)?;
        let pos = self.position();
        let bytes = core.seal(pos, &self.steward)?;
        let receipt = ContentId::of_bytes(&bytes);
        // Durable before the caller may run the action (§4.11).
        let offset = self.writer.append(RecordKind::Receipt, &bytes)?;
        if decision.is_allow() {
            self.pending.insert(
                receipt,
                Unresolved {
                    receipt,
                    offset,
                    grant_id: core.grant_id,
                    holder: core.subject,
                    steward: self.steward_did,
                    action: core.action.clone(),
                    cost_uj: core.cost_uj,
                },
            );
        }
        Ok(Recorded { decision, receipt, offset, sealed: bytes })
    }

    /// A refusal made before the gate decides (§11: a stale or
    /// unauthenticated request, a continuation naming an unknown handle):
    /// a deny with `reason`, nothing debited, the leaf's ceiling and
    /// remainder as the gate holds them.
    pub fn refusal(&self, req: &Request<'_>, reason: Reason, detail: impl Into<String>) -> Decision {
        let chain_ids: Vec<ContentId> = req.chain.iter().map(SignedGrant::id).collect();
        let (budget_uj, budget_remaining_uj) = req.chain.last().map_or((0, 0), |g| {
            let b = g.grant().budget_uj;
            (b, b.saturating_sub(self.gate.spent(&g.id()).uj))
        });
        Decision {
            verdict: Verdict::Deny(reason),
            detail: detail.into(),
            chain_ids,
            debited_uj: 0,
            debited_minor: 0,
            budget_uj,
            budget_remaining_uj,
            breach: None,
        }
    }

    /// Seals and records a refusal made before the gate decides (see
    /// [`DurableGate::refusal`]): the refused request is evidence too.
    pub fn record_refusal(
        &mut self,
        req: &Request<'_>,
        reason: Reason,
        detail: impl Into<String>,
    ) -> Result<Recorded, Error> {
        let d = self.refusal(req, reason, detail);
        self.record_decision(d, req)
    }

    /// Seals a refusal WITHOUT recording it: only for `unrecorded` (§11),
    /// when the record cannot be written. Returns the decision and the
    /// sealed bytes.
    pub fn seal_unrecorded(
        &mut self,
        req: &Request<'_>,
        detail: impl Into<String>,
    ) -> Result<(Decision, Vec<u8>), Error> {
        let d = self.refusal(req, Reason::Unrecorded, detail);
        let core = ReceiptCore::from_decision(&d, req, self.steward_did)?;
        let pos = self.position();
        let bytes = core.seal(pos, &self.steward)?;
        Ok((d, bytes))
    }

    /// Decides (§7), seals the receipt (allow and deny alike, §8) and makes
    /// it durable. On allow the caller runs the action only after this
    /// returns, then calls [`DurableGate::complete`].
    pub fn decide(&mut self, req: &Request<'_>) -> Result<Recorded, Error> {
        let d = self.gate.decide(req);
        self.record_decision(d, req)
    }

    /// Phase one of the two-phase metered path (§4.9), recorded before the
    /// action runs (§4.11). A refusal is recorded as a deny receipt. On
    /// allow the point holds a **reservation** ([`Gate::reservation`]: the
    /// most the charge could debit without a breach — a `MaxCostUj` bound,
    /// else every link's remainder down to the smallest) and seals and
    /// records it as an allow receipt of that cost, graded `Estimator`: the
    /// action may run once this returns (after [`DurableGate::commit`]
    /// under group commit). A point that stops before the charge leaves that
    /// receipt with no outcome: replay reports it unresolved, naming the
    /// holder, and its held debit stays debited (fail closed). If the
    /// reservation cannot be recorded nothing is held and the error is
    /// returned: the action must not run.
    pub fn authorize(&mut self, req: &Request<'_>) -> Result<Result<Reserved, Recorded>, Error> {
        let auth = match self.gate.authorize(req) {
            Ok(a) => a,
            Err(d) => return self.record_decision(d, req).map(Err),
        };
        let cost = self.gate.reservation(req);
        let held_req = Request { cost: &cost, ..*req };
        let chain_ids: Vec<ContentId> = req.chain.iter().map(SignedGrant::id).collect();
        let (uj, minor) = (cost.energy.uj, cost.money.as_ref().map_or(0, |m| m.minor));
        let tainted = req.flow.is_some_and(|l| !l.is_bottom());
        self.gate.replay_debit(&chain_ids, uj, minor, tainted);
        let budget_uj = req.chain.last().map_or(0, |g| g.grant().budget_uj);
        let spent = chain_ids.last().map_or(0, |id| self.gate.spent(id).uj);
        let d = Decision {
            verdict: Verdict::Allow,
            detail: "reservation: phase one of the metered path holds this until the charge settles it".into(),
            chain_ids: chain_ids.clone(),
            debited_uj: uj,
            debited_minor: minor,
            budget_uj,
            budget_remaining_uj: budget_uj.saturating_sub(spent),
            breach: None,
        };
        match self.record_decision(d, &held_req) {
            Ok(rec) => {
                self.held.insert(rec.receipt, Held { bytes: rec.sealed.clone(), chain_ids, uj, minor, tainted });
                Ok(Ok(Reserved { auth, reservation: rec }))
            }
            Err(e) => {
                // Not recorded: not held, and the action must not run.
                self.gate.release(&chain_ids, uj, minor, tainted);
                Err(e)
            }
        }
    }

    /// Phase two (§4.9): charges the measured cost and records the allow
    /// receipt of the measured cost (a debit-point breach in its `breach`
    /// field), then a settlement record ([`Settlement`]) that releases the
    /// reservation. The breach is judged without the action's own hold;
    /// the receipt states the remainder as the record stands when it is
    /// written, the hold still in it (the settlement, the next record, takes
    /// it back), so replay and audit re-derive every stated figure. If the
    /// point stops between the two records, both debits stay: the
    /// reservation remains unresolved (fail closed, never lower).
    pub fn charge(&mut self, reserved: Reserved, req: &Request<'_>) -> Result<Recorded, Error> {
        let Reserved { auth, reservation } = reserved;
        let Some(h) = self.held.remove(&reservation.receipt) else {
            return Err(Error::OutcomeUnknown(format!(
                "no held reservation {} (never recorded here, already settled, or resolved by an outcome)",
                reservation.receipt
            )));
        };
        self.gate.release(&h.chain_ids, h.uj, h.minor, h.tainted);
        let charged = self.gate.charge(auth, req);
        self.gate.replay_debit(&h.chain_ids, h.uj, h.minor, h.tainted);
        let mut d = match charged {
            Ok(d) => d,
            Err(e) => {
                self.held.insert(reservation.receipt, h);
                return Err(Error::Invalid { field: "chain_ids", problem: e.to_string() });
            }
        };
        if let Some(leaf) = d.chain_ids.last() {
            d.budget_remaining_uj = d.budget_uj.saturating_sub(self.gate.spent(leaf).uj);
        }
        let rec = self.record_decision(d, req)?;
        let st = Settlement { reservation: h.bytes, settled_by: rec.receipt, steward: self.steward_did };
        let pos = self.position();
        let bytes = record::seal_core(&st.to_value(), pos, &self.steward)?;
        // Not recorded: the reservation stays held and unresolved.
        self.writer.append(RecordKind::Outcome, &bytes)?;
        self.gate.release(&h.chain_ids, h.uj, h.minor, h.tainted);
        self.pending.remove(&reservation.receipt);
        Ok(rec)
    }

    /// Records the outcome of an allowed action (durably).
    pub fn complete(&mut self, receipt: &ContentId, status: OutcomeStatus) -> Result<u64, Error> {
        if !self.pending.contains_key(receipt) {
            return Err(Error::OutcomeUnknown(format!(
                "no pending decision {receipt} (never recorded here, or already settled)"
            )));
        }
        let o = Outcome { receipt: *receipt, status, steward: self.steward_did };
        let pos = self.position();
        let bytes = record::seal_core(&o.to_value(), pos, &self.steward)?;
        let at = self.writer.append(RecordKind::Outcome, &bytes)?;
        self.pending.remove(receipt);
        // A reservation resolved by an outcome keeps its held debit and can
        // no longer be settled by a charge.
        self.held.remove(receipt);
        Ok(at)
    }

    /// Decide, record, run `action` only on allow, record its outcome.
    pub fn run<T, E>(
        &mut self,
        req: &Request<'_>,
        action: impl FnOnce() -> Result<T, E>,
    ) -> Result<RunResult<T, E>, Error> {
        let rec = self.decide(req)?;
        if !rec.decision.is_allow() {
            return Ok(RunResult::Denied(rec));
        }
        let out = action();
        let status = if out.is_ok() { OutcomeStatus::Completed } else { OutcomeStatus::Failed };
        self.complete(&rec.receipt, status)?;
        Ok(RunResult::Ran(rec, out))
    }

    /// Under [`Durability::GroupCommit`]: makes every record appended so far
    /// durable with one sync. Nothing decided since the last commit may be
    /// acted on or answered before this returns `Ok`.
    pub fn commit(&mut self) -> Result<(), Error> {
        self.writer.commit()
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
        let bytes = record::seal_core(core, pos, &self.steward)?;
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

struct Replay<'a> {
    gate: Gate,
    report: ReplayReport,
    dids: DidCache,
    me: Did,
    max_seq: Option<u64>,
    pending: HashMap<ContentId, Unresolved>,
    grants: HashMap<ContentId, SignedGrant>,
    seen: HashSet<ContentId>,
    /// Ids of refused receipts: their outcomes are not orphans.
    refused: HashSet<ContentId>,
    /// Where records of the layers above go.
    extra: &'a mut dyn FnMut(u64, RecordKind, &[u8]),
}

impl Replay<'_> {
    /// A settlement (§4.9, §4.11): the reservation it carries and the
    /// receipt that settles it must both be allows recorded earlier in this
    /// stream with no outcome yet, for the same grant and holder; then the
    /// reservation's debit is taken back and it is resolved. Anything else
    /// is refused and takes nothing back (fail closed).
    fn settle(&mut self, offset: u64, st: &Settlement) {
        let id = st.reservation_id();
        let matched = match (self.pending.get(&id), self.pending.get(&st.settled_by)) {
            (Some(a), Some(b)) => id != st.settled_by && a.grant_id == b.grant_id && a.holder == b.holder,
            _ => false,
        };
        if !matched {
            return self.report.reject(offset, "settlement-unmatched");
        }
        match st.open_reservation(&mut self.dids) {
            Ok(o) => {
                let c = &o.core;
                let minor = c.money.as_ref().map_or(0, |m| m.minor);
                self.gate.release(c.debited_ids(), c.cost_uj, minor, c.tainted);
                self.pending.remove(&id);
                self.report.settlements += 1;
            }
            Err(e) => self.report.reject(offset, e.code()),
        }
    }

    /// A budget-channel statement record (§4.5): re-admitted as it was
    /// admitted — this point's own statement as its own, a peer's as a
    /// peer's. One the channel refuses now is refused and applies nothing.
    fn statement(&mut self, offset: u64, payload: &[u8]) {
        let res = record::open_statement(payload, &mut self.dids)
            .and_then(|(n, s)| record::verify_sealed(&s, Some(&self.me)).map(|()| (n, s)));
        match res {
            Ok((n, s)) => {
                self.note_position(s.position);
                let st = &n.statement;
                let own = self.gate.channel(&st.statement().grant_id).is_some_and(|c| c.me() == st.statement().point);
                let applied = if own { self.gate.note_own_statement(st) } else { self.gate.admit_statement(st) };
                if let Err(e) = applied {
                    self.report.reject(offset, e.code());
                }
            }
            Err(e) => self.report.reject(offset, e.code()),
        }
    }

    fn note_position(&mut self, p: Position) {
        if let Some(s) = p.seq {
            self.max_seq = Some(self.max_seq.map_or(s, |m| m.max(s)));
        }
        if let Some(k) = p.known_through {
            self.report.known_through = Some(self.report.known_through.map_or(k, |m| m.max(k)));
        }
    }

    #[allow(clippy::too_many_lines)] // one arm per record kind
    fn visit(&mut self, item: &Item) {
        let r = match item {
            Item::Fault(f) => {
                self.report.faults.push(*f);
                return;
            }
            Item::Record(r) => r,
        };
        // Every record is shown to the layers above first, in stream order
        // (the wire endpoint pairs a request with the receipt after it).
        (self.extra)(r.offset, r.kind, &r.payload);
        match r.kind {
            RecordKind::Grant => match SignedGrant::from_bytes(&r.payload) {
                Ok(g) if g.verify_signature() => {
                    self.grants.insert(g.id(), g);
                }
                Ok(_) => self.report.reject(r.offset, "bad-signature"),
                Err(e) => self.report.reject(r.offset, e.code()),
            },
            RecordKind::Receipt => {
                let opened = OpenedReceipt::open(&r.payload, &mut self.dids);
                let o = match opened.and_then(|o| o.verify(Some(&self.me)).map(|()| o)) {
                    Ok(o) => o,
                    Err(e) => {
                        self.refused.insert(ContentId::of_bytes(&r.payload));
                        return self.report.reject(r.offset, e.code());
                    }
                };
                if !self.seen.insert(o.sealed.id) {
                    // The same receipt twice must not debit twice.
                    return self.report.reject(r.offset, "duplicate-record");
                }
                self.note_position(o.sealed.position);
                self.report.verified += 1;
                let c = &o.core;
                if c.is_allow() {
                    let minor = c.money.as_ref().map_or(0, |m| m.minor);
                    // Leaf and ancestor debits alike (C16).
                    self.gate.replay_debit(c.debited_ids(), c.cost_uj, minor, c.tainted);
                    self.report.replayed_allows += 1;
                    self.pending.insert(
                        o.sealed.id,
                        Unresolved {
                            receipt: o.sealed.id,
                            offset: r.offset,
                            grant_id: c.grant_id,
                            holder: c.subject,
                            steward: c.steward,
                            action: c.action.clone(),
                            cost_uj: c.cost_uj,
                        },
                    );
                }
            }
            RecordKind::Outcome => {
                let res = crate::open::open_outcome_record(&r.payload, &mut self.dids)
                    .and_then(|(o, s)| record::verify_sealed(&s, Some(&self.me)).map(|()| (o, s)));
                match res {
                    Ok((OutcomeRecord::Outcome(o), s)) => {
                        self.note_position(s.position);
                        if self.pending.remove(&o.receipt).is_none() && !self.refused.contains(&o.receipt) {
                            self.report.reject(r.offset, "orphan-outcome");
                        }
                    }
                    Ok((OutcomeRecord::Settlement(st), s)) => {
                        self.note_position(s.position);
                        self.settle(r.offset, &st);
                    }
                    Err(e) => self.report.reject(r.offset, e.code()),
                }
            }
            // Records of the layers above (the wire endpoint's admitted
            // requests and closing records, §11, §6.1): theirs to read.
            RecordKind::Request | RecordKind::Closing => {}
            RecordKind::Statement => self.statement(r.offset, &r.payload),
            RecordKind::Amendment => {
                let res = record::open_amendment(&r.payload, &mut self.dids)
                    .and_then(|(n, s)| record::verify_sealed(&s, Some(&self.me)).map(|()| (n, s)));
                match res {
                    Ok((n, s)) => {
                        self.note_position(s.position);
                        if let Err(e) =
                            self.gate.admit_amendment(&n.steered, &n.checkpoint, &n.amendment, &n.continuation)
                        {
                            self.report.reject(r.offset, e.code());
                        }
                    }
                    Err(e) => self.report.reject(r.offset, e.code()),
                }
            }
            RecordKind::Revocation => {
                let res = record::open_revocation(&r.payload, &mut self.dids)
                    .and_then(|(n, s)| record::verify_sealed(&s, Some(&self.me)).map(|()| (n, s)));
                match res {
                    Ok((n, s)) => {
                        self.note_position(s.position);
                        let gid = n.revocation.revocation().grant_id;
                        match self.grants.get(&gid) {
                            Some(g) => {
                                if let Err(e) = self.gate.admit_revocation(&n.revocation, g) {
                                    self.report.reject(r.offset, e.code());
                                }
                            }
                            None => self.report.reject(r.offset, "revocation-grant-unknown"),
                        }
                    }
                    Err(e) => self.report.reject(r.offset, e.code()),
                }
            }
        }
    }
}
