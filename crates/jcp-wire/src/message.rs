//! §11 messages: `WireRequest { frame, chain, caller, cost, now, signature }`
//! and `WireResponse { decision, receipt }`, plus the binding's own
//! messages (revocation and amendment feeds, the reply of the endpoint
//! behind the gate). Every message is a canonical det-CBOR map whose key
//! set is closed: an unknown field is refused, never forwarded (§4.10).
//!
//! Optional request fields are omitted when absent, so a request that uses
//! none of them is exactly §11's six fields:
//! `money` (§4.8), `label` (§4.10: the argument's label; absent = not
//! computed), `args` (the argument bytes forwarded to the endpoint behind
//! the gate; their content id MUST equal the frame's `payload_hash`, so the
//! receipt seals them), `continues` (§6.1: the handle a later exchange
//! names).

use jcp::cbor::{self, ContentId, Fields, Value};
use jcp::decision::{Cost, Reason, Verdict};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::Frame;
use jcp::grant::Funds;
use jcp::grant::SignedGrant;
use jcp::identity::{Did, Keypair};
use jcp_receipt::receipt::ReceiptCore;

use crate::error::WireError;

/// The longest handle the endpoint mints or accepts (§6.1).
pub const MAX_HANDLE_LEN: usize = 128;
/// The most links a presented chain may have.
pub const MAX_CHAIN_LEN: usize = 16;

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
    ])
}

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
    f.finish()?;
    Ok(Energy { uj, provenance, coverage })
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

    /// Whether the caller's signature verifies (`verify_strict`).
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

    /// The decision's cost.
    pub fn decision_cost(&self) -> Cost {
        Cost { energy: self.cost, money: self.money.clone() }
    }

    /// Reads a request from a canonical value. Checks shape only: the
    /// signature is checked by the endpoint in its place (§11).
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("WireRequest", v)?;
        let frame = Frame::from_value(f.req("frame")?)?;
        let Value::Array(links) = f.req("chain")? else {
            return Err(f.error("chain", "expected an array of signed grants").into());
        };
        if links.is_empty() || links.len() > MAX_CHAIN_LEN {
            return Err(f.error("chain", format!("{} links: a chain has 1..={MAX_CHAIN_LEN}", links.len())).into());
        }
        let chain = links.iter().map(SignedGrant::from_value).collect::<Result<Vec<_>, _>>()?;
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
        if let Some(h) = &continues {
            if h.is_empty() || h.len() > MAX_HANDLE_LEN {
                return Err(f.error("continues", format!("a handle has 1..={MAX_HANDLE_LEN} bytes")).into());
            }
        }
        let now = f.uint("now")?;
        let signature = f.bytes_n::<64>("signature")?;
        f.finish()?;
        if let Some(a) = &args {
            if ContentId::of_bytes(a) != frame.payload_hash {
                return Err(WireError::schema(
                    "WireRequest",
                    "args: their content id is not the frame's payload_hash (the receipt must seal what is forwarded)",
                ));
            }
        }
        Ok(Self { frame, chain, caller, cost, money, label, args, continues, now, signature })
    }
}

/// The decision as the wire carries it: a function of the sealed receipt
/// alone, so a repeat (even after a restart) gets byte-identical bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WireDecision {
    /// Allow or deny (with the reason).
    pub verdict: Verdict,
    /// µJ debited from every link (0 on deny).
    pub debited_uj: u64,
    /// The leaf grant's ceiling.
    pub budget_uj: u64,
    /// The leaf grant's remainder after the decision.
    pub budget_remaining_uj: u64,
}

impl WireDecision {
    /// The decision a receipt core states.
    pub fn of_core(c: &ReceiptCore) -> Self {
        Self {
            verdict: c.verdict,
            debited_uj: if c.is_allow() { c.cost_uj } else { 0 },
            budget_uj: c.budget_uj,
            budget_remaining_uj: c.budget_remaining_uj,
        }
    }

    /// Whether it allows.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// The deny reason.
    pub fn reason(&self) -> Option<Reason> {
        match self.verdict {
            Verdict::Allow => None,
            Verdict::Deny(r) => Some(r),
        }
    }

    fn to_value(&self) -> Value {
        let (verdict, reason) = match self.verdict {
            Verdict::Allow => ("allow", None),
            Verdict::Deny(r) => ("deny", Some(Value::text(r.as_str()))),
        };
        cbor::map([
            ("verdict", Some(Value::text(verdict))),
            ("reason", reason),
            ("debited_uj", Some(Value::Uint(self.debited_uj))),
            ("budget_uj", Some(Value::Uint(self.budget_uj))),
            ("budget_remaining_uj", Some(Value::Uint(self.budget_remaining_uj))),
        ])
    }

    fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("Decision", v)?;
        let verdict = match (f.text("verdict")?, f.opt_text("reason")?) {
            ("allow", None) => Verdict::Allow,
            ("deny", Some(r)) => {
                Verdict::Deny(Reason::parse(r).ok_or_else(|| f.error("reason", format!("unknown reason {r:?}")))?)
            }
            (v, r) => return Err(f.error("verdict", format!("verdict {v:?} with reason {r:?}")).into()),
        };
        let debited_uj = f.uint("debited_uj")?;
        let budget_uj = f.uint("budget_uj")?;
        let budget_remaining_uj = f.uint("budget_remaining_uj")?;
        f.finish()?;
        Ok(Self { verdict, debited_uj, budget_uj, budget_remaining_uj })
    }
}

/// The response to a request (§11): the decision and the sealed receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireResponse {
    /// The decision.
    pub decision: WireDecision,
    /// The sealed JCR-1 receipt (allow and deny alike).
    pub receipt: Vec<u8>,
}

impl WireResponse {
    /// The canonical message value.
    pub fn to_value(&self) -> Value {
        cbor::map([("decision", Some(self.decision.to_value())), ("receipt", Some(Value::Bytes(self.receipt.clone())))])
    }

    /// Reads a response.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("WireResponse", v)?;
        let decision = WireDecision::from_value(f.req("decision")?)?;
        let Value::Bytes(receipt) = f.req("receipt")? else {
            return Err(f.error("receipt", "expected bytes").into());
        };
        let receipt = receipt.clone();
        f.finish()?;
        Ok(Self { decision, receipt })
    }

    /// The receipt's id (what a continuation or an outcome names).
    pub fn receipt_id(&self) -> ContentId {
        ContentId::of_bytes(&self.receipt)
    }
}

/// What the endpoint behind the gate answered, sent after the response of
/// an allowed request (§6.1): admitted as `data`, labelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireReply {
    /// The receipt of the exchange this answers.
    pub receipt: ContentId,
    /// `done`, `working` (a handle to poll) or `input-required`, or
    /// `unavailable` for a repeat whose reply this endpoint no longer holds.
    pub state: ReplyState,
    /// The handle of work that goes on.
    pub handle: Option<String>,
    /// The output or status text (data: never control).
    pub output: Vec<u8>,
    /// The output's label: the first request's action's output, joined
    /// with everything the client has sent the work (§6.1 item 3).
    pub label: Label,
    /// On `done` after continuations: the closing record's id.
    pub closing: Option<ContentId>,
}

/// The state a reply reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyState {
    /// The work is done; `output` is its outcome.
    Done,
    /// The work goes on; poll with `continues = handle`.
    Working,
    /// The work needs answers; send them with `continues = handle`.
    InputRequired,
    /// The work failed.
    Failed,
    /// A repeated request: the reply is not held (the decision is).
    Unavailable,
}

impl ReplyState {
    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Working => "working",
            Self::InputRequired => "input-required",
            Self::Failed => "failed",
            Self::Unavailable => "unavailable",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::Done, Self::Working, Self::InputRequired, Self::Failed, Self::Unavailable]
            .into_iter()
            .find(|x| x.as_str() == s)
    }
}

impl WireReply {
    /// The canonical message value.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("msg", Some(Value::text("reply"))),
            ("receipt", Some(Value::text(self.receipt.to_hex()))),
            ("state", Some(Value::text(self.state.as_str()))),
            ("handle", self.handle.clone().map(Value::Text)),
            ("output", Some(Value::Bytes(self.output.clone()))),
            ("label", Some(self.label.to_value())),
            ("closing", self.closing.map(|c| Value::text(c.to_hex()))),
        ])
    }

    /// Reads a reply.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let mut f = Fields::new("WireReply", v)?;
        if f.text("msg")? != "reply" {
            return Err(f.error("msg", "expected \"reply\"").into());
        }
        let receipt = f.cid("receipt")?;
        let s = f.text("state")?;
        let state = ReplyState::parse(s).ok_or_else(|| f.error("state", format!("unknown state {s:?}")))?;
        let handle = f.opt_text("handle")?.map(str::to_owned);
        let Value::Bytes(output) = f.req("output")? else {
            return Err(f.error("output", "expected bytes").into());
        };
        let output = output.clone();
        let label = Label::from_value(f.req("label")?)?;
        let closing = f.opt_cid("closing")?;
        f.finish()?;
        Ok(Self { receipt, state, handle, output, label, closing })
    }
}

