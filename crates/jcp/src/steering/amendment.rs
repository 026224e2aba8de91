//! §4.7 amendments: the issuer re-bounds the run at a checkpoint — only
//! tighter, within what the grant has left — and names the continuation
//! grant. The rules here are shared by the amending routine and every
//! verifier.

use serde::Serialize;

use super::checkpoint::ser_hex16;
use super::{amend_ceiling, steer, SignedCheckpoint, SteeringError};
use crate::cbor::{self, ContentId, Fields, Value};
use crate::error::Error;
use crate::grant::SignedGrant;
use crate::identity::{Did, Keypair};

/// An amendment (§4.7), unsigned: the issuer re-bounds the run at a
/// checkpoint. It names the continuation grant the run resumes under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Amendment {
    /// The steered grant (the checkpoint's active grant).
    pub grant_id: ContentId,
    /// The checkpoint this amendment steers at.
    pub checkpoint: ContentId,
    /// The amender: MUST be the steered grant's issuer and differ from the agent.
    pub amended_by: Did,
    /// The new budget for the rest of the run: at most what the grant has
    /// left at the checkpoint (the issued budget where spend is unstated).
    pub budget_uj: u64,
    /// A new, earlier expiry (unix seconds, never 0); absent = unchanged.
    pub expiry: Option<u64>,
    /// A new instruction-set commitment handed to the agent.
    pub instructions: Option<ContentId>,
    /// The content id of the continuation grant the run resumes under.
    pub continuation: ContentId,
    /// 16 bytes of randomness.
    #[serde(serialize_with = "ser_hex16")]
    pub nonce: [u8; 16],
}

impl Amendment {
    /// Canonical CBOR form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("grant_id", Some(Value::text(self.grant_id.to_hex()))),
            ("checkpoint", Some(Value::text(self.checkpoint.to_hex()))),
            ("amended_by", Some(Value::text(self.amended_by.to_did_string()))),
            ("budget_uj", Some(Value::Uint(self.budget_uj))),
            ("expiry", self.expiry.map(Value::Uint)),
            ("instructions", self.instructions.map(|c| Value::text(c.to_hex()))),
            ("continuation", Some(Value::text(self.continuation.to_hex()))),
            ("nonce", Some(Value::Bytes(self.nonce.to_vec()))),
        ])
    }

    /// Reads the canonical form (closed world).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("Amendment", v)?;
        let grant_id = f.cid("grant_id")?;
        let checkpoint = f.cid("checkpoint")?;
        let amended_by = Did::parse(f.text("amended_by")?)?;
        let budget_uj = f.uint("budget_uj")?;
        let expiry = f.opt_uint("expiry")?;
        let instructions = f.opt_cid("instructions")?;
        let continuation = f.cid("continuation")?;
        let nonce = f.bytes_n::<16>("nonce")?;
        f.finish()?;
        Ok(Self { grant_id, checkpoint, amended_by, budget_uj, expiry, instructions, continuation, nonce })
    }

    /// The amendment's content id.
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.to_value().encode())
    }

    /// Signs as `amender`. No rule is checked here: a raw amendment is judged
    /// by [`verify_amendment`] / [`Run::verify`](super::Run::verify); [`Run::amend`](super::Run::amend) is the
    /// routine that refuses before signing.
    pub fn sign(self, amender: &Keypair) -> SignedAmendment {
        let bytes = self.to_value().encode();
        let signature = amender.sign(&bytes);
        SignedAmendment { id: ContentId::of_bytes(&bytes), amendment: self, bytes, signature }
    }
}

/// An amendment with its signature: `{amendment, sig}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedAmendment {
    amendment: Amendment,
    pub(super) bytes: Vec<u8>,
    pub(super) signature: [u8; 64],
    id: ContentId,
}

impl SignedAmendment {
    /// Joins an amendment and a signature produced elsewhere (a threshold
    /// issuer's aggregate, §2.2), refusing one that does not verify under
    /// `amended_by` over the amendment's canonical bytes — `bad-signature`.
    /// The §4.7 rules are still judged by [`verify_amendment`].
    pub fn from_parts(amendment: Amendment, signature: [u8; 64]) -> Result<Self, Error> {
        let bytes = amendment.to_value().encode();
        if !amendment.amended_by.verify(&bytes, &signature) {
            return Err(Error::BadSignature { object: "Amendment", signer: amendment.amended_by.to_string() });
        }
        Ok(Self { id: ContentId::of_bytes(&bytes), amendment, bytes, signature })
    }

    /// The amendment (not yet checked).
    pub fn amendment(&self) -> &Amendment {
        &self.amendment
    }

    /// Its content id: blake3 of the amendment's canonical bytes.
    pub fn id(&self) -> ContentId {
        self.id
    }

    /// The amender's Ed25519 signature over the amendment's canonical bytes.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// Whether the signature verifies under `amended_by`.
    pub fn verify_signature(&self) -> bool {
        self.amendment.amended_by.verify(&self.bytes, &self.signature)
    }

