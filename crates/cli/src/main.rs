//! `jcp`: every JCP Console capability, headless. Each subcommand lives in its
//! own module under `cmd/`; `main` only parses and maps the result to an exit
//! code (0 = clean, 1 = findings / refusals, 2 = unreadable input or error).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod out;

#[derive(Debug, Parser)]
#[command(name = "jcp", version, about = "JCP Console, headless: grants, decisions, receipts, audits, meters, blueprints, intents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    // ---- registered subcommands (one line each; keep alphabetical) ----
    /// Decides a frame against a grant or chain and a metered cost (spec §7).
    Decide(cmd::core::DecideArgs),
    /// Issues, attenuates, shards, revokes and inspects grants (spec §4).
    Grant(cmd::core::GrantArgs),
    /// Pretty-prints any JCP object (grant, revocation, frame) with its content id and signature status.
    Inspect(cmd::core::InspectArgs),
    /// Agent-Safe Intent v1: verifies vectors, hashes bindings, prints the schema.
    Intent(cmd::intent::IntentArgs),
    /// Creates and shows Ed25519 did:key identities (spec §2).
    Key(cmd::core::KeyArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        // ---- dispatch (one line each) ----
        Command::Decide(a) => cmd::core::run_decide(a),
        Command::Grant(a) => cmd::core::run_grant(a),
        Command::Inspect(a) => cmd::core::run_inspect(a),
        Command::Intent(a) => cmd::intent::run(a),
        Command::Key(a) => cmd::core::run_key(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => out::fail(&err),
    }
}
