//! Spec §4.7: checkpoints and amendments — steering a long run (C21).
//!
//! A running agent (a grant's `subject`) commits to its state at defined
//! boundaries: a signed [`Checkpoint`] citing the active grant, a
//! content-addressed state commitment, its position in the run and, where it
//! says, what the run has spent so far. The grant's `issuer` — a principal
//! distinct from the agent — may then steer: a signed [`Amendment`] cites the
//! checkpoint, only tightens, and is bounded by what the grant has **left**
//! there. The run resumes under a **continuation grant** the issuer re-issues
//! to the same agent, which the amendment names by content id (the link the
//! auditor checks: docs/decisions.md, "Steering (§4.7, C21)").
//!
//! Every rule is held twice: by the authoring routines ([`Run::checkpoint`],
//! [`Run::amend`]) and by the verifier ([`Run::verify`], [`verify_amendment`]),
//! which share one implementation — an enforcement point handed a signed
//! amendment never calls the amending routine, so a check that lived only
//! there would not be a check.
//!
//! On disk a run is a `*.jcprun` file: an RFC 8742 CBOR sequence of canonical
//! items — a header `{format: "jcp-run/1"}`, then one record per item, in
//! order — so a live run can be appended to without rewriting it.

use serde::Serialize;

use crate::cbor::{self, ContentId, Fields, SchemaError, Value};
use crate::energy::Provenance;
use crate::error::Error;
use crate::grant::{check_narrows, Caveat, Grant, SignedGrant};
use crate::identity::{Did, Keypair};
use crate::rotation::KeyRing;

pub mod demo;
pub mod vectors;

/// The run file's format string (its header's `format`).
pub const RUN_FORMAT: &str = "jcp-run/1";

/// File name extension of a run file.
pub const RUN_EXTENSION: &str = "jcprun";

// ------------------------------------------------------------------ errors

/// Why a steering record or run is refused (§4.7). Each variant has a
/// stable [`SteeringError::code`]; it travels inside [`Error::Steering`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SteeringError {
    /// A checkpoint authored by someone other than the active grant's
    /// subject (the agent).
    #[error("steer-not-agent: checkpoint author {author} is not the grant's subject {subject}")]
    NotAgent { author: String, subject: String },
    /// An amendment by the agent itself: an agent cannot steer itself.
    #[error(
        "steer-self-amend: amender {amender} is the agent (the grant's subject); steering needs a distinct principal"
    )]
    SelfAmend { amender: String },
    /// An amendment by someone other than the steered grant's issuer.
    #[error("steer-not-issuer: amender {amender} is not the grant's issuer {issuer}")]
    NotIssuer { amender: String, issuer: String },
    /// An amendment or continuation that loosens the steered grant on some
    /// axis (budget above the issued budget, a later expiry, a wider grant).
    #[error("steer-widening: {0}")]
    Widening(String),
    /// An amendment budget within the issued budget but above what the grant
    /// has left at the checkpoint that stated its spend.
    #[error("steer-above-remainder: amended budget {budget_uj} µJ exceeds the remainder {ceiling_uj} µJ (issued {issued_uj} µJ, spent {spent_uj} µJ)")]
    AboveRemainder { budget_uj: u64, ceiling_uj: u64, issued_uj: u64, spent_uj: u64 },
    /// An amendment bound to a different checkpoint than the one it is
    /// presented with (or than the run's latest).
    #[error("steer-wrong-checkpoint: {0}")]
    WrongCheckpoint(String),
    /// A record citing a grant that is not the run's active grant.
    #[error("steer-wrong-grant: {0}")]
    WrongGrant(String),
    /// A declared (cumulative) spend lower than an earlier one in the run.
    #[error("steer-spend-decreased: declared spend {after} µJ is below the {before} µJ declared earlier in the run")]
    SpendDecreased { before: u64, after: u64 },
    /// A checkpoint that omits its spend after an earlier one stated it.
    #[error(
        "steer-spend-omitted: the run stated its spend ({before} µJ) at an earlier checkpoint and may not go quiet"
    )]
    SpendOmitted { before: u64 },
    /// The checkpoint sequence is broken: a wrong `seq`, a `prev` that is not
    /// the previous checkpoint, or a clock that runs backwards.
    #[error("steer-sequence: {0}")]
    Sequence(String),
    /// A continuation grant that is missing, unnamed by any amendment, or
    /// does not re-bind the steered grant's issuer, agent and position.
    #[error("steer-continuation: {0}")]
    Continuation(String),
    /// A checkpoint declaring more spend under the active grant than its
    /// budget (admitted: the claim is the agent's own; reported as evidence).
    #[error("steer-overspent: {spent_uj} µJ spent under a grant of {budget_uj} µJ")]
    Overspent { spent_uj: u64, budget_uj: u64 },
    /// Authoring onto a run that has refused records, or a new record the
    /// verifier would refuse.
    #[error("steer-run-not-clean: {count} refused record(s); first: {first}")]
    RunNotClean { count: usize, first: String },
    /// A run file that could not be read or written.
    #[error("io-error: {0}")]
    Io(String),
    /// The run file's header is missing or names another format.
    #[error("run-header: {0}")]
    RunHeader(String),
    /// A run file record that does not decode. `index` counts records after
    /// the header (None = the header); `offset` is the record's first byte.
    #[error("run-file: record {} (starts at byte {offset} of the file; offsets that follow are within the record): {source}", index.map_or_else(|| "header".to_owned(), |i| format!("#{i}")))]
    RunFile { index: Option<usize>, offset: usize, source: Box<Error> },
}

