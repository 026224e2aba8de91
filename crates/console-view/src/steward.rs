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
//!
//! One module per action or panel: [`amend`] (approve and amend at a
//! checkpoint, §4.7), [`revoke`] (§4.3), [`unresolved`] (decisions whose
//! outcome never arrived, settled by a signed note, §4.11), [`overview`]
//! (the runs, the key and a run as the steward sees it) and [`live`] (a
//! live run's state and its agent's events).

pub mod amend;
pub mod gateway;
pub mod live;
pub mod overview;
pub mod revoke;
pub mod spend;
pub mod unresolved;

pub use amend::{
    caveat, commitment, plan, preview_amend, sign_amend, AmendForm, AmendPreview, CaveatInput, CaveatKind, Steering,
};
pub use gateway::{gateway_view, GatewayCall, GatewayForm, GatewayPrepared, GatewayView};
pub use live::{
    event_line, metered_call, metered_calls, metered_line, AgentEventLine, LiveState, LiveView, MeteredCall, MeteredGap,
};
pub use overview::{
    awaiting, run_status, with_revocations, HistoryRow, KeyStatus, RunFacts, RunRow, RunStatus, StewardOverview,
    StewardRunView,
};
pub use revoke::{
    grants_of, plan_revoke, revocations_dir, revocations_of, sign_revoke, write_revocation, DyingGrant, RevokePlan,
};
pub use spend::{spend_chart, SpendChart};
pub use unresolved::{unresolved_rows, SettleStatus, SettledCell, UnresolvedRow, UnresolvedStream};

use std::path::Path;

use jcp::cbor::ContentId;
use jcp::grant::SignedGrant;
use jcp::steering::{Record, Run};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use crate::ViewError;

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

/// A refusal of the protocol core about the run file at `path`, with its code.
fn refused(path: &Path, e: &jcp::Error) -> ViewError {
    ViewError::Refused { path: path.to_path_buf(), code: e.code(), detail: e.to_string() }
}

/// A form the steward filled in that cannot be read (nothing was signed).
fn bad_form(detail: impl Into<String>) -> ViewError {
    ViewError::Form(detail.into())
}

/// Reads a run file (with the material beside it), or says why it cannot.
fn read(path: &Path) -> Result<Run, ViewError> {
    crate::authority::read_run(path).map(|(r, _)| r).map_err(|e| ViewError::Run {
        path: path.to_path_buf(),
        code: e.code().to_string(),
        detail: e.to_string(),
    })
}

/// The grant of a run with this id, if the run holds it.
fn find_grant(run: &Run, id: &ContentId) -> Option<SignedGrant> {
    run.records().iter().find_map(|r| match r {
        Record::Grant(g) if g.id() == *id => Some(g.clone()),
        _ => None,
    })
}

/// Replaces the run file whole (a sibling temporary renamed over it).
pub fn write_run(path: &Path, run: &Run) -> Result<(), ViewError> {
    run.replace(path, "console").map_err(|e| ViewError::Write { path: path.to_path_buf(), detail: e.to_string() })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use jcp::cbor::Value;
    use jcp::energy::Provenance;
    use jcp::grant::{Capability, Caveat, Grant};
    use jcp::identity::Keypair;
    use jcp::steering::{CheckpointInput, Spent};
    use std::path::PathBuf;

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
            MeteredGap,
            MeteredCall,
            LiveView,
            GatewayCall,
            GatewayView,
            GatewayForm,
            GatewayPrepared,
            RunRow,
            RunStatus,
            SpendChart,
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

    /// Issue 39: "the view is rebuilt from the record, always". Read back
    /// from its files (as after a restart), a run whose grant in force was
    /// revoked beside it has nothing in force — no budget, a remainder of
    /// nothing, a verdict that says so — and nothing left to revoke; before
    /// the revocation, the grant in force is the one offered.
    #[test]
    fn s4_3_a_revoked_run_is_read_back_with_nothing_in_force_and_nothing_to_revoke() {
        let t = tempfile::tempdir().unwrap();
        let (path, k) = run_with_checkpoint(t.path(), Some(200));
        let (_, report, view) = crate::run::read_view(&path).unwrap();
        let active = report.active_grant.unwrap().to_string();
        let (before, revocable) = with_revocations(view, &report, &[]);
        assert_eq!(revocable, vec![active.clone()]);
        assert!(before.active_budget.as_deref().is_some_and(|b| !b.contains("revoked")), "{:?}", before.active_budget);
        let g = read(&path).unwrap().grant().unwrap().clone();
        sign_revoke(&path, &g, &k.steward).unwrap();
        // Read back from the files alone.
        let (run, report, view) = crate::run::read_view(&path).unwrap();
        let revoked: Vec<String> = revocations_of(&path, &run).into_iter().map(|(g, _)| g.to_string()).collect();
        assert_eq!(revoked, vec![active]);
        let (after, revocable) = with_revocations(view, &report, &revoked);
        assert!(revocable.is_empty(), "{revocable:?}");
        assert_eq!(after.remainder.uj, Some(0));
        assert!(after.active_budget.as_deref().is_some_and(|b| b.contains("revoked")), "{:?}", after.active_budget);
        assert!(after.verdict_text.contains("revoked"), "{}", after.verdict_text);
    }
}
