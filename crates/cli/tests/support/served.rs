//! A real `jcp serve` and a caller of it, shared by the adversarial suite
//! (`tests/adversarial.rs`) and the flood figures (`benches/floods.rs`),
//! which include this file: keys, a grant under a trust root, the endpoint
//! with `/metrics`, requests signed by the agent, and connections from a
//! chosen loopback address (the endpoint's per-source limits count by it).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use jcp::cbor::ContentId;
use jcp::energy::{Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::SignedGrant;
use jcp::identity::{KeyFile, Keypair};
use jcp_wire::message::{RequestBody, WireRequest};

pub const JCP: &str = env!("CARGO_BIN_EXE_jcp");

/// `jcp serve` with `/metrics`, killed when dropped.
pub struct Serve {
    pub child: Child,
    /// Its wire address (`HOST:PORT`).
    pub tcp: String,
    /// Its `/metrics` address (`HOST:PORT`).
    pub metrics: String,
}

impl Serve {
    /// Started in `dir` (its keys and `s.jcps` there) with `flags` beside the defaults.
    pub fn start(dir: &Path, flags: &[&str]) -> Self {
        let mut child = Command::new(JCP)
            .current_dir(dir)
            .args(["serve", "--listen", "tcp:127.0.0.1:0", "--stream", "s.jcps", "--steward-key", "steward.key"])
            .args(["--plaintext-key", "--metrics", "127.0.0.1:0", "--json"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        std::thread::spawn(move || for _ in out.lines() {});
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("jcp serve: {e}: {line:?}"));
        let tcp = v["listen"][0].as_str().unwrap().trim_start_matches("tcp:").to_owned();
        let metrics =
            v["metrics"].as_str().unwrap().trim_start_matches("http://").trim_end_matches("/metrics").to_owned();
        Self { child, tcp, metrics }
    }

    /// Killed at once, as a crash would.
    pub fn sigkill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(dir: &Path, args: &[&str]) {
    let o = Command::new(JCP).current_dir(dir).args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// The steward's, the issuer's and the agent's keys in `dir`, and a grant
/// of `budget_uj` to the agent (`root.jcp`): the grant, the agent, and the
/// `--trust-root` flag's value that anchors it.
pub fn cast(dir: &Path, budget_uj: u64) -> (SignedGrant, Keypair, Keypair, String) {
    run(dir, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    run(dir, &["key", "new", "--out", "issuer.key", "--seed", &"01".repeat(32)]);
    run(dir, &["key", "new", "--out", "agent.key", "--seed", &"02".repeat(32)]);
    let agent = KeyFile::decode(&std::fs::read(dir.join("agent.key")).unwrap()).unwrap();
    let issuer = KeyFile::decode(&std::fs::read(dir.join("issuer.key")).unwrap()).unwrap();
    let (a, budget) = (agent.did().to_string(), budget_uj.to_string());
    let resource = ["--resource", "text:search", "--actions", "read"];
    run(
        dir,
        &[
            &["grant", "issue", "--key", "issuer.key", "--subject", &a][..],
            &resource,
            &["--budget-uj", &budget, "--out", "root.jcp"],
        ]
        .concat(),
    );
    let g = SignedGrant::from_bytes(&std::fs::read(dir.join("root.jcp")).unwrap()).unwrap();
    let root = format!("text:search={}", issuer.did());
    (g, agent, issuer, root)
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// A request on `g` by `agent` for 1 µJ with the argument `payload`, stamped now.
pub fn request(g: &SignedGrant, agent: &Keypair, payload: &[u8]) -> WireRequest {
    RequestBody {
        frame: Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: g.id(),
            action: "read".into(),
            resource: g.grant().capability.resource,
            payload_hash: ContentId::of_bytes(payload),
            model: None,
        },
        chain: vec![g.clone()],
        cost: Energy::new(1, Provenance::Estimator),
        money: None,
        label: None,
        args: Some(payload.to_vec()),
        continues: None,
        now: now(),
    }
    .sign(agent)
}

/// A TCP connection to `to` from the loopback address `src`.
pub async fn from(src: [u8; 4], to: &str) -> std::io::Result<tokio::net::TcpStream> {
    let s = tokio::net::TcpSocket::new_v4()?;
    s.bind(std::net::SocketAddr::from((src, 0)))?;
    s.connect(to.parse().unwrap()).await
}

/// The `/metrics` page at `addr` (`HOST:PORT`), tried for up to 5 s (a
/// flood of half-sent headers may still hold its connections): the whole
/// `200` answer, or `None`.
pub fn scrape(addr: &str) -> Option<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        if let Ok(mut c) = std::net::TcpStream::connect(addr) {
            let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut text = String::new();
            if c.read_to_string(&mut text).is_ok() && text.starts_with("HTTP/1.1 200") {
                return Some(text);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    None
}