impl SteeringError {
    /// A stable code for machines. A [`SteeringError::RunFile`] reports the
    /// code of what was wrong inside the record.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotAgent { .. } => "steer-not-agent",
            Self::SelfAmend { .. } => "steer-self-amend",
            Self::NotIssuer { .. } => "steer-not-issuer",
            Self::Widening(_) => "steer-widening",
            Self::AboveRemainder { .. } => "steer-above-remainder",
            Self::WrongCheckpoint(_) => "steer-wrong-checkpoint",
            Self::WrongGrant(_) => "steer-wrong-grant",
            Self::SpendDecreased { .. } => "steer-spend-decreased",
            Self::SpendOmitted { .. } => "steer-spend-omitted",
            Self::Sequence(_) => "steer-sequence",
            Self::Continuation(_) => "steer-continuation",
            Self::Overspent { .. } => "steer-overspent",
            Self::RunNotClean { .. } => "steer-run-not-clean",
            Self::Io(_) => "io-error",
            Self::RunHeader(_) => "run-header",
            Self::RunFile { source, .. } => source.code(),
        }
    }

    /// A steering refusal (§4.7, C21) as opposed to a run file that could
    /// not be read (see [`crate::Error::is_refusal`]).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, Self::Io(_) | Self::RunHeader(_) | Self::RunFile { .. })
    }
}

fn steer(e: SteeringError) -> Error {
    Error::Steering(e)
}

// ------------------------------------------------------------------ spent

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

fn ser_hex16<S: serde::Serializer>(b: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(b))
}

// -------------------------------------------------------------- checkpoint

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
    /// [`verify_checkpoint`] and [`Run::checkpoint`].
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

    /// The signature.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// Whether the signature verifies under `agent` (`verify_strict`).
    pub fn verify_signature(&self) -> bool {
        self.checkpoint.agent.verify(&self.bytes, &self.signature)
    }

    /// The wire form.
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

// --------------------------------------------------------------- amendment

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
    /// by [`verify_amendment`] / [`Run::verify`]; [`Run::amend`] is the
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
    bytes: Vec<u8>,
    signature: [u8; 64],
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

    /// Its content id.
    pub fn id(&self) -> ContentId {
        self.id
    }

    /// The signature.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// Whether the signature verifies under `amended_by`.
    pub fn verify_signature(&self) -> bool {
        self.amendment.amended_by.verify(&self.bytes, &self.signature)
    }

    /// The wire form.
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

    /// Reads the wire form.
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

// ------------------------------------------------------- the shared checks

/// What the active grant has left at a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Remainder {
    /// Known exactly: the grant's budget less the spend stated under it.
    Known {
        /// Microjoules left.
        uj: u64,
    },
    /// Not known. Never reported as the full budget (§4.7): `not_stated`
    /// when this checkpoint states no spend; `base_unknown` when it does but
    /// the checkpoint the active continuation began at did not, so the spend
    /// under the continuation is bounded only from above; `refused` on a
    /// checkpoint the verifier refused (its claims are not judged).
    Unknown {
        /// Why it is unknown.
        reason: UnknownReason,
    },
}

/// Why a checkpoint's remainder is unknown (§4.7); serialised as its
/// `snake_case` word ([`UnknownReason::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownReason {
    /// §4.7: the checkpoint states no spend.
    NotStated,
    /// §4.7: the checkpoint the active continuation began at stated no
    /// spend, so the spend under it is bounded only from above.
    BaseUnknown,
    /// §4.7: the verifier refused the checkpoint; its claims are not judged.
    Refused,
}

impl UnknownReason {
    /// The wire word (`not_stated`, `base_unknown`, `refused`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStated => "not_stated",
            Self::BaseUnknown => "base_unknown",
            Self::Refused => "refused",
        }
    }
}

