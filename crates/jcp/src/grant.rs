//! Spec §4: the metered capability. Also §4.1 attenuation, §4.4 delegation
//! depth, §4.5 sharding, §4.8 money ceilings, §4.9 caveats.

use crate::cbor::{self, ContentId, Fields, SchemaError, Value};
use crate::error::{Amplification, Error};
use crate::flow::{FlowCeiling, Label};
use crate::identity::{Did, Keypair};

/// What a grant authorizes: one content-addressed resource and some actions.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Capability {
    /// The resource, addressed by content (audience binding, §4).
    pub resource: ContentId,
    /// The actions permitted on it.
    pub actions: Vec<String>,
}

/// A money ceiling (§4.8): an amount in a currency's minor unit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Funds {
    /// Currency code, e.g. `"USD"`.
    pub currency: String,
    /// Amount in the currency's minor unit (cents).
    pub minor: u64,
}

impl Funds {
    /// The canonical map `{currency, minor}` (a grant's `budget_funds`, a
    /// cost's money, a receipt's and a wire message's money: one form).
    pub fn to_value(&self) -> Value {
        cbor::map([("currency", Some(Value::text(self.currency.as_str()))), ("minor", Some(Value::Uint(self.minor)))])
    }

    /// Reads `{currency, minor}` strictly; an empty currency is refused.
    pub fn from_value(v: &Value) -> Result<Self, SchemaError> {
        let mut f = Fields::new("Funds", v)?;
        let currency = f.text("currency")?.to_owned();
        let minor = f.uint("minor")?;
        f.finish()?;
        if currency.is_empty() {
            return Err(SchemaError::Invalid { object: "Funds", field: "currency", problem: "empty currency".into() });
        }
        Ok(Self { currency, minor })
    }
}

/// A money amount's text form, for people: `CURRENCY:MINOR`, e.g. `USD:500`.
impl std::str::FromStr for Funds {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = |problem: &str| Error::InvalidFunds { text: s.to_owned(), problem: problem.to_owned() };
        let (currency, minor) = s.split_once(':').ok_or_else(|| bad("expected CURRENCY:MINOR, e.g. USD:500"))?;
        let minor = minor.parse().map_err(|_| bad("minor units must be an unsigned integer"))?;
        if currency.is_empty() {
            return Err(bad("empty currency"));
        }
        Ok(Self { currency: currency.to_owned(), minor })
    }
}

/// A content id given as text: 64 lowercase hex digits; `what` names it in the error.
pub fn content_id_from_text(s: &str, what: &'static str) -> Result<ContentId, Error> {
    ContentId::parse(s).ok_or_else(|| Error::InvalidContentId { what, text: s.to_owned() })
}

/// A resource given as text, for people: a content id, or `text:NAME`, whose
/// id is the content id of the canonical CBOR text `NAME`.
pub fn resource_from_text(s: &str) -> Result<ContentId, Error> {
    match s.strip_prefix("text:") {
        Some(name) => Ok(ContentId::of(&Value::text(name))),
        None => content_id_from_text(s, "resource"),
    }
}

/// An embedded condition (§4.9). Every predicate ranges only over what an
/// enforcement point holds when it decides.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Caveat {
    /// The action must be in this set (may narrow below the capability).
    ActionIn(Vec<String>),
    /// The frame's payload must be exactly this (one-shot).
    PayloadIs(ContentId),
    /// The caller must be this principal.
    CallerIs(Did),
    /// Not before this unix second.
    NotBefore(u64),
    /// Not after this unix second.
    NotAfter(u64),
    /// A ceiling on one invocation's cost (cost-dependent: enforced at the
    /// debit point in the two-phase path).
    MaxCostUj(u64),
    /// The frame must name one of these models (fails closed on none).
    ModelIn(Vec<ContentId>),
    /// The argument's label must sit at or below this ceiling (§4.10).
    FlowBelow(FlowCeiling),
    /// The enforcement point deciding must be this one (§4.5: a shard is
    /// bound to the point that enforces it). It ranges over what the point
    /// holds when it decides — its own identity, the key that seals its
    /// receipts — and fails closed at a point that states none
    /// (docs/decisions.md).
    PointIs(Did),
}

