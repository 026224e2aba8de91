//! `jcp identity`: long-lived identities as key logs with pre-committed
//! rotation (spec §2.1, conformance class C12). A key log travels as a
//! `*.jcpkeys` file (one canonical det-CBOR map `{format, events}`); keys as
//! the key files of `jcp key new`. `new` writes the inception log, the
//! current (identity) key and the pre-committed next key; `rotate` appends a
//! rotation signed by that next key and writes the next-next key.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jcp::cbor::Value;
use jcp::error::Refusal;
use jcp::rotation::{KeyLog, KeyLogView};
use serde_json::json;

use crate::cmd::core::{core_err, create_file, keypair_from, nonce_arg, read_bytes, read_key, replace_file, write_key};
use crate::out::{emit, CLEAN, FINDINGS};

/// `jcp identity`: key logs (§2.1).
#[derive(Debug, Args)]
pub struct IdentityArgs {
    #[command(subcommand)]
    cmd: IdentityCmd,
}

#[derive(Debug, Subcommand)]
enum IdentityCmd {
    /// Starts an identity: writes the inception key log, the identity key and the pre-committed next key.
    New {
        /// The key log file to create (must not exist).
        #[arg(long)]
        log: PathBuf,
        /// The identity (current) key file to create.
        #[arg(long)]
        key: PathBuf,
        /// The pre-committed next key file to create (keep it apart from the current key).
        #[arg(long)]
        next_key: PathBuf,
        /// The identity key's seed as 64 hex digits (tests, vectors). Default: fresh randomness.
        #[arg(long)]
        seed: Option<String>,
        /// The next key's seed as 64 hex digits. Default: fresh randomness.
        #[arg(long)]
        next_seed: Option<String>,
        /// The event's nonce as 32 hex digits (default: fresh randomness).
        #[arg(long)]
        nonce: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Rotates: the pre-committed next key signs a new event and becomes current; writes the new next key.
    Rotate {
        /// The key log file (replaced).
        #[arg(long)]
        log: PathBuf,
        /// The pre-committed key's file (it controls the identity from this rotation on).
        #[arg(long)]
        key: PathBuf,
        /// The new pre-committed next key file to create.
        #[arg(long)]
        next_key: PathBuf,
        /// The new next key's seed as 64 hex digits. Default: fresh randomness.
        #[arg(long)]
        next_seed: Option<String>,
        /// The event's nonce as 32 hex digits (default: fresh randomness).
        #[arg(long)]
        nonce: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Verifies a key log: prints the identity and its current key (exit 0) or the refusal (exit 1).
    Verify {
        log: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Prints a key log's events and its verified state or refusal.
    Show {
        log: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn read_log(path: &Path) -> anyhow::Result<KeyLog> {
    KeyLog::from_bytes(&read_bytes(path)?).map_err(|e| core_err(path, &e))
}

fn refused(json: bool, path: &Path, e: &jcp::Error) -> anyhow::Result<ExitCode> {
    let r = Refusal::from(e);
    emit(json, &json!({"refused": r, "file": path}), || format!("{}: refused: {}", path.display(), r.message))?;
    Ok(ExitCode::from(FINDINGS))
}

/// The human form of a key log view (`show`, `inspect`).
fn view_human(v: &KeyLogView) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "key log ({} events)", v.events.len());
    for r in &v.events {
        let e = &r.event;
        let _ = writeln!(s, "  #{} seq {}  {}", r.index, e.seq, r.id);
        let _ = writeln!(s, "      current    {}", e.current);
        let _ = writeln!(s, "      next_hash  {}", e.next_hash);
        let _ =
            writeln!(s, "      parent     {}", e.parent.map_or_else(|| "none (inception)".to_owned(), |p| p.to_hex()));
        let _ = writeln!(s, "      signature  {}", if r.signature_valid { "valid for current" } else { "INVALID" });
    }
    match (&v.state, &v.refusal) {
        (Some(st), _) => {
            let _ = writeln!(s, "verified");
            let _ = writeln!(s, "  identity   {}", st.identity());
            let _ = writeln!(s, "  current    {}", st.current());
            let _ = writeln!(s, "  seq        {}", st.seq());
            let _ = writeln!(s, "  next_hash  {}", st.next_hash());
            let _ = writeln!(s, "  head       {}", st.head());
        }
        (None, Some(r)) => {
            let _ = writeln!(s, "refused: {}", r.message);
        }
        (None, None) => {}
    }
    s
}

fn show(v: &KeyLogView, json: bool) -> anyhow::Result<ExitCode> {
    let mut j = serde_json::to_value(v)?;
    j["type"] = json!("key-log");
    emit(json, &j, || view_human(v))?;
    Ok(ExitCode::from(if v.refusal.is_none() { CLEAN } else { FINDINGS }))
}

/// `jcp inspect` of a key log: its events and verified state (exit 1 when refused).
pub(crate) fn inspect_key_log(file: &Path, v: &Value, json: bool) -> anyhow::Result<ExitCode> {
    let log = KeyLog::from_value(v).map_err(|e| core_err(file, &e))?;
    show(&log.view(), json)
}

pub fn run(args: IdentityArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        IdentityCmd::New { log, key, next_key, seed, next_seed, nonce, json } => {
            let identity = keypair_from(seed.as_deref(), "--seed")?;
            let next = keypair_from(next_seed.as_deref(), "--next-seed")?;
            let kl = KeyLog::incept(&identity, &next.did(), nonce_arg(nonce.as_ref())?);
            let state = kl.verify().map_err(|e| core_err(&log, &e))?;
            create_file(&log, &kl.to_bytes())?;
            write_key(&key, &identity)?;
            write_key(&next_key, &next)?;
            emit(json, &json!({"log": log, "key": key, "next_key": next_key, "state": state}), || {
                format!(
                    "identity {}\n  current    {} ({})\n  next key   {} (pre-committed: {})\n  key log    {}\n",
                    state.identity(),
                    state.current(),
                    key.display(),
                    next_key.display(),
                    state.next_hash(),
                    log.display()
                )
            })?;
        }
        IdentityCmd::Rotate { log, key, next_key, next_seed, nonce, json } => {
            let mut kl = read_log(&log)?;
            let new_current = read_key(&key)?;
            let next = keypair_from(next_seed.as_deref(), "--next-seed")?;
            // Refused before anything is written: a log that does not verify,
            // a key that is not the pre-committed one.
            let state = match kl.rotate(&new_current, &next.did(), nonce_arg(nonce.as_ref())?) {
                Ok(s) => s,
                Err(e) => return refused(json, &log, &e),
            };
            write_key(&next_key, &next)?;
            replace_file(&log, &kl.to_bytes())?;
            emit(json, &json!({"log": log, "next_key": next_key, "state": state}), || {
                format!(
                    "identity {} rotated to seq {}\n  current    {} ({})\n  next key   {} (pre-committed: {})\n",
                    state.identity(),
                    state.seq(),
                    state.current(),
                    key.display(),
                    next_key.display(),
                    state.next_hash()
                )
            })?;
        }
        IdentityCmd::Verify { log, json } => {
            let kl = read_log(&log)?;
            match kl.verify() {
                Ok(state) => emit(json, &json!({"verified": true, "state": state}), || {
                    format!(
                        "verified: identity {} controlled by {} (seq {})",
                        state.identity(),
                        state.current(),
                        state.seq()
                    )
                })?,
                Err(e) => return refused(json, &log, &e),
            }
        }
        IdentityCmd::Show { log, json } => {
            show(&read_log(&log)?.view(), json)?;
        }
    }
    Ok(ExitCode::from(CLEAN))
}
