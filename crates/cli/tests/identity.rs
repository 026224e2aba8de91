//! `jcp identity` (spec §2.1, C12): new, rotate, verify, show and `jcp
//! inspect` of a key log, with the exit codes 0 clean / 1 refused /
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

/// `jcp identity rotate --log id.jcpkeys --key KEY --next-key NEXT --json EXTRA…`.
fn rotate(d: &Path, key: &str, next_key: &str, extra: &[&str]) -> Output {
    let mut args = vec!["identity", "rotate", "--log", "id.jcpkeys", "--key", key, "--next-key", next_key, "--json"];
    args.extend_from_slice(extra);
    jcp(d, &args)
}

fn ok_out(o: Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

fn did_of(dir: &Path, key: &str) -> String {
    let o = jcp(dir, &["key", "show", key]);
    String::from_utf8(o.stdout).unwrap().trim().to_owned()
}

fn new_identity(d: &Path) -> serde_json::Value {
    ok(
        d,
        &[
            "identity",
            "new",
            "--log",
            "id.jcpkeys",
            "--key",
            "k0.key",
            "--next-key",
            "k1.key",
            "--seed",
            &"21".repeat(32),
            "--next-seed",
            &"22".repeat(32),
            "--nonce",
            &"31".repeat(16),
            "--json",
        ],
    )
}

#[test]
fn c12_cli_new_rotate_verify_keeps_the_identity_and_moves_control_to_the_pre_committed_key() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let inception = new_identity(d);
    let identity = did_of(d, "k0.key");
    assert_eq!(inception["state"]["identity"], identity);
    assert_eq!(inception["state"]["current"], identity);
    assert_eq!(inception["state"]["seq"], 0);
    let rotated = ok_out(rotate(d, "k1.key", "k2.key", &[]));
    assert_eq!(rotated["state"]["identity"], identity, "the identity DID is stable across rotations");
    assert_eq!(rotated["state"]["current"], did_of(d, "k1.key"));
    assert_eq!(rotated["state"]["seq"], 1);
    ok_out(rotate(d, "k2.key", "k3.key", &[]));
    let verified = ok(d, &["identity", "verify", "id.jcpkeys", "--json"]);
    assert_eq!(verified["verified"], true);
    assert_eq!(verified["state"]["identity"], identity);
    assert_eq!(verified["state"]["current"], did_of(d, "k2.key"));
    assert_eq!(verified["state"]["seq"], 2);
    let show = ok(d, &["identity", "show", "id.jcpkeys", "--json"]);
    assert_eq!(show["events"].as_array().unwrap().len(), 3);
    assert_eq!(show["events"][2]["event"]["parent"], show["events"][1]["id"]);
    // The same log through `jcp inspect`.
    let inspected = ok(d, &["inspect", "id.jcpkeys", "--json"]);
    assert_eq!(inspected["type"], "key-log");
    assert_eq!(inspected["state"]["current"], did_of(d, "k2.key"));
    let text = String::from_utf8(jcp(d, &["inspect", "id.jcpkeys"]).stdout).unwrap();
    assert!(text.contains("verified") && text.contains(&identity), "{text}");
}

#[test]
fn c12_cli_a_thief_with_the_current_key_cannot_rotate_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    new_identity(d);
    let before = std::fs::read(d.join("id.jcpkeys")).unwrap();
    let o = rotate(d, "k0.key", "thief.key", &[]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["refused"]["code"], "rotation-hash-mismatch");
    assert_eq!(std::fs::read(d.join("id.jcpkeys")).unwrap(), before, "the log is unchanged");
    assert!(!d.join("thief.key").exists(), "no next key is written for a refused rotation");
}

#[test]
fn c12_cli_verify_refuses_a_tampered_log_with_exit_1_and_an_unreadable_one_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    new_identity(d);
    let nonce = "ab".repeat(16);
    ok_out(rotate(d, "k1.key", "k2.key", &["--nonce", &nonce]));
    let mut bytes = std::fs::read(d.join("id.jcpkeys")).unwrap();
    let n = bytes.len();
    // Tamper with the signed content of the rotation (its nonce): it still
    // decodes, and its signature no longer verifies.
    let at = bytes.windows(16).position(|w| w == [0xab; 16]).unwrap();
    bytes[at] ^= 1;
    std::fs::write(d.join("bad.jcpkeys"), &bytes).unwrap();
    let o = jcp(d, &["identity", "verify", "bad.jcpkeys", "--json"]);
    assert_eq!(code(&o), 1);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["refused"]["code"], "bad-signature");
    assert_eq!(code(&jcp(d, &["inspect", "bad.jcpkeys"])), 1);
    std::fs::write(d.join("cut.jcpkeys"), &bytes[..n / 2]).unwrap();
    let o = jcp(d, &["identity", "verify", "cut.jcpkeys"]);
    assert_eq!(code(&o), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("[cbor-"), "{}", String::from_utf8_lossy(&o.stderr));
}
