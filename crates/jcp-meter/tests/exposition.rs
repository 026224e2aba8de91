//! §5, §5.1, §5.2: the meter as `OpenMetrics`, checked on the rendered text.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use jcp_meter::clock::ManualClock;
use jcp_meter::exposition::{MeterExporter, MeterMetrics};
use jcp_meter::{CounterBackend, Meter, MeterConfig, RungId};

const MS: u64 = 1_000_000;

type Labels = BTreeMap<String, String>;

/// Every sample of `name` in an exposition: its labels and its value,
/// sorted by labels (a family's order is not fixed).
fn series(text: &str, name: &str) -> Vec<(Labels, String)> {
    let mut found: Vec<(Labels, String)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (head, value) = l.rsplit_once(' ')?;
            let (n, labels) = match head.split_once('{') {
                Some((n, rest)) => (n, rest.strip_suffix('}')?),
                None => (head, ""),
            };
            if n != name {
                return None;
            }
            let mut m = Labels::new();
            for pair in labels.split("\",").filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once("=\"")?;
                m.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
            }
            Some((m, value.to_owned()))
        })
        .collect();
    found.sort();
    found
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn meter(counters: Vec<Box<dyn CounterBackend>>, config: MeterConfig) -> Meter {
    Meter::new(config, backends(counters, &ManualClock::new(), Some(250))).unwrap()
}

/// An NVML counter at the board's 14.8 W draw (65 W limit) up to `sane_until`, then at 30× it.
fn gpu_turning_implausible(sane_until: u64) -> Box<dyn CounterBackend> {
    replay(trace(RungId::Nvml, vec![gpu(Some(65_000), true)], 10 * MS, 800, move |t| {
        let v = if t <= sane_until { uj(14_800, t) } else { uj(14_800, sane_until) + uj(444_000, t - sane_until) };
        (vec![Some(v)], vec![Some(14_800)])
    }))
}

const PARTIAL_NVML: [(&str, &str); 4] =
    [("provenance", "HwShunt"), ("coverage", "Partial"), ("rung", "nvml"), ("domain", "gpu")];
const WHOLE_ESTIMATE: [(&str, &str); 4] =
    [("provenance", "Estimator"), ("coverage", "Whole"), ("rung", "estimate"), ("domain", "host")];

#[test]
fn s5_2_a_partial_series_is_never_summed_into_a_whole_one() {
    let mut m = meter(vec![gpu_turning_implausible(1_400 * MS)], MeterConfig::default());
    let x = MeterMetrics::new();
    x.record_probe(m.probe());
    let (w1, w2) = (m.next_window(), m.next_window());
    x.record_window(&w1);
    x.record_window(&w2);
    let (gpu_uj, est_uj) = (w1.energy_uj.unwrap(), w2.energy_uj.unwrap());
    assert_eq!(gpu_uj, 14_800_000);
    let text = x.render().unwrap();
    let total = series(&text, "jcp_meter_energy_microjoules_total");
    assert_eq!(
        total,
        vec![(labels(&PARTIAL_NVML), gpu_uj.to_string()), (labels(&WHOLE_ESTIMATE), est_uj.to_string())],
        "two label sets, each its own windows' µJ and nothing of the other's:\n{text}"
    );
    assert!(!text.contains(&(gpu_uj + est_uj).to_string()), "no sum across coverages:\n{text}");
    let windows = series(&text, "jcp_meter_windows_total");
    assert!(windows.iter().all(|(_, v)| v == "1"), "{windows:?}");
    // The last window is the estimate's alone.
    assert_eq!(
        series(&text, "jcp_meter_window_energy_microjoules"),
        vec![(labels(&WHOLE_ESTIMATE), est_uj.to_string())]
    );
    // The degraded window says why NVML did not meter it, with the rate and the bound it broke.
    let refused = series(&text, "jcp_meter_plausibility_refusals_total");
    assert_eq!(refused.len(), 1, "{text}");
    assert_eq!(refused[0].0["verdict"], "implausible");
    assert_eq!(refused[0].0["bound"], "power-limit");
    let rate = series(&text, "jcp_meter_window_plausibility_rate_milliwatts");
    assert_eq!(rate[0].0["verdict"], "implausible");
    assert!(rate[0].1.parse::<u64>().unwrap() > 65_000, "{rate:?}");
    let bound = series(&text, "jcp_meter_window_plausibility_bound_milliwatts");
    assert_eq!((bound[0].0["bound"].as_str(), bound[0].1.as_str()), ("power-limit", "65000"), "{text}");
    let declines = series(&text, "jcp_meter_window_declines_total");
    assert!(
        declines.iter().any(|(l, v)| l["rung"] == "nvml" && l["code"] == "counter-implausible" && v == "1"),
        "{declines:?}"
    );
}

