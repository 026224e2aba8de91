//! The compiled-in extension registry and the criticality table (spec §7, §8).
//! Registry content is code: there is no registry file to drift from.

use std::collections::BTreeMap;

use crate::canon;
use crate::digest::{Domain, Tagged};
use crate::error::{fail, Code, Error, Result};
use crate::json::{Map, Value};
use crate::schema;

/// Declared or registered criticality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Criticality {
    /// A consumer that does not support it must deny the artifact.
    Critical,
    /// A consumer that does not support it retains it verbatim and never executes it.
    Optional,
}

impl Criticality {
    fn parse(s: &str) -> Option<Criticality> {
        match s {
            "critical" => Some(Criticality::Critical),
            "optional" => Some(Criticality::Optional),
            _ => None,
        }
    }
}

/// Registry lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Held for a future use: declared critical denies, declared optional is retained with a notice.
    Reserved,
    /// In force: supported when the declared criticality matches the registered one.
    Active,
    /// Still supported, with a typed notice.
    Deprecated,
    /// No longer in use and never reused: declared critical denies `extension_retired`.
    Retired,
}

impl State {
    fn parse(s: &str) -> Option<State> {
        match s {
            "reserved" => Some(State::Reserved),
            "active" => Some(State::Active),
            "deprecated" => Some(State::Deprecated),
            "retired" => Some(State::Retired),
            _ => None,
        }
    }
}

/// One registry entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Entry {
    /// The reverse-DNS-plus-path namespace (`com.example.commerce/graph`).
    pub namespace: String,
    /// Who makes changes to the entry.
    pub owner: String,
    /// The registered criticality a declaration must match.
    pub criticality: Criticality,
    /// Its lifecycle state.
    pub state: State,
    /// Digest of the body schema a host must supply (`None`: none published).
    pub schema_digest: Option<Tagged>,
}

/// The body schema of `com.example/federation` shipped with the registry.
pub const FEDERATION_SCHEMA: &str = r#"{"additionalProperties":false,"properties":{"audience":{"type":"string"},"issuer":{"type":"string"},"subject":{"type":"string"}},"type":"object"}"#;

