//! Revocation at a durable point (§4.3): a revocation is admitted only on
//! its issuer's authority, recorded as a sealed notice with the feed marker
//! at which it was issued, then applied; and the point's `known_through`
//! marker, which only moves forward.

use jcp::grant::SignedGrant;
use jcp::revocation::SignedRevocation;

use super::DurableGate;
use crate::error::Error;
use crate::record::{self, RevocationNotice};
use crate::stream::RecordKind;

impl DurableGate {
    /// The revocation-knowledge marker this point states (§4.3).
    pub fn known_through(&self) -> Option<u64> {
        self.known_through
    }

    /// States how current this point's revocation knowledge is (§4.3). The
    /// marker is monotonic: a smaller one is refused.
    pub fn set_known_through(&mut self, marker: u64) -> Result<(), Error> {
        if let Some(old) = self.known_through {
            if marker < old {
                return Err(Error::MarkerRegressed { old, new: marker });
            }
        }
        self.known_through = Some(marker);
        Ok(())
    }

    /// Admits a revocation (authority checked by the gate, §4.3) and records
    /// the notice with the feed marker at which it was issued. Advances this
    /// point's `known_through` to at least `marker`.
    pub fn admit_revocation(&mut self, rev: &SignedRevocation, grant: &SignedGrant, marker: u64) -> Result<u64, Error> {
        // Authority first (nothing changes for a forged one), then the
        // record, then the gate: recorded before applied (§11).
        rev.check_authority(grant).map_err(Error::Revocation)?;
        // Replay must be able to re-admit it: the grant goes in the stream too.
        if !self.grants.contains_key(&grant.id()) {
            self.record_grant(grant)?;
        }
        let notice = RevocationNotice { revocation: rev.clone(), marker, steward: self.steward_did };
        let at = self.record_at_marker(RecordKind::Revocation, &notice.to_value(), Some(marker))?;
        self.gate.admit_revocation(rev, grant).map_err(Error::Revocation)?;
        Ok(at)
    }

    /// Seals a feed notice's `core` and appends it as `kind`, at the feed
    /// `marker` it carries: this point's `known_through` advances to it
    /// first (the notice is sealed there, §4.3), and goes back if the
    /// notice is not recorded (nothing applied, no marker moved).
    pub(super) fn record_at_marker(
        &mut self,
        kind: RecordKind,
        core: &jcp::cbor::Value,
        marker: Option<u64>,
    ) -> Result<u64, Error> {
        let before = self.known_through;
        if let Some(m) = marker {
            if self.known_through.is_none_or(|k| k < m) {
                self.known_through = Some(m);
            }
        }
        let pos = self.position();
        let bytes = record::seal_core(core, pos, &self.steward);
        self.writer.append(kind, &bytes).inspect_err(|_| self.known_through = before)
    }
}
