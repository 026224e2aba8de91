//! A threshold actor's keys (§2.2): a participant's secret [`KeyShare`] and
//! the public [`GroupDescriptor`] — the group `did:key`, k, n, and each
//! participant's verifying share — that a console reads to mark an issuer
//! "k-of-n". The group key is an ordinary Ed25519 key: a [`Did`].

use std::collections::BTreeMap;

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::Scalar;
use frost_ed25519::keys::{KeyPackage, PublicKeyPackage, VerifyingShare};
use frost_ed25519::VerifyingKey;
use jcp::cbor::Value;
use jcp::identity::Did;

use crate::error::ThresholdError;
use crate::file::{envelope, frost_id, frost_value, id_number, open, read_frost, read_id, ParticipantFile};

/// How the shares were minted (§2.2). A claim of the descriptor's writer,
/// shown to a reader; nothing is decided on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// One party made the key and handed out shares.
    Dealer,
    /// Distributed key generation: the group's private key never existed.
    Dkg,
}

impl Origin {
    /// The file spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dealer => "dealer",
            Self::Dkg => "dkg",
        }
    }
}

/// The group key of a FROST verifying key, as a `did:key`.
pub(crate) fn group_did(vk: &VerifyingKey) -> Result<Did, ThresholdError> {
    let b =
        vk.serialize().map_err(|e| ThresholdError::FrostEncoding { object: "VerifyingKey", problem: e.to_string() })?;
    let key: [u8; 32] = b.as_slice().try_into().map_err(|_| ThresholdError::FrostEncoding {
        object: "VerifyingKey",
        problem: format!("{} bytes, not 32", b.len()),
    })?;
    Ok(Did::from_public_bytes(key)?)
}

fn share_bytes(v: &VerifyingShare) -> Result<[u8; 32], ThresholdError> {
    let b = v
        .serialize()
        .map_err(|e| ThresholdError::FrostEncoding { object: "VerifyingShare", problem: e.to_string() })?;
    b.as_slice().try_into().map_err(|_| ThresholdError::FrostEncoding {
        object: "VerifyingShare",
        problem: format!("{} bytes, not 32", b.len()),
    })
}

fn check_params(min: u16, max: u16) -> Result<(), ThresholdError> {
    if min < 2 || min > max {
        return Err(ThresholdError::BadParameters(format!("{min}-of-{max}: a threshold actor needs 2 ≤ k ≤ n")));
    }
    Ok(())
}

pub(crate) fn params(min: u16, max: u16) -> Result<(), ThresholdError> {
    check_params(min, max)
}

// ------------------------------------------------------------- key share

/// One participant's secret share of the group key (a FROST key package).
/// Written owner-only; its `Debug` never shows the share.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyShare {
    group: Did,
    identifier: u16,
    package: KeyPackage,
}

impl std::fmt::Debug for KeyShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyShare")
            .field("group", &self.group)
            .field("identifier", &self.identifier)
            .finish_non_exhaustive()
    }
}

impl KeyShare {
    /// Wraps a FROST key package, checking it: a participant number, k ≥ 2,
    /// a usable group key, and a verifying share that is the signing share's.
    pub fn from_frost(package: KeyPackage) -> Result<Self, ThresholdError> {
        let identifier = id_number(package.identifier())?;
        let group = group_did(package.verifying_key())?;
        let min = *package.min_signers();
        if min < 2 {
            return Err(ThresholdError::BadParameters(format!("min_signers {min}: a threshold actor needs k ≥ 2")));
        }
        if VerifyingShare::from(*package.signing_share()) != *package.verifying_share() {
            return Err(ThresholdError::mismatch("KeyShare", "the verifying share is not the signing share's"));
        }
        Ok(Self { group, identifier, package })
    }

    /// The group's `did:key`.
    pub fn group(&self) -> Did {
        self.group
    }

    /// This participant's number.
    pub fn identifier(&self) -> u16 {
        self.identifier
    }

    /// k.
    pub fn min_signers(&self) -> u16 {
        *self.package.min_signers()
    }

    /// The FROST key package (secret).
    pub fn frost(&self) -> &KeyPackage {
        &self.package
    }
}

impl ParticipantFile for KeyShare {
    const TYPE: &'static str = "jcp-threshold/key-share";
    const SECRET: bool = true;

