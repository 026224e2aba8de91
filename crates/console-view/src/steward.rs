//! The steward's write actions on a run (JCP §4.7, §4.3), as the console
//! offers them: **approve** (a continuation grant with the remainder),
//! **amend** (a lower budget, an earlier expiry, added caveats, a new
//! instruction-set commitment) and **revoke** (a grant, and with it every
//! grant below it that the console knows of).
//!
//! Every action is planned first without a signature — `preview_amend` and
//! `plan_revoke` run exactly the rules the verifier applies
//! (`Run::plan_amend`, the revoker-is-issuer rule of §4.3) — so the
//! steward sees a widening, an amount above the remainder or a grant that
//! is not theirs refused with its reason before anything is signed; the
//! signing functions then run the same checks again in the core.
//!
//! Run files are replaced whole (a sibling temporary file renamed over the
//! original) so the agent, which polls the file, never reads half a record.

use std::path::{Path, PathBuf};

use jcp::cbor::{ContentId, Value};
use jcp::grant::{Caveat, SignedGrant};
use jcp::identity::{Did, Keypair};
use jcp::revocation::{Revocation, SignedRevocation};
use jcp::steering::{AmendInput, AmendPlan, Record, Run, RunReport, SignedAmendment, SignedCheckpoint};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

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

/// What an action wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SignedAction {
    /// `approve`, `amend` or `revoke`.
    pub action: StewardActionKind,
    /// Who signed (the steward's did).
    pub signed_by: String,
    /// The ids of what was signed (amendment and continuation; or the revocation).
    pub signed: Vec<String>,
    /// Where it was written.
    pub files: Vec<String>,
    /// In words.
    pub message: String,
}

/// The steward's write actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum StewardActionKind {
    /// A continuation with the remainder.
    Approve,
    /// A tighter continuation.
    Amend,
    /// A revocation.
    Revoke,
    /// An unresolved decision settled.
    Settle,
}

impl StewardActionKind {
    /// The word stored in the console's history.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Amend => "amend",
            Self::Revoke => "revoke",
            Self::Settle => "settle",
        }
    }
}

/// A grant that dies with a revocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct DyingGrant {
    /// Its id.
    pub id: String,
    /// Who holds it.
    pub subject: String,
    /// Its budget in words.
    pub budget: String,
    /// Why it dies: `revoked` (the target) or `below` (a descendant).
    pub why: String,
}

/// What a revocation would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RevokePlan {
    /// The grant revoked.
    pub target: String,
    /// The target, then every known grant whose chain contains it (§4.3: a subtree dies with its ancestor).
    pub dies: Vec<DyingGrant>,
}

fn refused(path: &Path, e: &jcp::Error) -> ViewError {
    ViewError::Refused { path: path.to_path_buf(), code: e.code(), detail: e.to_string() }
}

