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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        // ---- dispatch (one line each) ----
    };
    match result {
        Ok(code) => code,
        Err(err) => out::fail(&err),
    }
}
