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
            e("com.example.platform/estate", "ExamplePlatform", Criticality::Optional, None),
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

    /// A host's support table `{ns: {criticality, state, schema_digest?}}`:
    /// the consumer's view. A compiled-in schema digest always binds (a host
    /// declaring a different one is `extension_schema_digest_mismatch`); a
    /// namespace the compiled registry publishes no schema for takes the
    /// host-declared digest, so a host can govern its own product extensions.
    pub fn from_support(v: &Value) -> Result<Registry> {
        let m = v.as_object().ok_or_else(|| Error::new(Code::InvalidType, "support.registry", "expected an object"))?;
        let shipped = compiled();
        let mut entries = Vec::new();
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
            let base = shipped.get(ns);
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
            let schema_digest = match (base.and_then(|b| b.schema_digest), declared) {
                (Some(shipped), Some(host)) if shipped != host => {
                    return fail(
                        Code::ExtensionSchemaDigestMismatch,
                        format!("support.registry/{ns}/schema_digest"),
                        format!("the compiled registry binds {shipped}; the host declares {host}"),
                    )
                }
                (shipped, host) => shipped.or(host),
            };
            entries.push(Entry {
                namespace: ns.clone(),
                owner: base.map_or_else(|| "host".to_string(), |b| b.owner.clone()),
                criticality,
                state,
                schema_digest,
            });
        }
        Ok(Registry { entries })
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
                Some(e) if e.state == State::Active => fail(
                    Code::ExtensionCriticalityConflict,
                    p,
                    format!("registered {:?}, declared both critical and optional", e.criticality),
                ),
                _ => fail(Code::ExtensionDuplicate, p, "declared both critical and optional"),
            };
        }
    }
    let mut out = Resolution::default();
    for (declared, map) in [(Criticality::Critical, crit), (Criticality::Optional, optional)] {
        let side = if declared == Criticality::Critical { "critical" } else { "optional" };
        for (ns, payload) in map.iter() {
            let p = format!("/extensions/{side}/{ns}");
            namespace_check(ns).map_err(|(c, why)| Error::new(c, &p, why))?;
            let entry = registry.get(ns);
            let note = |out: &mut Resolution, n: &'static str| {
                out.notices.push(Notice { namespace: ns.clone(), notice: n });
            };
            match (entry.map(|e| (e.state, e.criticality)), declared) {
                (None | Some((State::Reserved, _)), Criticality::Critical) => {
                    return fail(
                        Code::ExtensionUnknownCritical,
                        p,
                        "critical extension not supported by this consumer",
                    );
                }
                (Some((State::Retired, _)), Criticality::Critical) => {
                    return fail(Code::ExtensionRetired, p, "namespace is retired");
                }
                (Some((State::Active, reg)), d) if reg != d => {
                    return fail(Code::ExtensionCriticalityConflict, p, format!("registered {reg:?}, declared {d:?}"));
                }
                _ => {}
            }
            scan_payload(payload, &p)?;
            match entry.map(|e| e.state) {
                None => {
                    out.quarantined.push(ns.clone());
                    note(&mut out, "quarantined_unknown_optional");
                }
                Some(State::Reserved) => {
                    out.quarantined.push(ns.clone());
                    note(&mut out, "reserved_namespace");
                }
                Some(State::Retired) => {
                    out.quarantined.push(ns.clone());
                    note(&mut out, "retired_namespace");
                }
                Some(state @ (State::Active | State::Deprecated)) => {
                    if state == State::Deprecated {
                        note(&mut out, "deprecated_namespace");
                    }
                    if declared == Criticality::Critical {
                        let want = entry.and_then(|e| e.schema_digest);
                        let Some(body_schema) = schemas.get(ns.as_str()) else {
                            return fail(Code::ExtensionSchemaUnavailable, p, "no host-supplied body schema");
                        };
                        let got = schema_digest(body_schema)?;
                        match want {
                            None => {
                                return fail(
                                    Code::ExtensionSchemaUnavailable,
                                    p,
                                    "the registry publishes no schema digest",
                                )
                            }
                            Some(w) if w != got => {
                                return fail(
                                    Code::ExtensionSchemaDigestMismatch,
                                    p,
                                    format!("registry {w}, supplied {got}"),
                                );
                            }
                            Some(_) => {}
                        }
                        schema::check_schema(body_schema, &p)?;
                        schema::validate(payload, body_schema, &p)?;
                        out.critical.push(ns.clone());
                    } else {
                        out.optional.push(ns.clone());
                    }
                }
            }
        }
    }
    Ok(out)
}
