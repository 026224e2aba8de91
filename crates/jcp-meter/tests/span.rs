//! §5.1 span metering over real process trees (Linux /proc), fake powercap
//! trees and recorded GPU traces. Each test is named after the clause it holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::procs::{helper_main, Helper, HELPER_ENV};
use common::*;
use jcp::energy::{Coverage, Provenance};
use jcp_meter::backend::Decline;
use jcp_meter::estimate::{Calibration, CalibrationSource, EstimatorConfig};
use jcp_meter::span::{
    gap, CpuSource, GpuSource, GpuStatus, PerfRapl, ScriptedPkgCounters, SpanConfig, SpanFigure, SpanMeter,
    SpanSources, Target, TraceGpu,
};
use jcp_meter::RungId;

const MS: u64 = 1_000_000;

/// The helper processes' entry: a no-op unless the test binary was re-run as a helper.
#[test]
fn zz_span_helper() {
    if let Ok(mode) = std::env::var(HELPER_ENV) {
        helper_main(&mode);
    }
}

fn no_calibration() -> Result<Calibration, Decline> {
    Err(Decline::new("calibration-absent", "none in this test"))
}

fn sources() -> SpanSources {
    SpanSources {
        powercap_root: None,
        powercap_read: unprivileged_read,
        perf_rapl: Some(Box::new(PerfRapl::new("/nonexistent/power", "/sys/devices/system/cpu"))),
        gpu: None,
        calibration: no_calibration(),
        host: host(),
        children: None,
    }
}

/// The meter as the tests run it: a short liveness probe, and a longer
/// wait for members to come to rest and for two walks to agree than the
/// 5 ms default, so that a 2-core machine under a parallel build still
/// sees the trees these tests make settle (what a gap names does not
/// change with the wait; a tree that never settles still names it).
fn quick() -> SpanConfig {
    SpanConfig {
        probe_step: Duration::from_millis(40),
        settle_wait: Duration::from_millis(200),
        ..SpanConfig::default()
    }
}

fn plain() -> SpanMeter {
    SpanMeter::with_sources(quick(), sources())
}

fn codes(f: &SpanFigure) -> Vec<&'static str> {
    f.gaps.iter().map(|g| g.code).collect()
}

fn has_gap(f: &SpanFigure, code: &str, pid: Option<u32>) -> bool {
    f.gaps.iter().any(|g| g.code == code && (pid.is_none() || g.pid == pid))
}

/// The CPU time the test caused: `stat` counts 10 ms ticks, truncated in
/// utime and stime at each end (up to 3 ticks under), and the helpers' own
/// bookkeeping adds a little (well under 80 ms over).
fn assert_cpu(f: &SpanFigure, ms: u64) {
    assert!(
        f.cpu_ns + 30 * MS >= ms * MS && f.cpu_ns <= ms * MS + 80 * MS,
        "cpu_ns {} for a {ms} ms burn: {f:?}",
        f.cpu_ns
    );
}

/// Runs `mode`, opens a span over its root, lets it go, waits for `done` lines, stops.
fn span_over(meter: &SpanMeter, mode: &str, ready: usize, done: usize, self_contained: bool) -> (SpanFigure, Helper) {
    let mut h = Helper::spawn(mode, ready);
    let span = meter.start(Target::Tree { root: h.root, self_contained }).unwrap();
    h.go();
    h.wait_done(done);
    (span.stop(), h)
}

fn estimate_uj(f: &SpanFigure, cpus: u32) -> u64 {
    let full = EstimatorConfig::default().power_mw(1000, cpus);
    jcp_meter::estimate::energy_uj(full, f.cpu_ns) / u64::from(cpus)
}

#[test]
fn s5_1_tree_cpu_time_of_a_burn_on_the_roots_own_thread() {
    let m = plain();
    let (f, _h) = span_over(&m, "tree:0:300", 1, 1, true);
    assert_cpu(&f, 300);
    assert_eq!(f.gaps, vec![], "{f:?}");
    assert_eq!(
        (f.coverage, f.provenance, f.rung, f.members),
        (Coverage::Whole, Provenance::Estimator, RungId::Estimate, 1)
    );
    assert_eq!(f.measured, None, "§5: an Estimator figure carries no measured");
    assert_eq!(f.uj, estimate_uj(&f, m.probe().online_cpus));
    assert!(f.wall_ns >= 300 * MS);
}

