//! `efficiency/1`: the outcome receipt (§5.2, §5.3 and the appendix
//! "the efficiency/1 coverage change").
//!
//! The signed core is a flat det-CBOR map (§3):
//!
//! ```text
//! efficiency            = "efficiency/1"
//! outcome               = text             ; the unit of work, for people
//! activities            = [content id hex] ; §5.3: the activities, by content id, each once
//! energy_uj             = uint
//! provenance            = "HwShunt" | "ModelBased" | "Estimator"
//! energy_coverage       = "Partial"        ; omitted when Whole (§5.2)
//! accepted_tokens       = uint
//! uj_per_accepted_token = uint             ; floor(energy_uj / accepted_tokens); never on a Partial receipt
//! completed_units       = uint
//! steward               = did:key          ; the signer
//! ```
//!
//! The sealed receipt is the map `{core: <core>, sig: <64-byte Ed25519
//! signature over the core's canonical bytes>}`. [`read_payload`] applies
//! every payload rule without a signature; [`verify`] adds the signature.
//! [`aggregate`] sums receipts into [`Totals`] with the provenance and
//! coverage floors: a total over any `Partial` receipt is `Partial`, gives
//! no per-unit energy, and reports value per joule as its worst value, 0.

use std::collections::BTreeSet;

use jcp::cbor::{decode_strict, map, ContentId, Fields, Value};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::identity::{Did, Keypair};
use serde::Serialize;

use crate::Error;

/// The profile tag.
pub const PROFILE: &str = "efficiency/1";

/// An outcome receipt's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Efficiency {
    /// The unit of work, for people.
    pub outcome: String,
    /// The activities the outcome's energy rests on, by content id (§5.3).
    pub activities: Vec<ContentId>,
    /// The outcome's energy, grade and coverage.
    pub energy: Energy,
    /// Tokens accepted.
    pub accepted_tokens: u64,
    /// Units of work completed.
    pub completed_units: u64,
    /// Who seals it.
    pub steward: Did,
}

impl Efficiency {
    /// The headline: energy per accepted token, µJ, rounded down. Absent on a
    /// `Partial` figure (§5.2) and where no token was accepted.
    pub fn uj_per_accepted_token(&self) -> Option<u64> {
        if self.energy.coverage == Coverage::Partial || self.accepted_tokens == 0 {
            None
        } else {
            Some(self.energy.uj / self.accepted_tokens)
        }
    }

    /// The signed core (§3 canonical det-CBOR); coverage only when Partial.
    pub fn wire(&self) -> Value {
        map([
            ("efficiency", Some(Value::text(PROFILE))),
            ("outcome", Some(Value::text(&self.outcome))),
            ("activities", Some(Value::Array(self.activities.iter().map(|c| Value::text(c.to_hex())).collect()))),
            ("energy_uj", Some(Value::Uint(self.energy.uj))),
            ("provenance", Some(Value::text(self.energy.provenance.as_str()))),
            ("energy_coverage", (self.energy.coverage == Coverage::Partial).then(|| Value::text("Partial"))),
            ("accepted_tokens", Some(Value::Uint(self.accepted_tokens))),
            ("uj_per_accepted_token", self.uj_per_accepted_token().map(Value::Uint)),
            ("completed_units", Some(Value::Uint(self.completed_units))),
            ("steward", Some(Value::text(self.steward.to_did_string()))),
        ])
    }

    /// Seals with `key`, which must be the steward's.
    pub fn seal(&self, key: &Keypair) -> Result<Vec<u8>, Error> {
        if key.did() != self.steward {
            return Err(Error::BadSteward {
                detail: format!("the key is {}, the receipt names {}", key.did(), self.steward),
            });
        }
        let core = self.wire().encode();
        let sig = key.sign(&core);
        Ok(envelope(&self.wire(), &sig))
    }
}

