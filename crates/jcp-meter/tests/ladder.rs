//! §5, §5.1: the ladder over fake sysfs trees and recorded counter traces.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use jcp::energy::{Coverage, Provenance};
use jcp_meter::clock::ManualClock;
use jcp_meter::estimate::{Calibration, CalibrationSource, HostId};
use jcp_meter::trace::TraceCounter;
use jcp_meter::{CounterBackend, LiveMeter, Meter, MeterConfig, RungId, RungStatus, Window, WindowDecline};

const MS: u64 = 1_000_000;

fn meter(counters: Vec<Box<dyn CounterBackend>>, clock: &ManualClock, config: MeterConfig) -> Meter {
    Meter::new(config, backends(counters, clock, Some(250))).unwrap()
}

/// A fake tree whose package counters run at the given mW, driven by the manual clock.
fn live_tree(fake: &Arc<FakePowercap>, clock: &ManualClock, zones: Vec<(&'static str, u64, u64)>) {
    let f = Arc::clone(fake);
    clock.on_pause(move |now| {
        for (entry, mw, max) in &zones {
            f.set(entry, (1_000 + uj(*mw, now)) % (max + 1));
        }
    });
}

#[test]
fn s5_1_rapl_sums_only_top_level_package_zones() {
    let fake = FakePowercap::new();
    fake.laptop();
    let mut r = rapl(&fake);
    let counters = r.open().unwrap();
    assert_eq!(counters.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["package-0"]);
    let notes = r.notes().join("\n");
    for left_out in
        ["intel-rapl:1 (psys)", "intel-rapl-mmio:0 (package-0)", "intel-rapl:0:2 (dram)", "intel-rapl:0:0 (core)"]
    {
        assert!(notes.contains(left_out), "{left_out} missing from {notes}");
    }
    assert!(notes.contains("counts their energy twice"));
}

#[test]
fn s5_1_rapl_multi_socket_and_multi_die_each_wrap_at_own_range() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 24_999_999)
        .zone("intel-rapl:1", "package-1", 1_000, 262_143_328_850)
        .zone("intel-rapl:2", "package-1-die-1", 1_000, 262_143_328_850);
    let clock = ManualClock::new();
    // package-0 at 20 W wraps inside the first window at its 25 J range; the others have the usual range.
    live_tree(
        &fake,
        &clock,
        vec![
            ("intel-rapl:0", 20_000, 24_999_999),
            ("intel-rapl:1", 30_000, 262_143_328_850),
            ("intel-rapl:2", 5_000, 262_143_328_850),
        ],
    );
    let mut m = meter(vec![Box::new(rapl(&fake))], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    assert_eq!(rep.chosen, Some(RungId::Rapl), "{rep:#?}");
    let w = m.next_window();
    assert_eq!(
        (w.provenance, w.coverage, w.rung),
        (Some(Provenance::HwShunt), Some(Coverage::Whole), Some(RungId::Rapl))
    );
    // 55 W over exactly 1 s; package-0 wrapped inside the window.
    assert_eq!(w.energy_uj, Some(55_000_000), "{w:#?}");
    assert!(w.counters.iter().any(|c| c.counter == "package-0" && c.wrapped));
    assert_eq!(w.counters.len(), 3);
}

#[test]
fn s5_1_rapl_permission_denied_is_declined_with_the_fix_never_zero() {
    let fake = FakePowercap::new();
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850).zone(
        "intel-rapl:1",
        "package-1",
        1_000,
        262_143_328_850,
    );
    fake.deny("intel-rapl:1");
    let clock = ManualClock::new();
    let mut m = meter(vec![Box::new(rapl(&fake))], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    let r = rep.rung(RungId::Rapl).unwrap();
    assert_eq!((r.status, r.code), (RungStatus::Declined, "rapl-permission-denied"));
    assert!(r.why.contains("intel-rapl:1/energy_uj"), "{}", r.why);
    assert!(r.fix.as_deref().unwrap().contains("chmod a+r"));
    assert_eq!(rep.chosen, Some(RungId::Estimate));
    let w = m.next_window();
    assert_eq!(w.provenance, Some(Provenance::Estimator));
    assert!(w.energy_uj.unwrap() > 0);
    assert_eq!(w.declined.iter().find(|d| d.rung == RungId::Rapl).unwrap().code, "rapl-permission-denied");
}

#[test]
fn s5_1_no_powercap_tree_is_declined_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = jcp_meter::rapl::RaplReader::new(dir.path().join("absent"));
    let d = r.open().unwrap_err();
    assert_eq!(d.code, "rapl-no-powercap");
    assert!(d.fix.unwrap().contains("modprobe"));
}

#[test]
fn s5_liveness_frozen_socket_declines_the_whole_rung() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850).zone(
        "intel-rapl:1",
        "package-1",
        1_000,
        262_143_328_850,
    );
    let clock = ManualClock::new();
    live_tree(&fake, &clock, vec![("intel-rapl:0", 20_000, 262_143_328_850)]); // package-1 frozen
    let mut m = meter(vec![Box::new(rapl(&fake))], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    let r = rep.rung(RungId::Rapl).unwrap();
    assert_eq!(r.code, "rapl-not-live");
    assert!(r.why.contains("package-1 frozen"), "{}", r.why);
    assert!(r.counters[0].liveness.as_ref().unwrap().status.is_live());
    assert_eq!(rep.chosen, Some(RungId::Estimate));
}

