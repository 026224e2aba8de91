//! `jcp meter`: §5.1 the ladder, reachable by a user (C9).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn jcp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jcp")).args(args).env("XDG_CONFIG_HOME", "/nonexistent-jcp-test").output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn lines_json(o: &Output) -> Vec<Value> {
    stdout(o).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn this_host() -> Value {
    let o = jcp(&["meter", "probe", "--json"]);
    assert!(o.status.success());
    serde_json::from_str::<Value>(&stdout(&o)).unwrap()["host"].clone()
}

/// A recorded trace: one counter sampled every 10 ms for `n` samples.
fn write_trace(
    dir: &Path,
    name: &str,
    rung: &str,
    host: Value,
    counter: Value,
    n: u64,
    f: impl Fn(u64) -> (u64, Option<u64>),
) -> String {
    let samples: Vec<Value> = (0..n)
        .map(|i| {
            let t = i * 10_000_000;
            let (uj, draw) = f(t);
            json!({"t_ns": t, "uj": [uj], "draw_mw": [draw], "util_permille": 300})
        })
        .collect();
    let trace =
        json!({"format": "jcp-meter-trace/1", "rung": rung, "host": host, "counters": [counter], "samples": samples});
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(&trace).unwrap()).unwrap();
    p.display().to_string()
}

fn uj(mw: u64, t_ns: u64) -> u64 {
    mw * t_ns / 1_000_000
}

#[test]
fn s5_1_meter_json_streams_windows_with_provenance_and_coverage_on_every_row() {
    let o = jcp(&["meter", "--count", "3", "--interval-ms", "100", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = lines_json(&o);
    assert_eq!(rows.len(), 3);
    for (i, w) in rows.iter().enumerate() {
        assert_eq!(w["seq"], i as u64);
        assert!(w["energy_uj"].as_u64().unwrap() > 0);
        assert!(w["provenance"].is_string() && w["coverage"].is_string() && w["rung"].is_string(), "{w}");
        assert!(w["end_ns"].as_u64().unwrap() > w["start_ns"].as_u64().unwrap());
        let rung = w["rung"].as_str().unwrap();
        let grade = match rung {
            "rapl" | "nvml" => "HwShunt",
            "calibrated" => "ModelBased",
            _ => "Estimator",
        };
        assert_eq!(w["provenance"], grade, "C9: the grade follows the rung");
        // Every rung above the metering one is listed with a reason.
        for d in w["declined"].as_array().unwrap() {
            assert!(!d["why"].as_str().unwrap().is_empty() && !d["code"].as_str().unwrap().is_empty());
        }
        if rung == "estimate" {
            let above: Vec<&str> =
                w["declined"].as_array().unwrap().iter().map(|d| d["rung"].as_str().unwrap()).collect();
            assert_eq!(above, ["rapl", "nvml", "process-energy", "ioreport", "calibrated"]);
        }
    }
    assert_eq!(rows[1]["start_ns"], rows[0]["end_ns"]);
}

#[test]
fn s5_1_meter_csv_and_table() {
    let o = jcp(&["meter", "--count", "2", "--interval-ms", "50", "--csv"]);
    assert!(o.status.success());
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "seq,start_ns,end_ns,start_unix_ms,end_unix_ms,energy_uj,provenance,coverage,rung,declined,gap"
    );
    assert_eq!(lines.len(), 3);
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 11, "{l}");
        assert!(["HwShunt", "ModelBased", "Estimator"].contains(&f[6]), "{l}");
        assert!(["Whole", "Partial"].contains(&f[7]), "{l}");
    }
    let o = jcp(&["meter", "--count", "1", "--interval-ms", "50"]);
    let text = stdout(&o);
    assert!(text.starts_with("metering with "), "{text}");
    assert!(text.contains("grade") && text.contains("coverage"));
}

