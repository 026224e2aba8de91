//! Approving and amending a run at a checkpoint (§4.7): the plan, checked
//! without signing, and the signed amendment with its continuation grant —
//! admitted by a live run's endpoint before the run file is replaced.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use console_view::steward::{self as sv, AmendForm, AmendPreview, SignedAction, StewardActionKind};
use jcp_wire::message::Feed;

use super::key::key_err;
use super::runs::run_item;
use super::{record, StewardState};
use crate::error::{self, CmdResult};
use crate::state::AppState;

/// Plans an amendment (or an approval, `budget_uj` absent) without signing.
pub fn preview(state: &AppState, st: &StewardState, id: i64, form: &AmendForm) -> CmdResult<AmendPreview> {
    let item = run_item(state, id)?;
    let did = match st.key.lock().map_err(|_| error::poisoned("key"))?.peek(std::time::Instant::now()) {
        Some(k) => k.did(),
        // Locked: the preview judges the amount as the key file's did would sign it.
        None => keystore::did(&st.key_path).map_err(|e| key_err(&e))?,
    };
    sv::preview_amend(Path::new(&item.path), &did, form).map_err(|e| error::view(&e))
}

/// Signs an amendment (or approval): the core checks it again before
/// signing; a live run's endpoint admits it (recorded there) before the
/// run file — where the agent picks it up — is replaced; then it is
/// recorded in the console's history.
pub fn amend(state: &AppState, st: &StewardState, id: i64, form: &AmendForm) -> CmdResult<SignedAction> {
    let item = run_item(state, id)?;
    let path = PathBuf::from(&item.path);
    let steering = st.with_key(|k| sv::sign_amend(&path, k, form).map_err(|e| error::view(&e)))?;
    let signer = steering.amendment.amendment().amended_by.to_string();
    if let Some(live) = st.live_of(id) {
        live.feed(Feed::Amendment {
            steered: steering.steered.clone(),
            checkpoint: steering.checkpoint.clone(),
            amendment: steering.amendment.clone(),
            continuation: steering.continuation.clone(),
            // A soft revoke travels the revocation feed at its next marker (§4.3, §4.7).
            marker: Some(live.next_marker()),
        })?;
    }
    sv::write_run(&path, &steering.run).map_err(|e| error::view(&e))?;
    st.revision.fetch_add(1, Ordering::Relaxed);
    let approve = form.budget_uj.is_none();
    let budget = console_view::format_uj(steering.continuation.grant().budget_uj);
    let done = SignedAction {
        action: if approve { StewardActionKind::Approve } else { StewardActionKind::Amend },
        signed_by: signer,
        signed: vec![steering.amendment.id().to_string(), steering.continuation.id().to_string()],
        files: vec![item.path.clone()],
        message: format!(
            "{} at checkpoint {}: continuation grant {} with {budget}",
            if approve { "approved" } else { "amended" },
            steering.checkpoint.checkpoint().seq,
            steering.continuation.id()
        ),
    };
    record(state, &item.path, &done)?;
    Ok(done)
}