/// A caveat's text form, for people (flags and forms): `Name=argument`,
/// e.g. `MaxCostUj=100`, `ActionIn=read,write`, `CallerIs=did:key:…`,
/// `ModelIn=<id>,<id>`, `FlowBelow=untrusted;search;all;1000` (a label's
/// three parts and, optionally, the tainted allowance in µJ).
impl std::str::FromStr for Caveat {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = |problem: &str| Error::InvalidCaveat { text: s.to_owned(), problem: problem.to_owned() };
        let (name, arg) = s.split_once('=').ok_or_else(|| bad("expected Name=argument"))?;
        let uint = |a: &str| -> Result<u64, Error> { a.parse().map_err(|_| bad("expected an unsigned integer")) };
        Ok(match name {
            "ActionIn" => Self::ActionIn(crate::flow::text_list(arg)),
            "PayloadIs" => Self::PayloadIs(content_id_from_text(arg, "PayloadIs")?),
            "CallerIs" => Self::CallerIs(Did::parse(arg)?),
            "PointIs" => Self::PointIs(Did::parse(arg)?),
            "NotBefore" => Self::NotBefore(uint(arg)?),
            "NotAfter" => Self::NotAfter(uint(arg)?),
            "MaxCostUj" => Self::MaxCostUj(uint(arg)?),
            "ModelIn" => Self::ModelIn(
                crate::flow::text_list(arg).iter().map(|m| content_id_from_text(m, "ModelIn")).collect::<Result<_, _>>()?,
            ),
            "FlowBelow" => match arg.split(';').collect::<Vec<_>>()[..] {
                [integrity, origins, readers] => Self::FlowBelow(FlowCeiling {
                    ceiling: Label::from_text_parts(integrity, origins, readers, arg)?,
                    tainted_budget_uj: None,
                }),
                [integrity, origins, readers, tainted] => Self::FlowBelow(FlowCeiling {
                    ceiling: Label::from_text_parts(integrity, origins, readers, arg)?,
                    tainted_budget_uj: Some(uint(tainted)?),
                }),
                _ => return Err(bad("FlowBelow=INTEGRITY;ORIGINS;READERS[;TAINTED_UJ]")),
            },
            other => {
                return Err(Error::InvalidCaveat {
                    text: s.to_owned(),
                    problem: format!("unknown caveat {other:?} (ActionIn, PayloadIs, CallerIs, NotBefore, NotAfter, MaxCostUj, ModelIn, FlowBelow, PointIs)"),
                })
            }
        })
    }
}

impl Grant {
    /// The enforcement point this grant is bound to (§4.5 `PointIs`), if
    /// it carries one (the first, where it carries several: any other
    /// names another point and fails everywhere).
    pub fn bound_point(&self) -> Option<&Did> {
        self.caveats.iter().find_map(|c| match c {
            Caveat::PointIs(d) => Some(d),
            _ => None,
        })
    }
}

