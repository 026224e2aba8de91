//! §3 the binding: its rules as one table ([`BINDING`]) that both the
//! validator here and the JSON Schema generator ([`crate::schema`]) read, so
//! the published `schema.json` is generated from the validator and the two
//! cannot drift.
//!
//! String lengths count UTF-16 code units, as the reference validator (zod,
//! `String.prototype.length`) counts them; JSON Schema's `minLength` and
//! `maxLength` count code points, so for text with astral characters the
//! validator is the stricter of the two (docs/decisions.md, "intent").

use std::sync::OnceLock;

use regex::Regex;

use crate::canonical::{self, Canonical};
use crate::error::IntentError;
use crate::value::{Object, Value};

/// The one version this implementation implements (§9).
pub const PROTOCOL_VERSION: &str = "agent-safe.intent/1";

/// RFC 4122/9562 UUID, versions 1-8, plus the nil and max UUIDs (the
/// reference validator's `z.string().uuid()`).
pub const UUID_PATTERN: &str = "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$";

/// An RFC 3339 UTC instant with `Z`, optional fraction, calendar-checked
/// (the reference validator's `z.string().datetime()`); ASCII digits only.
pub const DATETIME_PATTERN: &str = "^(?:(?:[0-9][0-9][2468][048]|[0-9][0-9][13579][26]|[0-9][0-9]0[48]|[02468][048]00|[13579][26]00)-02-29|[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|(?:02)-(?:0[1-9]|1[0-9]|2[0-8])))T(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?(?:Z))$";

/// `action.type`: lower-case dotted/namespaced identifier.
pub const ACTION_TYPE_PATTERN: &str = "^[a-z][a-z0-9._:-]*$";

/// `expected_effect_digest`.
pub const DIGEST_PATTERN: &str = "^sha256:[0-9a-f]{64}$";

