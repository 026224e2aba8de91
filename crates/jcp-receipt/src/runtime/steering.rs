//! Steering at a durable point (§4.7 soft revoke): an amendment checked
//! against the gate, recorded as a sealed notice (with the grants it names),
//! then applied; replay re-admits it.

use jcp::grant::SignedGrant;

use super::DurableGate;
use crate::error::Error;
use crate::record;
use crate::stream::RecordKind;

impl DurableGate {
    /// Admits an amendment (§4.7 soft revoke): checked against the gate
    /// without changing it, recorded as a sealed amendment notice, then
    /// applied — the steered grant is superseded at this point. Replay
    /// re-admits it. A refused amendment is neither recorded nor applied.
    pub fn admit_amendment(
        &mut self,
        steered: &SignedGrant,
        checkpoint: &jcp::steering::SignedCheckpoint,
        amendment: &jcp::steering::SignedAmendment,
        continuation: &SignedGrant,
    ) -> Result<u64, Error> {
        self.gate.check_amendment(steered, checkpoint, amendment, continuation).map_err(Error::AmendmentRefused)?;
        for g in [steered, continuation] {
            if !self.grants.contains_key(&g.id()) {
                self.record_grant(g)?;
            }
        }
        let notice = record::AmendmentNotice {
            steered: steered.clone(),
            checkpoint: checkpoint.clone(),
            amendment: amendment.clone(),
            continuation: continuation.clone(),
            steward: self.steward_did,
        };
        let pos = self.position();
        let bytes = record::seal_core(&notice.to_value(), pos, &self.steward);
        let at = self.writer.append(RecordKind::Amendment, &bytes)?;
        self.gate.admit_amendment(steered, checkpoint, amendment, continuation).map_err(Error::AmendmentRefused)?;
        Ok(at)
    }
}