    /// The wire form `{amendment, sig}`.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("amendment", Some(self.amendment.to_value())),
            ("sig", Some(Value::Bytes(self.signature.to_vec()))),
        ])
    }

    /// Canonical bytes of the wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the wire form (the signature is checked by the verifier).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("SignedAmendment", v)?;
        let av = f.req("amendment")?;
        let signature = f.bytes_n::<64>("sig")?;
        f.finish()?;
        let amendment = Amendment::from_value(av)?;
        let bytes = av.encode();
        Ok(Self { id: ContentId::of_bytes(&bytes), amendment, bytes, signature })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}

/// The authority and tightening rules of an amendment, unsigned (shared by
/// the amending routine and every verifier). Returns the ceiling applied.
pub(super) fn check_amendment_rules(
    grant: &SignedGrant,
    cp: &SignedCheckpoint,
    a: &Amendment,
    base: Option<u64>,
) -> Result<u64, Error> {
    let g = grant.grant();
    if a.checkpoint != cp.id() {
        return Err(steer(SteeringError::WrongCheckpoint(format!(
            "amendment is bound to checkpoint {}, presented with {}",
            a.checkpoint,
            cp.id()
        ))));
    }
    if cp.checkpoint().grant_id != grant.id() || a.grant_id != grant.id() {
        return Err(steer(SteeringError::WrongGrant(format!(
            "amendment names grant {} and its checkpoint grant {}; the active grant is {}",
            a.grant_id,
            cp.checkpoint().grant_id,
            grant.id()
        ))));
    }
    if a.amended_by == g.subject {
        return Err(steer(SteeringError::SelfAmend { amender: a.amended_by.to_string() }));
    }
    if a.amended_by != g.issuer {
        return Err(steer(SteeringError::NotIssuer {
            amender: a.amended_by.to_string(),
            issuer: g.issuer.to_string(),
        }));
    }
    if a.budget_uj > g.budget_uj {
        return Err(steer(SteeringError::Widening(format!(
            "amended budget {} µJ exceeds the grant's issued {} µJ",
            a.budget_uj, g.budget_uj
        ))));
    }
    let stated = cp.checkpoint().spent.map(|s| s.uj);
    let (ceiling, _) = amend_ceiling(g.budget_uj, base, stated);
    if a.budget_uj > ceiling {
        return Err(steer(SteeringError::AboveRemainder {
            budget_uj: a.budget_uj,
            ceiling_uj: ceiling,
            issued_uj: g.budget_uj,
            spent_uj: stated.unwrap_or(0),
        }));
    }
    if let Some(e) = a.expiry {
        if e == 0 || (g.expiry != 0 && e > g.expiry) {
            return Err(steer(SteeringError::Widening(format!(
                "amended expiry {e} outlives the grant's {}",
                if g.expiry == 0 {
                    "unbounded expiry only by never expiring, which 0 would mean".to_owned()
                } else {
                    g.expiry.to_string()
                }
            ))));
        }
    }
    Ok(ceiling)
}

/// Verifies a signed amendment as an enforcement point must (§4.7), without
/// ever calling the amending routine: the signature, that it is bound to
/// this checkpoint of this grant, that the checkpoint itself verifies
/// (`verify_checkpoint`), that the amender is the issuer and not the
/// agent, and that it only tightens — at most the remainder where the
/// checkpoint stated its spend. `grant` is taken as the run's own grant
/// (spend under it starts at zero); inside a run with continuations use
/// [`Run::verify`](super::Run::verify), which knows where each continuation began.
pub fn verify_amendment(grant: &SignedGrant, cp: &SignedCheckpoint, am: &SignedAmendment) -> Result<u64, Error> {
    verify_amendment_from(grant, cp, am, Some(0))
}

/// [`verify_amendment`] for a grant that may itself be a continuation:
/// `base` is the cumulative spend the run had declared when `grant` began
/// (the stated spend at the checkpoint where it was steered in; 0 for the
/// run's own grant; `None` when that checkpoint stated none — the
/// fail-closed reading counts all declared spend against `grant`).
/// Checkpoints state spend across the whole run, so the remainder under a
/// continuation is its budget less the spend declared since it began.
pub fn verify_amendment_from(
    grant: &SignedGrant,
    cp: &SignedCheckpoint,
    am: &SignedAmendment,
    base: Option<u64>,
) -> Result<u64, Error> {
    // §4.7: the remainder is computed from the checkpoint's stated spend,
    // so the checkpoint is verified first (the agent's signature, author =
    // subject, the grant it cites) wherever an amendment is admitted or
    // audited — a forged or issuer-signed checkpoint stating `spent: 0`
    // would otherwise hand back the whole budget.
    super::verify_checkpoint(grant, cp)?;
    if !am.verify_signature() {
        return Err(Error::BadSignature { object: "Amendment", signer: am.amendment().amended_by.to_string() });
    }
    check_amendment_rules(grant, cp, am.amendment(), base)
}
