//! Revoking a grant of a run (§4.3): what the revocation kills (every grant
//! the console knows that descends from it), and the signed revocation —
//! fed to a live run's endpoint, then written beside the run.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use console_store::ItemKind;
use console_view::ipc::UiError;
use console_view::steward::{self as sv, RevokePlan, SignedAction, StewardActionKind};
use jcp::grant::SignedGrant;
use jcp::steering::Run;
use jcp_wire::message::Feed;

use super::key::key_err;
use super::runs::run_item;
use super::{record, StewardState};
use crate::error::{self, CmdResult};
use crate::state::AppState;

/// Every grant the console knows: the run files' and live runs' chains.
fn known_grants(state: &AppState) -> CmdResult<Vec<SignedGrant>> {
    let items = state.with_store(|s| s.items().map_err(|e| error::store(&e)))?;
    let mut out: Vec<SignedGrant> = Vec::new();
    for i in items.into_iter().filter(|i| i.kind == ItemKind::Run) {
        if let Ok(r) = Run::read(Path::new(&i.path)) {
            for g in sv::grants_of(&r) {
                if !out.iter().any(|o| o.id() == g.id()) {
                    out.push(g);
                }
            }
        }
    }
    Ok(out)
}

fn target_grant(path: &Path, grant: &str) -> CmdResult<SignedGrant> {
    let run = Run::read(path).map_err(|e| UiError::new(e.code(), e.to_string()))?;
    sv::grants_of(&run).into_iter().find(|g| g.id().to_string() == grant).ok_or_else(|| {
        UiError::new("revoke.unknown_grant", format!("grant {grant} is not in the run {}", path.display()))
    })
}

/// What revoking `grant` of run `id` kills (the confirmation's list).
pub fn revoke_plan(state: &AppState, st: &StewardState, id: i64, grant: &str) -> CmdResult<RevokePlan> {
    let item = run_item(state, id)?;
    let target = target_grant(Path::new(&item.path), grant)?;
    let did = keystore::did(&st.key_path).map_err(|e| key_err(&e))?;
    sv::plan_revoke(&target, &known_grants(state)?, &did).map_err(|e| error::view(&e))
}

/// Signs the revocation of `grant`, feeds it to a live run's endpoint
/// (recorded there before it is applied), writes it beside the run and
/// records it in the history.
pub fn revoke(state: &AppState, st: &StewardState, id: i64, grant: &str) -> CmdResult<SignedAction> {
    let item = run_item(state, id)?;
    let path = PathBuf::from(&item.path);
    let target = target_grant(&path, grant)?;
    let plan =
        st.with_key(|k| sv::plan_revoke(&target, &known_grants(state)?, &k.did()).map_err(|e| error::view(&e)))?;
    let (rev, file) = st.with_key(|k| {
        let rev =
            jcp::revocation::Revocation::issue(&target, k, None).map_err(|e| UiError::new(e.code(), e.to_string()))?;
        if let Some(live) = st.live_of(id) {
            live.feed(Feed::Revocation { revocation: rev.clone(), grant: target.clone(), marker: live.next_marker() })?;
        }
        sv::write_revocation(&path, &target, &rev).map(|f| (rev, f)).map_err(|e| error::view(&e))
    })?;
    st.revision.fetch_add(1, Ordering::Relaxed);
    let done = SignedAction {
        action: StewardActionKind::Revoke,
        signed_by: rev.revocation().revoked_by.to_string(),
        signed: vec![rev.id().to_string()],
        files: vec![file.display().to_string()],
        message: format!("revoked grant {}; {} grant(s) die with it", target.id(), plan.dies.len()),
    };
    record(state, &item.path, &done)?;
    Ok(done)
}
