//! Blueprint Core (18 members) and Deployment Manifest (19 members) as
//! closed worlds (spec §2), their digests (§5) and their decoders.
//!
//! Decode order (pinned by the reference corpus, see docs/decisions.md):
//! `ceiling:bytes` → canonical-first bytes (§3) → object → portability (§14)
//! → closed-world structure (§2 precedence) → cross-field hooks → digest.

use crate::canon;
use crate::digest::{Domain, Tagged};
use crate::error::{fail, Code, Error, Result};
use crate::json::{Map, Value};
use crate::limits::Limits;
use crate::portability;
use crate::shape::{self, opt, req, Field, Ty};

/// Ordinal classification levels (least to most sensitive).
pub const CLASSIFICATION: &[&str] = &["public", "internal", "confidential", "restricted"];
/// Set-monotone classification markers.
pub const MARKERS: &[&str] = &["pci", "phi"];
/// Disclosure ceilings (least to most disclosure).
pub const DISCLOSURE: &[&str] = &["none", "summary", "detail", "full"];
/// Effect impact classes (least to most strict obligation).
pub const IMPACT: &[&str] = &["none", "ordinary", "sensitive", "authority"];
/// Authority traits (least to most strict obligation).
pub const AUTHORITY: &[&str] = &["none", "local_policy", "external_authority_required"];
/// Approval traits (least to most strict obligation).
pub const APPROVAL: &[&str] = &["none", "human_required", "separated_human_required"];
/// Operation kinds.
pub const OPERATION_KIND: &[&str] = &["read", "mutation"];
/// Triggers.
pub const TRIGGERS: &[&str] = &["manual", "schedule", "event"];

/// The eight operational bounds (all required).
pub const OPERATIONAL: &[&str] = &[
    "max_attempts",
    "max_concurrency",
    "max_cost",
    "max_depth",
    "max_descendants",
    "max_elapsed_ms",
    "max_fan_out",
    "max_tokens",
];
/// The five protected bounds.
pub const PROTECTED: &[&str] =
    &["approval_trait", "authority_trait", "classification_ceiling", "disclosure_ceiling", "effect_impact_ceiling"];

fn blueprint_id(s: &str) -> std::result::Result<(), (Code, &'static str)> {
    let ok = s.len() <= 128
        && s.split_once('/').is_some_and(|(ns, name)| {
            let seg = |x: &str| {
                !x.is_empty()
                    && x.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
                    && x.as_bytes()[0].is_ascii_lowercase()
            };
            ns.split('.').all(seg) && ns.contains('.') && seg(name)
        });
    if ok {
        Ok(())
    } else {
        Err((Code::InvalidConstraint, "expected reverse-DNS/name in lowercase, e.g. example.demo/echo"))
    }
}

fn currency(s: &str) -> std::result::Result<(), (Code, &'static str)> {
    if s.len() == 3 && s.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err((Code::InvalidConstraint, "expected an ISO 4217 code (three uppercase letters)"))
    }
}

/// Exact build identities only (§10): no range or wildcard syntax.
pub fn exact_version(s: &str) -> std::result::Result<(), (Code, &'static str)> {
    let inexact = s.is_empty()
        || s.bytes().any(|b| matches!(b, b'*' | b'^' | b'~' | b'>' | b'<' | b'=' | b'|' | b' ' | b','))
        || s.split(['.', '-', '+']).any(|p| p.eq_ignore_ascii_case("x"))
        || !s.as_bytes()[0].is_ascii_digit();
    if inexact || s.len() > 64 {
        Err((Code::CompatibilityIdentityInexact, "a build identity is an exact version, never a range or wildcard"))
    } else {
        Ok(())
    }
}

const U32: Ty = Ty::Int { min: 0, max: 4_294_967_295 };
const POS: Ty = Ty::Int { min: 1, max: crate::json::MAX_SAFE_INTEGER };
const TEXT: Ty = Ty::Str(shape::text);
const IDENT: Ty = Ty::Str(shape::ident);
const DIGEST: Ty = Ty::Str(shape::digest);
const TIME: Ty = Ty::Str(shape::timestamp);
const CLASS: Ty = Ty::Enum(CLASSIFICATION);

