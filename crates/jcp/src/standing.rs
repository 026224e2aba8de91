//! Spec §4.6: standing grants — bounded authority for event-triggered work (C20).
//!
//! A **standing grant** is an ordinary grant (§4) its issuer holds
//! (`subject == issuer`: the authority a trigger spends never leaves the
//! issuer), plus a signed [`MintPolicy`] bound to it by id and signed by its
//! issuer: the **event class** that may fire it (the content id of a canonical
//! [`EventClass`] descriptor), the **per-firing budget** and the **maximum
//! number of firings**. The issuer's automation (the enforcement point that
//! holds the issuer's key) carries a [`MintLedger`] — firing count and
//! cumulative minted budget — and each accepted firing mints one fresh child
//! through the ordinary attenuation path ([`crate::grant::attenuate`]),
//! signed by the standing grant's holder (= its issuer) and naming the worker
//! as subject, so the child chain-verifies (§4.2) to the standing grant.
//!
//! A refused firing (wrong class, count exhausted, cumulative budget past the
//! grant, a policy not bound to this grant or not validly signed by its
//! issuer) leaves the ledger unchanged: [`MintLedger::fire`] changes it only
//! after the child is minted. Reading and its rationale: docs/decisions.md,
//! "§4.6 standing grants".
//!
//! On disk a policy travels as `{policy, sig}` and a ledger is one canonical
//! map `{format: "jcp-mint-ledger/1", grant_id, policy_id, firings, spent_uj}`.

use serde::Serialize;

use crate::cbor::{self, ContentId, Fields, Value};
use crate::error::{Error, Refusal};
use crate::grant::{attenuate, Attenuation, SignedGrant};
use crate::identity::{Did, Keypair};

#[cfg(feature = "vectors")]
pub mod vectors;

/// The mint ledger file's format string.
pub const LEDGER_FORMAT: &str = "jcp-mint-ledger/1";

fn ser_hex16<S: serde::Serializer>(b: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(b))
}

// ------------------------------------------------------------------ event class

/// A canonical event-class descriptor: where a trigger comes from and what
/// kind of event it is. Its content id is what a policy permits, so a webhook
/// for one source cannot spend a grant meant for another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventClass {
    /// The event's source (e.g. a repository, a queue, a schedule name).
    pub source: String,
    /// The kind of event from that source (e.g. `issue.opened`).
    pub kind: String,
}

impl EventClass {
    /// Canonical CBOR form `{kind, source}`.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("source", Some(Value::text(self.source.as_str()))),
            ("kind", Some(Value::text(self.kind.as_str()))),
        ])
    }

    /// The class's content id (what a [`MintPolicy`] names).
    pub fn id(&self) -> ContentId {
        ContentId::of(&self.to_value())
    }
}

// ------------------------------------------------------------------ policy

/// A mint policy (§4.6), unsigned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MintPolicy {
    /// The standing grant this policy is bound to.
    pub grant_id: ContentId,
    /// The signer: must be the standing grant's issuer.
    pub issuer: Did,
    /// The content id of the [`EventClass`] permitted to fire it.
    pub event_class: ContentId,
    /// The most one firing may mint (µJ): no larger than the grant's budget.
    pub per_firing_uj: u64,
    /// The most firings ever (at least 1).
    pub max_firings: u64,
    /// 16 random bytes.
    #[serde(serialize_with = "ser_hex16")]
    pub nonce: [u8; 16],
}

