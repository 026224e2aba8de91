//! # Threshold actors (JCP §2.2, conformance C13 threshold half, C18)
//!
//! A threshold actor is a `did:key` whose private key never exists in one
//! place: FROST (RFC 9591, the Ed25519 ciphersuite) splits it k-of-n, and a
//! signature exists only when k shareholders cooperate. The aggregate is a
//! standard Ed25519 signature, so nothing else in JCP changes: it signs
//! grants, revocations, amendments and wire requests (assembled with
//! `SignedGrant::from_parts`, `SignedRevocation::from_parts`,
//! `SignedAmendment::from_parts`, `RequestBody::with_signature`).
//!
//! | module | what |
//! |---|---|
//! | [`dealer`] | a trusted dealer mints k-of-n shares |
//! | [`dkg`] | distributed key generation: no private group key, ever |
//! | [`sign`] | round 1, round 2, aggregate |
//! | [`group`] | key shares and the public group descriptor |
//! | [`file`](mod@file) | the participant files (canonical det-CBOR, 0600 when secret) |
//! | `vectors` | the published vectors' generator (feature `vectors`, bin `gen-threshold-vectors`) |
//! | `fuzzing` | the fuzz targets' invariants (feature `fuzzing`) |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod dkg;
pub mod error;
pub mod file;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod group;
pub mod sign;
#[cfg(feature = "vectors")]
pub mod vectors;

pub use error::ThresholdError;
pub use file::ParticipantFile;
pub use group::{GroupDescriptor, GroupView, KeyShare, Origin};
pub use rand_core;

/// A trusted dealer (§2.2): one party makes the group key and hands out
/// k-of-n shares (the dealer then holds, and must destroy, the key).
pub mod dealer {
    use frost_ed25519::keys::{self, IdentifierList, KeyPackage};
    use rand_core::{CryptoRng, RngCore};

    use crate::error::ThresholdError;
    use crate::group::{params, GroupDescriptor, KeyShare, Origin};

    /// Mints a k-of-n group with participants 1..=n.
    pub fn deal<R: RngCore + CryptoRng>(
        min_signers: u16,
        max_signers: u16,
        rng: &mut R,
    ) -> Result<(GroupDescriptor, Vec<KeyShare>), ThresholdError> {
        params(min_signers, max_signers)?;
        let (secret_shares, public) =
            keys::generate_with_dealer(max_signers, min_signers, IdentifierList::Default, rng)
                .map_err(|e| ThresholdError::BadParameters(e.to_string()))?;
        let group = GroupDescriptor::from_frost(public, Origin::Dealer)?;
        let mut shares = Vec::with_capacity(secret_shares.len());
        for (_, s) in secret_shares {
            let package = KeyPackage::try_from(s)
                .map_err(|e| ThresholdError::DkgRefused { problem: e.to_string(), culprits: vec![] })?;
            let share = KeyShare::from_frost(package)?;
            group.check_share(&share)?;
            shares.push(share);
        }
        Ok((group, shares))
    }
}