    fn to_value(&self) -> Value {
        envelope(
            Self::TYPE,
            [
                ("group", Some(Value::text(self.group.to_did_string()))),
                ("identifier", Some(Value::Uint(u64::from(self.identifier)))),
                ("frost", frost_value(self.package.serialize())),
            ],
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("KeyShare", Self::TYPE, v)?;
        let group = Did::parse(f.text("group")?)?;
        let identifier = read_id(&mut f, "identifier")?;
        let package = read_frost(&mut f, "KeyPackage", KeyPackage::deserialize, KeyPackage::serialize)?;
        f.finish()?;
        let share = Self::from_frost(package)?;
        if share.group != group || share.identifier != identifier {
            return Err(ThresholdError::mismatch(
                "KeyShare",
                format!(
                    "the envelope names participant {identifier} of {group}, the key package is participant {} of {}",
                    share.identifier, share.group
                ),
            ));
        }
        Ok(share)
    }
}

// ------------------------------------------------------ group descriptor

/// The public description of a threshold actor: what a verifier never
/// needs (the group key is an ordinary `did:key`) and what a console shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescriptor {
    group: Did,
    min_signers: u16,
    origin: Origin,
    shares: BTreeMap<u16, [u8; 32]>,
    package: PublicKeyPackage,
}

/// A participant in a [`GroupView`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ParticipantView {
    /// The participant's number.
    pub identifier: u16,
    /// Its verifying share, lowercase hex.
    pub verifying_share: String,
}

/// What a console shows of a group (`describe`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GroupView {
    /// Always `threshold-group`.
    pub kind: &'static str,
    /// The group's `did:key`: an ordinary Ed25519 issuer.
    pub group: String,
    /// "k-of-n".
    pub threshold: String,
    /// k.
    pub min_signers: u16,
    /// n.
    pub max_signers: u16,
    /// `dealer` or `dkg`.
    pub origin: Origin,
    /// The participants, by number.
    pub participants: Vec<ParticipantView>,
}

impl GroupDescriptor {
    /// Builds the descriptor from FROST's public key package, checking it.
    pub fn from_frost(package: PublicKeyPackage, origin: Origin) -> Result<Self, ThresholdError> {
        let group = group_did(package.verifying_key())?;
        let min = package
            .min_signers()
            .ok_or_else(|| ThresholdError::BadParameters("the key package states no min_signers".into()))?;
        let mut shares = BTreeMap::new();
        for (id, v) in package.verifying_shares() {
            shares.insert(id_number(id)?, share_bytes(v)?);
        }
        let max = u16::try_from(shares.len())
            .map_err(|_| ThresholdError::BadParameters("more than 65535 participants".into()))?;
        check_params(min, max)?;
        check_consistent(&group, min, &shares)?;
        Ok(Self { group, min_signers: min, origin, shares, package })
    }

    /// The group's `did:key`.
    pub fn group(&self) -> Did {
        self.group
    }

    /// k.
    pub fn min_signers(&self) -> u16 {
        self.min_signers
    }

    /// n.
    pub fn max_signers(&self) -> u16 {
        // `from_frost`/`from_value` refuse more than 65535 shares.
        u16::try_from(self.shares.len()).unwrap_or(u16::MAX)
    }

    /// How the shares were minted (as stated).
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The participants' numbers.
    pub fn participants(&self) -> Vec<u16> {
        self.shares.keys().copied().collect()
    }

    /// The FROST public key package.
    pub fn frost(&self) -> &PublicKeyPackage {
        &self.package
    }

    /// Whether `share` is a share of this group (same key, same k, and its
    /// verifying share is the one listed for its number).
    pub fn check_share(&self, share: &KeyShare) -> Result<(), ThresholdError> {
        let listed = self.shares.get(&share.identifier());
        let own = share_bytes(share.frost().verifying_share())?;
        if share.group() != self.group || share.min_signers() != self.min_signers || listed != Some(&own) {
            return Err(ThresholdError::mismatch(
                "KeyShare",
                format!(
                    "participant {} of {} is not a share of the group {}",
                    share.identifier(),
                    share.group(),
                    self.group
                ),
            ));
        }
        Ok(())
    }

    /// The console's view: `k-of-n`, the group DID, the participants.
    pub fn describe(&self) -> GroupView {
        GroupView {
            kind: "threshold-group",
            group: self.group.to_did_string(),
            threshold: format!("{}-of-{}", self.min_signers, self.max_signers()),
            min_signers: self.min_signers,
            max_signers: self.max_signers(),
            origin: self.origin,
            participants: self
                .shares
                .iter()
                .map(|(id, v)| ParticipantView { identifier: *id, verifying_share: hex::encode(v) })
                .collect(),
        }
    }
}

