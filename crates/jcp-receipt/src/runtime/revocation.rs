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
        let before = self.known_through;
        if self.known_through.is_none_or(|k| k < marker) {
            self.known_through = Some(marker);
        }
        let notice = RevocationNotice { revocation: rev.clone(), marker, steward: self.steward_did };
        let pos = self.position();
        let bytes = record::seal_core(&notice.to_value(), pos, &self.steward);
        let appended = self.writer.append(RecordKind::Revocation, &bytes);
        let at = match appended {
            Ok(at) => at,
            Err(e) => {
                // Not recorded: not applied, and the marker does not move.
                self.known_through = before;
                return Err(e);
            }
        };
        self.gate.admit_revocation(rev, grant).map_err(Error::Revocation)?;
        Ok(at)
    }
}