/// The ceiling an amendment at a checkpoint may set, and what is left
/// (§4.7): `budget − spent` saturating where the spend is stated; the issued
/// budget (remainder unknown) where it is not. `base` is the run-wide spend
/// at which the active grant began (`Some(0)` for the run's own grant;
/// `None` for a continuation steered at a checkpoint that stated no spend,
/// where all of `spent` is counted against it — the fail-closed bound).
pub fn amend_ceiling(budget_uj: u64, base: Option<u64>, spent: Option<u64>) -> (u64, Remainder) {
    match (spent, base) {
        (None, _) => (budget_uj, Remainder::Unknown { reason: UnknownReason::NotStated }),
        (Some(s), Some(b)) => {
            let r = budget_uj.saturating_sub(s.saturating_sub(b));
            (r, Remainder::Known { uj: r })
        }
        (Some(s), None) => (budget_uj.saturating_sub(s), Remainder::Unknown { reason: UnknownReason::BaseUnknown }),
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

/// The authority and tightening rules of an amendment, unsigned (shared by
/// the amending routine and every verifier). Returns the ceiling applied.
fn check_amendment_rules(
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
/// this checkpoint of this grant, that the amender is the issuer and not the
/// agent, and that it only tightens — at most the remainder where the
/// checkpoint stated its spend. `grant` is taken as the run's own grant
/// (spend under it starts at zero); inside a run with continuations use
/// [`Run::verify`], which knows where each continuation began.
pub fn verify_amendment(grant: &SignedGrant, cp: &SignedCheckpoint, am: &SignedAmendment) -> Result<u64, Error> {
    if !am.verify_signature() {
        return Err(Error::BadSignature { object: "Amendment", signer: am.amendment().amended_by.to_string() });
    }
    check_amendment_rules(grant, cp, am.amendment(), Some(0))
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
    if !am.verify_signature() {
        return Err(Error::BadSignature { object: "Amendment", signer: am.amendment().amended_by.to_string() });
    }
    check_amendment_rules(grant, cp, am.amendment(), base)
}

/// Checks a continuation grant against the amendment that names it and the
/// grant it continues (§4.7): the named id, the issuer's signature, the same
/// issuer, agent and chain position (`parent`), a budget no larger than the
/// amendment's, an expiry no later, and no wider on any other axis.
pub fn verify_continuation(steered: &SignedGrant, am: &Amendment, cont: &SignedGrant) -> Result<(), Error> {
    continuation_under(steered, am, cont, &KeyRing::new())
}

/// [`verify_continuation`] with the issuer's signature checked through
/// `keys` (a rotated steward's continuation is signed by its current key).
fn continuation_under(steered: &SignedGrant, am: &Amendment, cont: &SignedGrant, keys: &KeyRing) -> Result<(), Error> {
    let (s, c) = (steered.grant(), cont.grant());
    if cont.id() != am.continuation {
        return Err(steer(SteeringError::Continuation(format!(
            "grant {} is not the continuation {} the amendment names",
            cont.id(),
            am.continuation
        ))));
    }
    keys.verify_grant(cont)?;
    if c.issuer != s.issuer || c.subject != s.subject {
        return Err(steer(SteeringError::Continuation(format!(
            "a continuation is re-issued by the same issuer to the same agent; got {} → {}, expected {} → {}",
            c.issuer, c.subject, s.issuer, s.subject
        ))));
    }
    if c.parent != s.parent {
        return Err(steer(SteeringError::Continuation(
            "a continuation takes the steered grant's place: its parent must be the steered grant's parent".into(),
        )));
    }
    if c.budget_uj > am.budget_uj {
        return Err(steer(SteeringError::Widening(format!(
            "continuation budget {} µJ exceeds the amended {} µJ",
            c.budget_uj, am.budget_uj
        ))));
    }
    if let Some(e) = am.expiry {
        if c.expiry == 0 || c.expiry > e {
            return Err(steer(SteeringError::Widening(format!(
                "continuation expiry {} outlives the amended {e}",
                c.expiry
            ))));
        }
    }
    // Every other axis narrows as an attenuation would (§4.1) — except
    // depth, which a continuation keeps rather than spends (it is a
    // re-binding, not a hop): compared here on its own.
    let strip = |g: &Grant| Grant { delegate_depth: None, ..g.clone() };
    check_narrows(&strip(s), &strip(c))
        .map_err(|amp| steer(SteeringError::Widening(format!("continuation widens the steered grant: {amp}"))))?;
    if let Some(d) = s.delegate_depth {
        if c.delegate_depth.is_none_or(|cd| cd > d) {
            return Err(steer(SteeringError::Widening(format!(
                "continuation delegate_depth {:?} exceeds the steered grant's {d}",
                c.delegate_depth
            ))));
        }
    }
    Ok(())
}

// ----------------------------------------------------------------- records

/// One record of a run, in file order. (Unboxed: a run holds a handful of
/// grants, and a boxed variant would cost every caller a deref for nothing.)
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Record {
    /// The run's grant (record 0) or a continuation grant.
    Grant(SignedGrant),
    /// A checkpoint by the agent.
    Checkpoint(SignedCheckpoint),
    /// An amendment by the issuer.
    Amendment(SignedAmendment),
}

impl Record {
    /// `grant`, `checkpoint` or `amendment`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Grant(_) => "grant",
            Self::Checkpoint(_) => "checkpoint",
            Self::Amendment(_) => "amendment",
        }
    }

    /// The record's content id (a grant's id, a checkpoint's, an amendment's).
    pub fn id(&self) -> ContentId {
        match self {
            Self::Grant(g) => g.id(),
            Self::Checkpoint(c) => c.id(),
            Self::Amendment(a) => a.id(),
        }
    }

    /// The record's item in the run file: a one-entry map `{kind: object}`.
    pub fn to_value(&self) -> Value {
        let inner = match self {
            Self::Grant(g) => g.to_value(),
            Self::Checkpoint(c) => c.to_value(),
            Self::Amendment(a) => a.to_value(),
        };
        Value::Map(vec![(Value::text(self.kind()), inner)])
    }

    /// Reads a record item; an unknown kind is refused (closed world).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let Value::Map(entries) = v else { return Err(SchemaError::NotAMap { object: "RunRecord" }.into()) };
        let [(Value::Text(kind), inner)] = entries.as_slice() else {
            return Err(SchemaError::Invalid {
                object: "RunRecord",
                field: "kind",
                problem: "a record is a map with exactly one text key".into(),
            }
            .into());
        };
        match kind.as_str() {
            "grant" => Ok(Self::Grant(SignedGrant::from_value(inner)?)),
            "checkpoint" => Ok(Self::Checkpoint(SignedCheckpoint::from_value(inner)?)),
            "amendment" => Ok(Self::Amendment(SignedAmendment::from_value(inner)?)),
            other => Err(SchemaError::Unknown { object: "RunRecord", field: other.to_owned() }.into()),
        }
    }
}

// ------------------------------------------------------------------ report

/// A violation found in a run, naming the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The record's index (0 = the run's grant; the header is not counted).
    pub index: usize,
    /// `grant`, `checkpoint` or `amendment`.
    pub kind: &'static str,
    /// The record's content id.
    pub id: ContentId,
    /// The stable reason code (`Error::code`).
    pub code: &'static str,
    /// What was wrong, for people.
    pub message: String,
    /// Whether the record was still admitted (only `steer-overspent`: the
    /// claim is the agent's own and stands as evidence). A refused record
    /// has no effect on the run.
    pub admitted: bool,
}

/// One amendment applied at a checkpoint, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AmendmentRow {
    /// Record index.
    pub index: usize,
    /// Content id.
    pub id: ContentId,
    /// Who steered.
    pub amended_by: Did,
    /// The new budget.
    pub budget_uj: u64,
    /// The ceiling it had to respect at this checkpoint.
    pub ceiling_uj: u64,
    /// The new expiry, if any.
    pub expiry: Option<u64>,
    /// The new instruction-set commitment, if any.
    pub instructions: Option<ContentId>,
    /// The continuation grant it names.
    pub continuation: ContentId,
    /// Whether that continuation was found and verified.
    pub continuation_verified: bool,
}

