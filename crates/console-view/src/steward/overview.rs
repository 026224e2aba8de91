//! The steward's overview (IPC types): the key as the console holds it,
//! each run with whether it awaits the steward (§4.7), a run's history.

use jcp::steering::RunReport;
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use super::live::{LiveState, LiveView};

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
    /// An unlocked key locks itself after this many seconds without a
    /// signature (`JCP_KEY_IDLE_LOCK_S`, 10 s to 24 h; 15 min by default).
    pub idle_lock_s: u32,
}

/// What a run is doing, from its own record (issue 39: "real run states";
/// the view is rebuilt from the record, always), most pressing first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The run file does not read.
    Unreadable,
    /// The grant in force was revoked beside the run: nothing more is decided under it.
    Revoked,
    /// Its latest checkpoint awaits a decision of its steward.
    Awaiting,
    /// Its agent runs on the console's endpoint.
    Running,
    /// Its agent on the console's endpoint ended without saying why.
    Crashed,
    /// Its agent on the console's endpoint stopped (it said why, or the steward stopped it).
    Stopped,
    /// Nothing runs it here and nothing awaits: a run of another process (a
    /// gateway, the demo), steered through its file.
    Idle,
}

/// What a run's record and the console know of it.
#[derive(Debug, Clone, Copy, Default)]
#[allow(clippy::struct_excessive_bools, reason = "independent yes/no facts, each from a different source")]
pub struct RunFacts {
    /// The run file reads and verifies.
    pub readable: bool,
    /// Its grant in force was revoked beside it.
    pub revoked: bool,
    /// Its latest checkpoint awaits its steward ([`awaiting`]).
    pub awaiting: bool,
    /// What runs it on the console's endpoint now, if anything.
    pub live: Option<LiveState>,
    /// The console's history records that the steward stopped it (so after
    /// a restart, with nothing live, it still reads stopped).
    pub stopped_by_steward: bool,
}

/// A run's status. A run whose agent is gone (stopped or crashed) awaits
/// nobody, whatever its last checkpoint says: approving it would steer no
/// one, so it neither reads "awaits you" nor counts in the badge.
pub fn run_status(f: RunFacts) -> RunStatus {
    match f.live {
        _ if !f.readable => RunStatus::Unreadable,
        _ if f.revoked => RunStatus::Revoked,
        Some(LiveState::Crashed) => RunStatus::Crashed,
        Some(LiveState::Stopped) => RunStatus::Stopped,
        None if f.stopped_by_steward => RunStatus::Stopped,
        _ if f.awaiting => RunStatus::Awaiting,
        Some(LiveState::Running) => RunStatus::Running,
        None => RunStatus::Idle,
    }
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
    /// What it is doing ([`run_status`]).
    pub status: RunStatus,
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
    /// The grants the steward may still revoke: the grant in force, unless
    /// it was revoked (a superseded grant is steered already: revoking it
    /// changes nothing).
    pub revocable: Vec<String>,
    /// What the steward signed on it, oldest first.
    pub history: Vec<HistoryRow>,
    /// The live run, when it runs on the console's endpoint.
    pub live: Option<LiveView>,
    /// The gateway's log beside the run, when an MCP gateway runs it (`jcp gateway --run`).
    pub gateway: Option<super::gateway::GatewayView>,
    /// The run's spend against its ceiling over its checkpoints, and when
    /// the remainder runs out at the current rate ([`super::spend::spend_chart`]).
    pub spend: super::spend::SpendChart,
}

/// The run as the record stands with its revocations (issue 39: "the view
/// is rebuilt from the record, always"): where the grant in force was
/// revoked beside the run, nothing is in force — no budget, a remainder of
/// nothing — and the verdict says so; the grants still revocable are the
/// one in force, unless it was revoked.
pub fn with_revocations(
    mut view: crate::run::RunView,
    report: &RunReport,
    revoked: &[String],
) -> (crate::run::RunView, Vec<String>) {
    let active = report.active_grant.map(|a| a.to_string());
    match active {
        Some(a) if revoked.contains(&a) => {
            view.active_budget = Some("nothing: the grant in force was revoked".into());
            view.remainder = crate::run::RemainderCell { known: true, uj: Some(0), text: "nothing: revoked".into() };
            view.verdict_text = format!(
                "{}; the grant in force ({}…) was revoked beside the run",
                view.verdict_text,
                &a[..a.len().min(10)]
            );
            (view, Vec::new())
        }
        Some(a) => (view, vec![a]),
        None => (view, Vec::new()),
    }
}

/// Whether the run waits for the steward: its latest checkpoint was
/// admitted under the active grant and nothing has steered it yet.
pub fn awaiting(report: &RunReport) -> bool {
    let Some(active) = report.active_grant else { return false };
    report.checkpoints.last().is_some_and(|c| c.grant_id == active && c.verdict != "refused" && c.amendments.is_empty())
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn s4_7_a_run_status_comes_from_its_record_revoked_before_gone_before_awaiting_before_running() {
        let f = |readable, revoked, awaiting, live, stopped_by_steward| {
            run_status(RunFacts { readable, revoked, awaiting, live, stopped_by_steward })
        };
        assert_eq!(f(false, true, true, Some(LiveState::Running), false), RunStatus::Unreadable);
        assert_eq!(f(true, true, true, Some(LiveState::Running), false), RunStatus::Revoked);
        // An agent that is gone awaits nobody, its last checkpoint notwithstanding.
        assert_eq!(f(true, false, true, Some(LiveState::Crashed), false), RunStatus::Crashed);
        assert_eq!(f(true, false, true, Some(LiveState::Stopped), false), RunStatus::Stopped);
        // After a restart nothing is live: the history says the steward stopped it.
        assert_eq!(f(true, false, true, None, true), RunStatus::Stopped);
        assert_eq!(f(true, false, true, Some(LiveState::Running), false), RunStatus::Awaiting);
        assert_eq!(f(true, false, true, None, false), RunStatus::Awaiting);
        assert_eq!(f(true, false, false, Some(LiveState::Running), false), RunStatus::Running);
        assert_eq!(f(true, false, false, None, false), RunStatus::Idle);
    }
}
