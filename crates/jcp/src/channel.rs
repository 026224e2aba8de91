//! Spec §4.5 "Receipt-settled budget channels" (OPTIONAL profile, C17):
//! enforcement points spend optimistically against one grant and settle by
//! exchanging signed statements of their cumulative local spend.
//!
//! - [`Statement`] / [`SignedStatement`]: `{grant_id, point, spent_uj, seq}`,
//!   signed by `point` over its canonical det-CBOR bytes.
//! - [`Channel`]: per grant, the member points and each point's last
//!   admitted statement. [`Channel::admit`] verifies the signature and
//!   refuses a statement for another grant, from a non-member, stale (`seq`
//!   not strictly increasing) or regressing (`spent_uj` decreasing); a
//!   refusal leaves the channel unchanged.
//! - [`Ledger`]: the merged ledger after settlement: each point's settled
//!   spend and the total against the grant's budget.
//! - [`OverdraftProof`]: the grant, the member set and the signed
//!   statements whose sum exceeds the budget; [`OverdraftProof::verify`]
//!   recomputes the overdraft from the signatures alone, offline.
//! - [`ChannelPoint`]: one enforcement point's side — its own statements
//!   and its peers' settled spend, which the [`crate::decision::Gate`]
//!   counts against the shared budget from then on.

use std::collections::{BTreeMap, BTreeSet};

use crate::cbor::{self, ContentId, Fields, Value};
use crate::error::Error;
use crate::grant::SignedGrant;
use crate::identity::{Did, Keypair};

#[cfg(feature = "vectors")]
pub mod vectors;

/// A point's signed claim of its cumulative spend against a grant (§4.5).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Statement {
    /// The grant the channel spends against.
    pub grant_id: ContentId,
    /// The enforcement point making the claim.
    pub point: Did,
    /// Cumulative µJ allowed at this point since the channel opened.
    pub spent_uj: u64,
    /// Strictly increasing per point.
    pub seq: u64,
}

impl Statement {
    /// Canonical CBOR form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("grant_id", Some(Value::text(self.grant_id.to_hex()))),
            ("point", Some(Value::text(self.point.to_did_string()))),
            ("spent_uj", Some(Value::Uint(self.spent_uj))),
            ("seq", Some(Value::Uint(self.seq))),
        ])
    }

    /// Reads the canonical form (closed key set).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("Statement", v)?;
        let grant_id = f.cid("grant_id")?;
        let point = Did::parse(f.text("point")?)?;
        let spent_uj = f.uint("spent_uj")?;
        let seq = f.uint("seq")?;
        f.finish()?;
        Ok(Self { grant_id, point, spent_uj, seq })
    }

    /// Signs as `point`; the key must be the statement's `point`.
    pub fn sign(self, point: &Keypair) -> Result<SignedStatement, Error> {
        if point.did() != self.point {
            return Err(Error::StatementSigner { point: self.point.to_string(), signer: point.did().to_string() });
        }
        let bytes = self.to_value().encode();
        let signature = point.sign(&bytes);
        Ok(SignedStatement { statement: self, bytes, signature })
    }
}

/// A statement with its point's signature, as it travels: `{statement, sig}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedStatement {
    statement: Statement,
    bytes: Vec<u8>,
    signature: [u8; 64],
}

impl SignedStatement {
    /// The statement (not yet verified).
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    /// The signature.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// The statement's content id (of its canonical bytes).
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.bytes)
    }

    /// Checks the point's signature over the canonical bytes (a forged
    /// statement is refused `bad-signature`).
    pub fn verify(&self) -> Result<(), Error> {
        if self.statement.point.verify(&self.bytes, &self.signature) {
            Ok(())
        } else {
            Err(Error::BadSignature { object: "Statement", signer: self.statement.point.to_string() })
        }
    }

    /// The wire form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("statement", Some(self.statement.to_value())),
            ("sig", Some(Value::Bytes(self.signature.to_vec()))),
        ])
    }

    /// Canonical bytes of the wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the wire form (the signature is checked on admission).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("SignedStatement", v)?;
        let sv = f.req("statement")?;
        let signature = f.bytes_n::<64>("sig")?;
        f.finish()?;
        Ok(Self { statement: Statement::from_value(sv)?, bytes: sv.encode(), signature })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }

    /// A copy with another claim under the same signature (what a forger
    /// holds): for tests and published refusal vectors (feature `testing`).
    #[cfg(feature = "testing")]
    #[must_use]
    pub fn with_claim_for_tests(&self, spent_uj: u64, seq: u64) -> Self {
        let statement = Statement { spent_uj, seq, ..self.statement.clone() };
        let bytes = statement.to_value().encode();
        Self { statement, bytes, signature: self.signature }
    }
}