#[test]
fn s5_1_probe_says_why_each_rung_was_declined_and_the_fix() {
    let o = jcp(&["meter", "probe", "--json"]);
    assert!(o.status.success());
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rungs = r["rungs"].as_array().unwrap();
    let names: Vec<&str> = rungs.iter().map(|x| x["rung"].as_str().unwrap()).collect();
    assert_eq!(names, ["rapl", "nvml", "process-energy", "ioreport", "calibrated", "estimate"]);
    let rapl = &rungs[0];
    if !Path::new("/sys/class/powercap").exists() {
        assert_eq!(rapl["status"], "declined");
        assert_eq!(rapl["code"], "rapl-no-powercap");
        assert!(rapl["fix"].as_str().unwrap().contains("modprobe"));
    }
    for x in &rungs[2..4] {
        assert_eq!(x["status"], "unavailable");
        // Absent off macOS; present on macOS and not implemented by this meter.
        let code = if cfg!(target_os = "macos") { "not-implemented" } else { "not-available-on-platform" };
        assert_eq!(x["code"], code);
    }
    assert!(r["chosen"].is_string());
    // Human text names the reason too.
    let o = jcp(&["meter", "probe"]);
    let text = stdout(&o);
    let absent = if cfg!(target_os = "macos") { "not implemented in this meter" } else { "exists only on macOS" };
    assert!(text.contains("why (") && text.contains(absent), "{text}");
}

#[test]
fn s5_1_probe_unreadable_counter_is_declined_never_zero() {
    // A fake powercap tree whose package counter cannot be read: a declined rung, never a zero.
    // (Permission denied and its fix are held in crates/jcp-meter/tests/ladder.rs; the tests run
    // as root, who reads 0000 files, so the unreadable counter here is a directory.)
    let dir = tempfile::tempdir().unwrap();
    let z = dir.path().join("intel-rapl:0");
    std::fs::create_dir_all(z.join("energy_uj")).unwrap();
    std::fs::write(z.join("name"), "package-0\n").unwrap();
    std::fs::write(z.join("max_energy_range_uj"), "262143328850\n").unwrap();
    let o = jcp(&["meter", "probe", "--json", "--powercap-root", dir.path().to_str().unwrap()]);
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["rungs"][0]["status"], "declined");
    assert_eq!(r["rungs"][0]["code"], "rapl-unreadable");
    assert!(r["rungs"][0]["why"].as_str().unwrap().contains("energy_uj"));
}

