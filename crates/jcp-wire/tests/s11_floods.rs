//! Issue 34, "Unauthenticated traffic grows the durable record without
//! bound" (§11, §4.11): per-source rate limits before the core, and a
//! record high-water mark that sheds what cannot be authenticated first,
//! then a limit past which nothing more is decided. Real TCP sockets; a
//! flooding source on 127.0.0.2, a well-behaved one on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::rt;

use std::time::Duration;

use common::*;
use jcp::decision::{Gate, Reason, Verdict};
use jcp_wire::client::Client;
use jcp_wire::codec;
use jcp_wire::endpoint::limits::Rate;
use jcp_wire::message::{Outbound, WireRequest};

/// A client whose connection comes from `local` (an address on loopback).
async fn connect_from(local: [u8; 4], to: &jcp_wire::endpoint::Address) -> Client {
    let jcp_wire::endpoint::Address::Tcp(addr) = to else { panic!("tcp") };
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(std::net::SocketAddr::from((local, 0))).unwrap();
    Client::over_tcp(sock.connect(addr.parse().unwrap()).await.unwrap())
}

/// A request whose caller signature verifies under no one.
fn garbage(g: &jcp::grant::SignedGrant, n: u32) -> WireRequest {
    let mut r = request(g, 1, format!("garbage {n}").as_bytes(), T0);
    r.signature = [0x5a; 64];
    r
}

/// What one request on a fresh connection gets: a decision or an error frame.
async fn one(c: &mut Client, r: &WireRequest) -> Outbound {
    c.send_raw(&codec::frame_value(&r.to_value())).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), c.recv()).await.unwrap().unwrap()
}

