//! `jcp energy` (§5.3–§5.6) through the real binary, over files the meter
//! records (`jcp meter --out`), activity and outcome files, and a demo
//! receipt stream.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

use jcp::cbor::ContentId;
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::identity::Keypair;
use jcp_meter::efficiency::Efficiency;
use jcp_meter::traceability::activity_bytes;
use serde_json::{json, Value};

fn jcp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jcp")).current_dir(dir).args(args).output().unwrap()
}

/// Runs, checks the exit status, parses the one JSON line.
fn run_json(dir: &Path, args: &[&str], status: i32) -> Value {
    let o = jcp(dir, args);
    assert_eq!(
        o.status.code(),
        Some(status),
        "{args:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&o.stdout)))
}

/// Runs expecting an error: its exit status and `[code]` on stderr.
fn refused(dir: &Path, args: &[&str], status: i32, code: &str) -> String {
    let o = jcp(dir, args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(status), "{args:?}: {err}");
    assert!(err.contains(&format!("[{code}]")), "{args:?}: expected [{code}] in {err}");
    err
}

fn host() -> Value {
    json!({"hostname": "bench", "machine": null, "cpu": "c", "logical_cpus": 2, "os": "linux"})
}

/// A window row: `(energy, provenance, coverage, rung)` or a gap.
fn window(seq: u64, fig: Option<(u64, &str, &str, &str)>) -> Value {
    let (start, end) = (seq * 1_000_000_000, (seq + 1) * 1_000_000_000);
    match fig {
        Some((uj, p, c, r)) => {
            json!({"seq": seq, "start_ns": start, "end_ns": end, "start_unix_ms": start / 1_000_000, "end_unix_ms": end / 1_000_000,
            "energy_uj": uj, "provenance": p, "coverage": c, "rung": r, "declined": [], "gap": null})
        }
        None => {
            json!({"seq": seq, "start_ns": start, "end_ns": end, "start_unix_ms": start / 1_000_000, "end_unix_ms": end / 1_000_000,
            "energy_uj": null, "provenance": null, "coverage": null, "rung": null, "declined": [], "gap": "no rung could meter this window"})
        }
    }
}

fn session(dir: &Path, name: &str, occupancy: Option<&str>, windows: &[Value]) {
    let s = json!({"format": "jcp-meter-session/1", "host": host(), "occupancy": occupancy, "interval_ns": 1_000_000_000u64, "replay_of": null, "windows": windows});
    std::fs::write(dir.join(name), s.to_string()).unwrap();
}

fn rapl(seq: u64, uj: u64) -> Value {
    window(seq, Some((uj, "HwShunt", "Whole", "rapl")))
}

fn trace_file() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../jcp-meter/fuzz/corpus/trace_decode/rapl-live.json")
        .display()
        .to_string()
}

// ---------------------------------------------------------------- recording

