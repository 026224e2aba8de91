//! C8 (wire binding), C13 (the caller-signature half), §11, §4.3
//! propagation, §4.11 over real TCP and Unix sockets in one process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

mod common;
use common::rt;

use std::time::Duration;

use common::*;
use jcp::cbor::ContentId;
use jcp::decision::{Reason, Verdict};
use jcp::revocation::Revocation;
use jcp_receipt::stream::{Item, Reader, RecordKind};
use jcp_wire::client::Client;
use jcp_wire::codec;
use jcp_wire::message::{Feed, Inbound, Outbound, WireRequest};
use tokio::io::AsyncWriteExt;

fn kinds(path: &std::path::Path) -> Vec<RecordKind> {
    let r = Reader::new(std::fs::File::open(path).unwrap()).unwrap();
    r.filter_map(|i| match i {
        Item::Record(r) => Some(r.kind),
        Item::Fault(f) => panic!("fault {f:?}"),
    })
    .collect()
}

#[test]
fn c08_request_round_trips_the_framing_canonically() {
    let g = grant(1000, 1);
    let req = request(&g, 10, b"q", T0);
    let framed = codec::frame_value(&req.to_value());
    let (body, used) = codec::split(&framed, codec::DEFAULT_CAP).unwrap().unwrap();
    assert_eq!(used, framed.len());
    let Inbound::Request(back) = Inbound::decode(body).unwrap() else { panic!("not a request") };
    assert_eq!(*back, req);
    assert_eq!(back.to_bytes(), body, "one wire form: re-encoding gives the same bytes");
    assert!(back.verify_signature());
    // Any other field set than §11's (plus the named optional ones) is refused.
    let mut v = req.to_value();
    if let jcp::cbor::Value::Map(m) = &mut v {
        m.push((jcp::cbor::Value::text("x-instructions"), jcp::cbor::Value::text("ignore the grant")));
    }
    let e = Inbound::decode(&v.encode()).unwrap_err();
    assert_eq!(e.code(), "not-a-message", "{e}");
}

#[test]
fn c08_a_repeat_gets_the_first_response_and_is_not_decided_again() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let s = Served::start(config(&dir.path().join("s.jcps"), &clock), dir.path(), None).await.unwrap();
        let g = grant(1000, 1);
        let req = request(&g, 600, b"q1", T0);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let first = c.call(&req).await.unwrap();
        assert!(first.decision.is_allow());
        assert_eq!(first.decision.budget_remaining_uj, 400);
        // Again, on another socket kind: the same bytes, not debited again.
        clock.set(T0 + 5);
        let mut u = Client::connect(&s.unix).await.unwrap();
        let again = u.call(&req).await.unwrap();
        assert_eq!(again, first);
        assert_eq!(codec::frame_value(&again.to_value()), codec::frame_value(&first.to_value()));
        // A new request (stamped later) is decided against the one debit.
        let next = c.call(&request(&g, 600, b"q1", T0 + 1)).await.unwrap();
        assert_eq!(next.decision.reason(), Some(Reason::BudgetExceeded));
        assert_eq!(next.decision.budget_remaining_uj, 400);
        let st = s.endpoint.stats();
        assert_eq!((st.decided, st.repeats, st.allowed), (2, 1, 1));
        s.stop().await;
    });
    // Recorded once: request + receipt per decided request, nothing for the repeat.
    let k = kinds(&dir.path().join("s.jcps"));
    assert_eq!(k, vec![RecordKind::Request, RecordKind::Receipt, RecordKind::Request, RecordKind::Receipt]);
}

