//! The binding's feed messages: revocations (§4.3 propagation),
//! amendments (§4.7), outcomes (§4.11) and peer budget-channel statements
//! (§4.5) reach the endpoint as self-authenticating signed objects; the
//! endpoint checks authority, records, then applies, and answers with a
//! [`FeedAnswer`].

use jcp::cbor::{self, ContentId, Fields, Value};
use jcp::grant::SignedGrant;
use jcp::identity::{Did, Keypair};

use crate::error::WireError;

/// The binding's feed messages: how revocations, amendments, outcomes and
/// peer statements reach the endpoint (§4.3 propagation, §4.7, §4.11,
/// §4.5). Each is self-authenticating (signed by the party with the
/// authority to send it); the endpoint checks authority, records, then
/// applies.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "a feed message is built once and boxed wherever it is queued or sent (`Inbound::Feed`, the core's \
              job); boxing the variants' grants would make every caller build boxes for no saving"
)]
pub enum Feed {
    /// A signed revocation, the grant it names, and the feed marker at
    /// which it was issued.
    Revocation {
        /// The signed revocation.
        revocation: jcp::revocation::SignedRevocation,
        /// The grant it revokes.
        grant: SignedGrant,
        /// The revocation feed's marker (monotonic, §4.3).
        marker: u64,
    },
    /// A signed checkpoint, its amendment, the steered grant and the
    /// continuation grant (§4.7).
    Amendment {
        /// The steered grant.
        steered: SignedGrant,
        /// The agent's signed checkpoint.
        checkpoint: jcp::steering::SignedCheckpoint,
        /// The issuer's signed amendment.
        amendment: jcp::steering::SignedAmendment,
        /// The continuation grant.
        continuation: SignedGrant,
        /// The feed's marker at which the amendment was issued: amendments
        /// travel the revocation feed and count on its marker (§4.3, §4.7:
        /// a soft revoke propagates as a revocation does). Absent, the
        /// audit cannot order other points' spend against it and calls it
        /// unverifiable (docs/decisions.md).
        marker: Option<u64>,
    },
    /// The outcome of an allowed action, reported by the party that ran it
    /// (§4.11: only the holder knows whether it took effect), signed by it.
    Outcome(SignedOutcome),
    /// A peer point's signed budget-channel statement (§4.5): admitted
    /// (recorded, then applied), its settled spend counts from then on.
    Statement(jcp::channel::SignedStatement),
    /// Another feed message signed by a feed key (`{msg: "signed-feed",
    /// feed, by, sig}`): the signature covers the inner message's canonical
    /// bytes, its marker included (§4.3: a marker outside every signature
    /// lets anyone who can connect move a point's revocation knowledge).
    /// An endpoint admits it from any connection when `by` is one of its
    /// configured feed keys. Never nested.
    Signed {
        /// The message signed.
        feed: Box<Feed>,
        /// The feed key that signed it.
        by: Did,
        /// Ed25519 by `by` over `feed`'s canonical bytes.
        sig: [u8; 64],
    },
}

/// An outcome report: the holder of an allowed decision says whether the
/// action completed or failed (§4.11), signed by the holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedOutcome {
    /// The allow receipt's id.
    pub receipt: ContentId,
    /// `completed` or `failed`.
    pub status: jcp_receipt::record::OutcomeStatus,
    /// The reporter: must be the receipt's holder (its subject).
    pub holder: Did,
    /// Ed25519 by `holder` over the canonical bytes of the other fields.
    pub signature: [u8; 64],
}

fn status_str(s: jcp_receipt::record::OutcomeStatus) -> &'static str {
    s.as_str()
}

impl SignedOutcome {
    fn body(receipt: &ContentId, status: jcp_receipt::record::OutcomeStatus, holder: &Did) -> Value {
        cbor::map([
            ("msg", Some(Value::text("outcome"))),
            ("receipt", Some(Value::text(receipt.to_hex()))),
            ("status", Some(Value::text(status_str(status)))),
            ("holder", Some(Value::text(holder.to_did_string()))),
        ])
    }

    /// Signs a report as `holder`.
    pub fn sign(receipt: ContentId, status: jcp_receipt::record::OutcomeStatus, holder: &Keypair) -> Self {
        let did = holder.did();
        let signature = holder.sign(&Self::body(&receipt, status, &did).encode());
        Self { receipt, status, holder: did, signature }
    }

    /// Whether the holder's signature verifies.
    pub fn verify_signature(&self) -> bool {
        self.holder.verify(&Self::body(&self.receipt, self.status, &self.holder).encode(), &self.signature)
    }

    fn to_value(&self) -> Value {
        let mut v = Self::body(&self.receipt, self.status, &self.holder);
        if let Value::Map(m) = &mut v {
            m.push((Value::text("signature"), Value::Bytes(self.signature.to_vec())));
        }
        v
    }

    fn from_fields(f: &mut Fields<'_>) -> Result<Self, WireError> {
        let receipt = f.cid("receipt")?;
        let status = match f.text("status")? {
            "completed" => jcp_receipt::record::OutcomeStatus::Completed,
            "failed" => jcp_receipt::record::OutcomeStatus::Failed,
            other => return Err(f.error("status", format!("{other:?} is not completed|failed")).into()),
        };
        let holder = Did::parse(f.text("holder")?)?;
        let signature = f.bytes_n::<64>("signature")?;
        Ok(Self { receipt, status, holder, signature })
    }
}