/// The verifying shares must lie on one polynomial of degree k−1 whose
/// value at 0 is the group key: interpolate from the first k, in the
/// exponent, and check the group key and every other share against it.
fn check_consistent(group: &Did, min: u16, shares: &BTreeMap<u16, [u8; 32]>) -> Result<(), ThresholdError> {
    let mut pts = Vec::with_capacity(shares.len());
    for (id, b) in shares {
        let p = CompressedEdwardsY(*b).decompress().filter(|p| !p.is_small_order()).ok_or_else(|| {
            ThresholdError::GroupInconsistent(format!("participant {id}'s verifying share is not a usable point"))
        })?;
        pts.push((*id, Scalar::from(u64::from(*id)), p));
    }
    let base = &pts[..usize::from(min)];
    let at = |x: Scalar| -> EdwardsPoint {
        base.iter()
            .map(|(_, xj, pj)| {
                let mut l = Scalar::ONE;
                for (_, xm, _) in base {
                    if xm != xj {
                        l *= (x - xm) * (xj - xm).invert();
                    }
                }
                pj * l
            })
            .sum()
    };
    if at(Scalar::ZERO).compress().0 != *group.public_bytes() {
        return Err(ThresholdError::GroupInconsistent(format!(
            "the verifying shares do not interpolate to the group key {group}"
        )));
    }
    for (id, x, p) in &pts[usize::from(min)..] {
        if at(*x) != *p {
            return Err(ThresholdError::GroupInconsistent(format!(
                "participant {id}'s verifying share is off the polynomial of the first {min}"
            )));
        }
    }
    Ok(())
}

impl ParticipantFile for GroupDescriptor {
    const TYPE: &'static str = "jcp-threshold/group";
    const SECRET: bool = false;

    fn to_value(&self) -> Value {
        let shares = self
            .shares
            .iter()
            .map(|(id, v)| {
                jcp::cbor::map([
                    ("identifier", Some(Value::Uint(u64::from(*id)))),
                    ("verifying_share", Some(Value::Bytes(v.to_vec()))),
                ])
            })
            .collect();
        envelope(
            Self::TYPE,
            [
                ("group", Some(Value::text(self.group.to_did_string()))),
                ("min_signers", Some(Value::Uint(u64::from(self.min_signers)))),
                ("max_signers", Some(Value::Uint(u64::from(self.max_signers())))),
                ("origin", Some(Value::text(self.origin.as_str()))),
                ("shares", Some(Value::Array(shares))),
            ],
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("GroupDescriptor", Self::TYPE, v)?;
        let group = Did::parse(f.text("group")?)?;
        let min = u16::try_from(f.uint("min_signers")?).map_err(|_| f.error("min_signers", "above 65535"))?;
        let max = u16::try_from(f.uint("max_signers")?).map_err(|_| f.error("max_signers", "above 65535"))?;
        let origin = match f.text("origin")? {
            "dealer" => Origin::Dealer,
            "dkg" => Origin::Dkg,
            other => return Err(f.error("origin", format!("{other:?}: expected \"dealer\" or \"dkg\"")).into()),
        };
        let Value::Array(items) = f.req("shares")? else {
            return Err(f.error("shares", "expected an array of {identifier, verifying_share}").into());
        };
        let mut verifying = BTreeMap::new();
        let mut last = 0u16;
        for item in items {
            let mut s = jcp::cbor::Fields::new("GroupShare", item)?;
            let id = read_id(&mut s, "identifier")?;
            let share = s.bytes_n::<32>("verifying_share")?;
            s.finish()?;
            if id <= last {
                return Err(f
                    .error("shares", format!("participant {id} out of order or repeated (ascending, once each)"))
                    .into());
            }
            last = id;
            let vs = VerifyingShare::deserialize(&share).map_err(|e| ThresholdError::FrostEncoding {
                object: "VerifyingShare",
                problem: format!("participant {id}: {e}"),
            })?;
            verifying.insert(frost_id(id)?, vs);
        }
        f.finish()?;
        check_params(min, max)?;
        if usize::from(max) != verifying.len() {
            return Err(ThresholdError::mismatch(
                "GroupDescriptor",
                format!("max_signers {max} but {} shares listed", verifying.len()),
            ));
        }
        let vk = VerifyingKey::deserialize(group.public_bytes())
            .map_err(|e| ThresholdError::FrostEncoding { object: "VerifyingKey", problem: e.to_string() })?;
        Self::from_frost(PublicKeyPackage::new(verifying, vk, Some(min)), origin)
    }
}