#[test]
fn s5_liveness_counter_republished_in_lumps_is_not_live() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let clock = ManualClock::new();
    let f = Arc::clone(&fake);
    // Republished every 200 ms: the 50 ms probe sees 1 advance in 4.
    clock.on_pause(move |now| f.set("intel-rapl:0", 1_000 + uj(20_000, now / (200 * MS) * (200 * MS))));
    let mut m = meter(vec![Box::new(rapl(&fake))], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    assert_eq!(rep.rung(RungId::Rapl).unwrap().code, "rapl-not-live");
    assert!(rep.rung(RungId::Rapl).unwrap().why.contains("lumpy"));
}

#[test]
fn s5_1_degradation_mid_reading_lowers_the_grade_then_recovers() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let clock = ManualClock::new();
    let fail = Arc::new(Mutex::new(false));
    let (f, fl) = (Arc::clone(&fake), Arc::clone(&fail));
    clock.on_pause(move |now| {
        let p = f.root().join("intel-rapl:0").join("energy_uj");
        if *fl.lock().unwrap() {
            let _ = std::fs::remove_file(&p);
        } else {
            std::fs::write(&p, format!("{}\n", 1_000 + uj(10_000, now))).unwrap();
        }
    });
    let mut m = meter(vec![Box::new(rapl(&fake))], &clock, MeterConfig::default());
    assert_eq!(m.probe().chosen, Some(RungId::Rapl));
    assert_eq!(m.next_window().provenance, Some(Provenance::HwShunt));
    *fail.lock().unwrap() = true;
    let w = m.next_window();
    assert_eq!((w.provenance, w.rung), (Some(Provenance::Estimator), Some(RungId::Estimate)));
    assert_eq!(w.declined.iter().find(|d| d.rung == RungId::Rapl).unwrap().code, "rapl-read-failed");
    *fail.lock().unwrap() = false;
    let w = m.next_window();
    assert_eq!(w.provenance, Some(Provenance::Estimator), "no reading at this window's start");
    assert_eq!(w.declined.iter().find(|d| d.rung == RungId::Rapl).unwrap().code, "no-baseline");
    let w = m.next_window();
    assert_eq!((w.provenance, w.energy_uj), (Some(Provenance::HwShunt), Some(10_000_000)));
}

#[test]
fn s5_1_counter_frozen_mid_run_is_metered_by_a_lower_rung() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let clock = ManualClock::new();
    let f = Arc::clone(&fake);
    clock.on_pause(move |now| f.set("intel-rapl:0", 1_000 + uj(10_000, now.min(1_400 * MS))));
    let mut m = meter(vec![Box::new(rapl(&fake))], &clock, MeterConfig::default());
    m.probe();
    assert_eq!(m.next_window().provenance, Some(Provenance::HwShunt));
    let w = m.next_window();
    assert_eq!(w.provenance, Some(Provenance::Estimator));
    let d = w.declined.iter().find(|d| d.rung == RungId::Rapl).unwrap();
    assert_eq!(d.code, "counter-not-advancing");
}

#[test]
fn s5_1_windows_are_contiguous_monotonic_and_configurable() {
    let clock = ManualClock::new();
    let cfg = MeterConfig { interval: Duration::from_millis(250), ..MeterConfig::default() };
    let mut m = meter(vec![], &clock, cfg);
    m.probe();
    let ws: Vec<_> = (0..4).map(|_| m.next_window()).collect();
    for pair in ws.windows(2) {
        assert_eq!(pair[0].end_ns, pair[1].start_ns);
        assert_eq!(pair[1].seq, pair[0].seq + 1);
    }
    for w in &ws {
        assert_eq!(w.span_ns(), 250 * MS);
        // 5 W + 25 % of 4 × 4 W = 9 W over 250 ms.
        assert_eq!((w.energy_uj, w.provenance), (Some(2_250_000), Some(Provenance::Estimator)));
    }
}

#[test]
fn s5_1_estimate_off_gives_gaps_not_zeros() {
    let clock = ManualClock::new();
    let cfg = MeterConfig { estimate_fallback: false, ..MeterConfig::default() };
    let mut m = meter(vec![], &clock, cfg);
    assert_eq!(m.probe().chosen, None);
    let w = m.next_window();
    assert_eq!((w.energy_uj, w.provenance, w.coverage, w.rung), (None, None, None, None));
    assert!(w.gap.is_some());
    let json = serde_json::to_value(&w).unwrap();
    assert!(json["energy_uj"].is_null());
    assert!(w.declined.iter().any(|d| d.rung == RungId::Estimate && d.code == "estimate-disabled"));
}

