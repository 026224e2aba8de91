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
    /// `marker` is the feed's marker at which the amendment was issued
    /// (amendments travel the revocation feed, §4.3): recorded in the
    /// notice, and this point's `known_through` advances to it.
    /// The same amendment admitted again (it came by two routes: a feed and
    /// the run file) records nothing and is `Ok(None)`.
    pub fn admit_amendment(
        &mut self,
        steered: &SignedGrant,
        checkpoint: &jcp::steering::SignedCheckpoint,
        amendment: &jcp::steering::SignedAmendment,
        continuation: &SignedGrant,
        marker: Option<u64>,
    ) -> Result<Option<u64>, Error> {
        self.gate
            .check_amendment(steered, checkpoint, amendment, continuation)
            .map_err(|e| Error::AmendmentRefused(self.name_held(&steered.id(), e)))?;
        if self.gate.superseded_by(&steered.id()) == Some(amendment.id()) {
            return Ok(None);
        }
        let at = self.record_amendment(steered, checkpoint, amendment, continuation, marker)?;
        self.gate.admit_amendment(steered, checkpoint, amendment, continuation).map_err(Error::AmendmentRefused)?;
        Ok(Some(at))
    }

    /// A forger's point, for the audit's tests only: its gate takes `point`
    /// as its identity, so it decides shards bound to another point (§4.5)
    /// as that point would, while sealing under its own steward.
    #[cfg(feature = "testing")]
    pub fn impersonate_point_for_tests(&mut self, point: jcp::identity::Did) {
        self.gate.set_point(point);
    }

    /// A forger's point, for the audit's tests only: records an amendment
    /// notice the gate did not check (nor apply), as a point that skipped
    /// §4.7's checks would, so the audit can be shown to refuse it.
    #[cfg(feature = "testing")]
    pub fn record_amendment_unchecked_for_tests(
        &mut self,
        steered: &SignedGrant,
        checkpoint: &jcp::steering::SignedCheckpoint,
        amendment: &jcp::steering::SignedAmendment,
        continuation: &SignedGrant,
        marker: Option<u64>,
    ) -> Result<u64, Error> {
        self.record_amendment(steered, checkpoint, amendment, continuation, marker)
    }

    fn record_amendment(
        &mut self,
        steered: &SignedGrant,
        checkpoint: &jcp::steering::SignedCheckpoint,
        amendment: &jcp::steering::SignedAmendment,
        continuation: &SignedGrant,
        marker: Option<u64>,
    ) -> Result<u64, Error> {
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
            marker,
            steward: self.steward_did,
        };
        // As a revocation: the notice is sealed at the marker it advances to.
        self.record_at_marker(RecordKind::Amendment, &notice.to_value(), marker)
    }

    /// A widening refusal names what calls in flight hold on the steered
    /// grant (§4.9 phase one debits a reservation until its charge settles
    /// it): the steward sees that the remainder is held, not spent, and
    /// that the same amendment may be admitted once those calls settle.
    fn name_held(&self, grant: &jcp::cbor::ContentId, e: jcp::Error) -> jcp::Error {
        use jcp::steering::SteeringError;
        let (calls, uj) = self
            .held
            .values()
            .filter(|h| h.chain_ids.contains(grant))
            .fold((0u64, 0u64), |(n, uj), h| (n + 1, uj.saturating_add(h.uj)));
        match e {
            jcp::Error::Steering(SteeringError::Widening(m)) if calls > 0 => {
                jcp::Error::Steering(SteeringError::Widening(format!(
                    "{m}; {uj} µJ of that is held for {calls} call(s) in flight, released to the remainder when their metered charge settles them"
                )))
            }
            e => e,
        }
    }
}
