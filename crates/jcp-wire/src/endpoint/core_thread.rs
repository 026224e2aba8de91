//! The core thread: the record's single writer (§4.11). It owns the
//! [`DurableGate`] and decides requests in arrival order, taking them in
//! batches: each is decided and appended, then the batch goes to the group
//! commit, and the next batch is taken.

use std::collections::HashMap;
use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use jcp::cbor::ContentId;
use jcp::channel::{Ledger, SignedStatement};
use jcp::identity::{batch, Keypair};
use jcp_receipt::record::OutcomeStatus;
use jcp_receipt::runtime::DurableGate;
use tokio::sync::{mpsc, oneshot};

use super::config::Clock;
use super::continuation::Binding;
use super::decided_once::Remembered;
use super::decision::Answer;
use super::group_commit::Pending;
use super::stats::Stats;
use crate::message::{Feed, FeedAnswer, WireRequest};
use crate::metrics::WireMetrics;

/// §4.5: a point's signed statement, or the refusal to sign one.
pub(super) type StatementAnswer = Result<SignedStatement, FeedAnswer>;

/// A request's caller signature: checked, or still to be checked.
pub(super) enum Signed {
    /// Checked alone, or with the core's batch (one predicate, one
    /// verdict): whether it verified.
    Checked(bool),
    /// To be checked by the core with its batch: the bytes the caller
    /// signed (every field but `signature`, canonical).
    Unchecked(Vec<u8>),
}

/// What connection tasks and the endpoint's API ask of the core thread.
pub(super) enum Job {
    /// `bytes` are the request's canonical bytes (`req.to_bytes()`): the
    /// frame body it was decoded from, so the core does not encode it again.
    Decide {
        req: Box<WireRequest>,
        bytes: Vec<u8>,
        id: ContentId,
        signed: Signed,
        tx: oneshot::Sender<Answer>,
        /// When it was handed to the core (for the core-wait histogram).
        handed: Instant,
    },
    Feed {
        feed: Box<Feed>,
        tx: oneshot::Sender<FeedAnswer>,
    },
    Bind {
        handle: String,
        binding: Box<Binding>,
    },
    Close {
        handle: String,
        outcome: ContentId,
        status: &'static str,
        tx: oneshot::Sender<Option<ContentId>>,
    },
    Shutdown {
        tx: oneshot::Sender<Result<(), String>>,
    },
    /// §4.5: this point's signed statement on a channel grant.
    Statement {
        grant_id: ContentId,
        tx: oneshot::Sender<StatementAnswer>,
    },
    /// §4.3: the revocation-knowledge marker this point states now.
    KnownThrough {
        tx: oneshot::Sender<Option<u64>>,
    },
    /// §4.5: the channel's merged ledger as this point holds it.
    Ledger {
        grant_id: ContentId,
        tx: oneshot::Sender<Option<Ledger>>,
    },
    /// §11 relay mode: the call a reservation held has run; charge what
    /// the endpoint metered (§4.9 phase two), record the exchange's
    /// outcome, and add the joules to the handle's work (§6.1 item 4).
    Charge {
        reservation: ContentId,
        energy: jcp::energy::Energy,
        handle: Option<String>,
        status: OutcomeStatus,
        tx: oneshot::Sender<Charged>,
    },
    /// The endpoint behind the gate stopped mid-call: the reservation
    /// stays debited and unresolved (§4.11), never charged.
    Lost {
        reservation: ContentId,
        why: String,
    },
    /// The sync thread has handed batches back (their sync failed).
    Wake,
}

/// How jobs reach the core: the record's single writer either way.
pub(super) enum CoreLink {
    /// The core runs on a thread of its own, taking jobs in batches.
    Thread(mpsc::Sender<Job>),
    /// The core runs on the thread that hands it a job, one job a batch,
    /// under a lock ([`super::CoreMode::OnCaller`]); `None` once
    /// shut down.
    Caller(Box<std::sync::Mutex<Option<Core>>>),
}