#[test]
fn s5_1_tree_cpu_time_of_a_burn_in_a_child() {
    let (f, h) = span_over(&plain(), "tree:1:300", 2, 1, true);
    assert_cpu(&f, 300);
    assert_eq!((f.members, f.coverage), (2, Coverage::Whole), "{f:?}");
    assert_eq!(h.pids.len(), 2);
}

#[test]
fn s5_1_tree_cpu_time_of_a_burn_in_a_grandchild() {
    let (f, _h) = span_over(&plain(), "tree:2:300", 3, 1, true);
    assert_cpu(&f, 300);
    assert_eq!((f.members, f.coverage), (3, Coverage::Whole), "{f:?}");
}

#[test]
fn s5_1_tree_cpu_time_of_a_burn_on_another_thread() {
    let (f, _h) = span_over(&plain(), "threadburn:300", 1, 1, true);
    assert_cpu(&f, 300);
    assert_eq!(f.coverage, Coverage::Whole, "{f:?}");
}

#[test]
fn s5_1_never_whole_on_an_empty_list_alone() {
    let (f, _h) = span_over(&plain(), "tree:0:50", 1, 1, false);
    assert_eq!(codes(&f), vec![gap::NOT_DECLARED_SELF_CONTAINED]);
    assert_eq!(f.coverage, Coverage::Partial);
}

#[test]
fn s5_1_reaped_descendant_is_a_gap() {
    let (f, h) = span_over(&plain(), "forkreap:200", 1, 1, true);
    assert!(has_gap(&f, gap::REAPED_IN_SPAN, Some(h.root)), "{f:?}");
    assert_eq!(f.coverage, Coverage::Partial, "the declaration does not outweigh evidence");
    // The reaped child's 200 ms is in no member's own time: not counted.
    assert!(f.cpu_ns < 150 * MS, "{f:?}");
}

#[test]
fn s5_1_member_that_exited_in_the_span_is_counted_and_a_gap() {
    let (f, h) = span_over(&plain(), "exitmid:200", 2, 1, true);
    let child = h.pids[1];
    // The child said done and exited; its parent never waits for it, so the stop reads a zombie.
    assert!(has_gap(&f, gap::EXITED_IN_SPAN, Some(child)), "{f:?}");
    assert_cpu(&f, 200);
    assert_eq!(f.coverage, Coverage::Partial);
}

#[test]
fn s5_1_member_gone_at_stop_is_a_gap() {
    let (f, h) = span_over(&plain(), "gonemid:200", 2, 1, true);
    let child = h.pids[1];
    assert!(has_gap(&f, gap::GONE_AT_STOP, Some(child)), "{f:?}");
    assert!(has_gap(&f, gap::REAPED_IN_SPAN, Some(h.root)), "{f:?}");
    assert!(f.cpu_ns < 150 * MS, "the gone child's time is not counted: {f:?}");
}

#[test]
fn s5_1_member_not_at_rest_is_a_gap_at_each_end() {
    let m = SpanMeter::with_sources(SpanConfig { settle_wait: Duration::from_millis(2), ..quick() }, sources());
    let h = Helper::spawn("spin", 1);
    let span = m.start(Target::Tree { root: h.root, self_contained: true }).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let f = span.stop();
    assert!(has_gap(&f, gap::UNSETTLED_AT_START, Some(h.root)), "{f:?}");
    assert!(has_gap(&f, gap::UNSETTLED_AT_STOP, Some(h.root)), "{f:?}");
    assert_eq!(f.coverage, Coverage::Partial);
}

#[test]
fn s5_1_spans_one_after_another_on_one_meter_read_each_tree_afresh() {
    // The meter keeps a stopped span's walker, its files open, for the next
    // span: each span still reads the tree as it is then.
    let m = plain();
    let mut h = Helper::spawn("gonemid:50", 2);
    let child = h.pids[1];
    let root = Target::Tree { root: h.root, self_contained: true };
    let f = m.start(root).unwrap().stop();
    assert_eq!((f.members, f.gaps.clone()), (2, vec![]), "{f:?}");
    let other = Helper::spawn("tree:2:0", 3);
    let g = m.start(Target::Tree { root: other.root, self_contained: true }).unwrap().stop();
    assert_eq!((g.members, g.gaps.clone()), (3, vec![]), "another tree between: {g:?}");
    let span = m.start(root).unwrap();
    h.go();
    h.wait_done(1);
    let f = span.stop();
    assert!(has_gap(&f, gap::GONE_AT_STOP, Some(child)), "{f:?}");
    assert!(has_gap(&f, gap::REAPED_IN_SPAN, Some(h.root)), "{f:?}");
    let f = m.start(root).unwrap().stop();
    assert_eq!((f.members, f.gaps.clone()), (1, vec![]), "the child reaped before this span is not in it: {f:?}");
}

