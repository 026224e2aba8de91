//! A gateway run as the Steward view shows it (IPC types): `jcp gateway`
//! started with `--run` in the workspace's runs folder writes its events
//! beside the run (`<run>.events.jsonl`); each `tools/call` is listed with
//! its tool, intent hash, verdict and the figure the gateway's endpoint
//! metered (§11; Agent-Safe Intent §5, §8). The log is the gateway's
//! account, shown as such: the receipts in its record are what the Auditor
//! verifies, and a line that does not read is counted, never guessed at.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use super::live::{metered_figure, sum_note, MeteredCall};

/// The most calls a view lists (the newest).
pub const GATEWAY_CALLS_KEPT: usize = 200;

/// The most of the log read (its end): a long run's view stays bounded.
pub const GATEWAY_LOG_READ: u64 = 4 << 20;

/// One `tools/call` through the gateway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct GatewayCall {
    /// Its place in the log (1 = the first call).
    #[cfg_attr(test, ts(type = "number"))]
    pub n: u64,
    /// The tool the agent called.
    pub tool: String,
    /// The Agent-Safe action its binding names, when it bound.
    pub action: Option<String>,
    /// The intent hash of its binding, when it bound.
    pub intent_hash: Option<String>,
    /// `allow`, `deny`, or `refused` (before the gate: no binding, or it did not bind).
    pub verdict: String,
    /// The deny's reason or the refusal's code.
    pub reason: Option<String>,
    /// The receipt that decided it, when the gate did.
    pub receipt: Option<String>,
    /// An allowed call's end: `done`, `failed`, or `lost` (unresolved).
    pub state: Option<String>,
    /// Why an allowed call was lost or did not run, as the gateway said it.
    pub why: Option<String>,
    /// The figure the endpoint metered, when it ran.
    pub metered: Option<MeteredCall>,
}

/// A gateway run's log, read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct GatewayView {
    /// The log's path.
    pub log: String,
    /// The upstream server's command line.
    pub upstream: Option<String>,
    /// The agent's client (`clientInfo.name`), once it initialized.
    pub client: Option<String>,
    /// The holder's did (the key the gateway signs with).
    pub holder: Option<String>,
    /// The gateway's record (the stream the Auditor opens), to show.
    pub stream: Option<String>,
    /// Its handle (issue 34): what the Auditor is asked to open; set by the shell.
    pub stream_handle: Option<String>,
    /// Whether the session closed (the client went away).
    pub closed: bool,
    /// The checkpoint a call is held at, waiting for the steward.
    pub held_at: Option<String>,
    /// Counts over the whole log.
    #[cfg_attr(test, ts(type = "number"))]
    pub allowed: u64,
    /// Denied by the gate.
    #[cfg_attr(test, ts(type = "number"))]
    pub denied: u64,
    /// Refused before the gate.
    #[cfg_attr(test, ts(type = "number"))]
    pub refused: u64,
    /// Allowed and lost: unresolved.
    #[cfg_attr(test, ts(type = "number"))]
    pub lost: u64,
    /// The newest [`GATEWAY_CALLS_KEPT`] calls, oldest first.
    pub calls: Vec<GatewayCall>,
    /// What the metered figures add up to, named as what it is (§5.2).
    pub metered_note: Option<String>,
    /// Lines that did not read (and a start the bounded read cut off).
    #[cfg_attr(test, ts(type = "number"))]
    pub unreadable_lines: u64,
}

/// What the steward fills in to start an MCP gateway run from the console.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct GatewayForm {
    /// The server's name in the agent's MCP configuration.
    pub name: String,
    /// The upstream MCP server's command and arguments.
    pub upstream: Vec<String>,
    /// The resource the grant names (`text:NAME`).
    pub resource: String,
    /// The actions it allows.
    pub actions: Vec<String>,
    /// Its budget, µJ.
    #[cfg_attr(test, ts(type = "number"))]
    pub budget_uj: u64,
    /// The tool bindings, as JSON text.
    pub bindings: String,
    /// A checkpoint every this many calls (0: none).
    #[cfg_attr(test, ts(type = "number"))]
    pub checkpoint_every: u64,
}

