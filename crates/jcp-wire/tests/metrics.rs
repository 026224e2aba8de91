//! The enforcement point as `OpenMetrics` (§11, §4.3, §4.11), checked on the
//! rendered text: decisions by verdict and reason once durable, repeats
//! apart, commit latency, where each request's time went, remembered
//! requests, the revocation marker (absent while none is stated), spend
//! per grant surviving a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

mod common;
use common::rt;

use common::*;
use jcp::revocation::Revocation;
use jcp_wire::message::Feed;

/// The value of the one sample of `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<String> {
    let hits: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with('{') || r.starts_with(' ')))
        .filter(|l| labels.iter().all(|(k, v)| l.contains(&format!("{k}=\"{v}\""))))
        .collect();
    assert!(hits.len() <= 1, "{name} {labels:?}: {hits:?}");
    hits.first().and_then(|l| l.rsplit_once(' ')).map(|(_, v)| v.to_owned())
}

/// A gate whose one trust root, for the tests' resource, is the tests' issuer.
fn trusting_issuer() -> jcp::decision::Gate {
    let mut g = jcp::decision::Gate::new();
    g.add_trust_root(resource(), issuer().did());
    g
}

/// §11 under hostile callers: a grant gets series of its own only when it
/// is allowed under a trust root, and at most `MAX_GRANT_SERIES` do; on an
/// open gate 300 self-issued grants make no series, only the unlabelled
/// sum; a denial makes none at all.
#[test]
fn s11_untrusted_and_denied_grants_create_no_metric_series() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let s = Served::start(config(&dir.path().join("s.jcps"), &clock), dir.path(), None).await.unwrap();
        for n in 0..300u16 {
            let g = grant(1000, (n % 250) as u8 + 1);
            let g = if n < 250 { g } else { grant(2000, (n - 250) as u8 + 1) };
            s.endpoint.submit(request(&g, 10, &n.to_be_bytes(), T0)).await.unwrap();
        }
        let text = s.endpoint.render_metrics().unwrap();
        assert!(!text.contains("jcp_wire_grant_spent_microjoules{"), "{text}");
        assert!(!text.contains("jcp_wire_grant_budget_microjoules{"), "{text}");
        assert_eq!(sample(&text, "jcp_wire_grants_unlabelled", &[]).as_deref(), Some("300"), "{text}");
        assert_eq!(sample(&text, "jcp_wire_grants_spent_unlabelled_microjoules", &[]).as_deref(), Some("3000"));
        s.stop().await;
    });
    // Under a trust root: the trusted grant's series; a denied request on a
    // grant no root anchors (another issuer) makes none.
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let s = Served::start_gated(config(&dir.path().join("s.jcps"), &clock), dir.path(), None, trusting_issuer())
            .await
            .unwrap();
        let g = grant(1000, 1);
        s.endpoint.submit(request(&g, 10, b"ok", T0)).await.unwrap();
        let other = grant_by(&key(77), 5000, 2);
        s.endpoint.submit(request(&other, 10, b"no", T0)).await.unwrap();
        let text = s.endpoint.render_metrics().unwrap();
        let gid = g.id().to_hex();
        assert_eq!(sample(&text, "jcp_wire_grant_budget_microjoules", &[("grant", &gid)]).as_deref(), Some("1000"));
        assert!(!text.contains(&other.id().to_hex()), "{text}");
        assert_eq!(
            sample(&text, "jcp_wire_decisions_total", &[("verdict", "deny"), ("reason", "untrusted-root")]).as_deref(),
            Some("1"),
            "the stranger's request was denied: {text}"
        );
        s.stop().await;
    });
}

