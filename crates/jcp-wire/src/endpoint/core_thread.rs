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
use jcp::identity::Keypair;
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

/// What connection tasks and the endpoint's API ask of the core thread.
pub(super) enum Job {
    /// `bytes` are the request's canonical bytes (`req.to_bytes()`): the
    /// frame body it was decoded from, so the core does not encode it again.
    Decide {
        req: Box<WireRequest>,
        bytes: Vec<u8>,
        id: ContentId,
        signed_ok: bool,
        tx: oneshot::Sender<Answer>,
        /// When it was handed to the core (for the core-wait histogram).
        handed: Instant,
    },
    Feed {
        feed: Box<Feed>,
        tx: oneshot::Sender<FeedAnswer>,
    },
    Outcome {
        receipt: ContentId,
        status: OutcomeStatus,
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
    /// §4.5: the channel's merged ledger as this point holds it.
    Ledger {
        grant_id: ContentId,
        tx: oneshot::Sender<Option<Ledger>>,
    },
    /// The sync thread has handed batches back (their sync failed).
    Wake,
}

/// The core thread's state: the gate and its record, the memory of decided
/// requests, the continuation handles, and this point's channel keys.
pub(super) struct Core {
    pub(super) gate: DurableGate,
    pub(super) read: File,
    /// Hands appended batches to the sync thread (`None` once stopping).
    pub(super) syncer: Option<std::sync::mpsc::Sender<Pending>>,
    pub(super) sync_thread: Option<std::thread::JoinHandle<()>>,
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
            // A failed sync is known before this batch is decided.
            self.take_unsynced();
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
            if let Some(tx) = shutdown {
                let _ = tx.send(self.finish());
                return;
            }
        }
        if let Err(e) = self.finish() {
            tracing::error!("closing the record failed: {e}");
        }
    }

    /// Runs one job of a batch; what must wait for the batch's sync goes
    /// into `p`.
    pub(super) fn run_job(&mut self, job: Job, p: &mut Pending) {
        match job {
            Job::Decide { req, bytes, id, signed_ok, tx, handed } => {
                self.metrics.core_waited(handed.elapsed());
                let a = self.decide(&req, &bytes, id, signed_ok);
                p.decided.push((tx, a, req, Instant::now()));
            }
            Job::Feed { feed, tx } => {
                let a = self.feed(&feed);
                p.fed.push((tx, a));
            }
            Job::Outcome { receipt, status } => {
                if self.failed.is_none() {
                    if let Err(e) = self.gate.complete(&receipt, status) {
                        tracing::warn!("outcome of {receipt} not recorded: {e}");
                    }
                }
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
            Job::Ledger { grant_id, tx } => {
                let _ = tx.send(self.gate.gate().channel(&grant_id).map(|c| c.channel().ledger()));
            }
            Job::Shutdown { .. } | Job::Wake => {}
        }
    }
}
