//! `jcp audit` and `jcp stream` end to end: exit codes (0 clean, 1 findings,
//! 2 unreadable), JSON output, and §4.11's single writer tested with two
//! real processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

fn jcp() -> Command {
    Command::new(env!("CARGO_BIN_EXE_jcp"))
}

fn demo(path: &Path, extra: &[&str]) {
    let out =
        jcp().args(["stream", "demo"]).arg(path).args(["--fast", "--receipts", "120"]).args(extra).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn s8_2_audit_of_a_clean_stream_exits_0_and_prints_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("clean.jcps");
    demo(&p, &[]);
    let out = jcp().arg("audit").arg(&p).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("CLEAN"));
    assert!(text.contains("floor ppm"));
}

#[test]
fn s8_2_audit_json_names_each_failure_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jcps");
    demo(&p, &["--tamper", "2", "--unresolved", "1"]);
    let out = jcp().arg("audit").arg(&p).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["receipts"]["total"], 120);
    assert_eq!(v["receipts"]["failed_by_reason"]["bad-signature"], 2);
    assert_eq!(v["unresolved_total"], 1);
    assert_eq!(v["clean"], false);
    // §5.5: the exact floor 1_000_000 / budget ppm, in lowest terms, and what it rests on.
    for g in v["grants"].as_array().unwrap() {
        let c = &g["conservation"];
        let (num, den) =
            (c["floor_ppm_fraction"]["num"].as_u64().unwrap(), c["floor_ppm_fraction"]["den"].as_u64().unwrap());
        assert_eq!(u128::from(num) * u128::from(c["budget_uj"].as_u64().unwrap()), u128::from(den) * 1_000_000);
        match c["basis"].as_str() {
            Some(b) => assert!(["measured", "modelled"].contains(&b) && c["unstated"] == serde_json::json!([])),
            None => assert_eq!((c["spent_uj"].as_u64(), &c["unstated"]), (Some(0), &serde_json::json!(["no-debits"]))),
        }
    }
}

