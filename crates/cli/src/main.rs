//! `jcp`: every JCP Console capability, headless. Each subcommand lives in its
//! own module under `cmd/`; `main` only parses and maps the result to an exit
//! code (0 = clean, 1 = findings / refusals, 2 = unreadable input or error).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod out;

#[derive(Debug, Parser)]
#[command(
    name = "jcp",
    version,
    about = "JCP Console, headless: grants, decisions, receipts, audits, meters, blueprints, intents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    // ---- registered subcommands (one line each; keep alphabetical) ----
    /// A simulated long agent run that asks an enforcement endpoint for every action and is steered at checkpoints (spec §4.7, §11).
    Agent(cmd::agent::AgentArgs),
    /// Audits receipt streams: verification, budgets, groups, revocations, conservation (spec §8, §5.5).
    Audit(cmd::audit::AuditArgs),
    /// A demo endpoint behind the gate speaking jcp-backend/1 on stdin/stdout, for `jcp serve --backend` (spec §11, §6.1).
    Backend(cmd::backend::BackendArgs),
    /// Agent Blueprint Protocol: conformance, reconcile, digest, canonical, verify.
    Blueprint(cmd::blueprint::BlueprintArgs),
    /// Sends one caller-signed request to an enforcement endpoint and prints the decision and receipt (spec §11).
    Call(cmd::wire::CallArgs),
    /// Receipt-settled budget channels: sign and verify statements, audit settlement, prove overdrafts (spec §4.5, C17).
    Channel(cmd::channel::ChannelArgs),
    /// Decides a frame against a grant or chain and a metered cost (spec §7).
    Decide(cmd::core::DecideArgs),
    /// The energy layers above the meter over recorded windows and receipt streams: trace, reconcile, bounds, dynamism (spec §5.3–§5.6).
    Energy(cmd::energy::EnergyArgs),
    /// Sends a revocation, an amendment, an outcome report or a channel statement to an enforcement endpoint: recorded, then applied; asks a point for its statement (spec §4.3, §4.5, §4.7, §4.11, §11).
    Feed(cmd::wire::FeedArgs),
    /// An MCP server's tools behind the enforcement point: each tools/call bound (Agent-Safe §8), decided, run, metered over the server's process tree, charged and sealed (spec §11 relay mode).
    Gateway(cmd::gateway::GatewayArgs),
    /// Writes frames (spec §6).
    Frame(cmd::core::FrameArgs),
    /// Issues, attenuates, shards, revokes and inspects grants (spec §4).
    Grant(cmd::core::GrantArgs),
    /// Long-lived identities: key logs with pre-committed rotation (spec §2.1, C12).
    Identity(cmd::identity::IdentityArgs),
    /// Pretty-prints any JCP object (grant, revocation, frame) with its content id and signature status.
    Inspect(cmd::core::InspectArgs),
    /// Agent-Safe Intent v1: verifies vectors, hashes bindings, prints the schema.
    Intent(cmd::intent::IntentArgs),
    /// Creates and shows Ed25519 did:key identities (spec §2).
    Key(cmd::core::KeyArgs),
    /// Meters this machine's energy live, window by window, with provenance and coverage (spec §5).
    Meter(cmd::meter::MeterArgs),
    /// Steers a long run: checkpoints, amendments, continuations, run verification; a supervised live run (spec §4.7, C21, §11).
    Run(cmd::run::RunArgs),
    /// Runs the enforcement endpoint on TCP and Unix sockets with a durable record (spec §11, §4.11).
    Serve(cmd::wire::ServeArgs),
    /// Standing grants: mint policies, firings and mint ledgers (spec §4.6, C20).
    Standing(cmd::standing::StandingArgs),
    /// Writes demo receipt streams, holds a stream's writer lock, replays a stream (spec §8.1, §4.11).
    Stream(cmd::stream::StreamArgs),
    /// Threshold actors: a k-of-n did:key by a trusted dealer or DKG, signing rounds, aggregate (spec §2.2, FROST RFC 9591).
    Threshold(cmd::threshold::ThresholdArgs),
}

/// Logs go to standard error (stdout carries the `--json` output):
/// `RUST_LOG` filters them (default `warn`), `JCP_LOG_FORMAT=json` writes
/// one JSON object a line. A failed record, a refused request that could
/// not be recorded, an accept error: each is logged, never silent.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second init (never in this binary) would fail; logging is then the first's.
    let _ = if std::env::var("JCP_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        // ---- dispatch (one line each) ----
        Command::Agent(a) => cmd::agent::run(a),
        Command::Audit(a) => cmd::audit::run(a),
        Command::Backend(a) => cmd::backend::run(&a),
        Command::Blueprint(a) => cmd::blueprint::run(a),
        Command::Call(a) => cmd::wire::run_call(&a),
        Command::Channel(a) => cmd::channel::run(a),
        Command::Decide(a) => cmd::core::run_decide(&a),
        Command::Energy(a) => cmd::energy::run(a),
        Command::Feed(a) => cmd::wire::run_feed(a),
        Command::Frame(a) => cmd::core::run_frame(a),
        Command::Gateway(a) => cmd::gateway::run(a),
        Command::Grant(a) => cmd::core::run_grant(a),
        Command::Identity(a) => cmd::identity::run(a),
        Command::Inspect(a) => cmd::core::run_inspect(&a),
        Command::Intent(a) => cmd::intent::run(a),
        Command::Key(a) => cmd::core::run_key(a),
        Command::Meter(a) => cmd::meter::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Serve(a) => cmd::wire::run_serve(a),
        Command::Standing(a) => cmd::standing::run(a),
        Command::Stream(a) => cmd::stream::run(a),
        Command::Threshold(a) => cmd::threshold::run(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => out::fail(&err),
    }
}
