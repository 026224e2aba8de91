//! §11 "The cost is the holder's measurement", relay mode: with a backend
//! behind the gate the endpoint reserves (§4.9 phase one, bounded by the
//! caller's stated maximum and the operator's ceiling), runs and meters the
//! call, and charges the metered figure, never the caller's. A call lost
//! mid-way is never charged: its decision stays unresolved (§4.11), across
//! a restart and in the audit. Real TCP and Unix sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::rt;

use std::sync::Arc;

use common::*;
use jcp::energy::{Coverage, Energy, Provenance};
use jcp_wire::backend::{Backend, BackendReply, Call};
use jcp_wire::client::Client;
use jcp_wire::message::ReplyState;

/// Answers `done`, except to `crash`, which it loses mid-call, and to
/// `panic`, on which it panics.
struct Flaky;

impl Backend for Flaky {
    fn call(&self, call: Call<'_>) -> BackendReply {
        match call.args {
            Some(b"crash") => BackendReply::Lost { why: "exit status 70 before replying".into() },
            Some(b"panic") => panic!("the backend's own bug"),
            Some(a) => BackendReply::Done(a.to_vec()),
            None => BackendReply::Failed(b"no args".to_vec()),
        }
    }
}

#[test]
fn s11_relay_mode_debits_the_metered_figure_never_the_callers_and_claims_no_grade_it_did_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(10_000, 1);
    rt().block_on(async {
        let mut cfg = config(&path, &clock);
        cfg.meter = Some(Scripted::new(&[42, 900], Provenance::Estimator));
        cfg.call_ceiling_uj = Some(500);
        let s = Served::start(cfg, dir.path(), Some(Arc::new(Flaky))).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        // The caller claims a hardware reading of 5 µJ: in relay mode that
        // is only the most it lets the call reserve.
        let r = c.call(&request_costing(&g, Energy::hardware(5), b"a", T0)).await.unwrap();
        assert_eq!((r.decision.is_allow(), r.decision.debited_uj), (true, 5), "reserved at its stated 5 µJ");
        let reservation = jcp_receipt::verify_receipt(&r.receipt, None).unwrap().core;
        assert_eq!(
            (reservation.provenance, reservation.measured),
            (Provenance::Estimator, None),
            "a bound, no reading"
        );
        let reply = c.reply().await.unwrap();
        assert_eq!(reply.state, ReplyState::Done);
        let charge = jcp_receipt::verify_receipt(reply.charge.as_deref().unwrap(), None).unwrap().core;
        assert_eq!(
            charge.energy(),
            Energy { uj: 42, provenance: Provenance::Estimator, coverage: Coverage::Partial, measured: None },
            "the metered figure, at the grade it was metered at"
        );
        assert_eq!(charge.breach, Some(jcp::decision::Reason::BudgetExceeded), "42 µJ above the 5 reserved");
        // No stated maximum: the operator's per-call ceiling bounds it.
        let r = c.call(&request_costing(&g, Energy::new(0, Provenance::Estimator), b"b", T0)).await.unwrap();
        assert_eq!(r.decision.debited_uj, 500, "the operator's ceiling");
        let reply = c.reply().await.unwrap();
        let charge = jcp_receipt::verify_receipt(reply.charge.as_deref().unwrap(), None).unwrap().core;
        assert_eq!(charge.cost_uj, 900, "debited whole above the ceiling: the work ran");
        let st = s.endpoint.stats();
        assert_eq!((st.allowed, st.charged, st.unresolved), (2, 2, 0), "{st:?}");
        s.stop().await;
    });
    let r =
        jcp_audit::audit_paths(&[&path], &jcp_audit::AuditOptions::default(), |_| std::ops::ControlFlow::Continue(()))
            .unwrap();
    let line = r.grants.iter().find(|l| l.grant_id == g.id()).unwrap();
    assert_eq!(line.spent_uj, 942, "the grant spent what was metered: {line:?}");
    assert_eq!(r.unresolved_total, 0);
}