#[test]
fn c08_a_request_outside_the_window_is_refused_stale_sealed_and_not_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let g = grant(1000, 1);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        for stamp in [T0 - 31, T0 + 31] {
            let r = c.call(&request(&g, 10, b"old", stamp)).await.unwrap();
            assert_eq!(r.decision.reason(), Some(Reason::StaleRequest));
            assert_eq!(r.decision.debited_uj, 0);
            let v = jcp_receipt::verify_receipt(&r.receipt, Some(&steward().did())).unwrap();
            assert_eq!(v.core.verdict, Verdict::Deny(Reason::StaleRequest));
        }
        // At the edge of the window it is fresh; the endpoint decides at its
        // own clock, never at the stamp.
        assert!(c.call(&request(&g, 10, b"edge", T0 - 30)).await.unwrap().decision.is_allow());
        // A stale request was not remembered: once the clock comes back to
        // it, the same request is decided (and only then remembered).
        let req = request(&g, 10, b"later", T0 + 40);
        let r1 = c.call(&req).await.unwrap();
        assert_eq!(r1.decision.reason(), Some(Reason::StaleRequest));
        clock.set(T0 + 40);
        let r2 = c.call(&req).await.unwrap();
        assert!(r2.decision.is_allow());
        // Once its stamp has left the window, a repeat is stale.
        clock.set(T0 + 71);
        let r3 = c.call(&req).await.unwrap();
        assert_eq!(r3.decision.reason(), Some(Reason::StaleRequest));
        assert_eq!(s.endpoint.stats().stale, 4);
        s.stop().await;
    });
}

#[test]
fn c13_an_impersonated_caller_is_denied_bad_signature_sealed_and_not_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let g = grant(1000, 1);
        // The thief signs with its own key but names the agent as caller.
        let genuine = request(&g, 100, b"steal", T0);
        let thief = common::key(66);
        let forged = WireRequest { signature: thief.sign(&genuine.signed_bytes()), ..genuine.clone() };
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let r = c.call(&forged).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::BadSignature));
        assert_eq!(r.decision.budget_remaining_uj, 1000);
        let v = jcp_receipt::verify_receipt(&r.receipt, Some(&steward().did())).unwrap();
        assert_eq!(v.core.subject, agent().did());
        // The genuine request (same signed content) is not shadowed by the
        // refused one: it was never remembered.
        let ok = c.call(&genuine).await.unwrap();
        assert!(ok.decision.is_allow());
        assert_eq!(s.endpoint.stats().impersonated, 1);
        s.stop().await;
    });
    // The refused impersonation is evidence: its receipt is in the record.
    let k = kinds(&path);
    assert_eq!(k, vec![RecordKind::Receipt, RecordKind::Request, RecordKind::Receipt]);
}

#[test]
fn c08_decided_once_holds_across_a_restart_and_spend_is_not_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(1000, 1);
    let req = request(&g, 700, b"once", T0);
    let first = rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let r = c.call(&req).await.unwrap();
        s.stop().await;
        r
    });
    assert!(first.decision.is_allow());
    clock.set(T0 + 10);
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        assert_eq!(s.report.requests_remembered, 1);
        assert_eq!(s.report.replay.replayed_allows, 1);
        let mut c = Client::connect(&s.unix).await.unwrap();
        let again = c.call(&req).await.unwrap();
        assert_eq!(again, first, "the same response after a restart");
        let next = c.call(&request(&g, 400, b"more", T0 + 10)).await.unwrap();
        assert_eq!(next.decision.reason(), Some(Reason::BudgetExceeded), "the replayed spend binds");
        assert_eq!(s.endpoint.stats().decided, 1);
        s.stop().await;
    });
    // Outside the window after the restart, the repeat is stale: not remembered.
    clock.set(T0 + 100);
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        assert_eq!(s.report.requests_remembered, 0);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        assert_eq!(c.call(&req).await.unwrap().decision.reason(), Some(Reason::StaleRequest));
        s.stop().await;
    });
}