impl Caveat {
    /// The variant's wire name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ActionIn(_) => "ActionIn",
            Self::PayloadIs(_) => "PayloadIs",
            Self::CallerIs(_) => "CallerIs",
            Self::NotBefore(_) => "NotBefore",
            Self::NotAfter(_) => "NotAfter",
            Self::MaxCostUj(_) => "MaxCostUj",
            Self::ModelIn(_) => "ModelIn",
            Self::FlowBelow(_) => "FlowBelow",
            Self::PointIs(_) => "PointIs",
        }
    }

    /// Whether the predicate ranges over the invocation's cost (§4.9).
    pub fn is_cost_dependent(&self) -> bool {
        matches!(self, Self::MaxCostUj(_))
    }

    /// Canonical form: a one-entry map `{VariantName: argument}`.
    pub fn to_value(&self) -> Value {
        let arg = match self {
            Self::ActionIn(a) => cbor::text_array(a),
            Self::PayloadIs(c) => Value::text(c.to_hex()),
            Self::CallerIs(d) | Self::PointIs(d) => Value::text(d.to_did_string()),
            Self::NotBefore(t) | Self::NotAfter(t) | Self::MaxCostUj(t) => Value::Uint(*t),
            Self::ModelIn(m) => Value::Array(m.iter().map(|c| Value::text(c.to_hex())).collect()),
            Self::FlowBelow(f) => f.to_value(),
        };
        Value::Map(vec![(Value::text(self.name()), arg)])
    }

    /// Reads the canonical form; an unknown variant is refused (a verifier
    /// that skipped a condition it did not understand would widen authority).
    pub fn from_value(v: &Value) -> Result<Self, SchemaError> {
        let invalid =
            |problem: &str| SchemaError::Invalid { object: "Caveat", field: "value", problem: problem.into() };
        let Value::Map(entries) = v else { return Err(SchemaError::NotAMap { object: "Caveat" }) };
        let [(Value::Text(name), arg)] = entries.as_slice() else {
            return Err(invalid("a caveat is a map with exactly one text key"));
        };
        let cid = |v: &Value| match v {
            Value::Text(s) => ContentId::parse(s).ok_or_else(|| invalid("expected a content id")),
            _ => Err(invalid("expected a content id")),
        };
        let uint = |v: &Value| match v {
            Value::Uint(n) => Ok(*n),
            _ => Err(invalid("expected an unsigned integer")),
        };
        Ok(match name.as_str() {
            "ActionIn" => match arg {
                Value::Array(items) => Self::ActionIn(
                    items
                        .iter()
                        .map(|i| match i {
                            Value::Text(s) => Ok(s.clone()),
                            _ => Err(invalid("ActionIn takes text")),
                        })
                        .collect::<Result<_, _>>()?,
                ),
                _ => return Err(invalid("ActionIn takes an array")),
            },
            "PayloadIs" => Self::PayloadIs(cid(arg)?),
            "CallerIs" => match arg {
                Value::Text(s) => Self::CallerIs(Did::parse(s).map_err(|e| invalid(&e.to_string()))?),
                _ => return Err(invalid("CallerIs takes a did:key")),
            },
            "PointIs" => match arg {
                Value::Text(s) => Self::PointIs(Did::parse(s).map_err(|e| invalid(&e.to_string()))?),
                _ => return Err(invalid("PointIs takes a did:key")),
            },
            "NotBefore" => Self::NotBefore(uint(arg)?),
            "NotAfter" => Self::NotAfter(uint(arg)?),
            "MaxCostUj" => Self::MaxCostUj(uint(arg)?),
            "ModelIn" => match arg {
                Value::Array(items) => Self::ModelIn(items.iter().map(cid).collect::<Result<_, _>>()?),
                _ => return Err(invalid("ModelIn takes an array")),
            },
            "FlowBelow" => Self::FlowBelow(FlowCeiling::from_value(arg)?),
            other => {
                return Err(SchemaError::Invalid {
                    object: "Caveat",
                    field: "value",
                    problem: format!("unknown caveat {other:?}"),
                })
            }
        })
    }
}

/// The grant (§4), unsigned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    /// Who granted this authority.
    pub issuer: Did,
    /// Who holds it.
    pub subject: Did,
    /// What it authorizes.
    pub capability: Capability,
    /// The joule ceiling this grant may ever spend (µJ).
    pub budget_uj: u64,
    /// Optional money ceiling (§4.8); absent = joules alone bound it.
    pub budget_funds: Option<Funds>,
    /// Embedded conditions (§4.9); omitted from the encoding when empty.
    pub caveats: Vec<Caveat>,
    /// Unix seconds; 0 = no expiry.
    pub expiry: u64,
    /// The grant this was attenuated from.
    pub parent: Option<ContentId>,
    /// Further hops permitted; absent = unlimited, 0 = leaf-only (§4.4).
    pub delegate_depth: Option<u64>,
    /// 16 random bytes.
    #[serde(with = "hex_bytes16")]
    pub nonce: [u8; 16],
}