#[test]
fn s5_1_root_gone_still_gives_an_honest_figure() {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    let f = plain().start(Target::Tree { root: pid, self_contained: true }).unwrap().stop();
    assert!(has_gap(&f, gap::ROOT_GONE_AT_START, None), "{f:?}");
    assert_eq!((f.coverage, f.cpu_ns, f.members), (Coverage::Partial, 0, 0));
    assert_eq!(plain().start(Target::Tree { root: 0, self_contained: true }).unwrap_err().code(), "span-bad-target");
}

#[test]
fn s5_1_root_gone_at_the_stop_is_a_gap_and_the_figure_still_comes() {
    let m = plain();
    let mut h = Helper::spawn("tree:1:0", 2);
    let span = m.start(Target::Tree { root: h.root, self_contained: true }).unwrap();
    h.kill_root();
    let f = span.stop();
    assert!(has_gap(&f, gap::GONE_AT_STOP, Some(h.root)), "{f:?}");
    assert_eq!(f.coverage, Coverage::Partial);
    assert_eq!(f.rung, RungId::Estimate);
}

#[test]
fn s5_1_reaping_a_child_that_exited_before_the_span_is_no_gap() {
    // The child burned and exited before the start (a zombie there); the root reaps it inside.
    let (f, _h) = span_over(&plain(), "reapzombie:50", 1, 1, true);
    assert_eq!(f.gaps, vec![], "{f:?}");
    assert_eq!(f.coverage, Coverage::Whole);
    assert!(f.cpu_ns < 30 * MS, "the child's time was spent before the span: {f:?}");
}

// ------------------------------------------------------------------ RAPL (fake powercap)

/// A fake package counter advanced by a thread at about `mw` while `run` holds.
fn drive(fake: &Arc<FakePowercap>, run: &Arc<AtomicBool>, mw: u64) -> std::thread::JoinHandle<()> {
    let (f, r) = (Arc::clone(fake), Arc::clone(run));
    std::thread::spawn(move || {
        let mut e = 1_000u64;
        while r.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(2));
            e += uj(mw, 2 * MS);
            // Written whole and renamed: a reader never sees a half-written counter.
            let dir = f.root().join("intel-rapl:0");
            std::fs::write(dir.join("energy_uj.new"), format!("{e}\n")).unwrap();
            std::fs::rename(dir.join("energy_uj.new"), dir.join("energy_uj")).unwrap();
        }
    })
}

/// The probe's steps long enough that the driving thread advances the fake counter in each, even on a loaded 2-CPU machine.
fn rapl_config() -> SpanConfig {
    SpanConfig { probe_step: Duration::from_millis(75), probe_intervals: 6, ..SpanConfig::default() }
}

fn rapl_sources(fake: &FakePowercap) -> SpanSources {
    SpanSources { powercap_root: Some(fake.root()), ..sources() }
}

#[test]
fn s5_1_live_rapl_is_apportioned_by_cpu_time_and_model_based() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let run = Arc::new(AtomicBool::new(true));
    let t = drive(&fake, &run, 20_000);
    let m = SpanMeter::with_sources(rapl_config(), rapl_sources(&fake));
    assert_eq!(m.probe().cpu, CpuSource::RaplPowercap, "{:?}", m.probe());
    let (f, _h) = span_over(&m, "tree:1:300", 2, 1, true);
    run.store(false, Ordering::Relaxed);
    t.join().unwrap();
    assert_eq!((f.rung, f.provenance, f.coverage), (RungId::Rapl, Provenance::ModelBased, Coverage::Whole), "{f:?}");
    assert_eq!(f.measured, None, "an apportioned reading is not a measurement of the tree");
    let reading = f.parts[0].reading_uj.unwrap();
    assert!(reading > 0);
    let machine_ns = f.wall_ns * u64::from(m.probe().online_cpus);
    let expected =
        u64::try_from(u128::from(reading) * u128::from(f.cpu_ns.min(machine_ns)) / u128::from(machine_ns)).unwrap();
    assert_eq!(f.uj, expected, "{f:?}");
    assert!(f.uj < reading);
    assert_cpu(&f, 300);
}