fn bad_form(detail: impl Into<String>) -> ViewError {
    ViewError::Form(detail.into())
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

fn read(path: &Path) -> Result<Run, ViewError> {
    crate::authority::read_run(path).map(|(r, _)| r).map_err(|e| ViewError::Run {
        path: path.to_path_buf(),
        code: e.code().to_string(),
        detail: e.to_string(),
    })
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

/// Replaces the run file whole (a sibling temporary renamed over it).
pub fn write_run(path: &Path, run: &Run) -> Result<(), ViewError> {
    let tmp = path.with_extension("jcprun.console-tmp");
    let w = |e: std::io::Error| ViewError::Write { path: path.to_path_buf(), detail: e.to_string() };
    std::fs::write(&tmp, run.to_bytes()).map_err(w)?;
    std::fs::rename(&tmp, path).map_err(w)
}

fn find_grant(run: &Run, id: &ContentId) -> Option<SignedGrant> {
    run.records().iter().find_map(|r| match r {
        Record::Grant(g) if g.id() == *id => Some(g.clone()),
        _ => None,
    })
}

/// Every grant in a run file.
pub fn grants_of(run: &Run) -> Vec<SignedGrant> {
    run.records()
        .iter()
        .filter_map(|r| match r {
            Record::Grant(g) => Some(g.clone()),
            _ => None,
        })
        .collect()
}

/// What revoking `target` kills among the `known` grants (§4.3): the
/// target and every grant whose parent chain reaches it. Refused before
/// anything is signed where the steward is not the target's issuer.
pub fn plan_revoke(target: &SignedGrant, known: &[SignedGrant], steward: &Did) -> Result<RevokePlan, ViewError> {
    if target.grant().issuer != *steward {
        return Err(ViewError::Refused {
            path: PathBuf::new(),
            code: "revocation-unauthorized",
            detail: format!(
                "only the issuer may revoke a grant (§4.3): grant {} was issued by {}, and the unlocked key is {steward}",
                target.id(),
                target.grant().issuer
            ),
        });
    }
    let line = |g: &SignedGrant, why: &str| DyingGrant {
        id: g.id().to_string(),
        subject: g.grant().subject.to_string(),
        budget: format_uj(g.grant().budget_uj),
        why: why.to_owned(),
    };
    let mut dying: Vec<ContentId> = vec![target.id()];
    let mut dies = vec![line(target, "revoked")];
    // Parents before children is not guaranteed: repeat until nothing new.
    loop {
        let before = dying.len();
        for g in known {
            let id = g.id();
            if !dying.contains(&id) && g.grant().parent.is_some_and(|p| dying.contains(&p)) {
                dying.push(id);
                dies.push(line(g, "below"));
            }
        }
        if dying.len() == before {
            break;
        }
    }
    Ok(RevokePlan { target: target.id().to_string(), dies })
}

/// Signs the revocation of `target` (the core refuses a revoker who is not
/// the issuer) and writes it beside the run, in `<run>.revocations/`.
pub fn sign_revoke(
    run_path: &Path,
    target: &SignedGrant,
    issuer: &Keypair,
) -> Result<(SignedRevocation, PathBuf), ViewError> {
    let rev = Revocation::issue(target, issuer, None).map_err(|e| refused(run_path, &e))?;
    let file = write_revocation(run_path, target, &rev)?;
    Ok((rev, file))
}

/// Writes a signed revocation beside the run, as `<run>.revocations/<grant id>.jcp`
/// (where `jcp agent demo` looks while it waits at a checkpoint).
pub fn write_revocation(run_path: &Path, target: &SignedGrant, rev: &SignedRevocation) -> Result<PathBuf, ViewError> {
    let dir = revocations_dir(run_path);
    let w = |e: std::io::Error| ViewError::Write { path: dir.clone(), detail: e.to_string() };
    std::fs::create_dir_all(&dir).map_err(w)?;
    let file = dir.join(format!("{}.jcp", target.id()));
    let tmp = dir.join(format!("{}.jcp.tmp", target.id()));
    std::fs::write(&tmp, rev.to_bytes()).map_err(w)?;
    std::fs::rename(&tmp, &file).map_err(w)?;
    Ok(file)
}

/// Where the revocations of a run's grants are written.
pub fn revocations_dir(run_path: &Path) -> PathBuf {
    let mut s = run_path.as_os_str().to_owned();
    s.push(".revocations");
    PathBuf::from(s)
}

/// The revocations written beside a run: (revoked grant id, revocation),
/// checked against the run's grants (a file that does not verify is skipped
/// and reported by the caller's count).
pub fn revocations_of(run_path: &Path, run: &Run) -> Vec<(ContentId, SignedRevocation)> {
    let Ok(entries) = std::fs::read_dir(revocations_dir(run_path)) else { return Vec::new() };
    let grants = grants_of(run);
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(bytes) = std::fs::read(e.path()) else { continue };
        let Ok(rev) = SignedRevocation::from_bytes(&bytes) else { continue };
        let id = rev.revocation().grant_id;
        if grants.iter().any(|g| g.id() == id && rev.check_authority(g).is_ok()) {
            out.push((id, rev));
        }
    }
    out.sort_by_key(|(id, _)| *id);
    out
}

/// Whether the run waits for the steward: its latest checkpoint was
/// admitted under the active grant and nothing has steered it yet.
pub fn awaiting(report: &RunReport) -> bool {
    let Some(active) = report.active_grant else { return false };
    report.checkpoints.last().is_some_and(|c| c.grant_id == active && c.verdict != "refused" && c.amendments.is_empty())
}

// ------------------------------------------------------------------- IPC

/// The steward's key as the console holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct KeyStatus {
    /// The key file.
    pub path: String,
    /// Whether the file exists.
    pub exists: bool,
    /// The did:key it states (readable while locked).
    pub did: Option<String>,
    /// Whether it is unlocked for this session.
    pub unlocked: bool,
    /// Why the file cannot be used, naming the file and the fix.
    pub error: Option<crate::ipc::UiError>,
}

