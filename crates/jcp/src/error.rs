//! The crate's one error enum. Decision outcomes are not errors: a deny is a
//! verdict with a [`crate::decision::Reason`]. These are refusals to build,
//! mint or read an object.

use crate::cbor::{ContentId, DecodeError, SchemaError};
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
    Budget {
        /// The child's `budget_uj`.
        child: u64,
        /// The parent's `budget_uj`, which the child may not pass.
        parent: u64,
    },
    /// An expiry outliving the parent's (including `0` = never under a
    /// parent that expires).
    #[error("child expiry {child} outlives the parent's {parent}")]
    Expiry {
        /// The child's `expiry` (unix seconds; `0` = never).
        child: u64,
        /// The parent's `expiry`, which the child may not outlive.
        parent: u64,
    },
    /// A money ceiling dropped, raised or re-denominated (§4.8).
    #[error("money ceiling: {0}")]
    Funds(String),
    /// A parent caveat not carried by the child (§4.9).
    #[error("child drops the parent's caveat #{0}")]
    DroppedCaveat(usize),
    /// A delegation depth beyond the parent's bound (§4.4).
    #[error("child delegate_depth {child:?} exceeds what the parent allows ({allowed})")]
    Depth {
        /// The child's `delegate_depth` (`None` = unbounded).
        child: Option<u64>,
        /// The most the parent allows: its own depth less the hop.
        allowed: u64,
    },
}

