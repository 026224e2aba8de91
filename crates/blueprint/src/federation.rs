//! The federation profile (spec §11): the task envelope carried under the
//! registered `com.example/federation` extension, lossy-aware A2A/MCP state
//! codecs, terminal commitments and audience checks. Correlation grants
//! nothing.

use std::collections::BTreeMap;

use crate::artifact::{exact_version, CLASSIFICATION, MARKERS, SIGNATURE};
use crate::canon;
use crate::digest::{Domain, Tagged};
use crate::error::{fail, Code, Error, Result};
use crate::json::{Map, Value};
use crate::limits::Limits;
use crate::portability;
use crate::shape::{self, opt, req, Field, Ty};
use crate::signature::{self, KeySet};

const TEXT: Ty = Ty::Str(shape::text);
const DIGEST: Ty = Ty::Str(shape::digest);
const U32: Ty = Ty::Int { min: 0, max: 4_294_967_295 };

/// Logical task states (the reference's spelling: `canceled`).
pub const STATES: &[&str] =
    &["submitted", "working", "input_required", "completed", "canceled", "failed", "rejected", "auth_required"];
/// Terminal states a receipt may carry (cancellation is a request until confirmed).
pub const TERMINAL: &[&str] = &["completed", "failed", "canceled", "rejected"];
/// Checkpoint statuses (a non-terminal observed state).
pub const CHECKPOINT_STATUSES: &[&str] = &["submitted", "working", "input_required", "auth_required"];

const IDENTITY_CLAIM: Ty =
    Ty::Obj(&[req("kind", Ty::Enum(&["correlation", "binding", "authority"])), req("value", TEXT)]);

/// The envelope's closed world: 23 members (18 required, 5 optional), one
/// per row of [`MAPPING`]. `terminal_state`/`evidence_receipt` travel
/// together, as do `checkpoint_status`/`checkpoint_commitment`
/// ([`cross_field`]).
pub const ENVELOPE_FIELDS: &[Field] = &[
    req("audience", TEXT),
    req("authority_proof_references", Ty::Arr { item: &DIGEST, min: 0, max: 32 }),
    req("blueprint_digest", DIGEST),
    opt("checkpoint_commitment", DIGEST),
    opt(
        "checkpoint_request",
        Ty::Obj(&[req("kind", Ty::Enum(&["input_required", "auth_required"])), req("request_digest", DIGEST)]),
    ),
    opt("checkpoint_status", Ty::Enum(CHECKPOINT_STATUSES)),
    req(
        "compatibility_reference",
        Ty::Arr { item: &Ty::Obj(&[req("identity", Ty::Str(exact_version)), req("name", TEXT)]), min: 0, max: 32 },
    ),
    req("deployment_digest", DIGEST),
    opt(
        "evidence_receipt",
        Ty::Obj(&[
            req("checkpoint_history_commitment", DIGEST),
            req("result_digest", DIGEST),
            req("signature", SIGNATURE),
            req("terminal_commitment", DIGEST),
        ]),
    ),
    req("idempotency_identity", TEXT),
    req("identity_mapping_evidence", Ty::Obj(&[req("claims", Ty::Arr { item: &IDENTITY_CLAIM, min: 0, max: 16 })])),
    opt("initiating_subject", TEXT),
    req("input_commitment", DIGEST),
    req("issuer", TEXT),
    opt("parent_execution_reference", TEXT),
    req("recovery_handle", TEXT),
    req(
        "resource_policy",
        Ty::Obj(&[req("attempts", U32), req("concurrency", U32), req("cost", U32), req("tokens", U32)]),
    ),
    req(
        "result_classification_ceiling",
        Ty::Obj(&[
            req("level", Ty::Enum(CLASSIFICATION)),
            req("markers", Ty::Arr { item: &Ty::Enum(MARKERS), min: 0, max: 2 }),
        ]),
    ),
    req("result_schema", DIGEST),
    req("subject", TEXT),
    req("task_identity", TEXT),
    opt("terminal_state", Ty::Enum(TERMINAL)),
    req("time_policy", Ty::Obj(&[req("elapsed_ms", U32)])),
];