#[test]
fn s4_11_a_call_lost_mid_way_is_never_charged_and_stays_unresolved_across_a_restart_and_in_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(10_000, 1);
    let lost_receipt = rt().block_on(async {
        let mut cfg = config(&path, &clock);
        cfg.meter = Some(Scripted::new(&[70, 30], Provenance::ModelBased));
        let s = Served::start(cfg, dir.path(), Some(Arc::new(Flaky))).await.unwrap();
        let mut c = Client::connect(&s.unix).await.unwrap();
        let r = c.call(&request_costing(&g, Energy::new(100, Provenance::Estimator), b"crash", T0)).await.unwrap();
        assert!(r.decision.is_allow());
        let reply = c.reply().await.unwrap();
        assert_eq!(reply.state, ReplyState::Lost, "{reply:?}");
        assert_eq!(reply.output, b"exit status 70 before replying");
        assert!(reply.charge.is_none(), "never charged");
        assert_eq!(reply.metered.as_ref().unwrap().energy.uj, 70, "what was metered is shown, not debited");
        // The next call is decided and charged as ever.
        let ok = c.call(&request_costing(&g, Energy::new(100, Provenance::Estimator), b"fine", T0)).await.unwrap();
        assert_eq!(ok.decision.budget_remaining_uj, 10_000 - 100 - 100, "the lost reservation stays debited");
        assert!(c.reply().await.unwrap().charge.is_some());
        let st = s.endpoint.stats();
        assert_eq!((st.charged, st.lost, st.unresolved), (1, 1, 1), "{st:?}");
        s.stop().await;
        r.receipt_id()
    });
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), Some(Arc::new(Flaky))).await.unwrap();
        let un = &s.report.replay.unresolved;
        assert_eq!(un.len(), 1, "{un:?}");
        assert_eq!(un[0].receipt, lost_receipt);
        assert_eq!(s.endpoint.stats().unresolved, 1);
        s.stop().await;
    });
    let r =
        jcp_audit::audit_paths(&[&path], &jcp_audit::AuditOptions::default(), |_| std::ops::ControlFlow::Continue(()))
            .unwrap();
    assert_eq!(r.unresolved_total, 1, "{:?}", r.unresolved);
    let line = r.grants.iter().find(|l| l.grant_id == g.id()).unwrap();
    assert_eq!(line.spent_uj, 130, "the lost call's reservation (100) stays debited beside the charged 30");
}

/// §4.11 + §11: a backend that panics mid-call may or may not have done its
/// work, so its decision is recorded neither completed nor failed: the call
/// is `lost`, never charged, and stays unresolved — named after a restart
/// and in the audit — and the endpoint goes on deciding.
#[test]
fn s4_11_a_backend_that_panics_leaves_its_decision_unresolved_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(10_000, 1);
    let receipt = rt().block_on(async {
        let mut cfg = config(&path, &clock);
        cfg.meter = Some(Scripted::new(&[70, 30], Provenance::ModelBased));
        let s = Served::start(cfg, dir.path(), Some(Arc::new(Flaky))).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let r = c.call(&request_costing(&g, Energy::new(100, Provenance::Estimator), b"panic", T0)).await.unwrap();
        assert!(r.decision.is_allow());
        let reply = c.reply().await.unwrap();
        assert_eq!(reply.state, ReplyState::Lost, "{reply:?}");
        assert!(reply.charge.is_none(), "never charged");
        let ok = c.call(&request_costing(&g, Energy::new(100, Provenance::Estimator), b"fine", T0)).await.unwrap();
        assert!(ok.decision.is_allow(), "the endpoint goes on deciding");
        assert_eq!(c.reply().await.unwrap().state, ReplyState::Done);
        let st = s.endpoint.stats();
        assert_eq!((st.lost, st.unresolved), (1, 1), "{st:?}");
        s.stop().await;
        r.receipt_id()
    });
    let r =
        jcp_audit::audit_paths(&[&path], &jcp_audit::AuditOptions::default(), |_| std::ops::ControlFlow::Continue(()))
            .unwrap();
    assert_eq!(r.unresolved_total, 1, "{:?}", r.unresolved);
    assert_eq!(r.unresolved[0].receipt, receipt);
    assert_eq!(r.receipts.outcomes, 1, "only the fine call's outcome: no 'failed' for the panic");
}

/// How [`Quick`] answers `send`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sends {
    /// Sends, the wait after.
    Split,
    /// Declines: nothing sent.
    Declines,
    /// Panics while sending.
    Panics,
    /// Would send, but names no process tree: called wholly, off the
    /// runtime's threads, metered as the endpoint's own.
    NoTree,
}

/// A backend over a real process tree (`sleep`, for its pid) that says it
/// sends its calls without waiting, and does as `sends` says.
struct Quick {
    child: std::sync::Mutex<std::process::Child>,
    sends: Sends,
    sent: std::sync::atomic::AtomicUsize,
    called: std::sync::atomic::AtomicUsize,
    readied: std::sync::atomic::AtomicUsize,
}

impl Quick {
    fn new(sends: Sends) -> Arc<Self> {
        let child = std::process::Command::new("sleep").arg("60").spawn().unwrap();
        Arc::new(Self {
            child: std::sync::Mutex::new(child),
            sends,
            sent: 0.into(),
            called: 0.into(),
            readied: 0.into(),
        })
    }
}

