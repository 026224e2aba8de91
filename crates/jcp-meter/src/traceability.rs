//! §5.3 traceability across operation, activity and outcome.
//!
//! An outcome names its activities by content id; a verifier resolves each,
//! checks the bytes are the ones named, and re-adds the figures. The
//! difference is named, never absorbed:
//!
//! `residual_uj = outcome_total_uj − Σ activity.joules_uj`
//!
//! signed and never clamped; a negative residual is a finding. An activity
//! bound twice is refused before the sum. The composite provenance and
//! coverage are floors across the outcome and every activity.
//!
//! Activities are AR-1 action receipts, whose full format is not this
//! crate's: an activity is read as any canonical det-CBOR map carrying
//! `joules_uj` (uint), `provenance` (one of the three labels) and, when
//! partial, `energy_coverage: "Partial"`; its other fields are left alone.

use std::collections::{BTreeSet, HashMap};

use jcp::cbor::{decode_strict, ContentId, Value};
use jcp::energy::{Coverage, Energy, Provenance};
use serde::Serialize;

use crate::efficiency::Efficiency;
use crate::Error;

/// Produces an activity's bytes from its content id.
pub trait Resolver {
    /// The canonical bytes named by `id`, if known.
    fn resolve(&self, id: &ContentId) -> Option<Vec<u8>>;
}

impl<S: std::hash::BuildHasher> Resolver for HashMap<ContentId, Vec<u8>, S> {
    fn resolve(&self, id: &ContentId) -> Option<Vec<u8>> {
        self.get(id).cloned()
    }
}

/// One resolved activity's figure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActivityFigure {
    /// Its content id.
    pub id: ContentId,
    /// Its energy.
    pub energy: Energy,
}

/// Reads an activity's energy figure from its bytes, checking they are the ones named.
pub fn read_activity(named: &ContentId, bytes: &[u8]) -> Result<ActivityFigure, Error> {
    let got = ContentId::of_bytes(bytes);
    if &got != named {
        return Err(Error::ActivityIdMismatch { named: named.to_hex(), got: got.to_hex() });
    }
    let bad = |detail: String| Error::ActivityMalformed { id: named.to_hex(), detail };
    let v = decode_strict(bytes).map_err(|e| bad(e.to_string()))?;
    let uj = match v.get("joules_uj") {
        Some(Value::Uint(n)) => *n,
        Some(_) => return Err(bad("joules_uj is not an unsigned integer".into())),
        None => return Err(bad("no joules_uj".into())),
    };
    let provenance = match v.get("provenance") {
        Some(Value::Text(s)) => {
            Provenance::parse(s).ok_or_else(|| Error::BadProvenance { field: "provenance", found: s.clone() })?
        }
        _ => return Err(bad("no provenance label".into())),
    };
    let coverage = match v.get("energy_coverage") {
        None => Coverage::Whole,
        Some(Value::Text(s)) if s == "Partial" => Coverage::Partial,
        Some(Value::Text(s)) => return Err(Error::BadCoverage { found: s.clone() }),
        Some(other) => return Err(Error::BadCoverage { found: format!("{other:?}") }),
    };
    Ok(ActivityFigure { id: *named, energy: Energy { uj, provenance, coverage, measured: None } })
}

/// The trace of one outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceReport {
    /// The outcome's total, µJ.
    pub outcome_uj: u64,
    /// Σ activity figures, µJ.
    pub accounted_uj: u64,
    /// `outcome − Σ activities`, signed, never clamped.
    pub residual_uj: i128,
    /// The floor of every part's provenance.
    pub provenance_floor: Provenance,
    /// The floor of every part's coverage.
    pub coverage_floor: Coverage,
    /// Each activity's figure.
    pub activities: Vec<ActivityFigure>,
    /// `Some("activities-exceed-outcome")` when the residual is negative:
    /// double-counted work or an activity bound to the wrong outcome.
    pub finding: Option<&'static str>,
}

