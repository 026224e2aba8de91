//! Spec §8: the JCR-1 receipt and its profiles.
//!
//! The `jcp/2` core is §8's flat uint/text field list. Fields §8 names only
//! in passing are carried, **only when they apply**, so that a plain receipt
//! is exactly §8's list (docs/decisions.md, "`jcp/2` optional fields"):
//! `chain_ids` (§8.1, chained decisions: every debited id, root first),
//! `breach` (a debit-point breach of the two-phase path, §4.9),
//! `cost_currency` + `cost_minor` (a priced decision, §4.8, so replay
//! restores the money dimension), `flow: "tainted"` (§4.10, so replay
//! restores the tainted allowance).
//!
//! | module | what |
//! |---|---|
//! | this one | [`Profile`] (§8 profile versioning), opening and verifying a receipt ([`OpenedReceipt`], [`verify_receipt`]) |
//! | `core` | [`ReceiptCore`]: the typed core, minted from a decision, written as canonical det-CBOR, read back |
//! | `view` | [`CoreView`]: the profile's rules, applied as a core is read (the one reading that names errors) |
//! | `entries` | closed-world reading of a core's map entries: each known field once, nothing else |

use jcp::cbor::ContentId;
use jcp::identity::Did;

use crate::cose::{self, DidCache, Position, Sealed};
use crate::error::Error;

mod core;
mod entries;
pub(crate) mod view;

pub use self::core::{debited_ids, ReceiptCore};
pub(crate) use entries::TextItems;
pub use view::CoreView;

/// The profile tag in `jcp_receipt` (§8 profile versioning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Profile {
    /// The retired predecessor: no `payload_hash`. Verified, never minted.
    Jcp1,
    /// The current profile.
    Jcp2,
}

impl Profile {
    /// The wire tag.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jcp1 => "jcp/1",
            Self::Jcp2 => "jcp/2",
        }
    }
}

/// A receipt whose envelope opened and whose core read under its profile.
/// The signature is checked by [`OpenedReceipt::verify`] (or in a batch).
#[derive(Debug, Clone)]
pub struct OpenedReceipt {
    /// The typed core.
    pub core: ReceiptCore,
    /// The envelope (tbs, signature, id, position).
    pub sealed: Sealed,
}

impl OpenedReceipt {
    /// [`OpenedReceipt::open`] through `coset` only (the reference path the
    /// zero-copy reader must never be wider than; for tests and fuzzing).
    #[doc(hidden)]
    pub fn open_coset(bytes: &[u8], dids: &mut DidCache) -> Result<Self, Error> {
        let (sealed, core) = cose::open(bytes, dids)?;
        let core = ReceiptCore::from_value(&core, dids)?;
        if core.steward != sealed.steward {
            return Err(Error::StewardMismatch {
                core: core.steward.to_did_string(),
                kid: sealed.steward.to_did_string(),
            });
        }
        Ok(Self { core, sealed })
    }

    /// Checks the expected steward (C5) and the signature.
    pub fn verify(&self, expected: Option<&Did>) -> Result<(), Error> {
        check_steward(&self.sealed.steward, expected)?;
        self.sealed.verify_signature()
    }
}

pub(crate) fn check_steward(found: &Did, expected: Option<&Did>) -> Result<(), Error> {
    match expected {
        Some(e) if e != found => Err(Error::WrongSteward { expected: e.to_did_string(), found: found.to_did_string() }),
        _ => Ok(()),
    }
}

/// A receipt that verified.
#[derive(Debug, Clone)]
pub struct VerifiedReceipt {
    /// The typed core.
    pub core: ReceiptCore,
    /// Stream position from the protected header.
    pub position: Position,
    /// The receipt id (blake3 of the envelope bytes).
    pub id: ContentId,
}

/// Opens and verifies a JCR-1 receipt under the profile it names (§8).
/// With `expected`, a receipt sealed by any other steward fails (C5).
pub fn verify_receipt(bytes: &[u8], expected: Option<&Did>) -> Result<VerifiedReceipt, Error> {
    let mut dids = DidCache::new();
    let o = OpenedReceipt::open(bytes, &mut dids)?;
    o.verify(expected)?;
    Ok(VerifiedReceipt { core: o.core, position: o.sealed.position, id: o.sealed.id })
}