#[test]
fn s11_s4_3_decisions_by_verdict_and_reason_marker_and_spend_are_exposed_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let path = dir.path().join("s.jcps");
    let g = grant(1000, 1);
    let gid = g.id().to_hex();
    rt().block_on(async {
        let mut cfg = config(&path, &clock);
        cfg.known_through = None;
        let s = Served::start_gated(cfg, dir.path(), None, trusting_issuer()).await.unwrap();
        let ep = &s.endpoint;
        let text = ep.render_metrics().unwrap();
        // §4.3: a point that states no marker exposes none — "did not say" is not a 0.
        assert_eq!(sample(&text, "jcp_wire_revocation_known_through", &[]), None, "{text}");
        assert_eq!(sample(&text, "jcp_wire_decisions_total", &[]), None, "no decision yet, no series:\n{text}");
        let allow = request(&g, 300, b"one", T0);
        ep.submit(allow.clone()).await.unwrap();
        ep.submit(request(&g, 800, b"two", T0)).await.unwrap();
        ep.submit(allow).await.unwrap();
        ep.submit(request(&g, 1, b"old", T0 - 3600)).await.unwrap();
        let rev = Revocation::issue(&g, &issuer(), Some([1; 16])).unwrap();
        assert!(ep.feed(Feed::Revocation { revocation: rev, grant: g.clone(), marker: 7 }).await.unwrap().admitted);
        let text = ep.render_metrics().unwrap();
        assert_eq!(
            sample(&text, "jcp_wire_decisions_total", &[("verdict", "allow"), ("reason", "none")]).as_deref(),
            Some("1"),
            "{text}"
        );
        assert_eq!(
            sample(&text, "jcp_wire_decisions_total", &[("verdict", "deny"), ("reason", "budget-exceeded")]).as_deref(),
            Some("1"),
            "{text}"
        );
        assert_eq!(
            sample(&text, "jcp_wire_decisions_total", &[("verdict", "deny"), ("reason", "stale-request")]).as_deref(),
            Some("1"),
            "{text}"
        );
        // The repeat was answered from memory, not decided again.
        assert_eq!(sample(&text, "jcp_wire_repeats_total", &[]).as_deref(), Some("1"));
        // Two decided requests remembered; the stale one is not (§11).
        assert_eq!(sample(&text, "jcp_wire_remembered_requests", &[]).as_deref(), Some("2"));
        assert_eq!(sample(&text, "jcp_wire_revocation_known_through", &[]).as_deref(), Some("7"));
        assert_eq!(sample(&text, "jcp_wire_grant_spent_microjoules", &[("grant", &gid)]).as_deref(), Some("300"));
        assert_eq!(sample(&text, "jcp_wire_grant_budget_microjoules", &[("grant", &gid)]).as_deref(), Some("1000"));
        let commits: u64 = sample(&text, "jcp_wire_record_commit_seconds_count", &[]).unwrap().parse().unwrap();
        assert!(commits >= 1, "{text}");
        assert!(text.contains("# TYPE jcp_wire_record_commit_seconds histogram"), "{text}");
        s.stop().await;
        // A fresh process: the record's replay re-establishes spend, marker and memory.
        let mut cfg = config(&path, &clock);
        cfg.known_through = None;
        let s = Served::start_gated(cfg, dir.path(), None, trusting_issuer()).await.unwrap();
        let text = s.endpoint.render_metrics().unwrap();
        assert_eq!(
            sample(&text, "jcp_wire_grant_spent_microjoules", &[("grant", &gid)]).as_deref(),
            Some("300"),
            "{text}"
        );
        assert_eq!(sample(&text, "jcp_wire_revocation_known_through", &[]).as_deref(), Some("7"), "{text}");
        assert_eq!(sample(&text, "jcp_wire_remembered_requests", &[]).as_deref(), Some("2"), "{text}");
        // Decisions count what this process answered: none yet.
        assert_eq!(sample(&text, "jcp_wire_decisions_total", &[]), None, "{text}");
        // After the revocation every request on the grant is denied `revoked`.
        s.endpoint.submit(request(&g, 1, b"after", T0)).await.unwrap();
        let text = s.endpoint.render_metrics().unwrap();
        assert_eq!(
            sample(&text, "jcp_wire_decisions_total", &[("verdict", "deny"), ("reason", "revoked")]).as_deref(),
            Some("1"),
            "{text}"
        );
        s.stop().await;
    });
}

/// The `_count` and `_sum` of histogram `name`.
fn histogram(text: &str, name: &str) -> (u64, f64) {
    let count = sample(text, &format!("{name}_count"), &[]).unwrap_or_else(|| panic!("{name}: no count in\n{text}"));
    let sum = sample(text, &format!("{name}_sum"), &[]).unwrap_or_else(|| panic!("{name}: no sum in\n{text}"));
    (count.parse().unwrap(), sum.parse().unwrap())
}

