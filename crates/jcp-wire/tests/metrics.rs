//! The enforcement point as OpenMetrics (§11, §4.3, §4.11), checked on the
//! rendered text: decisions by verdict and reason once durable, repeats
//! apart, commit latency, remembered requests, the revocation marker
//! (absent while none is stated), spend per grant surviving a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

mod common;

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

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
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
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
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
        let s = Served::start(cfg, dir.path(), None).await.unwrap();
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