#[test]
fn s4_11_a_second_endpoint_on_the_same_record_fails_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let e = jcp_wire::endpoint::Endpoint::open(config(&path, &clock), steward(), jcp::decision::Gate::new(), None)
            .unwrap_err();
        assert_eq!(e.code(), "stream-locked", "{e}");
        s.stop().await;
        // Released on shutdown.
        let (ep, _) =
            jcp_wire::endpoint::Endpoint::open(config(&path, &clock), steward(), jcp::decision::Gate::new(), None)
                .unwrap();
        ep.shutdown().await.unwrap();
    });
}

#[test]
fn c06_a_revocation_on_the_wire_is_recorded_before_it_applies_and_receipts_state_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(1000, 1);
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let r0 = c.call(&request(&g, 10, b"a", T0)).await.unwrap();
        assert_eq!(jcp_receipt::verify_receipt(&r0.receipt, None).unwrap().position.known_through, Some(0));
        // A forged revocation (not the issuer) is refused and changes nothing.
        let thief = common::key(66);
        let forged = Revocation { grant_id: g.id(), revoked_by: thief.did(), nonce: [7; 16] };
        let bytes = forged.to_value().encode();
        let forged = jcp::revocation::SignedRevocation::from_value(&jcp::cbor::map([
            ("revocation", Some(forged.to_value())),
            ("sig", Some(jcp::cbor::Value::Bytes(thief.sign(&bytes).to_vec()))),
        ]))
        .unwrap();
        let a = c
            .feed(&Feed::Revocation { revocation: forged, grant: g.clone(), marker: 9 }.signed_by(&feed_key()))
            .await
            .unwrap();
        assert!(!a.admitted, "{a:?}");
        assert_eq!(a.known_through, Some(0), "a refused revocation moves no marker");
        assert!(c.call(&request(&g, 10, b"b", T0)).await.unwrap().decision.is_allow());
        let rev = Revocation::issue(&g, &issuer(), Some([1; 16])).unwrap();
        let a = c
            .feed(&Feed::Revocation { revocation: rev, grant: g.clone(), marker: 3 }.signed_by(&feed_key()))
            .await
            .unwrap();
        assert!(a.admitted, "{a:?}");
        assert_eq!(a.known_through, Some(3));
        let r = c.call(&request(&g, 10, b"c", T0)).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::Revoked));
        assert_eq!(jcp_receipt::verify_receipt(&r.receipt, None).unwrap().position.known_through, Some(3));
        s.stop().await;
    });
    // After a restart the revocation is still held (replayed from the record).
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let r = c.call(&request(&g, 10, b"d", T0)).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::Revoked));
        assert_eq!(jcp_receipt::verify_receipt(&r.receipt, None).unwrap().position.known_through, Some(3));
        s.stop().await;
    });
    let k = kinds(&path);
    let rev_at = k.iter().position(|k| *k == RecordKind::Revocation).unwrap();
    assert!(k[..rev_at].contains(&RecordKind::Grant), "the revoked grant is recorded so replay can re-admit it");
}

/// Reads whatever the endpoint sends until it closes; returns the messages.
async fn drain(c: &mut Client) -> Vec<Outbound> {
    let mut out = Vec::new();
    while let Ok(Ok(m)) = tokio::time::timeout(Duration::from_secs(5), c.recv()).await {
        out.push(m);
    }
    out
}