/// One checkpoint of the run, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointRow {
    /// Record index.
    pub index: usize,
    /// `seq` as written.
    pub seq: u64,
    /// Content id.
    pub id: ContentId,
    /// The grant it cites.
    pub grant_id: ContentId,
    /// The state commitment.
    pub state: ContentId,
    /// Unix seconds.
    pub at: u64,
    /// The declared cumulative spend; `null` = not stated (never zero).
    pub spent: Option<Spent>,
    /// What the active grant has left here (`unknown` unless computable).
    pub remainder: Remainder,
    /// The most an amendment here may set (µJ); absent when refused.
    pub amend_ceiling_uj: Option<u64>,
    /// Amendments applied at this checkpoint.
    pub amendments: Vec<AmendmentRow>,
    /// `ok`, `finding` (admitted with a finding) or `refused`.
    pub verdict: &'static str,
    /// The codes of this record's findings.
    pub codes: Vec<&'static str>,
}

/// A grant of the run, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantRow {
    /// Record index.
    pub index: usize,
    /// Content id.
    pub id: ContentId,
    /// `run` (record 0) or `continuation`.
    pub role: &'static str,
    /// The issuer (the steward).
    pub issuer: Did,
    /// The subject (the agent).
    pub subject: Did,
    /// The budget.
    pub budget_uj: u64,
    /// Expiry (0 = never).
    pub expiry: u64,
    /// `ok` or `refused`.
    pub verdict: &'static str,
}

/// The verdict on a whole run (§4.7, C21): a serde-serialisable view a UI
/// can show, with every finding naming its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunReport {
    /// The run file format.
    pub format: &'static str,
    /// No findings.
    pub clean: bool,
    /// The run's grant (record 0).
    pub run_grant: ContentId,
    /// The agent (record 0's subject).
    pub agent: Did,
    /// The steward (record 0's issuer).
    pub issuer: Did,
    /// Record 0's budget.
    pub issued_budget_uj: u64,
    /// The grant the run now spends under, if any (none after a refused
    /// continuation, or while an amendment's continuation is missing).
    pub active_grant: Option<ContentId>,
    /// Its budget.
    pub active_budget_uj: Option<u64>,
    /// The latest admitted declared spend; `null` = never stated.
    pub latest_spent: Option<Spent>,
    /// What the active grant has left at the latest admitted checkpoint.
    pub remainder: Remainder,
    /// Number of records (the header is not counted).
    pub records: usize,
    /// Grants in order.
    pub grants: Vec<GrantRow>,
    /// Checkpoints in order, each with the amendments applied there.
    pub checkpoints: Vec<CheckpointRow>,
    /// Amendments whose checkpoint could not be found (a row per amendment
    /// refused before it could be attached).
    pub unattached_amendments: Vec<usize>,
    /// Every finding, in record order.
    pub findings: Vec<Finding>,
}

// ---------------------------------------------------------------- verifier

#[derive(Debug, Clone)]
struct LastCheckpoint {
    cp: SignedCheckpoint,
    row: usize,
    amended: bool,
}

#[derive(Debug, Clone)]
struct Pending {
    index: usize,
    am: SignedAmendment,
    steered: SignedGrant,
    row: usize,
}

/// The run verifier as a state machine over records: [`Run::verify`] feeds
/// it the whole run; the authoring routines feed it the new record after
/// the run, so both sides apply one implementation.
#[derive(Debug, Clone)]
struct Verifier {
    active: Option<SignedGrant>,
    /// Run-wide spend at which the active grant began.
    base: Option<u64>,
    last: Option<LastCheckpoint>,
    /// Highest admitted declared spend.
    high: Option<u64>,
    pending: Option<Pending>,
    report: RunReport,
    /// Key logs of rotated signers (§2.1).
    keys: KeyRing,
}

impl Verifier {
    fn start(grant: &SignedGrant, keys: KeyRing) -> Self {
        let g = grant.grant();
        let signed = keys.verify_grant(grant);
        let ok = signed.is_ok();
        let mut report = RunReport {
            format: RUN_FORMAT,
            clean: true,
            run_grant: grant.id(),
            agent: g.subject,
            issuer: g.issuer,
            issued_budget_uj: g.budget_uj,
            active_grant: None,
            active_budget_uj: None,
            latest_spent: None,
            remainder: Remainder::Unknown { reason: UnknownReason::NotStated },
            records: 1,
            grants: vec![GrantRow {
                index: 0,
                id: grant.id(),
                role: "run",
                issuer: g.issuer,
                subject: g.subject,
                budget_uj: g.budget_uj,
                expiry: g.expiry,
                verdict: if ok { "ok" } else { "refused" },
            }],
            checkpoints: Vec::new(),
            unattached_amendments: Vec::new(),
            findings: Vec::new(),
        };
        if let Err(e) = &signed {
            report.findings.push(finding(0, "grant", grant.id(), e, false));
        }
        Self { active: ok.then(|| grant.clone()), base: Some(0), last: None, high: None, pending: None, report, keys }
    }

    fn refuse(&mut self, index: usize, kind: &'static str, id: ContentId, e: &Error) {
        self.report.findings.push(finding(index, kind, id, e, false));
    }

    /// A pending amendment not followed by its continuation: refused here,
    /// and the steered grant stays superseded (fail closed).
    fn close_pending(&mut self) {
        if let Some(p) = self.pending.take() {
            self.refuse(
                p.index,
                "amendment",
                p.am.id(),
                &steer(SteeringError::Continuation(format!(
                    "the continuation grant {} does not follow the amendment",
                    p.am.amendment().continuation
                ))),
            );
        }
    }

    fn step(&mut self, index: usize, record: &Record) {
        self.report.records = index + 1;
        if !matches!(record, Record::Grant(_)) {
            self.close_pending();
        }
        match record {
            Record::Grant(g) => self.grant(index, g),
            Record::Checkpoint(c) => self.checkpoint(index, c),
            Record::Amendment(a) => self.amendment(index, a),
        }
    }