const COST: Ty = Ty::Obj(&[
    req("amount", Ty::Int { min: 0, max: crate::json::MAX_SAFE_INTEGER }),
    req("currency", Ty::Str(currency)),
]);
const CLASS_OBJ: Ty =
    Ty::Obj(&[req("markers", Ty::Arr { item: &Ty::Enum(MARKERS), min: 0, max: 2 }), req("ordinal", CLASS)]);
const CLASS_ANY: Ty = Ty::Either(&CLASS, &CLASS_OBJ);

const OPERATIONAL_FIELDS: [Field; 8] = [
    req("max_attempts", POS),
    req("max_concurrency", POS),
    req("max_cost", COST),
    req("max_depth", POS),
    req("max_descendants", U32),
    req("max_elapsed_ms", POS),
    req("max_fan_out", U32),
    req("max_tokens", U32),
];

const SIGNED_ATTRIBUTES: Ty = Ty::Obj(&[
    req("algorithm", TEXT),
    req("content_digest", DIGEST),
    req("created_at", TIME),
    req("key_id", TEXT),
    req("purpose", Ty::Enum(&["blueprint", "deployment", "federation-envelope"])),
]);
const PROTECTED_HEADER: Ty = Ty::Obj(&[
    req("alg", TEXT),
    req("b64", Ty::Bool),
    req("crit", Ty::Arr { item: &TEXT, min: 1, max: 4 }),
    req("kid", TEXT),
]);
/// A detached-JWS signature entry.
pub const SIGNATURE: Ty =
    Ty::Obj(&[req("protected", PROTECTED_HEADER), req("signature", TEXT), req("signed_attributes", SIGNED_ATTRIBUTES)]);
const ATTESTATION: Ty = Ty::Obj(&[
    req("kind", TEXT),
    req("protected", PROTECTED_HEADER),
    req("signature", TEXT),
    req("signed_attributes", SIGNED_ATTRIBUTES),
    req("statement_digest", DIGEST),
]);
const EXT_MAP: Ty = Ty::Map { key: crate::registry::namespace_check, value: &Ty::Any, max: 64 };
const EXTENSIONS: Ty = Ty::Obj(&[req("critical", EXT_MAP), req("optional", EXT_MAP)]);
const REQUIRED_CORE: Ty = Ty::Arr { item: &IDENT, min: 0, max: 19 };

const PORT: Ty = Ty::Obj(&[
    req("classification_ceiling", CLASS),
    req("name", IDENT),
    req("required", Ty::Bool),
    req("schema", Ty::Schema),
]);

/// Blueprint Core: the 18 members.
pub const BLUEPRINT_FIELDS: &[Field] = &[
    req("blueprint_id", Ty::Str(blueprint_id)),
    req("protocol_revision", POS),
    req("producer", Ty::Obj(&[req("created_at", TIME), req("identity", IDENT), req("toolchain", TEXT)])),
    req("release_number", POS),
    req(
        "capability_requirements",
        Ty::Arr {
            item: &Ty::Obj(&[
                req("approval_trait", Ty::Enum(APPROVAL)),
                req("argument_schema", Ty::Schema),
                req("authority_trait", Ty::Enum(AUTHORITY)),
                req("classification_ceiling", CLASS),
                req("impact_class", Ty::Enum(IMPACT)),
                req("operation_family", IDENT),
                req("operation_kind", Ty::Enum(OPERATION_KIND)),
                req("result_schema", Ty::Schema),
            ]),
            min: 0,
            max: 64,
        },
    ),
    req("input_ports", Ty::Arr { item: &PORT, min: 0, max: 64 }),
    req("output_ports", Ty::Arr { item: &PORT, min: 1, max: 64 }),
    req("output_contract", Ty::Obj(&[req("classification_ceiling", CLASS), req("port", IDENT)])),
    req("triggers", Ty::Arr { item: &Ty::Enum(TRIGGERS), min: 1, max: 8 }),
    req("ceilings", Ty::Obj(&OPERATIONAL_FIELDS)),
    req("classification_ceiling", CLASS),
    req(
        "effect_intents",
        Ty::Arr {
            item: &Ty::Obj(&[
                req("impact_class", Ty::Enum(IMPACT)),
                req("logical_operation", IDENT),
                req("operation_kind", Ty::Enum(OPERATION_KIND)),
            ]),
            min: 0,
            max: 64,
        },
    ),
    req(
        "evaluation_assertions",
        Ty::Arr {
            item: &Ty::Obj(&[
                req("kind", Ty::Enum(&["output_schema", "predicate"])),
                req("port", IDENT),
                opt("predicate", Ty::Any),
                opt("schema", Ty::Schema),
            ]),
            min: 0,
            max: 64,
        },
    ),
    req("extensions", EXTENSIONS),
    req("required_core_fields", REQUIRED_CORE),
    req("content_digest", DIGEST),
    opt("signatures", Ty::Arr { item: &SIGNATURE, min: 0, max: 16 }),
    opt("attestations", Ty::Arr { item: &ATTESTATION, min: 0, max: 16 }),
];

