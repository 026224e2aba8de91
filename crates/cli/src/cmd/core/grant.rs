//! `jcp grant`: issue, assemble, attenuate (§4.1), shard (§4.5), revoke
//! (§4.3) and inspect grants (§4).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use jcp::cbor;
use jcp::flow::text_list;
use jcp::grant::{attenuate, shard, Attenuation, Capability, Grant, SignedGrant, Slice};
use jcp::revocation::Revocation;
use serde_json::json;

use super::files::{core_err, read_bytes, read_grant, read_key, write_object};
use super::inspect::inspect;
use super::text::{nonce_arg, parse_caveat, parse_did, parse_money, parse_resource};
use crate::out::{coded, emit, CLEAN};

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
        /// SUBJECT=MICROJOULES[+MINOR]@POINT, one per shard: who holds it, its joules, its share of the
        /// parent's money ceiling (required where the parent has one), and the enforcement point (its
        /// steward's did) that enforces it and no other (§4.5).
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
            issue(key, issuer.as_deref(), &resource, &n, out, unsigned_out, json)?;
        }
        GrantCmd::Assemble { unsigned, signature, out, json } => assemble(&unsigned, &signature, &out, json)?,
        GrantCmd::Attenuate { parent, key, n, out, json } => attenuate_to(&parent, &key, &n, &out, json)?,
        GrantCmd::Shard { parent, key, slices, out_dir, json } => shard_to(&parent, &key, &slices, &out_dir, json)?,
        GrantCmd::Revoke { grant, key, out, json } => revoke(&grant, &key, &out, json)?,
        GrantCmd::Inspect { file, json } => return inspect(&file, json),
    }
    Ok(ExitCode::from(CLEAN))
}

/// `jcp grant issue`: a root grant (§4) signed with `--key`, or its
/// canonical unsigned bytes for an outside signer (`--issuer`, §2.2).
fn issue(
    key: Option<PathBuf>,
    issuer: Option<&str>,
    resource: &str,
    n: &Narrowing,
    out: Option<PathBuf>,
    unsigned_out: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<()> {
    let signer = key.as_deref().map(read_key).transpose()?;
    let issuer_did = match (&signer, issuer) {
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
        capability: Capability { resource: parse_resource(resource)?, actions },
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
                    format!(
                        "unsigned grant {} (issuer {})\nwritten to {}: sign these bytes, then `jcp grant assemble`",
                        grant.id(),
                        grant.issuer,
                        u.display()
                    )
                },
            )?;
        }
        _ => bail!(coded("invalid-arguments", "either --key with --out, or --issuer with --unsigned-out")),
    }
    Ok(())
}

/// `jcp grant attenuate`: a strictly weaker child (§4.1), signed by the
/// parent's subject.
fn attenuate_to(parent: &Path, key: &Path, n: &Narrowing, out: &Path, json: bool) -> anyhow::Result<()> {
    let p = read_grant(parent)?;
    let holder = read_key(key)?;
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
    emit_grant(json, &g, out)
}

/// One `--slice`: `SUBJECT=MICROJOULES[+MINOR]@POINT` (§4.5: who holds the
/// shard, its joules, its share of the parent's money ceiling in minor
/// units where the parent has one, and the point that enforces it).
fn parse_slice(s: &str) -> anyhow::Result<Slice> {
    let form = "expected SUBJECT=MICROJOULES[+MINOR]@POINT";
    let bad = |why: &str| coded("invalid-slice", format!("{s:?}: {why}"));
    let (left, point) = s.split_once('@').ok_or_else(|| bad(form))?;
    let (subject, amounts) = left.rsplit_once('=').ok_or_else(|| bad(form))?;
    let (uj, minor) = match amounts.split_once('+') {
        Some((uj, m)) => (uj, Some(m.parse().map_err(|_| bad("money minor units must be an unsigned integer"))?)),
        None => (amounts, None),
    };
    let budget_uj = uj.parse().map_err(|_| bad("µJ must be an unsigned integer"))?;
    Ok(Slice { subject: parse_did(subject)?, budget_uj, point: parse_did(point)?, funds_minor: minor, nonce: None })
}