/// The sealed form: `{core, sig}`.
pub fn envelope(core: &Value, sig: &[u8; 64]) -> Vec<u8> {
    map([("core", Some(core.clone())), ("sig", Some(Value::Bytes(sig.to_vec())))]).encode()
}

/// Reads a core's bytes under every payload rule, without a signature.
pub fn read_payload(bytes: &[u8]) -> Result<Efficiency, Error> {
    let v = decode_strict(bytes)?;
    read_core(&v)
}

fn read_core(v: &Value) -> Result<Efficiency, Error> {
    let mut f = Fields::new("efficiency/1", v)?;
    let profile = f.text("efficiency")?;
    if profile != PROFILE {
        return Err(Error::UnknownProfile { found: profile.to_owned() });
    }
    let outcome = f.text("outcome")?.to_owned();
    let ids = f.text_array("activities")?;
    let energy_uj = f.uint("energy_uj")?;
    let prov = f.text("provenance")?;
    let provenance =
        Provenance::parse(prov).ok_or_else(|| Error::BadProvenance { field: "provenance", found: prov.to_owned() })?;
    let coverage = match f.opt("energy_coverage") {
        None => Coverage::Whole,
        Some(Value::Text(s)) if s == "Partial" => Coverage::Partial,
        Some(Value::Text(s)) => return Err(Error::BadCoverage { found: s.clone() }),
        Some(other) => return Err(Error::BadCoverage { found: format!("{other:?}") }),
    };
    let accepted_tokens = f.uint("accepted_tokens")?;
    let headline = f.opt_uint("uj_per_accepted_token")?;
    let completed_units = f.uint("completed_units")?;
    let steward_text = f.text("steward")?;
    f.finish()?;
    let steward = Did::parse(steward_text).map_err(|e| Error::BadSteward { detail: e.to_string() })?;
    if ids.is_empty() {
        return Err(Error::Untraceable);
    }
    let mut activities = Vec::with_capacity(ids.len());
    let mut seen = BTreeSet::new();
    for s in &ids {
        let id = ContentId::parse(s).ok_or_else(|| {
            Error::Schema(jcp::cbor::SchemaError::Invalid {
                object: "efficiency/1",
                field: "activities",
                problem: format!("`{s}` is not a content id (64 lowercase hex digits)"),
            })
        })?;
        if !seen.insert(id.0) {
            return Err(Error::ActivityBoundTwice { id: id.to_hex() });
        }
        activities.push(id);
    }
    let e = Efficiency {
        outcome,
        activities,
        energy: Energy { uj: energy_uj, provenance, coverage, measured: None },
        accepted_tokens,
        completed_units,
        steward,
    };
    let computed = e.uj_per_accepted_token();
    match headline {
        None => {
            if let Some(computed) = computed {
                return Err(Error::HeadlineMissing { computed });
            }
        }
        Some(_) if coverage == Coverage::Partial => return Err(Error::PartialHeadline),
        Some(h) if computed != Some(h) => {
            return Err(Error::HeadlineMismatch {
                carried: h,
                computed: computed.map_or_else(|| "none: no token was accepted".to_owned(), |c| c.to_string()),
            })
        }
        Some(_) => {}
    }
    Ok(e)
}

/// A verified receipt and its content id (blake3 of the sealed bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// The sealed bytes' content id.
    pub id: ContentId,
    /// The payload.
    pub payload: Efficiency,
}

/// Verifies a sealed receipt: canonical bytes, every payload rule, the steward's signature.
pub fn verify(bytes: &[u8]) -> Result<Verified, Error> {
    let v = decode_strict(bytes)?;
    let mut f = Fields::new("efficiency/1 envelope", &v)?;
    let core = f.req("core")?;
    let sig: [u8; 64] = f.bytes_n("sig")?;
    f.finish()?;
    let payload = read_core(core)?;
    if !payload.steward.verify(&core.encode(), &sig) {
        return Err(Error::BadSignature { steward: payload.steward.to_did_string() });
    }
    Ok(Verified { id: ContentId::of_bytes(bytes), payload })
}

