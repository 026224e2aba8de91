//! The crate's one error enum. Decision outcomes are not errors: a deny is a
//! verdict with a [`crate::decision::Reason`]. These are refusals to build,
//! mint or read an object.

use crate::cbor::{DecodeError, SchemaError};
use crate::identity::IdentityError;

/// Which attenuation axis a child would amplify (§4.1, §4.4, §4.8, §4.9).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Amplification {
    /// A different resource than the parent's.
    #[error("child resource differs from the parent's")]
    Resource,
    /// An action the parent does not hold.
    #[error("child action {0:?} is not among the parent's actions")]
    Action(String),
    /// A larger joule budget.
    #[error("child budget {child} µJ exceeds the parent's {parent} µJ")]
    Budget { child: u64, parent: u64 },
    /// An expiry outliving the parent's (including `0` = never under a
    /// parent that expires).
    #[error("child expiry {child} outlives the parent's {parent}")]
    Expiry { child: u64, parent: u64 },
    /// A money ceiling dropped, raised or re-denominated (§4.8).
    #[error("money ceiling: {0}")]
    Funds(String),
    /// A parent caveat not carried by the child (§4.9).
    #[error("child drops the parent's caveat #{0}")]
    DroppedCaveat(usize),
    /// A delegation depth beyond the parent's bound (§4.4).
    #[error("child delegate_depth {child:?} exceeds what the parent allows ({allowed})")]
    Depth { child: Option<u64>, allowed: u64 },
}

/// Errors of the JCP core. Each variant has a stable [`Error::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that are not canonical det-CBOR (§3).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// Canonical CBOR that is not the object it was read as.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A `did:key` refused (§2).
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// A signature that does not verify under its signer's key.
    #[error("bad-signature: {object} signature does not verify under {signer}")]
    BadSignature { object: &'static str, signer: String },
    /// An attenuation that would amplify (§4.1) — `attenuation-violation`.
    #[error("attenuation-violation: {0}")]
    AttenuationViolation(Amplification),
    /// Delegation by someone other than the parent's subject (§4.1).
    #[error("not-holder: only the parent's subject {holder} may delegate it, not {by}")]
    NotHolder { holder: String, by: String },
    /// Delegation under a leaf-only parent (§4.4) — `delegation-forbidden`.
    #[error("delegation-forbidden: the parent grant is leaf-only (delegate_depth 0)")]
    DelegationForbidden,
    /// Shard slices that sum past the parent (§4.5).
    #[error("shard-overflow: slices sum to {sum} µJ, past the parent's {parent} µJ")]
    ShardOverflow { sum: u128, parent: u64 },
    /// A revocation whose revoker is not the grant's issuer, or whose ids do
    /// not match (§4.3).
    #[error("revocation-unauthorized: {0}")]
    RevocationUnauthorized(String),
    /// A structurally broken chain (§4.2) — `chain-broken`.
    #[error("chain-broken: {0}")]
    ChainBroken(String),
    /// §4.5 channels: a statement signed by a key other than its `point`,
    /// or presented as this point's own when it is not.
    #[error("statement-signer: the statement's point is {point}, the signer {signer}")]
    StatementSigner { point: String, signer: String },
    /// §4.5 channels: a statement naming a grant other than the channel's.
    #[error("statement-wrong-grant: the statement names grant {got}, the channel is on {expected}")]
    StatementWrongGrant { expected: String, got: String },
    /// §4.5 channels: a statement from a point that is not a member.
    #[error("statement-not-member: {point} is not a member point of the channel")]
    StatementNotMember { point: String },
    /// §4.5 channels: a stale statement (`seq` not strictly increasing).
    #[error("statement-stale: {point} already settled seq {last_seq}; seq {seq} is not above it")]
    StatementStale { point: String, last_seq: u64, seq: u64 },
    /// §4.5 channels: a regressing statement (`spent_uj` decreasing).
    #[error("statement-regressing: {point} already settled {last_uj} µJ; {spent_uj} µJ would go back")]
    StatementRegressing { point: String, last_uj: u64, spent_uj: u64 },
    /// §4.5 channels: a point's own statement presented to it as a peer's.
    #[error("statement-from-self: the statement is this point's own ({point}); its own spend is counted locally")]
    StatementFromSelf { point: String },
    /// §4.5 overdraft proof: two statements from one point.
    #[error("statement-duplicate: {point} appears twice in the proof; one statement per point")]
    StatementDuplicate { point: String },
    /// §4.5 overdraft proof: the statements do not sum past the budget.
    #[error("overdraft-unproven: the statements sum to {total_uj} µJ, within the budget of {budget_uj} µJ")]
    OverdraftUnproven { total_uj: u128, budget_uj: u64 },
    /// §4.5 channels: a statement for a grant this point runs no channel on.
    #[error("channel-unknown: this point runs no budget channel on grant {grant_id}")]
    ChannelUnknown { grant_id: String },
    /// A value outside what the object allows (e.g. duplicate actions).
    #[error("invalid: {0}")]
    Invalid(String),
    /// A steering record or run refused (§4.7, C21); the code is the
    /// steering reason (`steer-*`, `run-*`).
    #[error(transparent)]
    Steering(#[from] crate::steering::SteeringError),
}

impl Error {
    /// A stable code for machines and the console (`{code, message}`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Decode(e) => e.code(),
            Self::Schema(e) => e.code(),
            Self::Identity(e) => e.code(),
            Self::BadSignature { .. } => "bad-signature",
            Self::AttenuationViolation(_) => "attenuation-violation",
            Self::NotHolder { .. } => "not-holder",
            Self::DelegationForbidden => "delegation-forbidden",
            Self::ShardOverflow { .. } => "shard-overflow",
            Self::RevocationUnauthorized(_) => "revocation-unauthorized",
            Self::ChainBroken(_) => "chain-broken",
            Self::StatementSigner { .. } => "statement-signer",
            Self::StatementWrongGrant { .. } => "statement-wrong-grant",
            Self::StatementNotMember { .. } => "statement-not-member",
            Self::StatementStale { .. } => "statement-stale",
            Self::StatementRegressing { .. } => "statement-regressing",
            Self::StatementFromSelf { .. } => "statement-from-self",
            Self::StatementDuplicate { .. } => "statement-duplicate",
            Self::OverdraftUnproven { .. } => "overdraft-unproven",
            Self::ChannelUnknown { .. } => "channel-unknown",
            Self::Invalid(_) => "invalid",
            Self::Steering(e) => e.code(),
        }
    }
}
