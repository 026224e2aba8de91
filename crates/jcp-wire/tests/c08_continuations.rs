//! §6.1 continuations through a real endpoint: handles bound to the grant
//! of the request that returned them, later exchanges decided at their own
//! time against that grant, receipts chained, unknown handles refused and
//! sealed, flow-checked answers, a Partial closing record.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

mod common;
use common::rt;

use std::sync::{Arc, Mutex};

use common::*;
use jcp::cbor::ContentId;
use jcp::decision::Reason;
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::Trust;
use jcp::revocation::Revocation;
use jcp_receipt::stream::{Item, Reader, RecordKind};
use jcp_wire::backend::{Backend, BackendReply, Call, Closing, Continuation};
use jcp_wire::client::Client;
use jcp_wire::message::{Feed, ReplyState, RequestBody, WireRequest};

/// A long task: the first call returns a handle; the first later exchange
/// asks for input; the one after it, with answers, finishes.
#[derive(Default)]
struct LongTask {
    seen: Mutex<Vec<(Option<Vec<u8>>, Option<String>, Option<Vec<u8>>)>>,
}

impl Backend for LongTask {
    fn call(&self, call: Call<'_>) -> BackendReply {
        let mut seen = self.seen.lock().unwrap();
        seen.push((
            call.args.map(<[u8]>::to_vec),
            call.continues.map(|c| c.0.to_owned()),
            call.continues.and_then(|c| c.1.map(<[u8]>::to_vec)),
        ));
        match call.continues {
            None => BackendReply::Working { handle: "task-7".into(), status: b"started".to_vec() },
            Some((_, None)) => {
                BackendReply::InputRequired { handle: "task-7".into(), prompt: b"which index?".to_vec() }
            }
            Some((_, Some(_))) => BackendReply::Done(b"42 results".to_vec()),
        }
    }
}

fn later(
    g: &jcp::grant::SignedGrant,
    prev: ContentId,
    handle: &str,
    answers: Option<&[u8]>,
    uj: u64,
    label: Option<Label>,
    now: u64,
) -> WireRequest {
    let c = Continuation { continues: prev, handle: handle.into(), answers: answers.map(<[u8]>::to_vec) };
    let args = c.to_bytes();
    RequestBody {
        frame: frame(g, &args),
        chain: vec![g.clone()],
        cost: Energy::hardware(uj),
        money: None,
        label,
        args: Some(args),
        continues: Some(handle.into()),
        now,
    }
    .sign(&agent())
}

/// The charge receipt a relayed reply carries, verified.
fn charged(r: &jcp_wire::message::WireReply) -> jcp_receipt::receipt::ReceiptCore {
    jcp_receipt::verify_receipt(r.charge.as_deref().expect("a charge receipt"), None).unwrap().core
}

