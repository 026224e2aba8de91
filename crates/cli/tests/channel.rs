//! `jcp channel` (spec §4.5, C17): statements signed and verified, a
//! settlement audited into the merged ledger, an overdraft proved and the
//! proof verified offline, refusals with their codes; exit codes 0 clean /
//! 1 refused or overdrawn / 2 unreadable.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use std::path::Path;
use std::process::Output;

#[path = "support/cli.rs"]
mod cli;
use cli::{jcp, ok};

fn code_of(o: &Output) -> i32 {
    o.status.code().unwrap()
}

fn json_of(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

fn setup(dir: &Path) {
    ok(dir, &["key", "new", "--out", "issuer.key", "--seed", &"01".repeat(32)]);
    ok(dir, &["key", "new", "--out", "holder.key", "--seed", &"02".repeat(32)]);
    ok(dir, &["key", "new", "--out", "a.key", "--seed", &"31".repeat(32)]);
    ok(dir, &["key", "new", "--out", "b.key", "--seed", &"32".repeat(32)]);
    let holder = ok(dir, &["key", "show", "holder.key"]).trim().to_owned();
    ok(
        dir,
        &[
            "grant",
            "issue",
            "--key",
            "issuer.key",
            "--subject",
            &holder,
            "--resource",
            "text:tool",
            "--actions",
            "call",
            "--budget-uj",
            "1000",
            "--nonce",
            &"00".repeat(16),
            "--out",
            "grant.jcp",
        ],
    );
}

fn statement(dir: &Path, key: &str, spent: u64, seq: u64, out: &str) {
    ok(
        dir,
        &[
            "channel",
            "statement",
            "--key",
            key,
            "--grant",
            "grant.jcp",
            "--spent-uj",
            &spent.to_string(),
            "--seq",
            &seq.to_string(),
            "--out",
            out,
        ],
    );
}

#[test]
fn c17_cli_statements_settle_into_a_merged_ledger_within_budget() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    statement(d, "a.key", 300, 0, "a0.st");
    statement(d, "b.key", 200, 0, "b0.st");
    let v = json_of(&jcp(d, &["channel", "verify", "a0.st", "--json"]));
    assert_eq!(
        (v["kind"].as_str(), v["code"].as_str(), v["statement"]["spent_uj"].as_u64()),
        (Some("statement"), Some("ok"), Some(300))
    );
    let o = jcp(d, &["channel", "audit", "--grant", "grant.jcp", "a0.st", "b0.st", "--json"]);
    assert_eq!(code_of(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
    let r = json_of(&o);
    assert_eq!(r["report"]["ledger"]["total_uj"], 500);
    assert_eq!(r["report"]["overdraft"], serde_json::Value::Null);
    assert_eq!(r["proof"], serde_json::Value::Null);
}

#[test]
fn c17_cli_audit_proves_an_overdraft_and_refuses_forged_stale_and_regressing_statements() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    let a = ok(d, &["key", "show", "a.key"]).trim().to_owned();
    let b = ok(d, &["key", "show", "b.key"]).trim().to_owned();
    statement(d, "a.key", 600, 1, "a1.st");
    statement(d, "b.key", 600, 1, "b1.st");
    statement(d, "a.key", 500, 2, "a-regress.st");
    statement(d, "a.key", 900, 1, "a-stale.st");
    // A forged statement: b1's bytes with its claim raised, the signature kept.
    let mut forged = std::fs::read(d.join("b1.st")).unwrap();
    let at = forged.windows(3).rposition(|w| w == [0x19, 0x02, 0x58]).unwrap(); // 600 as a CBOR uint: spent_uj, the last field
    forged[at + 1] = 0x03; // 856
    std::fs::write(d.join("forged.st"), &forged).unwrap();
    let o = jcp(d, &["channel", "verify", "forged.st", "--json"]);
    assert_eq!((code_of(&o), json_of(&o)["code"].as_str()), (1, Some("bad-signature")));

    let o = jcp(
        d,
        &[
            "channel",
            "audit",
            "--grant",
            "grant.jcp",
            "--member",
            &a,
            "--member",
            &b,
            "--proof-out",
            "over.proof",
            "a1.st",
            "b1.st",
            "forged.st",
            "a-stale.st",
            "a-regress.st",
            "--json",
        ],
    );
    assert_eq!(code_of(&o), 1);
    let r = json_of(&o);
    let codes: Vec<&str> =
        r["report"]["steps"].as_array().unwrap().iter().map(|s| s["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["admitted", "admitted", "bad-signature", "statement-stale", "statement-regressing"]);
    assert_eq!(r["report"]["refused"], 3);
    assert_eq!(r["report"]["ledger"]["total_uj"], 1200);
    assert_eq!(r["report"]["overdraft"]["overdraft_uj"], 200);
    // The proof verifies offline, from its own bytes.
    let o = jcp(d, &["channel", "verify", "over.proof", "--json"]);
    assert_eq!(code_of(&o), 0);
    let v = json_of(&o);
    assert_eq!((v["kind"].as_str(), v["overdraft"]["overdraft_uj"].as_u64()), (Some("overdraft-proof"), Some(200)));
    // Human output names the overdraft.
    let o = jcp(d, &["channel", "audit", "--grant", "grant.jcp", "a1.st", "b1.st"]);
    assert_eq!(code_of(&o), 1);
    assert!(String::from_utf8_lossy(&o.stdout).contains("OVERDRAFT: 200 µJ"), "{}", String::from_utf8_lossy(&o.stdout));
    // A statement from a point outside the given members is refused.
    let o = jcp(d, &["channel", "audit", "--grant", "grant.jcp", "--member", &a, "a1.st", "b1.st", "--json"]);
    assert_eq!(code_of(&o), 1);
    assert_eq!(json_of(&o)["report"]["steps"][1]["code"], "statement-not-member");
}

#[test]
fn c17_cli_unreadable_statements_exit_2_with_their_code() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    std::fs::write(d.join("junk.st"), b"\xa1\x61x\xf5").unwrap();
    let o = jcp(d, &["channel", "verify", "junk.st"]);
    assert_eq!(code_of(&o), 2);
    let o = jcp(d, &["channel", "audit", "--grant", "grant.jcp", "junk.st"]);
    assert_eq!(code_of(&o), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("junk.st"), "{}", String::from_utf8_lossy(&o.stderr));
}
