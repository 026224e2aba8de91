//! The `jcp` binary as the CLI tests run it: a command in a folder and
//! its output, and the keys and root grant most of them start from.
//! Included with `#[path = "support/cli.rs"] mod cli;` (each test crate
//! uses some of it).

#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

/// `jcp ARGS…` run in `dir`, to its end.
pub fn jcp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jcp")).current_dir(dir).args(args).output().unwrap()
}

/// `jcp ARGS…` in `dir`, which must succeed: its standard output.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let o = jcp(dir, args);
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The keys `steward.key` (seed 09…), `issuer.key` (01…) and `agent.key`
/// (02…) in `dir`, and `root.jcp`: the issuer's grant to the agent of
/// `budget_uj` µJ of `actions` on `resource` (nonce 00…).
pub fn keys_and_root(dir: &Path, resource: &str, actions: &str, budget_uj: &str) {
    ok(dir, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    ok(dir, &["key", "new", "--out", "issuer.key", "--seed", &"01".repeat(32)]);
    ok(dir, &["key", "new", "--out", "agent.key", "--seed", &"02".repeat(32)]);
    let agent = ok(dir, &["key", "show", "agent.key"]).trim().to_owned();
    let nonce = "00".repeat(16);
    let grant = ["--key", "issuer.key", "--subject", &agent, "--resource", resource, "--actions", actions];
    let mut args = vec!["grant", "issue"];
    args.extend(grant);
    args.extend(["--budget-uj", budget_uj, "--nonce", &nonce, "--out", "root.jcp"]);
    ok(dir, &args);
}
