//! Threshold signing (§2.2, C13): round 1 (each signer commits; its nonces
//! stay with it, secret, used once), round 2 (each signer's signature share
//! over the message), and the aggregate: a standard 64-byte Ed25519
//! signature by the group's `did:key`, or nothing.

use std::collections::BTreeMap;

use frost_ed25519::round1::{SigningCommitments, SigningNonces};
use frost_ed25519::{round1 as fround1, round2 as fround2, SigningPackage};
use jcp::cbor::Value;
use jcp::identity::Did;
use rand_core::{CryptoRng, RngCore};

use crate::error::ThresholdError;
use crate::file::{envelope, frost_id, frost_value, id_number, open, read_frost, read_id, ParticipantFile};
use crate::group::{GroupDescriptor, KeyShare};

/// A signer's round-1 nonces: secret, used for exactly one signature share
/// ([`round2`] consumes them).
#[derive(Clone, PartialEq, Eq)]
pub struct Nonces {
    group: Did,
    identifier: u16,
    frost: SigningNonces,
}

impl std::fmt::Debug for Nonces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nonces")
            .field("group", &self.group)
            .field("identifier", &self.identifier)
            .finish_non_exhaustive()
    }
}

/// A signer's round-1 commitments, sent to the coordinator and the other
/// signers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commitments {
    group: Did,
    identifier: u16,
    frost: SigningCommitments,
}

/// A signer's signature share over one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureShare {
    group: Did,
    identifier: u16,
    share: fround2::SignatureShare,
}

impl Nonces {
    /// Nonces from given FROST nonces (interop vectors with fixed nonces,
    /// RFC 9591 Appendix E; never for a live signature).
    pub fn from_frost(share: &KeyShare, nonces: SigningNonces) -> (Self, Commitments) {
        let commitments =
            Commitments { group: share.group(), identifier: share.identifier(), frost: *nonces.commitments() };
        (Self { group: share.group(), identifier: share.identifier(), frost: nonces }, commitments)
    }

    /// The signer.
    pub fn identifier(&self) -> u16 {
        self.identifier
    }
}

impl Commitments {
    /// The signer.
    pub fn identifier(&self) -> u16 {
        self.identifier
    }
    /// The group.
    pub fn group(&self) -> Did {
        self.group
    }
    /// The FROST commitments.
    pub fn frost(&self) -> &SigningCommitments {
        &self.frost
    }
}

impl SignatureShare {
    /// The signer.
    pub fn identifier(&self) -> u16 {
        self.identifier
    }
    /// The group.
    pub fn group(&self) -> Did {
        self.group
    }
    /// The FROST signature share.
    pub fn frost(&self) -> &fround2::SignatureShare {
        &self.share
    }
}

/// Round 1: fresh nonces (kept) and their commitments (sent).
pub fn round1<R: RngCore + CryptoRng>(share: &KeyShare, rng: &mut R) -> (Nonces, Commitments) {
    let (nonces, commitments) = fround1::commit(share.frost().signing_share(), rng);
    (
        Nonces { group: share.group(), identifier: share.identifier(), frost: nonces },
        Commitments { group: share.group(), identifier: share.identifier(), frost: commitments },
    )
}

/// The signing package: every commitment, of one group, each signer once.
fn package(group: Did, commitments: &[Commitments], message: &[u8]) -> Result<SigningPackage, ThresholdError> {
    let mut map = BTreeMap::new();
    for c in commitments {
        if c.group != group {
            return Err(ThresholdError::mismatch(
                "Commitments",
                format!("participant {}'s commitments are for {}, not {group}", c.identifier, c.group),
            ));
        }
        if map.insert(frost_id(c.identifier)?, c.frost).is_some() {
            return Err(ThresholdError::mismatch(
                "Commitments",
                format!("two commitments from participant {}", c.identifier),
            ));
        }
    }
    Ok(SigningPackage::new(map, message))
}

/// Round 2: this signer's share over `message`, given every signer's
/// commitments (its own among them). The nonces are consumed: a nonce
/// pair signs once.
#[allow(
    clippy::needless_pass_by_value,
    reason = "the nonces are taken by value on purpose: a nonce pair signs once, and a moved value cannot sign again"
)]
pub fn round2(
    share: &KeyShare,
    nonces: Nonces,
    commitments: &[Commitments],
    message: &[u8],
) -> Result<SignatureShare, ThresholdError> {
    if nonces.group != share.group() || nonces.identifier != share.identifier() {
        return Err(ThresholdError::mismatch(
            "Nonces",
            format!(
                "nonces of participant {} of {} used with the share of {} of {}",
                nonces.identifier,
                nonces.group,
                share.identifier(),
                share.group()
            ),
        ));
    }
    if commitments.len() < usize::from(share.min_signers()) {
        return Err(ThresholdError::TooFewSigners { have: commitments.len(), need: share.min_signers() });
    }
    let pkg = package(share.group(), commitments, message)?;
    let s =
        fround2::sign(&pkg, &nonces.frost, share.frost()).map_err(|e| ThresholdError::SigningRefused(e.to_string()))?;
    Ok(SignatureShare { group: share.group(), identifier: share.identifier(), share: s })
}