/// What one property must be.
#[derive(Debug)]
pub enum Shape {
    /// Exactly this string.
    Const(&'static str),
    /// A string of at least `min` and at most `max` UTF-16 code units (each when
    /// given), matching `pattern` when given.
    Text {
        /// The fewest UTF-16 code units, when bounded below.
        min: Option<usize>,
        /// The most UTF-16 code units, when bounded above.
        max: Option<usize>,
        /// A regular expression the whole string must match (one of this module's `*_PATTERN`s).
        pattern: Option<&'static str>,
        /// The JSON Schema `format` the reference schema names (`uuid`, `date-time`), for the schema export.
        format: Option<&'static str>,
    },
    /// An object with these named fields; `open` lets it carry any other
    /// key with any JSON value (only `context` is open).
    Record {
        /// The properties it names, in the schema's order.
        fields: &'static [Field],
        /// Whether it may carry keys it does not name (§3: only `context` may).
        open: bool,
    },
    /// Any JSON object (the agent's `parameters`).
    AnyObject,
}

/// One named property of a [`Shape::Record`].
#[derive(Debug)]
pub struct Field {
    /// The property's key.
    pub name: &'static str,
    /// Whether §3 requires it (absent is refused as `MissingKey`).
    pub required: bool,
    /// What its value must be.
    pub shape: Shape,
}

const fn text(min: usize, max: usize) -> Shape {
    Shape::Text { min: Some(min), max: Some(max), pattern: None, format: None }
}

const fn req(name: &'static str, shape: Shape) -> Field {
    Field { name, required: true, shape }
}

const fn opt(name: &'static str, shape: Shape) -> Field {
    Field { name, required: false, shape }
}

/// The binding, as §3 and the reference schema state it.
pub static BINDING: Shape = Shape::Record { open: false, fields: BINDING_FIELDS };

/// The binding's top-level properties (a fixed key set).
pub static BINDING_FIELDS: &[Field] = &[
    req("protocol_version", Shape::Const(PROTOCOL_VERSION)),
    req("tenant_id", Shape::Text { min: None, max: None, pattern: Some(UUID_PATTERN), format: Some("uuid") }),
    req("intent_id", Shape::Text { min: None, max: None, pattern: Some(UUID_PATTERN), format: Some("uuid") }),
    req(
        "captured_at",
        Shape::Text { min: None, max: None, pattern: Some(DATETIME_PATTERN), format: Some("date-time") },
    ),
    req("expires_at", Shape::Text { min: None, max: None, pattern: Some(DATETIME_PATTERN), format: Some("date-time") }),
    req(
        "actor",
        Shape::Record {
            open: false,
            fields: &[
                req("id", text(1, 200)),
                req("type", text(1, 200)),
                opt("runtime", text(1, 200)),
                opt("trust_level", text(1, 80)),
            ],
        },
    ),
    req(
        "action",
        Shape::Record {
            open: false,
            fields: &[
                req(
                    "type",
                    Shape::Text { min: Some(1), max: Some(120), pattern: Some(ACTION_TYPE_PATTERN), format: None },
                ),
                req("resource", text(1, 500)),
                req("parameters", Shape::AnyObject),
            ],
        },
    ),
    req("context", Shape::Record { open: true, fields: &[req("idempotency_key", text(1, 180))] }),
    req(
        "downstream_target",
        Shape::Record {
            open: false,
            fields: &[
                req("system", text(1, 200)),
                req("operation", text(1, 200)),
                opt("environment", text(1, 200)),
                opt("endpoint", text(1, 500)),
            ],
        },
    ),
    opt("expected_effect_digest", Shape::Text { min: None, max: None, pattern: Some(DIGEST_PATTERN), format: None }),
];

fn compiled(pattern: &'static str) -> Result<&'static Regex, IntentError> {
    static CELLS: [OnceLock<Option<Regex>>; 4] = [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match pattern {
        UUID_PATTERN => 0,
        DATETIME_PATTERN => 1,
        ACTION_TYPE_PATTERN => 2,
        DIGEST_PATTERN => 3,
        _ => return Err(IntentError::PatternUnavailable { pattern }),
    };
    CELLS[slot].get_or_init(|| Regex::new(pattern).ok()).as_ref().ok_or(IntentError::PatternUnavailable { pattern })
}

/// A path into the binding, rendered only when a refusal names it.
#[derive(Clone, Copy)]
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'static str),
}

impl At<'_> {
    fn render(&self) -> String {
        match self {
            At::Root => "$".to_owned(),
            At::Key(parent, k) => format!("{}.{k}", parent.render()),
        }
    }
}

/// Validates a whole binding against §3's rules (the table above) and its
/// version (§9). Bounds, unsafe keys and finite numbers are the
/// canonicalizer's part; [`accept`] runs both.
pub fn validate(binding: &Value) -> Result<(), IntentError> {
    let obj = binding.as_object().ok_or_else(|| IntentError::NotAnObject { path: "$".into() })?;
    // §9 first: a version this implementation does not implement is refused
    // rather than interpreted, whatever else the object holds.
    match obj.get("protocol_version") {
        None => return Err(IntentError::MissingKey { path: "$.protocol_version".into() }),
        Some(v) if v.as_str() == Some(PROTOCOL_VERSION) => {}
        Some(v) => {
            return Err(IntentError::UnsupportedVersion {
                found: v.as_js_string().map_or_else(|| format!("<{}>", v.type_name()), ToString::to_string),
            })
        }
    }
    check(&BINDING, binding, &At::Root)
}

fn check(shape: &Shape, v: &Value, at: &At<'_>) -> Result<(), IntentError> {
    match shape {
        Shape::Const(c) => {
            if v.as_str() == Some(c) {
                Ok(())
            } else {
                Err(IntentError::InvalidValue { path: at.render(), expected: format!("the string {c:?}") })
            }
        }
        Shape::Text { min, max, pattern, .. } => {
            let bad = || {
                let length = match (min, max) {
                    (Some(a), Some(b)) => format!(" of {a}..={b} UTF-16 code units"),
                    (Some(a), None) => format!(" of at least {a} UTF-16 code units"),
                    (None, Some(b)) => format!(" of at most {b} UTF-16 code units"),
                    (None, None) => String::new(),
                };
                let matching = pattern.map(|p| format!(" matching {p}")).unwrap_or_default();
                let expected = format!("a string{length}{matching}");
                IntentError::InvalidValue { path: at.render(), expected }
            };
            let s = v.as_js_string().ok_or_else(bad)?;
            if min.is_some() || max.is_some() {
                let len = s.utf16_len();
                if min.is_some_and(|m| len < m) || max.is_some_and(|m| len > m) {
                    return Err(bad());
                }
            }
            if let Some(p) = pattern {
                let text = s.as_str().ok_or_else(bad)?;
                if !compiled(p)?.is_match(text) {
                    return Err(bad());
                }
            }
            Ok(())
        }
        Shape::AnyObject => {
            if v.as_object().is_some() {
                Ok(())
            } else {
                Err(IntentError::NotAnObject { path: at.render() })
            }
        }
        Shape::Record { fields, open } => {
            let obj = v.as_object().ok_or_else(|| IntentError::NotAnObject { path: at.render() })?;
            if !open {
                if let Some(k) = obj.keys().find(|k| !fields.iter().any(|f| *k == f.name)) {
                    return Err(IntentError::UnknownKey { path: at.render(), key: k.to_string() });
                }
            }
            for f in *fields {
                let here = At::Key(at, f.name);
                match obj.get(f.name) {
                    None if f.required => return Err(IntentError::MissingKey { path: here.render() }),
                    None => {}
                    Some(fv) => check(&f.shape, fv, &here)?,
                }
            }
            Ok(())
        }
    }
}

/// Accepts a binding under §3 and §9 and returns its canonical form and
/// hash: the rules, then the bounds, unsafe keys and finite numbers, all
/// before anything is hashed.
pub fn accept(binding: &Value) -> Result<Canonical, IntentError> {
    validate(binding)?;
    canonical::canonicalize(binding)
}

/// The agent's proposal (§3): `action.type`, `action.resource` and
/// `action.parameters`, and nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// `action.type`: what the agent proposes to do (lower-case, dotted or namespaced).
    pub action_type: String,
    /// `action.resource`: what it acts on.
    pub resource: String,
    /// `action.parameters`: the action's arguments, hashed as given.
    pub parameters: Object,
}

