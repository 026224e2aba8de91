//! `jcp standing`: standing grants (spec §4.6, conformance class C20). A mint
//! policy travels as a canonical `{policy, sig}` file signed by the standing
//! grant's issuer; the mint ledger as a canonical `jcp-mint-ledger/1` map the
//! enforcement point keeps beside it. `fire` mints one child through the
//! ordinary attenuation path and replaces the ledger only when it does.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jcp::cbor::{ContentId, Value};
use jcp::error::Refusal;
use jcp::standing::{EventClass, FiringRequest, MintLedger, MintPolicy, SignedMintPolicy, StandingView};
use serde_json::json;

use crate::cmd::core::{
    core_err, create_file, nonce_arg, now_or, parse_cid, parse_did, read_bytes, read_grant, read_key, replace_file,
};
use crate::out::{coded, emit, CLEAN, FINDINGS};

/// `jcp standing`: mint policies, firings, ledgers (§4.6).
#[derive(Debug, Args)]
pub struct StandingArgs {
    #[command(subcommand)]
    cmd: StandingCmd,
}

/// The event class: its content id, or the descriptor it is the id of.
#[derive(Debug, Args)]
struct ClassArgs {
    /// The event class's content id (64 hex digits).
    #[arg(long, conflicts_with_all = ["source", "kind"])]
    event_class: Option<String>,
    /// The event source of the class descriptor (with --kind).
    #[arg(long, requires = "kind")]
    source: Option<String>,
    /// The event kind of the class descriptor (with --source).
    #[arg(long, requires = "source")]
    kind: Option<String>,
}

impl ClassArgs {
    fn id(&self) -> anyhow::Result<ContentId> {
        match (&self.event_class, &self.source, &self.kind) {
            (Some(c), _, _) => parse_cid(c, "--event-class"),
            (None, Some(source), Some(kind)) => Ok(EventClass { source: source.clone(), kind: kind.clone() }.id()),
            _ => Err(coded("missing-event-class", "give --event-class ID, or --source and --kind")),
        }
    }
}