mod hex_bytes16 {
    pub fn serialize<S: serde::Serializer>(b: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(b))
    }
}

impl Grant {
    /// Canonical CBOR form (§3, §4): absent optional fields omitted.
    pub fn to_value(&self) -> Value {
        let capability = cbor::map([
            ("resource", Some(Value::text(self.capability.resource.to_hex()))),
            ("actions", Some(cbor::text_array(&self.capability.actions))),
        ]);
        let caveats = if self.caveats.is_empty() {
            None
        } else {
            Some(Value::Array(self.caveats.iter().map(Caveat::to_value).collect()))
        };
        cbor::map([
            ("issuer", Some(Value::text(self.issuer.to_did_string()))),
            ("subject", Some(Value::text(self.subject.to_did_string()))),
            ("capability", Some(capability)),
            ("budget_uj", Some(Value::Uint(self.budget_uj))),
            ("budget_funds", self.budget_funds.as_ref().map(Funds::to_value)),
            ("caveats", caveats),
            ("expiry", Some(Value::Uint(self.expiry))),
            ("parent", self.parent.map(|p| Value::text(p.to_hex()))),
            ("delegate_depth", self.delegate_depth.map(Value::Uint)),
            ("nonce", Some(Value::Bytes(self.nonce.to_vec()))),
        ])
    }

    /// Canonical bytes: what the issuer signs and the id hashes.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// The grant's content id.
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.canonical_bytes())
    }

    /// Reads a grant from its canonical value (closed world: unknown fields
    /// refused; an empty `caveats` array is refused because the canonical
    /// form omits it).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("Grant", v)?;
        let issuer = Did::parse(f.text("issuer")?)?;
        let subject = Did::parse(f.text("subject")?)?;
        let cap_v = f.req("capability")?;
        let mut cf = Fields::new("Capability", cap_v)?;
        let resource = cf.cid("resource")?;
        let actions = cf.text_array("actions")?;
        cf.finish()?;
        check_unique(&actions, "capability.actions")?;
        let budget_uj = f.uint("budget_uj")?;
        let budget_funds = f.opt("budget_funds").map(Funds::from_value).transpose()?;
        let caveats = match f.opt("caveats") {
            None => Vec::new(),
            Some(Value::Array(items)) if !items.is_empty() => {
                items.iter().map(Caveat::from_value).collect::<Result<Vec<_>, _>>()?
            }
            Some(Value::Array(_)) => {
                return Err(f.error("caveats", "an empty caveat set is omitted, never encoded").into())
            }
            Some(_) => return Err(f.error("caveats", "expected an array").into()),
        };
        let expiry = f.uint("expiry")?;
        let parent = f.opt_cid("parent")?;
        let delegate_depth = f.opt_uint("delegate_depth")?;
        let nonce = f.bytes_n::<16>("nonce")?;
        f.finish()?;
        Ok(Self {
            issuer,
            subject,
            capability: Capability { resource, actions },
            budget_uj,
            budget_funds,
            caveats,
            expiry,
            parent,
            delegate_depth,
            nonce,
        })
    }

    /// Signs the grant with the issuer's key.
    pub fn sign(self, issuer: &Keypair) -> Result<SignedGrant, Error> {
        if issuer.did() != self.issuer {
            return Err(Error::SignerMismatch {
                object: "grant",
                named: self.issuer.to_string(),
                key: issuer.did().to_string(),
            });
        }
        let bytes = self.canonical_bytes();
        let signature = issuer.sign(&bytes);
        Ok(SignedGrant::assemble(self, bytes, signature))
    }

    /// Signs the grant with `controller`, the key that controls the issuer's
    /// identity after a rotation (§2.1). The caller ([`crate::rotation::issue_grant`])
    /// has checked that `controller` is the issuer identity's current key.
    pub(crate) fn sign_as_controller(self, controller: &Keypair) -> SignedGrant {
        let bytes = self.canonical_bytes();
        let signature = controller.sign(&bytes);
        SignedGrant::assemble(self, bytes, signature)
    }

    /// Whether the grant has expired at `now` (expiry is the first second at
    /// which it no longer holds: `now >= expiry`; 0 never expires).
    pub fn expired_at(&self, now: u64) -> bool {
        self.expiry != 0 && now >= self.expiry
    }
}

