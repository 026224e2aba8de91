//! The bounds algebra (spec §9). Two families, never conflated with the
//! decoder ceilings: 8 operational bounds (all required, pointwise narrowest
//! meet, every narrowing is clamp evidence) and 5 protected bounds (ordinal
//! lattices; obligation families meet at the strictest value; classification
//! markers meet by union). Narrowing a protected bound below what the
//! blueprint requested denies `protected_bound_clamp_denied` unless the host
//! acknowledges it, which always records evidence.

use std::collections::BTreeSet;

use crate::artifact::{APPROVAL, AUTHORITY, CLASSIFICATION, DISCLOSURE, IMPACT, MARKERS, OPERATIONAL, PROTECTED};
use crate::error::{fail, Code, Error, Result};
use crate::json::{Map, Number, Value};

/// A cost ceiling.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Cost {
    /// The ceiling: a non-negative integer amount (money is never a float).
    pub amount: i64,
    /// The ISO 4217 currency the amount is in; ceilings in different currencies never meet
    /// (`bound_unit_mismatch`).
    pub currency: String,
}

/// A classification ceiling: ordinal rank plus regulatory markers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Classification {
    /// Index into [`CLASSIFICATION`].
    pub ordinal: usize,
    /// Regulatory markers (`pci`, `phi`): retained obligations whose effective set is the union of the sources
    /// (§9).
    pub markers: BTreeSet<String>,
}

/// One complete bounds record (13 members).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// The seven integer operational bounds in [`OPERATIONAL`] order, minus `max_cost`.
    pub ints: [i64; 7],
    /// The `max_cost` operational bound.
    pub max_cost: Cost,
    /// The `classification_ceiling` protected bound: an ordinal and its markers.
    pub classification: Classification,
    /// Ranks into their lattices.
    pub disclosure: usize,
    /// Rank of `effect_impact_ceiling` in the impact lattice (an obligation family: meets at the strictest).
    pub effect_impact: usize,
    /// Rank of `authority_trait` in the authority lattice (an obligation family: meets at the strictest).
    pub authority: usize,
    /// Rank of `approval_trait` in the approval lattice (an obligation family: meets at the strictest).
    pub approval: usize,
}

const INT_FIELDS: [&str; 7] =
    ["max_attempts", "max_concurrency", "max_depth", "max_descendants", "max_elapsed_ms", "max_fan_out", "max_tokens"];

fn rank(lattice: &[&str], v: &Value, at: &str) -> Result<usize> {
    let s = v
        .as_str()
        .ok_or_else(|| Error::new(Code::BoundValueInvalid, at, format!("expected a string, got {}", v.kind())))?;
    lattice
        .iter()
        .position(|x| *x == s)
        .ok_or_else(|| Error::new(Code::BoundValueInvalid, at, format!("{s:?} is not one of {lattice:?}")))
}

