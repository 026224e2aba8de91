//! §11 (the enforcement point stays available): a connection that sends
//! nothing is closed at its first-frame timeout, one that falls silent
//! between frames at its idle timeout, and a connection past the
//! endpoint's cap or its peer address's cap is accepted, answered `busy`
//! and closed, never left waiting in the backlog. A well-behaved client is
//! answered throughout. Real TCP and Unix sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::rt;

use std::time::Duration;

use common::*;
use jcp_wire::client::Client;
use jcp_wire::message::Outbound;
use jcp_wire::WireError;

/// A half frame: `declared` bytes announced, ten sent.
fn half_frame(declared: u32) -> Vec<u8> {
    let mut head = declared.to_be_bytes().to_vec();
    head.extend_from_slice(&[0xa1; 10]);
    head
}

/// What the endpoint sends on `c` before it closes it (within 5 s).
async fn until_closed(c: &mut Client) -> Vec<Outbound> {
    let mut out = Vec::new();
    while let Ok(Ok(m)) = tokio::time::timeout(Duration::from_secs(5), c.recv()).await {
        out.push(m);
    }
    out
}

#[test]
fn s11_silent_connections_are_cut_at_the_first_frame_timeout_and_the_cap_answers_busy_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.max_connections = 3;
        cfg.first_frame_timeout = Duration::from_millis(400);
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        // Three clients that connect and say nothing hold every slot.
        let mut silent = Vec::new();
        for _ in 0..3 {
            silent.push(Client::connect(&s.tcp).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The next is accepted and told `busy` at once, on either listener.
        for addr in [&s.tcp, &s.unix] {
            let mut c = Client::connect(addr).await.unwrap();
            let m = until_closed(&mut c).await;
            assert!(matches!(&m[..], [Outbound::Error { code, .. }] if code == "busy"), "{m:?}");
        }
        // The silent ones are closed without a word at their timeout ...
        for c in &mut silent {
            assert!(until_closed(c).await.is_empty());
        }
        // ... and a good client is answered again.
        let mut good = Client::connect(&s.unix).await.unwrap();
        assert!(good.call(&request(&g, 1, b"after", T0)).await.unwrap().decision.is_allow());
        s.stop().await;
    });
}

#[test]
fn s11_one_peer_address_holds_at_most_its_cap_and_a_silent_client_is_cut_at_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.max_per_peer = 1;
        cfg.idle_timeout = Duration::from_millis(400);
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let mut first = Client::connect(&s.tcp).await.unwrap();
        assert!(first.call(&request(&g, 1, b"one", T0)).await.unwrap().decision.is_allow());
        // A second connection from the same address (127.0.0.1): busy.
        let mut second = Client::connect(&s.tcp).await.unwrap();
        let m = until_closed(&mut second).await;
        assert!(matches!(&m[..], [Outbound::Error { code, .. }] if code == "busy"), "{m:?}");
        // A Unix-socket peer is counted only against the endpoint's cap.
        let mut local = Client::connect(&s.unix).await.unwrap();
        assert!(local.call(&request(&g, 1, b"unix", T0)).await.unwrap().decision.is_allow());
        // The first falls silent past the idle timeout: closed, and with no
        // error frame its next request would read as its answer.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let e = first.call(&request(&g, 1, b"late", T0)).await.unwrap_err();
        assert!(!matches!(e, WireError::Refused { .. }), "{e:?}");
        // Its address's slot was given back: a new connection is served.
        let mut again = Client::connect(&s.tcp).await.unwrap();
        assert!(again.call(&request(&g, 1, b"again", T0)).await.unwrap().decision.is_allow());
        s.stop().await;
    });
}

/// Issue 34, "Per-connection memory": the endpoint reads at most
/// `body_bytes_in_flight` frame-body bytes at once over all connections.
/// Two half-sent frames that declared 60 000 bytes each hold 120 000 of a
/// 150 000 budget; a third such frame is refused `busy` and its connection
/// closed; a half frame of 30 000 takes what is left, and a well-behaved
/// client's small request (no larger than what a connection holds for any
/// frame) takes nothing from the budget and is answered; once a half frame
/// is cut at the frame timeout its bytes are given back.
#[test]
fn s11_frame_bodies_in_flight_are_bounded_over_all_connections() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.body_bytes_in_flight = 150_000;
        cfg.frame_timeout = Duration::from_millis(600);
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let addr = s.tcp_addr();
        let mut holding = Vec::new();
        for _ in 0..2 {
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            c.write_all(&half_frame(60_000)).await.unwrap();
            holding.push(c);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut third = Client::connect(&s.tcp).await.unwrap();
        third.send_raw(&half_frame(60_000)).await.unwrap();
        let m = until_closed(&mut third).await;
        assert!(matches!(&m[..], [Outbound::Error { code, .. }] if code == "busy"), "{m:?}");
        let mut rest = tokio::net::TcpStream::connect(addr).await.unwrap();
        rest.write_all(&half_frame(30_000)).await.unwrap();
        holding.push(rest);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut good = Client::connect(&s.unix).await.unwrap();
        assert!(good.call(&request(&g, 1, b"small", T0)).await.unwrap().decision.is_allow());
        // Cut at the frame timeout, the half frames give their bytes back.
        tokio::time::sleep(Duration::from_millis(900)).await;
        let mut fourth = Client::connect(&s.tcp).await.unwrap();
        fourth.send_raw(&half_frame(60_000)).await.unwrap();
        let m = tokio::time::timeout(Duration::from_millis(300), fourth.recv()).await;
        assert!(m.is_err(), "now read, not refused: {m:?}");
        drop(holding);
        s.stop().await;
    });
}