#[test]
fn s8_2_stream_show_opens_what_each_finding_names() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jcps");
    demo(&p, &["--tamper", "2", "--unresolved", "1"]);
    let out = jcp().arg("audit").arg(&p).arg("--json").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for f in v["findings"].as_array().unwrap() {
        let at = f["offset"].as_u64().unwrap().to_string();
        let out = jcp().args(["stream", "show"]).arg(&p).args(["--at", &at, "--json"]).output().unwrap();
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["offset"], f["offset"]);
        if f["code"] == "bad-signature" {
            // Refused alone as the audit refused it (exit 1), the code said once.
            assert_eq!(out.status.code(), Some(1));
            assert_eq!(r["check"]["state"], "refused");
            assert_eq!(r["check"]["code"], "bad-signature");
            assert!(!r["check"]["message"].as_str().unwrap().starts_with("bad-signature"), "{r}");
        }
    }
    // The unresolved decision's receipt, by the id the audit names: verified (exit 0).
    let id = v["unresolved"][0]["receipt"].as_str().unwrap();
    let out = jcp().args(["stream", "show"]).arg(&p).args(["--id", id]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("receipt #") && text.contains(id) && text.contains("verified"), "{text}");
    // Nothing at an offset inside a record: exit 2, the records around it named.
    let out = jcp().args(["stream", "show"]).arg(&p).args(["--at", "9"]).env("JCP_JSON_ERRORS", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-record-at") && err.contains("records start at 8 and"), "{err}");
    let out = jcp().args(["stream", "show"]).arg(&p).args(["--id", "xyz"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn s8_1_audit_of_an_unreadable_file_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("junk");
    std::fs::write(&p, b"junk").unwrap();
    let out = jcp().arg("audit").arg(&p).env("JCP_JSON_ERRORS", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not-a-stream"), "{err}");
    let out = jcp().arg("audit").arg(dir.path().join("missing")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn c5_audit_with_another_expected_steward_fails_every_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    demo(&p, &[]);
    let other = "did:key:z6MkgKA7yrw5kYSiDuQFcye4bMaJpcfHFry3Bx45pdWh3s8i";
    let out = jcp().arg("audit").arg(&p).args(["--json", "--steward", other]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["receipts"]["verified"], 0);
    assert_eq!(v["receipts"]["failed_by_reason"]["wrong-steward"], 120);
}

#[test]
fn s4_11_one_writer_two_processes_second_fails_and_restart_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.jcps");
    demo(&p, &[]);
    // Process 1 takes the writer lock and holds it.
    let mut first = jcp().args(["stream", "hold"]).arg(&p).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(first.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("holding"), "{line}");
    // Process 2 must fail to start, with a clear message.
    let second = jcp().args(["stream", "replay"]).arg(&p).env("JCP_JSON_ERRORS", "1").output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("stream-locked") && err.contains("another writer"), "{err}");
    // Process 1 dies (SIGKILL: no cleanup); the OS releases its claim.
    first.kill().unwrap();
    first.wait().unwrap();
    let third = jcp().args(["stream", "replay"]).arg(&p).arg("--json").output().unwrap();
    assert_eq!(third.status.code(), Some(0), "{}", String::from_utf8_lossy(&third.stderr));
    let v: serde_json::Value = serde_json::from_slice(&third.stdout).unwrap();
    assert_eq!(v["verified"], 120);
}

#[test]
fn s8_1_replay_after_a_crash_cuts_the_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.jcps");
    demo(&p, &[]);
    let len = std::fs::metadata(&p).unwrap().len();
    let mut b = std::fs::read(&p).unwrap();
    b.extend_from_slice(b"JRec\x01\x00\x00\x01\x00partial");
    std::fs::write(&p, b).unwrap();
    let audit = jcp().arg("audit").arg(&p).arg("--json").output().unwrap();
    assert_eq!(audit.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(v["streams"][0]["torn_tail_at"], len);
    let out = jcp().args(["stream", "replay"]).arg(&p).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a torn tail is reported");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["torn_cut"]["offset"], len);
    assert_eq!(std::fs::metadata(&p).unwrap().len(), len);
    assert_eq!(jcp().arg("audit").arg(&p).output().unwrap().status.code(), Some(0));
}

fn audit_json(p: &Path) -> serde_json::Value {
    let out = jcp().arg("audit").arg(p).arg("--json").output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn s4_11_an_operator_settles_an_unresolved_decision_with_a_signed_note_and_energy_stays_debited() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("u.jcps");
    demo(&p, &["--unresolved", "2"]);
    let key = dir.path().join("op.key");
    assert!(jcp().args(["key", "new", "--out"]).arg(&key).output().unwrap().status.success());
    let before = audit_json(&p);
    assert_eq!(before["unresolved_total"], 2, "{before}");
    let spent_before = before["grants"].clone();
    let first = before["unresolved"][0].clone();
    let receipt = first["receipt"].as_str().unwrap();
    let settle = |r: &str, status: &str| {
        jcp()
            .args(["stream", "settle"])
            .arg(&p)
            .args([
                "--receipt",
                r,
                "--status",
                status,
                "--note",
                "host lost mid-write; nothing committed",
                "--json",
                "--key",
            ])
            .arg(&key)
            .output()
            .unwrap()
    };
    let out = settle(receipt, "failed");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["status"].as_str(), v["holder"].as_str()), (Some("failed"), first["holder"].as_str()), "{v}");
    let after = audit_json(&p);
    assert_eq!(after["unresolved_total"], 2, "the decision stays unresolved in the record: {after}");
    assert_eq!(after["unresolved_settled"], 1);
    assert_eq!(after["unresolved"][0]["settled"]["status"], "failed");
    assert_eq!(after["unresolved"][0]["settled"]["text"], "host lost mid-write; nothing committed");
    assert_eq!(after["grants"], spent_before, "energy stays debited either way");
    assert!(!after["unresolved"][1]["settled"].is_object());
    // Once: a second settlement of the same decision is refused; a decision that is not unresolved too.
    let again = settle(receipt, "completed");
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("settle-not-unresolved"));
    let nope = settle(&"ab".repeat(32), "completed");
    assert!(
        String::from_utf8_lossy(&nope.stderr).contains("settle-not-unresolved"),
        "{}",
        String::from_utf8_lossy(&nope.stderr)
    );
    // A forged note beside the stream is refused and counted, never shown as a settlement.
    let notes = jcp_receipt::settle::notes_dir(&p);
    let good = std::fs::read_dir(&notes).unwrap().next().unwrap().unwrap().path();
    let mut forged = std::fs::read(&good).unwrap();
    let i = forged.windows(4).position(|w| w == b"host").unwrap();
    forged[i] = b'H';
    std::fs::write(notes.join("forged.jcp"), forged).unwrap();
    let v = audit_json(&p);
    assert_eq!((v["unresolved_settled"].as_u64(), v["settlement_notes_refused"].as_u64()), (Some(1), Some(1)), "{v}");
}

#[test]
fn s8_2_audit_reference_gives_the_same_json_and_exit_code_as_the_fast_audit() {
    // A tampered stream with an unresolved decision and a torn tail, audited
    // with a clean one: `--reference` prints the fast audit's JSON byte for
    // byte and exits as it does (1, findings); clean alone, 0 both ways; an
    // unreadable stream, 2 both ways.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jcps"), dir.path().join("b.jcps"));
    demo(&a, &["--tamper", "2", "--unresolved", "1"]);
    demo(&b, &[]);
    let len = std::fs::metadata(&a).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&a).unwrap().set_len(len - 5).unwrap();
    let run = |extra: &[&str], streams: &[&Path]| {
        let out = jcp().arg("audit").args(streams).arg("--json").args(extra).output().unwrap();
        (out.status.code(), out.stdout)
    };
    let fast = run(&[], &[&a, &b]);
    let reference = run(&["--reference"], &[&a, &b]);
    assert_eq!(fast.0, Some(1));
    assert!(!fast.1.is_empty());
    assert_eq!(String::from_utf8(reference.1).unwrap(), String::from_utf8(fast.1).unwrap());
    assert_eq!(reference.0, fast.0);
    assert_eq!(run(&["--reference"], &[&b]), run(&[], &[&b]));
    assert_eq!(run(&["--reference"], &[&b]).0, Some(0));
    let not = dir.path().join("not.jcps");
    std::fs::write(&not, b"not a stream").unwrap();
    assert_eq!(run(&["--reference"], &[&not]).0, Some(2));
    // A reference audit writes no partial.
    let out =
        jcp().arg("audit").arg(&b).args(["--reference", "--partial"]).arg(dir.path().join("p.json")).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}
