//! Replay on open (§8.1, §4.11; C14, C16): every record of the stream is
//! re-verified under this steward and re-applied to the gate in stream
//! order, so spend, revocations, amendments and channel statements are what
//! the stream proves; a refused record contributes nothing, and an allow
//! with no outcome is reported [`Unresolved`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use jcp::cbor::ContentId;
use jcp::decision::Gate;
use jcp::grant::SignedGrant;
use jcp::identity::Did;

use crate::cose::{DidCache, Position, Sealed};
use crate::error::Error;
use crate::receipt::OpenedReceipt;
use crate::record::{self, OutcomeRecord, Settlement};
use crate::stream::{Fault, Item, Record, RecordKind};
use crate::writer::TornCut;

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
/// An allowed decision awaiting its outcome, as a point holds it: its
/// holder shared (one parsed did per holder) and no steward (a point holds
/// only its own decisions). Under 100 bytes, where an [`Unresolved`] is
/// over 500 (two parsed dids): a point whose callers never report outcomes
/// holds one per allow.
#[derive(Debug)]
pub(super) struct Awaiting {
    pub(super) offset: u64,
    pub(super) grant_id: ContentId,
    pub(super) holder: Arc<Did>,
    pub(super) action: Box<str>,
    pub(super) cost_uj: u64,
}

/// Allowed decisions with no recorded outcome yet, by receipt id, and the
/// parsed dids of their holders (a point meets few).
#[derive(Debug, Default)]
pub(super) struct Pending {
    by_receipt: HashMap<ContentId, Awaiting>,
    holders: HashMap<Did, Arc<Did>>,
}

impl Pending {
    /// Holds `receipt`'s allow until its outcome is recorded.
    pub(super) fn insert(&mut self, receipt: ContentId, u: Unresolved) {
        let holder = self.holders.entry(u.holder).or_insert_with(|| Arc::new(u.holder)).clone();
        let a =
            Awaiting { offset: u.offset, grant_id: u.grant_id, holder, action: u.action.into(), cost_uj: u.cost_uj };
        self.by_receipt.insert(receipt, a);
    }

    /// The allow `receipt` names, while it awaits its outcome.
    pub(super) fn get(&self, receipt: &ContentId) -> Option<&Awaiting> {
        self.by_receipt.get(receipt)
    }

    /// Whether `receipt`'s allow awaits its outcome.
    pub(super) fn contains_key(&self, receipt: &ContentId) -> bool {
        self.by_receipt.contains_key(receipt)
    }

    /// Resolves `receipt`'s allow; whether it was awaiting.
    pub(super) fn remove(&mut self, receipt: &ContentId) -> bool {
        self.by_receipt.remove(receipt).is_some()
    }

    /// How many allows await their outcome.
    pub(super) fn len(&self) -> usize {
        self.by_receipt.len()
    }

    /// `receipt`'s allow as the report states it, recorded by `steward`.
    pub(super) fn unresolved(&self, receipt: &ContentId, steward: Did) -> Option<Unresolved> {
        let a = self.by_receipt.get(receipt)?;
        Some(Self::spell(*receipt, a, steward))
    }

    /// Every allow awaiting its outcome, as the report states it.
    pub(super) fn all(&self, steward: Did) -> impl Iterator<Item = Unresolved> + '_ {
        self.by_receipt.iter().map(move |(r, a)| Self::spell(*r, a, steward))
    }

    fn spell(receipt: ContentId, a: &Awaiting, steward: Did) -> Unresolved {
        Unresolved {
            receipt,
            offset: a.offset,
            grant_id: a.grant_id,
            holder: *a.holder,
            steward,
            action: a.action.to_string(),
            cost_uj: a.cost_uj,
        }
    }
}