fn check_unique(items: &[String], what: &'static str) -> Result<(), Error> {
    let mut seen = std::collections::HashSet::new();
    for i in items {
        if !seen.insert(i.as_str()) {
            return Err(Error::DuplicateEntry { field: what, entry: i.clone() });
        }
    }
    Ok(())
}

/// A grant with its issuer's signature, as it travels. Its canonical bytes
/// and ids are computed once, at signing or decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedGrant {
    grant: Grant,
    grant_bytes: Vec<u8>,
    signature: [u8; 64],
    id: ContentId,
    signed_id: ContentId,
}

impl SignedGrant {
    fn assemble(grant: Grant, grant_bytes: Vec<u8>, signature: [u8; 64]) -> Self {
        let id = ContentId::of_bytes(&grant_bytes);
        let mut signed = Vec::with_capacity(grant_bytes.len() + 80);
        signed.extend_from_slice(&grant_bytes);
        signed.extend_from_slice(&signature);
        let signed_id = ContentId::of_bytes(&signed);
        Self { grant, grant_bytes, signature, id, signed_id }
    }

    /// Joins a grant and a signature produced elsewhere (a threshold
    /// actor's aggregate, §2.2; an external signer), refusing one that does
    /// not verify under the grant's issuer over its canonical bytes
    /// ([`Grant::canonical_bytes`]) — `bad-signature`.
    pub fn from_parts(grant: Grant, signature: [u8; 64]) -> Result<Self, Error> {
        let bytes = grant.canonical_bytes();
        if !grant.issuer.verify(&bytes, &signature) {
            return Err(Error::BadSignature { object: "Grant", signer: grant.issuer.to_string() });
        }
        Ok(Self::assemble(grant, bytes, signature))
    }

    /// The grant (not yet checked: see [`SignedGrant::verify_signature`]).
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// The grant's content id (§4): blake3 of its canonical bytes.
    pub fn id(&self) -> ContentId {
        self.id
    }

    /// An id of the grant *and* its signature: the key under which a
    /// verified chain is cached (a bad signature is another key).
    pub fn signed_id(&self) -> ContentId {
        self.signed_id
    }

    /// The signature.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// The canonical bytes of the grant (what was signed).
    pub fn grant_bytes(&self) -> &[u8] {
        &self.grant_bytes
    }

    /// Whether the issuer's signature verifies (the one Ed25519 predicate).
    pub fn verify_signature(&self) -> bool {
        self.grant.issuer.verify(&self.grant_bytes, &self.signature)
    }

    /// The wire form `{grant, sig}`.
    pub fn to_value(&self) -> Value {
        cbor::map([("grant", Some(self.grant.to_value())), ("sig", Some(Value::Bytes(self.signature.to_vec())))])
    }

    /// Canonical bytes of the wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the wire form from a canonical value. The signature is NOT
    /// checked here; the decision checks it in its place in the order.
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("SignedGrant", v)?;
        let gv = f.req("grant")?;
        let signature = f.bytes_n::<64>("sig")?;
        f.finish()?;
        let grant = Grant::from_value(gv)?;
        let bytes = gv.encode();
        Ok(Self::assemble(grant, bytes, signature))
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}

