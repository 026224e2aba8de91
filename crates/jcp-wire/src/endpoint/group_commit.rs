//! §4.11 group commit: the record precedes every response and every
//! action. A decided batch is appended by the core thread, then one
//! `fdatasync` on the sync thread makes it durable, and only then do its
//! answers leave (and the actions behind its allows run). The core decides
//! the next batch while the last one is synced; batches queued during a
//! sync share the next one. Once a sync fails, nothing more leaves
//! allowed: everything is answered `unrecorded` (§11).

use std::fs::File;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use jcp::cbor::ContentId;
use tokio::sync::{mpsc, oneshot};

use super::core_thread::{Charged, Core, Job, StatementAnswer};
use super::decision::Answer;
use super::stats::Stats;
use crate::error::WireError;
use crate::message::{FeedAnswer, WireRequest};
use crate::metrics::WireMetrics;

/// A decided batch whose records are appended up to `end` (the stream's
/// length after it): its answers leave only once a sync covers `end`.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) end: u64,
    /// Each decision's answer, its request, and when it was decided.
    pub(super) decided: Vec<(oneshot::Sender<Answer>, Answer, Box<WireRequest>, std::time::Instant)>,
    pub(super) fed: Vec<(oneshot::Sender<FeedAnswer>, FeedAnswer)>,
    pub(super) closed: Vec<(oneshot::Sender<Option<ContentId>>, Option<ContentId>)>,
    pub(super) stated: Vec<(oneshot::Sender<StatementAnswer>, StatementAnswer)>,
    pub(super) charged: Vec<(oneshot::Sender<Charged>, Charged)>,
}

impl Pending {
    /// The batch is durable: its answers leave.
    pub(super) fn release(self, metrics: &WireMetrics) {
        for (tx, a, _, decided) in self.decided {
            metrics.durable_waited(decided.elapsed());
            metrics.answered(a.verdict, a.repeat);
            let _ = tx.send(a);
        }
        for (tx, a) in self.fed {
            let _ = tx.send(a);
        }
        for (tx, c) in self.closed {
            let _ = tx.send(c);
        }
        for (tx, a) in self.stated {
            let _ = tx.send(a);
        }
        for (tx, c) in self.charged {
            let _ = tx.send(c);
        }
    }
}

/// Hands appended batches to the sync thread.
pub(super) type SyncSender = std::sync::mpsc::Sender<Pending>;
/// Batches whose sync failed (with why), back from the sync thread.
pub(super) type UnsyncedReceiver = std::sync::mpsc::Receiver<(String, Pending)>;

/// `fdatasync` of the stream (a test can make it fail).
pub(super) fn sync_stream(file: &File) -> std::io::Result<()> {
    #[cfg(test)]
    if tests::fails(file) {
        return Err(std::io::Error::other("injected sync failure"));
    }
    file.sync_data()
}

/// The stream's own handle for `fdatasync`, and the length known durable:
/// the sync thread's, or the core thread's own with
/// [`super::CoreMode::SyncsItself`]. (A sync makes the file's data durable
/// whichever handle wrote it; the core thread remains the only writer.)
pub(super) struct Durable {
    file: File,
    synced: u64,
}

