//! The enforcement point across processes: `jcp serve`, `jcp call`,
//! `jcp feed` (§11, §4.3, §4.11, C8, C13).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/cli.rs"]
mod cli;
use cli::{jcp, keys_and_root, ok};

fn setup(dir: &Path) {
    keys_and_root(dir, "text:search", "read", "1000");
}

/// A `jcp serve` child, killed when dropped.
struct Server {
    child: Child,
    addr: String,
    /// What it prints after its address, read until it exits.
    rest: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl Server {
    fn start(dir: &Path, listen: &str) -> Self {
        Self::start_with(dir, listen, &["--stream", "s.jcps"])
    }

    /// With other flags than the default stream (`--stream` among them).
    fn start_with(dir: &Path, listen: &str, flags: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jcp"))
            .current_dir(dir)
            .args(["serve", "--listen", listen, "--steward-key", "steward.key", "--plaintext-key"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut addr = None;
        let mut line = String::new();
        while addr.is_none() && Instant::now() < deadline {
            line.clear();
            if out.read_line(&mut line).unwrap() == 0 {
                break;
            }
            if let Some(a) = line.trim().strip_prefix("jcp serve: listening on ") {
                addr = Some(a.to_owned());
            }
        }
        // Keep draining stdout so the child never blocks on a full pipe.
        let rest = std::thread::spawn(move || out.lines().map_while(Result::ok).collect());
        let addr = addr.unwrap_or_else(|| panic!("jcp serve did not start: {:?}", child.try_wait()));
        Self { child, addr, rest: Some(rest) }
    }

    fn sigkill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Its exit status and the lines it printed after its address.
    fn sigterm(mut self) -> (std::process::ExitStatus, Vec<String>) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                let printed = self.rest.take().map(|t| t.join().unwrap()).unwrap_or_default();
                return (st, printed);
            }
            assert!(Instant::now() < deadline, "jcp serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(dir: &Path, args: &[&str]) -> (i32, serde_json::Value) {
    let o = jcp(dir, args);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o.status.code().unwrap_or(-1), v)
}

#[test]
fn c08_decided_once_across_a_sigkill_and_restart_of_jcp_serve() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    let s = Server::start(d, "tcp:127.0.0.1:0");
    let (code, first) = call(
        d,
        &[
            "call",
            "--connect",
            &s.addr,
            "--key",
            "agent.key",
            "--chain",
            "root.jcp",
            "--cost-uj",
            "700",
            "--save-request",
            "r1.bin",
            "--receipt-out",
            "r1.jcr",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{first}");
    assert_eq!(first["verdict"], "allow");
    assert_eq!(first["budget_remaining_uj"], 300);
    s.sigkill();
    // A fresh process replays the record before answering anything.
    let s = Server::start(d, "unix:ep.sock");
    let (code, again) = call(d, &["call", "--connect", &s.addr, "--request", "r1.bin", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(again, first, "the same response, the same receipt, after SIGKILL + restart");
    // Not debited twice: a new 400 µJ request does not fit.
    std::thread::sleep(Duration::from_millis(1100));
    let (code, next) = call(
        d,
        &["call", "--connect", &s.addr, "--key", "agent.key", "--chain", "root.jcp", "--cost-uj", "400", "--json"],
    );
    assert_eq!(code, 1, "{next}");
    assert_eq!(next["reason"], "budget-exceeded");
    // A second endpoint on the same record is refused while this one holds it.
    let o = jcp(
        d,
        &[
            "serve",
            "--listen",
            "tcp:127.0.0.1:0",
            "--stream",
            "s.jcps",
            "--steward-key",
            "steward.key",
            "--plaintext-key",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("stream-locked"), "{}", String::from_utf8_lossy(&o.stderr));
    // SIGTERM: a clean stop, the socket file removed, the record released.
    let (st, printed) = s.sigterm();
    assert!(st.success(), "{st:?}");
    // The allow replayed from the first process never had its outcome reported.
    let stop = printed.iter().find(|l| l.starts_with("jcp serve: stopped")).unwrap_or_else(|| panic!("{printed:?}"));
    assert!(
        stop.contains("1 decided, 0 allowed, 1 repeats") && stop.contains("1 allows await their outcome"),
        "{stop}"
    );
    // §4.11: at start the endpoint named that unresolved decision and who held it.
    let agent = ok(d, &["key", "show", "agent.key"]).trim().to_owned();
    let named: Vec<&String> = printed.iter().filter(|l| l.starts_with("jcp serve: unresolved: receipt ")).collect();
    assert_eq!(named.len(), 1, "{printed:?}");
    assert!(named[0].contains(&format!("held by {agent}")) && named[0].contains("700 µJ"), "{}", named[0]);
    assert!(!d.join("ep.sock").exists());
    let audit = jcp(d, &["audit", "s.jcps", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(v["receipts"]["verified"], 2, "{v}");
    assert_eq!(v["receipts"]["wire_requests"], 2, "{v}");
    assert!(v["findings_by_code"].get("record-kind-unaudited").is_none(), "{v}");
}

#[test]
fn c06_cli_revocation_over_the_wire_and_stale_and_impersonated_requests_are_sealed() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    ok(d, &["key", "new", "--out", "thief.key", "--seed", &"66".repeat(32)]);
    ok(d, &["key", "new", "--out", "feed.key", "--seed", &"67".repeat(32)]);
    let feed = ok(d, &["key", "show", "feed.key"]).trim().to_owned();
    let s =
        Server::start_with(d, "tcp:127.0.0.1:0", &["--stream", "s.jcps", "--known-through", "0", "--feed-key", &feed]);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let stale = (now - 120).to_string();
    let (code, v) = call(
        d,
        &[
            "call",
            "--connect",
            &s.addr,
            "--key",
            "agent.key",
            "--chain",
            "root.jcp",
            "--cost-uj",
            "1",
            "--now",
            &stale,
            "--json",
        ],
    );
    assert_eq!((code, v["reason"].as_str()), (1, Some("stale-request")), "{v}");
    // The thief holds the grant file but not the agent's key.
    let (code, v) = call(
        d,
        &["call", "--connect", &s.addr, "--key", "thief.key", "--chain", "root.jcp", "--cost-uj", "1", "--json"],
    );
    assert_eq!((code, v["reason"].as_str()), (1, Some("wrong-subject")), "{v}");
    ok(d, &["grant", "revoke", "--grant", "root.jcp", "--key", "issuer.key", "--out", "rev.jcp"]);
    let revoke =
        ["feed", "revoke", "--connect", &s.addr, "--revocation", "rev.jcp", "--grant", "root.jcp", "--marker", "5"];
    // §4.3: over TCP an unsigned feed is refused (its marker no signature covers) and moves nothing.
    let (code, v) = call(d, &[&revoke[..], &["--json"]].concat());
    assert_eq!(
        (code, v["code"].as_str(), v["admitted"].as_bool()),
        (1, Some("feed-unauthenticated"), Some(false)),
        "{v}"
    );
    // Signed by the endpoint's feed key, it is admitted.
    let (code, v) = call(d, &[&revoke[..], &["--key", "feed.key", "--json"]].concat());
    assert_eq!((code, v["admitted"].as_bool()), (0, Some(true)), "{v}");
    let (code, v) = call(
        d,
        &["call", "--connect", &s.addr, "--key", "agent.key", "--chain", "root.jcp", "--cost-uj", "1", "--json"],
    );
    assert_eq!((code, v["reason"].as_str()), (1, Some("revoked")), "{v}");
    assert_eq!(v["receipt"]["known_through"], 5);
    // No endpoint: exit 2, a transport error.
    let o = jcp(
        d,
        &[
            "call",
            "--connect",
            "unix:/nonexistent/ep.sock",
            "--key",
            "agent.key",
            "--chain",
            "root.jcp",
            "--cost-uj",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    drop(s);
}

/// §4.3 and issue 34: `jcp feed revoke --log` keeps the issuer's own
/// revocation log (the signature the endpoint got), and `jcp audit
/// --revocation-log --log-key` judges the record against it: the point
/// recorded the revocation at the logged marker, so nothing is out of
/// place. A marker that would go back is refused before anything is sent;
/// a log whose marker was changed, or one read without a trusted key, is
/// refused (exit 2).
#[test]
fn s4_3_cli_feed_keeps_the_issuers_log_and_the_audit_judges_by_it() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    ok(d, &["key", "new", "--out", "feed.key", "--seed", &"67".repeat(32)]);
    let feed = ok(d, &["key", "show", "feed.key"]).trim().to_owned();
    let s =
        Server::start_with(d, "tcp:127.0.0.1:0", &["--stream", "s.jcps", "--known-through", "0", "--feed-key", &feed]);
    let (code, v) = call(
        d,
        &["call", "--connect", &s.addr, "--key", "agent.key", "--chain", "root.jcp", "--cost-uj", "1", "--json"],
    );
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    ok(d, &["grant", "revoke", "--grant", "root.jcp", "--key", "issuer.key", "--out", "rev.jcp"]);
    let revoke = ["feed", "revoke", "--connect", &s.addr, "--revocation", "rev.jcp", "--grant", "root.jcp"];
    let (code, v) =
        call(d, &[&revoke[..], &["--marker", "7", "--key", "feed.key", "--log", "issuer.log", "--json"]].concat());
    assert_eq!((code, v["admitted"].as_bool()), (0, Some(true)), "{v}");
    let log = std::fs::read_to_string(d.join("issuer.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "the header and the entry: {log}");
    assert!(log.starts_with("{\"format\":\"jcp-revocation-log/1\"}"));
    // A marker that would go back is refused, and nothing is sent or logged.
    let o = jcp(d, &[&revoke[..], &["--marker", "3", "--key", "feed.key", "--log", "issuer.log"]].concat());
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("revocation-log-invalid"));
    assert_eq!(std::fs::read_to_string(d.join("issuer.log")).unwrap(), log);
    let _ = s.sigterm();
    let audit = ["audit", "s.jcps", "--json", "--revocation-log", "issuer.log", "--log-key", &feed];
    let (code, v) = call(d, &audit);
    // `jcp call` reports no outcome: its allow is unresolved (§4.11), the only finding.
    assert_eq!(
        (code, v["findings_by_code"].as_object().map(|m| m.keys().cloned().collect::<Vec<_>>())),
        (1, Some(vec!["unresolved-decision".to_owned()])),
        "{v}"
    );
    let rv = &v["revocations"][0];
    assert_eq!((rv["marker"].as_u64(), rv["log_marker"].as_u64()), (Some(7), Some(7)), "{v}");
    assert!(v["findings_by_code"].get("revocation-marker-mismatch").is_none(), "{v}");
    // The same log with its marker changed no longer verifies.
    std::fs::write(d.join("moved.log"), log.replace("\"marker\":7", "\"marker\":70")).unwrap();
    let o = jcp(d, &["audit", "s.jcps", "--revocation-log", "moved.log", "--log-key", &feed]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("revocation-log-invalid") && err.contains("line 2"), "{err}");
    // A log is read only with the key its markers are trusted under.
    let o = jcp(d, &["audit", "s.jcps", "--revocation-log", "issuer.log"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}

/// Owner-only, as `jcp key new` writes key files.
fn private(p: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = p;
}

/// §2 (keys at rest): a plain key others can read is a seed in the clear;
/// every signing command refuses it, naming the file and the mode.
#[cfg(unix)]
#[test]
fn s2_a_plain_key_others_can_read_is_refused_by_every_signing_command() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    std::fs::set_permissions(d.join("steward.key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = jcp(
        d,
        &[
            "serve",
            "--listen",
            "tcp:127.0.0.1:0",
            "--stream",
            "s.jcps",
            "--steward-key",
            "steward.key",
            "--plaintext-key",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("key-permissions") && err.contains("steward.key") && err.contains("644"), "{err}");
    assert!(!d.join("s.jcps").exists(), "nothing was opened");
}

/// Issue 34, "Keys at rest": the key that seals an enforcement point's
/// record is encrypted at rest by default; `jcp serve` refuses a plaintext
/// one (`key-plaintext`, naming the file and both ways out) unless the
/// operator says so with `--plaintext-key`.
#[test]
fn s2_serve_refuses_a_plaintext_steward_key_unless_told() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    let o = jcp(d, &["serve", "--listen", "tcp:127.0.0.1:0", "--stream", "s.jcps", "--steward-key", "steward.key"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("key-plaintext") && err.contains("steward.key") && err.contains("--plaintext-key"), "{err}");
    assert!(!d.join("s.jcps").exists(), "nothing was opened");
}

#[test]
fn s2_an_encrypted_steward_key_serves_and_its_refusals_name_the_file() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    // Passphrase files are owner-only, like keys: a readable one is refused, naming it.
    std::fs::write(d.join("pass"), "open sesame\n").unwrap();
    let o = jcp(d, &["key", "new", "--out", "enc.key", "--passphrase-file", "pass"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code() == Some(2) && err.contains("key-permissions") && err.contains("pass"), "{err}");
    assert!(!d.join("enc.key").exists());
    private(&d.join("pass"));
    std::fs::write(d.join("wrong"), "open barley\n").unwrap();
    private(&d.join("wrong"));
    let out = ok(d, &["key", "new", "--out", "enc.key", "--passphrase-file", "pass", "--work-factor", "15", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["encrypted"], true);
    // The did is shown while locked.
    assert_eq!(ok(d, &["key", "show", "enc.key"]).trim(), v["did"].as_str().unwrap());
    // Locked: no passphrase file given.
    let o = jcp(d, &["serve", "--listen", "tcp:127.0.0.1:0", "--stream", "e.jcps", "--steward-key", "enc.key"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("key-locked"), "{}", String::from_utf8_lossy(&o.stderr));
    // Wrong passphrase: named, exit 2.
    let o = Command::new(env!("CARGO_BIN_EXE_jcp"))
        .current_dir(d)
        .env("JCP_PASSPHRASE_FILE", d.join("wrong"))
        .args(["serve", "--listen", "tcp:127.0.0.1:0", "--stream", "e.jcps", "--steward-key", "enc.key"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("key-wrong-passphrase") && err.contains("enc.key"), "{err}");
    // Unlocked: it seals receipts as that did.
    let mut child = Command::new(env!("CARGO_BIN_EXE_jcp"))
        .current_dir(d)
        .env("JCP_PASSPHRASE_FILE", d.join("pass"))
        .args(["serve", "--listen", "unix:e.sock", "--stream", "e.jcps", "--steward-key", "enc.key"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("listening on unix:e.sock"), "{line}");
    let (code, r) = call(
        d,
        &["call", "--connect", "unix:e.sock", "--key", "agent.key", "--chain", "root.jcp", "--cost-uj", "5", "--json"],
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["receipt"]["steward"], v["did"]);
}

#[test]
fn c17_cli_two_served_points_settle_by_signed_statement_and_the_overdraft_is_proved() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    ok(d, &["key", "new", "--out", "a.key", "--seed", &"31".repeat(32)]);
    ok(d, &["key", "new", "--out", "b.key", "--seed", &"32".repeat(32)]);
    let pa = ok(d, &["key", "show", "a.key"]).trim().to_owned();
    let pb = ok(d, &["key", "show", "b.key"]).trim().to_owned();
    let a = Server::start_with(
        d,
        "tcp:127.0.0.1:0",
        &["--stream", "a.jcps", "--channel-grant", "root.jcp", "--point-key", "a.key", "--peer", &pb],
    );
    let b = Server::start_with(
        d,
        "tcp:127.0.0.1:0",
        &["--stream", "b.jcps", "--channel-grant", "root.jcp", "--point-key", "b.key", "--peer", &pa],
    );
    for s in [&a, &b] {
        let (code, v) = call(
            d,
            &["call", "--connect", &s.addr, "--key", "agent.key", "--chain", "root.jcp", "--cost-uj", "600", "--json"],
        );
        assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    }
    ok(d, &["feed", "ask-statement", "--connect", &a.addr, "--grant", "root.jcp", "--out", "a.st"]);
    ok(d, &["feed", "ask-statement", "--connect", &b.addr, "--grant", "root.jcp", "--out", "b.st"]);
    let (code, v) = call(d, &["feed", "statement", "--connect", &b.addr, "--statement", "a.st", "--json"]);
    assert_eq!((code, v["code"].as_str()), (0, Some("admitted")), "{v}");
    let (code, v) = call(d, &["feed", "statement", "--connect", &a.addr, "--statement", "b.st", "--json"]);
    assert_eq!((code, v["code"].as_str()), (0, Some("admitted")), "{v}");
    for s in [&a, &b] {
        let (code, v) = call(
            d,
            &["call", "--connect", &s.addr, "--key", "agent.key", "--chain", "root.jcp", "--cost-uj", "1", "--json"],
        );
        assert_eq!((code, v["reason"].as_str()), (1, Some("budget-exceeded")), "{v}");
    }
    // The same statement again is stale: refused over the wire, exit 1.
    let (code, v) = call(d, &["feed", "statement", "--connect", &b.addr, "--statement", "a.st", "--json"]);
    assert_eq!((code, v["code"].as_str()), (1, Some("statement-stale")), "{v}");
    let (code, v) = call(
        d,
        &[
            "channel",
            "audit",
            "--grant",
            "root.jcp",
            "--member",
            &pa,
            "--member",
            &pb,
            "a.st",
            "b.st",
            "--proof-out",
            "over.proof",
            "--json",
        ],
    );
    assert_eq!((code, v["report"]["overdraft"]["overdraft_uj"].as_u64()), (1, Some(200)), "{v}");
    assert_eq!(jcp(d, &["channel", "verify", "over.proof"]).status.code(), Some(0));
    assert!(a.sigterm().0.success());
    assert!(b.sigterm().0.success());
    // Each record audits with its channel statements counted, no unaudited kind.
    let v: serde_json::Value = serde_json::from_slice(&jcp(d, &["audit", "b.jcps", "--json"]).stdout).unwrap();
    assert_eq!(v["receipts"]["channel_statements"], 2, "{v}");
    assert!(v["findings_by_code"].get("record-kind-unaudited").is_none(), "{v}");
}

#[test]
fn c13_cli_serve_checks_callers_in_batches_unless_told_strict_signatures() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    for (flags, mode) in
        [(&["--stream", "b.jcps"][..], "batched"), (&["--stream", "s.jcps", "--strict-signatures"][..], "strict")]
    {
        let s = Server::start_with(d, "tcp:127.0.0.1:0", flags);
        let (code, v) = call(
            d,
            &["call", "--connect", &s.addr, "--key", "agent.key", "--chain", "root.jcp", "--cost-uj", "1", "--json"],
        );
        assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{mode}: {v}");
        let (status, printed) = s.sigterm();
        assert!(status.success(), "{mode}: {printed:?}");
        let said = format!("jcp serve: callers' signatures checked {mode}");
        assert!(printed.iter().any(|l| l.trim() == said), "{mode}: {printed:?}");
    }
}

/// `jcp serve` on an ephemeral port with the test's plain steward key and record.
const SERVE: [&str; 8] =
    ["serve", "--listen", "tcp:127.0.0.1:0", "--steward-key", "steward.key", "--plaintext-key", "--stream", "s.jcps"];

#[test]
fn s11_cli_serve_refuses_a_cap_above_what_one_record_holds() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let over = (jcp_wire::codec::MAX_ENDPOINT_CAP + 1).to_string();
    let o = jcp(dir.path(), &[&SERVE[..], &["--cap", &over]].concat());
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cap-above-record"), "{err}");
    assert!(!dir.path().join("s.jcps").exists(), "no record is opened");
}

/// Issue 34: the record's high-water mark must be below its limit, and a
/// byte count is digits with K, M or G; either mistake is refused before a
/// record is opened.
#[test]
fn s11_cli_serve_refuses_record_limits_that_make_no_sense() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let o = jcp(dir.path(), &[&SERVE[..], &["--record-high-water", "1M", "--record-max-bytes", "512K"]].concat());
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad-limits") && err.contains("1048576") && err.contains("524288"), "{err}");
    let o = jcp(dir.path(), &[&SERVE[..], &["--record-max-bytes", "12X"]].concat());
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a byte count"));
    assert!(!dir.path().join("s.jcps").exists(), "no record is opened");
}

/// §5, §11: what the new user tried. A `HwShunt` cost without its
/// measured figure is refused before anything is sent (`energy-unmeasured`);
/// with `--measured-uj` it is allowed and sealed, and `jcp audit` calls its
/// basis measured only then. A bare hardware label never audits measured.
#[test]
fn s5_cli_a_hardware_grade_needs_its_reading_and_only_a_reading_audits_measured() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    setup(d);
    let s = Server::start(d, "tcp:127.0.0.1:0");
    let base = ["call", "--connect", &s.addr, "--key", "agent.key", "--chain", "root.jcp", "--json"];
    let with = |extra: &[&'static str]| -> Vec<String> { base.iter().chain(extra).map(|x| (*x).to_owned()).collect() };
    let jcp = |d: &Path, args: &[String]| jcp(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let call = |d: &Path, args: &[String]| call(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let o = jcp(d, &with(&["--cost-uj", "5", "--provenance", "HwShunt"]));
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("energy-unmeasured"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = jcp(d, &with(&["--cost-uj", "5", "--provenance", "Estimator", "--measured-uj", "5"]));
    assert!(String::from_utf8_lossy(&o.stderr).contains("energy-measured-estimate"), "{o:?}");
    let (code, v) = call(d, &with(&["--cost-uj", "5", "--provenance", "HwShunt", "--measured-uj", "5"]));
    assert_eq!((code, &v["verdict"]), (0, &serde_json::json!("allow")), "{v}");
    drop(s);
    let audit = jcp(d, &["audit".to_owned(), "s.jcps".to_owned(), "--json".to_owned()]);
    let v: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let g = v["grants"].as_array().unwrap().iter().find(|g| g["spent_uj"] == 5).unwrap_or_else(|| panic!("{v}"));
    assert_eq!(g["conservation"]["basis"], "measured", "{g}");
    assert_eq!(g["conservation"]["measured_uj"], 5, "{g}");
}

/// §11 (availability of the point): `jcp serve` raises its open-file limit
/// to the hard one and fits its connection cap under it, keeping
/// descriptors aside for `/metrics` and the record, so connections at the
/// cap cannot take what the record needs. Run under a hard limit of 512.
#[cfg(unix)]
#[test]
fn s11_serve_fits_its_connection_cap_under_the_open_file_limit() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "--out", "steward.key"]);
    let jcp = env!("CARGO_BIN_EXE_jcp");
    // A hard limit of 512, or the machine's own if it is lower (a hard limit can only be lowered).
    let hard = Command::new("sh").args(["-c", "ulimit -Hn"]).output().unwrap();
    let hard = String::from_utf8_lossy(&hard.stdout).trim().parse::<u64>().map_or(512, |h| h.min(512));
    let soft = hard / 2;
    let script = format!(
        "ulimit -Sn {soft} && ulimit -Hn {hard} && exec {jcp} serve --listen tcp:127.0.0.1:0 --stream s.jcps --steward-key steward.key --plaintext-key --metrics 127.0.0.1:0 --json"
    );
    let mut child = Command::new("sh")
        .current_dir(d)
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    // Raised from half the hard limit to all of it; 128 kept aside and 2 × 64 for /metrics.
    let max = hard.saturating_sub(128 + 128).max(1);
    assert_eq!(v["connections"], serde_json::json!({"max": max, "open_files": hard}), "{v}");
}