/// An exact non-negative ratio `num / den` (never a float).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ratio {
    /// Numerator.
    pub num: u128,
    /// Denominator (> 0).
    pub den: u128,
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Ratio {
    /// `num / den` in lowest terms; `None` when `den` is 0.
    pub fn new(num: u128, den: u128) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        Some(Self { num: num / g, den: den / g })
    }

    /// The ratio as a decimal with `places` digits after the point, rounded
    /// up (never flattering a floor), in integer arithmetic; `None` when
    /// scaling by `10^places` overflows.
    pub fn decimal_ceil(&self, places: u32) -> Option<String> {
        let scale = 10u128.checked_pow(places)?;
        let q = self.num.checked_mul(scale)?.div_ceil(self.den);
        let width = usize::try_from(places).ok()?;
        Some(match places {
            0 => q.to_string(),
            _ => format!("{}.{:0width$}", q / scale, q % scale),
        })
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

/// What a set of receipts sums to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Receipts summed.
    pub receipts: u64,
    /// Σ energy, µJ.
    pub energy_uj: u64,
    /// Σ accepted tokens.
    pub accepted_tokens: u64,
    /// Σ completed units.
    pub completed_units: u64,
    /// The worst provenance of any receipt (§5.3: never an average).
    pub provenance_floor: Provenance,
    /// `Partial` if any receipt is.
    pub coverage: Coverage,
    /// µJ per completed unit, rounded down; absent when Partial or no unit completed.
    pub uj_per_completed_unit: Option<u64>,
    /// µJ per accepted token, rounded down; absent when Partial or no token.
    pub uj_per_accepted_token: Option<u64>,
    /// Completed units per joule, exact; 0 (the worst value) when Partial;
    /// absent when the total energy is 0.
    pub units_per_joule: Option<Ratio>,
}