const BAND: Ty = Ty::Obj(&[
    req("band", IDENT),
    req("kind", Ty::Enum(&["beneficiary_band", "owner_band", "runtime_band"])),
    req("policy", IDENT),
]);

const TOOL_BINDING: Ty = Ty::Obj(&[
    req("adapter_identity", IDENT),
    req("attested_at", TIME),
    req("descriptor_digest", DIGEST),
    req("logical_operation", IDENT),
    req("schema_digest", DIGEST),
]);

/// Deployment Manifest: the 19 members.
pub const DEPLOYMENT_FIELDS: &[Field] = &[
    req("protocol_revision", POS),
    req(
        "blueprint_release",
        Ty::Obj(&[
            req("blueprint_id", Ty::Str(blueprint_id)),
            req("content_digest", DIGEST),
            req("release_number", POS),
        ]),
    ),
    req("scope_projection", Ty::Obj(&[req("adapter_identity", IDENT)])),
    req("tool_bindings", Ty::Arr { item: &TOOL_BINDING, min: 0, max: 128 }),
    req(
        "data_bindings",
        Ty::Arr {
            item: &Ty::Obj(&[
                req("as_of", Ty::Obj(&[req("max_age_ms", U32), req("mode", Ty::Enum(&["required", "none"]))])),
                req("classification_ceiling", CLASS),
                req("logical_dataset", IDENT),
            ]),
            min: 0,
            max: 64,
        },
    ),
    req("authority_requirement", Ty::Obj(&[req("adapter_identity", IDENT), req("profile_identity", IDENT)])),
    req(
        "effect_owner",
        Ty::Obj(&[
            req("adapter_identity", IDENT),
            req(
                "idempotency",
                Ty::Obj(&[
                    req("key_derivation", Ty::Enum(&["host", "intent"])),
                    req("recovery", Ty::Enum(&["authoritative", "best_effort", "none"])),
                ]),
            ),
        ]),
    ),
    req("signer_custody", Ty::Enum(&["host_managed"])),
    req("eligibility", Ty::Obj(&[req("beneficiary", BAND), req("owner", BAND), req("runtime_principal", BAND)])),
    req(
        "model_policy",
        Ty::Obj(&[
            req("allowed_model_roles", Ty::Arr { item: &IDENT, min: 1, max: 16 }),
            req("max_cost", COST),
            req("max_tokens", U32),
        ]),
    ),
    req(
        "host_bounds",
        Ty::Obj(&[
            req("approval_trait", Ty::Enum(APPROVAL)),
            req("authority_trait", Ty::Enum(AUTHORITY)),
            req("classification_ceiling", CLASS_ANY),
            req("disclosure_ceiling", Ty::Enum(DISCLOSURE)),
            req("effect_impact_ceiling", Ty::Enum(IMPACT)),
            OPERATIONAL_FIELDS[0],
            OPERATIONAL_FIELDS[1],
            OPERATIONAL_FIELDS[2],
            OPERATIONAL_FIELDS[3],
            OPERATIONAL_FIELDS[4],
            OPERATIONAL_FIELDS[5],
            OPERATIONAL_FIELDS[6],
            OPERATIONAL_FIELDS[7],
        ]),
    ),
    req(
        "lifecycle",
        Ty::Obj(&[req("activated_at", TIME), req("state", Ty::Enum(&["active", "suspended", "retired"]))]),
    ),
    req(
        "build_identities",
        Ty::Arr {
            item: &Ty::Obj(&[
                req("digest", DIGEST),
                req("kind", Ty::Enum(&["package", "image", "toolchain", "adapter"])),
                req("name", IDENT),
                req("version", Ty::Str(exact_version)),
            ]),
            min: 1,
            max: 64,
        },
    ),
    req(
        "evaluation_binding",
        Ty::Obj(&[
            req("adapter_identity", IDENT),
            req("corpus", Ty::Obj(&[req("digest", DIGEST), req("name", IDENT)])),
        ]),
    ),
    req("extensions", EXTENSIONS),
    req("required_core_fields", REQUIRED_CORE),
    req("deployment_digest", DIGEST),
    opt("signatures", Ty::Arr { item: &SIGNATURE, min: 0, max: 16 }),
    opt("attestations", Ty::Arr { item: &ATTESTATION, min: 0, max: 16 }),
];