impl MintPolicy {
    /// Canonical CBOR form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("grant_id", Some(Value::text(self.grant_id.to_hex()))),
            ("issuer", Some(Value::text(self.issuer.to_did_string()))),
            ("event_class", Some(Value::text(self.event_class.to_hex()))),
            ("per_firing_uj", Some(Value::Uint(self.per_firing_uj))),
            ("max_firings", Some(Value::Uint(self.max_firings))),
            ("nonce", Some(Value::Bytes(self.nonce.to_vec()))),
        ])
    }

    /// Reads the canonical form (closed world).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("MintPolicy", v)?;
        let grant_id = f.cid("grant_id")?;
        let issuer = Did::parse(f.text("issuer")?)?;
        let event_class = f.cid("event_class")?;
        let per_firing_uj = f.uint("per_firing_uj")?;
        let max_firings = f.uint("max_firings")?;
        let nonce = f.bytes_n::<16>("nonce")?;
        f.finish()?;
        Ok(Self { grant_id, issuer, event_class, per_firing_uj, max_firings, nonce })
    }

    /// The policy's content id.
    pub fn id(&self) -> ContentId {
        ContentId::of(&self.to_value())
    }

    /// Signs the policy as given, checking nothing (a verifier judges it;
    /// [`MintPolicy::issue`] is the checked authoring routine).
    pub fn sign(self, key: &Keypair) -> SignedMintPolicy {
        let bytes = self.to_value().encode();
        let signature = key.sign(&bytes);
        SignedMintPolicy { policy: self, bytes, signature }
    }

    /// Authors a policy for `grant`, signed by `issuer`, refusing before
    /// signing what [`verify_policy`] would refuse: a signer that is not the
    /// grant's issuer, a grant its issuer does not hold, a leaf-only grant,
    /// and any bound that amplifies the grant.
    pub fn issue(
        grant: &SignedGrant,
        issuer: &Keypair,
        event_class: ContentId,
        per_firing_uj: u64,
        max_firings: u64,
        nonce: Option<[u8; 16]>,
    ) -> Result<SignedMintPolicy, Error> {
        let draft = Self {
            grant_id: grant.id(),
            issuer: issuer.did(),
            event_class,
            per_firing_uj,
            max_firings,
            nonce: nonce.unwrap_or_else(crate::identity::fresh_nonce),
        };
        check_policy(grant, &draft)?;
        Ok(draft.sign(issuer))
    }
}

/// A mint policy with its issuer's signature: `{policy, sig}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedMintPolicy {
    policy: MintPolicy,
    bytes: Vec<u8>,
    signature: [u8; 64],
}

impl SignedMintPolicy {
    /// The policy (not yet verified: [`verify_policy`]).
    pub fn policy(&self) -> &MintPolicy {
        &self.policy
    }

    /// The policy's content id (what a ledger is kept for).
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.bytes)
    }

    /// The signature.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// Whether the signature verifies under the policy's `issuer` (whether
    /// that is the grant's issuer is [`verify_policy`]'s business).
    pub fn verify_signature(&self) -> bool {
        self.policy.issuer.verify(&self.bytes, &self.signature)
    }

    /// The wire form.
    pub fn to_value(&self) -> Value {
        cbor::map([("policy", Some(self.policy.to_value())), ("sig", Some(Value::Bytes(self.signature.to_vec())))])
    }

    /// Canonical bytes of the wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the wire form (the signature is checked by [`verify_policy`]).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("SignedMintPolicy", v)?;
        let pv = f.req("policy")?;
        let signature = f.bytes_n::<64>("sig")?;
        f.finish()?;
        Ok(Self { policy: MintPolicy::from_value(pv)?, bytes: pv.encode(), signature })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}

/// Every rule on a policy but its signatures, shared by the authoring
/// routine and the verifier.
fn check_policy(grant: &SignedGrant, p: &MintPolicy) -> Result<(), Error> {
    let g = grant.grant();
    if p.grant_id != grant.id() {
        return Err(Error::StandingPolicyUnbound { policy_grant: p.grant_id, grant: grant.id() });
    }
    if p.issuer != g.issuer {
        return Err(Error::StandingNotIssuer { signer: p.issuer.to_string(), issuer: g.issuer.to_string() });
    }
    if g.subject != g.issuer {
        return Err(Error::StandingNotHeldByIssuer { issuer: g.issuer.to_string(), subject: g.subject.to_string() });
    }
    if g.delegate_depth == Some(0) {
        return Err(Error::DelegationForbidden);
    }
    if p.max_firings == 0 {
        return Err(Error::StandingPolicyAmplifies(
            "max_firings 0 is refused (it could be read as \"unlimited\"; a policy states its bound)".into(),
        ));
    }
    if p.per_firing_uj == 0 {
        return Err(Error::StandingPolicyAmplifies(
            "per_firing_uj 0 is refused (it could be read as \"unlimited\"; a policy states its bound)".into(),
        ));
    }
    if p.per_firing_uj > g.budget_uj {
        return Err(Error::StandingPolicyAmplifies(format!(
            "per-firing budget {} µJ exceeds the grant's budget {} µJ",
            p.per_firing_uj, g.budget_uj
        )));
    }
    Ok(())
}