/// The envelope's cross-field rules (`invalid_constraint`): a parent
/// reference needs its initiating subject; checkpoint status and commitment
/// travel together and never beside a terminal state; a terminal state and
/// its evidence receipt travel together.
pub fn cross_field(envelope: &Value) -> Result<()> {
    let has = |k: &str| envelope.get(k).is_some();
    let rule = |ok: bool, at: &str, why: &str| {
        if ok {
            Ok(())
        } else {
            fail(Code::InvalidConstraint, at, why)
        }
    };
    rule(
        !has("parent_execution_reference") || has("initiating_subject"),
        "/parent_execution_reference",
        "a parent execution reference needs its initiating_subject",
    )?;
    rule(
        has("checkpoint_status") == has("checkpoint_commitment"),
        "/checkpoint_status",
        "checkpoint_status and checkpoint_commitment travel together",
    )?;
    rule(
        !(has("checkpoint_status") && has("terminal_state")),
        "/checkpoint_status",
        "a checkpoint status never sits beside a terminal state",
    )?;
    rule(
        has("terminal_state") == has("evidence_receipt"),
        "/terminal_state",
        "terminal_state and evidence_receipt travel together",
    )
}

/// A decoded envelope.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Envelope {
    /// The decoded envelope (its 23 members).
    pub value: Value,
    /// Its canonical bytes (equal to the input: decoding is canonical-first).
    pub canonical: String,
}

/// `decode_federation_envelope`: canonical-first → object → portability → structure.
pub fn decode_envelope(bytes: &[u8], limits: &Limits) -> Result<Envelope> {
    let value = canon::decode_canonical(bytes, limits)?;
    shape::object(&value, "")?;
    portability::scan(&value, "", &[], Code::ForbiddenPortableValue)?;
    shape::check_object(&value, ENVELOPE_FIELDS, "")?;
    cross_field(&value)?;
    let canonical = canon::canonical_string(&value)?;
    Ok(Envelope { value, canonical })
}

fn state_index(s: &str, at: &str) -> Result<usize> {
    STATES
        .iter()
        .position(|x| *x == s)
        .ok_or_else(|| Error::new(Code::InvalidType, at, format!("{s:?} is not a task state")))
}

/// Internal state → A2A `TaskState` name.
pub fn to_a2a(state: &str) -> Result<String> {
    let i = state_index(state, "state")?;
    Ok(format!("TASK_STATE_{}", STATES[i].to_ascii_uppercase()))
}

/// A2A `TaskState` name → internal state. `TASK_STATE_UNSPECIFIED` is unmapped.
pub fn from_a2a(a2a: &str) -> Result<String> {
    if a2a == "TASK_STATE_UNSPECIFIED" {
        return fail(Code::FederationStateUnmappable, "a2a_state", "UNSPECIFIED has no protocol meaning");
    }
    let Some(rest) = a2a.strip_prefix("TASK_STATE_") else {
        return fail(Code::InvalidType, "a2a_state", format!("{a2a:?} is not an A2A task state"));
    };
    let lower = rest.to_ascii_lowercase();
    state_index(&lower, "a2a_state")?;
    Ok(lower)
}

/// Logical state → MCP task status. `submitted` and `auth_required` have no
/// MCP counterpart, `rejected` is terminal with none: each denies crossing
/// (`federation_state_unmappable`), never a silent degrade.
pub fn to_mcp(state: &str) -> Result<&'static str> {
    let i = state_index(state, "state")?;
    Ok(match STATES[i] {
        "working" => "working",
        "input_required" => "input_required",
        "completed" => "completed",
        "canceled" => "cancelled",
        "failed" => "failed",
        other => return fail(Code::FederationStateUnmappable, "state", format!("{other:?} cannot cross into MCP")),
    })
}