#[test]
fn c08_misbehaving_clients_never_stop_the_endpoint_answering_a_well_behaved_one() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    rt().block_on(async {
        let mut cfg = config(&path, &clock);
        cfg.cap = 32 * 1024;
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let mut good = Client::connect(&s.tcp).await.unwrap();
        let mut n = 0u64;
        let mut ask = |c: &'static [u8]| {
            n += 1;
            request(&g, 1, c, T0 + n % 10)
        };
        // Garbage: a length and bytes that are not CBOR.
        let mut bad = Client::connect(&s.tcp).await.unwrap();
        bad.send_raw(&codec::frame(b"\xff\xfe garbage")).await.unwrap();
        let m = drain(&mut bad).await;
        assert!(matches!(&m[..], [Outbound::Error { code, .. }] if code == "non-canonical"), "{m:?}");
        assert!(good.call(&ask(b"1")).await.unwrap().decision.is_allow());
        // An oversized declared length: refused before any body is read.
        let mut big = Client::connect(&s.unix).await.unwrap();
        big.send_raw(&(100 * 1024 * 1024u32).to_be_bytes()).await.unwrap();
        let m = drain(&mut big).await;
        assert!(matches!(&m[..], [Outbound::Error { code, .. }] if code == "frame-oversized"), "{m:?}");
        assert!(good.call(&ask(b"2")).await.unwrap().decision.is_allow());
        // A well-formed map that is not a request.
        let mut odd = Client::connect(&s.tcp).await.unwrap();
        odd.send_raw(&codec::frame_value(&jcp::cbor::map([("frame", Some(jcp::cbor::Value::Uint(1)))]))).await.unwrap();
        let m = drain(&mut odd).await;
        assert!(matches!(&m[..], [Outbound::Error { code, .. }] if code == "not-a-message"), "{m:?}");
        // A half frame, then silence: the endpoint answers others meanwhile
        // and cuts the half frame after its frame timeout.
        let mut half = tokio::net::TcpStream::connect(match &s.tcp {
            jcp_wire::endpoint::Address::Tcp(a) => a.clone(),
            _ => unreachable!(),
        })
        .await
        .unwrap();
        let whole = codec::frame_value(&ask(b"half").to_value());
        half.write_all(&whole[..whole.len() / 2]).await.unwrap();
        assert!(good.call(&ask(b"3")).await.unwrap().decision.is_allow());
        // 500 connections held open at once.
        let mut held = Vec::new();
        for _ in 0..250 {
            held.push(Client::connect(&s.tcp).await.unwrap());
            held.push(Client::connect(&s.unix).await.unwrap());
        }
        assert!(good.call(&ask(b"4")).await.unwrap().decision.is_allow());
        // Each of them can still be answered.
        for (i, h) in held.iter_mut().enumerate().step_by(50) {
            let r = h.call(&request(&g, 1, format!("held {i}").as_bytes(), T0)).await.unwrap();
            assert!(r.decision.is_allow());
        }
        drop(held);
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(good.call(&ask(b"5")).await.unwrap().decision.is_allow());
        assert!(s.endpoint.stats().refused_frames >= 4, "{:?}", s.endpoint.stats());
        s.stop().await;
    });
}

