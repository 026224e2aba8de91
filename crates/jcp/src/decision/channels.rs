//! §4.5 budget channels at the gate: joining a channel on a grant, and the
//! peers' signed statements whose settled spend counts against its budget.

use super::Gate;
use crate::cbor::ContentId;
use crate::channel::{ChannelPoint, SignedStatement, Statement};
use crate::error::Error;
use crate::grant::SignedGrant;
use crate::identity::Did;

impl Gate {
    /// Joins a budget channel on `grant` as the point `me`, with `peers`
    /// (§4.5): configuration, like a trust root. Joining again replaces the
    /// channel (and forgets what it had admitted).
    pub fn join_channel(
        &mut self,
        grant: SignedGrant,
        me: Did,
        peers: impl IntoIterator<Item = Did>,
    ) -> Result<(), Error> {
        let id = grant.id();
        self.channels.insert(id, ChannelPoint::join(grant, me, peers)?);
        Ok(())
    }

    /// The budget channel this point runs on a grant.
    pub fn channel(&self, grant_id: &ContentId) -> Option<&ChannelPoint> {
        self.channels.get(grant_id)
    }

    fn channel_of(&self, grant_id: &ContentId) -> Result<&ChannelPoint, Error> {
        self.channels.get(grant_id).ok_or_else(|| Error::ChannelUnknown { grant_id: grant_id.to_hex() })
    }

    fn channel_mut(&mut self, grant_id: &ContentId) -> Result<&mut ChannelPoint, Error> {
        self.channels.get_mut(grant_id).ok_or_else(|| Error::ChannelUnknown { grant_id: grant_id.to_hex() })
    }

    /// Whether a peer's statement would be admitted, changing nothing (§4.5).
    pub fn check_statement(&self, s: &SignedStatement) -> Result<(), Error> {
        self.channel_of(&s.statement().grant_id)?.check_peer(s)
    }

    /// Admits a peer's statement (§4.5): signature, grant, membership,
    /// not stale, not regressing. From then on its settled spend counts
    /// against the grant's budget here. A refusal changes nothing.
    pub fn admit_statement(&mut self, s: &SignedStatement) -> Result<(), Error> {
        self.channel_mut(&s.statement().grant_id)?.admit_peer(s)
    }

    /// The statement this point would sign now on a channel grant: its
    /// local spend, the next `seq`.
    pub fn next_statement(&self, grant_id: &ContentId) -> Result<Statement, Error> {
        Ok(self.channel_of(grant_id)?.next_statement(self.local_spent(grant_id).uj))
    }

    /// Whether [`Gate::note_own_statement`] would take `s`, changing nothing.
    pub fn check_own_statement(&self, s: &SignedStatement) -> Result<(), Error> {
        self.channel_of(&s.statement().grant_id)?.check_own(s)
    }

    /// Records one of this point's own signed statements on a channel.
    pub fn note_own_statement(&mut self, s: &SignedStatement) -> Result<(), Error> {
        self.channel_mut(&s.statement().grant_id)?.note_own(s)
    }
}
