//! `jcp key`: Ed25519 identities as did:key (§2).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jcp::identity::Keypair;
use serde_json::json;

use super::files::{read_bytes, read_key, read_passphrase, write_key};
use crate::out::{coded, emit, CLEAN};

/// A keypair from a `--seed`-style flag (64 hex digits), or a fresh one.
pub(crate) fn keypair_from(seed: Option<&str>, flag: &str) -> anyhow::Result<Keypair> {
    let Some(s) = seed else { return Ok(Keypair::generate()) };
    let seed: [u8; 32] = hex::decode(s)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| coded("invalid-seed", format!("{flag} must be 64 hex digits")))?;
    Keypair::from_seed(seed).map_err(|e| coded(e.code(), e.to_string()))
}

/// `jcp key`: Ed25519 identities as did:key (§2).
#[derive(Debug, Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    cmd: KeyCmd,
}

#[derive(Debug, Subcommand)]
enum KeyCmd {
    /// Creates a key file (mode 0600) and prints its did:key.
    New {
        /// Where to write the key file (must not exist).
        #[arg(long)]
        out: PathBuf,
        /// A 32-byte seed in hex, for reproducible keys (tests, vectors). Default: fresh randomness.
        #[arg(long)]
        seed: Option<String>,
        /// Encrypt the key at rest under the passphrase in this file (age: scrypt + ChaCha20-Poly1305).
        /// Commands that sign then read the passphrase from the file named by JCP_PASSPHRASE_FILE.
        #[allow(clippy::doc_markdown, reason = "clap help text, shown as written: not markdown")]
        #[arg(long)]
        passphrase_file: Option<PathBuf>,
        /// The scrypt work factor (log2 N) of an encrypted key file.
        #[arg(long, default_value_t = keystore::DEFAULT_WORK_FACTOR, requires = "passphrase_file")]
        work_factor: u8,
        #[arg(long)]
        json: bool,
    },
    /// Prints the did:key of a key file.
    Show {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

pub fn run_key(args: KeyArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        KeyCmd::New { out, seed, passphrase_file, work_factor, json } => {
            let kp = keypair_from(seed.as_deref(), "--seed")?;
            let encrypted = passphrase_file.is_some();
            match &passphrase_file {
                Some(pf) => {
                    let pass = read_passphrase(pf)?;
                    keystore::create(&out, &kp, &pass, work_factor).map_err(|e| coded(e.code(), e.to_string()))?;
                }
                None => write_key(&out, &kp)?,
            }
            emit(json, &json!({"did": kp.did(), "file": out, "encrypted": encrypted}), || {
                format!(
                    "{}\nwritten to {}{}",
                    kp.did(),
                    out.display(),
                    if encrypted { " (encrypted at rest)" } else { "" }
                )
            })?;
        }
        KeyCmd::Show { file, json } => {
            // An encrypted key file states its did without the passphrase.
            let bytes = read_bytes(&file)?;
            let did = if keystore::is_key_file(&bytes) {
                keystore::did(&file).map_err(|e| coded(e.code(), e.to_string()))?
            } else {
                read_key(&file)?.did()
            };
            emit(json, &json!({"did": did}), || did.to_string())?;
        }
    }
    Ok(ExitCode::from(CLEAN))
}
