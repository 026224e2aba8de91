//! The federation profile (spec §11): the task envelope carried under the
//! registered `com.example/federation` extension, lossy-aware A2A/MCP state
//! codecs, terminal commitments and audience checks. Correlation grants
//! nothing.

use crate::artifact::{exact_version, CLASSIFICATION, MARKERS, SIGNATURE};
use crate::canon;
use crate::digest::{Domain, Tagged};
use crate::error::{fail, Code, Error, Result};
use crate::json::{Map, Value};
use crate::limits::Limits;
use crate::portability;
use crate::shape::{self, req, Field, Ty};

const TEXT: Ty = Ty::Str(shape::text);
const DIGEST: Ty = Ty::Str(shape::digest);
const U32: Ty = Ty::Int {
    min: 0,
    max: 4_294_967_295,
};

/// Internal task states.
pub const STATES: &[&str] = &[
    "submitted",
    "working",
    "input_required",
    "completed",
    "cancelled",
    "failed",
    "rejected",
    "auth_required",
];
/// Terminal states a receipt may carry (cancellation is a request until confirmed).
pub const TERMINAL: &[&str] = &["completed", "failed", "cancelled", "rejected"];

/// The envelope members this release knows (the reference's remaining five
/// optional members are not published in the interop corpus; see
/// docs/decisions.md — unknown members are refused, fail-closed).
pub const ENVELOPE_FIELDS: &[Field] = &[
    req("audience", TEXT),
    req(
        "authority_proof_references",
        Ty::Arr {
            item: &DIGEST,
            min: 0,
            max: 32,
        },
    ),
    req("blueprint_digest", DIGEST),
    req(
        "compatibility_reference",
        Ty::Arr {
            item: &Ty::Obj(&[req("identity", Ty::Str(exact_version)), req("name", TEXT)]),
            min: 0,
            max: 32,
        },
    ),
    req("deployment_digest", DIGEST),
    req(
        "evidence_receipt",
        Ty::Obj(&[
            req("checkpoint_history_commitment", DIGEST),
            req("result_digest", DIGEST),
            req("signature", SIGNATURE),
            req("terminal_commitment", DIGEST),
        ]),
    ),
    req("idempotency_identity", TEXT),
    req(
        "identity_mapping_evidence",
        Ty::Obj(&[req(
            "claims",
            Ty::Arr {
                item: &Ty::Obj(&[req("kind", Ty::Enum(&["correlation"])), req("value", TEXT)]),
                min: 0,
                max: 16,
            },
        )]),
    ),
    req("input_commitment", DIGEST),
    req("issuer", TEXT),
    req("recovery_handle", TEXT),
    req(
        "resource_policy",
        Ty::Obj(&[
            req("attempts", U32),
            req("concurrency", U32),
            req("cost", U32),
            req("tokens", U32),
        ]),
    ),
    req(
        "result_classification_ceiling",
        Ty::Obj(&[
            req("level", Ty::Enum(CLASSIFICATION)),
            req(
                "markers",
                Ty::Arr {
                    item: &Ty::Enum(MARKERS),
                    min: 0,
                    max: 2,
                },
            ),
        ]),
    ),
    req("result_schema", DIGEST),
    req("subject", TEXT),
    req("task_identity", TEXT),
    req("terminal_state", Ty::Enum(TERMINAL)),
    req("time_policy", Ty::Obj(&[req("elapsed_ms", U32)])),
];

/// A decoded envelope.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Envelope {
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
        return fail(
            Code::FederationStateUnmappable,
            "a2a_state",
            "UNSPECIFIED has no protocol meaning",
        );
    }
    let Some(rest) = a2a.strip_prefix("TASK_STATE_") else {
        return fail(
            Code::InvalidType,
            "a2a_state",
            format!("{a2a:?} is not an A2A task state"),
        );
    };
    let lower = rest.to_ascii_lowercase();
    state_index(&lower, "a2a_state")?;
    Ok(lower)
}

/// Internal state → MCP task status. `rejected` and `auth_required` have no
/// MCP counterpart and deny crossing.
pub fn to_mcp(state: &str) -> Result<&'static str> {
    let i = state_index(state, "state")?;
    Ok(match STATES[i] {
        "submitted" | "working" => "working",
        "input_required" => "input_required",
        "completed" => "completed",
        "cancelled" => "cancelled",
        "failed" => "failed",
        other => {
            return fail(
                Code::FederationStateUnmappable,
                "state",
                format!("{other:?} cannot cross into MCP"),
            )
        }
    })
}

/// MCP task status → internal state.
pub fn from_mcp(status: &str) -> Result<&'static str> {
    Ok(match status {
        "working" => "working",
        "input_required" => "input_required",
        "completed" => "completed",
        "cancelled" => "cancelled",
        "failed" => "failed",
        other => {
            return fail(
                Code::InvalidType,
                "mcp_status",
                format!("{other:?} is not an MCP task status"),
            )
        }
    })
}

/// How one envelope member is carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Carriage {
    /// Carried by a native A2A/MCP field.
    Native,
    /// Partly expressible natively; the full value rides in the extension.
    Partial,
    /// Only in the extension payload.
    Extension,
}

/// One row of the mapping table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct MappingRow {
    pub member: &'static str,
    pub carriage: Carriage,
    pub a2a: &'static str,
    pub mcp: &'static str,
}