/// What the holder asks for when minting a child (§4.1). `None` fields are
/// inherited unchanged from the parent.
#[derive(Debug, Clone, Default)]
pub struct Attenuation {
    /// The child's subject (the delegate).
    pub subject: Option<Did>,
    /// A subset of the parent's actions.
    pub actions: Option<Vec<String>>,
    /// At most the parent's budget.
    pub budget_uj: Option<u64>,
    /// A money ceiling no wider than the parent's.
    pub budget_funds: Option<Funds>,
    /// Caveats appended to the inherited ones.
    pub add_caveats: Vec<Caveat>,
    /// No later than the parent's expiry.
    pub expiry: Option<u64>,
    /// At most the parent's depth − 1.
    pub delegate_depth: Option<u64>,
    /// The child's nonce (fresh randomness when `None`).
    pub nonce: Option<[u8; 16]>,
}

/// Checks that `child` narrows `parent` on every axis (§4.1, §4.4, §4.8,
/// §4.9). Shared by minting and chain verification: "the rules attenuate
/// holds when it mints are held again here" (§4.2).
pub fn check_narrows(parent: &Grant, child: &Grant) -> Result<(), Amplification> {
    if child.capability.resource != parent.capability.resource {
        return Err(Amplification::Resource);
    }
    if let Some(a) = child.capability.actions.iter().find(|a| !parent.capability.actions.contains(a)) {
        return Err(Amplification::Action(a.clone()));
    }
    if child.budget_uj > parent.budget_uj {
        return Err(Amplification::Budget { child: child.budget_uj, parent: parent.budget_uj });
    }
    if parent.expiry != 0 && (child.expiry == 0 || child.expiry > parent.expiry) {
        return Err(Amplification::Expiry { child: child.expiry, parent: parent.expiry });
    }
    match (&parent.budget_funds, &child.budget_funds) {
        (Some(_), None) => return Err(Amplification::Funds("child drops the parent's money ceiling".into())),
        (Some(p), Some(c)) if p.currency != c.currency => {
            return Err(Amplification::Funds(format!(
                "child re-denominates {} as {} (no rate can show it narrows)",
                p.currency, c.currency
            )))
        }
        (Some(p), Some(c)) if c.minor > p.minor => {
            return Err(Amplification::Funds(format!("child ceiling {} exceeds the parent's {}", c.minor, p.minor)))
        }
        // No parent money ceiling, or a child one within it in its currency.
        _ => {}
    }
    // Caveats by exact identity, in order: the child's list starts with the
    // parent's list (inherit unchanged, then append).
    for (i, pc) in parent.caveats.iter().enumerate() {
        if child.caveats.get(i) != Some(pc) {
            return Err(Amplification::DroppedCaveat(i));
        }
    }
    if let Some(d) = parent.delegate_depth {
        let allowed = d.saturating_sub(1);
        match child.delegate_depth {
            Some(c) if c <= allowed => {}
            other => return Err(Amplification::Depth { child: other, allowed }),
        }
    }
    Ok(())
}

/// Mints a strictly weaker child of `parent`, signed by `holder`, who must
/// be the parent's subject (§4.1).
pub fn attenuate(parent: &SignedGrant, holder: &Keypair, a: Attenuation) -> Result<SignedGrant, Error> {
    let p = parent.grant();
    if holder.did() != p.subject {
        return Err(Error::NotHolder { holder: p.subject.to_string(), by: holder.did().to_string() });
    }
    if p.delegate_depth == Some(0) {
        return Err(Error::DelegationForbidden);
    }
    let actions = a.actions.unwrap_or_else(|| p.capability.actions.clone());
    check_unique(&actions, "capability.actions")?;
    let mut caveats = p.caveats.clone();
    caveats.extend(a.add_caveats);
    let child = Grant {
        issuer: holder.did(),
        subject: a.subject.unwrap_or(p.subject),
        capability: Capability { resource: p.capability.resource, actions },
        budget_uj: a.budget_uj.unwrap_or(p.budget_uj),
        // A plain attenuation inherits the parent's money ceiling (§4.8).
        budget_funds: a.budget_funds.or_else(|| p.budget_funds.clone()),
        caveats,
        expiry: a.expiry.unwrap_or(p.expiry),
        parent: Some(parent.id()),
        delegate_depth: a.delegate_depth.or_else(|| p.delegate_depth.map(|d| d.saturating_sub(1))),
        nonce: a.nonce.unwrap_or_else(crate::identity::fresh_nonce),
    };
    check_narrows(p, &child).map_err(Error::AttenuationViolation)?;
    child.sign(holder)
}