#[test]
fn c08_the_record_holds_every_response_before_it_leaves() {
    // Group commit: many clients at once; after the endpoint stops, every
    // allowed response's receipt is in the record and replay re-establishes
    // exactly the spend the responses stated.
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(10_000, 1);
    let (ids, remaining) = rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let mut tasks = Vec::new();
        for t in 0..16u32 {
            let addr = if t % 2 == 0 { s.tcp.clone() } else { s.unix.clone() };
            let g = g.clone();
            tasks.push(tokio::spawn(async move {
                let mut c = Client::connect(&addr).await.unwrap();
                let mut got = Vec::new();
                for i in 0..20u32 {
                    let r = c.call(&request(&g, 30, format!("{t}/{i}").as_bytes(), T0)).await.unwrap();
                    got.push(r);
                }
                got
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        let st = s.endpoint.stats();
        assert_eq!(st.decided, 320);
        assert!(st.commits <= 320);
        s.stop().await;
        let allows: Vec<ContentId> = all.iter().filter(|r| r.decision.is_allow()).map(|r| r.receipt_id()).collect();
        let min_remaining = all.iter().map(|r| r.decision.budget_remaining_uj).min().unwrap();
        (allows, min_remaining)
    });
    assert_eq!(ids.len(), 320);
    assert_eq!(remaining, 10_000 - 320 * 30);
    let mut in_record = std::collections::HashSet::new();
    for i in Reader::new(std::fs::File::open(&path).unwrap()).unwrap() {
        if let Item::Record(r) = i {
            if r.kind == RecordKind::Receipt {
                in_record.insert(ContentId::of_bytes(&r.payload));
            }
        }
    }
    assert!(ids.iter().all(|id| in_record.contains(id)));
    let (dg, _) = jcp_receipt::runtime::DurableGate::open(&path, steward(), jcp::decision::Gate::new()).unwrap();
    assert_eq!(dg.gate().spent(&g.id()).uj, 320 * 30);
}

#[test]
fn c08_the_endpoint_answers_in_process_through_the_same_record() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    rt().block_on(async {
        let (ep, _) =
            jcp_wire::endpoint::Endpoint::open(config(&path, &clock), steward(), jcp::decision::Gate::new(), None)
                .unwrap();
        let g = grant(100, 1);
        let req = request(&g, 60, b"x", T0);
        let a = ep.submit(req.clone()).await.unwrap();
        let b = ep.submit(req).await.unwrap();
        assert_eq!(a, b);
        let Outbound::Response(r) = Outbound::decode(&a[4..]).unwrap() else { panic!() };
        assert!(r.decision.is_allow());
        ep.shutdown().await.unwrap();
    });
}

#[test]
fn c21_an_amendment_on_the_wire_supersedes_the_steered_grant_also_after_a_restart() {
    use jcp::energy::Provenance;
    use jcp::steering::{AmendInput, CheckpointInput, Run, Spent};
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(1000, 1);
    let mut run = Run::new(g.clone());
    let (cp, am, cont) = rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        assert!(c.call(&request(&g, 700, b"work", T0)).await.unwrap().decision.is_allow());
        let cp = run
            .checkpoint(
                &agent(),
                CheckpointInput {
                    state: ContentId([1; 32]),
                    at: T0,
                    spent: Some(Spent { uj: 700, provenance: Provenance::HwShunt }),
                    nonce: Some([1; 16]),
                },
            )
            .unwrap();
        // A widening (above the 300 µJ remainder) is refused and changes nothing.
        let mut wide = run.clone();
        let wide_res = wide.amend(&issuer(), AmendInput { budget_uj: 400, ..AmendInput::default() });
        assert!(wide_res.is_err(), "the amending side refuses a widening too");
        let (am, cont) = run.amend(&issuer(), AmendInput { budget_uj: 300, ..AmendInput::default() }).unwrap();
        // The agent cannot amend its own run.
        let forged = jcp::steering::Amendment { amended_by: agent().did(), ..am.amendment().clone() }.sign(&agent());
        let a = c
            .feed(
                &Feed::Amendment {
                    steered: g.clone(),
                    checkpoint: cp.clone(),
                    amendment: forged,
                    continuation: cont.clone(),
                    marker: None,
                }
                .signed_by(&feed_key()),
            )
            .await
            .unwrap();
        assert!(!a.admitted, "{a:?}");
        assert!(c.call(&request(&g, 0, b"still mine", T0)).await.unwrap().decision.is_allow());
        let a = c
            .feed(
                &Feed::Amendment {
                    steered: g.clone(),
                    checkpoint: cp.clone(),
                    amendment: am.clone(),
                    continuation: cont.clone(),
                    marker: None,
                }
                .signed_by(&feed_key()),
            )
            .await
            .unwrap();
        assert!(a.admitted, "{a:?}");
        let r = c.call(&request(&g, 1, b"old grant", T0)).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::Superseded));
        assert!(c.call(&request(&cont, 300, b"continued", T0)).await.unwrap().decision.is_allow());
        assert_eq!(
            c.call(&request(&cont, 1, b"past the ceiling", T0)).await.unwrap().decision.reason(),
            Some(Reason::BudgetExceeded)
        );
        s.stop().await;
        (cp, am, cont)
    });
    let _ = (cp, am);
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        assert_eq!(s.report.replay.rejected_total(), 0, "{:?}", s.report.replay.rejected);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        assert_eq!(
            c.call(&request(&g, 1, b"after restart", T0)).await.unwrap().decision.reason(),
            Some(Reason::Superseded)
        );
        assert_eq!(
            c.call(&request(&cont, 1, b"after restart", T0)).await.unwrap().decision.reason(),
            Some(Reason::BudgetExceeded)
        );
        s.stop().await;
    });
}