impl Bounds {
    /// Parses one source. Pinned order: shape and member names
    /// (`invalid_type`: a map with a non-bound member is not a bounds
    /// record), missing members (`missing_ceiling`), values (`bound_value_invalid`).
    pub fn from_value(v: &Value, source: &str) -> Result<Bounds> {
        let Value::Object(m) = v else {
            return fail(Code::InvalidType, source, format!("expected a bounds object, got {}", v.kind()));
        };
        for k in m.keys() {
            if !OPERATIONAL.contains(&k.as_str()) && !PROTECTED.contains(&k.as_str()) {
                return fail(
                    Code::InvalidType,
                    format!("{source}.{k}"),
                    "not a bound: the source is not a bounds record",
                );
            }
        }
        for k in OPERATIONAL.iter().chain(PROTECTED) {
            if !m.contains_key(k) {
                return fail(Code::MissingCeiling, format!("{source}.{k}"), "absent is never infinity");
            }
        }
        let at = |k: &str| format!("{source}.{k}");
        let get = |k: &str| m.get(k).unwrap_or(&Value::Null);
        let mut ints = [0i64; 7];
        for (i, k) in INT_FIELDS.iter().enumerate() {
            ints[i] = match get(k).as_i64() {
                Some(n) if n >= 0 => n,
                _ => {
                    return fail(
                        Code::BoundValueInvalid,
                        at(k),
                        format!("expected a non-negative integer, got {}", get(k).kind()),
                    )
                }
            };
        }
        let cost = get("max_cost");
        let amount = cost.get("amount").and_then(Value::as_i64).filter(|a| *a >= 0);
        let currency = cost
            .get("currency")
            .and_then(Value::as_str)
            .filter(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()));
        let (Some(amount), Some(currency), Some(2)) = (amount, currency, cost.as_object().map(Map::len)) else {
            return fail(
                Code::BoundValueInvalid,
                at("max_cost"),
                "expected {amount: non-negative integer, currency: ISO 4217}",
            );
        };
        let class = get("classification_ceiling");
        let classification = match class {
            Value::String(_) => Classification {
                ordinal: rank(CLASSIFICATION, class, &at("classification_ceiling"))?,
                markers: BTreeSet::new(),
            },
            Value::Object(cm) => {
                if cm.len() != 2 || !cm.contains_key("markers") {
                    return fail(Code::BoundValueInvalid, at("classification_ceiling"), "expected {markers, ordinal}");
                }
                let ordinal = rank(
                    CLASSIFICATION,
                    cm.get("ordinal").unwrap_or(&Value::Null),
                    &at("classification_ceiling.ordinal"),
                )?;
                let mut markers = BTreeSet::new();
                for mk in cm.get("markers").and_then(Value::as_array).unwrap_or_default() {
                    let r = rank(MARKERS, mk, &at("classification_ceiling.markers"))?;
                    markers.insert(MARKERS[r].to_string());
                }
                if cm.get("markers").and_then(Value::as_array).is_none() {
                    return fail(Code::BoundValueInvalid, at("classification_ceiling.markers"), "expected an array");
                }
                Classification { ordinal, markers }
            }
            other => {
                return fail(Code::BoundValueInvalid, at("classification_ceiling"), format!("got {}", other.kind()))
            }
        };
        Ok(Bounds {
            ints,
            max_cost: Cost { amount, currency: currency.to_string() },
            classification,
            disclosure: rank(DISCLOSURE, get("disclosure_ceiling"), &at("disclosure_ceiling"))?,
            effect_impact: rank(IMPACT, get("effect_impact_ceiling"), &at("effect_impact_ceiling"))?,
            authority: rank(AUTHORITY, get("authority_trait"), &at("authority_trait"))?,
            approval: rank(APPROVAL, get("approval_trait"), &at("approval_trait"))?,
        })
    }

    /// The value of one named bound, as JSON.
    pub fn field(&self, name: &str) -> Value {
        let int = |n: i64| Value::Number(Number::Int(n));
        if let Some(i) = INT_FIELDS.iter().position(|f| *f == name) {
            return int(self.ints[i]);
        }
        match name {
            "max_cost" => Value::Object(Map::from_pairs(vec![
                ("amount".into(), int(self.max_cost.amount)),
                ("currency".into(), Value::str(&self.max_cost.currency)),
            ])),
            "classification_ceiling" => Value::Object(Map::from_pairs(vec![
                ("markers".into(), Value::Array(self.classification.markers.iter().map(Value::str).collect())),
                ("ordinal".into(), Value::str(CLASSIFICATION[self.classification.ordinal])),
            ])),
            "disclosure_ceiling" => Value::str(DISCLOSURE[self.disclosure]),
            "effect_impact_ceiling" => Value::str(IMPACT[self.effect_impact]),
            "authority_trait" => Value::str(AUTHORITY[self.authority]),
            "approval_trait" => Value::str(APPROVAL[self.approval]),
            _ => Value::Null,
        }
    }

    /// All 13 bounds as a JSON object (sorted member names).
    pub fn to_value(&self) -> Value {
        let mut names: Vec<&str> = OPERATIONAL.iter().chain(PROTECTED).copied().collect();
        names.sort_unstable();
        Value::Object(Map::from_pairs(names.into_iter().map(|n| (n.to_string(), self.field(n))).collect()))
    }

    /// The meet of two records (idempotent, commutative, associative).
    pub fn meet(&self, other: &Bounds) -> Result<Bounds> {
        if self.max_cost.currency != other.max_cost.currency {
            return fail(
                Code::BoundUnitMismatch,
                "max_cost.currency",
                format!("{} vs {}", self.max_cost.currency, other.max_cost.currency),
            );
        }
        let mut ints = [0; 7];
        for (i, slot) in ints.iter_mut().enumerate() {
            *slot = self.ints[i].min(other.ints[i]);
        }
        Ok(Bounds {
            ints,
            max_cost: Cost {
                amount: self.max_cost.amount.min(other.max_cost.amount),
                currency: self.max_cost.currency.clone(),
            },
            classification: Classification {
                ordinal: self.classification.ordinal.min(other.classification.ordinal),
                markers: self.classification.markers.union(&other.classification.markers).cloned().collect(),
            },
            disclosure: self.disclosure.min(other.disclosure),
            effect_impact: self.effect_impact.max(other.effect_impact),
            authority: self.authority.max(other.authority),
            approval: self.approval.max(other.approval),
        })
    }

    /// Whether `self` is looser than `limit` on any bound.
    pub fn widens(&self, limit: &Bounds) -> bool {
        self.ints.iter().zip(limit.ints).any(|(a, b)| *a > b)
            || self.max_cost.amount > limit.max_cost.amount
            || self.classification.ordinal > limit.classification.ordinal
            || !limit.classification.markers.is_subset(&self.classification.markers)
            || self.disclosure > limit.disclosure
            || self.effect_impact < limit.effect_impact
            || self.authority < limit.authority
            || self.approval < limit.approval
    }
}

