//! `jcp standing` (spec §4.6, C20): new, fire, ledger and `jcp inspect` of a
//! policy and a ledger, with the exit codes 0 clean / 1 refused /
//! 2 unreadable.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use std::path::Path;
use std::process::{Command, Output};

fn jcp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jcp")).current_dir(dir).args(args).output().unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> serde_json::Value {
    ok_out(jcp(dir, args))
}

fn did_of(dir: &Path, key: &str) -> String {
    let o = jcp(dir, &["key", "show", key]);
    String::from_utf8(o.stdout).unwrap().trim().to_owned()
}

/// `jcp standing new` over standing.jcp (source repo, kind push, 3 firings).
fn standing_new(d: &Path, per_firing_uj: &str, out: &str, ledger: &str) -> Output {
    jcp(
        d,
        &[
            "standing",
            "new",
            "--grant",
            "standing.jcp",
            "--key",
            "issuer.key",
            "--source",
            "repo",
            "--kind",
            "push",
            "--per-firing-uj",
            per_firing_uj,
            "--max-firings",
            "3",
            "--out",
            out,
            "--ledger",
            ledger,
            "--json",
        ],
    )
}

fn ok_out(o: Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A standing grant (issuer → issuer, 1000 µJ) and a policy of 300 µJ × 3.
fn setup(d: &Path) -> String {
    ok(d, &["key", "new", "--out", "issuer.key", "--seed", &"61".repeat(32), "--json"]);
    ok(d, &["key", "new", "--out", "worker.key", "--seed", &"62".repeat(32), "--json"]);
    let issuer = did_of(d, "issuer.key");
    ok(
        d,
        &[
            "grant",
            "issue",
            "--key",
            "issuer.key",
            "--subject",
            &issuer,
            "--resource",
            "text:triage",
            "--actions",
            "triage",
            "--budget-uj",
            "1000",
            "--expiry",
            "2000000000",
            "--out",
            "standing.jcp",
            "--json",
        ],
    );
    let p = ok_out(standing_new(d, "300", "policy.jcp", "ledger.jcp"));
    assert_eq!(p["policy"]["per_firing_uj"], 300);
    assert_eq!(p["ledger"]["ledger"]["firings"], 0);
    did_of(d, "worker.key")
}

fn fire(d: &Path, worker: &str, kind: &str, out: &str) -> Output {
    jcp(
        d,
        &[
            "standing",
            "fire",
            "--grant",
            "standing.jcp",
            "--policy",
            "policy.jcp",
            "--ledger",
            "ledger.jcp",
            "--key",
            "issuer.key",
            "--source",
            "repo",
            "--kind",
            kind,
            "--subject",
            worker,
            "--now",
            "1700000000",
            "--out",
            out,
            "--json",
        ],
    )
}

#[test]
fn c20_cli_firings_mint_children_that_chain_verify_until_the_count_is_exhausted() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let worker = setup(d);
    for n in 1..=3 {
        let out = format!("child-{n}.jcp");
        let o = fire(d, &worker, "push", &out);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["child"]["grant"]["subject"], worker);
        assert_eq!(j["child"]["grant"]["budget_uj"], 300);
        assert_eq!(j["standing"]["ledger"]["firings"], n);
        // The child is a delegation of the standing grant: the §7 chain path takes it.
        let i = ok(d, &["inspect", &out, "--json"]);
        assert_eq!(i["grant"]["parent"], ok(d, &["inspect", "standing.jcp", "--json"])["id"]);
    }
    let before = std::fs::read(d.join("ledger.jcp")).unwrap();
    let o = fire(d, &worker, "push", "child-4.jcp");
    assert_eq!(o.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["refused"]["code"], "standing-firings-exhausted");
    assert_eq!(
        std::fs::read(d.join("ledger.jcp")).unwrap(),
        before,
        "a refused firing leaves the ledger file unchanged"
    );
    assert!(!d.join("child-4.jcp").exists());
    let v = ok(d, &["standing", "ledger", "ledger.jcp", "--grant", "standing.jcp", "--policy", "policy.jcp", "--json"]);
    assert_eq!((v["firings_left"].as_u64(), v["budget_left_uj"].as_u64()), (Some(0), Some(100)));
}

#[test]
fn c20_cli_wrong_event_class_is_refused_with_the_ledger_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let worker = setup(d);
    let before = std::fs::read(d.join("ledger.jcp")).unwrap();
    let o = fire(d, &worker, "release", "child.jcp");
    assert_eq!(o.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["refused"]["code"], "standing-wrong-event-class");
    assert_eq!(std::fs::read(d.join("ledger.jcp")).unwrap(), before);
}

#[test]
fn c20_cli_an_amplifying_policy_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    setup(d);
    let o = standing_new(d, "1001", "wide.jcp", "wide-ledger.jcp");
    assert_eq!(o.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["refused"]["code"], "standing-policy-amplifies");
    assert!(!d.join("wide.jcp").exists() && !d.join("wide-ledger.jcp").exists());
}

#[test]
fn c20_cli_inspect_recognises_a_policy_and_a_ledger() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    setup(d);
    let p = ok(d, &["inspect", "policy.jcp", "--json"]);
    assert_eq!(p["type"], "mint-policy");
    assert_eq!(p["signature_valid_for_issuer"], true);
    assert_eq!(p["policy"]["max_firings"], 3);
    let l = ok(d, &["inspect", "ledger.jcp", "--json"]);
    assert_eq!(l["type"], "mint-ledger");
    assert_eq!(l["ledger"]["spent_uj"], 0);
    let plain = ok(d, &["standing", "ledger", "ledger.jcp", "--json"]);
    assert_eq!(plain["ledger"]["policy_id"], p["id"]);
    // A truncated ledger is unreadable: exit 2 with its decode code.
    let bytes = std::fs::read(d.join("ledger.jcp")).unwrap();
    std::fs::write(d.join("cut.jcp"), &bytes[..bytes.len() - 3]).unwrap();
    let o = jcp(d, &["standing", "ledger", "cut.jcp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[cbor-"));
}
