//! Issue 34 (§11, the endpoint under a connection flood): with an
//! admission runtime (`Config::admission_threads`), connections are
//! accepted and served there until their first authenticated request is
//! answered, then handed to the runtime that serves the listener. What a
//! client sent behind that request goes with it, nothing is decided twice
//! or lost at the hand-over, a request refused before deciding admits
//! nobody, and a serving task that is aborted stops accepting. Real TCP
//! and Unix sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::rt;

use std::time::Duration;

use common::*;
use jcp_wire::client::Client;
use jcp_wire::codec;
use jcp_wire::message::{Outbound, WireResponse};

/// The next response, within 5 s (a frame lost at the hand-over would
/// otherwise be waited for forever).
async fn response(c: &mut Client) -> WireResponse {
    match tokio::time::timeout(Duration::from_secs(5), c.recv()).await.expect("a response within 5 s").unwrap() {
        Outbound::Response(r) => r,
        other => panic!("expected a response, got {other:?}"),
    }
}

#[test]
fn s11_a_connection_is_admitted_after_its_first_authenticated_request_with_what_it_sent_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let g = grant(1_000_000, 1);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.admission_threads = 1;
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        // A forged caller signature is refused before deciding: not admitted.
        let mut forged = request(&g, 10, b"forged", T0);
        forged.signature = [0x5a; 64];
        let r = c.call(&forged).await.unwrap();
        assert!(!r.decision.is_allow(), "{:?}", r.decision);
        assert_eq!(s.endpoint.stats().admitted, 0);
        // Three requests in one write: the first admits the connection, and
        // the two behind it (read ahead, or still in the socket) are served
        // on the endpoint's runtime, each decided once.
        let mut three = Vec::new();
        for n in 0..3u8 {
            three.extend(codec::frame_value(&request(&g, 10, &[n], T0).to_value()));
        }
        c.send_raw(&three).await.unwrap();
        let mut receipts = std::collections::HashSet::new();
        for n in 0..3 {
            let r = response(&mut c).await;
            assert!(r.decision.is_allow(), "request {n}: {:?}", r.decision);
            receipts.insert(r.receipt_id());
        }
        assert_eq!(receipts.len(), 3, "three decisions, none answered twice");
        // And it goes on there.
        assert!(c.call(&request(&g, 10, b"later", T0)).await.unwrap().decision.is_allow());
        // A repeat is authenticated too: a Unix socket's client admitted by one.
        let mut u = Client::connect(&s.unix).await.unwrap();
        let again = u.call(&request(&g, 10, &[0], T0)).await.unwrap();
        assert!(again.decision.is_allow(), "{:?}", again.decision);
        assert!(u.call(&request(&g, 10, b"unix", T0)).await.unwrap().decision.is_allow());
        let st = s.endpoint.stats();
        assert_eq!((st.admitted, st.allowed, st.repeats), (2, 5, 1), "{st:?}");
        s.stop().await;
    });
}

#[test]
fn s11_a_serving_task_aborted_stops_accepting_on_the_admission_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.admission_threads = 1;
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let addr = s.tcp_addr().to_owned();
        assert!(tokio::net::TcpStream::connect(&addr).await.is_ok(), "served");
        s.stop().await;
        // The accept loop runs on the admission runtime: aborted with the
        // serving task, its listener closes.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            if tokio::net::TcpStream::connect(&addr).await.is_err() {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "still accepting after the serving task was aborted");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}

/// The niceness of the calling thread (`/proc/thread-self/stat`, field 19).
fn thread_nice() -> i64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(16).unwrap().parse().unwrap()
}

/// Records the niceness of the thread each call runs on.
#[derive(Default)]
struct Niceness(std::sync::Mutex<Vec<i64>>);

impl jcp_wire::backend::Backend for Niceness {
    fn call(&self, call: jcp_wire::backend::Call<'_>) -> jcp_wire::backend::BackendReply {
        self.0.lock().unwrap().push(thread_nice());
        jcp_wire::backend::BackendReply::Done(call.args.unwrap_or_default().to_vec())
    }
}

/// §11 relay mode through admission: the first request's call behind the
/// gate runs once the connection is admitted, on the endpoint's runtime,
/// never on a thread of the admission runtime (whose priority a backend's
/// child would inherit); its reply comes back on the same connection.
#[test]
fn s11_the_first_requests_call_behind_the_gate_runs_at_the_endpoints_priority() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let g = grant(1_000_000, 1);
    let own = thread_nice();
    let backend = std::sync::Arc::new(Niceness::default());
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.admission_threads = 1;
        cfg.meter = Some(fixed_meter(5));
        let s = Served::start(cfg, dir.path(), Some(backend.clone())).await.unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        for n in 0..2u8 {
            let r = c.call(&request(&g, 10, &[n], T0)).await.unwrap();
            assert!(r.decision.is_allow(), "{:?}", r.decision);
            let reply = tokio::time::timeout(Duration::from_secs(5), c.reply()).await.unwrap().unwrap();
            assert_eq!(reply.output, vec![n], "the call's own reply, on its connection");
        }
        assert_eq!(s.endpoint.stats().admitted, 1);
        s.stop().await;
    });
    assert_eq!(*backend.0.lock().unwrap(), vec![own, own], "each call at this process's priority, none at 19");
}

/// §4.3 feeds through admission: a feed refused (unsigned on the network)
/// admits nobody, a signed feed the endpoint admits admits its connection;
/// the operator's admin socket is never behind admission (its unsigned
/// feed is taken at once, and counts no admission).
#[test]
fn s4_3_an_admitted_feed_admits_its_connection_and_the_admin_socket_is_never_behind_admission() {
    use jcp::revocation::Revocation;
    use jcp_wire::message::Feed;
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let g = grant(1_000, 1);
    let other = grant(1_000, 2);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.admission_threads = 1;
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let (al, admin) = jcp_wire::endpoint::Address::Unix(dir.path().join("admin.sock")).bind().await.unwrap();
        let ep = s.endpoint.clone();
        let admin_task = tokio::spawn(async move { ep.serve_admin(al).await });
        let rev = |gr: &jcp::grant::SignedGrant, n: u8| Revocation::issue(gr, &issuer(), Some([n; 16])).unwrap();
        let mut c = Client::connect(&s.tcp).await.unwrap();
        let unsigned = Feed::Revocation { revocation: rev(&g, 1), grant: g.clone(), marker: 1 };
        assert!(!c.feed(&unsigned).await.unwrap().admitted);
        assert_eq!(s.endpoint.stats().admitted, 0, "a refused feed admits nobody");
        let signed = unsigned.signed_by(&feed_key());
        assert!(c.feed(&signed).await.unwrap().admitted);
        // The hand-over follows the answer: one more answer on the same
        // connection comes from the endpoint's runtime, after it counted.
        c.feed(&signed).await.unwrap();
        assert_eq!(s.endpoint.stats().admitted, 1, "an admitted feed admits its connection");
        let mut a = Client::connect(&admin).await.unwrap();
        let taken = a.feed(&Feed::Revocation { revocation: rev(&other, 2), grant: other.clone(), marker: 2 }).await;
        assert!(taken.unwrap().admitted);
        assert_eq!(s.endpoint.stats().admitted, 1, "the admin socket is served on the endpoint's runtime");
        admin_task.abort();
        s.stop().await;
    });
}