#[test]
fn s5_1_unreadable_utilisation_assumes_full_load_and_says_so() {
    let clock = ManualClock::new();
    let mut m = Meter::new(MeterConfig::default(), backends(vec![], &clock, None)).unwrap();
    m.probe();
    let w = m.next_window();
    assert_eq!(w.energy_uj, Some(21_000_000)); // 5 W + 4 × 4 W
    assert!(w.note.unwrap().contains("assumed full load"));
}

#[test]
fn s5_1_rungs_3_and_4_are_recorded_unavailable_not_imitated() {
    let clock = ManualClock::new();
    let mut m = meter(vec![], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    for r in [RungId::ProcessEnergy, RungId::Ioreport] {
        let x = rep.rung(r).unwrap();
        // What is true where the test runs: absent off macOS, not implemented on it.
        let code = if cfg!(target_os = "macos") { "not-implemented" } else { "not-available-on-platform" };
        assert_eq!((x.status, x.code), (RungStatus::Unavailable, code));
        assert!(x.why.contains("macOS"));
        assert!(x.why.contains(RungId::Estimate.title()), "names the rung that meters instead: {}", x.why);
    }
    let order: Vec<RungId> = rep.rungs.iter().map(|r| r.rung).collect();
    assert_eq!(order, [RungId::ProcessEnergy, RungId::Ioreport, RungId::Calibrated, RungId::Estimate]);
}

fn calibration(host: HostId) -> Calibration {
    let source =
        CalibrationSource { rung: RungId::Rapl, counters: vec!["package-0".into()], trace: None, load: "test".into() };
    Calibration::from_measurement(30_000_000, 1_000_000_000, host, source, 0).unwrap()
}

#[test]
fn s5_1_rung5_calibrated_power_is_model_based_on_its_own_host_only() {
    let clock = ManualClock::new();
    let cfg = MeterConfig { calibration: Some(calibration(host())), ..MeterConfig::default() };
    let mut m = meter(vec![], &clock, cfg);
    assert_eq!(m.probe().chosen, Some(RungId::Calibrated));
    let w = m.next_window();
    assert_eq!((w.energy_uj, w.provenance), (Some(30_000_000), Some(Provenance::ModelBased)));

    let mut elsewhere = host();
    elsewhere.hostname = "another".into();
    let cfg = MeterConfig { calibration: Some(calibration(elsewhere)), ..MeterConfig::default() };
    let mut m = meter(vec![], &clock, cfg);
    let rep = m.probe().clone();
    assert_eq!(rep.rung(RungId::Calibrated).unwrap().code, "calibration-measured-elsewhere");
    assert_eq!(m.next_window().provenance, Some(Provenance::Estimator));
}

// ------------------------------------------------------------------ NVML traces

fn gpu_trace(
    counter_mw: impl Fn(u64) -> u64,
    draw_mw: impl Fn(u64) -> Option<u64>,
    limit: Option<u64>,
) -> jcp_meter::trace::Trace {
    trace(RungId::Nvml, vec![gpu(limit, true)], 10 * MS, 800, |t| (vec![Some(counter_mw(t))], vec![draw_mw(t)]))
}

#[test]
fn s5_1_nvml_live_and_plausible_is_hwshunt_partial() {
    let t = gpu_trace(|t| 5_000_000 + uj(14_800, t), |_| Some(14_800), Some(65_000));
    let clock = ManualClock::new();
    let mut m = meter(vec![replay(t)], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    assert_eq!(rep.chosen, Some(RungId::Nvml), "{rep:#?}");
    let w = m.next_window();
    assert_eq!(
        (w.provenance, w.coverage, w.energy_uj),
        (Some(Provenance::HwShunt), Some(Coverage::Partial), Some(14_800_000))
    );
    assert!(w.counters[0].plausibility.as_ref().unwrap().admits());
}

#[test]
fn s5_plausibility_rtx4050_counter_at_4x_board_draw_is_declined() {
    let t = gpu_trace(|t| uj(4 * 14_800, t), |_| Some(14_800), Some(65_000));
    let clock = ManualClock::new();
    let mut m = meter(vec![replay(t)], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    let r = rep.rung(RungId::Nvml).unwrap();
    assert_eq!(r.code, "counter-implausible", "{r:#?}");
    assert!(r.why.contains("59.200 W") && r.why.contains("19.800 W"), "rate and bound recorded: {}", r.why);
    assert_eq!(rep.chosen, Some(RungId::Estimate));
}

#[test]
fn s5_plausibility_590w_wake_spike_does_not_excuse_the_counter() {
    // The first draw sample after wake reads 590 W (past the 65 W limit); the rest are 14.8 W.
    let t = gpu_trace(|t| uj(4 * 14_800, t), |t| Some(if t < 60 * MS { 590_000 } else { 14_800 }), Some(65_000));
    let clock = ManualClock::new();
    let mut m = meter(vec![replay(t)], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    let r = rep.rung(RungId::Nvml).unwrap();
    assert_eq!(r.code, "counter-implausible", "an implausible counter, not an unjudgeable one: {r:#?}");
    let p = serde_json::to_value(r.counters[0].plausibility.as_ref().unwrap()).unwrap();
    assert_eq!(p["verdict"], "implausible");
    assert_eq!(p["discarded"].as_array().unwrap().len(), 1, "only the spike is discarded: {p}");
}

#[test]
fn s5_plausibility_only_impossible_draws_is_unjudgeable_and_still_declined() {
    let t = gpu_trace(|t| uj(14_800, t), |_| Some(590_000), Some(65_000));
    let clock = ManualClock::new();
    let mut m = meter(vec![replay(t)], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    assert_eq!(rep.rung(RungId::Nvml).unwrap().code, "counter-unjudgeable");
    assert_eq!(rep.chosen, Some(RungId::Estimate));
}

#[test]
fn s5_plausibility_counter_turning_implausible_mid_run_degrades_the_window() {
    // Sane for 1.4 s, then the counter runs at 30× the draw.
    let t = gpu_trace(
        |t| {
            if t <= 1_400 * MS {
                uj(14_800, t)
            } else {
                uj(14_800, 1_400 * MS) + uj(444_000, t - 1_400 * MS)
            }
        },
        |_| Some(14_800),
        Some(65_000),
    );
    let d = nvml_turns_in_the_second_window(t);
    assert_eq!(d.code, "counter-implausible");
    assert!(d.why.contains("board power limit"), "{}", d.why);
}

/// Replays `t`: NVML chosen and metering the first window, the second
/// degraded to the estimate; the NVML rung's decline of the second.
fn nvml_turns_in_the_second_window(t: jcp_meter::trace::Trace) -> WindowDecline {
    let clock = ManualClock::new();
    let mut m = meter(vec![replay(t)], &clock, MeterConfig::default());
    assert_eq!(m.probe().chosen, Some(RungId::Nvml));
    assert_eq!(m.next_window().provenance, Some(Provenance::HwShunt));
    let w = m.next_window();
    assert_eq!(w.provenance, Some(Provenance::Estimator));
    w.declined.into_iter().find(|d| d.rung == RungId::Nvml).unwrap()
}

#[test]
fn s5_1_nvml_reset_mid_run_is_not_a_wrap() {
    let t = gpu_trace(
        |t| {
            if t <= 1_400 * MS {
                9_000_000_000 + uj(14_800, t)
            } else {
                uj(14_800, t - 1_400 * MS)
            }
        },
        |_| Some(14_800),
        Some(65_000),
    );
    let clock = ManualClock::new();
    let mut m = meter(vec![replay(t)], &clock, MeterConfig::default());
    assert_eq!(m.probe().chosen, Some(RungId::Nvml));
    m.next_window();
    let w = m.next_window();
    assert_eq!(w.declined.iter().find(|d| d.rung == RungId::Nvml).unwrap().code, "counter-reset");
    assert_eq!(w.provenance, Some(Provenance::Estimator));
}

#[test]
fn s5_1_trace_end_is_a_degraded_window_not_a_zero() {
    let t = gpu_trace(|t| uj(14_800, t), |_| Some(14_800), Some(65_000)); // 8 s
    let clock = ManualClock::new();
    let mut m = meter(vec![replay(t)], &clock, MeterConfig { estimate_fallback: false, ..MeterConfig::default() });
    m.probe();
    let ws: Vec<_> = (0..9).map(|_| m.next_window()).collect();
    assert!(ws[..7].iter().all(|w| w.energy_uj == Some(14_800_000)));
    assert_eq!(ws[8].energy_uj, None);
    assert!(ws[8].gap.is_some());
}

#[test]
fn s5_1_rapl_above_nvml_leaves_nvml_standby() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let clock = ManualClock::new();
    live_tree(&fake, &clock, vec![("intel-rapl:0", 10_000, 262_143_328_850)]);
    let t = gpu_trace(|t| uj(14_800, t), |_| Some(14_800), Some(65_000));
    let mut m = meter(vec![Box::new(rapl(&fake)), replay(t)], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    assert_eq!(rep.chosen, Some(RungId::Rapl));
    assert_eq!(rep.rung(RungId::Nvml).unwrap().status, RungStatus::Standby);
    assert_eq!(rep.rung(RungId::Estimate).unwrap().status, RungStatus::Standby);
}

#[test]
fn s5_1_calibrate_from_rapl_trace_and_refuse_otherwise() {
    let rapl_counter = TraceCounter {
        name: "package-0".into(),
        max_range_uj: Some(262_143_328_850),
        power_limit_mw: None,
        draw_exposed: false,
    };
    let t = trace(RungId::Rapl, vec![rapl_counter], 50 * MS, 20, |t| (vec![Some(1_000 + uj(35_000, t))], vec![]));
    let c = jcp_meter::meter::calibrate_from_trace(&t, "abc".into(), 0).unwrap();
    assert_eq!((c.active_mw, c.measured_on.clone(), c.source.trace.as_deref()), (35_000, host(), Some("abc")));
    let mut no_host = t.clone();
    no_host.host = None;
    assert_eq!(
        jcp_meter::meter::calibrate_from_trace(&no_host, "abc".into(), 0).unwrap_err().code(),
        "calibration-malformed"
    );
    let g = gpu_trace(|t| uj(14_800, t), |_| Some(14_800), Some(65_000));
    assert_eq!(
        jcp_meter::meter::calibrate_from_trace(&g, "abc".into(), 0).unwrap_err().code(),
        "calibration-wrong-domain"
    );
    let frozen = trace(RungId::Rapl, t.counters.clone(), 50 * MS, 20, |_| (vec![Some(5)], vec![]));
    assert_eq!(jcp_meter::meter::calibrate_from_trace(&frozen, "abc".into(), 0).unwrap_err().code(), "no-live-counter");
}

#[test]
fn s5_1_calibrate_without_a_live_counter_stores_nothing() {
    let clock = ManualClock::new();
    let mut m = meter(vec![], &clock, MeterConfig::default());
    assert_eq!(m.calibrate(Duration::from_millis(100), 0).unwrap_err().code(), "no-live-counter");
}

#[test]
fn s5_1_calibrate_against_a_live_rapl_counter() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let clock = ManualClock::new();
    live_tree(&fake, &clock, vec![("intel-rapl:0", 42_000, 262_143_328_850)]);
    let mut m = Meter::new(MeterConfig::default(), backends(vec![Box::new(rapl(&fake))], &clock, Some(0))).unwrap();
    let c = m.calibrate(Duration::from_millis(500), 7).unwrap();
    assert_eq!((c.active_mw, c.source.rung, c.measured_on), (42_000, RungId::Rapl, host()));
}

#[test]
fn s5_4_live_meter_hands_over_windows_with_grades() {
    let t = gpu_trace(|t| uj(14_800, t), |_| Some(14_800), Some(65_000));
    let clock = ManualClock::new();
    let m = meter(vec![replay(t)], &clock, MeterConfig::default());
    let live = LiveMeter::spawn(m);
    let first = live.recv().unwrap();
    assert_eq!((first.provenance, first.coverage), (Some(Provenance::HwShunt), Some(Coverage::Partial)));
    assert_eq!(live.probe_report().unwrap().chosen, Some(RungId::Nvml));
    let _ = live.drain();
    live.stop();
}

#[test]
fn s5_4_live_meter_windows_record_as_a_session_that_reads_back() {
    // The console's "record a session": drained windows, the meter's host and window length.
    let t = gpu_trace(|t| uj(14_800, t), |_| Some(14_800), Some(65_000));
    let clock = ManualClock::new();
    let m = meter(vec![replay(t)], &clock, MeterConfig::default());
    let live = LiveMeter::spawn(m);
    let windows: Vec<_> = (0..3).map(|_| live.recv().unwrap()).collect();
    let session = live.session(&windows, Some("one-model-serving".into()));
    live.stop();
    assert_eq!((&session.host, session.interval_ns), (&host(), 1_000_000_000));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    jcp_meter::session::record_to(&path, &session).unwrap();
    let back = jcp_meter::session::Session::load(&path).unwrap();
    assert_eq!(back, session);
    assert!(back.windows.iter().all(|w| w.coverage == Some(Coverage::Partial) && w.rung == Some(RungId::Nvml)));
}

#[test]
fn c09_real_system_probe_always_yields_a_figure_and_says_why() {
    // C9: on whatever machine runs the tests, the ladder yields a figure and every declined rung says why.
    let cfg = MeterConfig { interval: Duration::from_millis(50), ..MeterConfig::default() };
    let mut m = Meter::system(cfg, std::path::Path::new(jcp_meter::rapl::POWERCAP_ROOT)).unwrap();
    let rep = m.probe().clone();
    assert!(rep.chosen.is_some());
    for r in &rep.rungs {
        assert!(!r.why.is_empty(), "{r:?}");
        if r.status == RungStatus::Declined
            && r.rung == RungId::Rapl
            && !std::path::Path::new("/sys/class/powercap").exists()
        {
            assert_eq!(r.code, "rapl-no-powercap");
        }
    }
    let w = m.next_window();
    let e = w.energy().unwrap();
    assert_eq!(e.provenance, w.rung.unwrap().provenance());
    assert!(w.end_ns > w.start_ns);
}

#[test]
fn s5_1_record_a_live_counter_then_calibrate_from_the_recording() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850).zone("intel-rapl:1", "psys", 1, 262_143_328_850);
    let clock = ManualClock::new();
    live_tree(&fake, &clock, vec![("intel-rapl:0", 18_000, 262_143_328_850)]);
    let mut counters: Vec<Box<dyn CounterBackend>> = vec![Box::new(rapl(&fake))];
    let t = jcp_meter::trace::record(&mut counters, &clock, Duration::from_millis(100), 10, false, host()).unwrap();
    assert_eq!((t.rung, t.counters.len(), t.samples.len()), (RungId::Rapl, 1, 11));
    let json = serde_json::to_string(&t).unwrap();
    let back = jcp_meter::trace::Trace::from_json(&json).unwrap();
    let c =
        jcp_meter::meter::calibrate_from_trace(&back, jcp_meter::trace::Trace::content_id(json.as_bytes()), 0).unwrap();
    assert_eq!(c.active_mw, 18_000);
    let mut none: Vec<Box<dyn CounterBackend>> =
        vec![Box::new(jcp_meter::rapl::RaplReader::new(fake.root().join("absent")))];
    assert_eq!(
        jcp_meter::trace::record(&mut none, &clock, Duration::from_millis(100), 10, false, host()).unwrap_err().code(),
        "no-live-counter"
    );
}

// ------------------------------------------------------------------ issue 37: wraps, liveness over the meter's life, findings per counter

/// A 100 J package zone publishing its power limits: 25 W long-term, 30 W short-term.
fn small_range_package(fake: &FakePowercap) {
    fake.zone("intel-rapl:0", "package-0", 1_000, 99_999_999)
        .limit("intel-rapl:0", "constraint_0_power_limit_uw", 25_000_000)
        .limit("intel-rapl:0", "constraint_1_power_limit_uw", 30_000_000);
}

/// A 262 kJ package zone publishing 15 W long-term and 20 W short-term limits.
fn limited_package(fake: &FakePowercap) {
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850)
        .limit("intel-rapl:0", "constraint_0_power_limit_uw", 15_000_000)
        .limit("intel-rapl:0", "constraint_1_power_limit_uw", 20_000_000);
}

/// A meter over `fake`'s `intel-rapl:0`, whose counter reads `counter(now)`
/// µJ after every pause of `clock`, probed; returns it with the rung chosen.
fn package_meter(
    fake: FakePowercap,
    clock: &ManualClock,
    config: MeterConfig,
    mut counter: impl FnMut(u64) -> u64 + Send + 'static,
) -> (Meter, Option<RungId>) {
    let fake = Arc::new(fake);
    let f = Arc::clone(&fake);
    clock.on_pause(move |now| f.set("intel-rapl:0", counter(now)));
    let mut m = meter(vec![Box::new(rapl(&fake))], clock, config);
    let chosen = m.probe().chosen;
    (m, chosen)
}

/// The RAPL rung's decline of a window.
fn rapl_decline(w: &Window) -> &WindowDecline {
    w.declined.iter().find(|d| d.rung == RungId::Rapl).unwrap()
}

/// A 262 kJ `package-0` meter at 10 W read through `shown(now)`: the time whose energy the counter shows.
fn package_at_10w(shown: impl Fn(u64) -> u64 + Send + 'static) -> Meter {
    let fake = FakePowercap::new();
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let (mut m, chosen) =
        package_meter(fake, &ManualClock::new(), MeterConfig::default(), move |now| 1_000 + uj(10_000, shown(now)));
    assert_eq!(chosen, Some(RungId::Rapl));
    assert_eq!(m.next_window().provenance, Some(Provenance::HwShunt));
    m
}

#[test]
fn s5_1_rapl_wraps_are_all_counted_over_a_window_spanning_several_wraps() {
    let fake = FakePowercap::new();
    small_range_package(&fake);
    // 20 W on a 100 J range: a wrap every 5 s, twelve inside a one-minute window.
    let cfg = MeterConfig { interval: Duration::from_secs(60), ..MeterConfig::default() };
    let (mut m, chosen) = package_meter(fake, &ManualClock::new(), cfg, |now| (1_000 + uj(20_000, now)) % 100_000_000);
    assert_eq!(chosen, Some(RungId::Rapl));
    let w = m.next_window();
    assert_eq!(
        (w.provenance, w.coverage, w.rung),
        (Some(Provenance::HwShunt), Some(Coverage::Whole), Some(RungId::Rapl)),
        "{:#?}",
        w.declined
    );
    assert_eq!(w.energy_uj, Some(1_200_000_000), "20 W over 60 s, every wrap counted");
    assert_eq!(w.counters[0].wraps, 12);
}

#[test]
fn s5_1_rapl_window_too_sparse_to_rule_out_a_wrap_is_not_graded_hardware() {
    let fake = FakePowercap::new();
    small_range_package(&fake);
    let clock = ManualClock::new();
    // The metering thread is held up for 5 s inside the second window: at
    // 20 W the counter runs its whole 100 J range in that time, unseen.
    let held_up = clock.clone();
    let mut stalled = false;
    let (mut m, chosen) = package_meter(fake, &clock, MeterConfig::default(), move |mut now| {
        if !stalled && now >= 2_000 * MS {
            stalled = true;
            held_up.advance(Duration::from_secs(5));
            now += 5_000 * MS;
        }
        (1_000 + uj(20_000, now)) % 100_000_000
    });
    assert_eq!(chosen, Some(RungId::Rapl));
    assert_eq!(m.next_window().energy_uj, Some(20_000_000));
    let w = m.next_window();
    assert_eq!(w.provenance, Some(Provenance::Estimator), "never a low figure graded hardware: {w:#?}");
    let d = rapl_decline(&w);
    assert_eq!(d.code, "counter-wrap-unobservable", "{}", d.why);
    let f = serde_json::to_value(&d.findings).unwrap();
    assert_eq!(f[0]["counter"], "package-0");
    assert_eq!(f[0]["code"], "counter-wrap-unobservable");
    assert_eq!(f[0]["bound_mw"], 60_000, "twice the largest published limit");
    assert!(f[0]["gap_ns"].as_u64().unwrap() >= 5_000 * MS, "{f}");
    // Read at its pace again, the next window is whole.
    let w = m.next_window();
    assert_eq!((w.provenance, w.energy_uj), (Some(Provenance::HwShunt), Some(20_000_000)));
}

#[test]
fn s5_liveness_counter_frozen_mid_window_stops_grading_windows_as_hardware() {
    // Frozen from 1.6 s (inside the second window, 1.4–2.4 s) to 3.45 s.
    let mut m = package_at_10w(|now| now.min(1_600 * MS) + now.saturating_sub(3_450 * MS));
    // It moved in this window, then stopped: not live throughout, so no hardware grade.
    let w = m.next_window();
    assert_eq!(w.provenance, Some(Provenance::Estimator), "a counter that froze mid-window read low: {w:#?}");
    let d = rapl_decline(&w);
    assert_eq!(d.code, "counter-not-live", "{}", d.why);
    let f = serde_json::to_value(&d.findings).unwrap();
    assert_eq!((f[0]["code"].as_str(), f[0]["advanced"].as_u64()), (Some("counter-not-live"), Some(4)), "{f}");
    assert_eq!(rapl_decline(&m.next_window()).code, "counter-not-advancing");
    // Moving again from 3.45 s: the window 3.4–4.4 s opened before it showed itself live again.
    let w = m.next_window();
    assert_eq!((w.provenance, rapl_decline(&w).code.as_str()), (Some(Provenance::Estimator), "counter-not-live"));
    let w = m.next_window();
    assert_eq!((w.provenance, w.energy_uj), (Some(Provenance::HwShunt), Some(10_000_000)));
}

#[test]
fn s5_liveness_counter_turning_lumpy_after_the_probe_is_not_live_for_windows() {
    // Live at the probe; from 1.4 s republished only every 500 ms, in lumps.
    let mut m = package_at_10w(|now| if now <= 1_400 * MS { now } else { now / (500 * MS) * (500 * MS) });
    for _ in 0..3 {
        let w = m.next_window();
        assert_eq!(w.provenance, Some(Provenance::Estimator), "each window moved, in lumps: {w:#?}");
        assert_eq!(rapl_decline(&w).code, "counter-not-live", "{}", rapl_decline(&w).why);
    }
}

#[test]
fn s5_plausibility_rapl_is_held_to_the_packages_published_power_limit() {
    // Limits 15 W long-term, 20 W short-term; the counter runs at 45 W.
    let fake = FakePowercap::new();
    limited_package(&fake);
    let (m, chosen) = package_meter(fake, &ManualClock::new(), MeterConfig::default(), |now| 1_000 + uj(45_000, now));
    let rep = m.report().unwrap();
    let r = rep.rung(RungId::Rapl).unwrap();
    assert_eq!(r.code, "counter-implausible", "{r:#?}");
    let p = serde_json::to_value(r.counters[0].plausibility.as_ref().unwrap()).unwrap();
    assert_eq!(
        (p["rate_mw"].as_u64(), p["bound"].as_str(), p["bound_mw"].as_u64()),
        (Some(45_000), Some("power-limit"), Some(20_000))
    );
    assert_eq!(chosen, Some(RungId::Estimate));

    // Inside the limit it meters, held to it; past it mid-run, the window degrades.
    let fake = FakePowercap::new();
    limited_package(&fake);
    let (mut m, chosen) = package_meter(fake, &ManualClock::new(), MeterConfig::default(), |now| {
        1_000 + uj(12_000, now.min(1_400 * MS)) + uj(60_000, now.saturating_sub(1_400 * MS))
    });
    assert_eq!(chosen, Some(RungId::Rapl));
    let w = m.next_window();
    assert_eq!((w.provenance, w.energy_uj), (Some(Provenance::HwShunt), Some(12_000_000)));
    let held = w.counters[0].plausibility.as_ref().unwrap();
    assert_eq!(held.bounds(), vec![(jcp_meter::plausibility::BoundKind::PowerLimit, 20_000)]);
    let w = m.next_window();
    assert_eq!((w.provenance, rapl_decline(&w).code.as_str()), (Some(Provenance::Estimator), "counter-implausible"));
}

fn named_gpu(name: &str) -> TraceCounter {
    TraceCounter { name: name.into(), max_range_uj: None, power_limit_mw: Some(65_000), draw_exposed: true }
}

#[test]
fn s5_plausibility_two_unjudgeable_counters_are_unjudgeable_not_implausible() {
    // Two boards whose every draw sample is impossible (590 W past a 65 W limit): no yardstick for either.
    let t = trace(RungId::Nvml, vec![named_gpu("gpu0"), named_gpu("gpu1")], 10 * MS, 800, |t| {
        (vec![Some(uj(14_800, t)), Some(uj(14_800, t))], vec![Some(590_000), Some(590_000)])
    });
    let clock = ManualClock::new();
    let mut m = meter(vec![replay(t)], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    let r = rep.rung(RungId::Nvml).unwrap();
    assert_eq!(r.code, "counter-unjudgeable", "no counter overran: {r:#?}");
    assert!(r.counters.iter().all(|c| c.plausibility.as_ref().unwrap().verdict() == "unjudgeable"));
    // One unjudgeable beside one implausible: the finding is the implausible one's, each keeps its own.
    let t = trace(RungId::Nvml, vec![named_gpu("gpu0"), named_gpu("gpu1")], 10 * MS, 800, |t| {
        (vec![Some(uj(14_800, t)), Some(uj(4 * 14_800, t))], vec![Some(590_000), Some(14_800)])
    });
    let mut m = meter(vec![replay(t)], &clock, MeterConfig::default());
    let rep = m.probe().clone();
    let r = rep.rung(RungId::Nvml).unwrap();
    assert_eq!(r.code, "counter-implausible", "{r:#?}");
    let verdicts: Vec<&str> = r.counters.iter().map(|c| c.plausibility.as_ref().unwrap().verdict()).collect();
    assert_eq!(verdicts, ["unjudgeable", "implausible"]);
}

#[test]
fn s5_plausibility_a_window_keeps_each_counters_finding_apart() {
    // Two boards, sane for 1.4 s; then gpu0's draw reads impossible (unjudgeable)
    // and gpu1's counter runs at 30× its draw, past its 65 W limit (implausible).
    let t = trace(RungId::Nvml, vec![named_gpu("gpu0"), named_gpu("gpu1")], 10 * MS, 800, |t| {
        let late = t.saturating_sub(1_400 * MS);
        let gpu1 = uj(14_800, t.min(1_400 * MS)) + uj(444_000, late);
        let draw0 = if t > 1_400 * MS { 590_000 } else { 14_800 };
        (vec![Some(uj(14_800, t)), Some(gpu1)], vec![Some(draw0), Some(14_800)])
    });
    let d = nvml_turns_in_the_second_window(t);
    assert_eq!(d.code, "counter-implausible", "the first counter's kind must not stand for both: {}", d.why);
    let f = serde_json::to_value(&d.findings).unwrap();
    assert_eq!(f.as_array().unwrap().len(), 2, "{f}");
    assert_eq!((f[0]["counter"].as_str(), f[0]["code"].as_str()), (Some("gpu0"), Some("counter-unjudgeable")));
    assert_eq!(f[0]["rate_mw"], 14_800);
    assert_eq!((f[1]["counter"].as_str(), f[1]["code"].as_str()), (Some("gpu1"), Some("counter-implausible")));
    assert_eq!(
        (f[1]["rate_mw"].as_u64(), f[1]["bound"].as_str(), f[1]["bound_mw"].as_u64()),
        (Some(444_000), Some("power-limit"), Some(65_000))
    );
    assert!(d.why.contains("gpu0: unjudgeable") && d.why.contains("gpu1: implausible"), "{}", d.why);
}

#[test]
fn s5_1_calibrate_counts_every_wrap_over_a_long_calibration() {
    // 20 W on a 100 J range for a minute: twelve wraps, each seen.
    let fake = Arc::new(FakePowercap::new());
    small_range_package(&fake);
    let clock = ManualClock::new();
    live_tree(&fake, &clock, vec![("intel-rapl:0", 20_000, 99_999_999)]);
    let mut m = Meter::new(MeterConfig::default(), backends(vec![Box::new(rapl(&fake))], &clock, Some(0))).unwrap();
    let c = m.calibrate(Duration::from_secs(60), 0).unwrap();
    assert_eq!(c.active_mw, 20_000, "a missed wrap reads the power low");
}

#[test]
fn s5_1_calibration_from_a_trace_too_sparse_to_rule_out_a_wrap_is_refused() {
    // A 100 J range sampled every 500 ms with no published limit: at up to
    // 2 kW a whole wrap fits between two samples, so the power could read low.
    let counter = TraceCounter {
        name: "package-0".into(),
        max_range_uj: Some(99_999_999),
        power_limit_mw: None,
        draw_exposed: false,
    };
    let t = trace(RungId::Rapl, vec![counter], 500 * MS, 20, |t| {
        (vec![Some((1_000 + uj(20_000, t)) % 100_000_000)], vec![])
    });
    let e = jcp_meter::meter::calibrate_from_trace(&t, "abc".into(), 0).unwrap_err();
    assert_eq!(e.code(), "calibration-wrap-unobservable", "{e}");
    // The same recording from a package publishing a 30 W limit rules every hidden wrap out.
    let mut limited = t.clone();
    limited.counters[0].power_limit_mw = Some(30_000);
    assert_eq!(jcp_meter::meter::calibrate_from_trace(&limited, "abc".into(), 0).unwrap().active_mw, 20_000);
}