/// One point's line in the merged ledger.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LedgerLine {
    /// The point.
    pub point: Did,
    /// Its settled spend (its last admitted statement; 0 if none).
    pub settled_uj: u64,
    /// That statement's `seq` (`None`: no statement admitted yet).
    pub seq: Option<u64>,
}

/// The merged ledger after settlement (§4.5): each point's settled spend and
/// the total against the grant's budget.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Ledger {
    /// The grant.
    pub grant_id: ContentId,
    /// Its joule ceiling.
    pub budget_uj: u64,
    /// One line per member point, in point order.
    pub points: Vec<LedgerLine>,
    /// The sum of the settled spends.
    pub total_uj: u128,
    /// How far the total is past the budget (0 when within it).
    pub overdraft_uj: u128,
}

impl Ledger {
    /// Whether the settled total exceeds the budget.
    pub fn is_overdrawn(&self) -> bool {
        self.overdraft_uj > 0
    }
}

/// A budget channel's state (§4.5): the grant, its member points, and per
/// point the last admitted signed statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    grant: SignedGrant,
    members: BTreeSet<Did>,
    last: BTreeMap<Did, SignedStatement>,
}

impl Channel {
    /// Opens a channel on `grant` among `members`. The grant's signature
    /// must verify: a channel on a forged grant settles nothing.
    pub fn open(grant: SignedGrant, members: impl IntoIterator<Item = Did>) -> Result<Self, Error> {
        if !grant.verify_signature() {
            return Err(Error::BadSignature { object: "Grant", signer: grant.grant().issuer.to_string() });
        }
        Ok(Self { grant, members: members.into_iter().collect(), last: BTreeMap::new() })
    }

    /// The grant.
    pub fn grant(&self) -> &SignedGrant {
        &self.grant
    }

    /// The member points.
    pub fn members(&self) -> &BTreeSet<Did> {
        &self.members
    }

    /// The last admitted statement of `point`.
    pub fn last(&self, point: &Did) -> Option<&SignedStatement> {
        self.last.get(point)
    }

    /// Every point's last admitted statement, in point order.
    pub fn statements(&self) -> impl Iterator<Item = &SignedStatement> {
        self.last.values()
    }

    /// `point`'s settled spend: its last admitted statement's, or 0.
    pub fn settled(&self, point: &Did) -> u64 {
        self.last.get(point).map_or(0, |s| s.statement.spent_uj)
    }

    /// Whether `s` would be admitted, changing nothing (§4.5): the
    /// signature verifies; it names this channel's grant; its point is a
    /// member; its `seq` is above the point's last; its `spent_uj` is not
    /// below the point's last.
    pub fn check(&self, s: &SignedStatement) -> Result<(), Error> {
        s.verify()?;
        let st = &s.statement;
        if st.grant_id != self.grant.id() {
            return Err(Error::StatementWrongGrant { expected: self.grant.id().to_hex(), got: st.grant_id.to_hex() });
        }
        if !self.members.contains(&st.point) {
            return Err(Error::StatementNotMember { point: st.point.to_string() });
        }
        if let Some(prev) = self.last.get(&st.point) {
            let p = &prev.statement;
            if st.seq <= p.seq {
                return Err(Error::StatementStale { point: st.point.to_string(), last_seq: p.seq, seq: st.seq });
            }
            if st.spent_uj < p.spent_uj {
                return Err(Error::StatementRegressing {
                    point: st.point.to_string(),
                    last_uj: p.spent_uj,
                    spent_uj: st.spent_uj,
                });
            }
        }
        Ok(())
    }