#[test]
fn s4_11_the_holder_settles_an_allowed_decision_and_nobody_else_can() {
    use jcp_receipt::record::OutcomeStatus;
    use jcp_wire::message::SignedOutcome;
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(1000, 1);
    let (a, b) = rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let a = c.call(&request(&g, 10, b"one", T0)).await.unwrap();
        let b = c.call(&request(&g, 10, b"two", T0)).await.unwrap();
        // Both allows await their outcome, counted and exposed.
        assert_eq!(s.endpoint.stats().unresolved, 2);
        assert!(s.endpoint.render_metrics().unwrap().contains("\njcp_wire_unresolved_allows 2\n"));
        // Not the holder: refused.
        let thief = common::key(66);
        let r = c
            .feed(&Feed::Outcome(SignedOutcome::sign(a.receipt_id(), OutcomeStatus::Completed, &thief)))
            .await
            .unwrap();
        assert_eq!((r.admitted, r.code.as_str()), (false, "wrong-subject"), "{r:?}");
        // A forged signature: refused.
        let mut forged = SignedOutcome::sign(a.receipt_id(), OutcomeStatus::Completed, &agent());
        forged.status = OutcomeStatus::Failed;
        let r = c.feed(&Feed::Outcome(forged)).await.unwrap();
        assert_eq!((r.admitted, r.code.as_str()), (false, "bad-signature"), "{r:?}");
        // The holder: recorded; a second report of the same is refused.
        let r = c
            .feed(&Feed::Outcome(SignedOutcome::sign(a.receipt_id(), OutcomeStatus::Completed, &agent())))
            .await
            .unwrap();
        assert!(r.admitted, "{r:?}");
        let r =
            c.feed(&Feed::Outcome(SignedOutcome::sign(a.receipt_id(), OutcomeStatus::Failed, &agent()))).await.unwrap();
        assert_eq!((r.admitted, r.code.as_str()), (false, "outcome-unknown"), "{r:?}");
        // Counted as of the batch that recorded the outcome.
        assert_eq!(s.endpoint.stats().unresolved, 1);
        s.stop().await;
        // A restarted endpoint counts what the replay left unresolved.
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        assert_eq!(s.endpoint.stats().unresolved, 1);
        assert!(s.endpoint.render_metrics().unwrap().contains("\njcp_wire_unresolved_allows 1\n"));
        s.stop().await;
        (a, b)
    });
    // After a restart only the unsettled allow is unresolved, naming its
    // holder and the steward that recorded it.
    let (dg, rep) = jcp_receipt::runtime::DurableGate::open(&path, steward(), jcp::decision::Gate::new()).unwrap();
    assert_eq!(rep.unresolved.len(), 1);
    assert_eq!((rep.unresolved[0].holder, rep.unresolved[0].steward), (agent().did(), steward().did()));
    let b_id = b.receipt_id();
    let held = dg.pending_of(&b_id).unwrap();
    assert_eq!(
        (held.receipt, held.holder, held.cost_uj, held.action.as_str()),
        (b_id, agent().did(), 10, "read"),
        "{held:?}"
    );
    assert!(dg.pending_of(&a.receipt_id()).is_none(), "settled");
    assert_eq!((dg.pending_len(), dg.pending().count()), (1, 1));
    drop(dg);
}