/// The keys a proposal may carry.
pub const PROPOSAL_KEYS: [&str; 3] = ["type", "resource", "parameters"];

impl Proposal {
    /// Decodes an agent's proposal, `{"type", "resource", "parameters"}`,
    /// refusing any other property: in particular a context, an actor, an
    /// expiry, an idempotency key or an expected-effect digest, which are the
    /// producer's to supply and never the agent's.
    pub fn from_value(v: &Value) -> Result<Self, IntentError> {
        let obj = v
            .as_object()
            .ok_or_else(|| IntentError::ProposalInvalid { path: "$".into(), expected: "a JSON object".into() })?;
        if let Some(k) = obj.keys().find(|k| !PROPOSAL_KEYS.iter().any(|p| *k == p)) {
            return Err(IntentError::ProposalForbiddenKey { key: k.to_string() });
        }
        let string = |key: &str| -> Result<String, IntentError> {
            obj.get(key).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| IntentError::ProposalInvalid {
                path: format!("$.{key}"),
                expected: "a well-formed string".into(),
            })
        };
        let parameters = obj.get("parameters").and_then(Value::as_object).cloned().ok_or_else(|| {
            IntentError::ProposalInvalid { path: "$.parameters".into(), expected: "a JSON object".into() }
        })?;
        Ok(Self { action_type: string("type")?, resource: string("resource")?, parameters })
    }
}

/// The principal, as the trusted runtime authenticated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// `actor.id`: the principal's identifier, as the runtime authenticated it.
    pub id: String,
    /// `actor.type`: what kind of principal it is (e.g. `agent`, `service`).
    pub actor_type: String,
    /// `actor.runtime`: the runtime it acts through, when known.
    pub runtime: Option<String>,
    /// `actor.trust_level`: the trust the runtime assigns it, when it assigns one.
    pub trust_level: Option<String>,
}