#[test]
fn s5_1_a_window_that_was_not_metered_is_absent_never_a_zero() {
    let config = MeterConfig { estimate_fallback: false, ..MeterConfig::default() };
    let mut m = meter(vec![gpu_turning_implausible(1_400 * MS)], config);
    let x = MeterMetrics::new();
    x.record_probe(m.probe());
    let w1 = m.next_window();
    x.record_window(&w1);
    let before = x.render().unwrap();
    assert_eq!(
        series(&before, "jcp_meter_window_energy_microjoules"),
        vec![(labels(&PARTIAL_NVML), "14800000".to_owned())]
    );
    assert_eq!(series(&before, "jcp_meter_gap_windows_total"), vec![(Labels::new(), "0".to_owned())]);
    let gap = m.next_window();
    assert!(gap.energy_uj.is_none() && gap.gap.is_some(), "{gap:#?}");
    x.record_window(&gap);
    let text = x.render().unwrap();
    for family in ["jcp_meter_window_energy_microjoules", "jcp_meter_window_power_milliwatts"] {
        assert!(
            series(&text, family).is_empty(),
            "{family}: the gap leaves no last-window figure, not a zero:\n{text}"
        );
    }
    // The totals hold the metered window alone: nothing was added for the gap, under any label set.
    assert_eq!(
        series(&text, "jcp_meter_energy_microjoules_total"),
        vec![(labels(&PARTIAL_NVML), "14800000".to_owned())]
    );
    assert_eq!(series(&text, "jcp_meter_windows_total"), vec![(labels(&PARTIAL_NVML), "1".to_owned())]);
    assert_eq!(series(&text, "jcp_meter_gap_windows_total"), vec![(Labels::new(), "1".to_owned())]);
    // The estimate was switched off: declined with its code, and the window says so.
    let rung = series(&text, "jcp_meter_rung");
    assert!(
        rung.contains(&(
            labels(&[("rung", "estimate"), ("status", "declined"), ("code", "estimate-disabled")]),
            "1".to_owned()
        )),
        "{rung:?}"
    );
    let declines = series(&text, "jcp_meter_window_declines_total");
    assert!(declines.iter().any(|(l, _)| l["rung"] == "estimate" && l["code"] == "estimate-disabled"), "{declines:?}");
}

/// Rungs 3 and 4's code where the test runs: absent off macOS, not implemented on it.
const UNAVAILABLE: &str = if cfg!(target_os = "macos") { "not-implemented" } else { "not-available-on-platform" };

#[test]
fn s5_1_every_rung_status_is_exposed_with_its_reason_code() {
    let fake = FakePowercap::new();
    fake.zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
    fake.deny("intel-rapl:0");
    let mut m = meter(vec![Box::new(rapl(&fake)), gpu_turning_implausible(u64::MAX)], MeterConfig::default());
    let x = MeterMetrics::new();
    x.record_probe(m.probe());
    let text = x.render().unwrap();
    let got: Vec<Labels> = series(&text, "jcp_meter_rung")
        .into_iter()
        .map(|(l, v)| {
            assert_eq!(v, "1");
            l
        })
        .collect();
    let want = [
        ("rapl", "declined", "rapl-permission-denied"),
        ("nvml", "chosen", "chosen"),
        ("process-energy", "unavailable", UNAVAILABLE),
        ("ioreport", "unavailable", UNAVAILABLE),
        ("calibrated", "declined", "no-calibration"),
        ("estimate", "standby", "standby"),
    ];
    for (rung, status, code) in want {
        assert!(
            got.contains(&labels(&[("rung", rung), ("status", status), ("code", code)])),
            "{rung} {status} {code} missing:\n{text}"
        );
    }
    assert_eq!(got.len(), want.len(), "one status per rung:\n{text}");
    // §5 liveness of the chosen counter, with what it rests on.
    let live = series(&text, "jcp_meter_counter_liveness");
    assert_eq!(live.len(), 1);
    assert_eq!((live[0].0["rung"].as_str(), live[0].0["status"].as_str()), ("nvml", "live"));
    let adv = series(&text, "jcp_meter_counter_liveness_advanced_intervals");
    assert_eq!(adv[0].1, "8", "{text}");
    // Not refuted: the rate with the bounds it was held to (not a finding that it is right).
    let rate = series(&text, "jcp_meter_probe_plausibility_rate_milliwatts");
    assert_eq!((rate[0].0["verdict"].as_str(), rate[0].1.as_str()), ("not-refuted", "14800"));
    let bounds: Vec<String> = series(&text, "jcp_meter_probe_plausibility_bound_milliwatts")
        .into_iter()
        .map(|(l, _)| l["bound"].clone())
        .collect();
    assert!(bounds.contains(&"power-limit".to_owned()) && bounds.contains(&"draw-ceiling".to_owned()), "{bounds:?}");
}