#[test]
fn c08_the_remembered_table_forgets_requests_whose_stamp_left_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        for i in 0..50u32 {
            assert!(c.call(&request(&g, 1, format!("{i}").as_bytes(), T0)).await.unwrap().decision.is_allow());
        }
        assert_eq!(s.endpoint.stats().remembered, 50);
        let held = s.endpoint.stats().remembered_bytes;
        assert!(held > 0 && held <= jcp_wire::endpoint::remembered_table_bytes(50), "{held}");
        clock.set(T0 + 31);
        // The 50 stamps left the window: each decision forgets up to 16 of
        // them (never a pass over the whole table), so four decisions later
        // only the four new requests are held.
        let mut held = Vec::new();
        for i in 0..4u32 {
            let late = request(&g, 1, format!("late {i}").as_bytes(), T0 + 31);
            assert!(c.call(&late).await.unwrap().decision.is_allow());
            held.push(s.endpoint.stats().remembered);
        }
        assert_eq!(held, [35, 20, 5, 4], "16 forgotten per decision, one remembered");
        s.stop().await;
    });
}

#[test]
fn s4_11_batches_decided_within_the_commit_interval_share_one_sync_and_none_leaves_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let mut cfg = config(&path, &clock);
    cfg.commit_interval = Duration::from_millis(300);
    rt().block_on(async {
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        // One request first: the first sync starts at once (no sync before it).
        let g = grant(1_000_000, 1);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        assert!(c.call(&request(&g, 1, b"first", T0)).await.unwrap().decision.is_allow());
        assert_eq!(s.endpoint.stats().commits, 1);
        // Eight clients at once, within 300 ms of that sync: they wait out
        // the interval and share the next sync (or two, if the core split them).
        let t = std::time::Instant::now();
        let calls = (0..8u8).map(|i| {
            let addr = s.tcp.clone();
            let g = g.clone();
            tokio::spawn(async move {
                let mut c = Client::connect(&addr).await.unwrap();
                c.call(&request(&g, 1, &[i], T0)).await.unwrap()
            })
        });
        for call in calls.collect::<Vec<_>>() {
            assert!(call.await.unwrap().decision.is_allow());
        }
        let commits = s.endpoint.stats().commits;
        assert!((2..=3).contains(&commits), "9 decisions in {commits} syncs");
        assert!(t.elapsed() >= Duration::from_millis(150), "answered before the interval was out: {:?}", t.elapsed());
        s.stop().await;
    });
    // Everything answered is in the record.
    assert_eq!(kinds(&path).iter().filter(|k| **k == RecordKind::Receipt).count(), 9);
}