/// Aggregates k or more signature shares into the group's Ed25519
/// signature over `message`, which must verify (the one Ed25519 predicate) under the
/// group `did:key` — otherwise nothing is returned.
pub fn aggregate(
    group: &GroupDescriptor,
    commitments: &[Commitments],
    message: &[u8],
    shares: &[SignatureShare],
) -> Result<[u8; 64], ThresholdError> {
    let need = group.min_signers();
    if shares.len() < usize::from(need) || commitments.len() < usize::from(need) {
        return Err(ThresholdError::TooFewSigners { have: shares.len().min(commitments.len()), need });
    }
    let pkg = package(group.group(), commitments, message)?;
    let mut map = BTreeMap::new();
    for s in shares {
        if s.group != group.group() {
            return Err(ThresholdError::mismatch(
                "SignatureShare",
                format!("participant {}'s share is for {}, not {}", s.identifier, s.group, group.group()),
            ));
        }
        if map.insert(frost_id(s.identifier)?, s.share).is_some() {
            return Err(ThresholdError::mismatch(
                "SignatureShare",
                format!("two shares from participant {}", s.identifier),
            ));
        }
    }
    let sig = frost_ed25519::aggregate(&pkg, &map, group.frost()).map_err(|e| match e {
        frost_ed25519::Error::InvalidSignatureShare { culprits } => ThresholdError::InvalidSignatureShare {
            culprits: culprits.iter().filter_map(|c| id_number(c).ok()).collect(),
        },
        frost_ed25519::Error::IncorrectNumberOfShares => ThresholdError::TooFewSigners { have: shares.len(), need },
        other => ThresholdError::SigningRefused(other.to_string()),
    })?;
    let bytes =
        sig.serialize().map_err(|e| ThresholdError::FrostEncoding { object: "Signature", problem: e.to_string() })?;
    let out: [u8; 64] = bytes.as_slice().try_into().map_err(|_| ThresholdError::FrostEncoding {
        object: "Signature",
        problem: format!("{} bytes, not 64", bytes.len()),
    })?;
    if !group.group().verify(message, &out) {
        return Err(ThresholdError::AggregateDoesNotVerify { group: group.group().to_string() });
    }
    Ok(out)
}

fn read_group_id(f: &mut jcp::cbor::Fields<'_>) -> Result<(Did, u16), ThresholdError> {
    let group = Did::parse(f.text("group")?)?;
    let identifier = read_id(f, "identifier")?;
    Ok((group, identifier))
}

fn head(group: &Did, identifier: u16) -> [(&'static str, Option<Value>); 2] {
    [("group", Some(Value::text(group.to_did_string()))), ("identifier", Some(Value::Uint(u64::from(identifier))))]
}

impl ParticipantFile for Nonces {
    const TYPE: &'static str = "jcp-threshold/nonces";
    const SECRET: bool = true;

    fn to_value(&self) -> Value {
        envelope(
            Self::TYPE,
            head(&self.group, self.identifier).into_iter().chain([("frost", frost_value(self.frost.serialize()))]),
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("Nonces", Self::TYPE, v)?;
        let (group, identifier) = read_group_id(&mut f)?;
        let frost = read_frost(&mut f, "SigningNonces", SigningNonces::deserialize, SigningNonces::serialize)?;
        f.finish()?;
        Ok(Self { group, identifier, frost })
    }
}

impl ParticipantFile for Commitments {
    const TYPE: &'static str = "jcp-threshold/commitments";
    const SECRET: bool = false;

    fn to_value(&self) -> Value {
        envelope(
            Self::TYPE,
            head(&self.group, self.identifier).into_iter().chain([("frost", frost_value(self.frost.serialize()))]),
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("Commitments", Self::TYPE, v)?;
        let (group, identifier) = read_group_id(&mut f)?;
        let frost =
            read_frost(&mut f, "SigningCommitments", SigningCommitments::deserialize, SigningCommitments::serialize)?;
        f.finish()?;
        Ok(Self { group, identifier, frost })
    }
}

impl ParticipantFile for SignatureShare {
    const TYPE: &'static str = "jcp-threshold/signature-share";
    const SECRET: bool = false;

    fn to_value(&self) -> Value {
        envelope(
            Self::TYPE,
            head(&self.group, self.identifier)
                .into_iter()
                .chain([("frost", Some(Value::Bytes(self.share.serialize())))]),
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("SignatureShare", Self::TYPE, v)?;
        let (group, identifier) = read_group_id(&mut f)?;
        let share = read_frost(&mut f, "SignatureShare", fround2::SignatureShare::deserialize, |s| Ok(s.serialize()))?;
        f.finish()?;
        Ok(Self { group, identifier, share })
    }
}