#[test]
fn s5_plausibility_a_probe_refusal_carries_the_rate_and_the_bound_it_broke_and_unjudgeable_has_no_bound() {
    // The RTX 4050 case: a live counter at 4× the board's 14.8 W draw.
    let four_x = replay(trace(RungId::Nvml, vec![gpu(Some(65_000), true)], 10 * MS, 100, |t| {
        (vec![Some(uj(4 * 14_800, t))], vec![Some(14_800)])
    }));
    let mut m = meter(vec![four_x], MeterConfig::default());
    let x = MeterMetrics::new();
    x.record_probe(m.probe());
    let text = x.render().unwrap();
    assert_eq!(
        series(&text, "jcp_meter_probe_plausibility_rate_milliwatts"),
        vec![(
            labels(&[
                ("rung", "nvml"),
                ("counter", "gpu0 NVIDIA GeForce RTX 4050 Laptop GPU"),
                ("verdict", "implausible")
            ]),
            "59200".to_owned()
        )]
    );
    assert_eq!(
        series(&text, "jcp_meter_probe_plausibility_bound_milliwatts"),
        vec![(
            labels(&[
                ("rung", "nvml"),
                ("counter", "gpu0 NVIDIA GeForce RTX 4050 Laptop GPU"),
                ("verdict", "implausible"),
                ("bound", "draw-ceiling")
            ]),
            "19800".to_owned()
        )]
    );
    assert!(series(&text, "jcp_meter_rung")
        .iter()
        .any(|(l, _)| l["rung"] == "nvml" && l["code"] == "counter-implausible"));
    // Every draw sample impossible (590 W past a 65 W limit): no yardstick, so no bound series at all.
    let spikes = replay(trace(RungId::Nvml, vec![gpu(Some(65_000), true)], 10 * MS, 100, |t| {
        (vec![Some(uj(14_800, t))], vec![Some(590_000)])
    }));
    let mut m = meter(vec![spikes], MeterConfig::default());
    let x = MeterMetrics::new();
    x.record_probe(m.probe());
    let text = x.render().unwrap();
    let rate = series(&text, "jcp_meter_probe_plausibility_rate_milliwatts");
    assert_eq!((rate[0].0["verdict"].as_str(), rate[0].1.as_str()), ("unjudgeable", "14800"));
    assert!(series(&text, "jcp_meter_probe_plausibility_bound_milliwatts").is_empty(), "{text}");
    assert!(series(&text, "jcp_meter_rung")
        .iter()
        .any(|(l, _)| l["rung"] == "nvml" && l["code"] == "counter-unjudgeable"));
}

#[test]
fn s5_1_the_exporter_samples_in_the_background_and_stops_at_a_replay_end() {
    let t = trace(RungId::Nvml, vec![gpu(Some(65_000), true)], 10 * MS, 500, |t| {
        (vec![Some(uj(14_800, t))], vec![Some(14_800)])
    });
    let end = t.end_ns();
    let clock = ManualClock::new();
    let m = Meter::new(MeterConfig::default(), backends(vec![replay(t)], &clock, Some(250))).unwrap();
    let x = MeterExporter::spawn(m, Some(end));
    let metrics = Arc::clone(&x.metrics());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // 5 s of trace less the 0.4 s probe: 4 whole windows, then the first past the end stops it.
    while x.windows() < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(x.windows(), 4);
    x.stop();
    let text = metrics.render().unwrap();
    assert_eq!(series(&text, "jcp_meter_windows_total"), vec![(labels(&PARTIAL_NVML), "4".to_owned())]);
    assert_eq!(
        series(&text, "jcp_meter_energy_microjoules_total"),
        vec![(labels(&PARTIAL_NVML), (4 * 14_800_000u64).to_string())]
    );
    assert!(text.ends_with("# EOF\n"));
}
