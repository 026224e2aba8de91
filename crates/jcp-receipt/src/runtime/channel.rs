//! Budget channels at a durable point (§4.5): a peer's signed statement is
//! checked, recorded, then applied; this point's own statement is signed at
//! the next `seq` and recorded before it is handed out, so a restart never
//! signs a `seq` twice.

use jcp::cbor::ContentId;
use jcp::channel::SignedStatement;
use jcp::identity::Keypair;

use super::DurableGate;
use crate::error::Error;
use crate::record;
use crate::stream::RecordKind;

impl DurableGate {
    fn record_statement(&mut self, statement: &SignedStatement) -> Result<u64, Error> {
        let notice = record::StatementNotice { statement: statement.clone(), steward: self.steward_did };
        let pos = self.position();
        let bytes = record::seal_core(&notice.to_value(), pos, &self.steward);
        self.writer.append(RecordKind::Statement, &bytes)
    }

    /// Admits a peer's budget-channel statement (§4.5): checked against the
    /// gate without changing it (signature, grant, membership, not stale,
    /// not regressing), recorded as a sealed statement notice, then applied
    /// — from then on the peer's settled spend counts against the grant's
    /// budget here. Replay re-admits it. A refused statement is neither
    /// recorded nor applied.
    pub fn admit_statement(&mut self, statement: &SignedStatement) -> Result<u64, Error> {
        self.gate.check_statement(statement).map_err(Error::StatementRefused)?;
        let at = self.record_statement(statement)?;
        self.gate.admit_statement(statement).map_err(Error::StatementRefused)?;
        Ok(at)
    }

    /// This point's signed statement of its cumulative allowed spend on a
    /// channel grant (§4.5), signed with its point key. While its local
    /// spend is what its last statement stated, that statement is returned
    /// again (nothing recorded); otherwise a new one at the next `seq` is
    /// signed and recorded before it is returned, so a restart never signs
    /// a `seq` twice. The bool says whether it was recorded now.
    pub fn issue_statement(&mut self, grant_id: &ContentId, point: &Keypair) -> Result<(SignedStatement, bool), Error> {
        let next = self.gate.next_statement(grant_id).map_err(Error::StatementRefused)?;
        let last = self.gate.channel(grant_id).and_then(|c| c.last_own().cloned());
        if let Some(last) = last.filter(|l| l.statement().spent_uj == next.spent_uj) {
            return Ok((last, false));
        }
        let signed = next.sign(point).map_err(Error::StatementRefused)?;
        // Checked as it will be applied (its point is this channel's).
        self.gate.check_own_statement(&signed).map_err(Error::StatementRefused)?;
        self.record_statement(&signed)?;
        self.gate.note_own_statement(&signed).map_err(Error::StatementRefused)?;
        Ok((signed, true))
    }
}