/// §4.3: "a larger value mean[s] 'has seen at least as much'" — so the
/// marker must come from the operator's feed, not from anyone who can
/// connect. A revocation fed unsigned over the network (the marker outside
/// every signature) is refused `feed-unauthenticated` and moves nothing;
/// one signed by a key the endpoint was not configured with is refused; a
/// signed one whose marker was changed after signing is `bad-signature`;
/// the operator's signed feed and its admin socket (owner-only, unsigned
/// allowed) are admitted. Outcomes, signed by their holders, need no feed key.
#[test]
fn c06_s4_3_only_an_authenticated_feed_sets_the_revocation_marker() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(1_000, 1);
    let throwaway = grant(1_000, 2);
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let admin_path = dir.path().join("admin.sock");
        let (al, admin) = jcp_wire::endpoint::Address::Unix(admin_path.clone()).bind().await.unwrap();
        let ep = s.endpoint.clone();
        let admin_task = tokio::spawn(async move { ep.serve_admin(al).await });
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let rev = |gr: &jcp::grant::SignedGrant, n: u8| Revocation::issue(gr, &issuer(), Some([n; 16])).unwrap();
        let unsigned = Feed::Revocation { revocation: rev(&throwaway, 1), grant: throwaway.clone(), marker: 1_000_000 };
        let a = c.feed(&unsigned).await.unwrap();
        assert_eq!((a.admitted, a.code.as_str()), (false, "feed-unauthenticated"), "{a:?}");
        let a = c.feed(&unsigned.clone().signed_by(&common::key(91))).await.unwrap();
        assert_eq!((a.admitted, a.code.as_str()), (false, "feed-unauthenticated"), "{a:?}");
        let Feed::Signed { feed, by, sig } = unsigned.clone().signed_by(&feed_key()) else { unreachable!() };
        let Feed::Revocation { revocation, grant: gr, .. } = *feed else { unreachable!() };
        let moved =
            Feed::Signed { feed: Box::new(Feed::Revocation { revocation, grant: gr, marker: 2_000_000 }), by, sig };
        let a = c.feed(&moved).await.unwrap();
        assert_eq!((a.admitted, a.code.as_str()), (false, "bad-signature"), "{a:?}");
        assert_eq!(s.endpoint.known_through().await.unwrap(), Some(0), "nothing moved the marker");
        // The operator's signed feed.
        let a = c
            .feed(&Feed::Revocation { revocation: rev(&g, 3), grant: g.clone(), marker: 5 }.signed_by(&feed_key()))
            .await
            .unwrap();
        assert!(a.admitted, "{a:?}");
        assert_eq!(a.known_through, Some(5));
        // The admin socket: owner-only, unsigned feeds taken.
        let mode = std::fs::metadata(&admin_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the admin socket is owner-only");
        let mut admin_c = Client::connect(&admin).await.unwrap();
        let a = admin_c.feed(&unsigned).await.unwrap();
        assert!(a.admitted, "{a:?}");
        assert_eq!(a.known_through, Some(1_000_000));
        // A TCP admin listener is refused.
        let (tl, _) = jcp_wire::endpoint::Address::Tcp("127.0.0.1:0".into()).bind().await.unwrap();
        assert_eq!(s.endpoint.serve_admin(tl).await.unwrap_err().code(), "bad-address");
        admin_task.abort();
        s.stop().await;
    });
}

/// §11: "The endpoint MUST decide at its own clock … MUST NOT decide any
/// request as of the time it names." A request stamped inside the
/// freshness window, before its grant's expiry and before a `NotAfter`
/// caveat's bound, that arrives after them is decided at the endpoint's
/// clock: `expired`, then `caveat-unsatisfied` — never allowed as of its stamp.
#[test]
fn s11_the_endpoint_decides_at_its_own_clock_not_the_time_a_request_names() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let mint = |expiry: u64, caveats: Vec<jcp::grant::Caveat>, nonce: u8| {
        jcp::grant::Grant {
            issuer: issuer().did(),
            subject: agent().did(),
            capability: jcp::grant::Capability { resource: resource(), actions: vec!["read".into()] },
            budget_uj: 1_000,
            budget_funds: None,
            caveats,
            expiry,
            parent: None,
            delegate_depth: None,
            nonce: [nonce; 16],
        }
        .sign(&issuer())
        .unwrap()
    };
    let expiring = mint(T0 + 5, vec![], 1);
    let bounded = mint(0, vec![jcp::grant::Caveat::NotAfter(T0 + 5)], 2);
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        // Stamped and arriving inside the bounds, the grants are allowed.
        clock.set(T0 + 1);
        assert!(c.call(&request(&expiring, 1, b"c", T0 + 1)).await.unwrap().decision.is_allow());
        assert!(c.call(&request(&bounded, 1, b"d", T0 + 1)).await.unwrap().decision.is_allow());
        // Stamped at T0 + 2 (inside both bounds), arriving at T0 + 20 (inside the 30 s window).
        let early_expiring = request(&expiring, 1, b"a", T0 + 2);
        let early_bounded = request(&bounded, 1, b"b", T0 + 2);
        clock.set(T0 + 20);
        let r = c.call(&early_expiring).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::Expired), "{:?}", r.decision);
        let r = c.call(&early_bounded).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::CaveatUnsatisfied), "{:?}", r.decision);
        s.stop().await;
    });
}