/// The body schema of `com.example.platform/estate-contract` (the reference
/// ships it as corpus data, `priv/conformance/schemas/estate-contract.schema.json`,
/// and compiles only its digest pin, [`ESTATE_CONTRACT_PIN`]): the asset
/// materialization window and the objective condition, three uniform
/// composite tiers over the leaves. This host supplies it, as it supplies
/// the federation schema; a test holds it to the pin.
pub const ESTATE_CONTRACT_SCHEMA: &str = r##"{"$defs":{"and_over_leaf":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/leaf"},"minItems":1,"type":"array"},"op":{"const":"and"}},"required":["op","args"],"type":"object"},"and_over_tier_1":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/tier_1"},"minItems":1,"type":"array"},"op":{"const":"and"}},"required":["op","args"],"type":"object"},"and_over_tier_2":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/tier_2"},"minItems":1,"type":"array"},"op":{"const":"and"}},"required":["op","args"],"type":"object"},"definition_ref":{"additionalProperties":false,"properties":{"name":{"maxLength":128,"minLength":1,"type":"string"},"version":{"minimum":1,"type":"integer"}},"required":["name","version"],"type":"object"},"leaf":{"oneOf":[{"$ref":"#/$defs/leaf_present"},{"$ref":"#/$defs/leaf_stale"},{"$ref":"#/$defs/leaf_count_within"}]},"leaf_count_within":{"additionalProperties":false,"properties":{"days":{"minimum":1,"type":"integer"},"definition":{"$ref":"#/$defs/definition_ref"},"max":{"minimum":0,"type":"integer"},"op":{"const":"materialization_count_within"}},"required":["op","definition","days","max"],"type":"object"},"leaf_present":{"additionalProperties":false,"properties":{"definition":{"$ref":"#/$defs/definition_ref"},"op":{"const":"materialization_present"}},"required":["op","definition"],"type":"object"},"leaf_stale":{"additionalProperties":false,"properties":{"definition":{"$ref":"#/$defs/definition_ref"},"max_age_days":{"minimum":1,"type":"integer"},"op":{"const":"materialization_stale"}},"required":["op","definition","max_age_days"],"type":"object"},"not_over_leaf":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/leaf"},"maxItems":1,"minItems":1,"type":"array"},"op":{"const":"not"}},"required":["op","args"],"type":"object"},"not_over_tier_1":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/tier_1"},"maxItems":1,"minItems":1,"type":"array"},"op":{"const":"not"}},"required":["op","args"],"type":"object"},"not_over_tier_2":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/tier_2"},"maxItems":1,"minItems":1,"type":"array"},"op":{"const":"not"}},"required":["op","args"],"type":"object"},"or_over_leaf":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/leaf"},"minItems":1,"type":"array"},"op":{"const":"or"}},"required":["op","args"],"type":"object"},"or_over_tier_1":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/tier_1"},"minItems":1,"type":"array"},"op":{"const":"or"}},"required":["op","args"],"type":"object"},"or_over_tier_2":{"additionalProperties":false,"properties":{"args":{"items":{"$ref":"#/$defs/tier_2"},"minItems":1,"type":"array"},"op":{"const":"or"}},"required":["op","args"],"type":"object"},"tier_1":{"oneOf":[{"$ref":"#/$defs/and_over_leaf"},{"$ref":"#/$defs/or_over_leaf"},{"$ref":"#/$defs/not_over_leaf"}]},"tier_2":{"oneOf":[{"$ref":"#/$defs/and_over_tier_1"},{"$ref":"#/$defs/or_over_tier_1"},{"$ref":"#/$defs/not_over_tier_1"}]},"tier_3":{"oneOf":[{"$ref":"#/$defs/and_over_tier_2"},{"$ref":"#/$defs/or_over_tier_2"},{"$ref":"#/$defs/not_over_tier_2"}]}},"additionalProperties":false,"properties":{"asset_materialization_window":{"additionalProperties":false,"properties":{"definition":{"$ref":"#/$defs/definition_ref"},"window_days":{"minimum":1,"type":["integer","null"]}},"required":["definition","window_days"],"type":"object"},"objective_condition":{"oneOf":[{"$ref":"#/$defs/leaf"},{"$ref":"#/$defs/tier_1"},{"$ref":"#/$defs/tier_2"},{"$ref":"#/$defs/tier_3"}]}},"required":["asset_materialization_window","objective_condition"],"type":"object"}"##;

/// The registry's schema-digest pin of `com.example.platform/estate-contract`.
pub const ESTATE_CONTRACT_PIN: &str = "sha-256:s_ToZWwxrhhd4vVxAyUh2Q6Gddston4tBSLHTLvCQAw";

/// The digest that binds a body schema to a registry entry: the
/// extension-schema separator over the JCS bytes of the PARSED schema.
pub fn schema_digest(schema: &Value) -> Result<Tagged> {
    Ok(Tagged::compute(Domain::ExtensionSchema, &canon::canonical_bytes(schema)?))
}

/// The registry compiled into this release (§8 table).
pub fn compiled() -> Registry {
    let fed = crate::json::decode(FEDERATION_SCHEMA.as_bytes(), &crate::limits::Limits::default())
        .ok()
        .and_then(|s| schema_digest(&s).ok());
    let e = |ns: &str, owner: &str, c, d| Entry {
        namespace: ns.to_string(),
        owner: owner.to_string(),
        criticality: c,
        state: State::Active,
        schema_digest: d,
    };
    Registry {
        entries: vec![
            e("com.example.commerce/graph", "ExampleCommerce", Criticality::Critical, None),
            e("com.example.commerce/classification-labels", "ExampleCommerce", Criticality::Optional, None),
            e("com.example.commerce/rubric-assertion", "ExampleCommerce", Criticality::Optional, None),
            Entry {
                state: State::Deprecated,
                ..e("com.example.platform/estate", "ExamplePlatform", Criticality::Optional, None)
            },
            e(
                "com.example.platform/estate-contract",
                "ExamplePlatform",
                Criticality::Critical,
                Tagged::parse(ESTATE_CONTRACT_PIN).ok(),
            ),
            e("com.example/federation", "Agent Blueprint Protocol", Criticality::Critical, fed),
        ],
    }
}

/// An effective registry table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Registry {
    /// The entries, one per namespace.
    pub entries: Vec<Entry>,
}