    /// Admits `s` after [`Channel::check`]; a refusal changes nothing.
    pub fn admit(&mut self, s: &SignedStatement) -> Result<(), Error> {
        self.check(s)?;
        self.last.insert(s.statement.point, s.clone());
        Ok(())
    }

    /// The merged ledger: each member's settled spend, the total against
    /// the grant's budget.
    pub fn ledger(&self) -> Ledger {
        let points: Vec<LedgerLine> = self
            .members
            .iter()
            .map(|p| LedgerLine {
                point: *p,
                settled_uj: self.settled(p),
                seq: self.last.get(p).map(|s| s.statement.seq),
            })
            .collect();
        let total_uj: u128 = points.iter().map(|l| u128::from(l.settled_uj)).sum();
        let budget_uj = self.grant.grant().budget_uj;
        Ledger {
            grant_id: self.grant.id(),
            budget_uj,
            points,
            total_uj,
            overdraft_uj: total_uj.saturating_sub(u128::from(budget_uj)),
        }
    }

    /// The proof of an overdraft, when the settled total exceeds the budget.
    pub fn overdraft(&self) -> Option<OverdraftProof> {
        self.ledger().is_overdrawn().then(|| OverdraftProof {
            grant: self.grant.clone(),
            members: self.members.iter().copied().collect(),
            statements: self.last.values().cloned().collect(),
        })
    }
}

/// What a verified [`OverdraftProof`] establishes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Overdraft {
    /// The grant.
    pub grant_id: ContentId,
    /// Its joule ceiling.
    pub budget_uj: u64,
    /// The sum the signed statements claim.
    pub total_uj: u128,
    /// `total_uj - budget_uj` (> 0).
    pub overdraft_uj: u128,
    /// Each point's signed claim, in point order.
    pub points: Vec<LedgerLine>,
}

/// An overdraft, provable from the signed statements (§4.5): the grant,
/// the channel's member points, and one signed statement per point whose
/// spends sum past the grant's budget. Each statement is a lower bound of
/// what its point allowed (spend is cumulative), so the sum is too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverdraftProof {
    /// The grant (its budget is the ceiling that was passed).
    pub grant: SignedGrant,
    /// The channel's member points (the auditor compares them with its own
    /// configuration, as it does trust roots).
    pub members: Vec<Did>,
    /// One signed statement per point.
    pub statements: Vec<SignedStatement>,
}

impl OverdraftProof {
    /// Recomputes the overdraft from the signatures alone: the grant's
    /// signature verifies; every statement's signature verifies, names the
    /// grant, comes from a listed member, and no point appears twice; the
    /// claimed spends sum past the budget. Anything else is refused.
    pub fn verify(&self) -> Result<Overdraft, Error> {
        if !self.grant.verify_signature() {
            return Err(Error::BadSignature { object: "Grant", signer: self.grant.grant().issuer.to_string() });
        }
        let members: BTreeSet<Did> = self.members.iter().copied().collect();
        let mut claims: BTreeMap<Did, &Statement> = BTreeMap::new();
        for s in &self.statements {
            s.verify()?;
            let st = &s.statement;
            if st.grant_id != self.grant.id() {
                return Err(Error::StatementWrongGrant {
                    expected: self.grant.id().to_hex(),
                    got: st.grant_id.to_hex(),
                });
            }
            if !members.contains(&st.point) {
                return Err(Error::StatementNotMember { point: st.point.to_string() });
            }
            if claims.insert(st.point, st).is_some() {
                return Err(Error::StatementDuplicate { point: st.point.to_string() });
            }
        }
        let total_uj: u128 = claims.values().map(|s| u128::from(s.spent_uj)).sum();
        let budget_uj = self.grant.grant().budget_uj;
        if total_uj <= u128::from(budget_uj) {
            return Err(Error::OverdraftUnproven { total_uj, budget_uj });
        }
        Ok(Overdraft {
            grant_id: self.grant.id(),
            budget_uj,
            total_uj,
            overdraft_uj: total_uj - u128::from(budget_uj),
            points: claims
                .values()
                .map(|s| LedgerLine { point: s.point, settled_uj: s.spent_uj, seq: Some(s.seq) })
                .collect(),
        })
    }

