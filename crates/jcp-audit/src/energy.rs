//! The audit's side of §5.5 (conservation of a grant's spend against the
//! meter): a grant's spend as the receipt streams record it, read with this
//! crate's audit, then reconciled by `jcp_meter::layers::reconcile_spend`
//! against a recorded meter session. The dependency points down: the audit
//! uses the meter's conservation, the meter knows nothing of streams.

use std::ops::ControlFlow;
use std::path::Path;

use jcp::cbor::ContentId;
use jcp_meter::layers::{reconcile_spend, GrantSpend, SpendReconciliation};
use jcp_meter::session::Session;
use jcp_meter::Error;

/// Reads a grant's spend from receipt streams with the audit (`jcp-audit`).
pub fn grant_spend<P: AsRef<Path>>(streams: &[P], grant: &ContentId) -> Result<GrantSpend, Error> {
    let report = crate::audit_paths(streams, &crate::AuditOptions::default(), |_| ControlFlow::Continue(()))
        .map_err(|e| Error::Stream { code: e.code(), detail: e.to_string() })?;
    let line = report
        .grants
        .iter()
        .find(|g| g.grant_id == *grant)
        .ok_or_else(|| Error::GrantNotInStreams { grant: grant.to_hex() })?;
    let c = line.conservation.as_ref().ok_or_else(|| Error::GrantBudgetUnknown { grant: grant.to_hex() })?;
    Ok(GrantSpend {
        grant_id: *grant,
        budget_uj: c.budget_uj,
        debited_uj: line.spent_uj,
        measured_uj: c.measured_uj,
        modelled_uj: c.modelled_uj,
        coverage: c.coverage,
        allows: line.allows,
        receipts_failed: report.receipts.failed,
    })
}

/// [`grant_spend`] then [`reconcile_spend`]: the console's "conservation of
/// a grant's spend against the meter's windows".
pub fn reconcile_grant<P: AsRef<Path>>(
    streams: &[P],
    grant: &ContentId,
    session: &Session,
) -> Result<SpendReconciliation, Error> {
    reconcile_spend(&grant_spend(streams, grant)?, session)
}