#[test]
fn s5_1_frozen_rapl_counter_gives_no_hardware_derived_grade() {
    let fake = FakePowercap::new();
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let m = SpanMeter::with_sources(rapl_config(), rapl_sources(&fake));
    let p = m.probe();
    assert_eq!(p.cpu, CpuSource::Estimate);
    assert!(p.declined.iter().any(|d| d.source == "rapl-powercap" && d.decline.code == "rapl-not-live"), "{p:?}");
    assert_eq!(p.liveness[0].status.code(), "frozen");
    let (f, _h) = span_over(&m, "tree:0:100", 1, 1, true);
    assert_eq!((f.rung, f.provenance), (RungId::Estimate, Provenance::Estimator));
}

#[test]
fn s5_1_a_span_over_which_no_package_counter_advanced_falls_to_a_lower_rung() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let run = Arc::new(AtomicBool::new(true));
    let t = drive(&fake, &run, 20_000);
    let mut s = rapl_sources(&fake);
    s.calibration = Ok(calibration(&host()));
    let m = SpanMeter::with_sources(rapl_config(), s);
    assert_eq!(m.probe().cpu, CpuSource::RaplPowercap, "{:?}", m.probe());
    run.store(false, Ordering::Relaxed);
    t.join().unwrap();
    let (f, _h) = span_over(&m, "tree:0:100", 1, 1, true);
    assert_eq!((f.rung, f.provenance), (RungId::Calibrated, Provenance::ModelBased), "{f:?}");
    assert_eq!(f.fell[0].code, "rapl-did-not-advance");
    // 30 W with 4 CPUs busy: 7.5 W per CPU-second of the tree.
    assert_eq!(f.uj, jcp_meter::estimate::energy_uj(30_000, f.cpu_ns) / 4);
}

#[test]
fn s5_1_rapl_permission_is_a_named_decline_with_its_fix_never_zero() {
    let fake = FakePowercap::new();
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    fake.deny("intel-rapl:0");
    let p = SpanMeter::with_sources(rapl_config(), rapl_sources(&fake)).probe();
    let d = &p.declined.iter().find(|d| d.source == "rapl-powercap").unwrap().decline;
    assert_eq!(d.code, "rapl-permission-denied");
    assert!(d.fix.as_deref().unwrap().contains("udev"));
    let perf = &p.declined.iter().find(|d| d.source == "rapl-perf").unwrap().decline;
    assert_eq!(perf.code, "perf-rapl-no-pmu");
    assert_eq!(p.cpu, CpuSource::Estimate);
}

/// A fake `power` PMU: type, `energy-pkg` = event=0x02, its scale (2⁻³² J) and unit, the format.
fn fake_pmu() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("events")).unwrap();
    std::fs::create_dir_all(dir.path().join("format")).unwrap();
    std::fs::write(dir.path().join("type"), "24\n").unwrap();
    std::fs::write(dir.path().join("format/event"), "config:0-7\n").unwrap();
    std::fs::write(dir.path().join("events/energy-pkg"), "event=0x02\n").unwrap();
    std::fs::write(dir.path().join("events/energy-pkg.scale"), "2.3283064365386962890625e-10\n").unwrap();
    std::fs::write(dir.path().join("events/energy-pkg.unit"), "Joules\n").unwrap();
    dir
}