/// MCP task status → logical state.
pub fn from_mcp(status: &str) -> Result<&'static str> {
    Ok(match status {
        "working" => "working",
        "input_required" => "input_required",
        "completed" => "completed",
        "cancelled" => "canceled",
        "failed" => "failed",
        other => return fail(Code::InvalidType, "mcp_status", format!("{other:?} is not an MCP task status")),
    })
}

/// How one envelope member is carried (the mapping's verdict).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Carriage {
    /// The transport field carries the semantic exactly.
    Native,
    /// A native home exists but carries less than the member means.
    Partial,
    /// No safe native home: only in the extension payload.
    Extension,
}

/// One row of the field-by-field A2A / MCP Tasks mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct MappingRow {
    /// 1-based row number of the published table.
    pub index: u8,
    /// The logical field (bijective with an envelope member).
    pub member: &'static str,
    /// How the member is carried: natively, partially, or only in the extension.
    pub carriage: Carriage,
    /// Where A2A 1.0.0 holds it, if anywhere.
    pub a2a: &'static str,
    /// Where MCP Tasks holds it, if anywhere.
    pub mcp: &'static str,
}

const fn row(index: u8, member: &'static str, a2a: &'static str, mcp: &'static str, carriage: Carriage) -> MappingRow {
    MappingRow { index, member, carriage, a2a, mcp }
}

/// The 23-row mapping (3 native, 5 partial, 15 extension), in the published
/// table's order. Where each row comes from: docs/decisions.md (§11).
pub const MAPPING: &[MappingRow] = &[
    row(1, "task_identity", "Task.id", "Task.taskId", Carriage::Native),
    row(
        2,
        "idempotency_identity",
        "none (Message.message_id identifies a message, not an idempotency key)",
        "none",
        Carriage::Extension,
    ),
    row(
        3,
        "parent_execution_reference",
        "Message.reference_task_ids, Task.context_id (a reference, not a parent execution)",
        "none",
        Carriage::Partial,
    ),
    row(
        4,
        "initiating_subject",
        "none (SecurityScheme is transport-level)",
        "none (transport auth)",
        Carriage::Extension,
    ),
    row(5, "blueprint_digest", "none", "none", Carriage::Extension),
    row(6, "deployment_digest", "none", "none", Carriage::Extension),
    row(
        7,
        "input_commitment",
        "Message.parts[].data, Part.metadata (a payload home, not a digest commitment)",
        "request params",
        Carriage::Partial,
    ),
    row(
        8,
        "result_schema",
        "Part.media_type, AgentSkill.output_modes (a media type is not a schema identity)",
        "CompletedTask.result (untyped)",
        Carriage::Extension,
    ),
    row(9, "result_classification_ceiling", "none", "none", Carriage::Extension),
    row(
        10,
        "time_policy",
        "SendMessageConfiguration (no time bound)",
        "Task.ttlMs (a storage TTL, not an execution bound)",
        Carriage::Partial,
    ),
    row(11, "resource_policy", "none", "none", Carriage::Extension),
    row(12, "recovery_handle", "Task.id + GetTask", "taskId + tasks/get", Carriage::Native),
    row(13, "issuer", "transport-level only (SecurityScheme)", "transport auth", Carriage::Extension),
    row(14, "subject", "none", "none", Carriage::Extension),
    row(15, "audience", "none", "none", Carriage::Extension),
    row(16, "identity_mapping_evidence", "none", "none", Carriage::Extension),
    row(
        17,
        "checkpoint_request",
        "TASK_STATE_INPUT_REQUIRED + TaskStatus.message (free-form, not typed)",
        "status input_required + inputRequests",
        Carriage::Partial,
    ),
    row(18, "checkpoint_status", "TaskStatus.state", "Task.status", Carriage::Native),
    row(
        19,
        "checkpoint_commitment",
        "none",
        "tasks/update inputResponses (responses, no commitment digest)",
        Carriage::Extension,
    ),
    row(
        20,
        "terminal_state",
        "TASK_STATE_COMPLETED/FAILED/CANCELED/REJECTED",
        "completed/failed/cancelled (lossy both directions)",
        Carriage::Partial,
    ),
    row(
        21,
        "evidence_receipt",
        "none (AgentCardSignature signs the AgentCard, not a task result)",
        "none",
        Carriage::Extension,
    ),
    row(
        22,
        "compatibility_reference",
        "AgentCard.version (a version string, not an exact build identity)",
        "none",
        Carriage::Extension,
    ),
    row(23, "authority_proof_references", "transport-level only", "transport auth", Carriage::Extension),
];