    /// The wire form: `{jcp_overdraft: "channel/1", grant, members, statements}`.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("jcp_overdraft", Some(Value::text(OVERDRAFT_PROFILE))),
            ("grant", Some(self.grant.to_value())),
            ("members", Some(Value::Array(self.members.iter().map(|d| Value::text(d.to_did_string())).collect()))),
            ("statements", Some(Value::Array(self.statements.iter().map(SignedStatement::to_value).collect()))),
        ])
    }

    /// Canonical bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the wire form (nothing verified: see [`OverdraftProof::verify`]).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("OverdraftProof", v)?;
        let tag = f.text("jcp_overdraft")?;
        if tag != OVERDRAFT_PROFILE {
            return Err(f.error("jcp_overdraft", format!("{tag:?} is not {OVERDRAFT_PROFILE:?}")).into());
        }
        let grant = SignedGrant::from_value(f.req("grant")?)?;
        let members = f.text_array("members")?.iter().map(|s| Did::parse(s)).collect::<Result<Vec<_>, _>>()?;
        if members.iter().collect::<BTreeSet<_>>().len() != members.len() {
            return Err(f.error("members", "a member point is listed twice").into());
        }
        let Value::Array(items) = f.req("statements")? else {
            return Err(f.error("statements", "expected an array of signed statements").into());
        };
        let statements = items.iter().map(SignedStatement::from_value).collect::<Result<Vec<_>, _>>()?;
        f.finish()?;
        Ok(Self { grant, members, statements })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}

/// The overdraft proof's format tag.
pub const OVERDRAFT_PROFILE: &str = "channel/1";

/// One enforcement point's side of a channel: the channel (its own
/// statements and its peers' admitted ones) and which member it is. The
/// point's local spend is the gate's; its peers' settled spend is counted
/// against the shared budget from the moment a statement is admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelPoint {
    channel: Channel,
    me: Did,
}

impl ChannelPoint {
    /// Joins a channel on `grant` as `me`, with `peers` (`me` is a member
    /// whether listed or not).
    pub fn join(grant: SignedGrant, me: Did, peers: impl IntoIterator<Item = Did>) -> Result<Self, Error> {
        let channel = Channel::open(grant, peers.into_iter().chain([me]))?;
        Ok(Self { channel, me })
    }

    /// The channel.
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// This point.
    pub fn me(&self) -> Did {
        self.me
    }

    /// The sum of the peers' settled spend (every member but this point).
    pub fn peers_settled_uj(&self) -> u64 {
        self.channel
            .members
            .iter()
            .filter(|p| **p != self.me)
            .fold(0u64, |acc, p| acc.saturating_add(self.channel.settled(p)))
    }

    /// Checks a peer's statement, changing nothing: [`Channel::check`], and
    /// not one of this point's own (its own spend is counted locally; a
    /// statement of its own arriving from outside is refused
    /// `statement-from-self`).
    pub fn check_peer(&self, s: &SignedStatement) -> Result<(), Error> {
        self.channel.check(s)?;
        if s.statement.point == self.me {
            return Err(Error::StatementFromSelf { point: self.me.to_string() });
        }
        Ok(())
    }

    /// Admits a peer's statement after [`ChannelPoint::check_peer`].
    pub fn admit_peer(&mut self, s: &SignedStatement) -> Result<(), Error> {
        self.check_peer(s)?;
        self.channel.last.insert(s.statement.point, s.clone());
        Ok(())
    }

    /// The statement this point would sign now for `local_spent_uj`: the
    /// next `seq` after its last own statement (0 first).
    pub fn next_statement(&self, local_spent_uj: u64) -> Statement {
        let seq = self.channel.last.get(&self.me).map_or(0, |s| s.statement.seq.saturating_add(1));
        Statement { grant_id: self.channel.grant.id(), point: self.me, spent_uj: local_spent_uj, seq }
    }