/// Where the effect lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownstreamTarget {
    /// `downstream_target.system`: the system the effect lands in (e.g. a CRM).
    pub system: String,
    /// `downstream_target.operation`: the operation invoked there.
    pub operation: String,
    /// `downstream_target.environment`: which deployment of it (e.g. `production`), when named.
    pub environment: Option<String>,
    /// `downstream_target.endpoint`: where it is reached, when named.
    pub endpoint: Option<String>,
}

/// What the producer knows and the agent does not get to say (§2, §3).
#[derive(Debug, Clone, PartialEq)]
pub struct TrustedContext {
    /// `tenant_id`: the tenant the action is done for (a UUID).
    pub tenant_id: String,
    /// `intent_id`: this intent's identifier (a UUID).
    pub intent_id: String,
    /// `captured_at`: when the producer captured the proposal (RFC 3339 date-time).
    pub captured_at: String,
    /// `expires_at`: after when authority over the intent lapses (RFC 3339 date-time).
    pub expires_at: String,
    /// `actor`: who is acting.
    pub actor: Actor,
    /// `downstream_target`: where the effect lands.
    pub downstream_target: DownstreamTarget,
    /// The producer's retry identity; rides in `context.idempotency_key`.
    pub idempotency_key: String,
    /// Further trusted context (must not name `idempotency_key` itself).
    pub context: Object,
    /// The optional digest of the expected effect (added within /1, §9).
    pub expected_effect_digest: Option<String>,
}

/// The producer (the `IntentCapture` role): the agent's proposal and the trusted
/// context become a binding, which is then accepted under §3 and
/// canonicalized and hashed. Nothing is repaired: a binding the rules
/// refuse is refused.
pub fn capture(proposal: &Proposal, trusted: &TrustedContext) -> Result<Captured, IntentError> {
    if trusted.context.contains_key("idempotency_key") {
        return Err(IntentError::ContextReservedKey { key: "idempotency_key".into() });
    }
    let mut actor = Object::new();
    actor.insert("id", trusted.actor.id.as_str().into());
    actor.insert("type", trusted.actor.actor_type.as_str().into());
    if let Some(r) = &trusted.actor.runtime {
        actor.insert("runtime", r.as_str().into());
    }
    if let Some(t) = &trusted.actor.trust_level {
        actor.insert("trust_level", t.as_str().into());
    }
    let mut action = Object::new();
    action.insert("type", proposal.action_type.as_str().into());
    action.insert("resource", proposal.resource.as_str().into());
    action.insert("parameters", Value::Object(proposal.parameters.clone()));
    let mut context = trusted.context.clone();
    context.insert("idempotency_key", trusted.idempotency_key.as_str().into());
    let d = &trusted.downstream_target;
    let mut target = Object::new();
    target.insert("system", d.system.as_str().into());
    target.insert("operation", d.operation.as_str().into());
    if let Some(e) = &d.environment {
        target.insert("environment", e.as_str().into());
    }
    if let Some(e) = &d.endpoint {
        target.insert("endpoint", e.as_str().into());
    }
    let mut b = Object::new();
    b.insert("protocol_version", PROTOCOL_VERSION.into());
    b.insert("tenant_id", trusted.tenant_id.as_str().into());
    b.insert("intent_id", trusted.intent_id.as_str().into());
    b.insert("captured_at", trusted.captured_at.as_str().into());
    b.insert("expires_at", trusted.expires_at.as_str().into());
    b.insert("actor", actor.into());
    b.insert("action", action.into());
    b.insert("context", context.into());
    b.insert("downstream_target", target.into());
    if let Some(dg) = &trusted.expected_effect_digest {
        b.insert("expected_effect_digest", dg.as_str().into());
    }
    let binding = Value::Object(b);
    let Canonical { canonical_json, intent_hash } = accept(&binding)?;
    Ok(Captured { binding, canonical_json, intent_hash })
}

/// A captured intent: the binding, its canonical form and its hash.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    /// The binding (§3), accepted.
    pub binding: Value,
    /// Its canonical form (§4).
    pub canonical_json: String,
    /// Its intent hash (§5): `sha256:` and 64 lower-case hex digits.
    pub intent_hash: String,
}