#[test]
fn s5_4_meter_out_records_a_session_the_energy_commands_read() {
    let d = tempfile::tempdir().unwrap();
    let trace = trace_file();
    let o = jcp(
        d.path(),
        &[
            "meter",
            "--replay",
            &trace,
            "--interval-ms",
            "100",
            "--count",
            "4",
            "--json",
            "--out",
            "s.json",
            "--occupancy",
            "idle",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<Value> =
        String::from_utf8(o.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let s: Value = serde_json::from_slice(&std::fs::read(d.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(s["format"], "jcp-meter-session/1");
    assert_eq!(s["occupancy"], "idle");
    assert_eq!(s["interval_ns"], 100_000_000);
    assert_eq!(s["replay_of"].as_str().unwrap().len(), 64, "a replay names the trace it replayed");
    let ws = s["windows"].as_array().unwrap();
    assert_eq!(ws.len(), 4);
    for (w, l) in ws.iter().zip(&lines) {
        for k in ["seq", "energy_uj", "provenance", "coverage", "rung", "start_ns", "end_ns"] {
            assert_eq!(w[k], l[k], "{k}: the session holds the streamed window");
        }
    }
    // The recorded session is read back by every energy command.
    std::fs::write(d.path().join("env.json"), json!({"format": "jcp-meter-envelope/1", "part": "package-0", "rungs": ["rapl"], "burst_mw": 65000, "idle_mw": 100}).to_string()).unwrap();
    let r = run_json(d.path(), &["energy", "bounds", "--windows", "s.json", "--envelope", "env.json", "--json"], 0);
    assert_eq!((r["not_refuted"].as_u64(), r["refuted"].as_u64()), (Some(4), Some(0)));
    // Without a known length there is nothing to record.
    refused(
        d.path(),
        &["meter", "--no-estimate", "--powercap-root", "/nonexistent", "--out", "x.json"],
        2,
        "bad-interval",
    );
}

#[test]
fn s5_4_session_decoder_refuses_by_file_and_field() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("b.json"),
        json!({"format": "jcp-meter-baseline/1", "scope": null, "low_uj": 1, "high_uj": 2}).to_string(),
    )
    .unwrap();
    // An overclaimed grade: an estimate graded HwShunt (§5.1).
    session(d.path(), "over.json", Some("idle"), &[window(0, Some((5, "HwShunt", "Whole", "estimate")))]);
    let e = refused(
        d.path(),
        &["energy", "dynamism", "--windows", "over.json", "--baseline", "b.json"],
        1,
        "window-grade-overclaimed",
    );
    assert!(e.contains("over.json") && e.contains("windows[0]"), "{e}");
    // NVML reads the GPU only: a Whole NVML figure claims more than it covers (§5.2).
    session(d.path(), "nvml.json", Some("idle"), &[window(0, Some((5, "HwShunt", "Whole", "nvml")))]);
    refused(
        d.path(),
        &["energy", "dynamism", "--windows", "nvml.json", "--baseline", "b.json"],
        1,
        "window-grade-overclaimed",
    );
    // Overlapping windows would count joules twice.
    let mut w1 = rapl(1, 5);
    w1["start_ns"] = json!(500_000_000u64);
    session(d.path(), "overlap.json", Some("idle"), &[rapl(0, 5), w1]);
    refused(
        d.path(),
        &["energy", "dynamism", "--windows", "overlap.json", "--baseline", "b.json"],
        2,
        "windows-overlap",
    );
    // A field of the wrong type is named by its path.
    let mut w = rapl(0, 5);
    w["energy_uj"] = json!(-3);
    session(d.path(), "neg.json", Some("idle"), &[w]);
    let e = refused(
        d.path(),
        &["energy", "dynamism", "--windows", "neg.json", "--baseline", "b.json"],
        2,
        "session-malformed",
    );
    assert!(e.contains("windows[0].energy_uj"), "{e}");
    // Another format's file.
    refused(d.path(), &["energy", "dynamism", "--windows", "b.json", "--baseline", "b.json"], 2, "unsupported-format");
}

// ---------------------------------------------------------------- §5.3

struct Traced {
    outcome: String,
    activities: Vec<String>,
}

fn outcome(dir: &Path, outcome_uj: u64, parts: &[(u64, Provenance, Coverage)], twice: bool) -> Traced {
    let key = Keypair::from_seed([7; 32]).unwrap();
    let mut ids = Vec::new();
    let mut activities = Vec::new();
    for (i, (uj, p, c)) in parts.iter().enumerate() {
        let b = activity_bytes(&format!("act-{i}"), Energy { uj: *uj, provenance: *p, coverage: *c, measured: None });
        ids.push(ContentId::of_bytes(&b));
        let name = format!("act-{i}.cbor");
        std::fs::write(dir.join(&name), &b).unwrap();
        activities.push(name);
    }
    if twice {
        ids.push(ids[0]);
    }
    let e = Efficiency {
        outcome: "summarise the quarter".into(),
        activities: ids,
        energy: Energy::new(outcome_uj, Provenance::HwShunt),
        accepted_tokens: 0,
        completed_units: 1,
        steward: key.did(),
    };
    // A twice-bound outcome cannot be sealed through the checked path; seal its wire by hand.
    let sealed = jcp_meter::efficiency::envelope(&e.wire(), &key.sign(&e.wire().encode()));
    std::fs::write(dir.join("outcome.cbor"), sealed).unwrap();
    Traced { outcome: "outcome.cbor".into(), activities }
}

fn trace_args(t: &Traced) -> Vec<&str> {
    let mut v = vec!["energy", "trace", t.outcome.as_str()];
    v.extend(t.activities.iter().map(String::as_str));
    v.push("--json");
    v
}

#[test]
fn s5_3_trace_names_activities_by_content_id_and_a_positive_residual() {
    let d = tempfile::tempdir().unwrap();
    let t = outcome(
        d.path(),
        1_000,
        &[(600, Provenance::HwShunt, Coverage::Whole), (300, Provenance::ModelBased, Coverage::Whole)],
        false,
    );
    let r = run_json(d.path(), &trace_args(&t), 0);
    let tr = &r["trace"];
    assert_eq!(
        (tr["outcome_uj"].as_u64(), tr["accounted_uj"].as_u64(), tr["residual_uj"].as_i64()),
        (Some(1_000), Some(900), Some(100))
    );
    assert_eq!(tr["finding"], Value::Null);
    assert_eq!(tr["provenance_floor"], "ModelBased", "the floor, never the best");
    let ids: Vec<&str> = tr["activities"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    let want = ContentId::of_bytes(&std::fs::read(d.path().join("act-0.cbor")).unwrap()).to_hex();
    assert_eq!(ids[0], want);
    // A file the outcome does not name is reported and not summed.
    std::fs::write(d.path().join("stray.cbor"), activity_bytes("stray", Energy::new(5_000, Provenance::HwShunt)))
        .unwrap();
    let mut args = trace_args(&t);
    args.insert(3, "stray.cbor");
    let r = run_json(d.path(), &args, 0);
    assert_eq!(r["trace"]["accounted_uj"], 900);
    assert_eq!(r["unbound"][0]["file"], "stray.cbor");
}

#[test]
fn s5_3_negative_residual_is_signed_not_clamped_and_exits_1() {
    let d = tempfile::tempdir().unwrap();
    let t = outcome(
        d.path(),
        1_000,
        &[(800, Provenance::HwShunt, Coverage::Whole), (700, Provenance::HwShunt, Coverage::Partial)],
        false,
    );
    let r = run_json(d.path(), &trace_args(&t), 1);
    assert_eq!(r["trace"]["residual_uj"], -500);
    assert_eq!(r["trace"]["finding"], "activities-exceed-outcome");
    assert_eq!(r["trace"]["coverage_floor"], "Partial");
    let o = jcp(d.path(), &["energy", "trace", &t.outcome, &t.activities[0], &t.activities[1]]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("-500"), "the human text shows the sign");
}

#[test]
fn s5_3_activity_bound_twice_is_refused_with_its_code() {
    let d = tempfile::tempdir().unwrap();
    let t = outcome(d.path(), 1_000, &[(800, Provenance::HwShunt, Coverage::Whole)], true);
    refused(d.path(), &trace_args(&t), 1, "activity-bound-twice");
}

#[test]
fn s5_3_unresolvable_activity_and_forged_outcome_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let t = outcome(
        d.path(),
        1_000,
        &[(800, Provenance::HwShunt, Coverage::Whole), (100, Provenance::HwShunt, Coverage::Whole)],
        false,
    );
    // The second activity's file is not given.
    refused(d.path(), &["energy", "trace", &t.outcome, &t.activities[0]], 1, "unresolvable-activity");
    // A byte of the signed core changed.
    let mut b = std::fs::read(d.path().join(&t.outcome)).unwrap();
    let i = b.windows(7).position(|w| w == b"quarter").unwrap();
    b[i] = b'Q';
    std::fs::write(d.path().join("forged.cbor"), b).unwrap();
    refused(d.path(), &["energy", "trace", "forged.cbor", &t.activities[0], &t.activities[1]], 1, "bad-signature");
    // Not an outcome at all.
    std::fs::write(d.path().join("junk.cbor"), b"\xff\x00").unwrap();
    refused(d.path(), &["energy", "trace", "junk.cbor"], 2, "cbor-indefinite-length");
}

// ---------------------------------------------------------------- §5.5

/// A demo stream and one of its grants with spend > 0 whose basis is `basis`: (id, spent).
fn demo_grant(dir: &Path, basis: &str) -> (String, u64) {
    let o = jcp(dir, &["stream", "demo", "d.jcps", "--receipts", "20", "--fast"]);
    assert!(o.status.success());
    let r = run_json(dir, &["audit", "d.jcps", "--json"], 0);
    let g = r["grants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["conservation"]["basis"] == basis && g["spent_uj"].as_u64() > Some(0))
        .unwrap();
    (g["grant_id"].as_str().unwrap().to_owned(), g["spent_uj"].as_u64().unwrap())
}

#[test]
fn s5_5_spend_reconciles_exactly_against_whole_measured_windows() {
    let d = tempfile::tempdir().unwrap();
    let (grant, spent) = demo_grant(d.path(), "measured");
    session(d.path(), "s.json", None, &[rapl(0, spent / 2), rapl(1, spent - spent / 2)]);
    let r =
        run_json(d.path(), &["energy", "reconcile", "--grant", &grant, "--windows", "s.json", "d.jcps", "--json"], 0);
    assert_eq!(r["balanced"], true);
    assert_eq!(r["basis"], "measured");
    assert_eq!(r["conservation"]["discrepancy_uj"], 0);
    assert_eq!(r["spend"]["debited_uj"].as_u64(), Some(spent));
    // One µJ off is seen: the floor is exact, and the discrepancy is signed.
    session(d.path(), "off.json", None, &[rapl(0, spent / 2), rapl(1, spent - spent / 2 + 1)]);
    let r =
        run_json(d.path(), &["energy", "reconcile", "--grant", &grant, "--windows", "off.json", "d.jcps", "--json"], 1);
    assert_eq!(r["balanced"], false);
    assert_eq!(r["conservation"]["discrepancy_uj"], -1);
    assert!(r["conservation"]["discrepancy_ppm"]["num"].as_u64() > Some(0));
}

#[test]
fn s5_5_floor_over_modelled_figures_says_so() {
    let d = tempfile::tempdir().unwrap();
    let (grant, spent) = demo_grant(d.path(), "measured");
    // Measured debits, but the meter's windows are an estimate.
    session(d.path(), "s.json", None, &[window(0, Some((spent, "Estimator", "Whole", "estimate")))]);
    let r =
        run_json(d.path(), &["energy", "reconcile", "--grant", &grant, "--windows", "s.json", "d.jcps", "--json"], 0);
    assert_eq!((r["basis"].as_str(), r["provenance_floor"].as_str()), (Some("modelled"), Some("Estimator")));
    assert!(r["statement"].as_str().unwrap().contains("model"), "{}", r["statement"]);
    // Modelled debits against measured windows are modelled too.
    let (grant, spent) = demo_grant(d.path(), "modelled");
    session(d.path(), "m.json", None, &[rapl(0, spent)]);
    let r =
        run_json(d.path(), &["energy", "reconcile", "--grant", &grant, "--windows", "m.json", "d.jcps", "--json"], 0);
    assert_eq!(r["basis"], "modelled");
}

#[test]
fn s5_5_partial_windows_and_gaps_are_never_summed_into_a_whole() {
    let d = tempfile::tempdir().unwrap();
    let (grant, spent) = demo_grant(d.path(), "measured");
    // A Partial GPU window beside a whole one that alone would balance.
    session(d.path(), "p.json", None, &[rapl(0, spent), window(1, Some((10, "HwShunt", "Partial", "nvml")))]);
    let r =
        run_json(d.path(), &["energy", "reconcile", "--grant", &grant, "--windows", "p.json", "d.jcps", "--json"], 1);
    assert_eq!(r["unreconciled"], "meter-coverage-partial");
    assert_eq!(r["conservation"], Value::Null);
    assert_eq!((r["whole_uj"].as_u64(), r["partial_uj"].as_u64()), (Some(spent), Some(10)));
    assert_eq!(r["partial_windows"], json!([1]));
    // A gap is unmetered, not zero.
    session(d.path(), "g.json", None, &[rapl(0, spent), window(1, None)]);
    let r =
        run_json(d.path(), &["energy", "reconcile", "--grant", &grant, "--windows", "g.json", "d.jcps", "--json"], 1);
    assert_eq!(r["unreconciled"], "meter-gap");
    assert_eq!(r["gap_windows"], json!([1]));
    // A grant the streams do not hold.
    refused(
        d.path(),
        &["energy", "reconcile", "--grant", &"ab".repeat(32), "--windows", "g.json", "d.jcps"],
        2,
        "grant-not-in-streams",
    );
}

// ---------------------------------------------------------------- §5.6

#[test]
fn s5_6_bounds_refute_or_do_not_and_never_verify() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("env.json"), json!({"format": "jcp-meter-envelope/1", "part": "package-0", "rungs": ["rapl"], "burst_mw": 65000, "idle_mw": 1000}).to_string()).unwrap();
    // 1 s windows: 30 J (30 W) inside; 70 J above the burst rating; 0.5 J below idle; a GPU window not held.
    session(
        d.path(),
        "s.json",
        None,
        &[
            rapl(0, 30_000_000),
            rapl(1, 70_000_000),
            rapl(2, 500_000),
            window(3, Some((5, "HwShunt", "Partial", "nvml"))),
            window(4, None),
        ],
    );
    let r = run_json(d.path(), &["energy", "bounds", "--windows", "s.json", "--envelope", "env.json", "--json"], 1);
    let words: Vec<Value> = r["windows"].as_array().unwrap().iter().map(|w| w["word"].clone()).collect();
    assert_eq!(words, vec![json!("not refuted"), json!("refuted"), json!("refuted"), Value::Null, Value::Null]);
    assert_eq!(r["windows"][1]["verdict"]["verdict"], "refuted-above");
    assert_eq!(r["windows"][2]["verdict"]["verdict"], "refuted-below");
    assert_eq!((r["refuted"].as_u64(), r["not_refuted"].as_u64(), r["not_held"].as_u64()), (Some(2), Some(1), Some(2)));
    let text =
        String::from_utf8(jcp(d.path(), &["energy", "bounds", "--windows", "s.json", "--envelope", "env.json"]).stdout)
            .unwrap();
    let json_text = serde_json::to_string(&r).unwrap();
    assert!(!text.contains("verified") || text.contains("not verified"), "{text}");
    assert!(!json_text.contains("verified"), "{json_text}");
    // Only not-refuted windows: exit 0. Nothing held: nothing checked, exit 1.
    session(d.path(), "ok.json", None, &[rapl(0, 30_000_000)]);
    run_json(d.path(), &["energy", "bounds", "--windows", "ok.json", "--envelope", "env.json", "--json"], 0);
    session(d.path(), "none.json", None, &[window(0, None)]);
    run_json(d.path(), &["energy", "bounds", "--windows", "none.json", "--envelope", "env.json", "--json"], 1);
    // An envelope whose floor is above its ceiling is refused by field.
    std::fs::write(
        d.path().join("bad.json"),
        json!({"format": "jcp-meter-envelope/1", "part": "p", "rungs": ["rapl"], "burst_mw": 10, "idle_mw": 20})
            .to_string(),
    )
    .unwrap();
    let e = refused(
        d.path(),
        &["energy", "bounds", "--windows", "ok.json", "--envelope", "bad.json"],
        2,
        "envelope-malformed",
    );
    assert!(e.contains("idle_mw"), "{e}");
}

// ---------------------------------------------------------------- §5.4

fn baseline(dir: &Path, name: &str, scope_host: Option<Value>, occupancy: &str) {
    let scope = scope_host.map(|h| json!({"host": h, "occupancy": occupancy, "window_ns": 1_000_000_000u64}));
    std::fs::write(
        dir.join(name),
        json!({"format": "jcp-meter-baseline/1", "scope": scope, "low_uj": 5_000_000, "high_uj": 10_000_000})
            .to_string(),
    )
    .unwrap();
}

#[test]
fn s5_4_three_kinds_of_look_are_kept_apart() {
    let d = tempfile::tempdir().unwrap();
    baseline(d.path(), "b.json", Some(host()), "idle");
    let evidence = ContentId::of_bytes(b"thermal reading").to_hex();
    std::fs::write(
        d.path().join("c.json"),
        json!({"format": "jcp-meter-causes/1", "causes": [{"seq": 3, "kind": "thermal-limit", "evidence": evidence}]})
            .to_string(),
    )
    .unwrap();
    session(
        d.path(),
        "s.json",
        Some("idle"),
        &[
            rapl(0, 7_000_000),
            rapl(1, 50_000_000),
            window(2, None),
            rapl(3, 60_000_000),
            window(4, Some((7_000_000, "HwShunt", "Partial", "nvml"))),
        ],
    );
    let r = run_json(
        d.path(),
        &["energy", "dynamism", "--windows", "s.json", "--baseline", "b.json", "--causes", "c.json", "--json"],
        1,
    );
    let kinds: Vec<&str> =
        r["windows"].as_array().unwrap().iter().map(|w| w["assessment"]["assessment"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["within-band", "unexplained", "unresolvable", "explained", "inapplicable"]);
    assert_eq!(
        [
            r["within_band"].as_u64(),
            r["explained"].as_u64(),
            r["unexplained"].as_u64(),
            r["inapplicable"].as_u64(),
            r["unresolvable"].as_u64()
        ],
        [Some(1), Some(1), Some(1), Some(1), Some(1)]
    );
    assert!(r.get("score").is_none(), "no single score");
    // Every window within band: clean.
    session(d.path(), "ok.json", Some("idle"), &[rapl(0, 7_000_000), rapl(1, 9_000_000)]);
    run_json(d.path(), &["energy", "dynamism", "--windows", "ok.json", "--baseline", "b.json", "--json"], 0);
    // A window longer than the phenomenon could not have seen it.
    let r = run_json(
        d.path(),
        &["energy", "dynamism", "--windows", "ok.json", "--baseline", "b.json", "--phenomenon-ns", "1000", "--json"],
        1,
    );
    assert_eq!(r["unresolvable"], 2);
}

#[test]
fn s5_4_baseline_outside_its_scope_is_inapplicable() {
    let d = tempfile::tempdir().unwrap();
    session(d.path(), "s.json", Some("idle"), &[rapl(0, 50_000_000)]);
    let mut other = host();
    other["hostname"] = json!("elsewhere");
    for (name, h, occ) in [
        ("undeclared.json", None, "idle"),
        ("other-host.json", Some(other), "idle"),
        ("busy.json", Some(host()), "serving"),
    ] {
        baseline(d.path(), name, h, occ);
        let r = run_json(d.path(), &["energy", "dynamism", "--windows", "s.json", "--baseline", name, "--json"], 1);
        assert_eq!((r["inapplicable"].as_u64(), r["unexplained"].as_u64()), (Some(1), Some(0)), "{name}");
    }
    // A session that declares no occupancy has no baseline that applies to it.
    session(d.path(), "anon.json", None, &[rapl(0, 50_000_000)]);
    baseline(d.path(), "b.json", Some(host()), "idle");
    let r = run_json(d.path(), &["energy", "dynamism", "--windows", "anon.json", "--baseline", "b.json", "--json"], 1);
    assert_eq!(r["inapplicable"], 1);
    assert!(r["windows"][0]["assessment"]["why"].as_str().unwrap().contains("occupancy"));
}

#[test]
fn s5_4_cause_without_evidence_is_refused() {
    let d = tempfile::tempdir().unwrap();
    baseline(d.path(), "b.json", Some(host()), "idle");
    session(d.path(), "s.json", Some("idle"), &[rapl(0, 50_000_000)]);
    std::fs::write(
        d.path().join("c.json"),
        json!({"format": "jcp-meter-causes/1", "causes": [{"seq": 0, "kind": "cold-start"}]}).to_string(),
    )
    .unwrap();
    refused(
        d.path(),
        &["energy", "dynamism", "--windows", "s.json", "--baseline", "b.json", "--causes", "c.json"],
        1,
        "cause-without-evidence",
    );
    std::fs::write(
        d.path().join("c2.json"),
        json!({"format": "jcp-meter-causes/1", "causes": [{"seq": 0, "kind": "cold-start", "evidence": "nope"}]})
            .to_string(),
    )
    .unwrap();
    let e = refused(
        d.path(),
        &["energy", "dynamism", "--windows", "s.json", "--baseline", "b.json", "--causes", "c2.json"],
        2,
        "causes-malformed",
    );
    assert!(e.contains("causes[0].evidence"), "{e}");
}

#[test]
fn s5_4_a_baseline_declared_from_a_session_is_its_whole_band_and_applies_there() {
    let d = tempfile::tempdir().unwrap();
    session(
        d.path(),
        "idle.json",
        Some("idle"),
        &[
            rapl(0, 7_000_000),
            rapl(1, 9_000_000),
            window(2, Some((30_000_000, "HwShunt", "Partial", "nvml"))),
            window(3, None),
        ],
    );
    let r = run_json(d.path(), &["energy", "baseline", "--windows", "idle.json", "--out", "b.json", "--json"], 0);
    assert_eq!(
        (r["baseline"]["low_uj"].as_u64(), r["baseline"]["high_uj"].as_u64()),
        (Some(7_000_000), Some(9_000_000))
    );
    assert_eq!(r["baseline"]["scope"]["occupancy"], "idle");
    // Never overwritten.
    let o = jcp(d.path(), &["energy", "baseline", "--windows", "idle.json", "--out", "b.json"]);
    assert_eq!(o.status.code(), Some(2));
    // The declared baseline reads later sessions of the same scope.
    session(d.path(), "later.json", Some("idle"), &[rapl(0, 8_000_000), rapl(1, 50_000_000)]);
    let r = run_json(d.path(), &["energy", "dynamism", "--windows", "later.json", "--baseline", "b.json", "--json"], 1);
    assert_eq!((r["within_band"].as_u64(), r["unexplained"].as_u64()), (Some(1), Some(1)));
    // No occupancy, or no Whole window: refused (exit 1), nothing written.
    session(d.path(), "anon.json", None, &[rapl(0, 7_000_000)]);
    let o = jcp(d.path(), &["energy", "baseline", "--windows", "anon.json", "--out", "b2.json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("baseline-not-declarable"));
    assert!(!d.path().join("b2.json").exists());
}