/// How protected-bound narrowing is treated.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "posture", content = "bounds")]
pub enum Posture {
    /// Deny (the default).
    #[default]
    Deny,
    /// Accept narrowing of the listed protected bounds, recording evidence.
    Acknowledge(Vec<String>),
}

/// Clamp evidence: one narrowing of a requested bound.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Clamp {
    /// The bound's member name (`max_tokens`, `classification_ceiling`, …).
    pub bound: String,
    /// Whether it is one of the five protected bounds (narrowing one is denied unless the host acknowledges it).
    pub protected: bool,
    /// What the blueprint requested.
    pub requested: Value,
    /// What the meet of the three sources left in force.
    pub effective: Value,
}

/// The result of `intersect`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Intersection {
    /// The effective bounds: a complete 13-member bounds object.
    pub effective: Value,
    /// Every narrowing of a requested bound, in member order.
    pub clamps: Vec<Clamp>,
    /// How many clamps (`clamps.len()`), as the conformance surface reports it.
    pub clamp_count: usize,
}

/// `intersect/1`: meet of the blueprint (requested), deployment and host
/// sources. Clamps are emitted iff effective ≠ requested.
pub fn intersect(
    blueprint: &Bounds,
    deployment: &Bounds,
    host: &Bounds,
    posture: &Posture,
) -> Result<(Bounds, Intersection)> {
    if let Posture::Acknowledge(list) = posture {
        for n in list {
            if !PROTECTED.contains(&n.as_str()) {
                return fail(Code::BoundUnknown, format!("posture.acknowledge.{n}"), "not a protected bound");
            }
        }
    }
    let effective = blueprint.meet(deployment)?.meet(host)?;
    let mut clamps = Vec::new();
    for name in OPERATIONAL {
        let (r, e) = (blueprint.field(name), effective.field(name));
        if r != e {
            clamps.push(Clamp { bound: (*name).to_string(), protected: false, requested: r, effective: e });
        }
    }
    for name in PROTECTED {
        let (r, e) = (blueprint.field(name), effective.field(name));
        if r != e {
            let acknowledged = matches!(posture, Posture::Acknowledge(l) if l.iter().any(|x| x == name));
            if !acknowledged {
                return fail(
                    Code::ProtectedBoundClampDenied,
                    *name,
                    format!(
                        "requested {} but the sources allow only {}",
                        crate::canon::canonical_string(&r).unwrap_or_default(),
                        crate::canon::canonical_string(&e).unwrap_or_default()
                    ),
                );
            }
            clamps.push(Clamp { bound: (*name).to_string(), protected: true, requested: r, effective: e });
        }
    }
    let out = Intersection { effective: effective.to_value(), clamp_count: clamps.len(), clamps };
    Ok((effective, out))
}

/// The case-file surface: `{blueprint, deployment, host, acknowledge?}` of raw sources.
pub fn intersect_value(input: &Value) -> Result<Intersection> {
    let src = |k: &str| -> Result<Bounds> {
        match input.get(k) {
            None => fail(Code::BoundSourceMissing, k, "every source must be supplied"),
            Some(v) => Bounds::from_value(v, k),
        }
    };
    let (b, d, h) = (src("blueprint")?, src("deployment")?, src("host")?);
    let posture = match input.get("acknowledge") {
        None => Posture::Deny,
        Some(Value::Array(a)) => {
            Posture::Acknowledge(a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        }
        Some(other) => {
            return fail(Code::InvalidType, "acknowledge", format!("expected an array, got {}", other.kind()))
        }
    };
    Ok(intersect(&b, &d, &h, &posture)?.1)
}
