//! §5.3–§5.6 over files: recorded sessions, declared envelopes, a grant's
//! spend from a real receipt stream (`jcp_meter::layers`, what `jcp energy`
//! and the console call).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jcp::cbor::ContentId;
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::identity::Keypair;
use jcp_meter::clock::ManualClock;
use jcp_meter::conservation::Basis;
use jcp_meter::declared::{Causes, EnvelopeFile};
use jcp_meter::efficiency::Efficiency;
use jcp_meter::estimate::{FixedUtil, HostId};
use jcp_meter::layers::{self, GrantSpend, Unreconciled, Word};
use jcp_meter::session::{record_to, Session};
use jcp_meter::trace::{Trace, TraceBackend};
use jcp_meter::traceability::activity_bytes;
use jcp_meter::{Backends, Meter, MeterConfig, RungId, Window};

fn host() -> HostId {
    HostId { hostname: "bench".into(), machine: None, cpu: "c".into(), logical_cpus: 2, os: "linux".into() }
}

/// Windows metered from the committed RAPL trace, through the real ladder.
fn metered(n: usize) -> Vec<Window> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/trace_decode/rapl-live.json");
    let trace = Trace::from_bytes(&std::fs::read(path).unwrap()).unwrap();
    let backends = Backends {
        counters: vec![Box::new(TraceBackend::new(trace))],
        util: Box::new(FixedUtil { permille: Some(400), cpus: 2 }),
        clock: Arc::new(ManualClock::new()),
        host: host(),
    };
    let mut m =
        Meter::new(MeterConfig { interval: Duration::from_millis(100), ..MeterConfig::default() }, backends).unwrap();
    m.probe();
    (0..n).map(|_| m.next_window()).collect()
}

fn win(seq: u64, figure: Option<(u64, Provenance, Coverage, RungId)>) -> Window {
    let mut w = metered(1).remove(0);
    w.seq = seq;
    w.start_ns = seq * 1_000_000_000;
    w.end_ns = (seq + 1) * 1_000_000_000;
    w.declined.clear();
    w.counters.clear();
    match figure {
        Some((uj, provenance, coverage, rung)) => {
            (w.energy_uj, w.provenance, w.coverage, w.rung, w.gap) =
                (Some(uj), Some(provenance), Some(coverage), Some(rung), None);
        }
        None => {
            (w.energy_uj, w.provenance, w.coverage, w.rung, w.gap) =
                (None, None, None, None, Some("no reading".into()));
        }
    }
    w
}

fn session(ws: &[Window]) -> Session {
    Session::new(host(), Some("idle".into()), 1_000_000_000, None, ws)
}

#[test]
fn s5_4_a_recorded_session_reads_back_as_the_meter_windows() {
    let ws = metered(4);
    assert!(ws.iter().all(|w| w.rung == Some(RungId::Rapl)));
    let s = Session::new(host(), Some("idle".into()), 100_000_000, Some("ab".repeat(32)), &ws);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    record_to(&p, &s).unwrap();
    let back = Session::load(&p).unwrap();
    assert_eq!(back, s);
    for (a, b) in back.to_windows().iter().zip(&ws) {
        assert_eq!(
            (a.seq, a.start_ns, a.end_ns, a.energy(), a.rung, &a.declined),
            (b.seq, b.start_ns, b.end_ns, b.energy(), b.rung, &b.declined)
        );
    }
    // The error names the file.
    let e = Session::load(&dir.path().join("missing.json")).unwrap_err();
    assert!(e.to_string().contains("missing.json") && e.code() == "io", "{e}");
}

fn spend(debited: u64, modelled: u64, failed: u64) -> GrantSpend {
    GrantSpend {
        grant_id: ContentId::of_bytes(b"grant"),
        budget_uj: 1_000_000,
        debited_uj: debited,
        measured_uj: debited - modelled,
        modelled_uj: modelled,
        coverage: Coverage::Whole,
        allows: 2,
        receipts_failed: failed,
    }
}

#[test]
fn s5_5_reconcile_spend_is_exact_over_whole_windows() {
    let hw = |s, uj| win(s, Some((uj, Provenance::HwShunt, Coverage::Whole, RungId::Rapl)));
    let s = session(&[hw(0, 300_000), hw(1, 100_000)]);
    let r = layers::reconcile_spend(&spend(400_000, 0, 0), &s).unwrap();
    let c = r.conservation.as_ref().unwrap();
    assert_eq!((c.discrepancy_uj, r.basis, r.balanced), (0, Basis::Measured, true));
    assert_eq!(c.floor_ppm.to_string(), "1/1", "one joule: a 1 ppm floor");
    let r = layers::reconcile_spend(&spend(400_001, 0, 0), &s).unwrap();
    assert_eq!((r.conservation.unwrap().discrepancy_uj, r.balanced), (1, false));
    // Modelled debits make the floor modelled, whatever the meter read.
    let r = layers::reconcile_spend(&spend(400_000, 10, 0), &s).unwrap();
    assert_eq!((r.basis, r.balanced), (Basis::Modelled, true));
    assert!(r.statement.contains("model"), "{}", r.statement);
    // A receipt that failed verification is in no figure: not balanced (§8.2).
    let r = layers::reconcile_spend(&spend(400_000, 0, 1), &s).unwrap();
    assert!(!r.balanced && r.statement.contains("failed verification"), "{}", r.statement);
}