impl Registry {
    /// Entry by namespace.
    pub fn get(&self, ns: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.namespace == ns)
    }

    /// A host's support table `{ns: {criticality, state, schema_digest?}}`
    /// layered over the compiled registry (the consumer's view). For a
    /// namespace the compiled registry carries, the host's entry is
    /// lifecycle-only: its `state` is taken, the criticality and the schema
    /// digest pin stay the registry's (a host declaring another digest is
    /// `extension_schema_digest_mismatch`, never a silent override). A
    /// namespace the compiled registry does not carry takes the host's entry
    /// as given, so a host can govern its own product extensions. Compiled
    /// entries the host does not name stay as compiled.
    pub fn from_support(v: &Value) -> Result<Registry> {
        let m = v.as_object().ok_or_else(|| Error::new(Code::InvalidType, "support.registry", "expected an object"))?;
        let mut out = compiled();
        for (ns, e) in m.iter() {
            namespace_check(ns).map_err(|(c, why)| Error::new(c, format!("support.registry/{ns}"), why))?;
            let crit = e.get("criticality").and_then(Value::as_str).and_then(Criticality::parse);
            let state = e.get("state").and_then(Value::as_str).and_then(State::parse);
            let (Some(criticality), Some(state)) = (crit, state) else {
                return fail(
                    Code::InvalidConstraint,
                    format!("support.registry/{ns}"),
                    "expected {criticality, state}",
                );
            };
            let declared = match e.get("schema_digest") {
                None | Some(Value::Null) => None,
                Some(Value::String(t)) => Some(Tagged::parse(t)?),
                Some(_) => {
                    return fail(
                        Code::InvalidType,
                        format!("support.registry/{ns}/schema_digest"),
                        "expected a tagged digest",
                    )
                }
            };
            if let Some(base) = out.entries.iter_mut().find(|b| b.namespace == *ns) {
                if let (Some(shipped), Some(host)) = (base.schema_digest, declared) {
                    if shipped != host {
                        return fail(
                            Code::ExtensionSchemaDigestMismatch,
                            format!("support.registry/{ns}/schema_digest"),
                            format!("the compiled registry binds {shipped}; the host declares {host}"),
                        );
                    }
                }
                base.state = state;
                continue;
            }
            out.entries.push(Entry {
                namespace: ns.clone(),
                owner: "host".to_string(),
                criticality,
                state,
                schema_digest: declared,
            });
        }
        Ok(out)
    }
}

/// Host-supplied extension body schemas (§8), each checked on registration:
/// the namespace's registry entry must publish a schema digest
/// (`extension_schema_unavailable`), the schema must lie in the bounded
/// dialect (`schema_*`), and its digest must equal the entry's
/// (`extension_schema_digest_mismatch`). Resolution re-checks the digest, so
/// a map built by hand gains nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaRegistry {
    schemas: BTreeMap<String, Value>,
}

impl SchemaRegistry {
    /// No schema: every critical body is `extension_schema_unavailable`.
    pub fn new() -> SchemaRegistry {
        SchemaRegistry::default()
    }

    /// Registers `schema` for `namespace` against `registry`; returns its digest.
    pub fn register(&mut self, registry: &Registry, namespace: &str, schema: Value) -> Result<Tagged> {
        let at = format!("schemas/{namespace}");
        let Some(entry) = registry.get(namespace) else {
            return fail(
                Code::ExtensionSchemaUnavailable,
                at,
                "the namespace is not registered: no schema can be bound to it",
            );
        };
        let Some(want) = entry.schema_digest else {
            return fail(
                Code::ExtensionSchemaUnavailable,
                at,
                "the registry publishes no schema digest for this namespace",
            );
        };
        schema::check_schema(&schema, &at)?;
        let got = schema_digest(&schema)?;
        if got != want {
            return fail(
                Code::ExtensionSchemaDigestMismatch,
                at,
                format!("schema digests to {got}; the registry binds {want}"),
            );
        }
        self.schemas.insert(namespace.to_string(), schema);
        Ok(got)
    }

    /// The registered schema of `namespace`.
    pub fn get(&self, namespace: &str) -> Option<&Value> {
        self.schemas.get(namespace)
    }

    /// The schemas by namespace (the form `resolve` takes).
    pub fn as_map(&self) -> &BTreeMap<String, Value> {
        &self.schemas
    }
}