/// Verifies a policy against its standing grant (§4.6): bound to this grant
/// by id, issued by the grant's issuer, who holds the grant; no amplifying
/// bound; the policy's signature and the grant's both verify.
pub fn verify_policy(grant: &SignedGrant, policy: &SignedMintPolicy) -> Result<(), Error> {
    check_policy(grant, policy.policy())?;
    if !policy.verify_signature() {
        return Err(Error::BadSignature { object: "MintPolicy", signer: policy.policy().issuer.to_string() });
    }
    if !grant.verify_signature() {
        return Err(Error::BadSignature { object: "Grant", signer: grant.grant().issuer.to_string() });
    }
    Ok(())
}

// ------------------------------------------------------------------ ledger

/// What one firing asks for.
#[derive(Debug, Clone)]
pub struct FiringRequest {
    /// The content id of the triggering event's class.
    pub event_class: ContentId,
    /// The worker who receives the child grant.
    pub subject: Did,
    /// The child's budget; `None` = the policy's per-firing budget.
    pub budget_uj: Option<u64>,
    /// The child's nonce (fresh randomness when `None`).
    pub nonce: Option<[u8; 16]>,
}

/// The mint ledger an enforcement point carries for one policy (§4.6):
/// firings so far and the budget minted so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MintLedger {
    grant_id: ContentId,
    policy_id: ContentId,
    firings: u64,
    spent_uj: u64,
}

impl MintLedger {
    /// A fresh ledger for a policy: no firings, nothing minted.
    pub fn open(policy: &SignedMintPolicy) -> Self {
        Self { grant_id: policy.policy().grant_id, policy_id: policy.id(), firings: 0, spent_uj: 0 }
    }

    /// The standing grant's id.
    pub fn grant_id(&self) -> &ContentId {
        &self.grant_id
    }

    /// The policy's id.
    pub fn policy_id(&self) -> &ContentId {
        &self.policy_id
    }

    /// Firings so far.
    pub fn firings(&self) -> u64 {
        self.firings
    }

    /// Cumulative budget minted to children so far (µJ).
    pub fn spent_uj(&self) -> u64 {
        self.spent_uj
    }

    /// Fires the standing grant (§4.6): verifies the policy against the
    /// grant and this ledger, checks the event's class, the firing count and
    /// that the cumulative minted budget plus this slice stays within the
    /// grant, then mints the child with [`attenuate`] (parent = the standing
    /// grant, signed by `minter`, its holder). The ledger changes only when
    /// the child is minted; every refusal leaves it as it was.
    pub fn fire(
        &mut self,
        grant: &SignedGrant,
        policy: &SignedMintPolicy,
        minter: &Keypair,
        request: &FiringRequest,
        now: u64,
    ) -> Result<SignedGrant, Error> {
        verify_policy(grant, policy)?;
        if self.policy_id != policy.id() {
            return Err(Error::StandingLedgerMismatch {
                field: "policy",
                ledger: self.policy_id,
                presented: policy.id(),
            });
        }
        if self.grant_id != grant.id() {
            return Err(Error::StandingLedgerMismatch { field: "grant", ledger: self.grant_id, presented: grant.id() });
        }
        let g = grant.grant();
        let p = policy.policy();
        if g.expired_at(now) {
            return Err(Error::StandingGrantExpired { expiry: g.expiry, now });
        }
        if request.event_class != p.event_class {
            return Err(Error::StandingWrongEventClass { expected: p.event_class, got: request.event_class });
        }
        if self.firings >= p.max_firings {
            return Err(Error::StandingFiringsExhausted { firings: self.firings, max: p.max_firings });
        }
        let slice = request.budget_uj.unwrap_or(p.per_firing_uj);
        if slice > p.per_firing_uj {
            return Err(Error::StandingSliceExceedsPolicy { slice, per_firing: p.per_firing_uj });
        }
        let spent = match self.spent_uj.checked_add(slice) {
            Some(s) if s <= g.budget_uj => s,
            _ => return Err(Error::StandingBudgetExhausted { spent: self.spent_uj, slice, budget: g.budget_uj }),
        };
        let child = attenuate(
            grant,
            minter,
            Attenuation {
                subject: Some(request.subject),
                budget_uj: Some(slice),
                nonce: request.nonce,
                ..Attenuation::default()
            },
        )?;
        self.firings += 1;
        self.spent_uj = spent;
        Ok(child)
    }