/// The core has stopped: the job was not taken.
#[derive(Debug)]
pub(super) struct Stopped;

impl CoreLink {
    /// Hands `job` to the core. On the caller's thread it is decided,
    /// appended and synced before this returns (its answer already sent).
    pub(super) async fn send(&self, job: Job) -> Result<(), Stopped> {
        match self {
            CoreLink::Thread(tx) => tx.send(job).await.map_err(|_| Stopped),
            CoreLink::Caller(core) => {
                let mut slot = core.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let c = slot.as_mut().ok_or(Stopped)?;
                if let Some(tx) = c.run_batch(&mut vec![job]) {
                    let finished = slot.take().map_or(Ok(()), Core::finish);
                    let _ = tx.send(finished);
                }
                Ok(())
            }
        }
    }
}

/// A charge, recorded: the charge receipt; or why there is none (the
/// reservation then stays held and unresolved).
pub(super) type Charged = Result<jcp_receipt::runtime::Recorded, String>;

/// §11 relay mode: how allowed calls are reserved.
#[derive(Debug, Clone, Copy)]
pub(super) struct RelayMode {
    /// The operator's per-call ceiling, µJ, if any.
    pub(super) ceiling_uj: Option<u64>,
}

/// §11 relay mode: an allowed call's reservation, held until the metered
/// figure of its work is charged (§4.9), with what the charge re-decides.
pub(super) struct HeldCall {
    pub(super) reserved: jcp_receipt::runtime::Reserved,
    pub(super) req: Box<WireRequest>,
    /// The chain it was decided on (a continuation's: the bound one).
    pub(super) chain: Vec<jcp::grant::SignedGrant>,
}

impl Job {
    /// A decision job whose caller signature is still to be checked: the
    /// request and the bytes its caller signed.
    fn unchecked(&self) -> Option<(&WireRequest, &[u8])> {
        match self {
            Job::Decide { req, signed: Signed::Unchecked(m), .. } => Some((req, m)),
            _ => None,
        }
    }
}

/// Checks together the callers' signatures the batch's requests left
/// unchecked ([`Signed::Unchecked`]; §2, §11): one lone request alone, two
/// or more with [`batch::verify_batch`], and a batch that fails one by one
/// again, so each request gets its own answer and a bad signature refuses
/// no one else's request. Alone or batched, the predicate is the one
/// Ed25519 rule (`jcp::identity::ed25519`): the verdicts are the same.
pub(super) fn check_callers(batch: &mut [Job], stats: &Stats, metrics: &WireMetrics) {
    let unchecked: Vec<(&WireRequest, &[u8])> = batch.iter().filter_map(Job::unchecked).collect();
    let all_verify = unchecked.len() >= 2 && {
        let msgs: Vec<[&[u8]; 1]> = unchecked.iter().map(|(_, m)| [*m]).collect();
        let sigs: Vec<[u8; 64]> = unchecked.iter().map(|(r, _)| r.signature).collect();
        let keys: Vec<_> = unchecked.iter().map(|(r, _)| r.caller.verifying_key()).collect();
        let ok = batch::verify_batch(&msgs, &sigs, &keys);
        stats.signature_batches.fetch_add(1, Ordering::Relaxed);
        stats.signatures_batched.fetch_add(unchecked.len() as u64, Ordering::Relaxed);
        if !ok {
            stats.signature_batches_failed.fetch_add(1, Ordering::Relaxed);
        }
        metrics.signature_batch(unchecked.len() as u64, ok);
        ok
    };
    for job in batch.iter_mut() {
        if let Job::Decide { req, signed, .. } = job {
            if let Signed::Unchecked(m) = signed {
                *signed = Signed::Checked(all_verify || verify_alone(req, m, metrics));
            }
        }
    }
}

