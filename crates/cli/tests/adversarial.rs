//! Issue 34, "An adversarial suite that stays" (§11, §4.3, §4.11): the
//! real `jcp serve`, with its `/metrics`, under every flood the hostile
//! review found, all at once, while a well-behaved client keeps being
//! decided. Loopback only, bounded, it stops by itself. Each wire flood
//! comes from a loopback address of its own (127.0.0.2 … 127.0.0.6), the good
//! client from 127.0.0.1, so the per-source limits are what is tested:
//! silent connections, half frames, oversized records, a bad-signature
//! flood, unsigned and forged feeds, statement asks for channels the
//! endpoint does not hold, half-sent `/metrics` headers. Then a
//! SIGKILL right after a decision and a restart: the same request gets its
//! first answer back (decided once), and the audit finds nothing the
//! floods could have caused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use jcp::identity::Keypair;
use jcp_wire::client::Client;
use jcp_wire::codec;
use jcp_wire::message::Outbound;

#[path = "support/served.rs"]
mod served;
use served::{cast, request, scrape, Serve, JCP};

/// A TCP connection to `to` from the loopback address `src`.
async fn from(src: [u8; 4], to: &str) -> tokio::net::TcpStream {
    served::from(src, to).await.unwrap()
}

/// What one message on a fresh connection from `src` gets back.
async fn one(src: [u8; 4], to: &str, framed: &[u8]) -> Option<Outbound> {
    let mut c = Client::over_tcp(from(src, to).await);
    c.send_raw(framed).await.ok()?;
    tokio::time::timeout(Duration::from_secs(5), c.recv()).await.ok()?.ok()
}

