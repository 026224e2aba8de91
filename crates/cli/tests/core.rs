//! The core from the command line: `jcp key|grant|decide|inspect` (§2, §4, §7).

use std::path::Path;
use std::process::Command;

#[path = "support/cli.rs"]
mod cli;
use cli::{jcp, ok};

/// A key file `name` seeded with 32 copies of the byte `seed`; its did.
fn kp_did(dir: &Path, name: &str, seed: &str) -> String {
    ok(dir, &["key", "new", "--out", name, "--seed", &seed.repeat(32)]);
    ok(dir, &["key", "show", name]).trim().to_owned()
}

fn setup(dir: &Path) -> (String, String) {
    ok(dir, &["key", "new", "--out", "issuer.key", "--seed", &"01".repeat(32)]);
    ok(dir, &["key", "new", "--out", "agent.key", "--seed", &"02".repeat(32)]);
    ok(dir, &["key", "new", "--out", "worker.key", "--seed", &"03".repeat(32)]);
    let agent = ok(dir, &["key", "show", "agent.key"]).trim().to_owned();
    let worker = ok(dir, &["key", "show", "worker.key"]).trim().to_owned();
    issue(dir, &agent, "read,write", "00", "root.jcp");
    (agent, worker)
}

/// `issuer.key` grants `subject` 1 000 µJ of `actions` on `text:search`
/// (nonce: 16 copies of the byte `nonce`), written to `out`.
fn issue(dir: &Path, subject: &str, actions: &str, nonce: &str, out: &str) {
    let nonce = nonce.repeat(16);
    let args = ["--subject", subject, "--resource", "text:search", "--actions", actions, "--budget-uj", "1000"];
    let mut all = vec!["grant", "issue", "--key", "issuer.key"];
    all.extend(args);
    all.extend(["--nonce", &nonce, "--out", out]);
    ok(dir, &all);
}