impl Feed {
    /// Signs this message with a feed key (§4.3: the marker is covered).
    #[must_use]
    pub fn signed_by(self, key: &Keypair) -> Self {
        let sig = key.sign(&self.to_value().encode());
        Self::Signed { feed: Box::new(self), by: key.did(), sig }
    }

    /// Whether the message carries a marker outside the signatures of the
    /// objects it carries (a revocation's or an amendment's): only an
    /// authenticated feed may move a point's revocation knowledge.
    pub fn carries_marker(&self) -> bool {
        matches!(self, Self::Revocation { .. } | Self::Amendment { .. })
    }

    /// The canonical message value.
    pub fn to_value(&self) -> Value {
        match self {
            // Defined once in the core: an issuer's revocation log signs the same bytes.
            Self::Revocation { revocation, grant, marker } => {
                jcp::revocation_log::feed_value(revocation, grant, *marker)
            }
            Self::Amendment { steered, checkpoint, amendment, continuation, marker } => cbor::map([
                ("msg", Some(Value::text("amendment"))),
                ("steered", Some(steered.to_value())),
                ("checkpoint", Some(checkpoint.to_value())),
                ("amendment", Some(amendment.to_value())),
                ("continuation", Some(continuation.to_value())),
                ("marker", marker.map(Value::Uint)),
            ]),
            Self::Outcome(o) => o.to_value(),
            Self::Statement(st) => {
                cbor::map([("msg", Some(Value::text("statement"))), ("statement", Some(st.to_value()))])
            }
            Self::Signed { feed, by, sig } => cbor::map([
                ("msg", Some(Value::text("signed-feed"))),
                ("feed", Some(feed.to_value())),
                ("by", Some(Value::text(by.to_did_string()))),
                ("sig", Some(Value::Bytes(sig.to_vec()))),
            ]),
        }
    }

    pub(super) fn from_value(kind: &str, v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("Feed", v)?;
        f.text("msg")?;
        let out = match kind {
            "revocation" => Self::Revocation {
                revocation: jcp::revocation::SignedRevocation::from_value(f.req("revocation")?)?,
                grant: SignedGrant::from_value(f.req("grant")?)?,
                marker: f.uint("marker")?,
            },
            "amendment" => Self::Amendment {
                steered: SignedGrant::from_value(f.req("steered")?)?,
                checkpoint: jcp::steering::SignedCheckpoint::from_value(f.req("checkpoint")?)?,
                amendment: jcp::steering::SignedAmendment::from_value(f.req("amendment")?)?,
                continuation: SignedGrant::from_value(f.req("continuation")?)?,
                marker: f.opt_uint("marker")?,
            },
            "outcome" => Self::Outcome(SignedOutcome::from_fields(&mut f)?),
            "statement" => Self::Statement(jcp::channel::SignedStatement::from_value(f.req("statement")?)?),
            "signed-feed" => {
                let inner = f.req("feed")?;
                let kind = match inner.get("msg") {
                    Some(Value::Text(k)) if k != "signed-feed" && k != "statement-ask" => k.clone(),
                    Some(Value::Text(_)) => {
                        return Err(WireError::schema("Feed", "a signed feed holds one plain feed message"))
                    }
                    _ => return Err(WireError::schema("Feed", "feed: expected a feed message")),
                };
                let feed = Box::new(Self::from_value(&kind, inner)?);
                let by = Did::parse(f.text("by")?)?;
                let sig = f.bytes_n::<64>("sig")?;
                Self::Signed { feed, by, sig }
            }
            other => return Err(WireError::schema("Feed", format!("unknown message {other:?}"))),
        };
        f.finish()?;
        Ok(out)
    }
}

/// The endpoint's answer to a feed message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FeedAnswer {
    /// Admitted (recorded, then applied) or refused.
    pub admitted: bool,
    /// The refusal's code, or `admitted`.
    pub code: String,
    /// What happened.
    pub message: String,
    /// The endpoint's `known_through` after it.
    pub known_through: Option<u64>,
}

impl FeedAnswer {
    /// The canonical message value (no bools on the wire: `status` text).
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("msg", Some(Value::text("feed-answer"))),
            ("status", Some(Value::text(if self.admitted { "admitted" } else { "refused" }))),
            ("code", Some(Value::text(self.code.as_str()))),
            ("message", Some(Value::text(self.message.as_str()))),
            ("known_through", self.known_through.map(Value::Uint)),
        ])
    }

    /// Reads one.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("FeedAnswer", v)?;
        f.text("msg")?;
        let admitted = match f.text("status")? {
            "admitted" => true,
            "refused" => false,
            other => return Err(f.error("status", format!("unknown status {other:?}")).into()),
        };
        let code = f.text("code")?.to_owned();
        let message = f.text("message")?.to_owned();
        let known_through = f.opt_uint("known_through")?;
        f.finish()?;
        Ok(Self { admitted, code, message, known_through })
    }
}