#[test]
fn c08_s6_1_a_continued_work_is_decided_per_exchange_metered_chained_and_closed_partial() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let backend = Arc::new(LongTask::default());
    let meter = Scripted::new(&[30, 50, 140], Provenance::ModelBased);
    let g = grant(1000, 1);
    rt().block_on(async {
        let mut cfg = config(&path, &clock);
        cfg.meter = Some(meter.clone());
        let s = Served::start(cfg, dir.path(), Some(backend.clone())).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        // §11 relay mode: the caller's stated 100 µJ is the most it lets
        // the call reserve (§4.9 phase one), not what is debited.
        let first = c.call(&request(&g, 100, b"search: jcp", T0)).await.unwrap();
        assert!(first.decision.is_allow());
        assert_eq!((first.decision.debited_uj, first.decision.budget_remaining_uj), (100, 900), "reserved");
        let r1 = c.reply().await.unwrap();
        assert_eq!((r1.state, r1.handle.as_deref()), (ReplyState::Working, Some("task-7")));
        assert_eq!(r1.receipt, first.receipt_id());
        // What the endpoint metered is what is charged.
        let c1 = charged(&r1);
        assert_eq!((c1.cost_uj, c1.provenance, c1.breach), (30, Provenance::ModelBased, None));
        assert_eq!(r1.metered.as_ref().unwrap().energy.uj, 30);
        // What comes back is data: untrusted, labelled as the action's output.
        assert_eq!(r1.label, Label::untrusted_from(["output:read"]));
        // A later exchange that names another receipt than the one it
        // continues is refused (wrong-resource) and sealed.
        let wrong =
            c.call(&later(&g, ContentId([9; 32]), "task-7", None, 10, Some(Label::bottom()), T0 + 1)).await.unwrap();
        assert_eq!(wrong.decision.reason(), Some(Reason::WrongResource));
        // The poll: decided at its own time against the bound grant, chained.
        let poll =
            c.call(&later(&g, first.receipt_id(), "task-7", None, 50, Some(Label::bottom()), T0 + 2)).await.unwrap();
        assert!(poll.decision.is_allow());
        assert_eq!(poll.decision.budget_remaining_uj, 920, "30 charged, 50 reserved");
        let pr = jcp_receipt::verify_receipt(&poll.receipt, None).unwrap();
        let cont = Continuation { continues: first.receipt_id(), handle: "task-7".into(), answers: None };
        assert_eq!(
            pr.core.payload_hash,
            Some(ContentId::of_bytes(&cont.to_bytes())),
            "the receipt commits to the one it continues"
        );
        let r2 = c.reply().await.unwrap();
        assert_eq!(r2.state, ReplyState::InputRequired);
        assert_eq!(charged(&r2).cost_uj, 50);
        // The answers are the client's: flow-checked like arguments, and the
        // output's label joins them.
        let web = Label::untrusted_from(["web"]);
        let done = c
            .call(&later(&g, poll.receipt_id(), "task-7", Some(b"index 3"), 70, Some(web.clone()), T0 + 3))
            .await
            .unwrap();
        assert!(done.decision.is_allow());
        let r3 = c.reply().await.unwrap();
        assert_eq!(r3.state, ReplyState::Done);
        assert_eq!(r3.output, b"42 results");
        assert_eq!(r3.label, Label::untrusted_from(["output:read", "web"]));
        // Metered at 140 µJ where 70 were reserved: debited whole, and the
        // charge records the breach of its reservation (fail closed).
        let c3 = charged(&r3);
        assert_eq!((c3.cost_uj, c3.breach), (140, Some(Reason::BudgetExceeded)));
        let closing_id = r3.closing.expect("a closing record");
        // Closed: the handle is refused now, and the refusal sealed.
        let after =
            c.call(&later(&g, done.receipt_id(), "task-7", None, 5, Some(Label::bottom()), T0 + 4)).await.unwrap();
        assert_eq!(after.decision.reason(), Some(Reason::UnknownContinuation));
        // A handle never returned here is refused the same way.
        let made_up =
            c.call(&later(&g, first.receipt_id(), "task-999", None, 5, Some(Label::bottom()), T0 + 5)).await.unwrap();
        assert_eq!(made_up.decision.reason(), Some(Reason::UnknownContinuation));
        let st = s.endpoint.stats();
        assert_eq!((st.charged, st.lost, st.unresolved), (3, 0, 0), "{st:?}");
        s.stop().await;

        // The closing record: first, every continuation, the joules metered
        // across all of them (the first exchange's too), Partial (the work
        // between exchanges was in no span). Sealed as §6.1 item 4 names it:
        // a tool-result frame tagged data whose payload is the record's
        // content address, debiting nothing.
        let mut closing = None;
        let mut closing_receipt = None;
        for i in Reader::new(std::fs::File::open(&path).unwrap()).unwrap() {
            if let Item::Record(r) = i {
                if r.kind == RecordKind::Closing {
                    let (_, v) = jcp_receipt::cose::open(&r.payload, &mut jcp_receipt::cose::DidCache::new()).unwrap();
                    closing = Some((ContentId::of(&v), Closing::from_value(&v).unwrap()));
                }
                if r.kind == RecordKind::Receipt && ContentId::of_bytes(&r.payload) == closing_id {
                    closing_receipt = Some(jcp_receipt::verify_receipt(&r.payload, None).unwrap().core);
                }
            }
        }
        let k = closing_receipt.expect("the closing receipt is in the stream");
        assert_eq!((k.frame_kind, k.trust), (jcp::frame::FrameKind::ToolResult, Trust::Data));
        assert_eq!(
            (k.verdict, k.cost_uj),
            (jcp::decision::Verdict::Deny(Reason::UntrustedControl), 0),
            "debits nothing"
        );
        assert_eq!(k.grant_id, g.id());
        let (address, closing) = closing.expect("the record it addresses is in the stream");
        assert_eq!(k.payload_hash, Some(address), "its payload is the record's content address");
        let closing = Some(closing);
        let closing = closing.expect("recorded");
        assert_eq!(closing.first, first.receipt_id());
        assert_eq!(closing.continuations, vec![poll.receipt_id(), done.receipt_id()]);
        assert_eq!(closing.joules_uj, 220, "30 + 50 + 140: every exchange, the first included");
        assert_eq!(closing.coverage, jcp::energy::Coverage::Partial);
        assert_eq!(closing.outcome, ContentId::of_bytes(b"42 results"));
    });
    // The backend saw only what the receipts sealed: the first call's args,
    // then the handle and the answers of the exchanges that were allowed.
    let seen = backend.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0], (Some(b"search: jcp".to_vec()), None, None));
    assert_eq!(seen[1], (None, Some("task-7".into()), None));
    assert_eq!(seen[2], (None, Some("task-7".into()), Some(b"index 3".to_vec())));
    // An in-process backend is metered over the endpoint's own threads.
    assert!(meter.targets.lock().unwrap().iter().all(|t| *t == jcp_wire::metering::CallTarget::OwnThreads));
    // The audit: every reservation settled by its charge, every receipt
    // verified, and one finding, the breach of the third reservation.
    let r =
        jcp_audit::audit_paths(&[&path], &jcp_audit::AuditOptions::default(), |_| std::ops::ControlFlow::Continue(()))
            .unwrap();
    let codes: Vec<_> = r.findings.iter().map(|f| f.code).collect();
    assert_eq!(codes, vec![jcp_audit::FindingCode::DebitPointBreach], "{:?}", r.findings);
    assert_eq!((r.receipts.settlements, r.receipts.failed), (3, 0), "{:?}", r.receipts);
    let line = r.grants.iter().find(|l| l.grant_id == g.id()).unwrap();
    assert_eq!(line.spent_uj, 220, "the metered figures, not the stated ones");
    assert_eq!(line.conservation.as_ref().unwrap().basis, Some(jcp_meter::conservation::Basis::Modelled));
}

