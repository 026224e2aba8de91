//! The other signed records of a stream (§4.11, §4.3, §4.7, §4.9): the
//! **outcome** of an action whose decision was recorded before it ran, the
//! **settlement** of a metered action's reservation by its charge, the
//! **revocation notice** an enforcement point records when it admits a
//! revocation, with the marker of its revocation feed at which the
//! revocation was issued, and the **amendment notice** of an admitted
//! amendment. All are JCR-1 envelopes (same COSE machinery) with their own
//! profile tag.

use jcp::cbor::{self, ContentId, Fields, Value};
use jcp::identity::{Did, Keypair};
use jcp::revocation::SignedRevocation;

use crate::cose::{self, DidCache, Position, Sealed};
use crate::error::Error;
use crate::receipt::check_steward;

/// Profile tag of an outcome record.
pub const OUTCOME_PROFILE: &str = "jcp-outcome/1";
/// Profile tag of a revocation notice.
pub const REVOCATION_PROFILE: &str = "jcp-revocation/1";
/// The profile tag of an amendment notice (§4.7 admitted at a point).
pub const AMENDMENT_PROFILE: &str = "jcp-amendment/1";

/// How an action whose decision was recorded ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeStatus {
    /// The action ran to completion.
    Completed,
    /// The action ran and failed (its energy stays debited).
    Failed,
}

impl OutcomeStatus {
    /// Wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

/// An outcome record's core.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    /// The decision receipt this settles (its record id).
    pub receipt: ContentId,
    /// How it ended.
    pub status: OutcomeStatus,
    /// The sealing enforcement point.
    pub steward: Did,
}

impl Outcome {
    /// Canonical core.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("jcp_outcome", Some(Value::text(OUTCOME_PROFILE))),
            ("receipt", Some(Value::text(self.receipt.to_hex()))),
            ("status", Some(Value::text(self.status.as_str()))),
            ("steward", Some(Value::text(self.steward.to_did_string()))),
        ])
    }

    /// Reads the core.
    pub fn from_value(v: &Value, dids: &mut DidCache) -> Result<Self, Error> {
        let mut f = Fields::new("jcp_outcome", v)?;
        let tag = f.text("jcp_outcome")?;
        if tag != OUTCOME_PROFILE {
            return Err(Error::UnknownProfile(tag.to_owned()));
        }
        let receipt = f.cid("receipt")?;
        let status = match f.text("status")? {
            "completed" => OutcomeStatus::Completed,
            "failed" => OutcomeStatus::Failed,
            other => return Err(Error::Invalid { field: "status", problem: format!("unknown status {other:?}") }),
        };
        let steward = dids.parse(f.text("steward")?)?;
        f.finish()?;
        Ok(Self { receipt, status, steward })
    }
}

/// A revocation notice's core: the signed revocation and the revocation
/// feed's marker at which it was issued (§4.3 propagation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevocationNotice {
    /// The revocation, as signed by the grant's issuer.
    pub revocation: SignedRevocation,
    /// The feed marker `M` at which the revocation was issued.
    pub marker: u64,
    /// The recording enforcement point.
    pub steward: Did,
}

impl RevocationNotice {
    /// Canonical core.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("jcp_revocation", Some(Value::text(REVOCATION_PROFILE))),
            ("revocation", Some(Value::Bytes(self.revocation.to_bytes()))),
            ("marker", Some(Value::Uint(self.marker))),
            ("steward", Some(Value::text(self.steward.to_did_string()))),
        ])
    }

    /// Reads the core (the revocation's authority is checked by the reader,
    /// against the grant it names).
    pub fn from_value(v: &Value, dids: &mut DidCache) -> Result<Self, Error> {
        let mut f = Fields::new("jcp_revocation", v)?;
        let tag = f.text("jcp_revocation")?;
        if tag != REVOCATION_PROFILE {
            return Err(Error::UnknownProfile(tag.to_owned()));
        }
        let Value::Bytes(bytes) = f.req("revocation")? else {
            return Err(f.error("revocation", "expected a byte string").into());
        };
        let revocation = SignedRevocation::from_bytes(bytes)
            .map_err(|e| Error::Invalid { field: "revocation", problem: e.to_string() })?;
        let marker = f.uint("marker")?;
        let steward = dids.parse(f.text("steward")?)?;
        f.finish()?;
        Ok(Self { revocation, marker, steward })
    }
}

