//! §11 and §4.11 under hostile frames: no frame a caller can send stops the
//! endpoint deciding. Every admitted message is recorded, so the cap plus a
//! record's envelope fits one stream record; every caller-controlled field
//! that reaches a receipt is bounded in the decoder; a request that could
//! still not be recorded is refused alone. Real TCP and Unix sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::rt;

use std::time::Duration;

use common::*;
use jcp::cbor::ContentId;
use jcp::decision::{Reason, Verdict};
use jcp_wire::client::Client;
use jcp_wire::codec;
use jcp_wire::message::{Outbound, RequestBody, WireRequest, MAX_ACTION_LEN};

/// A request on `g` whose args are `args` and whose action is `action`,
/// stamped `now`; `garbage`: a signature that verifies under no one.
fn crafted(g: &jcp::grant::SignedGrant, args: Vec<u8>, action: &str, now: u64, garbage: bool) -> WireRequest {
    let base = request(g, 1, b"x", now);
    let mut frame = base.frame.clone();
    frame.action = action.into();
    frame.payload_hash = ContentId::of_bytes(&args);
    let body = RequestBody {
        frame,
        chain: base.chain.clone(),
        cost: base.cost,
        money: None,
        label: base.label.clone(),
        args: Some(args),
        continues: None,
        now,
    };
    let mut r = body.sign(&agent());
    if garbage {
        r.signature = [0x5a; 64];
    }
    r
}

/// Whatever the endpoint sends until it closes the connection.
async fn drain(c: &mut Client) -> Vec<Outbound> {
    let mut out = Vec::new();
    while let Ok(Ok(m)) = tokio::time::timeout(Duration::from_secs(5), c.recv()).await {
        out.push(m);
    }
    out
}

fn refused_with(m: &[Outbound], want: &str) -> bool {
    matches!(m, [Outbound::Error { code, .. }] if code == want)
}

#[test]
fn s11_oversized_frames_are_refused_alone_and_a_good_request_after_them_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let s = Served::start(config(&dir.path().join("s.jcps"), &clock), dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let mut good = Client::connect(&s.tcp).await.unwrap();
        let variants = [
            ("70 kB of args", crafted(&g, vec![7; 70_000], "read", T0, false)),
            ("a 70 kB action, garbage signature", crafted(&g, b"x".to_vec(), &"a".repeat(70_000), T0, true)),
            ("a 70 kB action, stale stamp", crafted(&g, b"x".to_vec(), &"a".repeat(70_000), T0 - 3600, false)),
        ];
        for (n, (what, bad)) in variants.into_iter().enumerate() {
            let mut c = Client::connect(if n % 2 == 0 { &s.tcp } else { &s.unix }).await.unwrap();
            c.send_raw(&codec::frame_value(&bad.to_value())).await.unwrap();
            let m = drain(&mut c).await;
            assert!(refused_with(&m, "frame-oversized"), "{what}: {m:?}");
            let ok = good.call(&request(&g, 1, format!("after {n}").as_bytes(), T0)).await.unwrap();
            assert!(ok.decision.is_allow(), "{what}: the next good request is allowed: {ok:?}");
        }
        let st = s.endpoint.stats();
        assert_eq!((st.unrecorded, st.allowed, st.refused_frames), (0, 3, 3), "{st:?}");
        s.stop().await;
    });
}

#[test]
fn s11_an_action_over_its_bound_is_refused_by_the_decoder_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let s = Served::start(config(&dir.path().join("s.jcps"), &clock), dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let mut good = Client::connect(&s.unix).await.unwrap();
        let long = "a".repeat(MAX_ACTION_LEN + 1);
        for (what, bad) in [
            ("garbage signature", crafted(&g, b"x".to_vec(), &long, T0, true)),
            ("stale stamp", crafted(&g, b"x".to_vec(), &long, T0 - 3600, false)),
            ("signed and fresh", crafted(&g, b"x".to_vec(), &long, T0, false)),
        ] {
            let mut c = Client::connect(&s.tcp).await.unwrap();
            c.send_raw(&codec::frame_value(&bad.to_value())).await.unwrap();
            let m = drain(&mut c).await;
            let [Outbound::Error { code, message }] = &m[..] else { panic!("{what}: {m:?}") };
            assert_eq!(code, "not-a-message", "{what}: {message}");
            assert!(message.contains("action") && message.contains(&MAX_ACTION_LEN.to_string()), "{message}");
            assert!(good.call(&request(&g, 1, what.as_bytes(), T0)).await.unwrap().decision.is_allow(), "{what}");
        }
        // An action at its bound is a request like any other.
        let at = crafted(&g, b"at".to_vec(), &"a".repeat(MAX_ACTION_LEN), T0, false);
        let r = good.call(&at).await.unwrap();
        assert_eq!(r.decision.verdict, Verdict::Deny(Reason::ActionNotGranted), "decided, not refused: {r:?}");
        assert_eq!(s.endpoint.stats().unrecorded, 0);
        s.stop().await;
    });
}