/// A live run's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum LiveState {
    /// The agent runs.
    Running,
    /// The agent stopped and said why.
    Stopped,
    /// The agent ended without saying why (killed, crashed, or an error).
    Crashed,
}

/// One line of the agent's account of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AgentEventLine {
    /// The event (`decision`, `checkpoint`, `continued`, `stopped`, …).
    pub event: String,
    /// In words.
    pub text: String,
}

/// A live run on the console's embedded endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct LiveView {
    /// Running, stopped or crashed.
    pub state: LiveState,
    /// The endpoint's address.
    pub endpoint: String,
    /// The endpoint's record (a receipt stream the Auditor opens).
    pub stream: String,
    /// The agent's did.
    pub agent: String,
    /// The grant the agent now spends under.
    pub grant: Option<String>,
    /// Allowed decisions this session.
    #[cfg_attr(test, ts(type = "number"))]
    pub allowed: u64,
    /// Denied decisions this session.
    #[cfg_attr(test, ts(type = "number"))]
    pub denied: u64,
    /// What the agent was debited this session, in words.
    pub spent: String,
    /// The latest events, oldest first.
    pub events: Vec<AgentEventLine>,
    /// Why it stopped (the agent's words), or how it ended.
    pub ended: Option<String>,
    /// The agent's last error output, when it crashed.
    pub stderr: Option<String>,
}

/// A run in the steward's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RunRow {
    /// Workspace item id.
    #[cfg_attr(test, ts(type = "number"))]
    pub id: i64,
    /// Words for a person.
    pub label: String,
    /// The run file.
    pub path: String,
    /// A live run's state, when it runs on the console's endpoint.
    pub live: Option<LiveState>,
    /// Whether its latest checkpoint awaits a decision of its steward.
    pub awaiting: bool,
    /// Whether its steward (the run grant's issuer) is the console's key:
    /// only then does a waiting checkpoint await *you* (the badge counts those).
    pub mine: bool,
    /// Checkpoints so far.
    #[cfg_attr(test, ts(type = "number"))]
    pub checkpoints: u64,
    /// Clean or findings; absent when the file does not read.
    pub verdict: Option<crate::tags::Verdict>,
    /// Why the file does not read.
    pub error: Option<String>,
}

/// The steward's overview (polled: `revision` changes when a run file does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct StewardOverview {
    /// Bumped whenever a run file, or a revocation beside one, changes.
    #[cfg_attr(test, ts(type = "number"))]
    pub revision: u64,
    /// Checkpoints awaiting the console's steward (runs issued under its key).
    pub awaiting: u32,
    /// The runs.
    pub runs: Vec<RunRow>,
    /// The key.
    pub key: KeyStatus,
}

/// One entry of a run's history: what the steward signed, who, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct HistoryRow {
    /// When (Unix ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub at_ms: u64,
    /// What.
    pub action: String,
    /// Who signed (did:key).
    pub signed_by: String,
    /// In words.
    pub text: String,
}

/// A run as the steward works on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct StewardRunView {
    /// Workspace item id.
    #[cfg_attr(test, ts(type = "number"))]
    pub id: i64,
    /// The verified run.
    pub run: crate::run::RunView,
    /// Whether its latest checkpoint awaits the steward.
    pub awaiting: bool,
    /// Grants revoked beside the run (verified revocations).
    pub revoked: Vec<String>,
    /// What the steward signed on it, oldest first.
    pub history: Vec<HistoryRow>,
    /// The live run, when it runs on the console's endpoint.
    pub live: Option<LiveView>,
}

/// How an operator settles an unresolved decision (§4.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum SettleStatus {
    /// The action took effect.
    Completed,
    /// It did not.
    Failed,
}

/// A signed settlement shown beside its decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SettledCell {
    /// As settled.
    pub status: SettleStatus,
    /// Who signed the note.
    pub settled_by: String,
    /// When (Unix seconds).
    #[cfg_attr(test, ts(type = "number"))]
    pub at: u64,
    /// The operator's words.
    pub text: String,
}

