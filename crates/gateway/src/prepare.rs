//! Setting up a gateway run (§4, §4.7): the steward's key issues a fresh
//! agent identity a root grant for the tools' resource, the run file that
//! carries it goes into the runs folder, and the files the gateway needs
//! (the agent's key, the grant, the record's own sealing key, the tool
//! bindings) go into the run's folder; what comes back is the command line
//! an MCP client's configuration launches. The console's "Start an MCP
//! gateway run" and `jcp gateway prepare` are this one function, so a run
//! set up from either is the same thing.

use std::path::{Path, PathBuf};

use jcp::cbor::ContentId;
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp::steering::Run;
use serde::Serialize;

use crate::{Bindings, GatewayError};

/// What a gateway run is set up from.
#[derive(Debug, Clone)]
pub struct PrepareInput {
    /// The run's folder (created; its keys are written owner-only).
    pub dir: PathBuf,
    /// The run file (in the console's runs folder, where it is watched).
    pub run_path: PathBuf,
    /// The resource the grant names, as text (`text:NAME` or a content id).
    pub resource: String,
    /// The actions it allows (the bindings' `action`s).
    pub actions: Vec<String>,
    /// Its budget, µJ.
    pub budget_uj: u64,
    /// Its lifetime from now, seconds.
    pub lifetime_s: u64,
    /// The tool bindings file's bytes (checked before anything is written).
    pub bindings_json: Vec<u8>,
    /// The upstream MCP server's command line.
    pub upstream: Vec<String>,
    /// A checkpoint every this many calls (0: none).
    pub checkpoint_every: u64,
    /// The `jcp` command the line starts.
    pub jcp: String,
}

/// A prepared gateway run.
#[derive(Debug, Clone, Serialize)]
pub struct Prepared {
    /// The agent's identity (the grant's subject; the gateway holds its key).
    pub agent: String,
    /// The root grant's id.
    pub grant: String,
    /// The run file.
    pub run: PathBuf,
    /// The gateway's record.
    pub stream: PathBuf,
    /// The gateway's log (`<run>.events.jsonl`).
    pub events: PathBuf,
    /// The command an MCP client launches.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The line, for a shell.
    pub line: String,
    /// The entry for an MCP client's configuration (`mcpServers`).
    pub mcp_config: serde_json::Value,
}

fn io(what: &str, p: &Path, e: impl std::fmt::Display) -> GatewayError {
    GatewayError::io(format!("{what} {}", p.display()), std::io::Error::other(e.to_string()))
}

fn quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@+".contains(&b)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Sets up a gateway run under `steward`'s key. Refused before anything is
/// written: bindings that do not read, an upstream command that is empty,
/// no action, a zero budget, a resource that does not read, a run file
/// that already exists.
pub fn prepare(input: &PrepareInput, steward: &Keypair, name: &str) -> Result<Prepared, GatewayError> {
    // An MCP client launches the line from wherever it runs: every path in it is absolute.
    let mut input = input.clone();
    input.dir = std::path::absolute(&input.dir).map_err(|e| GatewayError::io("resolving the run's folder", e))?;
    input.run_path = std::path::absolute(&input.run_path).map_err(|e| GatewayError::io("resolving the run file", e))?;
    let input = &input;
    let bad = |at: &str, why: &str| GatewayError::BindingsInvalid { at: at.into(), why: why.into() };
    Bindings::from_json(&input.bindings_json)?;
    if input.upstream.first().is_none_or(String::is_empty) {
        return Err(bad("upstream", "no upstream command"));
    }
    if input.actions.is_empty() || input.actions.iter().any(String::is_empty) {
        return Err(bad("actions", "name at least one action, none empty"));
    }
    if input.budget_uj == 0 {
        return Err(bad("budget_uj", "a zero budget allows nothing"));
    }
    let resource: ContentId =
        jcp::grant::resource_from_text(&input.resource).map_err(|e| bad("resource", &e.to_string()))?;
    if input.run_path.exists() {
        return Err(bad("run", &format!("{} already exists", input.run_path.display())));
    }
    std::fs::create_dir_all(&input.dir).map_err(|e| io("creating", &input.dir, e))?;
    if let Some(parent) = input.run_path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io("creating", parent, e))?;
    }
    let agent = Keypair::generate();
    let agent_key = input.dir.join("agent.key");
    keystore::write_plain(&agent_key, &agent).map_err(|e| io("writing", &agent_key, e))?;
    // The record's own sealing key: the steward's key stays where it is.
    let sealing_key = input.dir.join("endpoint.key");
    keystore::write_plain(&sealing_key, &Keypair::generate()).map_err(|e| io("writing", &sealing_key, e))?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let root: SignedGrant = Grant {
        issuer: steward.did(),
        subject: agent.did(),
        capability: Capability { resource, actions: input.actions.clone() },
        budget_uj: input.budget_uj,
        budget_funds: None,
        caveats: Vec::new(),
        expiry: now.saturating_add(input.lifetime_s.max(60)),
        parent: None,
        delegate_depth: Some(0),
        nonce: jcp::identity::fresh_nonce(),
    }
    .sign(steward)
    .map_err(|e| bad("grant", &e.to_string()))?;
    let root_path = input.dir.join("root.jcp");
    std::fs::write(&root_path, root.to_bytes()).map_err(|e| io("writing", &root_path, e))?;
    let tools = input.dir.join("tools.json");
    std::fs::write(&tools, &input.bindings_json).map_err(|e| io("writing", &tools, e))?;
    Run::new(root.clone()).write(&input.run_path).map_err(|e| io("writing", &input.run_path, e))?;
    let stream = input.dir.join("record.jcps");
    let p = |x: &Path| x.display().to_string();
    let mut args: Vec<String> = vec![
        "gateway".into(),
        "--chain".into(),
        p(&root_path),
        "--key".into(),
        p(&agent_key),
        "--steward-key".into(),
        p(&sealing_key),
        "--stream".into(),
        p(&stream),
        "--tools".into(),
        p(&tools),
        "--trust-root".into(),
        format!("{}={}", input.resource, steward.did()),
        "--run".into(),
        p(&input.run_path),
    ];
    if input.checkpoint_every > 0 {
        args.extend(["--checkpoint-every".into(), input.checkpoint_every.to_string()]);
    }
    args.push("--".into());
    args.extend(input.upstream.iter().cloned());
    let line = std::iter::once(quote(&input.jcp)).chain(args.iter().map(|a| quote(a))).collect::<Vec<_>>().join(" ");
    let mcp_config = serde_json::json!({"mcpServers": {name: {"command": input.jcp, "args": args}}});
    Ok(Prepared {
        agent: agent.did().to_string(),
        grant: root.id().to_hex(),
        run: input.run_path.clone(),
        stream,
        events: jcp::steering::follow::log_beside(&input.run_path),
        command: input.jcp.clone(),
        args,
        line,
        mcp_config,
    })
}