    /// The file form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("format", Some(Value::text(LEDGER_FORMAT))),
            ("grant_id", Some(Value::text(self.grant_id.to_hex()))),
            ("policy_id", Some(Value::text(self.policy_id.to_hex()))),
            ("firings", Some(Value::Uint(self.firings))),
            ("spent_uj", Some(Value::Uint(self.spent_uj))),
        ])
    }

    /// Canonical bytes of the file form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the file form strictly (format `jcp-mint-ledger/1`, closed world).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("MintLedger", v)?;
        let format = f.text("format")?;
        if format != LEDGER_FORMAT {
            return Err(f.error("format", format!("{format:?} is not {LEDGER_FORMAT:?}")).into());
        }
        let grant_id = f.cid("grant_id")?;
        let policy_id = f.cid("policy_id")?;
        let firings = f.uint("firings")?;
        let spent_uj = f.uint("spent_uj")?;
        f.finish()?;
        Ok(Self { grant_id, policy_id, firings, spent_uj })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }

    /// Whether a decoded canonical value looks like a ledger file (for
    /// `jcp inspect`, which then decodes it strictly).
    pub fn is_ledger(v: &Value) -> bool {
        matches!(v.get("format"), Some(Value::Text(f)) if f == LEDGER_FORMAT)
    }
}

// ------------------------------------------------------------------ view

/// A standing grant as the console and `jcp standing ledger` show it: the
/// policy, the ledger, what is left, and why firing is refused outright
/// (a policy or ledger that does not verify against the grant).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StandingView {
    /// The standing grant's id.
    pub grant_id: ContentId,
    /// The standing grant's budget (µJ).
    pub grant_budget_uj: u64,
    /// The policy's id.
    pub policy_id: ContentId,
    /// The policy.
    pub policy: MintPolicy,
    /// The ledger.
    pub ledger: MintLedger,
    /// Firings the policy still allows.
    pub firings_left: u64,
    /// Budget still mintable (µJ): the grant's budget less what was minted.
    pub budget_left_uj: u64,
    /// Why the policy or ledger is refused for this grant (absent when sound).
    pub refusal: Option<Refusal>,
}

impl StandingView {
    /// Builds the view.
    pub fn new(grant: &SignedGrant, policy: &SignedMintPolicy, ledger: &MintLedger) -> Self {
        let p = policy.policy();
        let refusal = verify_policy(grant, policy)
            .and_then(|()| {
                if ledger.policy_id != policy.id() {
                    return Err(Error::StandingLedgerMismatch {
                        field: "policy",
                        ledger: ledger.policy_id,
                        presented: policy.id(),
                    });
                }
                if ledger.grant_id != grant.id() {
                    return Err(Error::StandingLedgerMismatch {
                        field: "grant",
                        ledger: ledger.grant_id,
                        presented: grant.id(),
                    });
                }
                Ok(())
            })
            .err()
            .map(|e| Refusal::from(&e));
        Self {
            grant_id: grant.id(),
            grant_budget_uj: grant.grant().budget_uj,
            policy_id: policy.id(),
            policy: p.clone(),
            ledger: ledger.clone(),
            firings_left: p.max_firings.saturating_sub(ledger.firings),
            budget_left_uj: grant.grant().budget_uj.saturating_sub(ledger.spent_uj),
            refusal,
        }
    }
}