/// A decision recorded with no outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct UnresolvedRow {
    /// The decision receipt.
    pub receipt: String,
    /// Its byte offset in the stream.
    #[cfg_attr(test, ts(type = "number"))]
    pub offset: u64,
    /// The party that held it and ran the action (only it knows whether it took effect).
    pub holder: String,
    /// The enforcement point that recorded it.
    pub recorded_by: String,
    /// The grant.
    pub grant: String,
    /// The action.
    pub action: String,
    /// Its debit, in words (stays debited either way).
    pub debited: String,
    /// The operator's settlement, once signed.
    pub settled: Option<SettledCell>,
}

/// A stream's unresolved decisions, from its last audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct UnresolvedStream {
    /// The stream.
    pub stream: String,
    /// When its last audit finished (Unix ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub audited_at_ms: u64,
    /// Whether the file changed since (audit again for a current list).
    pub changed_since: bool,
    /// Unresolved in total (the list may be capped).
    #[cfg_attr(test, ts(type = "number"))]
    pub total: u64,
    /// The decisions.
    pub rows: Vec<UnresolvedRow>,
}

/// Reads a stored audit report's unresolved decisions for stream index
/// `index`, with each verified settlement note beside the stream.
pub fn unresolved_rows(report: &serde_json::Value, index: usize, stream: &Path) -> Vec<UnresolvedRow> {
    let (notes, _) = jcp_receipt::settle::read_notes(stream);
    let Some(lines) = report["unresolved"].as_array() else { return Vec::new() };
    lines
        .iter()
        .filter(|u| u["stream"].as_u64() == Some(index as u64))
        .map(|u| {
            let receipt = u["receipt"].as_str().unwrap_or("").to_owned();
            let holder = u["holder"].as_str().unwrap_or("").to_owned();
            let settled = notes
                .iter()
                .map(jcp_receipt::settle::SignedSettlementNote::note)
                .find(|n| n.receipt.to_hex() == receipt && n.holder.to_did_string() == holder)
                .map(|n| SettledCell {
                    status: match n.status {
                        jcp_receipt::record::OutcomeStatus::Completed => SettleStatus::Completed,
                        jcp_receipt::record::OutcomeStatus::Failed => SettleStatus::Failed,
                    },
                    settled_by: n.settled_by.to_did_string(),
                    at: n.at,
                    text: n.text.clone(),
                });
            UnresolvedRow {
                receipt,
                offset: u["offset"].as_u64().unwrap_or(0),
                holder,
                recorded_by: u["steward"].as_str().unwrap_or("").to_owned(),
                grant: u["grant_id"].as_str().unwrap_or("").to_owned(),
                action: u["action"].as_str().unwrap_or("").to_owned(),
                debited: u["cost_uj"].as_u64().map_or_else(|| "not stated".to_owned(), format_uj),
                settled,
            }
        })
        .collect()
}

