//! Invariants checked by the cargo-fuzz targets (`crates/threshold/fuzz`)
//! and by the corpus replay test: decoding a participant file never
//! panics, and whatever decodes re-encodes to exactly the input (one file
//! form per value). Each returns `Err` with a description when broken.

use crate::dkg::{Round1Package, Round1Secret, Round2Package, Round2Secret};
use crate::file::ParticipantFile;
use crate::group::{GroupDescriptor, KeyShare};
use crate::sign::{Commitments, Nonces, SignatureShare};

fn round_trips<T: ParticipantFile>(data: &[u8]) -> Result<(), String> {
    if let Ok(item) = T::from_bytes(data) {
        if item.to_bytes() != data {
            return Err(format!("{} decoded but did not re-encode to the input", T::TYPE));
        }
    }
    Ok(())
}

/// Key shares (secret key packages).
pub fn key_share_decode(data: &[u8]) -> Result<(), String> {
    round_trips::<KeyShare>(data)
}

/// Group descriptors; a decoded one's view agrees with it.
pub fn group_decode(data: &[u8]) -> Result<(), String> {
    round_trips::<GroupDescriptor>(data)?;
    if let Ok(g) = GroupDescriptor::from_bytes(data) {
        let v = g.describe();
        if v.participants.len() != usize::from(v.max_signers) || v.min_signers > v.max_signers || v.min_signers < 2 {
            return Err(format!("decoded descriptor with an impossible shape {}", v.threshold));
        }
    }
    Ok(())
}

/// DKG round-1 files: the secret package and the broadcast package.
pub fn dkg_round1_decode(data: &[u8]) -> Result<(), String> {
    round_trips::<Round1Secret>(data)?;
    round_trips::<Round1Package>(data)
}

/// DKG round-2 files: the secret package and the point-to-point package.
pub fn dkg_round2_decode(data: &[u8]) -> Result<(), String> {
    round_trips::<Round2Secret>(data)?;
    round_trips::<Round2Package>(data)
}

/// Signing commitments and nonces.
pub fn commitments_decode(data: &[u8]) -> Result<(), String> {
    round_trips::<Commitments>(data)?;
    round_trips::<Nonces>(data)
}

/// Signature shares.
pub fn signature_share_decode(data: &[u8]) -> Result<(), String> {
    round_trips::<SignatureShare>(data)
}

/// A fuzz invariant: `Err` describes the broken invariant.
pub type Check = fn(&[u8]) -> Result<(), String>;

/// Every target by name (the corpus replay).
pub const TARGETS: [(&str, Check); 6] = [
    ("key_share_decode", key_share_decode),
    ("group_decode", group_decode),
    ("dkg_round1_decode", dkg_round1_decode),
    ("dkg_round2_decode", dkg_round2_decode),
    ("commitments_decode", commitments_decode),
    ("signature_share_decode", signature_share_decode),
];
