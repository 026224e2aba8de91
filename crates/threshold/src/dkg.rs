//! Distributed key generation (§2.2, C18): FROST's three parts. Each
//! participant keeps its secret packages; round-1 packages are broadcast,
//! round-2 packages go to one recipient each and are secret. No party ever
//! holds the group's private key — not even momentarily.

use std::collections::BTreeMap;

use frost_ed25519::keys::dkg::{self, round1, round2};
use frost_ed25519::Identifier;
use jcp::cbor::Value;
use rand_core::{CryptoRng, RngCore};

use crate::error::ThresholdError;
use crate::file::{envelope, frost_id, frost_value, id_number, open, read_frost, read_id, ParticipantFile};
use crate::group::{params, GroupDescriptor, KeyShare, Origin};

/// A participant's round-1 secret (its polynomial): kept, never sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Round1Secret {
    identifier: u16,
    package: round1::SecretPackage,
}

/// A participant's round-1 package (commitment and proof of knowledge):
/// broadcast to every other participant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round1Package {
    from: u16,
    package: round1::Package,
}

/// A participant's round-2 secret: kept for [`finish`].
#[derive(Clone, PartialEq, Eq)]
pub struct Round2Secret {
    identifier: u16,
    package: round2::SecretPackage,
}

/// A round-2 package from one participant to one other: secret (it carries
/// a share of the sender's polynomial for the recipient).
#[derive(Clone, PartialEq, Eq)]
pub struct Round2Package {
    from: u16,
    to: u16,
    package: round2::Package,
}

macro_rules! redacted_debug {
    ($t:ty, $($f:ident),+) => {
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($t))$(.field(stringify!($f), &self.$f))+.finish_non_exhaustive()
            }
        }
    };
}
redacted_debug!(Round1Secret, identifier);
redacted_debug!(Round2Secret, identifier);
redacted_debug!(Round2Package, from, to);

fn refused(e: &frost_ed25519::Error) -> ThresholdError {
    ThresholdError::DkgRefused {
        problem: e.to_string(),
        culprits: e.culprits().iter().filter_map(|c| id_number(c).ok()).collect(),
    }
}

impl Round1Secret {
    /// This participant's number.
    pub fn identifier(&self) -> u16 {
        self.identifier
    }
}

impl Round1Package {
    /// The sender.
    pub fn from(&self) -> u16 {
        self.from
    }
}

impl Round2Secret {
    /// This participant's number.
    pub fn identifier(&self) -> u16 {
        self.identifier
    }
}

impl Round2Package {
    /// The sender.
    pub fn from(&self) -> u16 {
        self.from
    }
    /// The recipient.
    pub fn to(&self) -> u16 {
        self.to
    }
}

/// Round 1 for participant `identifier` of a k-of-n group.
pub fn round1<R: RngCore + CryptoRng>(
    identifier: u16,
    min_signers: u16,
    max_signers: u16,
    rng: &mut R,
) -> Result<(Round1Secret, Round1Package), ThresholdError> {
    params(min_signers, max_signers)?;
    if identifier > max_signers {
        return Err(ThresholdError::BadIdentifier(format!("participant {identifier} of a group of {max_signers}")));
    }
    let (secret, package) =
        dkg::part1(frost_id(identifier)?, max_signers, min_signers, &mut *rng).map_err(|e| refused(&e))?;
    Ok((Round1Secret { identifier, package: secret }, Round1Package { from: identifier, package }))
}