/// The replay of one stream in progress: the gate re-applied record by
/// record, and what the point will hold once it is done.
pub(super) struct Replay<'a> {
    gate: Gate,
    report: ReplayReport,
    dids: DidCache,
    me: Did,
    max_seq: Option<u64>,
    pending: Pending,
    grants: HashMap<ContentId, SignedGrant>,
    seen: HashSet<ContentId>,
    /// Ids of refused receipts: their outcomes are not orphans.
    refused: HashSet<ContentId>,
    /// Where records of the layers above go.
    extra: &'a mut dyn FnMut(u64, RecordKind, &[u8]),
}

/// What a finished replay hands the point it opens.
pub(super) struct Replayed {
    /// The gate, its spend the stream's.
    pub(super) gate: Gate,
    /// What replay found (torn tail and unresolved decisions included).
    pub(super) report: ReplayReport,
    /// The largest `seq` recorded (the next record takes the one after).
    pub(super) max_seq: Option<u64>,
    /// Allowed decisions with no recorded outcome yet.
    pub(super) pending: Pending,
    /// The grants the stream records.
    pub(super) grants: HashMap<ContentId, SignedGrant>,
}

impl<'a> Replay<'a> {
    /// A replay of `me`'s stream into `gate` (configured, no spend); every
    /// record is shown to `extra` first.
    pub(super) fn new(gate: Gate, me: Did, extra: &'a mut dyn FnMut(u64, RecordKind, &[u8])) -> Self {
        Self {
            gate,
            report: ReplayReport::default(),
            dids: DidCache::new(),
            me,
            max_seq: None,
            pending: Pending::default(),
            grants: HashMap::new(),
            seen: HashSet::new(),
            refused: HashSet::new(),
            extra,
        }
    }

    /// The replay's result, with the torn tail the writer cut and the
    /// unresolved decisions in stream order.
    pub(super) fn finish(self, torn: Option<TornCut>) -> Replayed {
        let Self { gate, mut report, max_seq, pending, grants, me: self_me, .. } = self;
        report.torn_cut = torn;
        let mut unresolved: Vec<Unresolved> = pending.all(self_me).collect();
        unresolved.sort_by_key(|u| u.offset);
        report.unresolved = unresolved;
        Replayed { gate, report, max_seq, pending, grants }
    }

