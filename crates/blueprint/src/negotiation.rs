//! Negotiation (spec §7): revision sets, `required_core_fields`, extension
//! criticality. Every check fails closed.

use std::collections::BTreeMap;

use crate::artifact::Kind;
use crate::error::{fail, Code, Error, Result};
use crate::json::Value;
use crate::registry::{self, Registry, Resolution};

/// The protocol revision of this release.
pub const REVISION: i64 = 1;

/// What a consumer supports.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Support {
    /// An explicit revision SET (never a range).
    pub revisions: Vec<i64>,
    /// Core members the consumer honors when a producer requires them.
    pub core_fields: Vec<String>,
    /// The extension registry criticality is resolved against (§8; the compiled one by default).
    pub registry: Registry,
    /// Host-supplied extension body schemas by namespace.
    pub schemas: BTreeMap<String, Value>,
}

impl Support {
    /// This implementation as a consumer: revision 1, every digest-covered
    /// core member of both artifacts, the compiled-in registry, and the
    /// body schemas of the registered critical extensions it ships
    /// (federation, estate-contract).
    pub fn this_release() -> Support {
        let mut core: Vec<String> = Vec::new();
        for kind in [Kind::Blueprint, Kind::Deployment] {
            for f in kind.fields() {
                if !kind.uncovered().contains(&f.name) && !core.iter().any(|c| c == f.name) {
                    core.push(f.name.to_string());
                }
            }
        }
        let mut schemas = BTreeMap::new();
        for (ns, text) in [
            ("com.example/federation", registry::FEDERATION_SCHEMA),
            ("com.example.platform/estate-contract", registry::ESTATE_CONTRACT_SCHEMA),
        ] {
            if let Ok(s) = crate::json::decode(text.as_bytes(), &crate::limits::Limits::default()) {
                schemas.insert(ns.to_string(), s);
            }
        }
        Support { revisions: vec![REVISION], core_fields: core, registry: registry::compiled(), schemas }
    }

    /// From the case-file form `{revisions, core_fields?, registry?, schemas?}`.
    /// Absent `core_fields` means the consumer honors none; absent `registry`
    /// means the compiled-in one.
    pub fn from_value(v: &Value) -> Result<Support> {
        let m = v.as_object().ok_or_else(|| Error::new(Code::InvalidType, "support", "expected an object"))?;
        let revisions = m
            .get("revisions")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::new(Code::InvalidType, "support.revisions", "expected an array of integers"))?
            .iter()
            .map(|r| r.as_i64().ok_or_else(|| Error::new(Code::InvalidType, "support.revisions", "expected integers")))
            .collect::<Result<Vec<_>>>()?;
        let core_fields = match m.get("core_fields") {
            None => Vec::new(),
            Some(c) => c
                .as_array()
                .ok_or_else(|| Error::new(Code::InvalidType, "support.core_fields", "expected an array"))?
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| Error::new(Code::InvalidType, "support.core_fields", "expected strings"))
                })
                .collect::<Result<_>>()?,
        };
        let registry = match m.get("registry") {
            None => registry::compiled(),
            Some(r) => Registry::from_support(r)?,
        };
        let mut schemas = BTreeMap::new();
        if let Some(s) = m.get("schemas") {
            let sm =
                s.as_object().ok_or_else(|| Error::new(Code::InvalidType, "support.schemas", "expected an object"))?;
            for (k, x) in sm.iter() {
                schemas.insert(k.clone(), x.clone());
            }
        }
        Ok(Support { revisions, core_fields, registry, schemas })
    }
}

/// The agreed terms.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Negotiated {
    /// The artifact's `protocol_revision`, one of the consumer's supported set.
    pub revision: i64,
    /// The producer's `required_core_fields`, each known, digest-covered and supported (§7).
    pub required_core_fields: Vec<String>,
    /// How each declared extension resolved (supported, quarantined, notices).
    pub extensions: Resolution,
}

fn kind_of(artifact: &Value) -> Option<Kind> {
    if artifact.get("deployment_digest").is_some() {
        Some(Kind::Deployment)
    } else if artifact.get("content_digest").is_some() {
        Some(Kind::Blueprint)
    } else {
        None
    }
}

/// `negotiate/2`: revision → required core fields → extensions.
pub fn negotiate(artifact: &Value, support: &Support) -> Result<Negotiated> {
    let rev = artifact.get("protocol_revision");
    let revision = match rev {
        None => return fail(Code::MissingRequiredField, "/protocol_revision", "required member is absent"),
        Some(r) => r.as_i64().ok_or_else(|| {
            Error::new(Code::InvalidType, "/protocol_revision", format!("expected an integer, got {}", r.kind()))
        })?,
    };
    if revision < 1 {
        return fail(
            Code::InvalidConstraint,
            "/protocol_revision",
            format!("{revision} is below the first revision 1"),
        );
    }
    if !support.revisions.contains(&revision) {
        return fail(
            Code::ProtocolRevisionUnsupported,
            "/protocol_revision",
            format!("{revision} is not in the supported set {:?}", support.revisions),
        );
    }
    let kind = kind_of(artifact);
    let known = |n: &str| match kind {
        Some(k) => k.is_member(n),
        None => Kind::Blueprint.is_member(n) || Kind::Deployment.is_member(n),
    };
    let covered = |n: &str| match kind {
        Some(k) => !k.uncovered().contains(&n),
        None => !["content_digest", "deployment_digest", "signatures", "attestations"].contains(&n),
    };
    let mut required = Vec::new();
    match artifact.get("required_core_fields") {
        None => return fail(Code::MissingRequiredField, "/required_core_fields", "required member is absent"),
        Some(Value::Array(list)) => {
            for (i, f) in list.iter().enumerate() {
                let p = format!("/required_core_fields/{i}");
                let Some(name) = f.as_str() else {
                    return fail(Code::InvalidType, p, format!("expected a member name, got {}", f.kind()));
                };
                if !known(name) {
                    return fail(Code::RequiredCoreFieldUnsupported, p, format!("{name:?} is not a core member"));
                }
                if !covered(name) {
                    return fail(
                        Code::RequiredCoreFieldNotDigestCovered,
                        p,
                        format!("{name:?} is evidence-only (not digest-covered) and cannot be required"),
                    );
                }
                if !support.core_fields.iter().any(|c| c == name) {
                    return fail(
                        Code::RequiredCoreFieldUnsupported,
                        p,
                        format!("this consumer does not honor {name:?}"),
                    );
                }
                required.push(name.to_string());
            }
        }
        Some(other) => {
            return fail(Code::InvalidType, "/required_core_fields", format!("expected an array, got {}", other.kind()))
        }
    }
    let ext = artifact
        .get("extensions")
        .ok_or_else(|| Error::new(Code::MissingRequiredField, "/extensions", "required member is absent"))?;
    let extensions = registry::resolve(ext, &support.registry, &support.schemas)?;
    Ok(Negotiated { revision, required_core_fields: required, extensions })
}