#[test]
fn s11_every_flood_at_once_and_a_well_behaved_client_is_still_decided() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (g, agent, issuer, root) = cast(d, 1_000_000);
    let flags = [
        "--trust-root",
        &root,
        "--first-frame-timeout-s",
        "1",
        "--max-per-peer",
        "16",
        "--refusals-per-source",
        "5",
        "--body-bytes-in-flight",
        "600000",
    ];
    let serve = Serve::start(d, &flags);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (tcp, metrics) = (serve.tcp.clone(), serve.metrics.clone());
    let mut held: Vec<std::net::TcpStream> = Vec::new();
    // /metrics: half-sent headers, past its connection cap (64): the rest answered 503 at once.
    for _ in 0..80 {
        let s = std::net::TcpStream::connect(&metrics).unwrap();
        let mut s2 = s.try_clone().unwrap();
        let _ = s2.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n");
        held.push(s);
    }
    let flood_good = rt.block_on(async {
        let mut tasks = Vec::new();
        // Silent connections from 127.0.0.2: past its cap answered busy, the rest cut at 1 s.
        let to = tcp.clone();
        tasks.push(tokio::spawn(async move {
            let mut silent = Vec::new();
            for _ in 0..40 {
                silent.push(from([127, 0, 0, 2], &to).await);
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
            drop(silent);
        }));
        // Half frames from 127.0.0.3: 60 000 bytes declared (within the
        // cap), ten sent, then nothing: five hold the 300 000 that
        // connections not yet admitted may hold, the rest are answered busy.
        let to = tcp.clone();
        tasks.push(tokio::spawn(async move {
            let mut half = Vec::new();
            for _ in 0..12 {
                let mut s = from([127, 0, 0, 3], &to).await;
                let _ = tokio::io::AsyncWriteExt::write_all(&mut s, &60_000u32.to_be_bytes()).await;
                let _ = tokio::io::AsyncWriteExt::write_all(&mut s, &[0xa1; 10]).await;
                half.push(s);
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
            drop(half);
        }));
        // A bad-signature flood from 127.0.0.4: refused, then rate-limited.
        let (to, gg, ag) = (tcp.clone(), g.clone(), agent.clone());
        let flood = tokio::spawn(async move {
            let mut answers = Vec::new();
            let started = Instant::now();
            for n in 0..60u32 {
                let mut r = request(&gg, &ag, format!("forged {n}").as_bytes());
                r.signature = [0x5a; 64];
                answers.push(one([127, 0, 0, 4], &to, &codec::frame_value(&r.to_value())).await);
            }
            (answers, started.elapsed())
        });
        // Statement asks for channels this endpoint does not hold, from
        // 127.0.0.6 (no key needed): refused, then rate-limited before the core.
        let to = tcp.clone();
        let asks = tokio::spawn(async move {
            let mut codes = Vec::new();
            for n in 0..40u32 {
                let mut c = Client::over_tcp(from([127, 0, 0, 6], &to).await);
                let id = jcp::cbor::ContentId::of_bytes(&n.to_be_bytes());
                codes.push(match c.ask_statement(&id).await {
                    Err(jcp_wire::WireError::Refused { code, .. }) => code,
                    other => format!("{other:?}"),
                });
            }
            codes
        });
        // Oversized records and feeds nobody signed, from 127.0.0.5.
        let (to, gg, ag, rev_key) = (tcp.clone(), g.clone(), agent.clone(), issuer.clone());
        let odd = tokio::spawn(async move {
            let big = request(&gg, &ag, &vec![7; 70_000]);
            let oversized = one([127, 0, 0, 5], &to, &codec::frame_value(&big.to_value())).await;
            let rev = jcp::revocation::Revocation::issue(&gg, &rev_key, None).unwrap();
            let unsigned =
                jcp_wire::message::Feed::Revocation { revocation: rev.clone(), grant: gg.clone(), marker: 999 };
            let forged = unsigned.clone().signed_by(&Keypair::from_seed([66; 32]).unwrap());
            let mut feeds = Vec::new();
            for f in [unsigned, forged] {
                let mut c = Client::over_tcp(from([127, 0, 0, 5], &to).await);
                feeds.push(c.feed(&f).await.map(|a| (a.admitted, a.code)).ok());
            }
            (oversized, feeds)
        });
        // The well-behaved client, meanwhile: every call decided and allowed.
        let mut good = Vec::new();
        let mut c = Client::over_tcp(from([127, 0, 0, 1], &tcp).await);
        for n in 0..30u32 {
            let started = Instant::now();
            let r = tokio::time::timeout(
                Duration::from_secs(10),
                c.call(&request(&g, &agent, format!("good {n}").as_bytes())),
            )
            .await
            .expect("a good call is answered while the floods run")
            .expect("answered, not refused");
            good.push((r.decision.is_allow(), started.elapsed()));
        }
        let (forged, flood_took) = flood.await.unwrap();
        let (oversized, feeds) = odd.await.unwrap();
        let asks = asks.await.unwrap();
        for t in tasks {
            t.await.unwrap();
        }
        (good, (forged, flood_took), oversized, (feeds, asks))
    });
    let (good, (forged, flood_took), oversized, (feeds, asks)) = flood_good;
    assert!(good.iter().all(|(allowed, _)| *allowed), "every good call allowed: {good:?}");
    // The flood: refused bad-signature up to its source's burst, then rate-limited before the core.
    let refused = forged
        .iter()
        .filter(|m| {
            matches!(m, Some(Outbound::Response(r))
                if r.decision.verdict == jcp::decision::Verdict::Deny(jcp::decision::Reason::BadSignature))
        })
        .count();
    let limited =
        forged.iter().filter(|m| matches!(m, Some(Outbound::Error { code, .. }) if code == "rate-limited")).count();
    // Its burst (twice its 5 a second), and at most what its bucket
    // refilled while it ran (5 a second of however long a slow machine took).
    let refilled = usize::try_from(flood_took.as_secs() + 1).unwrap() * 5;
    assert!(
        (10..=10 + refilled).contains(&refused) && refused < 60 && refused + limited == 60,
        "{refused} refused, {limited} limited in {flood_took:?}: {forged:?}"
    );
    assert!(matches!(&oversized, Some(Outbound::Error { code, .. }) if code == "frame-oversized"), "{oversized:?}");
    assert_eq!(
        feeds,
        vec![Some((false, "feed-unauthenticated".to_owned())), Some((false, "feed-unauthenticated".to_owned()))],
        "an unsigned revocation over TCP and one signed by an unknown key move nothing"
    );
    // The asks: each a refusal of its source's, so past its burst none reaches the core.
    let unknown = asks.iter().filter(|c| *c == "channel-unknown").count();
    let asks_limited = asks.iter().filter(|c| *c == "rate-limited").count();
    assert!(unknown >= 10 && unknown < 40 && unknown + asks_limited == 40, "{asks:?}");
    // /metrics answered again once the half-sent headers are cut.
    drop(held);
    let scraped = scrape(&metrics).unwrap_or_default();
    let limited_total = limited + asks_limited;
    assert!(scraped.contains(&format!("jcp_wire_rate_limited_total {limited_total}")), "{scraped}");

    // A decision, a SIGKILL, a restart: the same request gets its first answer (§11 decided once).
    let again = request(&g, &agent, b"decided once");
    let first =
        rt.block_on(async { Client::over_tcp(from([127, 0, 0, 1], &serve.tcp).await).call(&again).await.unwrap() });
    serve.sigkill();
    let serve = Serve::start(d, &flags);
    let second =
        rt.block_on(async { Client::over_tcp(from([127, 0, 0, 1], &serve.tcp).await).call(&again).await.unwrap() });
    assert_eq!(first.receipt, second.receipt, "answered from the record, not decided again");
    drop(serve);
    // The record: every good call and the one above allowed once; nothing failed the record.
    let out = Command::new(JCP).current_dir(d).args(["audit", "s.jcps", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["receipts"]["allows"], 31, "{v}");
    assert_eq!(
        v["receipts"]["denies"], refused as u64,
        "the flood's refusals, up to its rate, sealed and recorded: {v}"
    );
    assert_eq!(v["receipts"]["failed"], 0, "{v}");
}