impl Durable {
    /// A handle to `stream` to sync it through.
    pub(super) fn open(stream: &Path) -> Result<Self, WireError> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(stream)
            .map_err(|e| WireError::io(format!("opening {} to sync", stream.display()), e))?;
        Ok(Self { file, synced: 0 })
    }

    /// Makes the stream durable up to `end`: one `fdatasync`, timed and
    /// counted, where that much is not durable yet (a batch that appended
    /// nothing, a binding or a question, syncs nothing).
    pub(super) fn sync_to(&mut self, end: u64, metrics: &WireMetrics, stats: &Stats) -> std::io::Result<()> {
        if end <= self.synced {
            return Ok(());
        }
        let started = std::time::Instant::now();
        sync_stream(&self.file)?;
        metrics.committed(started.elapsed().as_secs_f64());
        self.synced = end;
        stats.commits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// The group commit, off the core thread: makes decided batches durable
/// in order, one `fdatasync` for every batch queued while the previous one
/// ran, then lets their answers leave, while the core decides the next
/// batch. The sync is on its own handle to the stream file (a sync makes
/// the file's data durable whichever handle wrote it); the core thread
/// remains the only writer. Once a sync fails nothing more is synced:
/// every batch it holds then or gets after goes back to the core, which
/// answers it `unrecorded` (§11).
pub(super) struct Syncer {
    pub(super) durable: Durable,
    pub(super) failed: Option<String>,
    pub(super) rx: std::sync::mpsc::Receiver<Pending>,
    /// The least time between the starts of two syncs
    /// ([`super::Config::commit_interval`]).
    pub(super) interval: std::time::Duration,
    pub(super) back: std::sync::mpsc::Sender<(String, Pending)>,
    pub(super) wake: mpsc::WeakSender<Job>,
    pub(super) stats: Arc<Stats>,
    pub(super) metrics: Arc<WireMetrics>,
}

impl Syncer {
    /// Starts the sync thread on its own handle to `stream`: the channel
    /// that hands it appended batches, the one it hands failed batches back
    /// on, and the thread.
    pub(super) fn start(
        stream: &Path,
        interval: std::time::Duration,
        wake: mpsc::WeakSender<Job>,
        stats: &Arc<Stats>,
        metrics: &Arc<WireMetrics>,
    ) -> Result<(SyncSender, UnsyncedReceiver, std::thread::JoinHandle<()>), WireError> {
        let (to_sync, rx) = std::sync::mpsc::channel();
        let (back, unsynced) = std::sync::mpsc::channel();
        let syncer = Syncer {
            durable: Durable::open(stream)?,
            failed: None,
            rx,
            interval,
            back,
            wake,
            stats: stats.clone(),
            metrics: metrics.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("jcp-endpoint-sync".into())
            .spawn(move || syncer.run())
            .map_err(|e| WireError::io("starting the endpoint's sync thread", e))?;
        Ok((to_sync, unsynced, thread))
    }

    /// The sync loop: one `fdatasync` for every batch queued, then their
    /// answers leave; after a failed sync, batches go back to the core.
    /// A batch that comes sooner than `interval` after the last sync began
    /// waits out the rest of it, with whatever batches join it meanwhile.
    pub(super) fn run(mut self) {
        let mut last_start: Option<std::time::Instant> = None;
        while let Ok(first) = self.rx.recv() {
            let mut group = vec![first];
            if let Some(due) = last_start.map(|t| t + self.interval) {
                while let Some(left) = due.checked_duration_since(std::time::Instant::now()) {
                    match self.rx.recv_timeout(left) {
                        Ok(p) => group.push(p),
                        // The interval is over, or the core has stopped: sync what is here.
                        Err(_) => break,
                    }
                }
            }
            while let Ok(p) = self.rx.try_recv() {
                group.push(p);
            }
            last_start = Some(std::time::Instant::now());
            // Lengths only grow: the last batch's end covers the group.
            let end = group.iter().map(|p| p.end).max().unwrap_or(0);
            if self.failed.is_none() {
                if let Err(e) = self.durable.sync_to(end, &self.metrics, &self.stats) {
                    tracing::error!("syncing the record failed: {e}");
                    self.failed = Some(format!("syncing the record: {e}"));
                }
            }
            match &self.failed {
                None => group.into_iter().for_each(|p| p.release(&self.metrics)),
                Some(why) => {
                    for p in group {
                        let _ = self.back.send((why.clone(), p));
                    }
                    if let Some(tx) = self.wake.upgrade() {
                        // A full queue wakes the core anyway.
                        let _ = tx.try_send(Job::Wake);
                    }
                }
            }
        }
    }
}

impl Core {
    /// Answers a batch none of whose records is known durable: every
    /// decision in it `unrecorded`, every admission refused.
    pub(super) fn answer_unrecorded(&mut self, why: &str, p: Pending) {
        for (tx, a, req, _) in p.decided {
            let a = if a.fresh || a.allow {
                self.unrecorded(&req, &format!("the record cannot be written: {why}"))
            } else {
                a
            };
            self.metrics.answered(a.verdict, a.repeat);
            let _ = tx.send(a);
        }
        for (tx, _) in p.fed {
            let _ = tx.send(FeedAnswer {
                admitted: false,
                code: "unrecorded".into(),
                message: format!("the record cannot be written: {why}"),
                known_through: None,
            });
        }
        for (tx, _) in p.closed {
            let _ = tx.send(None);
        }
        for (tx, _) in p.stated {
            let _ = tx.send(Err(FeedAnswer {
                admitted: false,
                code: "unrecorded".into(),
                message: format!("the record cannot be written: {why}"),
                known_through: None,
            }));
        }
        // A charge that did not become durable: the reservation stays
        // unresolved after a restart (§4.11), and the caller is told so.
        for (tx, _) in p.charged {
            let _ = tx.send(Err(format!("the record cannot be written: {why}")));
        }
    }

    /// Batches the sync thread could not make durable: the record has
    /// failed; they are answered `unrecorded`.
    pub(super) fn take_unsynced(&mut self) {
        while let Ok((why, p)) = self.unsynced.try_recv() {
            if self.failed.is_none() {
                self.fail(why);
            }
            let why = self.failed.clone().unwrap_or_default();
            self.answer_unrecorded(&why, p);
        }
    }

    /// Hands a decided batch to the sync thread; its answers leave once it
    /// is durable. With the record failed, it is answered here.
    pub(super) fn commit(&mut self, mut p: Pending) {
        if let Some(why) = self.failed.clone() {
            self.answer_unrecorded(&why, p);
            return;
        }
        // The batch's records reach the file in one write; the sync thread
        // makes them durable.
        if let Err(e) = self.gate.flush() {
            self.fail(e.to_string());
            let why = self.failed.clone().unwrap_or_default();
            self.answer_unrecorded(&why, p);
            return;
        }
        p.end = self.gate.writer().len();
        if let Some(durable) = &mut self.sync_here {
            match durable.sync_to(p.end, &self.metrics, &self.stats) {
                Ok(()) => p.release(&self.metrics),
                Err(e) => {
                    self.fail(format!("syncing the record: {e}"));
                    let why = self.failed.clone().unwrap_or_default();
                    self.answer_unrecorded(&why, p);
                }
            }
            return;
        }
        let refused = match &self.syncer {
            Some(tx) => tx.send(p).err().map(|e| e.0),
            None => Some(p),
        };
        if let Some(p) = refused {
            self.fail("the sync thread has stopped".into());
            let why = self.failed.clone().unwrap_or_default();
            self.answer_unrecorded(&why, p);
        }
    }

    /// Waits for the sync thread to finish what it holds, answers anything
    /// it could not sync, then syncs and closes the record.
    pub(super) fn finish(mut self) -> Result<(), String> {
        drop(self.syncer.take());
        if let Some(t) = self.sync_thread.take() {
            if t.join().is_err() {
                self.fail("the sync thread panicked".into());
            }
        }
        self.take_unsynced();
        self.gate.close().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {

    use jcp::decision::{Gate, Reason};

    use super::super::tests::{config_in, decide_in, decision, grant, idle_core, key, request};
    use super::super::{Config, CoreMode, Endpoint};
    use super::*;
    use crate::message::Feed;

    /// The inode whose syncs fail (0: none; only this module's test sets
    /// it): one stream's, so tests running beside it sync as ever.
    static FAIL_SYNC: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// Whether a sync of `file` is to fail.
    pub(super) fn fails(file: &File) -> bool {
        use std::os::unix::fs::MetadataExt;
        let ino = FAIL_SYNC.load(Ordering::SeqCst);
        ino != 0 && file.metadata().is_ok_and(|m| m.ino() == ino)
    }

    /// Makes every sync of the stream at `path` fail (`None`: none).
    fn fail_syncs_of(path: Option<&std::path::Path>) {
        use std::os::unix::fs::MetadataExt;
        FAIL_SYNC.store(path.map_or(0, |p| std::fs::metadata(p).unwrap().ino()), Ordering::SeqCst);
    }

    #[test]
    fn s11_a_batch_whose_write_fails_leaves_unrecorded_and_the_record_is_failed() {
        let dir = tempfile::tempdir().unwrap();
        let mut core = idle_core(dir.path());
        let g = grant();
        // A durable first batch.
        let mut p = Pending::default();
        let first = decide_in(&mut core, &mut p, &request(&g, b"one"));
        core.commit(p);
        assert!(decision(&first.blocking_recv().unwrap().framed).is_allow());
        // The next batch is decided (and debited in memory), but its one
        // write fails part way: nothing of it leaves allowed.
        let mut p = Pending::default();
        let rx = [b"two".as_slice(), b"three"].map(|x| decide_in(&mut core, &mut p, &request(&g, x)));
        core.gate.fail_next_flush_for_tests();
        core.commit(p);
        for rx in rx {
            let a = rx.blocking_recv().unwrap();
            let d = decision(&a.framed);
            assert_eq!((d.reason(), d.debited_uj, a.allow), (Some(Reason::Unrecorded), 0, false), "{d:?}");
        }
        assert!(core.failed.as_deref().is_some_and(|w| w.contains("injected write failure")), "{:?}", core.failed);
        // Everything after is unrecorded, a repeat of the durable decision included.
        let mut p = Pending::default();
        let rx =
            [decide_in(&mut core, &mut p, &request(&g, b"four")), decide_in(&mut core, &mut p, &request(&g, b"one"))];
        core.commit(p);
        for rx in rx {
            assert_eq!(decision(&rx.blocking_recv().unwrap().framed).reason(), Some(Reason::Unrecorded));
        }
        assert!(core.finish().is_err(), "closing a record whose write failed is an error");
        // Reopened: the half-written batch is cut at its torn record. Its
        // first decision reached the file whole: replayed, it stays debited
        // and unresolved (no action ran on it), as after any write that
        // outlives its failed sync.
        let (ep, report) = Endpoint::open(Config::new(dir.path().join("s.jcps")), key(90), Gate::new(), None).unwrap();
        assert!(report.replay.torn_cut.is_some(), "{report:?}");
        assert_eq!((report.requests_recorded, report.replay.replayed_allows), (2, 2), "{report:?}");
        assert_eq!(report.replay.unresolved.len(), 2, "{report:?}");
        drop(ep);
    }

    #[test]
    fn s4_11_a_core_that_syncs_itself_answers_after_the_sync_and_syncs_only_what_it_appended() {
        // On its own thread, and on the caller's.
        for mode in [CoreMode::SyncsItself, CoreMode::OnCaller] {
            let dir = tempfile::tempdir().unwrap();
            let mut cfg = config_in(dir.path());
            cfg.core = mode;
            let g = grant();
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let (ep, _) = Endpoint::open(cfg, key(90), Gate::new(), None).unwrap();
                assert!(decision(&ep.submit(request(&g, b"one")).await.unwrap()).is_allow());
                assert_eq!(ep.stats().commits, 1, "the decision was synced before it left");
                // A question that appends nothing is answered without a sync.
                let _ = ep.known_through().await.unwrap();
                assert_eq!(ep.stats().commits, 1);
                assert!(decision(&ep.submit(request(&g, b"two")).await.unwrap()).is_allow());
                assert_eq!(ep.stats().commits, 2);
                ep.shutdown().await.unwrap();
                // Shut down: nothing more is taken, on either thread.
                assert!(ep.submit(request(&g, b"three")).await.is_err(), "{mode:?}");
            });
            // Both decisions are in the record, durable: reopened, both replay.
            let (ep, report) =
                Endpoint::open(Config::new(dir.path().join("s.jcps")), key(90), Gate::new(), None).unwrap();
            assert_eq!((report.requests_recorded, report.replay.replayed_allows), (2, 2), "{report:?}");
            drop(ep);
        }
    }

    /// §4.11 with the core on the callers' threads: callers on several
    /// threads at once are decided one at a time under the core's lock,
    /// each synced before its answer leaves, and the record holds each once.
    #[test]
    fn s4_11_a_core_on_the_callers_threads_decides_concurrent_callers_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config_in(dir.path());
        cfg.core = CoreMode::OnCaller;
        let g = grant();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let (ep, _) = Endpoint::open(cfg, key(90), Gate::new(), None).unwrap();
            let calls = (0..16u8).map(|i| {
                let (ep, req) = (ep.clone(), request(&g, &[i]));
                tokio::spawn(async move { decision(&ep.submit(req).await.unwrap()) })
            });
            let mut allowed = 0;
            for c in calls.collect::<Vec<_>>() {
                allowed += u64::from(c.await.unwrap().is_allow());
            }
            // The grant's 1 000 µJ at 10 µJ a request: all 16 fit.
            let st = ep.stats();
            assert_eq!((allowed, st.allowed, st.commits), (16, 16, 16), "{st:?}");
            ep.shutdown().await.unwrap();
        });
        let (ep, report) = Endpoint::open(Config::new(dir.path().join("s.jcps")), key(90), Gate::new(), None).unwrap();
        assert_eq!((report.requests_recorded, report.replay.replayed_allows), (16, 16), "{report:?}");
        drop(ep);
    }

    /// The sync thread's and the core's own sync, on its thread or the
    /// caller's ([`CoreMode`]), fail the same way; one test runs each, one
    /// after the other (the injected failure is one stream's at a time).
    #[test]
    fn s11_nothing_leaves_allowed_once_a_sync_fails_and_every_later_request_is_unrecorded() {
        for mode in [CoreMode::GroupCommit, CoreMode::SyncsItself, CoreMode::OnCaller] {
            a_failed_sync_leaves_nothing_allowed(mode);
        }
    }

    fn a_failed_sync_leaves_nothing_allowed(mode: CoreMode) {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config_in(dir.path());
        cfg.core = mode;
        let g = grant();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (ep, _) = Endpoint::open(cfg, key(90), Gate::new(), None).unwrap();
            let first = request(&g, b"one");
            assert!(decision(&ep.submit(first.clone()).await.unwrap()).is_allow());
            assert_eq!(ep.stats().commits, 1);
            fail_syncs_of(Some(&dir.path().join("s.jcps")));
            // Decided and appended, but its sync fails: answered unrecorded.
            let d = decision(&ep.submit(request(&g, b"two")).await.unwrap());
            assert_eq!(d.reason(), Some(Reason::Unrecorded), "{mode:?}: {d:?}");
            assert_eq!(d.debited_uj, 0);
            fail_syncs_of(None);
            // The record has failed: everything after is unrecorded, a
            // repeat of a durable decision and a feed included.
            assert_eq!(decision(&ep.submit(request(&g, b"three")).await.unwrap()).reason(), Some(Reason::Unrecorded));
            assert_eq!(decision(&ep.submit(first).await.unwrap()).reason(), Some(Reason::Unrecorded));
            let rev = jcp::revocation::Revocation::issue(&g, &key(1), Some([3; 16])).unwrap();
            let a = ep.feed(Feed::Revocation { revocation: rev, grant: g.clone(), marker: 1 }).await.unwrap();
            assert_eq!((a.admitted, a.code.as_str()), (false, "unrecorded"), "{a:?}");
            let st = ep.stats();
            assert_eq!((st.commits, st.allowed), (1, 2), "{st:?}");
            assert!(st.unrecorded >= 3, "{st:?}");
            // The exposition counts what callers got: one allow (the durable
            // one), and the allow whose sync failed as the unrecorded deny it became.
            let text = ep.render_metrics().unwrap();
            assert!(text.contains("jcp_wire_decisions_total{verdict=\"allow\",reason=\"none\"} 1\n"), "{text}");
            assert!(text.contains("jcp_wire_decisions_total{verdict=\"deny\",reason=\"unrecorded\"} 3\n"), "{text}");
            assert!(text.contains("jcp_wire_record_commit_seconds_count 1\n"), "{text}");
            ep.shutdown().await.unwrap();
        });
    }
}