/// `jcp grant shard`: sibling shards whose budgets sum to no more than the
/// parent's (§4.5), one file each, each bound to its point.
fn shard_to(parent: &Path, key: &Path, slices: &[String], out_dir: &Path, json: bool) -> anyhow::Result<()> {
    let p = read_grant(parent)?;
    let holder = read_key(key)?;
    let slices = slices.iter().map(|s| parse_slice(s)).collect::<anyhow::Result<Vec<_>>>()?;
    let shards = shard(&p, &holder, &slices).map_err(|e| crate::out::jcp_err(&e, e.to_string()))?;
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut files = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        let f = out_dir.join(format!("shard-{i}.jcp"));
        write_object(&f, &s.to_bytes())?;
        let g = s.grant();
        files.push(json!({"file": f, "id": s.id(), "subject": g.subject, "budget_uj": g.budget_uj,
            "point": g.bound_point(), "budget_funds": g.budget_funds}));
    }
    emit(json, &json!({"parent": p.id(), "shards": files}), || {
        let mut t = format!("{} shards of {} ({} µJ)\n", shards.len(), p.id(), p.grant().budget_uj);
        for (i, s) in shards.iter().enumerate() {
            let g = s.grant();
            let money = g.budget_funds.as_ref().map_or_else(String::new, |f| format!(" + {} {}", f.minor, f.currency));
            let point = g.bound_point().map_or_else(String::new, |p| format!(", enforced only at {p}"));
            let _ = writeln!(t, "  shard-{i}.jcp  {}  {} µJ{money}  -> {}{point}", s.id(), g.budget_uj, g.subject);
        }
        t
    })
}

/// `jcp grant revoke`: the grant's revocation (§4.3), signed by its issuer.
fn revoke(grant: &Path, key: &Path, out: &Path, json: bool) -> anyhow::Result<()> {
    let g = read_grant(grant)?;
    let issuer = read_key(key)?;
    let r = Revocation::issue(&g, &issuer, None).map_err(|e| crate::out::jcp_err(&e, e.to_string()))?;
    write_object(out, &r.to_bytes())?;
    emit(json, &json!({"type": "revocation", "id": r.id(), "revocation": r.revocation(), "file": out}), || {
        format!("revocation {} of grant {}\nwritten to {}", r.id(), g.id(), out.display())
    })
}

/// A grant as JSON: its id, whether its signature verifies, the grant.
pub(super) fn grant_json(g: &SignedGrant) -> serde_json::Value {
    json!({
        "type": "grant",
        "id": g.id(),
        "signature_valid": g.verify_signature(),
        "grant": g.grant(),
    })
}

/// A grant for people: its id, signature status and every field.
pub(super) fn grant_human(g: &SignedGrant) -> String {
    let gr = g.grant();
    let mut s = format!("grant {}\n", g.id());
    let signature = if g.verify_signature() { "valid (issuer, Ed25519)" } else { "INVALID" };
    let _ = writeln!(s, "  signature   {signature}");
    let _ = writeln!(s, "  issuer      {}\n  subject     {}", gr.issuer, gr.subject);
    let _ = writeln!(s, "  resource    {}\n  actions     {}", gr.capability.resource, gr.capability.actions.join(", "));
    let _ = writeln!(s, "  budget      {} µJ", gr.budget_uj);
    if let Some(f) = &gr.budget_funds {
        let _ = writeln!(s, "  funds       {} {} (minor units)", f.minor, f.currency);
    }
    let _ = writeln!(s, "  expiry      {}", if gr.expiry == 0 { "never".to_owned() } else { gr.expiry.to_string() });
    let _ = writeln!(s, "  parent      {}", gr.parent.map_or("none (root)".to_owned(), |p| p.to_hex()));
    let depth = gr.delegate_depth.map_or("unlimited".to_owned(), |d| {
        if d == 0 {
            "0 (leaf-only)".to_owned()
        } else {
            d.to_string()
        }
    });
    let _ = writeln!(s, "  depth       {depth}");
    for c in &gr.caveats {
        let _ = writeln!(s, "  caveat      {}", serde_json::to_string(c).unwrap_or_default());
    }
    s
}