#[derive(Debug, Subcommand)]
enum StandingCmd {
    /// Binds a mint policy to a standing grant (signed by its issuer) and opens its mint ledger.
    New {
        /// The standing grant (issued by its issuer to itself).
        #[arg(long)]
        grant: PathBuf,
        /// The issuer's key file.
        #[arg(long)]
        key: PathBuf,
        #[command(flatten)]
        class: ClassArgs,
        /// The most one firing may mint (µJ).
        #[arg(long)]
        per_firing_uj: u64,
        /// The most firings ever.
        #[arg(long)]
        max_firings: u64,
        /// The policy file to write (must not exist).
        #[arg(long)]
        out: PathBuf,
        /// The mint ledger file to open (must not exist).
        #[arg(long)]
        ledger: PathBuf,
        /// The policy's nonce as 32 hex digits (default: fresh randomness).
        #[arg(long)]
        nonce: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Fires the standing grant for one event: mints a child for the worker and updates the ledger (exit 1 when refused).
    Fire {
        #[arg(long)]
        grant: PathBuf,
        #[arg(long)]
        policy: PathBuf,
        /// The mint ledger (replaced only when a child is minted).
        #[arg(long)]
        ledger: PathBuf,
        /// The holder's key file (the standing grant's subject, its issuer).
        #[arg(long)]
        key: PathBuf,
        #[command(flatten)]
        class: ClassArgs,
        /// The worker who receives the child grant (did:key).
        #[arg(long)]
        subject: String,
        /// The child's budget in µJ (default: the policy's per-firing budget).
        #[arg(long)]
        budget_uj: Option<u64>,
        /// The clock, unix seconds (default: now).
        #[arg(long)]
        now: Option<u64>,
        /// The child grant file to write (must not exist).
        #[arg(long)]
        out: PathBuf,
        /// The child's nonce as 32 hex digits (default: fresh randomness).
        #[arg(long)]
        nonce: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Shows a mint ledger; with --grant and --policy, what is left and whether they belong together (exit 1 when not).
    Ledger {
        ledger: PathBuf,
        #[arg(long, requires = "policy")]
        grant: Option<PathBuf>,
        #[arg(long, requires = "grant")]
        policy: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

fn read_policy(path: &Path) -> anyhow::Result<SignedMintPolicy> {
    SignedMintPolicy::from_bytes(&read_bytes(path)?).map_err(|e| core_err(path, &e))
}

fn read_ledger(path: &Path) -> anyhow::Result<MintLedger> {
    MintLedger::from_bytes(&read_bytes(path)?).map_err(|e| core_err(path, &e))
}

fn policy_human(p: &SignedMintPolicy) -> String {
    let q = p.policy();
    let mut s = String::new();
    let _ = writeln!(s, "mint policy {}", p.id());
    let _ = writeln!(s, "  grant          {}", q.grant_id);
    let _ = writeln!(s, "  issuer         {}", q.issuer);
    let _ = writeln!(s, "  signature      {}", if p.verify_signature() { "valid for issuer" } else { "INVALID" });
    let _ = writeln!(s, "  event class    {}", q.event_class);
    let _ = writeln!(s, "  per firing     {} µJ", q.per_firing_uj);
    let _ = writeln!(s, "  max firings    {}", q.max_firings);
    s
}

fn ledger_human(l: &MintLedger) -> String {
    format!(
        "mint ledger\n  grant          {}\n  policy         {}\n  firings        {}\n  minted         {} µJ\n",
        l.grant_id(),
        l.policy_id(),
        l.firings(),
        l.spent_uj()
    )
}

fn policy_json(p: &SignedMintPolicy) -> serde_json::Value {
    json!({"type": "mint-policy", "id": p.id(), "signature_valid_for_issuer": p.verify_signature(), "policy": p.policy()})
}

/// `jcp inspect` of a mint policy (exit 1 when its signature does not verify
/// under its issuer; whether that is the grant's issuer needs the grant).
pub(crate) fn inspect_policy(file: &Path, v: &Value, json: bool) -> anyhow::Result<ExitCode> {
    let p = SignedMintPolicy::from_value(v).map_err(|e| core_err(file, &e))?;
    emit(json, &policy_json(&p), || policy_human(&p))?;
    Ok(ExitCode::from(if p.verify_signature() { CLEAN } else { FINDINGS }))
}

/// `jcp inspect` of a mint ledger.
pub(crate) fn inspect_ledger(file: &Path, v: &Value, json: bool) -> anyhow::Result<ExitCode> {
    let l = MintLedger::from_value(v).map_err(|e| core_err(file, &e))?;
    emit(json, &json!({"type": "mint-ledger", "ledger": l}), || ledger_human(&l))?;
    Ok(ExitCode::from(CLEAN))
}

pub fn run(args: StandingArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        StandingCmd::New { grant, key, class, per_firing_uj, max_firings, out, ledger, nonce, json } => {
            let g = read_grant(&grant)?;
            let issuer = read_key(&key)?;
            let p = match MintPolicy::issue(
                &g,
                &issuer,
                class.id()?,
                per_firing_uj,
                max_firings,
                nonce_arg(nonce.as_ref())?,
            ) {
                Ok(p) => p,
                Err(e) => {
                    let r = Refusal::from(&e);
                    emit(json, &json!({"refused": r}), || format!("policy refused: {}\nnothing written", r.message))?;
                    return Ok(ExitCode::from(FINDINGS));
                }
            };
            let l = MintLedger::open(&p);
            create_file(&out, &p.to_bytes())?;
            create_file(&ledger, &l.to_bytes())?;
            let mut j = policy_json(&p);
            j["file"] = json!(out);
            j["ledger"] = json!({"file": ledger, "ledger": l});
            emit(json, &j, || {
                format!("{}written to {}\nledger opened at {}", policy_human(&p), out.display(), ledger.display())
            })?;
        }
        StandingCmd::Fire { grant, policy, ledger, key, class, subject, budget_uj, now, out, nonce, json } => {
            let standing = read_grant(&grant)?;
            let p = read_policy(&policy)?;
            let mut mint_ledger = read_ledger(&ledger)?;
            let minter = read_key(&key)?;
            if out.exists() {
                return Err(coded(
                    "output-exists",
                    format!("{} exists: a firing writes a new child file", out.display()),
                ));
            }
            let request = FiringRequest {
                event_class: class.id()?,
                subject: parse_did(&subject)?,
                budget_uj,
                nonce: nonce_arg(nonce.as_ref())?,
            };
            let child = match mint_ledger.fire(&standing, &p, &minter, &request, now_or(now)) {
                Ok(c) => c,
                Err(e) => {
                    let r = Refusal::from(&e);
                    emit(json, &json!({"refused": r, "ledger": mint_ledger}), || {
                        format!(
                            "firing refused: {}\nledger unchanged: {} firings, {} µJ minted",
                            r.message,
                            mint_ledger.firings(),
                            mint_ledger.spent_uj()
                        )
                    })?;
                    return Ok(ExitCode::from(FINDINGS));
                }
            };
            // The ledger first: a crash between the two writes leaves a firing
            // counted that minted nothing, never a child the ledger missed.
            replace_file(&ledger, &mint_ledger.to_bytes())?;
            create_file(&out, &child.to_bytes())?;
            let view = StandingView::new(&standing, &p, &mint_ledger);
            emit(
                json,
                &json!({"child": {"file": out, "id": child.id(), "grant": child.grant()}, "standing": view}),
                || {
                    format!(
                        "minted {} -> {} ({} µJ), written to {}\nledger: {} firings, {} µJ minted; {} firings and {} µJ left",
                        child.id(),
                        child.grant().subject,
                        child.grant().budget_uj,
                        out.display(),
                        mint_ledger.firings(),
                        mint_ledger.spent_uj(),
                        view.firings_left,
                        view.budget_left_uj
                    )
                },
            )?;
        }
        StandingCmd::Ledger { ledger, grant, policy, json } => {
            let l = read_ledger(&ledger)?;
            let (Some(grant), Some(policy)) = (grant, policy) else {
                emit(json, &json!({"type": "mint-ledger", "ledger": l}), || ledger_human(&l))?;
                return Ok(ExitCode::from(CLEAN));
            };
            let view = StandingView::new(&read_grant(&grant)?, &read_policy(&policy)?, &l);
            emit(json, &view, || {
                let mut s = ledger_human(&l);
                let _ = writeln!(s, "  left           {} firings, {} µJ", view.firings_left, view.budget_left_uj);
                if let Some(r) = &view.refusal {
                    let _ = writeln!(s, "  refused: {}", r.message);
                }
                s
            })?;
            return Ok(ExitCode::from(if view.refusal.is_none() { CLEAN } else { FINDINGS }));
        }
    }
    Ok(ExitCode::from(CLEAN))
}