/// The binding's feed messages: how revocations and amendments reach the
/// endpoint (§4.3 propagation, §4.7). Both are self-authenticating (signed
/// by the grant's issuer); the endpoint checks authority, records, then
/// applies.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    },
    /// The outcome of an allowed action, reported by the party that ran it
    /// (§4.11: only the holder knows whether it took effect), signed by it.
    Outcome(SignedOutcome),
    /// A peer point's signed budget-channel statement (§4.5): admitted
    /// (recorded, then applied), its settled spend counts from then on.
    Statement(jcp::channel::SignedStatement),
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
    /// The canonical message value.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Revocation { revocation, grant, marker } => cbor::map([
                ("msg", Some(Value::text("revocation"))),
                ("revocation", Some(revocation.to_value())),
                ("grant", Some(grant.to_value())),
                ("marker", Some(Value::Uint(*marker))),
            ]),
            Self::Amendment { steered, checkpoint, amendment, continuation } => cbor::map([
                ("msg", Some(Value::text("amendment"))),
                ("steered", Some(steered.to_value())),
                ("checkpoint", Some(checkpoint.to_value())),
                ("amendment", Some(amendment.to_value())),
                ("continuation", Some(continuation.to_value())),
            ]),
            Self::Outcome(o) => o.to_value(),
            Self::Statement(st) => {
                cbor::map([("msg", Some(Value::text("statement"))), ("statement", Some(st.to_value()))])
            }
        }
    }

    fn from_value(kind: &str, v: &Value) -> Result<Self, WireError> {
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
            },
            "outcome" => Self::Outcome(SignedOutcome::from_fields(&mut f)?),
            "statement" => Self::Statement(jcp::channel::SignedStatement::from_value(f.req("statement")?)?),
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

/// Any message a client may send the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A decision request (§11).
    Request(Box<WireRequest>),
    /// A feed message.
    Feed(Box<Feed>),
    /// §4.5: asks the endpoint for its signed statement of its cumulative
    /// allowed spend on a channel grant (`{msg: "statement-ask", grant_id}`).
    StatementAsk(ContentId),
}

/// The ask for a point's statement on a channel grant (§4.5).
pub fn statement_ask(grant_id: &ContentId) -> Value {
    cbor::map([("msg", Some(Value::text("statement-ask"))), ("grant_id", Some(Value::text(grant_id.to_hex())))])
}

/// The endpoint's answer to a statement ask: `{msg: "statement", statement}`.
pub fn statement_answer(s: &jcp::channel::SignedStatement) -> Value {
    cbor::map([("msg", Some(Value::text("statement"))), ("statement", Some(s.to_value()))])
}

fn read_ask(v: &Value) -> Result<ContentId, WireError> {
    let mut f = Fields::new("StatementAsk", v)?;
    f.text("msg")?;
    let id = f.cid("grant_id")?;
    f.finish()?;
    Ok(id)
}

impl Inbound {
    /// Decodes a frame body: canonical det-CBOR, then the message. A map
    /// with a `msg` member is a feed message; any other map is a request.
    pub fn decode(body: &[u8]) -> Result<Self, WireError> {
        let v = crate::codec::decode_body(body)?;
        let kind = v.get("msg").map(|m| match m {
            Value::Text(t) => Ok(t.clone()),
            _ => Err(WireError::schema("message", "msg: expected text")),
        });
        match kind {
            None => Ok(Self::Request(Box::new(WireRequest::from_value(&v)?))),
            Some(Ok(k)) if k == "statement-ask" => Ok(Self::StatementAsk(read_ask(&v)?)),
            Some(k) => Ok(Self::Feed(Box::new(Feed::from_value(&k?, &v)?))),
        }
    }
}

/// Any message the endpoint sends a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outbound {
    /// The response to a request.
    Response(WireResponse),
    /// The reply of the endpoint behind the gate, after an allow.
    Reply(WireReply),
    /// The answer to a feed message.
    FeedAnswer(FeedAnswer),
    /// A point's signed statement, answering a statement ask (§4.5).
    Statement(jcp::channel::SignedStatement),
    /// The endpoint refused a frame (and closed the connection).
    Error {
        /// The refusal's code ([`WireError::code`]).
        code: String,
        /// What was wrong, and where.
        message: String,
    },
}

impl Outbound {
    /// Decodes a frame body sent by an endpoint.
    pub fn decode(body: &[u8]) -> Result<Self, WireError> {
        let v = crate::codec::decode_body(body)?;
        match v.get("msg") {
            None => Ok(Self::Response(WireResponse::from_value(&v)?)),
            Some(Value::Text(t)) if t == "reply" => Ok(Self::Reply(WireReply::from_value(&v)?)),
            Some(Value::Text(t)) if t == "feed-answer" => Ok(Self::FeedAnswer(FeedAnswer::from_value(&v)?)),
            Some(Value::Text(t)) if t == "statement" => {
                let mut f = Fields::new("StatementAnswer", &v)?;
                f.text("msg")?;
                let st = jcp::channel::SignedStatement::from_value(f.req("statement")?)?;
                f.finish()?;
                Ok(Self::Statement(st))
            }
            Some(Value::Text(t)) if t == "error" => {
                let mut f = Fields::new("Error", &v)?;
                f.text("msg")?;
                let code = f.text("code")?.to_owned();
                let message = f.text("message")?.to_owned();
                f.finish()?;
                Ok(Self::Error { code, message })
            }
            Some(other) => Err(WireError::schema("message", format!("unknown endpoint message {other:?}"))),
        }
    }
}