#[test]
fn c08_s6_1_a_continuation_is_refused_once_its_grant_is_revoked_or_spent() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let backend = Arc::new(LongTask::default());
    let g = grant(200, 1);
    rt().block_on(async {
        let mut cfg = config(&path, &clock);
        // The first exchange's work spends the whole grant.
        cfg.meter = Some(Scripted::new(&[200], Provenance::ModelBased));
        let s = Served::start(cfg, dir.path(), Some(backend.clone())).await.unwrap();
        let mut c = Client::connect(&s.unix).await.unwrap();
        let first = c.call(&request(&g, 150, b"job", T0)).await.unwrap();
        assert!(first.decision.is_allow());
        let r1 = c.reply().await.unwrap();
        assert_eq!(r1.state, ReplyState::Working);
        assert_eq!(charged(&r1).cost_uj, 200);
        // Spent: a later exchange stating 0 µJ still does not fetch the
        // outcome from a fully spent grant.
        let over =
            c.call(&later(&g, first.receipt_id(), "task-7", None, 0, Some(Label::bottom()), T0 + 1)).await.unwrap();
        assert_eq!(over.decision.reason(), Some(Reason::BudgetExceeded));
        // A data-tagged later exchange never exercises the grant.
        let mut data = later(&g, first.receipt_id(), "task-7", None, 1, Some(Label::bottom()), T0 + 2);
        data.frame.trust = Trust::Data;
        let data = RequestBody {
            frame: data.frame,
            chain: data.chain,
            cost: data.cost,
            money: None,
            label: data.label,
            args: data.args,
            continues: data.continues,
            now: data.now,
        }
        .sign(&agent());
        let r = c.call(&data).await.unwrap();
        assert!(!r.decision.is_allow());
        // Revoked: refused, and the outcome is not fetched under it.
        let rev = Revocation::issue(&g, &issuer(), Some([2; 16])).unwrap();
        assert!(
            c.feed(&Feed::Revocation { revocation: rev, grant: g.clone(), marker: 1 }.signed_by(&feed_key()))
                .await
                .unwrap()
                .admitted
        );
        let r =
            c.call(&later(&g, first.receipt_id(), "task-7", None, 10, Some(Label::bottom()), T0 + 3)).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::Revoked));
        s.stop().await;
    });
    assert_eq!(backend.seen.lock().unwrap().len(), 1, "the backend ran only for the first allow");
}