/// A request whose body is exactly the cap: `args` sized to make it so.
fn at_the_cap(g: &jcp::grant::SignedGrant) -> WireRequest {
    let mut n = 1_000;
    loop {
        let r = crafted(g, vec![3; n], "read", T0, false);
        let len = r.to_bytes().len();
        if len == codec::MAX_ENDPOINT_CAP {
            return r;
        }
        // The length grows with the args one for one (their header is
        // 3 bytes throughout this range), so one step lands on the cap.
        n = if len < codec::MAX_ENDPOINT_CAP {
            n + (codec::MAX_ENDPOINT_CAP - len)
        } else {
            n - (len - codec::MAX_ENDPOINT_CAP)
        };
    }
}

#[test]
fn s11_a_request_of_exactly_the_cap_is_recorded_decided_and_decided_once_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jcps");
    let clock = TestClock::new(T0);
    let g = grant(1_000_000, 1);
    let req = at_the_cap(&g);
    let first = rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let r = c.call(&req).await.unwrap();
        assert!(r.decision.is_allow(), "{r:?}");
        assert_eq!(s.endpoint.stats().unrecorded, 0);
        s.stop().await;
        r
    });
    rt().block_on(async {
        let s = Served::start(config(&path, &clock), dir.path(), None).await.unwrap();
        assert_eq!(s.report.requests_remembered, 1, "{:?}", s.report);
        let mut c = Client::connect(&s.unix).await.unwrap();
        let again = c.call(&req).await.unwrap();
        assert_eq!(again, first, "the repeat gets the first response");
        assert_eq!(s.endpoint.stats().repeats, 1);
        s.stop().await;
    });
}

#[test]
fn s11_a_cap_above_what_one_record_holds_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let mut cfg = config(&dir.path().join("s.jcps"), &clock);
    cfg.cap = codec::MAX_ENDPOINT_CAP + 1;
    let e = jcp_wire::endpoint::Endpoint::open(cfg, steward(), jcp::decision::Gate::new(), None).unwrap_err();
    assert_eq!(e.code(), "cap-above-record", "{e}");
    assert!(!dir.path().join("s.jcps").exists(), "nothing is opened before the cap is checked");
}

#[test]
fn s11_an_in_process_request_over_the_cap_is_refused_like_a_socket_one() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let s = Served::start(config(&dir.path().join("s.jcps"), &clock), dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let e = s.endpoint.submit(crafted(&g, vec![7; 70_000], "read", T0, false)).await.unwrap_err();
        assert_eq!(e.code(), "frame-oversized", "{e}");
        let e = s.endpoint.submit(crafted(&g, b"x".to_vec(), &"a".repeat(2_000), T0, true)).await.unwrap_err();
        assert_eq!(e.code(), "not-a-message", "{e}");
        let mut c = Client::connect(&s.tcp).await.unwrap();
        assert!(c.call(&request(&g, 1, b"good", T0)).await.unwrap().decision.is_allow());
        assert_eq!(s.endpoint.stats().unrecorded, 0);
        s.stop().await;
    });
}

/// Issue 34: `--listen unix:PATH` never removes what is not a socket. A
/// regular file (or a link to one) at the path is refused and left as it
/// was; a stale socket is replaced.
#[test]
fn s11_binding_a_unix_path_removes_only_a_stale_socket() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let file = dir.path().join("precious.txt");
        std::fs::write(&file, b"the operator's file").unwrap();
        let link = dir.path().join("link.sock");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        for p in [&file, &link] {
            let e = jcp_wire::endpoint::Address::Unix(p.clone()).bind().await.unwrap_err();
            assert!(e.to_string().contains("not a socket"), "{e}");
        }
        assert_eq!(std::fs::read(&file).unwrap(), b"the operator's file");
        assert!(std::fs::symlink_metadata(&link).is_ok(), "the link is left too");
        // A socket left by a process that is gone is replaced.
        let stale = dir.path().join("stale.sock");
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        let (_l, _) = jcp_wire::endpoint::Address::Unix(stale.clone()).bind().await.unwrap();
        // And at shutdown only a socket is removed.
        jcp_wire::endpoint::remove_socket(&file);
        assert!(file.exists());
        jcp_wire::endpoint::remove_socket(&stale);
        assert!(!stale.exists());
    });
}
