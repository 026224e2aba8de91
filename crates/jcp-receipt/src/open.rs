//! Opening records: the zero-copy reader (the private `fast` module) first, for the
//! one canonical layout this crate mints, and the reference reader
//! ([`crate::receipt`], [`crate::record`], through `coset`) for anything
//! else, which then accepts or names the error. The choice is made here,
//! above both readers, so neither depends on the other.

use crate::cose::{DidCache, Sealed, Unsealed};
use crate::error::Error;
use crate::fast;
use crate::receipt::{CoreView, OpenedReceipt, ReceiptCore};
use crate::record::{self, Outcome, OutcomeRecord, Settlement};

impl OpenedReceipt {
    /// Opens and reads a receipt without checking the signature.
    pub fn open(bytes: &[u8], dids: &mut DidCache) -> Result<Self, Error> {
        if let Some(fast) = fast::open_receipt(bytes, dids) {
            return Ok(fast);
        }
        Self::open_coset(bytes, dids)
    }

    /// [`OpenedReceipt::open`] without the record id (the audit's hot path;
    /// see [`crate::cose::Unsealed`]). Same acceptance and errors.
    pub fn open_unsealed<'a>(bytes: &'a [u8], dids: &mut DidCache) -> Result<(ReceiptCore, Unsealed<'a>), Error> {
        if let Some(fast) = fast::open_receipt_unsealed(bytes, dids) {
            return Ok(fast);
        }
        Self::open_coset(bytes, dids).map(|o| (o.core, o.sealed.into()))
    }

    /// A receipt in the canonical layout this crate mints, read as a
    /// [`CoreView`] without copying (the audit's hot path). `None` for
    /// anything else, valid or not: then [`OpenedReceipt::open_unsealed`]
    /// reads it or names what is wrong. Never accepts what `open_unsealed`
    /// refuses, and reads the same values (tested record by record and bit
    /// flip by bit flip).
    pub fn open_view<'a>(bytes: &'a [u8], dids: &mut DidCache) -> Option<(CoreView<'a>, Unsealed<'a>)> {
        fast::open_receipt_view(bytes, dids)
    }
}

impl Settlement {
    /// Opens the reservation receipt (signature unchecked: a reader checks
    /// that its id is one it verified earlier in the stream). It must be an
    /// allow sealed by this record's steward.
    pub fn open_reservation(&self, dids: &mut DidCache) -> Result<OpenedReceipt, Error> {
        self.check_reservation(OpenedReceipt::open(&self.reservation, dids)?)
    }

    /// [`Settlement::open_reservation`] through `coset` only (the reference
    /// audit's path, `jcp_audit::reference`). Same acceptance and errors.
    pub fn open_reservation_coset(&self, dids: &mut DidCache) -> Result<OpenedReceipt, Error> {
        self.check_reservation(OpenedReceipt::open_coset(&self.reservation, dids)?)
    }

    /// The reservation must be an allow sealed by this record's steward.
    fn check_reservation(&self, o: OpenedReceipt) -> Result<OpenedReceipt, Error> {
        if o.core.steward != self.steward {
            return Err(Error::StewardMismatch {
                core: o.core.steward.to_did_string(),
                kid: self.steward.to_did_string(),
            });
        }
        if !o.core.is_allow() {
            return Err(Error::Invalid { field: "reservation", problem: "a reservation is an allow receipt".into() });
        }
        Ok(o)
    }
}

/// Opens an outcome record (signature unchecked).
pub fn open_outcome(bytes: &[u8], dids: &mut DidCache) -> Result<(Outcome, Sealed), Error> {
    if let Some(fast) = fast::open_outcome(bytes, dids) {
        return Ok(fast);
    }
    record::open_outcome_coset(bytes, dids)
}

/// [`open_outcome`] without the record id (the audit's hot path; see
/// [`Unsealed`]). Same acceptance and errors.
pub fn open_outcome_unsealed<'a>(bytes: &'a [u8], dids: &mut DidCache) -> Result<(Outcome, Unsealed<'a>), Error> {
    if let Some(fast) = fast::open_outcome_unsealed(bytes, dids) {
        return Ok(fast);
    }
    record::open_outcome_coset(bytes, dids).map(|(o, s)| (o, s.into()))
}

/// Opens an outcome-kind record of either profile (signature unchecked).
/// An outcome in the layout this crate mints takes the same path as
/// [`open_outcome`]; anything else is read through `coset`, as a
/// settlement when its core is tagged `jcp_settlement`, else as an outcome.
pub fn open_outcome_record(bytes: &[u8], dids: &mut DidCache) -> Result<(OutcomeRecord, Sealed), Error> {
    if let Some((o, s)) = fast::open_outcome(bytes, dids) {
        return Ok((OutcomeRecord::Outcome(o), s));
    }
    record::open_outcome_record_coset(bytes, dids)
}

/// [`open_outcome_record`] without the record id (the audit's path; see
/// [`Unsealed`]). An outcome costs what
/// [`open_outcome_unsealed`] costs.
pub fn open_outcome_record_unsealed<'a>(
    bytes: &'a [u8],
    dids: &mut DidCache,
) -> Result<(OutcomeRecord, Unsealed<'a>), Error> {
    if let Some((o, u)) = fast::open_outcome_unsealed(bytes, dids) {
        return Ok((OutcomeRecord::Outcome(o), u));
    }
    record::open_outcome_record_coset(bytes, dids).map(|(r, s)| (r, s.into()))
}