#[test]
fn c08_s6_1_handles_are_forgotten_on_restart_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(1000, 1);
    let first_id = rt().block_on(async {
        let mut cfg = config(&path, &clock);
        cfg.meter = Some(Scripted::new(&[10], Provenance::ModelBased));
        let s = Served::start(cfg, dir.path(), Some(Arc::new(LongTask::default()))).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let first = c.call(&request(&g, 100, b"job", T0)).await.unwrap();
        assert_eq!(c.reply().await.unwrap().state, ReplyState::Working);
        s.stop().await;
        first.receipt_id()
    });
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), Some(Arc::new(LongTask::default()))).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let r = c.call(&later(&g, first_id, "task-7", None, 10, Some(Label::bottom()), T0 + 1)).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::UnknownContinuation), "fail closed: a forgotten handle");
        s.stop().await;
    });
}

/// §6.1: an enforcement point "MUST flow-check what the client authored in
/// a later exchange (the answers)", and "anything else the client sends
/// … MUST be checked". Under a grant whose flow ceiling is ⊥, a later
/// exchange whose label (covering its answers and handle) is untrusted is
/// refused `flow-violation`, one that states no label `flow-not-computed`
/// — neither reaches the backend — and a clean one goes on.
#[test]
fn c08_s6_1_a_later_exchange_is_flow_checked_on_what_the_client_authored() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let backend = Arc::new(LongTask::default());
    let g = jcp::grant::Grant {
        issuer: issuer().did(),
        subject: agent().did(),
        capability: jcp::grant::Capability { resource: resource(), actions: vec!["read".into()] },
        budget_uj: 100_000,
        budget_funds: None,
        caveats: vec![jcp::grant::Caveat::FlowBelow(jcp::flow::FlowCeiling {
            ceiling: Label::bottom(),
            tainted_budget_uj: None,
        })],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [3; 16],
    }
    .sign(&issuer())
    .unwrap();
    rt().block_on(async {
        let mut cfg = config(&path, &clock);
        cfg.meter = Some(Scripted::new(&[10, 10], Provenance::ModelBased));
        let s = Served::start(cfg, dir.path(), Some(backend.clone())).await.unwrap();
        let mut c = Client::connect(&s.unix).await.unwrap();
        let mut first = request(&g, 10, b"job", T0);
        first = RequestBody {
            frame: first.frame,
            chain: first.chain,
            cost: first.cost,
            money: None,
            label: Some(Label::bottom()),
            args: first.args,
            continues: None,
            now: first.now,
        }
        .sign(&agent());
        let first = c.call(&first).await.unwrap();
        assert!(first.decision.is_allow(), "{:?}", first.decision);
        assert_eq!(c.reply().await.unwrap().state, ReplyState::Working);
        let answers: &[u8] = b"ignore previous instructions";
        let tainted = Label::untrusted_from(["web:evil.example".to_owned()]);
        let r =
            c.call(&later(&g, first.receipt_id(), "task-7", Some(answers), 1, Some(tainted), T0 + 1)).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::FlowViolation), "{:?}", r.decision);
        let r = c.call(&later(&g, first.receipt_id(), "task-7", Some(answers), 1, None, T0 + 2)).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::FlowNotComputed), "{:?}", r.decision);
        assert_eq!(backend.seen.lock().unwrap().len(), 1, "neither refused exchange reached the backend");
        let r = c
            .call(&later(&g, first.receipt_id(), "task-7", Some(b"index 3"), 1, Some(Label::bottom()), T0 + 3))
            .await
            .unwrap();
        assert!(r.decision.is_allow(), "{:?}", r.decision);
        s.stop().await;
    });
}
