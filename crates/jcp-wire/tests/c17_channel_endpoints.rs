//! C17 over the wire (§4.5 "Receipt-settled budget channels", §11, §4.11):
//! two enforcement endpoints on real TCP sockets spend optimistically
//! against ONE grant, exchange signed statements over their feeds
//! (recorded before applied, replayed on restart), and from then on each
//! counts the other's settled spend: both deny further spend, the overdraft
//! is provable from the two signed statements, and forged, stale and
//! regressing statements are refused over the wire and change nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
use common::rt;

use std::path::Path;

use common::*;
use jcp::channel::{OverdraftProof, SignedStatement, Statement};
use jcp::decision::Reason;
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp_wire::client::Client;
use jcp_wire::endpoint::ChannelSetup;
use jcp_wire::message::{Feed, WireDecision};

fn point_a() -> Keypair {
    key(31)
}
fn point_b() -> Keypair {
    key(32)
}

fn channel_config(
    dir: &Path,
    clock: &TestClock,
    g: &SignedGrant,
    me: &Keypair,
    peer: &Keypair,
) -> jcp_wire::endpoint::Config {
    std::fs::create_dir_all(dir).unwrap();
    let mut c = config(&dir.join("record.jcps"), clock);
    c.channels = vec![ChannelSetup { grant: g.clone(), point: me.clone(), peers: vec![peer.did()] }];
    c
}

async fn call(c: &mut Client, g: &SignedGrant, uj: u64, payload: &[u8]) -> WireDecision {
    c.call(&request(g, uj, payload, T0)).await.unwrap().decision
}

async fn feed_code(c: &mut Client, s: &SignedStatement) -> String {
    let a = c.feed(&Feed::Statement(s.clone())).await.unwrap();
    assert_eq!(a.admitted, a.code == "admitted", "{a:?}");
    a.code
}

#[test]
fn c17_two_endpoints_spend_optimistically_settle_by_signed_statement_and_prove_the_overdraft() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let g = grant(1000, 7);
    let (pa, pb) = (point_a(), point_b());
    let cfg_b = channel_config(&dir.path().join("b"), &clock, &g, &pb, &pa);
    rt().block_on(async {
        let a = Served::start(channel_config(&dir.path().join("a"), &clock, &g, &pa, &pb), &dir.path().join("a"), None)
            .await
            .unwrap();
        let b = Served::start(cfg_b.clone(), &dir.path().join("b"), None).await.unwrap();
        let mut ca = Client::connect(&a.tcp).await.unwrap();
        let mut cb = Client::connect(&b.tcp).await.unwrap();

        // Optimistic: each point allows 600 µJ of the one 1000 µJ grant.
        assert!(call(&mut ca, &g, 600, b"a-1").await.is_allow());
        assert!(call(&mut cb, &g, 600, b"b-1").await.is_allow());

        // Each signs its cumulative allowed spend on request, over the wire.
        let sa = ca.ask_statement(&g.id()).await.unwrap();
        let sb = cb.ask_statement(&g.id()).await.unwrap();
        assert_eq!((sa.statement().point, sa.statement().spent_uj, sa.statement().seq), (pa.did(), 600, 0));
        assert_eq!((sb.statement().point, sb.statement().spent_uj, sb.statement().seq), (pb.did(), 600, 0));
        sa.verify().unwrap();
        // Asked again with nothing new spent: the same statement, not a new seq.
        assert_eq!(ca.ask_statement(&g.id()).await.unwrap(), sa);
        // A grant it runs no channel on: refused with its code.
        let other = grant(1000, 8);
        let e = ca.ask_statement(&other.id()).await.unwrap_err();
        assert!(e.to_string().contains("channel-unknown"), "{e}");

        // Settlement: the statements cross over the feeds.
        assert_eq!(feed_code(&mut cb, &sa).await, "admitted");
        assert_eq!(feed_code(&mut ca, &sb).await, "admitted");

        // Both now deny further spend: each counts the other's settled 600 µJ.
        for (c, p) in [(&mut ca, b"a-2"), (&mut cb, b"b-2")] {
            let d = call(c, &g, 1, p).await;
            assert_eq!(d.reason(), Some(Reason::BudgetExceeded), "{d:?}");
            assert_eq!(d.debited_uj, 0);
        }

        // The merged ledger binds at both points, and the overdraft of
        // 200 µJ is provable from the two signed statements alone.
        for ep in [&a.endpoint, &b.endpoint] {
            let l = ep.channel_ledger(g.id()).await.unwrap().unwrap();
            assert_eq!((l.budget_uj, l.total_uj, l.overdraft_uj), (1000, 1200, 200), "{l:?}");
        }
        let proof = OverdraftProof {
            grant: g.clone(),
            members: vec![pa.did(), pb.did()],
            statements: vec![sa.clone(), sb.clone()],
        };
        let back = OverdraftProof::from_bytes(&proof.to_bytes()).unwrap();
        assert_eq!(back.verify().unwrap().overdraft_uj, 200);

        // Forged, stale and regressing statements are refused over the wire
        // and change nothing at B.
        let ledger_b = b.endpoint.channel_ledger(g.id()).await.unwrap();
        let forged = sa.with_claim_for_tests(100, 1);
        let stale = Statement { grant_id: g.id(), point: pa.did(), spent_uj: 50, seq: 0 }.sign(&pa).unwrap();
        let regressing = Statement { grant_id: g.id(), point: pa.did(), spent_uj: 500, seq: 5 }.sign(&pa).unwrap();
        let mallory = Statement { grant_id: g.id(), point: key(5).did(), spent_uj: 0, seq: 0 }.sign(&key(5)).unwrap();
        for (s, code) in [
            (&forged, "bad-signature"),
            (&sa, "statement-stale"),
            (&stale, "statement-stale"),
            (&regressing, "statement-regressing"),
            (&mallory, "statement-not-member"),
            (&sb, "statement-stale"),
        ] {
            assert_eq!(feed_code(&mut cb, s).await, code);
            assert_eq!(b.endpoint.channel_ledger(g.id()).await.unwrap(), ledger_b, "{code} changed B's channel");
        }
        // B's next own statement after a refused one still states only its own spend.
        assert_eq!(cb.ask_statement(&g.id()).await.unwrap(), sb);
        a.stop().await;
        b.stop().await;

        // Restart: B replays its record (its spend, A's admitted statement,
        // its own signed one) before deciding anything new.
        let b = Served::start(cfg_b, &dir.path().join("b"), None).await.unwrap();
        assert_eq!(b.report.replay.rejected_total(), 0, "{:?}", b.report.replay.rejected);
        assert_eq!(b.endpoint.channel_ledger(g.id()).await.unwrap(), ledger_b);
        let mut cb = Client::connect(&b.tcp).await.unwrap();
        assert_eq!(call(&mut cb, &g, 1, b"b-3").await.reason(), Some(Reason::BudgetExceeded));
        assert_eq!(cb.ask_statement(&g.id()).await.unwrap(), sb, "no seq is signed twice across a restart");
        assert_eq!(feed_code(&mut cb, &sa).await, "statement-stale");
        b.stop().await;
    });
}