    fn grant(&mut self, index: usize, g: &SignedGrant) {
        let gr = g.grant();
        let mut row = GrantRow {
            index,
            id: g.id(),
            role: "continuation",
            issuer: gr.issuer,
            subject: gr.subject,
            budget_uj: gr.budget_uj,
            expiry: gr.expiry,
            verdict: "refused",
        };
        let Some(p) = self.pending.take() else {
            self.report.grants.push(row);
            self.refuse(
                index,
                "grant",
                g.id(),
                &steer(SteeringError::Continuation(
                    "a grant after the first must be the continuation named by the amendment just before it".into(),
                )),
            );
            return;
        };
        match continuation_under(&p.steered, p.am.amendment(), g, &self.keys) {
            Ok(()) => {
                row.verdict = "ok";
                // The continuation begins at the spend stated where it was
                // steered; unknown if that checkpoint stated none.
                let at = self.report.checkpoints.get(p.row).and_then(|r| r.spent.map(|s| s.uj));
                self.base = at;
                self.report.remainder = match at {
                    Some(_) => Remainder::Known { uj: gr.budget_uj },
                    None => Remainder::Unknown { reason: UnknownReason::BaseUnknown },
                };
                self.active = Some(g.clone());
                if let Some(r) = self.report.checkpoints.get_mut(p.row) {
                    if let Some(a) = r.amendments.iter_mut().find(|a| a.index == p.index) {
                        a.continuation_verified = true;
                    }
                }
            }
            Err(e) => self.refuse(index, "grant", g.id(), &e),
        }
        self.report.grants.push(row);
    }

    fn checkpoint_rules(&self, cp: &SignedCheckpoint) -> Result<(), Error> {
        let c = cp.checkpoint();
        let Some(active) = &self.active else {
            if !cp.verify_signature() {
                return Err(Error::BadSignature { object: "Checkpoint", signer: c.agent.to_string() });
            }
            return Err(steer(SteeringError::WrongGrant(format!(
                "checkpoint cites grant {}, but the run has no active grant here",
                c.grant_id
            ))));
        };
        verify_checkpoint(active, cp)?;
        let (want_seq, want_prev, last_at) = match &self.last {
            None => (0, None, 0),
            Some(l) => (l.cp.checkpoint().seq.saturating_add(1), Some(l.cp.id()), l.cp.checkpoint().at),
        };
        if c.seq != want_seq || c.prev != want_prev {
            return Err(steer(SteeringError::Sequence(format!(
                "checkpoint has seq {} prev {}; the run expects seq {want_seq} prev {}",
                c.seq,
                c.prev.map_or_else(|| "none".to_owned(), |p| p.to_hex()),
                want_prev.map_or_else(|| "none".to_owned(), |p| p.to_hex())
            ))));
        }
        if c.at < last_at {
            return Err(steer(SteeringError::Sequence(format!(
                "checkpoint at {} precedes the previous checkpoint's {last_at}",
                c.at
            ))));
        }
        match (self.high, c.spent) {
            (Some(before), None) => return Err(steer(SteeringError::SpendOmitted { before })),
            (Some(before), Some(s)) if s.uj < before => {
                return Err(steer(SteeringError::SpendDecreased { before, after: s.uj }))
            }
            _ => {}
        }
        Ok(())
    }

    fn checkpoint(&mut self, index: usize, cp: &SignedCheckpoint) {
        let c = cp.checkpoint();
        let mut row = CheckpointRow {
            index,
            seq: c.seq,
            id: cp.id(),
            grant_id: c.grant_id,
            state: c.state,
            at: c.at,
            spent: c.spent,
            // Replaced below once the checkpoint is admitted; a refused
            // checkpoint's claims are not judged.
            remainder: Remainder::Unknown { reason: UnknownReason::Refused },
            amend_ceiling_uj: None,
            amendments: Vec::new(),
            verdict: "refused",
            codes: Vec::new(),
        };
        if let Err(e) = self.checkpoint_rules(cp) {
            row.codes.push(e.code());
            self.report.checkpoints.push(row);
            self.refuse(index, "checkpoint", cp.id(), &e);
            return;
        }
        let Some(active) = &self.active else { return };
        let budget = active.grant().budget_uj;
        let (ceiling, remainder) = amend_ceiling(budget, self.base, c.spent.map(|s| s.uj));
        row.remainder = remainder;
        row.amend_ceiling_uj = Some(ceiling);
        row.verdict = "ok";
        if let (Some(s), Some(b)) = (c.spent, self.base) {
            let under = s.uj.saturating_sub(b);
            if under > budget {
                let e = steer(SteeringError::Overspent { spent_uj: under, budget_uj: budget });
                row.verdict = "finding";
                row.codes.push(e.code());
                self.report.findings.push(finding(index, "checkpoint", cp.id(), &e, true));
            }
        }
        if let Some(s) = c.spent {
            self.high = Some(s.uj);
            self.report.latest_spent = Some(s);
        }
        self.report.remainder = remainder;
        self.report.checkpoints.push(row);
        self.last = Some(LastCheckpoint { cp: cp.clone(), row: self.report.checkpoints.len() - 1, amended: false });
    }

    fn amendment_rules(&self, am: &SignedAmendment) -> Result<(SignedGrant, usize, u64), Error> {
        let a = am.amendment();
        self.keys.verify(&a.amended_by, "Amendment", &am.bytes, &am.signature)?;
        let Some(last) = &self.last else {
            return Err(steer(SteeringError::WrongCheckpoint(format!(
                "amendment cites checkpoint {}, but the run has no admitted checkpoint before it",
                a.checkpoint
            ))));
        };
        if a.checkpoint != last.cp.id() {
            return Err(steer(SteeringError::WrongCheckpoint(format!(
                "amendment cites checkpoint {}; an amendment steers the run's latest checkpoint {}",
                a.checkpoint,
                last.cp.id()
            ))));
        }
        let Some(active) = &self.active else {
            return Err(steer(SteeringError::WrongGrant(
                "the grant of this checkpoint was already steered; the run has no active grant here".into(),
            )));
        };
        if last.amended {
            return Err(steer(SteeringError::WrongGrant("this checkpoint was already amended".into())));
        }
        let ceiling = check_amendment_rules(active, &last.cp, a, self.base)?;
        Ok((active.clone(), last.row, ceiling))
    }

