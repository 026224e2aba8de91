//! `jcp run` (spec §4.7, C21): demo, verify, and authoring checkpoints and
//! amendments with key files, with the exit codes 0 clean / 1 findings /
//! 2 unreadable.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use std::path::Path;
use std::process::{Command, Output};

fn jcp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jcp")).current_dir(dir).args(args).output().unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = jcp(dir, args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn setup(dir: &Path) {
    ok(dir, &["key", "new", "--out", "issuer.key", "--seed", &"01".repeat(32)]);
    ok(dir, &["key", "new", "--out", "agent.key", "--seed", &"02".repeat(32)]);
    ok(dir, &["key", "new", "--out", "mallory.key", "--seed", &"05".repeat(32)]);
    let agent = ok(dir, &["key", "show", "agent.key"]).trim().to_owned();
    ok(
        dir,
        &[
            "grant",
            "issue",
            "--key",
            "issuer.key",
            "--subject",
            &agent,
            "--resource",
            "text:long-run",
            "--actions",
            "run",
            "--budget-uj",
            "1000",
            "--expiry",
            "2000000000",
            "--nonce",
            &"00".repeat(16),
            "--out",
            "grant.jcp",
        ],
    );
    ok(dir, &["run", "new", "--grant", "grant.jcp", "--out", "r.jcprun"]);
}

#[test]
fn c21_cli_demo_writes_a_run_that_verifies_clean_as_a_table_and_as_json() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let out = ok(d, &["run", "demo", "demo.jcprun", "--seed", "3", "--json"]);
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["clean"], true);
    assert_eq!(s["checkpoints"], 7);
    // Deterministic: the same seed writes the same bytes.
    ok(d, &["run", "demo", "again.jcprun", "--seed", "3"]);
    assert_eq!(std::fs::read(d.join("demo.jcprun")).unwrap(), std::fs::read(d.join("again.jcprun")).unwrap());
    let table = ok(d, &["run", "verify", "demo.jcprun"]);
    assert!(table.contains("not stated"), "{table}");
    assert!(table.contains("amendment #"), "{table}");
    assert!(table.contains("verdict: clean"), "{table}");
    let v: serde_json::Value = serde_json::from_str(&ok(d, &["run", "verify", "demo.jcprun", "--json"])).unwrap();
    assert_eq!(v["clean"], true);
    assert_eq!(v["checkpoints"].as_array().unwrap().len(), 7);
    assert!(v["checkpoints"][0]["spent"].is_null());
    assert_eq!(v["checkpoints"][0]["remainder"]["state"], "unknown");
}