/// Namespace form (§8): lowercase reverse-DNS + one `/` + path, at most 128
/// bytes, never parseable as an absolute URI with a network authority.
pub fn namespace_check(s: &str) -> std::result::Result<(), (Code, &'static str)> {
    let bad =
        Err((Code::ExtensionNamespaceInvalid, "expected lowercase reverse-dns/path, e.g. com.example.commerce/graph"));
    if s.len() > 128 || s.contains("://") || s.starts_with("//") || s.matches('/').count() != 1 {
        return bad;
    }
    let Some((dns, path)) = s.split_once('/') else {
        return bad;
    };
    let label = |x: &str| {
        !x.is_empty()
            && x.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !x.starts_with('-')
            && !x.ends_with('-')
    };
    if dns.split('.').count() < 2 || !dns.split('.').all(label) || !label(path) {
        return bad;
    }
    Ok(())
}

/// A typed notice from resolution.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Notice {
    /// The extension's namespace.
    pub namespace: String,
    /// What the host should know (deprecated, reserved, retired but optional…).
    pub notice: &'static str,
}

/// The outcome of extension resolution.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Resolution {
    /// Supported critical extensions (schema-validated).
    pub critical: Vec<String>,
    /// Supported optional extensions (registered, executable).
    pub optional: Vec<String>,
    /// Unknown optional extensions: retained verbatim, never executed, unscanned.
    pub quarantined: Vec<String>,
    /// Optional extensions of a reserved or retired namespace: retained
    /// verbatim with a notice, never executed.
    pub retained: Vec<String>,
    /// Typed notices about the extensions that resolved.
    pub notices: Vec<Notice>,
}

/// Names a payload may never carry: bounds and core members (an extension
/// cannot launder a bound or override a covered member).
fn forbidden_payload_name(k: &str) -> bool {
    crate::artifact::OPERATIONAL.contains(&k)
        || crate::artifact::PROTECTED.contains(&k)
        || crate::artifact::Kind::Blueprint.is_member(k)
        || crate::artifact::Kind::Deployment.is_member(k)
}

fn scan_payload(v: &Value, path: &str) -> Result<()> {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter() {
                let p = format!("{path}/{}", crate::json::escape_pointer(k));
                if forbidden_payload_name(k) {
                    return fail(
                        Code::ExtensionPayloadForbidden,
                        p,
                        "an extension payload may not carry a bound or core member",
                    );
                }
                scan_payload(x, &p)?;
            }
            Ok(())
        }
        Value::Array(a) => a.iter().enumerate().try_for_each(|(i, x)| scan_payload(x, &format!("{path}/{i}"))),
        _ => Ok(()),
    }
}

/// The typed notice of a deprecated namespace's body, supported (§7 table).
pub const NOTICE_DEPRECATED: &str = "extension_deprecated";
/// The typed notice of an unknown (quarantined) or reserved optional body, retained verbatim.
pub const NOTICE_UNKNOWN_OPTIONAL_RETAINED: &str = "extension_unknown_optional_retained";
/// The typed notice of a retired namespace's optional body, retained verbatim.
pub const NOTICE_RETIRED: &str = "extension_retired";

/// A supported critical body against the host-supplied schema (§8): the
/// registry must pin a digest and the host must supply a schema
/// (`extension_schema_unavailable`), the schema must lie in the bounded
/// dialect, its digest must be the pin (`extension_schema_digest_mismatch`),
/// and the body must satisfy it.
fn critical_body(entry: &Entry, payload: &Value, supplied: Option<&Value>, p: &str) -> Result<()> {
    let Some(want) = entry.schema_digest else {
        return fail(Code::ExtensionSchemaUnavailable, p, "the registry pins no schema digest for this namespace");
    };
    let Some(body_schema) = supplied else {
        return fail(Code::ExtensionSchemaUnavailable, p, "no host-supplied body schema");
    };
    schema::check_schema(body_schema, p)?;
    let got = schema_digest(body_schema)?;
    if got != want {
        return fail(Code::ExtensionSchemaDigestMismatch, p, format!("registry pins {want}, supplied {got}"));
    }
    schema::validate(payload, body_schema, p)
}