impl Drop for Quick {
    fn drop(&mut self) {
        let mut c = self.child.lock().unwrap();
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Backend for Quick {
    fn call(&self, call: Call<'_>) -> BackendReply {
        self.called.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        BackendReply::Done(call.args.unwrap_or_default().to_vec())
    }

    fn send(&self, call: Call<'_>) -> Option<jcp_wire::backend::Awaiting> {
        match self.sends {
            Sends::Declines => None,
            Sends::Panics => panic!("the backend's own bug, while sending"),
            Sends::Split | Sends::NoTree => {
                self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let args = call.args.unwrap_or_default().to_vec();
                Some(Box::new(move || BackendReply::Done(args)))
            }
        }
    }

    fn sends_quickly(&self) -> bool {
        true
    }

    fn prepare(&self) {
        self.readied.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn tree_root(&self) -> Option<u32> {
        (self.sends != Sends::NoTree).then(|| self.child.lock().unwrap().id())
    }
}

/// §11 relay mode, a backend that sends quickly (`Backend::send`): the call
/// is sent inside a span over its tree, and the reply waited for, metered
/// and charged as any other's; one whose `send` declines is called instead,
/// inside the same kind of span. Neither is run twice. One that panics
/// while sending leaves its decision unresolved (§4.11), as a panic on a
/// blocking thread does, and the endpoint goes on. One that names no tree
/// is called wholly and metered as the endpoint's own threads. Each call
/// is readied once.
#[test]
fn s11_a_call_sent_without_waiting_is_metered_over_its_tree_and_charged_as_any_other() {
    for sends in [Sends::Split, Sends::Declines, Sends::Panics, Sends::NoTree] {
        let dir = tempfile::tempdir().unwrap();
        let clock = TestClock::new(T0);
        let path = dir.path().join("s.jcps");
        let g = grant(10_000, 1);
        let backend = Quick::new(sends);
        let root = backend.tree_root();
        let meter = Scripted::new(&[77, 77], Provenance::Estimator);
        rt().block_on(async {
            let mut cfg = config(&path, &clock);
            cfg.meter = Some(meter.clone());
            let s = Served::start(cfg, dir.path(), Some(backend.clone())).await.unwrap();
            let mut c = Client::connect(&s.tcp).await.unwrap();
            let r = c.call(&request_costing(&g, Energy::new(100, Provenance::Estimator), b"x", T0)).await.unwrap();
            assert!(r.decision.is_allow(), "{:?}", r.decision);
            let reply = c.reply().await.unwrap();
            if sends == Sends::Panics {
                assert_eq!(reply.state, ReplyState::Lost, "{reply:?}");
                assert!(reply.charge.is_none(), "never charged");
                assert_eq!(s.endpoint.stats().unresolved, 1);
            } else {
                assert_eq!((reply.state, reply.output.as_slice()), (ReplyState::Done, &b"x"[..]), "{sends:?}");
                let charge = jcp_receipt::verify_receipt(reply.charge.as_deref().unwrap(), None).unwrap().core;
                assert_eq!(charge.cost_uj, 77, "the metered figure, {sends:?}");
            }
            // The endpoint goes on deciding.
            let r = c.call(&request_costing(&g, Energy::new(100, Provenance::Estimator), b"y", T0)).await.unwrap();
            assert!(r.decision.is_allow(), "{sends:?}: {:?}", r.decision);
            let reply = c.reply().await.unwrap();
            let want = if sends == Sends::Panics { ReplyState::Lost } else { ReplyState::Done };
            assert_eq!(reply.state, want, "{sends:?}");
            s.stop().await;
        });
        if sends == Sends::Panics {
            continue;
        }
        let ord = std::sync::atomic::Ordering::SeqCst;
        assert_eq!(
            (backend.sent.load(ord), backend.called.load(ord)),
            if sends == Sends::Split { (2, 0) } else { (0, 2) },
            "sent without waiting, or called: once a call"
        );
        assert_eq!(backend.readied.load(ord), 2, "{sends:?}: readied once a call");
        let targets = meter.targets.lock().unwrap().clone();
        let spanned = |t: &jcp_wire::metering::CallTarget| match (t, root) {
            (jcp_wire::metering::CallTarget::Tree { root: r, .. }, Some(root)) => *r == root,
            (jcp_wire::metering::CallTarget::OwnThreads, None) => true,
            _ => false,
        };
        assert!(
            targets.iter().all(spanned) && targets.len() == 2,
            "{sends:?}: a span over the backend's tree a call (its own threads without one): {targets:?}"
        );
    }
}