/// Which artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A Blueprint: the agent's portable content, digested under `content_digest` (§2, §5).
    Blueprint,
    /// A Deployment manifest: binds one Blueprint release and states host bounds, digested under
    /// `deployment_digest` (§2, §10).
    Deployment,
}

impl Kind {
    /// The closed member table.
    pub fn fields(self) -> &'static [Field] {
        match self {
            Kind::Blueprint => BLUEPRINT_FIELDS,
            Kind::Deployment => DEPLOYMENT_FIELDS,
        }
    }
    /// The member that carries the artifact's own digest.
    pub fn digest_member(self) -> &'static str {
        match self {
            Kind::Blueprint => "content_digest",
            Kind::Deployment => "deployment_digest",
        }
    }
    /// The digest domain.
    pub fn domain(self) -> Domain {
        match self {
            Kind::Blueprint => Domain::BlueprintContent,
            Kind::Deployment => Domain::DeploymentContent,
        }
    }
    /// The signature purpose.
    pub fn purpose(self) -> &'static str {
        match self {
            Kind::Blueprint => "blueprint",
            Kind::Deployment => "deployment",
        }
    }
    /// Members excluded from the digest input (§5).
    pub fn uncovered(self) -> [&'static str; 3] {
        [self.digest_member(), "signatures", "attestations"]
    }
    /// Whether `name` is a core member of this artifact.
    pub fn is_member(self, name: &str) -> bool {
        self.fields().iter().any(|f| f.name == name)
    }
}

/// A decoded, structurally valid artifact.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Artifact {
    /// Which artifact it is: it selects the member table, digest domain and signature purpose.
    pub kind: Kind,
    /// The decoded value (document order).
    pub value: Value,
    /// The recomputed content digest.
    pub digest: Tagged,
}

impl Artifact {
    /// The object members.
    pub fn map(&self) -> &Map {
        self.value.as_object().unwrap_or_else(|| EMPTY.get_or_init(Map::new))
    }
    /// A member.
    pub fn get(&self, k: &str) -> Option<&Value> {
        self.value.get(k)
    }
}

static EMPTY: std::sync::OnceLock<Map> = std::sync::OnceLock::new();

/// The digest input (§5): the artifact minus its digest, signatures and attestations.
pub fn digest_input(kind: Kind, m: &Map) -> Value {
    let uncovered = kind.uncovered();
    Value::Object(Map::from_pairs(
        m.iter().filter(|(k, _)| !uncovered.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect(),
    ))
}

/// Recomputes the content digest of an artifact object.
pub fn compute_digest(kind: Kind, m: &Map) -> Result<Tagged> {
    let bytes = canon::canonical_bytes(&digest_input(kind, m))?;
    Ok(Tagged::compute(kind.domain(), &bytes))
}

/// Structure only (closed world + cross-field hooks) of a decoded value.
pub fn check_structure(kind: Kind, v: &Value) -> Result<()> {
    shape::check_object(v, kind.fields(), "")?;
    let m = shape::object(v, "")?;
    match kind {
        Kind::Blueprint => blueprint_cross_field(m),
        Kind::Deployment => deployment_cross_field(m),
    }
}

fn names<'a>(m: &'a Map, member: &str, key: &str) -> Vec<&'a str> {
    m.get(member)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.get(key).and_then(Value::as_str)).collect())
        .unwrap_or_default()
}

fn unique(list: &[&str], path: &str) -> Result<()> {
    for (i, n) in list.iter().enumerate() {
        if list[..i].contains(n) {
            return fail(Code::InvalidConstraint, format!("{path}/{i}"), format!("{n:?} repeats"));
        }
    }
    Ok(())
}