/// Resolves `extensions` (`{critical:{ns:payload}, optional:{ns:payload}}`)
/// against `registry`, with host-supplied body `schemas`.
pub fn resolve(extensions: &Value, registry: &Registry, schemas: &BTreeMap<String, Value>) -> Result<Resolution> {
    let ext = extensions
        .as_object()
        .ok_or_else(|| Error::new(Code::InvalidType, "/extensions", "expected {critical, optional}"))?;
    for k in ext.keys() {
        if k != "critical" && k != "optional" {
            return fail(Code::UnknownMember, format!("/extensions/{k}"), "expected only critical and optional");
        }
    }
    let empty = Map::new();
    let part = |name: &str| -> Result<&Map> {
        match ext.get(name) {
            None => Ok(&empty),
            Some(Value::Object(m)) => Ok(m),
            Some(other) => fail(
                Code::InvalidType,
                format!("/extensions/{name}"),
                format!("expected an object, got {}", other.kind()),
            ),
        }
    };
    let (crit, optional) = (part("critical")?, part("optional")?);
    // A namespace on both sides: for an active entry one side necessarily
    // contradicts the registered criticality (the table's conflict cell);
    // otherwise it is a duplicate declaration.
    for ns in crit.keys() {
        if optional.contains_key(ns) {
            let p = format!("/extensions/optional/{ns}");
            return match registry.get(ns) {
                Some(e) if matches!(e.state, State::Active | State::Deprecated) => fail(
                    Code::ExtensionCriticalityConflict,
                    p,
                    format!("registered {:?}, declared both critical and optional", e.criticality),
                ),
                _ => fail(Code::ExtensionDuplicate, p, "declared both critical and optional"),
            };
        }
    }
    // The reserved-semantics denylist over every body first: no extension
    // launders a bound, whatever its namespace resolves to.
    for (side, map) in [("critical", crit), ("optional", optional)] {
        for (ns, payload) in map.iter() {
            let p = format!("/extensions/{side}/{ns}");
            namespace_check(ns).map_err(|(c, why)| Error::new(c, &p, why))?;
            scan_payload(payload, &p)?;
        }
    }
    let mut out = Resolution::default();
    let note = |out: &mut Resolution, ns: &str, n: &'static str| {
        out.notices.push(Notice { namespace: ns.to_string(), notice: n });
    };
    for (ns, payload) in crit.iter() {
        let p = format!("/extensions/critical/{ns}");
        let Some(entry) = registry.get(ns) else {
            return fail(Code::ExtensionUnknownCritical, p, "critical extension not registered: not supported here");
        };
        match entry.state {
            State::Retired => return fail(Code::ExtensionRetired, p, "namespace is retired"),
            State::Reserved => {
                return fail(Code::ExtensionUnknownCritical, p, "namespace is reserved, not yet in force")
            }
            State::Active | State::Deprecated => {}
        }
        if entry.criticality != Criticality::Critical {
            return fail(Code::ExtensionCriticalityConflict, p, "registered optional, declared critical");
        }
        critical_body(entry, payload, schemas.get(ns.as_str()), &p)?;
        out.critical.push(ns.clone());
        if entry.state == State::Deprecated {
            note(&mut out, ns, NOTICE_DEPRECATED);
        }
    }
    for ns in optional.keys() {
        let p = format!("/extensions/optional/{ns}");
        let Some(entry) = registry.get(ns) else {
            out.quarantined.push(ns.clone());
            note(&mut out, ns, NOTICE_UNKNOWN_OPTIONAL_RETAINED);
            continue;
        };
        match entry.state {
            State::Retired => {
                out.retained.push(ns.clone());
                note(&mut out, ns, NOTICE_RETIRED);
            }
            State::Reserved => {
                out.retained.push(ns.clone());
                note(&mut out, ns, NOTICE_UNKNOWN_OPTIONAL_RETAINED);
            }
            State::Active | State::Deprecated if entry.criticality != Criticality::Optional => {
                return fail(Code::ExtensionCriticalityConflict, p, "registered critical, declared optional");
            }
            State::Active => out.optional.push(ns.clone()),
            State::Deprecated => {
                out.optional.push(ns.clone());
                note(&mut out, ns, NOTICE_DEPRECATED);
            }
        }
    }
    Ok(out)
}