#[test]
fn s5_1_perf_rapl_pmu_is_discovered_from_sysfs_and_a_failed_open_is_named_never_zero() {
    let dir = fake_pmu();
    let ev = jcp_meter::span::perf::discover(dir.path()).unwrap();
    assert_eq!((ev.pmu_type, ev.event.as_str(), ev.unit.as_str()), (24, "event=0x02", "Joules"));
    assert!((ev.scale - 2.328_306_436_538_696_3e-10).abs() < 1e-24);
    // No PMU of type 24 on this machine: perf_event_open fails, by name, with a fix.
    let mut r = PerfRapl::new(dir.path(), "/sys/devices/system/cpu");
    let d = jcp_meter::backend::CounterBackend::open(&mut r).unwrap_err();
    assert!(matches!(d.code, "perf-rapl-permission" | "perf-rapl-open-failed"), "{d:?}");
    assert!(d.why.contains("energy-pkg = event=0x02") && d.why.contains("Joules"), "{d:?}");
    let fix = d.fix.unwrap();
    assert!(fix.contains("cap_perfmon") || fix.contains("udev"), "{fix}");
    std::fs::remove_file(dir.path().join("events/energy-pkg.unit")).unwrap();
    assert_eq!(jcp_meter::span::perf::discover(dir.path()).unwrap_err().code, "perf-rapl-no-energy-pkg");
    assert_eq!(jcp_meter::span::perf::discover(&dir.path().join("none")).unwrap_err().code, "perf-rapl-no-pmu");
}

#[test]
fn s5_1_perf_rapl_on_this_machine_is_read_or_declined_by_name() {
    let mut r = PerfRapl::system();
    match jcp_meter::backend::CounterBackend::open(&mut r) {
        Ok(infos) => assert!(!infos.is_empty() && infos.iter().all(|i| i.name.starts_with("perf:package-"))),
        Err(d) => {
            if !std::path::Path::new(jcp_meter::span::PERF_POWER_PMU).exists() {
                assert_eq!(d.code, "perf-rapl-no-pmu", "{d:?}");
            }
            assert!(d.code.starts_with("perf-rapl-") && d.fix.is_some(), "{d:?}");
        }
    }
}

/// No powercap here; the perf PMU's packages scripted.
fn perf_sources(counters: ScriptedPkgCounters) -> SpanSources {
    SpanSources {
        powercap_root: Some("/nonexistent/powercap".into()),
        perf_rapl: Some(Box::new(counters)),
        ..sources()
    }
}

#[test]
fn s5_1_rapl_through_perf_is_apportioned_modelbased() {
    // Two packages, each advancing at every read: live.
    let m = SpanMeter::with_sources(rapl_config(), perf_sources(ScriptedPkgCounters::new(7, vec![50_000, 30_000])));
    let p = m.probe();
    assert_eq!((p.cpu, p.rung), (CpuSource::RaplPerf, RungId::Rapl), "{p:?}");
    let pc = &p.declined.iter().find(|d| d.source == "rapl-powercap").unwrap().decline;
    assert_eq!(pc.code, "rapl-no-powercap", "powercap's absence is named: {p:?}");
    assert!(!p.declined.iter().any(|d| d.source == "rapl-perf"), "{p:?}");
    assert_eq!(p.liveness.len(), 2);
    assert!(p.liveness.iter().all(|l| l.status.is_live() && l.counter.starts_with("perf:package-")), "{p:?}");
    let (f, _h) = span_over(&m, "tree:1:300", 2, 1, true);
    assert_eq!((f.rung, f.provenance, f.coverage), (RungId::Rapl, Provenance::ModelBased, Coverage::Whole), "{f:?}");
    assert_eq!(f.measured, None, "an apportioned reading is not a measurement of the tree");
    assert_eq!(f.parts[0].source, "rapl-perf");
    // One read at each end: both packages advanced by one step.
    let reading = f.parts[0].reading_uj.unwrap();
    assert_eq!(reading, 80_000, "{f:?}");
    let machine_ns = f.wall_ns * u64::from(p.online_cpus);
    let expected =
        u64::try_from(u128::from(reading) * u128::from(f.cpu_ns.min(machine_ns)) / u128::from(machine_ns)).unwrap();
    assert_eq!(f.uj, expected, "{f:?}");
    assert!(f.uj > 0 && f.uj < reading, "{f:?}");
    assert_cpu(&f, 300);
}