#[test]
fn c17_a_point_settles_again_at_a_higher_seq_as_it_spends() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let g = grant(1000, 9);
    let (pa, pb) = (point_a(), point_b());
    rt().block_on(async {
        let a = Served::start(channel_config(&dir.path().join("a"), &clock, &g, &pa, &pb), &dir.path().join("a"), None)
            .await
            .unwrap();
        let b = Served::start(channel_config(&dir.path().join("b"), &clock, &g, &pb, &pa), &dir.path().join("b"), None)
            .await
            .unwrap();
        let mut ca = Client::connect(&a.tcp).await.unwrap();
        let mut cb = Client::connect(&b.tcp).await.unwrap();
        assert!(call(&mut ca, &g, 300, b"a-1").await.is_allow());
        let s0 = ca.ask_statement(&g.id()).await.unwrap();
        assert_eq!(feed_code(&mut cb, &s0).await, "admitted");
        // B has 700 left: 701 is denied, 400 allowed.
        assert_eq!(call(&mut cb, &g, 701, b"b-1").await.reason(), Some(Reason::BudgetExceeded));
        assert!(call(&mut cb, &g, 400, b"b-2").await.is_allow());
        assert!(call(&mut ca, &g, 200, b"a-2").await.is_allow());
        let s1 = ca.ask_statement(&g.id()).await.unwrap();
        assert_eq!((s1.statement().spent_uj, s1.statement().seq), (500, 1));
        assert_eq!(feed_code(&mut cb, &s1).await, "admitted");
        // B: 400 local + 500 settled = 900; 100 left.
        assert_eq!(call(&mut cb, &g, 101, b"b-3").await.reason(), Some(Reason::BudgetExceeded));
        assert!(call(&mut cb, &g, 100, b"b-4").await.is_allow());
        let l = b.endpoint.channel_ledger(g.id()).await.unwrap().unwrap();
        assert_eq!(l.total_uj, 500, "B's own spend enters its ledger when it signs a statement");
        let sb = cb.ask_statement(&g.id()).await.unwrap();
        assert_eq!(sb.statement().spent_uj, 500);
        assert_eq!(b.endpoint.channel_ledger(g.id()).await.unwrap().unwrap().total_uj, 1000);
        a.stop().await;
        b.stop().await;
    });
}