/// Errors of the JCP core. Each variant has a stable [`Error::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that are not canonical det-CBOR (§3).
    #[error("{code}: {0}", code = .0.code())]
    Decode(#[from] DecodeError),
    /// Canonical CBOR that is not the object it was read as.
    #[error("{code}: {0}", code = .0.code())]
    Schema(#[from] SchemaError),
    /// A `did:key` refused (§2).
    #[error("{code}: {0}", code = .0.code())]
    Identity(#[from] IdentityError),
    /// A signature that does not verify under its signer's key.
    #[error("bad-signature: {object} signature does not verify under {signer}")]
    BadSignature {
        /// The kind of object whose signature failed (`Grant`, `Checkpoint`, …).
        object: &'static str,
        /// The DID the signature was checked under.
        signer: String,
    },
    /// An attenuation that would amplify (§4.1) — `attenuation-violation`.
    #[error("attenuation-violation: {0}")]
    AttenuationViolation(Amplification),
    /// Delegation by someone other than the parent's subject (§4.1).
    #[error("not-holder: only the parent's subject {holder} may delegate it, not {by}")]
    NotHolder {
        /// The parent's subject: the only principal that may delegate it.
        holder: String,
        /// The DID that tried to delegate.
        by: String,
    },
    /// Delegation under a leaf-only parent (§4.4) — `delegation-forbidden`.
    #[error("delegation-forbidden: the parent grant is leaf-only (delegate_depth 0)")]
    DelegationForbidden,
    /// Shard slices that sum past the parent (§4.5).
    #[error("shard-overflow: slices sum to {sum} µJ, past the parent's {parent} µJ")]
    ShardOverflow {
        /// The slices' total, µJ (wider than `u64`: it is a sum).
        sum: u128,
        /// The parent grant's `budget_uj`.
        parent: u64,
    },
    /// A shard operation refused for another reason than its joule sum
    /// (§4.5, §4.8): two slices bound to one point, a money share missing,
    /// stated without a parent ceiling, or summing past it.
    #[error("shard-invalid: {0}")]
    ShardInvalid(String),
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
    StatementSigner {
        /// The statement's `point`.
        point: String,
        /// The DID that signed it.
        signer: String,
    },
    /// §4.5 channels: a statement naming a grant other than the channel's.
    #[error("statement-wrong-grant: the statement names grant {got}, the channel is on {expected}")]
    StatementWrongGrant {
        /// The grant the channel is on (hex content id).
        expected: String,
        /// The grant the statement names.
        got: String,
    },
    /// §4.5 channels: a statement from a point that is not a member.
    #[error("statement-not-member: {point} is not a member point of the channel")]
    StatementNotMember {
        /// The statement's `point`, absent from the channel's members.
        point: String,
    },
    /// §4.5 channels: a stale statement (`seq` not strictly increasing).
    #[error("statement-stale: {point} already settled seq {last_seq}; seq {seq} is not above it")]
    StatementStale {
        /// The statement's `point`.
        point: String,
        /// The `seq` of the point's last admitted statement.
        last_seq: u64,
        /// The presented statement's `seq`.
        seq: u64,
    },
    /// §4.5 channels: a regressing statement (`spent_uj` decreasing).
    #[error("statement-regressing: {point} already settled {last_uj} µJ; {spent_uj} µJ would go back")]
    StatementRegressing {
        /// The statement's `point`.
        point: String,
        /// The `spent_uj` the point last settled.
        last_uj: u64,
        /// The lower `spent_uj` the statement states.
        spent_uj: u64,
    },
    /// §4.5 channels: a point's own statement presented to it as a peer's.
    #[error("statement-from-self: the statement is this point's own ({point}); its own spend is counted locally")]
    StatementFromSelf {
        /// This point's own DID.
        point: String,
    },
    /// §4.5 overdraft proof: two statements from one point.
    #[error("statement-duplicate: {point} appears twice in the proof; one statement per point")]
    StatementDuplicate {
        /// The point with two statements in the proof.
        point: String,
    },
    /// §4.5 overdraft proof: the statements do not sum past the budget.
    #[error("overdraft-unproven: the statements sum to {total_uj} µJ, within the budget of {budget_uj} µJ")]
    OverdraftUnproven {
        /// What the proof's statements sum to, µJ.
        total_uj: u128,
        /// The channel grant's `budget_uj`.
        budget_uj: u64,
    },
    /// §4.5 channels: a statement for a grant this point runs no channel on.
    #[error("channel-unknown: this point runs no budget channel on grant {grant_id}")]
    ChannelUnknown {
        /// The grant the statement names (hex content id).
        grant_id: String,
    },
    /// §4: a list whose entries must be distinct (`capability.actions`)
    /// names one twice.
    #[error("duplicate-entry: {entry:?} appears twice in {field}")]
    DuplicateEntry {
        /// The list (`capability.actions`).
        field: &'static str,
        /// The entry named twice.
        entry: String,
    },
    /// A signed object (a grant, a checkpoint) names a signer other than
    /// the key asked to sign it: nothing is signed.
    #[error("signer-mismatch: the {object} names {named} but the signing key is {key}")]
    SignerMismatch {
        /// The kind of object (`grant`, `checkpoint`, …).
        object: &'static str,
        /// The signer the object names.
        named: String,
        /// The DID of the key asked to sign.
        key: String,
    },
    /// §4.9 phase two: the charge presents another chain than the one
    /// authorised in phase one.
    #[error("charge-chain-mismatch: the charge presented a different chain than was authorized")]
    ChargeChainMismatch,
    // ---- text forms of protocol objects (people's input: flags, forms, key files) ----
    /// A caveat's text form (`Name=argument`, [`crate::grant::Caveat`]'s `FromStr`) is malformed.
    #[error("invalid-caveat: {text:?}: {problem}")]
    InvalidCaveat {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A label's text form (`bottom`, `top` or `INTEGRITY;ORIGINS;READERS`, [`crate::flow::Label`]'s `FromStr`) is malformed.
    #[error("invalid-label: {text:?}: {problem}")]
    InvalidLabel {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A money amount's text form (`CURRENCY:MINOR`, [`crate::grant::Funds`]'s `FromStr`) is malformed.
    #[error("invalid-funds: {text:?}: {problem}")]
    InvalidFunds {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Text that should be a content id (64 lowercase hex digits) is not.
    #[error("invalid-content-id: {what}: {text:?} is not 64 lowercase hex digits")]
    InvalidContentId {
        /// What the text was meant to identify (a flag or field name).
        what: &'static str,
        /// The text as given.
        text: String,
    },
    /// A plain key file (`{"did", "seed"}` JSON, [`crate::identity::KeyFile`]) is malformed or its did is not its seed's.
    #[error("key-file-invalid: {problem}")]
    KeyFileInvalid {
        /// What is wrong with the file.
        problem: String,
    },
    /// An issuer's revocation log (`jcp-revocation-log/1`,
    /// [`crate::revocation_log`]) that cannot be taken: malformed, an entry
    /// whose signature does not verify or whose key is not trusted, a
    /// revocation without authority, a marker that goes back, a revocation
    /// logged twice. `line` is 1-based.
    #[error("revocation-log-invalid: line {line}: {problem}")]
    RevocationLogInvalid {
        /// The line.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// A steering record or run refused (§4.7, C21); the code is the
    /// steering reason (`steer-*`, `run-*`).
    #[error(transparent)]
    Steering(#[from] crate::steering::SteeringError),

    // ---- §2.1 identity continuity: pre-committed rotation (C12), `crate::rotation` ----
    /// A key log with no events: nothing shows who controls the identity.
    #[error("rotation-empty-log: a key log holds at least its inception event")]
    RotationEmptyLog,
    /// An event whose `seq` is not the previous event's + 1 (0 at inception).
    #[error("rotation-sequence-gap: event #{index} has seq {got}, expected {expected}")]
    RotationSequenceGap {
        /// The event's position in the log.
        index: usize,
        /// The `seq` it should have (the previous one's + 1).
        expected: u64,
        /// The `seq` it has.
        got: u64,
    },
    /// An event whose `parent` is not the previous event's id (or an
    /// inception that names a parent).
    #[error("rotation-parent-mismatch: event seq {seq} names parent {got}, expected {expected}")]
    RotationParentMismatch {
        /// The event's `seq`.
        seq: u64,
        /// The previous event's id (or none at inception).
        expected: String,
        /// The `parent` the event names.
        got: String,
    },
    /// A rotation whose new `current` key does not hash to the previous
    /// event's `next_hash`: not the pre-committed key.
    #[error("rotation-hash-mismatch: event seq {seq}: key {current} does not hash to the pre-committed next_hash {expected} (only the pre-committed key may rotate the identity)")]
    RotationHashMismatch {
        /// The rotation event's `seq`.
        seq: u64,
        /// The new key the event names.
        current: String,
        /// The previous event's `next_hash` commitment.
        expected: ContentId,
    },
    /// An event naming another identity than the log's inception DID, an
    /// inception whose `current` is not its `identity`, or an object issued
    /// in another identity's name than the key log's.
    #[error("rotation-wrong-identity: {what} (event seq {seq}): expected {expected}, got {got}")]
    RotationWrongIdentity {
        /// The event's `seq`.
        seq: u64,
        /// Which binding is in the wrong name, in words (e.g. an inception's
        /// current key that is not its identity).
        what: &'static str,
        /// The identity the log is for.
        expected: String,
        /// The identity found instead.
        got: String,
    },
    /// A grant signed by a key that controlled the identity once but has been
    /// rotated away (docs/decisions.md, "§2.1 superseded keys").
    #[error("rotation-superseded-key: signed by {signer}, which stopped controlling {identity} at event seq {superseded_at}; the current key is {current}")]
    RotationSupersededKey {
        /// The identity (inception DID) the object is issued in the name of.
        identity: String,
        /// The rotated-away key that signed.
        signer: String,
        /// The `seq` of the event that rotated it away.
        superseded_at: u64,
        /// The key that controls the identity now.
        current: String,
    },
    /// Two verified key logs for one identity that disagree at some event:
    /// the pre-committed key signed two different rotations, so nobody can
    /// tell which key controls the identity (fail closed: neither is used).
    #[error("rotation-forked: two key logs for {identity} diverge at event seq {seq}; no key is taken to control it")]
    RotationForked {
        /// The identity with two diverging logs.
        identity: String,
        /// The first `seq` at which they differ.
        seq: u64,
    },
    /// A key log event that does not decode; the code is the event's.
    #[error("{}: key log event #{index}: {source}", .source.code())]
    KeyLogEvent {
        /// The event's position in the log.
        index: usize,
        /// Why it does not decode.
        source: Box<Error>,
    },

    // ---- §4.6 standing grants (C20), `crate::standing` ----
    /// A mint policy not signed by the standing grant's issuer.
    #[error("standing-not-issuer: the mint policy is signed by {signer}, not the grant's issuer {issuer}")]
    StandingNotIssuer {
        /// The policy's signer.
        signer: String,
        /// The standing grant's issuer.
        issuer: String,
    },
    /// A standing grant its issuer does not hold (`subject` ≠ `issuer`): the
    /// grant the trigger spends must stay with the issuer (docs/decisions.md).
    #[error("standing-not-held-by-issuer: the standing grant's subject {subject} is not its issuer {issuer}")]
    StandingNotHeldByIssuer {
        /// The standing grant's issuer.
        issuer: String,
        /// Its subject, which is not the issuer.
        subject: String,
    },
    /// A mint policy that would amplify its grant (a per-firing budget above
    /// the grant's, or a zero bound that could be read as "unlimited").
    #[error("standing-policy-amplifies: {0}")]
    StandingPolicyAmplifies(String),
    /// A mint policy bound to another grant than the one presented.
    #[error("standing-policy-unbound: the policy is bound to grant {policy_grant}, not {grant}")]
    StandingPolicyUnbound {
        /// The grant the policy is bound to (its `grant_id`).
        policy_grant: ContentId,
        /// The grant presented.
        grant: ContentId,
    },
    /// A mint ledger kept for another policy or grant.
    #[error("standing-ledger-mismatch: the ledger is kept for {field} {ledger}, not {presented}")]
    StandingLedgerMismatch {
        /// Which binding differs (`grant` or `policy`).
        field: &'static str,
        /// The id the ledger is kept for.
        ledger: ContentId,
        /// The id presented.
        presented: ContentId,
    },
    /// An event of another class than the policy permits.
    #[error("standing-wrong-event-class: the policy permits event class {expected}, the event is {got}")]
    StandingWrongEventClass {
        /// The event class the policy permits.
        expected: ContentId,
        /// The event's class.
        got: ContentId,
    },
    /// The policy's maximum number of firings is used up.
    #[error("standing-firings-exhausted: {firings} of {max} firings used")]
    StandingFiringsExhausted {
        /// Firings already minted.
        firings: u64,
        /// The policy's `max_firings`.
        max: u64,
    },
    /// A firing asking for more than the policy's per-firing budget.
    #[error("standing-slice-exceeds-policy: a firing of {slice} µJ exceeds the per-firing budget {per_firing} µJ")]
    StandingSliceExceedsPolicy {
        /// The budget the firing asks for, µJ.
        slice: u64,
        /// The policy's `per_firing_uj`.
        per_firing: u64,
    },
    /// A firing that would push cumulative spend past the standing grant.
    #[error("standing-budget-exhausted: {spent} µJ minted so far + {slice} µJ exceeds the grant's {budget} µJ")]
    StandingBudgetExhausted {
        /// µJ minted under the standing grant so far.
        spent: u64,
        /// The firing's budget, µJ.
        slice: u64,
        /// The standing grant's `budget_uj`.
        budget: u64,
    },
    /// §5: a `HwShunt` figure without the measured figure the grade requires.
    #[error(
        "energy-unmeasured: a HwShunt cost of {uj} µJ carries no measured figure (§5: a hardware grade requires one)"
    )]
    UnmeasuredHardwareGrade {
        /// The figure's µJ.
        uj: u64,
    },
    /// §5: an `Estimator` figure that carries a measured figure.
    #[error("energy-measured-estimate: an Estimator cost carries measured = {measured} µJ (§5: an estimate has none; a figure resting on a reading is ModelBased or HwShunt)")]
    MeasuredEstimate {
        /// The measured figure it carried.
        measured: u64,
    },
    /// A figure that debits less than its own measured figure.
    #[error("energy-below-measured: the cost debits {uj} µJ but measured {measured} µJ (a debit never falls below its measurement)")]
    DebitBelowMeasured {
        /// The figure's µJ.
        uj: u64,
        /// Its measured figure.
        measured: u64,
    },
    /// A firing at or after the standing grant's expiry.
    #[error("standing-grant-expired: the standing grant expired at {expiry} (now {now})")]
    StandingGrantExpired {
        /// The standing grant's `expiry` (unix seconds).
        expiry: u64,
        /// The firing's clock.
        now: u64,
    },
}

/// A refusal as the console and `--json` output show it: `{code, message}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    /// The stable code ([`Error::code`]).
    pub code: &'static str,
    /// The human message (starts with the code).
    pub message: String,
}

impl From<&Error> for Refusal {
    fn from(e: &Error) -> Self {
        Self { code: e.code(), message: e.to_string() }
    }
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
            Self::ShardInvalid(_) => "shard-invalid",
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
            Self::DuplicateEntry { .. } => "duplicate-entry",
            Self::SignerMismatch { .. } => "signer-mismatch",
            Self::ChargeChainMismatch => "charge-chain-mismatch",
            Self::InvalidCaveat { .. } => "invalid-caveat",
            Self::InvalidLabel { .. } => "invalid-label",
            Self::InvalidFunds { .. } => "invalid-funds",
            Self::InvalidContentId { .. } => "invalid-content-id",
            Self::KeyFileInvalid { .. } => "key-file-invalid",
            Self::RevocationLogInvalid { .. } => "revocation-log-invalid",
            Self::Steering(e) => e.code(),
            // §2.1 rotation (C12)
            Self::RotationEmptyLog => "rotation-empty-log",
            Self::RotationSequenceGap { .. } => "rotation-sequence-gap",
            Self::RotationParentMismatch { .. } => "rotation-parent-mismatch",
            Self::RotationHashMismatch { .. } => "rotation-hash-mismatch",
            Self::RotationWrongIdentity { .. } => "rotation-wrong-identity",
            Self::RotationSupersededKey { .. } => "rotation-superseded-key",
            Self::RotationForked { .. } => "rotation-forked",
            Self::KeyLogEvent { source, .. } => source.code(),
            // §4.6 standing grants (C20)
            Self::StandingNotIssuer { .. } => "standing-not-issuer",
            Self::StandingNotHeldByIssuer { .. } => "standing-not-held-by-issuer",
            Self::StandingPolicyAmplifies(_) => "standing-policy-amplifies",
            Self::StandingPolicyUnbound { .. } => "standing-policy-unbound",
            Self::StandingLedgerMismatch { .. } => "standing-ledger-mismatch",
            Self::StandingWrongEventClass { .. } => "standing-wrong-event-class",
            Self::StandingFiringsExhausted { .. } => "standing-firings-exhausted",
            Self::StandingSliceExceedsPolicy { .. } => "standing-slice-exceeds-policy",
            Self::StandingBudgetExhausted { .. } => "standing-budget-exhausted",
            Self::StandingGrantExpired { .. } => "standing-grant-expired",
            Self::UnmeasuredHardwareGrade { .. } => "energy-unmeasured",
            Self::MeasuredEstimate { .. } => "energy-measured-estimate",
            Self::DebitBelowMeasured { .. } => "energy-below-measured",
        }
    }

    /// Whether this is a refusal — the object was read and the protocol
    /// said no (an amplifying attenuation, a non-holder, an overflowing
    /// shard, an unauthorised revocation, a broken chain, a bad signature,
    /// a steering refusal) — rather than bytes that could not be read. The
    /// CLI exits 1 for a refusal and 2 for unreadable input; this is the
    /// one place that tells them apart.
    pub fn is_refusal(&self) -> bool {
        match self {
            // Unreadable input, not a refusal of a read object.
            Self::Decode(_)
            | Self::Schema(_)
            | Self::Identity(_)
            | Self::DuplicateEntry { .. }
            | Self::InvalidCaveat { .. }
            | Self::InvalidLabel { .. }
            | Self::InvalidFunds { .. }
            | Self::InvalidContentId { .. }
            | Self::KeyFileInvalid { .. }
            | Self::RevocationLogInvalid { .. }
            // A caller's misuse, not a protocol refusal of a read object.
            | Self::SignerMismatch { .. }
            | Self::ChargeChainMismatch => false,
            Self::BadSignature { .. }
            | Self::AttenuationViolation(_)
            | Self::NotHolder { .. }
            | Self::DelegationForbidden
            | Self::ShardOverflow { .. }
            | Self::ShardInvalid(_)
            | Self::RevocationUnauthorized(_)
            | Self::ChainBroken(_)
            // §4.5 channels, §2.1 rotation, §4.6 standing grants: every one a refusal of a read object.
            | Self::StatementSigner { .. }
            | Self::StatementWrongGrant { .. }
            | Self::StatementNotMember { .. }
            | Self::StatementStale { .. }
            | Self::StatementRegressing { .. }
            | Self::StatementFromSelf { .. }
            | Self::StatementDuplicate { .. }
            | Self::OverdraftUnproven { .. }
            | Self::ChannelUnknown { .. }
            | Self::RotationEmptyLog
            | Self::RotationSequenceGap { .. }
            | Self::RotationParentMismatch { .. }
            | Self::RotationHashMismatch { .. }
            | Self::RotationWrongIdentity { .. }
            | Self::RotationSupersededKey { .. }
            | Self::RotationForked { .. }
            | Self::StandingNotIssuer { .. }
            | Self::StandingNotHeldByIssuer { .. }
            | Self::StandingPolicyAmplifies(_)
            | Self::StandingPolicyUnbound { .. }
            | Self::StandingLedgerMismatch { .. }
            | Self::StandingWrongEventClass { .. }
            | Self::StandingFiringsExhausted { .. }
            | Self::StandingSliceExceedsPolicy { .. }
            | Self::StandingBudgetExhausted { .. }
            | Self::StandingGrantExpired { .. }
            // §5: a cost whose grade and measured figure disagree.
            | Self::UnmeasuredHardwareGrade { .. }
            | Self::MeasuredEstimate { .. }
            | Self::DebitBelowMeasured { .. } => true,
            // An event of a key log that does not decode is unreadable; one that is refused is a refusal.
            Self::KeyLogEvent { source, .. } => source.is_refusal(),
            Self::Steering(e) => e.is_refusal(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of every variant; the match below fails to compile when a
    /// variant is added and not listed here.
    fn every_variant() -> Vec<Error> {
        let s = || "x".to_owned();
        let id = ContentId([7; 32]);
        let v = vec![
            Error::Decode(DecodeError::NonShortest { offset: 1 }),
            Error::Schema(SchemaError::Invalid { object: "Grant", field: "f", problem: s() }),
            Error::Identity(IdentityError::InvalidPoint),
            Error::BadSignature { object: "Grant", signer: s() },
            Error::AttenuationViolation(Amplification::Resource),
            Error::NotHolder { holder: s(), by: s() },
            Error::DelegationForbidden,
            Error::ShardOverflow { sum: 2, parent: 1 },
            Error::RevocationUnauthorized(s()),
            Error::ChainBroken(s()),
            Error::StatementSigner { point: s(), signer: s() },
            Error::StatementWrongGrant { expected: s(), got: s() },
            Error::StatementNotMember { point: s() },
            Error::StatementStale { point: s(), last_seq: 2, seq: 1 },
            Error::StatementRegressing { point: s(), last_uj: 2, spent_uj: 1 },
            Error::StatementFromSelf { point: s() },
            Error::StatementDuplicate { point: s() },
            Error::OverdraftUnproven { total_uj: 1, budget_uj: 2 },
            Error::ChannelUnknown { grant_id: s() },
            Error::DuplicateEntry { field: "capability.actions", entry: s() },
            Error::SignerMismatch { object: "grant", named: s(), key: s() },
            Error::ChargeChainMismatch,
            Error::Steering(crate::steering::SteeringError::SelfAmend { amender: s() }),
            Error::RotationEmptyLog,
            Error::RotationSequenceGap { index: 1, expected: 1, got: 2 },
            Error::RotationParentMismatch { seq: 1, expected: s(), got: s() },
            Error::RotationHashMismatch { seq: 1, current: s(), expected: id },
            Error::RotationWrongIdentity { seq: 1, what: "identity", expected: s(), got: s() },
            Error::RotationSupersededKey { identity: s(), signer: s(), superseded_at: 1, current: s() },
            Error::RotationForked { identity: s(), seq: 1 },
            Error::KeyLogEvent { index: 0, source: Box::new(Error::RotationEmptyLog) },
            Error::StandingNotIssuer { signer: s(), issuer: s() },
            Error::StandingNotHeldByIssuer { issuer: s(), subject: s() },
            Error::StandingPolicyAmplifies(s()),
            Error::StandingPolicyUnbound { policy_grant: id, grant: id },
            Error::StandingLedgerMismatch { field: "grant", ledger: id, presented: id },
            Error::StandingWrongEventClass { expected: id, got: id },
            Error::StandingFiringsExhausted { firings: 1, max: 1 },
            Error::StandingSliceExceedsPolicy { slice: 2, per_firing: 1 },
            Error::StandingBudgetExhausted { spent: 1, slice: 1, budget: 1 },
            Error::StandingGrantExpired { expiry: 1, now: 2 },
            Error::ShardInvalid(s()),
            Error::InvalidCaveat { text: s(), problem: s() },
            Error::InvalidLabel { text: s(), problem: s() },
            Error::InvalidFunds { text: s(), problem: s() },
            Error::InvalidContentId { what: "grant", text: s() },
            Error::KeyFileInvalid { problem: s() },
            Error::RevocationLogInvalid { line: 1, problem: s() },
            Error::UnmeasuredHardwareGrade { uj: 5 },
            Error::MeasuredEstimate { measured: 5 },
            Error::DebitBelowMeasured { uj: 4, measured: 5 },
        ];
        for e in &v {
            match e {
                Error::Decode(_)
                | Error::Schema(_)
                | Error::Identity(_)
                | Error::BadSignature { .. }
                | Error::AttenuationViolation(_)
                | Error::NotHolder { .. }
                | Error::DelegationForbidden
                | Error::ShardOverflow { .. }
                | Error::ShardInvalid(_)
                | Error::RevocationUnauthorized(_)
                | Error::ChainBroken(_)
                | Error::StatementSigner { .. }
                | Error::StatementWrongGrant { .. }
                | Error::StatementNotMember { .. }
                | Error::StatementStale { .. }
                | Error::StatementRegressing { .. }
                | Error::StatementFromSelf { .. }
                | Error::StatementDuplicate { .. }
                | Error::OverdraftUnproven { .. }
                | Error::ChannelUnknown { .. }
                | Error::DuplicateEntry { .. }
                | Error::SignerMismatch { .. }
                | Error::ChargeChainMismatch
                | Error::Steering(_)
                | Error::RotationEmptyLog
                | Error::RotationSequenceGap { .. }
                | Error::RotationParentMismatch { .. }
                | Error::RotationHashMismatch { .. }
                | Error::RotationWrongIdentity { .. }
                | Error::RotationSupersededKey { .. }
                | Error::RotationForked { .. }
                | Error::KeyLogEvent { .. }
                | Error::StandingNotIssuer { .. }
                | Error::StandingNotHeldByIssuer { .. }
                | Error::StandingPolicyAmplifies(_)
                | Error::StandingPolicyUnbound { .. }
                | Error::StandingLedgerMismatch { .. }
                | Error::StandingWrongEventClass { .. }
                | Error::StandingFiringsExhausted { .. }
                | Error::StandingSliceExceedsPolicy { .. }
                | Error::StandingBudgetExhausted { .. }
                | Error::StandingGrantExpired { .. }
                | Error::InvalidCaveat { .. }
                | Error::InvalidLabel { .. }
                | Error::InvalidFunds { .. }
                | Error::InvalidContentId { .. }
                | Error::KeyFileInvalid { .. }
                | Error::RevocationLogInvalid { .. }
                | Error::UnmeasuredHardwareGrade { .. }
                | Error::MeasuredEstimate { .. }
                | Error::DebitBelowMeasured { .. } => {}
            }
        }
        v
    }

    /// §9: every refusal names its reason code first — `Display` starts
    /// with `code()` and a colon, for every variant.
    #[test]
    fn s9_error_display_starts_with_its_code() {
        for e in every_variant() {
            let text = e.to_string();
            assert!(text.starts_with(&format!("{}: ", e.code())), "{text:?} does not start with {:?}", e.code());
            assert!(
                e.code().bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{} is not kebab-case",
                e.code()
            );
        }
    }
}
