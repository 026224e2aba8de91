//! `jcp gateway`: an MCP server's tools behind the enforcement point (§11
//! relay mode, Agent-Safe Intent v1 §8). Standard output is the MCP
//! channel to the client, so everything the gateway says for people goes
//! to standard error (and, with `--events`, to a JSON-lines file).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use jcp_gateway::{Bindings, ClientInput, ClientSink, Events, Gateway, Settings, Upstream, UpstreamOptions};
use jcp_wire::backend::Backend;
use jcp_wire::endpoint::{Config, CoreMode, Endpoint};
use serde_json::json;

use super::core::{parse_did, read_bytes, read_grant, read_key};
use super::wire::{gate_trusting, parse_addr, serve_listeners, start_meter, wire_err};
use crate::out::{coded, CLEAN};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct GatewayArgs {
    #[command(subcommand)]
    cmd: Option<GatewayCmd>,
    /// The grant chain, root first (the leaf's subject is `--key`'s identity).
    #[arg(long = "chain", visible_alias = "grant", num_args = 1.., required = true)]
    chain: Vec<PathBuf>,
    /// The holder's key: the gateway signs each call's request with it; the agent never sees it.
    #[arg(long, required = true)]
    key: Option<PathBuf>,
    /// The steward's key: it seals every receipt of the record.
    #[arg(long = "steward-key", visible_alias = "steward", required = true)]
    steward_key: Option<PathBuf>,
    /// The record: the receipt stream this gateway writes (as its only writer).
    #[arg(long, required = true)]
    stream: Option<PathBuf>,
    /// The operator's tool bindings (JSON): a tool with none is refused, never guessed.
    #[arg(long)]
    tools: Option<PathBuf>,
    /// A trust root RESOURCE=DID (repeatable; RESOURCE as hex or text:NAME).
    #[arg(long = "trust-root")]
    trust_roots: Vec<String>,
    /// `http://127.0.0.1:PORT[/PATH]`: serve the MCP session over Streamable HTTP there (loopback only;
    /// path `/mcp` by default) instead of stdio. `tcp:HOST:PORT` or `unix:PATH`: also serve the endpoint's
    /// jcp/1 there, for the steward's feeds (`jcp feed revoke|amend --connect ADDR`): a Unix socket is made
    /// owner-only and takes unsigned feeds; over TCP a revocation or amendment must be signed by a
    /// --feed-key (§4.3). Repeatable.
    #[arg(long = "listen")]
    listen: Vec<String>,
    /// A feed key's did (repeatable): a revocation or amendment it signs (`jcp feed … --key`) is taken on a
    /// TCP --listen address; its signature covers the marker (§4.3).
    #[arg(long = "feed-key")]
    feed_keys: Vec<String>,
    /// An Origin the Streamable HTTP endpoint lets through besides loopback ones (repeatable).
    #[arg(long = "allow-origin")]
    allow_origins: Vec<String>,
    /// Append one JSON line per event (each call: tool, intent hash, verdict, receipt, metered figure);
    /// with `--run` and no `--events`, `<run>.events.jsonl`, where the console reads it.
    #[arg(long)]
    events: Option<PathBuf>,
    /// The tenant the calls are made for (Agent-Safe `tenant_id`, a UUID); a fresh one per start when absent.
    #[arg(long)]
    tenant: Option<String>,
    /// The server's name in each binding (`context.mcp_server`); the command's file name when absent.
    #[arg(long)]
    server_name: Option<String>,
    /// The most one call may reserve, µJ (0: none stated; the grant's remainder and `--call-ceiling-uj` bound it).
    #[arg(long, default_value_t = 0)]
    max_uj: u64,
    /// The least time between two syncs of the record, µs (§4.11 group commit). 0, the default: one
    /// session's calls are decided one at a time, so a batch has nothing to gather and waiting only adds latency;
    /// the endpoint's core then syncs each decision itself (no hand-off to a sync thread).
    #[arg(long, default_value_t = 0)]
    commit_interval_us: u64,
    /// The operator's ceiling on what one call may reserve, µJ (0: none).
    #[arg(long, default_value_t = 0)]
    call_ceiling_uj: u64,
    /// How long one tool call may run before it is cancelled upstream and left unresolved; also how long the
    /// server may read nothing of what waits on its input before that input is given up on (later calls: not run).
    #[arg(long, default_value_t = 60)]
    timeout_s: u64,
    /// Answer an allowed call only once its charge is recorded, with the charge receipt and the metered
    /// figure in the answer's `_meta`. Without it the tool's answer goes back as soon as the tool gives it,
    /// and its charge is recorded before the next call is decided (the events log and the stream carry it).
    #[arg(long)]
    settle_before_answer: bool,
    /// The run file a steered run keeps its checkpoints in (§4.7); created under the chain's leaf when absent.
    #[arg(long)]
    run: Option<PathBuf>,
    /// A checkpoint after every N allowed calls: the next call is held until the steward amends (or approves) or revokes.
    #[arg(long, default_value_t = 0, requires = "run")]
    checkpoint_every: u64,
    /// A checkpoint once this many µJ were charged since the last.
    #[arg(long, default_value_t = 0, requires = "run")]
    checkpoint_uj: u64,
    /// How long a held call waits for the steward before it is refused (`checkpoint-wait-timeout`).
    #[arg(long, default_value_t = 3600)]
    wait_timeout_s: u64,
    /// Declare that the server hands no work to a process outside its tree (§5.1): only then may a figure be Whole.
    #[arg(long)]
    self_contained: bool,
    /// The upstream MCP server: the command and its arguments, after `--`.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
enum GatewayCmd {
    /// The auditor's side of a gateway run: every recorded call's binding,
    /// payload hash and intent hash re-derived from the stream, and the
    /// receipts that seal it (exit 1 when anything fails or is unreadable).
    Intents {
        /// The gateway's record.
        stream: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Sets a gateway run up: the steward's key issues a fresh agent key a
    /// root grant for the tools' resource; the run file, the keys, the grant
    /// and the bindings are written; prints the line an MCP client launches
    /// (and its `mcpServers` entry). The console's "Start an MCP gateway run" does the same.
    Prepare(PrepareArgs),
}

#[derive(Debug, Args)]
struct PrepareArgs {
    /// The steward's key: it issues the grant and steers the run.
    #[arg(long = "steward-key")]
    steward_key: PathBuf,
    /// The run's folder (keys, grant, bindings, record).
    #[arg(long)]
    dir: PathBuf,
    /// The run file to create (put it in the console's runs folder to steer it there).
    #[arg(long)]
    run: PathBuf,
    /// The server's name in the MCP configuration.
    #[arg(long, default_value = "tools")]
    name: String,
    /// The resource the grant names (text:NAME); the bindings' `resource` (default `text:<system>`).
    #[arg(long)]
    resource: String,
    /// The actions the grant allows (comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    actions: Vec<String>,
    /// The grant's budget, µJ.
    #[arg(long)]
    budget_uj: u64,
    /// The grant's lifetime, seconds.
    #[arg(long, default_value_t = 86_400)]
    lifetime_s: u64,
    /// The tool bindings (JSON).
    #[arg(long)]
    tools: PathBuf,
    /// A checkpoint every N calls (0: none).
    #[arg(long, default_value_t = 0)]
    checkpoint_every: u64,
    #[arg(long)]
    json: bool,
    /// The upstream MCP server, after `--`.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

fn run_prepare(p: &PrepareArgs) -> anyhow::Result<ExitCode> {
    let steward = read_key(&p.steward_key)?;
    let jcp = std::env::current_exe().map_or_else(|_| "jcp".to_owned(), |e| e.display().to_string());
    let input = jcp_gateway::prepare::PrepareInput {
        dir: p.dir.clone(),
        run_path: p.run.clone(),
        resource: p.resource.clone(),
        actions: p.actions.clone(),
        budget_uj: p.budget_uj,
        lifetime_s: p.lifetime_s,
        bindings_json: read_bytes(&p.tools)?,
        upstream: p.command.clone(),
        checkpoint_every: p.checkpoint_every,
        jcp,
    };
    let done = jcp_gateway::prepare::prepare(&input, &steward, &p.name).map_err(|e| coded(e.code(), e.to_string()))?;
    crate::out::emit(p.json, &json!(done), || {
        format!(
            "gateway run prepared: grant {} to agent {}; run file {}\nlaunch it as:\n{}\nor in an MCP client's configuration:\n{}\n",
            done.grant,
            done.agent,
            done.run.display(),
            done.line,
            serde_json::to_string_pretty(&done.mcp_config).unwrap_or_default()
        )
    })?;
    Ok(ExitCode::from(CLEAN))
}

fn run_intents(stream: &std::path::Path, json_out: bool) -> anyhow::Result<ExitCode> {
    let r = jcp_gateway::verify_intents(stream).map_err(|e| coded(e.code(), e.to_string()))?;
    crate::out::emit(json_out, &json!({"clean": r.clean(), "report": r}), || {
        use std::fmt::Write as _;
        let mut s = String::new();
        for c in &r.calls {
            let _ = writeln!(
                s,
                "{:>8}  {:<24} {:<16} {}  receipts {}{}",
                c.offset,
                c.tool.as_deref().unwrap_or("?"),
                c.action,
                c.intent_hash.as_deref().unwrap_or("(no intent hash)"),
                c.receipts
                    .iter()
                    .map(|(id, v)| format!("{}… {v}", &id[..12.min(id.len())]))
                    .collect::<Vec<_>>()
                    .join(", "),
                c.problem.as_ref().map_or(String::new(), |p| format!("  PROBLEM: {p}"))
            );
        }
        let _ = writeln!(
            s,
            "{} calls; {} framing faults; {} receipts failed to verify: {}",
            r.calls.len(),
            r.faults,
            r.receipts_failed,
            if r.clean() { "every intent hash recomputes from its recorded binding" } else { "NOT CLEAN" }
        );
        s
    })?;
    Ok(ExitCode::from(if r.clean() { CLEAN } else { crate::out::FINDINGS }))
}

/// Standard output shared by the session's writer and the upstream's
/// reader, and where the upstream's messages go: for a stdio session, the
/// reader writes them (an answer leaves from the thread that read it); for
/// the HTTP one, they are queued for the session to route.
fn client_side(
    http: bool,
    to_client: &tokio::sync::mpsc::UnboundedSender<String>,
) -> (jcp_gateway::upstream::SharedOutput, ClientSink) {
    let stdout: jcp_gateway::upstream::SharedOutput = Arc::new(std::sync::Mutex::new(Box::new(std::io::stdout())));
    let sink = if http {
        ClientSink::queued(to_client.clone())
    } else {
        ClientSink::direct(to_client.clone(), stdout.clone())
    };
    (stdout, sink)
}

pub fn run(a: GatewayArgs) -> anyhow::Result<ExitCode> {
    match &a.cmd {
        Some(GatewayCmd::Intents { stream, json }) => return run_intents(stream, *json),
        Some(GatewayCmd::Prepare(p)) => return run_prepare(p),
        None => {}
    }
    let chain = a.chain.iter().map(|p| read_grant(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let missing = |f: &str| coded("missing-argument", format!("{f} is required"));
    let holder = read_key(a.key.as_ref().ok_or_else(|| missing("--key"))?)?;
    let steward = read_key(a.steward_key.as_ref().ok_or_else(|| missing("--steward-key"))?)?;
    let stream = a.stream.clone().ok_or_else(|| missing("--stream"))?;
    let leaf = chain.last().ok_or_else(|| coded("missing-argument", "--chain names no grant"))?.clone();
    if leaf.grant().subject != holder.did() {
        return Err(coded(
            "wrong-subject",
            format!("the chain's leaf is held by {}, not by --key's {}", leaf.grant().subject, holder.did()),
        ));
    }
    let bindings = read_bindings(a.tools.as_deref())?;
    let tenant = match &a.tenant {
        Some(t) => t.clone(),
        None => jcp_gateway::session::fresh_uuid(),
    };
    let gate = gate_trusting(&a.trust_roots)?;
    let (http, addrs) = split_listen(&a.listen)?;
    let server = a.server_name.clone().unwrap_or_else(|| {
        std::path::Path::new(&a.command[0]).file_name().map_or(a.command[0].clone(), |f| f.to_string_lossy().into())
    });
    let mut config = Config::new(&stream);
    // Receipts state the revocation knowledge they were decided in (§4.3), from the start.
    config.known_through = Some(0);
    config.feed_keys = a.feed_keys.iter().map(|k| parse_did(k)).collect::<anyhow::Result<Vec<_>>>()?;
    config.commit_interval = std::time::Duration::from_micros(a.commit_interval_us);
    // No commit interval: the core decides on the session's own thread
    // and syncs there (issue 36's latency; docs/decisions.md, "The gateway
    // decides on its own thread").
    if a.commit_interval_us == 0 {
        config.core = CoreMode::OnCaller;
    }
    config.call_ceiling_uj = (a.call_ceiling_uj > 0).then_some(a.call_ceiling_uj);
    // One thread for the session's tasks and the endpoint's connections: a
    // gateway decides one call at a time, and a task woken on the thread
    // that woke it costs no hand-off between threads (issue 36's latency;
    // docs/performance.md). Blocking work keeps its own threads.
    let rt =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the async runtime")?;
    rt.block_on(async move {
        let (metering, _) = start_meter(&mut config);
        let (to_client, from_upstream) = tokio::sync::mpsc::unbounded_channel();
        let opts = UpstreamOptions {
            command: a.command.clone(),
            timeout: std::time::Duration::from_secs(a.timeout_s.max(1)),
            self_contained: a.self_contained,
        };
        let marks: jcp_gateway::session::Marks = Arc::new(std::sync::Mutex::new(chain.clone()));
        let annotate = jcp_gateway::session::annotator(bindings.clone(), marks.clone());
        let (stdout, sink) = client_side(http.is_some(), &to_client);
        let upstream = Upstream::spawn(&opts, sink, annotate).map_err(|e| coded(e.code(), e.to_string()))?;
        let behind: Arc<dyn Backend> = upstream.clone();
        let (endpoint, report) = match Endpoint::open(config, steward.clone(), gate, Some(behind)) {
            Ok(x) => x,
            Err(e) => {
                upstream.close(std::time::Duration::from_secs(1));
                return Err(wire_err(&e));
            }
        };
        let bound = jcp_wire::endpoint::bind_all(&addrs).await.map_err(|e| wire_err(&e))?;
        let listening: Vec<String> = bound.iter().map(|(_, a)| a.to_string()).collect();
        let mcp = match &http {
            Some(h) => Some(jcp_gateway::http::bind(h).await.map_err(|e| coded(e.code(), e.to_string()))?),
            None => None,
        };
        let mcp_url = mcp.as_ref().map(|(_, h)| format!("http://{}{}", h.socket, h.path));
        // A steered run's log goes beside its run file by default, where the
        // console's Steward view reads it (`<run>.events.jsonl`).
        let log = a.events.clone().or_else(|| a.run.as_deref().map(jcp::steering::follow::log_beside));
        let events = match &log {
            Some(p) => Events::to_file(p).map_err(|e| coded(e.code(), e.to_string()))?,
            None => Events::default(),
        };
        let start = json!({"event": "started", "stream": stream, "steward": steward.did().to_did_string(),
            "holder": holder.did().to_did_string(), "grant": leaf.id(), "upstream": upstream.command(),
            "upstream_pid": upstream.pid(), "tools_bound": bindings.len(), "tenant": tenant, "listen": listening, "mcp_url": mcp_url,
            "metering": metering, "replayed": {"verified": report.replay.verified,
            "unresolved": report.replay.unresolved.len()}});
        events.emit(&start);
        eprintln!("{}", banner(&start));
        // §4.3: a Unix listener is the operator's feed socket (owner-only,
        // unsigned feeds taken); over TCP a feed is signed by a --feed-key.
        let listeners = bound.into_iter().map(|(l, a)| {
            let admin = jcp_wire::endpoint::unix_path(&a).is_some();
            (l, a, admin)
        });
        let (tasks, unix_paths) = serve_listeners(&endpoint, listeners);
        let settings = settings_of(&a, chain, holder, bindings, tenant, server, marks);
        let gw = match Gateway::new(endpoint.clone(), upstream.clone(), settings, events) {
            Ok(g) => g,
            Err(e) => {
                upstream.close(std::time::Duration::from_secs(1));
                let _ = endpoint.shutdown().await;
                return Err(coded(e.code(), e.to_string()));
            }
        };
        let summary = match mcp {
            Some((listener, addr)) => {
                jcp_gateway::http::serve_session(
                    &gw,
                    listener,
                    &addr,
                    a.allow_origins.clone(),
                    from_upstream,
                    to_client,
                    stop_signal(),
                )
                .await
            }
            None => gw.run(ClientInput::stdin(), stdout, from_upstream, to_client).await,
        }
        .map_err(|e| coded(e.code(), e.to_string()))?;
        for t in &tasks {
            t.abort();
        }
        endpoint.shutdown().await.map_err(|e| wire_err(&e))?;
        for p in unix_paths {
            jcp_wire::endpoint::remove_socket(&p);
        }
        eprintln!(
            "jcp gateway: session closed: {} calls ({} allowed, {} denied, {} refused before the gate, {} lost); record flushed and released",
            summary.calls, summary.allowed, summary.denied, summary.refused, summary.lost
        );
        Ok(ExitCode::from(CLEAN))
    })
}

/// The operator's tool bindings (`--tools`); none when absent (every call is then refused `tool-unbound`).
fn read_bindings(path: Option<&std::path::Path>) -> anyhow::Result<Bindings> {
    match path {
        Some(p) => Bindings::from_json(&read_bytes(p)?).map_err(|e| coded(e.code(), format!("{}: {e}", p.display()))),
        None => Ok(Bindings::default()),
    }
}

/// The gateway's first line for people (standard error), from its `started` event.
fn banner(start: &serde_json::Value) -> String {
    let text = |k: &str| start[k].as_str().unwrap_or_default().to_owned();
    let listening: Vec<&str> = start["listen"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
    format!(
        "jcp gateway: upstream {} (pid {}), {} tools bound, grant {} held by {}; record {} (steward {}); MCP {}{}",
        text("upstream"),
        start["upstream_pid"],
        start["tools_bound"],
        text("grant"),
        text("holder"),
        text("stream"),
        text("steward"),
        start["mcp_url"].as_str().map_or_else(|| "on stdio".to_owned(), |u| format!("over Streamable HTTP at {u}")),
        if listening.is_empty() { String::new() } else { format!("; feeds on {}", listening.join(", ")) }
    )
}

/// `--listen`: the one `http://` address MCP is served at, if any, and the jcp/1 addresses for feeds.
fn split_listen(
    listen: &[String],
) -> anyhow::Result<(Option<jcp_gateway::http::HttpAddr>, Vec<jcp_wire::endpoint::Address>)> {
    let (http, feeds): (Vec<&String>, Vec<&String>) = listen.iter().partition(|s| s.starts_with("http://"));
    let http = match http.as_slice() {
        [] => None,
        [one] => Some(one.parse::<jcp_gateway::http::HttpAddr>().map_err(|e| coded(e.code(), e.to_string()))?),
        _ => {
            return Err(coded(
                "listen-invalid",
                "--listen names more than one http:// address: one gateway serves one session",
            ))
        }
    };
    let addrs = feeds.iter().map(|s| parse_addr(s)).collect::<anyhow::Result<Vec<_>>>()?;
    Ok((http, addrs))
}

/// Resolves on SIGINT or SIGTERM: a session served over HTTP then ends as
/// a DELETE would end it (calls in flight finish, the upstream is closed).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// What the session runs under, from the flags.
fn settings_of(
    a: &GatewayArgs,
    chain: Vec<jcp::grant::SignedGrant>,
    holder: jcp::identity::Keypair,
    bindings: Bindings,
    tenant: String,
    server: String,
    marks: jcp_gateway::session::Marks,
) -> Settings {
    Settings {
        marks,
        chain,
        holder,
        bindings,
        tenant_id: tenant,
        server,
        max_uj: a.max_uj,
        reply_timeout: std::time::Duration::from_secs(a.timeout_s.max(1) + 30),
        settle_before_answer: a.settle_before_answer,
        steer: a.run.clone().map(|run| jcp_gateway::steer::SteerOptions {
            run,
            every_calls: a.checkpoint_every,
            every_uj: a.checkpoint_uj,
            wait_timeout: std::time::Duration::from_secs(a.wait_timeout_s),
            poll: std::time::Duration::from_millis(100),
        }),
    }
}