#[test]
fn c21_cli_authoring_checkpoints_and_an_amendment_within_the_remainder() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    ok(d, &["run", "checkpoint", "--run", "r.jcprun", "--key", "agent.key", "--state", "text:plan", "--at", "100"]);
    ok(
        d,
        &[
            "run",
            "checkpoint",
            "--run",
            "r.jcprun",
            "--key",
            "agent.key",
            "--state",
            "text:s1",
            "--at",
            "200",
            "--spent-uj",
            "300",
            "--provenance",
            "HwShunt",
        ],
    );
    // Above the remainder (700): refused before signing, file unchanged.
    let before = std::fs::read(d.join("r.jcprun")).unwrap();
    let o = jcp(d, &["run", "amend", "--run", "r.jcprun", "--key", "issuer.key", "--budget-uj", "701"]);
    assert_eq!(o.status.code(), Some(1), "a refusal exits 1 (README)");
    assert!(String::from_utf8_lossy(&o.stderr).contains("steer-above-remainder"));
    assert_eq!(std::fs::read(d.join("r.jcprun")).unwrap(), before);
    // The agent cannot steer itself; a third principal cannot either.
    let o = jcp(d, &["run", "amend", "--run", "r.jcprun", "--key", "agent.key", "--budget-uj", "10"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("steer-self-amend"));
    let o = jcp(d, &["run", "amend", "--run", "r.jcprun", "--key", "mallory.key", "--budget-uj", "10"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("steer-not-issuer"));
    let out = ok(
        d,
        &[
            "run",
            "amend",
            "--run",
            "r.jcprun",
            "--key",
            "issuer.key",
            "--budget-uj",
            "500",
            "--instructions",
            "text:v2",
            "--continuation-out",
            "cont.jcp",
            "--json",
        ],
    );
    let a: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(a["continuation_grant"]["budget_uj"], 500);
    let inspect: serde_json::Value = serde_json::from_str(&ok(d, &["grant", "inspect", "cont.jcp", "--json"])).unwrap();
    assert_eq!(inspect["id"], a["continuation"]);
    // Spend may not go quiet or decrease; a non-agent may not checkpoint.
    let o =
        jcp(d, &["run", "checkpoint", "--run", "r.jcprun", "--key", "agent.key", "--state", "text:s2", "--at", "300"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("steer-spend-omitted"));
    let o = jcp(
        d,
        &[
            "run",
            "checkpoint",
            "--run",
            "r.jcprun",
            "--key",
            "agent.key",
            "--state",
            "text:s2",
            "--at",
            "300",
            "--spent-uj",
            "299",
        ],
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("steer-spend-decreased"));
    let o = jcp(
        d,
        &[
            "run",
            "checkpoint",
            "--run",
            "r.jcprun",
            "--key",
            "mallory.key",
            "--state",
            "text:s2",
            "--at",
            "300",
            "--spent-uj",
            "400",
        ],
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("steer-not-agent"));
    ok(
        d,
        &[
            "run",
            "checkpoint",
            "--run",
            "r.jcprun",
            "--key",
            "agent.key",
            "--state",
            "text:s2",
            "--at",
            "300",
            "--spent-uj",
            "400",
            "--provenance",
            "ModelBased",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&ok(d, &["run", "verify", "r.jcprun", "--json"])).unwrap();
    assert_eq!(v["clean"], true, "{v}");
    assert_eq!(v["records"], 6);
    assert_eq!(v["remainder"], serde_json::json!({"state": "known", "uj": 400}));
    assert_eq!(v["checkpoints"][1]["amendments"][0]["ceiling_uj"], 700);
}

#[test]
fn c21_cli_verify_exits_1_on_findings_and_2_on_unreadable() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    // A published invalid run: the amendment above the remainder.
    let vectors: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(testkit::conformance("jcp/v1/steering.json")).unwrap()).unwrap();
    let bad = vectors["runs"].as_array().unwrap().iter().find(|r| r["name"] == "above-remainder").unwrap();
    let bytes = hex::decode(bad["run_file"].as_str().unwrap()).unwrap();
    std::fs::write(d.join("bad.jcprun"), &bytes).unwrap();
    let o = jcp(d, &["run", "verify", "bad.jcprun", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"][0]["code"], "steer-above-remainder");
    assert_eq!(v["findings"][0]["index"], 3);
    let o = jcp(d, &["run", "verify", "bad.jcprun"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("record #3 amendment"));
    // Truncated: unreadable, exit 2, the record named.
    std::fs::write(d.join("cut.jcprun"), &bytes[..bytes.len() - 10]).unwrap();
    let o = jcp(d, &["run", "verify", "cut.jcprun"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("record #4"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = jcp(d, &["run", "verify", "missing.jcprun"]);
    assert_eq!(o.status.code(), Some(2));
    // Authoring onto a run with refused records is refused.
    ok(d, &["key", "new", "--out", "agent.key", "--seed", &"02".repeat(32)]);
    let o = jcp(
        d,
        &[
            "run",
            "checkpoint",
            "--run",
            "bad.jcprun",
            "--key",
            "agent.key",
            "--state",
            "text:x",
            "--at",
            "1000000000",
            "--spent-uj",
            "900",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "a refusal exits 1 (README)");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("steer-run-not-clean"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(d.join("bad.jcprun")).unwrap(), bytes);
}
