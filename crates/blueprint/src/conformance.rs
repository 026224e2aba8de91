//! The conformance runner for case files in the reference format
//! `{format, cases: [{class, id, surface, input, expected: {verdict, …}}]}`.
//! Every surface is wired to the crate's real functions; a case passes when
//! the verdict matches and, for `valid`, every expected output member is
//! equal, or, for `invalid`, the error code is the expected one.

use std::collections::BTreeMap;

use crate::artifact;
use crate::b64;
use crate::binding::{self, BindingInputs};
use crate::bounds;
use crate::canon;
use crate::compat;
use crate::digest::{Domain, Tagged};
use crate::error::{fail, Code, Error, Result};
use crate::federation;
use crate::json::{self, Map, Value};
use crate::limits::Limits;
use crate::negotiation::{self, Support};
use crate::reconcile;
use crate::registry;
use crate::signature;

/// The format tag of a case file.
pub const FORMAT: &str = "agent-blueprint-protocol-conformance-cases";

/// Every surface this runner executes.
pub const SURFACES: &[&str] = &[
    "base64url.decode",
    "blueprint.decode",
    "bounds.new",
    "bounds_algebra.intersect",
    "canonicalization.encode",
    "deployment.decode",
    "digest.tagged",
    "extension.resolve",
    "federation.decode",
    "json.decode",
    "negotiation.negotiate",
    // surfaces of this implementation beyond the reference's published files
    "compatibility.verify",
    "corpus.load",
    "federation.commitment",
    "reconcile.run",
    "signature.verify",
];

/// One case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub class: String,
    pub id: String,
    pub surface: String,
    pub input: Value,
    pub expected: Value,
}

/// Parses a case file (bounded decode; not canonical-first, case files are
/// human-edited). Malformed files or cases deny `corpus_case_invalid`.
pub fn parse_case_file(bytes: &[u8], name: &str) -> Result<Vec<Case>> {
    let v = json::decode(bytes, &Limits::default()).map_err(|e| {
        Error::new(
            Code::CorpusCaseInvalid,
            name,
            format!("{}: {}", e.code(), e.detail()),
        )
    })?;
    if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return fail(
            Code::CorpusCaseInvalid,
            name,
            format!("format must be {FORMAT:?}"),
        );
    }
    let Some(list) = v.get("cases").and_then(Value::as_array) else {
        return fail(Code::CorpusCaseInvalid, name, "expected a `cases` array");
    };
    let mut out = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let at = format!("{name}#{i}");
        let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(class), Some(id), Some(surface), Some(input), Some(expected)) = (
            s("class"),
            s("id"),
            s("surface"),
            c.get("input"),
            c.get("expected"),
        ) else {
            return fail(
                Code::CorpusCaseInvalid,
                at,
                "a case needs class, id, surface, input and expected",
            );
        };
        match expected.get("verdict").and_then(Value::as_str) {
            Some("valid") => {}
            Some("invalid") if expected.get("code").and_then(Value::as_str).is_some() => {}
            _ => {
                return fail(
                    Code::CorpusCaseInvalid,
                    at,
                    "expected.verdict must be valid, or invalid with a code",
                )
            }
        }
        if !SURFACES.contains(&surface.as_str()) {
            return fail(
                Code::CorpusCaseInvalid,
                at,
                format!("unknown surface {surface:?}"),
            );
        }
        out.push(Case {
            class,
            id,
            surface,
            input: input.clone(),
            expected: expected.clone(),
        });
    }
    Ok(out)
}

fn limits_of(input: &Value) -> Result<Limits> {
    match input.get("bounds") {
        None => Ok(Limits::default()),
        Some(b) => Limits::new(b),
    }
}