#[test]
fn s7_cli_decide_allows_debits_and_denies_with_the_reason_as_json() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (_, worker) = setup(d);
    ok(
        d,
        &[
            "grant",
            "attenuate",
            "--parent",
            "root.jcp",
            "--key",
            "agent.key",
            "--subject",
            &worker,
            "--budget-uj",
            "100",
            "--out",
            "child.jcp",
        ],
    );
    let out = ok(d, &["decide", "--chain", "root.jcp", "child.jcp", "--cost-uj", "60", "--now", "1000", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"]["verdict"]["verdict"], "allow");
    assert_eq!(v["decision"]["chain_ids"].as_array().unwrap().len(), 2);
    // Over the child's budget: exit 1 with the reason.
    let o = jcp(d, &["decide", "--chain", "root.jcp", "child.jcp", "--cost-uj", "101", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // One spelling of a reason everywhere: the wire code, as receipts and `jcp call` say it (§7).
    assert_eq!(v["decision"]["verdict"]["reason"], "budget-exceeded");
    // The leaf alone is chain-broken.
    let o = jcp(d, &["decide", "--chain", "child.jcp", "--cost-uj", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("chain-broken"));
}

#[test]
fn c06_cli_revocation_by_the_issuer_kills_the_chain_and_a_non_issuer_cannot_revoke() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (_, worker) = setup(d);
    ok(
        d,
        &[
            "grant",
            "attenuate",
            "--parent",
            "root.jcp",
            "--key",
            "agent.key",
            "--subject",
            &worker,
            "--out",
            "child.jcp",
        ],
    );
    let o = jcp(d, &["grant", "revoke", "--grant", "root.jcp", "--key", "agent.key", "--out", "bad.rev"]);
    assert_eq!(o.status.code(), Some(1), "a refusal exits 1 (README)");
    assert!(String::from_utf8_lossy(&o.stderr).contains("revocation-unauthorized"));
    ok(d, &["grant", "revoke", "--grant", "root.jcp", "--key", "issuer.key", "--out", "root.rev"]);
    let o = jcp(d, &["decide", "--chain", "root.jcp", "child.jcp", "--cost-uj", "1", "--revocation", "root.rev"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("revoked"));
}

#[test]
fn c02_cli_attenuate_refuses_amplification_and_non_holders() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (_, worker) = setup(d);
    let o = jcp(
        d,
        &[
            "grant",
            "attenuate",
            "--parent",
            "root.jcp",
            "--key",
            "agent.key",
            "--subject",
            &worker,
            "--budget-uj",
            "1001",
            "--out",
            "c.jcp",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "a refusal exits 1 (README)");
    assert!(String::from_utf8_lossy(&o.stderr).contains("attenuation-violation"));
    let o = jcp(d, &["grant", "attenuate", "--parent", "root.jcp", "--key", "worker.key", "--out", "c.jcp"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not-holder"));
    assert_eq!(o.status.code(), Some(1));
    assert!(!d.join("c.jcp").exists());
    // An unreadable parent is not a refusal: exit 2.
    std::fs::write(d.join("garbage.jcp"), b"not cbor").unwrap();
    let o = jcp(d, &["grant", "attenuate", "--parent", "garbage.jcp", "--key", "agent.key", "--out", "c.jcp"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn c11_cli_shard_refuses_slices_past_the_parent() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (agent, worker) = setup(d);
    let (pa, pb) = (kp_did(d, "pa.key", "0a"), kp_did(d, "pb.key", "0b"));
    let o = jcp(
        d,
        &[
            "grant",
            "shard",
            "--parent",
            "root.jcp",
            "--key",
            "agent.key",
            "--slice",
            &format!("{worker}=600@{pa}"),
            "--slice",
            &format!("{agent}=401@{pb}"),
            "--out-dir",
            "shards",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "a refusal exits 1 (README)");
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard-overflow"));
    let out = ok(
        d,
        &[
            "grant",
            "shard",
            "--parent",
            "root.jcp",
            "--key",
            "agent.key",
            "--slice",
            &format!("{worker}=600@{pa}"),
            "--slice",
            &format!("{agent}=400@{pb}"),
            "--out-dir",
            "shards",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["shards"].as_array().unwrap().len(), 2);
}

#[test]
fn s4_cli_inspect_shows_id_and_signature_status_and_refuses_garbage_with_a_typed_error() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    let out = ok(d, &["inspect", "root.jcp", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["type"], "grant");
    assert_eq!(v["signature_valid"], true);
    // Flip the last signature byte: inspect reports an invalid signature, exit 1.
    let mut b = std::fs::read(d.join("root.jcp")).unwrap();
    let n = b.len();
    b[n - 1] ^= 0x01;
    std::fs::write(d.join("forged.jcp"), &b).unwrap();
    let o = jcp(d, &["inspect", "forged.jcp"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("INVALID"));
    // Non-canonical bytes: exit 2 with the offset.
    std::fs::write(d.join("bad.jcp"), [0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02]).unwrap();
    let o = jcp(d, &["inspect", "bad.jcp"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cbor-unsorted-keys") && err.contains("byte 4"), "{err}");
}

#[test]
fn c04_cli_frame_file_round_trips_and_a_data_frame_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    ok(d, &["frame", "new", "--grant", "root.jcp", "--action", "read", "--trust", "data", "--out", "f.jcp"]);
    let out = ok(d, &["inspect", "f.jcp", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["type"], "frame");
    assert_eq!(v["frame"]["trust"], "Data");
    let o = jcp(d, &["decide", "--chain", "root.jcp", "--frame", "f.jcp", "--cost-uj", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("untrusted-control"));
}

#[test]
fn s4_11_cli_decide_with_a_stream_seals_records_and_accumulates_spend_across_calls() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (agent, _) = setup(d);
    ok(d, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    let steward = ok(d, &["key", "show", "steward.key"]).trim().to_owned();
    let decide = [
        "decide",
        "--chain",
        "root.jcp",
        "--cost-uj",
        "600",
        "--now",
        "1000",
        "--stream",
        "s.jcps",
        "--steward-key",
        "steward.key",
        "--json",
    ];
    // First call: 600 of 1 000 µJ, allowed, sealed and recorded.
    let o = jcp(d, &decide);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let first: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(first["decision"]["verdict"]["verdict"], "allow");
    assert_eq!(first["receipt"]["steward"], steward.as_str());
    assert_eq!(first["receipt"]["id"].as_str().unwrap().len(), 64);
    // Second call, a fresh process: the stream is replayed first, so the
    // first 600 µJ are spent; 600 more are denied budget-exceeded.
    let o = jcp(d, &decide);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let second: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(second["decision"]["verdict"]["reason"], "budget-exceeded");
    assert!(second["receipt"]["offset"].as_u64().unwrap() > first["receipt"]["offset"].as_u64().unwrap());
    // Human output names the receipt too.
    let o = jcp(
        d,
        &[
            "decide",
            "--chain",
            "root.jcp",
            "--cost-uj",
            "1",
            "--now",
            "1000",
            "--stream",
            "s.jcps",
            "--steward-key",
            "steward.key",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("recorded at offset"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // The audit verifies every receipt under that steward; the allows
    // stay unresolved (no outcome was recorded) and are named, not hidden.
    let o = jcp(d, &["audit", "s.jcps", "--steward", &steward, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["receipts"]["verified"], 3, "{v}");
    assert_eq!(v["receipts"]["failed"], 0, "{v}");
    assert_eq!((v["receipts"]["allows"].as_u64(), v["receipts"]["denies"].as_u64()), (Some(2), Some(1)));
    assert_eq!(v["receipts"]["deny_reasons"]["budget-exceeded"], 1);
    assert_eq!(v["unresolved_total"], 2);
    assert_eq!(v["unresolved"][0]["holder"], agent.as_str());
    let root = v["grants"].as_array().unwrap().iter().find(|g| g["budget_uj"] == 1000).unwrap();
    assert_eq!(root["spent_uj"], 601);
    assert!(v["findings_by_code"].get("remaining-mismatch").is_none(), "{v}");
}

#[test]
fn c26_cli_decide_refuses_a_stream_held_by_another_process() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    ok(d, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    let mut holder = Command::new(env!("CARGO_BIN_EXE_jcp"))
        .current_dir(d)
        .args(["stream", "hold", "s.jcps", "--seconds", "60"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("holding"), "{line}");
    let o = jcp(
        d,
        &["decide", "--chain", "root.jcp", "--cost-uj", "1", "--stream", "s.jcps", "--steward-key", "steward.key"],
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stream-locked") && err.contains("s.jcps"), "{err}");
    // --stream needs --steward-key.
    let o = jcp(d, &["decide", "--chain", "root.jcp", "--cost-uj", "1", "--stream", "s.jcps"]);
    assert_eq!(o.status.code(), Some(2));
}

/// §4.3: `jcp decide --stream --revocation` records each notice at the
/// point's next marker, not its current one — otherwise the allows recorded
/// between two revocations (at the first one's marker) would read as made
/// knowing the second, and the audit would call them violations.
#[test]
fn s4_3_cli_decide_records_a_revocation_at_the_next_marker() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (agent, _) = setup(d);
    ok(d, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    issue(d, &agent, "read", "07", "other.jcp");
    ok(d, &["grant", "revoke", "--grant", "other.jcp", "--key", "issuer.key", "--out", "other.rev"]);
    ok(d, &["grant", "revoke", "--grant", "root.jcp", "--key", "issuer.key", "--out", "root.rev"]);
    let decide = |chain: &str, revocation: Option<&str>| {
        let mut args =
            vec!["decide", "--chain", chain, "--cost-uj", "1", "--stream", "s.jcps", "--steward-key", "steward.key"];
        if let Some(r) = revocation {
            args.extend(["--revocation", r]);
        }
        jcp(d, &args).status.code()
    };
    assert_eq!(decide("other.jcp", Some("other.rev")), Some(1), "revoked");
    assert_eq!(decide("root.jcp", None), Some(0));
    assert_eq!(decide("root.jcp", None), Some(0));
    assert_eq!(decide("root.jcp", Some("root.rev")), Some(1), "revoked");
    let o = jcp(d, &["audit", "s.jcps", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let revs = v["revocations"].as_array().unwrap();
    let markers: Vec<u64> = revs.iter().map(|r| r["marker"].as_u64().unwrap()).collect();
    assert_eq!(markers, vec![1, 2], "{v}");
    assert_eq!(revs[1]["allows"]["explicable"], 2, "{v}");
    assert_eq!(revs[1]["allows"]["violation"], 0, "{v}");
    assert!(v["findings_by_code"].get("revocation-violation").is_none(), "{v}");
}

/// §4.5: "each point then enforces only its own shard". A shard minted for
/// point A (`SUBJECT=µJ@POINT`) is decided at A and refused at B
/// (`caveat-unsatisfied`, PointIs), so one shard is never spent at two
/// points; a second sharding of the same parent is refused at a point
/// whose first shard is live; and the audit of both points is clean.
#[test]
fn c11_s4_5_cli_a_shard_is_spent_only_at_its_point_and_the_parent_is_not_resharded_there() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (agent, worker) = setup(d);
    let (pa, pb) = (kp_did(d, "pa.key", "0a"), kp_did(d, "pb.key", "0b"));
    let shard = |slices: &[String], out: &str| {
        let mut args = vec!["grant", "shard", "--parent", "root.jcp", "--key", "agent.key", "--out-dir", out, "--json"];
        for sl in slices {
            args.extend(["--slice", sl]);
        }
        let v: serde_json::Value = serde_json::from_str(&ok(d, &args)).unwrap();
        v
    };
    let v = shard(&[format!("{worker}=600@{pa}"), format!("{worker}=400@{pb}")], "first");
    assert_eq!(v["shards"][0]["point"], pa.as_str(), "{v}");
    // Two slices bound to one point are refused at mint.
    let o = jcp(
        d,
        &[
            "grant",
            "shard",
            "--parent",
            "root.jcp",
            "--key",
            "agent.key",
            "--out-dir",
            "x",
            "--slice",
            &format!("{worker}=1@{pa}"),
            "--slice",
            &format!("{agent}=1@{pa}"),
        ],
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard-invalid"), "{}", String::from_utf8_lossy(&o.stderr));
    let decide = |shard: &str, key: &str, stream: &str| {
        let o = jcp(
            d,
            &[
                "decide",
                "--chain",
                "root.jcp",
                shard,
                "--caller",
                &worker,
                "--action",
                "read",
                "--cost-uj",
                "10",
                "--stream",
                stream,
                "--steward-key",
                key,
                "--json",
            ],
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        v["decision"]["verdict"].clone()
    };
    assert_eq!(decide("first/shard-0.jcp", "pa.key", "a.jcps")["verdict"], "allow");
    let at_b = decide("first/shard-0.jcp", "pb.key", "b.jcps");
    assert_eq!(at_b["reason"], "caveat-unsatisfied", "{at_b}");
    assert_eq!(decide("first/shard-1.jcp", "pb.key", "b.jcps")["verdict"], "allow");
    // Re-sharding the parent hands A a second shard: refused while the first is live.
    shard(&[format!("{worker}=600@{pa}"), format!("{worker}=400@{pb}")], "second");
    let again = decide("second/shard-0.jcp", "pa.key", "a.jcps");
    assert_eq!(again["reason"], "attenuation-violation", "{again}");
    let o = jcp(d, &["audit", "a.jcps", "b.jcps", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for code in ["shard-wrong-point", "shard-overcommitted"] {
        assert!(v["findings_by_code"].get(code).is_none(), "{v}");
    }
}