/// Issue 34, "Per-connection memory", against a flood of half frames:
/// connections not yet admitted may hold at most half the body budget, so
/// a client already admitted (its first request authenticated) still has
/// the other half for a large frame, and a small frame (no larger than
/// what a connection holds for any frame it reads) takes nothing from the
/// budget at all. Before, 150 000 bytes of half frames from anyone left
/// every client's next frame refused `busy`, its connection closed.
#[test]
fn s11_half_frames_of_clients_not_admitted_cannot_take_the_admitted_clients_share_of_the_body_budget() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.body_bytes_in_flight = 150_000;
        cfg.admission_threads = 1;
        cfg.frame_timeout = Duration::from_secs(5);
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        // Admitted before the flood, and a client that is not.
        let mut admitted = Client::connect(&s.tcp).await.unwrap();
        assert!(admitted.call(&request(&g, 1, b"first", T0)).await.unwrap().decision.is_allow());
        let mut newcomer = Client::connect(&s.tcp).await.unwrap();
        let addr = s.tcp_addr();
        // Half frames of 50 000 declared bytes: one fits the 75 000 that
        // connections not admitted may hold, the second is refused.
        let mut holding = tokio::net::TcpStream::connect(addr).await.unwrap();
        holding.write_all(&half_frame(50_000)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut second = Client::connect(&s.tcp).await.unwrap();
        second.send_raw(&half_frame(50_000)).await.unwrap();
        let m = until_closed(&mut second).await;
        assert!(matches!(&m[..], [Outbound::Error { code, .. }] if code == "busy"), "{m:?}");
        // The admitted client's large request (30 000 bytes of arguments)
        // is read from the half that is its own; a small one, from anyone,
        // takes nothing from the budget.
        let large = request(&g, 1, &[7u8; 30_000], T0);
        assert!(admitted.call(&large).await.unwrap().decision.is_allow());
        assert!(newcomer.call(&request(&g, 1, b"small", T0)).await.unwrap().decision.is_allow());
        drop(holding);
        s.stop().await;
    });
}

#[test]
fn s11_a_peer_that_never_reads_its_answers_is_closed_at_the_frame_timeout() {
    // Asks sent back to back and never read: once the socket's buffer is
    // full of their answers the endpoint's write cannot go on. It used to
    // wait for ever, holding the connection (and its buffers) past every
    // idle timeout; now a write the peer takes nothing of for the frame
    // timeout closes the connection.
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.refusals_per_source = None;
        cfg.frame_timeout = Duration::from_millis(500);
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let jcp_wire::endpoint::Address::Unix(path) = s.unix.clone() else { panic!("unix") };
        // An ask is 98 bytes framed and its answer about 190: so many that
        // the asks fit a Unix socket's buffer (the kernel's default,
        // `wmem_default`) and their answers are well past it.
        let wmem: u32 = std::fs::read_to_string("/proc/sys/net/core/wmem_default")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(212_992);
        let asks = wmem / 140;
        let (read, answered) = tokio::task::spawn_blocking(move || {
            let mut c = std::os::unix::net::UnixStream::connect(&path).unwrap();
            let mut batch = Vec::new();
            for n in 0..asks {
                let ask = jcp_wire::message::statement_ask(&jcp::cbor::ContentId::of_bytes(&n.to_be_bytes()));
                batch.extend_from_slice(&jcp_wire::codec::frame_value(&ask));
            }
            // Within what the socket holds (the endpoint stops reading once
            // its own writes stall); their answers are twice as long, past it.
            c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = c.write_all(&batch);
            // Longer than the frame timeout, reading nothing.
            std::thread::sleep(Duration::from_secs(2));
            // Then everything the endpoint sent, up to the end it closed (or 5 s of silence).
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut got = Vec::new();
            let mut buf = vec![0; 1 << 16];
            let closed = loop {
                match c.read(&mut buf) {
                    Ok(0) => break true,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    // Closed with asks of ours still unread on its side.
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
                    Err(_) => break false,
                }
            };
            let (mut answered, mut at) = (0usize, 0);
            while let Ok(Some((_, used))) = jcp_wire::codec::split(&got[at..], 1 << 20) {
                answered += 1;
                at += used;
            }
            (closed, answered)
        })
        .await
        .unwrap();
        assert!(read, "the connection was held open ({answered} of {asks} asks answered)");
        assert!(answered < asks as usize, "every ask was answered: the writes never stalled");
        // The endpoint goes on: a well-behaved client is answered.
        let g = grant(1_000_000, 1);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        assert!(c.call(&request(&g, 1, b"after", T0)).await.unwrap().decision.is_allow());
        s.stop().await;
    });
}