fn blueprint_cross_field(m: &Map) -> Result<()> {
    let inputs = names(m, "input_ports", "name");
    let outputs = names(m, "output_ports", "name");
    unique(&inputs, "/input_ports")?;
    unique(&outputs, "/output_ports")?;
    let contract = m.get("output_contract").and_then(|c| c.get("port")).and_then(Value::as_str).unwrap_or_default();
    if !outputs.contains(&contract) {
        return fail(Code::InvalidConstraint, "/output_contract/port", format!("{contract:?} names no output port"));
    }
    if let Some(list) = m.get("evaluation_assertions").and_then(Value::as_array) {
        for (i, a) in list.iter().enumerate() {
            let port = a.get("port").and_then(Value::as_str).unwrap_or_default();
            let p = format!("/evaluation_assertions/{i}");
            let Some(port_schema) = m
                .get("output_ports")
                .and_then(Value::as_array)
                .and_then(|ps| ps.iter().find(|x| x.get("name").and_then(Value::as_str) == Some(port)))
                .and_then(|x| x.get("schema"))
            else {
                return fail(Code::InvalidConstraint, format!("{p}/port"), format!("{port:?} names no output port"));
            };
            if let Some("output_schema") = a.get("kind").and_then(Value::as_str) {
                if a.get("schema").is_none() || a.get("predicate").is_some() {
                    return fail(
                        Code::InvalidConstraint,
                        p,
                        "an output_schema assertion carries `schema` and no `predicate`",
                    );
                }
            } else {
                let Some(pred) = a.get("predicate") else {
                    return fail(Code::InvalidConstraint, p, "a predicate assertion carries `predicate`");
                };
                crate::predicate::Predicate::compile(pred, Some(port_schema), &format!("{p}/predicate"))?;
            }
        }
    }
    let overall = m.get("classification_ceiling").and_then(Value::as_str).unwrap_or_default();
    let rank = |s: &str| CLASSIFICATION.iter().position(|c| *c == s);
    for member in ["input_ports", "output_ports"] {
        if let Some(list) = m.get(member).and_then(Value::as_array) {
            for (i, port) in list.iter().enumerate() {
                let c = port.get("classification_ceiling").and_then(Value::as_str).unwrap_or_default();
                if rank(c) > rank(overall) {
                    return fail(
                        Code::InvalidConstraint,
                        format!("/{member}/{i}/classification_ceiling"),
                        format!("{c:?} exceeds the artifact ceiling {overall:?}"),
                    );
                }
            }
        }
    }
    Ok(())
}

fn deployment_cross_field(m: &Map) -> Result<()> {
    crate::compat::check_identities(m.get("build_identities").and_then(Value::as_array).unwrap_or_default())?;
    let elig = m.get("eligibility");
    for (member, kind) in
        [("beneficiary", "beneficiary_band"), ("owner", "owner_band"), ("runtime_principal", "runtime_band")]
    {
        let k = elig.and_then(|e| e.get(member)).and_then(|p| p.get("kind")).and_then(Value::as_str);
        if k != Some(kind) {
            return fail(Code::InvalidConstraint, format!("/eligibility/{member}/kind"), format!("expected {kind:?}"));
        }
    }
    Ok(())
}

/// Decodes an artifact with the pinned order (module doc). Returns the
/// artifact with its recomputed digest, which equals the declared one.
pub fn decode(kind: Kind, bytes: &[u8], limits: &Limits) -> Result<Artifact> {
    let value = canon::decode_canonical(bytes, limits)?;
    let m = shape::object(&value, "")?;
    portability::scan_artifact(&value)?;
    check_structure(kind, &value)?;
    let digest = compute_digest(kind, m)?;
    let declared = m.get(kind.digest_member()).and_then(Value::as_str).unwrap_or_default();
    let want = Tagged::parse(declared)?;
    if want != digest {
        return Err(Error::new(
            Code::DigestMismatch,
            format!("/{}", kind.digest_member()),
            format!("declared {want}, computed {digest}"),
        ));
    }
    Ok(Artifact { kind, value, digest })
}

/// `decode_blueprint`.
pub fn decode_blueprint(bytes: &[u8], limits: &Limits) -> Result<Artifact> {
    decode(Kind::Blueprint, bytes, limits)
}

/// `decode_deployment`.
pub fn decode_deployment(bytes: &[u8], limits: &Limits) -> Result<Artifact> {
    decode(Kind::Deployment, bytes, limits)
}
