//! §11 `WireRequest { frame, chain, caller, cost, now, signature }`: a
//! caller-signed request, its optional fields (`money` §4.8, `label` §4.10,
//! `args`, `continues` §6.1), and the caller's signature over the
//! canonical bytes of every other field (§11 caller authentication).

use jcp::cbor::{self, ContentId, Fields, MapSpan, SchemaError, Value};
use jcp::decision::Cost;
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::Frame;
use jcp::grant::Funds;
use jcp::grant::SignedGrant;
use jcp::identity::{Did, Keypair};

use crate::error::WireError;

/// The longest handle the endpoint mints or accepts (§6.1).
pub const MAX_HANDLE_LEN: usize = 128;
/// The most links a presented chain may have.
pub const MAX_CHAIN_LEN: usize = 16;
/// The longest frame `action` a request may carry, in bytes. The action is
/// sealed into every receipt of the request (§8), allow and deny alike, so
/// a caller-controlled text is bounded before anything is decided.
pub const MAX_ACTION_LEN: usize = 1024;
/// The longest `money.currency` a request may carry, in bytes (sealed
/// into the receipt of a priced decision, §4.8).
pub const MAX_CURRENCY_LEN: usize = 16;

/// A caller-signed request (§11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireRequest {
    /// The frame to decide.
    pub frame: Frame,
    /// The full delegation chain, root first (one link for a root grant).
    pub chain: Vec<SignedGrant>,
    /// The caller (the holder that metered the action).
    pub caller: Did,
    /// The holder's measured cost.
    pub cost: Energy,
    /// A priced action's money cost (§4.8).
    pub money: Option<Funds>,
    /// The argument's label (§4.10); `None` = provenance not computed.
    pub label: Option<Label>,
    /// The argument bytes forwarded to the endpoint behind the gate.
    pub args: Option<Vec<u8>>,
    /// §6.1: the handle this later exchange continues.
    pub continues: Option<String>,
    /// The caller's freshness stamp, unix seconds (never the decision time).
    pub now: u64,
    /// Ed25519 by `caller` over the canonical bytes of every other field.
    pub signature: [u8; 64],
}

/// The unsigned part of a request, for building one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestBody {
    /// See [`WireRequest::frame`].
    pub frame: Frame,
    /// See [`WireRequest::chain`].
    pub chain: Vec<SignedGrant>,
    /// See [`WireRequest::cost`].
    pub cost: Energy,
    /// See [`WireRequest::money`].
    pub money: Option<Funds>,
    /// See [`WireRequest::label`].
    pub label: Option<Label>,
    /// See [`WireRequest::args`].
    pub args: Option<Vec<u8>>,
    /// See [`WireRequest::continues`].
    pub continues: Option<String>,
    /// See [`WireRequest::now`].
    pub now: u64,
}

pub(crate) fn energy_value(e: &Energy) -> Value {
    cbor::map([
        ("uj", Some(Value::Uint(e.uj))),
        ("provenance", Some(Value::text(e.provenance.as_str()))),
        ("coverage", (e.coverage == Coverage::Partial).then(|| Value::text(Coverage::Partial.as_str()))),
        ("measured", e.measured.map(Value::Uint)),
    ])
}

/// §5's energy as the wire carries it: `{uj, provenance, coverage?,
/// measured?}`, refused before anything is decided when the grade and the
/// measured figure disagree ([`Energy::check_grade`]: `HwShunt` without
/// `measured`, `Estimator` with it, a debit below it).
fn energy_from(v: &Value) -> Result<Energy, WireError> {
    let mut f = Fields::new("Energy", v)?;
    let uj = f.uint("uj")?;
    let p = f.text("provenance")?;
    let provenance = Provenance::parse(p).ok_or_else(|| f.error("provenance", format!("unknown provenance {p:?}")))?;
    let coverage = match f.opt_text("coverage")? {
        None => Coverage::Whole,
        Some("Partial") => Coverage::Partial,
        // Whole is stated by omission: one wire form per value.
        Some(other) => {
            return Err(f
                .error("coverage", format!("{other:?}: only \"Partial\" is written (Whole is omitted)"))
                .into())
        }
    };
    let measured = f.opt_uint("measured")?;
    f.finish()?;
    let e = Energy { uj, provenance, coverage, measured };
    e.check_grade().map_err(WireError::Cost)?;
    Ok(e)
}

impl RequestBody {
    fn to_value(&self, caller: &Did) -> Value {
        cbor::map([
            ("frame", Some(self.frame.to_value())),
            ("chain", Some(Value::Array(self.chain.iter().map(SignedGrant::to_value).collect()))),
            ("caller", Some(Value::text(caller.to_did_string()))),
            ("cost", Some(energy_value(&self.cost))),
            ("money", self.money.as_ref().map(Funds::to_value)),
            ("label", self.label.as_ref().map(Label::to_value)),
            ("args", self.args.clone().map(Value::Bytes)),
            ("continues", self.continues.clone().map(Value::Text)),
            ("now", Some(Value::Uint(self.now))),
        ])
    }