fn bytes_of(input: &Value) -> Result<Vec<u8>> {
    if let Some(Value::String(t)) = input.get("text") {
        return Ok(t.as_bytes().to_vec());
    }
    if let Some(Value::String(b)) = input.get("base64url") {
        return b64::decode(b);
    }
    match input.get("non_binary").or_else(|| input.get("text")) {
        Some(other) => fail(
            Code::InvalidType,
            "$",
            format!("expected bytes, got {}", other.kind()),
        ),
        None => fail(
            Code::CorpusCaseInvalid,
            "input",
            "no text, base64url or non_binary input",
        ),
    }
}

fn keys_of(input: &Value) -> Result<signature::KeySet> {
    let mut ks = signature::KeySet::new();
    if let Some(m) = input.get("keys").and_then(Value::as_object) {
        for (kid, x) in m.iter() {
            let raw = b64::decode(x.as_str().unwrap_or_default())?;
            let key: [u8; 32] = raw.try_into().map_err(|_| {
                Error::new(
                    Code::SignatureKeyUnsupported,
                    kid,
                    "an Ed25519 public key is 32 bytes",
                )
            })?;
            ks.insert(kid.clone(), key);
        }
    }
    Ok(ks)
}

fn strings(list: &[String]) -> Value {
    Value::Array(list.iter().map(Value::str).collect())
}