    /// This point's last own statement.
    pub fn last_own(&self) -> Option<&SignedStatement> {
        self.channel.last.get(&self.me)
    }

    /// Records one of this point's own signed statements (issued now, or
    /// replayed from the record): it must be this point's, and pass the
    /// channel's checks.
    pub fn note_own(&mut self, s: &SignedStatement) -> Result<(), Error> {
        self.check_own(s)?;
        self.channel.last.insert(s.statement.point, s.clone());
        Ok(())
    }

    /// Whether [`ChannelPoint::note_own`] would take `s`, changing nothing.
    pub fn check_own(&self, s: &SignedStatement) -> Result<(), Error> {
        if s.statement.point != self.me {
            return Err(Error::StatementSigner { point: s.statement.point.to_string(), signer: self.me.to_string() });
        }
        self.channel.check(s)
    }
}

/// One statement's fate in an [`audit`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditStep {
    /// Its position among the statements given (0-based).
    pub index: usize,
    /// The statement's content id.
    pub id: ContentId,
    /// What it claims.
    pub claim: Statement,
    /// `admitted`, or the refusal's code.
    pub code: &'static str,
    /// The refusal's message (empty when admitted).
    pub message: String,
}

/// What [`audit`] found: each statement's fate, the merged ledger, and —
/// when the settled total exceeds the budget — the overdraft, verified.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AuditReport {
    /// Whether the member set was given or taken from the statements.
    pub members_given: bool,
    /// Each statement, in the order given.
    pub steps: Vec<AuditStep>,
    /// How many were refused.
    pub refused: usize,
    /// The merged ledger after every admitted statement.
    pub ledger: Ledger,
    /// The overdraft, as its proof verified it.
    pub overdraft: Option<Overdraft>,
    /// The proof itself (not serialized: its bytes are written by the caller).
    #[serde(skip)]
    pub proof: Option<OverdraftProof>,
}

impl AuditReport {
    /// Clean: nothing refused and no overdraft.
    pub fn is_clean(&self) -> bool {
        self.refused == 0 && self.overdraft.is_none()
    }
}

/// Admits `statements` in order into a channel on `grant` (§4.5), and
/// reports each one's fate, the merged ledger and any overdraft with its
/// proof (verified as an offline verifier would). With no `members`, the
/// points the statements name are the members (an auditor that knows the
/// configured set passes it, and a statement from outside it is refused).
pub fn audit(
    grant: SignedGrant,
    members: Option<Vec<Did>>,
    statements: &[SignedStatement],
) -> Result<AuditReport, Error> {
    let members_given = members.is_some();
    let members = members.unwrap_or_else(|| statements.iter().map(|s| s.statement.point).collect());
    let mut ch = Channel::open(grant, members)?;
    let mut steps = Vec::with_capacity(statements.len());
    for (index, s) in statements.iter().enumerate() {
        let (code, message) = match ch.admit(s) {
            Ok(()) => ("admitted", String::new()),
            Err(e) => (e.code(), e.to_string()),
        };
        steps.push(AuditStep { index, id: s.id(), claim: s.statement.clone(), code, message });
    }
    let refused = steps.iter().filter(|s| s.code != "admitted").count();
    let proof = ch.overdraft();
    let overdraft = proof.as_ref().map(OverdraftProof::verify).transpose()?;
    Ok(AuditReport { members_given, steps, refused, ledger: ch.ledger(), overdraft, proof })
}

/// A channel object read from bytes: a signed statement or an overdraft proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Artifact {
    /// A signed statement.
    Statement(Box<SignedStatement>),
    /// An overdraft proof.
    Proof(Box<OverdraftProof>),
}

impl Artifact {
    /// Decodes strict canonical bytes: an overdraft proof (its map carries
    /// `jcp_overdraft`) or else a signed statement.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let v = cbor::decode_strict(bytes)?;
        if v.get("jcp_overdraft").is_some() {
            Ok(Self::Proof(Box::new(OverdraftProof::from_value(&v)?)))
        } else {
            Ok(Self::Statement(Box::new(SignedStatement::from_value(&v)?)))
        }
    }
}