/// The others' round-1 packages by sender (one's own, if given, is left
/// out; a repeated sender is refused).
fn others<'a, T: Clone + 'a>(
    me: u16,
    items: impl IntoIterator<Item = (u16, &'a T)>,
    object: &'static str,
) -> Result<BTreeMap<Identifier, T>, ThresholdError> {
    let mut out = BTreeMap::new();
    for (from, p) in items {
        if from == me {
            continue;
        }
        if out.insert(frost_id(from)?, p.clone()).is_some() {
            return Err(ThresholdError::mismatch(object, format!("two packages from participant {from}")));
        }
    }
    Ok(out)
}

/// Round 2: checks every other participant's proof of knowledge and makes
/// one secret package for each of them.
pub fn round2(
    secret: Round1Secret,
    received: &[Round1Package],
) -> Result<(Round2Secret, Vec<Round2Package>), ThresholdError> {
    let me = secret.identifier;
    let r1 = others(me, received.iter().map(|p| (p.from, &p.package)), "Round1Package")?;
    let (s2, out) = dkg::part2(secret.package, &r1).map_err(|e| refused(&e))?;
    let mut packages = Vec::with_capacity(out.len());
    for (to, package) in out {
        packages.push(Round2Package { from: me, to: id_number(&to)?, package });
    }
    Ok((Round2Secret { identifier: me, package: s2 }, packages))
}

/// Finishes: verifies each share received against its sender's commitment
/// and yields this participant's key share and the group descriptor.
pub fn finish(
    secret: &Round2Secret,
    round1: &[Round1Package],
    round2: &[Round2Package],
) -> Result<(KeyShare, GroupDescriptor), ThresholdError> {
    let me = secret.identifier;
    if let Some(p) = round2.iter().find(|p| p.to != me) {
        return Err(ThresholdError::mismatch(
            "Round2Package",
            format!("the package from {} is addressed to participant {}, not {me}", p.from, p.to),
        ));
    }
    let r1 = others(me, round1.iter().map(|p| (p.from, &p.package)), "Round1Package")?;
    let r2 = others(me, round2.iter().map(|p| (p.from, &p.package)), "Round2Package")?;
    let (key, public) = dkg::part3(&secret.package, &r1, &r2).map_err(|e| refused(&e))?;
    let share = KeyShare::from_frost(key)?;
    let group = GroupDescriptor::from_frost(public, Origin::Dkg)?;
    group.check_share(&share)?;
    Ok((share, group))
}

impl ParticipantFile for Round1Secret {
    const TYPE: &'static str = "jcp-threshold/dkg-round1-secret";
    const SECRET: bool = true;

    fn to_value(&self) -> Value {
        envelope(
            Self::TYPE,
            [
                ("identifier", Some(Value::Uint(u64::from(self.identifier)))),
                ("frost", frost_value(self.package.serialize())),
            ],
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("Round1Secret", Self::TYPE, v)?;
        let identifier = read_id(&mut f, "identifier")?;
        let package = read_frost(
            &mut f,
            "round1::SecretPackage",
            round1::SecretPackage::deserialize,
            round1::SecretPackage::serialize,
        )?;
        f.finish()?;
        if id_number(package.identifier())? != identifier {
            return Err(ThresholdError::mismatch(
                "Round1Secret",
                "the envelope names another participant than the package",
            ));
        }
        params(*package.min_signers(), *package.max_signers())?;
        Ok(Self { identifier, package })
    }
}

impl ParticipantFile for Round1Package {
    const TYPE: &'static str = "jcp-threshold/dkg-round1";
    const SECRET: bool = false;

    fn to_value(&self) -> Value {
        envelope(
            Self::TYPE,
            [("from", Some(Value::Uint(u64::from(self.from)))), ("frost", frost_value(self.package.serialize()))],
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("Round1Package", Self::TYPE, v)?;
        let from = read_id(&mut f, "from")?;
        let package = read_frost(&mut f, "round1::Package", round1::Package::deserialize, round1::Package::serialize)?;
        f.finish()?;
        Ok(Self { from, package })
    }
}

impl ParticipantFile for Round2Secret {
    const TYPE: &'static str = "jcp-threshold/dkg-round2-secret";
    const SECRET: bool = true;

    fn to_value(&self) -> Value {
        envelope(
            Self::TYPE,
            [
                ("identifier", Some(Value::Uint(u64::from(self.identifier)))),
                ("frost", frost_value(self.package.serialize())),
            ],
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("Round2Secret", Self::TYPE, v)?;
        let identifier = read_id(&mut f, "identifier")?;
        let package = read_frost(
            &mut f,
            "round2::SecretPackage",
            round2::SecretPackage::deserialize,
            round2::SecretPackage::serialize,
        )?;
        f.finish()?;
        if id_number(package.identifier())? != identifier {
            return Err(ThresholdError::mismatch(
                "Round2Secret",
                "the envelope names another participant than the package",
            ));
        }
        params(*package.min_signers(), *package.max_signers())?;
        Ok(Self { identifier, package })
    }
}

impl ParticipantFile for Round2Package {
    const TYPE: &'static str = "jcp-threshold/dkg-round2";
    const SECRET: bool = true;

    fn to_value(&self) -> Value {
        envelope(
            Self::TYPE,
            [
                ("from", Some(Value::Uint(u64::from(self.from)))),
                ("to", Some(Value::Uint(u64::from(self.to)))),
                ("frost", frost_value(self.package.serialize())),
            ],
        )
    }

    fn from_value(v: &Value) -> Result<Self, ThresholdError> {
        let mut f = open("Round2Package", Self::TYPE, v)?;
        let from = read_id(&mut f, "from")?;
        let to = read_id(&mut f, "to")?;
        let package = read_frost(&mut f, "round2::Package", round2::Package::deserialize, round2::Package::serialize)?;
        f.finish()?;
        if from == to {
            return Err(ThresholdError::mismatch(
                "Round2Package",
                format!("participant {from} addressed a package to itself"),
            ));
        }
        Ok(Self { from, to, package })
    }
}
