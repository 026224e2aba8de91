//! §5.5 — a grant's spend as the receipt streams record it (this crate's
//! audit), reconciled against a recorded meter session
//! (`jcp_meter::layers::reconcile_spend`).

#![allow(clippy::unwrap_used, clippy::panic)]

use std::ops::ControlFlow;

use jcp::cbor::ContentId;
use jcp_audit::energy::{grant_spend, reconcile_grant};
use jcp_meter::session::Session;

/// A session of one `Whole`, `HwShunt` window from the RAPL rung holding `uj`.
fn session(uj: u64) -> Session {
    let text = serde_json::json!({
        "format": "jcp-meter-session/1",
        "host": {"hostname": "h", "machine": "m", "cpu": "c", "logical_cpus": 2, "os": "linux"},
        "occupancy": "idle",
        "interval_ns": 1_000_000_000u64,
        "replay_of": null,
        "windows": [{"seq": 0, "start_ns": 0, "end_ns": 1_000_000_000u64, "start_unix_ms": 1_000, "end_unix_ms": 2_000,
                     "energy_uj": uj, "provenance": "HwShunt", "coverage": "Whole", "rung": "rapl", "declined": [], "gap": null}],
    })
    .to_string();
    Session::from_bytes("s.json", text.as_bytes()).unwrap()
}

#[test]
fn s5_5_grant_spend_is_read_from_a_real_receipt_stream() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.jcps");
    jcp_receipt::demo::write_demo(
        &p,
        &jcp_receipt::demo::DemoOptions {
            receipts: 20,
            tamper: 1,
            unresolved: 0,
            seed: 3,
            durability: jcp_receipt::writer::Durability::GeneratorOnly,
        },
    )
    .unwrap();
    let audit =
        jcp_audit::audit_paths(&[&p], &jcp_audit::AuditOptions::default(), |_| ControlFlow::Continue(())).unwrap();
    let line = audit.grants.iter().find(|g| g.spent_uj > 0).unwrap();
    let s = grant_spend(&[&p], &line.grant_id).unwrap();
    assert_eq!((s.debited_uj, s.budget_uj, s.allows), (line.spent_uj, line.budget_uj.unwrap(), line.allows));
    assert_eq!(s.receipts_failed, 1, "the tampered receipt is counted, not skipped");
    let r = reconcile_grant(&[&p], &line.grant_id, &session(s.debited_uj)).unwrap();
    assert_eq!(r.conservation.unwrap().discrepancy_uj, 0);
    assert!(!r.balanced, "a stream with a failed receipt never balances");
    assert_eq!(grant_spend(&[&p], &ContentId::of_bytes(b"none")).unwrap_err().code(), "grant-not-in-streams");
    assert_eq!(grant_spend(&[dir.path().join("absent.jcps")], &line.grant_id).unwrap_err().code(), "io");
}
