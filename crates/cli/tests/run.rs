//! `jcp run` (spec §4.7, C21): demo, verify, and authoring checkpoints and
//! amendments with key files, with the exit codes 0 clean / 1 findings /
//! 2 unreadable.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use std::path::Path;

#[path = "support/cli.rs"]
mod cli;
use cli::{jcp, ok};

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

/// A run by a steward (identity seed 0x11) that rotated once to key 0x12,
/// written with its key log; returns the run's file name.
fn rotated_run(dir: &Path) -> &'static str {
    use jcp::cbor::{ContentId, Value};
    use jcp::grant::{Capability, Grant};
    use jcp::identity::Keypair;
    use jcp::rotation::{issue_grant, KeyLog, KeyRing};
    use jcp::steering::{CheckpointInput, Run};
    let k = |n: u8| Keypair::from_seed([n; 32]).unwrap();
    let (id, k1, k2, agent) = (k(0x11), k(0x12), k(0x13), k(0x19));
    let mut log = KeyLog::incept(&id, &k1.did(), Some([1; 16]));
    let state = log.rotate(&k1, &k2.did(), Some([2; 16])).unwrap();
    let grant = Grant {
        issuer: id.did(),
        subject: agent.did(),
        capability: Capability { resource: ContentId::of(&Value::text("r")), actions: vec!["run".into()] },
        budget_uj: 1_000,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: Some(0),
        nonce: [3; 16],
    };
    let mut ring = KeyRing::new();
    ring.add(&log).unwrap();
    let mut run = Run::new(issue_grant(grant, &k1, &state).unwrap()).with_key_ring(ring);
    let input = CheckpointInput { state: ContentId::of(&Value::text("s")), at: 10, spent: None, nonce: Some([4; 16]) };
    run.checkpoint(&agent, input).unwrap();
    run.write(&dir.join("rotated.jcprun")).unwrap();
    std::fs::write(dir.join("steward.jcpkeys"), log.to_bytes()).unwrap();
    // A fork: the pre-committed key signs a second rotation at seq 1.
    let mut fork = KeyLog::from_events(log.events()[..1].to_vec());
    fork.rotate(&k1, &k(0x50).did(), Some([5; 16])).unwrap();
    std::fs::write(dir.join("fork.jcpkeys"), fork.to_bytes()).unwrap();
    "rotated.jcprun"
}

#[test]
fn c12_cli_run_verify_reads_a_rotated_stewards_key_log() {
    let d = tempfile::tempdir().unwrap();
    let run = rotated_run(d.path());
    // Without the log the steward's grant is refused on its signature (exit 1).
    let o = jcp(d.path(), &["run", "verify", run, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"][0]["code"], "bad-signature");
    // With it the run verifies clean.
    let v: serde_json::Value =
        serde_json::from_str(&ok(d.path(), &["run", "verify", run, "--key-log", "steward.jcpkeys", "--json"])).unwrap();
    assert_eq!(v["clean"], true);
    // A second log that forks the identity: refused, exit 1, rotation-forked.
    let o = jcp(d.path(), &["run", "verify", run, "--key-log", "steward.jcpkeys", "--key-log", "fork.jcpkeys"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("rotation-forked"), "{}", String::from_utf8_lossy(&o.stderr));
    // A key log that is not one: unreadable, exit 2, naming the file.
    std::fs::write(d.path().join("junk.jcpkeys"), b"\x01\x02").unwrap();
    let o = jcp(d.path(), &["run", "verify", run, "--key-log", "junk.jcpkeys"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("junk.jcpkeys"));
}

/// Issue 34, "Files the agent can reach": the agent writes in the run's
/// folder (it checkpoints there), so it can plant a symlink at any name it
/// can predict. The steward's `jcp run amend` replaces the run through a
/// temporary with a random name created exclusively: a symlink at the old
/// predictable name (`r.jcprun.tmp`) turns nothing elsewhere, and a symlink
/// at the run's own name is replaced, not followed.
#[test]
fn c21_cli_a_symlink_planted_in_the_run_folder_never_turns_the_stewards_write() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    let victim = d.join("victim.txt");
    std::fs::write(&victim, b"the steward's own file").unwrap();
    std::os::unix::fs::symlink(&victim, d.join("r.jcprun.tmp")).unwrap();
    ok(d, &["run", "checkpoint", "--run", "r.jcprun", "--key", "agent.key", "--state", "text:plan", "--at", "100"]);
    ok(d, &["run", "amend", "--run", "r.jcprun", "--key", "issuer.key", "--budget-uj", "500"]);
    assert_eq!(std::fs::read(&victim).unwrap(), b"the steward's own file");
    assert!(std::fs::symlink_metadata(d.join("r.jcprun.tmp")).unwrap().file_type().is_symlink());
    // A symlink at the run's own name: the next write replaces the link itself.
    let real = d.join("elsewhere.jcprun");
    std::fs::rename(d.join("r.jcprun"), &real).unwrap();
    std::os::unix::fs::symlink(&real, d.join("r.jcprun")).unwrap();
    let linked_before = std::fs::read(&real).unwrap();
    ok(d, &["run", "checkpoint", "--run", "r.jcprun", "--key", "agent.key", "--state", "text:s2", "--at", "200"]);
    assert_eq!(std::fs::read(&real).unwrap(), linked_before, "the link's target is untouched");
    assert!(!std::fs::symlink_metadata(d.join("r.jcprun")).unwrap().file_type().is_symlink());
    // No temporary is left behind.
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") && n != "r.jcprun.tmp")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