/// An agent's JSON event line in words (the console's live panel).
pub fn event_line(v: &serde_json::Value) -> AgentEventLine {
    let s = |k: &str| v[k].as_str().unwrap_or("").to_owned();
    let u = |k: &str| v[k].as_u64().map_or_else(|| "?".to_owned(), format_uj);
    let short = |k: &str| s(k).chars().take(12).collect::<String>();
    let event = s("event");
    let text = match event.as_str() {
        "started" => format!("started under grant {}… with a ceiling of {}", short("grant"), u("budget_uj")),
        "decision" => match v["verdict"].as_str() {
            Some("allow") => format!(
                "step {}: allowed, debited {}; {} left on grant {}…",
                v["step"],
                u("debited_uj"),
                u("remaining_uj"),
                short("grant")
            ),
            _ => format!("step {}: denied ({})", v["step"], s("reason")),
        },
        "checkpoint" => format!(
            "checkpoint seq {} after step {}: spent {} ({}); waiting for the steward",
            v["seq"],
            v["step"],
            u("spent_uj"),
            s("provenance")
        ),
        "continued" => format!("continued under grant {}… with a ceiling of {}", short("continuation"), u("budget_uj")),
        "stopped" => s("message"),
        _ => v.to_string(),
    };
    AgentEventLine { event, text }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use jcp::energy::Provenance;
    use jcp::grant::{Capability, Grant};
    use jcp::steering::{CheckpointInput, Spent};

    pub(crate) fn generated() -> Vec<(String, String)> {
        macro_rules! all {
            ($($t:ty),*) => { vec![$( (<$t as TS>::name(), <$t as TS>::export_to_string().unwrap()) ),*] };
        }
        all!(
            CaveatKind,
            CaveatInput,
            AmendForm,
            AmendPreview,
            SignedAction,
            StewardActionKind,
            DyingGrant,
            RevokePlan,
            KeyStatus,
            LiveState,
            AgentEventLine,
            LiveView,
            RunRow,
            StewardOverview,
            HistoryRow,
            StewardRunView,
            SettleStatus,
            SettledCell,
            UnresolvedRow,
            UnresolvedStream
        )
    }

    struct Keys {
        steward: Keypair,
        agent: Keypair,
    }

    fn keys() -> Keys {
        Keys { steward: Keypair::from_seed([1; 32]).unwrap(), agent: Keypair::from_seed([2; 32]).unwrap() }
    }

    fn grant(k: &Keys, budget_uj: u64, parent: Option<ContentId>, subject: &Keypair) -> SignedGrant {
        Grant {
            issuer: k.steward.did(),
            subject: subject.did(),
            capability: Capability {
                resource: ContentId::of(&Value::text("demo")),
                actions: vec!["read".into(), "write".into()],
            },
            budget_uj,
            budget_funds: None,
            caveats: Vec::new(),
            expiry: 2_000_000_000,
            parent,
            delegate_depth: None,
            nonce: [7; 16],
        }
        .sign(&k.steward)
        .unwrap()
    }

    /// A run of 1000 µJ with one checkpoint; `spent` as stated.
    fn run_with_checkpoint(dir: &Path, spent: Option<u64>) -> (PathBuf, Keys) {
        let k = keys();
        let mut run = Run::new(grant(&k, 1000, None, &k.agent));
        run.checkpoint(
            &k.agent,
            CheckpointInput {
                state: ContentId::of(&Value::text("s")),
                at: 1_700_000_000,
                spent: spent.map(|uj| Spent { uj, provenance: Provenance::Estimator }),
                nonce: Some([3; 16]),
            },
        )
        .unwrap();
        let path = dir.join("r.jcprun");
        write_run(&path, &run).unwrap();
        (path, k)
    }

    fn form(budget_uj: Option<u64>) -> AmendForm {
        AmendForm { budget_uj, expiry: None, instructions: None, add_caveats: Vec::new() }
    }

    #[test]
    fn s4_7_approve_grants_exactly_the_remainder() {
        let t = tempfile::tempdir().unwrap();
        let (path, k) = run_with_checkpoint(t.path(), Some(700));
        assert!(awaiting(&read(&path).unwrap().verify().unwrap()));
        let p = preview_amend(&path, &k.steward.did(), &form(None)).unwrap();
        assert_eq!((p.budget_uj, p.ceiling_uj), (300, 300));
        let s = sign_amend(&path, &k.steward, &form(None)).unwrap();
        assert_eq!(s.continuation.grant().budget_uj, 300);
        assert_eq!(s.amendment.amendment().budget_uj, p.budget_uj, "what is signed is what was previewed");
        write_run(&path, &s.run).unwrap();
        let report = read(&path).unwrap().verify().unwrap();
        assert!(report.clean && !awaiting(&report), "{report:?}");
    }

    #[test]
    fn s4_7_approve_is_refused_where_the_remainder_is_unknown() {
        let t = tempfile::tempdir().unwrap();
        let (path, k) = run_with_checkpoint(t.path(), None);
        let e = preview_amend(&path, &k.steward.did(), &form(None)).unwrap_err();
        assert_eq!(e.code(), "steer-remainder-unknown", "{e}");
        // An explicit budget is judged against the issued budget (§4.7's weaker rule).
        assert_eq!(preview_amend(&path, &k.steward.did(), &form(Some(1000))).unwrap().ceiling_uj, 1000);
    }

    #[test]
    fn s4_7_amount_above_the_remainder_is_refused_before_signing() {
        let t = tempfile::tempdir().unwrap();
        let (path, k) = run_with_checkpoint(t.path(), Some(700));
        let before = std::fs::read(&path).unwrap();
        let e = preview_amend(&path, &k.steward.did(), &form(Some(301))).unwrap_err();
        assert_eq!(e.code(), "steer-above-remainder", "{e}");
        let e = sign_amend(&path, &k.steward, &form(Some(301))).unwrap_err();
        assert_eq!(e.code(), "steer-above-remainder", "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
        // A later expiry than the grant's is a widening.
        let e = preview_amend(&path, &k.steward.did(), &AmendForm { expiry: Some(2_000_000_001), ..form(Some(10)) })
            .unwrap_err();
        assert_eq!(e.code(), "steer-widening", "{e}");
        // Only the issuer amends.
        let e = preview_amend(&path, &k.agent.did(), &form(Some(10))).unwrap_err();
        assert_eq!(e.code(), "steer-self-amend", "{e}");
    }

    #[test]
    fn s4_7_amendment_adds_caveats_and_instructions_to_the_continuation() {
        let t = tempfile::tempdir().unwrap();
        let (path, k) = run_with_checkpoint(t.path(), Some(100));
        let f = AmendForm {
            budget_uj: Some(500),
            expiry: Some(1_900_000_000),
            instructions: Some("instructions v2".into()),
            add_caveats: vec![
                CaveatInput { kind: CaveatKind::ActionIn, value: "read".into() },
                CaveatInput { kind: CaveatKind::MaxCostUj, value: "50".into() },
            ],
        };
        let s = sign_amend(&path, &k.steward, &f).unwrap();
        let c = s.continuation.grant();
        assert_eq!(c.caveats, vec![Caveat::ActionIn(vec!["read".into()]), Caveat::MaxCostUj(50)]);
        assert_eq!(c.expiry, 1_900_000_000);
        assert_eq!(s.amendment.amendment().instructions, Some(ContentId::of(&Value::text("instructions v2"))));
        jcp::steering::verify_continuation(&s.steered, s.amendment.amendment(), &s.continuation).unwrap();
        // A caveat that does not parse is named.
        let bad = AmendForm {
            add_caveats: vec![CaveatInput { kind: CaveatKind::MaxCostUj, value: "lots".into() }],
            ..form(Some(1))
        };
        assert_eq!(preview_amend(&path, &k.steward.did(), &bad).unwrap_err().code(), "steward.bad_form");
        // The form trims; the caveat's text form is the protocol crate's, and its refusal is named.
        let typed = CaveatInput { kind: CaveatKind::ActionIn, value: " read , write ,".into() };
        assert_eq!(caveat(&typed).unwrap(), Caveat::ActionIn(vec!["read".into(), "write".into()]));
        let lots = caveat(&CaveatInput { kind: CaveatKind::NotAfter, value: "lots".into() }).unwrap_err();
        assert!(lots.to_string().contains("invalid-caveat"), "{lots}");
    }

    #[test]
    fn s4_3_revoke_names_every_grant_that_dies_with_it() {
        let k = keys();
        let root = grant(&k, 1000, None, &k.steward);
        let child = grant(&k, 500, Some(root.id()), &k.agent);
        let grandchild = grant(&k, 100, Some(child.id()), &k.agent);
        let other = grant(&k, 50, None, &k.agent);
        let known = [grandchild.clone(), other, child.clone(), root.clone()];
        let p = plan_revoke(&root, &known, &k.steward.did()).unwrap();
        let ids: Vec<&str> = p.dies.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, [root.id().to_string(), child.id().to_string(), grandchild.id().to_string()]);
        assert_eq!(p.dies[0].why, "revoked");
        // Not the issuer: refused before signing.
        let e = plan_revoke(&root, &known, &k.agent.did()).unwrap_err();
        assert_eq!(e.code(), "revocation-unauthorized");
    }

    #[test]
    fn s4_3_revocation_is_written_beside_the_run_and_read_back() {
        let t = tempfile::tempdir().unwrap();
        let (path, k) = run_with_checkpoint(t.path(), Some(1));
        let run = read(&path).unwrap();
        let g = run.grant().unwrap().clone();
        let (rev, file) = sign_revoke(&path, &g, &k.steward).unwrap();
        assert!(file.starts_with(revocations_dir(&path)));
        let found = revocations_of(&path, &run);
        assert_eq!(found, vec![(g.id(), rev)]);
        // The agent cannot revoke its own grant.
        assert_eq!(sign_revoke(&path, &g, &k.agent).unwrap_err().code(), "revocation-unauthorized");
    }
}