fn len(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

#[test]
fn s11_a_source_out_of_refusals_is_rate_limited_before_the_core_and_another_is_decided() {
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("s.jcps");
    let clock = TestClock::new(T0);
    let mut cfg = config(&stream, &clock);
    cfg.refusals_per_source = Some(Rate { per_s: 0.01, burst: 4.0 });
    rt().block_on(async {
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let (mut refused, mut limited, mut after_four) = (0, 0, 0);
        for n in 0..20 {
            let mut c = connect_from([127, 0, 0, 2], &s.tcp).await;
            match one(&mut c, &garbage(&g, n)).await {
                Outbound::Response(r) => {
                    assert_eq!(r.decision.verdict, Verdict::Deny(Reason::BadSignature));
                    refused += 1;
                }
                Outbound::Error { code, message } => {
                    assert_eq!(code, "rate-limited", "{message}");
                    assert!(message.contains("127.0.0.2") && message.contains("try again in"), "{message}");
                    limited += 1;
                }
                other => panic!("{other:?}"),
            }
            if n == 3 {
                after_four = len(&stream);
            }
        }
        assert_eq!((refused, limited), (4, 16), "the burst of refusals, then nothing reaches the core");
        assert_eq!(len(&stream), after_four, "what the flood costs the record stops with its refusals");
        // Another source is decided as before, and its refusals are its own.
        let mut good = connect_from([127, 0, 0, 1], &s.tcp).await;
        let ok = good.call(&request(&g, 1, b"good", T0)).await.unwrap();
        assert!(ok.decision.is_allow(), "{ok:?}");
        let st = s.endpoint.stats();
        assert_eq!((st.rate_limited, st.impersonated), (16, 4));
        let m = s.endpoint.render_metrics().unwrap();
        assert!(m.contains("jcp_wire_rate_limited_total 16"), "{m}");
        s.stop().await;
    });
}

#[test]
fn s11_statement_asks_for_no_channel_cost_refusals_and_a_source_out_of_them_is_limited_before_the_core() {
    // A statement ask needs no key, and each was a job for the core however
    // many came: an ask for a channel the endpoint does not hold is now a
    // refusal its source pays for, and past its budget it is answered
    // `rate-limited` on the connection (closed), the core never asked.
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("s.jcps");
    let clock = TestClock::new(T0);
    let mut cfg = config(&stream, &clock);
    cfg.refusals_per_source = Some(Rate { per_s: 0.01, burst: 3.0 });
    rt().block_on(async {
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let (mut refused, mut limited) = (0, 0);
        for n in 0..10u8 {
            let mut c = connect_from([127, 0, 0, 2], &s.tcp).await;
            match c.ask_statement(&jcp::cbor::ContentId::of_bytes(&[n])).await {
                Err(jcp_wire::WireError::Refused { code, message }) if code == "rate-limited" => {
                    assert!(message.contains("127.0.0.2"), "{message}");
                    limited += 1;
                }
                Err(jcp_wire::WireError::Refused { code, .. }) => {
                    assert_eq!(code, "channel-unknown");
                    refused += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!((refused, limited), (3, 7), "the burst of refusals, then nothing reaches the core");
        // Another source asks and is answered by the core as before.
        let mut other = connect_from([127, 0, 0, 1], &s.tcp).await;
        match other.ask_statement(&jcp::cbor::ContentId::of_bytes(b"x")).await {
            Err(jcp_wire::WireError::Refused { code, .. }) => assert_eq!(code, "channel-unknown"),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.endpoint.stats().rate_limited, 7);
        s.stop().await;
    });
}

#[test]
fn s11_a_source_past_its_request_rate_is_rate_limited_and_nothing_of_it_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("s.jcps");
    let clock = TestClock::new(T0);
    let mut cfg = config(&stream, &clock);
    cfg.requests_per_source = Some(Rate { per_s: 0.01, burst: 2.0 });
    rt().block_on(async {
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let mut c = connect_from([127, 0, 0, 2], &s.tcp).await;
        for n in 0..2u8 {
            let r = c.call(&request(&g, 1, &[n], T0)).await.unwrap();
            assert!(r.decision.is_allow());
        }
        let before = len(&stream);
        match one(&mut c, &request(&g, 1, b"third", T0)).await {
            Outbound::Error { code, .. } => assert_eq!(code, "rate-limited"),
            other => panic!("{other:?}"),
        }
        assert_eq!(len(&stream), before, "not decided, not recorded");
        let mut other = connect_from([127, 0, 0, 1], &s.tcp).await;
        assert!(other.call(&request(&g, 1, b"other", T0)).await.unwrap().decision.is_allow());
        s.stop().await;
    });
}

#[test]
fn s11_past_the_high_water_mark_what_cannot_be_authenticated_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("s.jcps");
    let clock = TestClock::new(T0);
    // Opened once to learn how long an empty record is.
    let mut cfg = config(&stream, &clock);
    cfg.refusals_per_source = None;
    let mut gate = Gate::new();
    gate.add_trust_root(resource(), issuer().did());
    rt().block_on(async {
        let probe = Served::start_gated(cfg.clone(), dir.path(), None, gate.clone()).await.unwrap();
        probe.stop().await;
        cfg.record_high_water = Some(len(&stream) + 1);
        let s = Served::start_gated(cfg, dir.path(), None, gate).await.unwrap();
        let g = grant(1_000_000, 1);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        // Below the mark a garbage signature is refused and recorded (§11).
        let first = c.call(&garbage(&g, 0)).await.unwrap();
        assert_eq!(first.decision.verdict, Verdict::Deny(Reason::BadSignature));
        // Now past it: a garbage signature, a stale stamp and a chain no
        // trust root anchors are answered unrecorded, and not recorded.
        let at_mark = len(&stream);
        let untrusted = grant_by(&key(7), 1_000_000, 3);
        let shed = [garbage(&g, 1), request(&g, 1, b"stale", T0 - 3600), request(&untrusted, 1, b"untrusted", T0)];
        for r in &shed {
            let mut c = Client::connect(&s.tcp).await.unwrap();
            let a = c.call(r).await.unwrap();
            assert_eq!(a.decision.verdict, Verdict::Deny(Reason::Unrecorded), "{a:?}");
            assert!(!a.receipt.is_empty(), "the refusal is sealed: the caller holds the steward's word for it");
        }
        assert_eq!(len(&stream), at_mark, "nothing of them reaches the record");
        // An authenticated request goes on being decided and recorded.
        let ok = c.call(&request(&g, 1, b"good", T0)).await.unwrap();
        assert!(ok.decision.is_allow(), "{ok:?}");
        assert!(len(&stream) > at_mark);
        assert_eq!(s.endpoint.stats().shed, 3);
        assert!(s.endpoint.render_metrics().unwrap().contains("jcp_wire_shed_total 3"));
        s.stop().await;
    });
}

#[test]
fn s11_at_the_record_limit_nothing_more_is_decided_or_admitted() {
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("s.jcps");
    let clock = TestClock::new(T0);
    let mut cfg = config(&stream, &clock);
    rt().block_on(async {
        let probe = Served::start(cfg.clone(), dir.path(), None).await.unwrap();
        probe.stop().await;
        let max = len(&stream) + 8 * 1024;
        cfg.record_max = Some(max);
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let g = grant(1_000_000_000, 1);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let mut allowed = 0u32;
        let full = loop {
            let r = c.call(&request(&g, 1, &allowed.to_be_bytes(), T0)).await.unwrap();
            if r.decision.is_allow() {
                allowed += 1;
                assert!(allowed < 1000, "the limit is reached");
                continue;
            }
            break r;
        };
        assert_eq!(full.decision.verdict, Verdict::Deny(Reason::Unrecorded), "{full:?}");
        assert!(allowed > 0);
        let size = len(&stream);
        assert!(
            size >= max && size < max + 8 * 1024,
            "the record stops within one request of its limit: {size} vs {max}"
        );
        // A feed is not admitted either, and the record does not move.
        let rev = jcp::revocation::Revocation::issue(&g, &issuer(), None).unwrap();
        let signed =
            jcp_wire::message::Feed::Revocation { revocation: rev, grant: g.clone(), marker: 1 }.signed_by(&feed_key());
        let a = c.feed(&signed).await.unwrap();
        assert!(!a.admitted && a.code == "unrecorded", "{a:?}");
        assert_eq!(len(&stream), size);
        s.stop().await;
    });
}
