//! `jcp key`, `jcp grant`, `jcp decide`, `jcp inspect`: the protocol core
//! (spec §2, §4, §6, §7) from the command line. Objects travel as files of
//! canonical det-CBOR; keys as small JSON files holding the seed (mode 0600).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};
use clap::{Args, Subcommand};
use jcp::cbor::{self, ContentId, Value};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::flow::{text_list, Label};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{
    attenuate, content_id_from_text, resource_from_text, shard, Attenuation, Capability, Caveat, Funds, Grant,
    SignedGrant, Slice,
};
use jcp::identity::{Did, KeyFile, Keypair};
use jcp::revocation::{Revocation, SignedRevocation};
use jcp_receipt::runtime::DurableGate;
use serde_json::json;

use crate::out::{coded, emit, jcp_err, CLEAN, FINDINGS};

// ------------------------------------------------------------------ files

/// A passphrase from a file: its first line, without the line end.
fn read_passphrase(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading passphrase file {}", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

/// Reads a key file of `jcp key new` (`{did, seed}` JSON), checking that the
/// did is the seed's, or an encrypted steward key file (`keystore`) opened
/// with the passphrase in the file `JCP_PASSPHRASE_FILE` names. Every
/// subcommand that signs reads keys through this.
pub(crate) fn read_key(path: &Path) -> anyhow::Result<Keypair> {
    let bytes = std::fs::read(path).with_context(|| format!("reading key file {}", path.display()))?;
    if keystore::is_key_file(&bytes) {
        let pf = std::env::var_os("JCP_PASSPHRASE_FILE").ok_or_else(|| {
            coded(
                "key-locked",
                format!(
                    "{} is encrypted at rest: set JCP_PASSPHRASE_FILE to a file holding its passphrase",
                    path.display()
                ),
            )
        })?;
        let pass = read_passphrase(Path::new(&pf))?;
        return keystore::unlock(path, &pass).map_err(|e| coded(e.code(), e.to_string()));
    }
    KeyFile::decode(&bytes).map_err(|e| core_err(path, &e))
}

pub(crate) fn write_key(path: &Path, kp: &Keypair) -> anyhow::Result<()> {
    write_private(path, KeyFile::encode(kp).as_bytes())
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {} (it must not exist yet)", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

pub(crate) fn read_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

pub(crate) use crate::out::core_err;

pub(crate) fn read_grant(path: &Path) -> anyhow::Result<SignedGrant> {
    SignedGrant::from_bytes(&read_bytes(path)?).map_err(|e| core_err(path, &e))
}

pub(crate) fn write_object(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Replaces a file by writing a sibling temporary file and renaming it over
/// the original, so an interrupted write never leaves half an object.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

/// Creates a file that must not exist yet.
pub(crate) fn create_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {} (it must not exist yet)", path.display()))?;
    f.write_all(bytes).with_context(|| format!("writing {}", path.display()))
}

/// Unix seconds now, or the given clock.
pub(crate) fn now_or(at: Option<u64>) -> u64 {
    at.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

pub(crate) fn parse_did(s: &str) -> anyhow::Result<Did> {
    Did::parse(s).map_err(|e| coded(e.code(), format!("{s:?}: {e}")))
}

/// The text forms below are the protocol crate's (`FromStr` and `*_from_text`
/// in `jcp`); these only turn its errors into the CLI's.
fn text_err(e: &jcp::Error) -> anyhow::Error {
    jcp_err(e, e.to_string())
}

pub(crate) fn parse_cid(s: &str, what: &'static str) -> anyhow::Result<ContentId> {
    content_id_from_text(s, what).map_err(|e| text_err(&e))
}

/// A resource: a content id, or `text:NAME` for people ([`jcp::grant::resource_from_text`]).
pub(crate) fn parse_resource(s: &str) -> anyhow::Result<ContentId> {
    resource_from_text(s).map_err(|e| text_err(&e))
}

/// `HwShunt | ModelBased | Estimator` (§5), for every subcommand that states a cost.
pub(crate) fn parse_provenance(s: &str) -> anyhow::Result<Provenance> {
    Provenance::parse(s)
        .ok_or_else(|| coded("invalid-provenance", format!("{s:?} is not HwShunt|ModelBased|Estimator")))
}

/// A money amount `CURRENCY:MINOR` (§4.8).
pub(crate) fn parse_money(s: &str) -> anyhow::Result<Funds> {
    s.parse().map_err(|e| text_err(&e))
}

/// `integrity;origins;readers` or `bottom` / `top` (§4.10).
pub(crate) fn parse_label(s: &str) -> anyhow::Result<Label> {
    s.parse().map_err(|e| text_err(&e))
}

/// `Name=argument`, e.g. `MaxCostUj=100`, `ActionIn=read,write`,
/// `FlowBelow=untrusted;search;all;1000` (§4.9).
pub(crate) fn parse_caveat(s: &str) -> anyhow::Result<Caveat> {
    s.parse().map_err(|e| text_err(&e))
}

fn grant_json(g: &SignedGrant) -> serde_json::Value {
    json!({
        "type": "grant",
        "id": g.id(),
        "signature_valid": g.verify_signature(),
        "grant": g.grant(),
    })
}

fn grant_human(g: &SignedGrant) -> String {
    let gr = g.grant();
    let mut s = format!("grant {}\n", g.id());
    s += &format!("  signature   {}\n", if g.verify_signature() { "valid (issuer, verify_strict)" } else { "INVALID" });
    s += &format!("  issuer      {}\n  subject     {}\n", gr.issuer, gr.subject);
    s += &format!("  resource    {}\n  actions     {}\n", gr.capability.resource, gr.capability.actions.join(", "));
    s += &format!("  budget      {} µJ\n", gr.budget_uj);
    if let Some(f) = &gr.budget_funds {
        s += &format!("  funds       {} {} (minor units)\n", f.minor, f.currency);
    }
    s += &format!("  expiry      {}\n", if gr.expiry == 0 { "never".to_owned() } else { gr.expiry.to_string() });
    s += &format!("  parent      {}\n", gr.parent.map_or("none (root)".to_owned(), |p| p.to_hex()));
    s += &format!(
        "  depth       {}\n",
        gr.delegate_depth.map_or("unlimited".to_owned(), |d| if d == 0 {
            "0 (leaf-only)".to_owned()
        } else {
            d.to_string()
        })
    );
    for c in &gr.caveats {
        s += &format!("  caveat      {}\n", serde_json::to_string(c).unwrap_or_default());
    }
    s
}

// ------------------------------------------------------------------ key

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

// ------------------------------------------------------------------ grant

/// `jcp grant`: issue, attenuate, shard, revoke, inspect (§4).
#[derive(Debug, Args)]
pub struct GrantArgs {
    #[command(subcommand)]
    cmd: GrantCmd,
}

#[derive(Debug, Args)]
struct Narrowing {
    /// The child's subject (did:key). Default: the parent's subject.
    #[arg(long)]
    subject: Option<String>,
    /// Actions, comma separated.
    #[arg(long)]
    actions: Option<String>,
    /// Joule ceiling in µJ.
    #[arg(long)]
    budget_uj: Option<u64>,
    /// Money ceiling CURRENCY:MINOR (e.g. USD:500).
    #[arg(long)]
    funds: Option<String>,
    /// Expiry, unix seconds (0 = never).
    #[arg(long)]
    expiry: Option<u64>,
    /// Further delegation hops permitted (0 = leaf-only).
    #[arg(long)]
    depth: Option<u64>,
    /// A caveat Name=argument (repeatable), e.g. MaxCostUj=100, ActionIn=read, FlowBelow=untrusted;search;all;1000.
    #[arg(long = "caveat")]
    caveats: Vec<String>,
    /// The nonce as 32 hex digits (default: fresh randomness).
    #[arg(long)]
    nonce: Option<String>,
}

#[derive(Debug, Subcommand)]
enum GrantCmd {
    /// Issues a root grant signed by the issuer's key, or (--issuer DID --unsigned-out F) writes its
    /// canonical unsigned bytes for an outside signer such as a threshold group (§2.2).
    Issue {
        /// The issuer's key file.
        #[arg(long, required_unless_present = "issuer", conflicts_with = "issuer")]
        key: Option<PathBuf>,
        /// The issuer's did:key, when the signature is made elsewhere (needs --unsigned-out).
        #[arg(long, requires = "unsigned_out")]
        issuer: Option<String>,
        /// The resource: 64 hex digits, or text:NAME.
        #[arg(long)]
        resource: String,
        #[command(flatten)]
        n: Narrowing,
        #[arg(long, required_unless_present = "unsigned_out", conflicts_with = "unsigned_out")]
        out: Option<PathBuf>,
        /// Writes the grant's canonical unsigned bytes (what the issuer signs) instead of signing.
        #[arg(long)]
        unsigned_out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Joins an unsigned grant and a 64-byte signature made elsewhere; refused unless it verifies under the issuer.
    Assemble {
        #[arg(long)]
        unsigned: PathBuf,
        /// The raw 64-byte signature (e.g. `jcp threshold aggregate --out`).
        #[arg(long)]
        signature: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Mints a strictly weaker child (§4.1), signed by the parent's subject.
    Attenuate {
        #[arg(long)]
        parent: PathBuf,
        /// The holder's key file (the parent's subject).
        #[arg(long)]
        key: PathBuf,
        #[command(flatten)]
        n: Narrowing,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Mints sibling shards whose budgets sum to no more than the parent's (§4.5).
    Shard {
        #[arg(long)]
        parent: PathBuf,
        #[arg(long)]
        key: PathBuf,
        /// DID=MICROJOULES, one per shard.
        #[arg(long = "slice", required = true)]
        slices: Vec<String>,
        /// Directory for the shard files (shard-0.jcp, …).
        #[arg(long)]
        out_dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Revokes a grant; only its issuer can (§4.3).
    Revoke {
        #[arg(long)]
        grant: PathBuf,
        /// The issuer's key file.
        #[arg(long)]
        key: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Shows a grant with its content id and signature status.
    Inspect {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn nonce_arg(n: Option<&String>) -> anyhow::Result<Option<[u8; 16]>> {
    n.map(|s| {
        hex::decode(s)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| coded("invalid-nonce", "--nonce must be 32 hex digits"))
    })
    .transpose()
}

fn emit_grant(json: bool, g: &SignedGrant, out: &Path) -> anyhow::Result<()> {
    write_object(out, &g.to_bytes())?;
    let mut j = grant_json(g);
    j["file"] = json!(out);
    emit(json, &j, || format!("{}written to {}", grant_human(g), out.display()))
}

/// `jcp grant assemble`: an unsigned grant and an outside signature (a
/// threshold aggregate, §2.2), joined only if it verifies under the issuer.
fn assemble(unsigned: &Path, signature: &Path, out: &Path, json: bool) -> anyhow::Result<()> {
    let bytes = read_bytes(unsigned)?;
    let v = cbor::decode_strict(&bytes).map_err(|e| coded(e.code(), format!("{}: {e}", unsigned.display())))?;
    let grant = Grant::from_value(&v).map_err(|e| core_err(unsigned, &e))?;
    let sig: [u8; 64] = read_bytes(signature)?.try_into().map_err(|b: Vec<u8>| {
        coded("invalid-signature-file", format!("{}: {} bytes, a signature is 64", signature.display(), b.len()))
    })?;
    let g = SignedGrant::from_parts(grant, sig).map_err(|e| core_err(signature, &e))?;
    emit_grant(json, &g, out)
}

pub fn run_grant(args: GrantArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        GrantCmd::Issue { key, issuer, resource, n, out, unsigned_out, json } => {
            let signer = key.as_deref().map(read_key).transpose()?;
            let issuer_did = match (&signer, &issuer) {
                (Some(k), _) => k.did(),
                (None, Some(d)) => parse_did(d)?,
                (None, None) => bail!(coded("missing-issuer", "--key or --issuer is required")),
            };
            let subject = match &n.subject {
                Some(s) => parse_did(s)?,
                None => bail!(coded("missing-subject", "--subject is required for a root grant")),
            };
            let actions =
                n.actions.as_deref().map(text_list).ok_or_else(|| coded("missing-actions", "--actions is required"))?;
            let budget_uj = n.budget_uj.ok_or_else(|| coded("missing-budget", "--budget-uj is required"))?;
            let grant = Grant {
                issuer: issuer_did,
                subject,
                capability: Capability { resource: parse_resource(&resource)?, actions },
                budget_uj,
                budget_funds: n.funds.as_deref().map(parse_money).transpose()?,
                caveats: n.caveats.iter().map(|c| parse_caveat(c)).collect::<Result<_, _>>()?,
                expiry: n.expiry.unwrap_or(0),
                parent: None,
                delegate_depth: n.depth,
                nonce: nonce_arg(n.nonce.as_ref())?.unwrap_or_else(jcp::identity::fresh_nonce),
            };
            match (signer, key, out, unsigned_out) {
                (Some(k), Some(kp), Some(out), None) => {
                    let g = grant.sign(&k).map_err(|e| core_err(&kp, &e))?;
                    emit_grant(json, &g, &out)?;
                }
                (None, None, None, Some(u)) => {
                    write_object(&u, &grant.canonical_bytes())?;
                    emit(
                        json,
                        &json!({"type": "unsigned-grant", "id": grant.id(), "issuer": grant.issuer, "file": u}),
                        || {
                            format!("unsigned grant {} (issuer {})\nwritten to {}: sign these bytes, then `jcp grant assemble`", grant.id(), grant.issuer, u.display())
                        },
                    )?;
                }
                _ => bail!(coded("invalid-arguments", "either --key with --out, or --issuer with --unsigned-out")),
            }
        }
        GrantCmd::Assemble { unsigned, signature, out, json } => assemble(&unsigned, &signature, &out, json)?,
        GrantCmd::Attenuate { parent, key, n, out, json } => {
            let p = read_grant(&parent)?;
            let holder = read_key(&key)?;
            let a = Attenuation {
                subject: n.subject.as_deref().map(parse_did).transpose()?,
                actions: n.actions.as_deref().map(text_list),
                budget_uj: n.budget_uj,
                budget_funds: n.funds.as_deref().map(parse_money).transpose()?,
                add_caveats: n.caveats.iter().map(|c| parse_caveat(c)).collect::<Result<_, _>>()?,
                expiry: n.expiry,
                delegate_depth: n.depth,
                nonce: nonce_arg(n.nonce.as_ref())?,
            };
            let g = attenuate(&p, &holder, a).map_err(|e| crate::out::jcp_err(&e, e.to_string()))?;
            emit_grant(json, &g, &out)?;
        }
        GrantCmd::Shard { parent, key, slices, out_dir, json } => {
            let p = read_grant(&parent)?;
            let holder = read_key(&key)?;
            let slices = slices
                .iter()
                .map(|s| {
                    let (d, uj) = s
                        .rsplit_once('=')
                        .ok_or_else(|| coded("invalid-slice", format!("{s:?}: expected DID=MICROJOULES")))?;
                    let budget_uj = uj
                        .parse()
                        .map_err(|_| coded("invalid-slice", format!("{s:?}: µJ must be an unsigned integer")))?;
                    Ok(Slice { subject: parse_did(d)?, budget_uj, nonce: None })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let shards = shard(&p, &holder, &slices).map_err(|e| crate::out::jcp_err(&e, e.to_string()))?;
            std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
            let mut files = Vec::new();
            for (i, s) in shards.iter().enumerate() {
                let f = out_dir.join(format!("shard-{i}.jcp"));
                write_object(&f, &s.to_bytes())?;
                files.push(
                    json!({"file": f, "id": s.id(), "subject": s.grant().subject, "budget_uj": s.grant().budget_uj}),
                );
            }
            emit(json, &json!({"parent": p.id(), "shards": files}), || {
                let mut t = format!("{} shards of {} ({} µJ)\n", shards.len(), p.id(), p.grant().budget_uj);
                for (i, s) in shards.iter().enumerate() {
                    t +=
                        &format!("  shard-{i}.jcp  {}  {} µJ  -> {}\n", s.id(), s.grant().budget_uj, s.grant().subject);
                }
                t
            })?;
        }
        GrantCmd::Revoke { grant, key, out, json } => {
            let g = read_grant(&grant)?;
            let issuer = read_key(&key)?;
            let r = Revocation::issue(&g, &issuer, None).map_err(|e| crate::out::jcp_err(&e, e.to_string()))?;
            write_object(&out, &r.to_bytes())?;
            emit(
                json,
                &json!({"type": "revocation", "id": r.id(), "revocation": r.revocation(), "file": out}),
                || format!("revocation {} of grant {}\nwritten to {}", r.id(), g.id(), out.display()),
            )?;
        }
        GrantCmd::Inspect { file, json } => return inspect(&file, json),
    }
    Ok(ExitCode::from(CLEAN))
}

// ------------------------------------------------------------------ inspect

/// `jcp inspect FILE`: any JCP object (grant, revocation, frame, key log, mint policy, mint ledger).
#[derive(Debug, Args)]
pub struct InspectArgs {
    file: PathBuf,
    #[arg(long)]
    json: bool,
}

pub fn run_inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    inspect(&args.file, args.json)
}

fn inspect(file: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let bytes = read_bytes(file)?;
    let v = cbor::decode_strict(&bytes).map_err(|e| coded(e.code(), format!("{}: {e}", file.display())))?;
    let id = ContentId::of_bytes(&bytes);
    if let Some(kind) = jcp_threshold::file::file_type(&bytes) {
        return crate::cmd::threshold::inspect(file, &bytes, &kind, json);
    }
    if v.get("grant").is_some() {
        let g = SignedGrant::from_value(&v).map_err(|e| core_err(file, &e))?;
        let ok = g.verify_signature();
        emit(json, &grant_json(&g), || grant_human(&g))?;
        return Ok(ExitCode::from(if ok { CLEAN } else { FINDINGS }));
    }
    if v.get("revocation").is_some() {
        let r = SignedRevocation::from_value(&v).map_err(|e| core_err(file, &e))?;
        let rv = r.revocation();
        // A revocation names its signer; the signature can be checked against
        // that key here. Whether the signer is the grant's issuer needs the grant.
        let sig_ok = r.verify_signature();
        emit(
            json,
            &json!({"type": "revocation", "id": r.id(), "signature_valid_for_revoked_by": sig_ok, "revocation": rv}),
            || {
                format!(
                "revocation {}\n  grant_id    {}\n  revoked_by  {}\n  signature   {}\n  (authority is checked against the grant: `jcp decide --revocation`)\n",
                r.id(), rv.grant_id, rv.revoked_by, if sig_ok { "valid for revoked_by" } else { "INVALID" }
            )
            },
        )?;
        return Ok(ExitCode::from(if sig_ok { CLEAN } else { FINDINGS }));
    }
    if v.get("kind").is_some() {
        let f = Frame::from_value(&v).map_err(|e| core_err(file, &e))?;
        emit(json, &json!({"type": "frame", "id": id, "frame": f}), || {
            format!(
                "frame {}\n  kind        {}\n  trust       {}\n  grant_id    {}\n  action      {}\n  resource    {}\n  payload     {}\n  model       {}\n",
                id, f.kind.as_str(), f.trust.as_str(), f.grant_id, f.action, f.resource, f.payload_hash,
                f.model.map_or("none".to_owned(), |m| m.to_hex())
            )
        })?;
        return Ok(ExitCode::from(CLEAN));
    }
    if jcp::rotation::KeyLog::is_key_log(&v) {
        return crate::cmd::identity::inspect_key_log(file, &v, json);
    }
    if v.get("policy").is_some() {
        return crate::cmd::standing::inspect_policy(file, &v, json);
    }
    if jcp::standing::MintLedger::is_ledger(&v) {
        return crate::cmd::standing::inspect_ledger(file, &v, json);
    }
    Err(coded(
        "unknown-object",
        format!(
            "{}: canonical CBOR, but not a grant, revocation, frame, key log, mint policy or mint ledger",
            file.display()
        ),
    ))
}

// ------------------------------------------------------------------ frame

/// `jcp frame new`: writes a frame (§6) for a grant, as canonical CBOR.
#[derive(Debug, Args)]
pub struct FrameArgs {
    #[command(subcommand)]
    cmd: FrameCmd,
}

#[derive(Debug, Subcommand)]
enum FrameCmd {
    /// Builds a frame exercising a grant and writes it to a file.
    New {
        /// The grant the frame exercises (its id and resource fill the frame).
        #[arg(long)]
        grant: PathBuf,
        #[command(flatten)]
        f: FrameFlags,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// The flags a frame is built from.
#[derive(Debug, Args)]
pub(crate) struct FrameFlags {
    /// The action.
    #[arg(long, default_value = "read")]
    action: String,
    /// The payload's content id. Default: the id of the empty payload.
    #[arg(long)]
    payload_hash: Option<String>,
    /// The model's content id.
    #[arg(long)]
    model: Option<String>,
    /// control | data.
    #[arg(long, default_value = "control")]
    trust: String,
    /// tool-call | tool-result | agent-task | agent-reply.
    #[arg(long, default_value = "tool-call")]
    kind: String,
    /// The resource (hex or text:NAME); default: the grant's resource.
    #[arg(long)]
    resource: Option<String>,
}

pub(crate) fn build_frame(leaf: &SignedGrant, a: &FrameFlags) -> anyhow::Result<Frame> {
    Ok(Frame {
        kind: FrameKind::parse(&a.kind)
            .ok_or_else(|| coded("invalid-frame", format!("unknown frame kind {:?}", a.kind)))?,
        trust: match a.trust.as_str() {
            "control" => Trust::Control,
            "data" => Trust::Data,
            other => bail!(coded("invalid-frame", format!("trust {other:?} is not control|data"))),
        },
        grant_id: leaf.id(),
        action: a.action.clone(),
        resource: a.resource.as_deref().map(parse_resource).transpose()?.unwrap_or(leaf.grant().capability.resource),
        payload_hash: a
            .payload_hash
            .as_deref()
            .map(|p| parse_cid(p, "payload-hash"))
            .transpose()?
            .unwrap_or_else(|| ContentId::of_bytes(&Value::Bytes(vec![]).encode())),
        model: a.model.as_deref().map(|m| parse_cid(m, "model")).transpose()?,
    })
}

pub fn run_frame(args: FrameArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        FrameCmd::New { grant, f, out, json } => {
            let g = read_grant(&grant)?;
            let frame = build_frame(&g, &f)?;
            write_object(&out, &frame.to_value().encode())?;
            emit(json, &json!({"type": "frame", "id": frame.id(), "frame": frame, "file": out}), || {
                format!("frame {} for grant {}\nwritten to {}", frame.id(), g.id(), out.display())
            })?;
        }
    }
    Ok(ExitCode::from(CLEAN))
}

// ------------------------------------------------------------------ decide

/// `jcp decide`: frame + chain + cost → decision (§7). Exit 0 allow, 1 deny.
#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The chain, root first (a single root grant is a one-link chain).
    #[arg(long = "chain", required = true, num_args = 1..)]
    chain: Vec<PathBuf>,
    /// The caller's did:key. Default: the leaf's subject.
    #[arg(long)]
    caller: Option<String>,
    /// A frame file (canonical CBOR). Otherwise the frame is built from the flags below.
    #[arg(long)]
    frame: Option<PathBuf>,
    #[command(flatten)]
    f: FrameFlags,
    /// The metered cost in µJ.
    #[arg(long)]
    cost_uj: u64,
    /// HwShunt | ModelBased | Estimator.
    #[arg(long, default_value = "Estimator")]
    provenance: String,
    /// Mark the cost Partial (§5.2).
    #[arg(long)]
    partial: bool,
    /// A money cost CURRENCY:MINOR.
    #[arg(long)]
    money: Option<String>,
    /// The enforcement point's clock (unix seconds). Default: now.
    #[arg(long)]
    now: Option<u64>,
    /// The argument's label: bottom | top | INTEGRITY;ORIGINS;READERS. Absent = not computed (fails closed against a ceiling).
    #[arg(long)]
    flow: Option<String>,
    /// A revocation file to admit first (repeatable; authority checked against the chain).
    #[arg(long = "revocation")]
    revocations: Vec<PathBuf>,
    /// A trust root RESOURCE=DID (repeatable; RESOURCE as hex or text:NAME).
    #[arg(long = "trust-root")]
    trust_roots: Vec<String>,
    /// The enforcement point's receipt stream (§8.1, §4.11): opened as its
    /// only writer and replayed first, so spend accumulates across calls;
    /// the decision is sealed and recorded there. Needs --steward-key.
    #[arg(long, requires = "steward_key")]
    stream: Option<PathBuf>,
    /// The steward's key file (`jcp key new`): it seals the receipt.
    #[arg(long, requires = "stream")]
    steward_key: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

pub fn run_decide(a: DecideArgs) -> anyhow::Result<ExitCode> {
    let chain = a.chain.iter().map(|p| read_grant(p)).collect::<anyhow::Result<Vec<_>>>()?;
    let leaf = chain.last().ok_or_else(|| anyhow!("--chain needs at least one grant"))?;
    let caller = match &a.caller {
        Some(c) => parse_did(c)?,
        None => leaf.grant().subject,
    };
    let frame = match &a.frame {
        Some(p) => Frame::from_bytes(&read_bytes(p)?).map_err(|e| core_err(p, &e))?,
        None => build_frame(leaf, &a.f)?,
    };
    let provenance = parse_provenance(&a.provenance)?;
    let cost = Cost {
        energy: Energy {
            uj: a.cost_uj,
            provenance,
            coverage: if a.partial { Coverage::Partial } else { Coverage::Whole },
        },
        money: a.money.as_deref().map(parse_money).transpose()?,
    };
    let mut gate = Gate::new();
    for tr in &a.trust_roots {
        let (r, d) =
            tr.split_once('=').ok_or_else(|| coded("invalid-trust-root", format!("{tr:?}: expected RESOURCE=DID")))?;
        gate.add_trust_root(parse_resource(r)?, parse_did(d)?);
    }
    let mut revocations = Vec::new();
    for rp in &a.revocations {
        let r = SignedRevocation::from_bytes(&read_bytes(rp)?).map_err(|e| core_err(rp, &e))?;
        let target = chain.iter().find(|g| g.id() == r.revocation().grant_id).ok_or_else(|| {
            coded("revocation-unrelated", format!("{}: names a grant not in the chain", rp.display()))
        })?;
        revocations.push((rp, r, target));
    }
    let label = a.flow.as_deref().map(parse_label).transpose()?;
    let now = match a.now {
        Some(n) => n,
        None => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
    };
    let req = Request { frame: &frame, chain: &chain, caller: &caller, cost: &cost, now, flow: label.as_ref() };
    // clap makes --stream and --steward-key go together.
    let (d, recorded) = if let (Some(path), Some(key)) = (&a.stream, &a.steward_key) {
        let (d, r) = decide_recorded(path, read_key(key)?, gate, &revocations, &req)?;
        (d, Some(r))
    } else {
        for (rp, r, target) in &revocations {
            gate.admit_revocation(r, target).map_err(|e| core_err(rp, &e))?;
        }
        (gate.decide(&req), None)
    };
    let mut out = json!({"decision": d, "frame_id": frame.id(), "now": now});
    if let Some(r) = &recorded {
        out["receipt"] = r.clone();
    }
    emit(a.json, &out, || {
        let mut s = match d.reason() {
            None => format!(
                "ALLOW  debited {} µJ from {} link(s); leaf remaining {} of {} µJ\n",
                d.debited_uj,
                d.chain_ids.len(),
                d.budget_remaining_uj,
                d.budget_uj
            ),
            Some(r) => format!("DENY   {r}\n  {}\n  nothing debited\n", d.detail),
        };
        if let Some(r) = &recorded {
            s += &format!(
                "  receipt {} recorded at offset {} of {} (steward {})\n",
                r["id"].as_str().unwrap_or("?"),
                r["offset"],
                r["stream"].as_str().unwrap_or("?"),
                r["steward"].as_str().unwrap_or("?")
            );
        }
        s
    })?;
    Ok(ExitCode::from(if d.is_allow() { CLEAN } else { FINDINGS }))
}

/// `jcp decide --stream`: opens the stream as its single writer (§4.11:
/// another writer holding it is an error naming the file), replays it
/// through `gate` so spend accumulates across calls, admits the given
/// revocations not already replayed (each recorded before it applies, at
/// the point's current marker), then decides, seals and records the
/// receipt before returning (§8, §4.11). Returns the decision and the
/// receipt's `{id, offset, stream, steward}`.
fn decide_recorded(
    path: &Path,
    steward: Keypair,
    gate: Gate,
    revocations: &[(&PathBuf, SignedRevocation, &SignedGrant)],
    req: &Request<'_>,
) -> anyhow::Result<(jcp::decision::Decision, serde_json::Value)> {
    // Every message names the file (most of the stream's errors do already).
    let stream_err = |e: jcp_receipt::Error| {
        let (msg, file) = (e.to_string(), path.display().to_string());
        coded(e.code(), if msg.contains(&file) { msg } else { format!("{file}: {msg}") })
    };
    let (mut dg, _replay) = DurableGate::open(path, steward, gate).map_err(stream_err)?;
    for (rp, r, target) in revocations {
        if dg.gate().is_revoked(&target.id()) {
            continue;
        }
        let marker = dg.known_through().unwrap_or(0);
        dg.admit_revocation(r, target, marker).map_err(|e| coded(e.code(), format!("{}: {e}", rp.display())))?;
    }
    let rec = dg.decide(req).map_err(stream_err)?;
    let info = json!({
        "id": rec.receipt,
        "offset": rec.offset,
        "stream": path.display().to_string(),
        "steward": dg.steward().to_did_string(),
    });
    dg.close().map_err(stream_err)?;
    Ok((rec.decision, info))
}