/// Seals any signed-record core as JCR-1 (the receipt path is
/// [`crate::receipt::ReceiptCore::seal`]).
pub(crate) fn seal_core(core: &Value, position: Position, steward: &Keypair) -> Vec<u8> {
    cose::seal(core, position, steward)
}

/// [`crate::open::open_outcome`] through `coset` only (the reference path).
pub fn open_outcome_coset(bytes: &[u8], dids: &mut DidCache) -> Result<(Outcome, Sealed), Error> {
    let (sealed, core) = cose::open(bytes, dids)?;
    let o = Outcome::from_value(&core, dids)?;
    if o.steward != sealed.steward {
        return Err(Error::StewardMismatch { core: o.steward.to_did_string(), kid: sealed.steward.to_did_string() });
    }
    Ok((o, sealed))
}

/// Opens a revocation notice (signature unchecked).
pub fn open_revocation(bytes: &[u8], dids: &mut DidCache) -> Result<(RevocationNotice, Sealed), Error> {
    let (sealed, core) = cose::open(bytes, dids)?;
    let r = RevocationNotice::from_value(&core, dids)?;
    if r.steward != sealed.steward {
        return Err(Error::StewardMismatch { core: r.steward.to_did_string(), kid: sealed.steward.to_did_string() });
    }
    Ok((r, sealed))
}

/// Verifies a sealed record's steward (C5) and signature.
pub fn verify_sealed(sealed: &Sealed, expected: Option<&Did>) -> Result<(), Error> {
    check_steward(&sealed.steward, expected)?;
    sealed.verify_signature()
}

/// An amendment an enforcement point admitted (§4.7: a soft revoke): the
/// four signed objects, self-authenticating, sealed by the recording point
/// so replay re-admits it and an auditor sees when the steered grant
/// stopped being spendable at this point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmendmentNotice {
    /// The steered grant.
    pub steered: jcp::grant::SignedGrant,
    /// The agent's signed checkpoint.
    pub checkpoint: jcp::steering::SignedCheckpoint,
    /// The issuer's signed amendment.
    pub amendment: jcp::steering::SignedAmendment,
    /// The continuation grant.
    pub continuation: jcp::grant::SignedGrant,
    /// The feed marker at which the amendment was issued (§4.3's marker,
    /// §4.7's soft revoke): every point's allows on the steered grant are
    /// judged against it. Absent (omitted from the core) where the feed
    /// named none.
    pub marker: Option<u64>,
    /// The recording enforcement point.
    pub steward: Did,
}