/// The one Ed25519 predicate on one caller's signature over what it signed.
pub(super) fn verify_alone(req: &WireRequest, signed: &[u8], metrics: &WireMetrics) -> bool {
    metrics.signature_alone();
    req.caller.verify(signed, &req.signature)
}

/// The core thread's state: the gate and its record, the memory of decided
/// requests, the continuation handles, and this point's channel keys.
pub(super) struct Core {
    pub(super) gate: DurableGate,
    pub(super) read: File,
    /// Hands appended batches to the sync thread (`None` once stopping).
    pub(super) syncer: Option<std::sync::mpsc::Sender<Pending>>,
    pub(super) sync_thread: Option<std::thread::JoinHandle<()>>,
    /// Unless [`super::CoreMode::GroupCommit`]: the handle this thread syncs
    /// each batch through itself (and no sync thread).
    pub(super) sync_here: Option<super::group_commit::Durable>,
    /// Batches whose sync failed, back from the sync thread.
    pub(super) unsynced: std::sync::mpsc::Receiver<(String, Pending)>,
    pub(super) table: Remembered,
    pub(super) handles: HashMap<String, Binding>,
    pub(super) window_s: u64,
    pub(super) clock: Clock,
    pub(super) failed: Option<String>,
    pub(super) stats: Arc<Stats>,
    /// §4.5: this point's key per channel grant.
    pub(super) point_keys: HashMap<ContentId, Keypair>,
    pub(super) metrics: Arc<WireMetrics>,
    /// §11 relay mode (a backend is behind the gate): allowed requests are
    /// reserved, the work is metered, and the metered figure is charged.
    pub(super) relay: Option<RelayMode>,
    /// Reservations awaiting their charge, by reservation receipt.
    pub(super) reserved: HashMap<ContentId, HeldCall>,
    /// Issue 34: how long the record may grow, and for whom.
    pub(super) record_limits: RecordLimits,
}

/// The record's high-water mark and limit (issue 34; [`super::Config`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RecordLimits {
    pub(super) high_water: Option<u64>,
    pub(super) max: Option<u64>,
    /// Whether the record was past the mark at the last look (each crossing is logged).
    pub(super) past_mark: bool,
    /// Whether reaching the limit was logged (once).
    pub(super) full_logged: bool,
}

impl Core {
    /// The spend now counted against each of `grants`, for the exposition.
    pub(super) fn note_spend(&self, grants: &[ContentId]) {
        for id in grants {
            self.metrics.spent(id, self.gate.gate().spent(id).uj);
        }
    }

    /// The endpoint's clock now (§11: time is the endpoint's).
    pub(super) fn now(&self) -> u64 {
        (self.clock)()
    }

    /// The record has failed: every later request is answered `unrecorded`.
    pub(super) fn fail(&mut self, why: String) {
        tracing::error!("the record failed; every later request is refused unrecorded: {why}");
        self.failed = Some(why);
    }

    /// Something could not be recorded. Only an I/O failure of the record
    /// fails it ([`Core::fail`]); any other error is `what`'s alone, logged
    /// as such, and the record goes on.
    pub(super) fn record_failed(&mut self, e: &jcp_receipt::Error, what: std::fmt::Arguments<'_>) {
        if matches!(e, jcp_receipt::Error::Io { .. }) {
            self.fail(e.to_string());
        } else {
            tracing::warn!(code = e.code(), "{what}: {e}");
        }
    }

    /// The core loop: take a batch, decide and append each, hand it to the
    /// sync thread (group commit: its answers leave once it is durable),
    /// take the next batch.
    pub(super) fn run(mut self, mut rx: mpsc::Receiver<Job>, batch_max: usize) {
        let mut batch: Vec<Job> = Vec::with_capacity(batch_max);
        loop {
            self.take_unsynced();
            let Some(first) = rx.blocking_recv() else { break };
            batch.push(first);
            while batch.len() < batch_max {
                match rx.try_recv() {
                    Ok(j) => batch.push(j),
                    Err(_) => break,
                }
            }
            if let Some(tx) = self.run_batch(&mut batch) {
                let _ = tx.send(self.finish());
                return;
            }
        }
        if let Err(e) = self.finish() {
            tracing::error!("closing the record failed: {e}");
        }
    }