/// Traces `outcome` through its activities (§5.3).
pub fn trace(outcome: &Efficiency, resolver: &dyn Resolver) -> Result<TraceReport, Error> {
    if outcome.activities.is_empty() {
        return Err(Error::Untraceable);
    }
    // Refused before the sum: counting one twice would shrink the residual.
    let mut seen = BTreeSet::new();
    for id in &outcome.activities {
        if !seen.insert(id.0) {
            return Err(Error::ActivityBoundTwice { id: id.to_hex() });
        }
    }
    let mut activities = Vec::with_capacity(outcome.activities.len());
    let mut accounted: u64 = 0;
    let mut provenance_floor = outcome.energy.provenance;
    let mut coverage_floor = outcome.energy.coverage;
    for id in &outcome.activities {
        let bytes = resolver.resolve(id).ok_or_else(|| Error::UnresolvableActivity { id: id.to_hex() })?;
        let a = read_activity(id, &bytes)?;
        accounted = accounted.checked_add(a.energy.uj).ok_or(Error::Overflow { what: "Σ activity joules_uj" })?;
        provenance_floor = provenance_floor.min(a.energy.provenance);
        coverage_floor = coverage_floor.min(a.energy.coverage);
        activities.push(a);
    }
    let residual_uj = i128::from(outcome.energy.uj) - i128::from(accounted);
    Ok(TraceReport {
        outcome_uj: outcome.energy.uj,
        accounted_uj: accounted,
        residual_uj,
        provenance_floor,
        coverage_floor,
        activities,
        finding: (residual_uj < 0).then_some("activities-exceed-outcome"),
    })
}

/// A minimal activity object (for vectors and tests): `{activity, joules_uj, provenance[, energy_coverage]}`.
pub fn activity_bytes(label: &str, energy: Energy) -> Vec<u8> {
    jcp::cbor::map([
        ("activity", Some(Value::text(label))),
        ("joules_uj", Some(Value::Uint(energy.uj))),
        ("provenance", Some(Value::text(energy.provenance.as_str()))),
        ("energy_coverage", (energy.coverage == Coverage::Partial).then(|| Value::text("Partial"))),
    ])
    .encode()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jcp::identity::Keypair;

    fn setup(outcome_uj: u64, parts: &[(u64, Provenance, Coverage)]) -> (Efficiency, HashMap<ContentId, Vec<u8>>) {
        let mut store = HashMap::new();
        let mut ids = Vec::new();
        for (i, (uj, p, c)) in parts.iter().enumerate() {
            let b =
                activity_bytes(&format!("act-{i}"), Energy { uj: *uj, provenance: *p, coverage: *c, measured: None });
            let id = ContentId::of_bytes(&b);
            store.insert(id, b);
            ids.push(id);
        }
        let e = Efficiency {
            outcome: "o".into(),
            activities: ids,
            energy: Energy::new(outcome_uj, Provenance::HwShunt),
            accepted_tokens: 0,
            completed_units: 1,
            steward: Keypair::from_seed([1; 32]).unwrap().did(),
        };
        (e, store)
    }

    #[test]
    fn s5_3_residual_is_named_and_positive_for_accountability_cost() {
        let (e, s) =
            setup(1_000, &[(600, Provenance::HwShunt, Coverage::Whole), (300, Provenance::HwShunt, Coverage::Whole)]);
        let r = trace(&e, &s).unwrap();
        assert_eq!((r.accounted_uj, r.residual_uj, r.finding), (900, 100, None));
    }

    #[test]
    fn s5_3_negative_residual_is_not_clamped_and_is_a_finding() {
        let (e, s) =
            setup(1_000, &[(800, Provenance::HwShunt, Coverage::Whole), (700, Provenance::HwShunt, Coverage::Whole)]);
        let r = trace(&e, &s).unwrap();
        assert_eq!(r.residual_uj, -500);
        assert_eq!(r.finding, Some("activities-exceed-outcome"));
    }

    #[test]
    fn s5_3_activity_bound_twice_is_refused_before_the_sum() {
        let (mut e, s) = setup(1_000, &[(800, Provenance::HwShunt, Coverage::Whole)]);
        e.activities.push(e.activities[0]);
        assert_eq!(trace(&e, &s).unwrap_err().code(), "activity-bound-twice");
    }

    #[test]
    fn s5_3_floor_not_average() {
        let (e, s) =
            setup(1_000, &[(500, Provenance::HwShunt, Coverage::Whole), (1, Provenance::Estimator, Coverage::Partial)]);
        let r = trace(&e, &s).unwrap();
        assert_eq!((r.provenance_floor, r.coverage_floor), (Provenance::Estimator, Coverage::Partial));
    }

    #[test]
    fn s5_3_unresolvable_and_substituted_activities_are_refused() {
        let (e, mut s) = setup(1_000, &[(500, Provenance::HwShunt, Coverage::Whole)]);
        let id = e.activities[0];
        let other = activity_bytes("forged", Energy::new(1, Provenance::HwShunt));
        s.insert(id, other);
        assert_eq!(trace(&e, &s).unwrap_err().code(), "activity-id-mismatch");
        s.clear();
        assert_eq!(trace(&e, &s).unwrap_err().code(), "unresolvable-activity");
    }
}