#[test]
fn s5_5_partial_and_gap_windows_are_kept_apart() {
    let s = session(&[
        win(0, Some((400_000, Provenance::HwShunt, Coverage::Whole, RungId::Rapl))),
        win(1, Some((7, Provenance::HwShunt, Coverage::Partial, RungId::Nvml))),
        win(2, None),
    ]);
    let r = layers::reconcile_spend(&spend(400_000, 0, 0), &s).unwrap();
    assert_eq!(r.unreconciled, Some(Unreconciled::MeterCoveragePartial));
    assert_eq!(
        (r.whole_uj, r.partial_uj, r.partial_windows.clone(), r.gap_windows.clone()),
        (400_000, 7, vec![1], vec![2])
    );
    assert!(r.conservation.is_none() && !r.balanced);
    let s = session(&[win(0, Some((400_000, Provenance::Estimator, Coverage::Whole, RungId::Estimate))), win(1, None)]);
    let r = layers::reconcile_spend(&spend(400_000, 0, 0), &s).unwrap();
    assert_eq!((r.unreconciled, r.basis), (Some(Unreconciled::MeterGap), Basis::Modelled));
}

#[test]
fn s5_6_bounds_hold_only_the_envelopes_rungs_and_never_verify() {
    let env = EnvelopeFile::from_bytes(
        "env.json",
        br#"{"format":"jcp-meter-envelope/1","part":"package-0","rungs":["rapl"],"burst_mw":65000,"idle_mw":1000}"#,
    )
    .unwrap();
    let s = session(&[
        win(0, Some((30_000_000, Provenance::HwShunt, Coverage::Whole, RungId::Rapl))),
        win(1, Some((65_000_001, Provenance::HwShunt, Coverage::Whole, RungId::Rapl))),
        win(2, Some((999_999, Provenance::HwShunt, Coverage::Whole, RungId::Rapl))),
        win(3, Some((999_999, Provenance::Estimator, Coverage::Whole, RungId::Estimate))),
    ]);
    let r = layers::bounds(&s, &env).unwrap();
    let words: Vec<_> = r.windows.iter().map(|w| w.word).collect();
    assert_eq!(words, vec![Some(Word::NotRefuted), Some(Word::Refuted), Some(Word::Refuted), None]);
    assert_eq!((r.refuted, r.not_refuted, r.not_held), (2, 1, 1));
    assert!(!serde_json::to_string(&r).unwrap().contains("verified"));
}

#[test]
fn s5_4_dynamism_over_a_session_keeps_three_looks_apart() {
    let baseline = jcp_meter::declared::baseline_from_bytes(
        "b.json",
        serde_json::json!({"format":"jcp-meter-baseline/1","scope":{"host":host(),"occupancy":"idle","window_ns":1_000_000_000u64},"low_uj":5_000_000,"high_uj":10_000_000}).to_string().as_bytes(),
    )
    .unwrap();
    let s = session(&[
        win(0, Some((7_000_000, Provenance::HwShunt, Coverage::Whole, RungId::Rapl))),
        win(1, Some((70_000_000, Provenance::HwShunt, Coverage::Whole, RungId::Rapl))),
        win(2, None),
        win(3, Some((7_000_000, Provenance::HwShunt, Coverage::Partial, RungId::Nvml))),
    ]);
    let r = layers::dynamism(&s, Some(&baseline), &Causes::default(), None);
    assert_eq!((r.within_band, r.unexplained, r.unresolvable, r.inapplicable), (1, 1, 1, 1));
    let mut anon = s.clone();
    anon.occupancy = None;
    let r = layers::dynamism(&anon, Some(&baseline), &Causes::default(), None);
    assert_eq!(
        (r.inapplicable, r.unresolvable),
        (3, 1),
        "no declared occupancy: no yardstick; the gap stays unresolvable"
    );
}

#[test]
fn s5_3_trace_files_resolves_by_content_id_and_lists_unbound_files() {
    let key = Keypair::from_seed([9; 32]).unwrap();
    let a = activity_bytes("a", Energy::new(600, Provenance::HwShunt));
    let stray = activity_bytes("stray", Energy::new(900, Provenance::HwShunt));
    let e = Efficiency {
        outcome: "o".into(),
        activities: vec![ContentId::of_bytes(&a)],
        energy: Energy::new(500, Provenance::HwShunt),
        accepted_tokens: 0,
        completed_units: 1,
        steward: key.did(),
    };
    let sealed = e.seal(&key).unwrap();
    let r = layers::trace_files(&sealed, &[("a.cbor".into(), a.clone()), ("stray.cbor".into(), stray)]).unwrap();
    assert_eq!((r.trace.residual_uj, r.trace.finding), (-100, Some("activities-exceed-outcome")));
    assert_eq!(r.unbound.len(), 1);
    assert_eq!(r.unbound[0].file, "stray.cbor");
    assert_eq!(layers::trace_files(&sealed, &[]).unwrap_err().code(), "unresolvable-activity");
    assert!(layers::trace_files(&sealed, &[]).unwrap_err().is_refusal());
}
