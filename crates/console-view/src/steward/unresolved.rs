//! Unresolved decisions (JCP §4.11): a decision made and sealed whose
//! outcome never arrived, named with the party that held it, and the
//! settlement a steward may sign for it.

use std::path::Path;

use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use crate::format_uj;

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
    /// The stream, to show.
    pub stream: String,
    /// Its handle: what `steward_settle` takes (issue 34).
    pub handle: String,
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