    /// Decides and appends the jobs of one batch, then commits it (its
    /// answers leave once it is durable). A shutdown among them is
    /// returned: the caller finishes the record after the batch.
    pub(super) fn run_batch(&mut self, batch: &mut Vec<Job>) -> Option<oneshot::Sender<Result<(), String>>> {
        // A failed sync is known before this batch is decided.
        self.take_unsynced();
        self.check_callers(batch);
        let mut p = Pending::default();
        let mut shutdown = None;
        for job in batch.drain(..) {
            if let Job::Shutdown { tx } = job {
                shutdown = Some(tx);
            } else {
                self.run_job(job, &mut p);
            }
        }
        // Counted before the batch's answers can leave, so a caller
        // that has its answer reads counts that include it.
        self.stats.remembered_bytes.store(self.table.bytes(), Ordering::Relaxed);
        self.stats.unresolved.store(self.gate.pending_len() as u64, Ordering::Relaxed);
        // Group commit: the batch is durable before anything leaves.
        self.commit(p);
        shutdown
    }

    /// Checks the callers' signatures still to be checked in `batch`
    /// ([`check_callers`]).
    pub(super) fn check_callers(&self, batch: &mut [Job]) {
        check_callers(batch, &self.stats, &self.metrics);
    }

    /// Runs one job of a batch; what must wait for the batch's sync goes
    /// into `p`.
    pub(super) fn run_job(&mut self, job: Job, p: &mut Pending) {
        match job {
            Job::Decide { req, bytes, id, signed, tx, handed } => {
                self.metrics.core_waited(handed.elapsed());
                let signed_ok = match signed {
                    Signed::Checked(ok) => ok,
                    Signed::Unchecked(msg) => verify_alone(&req, &msg, &self.metrics),
                };
                let a = self.decide(&req, &bytes, id, signed_ok);
                p.decided.push((tx, a, req, Instant::now()));
            }
            Job::Feed { feed, tx } => {
                let a = self.feed(&feed);
                p.fed.push((tx, a));
            }
            Job::Bind { handle, binding } => {
                self.handles.insert(handle, *binding);
            }
            Job::Close { handle, outcome, status, tx } => {
                let c = self.close(&handle, outcome, status);
                p.closed.push((tx, c));
            }
            Job::Statement { grant_id, tx } => {
                let a = self.statement(&grant_id);
                p.stated.push((tx, a));
            }
            Job::KnownThrough { tx } => {
                let _ = tx.send(self.gate.known_through());
            }
            Job::Ledger { grant_id, tx } => {
                let _ = tx.send(self.gate.gate().channel(&grant_id).map(|c| c.channel().ledger()));
            }
            Job::Charge { reservation, energy, handle, status, tx } => {
                let c = self.charge(reservation, energy, handle.as_deref(), status);
                p.charged.push((tx, c));
            }
            Job::Lost { reservation, why } => self.lost(reservation, &why),
            Job::Shutdown { .. } | Job::Wake => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {

    use jcp::decision::{Gate, Reason};

    use super::super::decided_once::identify;
    use super::super::tests::{config_in, decision, grant, idle_core, key, request};
    use super::super::{CallerSignatures, Endpoint};
    use super::*;
    use crate::message::WireDecision;

    /// A decision job as a connection task hands it over when signatures
    /// are checked in batches: the caller's signature not yet checked.
    fn unchecked(req: &WireRequest) -> (Job, oneshot::Receiver<Answer>) {
        let bytes = req.to_bytes();
        let (id, signed) = identify(req, &bytes);
        let (tx, rx) = oneshot::channel();
        let job = Job::Decide {
            req: Box::new(req.clone()),
            bytes,
            id,
            signed: Signed::Unchecked(signed),
            tx,
            handed: Instant::now(),
        };
        (job, rx)
    }

    /// Runs `reqs` through `core` as one batch, as `Core::run` does: the
    /// callers checked together, each decided, the batch committed.
    fn one_batch(core: &mut Core, reqs: &[WireRequest]) -> Vec<WireDecision> {
        let (mut jobs, rxs): (Vec<Job>, Vec<_>) = reqs.iter().map(unchecked).unzip();
        core.check_callers(&mut jobs);
        let mut p = Pending::default();
        for j in jobs {
            core.run_job(j, &mut p);
        }
        core.commit(p);
        rxs.into_iter().map(|rx| decision(&rx.blocking_recv().unwrap().framed)).collect()
    }

    /// `req` re-signed: by another key (a thief naming the agent), or by
    /// the agent itself with a small-order part in `R` (`r`, `torsion`).
    fn thief(req: &WireRequest) -> WireRequest {
        WireRequest { signature: key(66).sign(&req.signed_bytes()), ..req.clone() }
    }
    fn crafted(req: &WireRequest, r: u64, torsion: usize) -> WireRequest {
        WireRequest {
            signature: key(2).sign_with_small_order_r_for_tests(&req.signed_bytes(), r, torsion),
            ..req.clone()
        }
    }

    #[test]
    fn c13_the_callers_of_one_batch_are_checked_together_and_each_is_decided() {
        let dir = tempfile::tempdir().unwrap();
        let mut core = idle_core(dir.path());
        let g = grant();
        let reqs: Vec<_> = (0..5u8).map(|i| request(&g, &[i])).collect();
        let ds = one_batch(&mut core, &reqs);
        assert!(ds.iter().all(WireDecision::is_allow), "{ds:?}");
        assert_eq!(ds.last().unwrap().budget_remaining_uj, 1000 - 5 * 10);
        let st = &core.stats;
        let counts = |s: &Stats| {
            (
                s.signature_batches.load(Ordering::Relaxed),
                s.signatures_batched.load(Ordering::Relaxed),
                s.signature_batches_failed.load(Ordering::Relaxed),
            )
        };
        assert_eq!(counts(st), (1, 5, 0));
    }

    #[test]
    fn c13_a_bad_signature_in_a_batch_is_refused_alone_and_the_others_are_decided() {
        let dir = tempfile::tempdir().unwrap();
        let mut core = idle_core(dir.path());
        let g = grant();
        // §2: a small-order R, which dalek's bare batch equation accepts and
        // the one predicate refuses, among genuine requests.
        let ds =
            one_batch(&mut core, &[request(&g, b"a"), crafted(&request(&g, b"identity R"), 0, 0), request(&g, b"b")]);
        let reasons: Vec<_> = ds.iter().map(WireDecision::reason).collect();
        assert_eq!(reasons, [None, Some(Reason::BadSignature), None], "{ds:?}");
        // Another's signature among genuine requests.
        let ds = one_batch(&mut core, &[request(&g, b"c"), thief(&request(&g, b"stolen")), request(&g, b"d")]);
        let reasons: Vec<_> = ds.iter().map(WireDecision::reason).collect();
        assert_eq!(reasons, [None, Some(Reason::BadSignature), None], "{ds:?}");
        assert_eq!(ds[2].budget_remaining_uj, 1000 - 4 * 10, "only the four genuine requests are debited");
        assert_eq!(core.stats.signature_batches_failed.load(Ordering::Relaxed), 2);
        assert_eq!(core.stats.impersonated.load(Ordering::Relaxed), 2);
        // The refused ones were not remembered: their genuine twins are
        // decided afresh, in a batch that now verifies.
        let ds = one_batch(&mut core, &[request(&g, b"stolen"), request(&g, b"identity R")]);
        assert!(ds.iter().all(WireDecision::is_allow), "{ds:?}");
        assert_eq!(core.stats.signature_batches_failed.load(Ordering::Relaxed), 2);
        // The operator sees it: two failed batches, each request of them
        // checked alone, and one batch that verified.
        let text = core.metrics.render(0, 0).unwrap();
        for line in [
            "jcp_wire_caller_signature_batches_total{result=\"failed\"} 2\n",
            "jcp_wire_caller_signature_batches_total{result=\"verified\"} 1\n",
            "jcp_wire_caller_signatures_total{check=\"alone\"} 6\n",
            "jcp_wire_caller_signatures_total{check=\"batch\"} 2\n",
        ] {
            assert!(text.contains(line), "{line}{text}");
        }
    }

    #[test]
    fn c13_a_mixed_order_r_gets_one_verdict_alone_and_in_a_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut core = idle_core(dir.path());
        let g = grant();
        // A mixed-order R its own signer made: the cofactored equation holds
        // (cofactorless verify_strict would refuse it). Alone in its batch
        // and among genuine requests, the one predicate gives it one verdict.
        for torsion in 1..8u8 {
            let lone = one_batch(
                &mut core,
                &[crafted(&request(&g, &[torsion]), 7 + u64::from(torsion), usize::from(torsion))],
            );
            assert!(lone[0].is_allow(), "alone, torsion {torsion}: {lone:?}");
            let among = one_batch(
                &mut core,
                &[
                    request(&g, &[100 + torsion]),
                    crafted(&request(&g, &[50 + torsion]), 9 + u64::from(torsion), usize::from(torsion)),
                    request(&g, &[150 + torsion]),
                ],
            );
            assert!(among.iter().all(WireDecision::is_allow), "in a batch, torsion {torsion}: {among:?}");
        }
        // A small-order R is refused alone as in a batch.
        let lone = one_batch(&mut core, &[crafted(&request(&g, b"identity R"), 0, 0)]);
        assert_eq!(lone[0].reason(), Some(Reason::BadSignature));
        assert_eq!(
            core.stats.signature_batches_failed.load(Ordering::Relaxed),
            0,
            "no batch failed: none held a refused one"
        );
    }

    #[test]
    fn c13_strict_signatures_check_every_caller_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config_in(dir.path());
        cfg.caller_signatures = CallerSignatures::Strict;
        let g = grant();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let (ep, _) = Endpoint::open(cfg, key(90), Gate::new(), None).unwrap();
            let mut tasks = Vec::new();
            for i in 0..16u8 {
                // Every fourth a small-order R (refused), every fourth a
                // mixed-order R (accepted, as in a batch), the rest genuine.
                let req = match i % 4 {
                    3 => crafted(&request(&g, &[i]), 0, 0),
                    1 => crafted(&request(&g, &[i]), 11 + u64::from(i), usize::from(i) % 7 + 1),
                    _ => request(&g, &[i]),
                };
                let ep = ep.clone();
                tasks.push(tokio::spawn(async move { decision(&ep.submit(req).await.unwrap()) }));
            }
            for (i, t) in tasks.into_iter().enumerate() {
                let d = t.await.unwrap();
                let want = if i % 4 == 3 { Some(Reason::BadSignature) } else { None };
                assert_eq!(d.reason(), want, "request {i}: {d:?}");
            }
            let st = ep.stats();
            assert_eq!((st.signature_batches, st.impersonated, st.allowed), (0, 4, 12), "{st:?}");
            let text = ep.render_metrics().unwrap();
            assert!(text.contains("jcp_wire_caller_signatures_total{check=\"alone\"} 16\n"), "{text}");
            assert!(!text.contains("caller_signature_batches_total{"), "{text}");
            ep.shutdown().await.unwrap();
        });
    }
}
