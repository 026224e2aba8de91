//! Unresolved decisions (§4.11): a decision made and sealed whose outcome
//! never arrived is surfaced, naming the party that held it, and the steward
//! settles it with a signed note — never retried, nothing re-debited.

use std::path::{Path, PathBuf};

use console_view::ipc::UiError;
use console_view::steward::{self as sv, SettleStatus, SignedAction, StewardActionKind, UnresolvedStream};
use jcp::cbor::ContentId;

use super::{record, StewardState};
use crate::error::{self, CmdResult};
use crate::state::{now_ms, AppState};

/// Every workspace stream's unresolved decisions (§4.11), from its last
/// audit, each with the party that held it and any settlement signed since.
pub fn unresolved(state: &AppState) -> CmdResult<Vec<UnresolvedStream>> {
    let streams = state.with_store(|s| s.streams().map_err(|e| error::store(&e)))?;
    let mut out = Vec::new();
    for r in streams {
        let Some(report) = r.last_audit.as_ref() else { continue };
        let total = report["unresolved_total"].as_u64().unwrap_or(0);
        if total == 0 {
            continue;
        }
        // The report may cover several streams: this one is the index whose path is it.
        let index = report["streams"]
            .as_array()
            .and_then(|a| a.iter().position(|s| s["path"].as_str() == Some(r.path.as_str())))
            .unwrap_or(0);
        let path = PathBuf::from(&r.path);
        let size = std::fs::metadata(&path).map(|m| m.len()).ok();
        let audited = report["streams"][index]["bytes"].as_u64();
        out.push(UnresolvedStream {
            rows: sv::unresolved_rows(report, index, &path),
            handle: state.handles.grant(std::path::Path::new(&r.path)),
            stream: r.path,
            audited_at_ms: r.last_audit_at_ms.unwrap_or(0),
            changed_since: size != audited,
            total,
        });
    }
    Ok(out)
}

/// Settles an unresolved decision with a signed note (the audit of the
/// stream must list it unresolved); recorded in the history. Never retried,
/// nothing re-debited or refunded.
pub fn settle(
    state: &AppState,
    st: &StewardState,
    stream: &str,
    receipt: &str,
    status: SettleStatus,
    note: &str,
) -> CmdResult<SignedAction> {
    let id = ContentId::parse(receipt)
        .ok_or_else(|| UiError::new("settle.bad_receipt", format!("{receipt:?} is not a receipt id")))?;
    if note.trim().is_empty() {
        return Err(UiError::new(
            "settle.no_note",
            "a settlement says why: write a note (it is signed with the settlement)",
        ));
    }
    let status_r = match status {
        SettleStatus::Completed => jcp_receipt::record::OutcomeStatus::Completed,
        SettleStatus::Failed => jcp_receipt::record::OutcomeStatus::Failed,
    };
    let at = now_ms() / 1000;
    let (n, path) = st.with_key(|k| {
        jcp_audit::settle(Path::new(stream), &id, status_r, note.trim(), k, at)
            .map_err(|e| UiError::new(e.code(), e.to_string()))
    })?;
    let done = SignedAction {
        action: StewardActionKind::Settle,
        signed_by: n.note().settled_by.to_string(),
        signed: vec![n.id().to_string()],
        files: vec![path.display().to_string()],
        message: format!(
            "settled decision {} (held by {}) as {}; its energy stays debited",
            n.note().receipt,
            n.note().holder,
            status_r.as_str()
        ),
    };
    record(state, stream, &done)?;
    Ok(done)
}