    fn amendment(&mut self, index: usize, am: &SignedAmendment) {
        match self.amendment_rules(am) {
            Err(e) => {
                let code = e.code();
                let row = self.last.as_ref().filter(|l| l.cp.id() == am.amendment().checkpoint).map(|l| l.row);
                match row.and_then(|r| self.report.checkpoints.get_mut(r)) {
                    Some(r) => r.codes.push(code),
                    None => self.report.unattached_amendments.push(index),
                }
                self.refuse(index, "amendment", am.id(), &e);
            }
            Ok((steered, row, ceiling)) => {
                let a = am.amendment();
                if let Some(r) = self.report.checkpoints.get_mut(row) {
                    r.amendments.push(AmendmentRow {
                        index,
                        id: am.id(),
                        amended_by: a.amended_by,
                        budget_uj: a.budget_uj,
                        ceiling_uj: ceiling,
                        expiry: a.expiry,
                        instructions: a.instructions,
                        continuation: a.continuation,
                        continuation_verified: false,
                    });
                }
                if let Some(l) = &mut self.last {
                    l.amended = true;
                }
                // The steered grant is superseded now (a soft revoke); the
                // run resumes only under a verified continuation.
                self.active = None;
                self.pending = Some(Pending { index, am: am.clone(), steered, row });
            }
        }
    }

    fn finish(mut self) -> RunReport {
        self.close_pending();
        self.report.findings.sort_by_key(|f| f.index);
        self.report.active_grant = self.active.as_ref().map(SignedGrant::id);
        self.report.active_budget_uj = self.active.as_ref().map(|g| g.grant().budget_uj);
        if self.active.is_none() {
            self.report.remainder = Remainder::Known { uj: 0 };
        }
        self.report.clean = self.report.findings.is_empty();
        self.report
    }
}

fn finding(index: usize, kind: &'static str, id: ContentId, e: &Error, admitted: bool) -> Finding {
    Finding { index, kind, id, code: e.code(), message: e.to_string(), admitted }
}

// --------------------------------------------------------------------- run

/// What the agent commits at a checkpoint ([`Run::checkpoint`]).
#[derive(Debug, Clone, Copy)]
pub struct CheckpointInput {
    /// The state commitment.
    pub state: ContentId,
    /// Unix seconds.
    pub at: u64,
    /// The cumulative spend, where the agent states it.
    pub spent: Option<Spent>,
    /// The nonce (fresh randomness when `None`).
    pub nonce: Option<[u8; 16]>,
}

/// What the issuer sets at an amendment ([`Run::amend`]).
#[derive(Debug, Clone, Default)]
pub struct AmendInput {
    /// The new budget (≤ the remainder; ≤ the issued budget where the
    /// checkpoint stated no spend).
    pub budget_uj: u64,
    /// A new, earlier expiry; the continuation carries it.
    pub expiry: Option<u64>,
    /// A new instruction-set commitment.
    pub instructions: Option<ContentId>,
    /// The amendment's nonce (fresh randomness when `None`).
    pub nonce: Option<[u8; 16]>,
    /// The continuation grant's nonce (fresh randomness when `None`).
    pub continuation_nonce: Option<[u8; 16]>,
    /// Caveats the continuation carries on top of the steered grant's
    /// (§4.9: a caveat only ever narrows, so adding one tightens).
    pub add_caveats: Vec<Caveat>,
}

/// An amendment as the issuer is about to sign it ([`Run::plan_amend`]):
/// the draft and its continuation grant, both unsigned, already checked by
/// the verifier's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmendPlan {
    /// The amendment to sign.
    pub amendment: Amendment,
    /// The continuation grant to sign.
    pub continuation: Grant,
    /// The most this amendment could have set (the remainder, or the issued
    /// budget where the checkpoint stated no spend).
    pub ceiling_uj: u64,
    /// What the steered grant has left, as the checkpoint lets one know it.
    pub remainder: Remainder,
}

/// One run: its grant, then checkpoints, amendments and continuations in
/// order (§4.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    records: Vec<Record>,
    /// The key logs its signers' signatures are checked with (§2.1); empty
    /// by default, so a rotated steward's records are refused unless the
    /// caller presents the steward's log ([`Run::with_key_ring`]).
    keys: KeyRing,
}

impl Run {
    /// A new run under `grant`.
    pub fn new(grant: SignedGrant) -> Self {
        Self { records: vec![Record::Grant(grant)], keys: KeyRing::new() }
    }

    /// Builds a run from records as given (record 0 must be a grant).
    pub fn from_records(records: Vec<Record>) -> Result<Self, Error> {
        match records.first() {
            Some(Record::Grant(_)) => Ok(Self { records, keys: KeyRing::new() }),
            _ => Err(steer(SteeringError::RunHeader("a run's first record is its grant".into()))),
        }
    }

    /// The records in order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The records, to take apart (tests, tools).
    pub fn into_records(self) -> Vec<Record> {
        self.records
    }

    /// The run's grant (record 0).
    pub fn grant(&self) -> Option<&SignedGrant> {
        match self.records.first() {
            Some(Record::Grant(g)) => Some(g),
            _ => None,
        }
    }

    /// Checks every grant and amendment signature with `keys` (§2.1): a
    /// steward that rotated its key signs under its current key, and its
    /// records verify only when its key log is in the ring. Verification
    /// and authoring onto the run both use it.
    #[must_use]
    pub fn with_key_ring(mut self, keys: KeyRing) -> Self {
        self.keys = keys;
        self
    }

    /// The key ring signatures are checked with.
    pub fn key_ring(&self) -> &KeyRing {
        &self.keys
    }