impl AmendmentNotice {
    /// Canonical core.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("jcp_amendment", Some(Value::text(AMENDMENT_PROFILE))),
            ("steered", Some(Value::Bytes(self.steered.to_bytes()))),
            ("checkpoint", Some(Value::Bytes(self.checkpoint.to_bytes()))),
            ("amendment", Some(Value::Bytes(self.amendment.to_bytes()))),
            ("continuation", Some(Value::Bytes(self.continuation.to_bytes()))),
            ("marker", self.marker.map(Value::Uint)),
            ("steward", Some(Value::text(self.steward.to_did_string()))),
        ])
    }

    /// Reads the core (the amendment's authority is checked by the reader).
    pub fn from_value(v: &Value, dids: &mut DidCache) -> Result<Self, Error> {
        let mut f = Fields::new("jcp_amendment", v)?;
        let tag = f.text("jcp_amendment")?;
        if tag != AMENDMENT_PROFILE {
            return Err(Error::UnknownProfile(tag.to_owned()));
        }
        let bytes = |f: &mut Fields<'_>, field: &'static str| -> Result<Vec<u8>, Error> {
            match f.req(field)? {
                Value::Bytes(b) => Ok(b.clone()),
                _ => Err(f.error(field, "expected a byte string").into()),
            }
        };
        let bad = |field: &'static str| move |e: jcp::Error| Error::Invalid { field, problem: e.to_string() };
        let steered = jcp::grant::SignedGrant::from_bytes(&bytes(&mut f, "steered")?).map_err(bad("steered"))?;
        let checkpoint =
            jcp::steering::SignedCheckpoint::from_bytes(&bytes(&mut f, "checkpoint")?).map_err(bad("checkpoint"))?;
        let amendment =
            jcp::steering::SignedAmendment::from_bytes(&bytes(&mut f, "amendment")?).map_err(bad("amendment"))?;
        let continuation =
            jcp::grant::SignedGrant::from_bytes(&bytes(&mut f, "continuation")?).map_err(bad("continuation"))?;
        let marker = f.opt_uint("marker")?;
        let steward = dids.parse(f.text("steward")?)?;
        f.finish()?;
        Ok(Self { steered, checkpoint, amendment, continuation, marker, steward })
    }
}

/// Opens an amendment notice (signature unchecked; see [`verify_sealed`]).
pub fn open_amendment(bytes: &[u8], dids: &mut DidCache) -> Result<(AmendmentNotice, Sealed), Error> {
    let (sealed, core) = cose::open(bytes, dids)?;
    let a = AmendmentNotice::from_value(&core, dids)?;
    if a.steward != sealed.steward {
        return Err(Error::StewardMismatch { core: a.steward.to_did_string(), kid: sealed.steward.to_did_string() });
    }
    Ok((a, sealed))
}

/// The profile tag of a budget-channel statement record (§4.5).
pub const STATEMENT_PROFILE: &str = "jcp-statement/1";

/// A budget-channel statement a point recorded (§4.5): a peer's it admitted
/// (recorded before applied) or one of its own it signed (recorded before
/// it left), sealed by the recording point so replay re-admits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementNotice {
    /// The statement, as signed by its point.
    pub statement: jcp::channel::SignedStatement,
    /// The recording enforcement point.
    pub steward: Did,
}

impl StatementNotice {
    /// Canonical core.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("jcp_statement", Some(Value::text(STATEMENT_PROFILE))),
            ("statement", Some(Value::Bytes(self.statement.to_bytes()))),
            ("steward", Some(Value::text(self.steward.to_did_string()))),
        ])
    }

    /// Reads the core (the statement's signature is checked on admission).
    pub fn from_value(v: &Value, dids: &mut DidCache) -> Result<Self, Error> {
        let mut f = Fields::new("jcp_statement", v)?;
        let tag = f.text("jcp_statement")?;
        if tag != STATEMENT_PROFILE {
            return Err(Error::UnknownProfile(tag.to_owned()));
        }
        let Value::Bytes(bytes) = f.req("statement")? else {
            return Err(f.error("statement", "expected a byte string").into());
        };
        let statement = jcp::channel::SignedStatement::from_bytes(bytes)
            .map_err(|e| Error::Invalid { field: "statement", problem: e.to_string() })?;
        let steward = dids.parse(f.text("steward")?)?;
        f.finish()?;
        Ok(Self { statement, steward })
    }
}

/// Opens a statement record (signature unchecked).
pub fn open_statement(bytes: &[u8], dids: &mut DidCache) -> Result<(StatementNotice, Sealed), Error> {
    let (sealed, core) = cose::open(bytes, dids)?;
    let n = StatementNotice::from_value(&core, dids)?;
    if n.steward != sealed.steward {
        return Err(Error::StewardMismatch { core: n.steward.to_did_string(), kid: sealed.steward.to_did_string() });
    }
    Ok((n, sealed))
}

/// The profile tag of a settlement record (§4.9 two-phase path, §4.11).
pub const SETTLEMENT_PROFILE: &str = "jcp-settlement/1";