fn out(pairs: Vec<(&str, Value)>) -> Map {
    Map::from_pairs(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Executes one surface. `Ok` is the valid verdict with its outputs.
pub fn execute(surface: &str, input: &Value) -> Result<Map> {
    match surface {
        "base64url.decode" => {
            let s = input
                .get("base64url")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::new(Code::InvalidType, "base64url", "expected a string"))?;
            let bytes = b64::decode(s)?;
            Ok(out(vec![
                ("decoded", Value::str(b64::encode(&bytes))),
                ("bytes", Value::from_u64(bytes.len() as u64)),
            ]))
        }
        "bounds.new" => {
            let limits = Limits::new(input.get("bounds").unwrap_or(&Value::Null))?;
            Ok(out(vec![("bounds", limits.to_value())]))
        }
        "json.decode" => {
            let limits = limits_of(input)?;
            let value = match input.get("non_binary") {
                Some(v) => json::decode_dynamic(v, &limits)?,
                None => json::decode(&bytes_of(input)?, &limits)?,
            };
            Ok(out(vec![("value", value)]))
        }
        "canonicalization.encode" => {
            let limits = limits_of(input)?;
            let v = json::decode(&bytes_of(input)?, &limits)?;
            Ok(out(vec![(
                "encoded",
                Value::str(canon::canonical_string(&v)?),
            )]))
        }
        "digest.tagged" => {
            if let Some(declared) = input.get("declared").and_then(Value::as_str) {
                let dn = input
                    .get("domain")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let domain = Domain::parse(dn).ok_or_else(|| {
                    Error::new(
                        Code::InvalidConstraint,
                        "domain",
                        format!("{dn:?} is not a digest domain"),
                    )
                })?;
                let t = Tagged::verify(domain, &bytes_of(input)?, declared, "declared")?;
                return Ok(out(vec![("tagged", Value::str(t.to_string()))]));
            }
            let s = input
                .get("tagged")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::new(Code::InvalidType, "tagged", "expected a string"))?;
            Ok(out(vec![(
                "tagged",
                Value::str(Tagged::parse(s)?.to_string()),
            )]))
        }
        "blueprint.decode" => {
            let a = artifact::decode_blueprint(&bytes_of(input)?, &limits_of(input)?)?;
            Ok(out(vec![("digest", Value::str(a.digest.to_string()))]))
        }
        "deployment.decode" => {
            let limits = limits_of(input)?;
            let a = artifact::decode_deployment(&bytes_of(input)?, &limits)?;
            if let Some(b) = input.get("binding") {
                let text = b.get("blueprint").and_then(Value::as_str).ok_or_else(|| {
                    Error::new(Code::InvalidType, "binding.blueprint", "expected text")
                })?;
                let bp = artifact::decode_blueprint(text.as_bytes(), &limits)?;
                let inputs = BindingInputs {
                    now: b.get("now").and_then(Value::as_str).map(str::to_string),
                    max_attestation_age_ms: b.get("max_attestation_age_ms").and_then(Value::as_i64),
                    descriptors: b
                        .get("descriptors")
                        .and_then(Value::as_object)
                        .map(|m| {
                            m.iter()
                                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                binding::verify_binding(&a, &bp, &inputs)?;
            }
            Ok(out(vec![("digest", Value::str(a.digest.to_string()))]))
        }
        "extension.resolve" => {
            let support = Support::from_value(input.get("support").unwrap_or(&Value::Null))?;
            let ext = input
                .get("artifact")
                .and_then(|a| a.get("extensions"))
                .ok_or_else(|| Error::new(Code::MissingRequiredField, "/extensions", "absent"))?;
            let r = registry::resolve(ext, &support.registry, &support.schemas)?;
            Ok(out(vec![
                ("critical", strings(&r.critical)),
                ("optional", strings(&r.optional)),
                ("quarantined", strings(&r.quarantined)),
            ]))
        }
        "negotiation.negotiate" => {
            let support = Support::from_value(input.get("support").unwrap_or(&Value::Null))?;
            let n =
                negotiation::negotiate(input.get("artifact").unwrap_or(&Value::Null), &support)?;
            Ok(out(vec![
                ("revision", Value::Number(json::Number::Int(n.revision))),
                ("critical", strings(&n.extensions.critical)),
                ("optional", strings(&n.extensions.optional)),
                ("quarantined", strings(&n.extensions.quarantined)),
                ("required_core_fields", strings(&n.required_core_fields)),
            ]))
        }
        "bounds_algebra.intersect" => {
            let r = bounds::intersect_value(input)?;
            Ok(out(vec![
                ("effective", r.effective),
                ("clamp_count", Value::from_u64(r.clamp_count as u64)),
            ]))
        }
        "federation.decode" => {
            let st = |k: &str| {
                input.get(k).map(|v| {
                    v.as_str()
                        .ok_or_else(|| Error::new(Code::InvalidType, k, "expected a state name"))
                })
            };
            if let Some(s) = st("to_a2a_state") {
                return Ok(out(vec![(
                    "a2a_state",
                    Value::str(federation::to_a2a(s?)?),
                )]));
            }
            if let Some(s) = st("from_a2a_state") {
                return Ok(out(vec![("state", Value::str(federation::from_a2a(s?)?))]));
            }
            if let Some(s) = st("to_mcp_state") {
                return Ok(out(vec![(
                    "mcp_state",
                    Value::str(federation::to_mcp(s?)?),
                )]));
            }
            if let Some(s) = st("from_mcp_state") {
                return Ok(out(vec![("state", Value::str(federation::from_mcp(s?)?))]));
            }
            let e = federation::decode_envelope(&bytes_of(input)?, &limits_of(input)?)?;
            Ok(out(vec![("canonical", Value::str(e.canonical))]))
        }
        "signature.verify" => {
            let bytes = bytes_of(input)?;
            let probe = json::decode(&bytes, &Limits::default())?;
            let kind = if probe.get("deployment_digest").is_some() {
                artifact::Kind::Deployment
            } else {
                artifact::Kind::Blueprint
            };
            let a = artifact::decode(kind, &bytes, &limits_of(input)?)?;
            let keys = keys_of(input)?;
            let sigs = a
                .get("signatures")
                .and_then(Value::as_array)
                .unwrap_or_default();
            let mut checks = signature::verify_all(sigs, kind.purpose(), &a.digest, &keys);
            checks.extend(signature::verify_attestations(
                a.get("attestations")
                    .and_then(Value::as_array)
                    .unwrap_or_default(),
            ));
            if let Some(c) = checks.iter().find(|c| !c.verified) {
                let code = c
                    .code
                    .as_deref()
                    .and_then(Code::parse)
                    .unwrap_or(Code::SignatureNotVerified);
                return fail(code, format!("signature[{}]", c.index), c.detail.clone());
            }
            Ok(out(vec![(
                "verified",
                Value::from_u64(checks.len() as u64),
            )]))
        }
        "reconcile.run" => {
            let text = |k: &str| {
                input
                    .get(k)
                    .and_then(Value::as_str)
                    .map(str::as_bytes)
                    .ok_or_else(|| Error::new(Code::InvalidType, k, "expected text"))
            };
            let mut inputs = reconcile::Inputs {
                keys: keys_of(input)?,
                host_bounds: input.get("host_bounds").cloned(),
                ..reconcile::Inputs::default()
            };
            inputs.binding.now = input.get("now").and_then(Value::as_str).map(str::to_string);
            inputs.binding.max_attestation_age_ms =
                input.get("max_attestation_age_ms").and_then(Value::as_i64);
            let ev = reconcile::reconcile(text("blueprint")?, text("deployment")?, &inputs);
            if let Some(e) = ev.first_failure {
                return Err(e);
            }
            Ok(out(vec![
                ("clamp_count", Value::from_u64(ev.clamps.len() as u64)),
                ("effective", ev.effective_bounds.unwrap_or(Value::Null)),
                (
                    "not_verified",
                    Value::Array(
                        ev.not_verified
                            .iter()
                            .map(|n| Value::str(&n.surface))
                            .collect(),
                    ),
                ),
            ]))
        }
        "compatibility.verify" => {
            let a = artifact::decode_deployment(&bytes_of(input)?, &limits_of(input)?)?;
            let req = input
                .get("required")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    Error::new(
                        Code::InvalidType,
                        "required",
                        "expected an array of identities",
                    )
                })?;
            let f = |v: &Value, k: &str| {
                v.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let ids: Vec<compat::Identity> = req
                .iter()
                .map(|r| compat::Identity {
                    kind: f(r, "kind"),
                    name: f(r, "name"),
                    version: f(r, "version"),
                    digest: f(r, "digest"),
                })
                .collect();
            compat::verify_compatibility(&a.value, &ids)?;
            Ok(out(vec![("verified", Value::from_u64(ids.len() as u64))]))
        }
        "corpus.load" => {
            let m = input
                .get("files")
                .and_then(Value::as_object)
                .ok_or_else(|| Error::new(Code::InvalidType, "files", "expected {path: text}"))?;
            let files: BTreeMap<String, Vec<u8>> = m
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|t| (k.clone(), t.as_bytes().to_vec())))
                .collect();
            let floor: Vec<&str> = match input.get("surfaces").and_then(Value::as_array) {
                Some(list) => list.iter().filter_map(Value::as_str).collect(),
                None => SURFACES.to_vec(),
            };
            let c = crate::corpus::load_with_floor(&files, &floor)?;
            Ok(out(vec![
                ("digest", Value::str(c.digest.to_string())),
                ("cases", Value::from_u64(c.cases.len() as u64)),
            ]))
        }
        "federation.commitment" => {
            let env = |k: &str| -> Result<Value> {
                let t = input
                    .get(k)
                    .and_then(Value::as_str)
                    .ok_or_else(|| Error::new(Code::InvalidType, k, "expected envelope text"))?;
                Ok(federation::decode_envelope(t.as_bytes(), &Limits::default())?.value)
            };
            let a = env("envelope")?;
            if input.get("other").is_some() {
                federation::compare_receipts(&a, &env("other")?)?;
            }
            if let Some(ctx) = input.get("context") {
                let f = |k: &str| {
                    ctx.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                federation::verify_commitment(
                    &a,
                    &federation::Context {
                        issuer: f("issuer"),
                        subject: f("subject"),
                        audience: f("audience"),
                    },
                )?;
            }
            Ok(out(vec![(
                "commitment",
                Value::str(federation::terminal_commitment(&a)?.to_string()),
            )]))
        }
        other => fail(
            Code::CorpusCaseInvalid,
            "surface",
            format!("unknown surface {other:?}"),
        ),
    }
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CaseResult {
    pub file: String,
    pub id: String,
    pub surface: String,
    pub class: String,
    pub passed: bool,
    pub expected: String,
    pub got: String,
}

fn show(v: &Value) -> String {
    canon::canonical_string(v).unwrap_or_else(|_| format!("{v:?}"))
}

/// Runs one case.
pub fn run_case(file: &str, case: &Case) -> CaseResult {
    let verdict = case
        .expected
        .get("verdict")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let result = execute(&case.surface, &case.input);
    let (passed, expected, got) = match (verdict, &result) {
        ("invalid", Err(e)) => {
            let want = case
                .expected
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or_default();
            (
                e.code() == want,
                format!("invalid {want}"),
                format!("invalid {} ({}: {})", e.code(), e.subject(), e.detail()),
            )
        }
        ("invalid", Ok(o)) => {
            let want = case
                .expected
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or_default();
            (
                false,
                format!("invalid {want}"),
                format!("valid {}", show(&Value::Object(o.clone()))),
            )
        }
        (_, Ok(o)) => {
            let mut ok = true;
            let mut want_parts = Vec::new();
            let mut got_parts = Vec::new();
            for (k, v) in case
                .expected
                .as_object()
                .map(|m| m.iter().collect::<Vec<_>>())
                .unwrap_or_default()
            {
                if k == "verdict" {
                    continue;
                }
                want_parts.push(format!("{k}={}", show(v)));
                if let Some(g) = o.get(k) {
                    got_parts.push(format!("{k}={}", show(g)));
                    ok &= g.same(v);
                } else {
                    got_parts.push(format!("{k}=<absent>"));
                    ok = false;
                }
            }
            (
                ok,
                format!("valid {}", want_parts.join(" ")),
                format!("valid {}", got_parts.join(" ")),
            )
        }
        (_, Err(e)) => (
            false,
            "valid".to_string(),
            format!("invalid {} ({}: {})", e.code(), e.subject(), e.detail()),
        ),
    };
    CaseResult {
        file: file.to_string(),
        id: case.id.clone(),
        surface: case.surface.clone(),
        class: case.class.clone(),
        passed,
        expected,
        got,
    }
}

/// The report of a run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub passed: usize,
    pub failed: usize,
    /// Digest of the canonical results (conformance-report domain).
    pub report_digest: String,
    pub surfaces: BTreeMap<String, usize>,
    pub results: Vec<CaseResult>,
}

/// Runs every case of every `(name, bytes)` file. A run with no case at all
/// is refused (`corpus_empty`): the report never shows a vacuous green.
pub fn run_files(files: &[(String, Vec<u8>)]) -> Result<Report> {
    let mut results = Vec::new();
    for (name, bytes) in files {
        for case in parse_case_file(bytes, name)? {
            results.push(run_case(name, &case));
        }
    }
    if results.is_empty() {
        return fail(
            Code::CorpusEmpty,
            "cases",
            "no case to run: a vacuous run is not a pass",
        );
    }
    let mut surfaces = BTreeMap::new();
    for r in &results {
        *surfaces.entry(r.surface.clone()).or_insert(0) += 1;
    }
    let passed = results.iter().filter(|r| r.passed).count();
    let summary = Value::Array(
        results
            .iter()
            .map(|r| {
                Value::Object(Map::from_pairs(vec![
                    ("id".into(), Value::str(&r.id)),
                    ("passed".into(), Value::Bool(r.passed)),
                    ("surface".into(), Value::str(&r.surface)),
                ]))
            })
            .collect(),
    );
    let report_digest = Tagged::compute(
        Domain::ConformanceReport,
        &canon::canonical_bytes(&summary)?,
    )
    .to_string();
    Ok(Report {
        passed,
        failed: results.len() - passed,
        report_digest,
        surfaces,
        results,
    })
}