/// `federation_mapping/0` after a consistency check: every envelope member
/// exactly once, rows numbered 1..=23 in order, 3 native / 5 partial /
/// 15 extension, and no native transport field claimed by two members.
pub fn federation_mapping() -> Result<&'static [MappingRow]> {
    check_mapping(MAPPING)?;
    Ok(MAPPING)
}

/// The mapping consistency gate (`federation_mapping_conflict`).
pub fn check_mapping(rows: &[MappingRow]) -> Result<()> {
    let conflict = |at: &str, why: String| fail(Code::FederationMappingConflict, at, why);
    for f in ENVELOPE_FIELDS {
        let n = rows.iter().filter(|r| r.member == f.name).count();
        if n != 1 {
            return conflict(f.name, format!("mapped {n} times"));
        }
    }
    if rows.len() != ENVELOPE_FIELDS.len() {
        return conflict("mapping", format!("{} rows for {} members", rows.len(), ENVELOPE_FIELDS.len()));
    }
    for (i, r) in rows.iter().enumerate() {
        if usize::from(r.index) != i + 1 {
            return conflict(r.member, format!("row {} is numbered {}", i + 1, r.index));
        }
        if r.carriage == Carriage::Native
            && rows[..i].iter().any(|o| o.carriage == Carriage::Native && (o.a2a == r.a2a || o.mcp == r.mcp))
        {
            return conflict(r.member, "a native field is claimed twice".into());
        }
    }
    let count = |c: Carriage| rows.iter().filter(|r| r.carriage == c).count();
    let split = (count(Carriage::Native), count(Carriage::Partial), count(Carriage::Extension));
    if split != (3, 5, 15) {
        return conflict(
            "mapping",
            format!("{} native, {} partial, {} extension: the published verdict is 3/5/15", split.0, split.1, split.2),
        );
    }
    Ok(())
}

fn receipt(envelope: &Value) -> Result<&Map> {
    for k in ["task_identity", "terminal_state"] {
        match envelope.get(k) {
            Some(Value::String(_)) => {}
            Some(_) => return fail(Code::InvalidType, format!("/{k}"), "expected a string"),
            None => {
                return fail(
                    Code::MissingRequiredField,
                    format!("/{k}"),
                    "a terminal receipt names its task and terminal state",
                )
            }
        }
    }
    match envelope.get("evidence_receipt") {
        Some(Value::Object(m)) => Ok(m),
        Some(_) => fail(Code::InvalidType, "/evidence_receipt", "expected an object"),
        None => {
            fail(Code::MissingRequiredField, "/evidence_receipt", "a terminal receipt carries its evidence receipt")
        }
    }
}

fn receipt_member<'a>(r: &'a Map, k: &str) -> Result<&'a Value> {
    r.get(k).ok_or_else(|| Error::new(Code::MissingRequiredField, format!("/evidence_receipt/{k}"), "absent"))
}