/// The settlement of a reservation (§4.9, §4.11): phase one of the metered
/// path recorded an allow receipt whose cost is what it held (the
/// reservation); the charge recorded the allow receipt of the measured cost
/// (`settled_by`) and then this record, which releases the reservation's
/// debit. It travels as an outcome-kind record: it resolves the
/// reservation. It carries the reservation receipt's sealed bytes (their
/// blake3 is its record id), so a reader that met the reservation earlier
/// in the stream knows exactly which debit to take back without keeping
/// every allow's chain; it holds no figure of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlement {
    /// The reservation receipt, byte for byte as recorded.
    pub reservation: Vec<u8>,
    /// The record id of the allow receipt that settles it (recorded before
    /// this record).
    pub settled_by: ContentId,
    /// The recording enforcement point.
    pub steward: Did,
}

impl Settlement {
    /// The reservation receipt's record id (what an outcome would name).
    pub fn reservation_id(&self) -> ContentId {
        ContentId::of_bytes(&self.reservation)
    }

    /// Canonical core.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("jcp_settlement", Some(Value::text(SETTLEMENT_PROFILE))),
            ("reservation", Some(Value::Bytes(self.reservation.clone()))),
            ("settled_by", Some(Value::text(self.settled_by.to_hex()))),
            ("steward", Some(Value::text(self.steward.to_did_string()))),
        ])
    }

    /// Reads the core.
    pub fn from_value(v: &Value, dids: &mut DidCache) -> Result<Self, Error> {
        let mut f = Fields::new("jcp_settlement", v)?;
        let tag = f.text("jcp_settlement")?;
        if tag != SETTLEMENT_PROFILE {
            return Err(Error::UnknownProfile(tag.to_owned()));
        }
        let reservation = match f.req("reservation")? {
            Value::Bytes(b) => b.clone(),
            _ => return Err(f.error("reservation", "expected a byte string").into()),
        };
        let settled_by = f.cid("settled_by")?;
        let steward = dids.parse(f.text("steward")?)?;
        f.finish()?;
        Ok(Self { reservation, settled_by, steward })
    }
}

/// What an outcome-kind record holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutcomeRecord {
    /// How an action ended ([`OUTCOME_PROFILE`]).
    Outcome(Outcome),
    /// A reservation settled by the charge's receipt ([`SETTLEMENT_PROFILE`]).
    Settlement(Settlement),
}

/// An outcome-kind record through `coset` only (the reference path the
/// zero-copy outcome reader must never be wider than; the reference audit,
/// `jcp_audit::reference`, reads every outcome-kind record this way; the
/// fast-first readers are in [`crate::open`]).
pub fn open_outcome_record_coset(bytes: &[u8], dids: &mut DidCache) -> Result<(OutcomeRecord, Sealed), Error> {
    let (sealed, core) = cose::open(bytes, dids)?;
    let (rec, steward) = if core.get("jcp_settlement").is_some() {
        let st = Settlement::from_value(&core, dids)?;
        let d = st.steward;
        (OutcomeRecord::Settlement(st), d)
    } else {
        let o = Outcome::from_value(&core, dids)?;
        let d = o.steward;
        (OutcomeRecord::Outcome(o), d)
    };
    if steward != sealed.steward {
        return Err(Error::StewardMismatch { core: steward.to_did_string(), kid: sealed.steward.to_did_string() });
    }
    Ok((rec, sealed))
}

/// Opens a settlement record (signature unchecked; see [`verify_sealed`]).
pub fn open_settlement(bytes: &[u8], dids: &mut DidCache) -> Result<(Settlement, Sealed), Error> {
    let (sealed, core) = cose::open(bytes, dids)?;
    let st = Settlement::from_value(&core, dids)?;
    if st.steward != sealed.steward {
        return Err(Error::StewardMismatch { core: st.steward.to_did_string(), kid: sealed.steward.to_did_string() });
    }
    Ok((st, sealed))
}