/// The mapping of the members this release knows. The protocol carries zero
/// native wire fields of its own: every member rides under the registered
/// extension key; `Native`/`Partial` rows only say where A2A/MCP already
/// hold an equivalent that adapters must keep consistent.
pub const MAPPING: &[MappingRow] = &[
    MappingRow {
        member: "task_identity",
        carriage: Carriage::Native,
        a2a: "Task.id",
        mcp: "_meta taskId",
    },
    MappingRow {
        member: "terminal_state",
        carriage: Carriage::Native,
        a2a: "Task.status.state",
        mcp: "task status",
    },
    MappingRow {
        member: "idempotency_identity",
        carriage: Carriage::Partial,
        a2a: "Message.messageId",
        mcp: "request id",
    },
    MappingRow {
        member: "recovery_handle",
        carriage: Carriage::Partial,
        a2a: "Task.contextId",
        mcp: "_meta",
    },
    MappingRow {
        member: "result_schema",
        carriage: Carriage::Partial,
        a2a: "Artifact.metadata",
        mcp: "outputSchema",
    },
    MappingRow {
        member: "audience",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "authority_proof_references",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "blueprint_digest",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "compatibility_reference",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "deployment_digest",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "evidence_receipt",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "identity_mapping_evidence",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "input_commitment",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "issuer",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "resource_policy",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "result_classification_ceiling",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "subject",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
    MappingRow {
        member: "time_policy",
        carriage: Carriage::Extension,
        a2a: "Task.metadata",
        mcp: "_meta",
    },
];

/// `federation_mapping/0` after a consistency check: every known member
/// exactly once, and no native A2A/MCP field claimed by two members.
pub fn federation_mapping() -> Result<&'static [MappingRow]> {
    check_mapping(MAPPING)?;
    Ok(MAPPING)
}

/// The mapping consistency gate (`federation_mapping_conflict`).
pub fn check_mapping(rows: &[MappingRow]) -> Result<()> {
    for f in ENVELOPE_FIELDS {
        let n = rows.iter().filter(|r| r.member == f.name).count();
        if n != 1 {
            return fail(
                Code::FederationMappingConflict,
                f.name,
                format!("mapped {n} times"),
            );
        }
    }
    for (i, r) in rows.iter().enumerate() {
        if r.carriage == Carriage::Extension {
            continue;
        }
        if rows[..i]
            .iter()
            .any(|o| o.carriage != Carriage::Extension && (o.a2a == r.a2a || o.mcp == r.mcp))
        {
            return fail(
                Code::FederationMappingConflict,
                r.member,
                "a native field is claimed twice",
            );
        }
    }
    Ok(())
}

/// A Terminal Commitment: the digest over task identity, terminal state,
/// result digest, result classification, compatibility ref, authority-proof
/// refs and checkpoint-history commitment (federation-envelope domain).
pub fn terminal_commitment(envelope: &Value) -> Result<Tagged> {
    let receipt = envelope.get("evidence_receipt");
    let pick =
        |v: Option<&Value>, k: &str| v.and_then(|x| x.get(k)).cloned().unwrap_or(Value::Null);
    let body = Value::Object(Map::from_pairs(vec![
        (
            "authority_proof_references".into(),
            pick(Some(envelope), "authority_proof_references"),
        ),
        (
            "checkpoint_history_commitment".into(),
            pick(receipt, "checkpoint_history_commitment"),
        ),
        (
            "compatibility_reference".into(),
            pick(Some(envelope), "compatibility_reference"),
        ),
        (
            "result_classification_ceiling".into(),
            pick(Some(envelope), "result_classification_ceiling"),
        ),
        ("result_digest".into(), pick(receipt, "result_digest")),
        (
            "task_identity".into(),
            pick(Some(envelope), "task_identity"),
        ),
        (
            "terminal_state".into(),
            pick(Some(envelope), "terminal_state"),
        ),
    ]));
    Ok(Tagged::compute(
        Domain::FederationEnvelope,
        &canon::canonical_bytes(&body)?,
    ))
}

/// Compares two receipts: for one task identity ANY divergence of the
/// committed fields denies `federation_terminal_conflict`.
pub fn compare_receipts(a: &Value, b: &Value) -> Result<()> {
    if a.get("task_identity") != b.get("task_identity") {
        return Ok(());
    }
    let (ca, cb) = (terminal_commitment(a)?, terminal_commitment(b)?);
    if ca != cb {
        return fail(
            Code::FederationTerminalConflict,
            "task_identity",
            format!("commitments differ: {ca} vs {cb}"),
        );
    }
    Ok(())
}

/// The receiving context of `verify_commitment`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    pub issuer: String,
    pub subject: String,
    pub audience: String,
}

/// `Federation.verify_commitment`: issuer/subject/audience against the receiving context.
pub fn verify_commitment(envelope: &Value, ctx: &Context) -> Result<()> {
    for (k, want) in [
        ("issuer", &ctx.issuer),
        ("subject", &ctx.subject),
        ("audience", &ctx.audience),
    ] {
        let got = envelope.get(k).and_then(Value::as_str).unwrap_or_default();
        if got != want {
            return fail(
                Code::AudienceMismatch,
                k,
                format!("envelope says {got:?}, receiving context is {want:?}"),
            );
        }
    }
    Ok(())
}