/// A Terminal Commitment: the federation-envelope digest over exactly task
/// identity, terminal state, result digest, result classification,
/// compatibility reference, authority-proof references and
/// checkpoint-history commitment.
pub fn terminal_commitment(envelope: &Value) -> Result<Tagged> {
    let r = receipt(envelope)?;
    let top = |k: &str| envelope.get(k).cloned().unwrap_or(Value::Null);
    let body = Value::Object(Map::from_pairs(vec![
        ("authority_proof_references".into(), top("authority_proof_references")),
        ("checkpoint_history_commitment".into(), receipt_member(r, "checkpoint_history_commitment")?.clone()),
        ("compatibility_reference".into(), top("compatibility_reference")),
        ("result_classification_ceiling".into(), top("result_classification_ceiling")),
        ("result_digest".into(), receipt_member(r, "result_digest")?.clone()),
        ("task_identity".into(), top("task_identity")),
        ("terminal_state".into(), top("terminal_state")),
    ]));
    Ok(Tagged::compute(Domain::FederationEnvelope, &canon::canonical_bytes(&body)?))
}

/// The digest a receipt signature must name: the federation-envelope digest
/// of the envelope with the receipt's own `signature` member removed.
pub fn covered_digest(envelope: &Value) -> Result<Tagged> {
    let mut body = envelope.clone();
    if let Value::Object(m) = &mut body {
        if let Some(Value::Object(r)) = m.get("evidence_receipt") {
            let mut r = r.clone();
            r.remove("signature");
            m.insert("evidence_receipt", Value::Object(r));
        }
    }
    Ok(Tagged::compute(Domain::FederationEnvelope, &canon::canonical_bytes(&body)?))
}

/// Compares two receipts: for one task identity ANY divergence of the
/// committed fields denies `federation_terminal_conflict`.
pub fn compare_receipts(a: &Value, b: &Value) -> Result<()> {
    if a.get("task_identity") != b.get("task_identity") {
        return Ok(());
    }
    let (ca, cb) = (terminal_commitment(a)?, terminal_commitment(b)?);
    if ca != cb {
        return fail(Code::FederationTerminalConflict, "task_identity", format!("commitments differ: {ca} vs {cb}"));
    }
    Ok(())
}

/// A verified terminal fact (and the form a receiver keeps of earlier ones).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReceiptFact {
    /// The task identity the receipt is about.
    pub task_identity: String,
    /// The terminal state it reports.
    pub terminal_state: String,
    /// The Terminal Commitment digest (§11): any divergence between two receipts for one task identity denies
    /// `federation_terminal_conflict`.
    pub terminal_commitment: Tagged,
}

/// The receiving context of [`verify_commitment`]. Each `None` pin means the
/// receiver does not pin that member. Caller-supplied data: it carries no
/// authority.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The flat pool of trusted keys (used when `issuer_key_sets` is `None`).
    pub keys: KeySet,
    /// The issuer the receiver expects (`audience_mismatch` otherwise).
    pub issuer: Option<String>,
    /// The subject the receiver expects.
    pub subject: Option<String>,
    /// The audience the receiver expects: itself.
    pub audience: Option<String>,
    /// Per-issuer key pools; when present they replace the flat pool and the
    /// receipt's claimed issuer selects one (an unknown issuer: no key).
    pub issuer_key_sets: Option<BTreeMap<String, KeySet>>,
    /// Inclusive RFC 3339 `Z` bounds on the signed `created_at`.
    pub created_after: Option<String>,
    /// Upper bound; see `created_after`.
    pub created_before: Option<String>,
    /// Terminal facts verified earlier.
    pub prior_receipts: Vec<ReceiptFact>,
}

fn freshness(attrs: &Value, ctx: &Context) -> Result<()> {
    let at = "/evidence_receipt/signature/signed_attributes/created_at";
    let stamp = attrs
        .get("created_at")
        .and_then(Value::as_str)
        .and_then(shape::parse_timestamp_ms)
        .ok_or_else(|| Error::new(Code::InvalidType, at, "not an RFC 3339 timestamp"))?;
    for (name, pin, after) in
        [("created_after", &ctx.created_after, true), ("created_before", &ctx.created_before, false)]
    {
        let Some(pin) = pin else { continue };
        let bound = shape::parse_timestamp_ms(pin)
            .ok_or_else(|| Error::new(Code::InvalidType, name, "not an RFC 3339 Z timestamp"))?;
        if (after && stamp < bound) || (!after && stamp > bound) {
            return fail(Code::InvalidConstraint, at, format!("signed outside the receiver's window ({name} {pin})"));
        }
    }
    Ok(())
}