    fn verifier(&self) -> Option<Verifier> {
        let mut v = Verifier::start(self.grant()?, self.keys.clone());
        for (i, r) in self.records.iter().enumerate().skip(1) {
            v.step(i, r);
        }
        Some(v)
    }

    /// Verifies the whole run (§4.7, C21) and reports every finding.
    pub fn verify(&self) -> Result<RunReport, Error> {
        let v = self
            .verifier()
            .ok_or_else(|| steer(SteeringError::RunHeader("a run's first record is its grant".into())))?;
        Ok(v.finish())
    }

    /// The verifier after the run, refusing to author onto a run that is not
    /// clean (pending amendments are not yet findings here).
    fn clean_state(&self) -> Result<Verifier, Error> {
        let v = self
            .verifier()
            .ok_or_else(|| steer(SteeringError::RunHeader("a run's first record is its grant".into())))?;
        let refused: Vec<&Finding> = v.report.findings.iter().filter(|f| !f.admitted).collect();
        if let Some(f) = refused.first() {
            return Err(steer(SteeringError::RunNotClean {
                count: refused.len(),
                first: format!("record #{} {}: {}", f.index, f.kind, f.message),
            }));
        }
        Ok(v)
    }

    /// The agent commits a checkpoint (§4.7): seq, prev and the active grant
    /// come from the run; the same rules as the verifier refuse a checkpoint
    /// by anyone but the agent, a decreasing spend or an omitted one.
    pub fn checkpoint(&mut self, agent: &Keypair, input: CheckpointInput) -> Result<SignedCheckpoint, Error> {
        let mut v = self.clean_state()?;
        if v.pending.is_some() {
            return Err(steer(SteeringError::Continuation(
                "the run awaits the continuation grant of its last amendment".into(),
            )));
        }
        let active = v.active.clone().ok_or_else(|| {
            steer(SteeringError::WrongGrant("the run has no active grant to checkpoint under".into()))
        })?;
        if agent.did() != active.grant().subject {
            return Err(steer(SteeringError::NotAgent {
                author: agent.did().to_string(),
                subject: active.grant().subject.to_string(),
            }));
        }
        let (seq, prev) = match &v.last {
            None => (0, None),
            Some(l) => (l.cp.checkpoint().seq.saturating_add(1), Some(l.cp.id())),
        };
        let cp = Checkpoint {
            grant_id: active.id(),
            agent: agent.did(),
            seq,
            prev,
            state: input.state,
            at: input.at,
            spent: input.spent,
            nonce: input.nonce.unwrap_or_else(crate::identity::fresh_nonce),
        }
        .sign(agent)?;
        v.checkpoint_rules(&cp)?;
        let n = v.report.findings.len();
        let record = Record::Checkpoint(cp.clone());
        v.step(self.records.len(), &record);
        // An admitted finding (an overspend the agent truthfully declares)
        // does not stop the agent from recording it.
        if let Some(f) = v.report.findings.iter().skip(n).find(|f| !f.admitted) {
            return Err(steer(SteeringError::RunNotClean { count: 1, first: f.message.clone() }));
        }
        self.records.push(record);
        Ok(cp)
    }

    /// Plans the issuer's amendment at the run's latest checkpoint (§4.7)
    /// without signing anything: the continuation grant (same issuer, agent
    /// and chain position, the amended budget and expiry, the steered
    /// grant's caveats plus any added) and the amendment naming it, checked
    /// by exactly the verifier's rules — so a widening, an amount above the
    /// remainder or an amender who is not the issuer is refused here, before
    /// a signature exists.
    pub fn plan_amend(&self, issuer: &Did, input: &AmendInput) -> Result<AmendPlan, Error> {
        let v = self.clean_state()?;
        let active = v.active.clone().ok_or_else(|| {
            steer(SteeringError::WrongGrant("the run has no active grant to amend (already steered?)".into()))
        })?;
        let last = v.last.clone().ok_or_else(|| {
            steer(SteeringError::WrongCheckpoint("an amendment cites a checkpoint; the run has none yet".into()))
        })?;
        let g = active.grant();
        let mut caveats = g.caveats.clone();
        caveats.extend(input.add_caveats.iter().cloned());
        let continuation = Grant {
            budget_uj: input.budget_uj,
            expiry: input.expiry.unwrap_or(g.expiry),
            nonce: input.continuation_nonce.unwrap_or_else(crate::identity::fresh_nonce),
            caveats,
            ..g.clone()
        };
        let draft = Amendment {
            grant_id: active.id(),
            checkpoint: last.cp.id(),
            amended_by: issuer.clone(),
            budget_uj: input.budget_uj,
            expiry: input.expiry,
            instructions: input.instructions,
            continuation: continuation.id(),
            nonce: input.nonce.unwrap_or_else(crate::identity::fresh_nonce),
        };
        // The amending side's check: exactly the verifier's rules, before
        // any signature exists.
        check_amendment_rules(&active, &last.cp, &draft, v.base)?;
        // The continuation is checked as the verifier will check it (no
        // wider on any axis than the steered grant), on the unsigned draft.
        check_narrows(
            &Grant { delegate_depth: None, ..g.clone() },
            &Grant { delegate_depth: None, ..continuation.clone() },
        )
        .map_err(|amp| steer(SteeringError::Widening(format!("continuation widens the steered grant: {amp}"))))?;
        let stated = last.cp.checkpoint().spent.map(|s| s.uj);
        let (ceiling_uj, remainder) = amend_ceiling(g.budget_uj, v.base, stated);
        Ok(AmendPlan { amendment: draft, continuation, ceiling_uj, remainder })
    }

    /// The issuer amends the run at its latest checkpoint (§4.7): plans it
    /// ([`Run::plan_amend`], refused before anything is signed), signs the
    /// continuation grant and the amendment naming it, and appends both.
    pub fn amend(&mut self, issuer: &Keypair, input: AmendInput) -> Result<(SignedAmendment, SignedGrant), Error> {
        self.amend_signed(&issuer.did(), &input, issuer, |g| g.sign(issuer))
    }