#[test]
fn s5_1_frozen_perf_rapl_counter_is_not_live_no_hardware_grade() {
    // Package 1 never advances: the whole rung is declined (every package must be live).
    let mut s = perf_sources(ScriptedPkgCounters::new(0, vec![50_000, 0]));
    s.calibration = Ok(calibration(&host()));
    let m = SpanMeter::with_sources(rapl_config(), s);
    let p = m.probe();
    assert_eq!(p.cpu, CpuSource::Calibrated, "{p:?}");
    let d = &p.declined.iter().find(|d| d.source == "rapl-perf").unwrap().decline;
    assert_eq!(d.code, "rapl-not-live");
    assert_eq!(p.liveness.iter().map(|l| l.status.code()).collect::<Vec<_>>(), ["live", "frozen"]);
    let (f, _h) = span_over(&m, "tree:0:100", 1, 1, true);
    assert_eq!((f.rung, f.provenance), (RungId::Calibrated, Provenance::ModelBased), "{f:?}");
    assert!(f.parts.iter().all(|p| p.source != "rapl-perf" && p.reading_uj.is_none()), "{f:?}");
    // Without a calibration: rung 6.
    let m = SpanMeter::with_sources(rapl_config(), perf_sources(ScriptedPkgCounters::new(0, vec![0])));
    assert_eq!(m.probe().cpu, CpuSource::Estimate);
    let (f, _h) = span_over(&m, "tree:0:100", 1, 1, true);
    assert_eq!((f.rung, f.provenance), (RungId::Estimate, Provenance::Estimator), "{f:?}");
}

#[test]
fn s5_1_a_span_over_which_no_perf_package_counter_advanced_falls_to_a_lower_rung() {
    // Live through the probe (9 reads), frozen from then on.
    let m = SpanMeter::with_sources(
        rapl_config(),
        perf_sources(ScriptedPkgCounters::new(0, vec![50_000]).frozen_after(rapl_config().probe_intervals + 1)),
    );
    assert_eq!(m.probe().cpu, CpuSource::RaplPerf, "{:?}", m.probe());
    let (f, _h) = span_over(&m, "tree:0:100", 1, 1, true);
    assert_eq!((f.rung, f.provenance), (RungId::Estimate, Provenance::Estimator), "{f:?}");
    assert_eq!(f.fell[0].code, "rapl-did-not-advance");
}

#[test]
fn s5_1_readable_live_powercap_wins_over_perf() {
    let fake = Arc::new(FakePowercap::new());
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    let run = Arc::new(AtomicBool::new(true));
    let t = drive(&fake, &run, 20_000);
    let s = SpanSources { perf_rapl: Some(Box::new(ScriptedPkgCounters::new(0, vec![50_000]))), ..rapl_sources(&fake) };
    let m = SpanMeter::with_sources(rapl_config(), s);
    let p = m.probe();
    assert_eq!(p.cpu, CpuSource::RaplPowercap, "{p:?}");
    assert!(p.declined.is_empty(), "{p:?}");
    assert!(p.liveness.iter().all(|l| !l.counter.starts_with("perf:")), "perf is not even opened: {p:?}");
    let (f, _h) = span_over(&m, "tree:0:100", 1, 1, true);
    run.store(false, Ordering::Relaxed);
    t.join().unwrap();
    assert_eq!(f.parts[0].source, "rapl-powercap", "{f:?}");
}

#[test]
fn s5_1_powercap_permission_falls_to_perf_and_a_perf_permission_is_named_with_its_fix() {
    let fake = FakePowercap::new();
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    fake.deny("intel-rapl:0");
    // A non-root user with CAP_PERFMON: powercap denied, perf read.
    let s = SpanSources { perf_rapl: Some(Box::new(ScriptedPkgCounters::new(0, vec![50_000]))), ..rapl_sources(&fake) };
    let p = SpanMeter::with_sources(rapl_config(), s).probe();
    assert_eq!(p.cpu, CpuSource::RaplPerf, "{p:?}");
    assert_eq!(p.declined.iter().find(|d| d.source == "rapl-powercap").unwrap().decline.code, "rapl-permission-denied");
    // Without it: both named, each with its fix, and no figure from either.
    let denied = Decline::new("perf-rapl-permission", "perf_event_open refused").with_fix("setcap cap_perfmon+ep");
    let s = SpanSources {
        perf_rapl: Some(Box::new(ScriptedPkgCounters::new(0, vec![50_000]).declining(denied.clone()))),
        ..rapl_sources(&fake)
    };
    let p = SpanMeter::with_sources(rapl_config(), s).probe();
    assert_eq!(p.cpu, CpuSource::Estimate, "{p:?}");
    assert_eq!(p.declined.iter().find(|d| d.source == "rapl-perf").unwrap().decline, denied);
    assert!(p
        .declined
        .iter()
        .any(|d| d.source == "rapl-powercap" && d.decline.fix.as_deref().unwrap().contains("udev")));
}