/// A gateway run set up from the console: the line to paste.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct GatewayPrepared {
    /// The run's workspace item.
    #[cfg_attr(test, ts(type = "number"))]
    pub id: i64,
    /// The run file.
    pub run: String,
    /// The root grant issued.
    pub grant: String,
    /// The agent identity the gateway holds the key of.
    pub agent: String,
    /// The command an MCP client launches.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The line, for a shell.
    pub line: String,
    /// The `mcpServers` entry, as JSON text to paste.
    pub mcp_config: String,
}

/// The log beside a run: `<run>.events.jsonl`.
pub fn log_of(run: &Path) -> PathBuf {
    jcp::steering::follow::log_beside(run)
}

fn text(v: &serde_json::Value, k: &str) -> Option<String> {
    v[k].as_str().map(str::to_owned)
}

/// Reads the gateway log beside `run`; `None` when there is none (the run
/// is not a gateway's). At most the log's last [`GATEWAY_LOG_READ`] bytes are read.
pub fn gateway_view(run: &Path) -> Option<GatewayView> {
    let path = log_of(run);
    let mut f = std::fs::File::open(&path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(GATEWAY_LOG_READ);
    let mut bytes = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.take(GATEWAY_LOG_READ).read_to_end(&mut bytes).is_err() {
        return None;
    }
    let mut v = GatewayView {
        log: path.display().to_string(),
        upstream: None,
        client: None,
        holder: None,
        stream: None,
        stream_handle: None,
        closed: false,
        held_at: None,
        allowed: 0,
        denied: 0,
        refused: 0,
        lost: 0,
        calls: Vec::new(),
        metered_note: None,
        unreadable_lines: 0,
    };
    let mut figures = Vec::new();
    let mut n = 0u64;
    let body = String::from_utf8_lossy(&bytes);
    let mut lines = body.lines();
    if from > 0 {
        // The first line is cut by the bounded read.
        lines.next();
        v.unreadable_lines += 1;
    }
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let Ok(e) = serde_json::from_str::<serde_json::Value>(line) else {
            v.unreadable_lines += 1;
            continue;
        };
        match e["event"].as_str() {
            Some("started") => {
                v.upstream = text(&e, "upstream");
                v.holder = text(&e, "holder");
                v.stream = text(&e, "stream");
                v.closed = false;
            }
            Some("initialize") => v.client = text(&e, "client"),
            Some("closed") => v.closed = true,
            Some("held") => v.held_at = text(&e, "checkpoint"),
            Some("continued" | "revoked") => v.held_at = None,
            Some("call") => {
                n += 1;
                let verdict = text(&e, "verdict").unwrap_or_else(|| "?".into());
                let state = text(&e, "state");
                match (verdict.as_str(), state.as_deref()) {
                    ("allow", Some("lost")) => v.lost += 1,
                    ("allow", _) => v.allowed += 1,
                    ("deny", _) => v.denied += 1,
                    _ => v.refused += 1,
                }
                let metered = e.get("metered").and_then(|m| {
                    let charged = e["charge"].is_string().then(|| m["energy"]["uj"].as_u64()).flatten();
                    metered_figure(m, n, state.as_deref().unwrap_or("?"), charged, None)
                });
                if let Some(m) = &metered {
                    figures.push(m.clone());
                }
                v.calls.push(GatewayCall {
                    n,
                    tool: text(&e, "tool").unwrap_or_default(),
                    action: text(&e, "action"),
                    intent_hash: text(&e, "intent_hash"),
                    verdict,
                    reason: text(&e, "reason").or_else(|| text(&e, "code")),
                    receipt: text(&e, "receipt"),
                    why: text(&e, "why").filter(|_| state.is_some()),
                    state,
                    metered,
                });
            }
            _ => {}
        }
    }
    v.metered_note = sum_note(&figures, "by the gateway behind its gate");
    let start = v.calls.len().saturating_sub(GATEWAY_CALLS_KEPT);
    v.calls.drain(..start);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tags::{Coverage, Provenance};

    #[test]
    fn s11_asi_s8_a_gateway_log_lists_each_call_with_its_intent_hash_verdict_and_metered_figure() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("g.jcprun");
        assert!(gateway_view(&run).is_none(), "no log: not a gateway run");
        let log = [
            r#"{"event":"started","stream":"g.jcps","holder":"did:key:z6Mkh","upstream":"npx server","upstream_pid":7}"#,
            r#"{"event":"initialize","client":"claude-ai"}"#,
            r#"{"event":"call","tool":"echo","intent_hash":"sha256:aa","receipt":"r1","action":"echo","verdict":"allow","state":"done","metered":{"energy":{"uj":5000,"provenance":"Estimator","coverage":"Partial"},"gaps":[{"code":"not-declared-self-contained","detail":"x"}],"cpu_ns":1000000,"wall_ns":2000000,"rung":"estimate","members":1},"charge":"c1","charge_refused":null}"#,
            r#"{"event":"call","tool":"get-env","intent_hash":"sha256:bb","receipt":"r2","action":"env","verdict":"deny","reason":"action-not-granted"}"#,
            "not json",
            r#"{"event":"call","tool":"get-tiny-image","verdict":"refused","code":"tool-unbound","message":"m"}"#,
            r#"{"event":"call","tool":"echo","verdict":"cancelled","code":"cancelled","message":"the client cancelled the call before it was decided: it did not run"}"#,
            r#"{"event":"checkpoint","id":"cp1"}"#,
            r#"{"event":"held","checkpoint":"cp1"}"#,
        ];
        std::fs::write(log_of(&run), log.join("\n")).unwrap();
        let v = gateway_view(&run).unwrap();
        assert_eq!((v.client.as_deref(), v.upstream.as_deref()), (Some("claude-ai"), Some("npx server")));
        // A call the client cancelled before its turn never reached the gate: counted with those refused there.
        assert_eq!((v.allowed, v.denied, v.refused, v.lost, v.unreadable_lines), (1, 1, 2, 0, 1));
        assert_eq!(v.held_at.as_deref(), Some("cp1"));
        assert_eq!(v.calls.len(), 4);
        let c = &v.calls[0];
        assert_eq!(
            (c.tool.as_str(), c.intent_hash.as_deref(), c.verdict.as_str()),
            ("echo", Some("sha256:aa"), "allow")
        );
        let m = c.metered.as_ref().unwrap();
        assert_eq!((m.energy_uj, m.provenance, m.coverage), (5000, Provenance::Estimator, Coverage::Partial));
        assert_eq!(m.charged.as_deref(), Some("5.000 mJ"));
        assert_eq!(v.calls[1].reason.as_deref(), Some("action-not-granted"));
        assert_eq!(v.calls[2].reason.as_deref(), Some("tool-unbound"));
        assert_eq!((v.calls[3].verdict.as_str(), v.calls[3].reason.as_deref()), ("cancelled", Some("cancelled")));
        // One Partial figure: its sum is never called the total.
        assert!(v.metered_note.as_deref().unwrap().contains("not its total"), "{:?}", v.metered_note);
    }

    #[test]
    fn s5_2_a_figure_without_a_readable_grade_is_not_shown_and_a_lost_call_is_counted_as_such() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("g.jcprun");
        let log = [
            r#"{"event":"call","tool":"t","verdict":"allow","state":"lost","receipt":"r","why":"cancelled by the client while the tool ran"}"#,
            r#"{"event":"call","tool":"t","verdict":"allow","state":"done","metered":{"energy":{"uj":5,"provenance":"Guess","coverage":"Whole"}}}"#,
        ];
        std::fs::write(log_of(&run), log.join("\n")).unwrap();
        let v = gateway_view(&run).unwrap();
        assert_eq!((v.allowed, v.lost), (1, 1));
        assert_eq!(v.calls[0].why.as_deref(), Some("cancelled by the client while the tool ran"));
        assert_eq!(v.calls[1].why, None);
        assert!(v.calls[1].metered.is_none(), "a grade that does not read is not shown");
        assert!(v.metered_note.is_none());
    }
}
