//! §4.7 checkpoints: the agent's signed commitment to its state at a
//! boundary of the run, with its declared cumulative spend.

use serde::Serialize;

use super::{steer, SteeringError};
use crate::cbor::{self, ContentId, Fields, SchemaError, Value};
use crate::energy::Provenance;
use crate::error::Error;
use crate::grant::SignedGrant;
use crate::identity::{Did, Keypair};

/// A declared cumulative spend (§4.7): microjoules since the run began, with
/// the §5 provenance grade of the figure. The agent's own signed claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Spent {
    /// Cumulative microjoules across the whole run.
    pub uj: u64,
    /// How the figure was obtained (§5).
    pub provenance: Provenance,
}

impl Spent {
    fn to_value(self) -> Value {
        cbor::map([("uj", Some(Value::Uint(self.uj))), ("provenance", Some(Value::text(self.provenance.as_str())))])
    }

    fn from_value(v: &Value) -> Result<Self, SchemaError> {
        let mut f = Fields::new("Spent", v)?;
        let uj = f.uint("uj")?;
        let p = f.text("provenance")?;
        let provenance = Provenance::parse(p)
            .ok_or_else(|| f.error("provenance", format!("{p:?} is not HwShunt, ModelBased or Estimator")))?;
        f.finish()?;
        Ok(Self { uj, provenance })
    }
}

pub(super) fn ser_hex16<S: serde::Serializer>(b: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(b))
}

/// A checkpoint (§4.7), unsigned. Signed by `agent`, which must be the
/// cited grant's subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    /// The active grant the run is spending under.
    pub grant_id: ContentId,
    /// The author: the agent (the grant's subject).
    pub agent: Did,
    /// Position within the run: 0, 1, 2, … with no gaps, across
    /// continuations.
    pub seq: u64,
    /// The previous checkpoint's id; absent exactly at `seq` 0.
    pub prev: Option<ContentId>,
    /// The content-addressed commitment to the agent's state.
    pub state: ContentId,
    /// Unix seconds at which the agent committed; never decreases in a run.
    pub at: u64,
    /// The run's cumulative spend, where the agent states it.
    pub spent: Option<Spent>,
    /// 16 bytes of randomness.
    #[serde(serialize_with = "ser_hex16")]
    pub nonce: [u8; 16],
}

impl Checkpoint {
    /// Canonical CBOR form (absent optional fields omitted).
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("grant_id", Some(Value::text(self.grant_id.to_hex()))),
            ("agent", Some(Value::text(self.agent.to_did_string()))),
            ("seq", Some(Value::Uint(self.seq))),
            ("prev", self.prev.map(|p| Value::text(p.to_hex()))),
            ("state", Some(Value::text(self.state.to_hex()))),
            ("at", Some(Value::Uint(self.at))),
            ("spent", self.spent.map(Spent::to_value)),
            ("nonce", Some(Value::Bytes(self.nonce.to_vec()))),
        ])
    }

    /// Reads the canonical form (closed world).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("Checkpoint", v)?;
        let grant_id = f.cid("grant_id")?;
        let agent = Did::parse(f.text("agent")?)?;
        let seq = f.uint("seq")?;
        let prev = f.opt_cid("prev")?;
        let state = f.cid("state")?;
        let at = f.uint("at")?;
        let spent = f.opt("spent").map(Spent::from_value).transpose()?;
        let nonce = f.bytes_n::<16>("nonce")?;
        f.finish()?;
        Ok(Self { grant_id, agent, seq, prev, state, at, spent, nonce })
    }

    /// The checkpoint's content id.
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.to_value().encode())
    }

    /// Signs with the agent's key (which must be `agent`). Whether the agent
    /// is the grant's subject is checked against the grant, by
    /// [`verify_checkpoint`] and [`Run::checkpoint`](super::Run::checkpoint).
    pub fn sign(self, agent: &Keypair) -> Result<SignedCheckpoint, Error> {
        if agent.did() != self.agent {
            return Err(Error::SignerMismatch {
                object: "checkpoint",
                named: self.agent.to_string(),
                key: agent.did().to_string(),
            });
        }
        let bytes = self.to_value().encode();
        let signature = agent.sign(&bytes);
        Ok(SignedCheckpoint { id: ContentId::of_bytes(&bytes), checkpoint: self, bytes, signature })
    }
}

/// A checkpoint with its signature: `{checkpoint, sig}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    checkpoint: Checkpoint,
    bytes: Vec<u8>,
    signature: [u8; 64],
    id: ContentId,
}

impl SignedCheckpoint {
    /// The checkpoint (not yet checked).
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// Its content id: blake3 of the checkpoint's canonical bytes.
    pub fn id(&self) -> ContentId {
        self.id
    }

    /// The agent's Ed25519 signature over the checkpoint's canonical bytes.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// Whether the signature verifies under `agent` (the one Ed25519 predicate).
    pub fn verify_signature(&self) -> bool {
        self.checkpoint.agent.verify(&self.bytes, &self.signature)
    }

    /// The wire form `{checkpoint, sig}`.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("checkpoint", Some(self.checkpoint.to_value())),
            ("sig", Some(Value::Bytes(self.signature.to_vec()))),
        ])
    }

    /// Canonical bytes of the wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the wire form (the signature is checked by the verifier).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("SignedCheckpoint", v)?;
        let cv = f.req("checkpoint")?;
        let signature = f.bytes_n::<64>("sig")?;
        f.finish()?;
        let checkpoint = Checkpoint::from_value(cv)?;
        let bytes = cv.encode();
        Ok(Self { id: ContentId::of_bytes(&bytes), checkpoint, bytes, signature })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}

/// Checks a checkpoint against the grant it cites (§4.7): it names the
/// grant, its author is the grant's subject, and its signature verifies.
pub fn verify_checkpoint(grant: &SignedGrant, cp: &SignedCheckpoint) -> Result<(), Error> {
    let c = cp.checkpoint();
    if !cp.verify_signature() {
        return Err(Error::BadSignature { object: "Checkpoint", signer: c.agent.to_string() });
    }
    if c.agent != grant.grant().subject {
        return Err(steer(SteeringError::NotAgent {
            author: c.agent.to_string(),
            subject: grant.grant().subject.to_string(),
        }));
    }
    if c.grant_id != grant.id() {
        return Err(steer(SteeringError::WrongGrant(format!(
            "checkpoint {} cites grant {}, not {}",
            cp.id(),
            c.grant_id,
            grant.id()
        ))));
    }
    Ok(())
}

/// §4.7: "a declared spend is cumulative, so across one run it MUST NOT
/// decrease, and a checkpoint that once stated a spend MUST NOT later omit
/// it." `before` is the highest spend the run had stated before this
/// checkpoint, as the checking side holds it (`None`: none stated).
pub fn check_declared_spend(cp: &Checkpoint, before: Option<u64>) -> Result<(), Error> {
    match (before, cp.spent) {
        (Some(before), None) => Err(steer(SteeringError::SpendOmitted { before })),
        (Some(before), Some(s)) if s.uj < before => Err(steer(SteeringError::SpendDecreased { before, after: s.uj })),
        _ => Ok(()),
    }
}