fn calibration(on: &jcp_meter::estimate::HostId) -> Calibration {
    let src = CalibrationSource {
        rung: RungId::Rapl,
        counters: vec!["package-0".into()],
        trace: None,
        load: "4 logical CPUs burning".into(),
    };
    Calibration::from_measurement(30_000_000, 1_000_000_000, on.clone(), src, 0).unwrap()
}

#[test]
fn s5_1_rung5_host_calibration_scales_cpu_time_and_another_hosts_is_refused() {
    let m = SpanMeter::with_sources(quick(), SpanSources { calibration: Ok(calibration(&host())), ..sources() });
    assert_eq!(m.probe().cpu, CpuSource::Calibrated);
    let (f, _h) = span_over(&m, "tree:0:200", 1, 1, true);
    assert_eq!((f.rung, f.provenance, f.measured), (RungId::Calibrated, Provenance::ModelBased, None));
    assert_eq!(f.uj, jcp_meter::estimate::energy_uj(30_000, f.cpu_ns) / 4);
    let mut other = host();
    other.hostname = "elsewhere".into();
    let m = SpanMeter::with_sources(quick(), SpanSources { calibration: Ok(calibration(&other)), ..sources() });
    let p = m.probe();
    assert_eq!(p.cpu, CpuSource::Estimate);
    assert!(p.declined.iter().any(|d| d.decline.code == "calibration-measured-elsewhere"), "{p:?}");
}

// ------------------------------------------------------------------ NVML (recorded trace)

fn gpu_trace() -> jcp_meter::trace::Trace {
    // 10 W for 60 s, published every 10 ms.
    trace(RungId::Nvml, vec![gpu(Some(65_000), false)], 10 * MS, 6_000, |t| (vec![Some(1_000 + uj(10_000, t))], vec![]))
}

#[test]
fn s5_1_gpu_energy_is_apportioned_by_the_trees_reported_utilisation() {
    let h = Helper::spawn("tree:0:100", 1);
    let g: Box<dyn GpuSource> = Box::new(TraceGpu::new(gpu_trace(), Some(vec![(h.root, 500), (1, 300)])));
    let m = SpanMeter::with_sources(quick(), SpanSources { gpu: Some(g), ..sources() });
    assert_eq!(m.probe().gpu, GpuStatus::Live, "{:?}", m.probe());
    let mut h = h;
    let span = m.start(Target::Tree { root: h.root, self_contained: true }).unwrap();
    h.go();
    h.wait_done(1);
    let f = span.stop();
    let gpu = f.parts.iter().find(|p| p.source == "nvml").unwrap();
    let reading = gpu.reading_uj.unwrap();
    assert!(reading > 0);
    assert_eq!(gpu.uj, reading * 500 / 1000);
    assert_eq!(gpu.provenance, Provenance::ModelBased);
    assert_eq!(f.gaps, vec![]);
    assert_eq!(f.provenance, Provenance::Estimator, "the floor of the parts");
    assert_eq!(f.uj, f.parts[0].uj + gpu.uj);
}

#[test]
fn s5_1_gpu_share_not_reported_is_a_gap() {
    let g: Box<dyn GpuSource> = Box::new(TraceGpu::new(gpu_trace(), None));
    let m = SpanMeter::with_sources(quick(), SpanSources { gpu: Some(g), ..sources() });
    let (f, _h) = span_over(&m, "tree:0:50", 1, 1, true);
    assert_eq!(codes(&f), vec![gap::GPU_UNATTRIBUTED], "{f:?}");
    assert_eq!(f.coverage, Coverage::Partial);
    assert!(f.parts.iter().all(|p| p.source != "nvml"));
}

#[test]
fn s5_1_figure_serialises_with_its_gap_codes() {
    let (f, _h) = span_over(&plain(), "tree:0:10", 1, 1, false);
    let j = serde_json::to_value(&f).unwrap();
    assert_eq!(j["gaps"][0]["code"], "not-declared-self-contained");
    assert_eq!(j["provenance"], "Estimator");
    assert_eq!(j["rung"], "estimate");
    assert!(gap::ALL.iter().all(|c| c.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')));
}

#[test]
fn span_is_send_and_meter_is_send_sync() {
    fn send<T: Send>() {}
    fn sync<T: Send + Sync>() {}
    send::<jcp_meter::span::Span>();
    sync::<SpanMeter>();
}