    /// Signs as `caller` (§11 caller authentication).
    pub fn sign(self, caller: &Keypair) -> WireRequest {
        let did = caller.did();
        let signature = caller.sign(&self.signed_bytes(&did));
        self.join(did, signature)
    }

    /// The canonical bytes `caller` signs (every field but `signature`):
    /// what a threshold caller's shareholders sign together (§2.2, §11).
    pub fn signed_bytes(&self, caller: &Did) -> Vec<u8> {
        self.to_value(caller).encode()
    }

    /// Joins the body and a caller signature produced elsewhere (a k-of-n
    /// aggregate, §2.2), refusing one that does not verify under `caller`
    /// — `bad-signature`, so no unauthenticated request is ever built.
    pub fn with_signature(self, caller: Did, signature: [u8; 64]) -> Result<WireRequest, WireError> {
        if !caller.verify(&self.signed_bytes(&caller), &signature) {
            return Err(WireError::BadSignature { signer: caller.to_string() });
        }
        Ok(self.join(caller, signature))
    }

    fn join(self, caller: Did, signature: [u8; 64]) -> WireRequest {
        WireRequest {
            frame: self.frame,
            chain: self.chain,
            caller,
            cost: self.cost,
            money: self.money,
            label: self.label,
            args: self.args,
            continues: self.continues,
            now: self.now,
            signature,
        }
    }
}

impl WireRequest {
    fn body(&self) -> RequestBody {
        RequestBody {
            frame: self.frame.clone(),
            chain: self.chain.clone(),
            cost: self.cost,
            money: self.money.clone(),
            label: self.label.clone(),
            args: self.args.clone(),
            continues: self.continues.clone(),
            now: self.now,
        }
    }

    /// The canonical bytes the caller signs: every field but `signature`.
    pub fn signed_bytes(&self) -> Vec<u8> {
        self.body().signed_bytes(&self.caller)
    }

    /// The request's identity for "decided once" (§11): the content id of
    /// what the caller signed. Keyed on the signed content, not on the
    /// signature's bytes, so no second valid signature over the same
    /// content could make it a new request.
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.signed_bytes())
    }

    /// Whether the caller's signature verifies (the one Ed25519 predicate).
    pub fn verify_signature(&self) -> bool {
        self.caller.verify(&self.signed_bytes(), &self.signature)
    }

    /// The canonical message value.
    pub fn to_value(&self) -> Value {
        let mut v = self.body().to_value(&self.caller);
        if let Value::Map(entries) = &mut v {
            entries.push((Value::text("signature"), Value::Bytes(self.signature.to_vec())));
        }
        // Encoding sorts a map's keys canonically.
        v
    }

    /// Canonical bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Whether every caller-controlled text that reaches a receipt is
    /// within its bound ([`MAX_ACTION_LEN`], [`MAX_CURRENCY_LEN`]): what the
    /// decoder refuses, for a request built in-process.
    pub fn check_bounds(&self) -> Result<(), WireError> {
        receipt_fields_bounded(&self.frame, self.money.as_ref())
            .map_err(|(field, problem)| SchemaError::Invalid { object: "WireRequest", field, problem }.into())
    }

    /// The decision's cost.
    pub fn decision_cost(&self) -> Cost {
        Cost { energy: self.cost, money: self.money.clone() }
    }

    /// Reads a request from a canonical value. Checks shape only: the
    /// signature is checked by the endpoint in its place (§11).
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("WireRequest", v)?;
        let frame = Frame::from_value(f.req("frame")?)?;
        let chain = chain_from(f.req("chain")?)?;
        let caller = Did::parse(f.text("caller")?)?;
        let cost = energy_from(f.req("cost")?)?;
        let money = f.opt("money").map(Funds::from_value).transpose()?;
        let label = f.opt("label").map(Label::from_value).transpose()?;
        let args = match f.opt("args") {
            None => None,
            Some(Value::Bytes(b)) => Some(b.clone()),
            Some(_) => return Err(f.error("args", "expected bytes").into()),
        };
        let continues = f.opt_text("continues")?.map(str::to_owned);
        if continues.as_deref().is_some_and(|h| !handle_len_ok(h)) {
            return Err(f.error("continues", format!("a handle has 1..={MAX_HANDLE_LEN} bytes")).into());
        }
        let now = f.uint("now")?;
        let signature = f.bytes_n::<64>("signature")?;
        f.finish()?;
        if let Err((field, problem)) = receipt_fields_bounded(&frame, money.as_ref()) {
            return Err(SchemaError::Invalid { object: "WireRequest", field, problem }.into());
        }
        if !args_sealed(args.as_deref(), &frame) {
            return Err(WireError::schema(
                "WireRequest",
                "args: their content id is not the frame's payload_hash (the receipt must seal what is forwarded)",
            ));
        }
        Ok(Self { frame, chain, caller, cost, money, label, args, continues, now, signature })
    }
}

