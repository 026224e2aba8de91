//! Approving and amending a run at its latest checkpoint (JCP §4.7): the
//! form (a lower budget, an earlier expiry, added caveats §4.9, a new
//! instruction-set commitment), its plan — the verifier's own rules, run
//! before anything is signed — and the signed amendment with its
//! continuation grant.

use std::path::Path;

use jcp::cbor::{ContentId, Value};
use jcp::grant::{Caveat, SignedGrant};
use jcp::identity::{Did, Keypair};
use jcp::steering::{AmendInput, AmendPlan, Record, Run, SignedAmendment, SignedCheckpoint};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use super::{bad_form, find_grant, read, refused};
use crate::format_uj;
use crate::run::RemainderCell;
use crate::ViewError;

/// The kinds of caveat the console lets a steward add at an amendment
/// (each only narrows, §4.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub enum CaveatKind {
    /// Only these actions (comma-separated).
    ActionIn,
    /// At most this many µJ per invocation.
    MaxCostUj,
    /// Not after this Unix second.
    NotAfter,
    /// Not before this Unix second.
    NotBefore,
}

/// A caveat as the form states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct CaveatInput {
    /// Which caveat.
    pub kind: CaveatKind,
    /// Its argument as typed.
    pub value: String,
}

/// What the steward asks for at a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AmendForm {
    /// The new budget, µJ; absent = approve: the remainder exactly.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub budget_uj: Option<u64>,
    /// A new, earlier expiry (Unix seconds).
    #[cfg_attr(test, ts(type = "number | null"))]
    pub expiry: Option<u64>,
    /// A new instruction-set commitment: 64 hex digits, or any text (its content id is committed).
    pub instructions: Option<String>,
    /// Caveats the continuation adds.
    pub add_caveats: Vec<CaveatInput>,
}

/// An amendment as it would be signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AmendPreview {
    /// The checkpoint it cites.
    pub checkpoint: String,
    /// The grant it steers.
    pub steered: String,
    /// The budget it sets, µJ.
    #[cfg_attr(test, ts(type = "number"))]
    pub budget_uj: u64,
    /// The budget in words.
    pub budget: String,
    /// The most it may set (µJ): the remainder, or the issued budget where no spend was stated.
    #[cfg_attr(test, ts(type = "number"))]
    pub ceiling_uj: u64,
    /// The ceiling in words.
    pub ceiling: String,
    /// What the steered grant has left.
    pub remainder: RemainderCell,
    /// The continuation grant's id.
    pub continuation: String,
    /// The continuation's expiry (Unix seconds; 0 = none).
    #[cfg_attr(test, ts(type = "number"))]
    pub expiry: u64,
    /// The continuation's caveats, in words.
    pub caveats: Vec<String>,
    /// The new instruction-set commitment, if any.
    pub instructions: Option<String>,
}

/// Parses a caveat as the form gave it.
pub fn caveat(c: &CaveatInput) -> Result<Caveat, ViewError> {
    let v = c.value.trim();
    // The form picks the kind and trims what was typed; the caveat's text
    // form is read by the protocol crate (`Caveat`'s `FromStr`).
    let text = match c.kind {
        CaveatKind::ActionIn => {
            let actions: Vec<&str> = v.split(',').map(str::trim).filter(|a| !a.is_empty()).collect();
            if actions.is_empty() {
                return Err(bad_form("ActionIn needs at least one action (comma-separated)"));
            }
            format!("ActionIn={}", actions.join(","))
        }
        CaveatKind::MaxCostUj => format!("MaxCostUj={v}"),
        CaveatKind::NotAfter => format!("NotAfter={v}"),
        CaveatKind::NotBefore => format!("NotBefore={v}"),
    };
    text.parse().map_err(|e: jcp::Error| bad_form(e.to_string()))
}

/// A commitment: 64 hex digits as given, else the content id of the text
/// (as `jcp run amend --instructions text:NAME`).
pub fn commitment(s: &str) -> ContentId {
    ContentId::parse(s.trim()).unwrap_or_else(|| ContentId::of(&Value::text(s.trim())))
}

fn caveat_text(c: &Caveat) -> String {
    match c {
        Caveat::ActionIn(a) => format!("ActionIn {}", a.join(", ")),
        Caveat::MaxCostUj(u) => format!("MaxCostUj {}", format_uj(*u)),
        Caveat::NotAfter(t) => format!("NotAfter {t}"),
        Caveat::NotBefore(t) => format!("NotBefore {t}"),
        other => format!("{} {}", other.name(), serde_json::to_string(other).unwrap_or_default()),
    }
}