#[test]
fn s5_1_calibrate_without_a_live_counter_says_so_and_stores_nothing() {
    if Path::new("/sys/class/powercap").exists() {
        // A machine with powercap may have a live counter; this test is about one without.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("cal.json");
        let o = jcp(&[
            "meter",
            "calibrate",
            "--powercap-root",
            dir.path().join("none").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(1));
        assert!(!out.exists());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cal.json");
    let o = jcp(&["meter", "calibrate", "--out", out.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["stored"].is_null());
    assert_eq!(v["refused"]["code"], "no-live-counter");
    assert!(v["refused"]["message"].as_str().unwrap().contains("rapl"));
    assert!(!out.exists(), "nothing stored");
    let o = jcp(&["meter", "calibrate", "--out", out.to_str().unwrap()]);
    assert!(stdout(&o).contains("nothing stored"));
}

#[test]
fn s5_1_calibrate_from_trace_then_meter_model_based_on_this_host_only() {
    let dir = tempfile::tempdir().unwrap();
    let counter = json!({"name": "package-0", "max_range_uj": 262_143_328_850u64});
    let here = write_trace(dir.path(), "here.json", "rapl", this_host(), counter.clone(), 100, |t| {
        (1_000 + uj(25_000, t), None)
    });
    let cal = dir.path().join("cal.json");
    let o = jcp(&["meter", "calibrate", "--from-trace", &here, "--out", cal.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    assert_eq!(stored["active_mw"], 25_000);
    assert_eq!(stored["measured_on"], this_host());
    assert_eq!(stored["source"]["trace"].as_str().unwrap().len(), 64);

    let o = jcp(&[
        "meter",
        "--calibration",
        cal.to_str().unwrap(),
        "--no-estimate",
        "--count",
        "1",
        "--interval-ms",
        "50",
        "--json",
        "--powercap-root",
        dir.path().join("none").to_str().unwrap(),
    ]);
    let w = &lines_json(&o)[0];
    // Rung 5 meters unless a live NVML counter sits above it on the machine running the test.
    assert!(w["rung"] == "calibrated" || w["rung"] == "nvml", "{w}");
    if w["rung"] == "calibrated" {
        assert_eq!(w["provenance"], "ModelBased");
        let span = w["end_ns"].as_u64().unwrap() - w["start_ns"].as_u64().unwrap();
        assert_eq!(w["energy_uj"].as_u64().unwrap(), uj(25_000, span));
    }

    let mut other = this_host();
    other["hostname"] = json!("another-host");
    let there = write_trace(dir.path(), "there.json", "rapl", other, counter, 100, |t| (1_000 + uj(25_000, t), None));
    let cal2 = dir.path().join("cal2.json");
    let o = jcp(&["meter", "calibrate", "--from-trace", &there, "--out", cal2.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("another host"), "{}", stdout(&o));
    let o = jcp(&[
        "meter",
        "probe",
        "--json",
        "--calibration",
        cal2.to_str().unwrap(),
        "--powercap-root",
        dir.path().join("none").to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["rungs"][4]["code"], "calibration-measured-elsewhere");
}

#[test]
fn s5_plausibility_replay_of_the_rtx4050_trace_declines_nvml() {
    let dir = tempfile::tempdir().unwrap();
    let gpu =
        json!({"name": "gpu0 RTX 4050 Laptop", "max_range_uj": null, "power_limit_mw": 65_000, "draw_exposed": true});
    let bad = write_trace(dir.path(), "rtx4050.json", "nvml", Value::Null, gpu.clone(), 300, |t| {
        (uj(4 * 14_800, t), Some(if t < 50_000_000 { 590_000 } else { 14_800 }))
    });
    let o = jcp(&["meter", "--replay", &bad, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = lines_json(&o);
    assert!(!rows.is_empty());
    for w in &rows {
        assert_eq!(w["provenance"], "Estimator");
        let nvml = w["declined"].as_array().unwrap().iter().find(|d| d["rung"] == "nvml").unwrap();
        assert_eq!(nvml["code"], "counter-implausible");
    }
    let good = write_trace(dir.path(), "good.json", "nvml", Value::Null, gpu, 300, |t| (uj(14_800, t), Some(14_800)));
    let o = jcp(&["meter", "--replay", &good, "--json"]);
    let rows = lines_json(&o);
    assert_eq!(rows.len(), 2, "windows fully inside the 3 s trace");
    for w in &rows {
        assert_eq!(
            (w["provenance"].as_str(), w["coverage"].as_str(), w["energy_uj"].as_u64()),
            (Some("HwShunt"), Some("Partial"), Some(14_800_000))
        );
    }
    let o = jcp(&["meter", "probe", "--replay", &good]);
    assert!(stdout(&o).contains("plausibility: not refuted"), "{}", stdout(&o));
}

#[test]
fn s5_1_bad_input_exits_2_with_a_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.json");
    std::fs::write(&p, r#"{"format":"jcp-meter-trace/1","rung":"rapl","counters":[],"samples":[],"extra":1}"#).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_jcp"))
        .args(["meter", "--replay", p.to_str().unwrap()])
        .env("JCP_JSON_ERRORS", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("trace-malformed"));
    let o = Command::new(env!("CARGO_BIN_EXE_jcp"))
        .args(["meter", "--interval-ms", "0", "--count", "1"])
        .env("JCP_JSON_ERRORS", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad-interval"));
}

#[test]
fn s5_1_record_without_a_counter_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace.json");
    let absent = dir.path().join("no-powercap");
    let o = jcp(&[
        "meter",
        "record",
        "--powercap-root",
        absent.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--duration-ms",
        "200",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    if v["written"].is_null() {
        // No RAPL under the given root and no NVIDIA driver: refused with the reasons.
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(v["refused"]["code"], "no-live-counter");
        assert!(v["refused"]["message"].as_str().unwrap().contains("rapl-no-powercap"));
        assert!(!out.exists());
    } else {
        // A machine with a GPU records NVML; the trace replays.
        assert_eq!(v["rung"], "nvml");
        let o = jcp(&["meter", "--replay", out.to_str().unwrap(), "--interval-ms", "100", "--json"]);
        assert!(o.status.success());
    }
}