/// Every caller-controlled text that reaches a receipt is bounded (§8,
/// §11): the frame's action and a priced cost's currency. `Err` names the
/// field and what is wrong with it.
fn receipt_fields_bounded(frame: &Frame, money: Option<&Funds>) -> Result<(), (&'static str, String)> {
    if frame.action.len() > MAX_ACTION_LEN {
        return Err((
            "frame",
            format!(
                "action: {} bytes, above the {MAX_ACTION_LEN}-byte limit (it is sealed in the receipt)",
                frame.action.len()
            ),
        ));
    }
    if let Some(m) = money.filter(|m| m.currency.len() > MAX_CURRENCY_LEN) {
        return Err((
            "money",
            format!("currency: {} bytes, above the {MAX_CURRENCY_LEN}-byte limit", m.currency.len()),
        ));
    }
    Ok(())
}

/// A continuation handle has 1..=[`MAX_HANDLE_LEN`] bytes (§6.1).
fn handle_len_ok(h: &str) -> bool {
    !h.is_empty() && h.len() <= MAX_HANDLE_LEN
}

/// Forwarded `args` are sealed: their content id is the frame's
/// `payload_hash` (§4.10); no `args` is nothing to seal.
fn args_sealed(args: Option<&[u8]>, frame: &Frame) -> bool {
    args.is_none_or(|a| ContentId::of_bytes(a) == frame.payload_hash)
}

/// A presented chain: 1..=[`MAX_CHAIN_LEN`] signed grants, root first.
fn chain_from(v: &Value) -> Result<Vec<SignedGrant>, WireError> {
    let invalid = |problem: String| SchemaError::Invalid { object: "WireRequest", field: "chain", problem };
    let Value::Array(links) = v else {
        return Err(invalid("expected an array of signed grants".into()).into());
    };
    if links.is_empty() || links.len() > MAX_CHAIN_LEN {
        return Err(invalid(format!("{} links: a chain has 1..={MAX_CHAIN_LEN}", links.len())).into());
    }
    Ok(links.iter().map(SignedGrant::from_value).collect::<Result<Vec<_>, _>>()?)
}

/// The chain a connection presented last, decoded. §11 has every request
/// carry its full chain, and a client presents the same chain request
/// after request: a connection keeps the last one's canonical bytes and
/// decodes the chain again only when the bytes differ. Equal canonical
/// bytes are the same chain, so a recalled chain is the one a decode
/// would give.
#[derive(Debug, Default)]
pub struct ChainMemo {
    bytes: Vec<u8>,
    chain: Vec<SignedGrant>,
}

impl ChainMemo {
    /// The chain whose canonical bytes are `span`; `None` if it is not one.
    fn chain(&mut self, span: &[u8]) -> Option<Vec<SignedGrant>> {
        if self.chain.is_empty() || self.bytes != span {
            let chain = chain_from(&cbor::decode_strict(span).ok()?).ok()?;
            self.bytes.clear();
            self.bytes.extend_from_slice(span);
            self.chain = chain;
        }
        Some(self.chain.clone())
    }
}

impl WireRequest {
    /// Reads a request from the entries of its canonical map (checked by
    /// [`cbor::map_spans_strict`]) without a value tree of the whole,
    /// recalling the chain from `memo`. `None` for anything that is not a
    /// whole, valid request: the caller then decodes through
    /// [`WireRequest::from_value`], which says what is wrong. Every field
    /// is read by the parser `from_value` uses, from the very value the
    /// tree holds under its key, so what this accepts is what `from_value`
    /// accepts, equal (checked over the fuzz corpus, `fuzzing::check_body`).
    pub(crate) fn from_spans(entries: &[MapSpan<'_>], memo: &mut ChainMemo) -> Option<Self> {
        fn tree<T, E>(span: &[u8], parse: impl FnOnce(&Value) -> Result<T, E>) -> Option<T> {
            parse(&cbor::decode_strict(span).ok()?).ok()
        }
        let (mut frame, mut chain, mut caller, mut cost, mut now, mut signature) = (None, None, None, None, None, None);
        let (mut money, mut label, mut args, mut continues) = (None, None, None, None);
        // Canonical keys are unique: no field is met twice.
        for &(key, span) in entries {
            match key {
                "frame" => frame = Some(tree(span, Frame::from_value)?),
                "chain" => chain = Some(memo.chain(span)?),
                "caller" => caller = Some(Did::parse(cbor::text_of(span)?).ok()?),
                "cost" => cost = Some(tree(span, energy_from)?),
                "money" => money = Some(tree(span, Funds::from_value)?),
                "label" => label = Some(tree(span, Label::from_value)?),
                "args" => args = Some(cbor::bytes_of(span)?.to_vec()),
                "continues" => {
                    let h = cbor::text_of(span)?;
                    continues = Some(handle_len_ok(h).then(|| h.to_owned())?);
                }
                "now" => now = Some(cbor::uint_of(span)?),
                "signature" => signature = Some(<[u8; 64]>::try_from(cbor::bytes_of(span)?).ok()?),
                _ => return None,
            }
        }
        let frame: Frame = frame?;
        if !args_sealed(args.as_deref(), &frame) || receipt_fields_bounded(&frame, money.as_ref()).is_err() {
            return None;
        }
        Some(Self {
            frame,
            chain: chain?,
            caller: caller?,
            cost: cost?,
            money,
            label,
            args,
            continues,
            now: now?,
            signature: signature?,
        })
    }
}