/// Plans the amendment the form asks for at the run's latest checkpoint —
/// nothing is signed. An approval (no budget) asks for the remainder, and
/// is refused where the remainder is unknown: the console never grants the
/// full issued budget again on an agent's silence (docs/decisions.md).
pub fn plan(run: &Run, path: &Path, issuer: &Did, form: &AmendForm) -> Result<(AmendInput, AmendPlan), ViewError> {
    let add_caveats = form.add_caveats.iter().map(caveat).collect::<Result<Vec<_>, _>>()?;
    let mut input = AmendInput {
        budget_uj: form.budget_uj.unwrap_or(0),
        expiry: form.expiry,
        instructions: form.instructions.as_deref().filter(|s| !s.trim().is_empty()).map(commitment),
        add_caveats,
        ..AmendInput::default()
    };
    let mut plan = run.plan_amend(issuer, &input).map_err(|e| refused(path, &e))?;
    if form.budget_uj.is_none() {
        match plan.remainder {
            jcp::steering::Remainder::Known { uj } => {
                input.budget_uj = uj;
                plan = run.plan_amend(issuer, &input).map_err(|e| refused(path, &e))?;
            }
            jcp::steering::Remainder::Unknown { reason } => {
                return Err(ViewError::Refused {
                    path: path.to_path_buf(),
                    code: "steer-remainder-unknown",
                    detail: format!(
                        "approve grants the remainder, and the remainder is unknown here ({}); amend with an explicit budget instead",
                        reason.as_str().replace('_', " ")
                    ),
                });
            }
        }
    }
    // Fix the nonces now so the preview's continuation id is the one signed.
    input.nonce = Some(plan.amendment.nonce);
    input.continuation_nonce = Some(plan.continuation.nonce);
    Ok((input, plan))
}

/// The preview of an amendment (or approval) of the run at `path`.
pub fn preview_amend(path: &Path, issuer: &Did, form: &AmendForm) -> Result<AmendPreview, ViewError> {
    let run = read(path)?;
    let (_, p) = plan(&run, path, issuer, form)?;
    Ok(AmendPreview {
        checkpoint: p.amendment.checkpoint.to_string(),
        steered: p.amendment.grant_id.to_string(),
        budget_uj: p.amendment.budget_uj,
        budget: format_uj(p.amendment.budget_uj),
        ceiling_uj: p.ceiling_uj,
        ceiling: format_uj(p.ceiling_uj),
        remainder: crate::run::remainder_cell(&p.remainder),
        continuation: p.amendment.continuation.to_string(),
        expiry: p.continuation.expiry,
        caveats: p.continuation.caveats.iter().map(caveat_text).collect(),
        instructions: p.amendment.instructions.map(|i| i.to_string()),
    })
}

/// A signed steering, ready to write and to feed to an endpoint.
#[derive(Debug, Clone)]
pub struct Steering {
    /// The run with the amendment and continuation appended.
    pub run: Run,
    /// The steered grant.
    pub steered: SignedGrant,
    /// The checkpoint it cites.
    pub checkpoint: SignedCheckpoint,
    /// The amendment.
    pub amendment: SignedAmendment,
    /// The continuation grant.
    pub continuation: SignedGrant,
}

/// Signs the amendment (or approval) the form asks for: the core's
/// `Run::amend` checks every rule again before it signs.
pub fn sign_amend(path: &Path, issuer: &Keypair, form: &AmendForm) -> Result<Steering, ViewError> {
    let mut run = read(path)?;
    let (input, plan) = plan(&run, path, &issuer.did(), form)?;
    let steered = find_grant(&run, &plan.amendment.grant_id).ok_or_else(|| {
        ViewError::Form(format!("the steered grant {} is not in {}", plan.amendment.grant_id, path.display()))
    })?;
    let checkpoint = run
        .records()
        .iter()
        .find_map(|r| match r {
            Record::Checkpoint(c) if c.id() == plan.amendment.checkpoint => Some(c.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            ViewError::Form(format!("the checkpoint {} is not in {}", plan.amendment.checkpoint, path.display()))
        })?;
    let (amendment, continuation) = run.amend(issuer, input).map_err(|e| refused(path, &e))?;
    Ok(Steering { run, steered, checkpoint, amendment, continuation })
}