/// One slice of a shard operation (§4.5).
#[derive(Debug, Clone)]
pub struct Slice {
    /// Who holds this shard (the worker, or a delegate).
    pub subject: Did,
    /// Its joule budget.
    pub budget_uj: u64,
    /// The enforcement point that enforces it, and no other (its
    /// identity: the key that seals its receipts). The shard carries
    /// `PointIs(point)`.
    pub point: Did,
    /// Its share of the parent's money ceiling, in the parent's currency
    /// (§4.8): required where the parent has one, refused where it has
    /// none.
    pub funds_minor: Option<u64>,
    /// Its nonce (fresh randomness when `None`).
    pub nonce: Option<[u8; 16]>,
}

/// Mints N sibling children whose budgets sum to no more than the parent's
/// (§4.5), each bound to the one enforcement point that enforces it
/// (`PointIs`), refusing slices that sum past the parent — in joules and,
/// where the parent has a money ceiling, in money, which is split as joules
/// are (a shard never inherits the parent's whole money ceiling) — and two
/// shards bound to one point.
pub fn shard(parent: &SignedGrant, holder: &Keypair, slices: &[Slice]) -> Result<Vec<SignedGrant>, Error> {
    let p = parent.grant();
    let sum: u128 = slices.iter().map(|s| u128::from(s.budget_uj)).sum();
    if sum > u128::from(p.budget_uj) {
        return Err(Error::ShardOverflow { sum, parent: p.budget_uj });
    }
    for (i, s) in slices.iter().enumerate() {
        if slices[..i].iter().any(|o| o.point == s.point) {
            return Err(Error::ShardInvalid(format!(
                "slices {} and {i} are bound to one point {}: a point enforces one shard of a parent",
                slices[..i].iter().position(|o| o.point == s.point).unwrap_or(0),
                s.point
            )));
        }
    }
    let funds: Vec<Option<Funds>> = match &p.budget_funds {
        None => {
            if let Some(i) = slices.iter().position(|s| s.funds_minor.is_some()) {
                return Err(Error::ShardInvalid(format!(
                    "slice {i} states a money share, but the parent has no money ceiling to split"
                )));
            }
            vec![None; slices.len()]
        }
        Some(f) => {
            let mut out = Vec::with_capacity(slices.len());
            for (i, s) in slices.iter().enumerate() {
                let Some(minor) = s.funds_minor else {
                    return Err(Error::ShardInvalid(format!(
                        "slice {i} states no money share: the parent is bounded at {} {}, and a shard that inherited all of it would let N points spend it N times",
                        f.minor, f.currency
                    )));
                };
                out.push(Some(Funds { currency: f.currency.clone(), minor }));
            }
            let money: u128 = slices.iter().filter_map(|s| s.funds_minor).map(u128::from).sum();
            if money > u128::from(f.minor) {
                return Err(Error::ShardInvalid(format!(
                    "money shares sum to {money} {}, past the parent's {} {}",
                    f.currency, f.minor, f.currency
                )));
            }
            out
        }
    };
    slices
        .iter()
        .zip(funds)
        .map(|(s, budget_funds)| {
            attenuate(
                parent,
                holder,
                Attenuation {
                    subject: Some(s.subject),
                    budget_uj: Some(s.budget_uj),
                    budget_funds,
                    add_caveats: vec![Caveat::PointIs(s.point)],
                    nonce: s.nonce,
                    ..Attenuation::default()
                },
            )
        })
        .collect()
}
