//! `jcp decide`: the decision (§7) for a frame, a chain and a metered cost,
//! optionally sealed and recorded in the enforcement point's receipt stream
//! (§8.1, §4.11).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::anyhow;
use clap::Args;
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Coverage, Energy};
use jcp::frame::Frame;
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp::revocation::SignedRevocation;
use jcp_receipt::runtime::DurableGate;
use serde_json::json;

use super::files::{core_err, read_bytes, read_grant, read_key};
use super::frame::{build_frame, FrameFlags};
use super::text::{parse_did, parse_label, parse_money, parse_provenance, parse_resource};
use crate::out::{coded, emit, CLEAN, FINDINGS};

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
    #[allow(clippy::doc_markdown, reason = "clap help text, shown as written: not markdown")]
    #[arg(long, default_value = "Estimator")]
    provenance: String,
    /// Mark the cost Partial (§5.2).
    #[arg(long)]
    partial: bool,
    /// The measured figure in µJ the cost rests on (§5): required with HwShunt, refused with Estimator, at most --cost-uj.
    #[allow(clippy::doc_markdown, reason = "clap help text, shown as written: not markdown")]
    #[arg(long)]
    measured_uj: Option<u64>,
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

pub fn run_decide(a: &DecideArgs) -> anyhow::Result<ExitCode> {
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
            measured: a.measured_uj,
        },
        money: a.money.as_deref().map(parse_money).transpose()?,
    };
    cost.energy.check_grade().map_err(|e| crate::out::jcp_err(&e, e.to_string()))?;
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
        None => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
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
            let _ = writeln!(
                s,
                "  receipt {} recorded at offset {} of {} (steward {})",
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
/// the point's next marker), then decides, seals and records the
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
        // The next marker, not the current one (§4.3): every allow already
        // recorded here reads as made before this revocation was heard.
        let marker = dg.known_through().map_or(1, |k| k.saturating_add(1));
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