    /// One item of the stream: a framing fault is noted; a record is shown
    /// to the layers above, then replayed by its kind.
    pub(super) fn visit(&mut self, item: &Item) {
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
            RecordKind::Grant => self.grant(r),
            RecordKind::Receipt => self.receipt(r),
            RecordKind::Outcome => self.outcome(r),
            // Records of the layers above (the wire endpoint's admitted
            // requests and closing records, §11, §6.1): theirs to read.
            RecordKind::Request | RecordKind::Closing => {}
            RecordKind::Statement => self.statement(r.offset, &r.payload),
            RecordKind::Amendment => self.amendment(r),
            RecordKind::Revocation => self.revocation(r),
        }
    }

    /// A grant record (§4): kept, if its signature holds, for the
    /// revocations that name it.
    fn grant(&mut self, r: &Record) {
        match SignedGrant::from_bytes(&r.payload) {
            Ok(g) if g.verify_signature() => {
                // §4.5: a shard bound here, recorded at its first allow,
                // is this point's shard of its parent again.
                if let (Some(parent), Some(p)) = (g.grant().parent, g.grant().bound_point()) {
                    if *p == self.me {
                        self.gate.note_shard(parent, g.id());
                    }
                }
                self.grants.insert(g.id(), g);
            }
            Ok(_) => self.report.reject(r.offset, "bad-signature"),
            Err(e) => self.report.reject(r.offset, e.code()),
        }
    }

    /// A decision receipt (§8, C14): verified under this steward, once; an
    /// allow's debits re-applied, leaf and ancestors alike (C16), and the
    /// decision pending until its outcome is read.
    fn receipt(&mut self, r: &Record) {
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
            // Verified under this steward: `c.steward` is `self.me`.
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

    /// An outcome record (§4.11): an outcome resolves its pending decision
    /// (one naming no recorded decision is an orphan); a settlement takes a
    /// reservation back.
    fn outcome(&mut self, r: &Record) {
        match self.open_own(&r.payload, crate::open::open_outcome_record) {
            Ok(OutcomeRecord::Outcome(o)) => {
                if !self.pending.remove(&o.receipt) && !self.refused.contains(&o.receipt) {
                    self.report.reject(r.offset, "orphan-outcome");
                }
            }
            Ok(OutcomeRecord::Settlement(st)) => self.settle(r.offset, &st),
            Err(e) => self.report.reject(r.offset, e.code()),
        }
    }

    /// An amendment notice (§4.7): re-admitted as it was admitted.
    fn amendment(&mut self, r: &Record) {
        match self.open_own(&r.payload, record::open_amendment) {
            Ok(n) => {
                if let Err(e) = self.gate.admit_amendment(&n.steered, &n.checkpoint, &n.amendment, &n.continuation) {
                    self.report.reject(r.offset, e.code());
                }
            }
            Err(e) => self.report.reject(r.offset, e.code()),
        }
    }

    /// A revocation notice (§4.3): re-admitted against the grant recorded
    /// before it (a revocation of a grant the stream does not hold is refused).
    fn revocation(&mut self, r: &Record) {
        match self.open_own(&r.payload, record::open_revocation) {
            Ok(n) => {
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
        match self.open_own(payload, record::open_statement) {
            Ok(n) => {
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

    /// Opens a sealed record of the gate's with `open`, checks that this
    /// steward sealed it (signature included), and notes its stream position.
    fn open_own<T>(
        &mut self,
        payload: &[u8],
        open: impl FnOnce(&[u8], &mut DidCache) -> Result<(T, Sealed), Error>,
    ) -> Result<T, Error> {
        let (item, sealed) = open(payload, &mut self.dids)?;
        record::verify_sealed(&sealed, Some(&self.me))?;
        self.note_position(sealed.position);
        Ok(item)
    }

    fn note_position(&mut self, p: Position) {
        if let Some(s) = p.seq {
            self.max_seq = Some(self.max_seq.map_or(s, |m| m.max(s)));
        }
        if let Some(k) = p.known_through {
            self.report.known_through = Some(self.report.known_through.map_or(k, |m| m.max(k)));
        }
    }
}

#[cfg(test)]
mod tests {
    use jcp::identity::Keypair;

    use super::*;

    fn did(n: u8) -> Did {
        Keypair::from_seed([n; 32]).unwrap().did()
    }

    #[test]
    fn s4_11_an_allow_awaiting_its_outcome_is_held_small_and_reported_whole() {
        // The memory a point holds per allow whose outcome is not yet
        // recorded (one per allow when callers never report): the entry,
        // not two parsed dids.
        assert!(std::mem::size_of::<Awaiting>() < 100, "{}", std::mem::size_of::<Awaiting>());
        assert!(std::mem::size_of::<Unresolved>() > 500);
        let mut p = Pending::default();
        let steward = did(9);
        let u = |n: u8, holder: Did| Unresolved {
            receipt: ContentId::of_bytes(&[n]),
            offset: u64::from(n) * 100,
            grant_id: ContentId::of_bytes(b"grant"),
            holder,
            steward,
            action: format!("action {n}"),
            cost_uj: u64::from(n),
        };
        for (n, h) in [(1, did(1)), (2, did(2)), (3, did(1))] {
            p.insert(u(n, h).receipt, u(n, h));
        }
        assert_eq!((p.len(), p.holders.len()), (3, 2), "one parsed did per holder");
        let one = ContentId::of_bytes(&[1]);
        assert_eq!(p.unresolved(&one, steward), Some(u(1, did(1))), "reported as it was recorded");
        let mut all: Vec<Unresolved> = p.all(steward).collect();
        all.sort_by_key(|x| x.offset);
        assert_eq!(all, [u(1, did(1)), u(2, did(2)), u(3, did(1))]);
        assert!(p.remove(&one) && !p.remove(&one) && !p.contains_key(&one));
        assert_eq!((p.len(), p.unresolved(&one, steward)), (2, None));
    }
}