/// Sums receipts; refuses an empty set and a receipt given twice.
pub fn aggregate(receipts: &[Verified]) -> Result<Totals, Error> {
    let first = receipts.first().ok_or(Error::EmptyTotal)?;
    let mut seen = BTreeSet::new();
    let mut energy: u64 = 0;
    let mut tokens: u64 = 0;
    let mut units: u64 = 0;
    let mut provenance_floor = first.payload.energy.provenance;
    let mut coverage = Coverage::Whole;
    for r in receipts {
        if !seen.insert(r.id.0) {
            return Err(Error::ReceiptCountedTwice { id: r.id.to_hex() });
        }
        let p = &r.payload;
        energy = energy.checked_add(p.energy.uj).ok_or(Error::Overflow { what: "total energy_uj" })?;
        tokens = tokens.checked_add(p.accepted_tokens).ok_or(Error::Overflow { what: "total accepted_tokens" })?;
        units = units.checked_add(p.completed_units).ok_or(Error::Overflow { what: "total completed_units" })?;
        provenance_floor = provenance_floor.min(p.energy.provenance);
        coverage = coverage.min(p.energy.coverage);
    }
    let whole = coverage == Coverage::Whole;
    let per = |n: u64| (whole && n > 0).then(|| energy / n);
    let units_per_joule =
        if whole { Ratio::new(u128::from(units) * 1_000_000, u128::from(energy)) } else { Ratio::new(0, 1) };
    Ok(Totals {
        receipts: u64::try_from(receipts.len()).unwrap_or(u64::MAX),
        energy_uj: energy,
        accepted_tokens: tokens,
        completed_units: units,
        provenance_floor,
        coverage,
        uj_per_completed_unit: per(units),
        uj_per_accepted_token: per(tokens),
        units_per_joule,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Keypair {
        Keypair::from_seed([7; 32]).unwrap()
    }

    fn receipt(uj: u64, p: Provenance, c: Coverage, tokens: u64) -> Efficiency {
        Efficiency {
            outcome: "answer".into(),
            activities: vec![ContentId::of(&Value::text("a")), ContentId::of(&Value::text("b"))],
            energy: Energy { uj, provenance: p, coverage: c, measured: None },
            accepted_tokens: tokens,
            completed_units: 1,
            steward: key().did(),
        }
    }

    #[test]
    fn s5_2_whole_receipt_omits_coverage_and_carries_headline() {
        let e = receipt(1_000, Provenance::HwShunt, Coverage::Whole, 3);
        let w = e.wire();
        assert!(w.get("energy_coverage").is_none());
        assert_eq!(w.get("uj_per_accepted_token"), Some(&Value::Uint(333)));
        assert_eq!(read_payload(&w.encode()).unwrap(), e);
    }

    #[test]
    fn s5_2_partial_receipt_carries_coverage_and_no_headline() {
        let e = receipt(1_000, Provenance::HwShunt, Coverage::Partial, 3);
        let w = e.wire();
        assert_eq!(w.get("energy_coverage"), Some(&Value::text("Partial")));
        assert!(w.get("uj_per_accepted_token").is_none());
        assert_eq!(read_payload(&w.encode()).unwrap(), e);
    }

    #[test]
    fn s5_2_read_payload_refuses_partial_headline() {
        let Value::Map(mut m) = receipt(1_000, Provenance::HwShunt, Coverage::Partial, 3).wire() else { panic!() };
        m.push((Value::text("uj_per_accepted_token"), Value::Uint(333)));
        assert_eq!(read_payload(&Value::Map(m).encode()).unwrap_err().code(), "partial-headline");
    }

    #[test]
    fn s5_2_read_payload_refuses_whole_as_a_coverage_value() {
        let Value::Map(mut m) = receipt(1_000, Provenance::HwShunt, Coverage::Whole, 3).wire() else { panic!() };
        m.push((Value::text("energy_coverage"), Value::text("Whole")));
        assert_eq!(read_payload(&Value::Map(m).encode()).unwrap_err().code(), "bad-coverage");
    }

    #[test]
    fn s5_2_verify_checks_the_stewards_signature() {
        let sealed = receipt(1_000, Provenance::ModelBased, Coverage::Whole, 3).seal(&key()).unwrap();
        assert!(verify(&sealed).is_ok());
        let mut bad = sealed.clone();
        // {"sig": h'…' (first: length-first key order), "core": …}: byte 8 is inside the signature.
        bad[8] ^= 1;
        assert_eq!(verify(&bad).unwrap_err().code(), "bad-signature");
    }

    #[test]
    fn s5_3_aggregate_takes_floors_and_partial_gives_no_per_unit() {
        let a = verify(&receipt(1_000, Provenance::HwShunt, Coverage::Whole, 10).seal(&key()).unwrap()).unwrap();
        let mut b_e = receipt(3_000, Provenance::Estimator, Coverage::Whole, 10);
        b_e.outcome = "other".into();
        let b = verify(&b_e.seal(&key()).unwrap()).unwrap();
        let t = aggregate(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(
            (t.energy_uj, t.provenance_floor, t.coverage, t.uj_per_accepted_token),
            (4_000, Provenance::Estimator, Coverage::Whole, Some(200))
        );
        assert_eq!(t.units_per_joule, Ratio::new(2_000_000, 4_000));
        let mut c_e = receipt(5, Provenance::HwShunt, Coverage::Partial, 1);
        c_e.outcome = "gpu".into();
        let c = verify(&c_e.seal(&key()).unwrap()).unwrap();
        let t = aggregate(&[a.clone(), c]).unwrap();
        assert_eq!((t.coverage, t.uj_per_completed_unit, t.uj_per_accepted_token), (Coverage::Partial, None, None));
        assert_eq!(t.units_per_joule, Some(Ratio { num: 0, den: 1 }));
        assert_eq!(aggregate(&[a.clone(), a]).unwrap_err().code(), "receipt-counted-twice");
    }
}