    /// [`Run::amend`] by a steward that rotated its key (§2.1 with §4.7):
    /// the amendment and its continuation name `identity` (the steward's
    /// inception DID) and are signed by `current`, which must be the key
    /// that controls it in this run's key ring ([`Run::with_key_ring`]);
    /// a superseded key is refused `rotation-superseded-key`.
    pub fn amend_as(
        &mut self,
        identity: &Did,
        current: &Keypair,
        input: AmendInput,
    ) -> Result<(SignedAmendment, SignedGrant), Error> {
        let state = self
            .keys
            .get(identity)
            .cloned()
            .ok_or_else(|| Error::BadSignature { object: "Amendment", signer: identity.to_string() })?;
        self.amend_signed(identity, &input, current, |g| crate::rotation::issue_grant(g, current, &state))
    }

    fn amend_signed(
        &mut self,
        issuer: &Did,
        input: &AmendInput,
        signer: &Keypair,
        sign_grant: impl FnOnce(Grant) -> Result<SignedGrant, Error>,
    ) -> Result<(SignedAmendment, SignedGrant), Error> {
        let plan = self.plan_amend(issuer, input)?;
        let mut v = self.clean_state()?;
        let cont = sign_grant(plan.continuation)?;
        let am = plan.amendment.sign(signer);
        let n = v.report.findings.len();
        let (ra, rg) = (Record::Amendment(am.clone()), Record::Grant(cont.clone()));
        v.step(self.records.len(), &ra);
        v.step(self.records.len() + 1, &rg);
        if let Some(f) = v.report.findings.iter().skip(n).find(|f| !f.admitted) {
            return Err(steer(SteeringError::RunNotClean { count: 1, first: f.message.clone() }));
        }
        self.records.push(ra);
        self.records.push(rg);
        Ok((am, cont))
    }

    /// Appends a record as given (no checks: a verifier judges it later).
    pub fn push(&mut self, record: Record) {
        self.records.push(record);
    }

    /// The run file: the header item, then one item per record.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = header_value().encode();
        for r in &self.records {
            r.to_value().encode_into(&mut out);
        }
        out
    }

    /// Reads a run file strictly: a `jcp-run/1` header, then canonical
    /// records, the first of which is a grant. Any refusal names the record
    /// index (after the header) and the byte offset where its item starts.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let (hv, mut off) =
            cbor::decode_prefix(bytes, cbor::Profile::Strict).map_err(|e| run_file(None, 0, Error::Decode(e)))?;
        read_header(&hv).map_err(|e| run_file(None, 0, e))?;
        let mut records = Vec::new();
        while off < bytes.len() {
            let index = records.len();
            let rest = bytes.get(off..).unwrap_or_default();
            let (v, used) = cbor::decode_prefix(rest, cbor::Profile::Strict)
                .map_err(|e| run_file(Some(index), off, Error::Decode(e)))?;
            let r = Record::from_value(&v).map_err(|e| run_file(Some(index), off, e))?;
            if index == 0 && !matches!(r, Record::Grant(_)) {
                return Err(run_file(
                    Some(0),
                    off,
                    steer(SteeringError::RunHeader(format!("a run's first record is its grant, not a {}", r.kind()))),
                ));
            }
            records.push(r);
            off += used;
        }
        if records.is_empty() {
            return Err(steer(SteeringError::RunHeader("the run file holds no grant".into())));
        }
        Ok(Self { records, keys: KeyRing::new() })
    }

    /// Writes the run file.
    pub fn write(&self, path: &std::path::Path) -> Result<(), Error> {
        std::fs::write(path, self.to_bytes())
            .map_err(|e| steer(SteeringError::Io(format!("writing {}: {e}", path.display()))))
    }

    /// Reads and decodes a run file ([`Run::from_bytes`]).
    pub fn read(path: &std::path::Path) -> Result<Self, Error> {
        let bytes =
            std::fs::read(path).map_err(|e| steer(SteeringError::Io(format!("reading {}: {e}", path.display()))))?;
        Self::from_bytes(&bytes)
    }
}

fn run_file(index: Option<usize>, offset: usize, e: Error) -> Error {
    steer(SteeringError::RunFile { index, offset, source: Box::new(e) })
}

fn header_value() -> Value {
    cbor::map([("format", Some(Value::text(RUN_FORMAT)))])
}

fn read_header(v: &Value) -> Result<(), Error> {
    let mut f = Fields::new("RunHeader", v)?;
    let format = f.text("format")?;
    if format != RUN_FORMAT {
        return Err(steer(SteeringError::RunHeader(format!("format {format:?} is not {RUN_FORMAT:?}"))));
    }
    f.finish()?;
    Ok(())
}

/// The fuzz invariant of the run file decoder (`fuzz/fuzz_targets/run_decode.rs`
/// and the corpus replay test): decoding never panics; anything accepted
/// re-encodes to exactly the input and verifies without panicking, and the
/// verifier's findings all name a record that exists.
#[doc(hidden)]
pub fn fuzz_run_decode(data: &[u8]) -> Result<(), String> {
    let Ok(run) = Run::from_bytes(data) else { return Ok(()) };
    if run.to_bytes() != data {
        return Err("accepted run file did not re-encode to its bytes".into());
    }
    let report = run.verify().map_err(|e| format!("decoded run did not verify structurally: {e}"))?;
    if report.records != run.records().len() {
        return Err("report counts a different number of records".into());
    }
    for f in &report.findings {
        match run.records().get(f.index) {
            Some(r) if r.id() == f.id => {}
            _ => return Err(format!("finding names record #{} that does not match", f.index)),
        }
    }
    if report.clean != report.findings.is_empty() {
        return Err("clean disagrees with findings".into());
    }
    Ok(())
}