#[test]
fn s11_s4_11_where_a_request_waits_is_exposed_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    let g = grant(1000, 1);
    rt().block_on(async {
        let s = Served::start(config(&dir.path().join("s.jcps"), &clock), dir.path(), None).await.unwrap();
        let mut c = jcp_wire::client::Client::connect(&s.tcp).await.unwrap();
        let first = request(&g, 10, b"one", T0);
        for r in [first.clone(), request(&g, 10, b"two", T0), request(&g, 10, b"three", T0)] {
            assert!(c.call(&r).await.unwrap().decision.is_allow());
        }
        // A repeat waits for the core and for the commit like any request.
        c.call(&first).await.unwrap();
        // The whole-request figure is taken once the answer is written, so
        // the client can hold its answer a moment before the figure is in.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut text = s.endpoint.render_metrics().unwrap();
        while histogram(&text, "jcp_wire_request_seconds").0 < 4 && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            text = s.endpoint.render_metrics().unwrap();
        }
        let (over_socket, whole) = histogram(&text, "jcp_wire_request_seconds");
        let (core, core_sum) = histogram(&text, "jcp_wire_request_core_wait_seconds");
        let (durable, durable_sum) = histogram(&text, "jcp_wire_request_durable_wait_seconds");
        assert_eq!((over_socket, core, durable), (4, 4, 4), "{text}");
        // Each request's whole time holds its two waits, one after the other.
        assert!(core_sum > 0.0 && durable_sum > 0.0, "{text}");
        assert!(whole >= core_sum + durable_sum, "{whole} < {core_sum} + {durable_sum}\n{text}");
        // One submitted in-process waits like the others; with no socket
        // there is no whole-request figure for it.
        s.endpoint.submit(request(&g, 10, b"four", T0)).await.unwrap();
        let text = s.endpoint.render_metrics().unwrap();
        let counts =
            ["", "_core_wait", "_durable_wait"].map(|k| histogram(&text, &format!("jcp_wire_request{k}_seconds")).0);
        assert_eq!(counts, [4, 5, 5], "{text}");
        assert!(text.contains("# TYPE jcp_wire_request_durable_wait_seconds histogram"), "{text}");
        assert!(text.contains("# UNIT jcp_wire_request_seconds seconds"), "{text}");
        s.stop().await;
    });
}

/// §11 (issue 34): frames refused before any decision are counted by
/// their reason code, a fixed set, so an operator tells a flood of
/// oversized frames from half frames cut at their timeout or refused
/// `busy`; a frame the endpoint reads and decides is not counted.
#[test]
fn s11_refused_frames_are_counted_by_reason_code() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let mut cfg = config(&dir.path().join("s.jcps"), &clock);
        cfg.frame_timeout = std::time::Duration::from_millis(200);
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
        let addr = s.tcp_addr();
        // Past the cap: refused at once. Declared within it, then silent: cut at the frame timeout.
        for declared in [u32::MAX, 1_000, 1_000] {
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            c.write_all(&declared.to_be_bytes()).await.unwrap();
            c.write_all(b"half").await.unwrap();
            let mut rest = Vec::new();
            let read = tokio::io::AsyncReadExt::read_to_end(&mut c, &mut rest);
            tokio::time::timeout(std::time::Duration::from_secs(5), read).await.unwrap().unwrap();
        }
        let g = grant(1000, 1);
        assert!(!s.endpoint.submit(request(&g, 10, b"fine", T0)).await.unwrap().is_empty());
        let text = s.endpoint.render_metrics().unwrap();
        let refused = |code| sample(&text, "jcp_wire_refused_frames_total", &[("code", code)]);
        assert_eq!(refused("frame-oversized").as_deref(), Some("1"), "{text}");
        assert_eq!(refused("frame-timeout").as_deref(), Some("2"), "{text}");
        assert_eq!(refused("busy"), None, "{text}");
        s.stop().await;
    });
}