/// `Federation.verify_commitment`: verifies a terminal receipt against the
/// receiving context, in the reference's order — terminal members present →
/// receipt signature (the context's keys) → binding (purpose
/// `federation-envelope`, signed digest = [`covered_digest`]) → terminal
/// commitment recomputed → issuer/subject/audience pins
/// (`audience_mismatch`) → conflict with prior receipts
/// (`federation_terminal_conflict`) → freshness window. Facts, never a
/// decision: correlation grants nothing.
pub fn verify_commitment(envelope: &Value, ctx: &Context) -> Result<ReceiptFact> {
    let r = receipt(envelope)?;
    let sig = receipt_member(r, "signature")?;
    let (pool, attributed) = match &ctx.issuer_key_sets {
        None => (ctx.keys.clone(), false),
        Some(sets) => (
            envelope.get("issuer").and_then(Value::as_str).and_then(|i| sets.get(i)).cloned().unwrap_or_default(),
            true,
        ),
    };
    signature::verify_signature(sig, &pool).map_err(|e| match e.fixed_code() {
        Some(Code::SignatureKeyUnsupported) if attributed => {
            Error::new(Code::SignatureKeyUnsupported, "/issuer", "no key of this issuer's key set signed the receipt")
        }
        _ => e,
    })?;
    let attrs = sig.get("signed_attributes").unwrap_or(&Value::Null);
    let s = |k: &str| attrs.get(k).and_then(Value::as_str).unwrap_or_default();
    let at = "/evidence_receipt/signature";
    if s("purpose") != "federation-envelope" {
        return fail(
            Code::InvalidConstraint,
            at,
            format!("signed for purpose {:?}, not a federation receipt", s("purpose")),
        );
    }
    let covered = covered_digest(envelope)?;
    if s("content_digest") != covered.to_string() {
        return fail(
            Code::DigestMismatch,
            at,
            format!("signed digest {} is not this envelope's {covered}", s("content_digest")),
        );
    }
    let commitment = terminal_commitment(envelope)?;
    let declared = receipt_member(r, "terminal_commitment")?.as_str().ok_or_else(|| {
        Error::new(Code::InvalidType, "/evidence_receipt/terminal_commitment", "expected a tagged digest")
    })?;
    if Tagged::parse(declared)? != commitment {
        return fail(
            Code::DigestMismatch,
            "/evidence_receipt/terminal_commitment",
            format!("declared {declared}, recomputed {commitment}"),
        );
    }
    for (k, pin) in [("issuer", &ctx.issuer), ("subject", &ctx.subject), ("audience", &ctx.audience)] {
        let Some(want) = pin else { continue };
        let got = envelope.get(k).and_then(Value::as_str).unwrap_or_default();
        if got != want {
            return fail(
                Code::AudienceMismatch,
                format!("/{k}"),
                format!("envelope says {got:?}, receiving context is {want:?}"),
            );
        }
    }
    let fact = ReceiptFact {
        task_identity: envelope.get("task_identity").and_then(Value::as_str).unwrap_or_default().to_string(),
        terminal_state: envelope.get("terminal_state").and_then(Value::as_str).unwrap_or_default().to_string(),
        terminal_commitment: commitment,
    };
    if let Some(p) = ctx.prior_receipts.iter().find(|p| {
        p.task_identity == fact.task_identity
            && (p.terminal_state != fact.terminal_state || p.terminal_commitment != fact.terminal_commitment)
    }) {
        return fail(
            Code::FederationTerminalConflict,
            "/evidence_receipt",
            format!(
                "task {:?} was already received as {} ({}); this receipt says {} ({})",
                fact.task_identity,
                p.terminal_state,
                p.terminal_commitment,
                fact.terminal_state,
                fact.terminal_commitment
            ),
        );
    }
    freshness(attrs, ctx)?;
    Ok(fact)
}
