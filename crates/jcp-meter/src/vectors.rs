//! The published `efficiency/1` pack, `conformance/jcp/v1/efficiency.json`
//! (`cargo run -p jcp-meter --features vectors --bin gen-efficiency-vectors`).
//!
//! [`generate`] builds the pack deterministically (fixed seeds, Ed25519's
//! deterministic signatures, insertion-ordered JSON) and checks every vector
//! against this implementation as it goes: an expectation the code does not
//! meet stops the generator rather than being written down. The pack test
//! replays the file from disk and fails if regenerating changes a byte.

use std::collections::HashMap;

use jcp::cbor::{ContentId, Value};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::identity::Keypair;
use serde_json::{json, Value as Json};

use crate::efficiency::{aggregate, envelope, read_payload, verify, Efficiency, Totals, Verified};
use crate::traceability::{activity_bytes, trace, TraceReport};

/// Where the pack lives, from the repository root.
pub const PACK_PATH: &str = "conformance/jcp/v1/efficiency.json";

const STEWARD_SEED: [u8; 32] = [0x11; 32];
const OTHER_SEED: [u8; 32] = [0x22; 32];

fn energy_json(e: Energy) -> Json {
    json!({"uj": e.uj, "provenance": e.provenance.as_str(), "coverage": e.coverage.as_str()})
}

/// The expectation a reading is replayed against.
pub fn payload_json(e: &Efficiency) -> Json {
    json!({
        "outcome": e.outcome,
        "activities": e.activities.iter().map(ContentId::to_hex).collect::<Vec<_>>(),
        "energy_uj": e.energy.uj,
        "provenance": e.energy.provenance.as_str(),
        "coverage": e.energy.coverage.as_str(),
        "accepted_tokens": e.accepted_tokens,
        "uj_per_accepted_token": e.uj_per_accepted_token(),
        "completed_units": e.completed_units,
        "steward": e.steward.to_did_string(),
    })
}

/// The expectation a total is replayed against.
pub fn totals_json(t: &Totals) -> Json {
    json!({
        "receipts": t.receipts,
        "energy_uj": t.energy_uj,
        "accepted_tokens": t.accepted_tokens,
        "completed_units": t.completed_units,
        "provenance_floor": t.provenance_floor.as_str(),
        "coverage": t.coverage.as_str(),
        "uj_per_completed_unit": t.uj_per_completed_unit,
        "uj_per_accepted_token": t.uj_per_accepted_token,
        "units_per_joule": t.units_per_joule.map(|r| json!({"num": r.num.to_string(), "den": r.den.to_string()})),
    })
}

/// The expectation a trace is replayed against.
pub fn trace_json(r: &TraceReport) -> Json {
    json!({
        "outcome_uj": r.outcome_uj,
        "accounted_uj": r.accounted_uj,
        "residual_uj": r.residual_uj.to_string(),
        "provenance_floor": r.provenance_floor.as_str(),
        "coverage_floor": r.coverage_floor.as_str(),
        "finding": r.finding,
    })
}

/// A map written in the given entry order, unsorted (for non-canonical vectors).
fn raw_map(entries: &[(Value, Value)]) -> Vec<u8> {
    let mut out = vec![0xa0 | u8::try_from(entries.len()).unwrap_or(0)];
    for (k, v) in entries {
        k.encode_into(&mut out);
        v.encode_into(&mut out);
    }
    out
}

fn with(core: &Value, key: &str, value: Option<Value>) -> Value {
    let Value::Map(entries) = core else {
        return core.clone();
    };
    let mut m: Vec<(Value, Value)> = entries.iter().filter(|(k, _)| k != &Value::text(key)).cloned().collect();
    if let Some(v) = value {
        m.push((Value::text(key), v));
    }
    Value::Map(m)
}

struct Builder {
    key: Keypair,
    other: Keypair,
    activities: Vec<(String, ContentId, Vec<u8>, Energy)>,
    readings: Vec<(String, Vec<u8>, Verified)>,
}

impl Builder {
    fn activity(&mut self, name: &str, e: Energy) -> ContentId {
        let b = activity_bytes(name, e);
        let id = ContentId::of_bytes(&b);
        self.activities.push((name.to_owned(), id, b, e));
        id
    }

    fn efficiency(
        &self,
        outcome: &str,
        activities: Vec<ContentId>,
        energy: Energy,
        tokens: u64,
        units: u64,
    ) -> Efficiency {
        Efficiency {
            outcome: outcome.into(),
            activities,
            energy,
            accepted_tokens: tokens,
            completed_units: units,
            steward: self.key.did(),
        }
    }

    fn reading(&mut self, name: &str, e: &Efficiency) -> Result<Json, String> {
        let sealed = e.seal(&self.key).map_err(|x| x.to_string())?;
        let v = verify(&sealed).map_err(|x| format!("{name}: {x}"))?;
        if &v.payload != e {
            return Err(format!("{name}: payload does not read back"));
        }
        let core = e.wire().encode();
        let j = json!({
            "name": name,
            "core_hex": hex::encode(&core),
            "sealed_hex": hex::encode(&sealed),
            "id": v.id.to_hex(),
            "energy_coverage_on_wire": e.wire().get("energy_coverage").is_some(),
            "expect": payload_json(e),
        });
        self.readings.push((name.to_owned(), sealed, v));
        Ok(j)
    }

    fn verified(&self, name: &str) -> Result<Verified, String> {
        self.readings.iter().find(|r| r.0 == name).map(|r| r.2.clone()).ok_or_else(|| format!("no reading {name}"))
    }
}

fn refusal(name: &str, stage: &str, bytes: &[u8], code: &str, what: &str) -> Result<Json, String> {
    let got = match stage {
        "read_payload" => read_payload(bytes).err(),
        _ => verify(bytes).err(),
    };
    match got {
        Some(e) if e.code() == code => {
            Ok(json!({"name": name, "stage": stage, "hex": hex::encode(bytes), "code": code, "rule": what}))
        }
        Some(e) => Err(format!("{name}: expected {code}, got {} ({e})", e.code())),
        None => Err(format!("{name}: expected {code}, but it was accepted")),
    }
}

/// Builds the pack; fails if this implementation does not meet a vector.
pub fn generate() -> Result<String, String> {
    let key = Keypair::from_seed(STEWARD_SEED).map_err(|e| e.to_string())?;
    let other = Keypair::from_seed(OTHER_SEED).map_err(|e| e.to_string())?;
    let mut b = Builder { key, other, activities: Vec::new(), readings: Vec::new() };
    let (fx, readings) = reading_vectors(&mut b)?;
    let mut refusals = payload_refusals(&fx)?;
    refusals.extend(envelope_refusals(&b, &fx)?);
    let totals = total_vectors(&b)?;
    let traces = trace_vectors(&b, fx.a_decode)?;
    let pack = json!({
        "pack": "jcp/v1/efficiency",
        "spec": "jcp-v0.3 §5.2, §5.3 and the appendix \"the efficiency/1 coverage change\"",
        "generator": "cargo run -p jcp-meter --features vectors --bin gen-efficiency-vectors",
        "format": "core_hex is the signed core (canonical det-CBOR, read by read_payload); sealed_hex is {core, sig} (read by verify); hex under refusals is read by the named stage and must fail with code",
        "steward": b.key.did().to_did_string(),
        "activities": b.activities.iter().map(|(name, id, bytes, e)| json!({"name": name, "id": id.to_hex(), "hex": hex::encode(bytes), "energy": energy_json(*e)})).collect::<Vec<_>>(),
        "readings": readings,
        "refusals": refusals,
        "totals": totals,
        "traces": traces,
    });
    serde_json::to_string_pretty(&pack).map(|s| s + "\n").map_err(|e| e.to_string())
}

/// What the refusals and traces are built from: readings' payloads and activity ids.
struct Fixtures {
    /// The whole `HwShunt` reading.
    whole: Efficiency,
    /// The `Partial` GPU-counter reading.
    partial: Efficiency,
    /// The estimated reading with no accepted token.
    est: Efficiency,
    /// The `prefill` activity.
    a_prompt: ContentId,
    /// The `decode` activity.
    a_decode: ContentId,
}

/// The activities and the readings (§5.2, §5.3): each sealed, verified and read back.
fn reading_vectors(b: &mut Builder) -> Result<(Fixtures, Vec<Json>), String> {
    let hw = |uj| Energy::new(uj, Provenance::HwShunt);
    let a_prompt = b.activity("prefill", hw(700_000));
    let a_decode = b.activity("decode", hw(400_000));
    let a_gpu = b.activity(
        "gpu-kernel",
        Energy { uj: 300_000, provenance: Provenance::HwShunt, coverage: Coverage::Partial, measured: None },
    );
    let a_est = b.activity("tool-call", Energy::new(50_000, Provenance::Estimator));
    let a_big1 = b.activity("double-counted-1", hw(800_000));
    let a_big2 = b.activity("double-counted-2", hw(700_000));

    let mut readings = Vec::new();
    let whole = b.efficiency("answer-17", vec![a_prompt, a_decode], hw(1_234_567), 1_000, 1);
    readings.push(b.reading("whole-hwshunt", &whole)?);
    let partial = b.efficiency(
        "gpu-only-answer",
        vec![a_gpu],
        Energy { uj: 987_654, provenance: Provenance::HwShunt, coverage: Coverage::Partial, measured: None },
        500,
        1,
    );
    readings.push(b.reading("partial-gpu-counter", &partial)?);
    let est = b.efficiency("tool-run", vec![a_est], Energy::new(60_000, Provenance::Estimator), 0, 1);
    readings.push(b.reading("estimator-no-tokens", &est)?);
    let model = b.efficiency("summary-3", vec![a_decode], Energy::new(420_000, Provenance::ModelBased), 7, 2);
    readings.push(b.reading("modelbased-whole", &model)?);
    let over = b.efficiency("over-claimed", vec![a_big1, a_big2], hw(1_000_000), 10, 1);
    readings.push(b.reading("activities-exceed-outcome", &over)?);
    let mixed = b.efficiency("mixed-trace", vec![a_prompt, a_est], hw(800_000), 40, 1);
    readings.push(b.reading("estimator-activity", &mixed)?);
    Ok((Fixtures { whole, partial, est, a_prompt, a_decode }, readings))
}

/// Payloads `read_payload` must refuse, each with its code: first the
/// profile's own rules (§5.2 coverage and headline, the appendix's
/// provenance labels, the closed schema), then traceability and encoding.
fn payload_refusals(fx: &Fixtures) -> Result<Vec<Json>, String> {
    let wc = fx.whole.wire();
    let pc = fx.partial.wire();
    let mut refusals = vec![
        refusal(
            "partial-with-headline",
            "read_payload",
            &with(&pc, "uj_per_accepted_token", Some(Value::Uint(1_975))).encode(),
            "partial-headline",
            "§5.2: a Partial receipt MUST NOT carry uj_per_accepted_token",
        )?,
        refusal(
            "coverage-whole",
            "read_payload",
            &with(&wc, "energy_coverage", Some(Value::text("Whole"))).encode(),
            "bad-coverage",
            "§5.2: energy_coverage has exactly one value, \"Partial\"; \"Whole\" is refused",
        )?,
        refusal(
            "coverage-lowercase",
            "read_payload",
            &with(&pc, "energy_coverage", Some(Value::text("partial"))).encode(),
            "bad-coverage",
            "§5.2: any value but \"Partial\" is refused",
        )?,
        refusal(
            "coverage-not-text",
            "read_payload",
            &with(&pc, "energy_coverage", Some(Value::Uint(0))).encode(),
            "bad-coverage",
            "§5.2: any value but \"Partial\" is refused",
        )?,
        refusal(
            "provenance-unknown",
            "read_payload",
            &with(&wc, "provenance", Some(Value::text("Measured"))).encode(),
            "bad-provenance",
            "appendix: a provenance label that is not one of the three",
        )?,
        refusal(
            "provenance-lowercase",
            "read_payload",
            &with(&wc, "provenance", Some(Value::text("hwshunt"))).encode(),
            "bad-provenance",
            "appendix: labels are exact",
        )?,
        refusal(
            "headline-mismatch",
            "read_payload",
            &with(&wc, "uj_per_accepted_token", Some(Value::Uint(1_000))).encode(),
            "headline-mismatch",
            "the headline is floor(energy_uj / accepted_tokens)",
        )?,
        refusal(
            "headline-missing",
            "read_payload",
            &with(&wc, "uj_per_accepted_token", None).encode(),
            "headline-missing",
            "a Whole receipt with accepted tokens seals its headline: a reader never fills it in",
        )?,
        refusal(
            "headline-without-tokens",
            "read_payload",
            &with(&fx.est.wire(), "uj_per_accepted_token", Some(Value::Uint(0))).encode(),
            "headline-mismatch",
            "no token accepted, no energy per token",
        )?,
        refusal(
            "unknown-profile",
            "read_payload",
            &with(&wc, "efficiency", Some(Value::text("efficiency/2"))).encode(),
            "unknown-profile",
            "a profile tag this verifier does not implement is refused, not assumed",
        )?,
        refusal(
            "unknown-field",
            "read_payload",
            &with(&wc, "energy_scope", Some(Value::text("cpu"))).encode(),
            "schema-unknown-field",
            "closed world: a field the profile does not define",
        )?,
        refusal(
            "missing-energy",
            "read_payload",
            &with(&wc, "energy_uj", None).encode(),
            "schema-missing-field",
            "energy_uj is required",
        )?,
    ];
    refusals.extend(traceability_and_encoding_refusals(fx)?);
    Ok(refusals)
}

/// Payloads `read_payload` must refuse for their activities (§5.3) or their encoding (§3, §5).
fn traceability_and_encoding_refusals(fx: &Fixtures) -> Result<Vec<Json>, String> {
    let wc = fx.whole.wire();
    let a_prompt = fx.a_prompt;
    let mut refusals = vec![
        refusal(
            "no-activities",
            "read_payload",
            &with(&wc, "activities", Some(Value::Array(vec![]))).encode(),
            "untraceable-outcome",
            "§5.3: an outcome's energy MUST name its activities by content id",
        )?,
        refusal(
            "activity-bound-twice",
            "read_payload",
            &with(
                &wc,
                "activities",
                Some(Value::Array(vec![Value::text(a_prompt.to_hex()), Value::text(a_prompt.to_hex())])),
            )
            .encode(),
            "activity-bound-twice",
            "§5.3: an activity bound twice MUST be refused before the sum",
        )?,
        refusal(
            "activity-not-a-content-id",
            "read_payload",
            &with(&wc, "activities", Some(Value::Array(vec![Value::text("prefill")]))).encode(),
            "schema-invalid-field",
            "§5.3: activities are named by content id, not by label",
        )?,
        refusal(
            "negative-energy",
            "read_payload",
            &with(&wc, "energy_uj", Some(Value::Nint(0))).encode(),
            "cbor-forbidden-type",
            "§5: integer microjoules, never negative (the strict profile admits no negative integer)",
        )?,
        refusal(
            "float-energy",
            "read_payload",
            &with(&wc, "energy_uj", Some(Value::Float { bits: 0x3c00, width: 2 })).encode(),
            "cbor-forbidden-type",
            "§3: no floats in a signed core",
        )?,
    ];
    let Value::Map(entries) = &wc else {
        return Err("core is not a map".into());
    };
    let mut reversed = entries.clone();
    reversed.sort_by(|a, b| Value::length_first_cmp(&b.0.encode(), &a.0.encode()));
    refusals.push(refusal(
        "keys-out-of-order",
        "read_payload",
        &raw_map(&reversed),
        "cbor-unsorted-keys",
        "§3: canonical det-CBOR only",
    )?);
    Ok(refusals)
}

/// Sealed receipts `verify` must refuse: the steward's signature over the core.
fn envelope_refusals(b: &Builder, fx: &Fixtures) -> Result<Vec<Json>, String> {
    let wc = fx.whole.wire();
    let mut refusals = Vec::new();
    let sealed = &b.readings[0].1;
    let mut flipped = sealed.clone();
    // {"sig": h'…', "core": …} — length-first order puts `sig` first; byte 8 is inside the signature.
    flipped[8] ^= 0x01;
    refusals.push(refusal(
        "signature-flipped",
        "verify",
        &flipped,
        "bad-signature",
        "the steward's Ed25519 signature over the core",
    )?);
    let forged = envelope(&wc, &b.other.sign(&wc.encode()));
    refusals.push(refusal(
        "signed-by-another-key",
        "verify",
        &forged,
        "bad-signature",
        "only the named steward's key verifies",
    )?);
    let inflated = with(&wc, "energy_uj", Some(Value::Uint(1)));
    let inflated = with(&inflated, "uj_per_accepted_token", Some(Value::Uint(0)));
    refusals.push(refusal(
        "core-edited-after-signing",
        "verify",
        &envelope(&inflated, &b.key.sign(&wc.encode())),
        "bad-signature",
        "a figure edited after sealing",
    )?);
    Ok(refusals)
}

/// Totals over verified readings (§5.2, §5.3): the provenance floor, coverage, per-unit figures.
fn total_vectors(b: &Builder) -> Result<Vec<Json>, String> {
    let mut totals = Vec::new();
    for (name, set, rule) in [
        ("whole-and-modelbased", vec!["whole-hwshunt", "modelbased-whole"], "§5.3: the provenance floor, never an average"),
        ("with-partial", vec!["whole-hwshunt", "partial-gpu-counter"], "§5.2: a total over any Partial receipt is Partial and gives no per-unit energy; value per joule is its worst value, 0"),
        ("with-estimator", vec!["whole-hwshunt", "modelbased-whole", "estimator-no-tokens"], "§5.3: one Estimator part makes the whole estimated"),
        ("single-whole", vec!["whole-hwshunt"], "a total of one whole receipt keeps its grade"),
    ] {
        let vs: Vec<Verified> = set.iter().map(|n| b.verified(n)).collect::<Result<_, _>>()?;
        let t = aggregate(&vs).map_err(|e| format!("{name}: {e}"))?;
        totals.push(json!({"name": name, "readings": set, "rule": rule, "expect": totals_json(&t)}));
    }
    let dup = vec![b.verified("whole-hwshunt")?, b.verified("whole-hwshunt")?];
    match aggregate(&dup) {
        Err(e) if e.code() == "receipt-counted-twice" => totals.push(json!({"name": "same-receipt-twice", "readings": ["whole-hwshunt", "whole-hwshunt"], "rule": "a receipt counted twice inflates the total", "code": e.code()})),
        other => return Err(format!("same-receipt-twice: {other:?}")),
    }
    Ok(totals)
}

/// Traces (§5.3): an outcome's activities resolved by content id, the signed residual, the floors.
fn trace_vectors(b: &Builder, a_decode: ContentId) -> Result<Vec<Json>, String> {
    let store: HashMap<ContentId, Vec<u8>> =
        b.activities.iter().map(|(_, id, bytes, _)| (*id, bytes.clone())).collect();
    let mut traces = Vec::new();
    for (reading, rule) in [
        ("whole-hwshunt", "residual = outcome − Σ activities, named not absorbed"),
        ("activities-exceed-outcome", "a negative residual is not clamped; it is a finding"),
        ("estimator-activity", "the trace's provenance is the floor over the outcome and every activity"),
        ("partial-gpu-counter", "coverage takes the floor the same way"),
    ] {
        let v = b.verified(reading)?;
        let r = trace(&v.payload, &store).map_err(|e| format!("{reading}: {e}"))?;
        traces.push(json!({"name": reading, "reading": reading, "rule": rule, "expect": trace_json(&r)}));
    }
    let mut missing = store.clone();
    missing.remove(&a_decode);
    match trace(&b.verified("whole-hwshunt")?.payload, &missing) {
        Err(e) if e.code() == "unresolvable-activity" => traces.push(json!({"name": "activity-not-resolvable", "reading": "whole-hwshunt", "omit_activities": [a_decode.to_hex()], "rule": "a verifier MUST be able to resolve each named activity", "code": e.code()})),
        other => return Err(format!("activity-not-resolvable: {other:?}")),
    }
    Ok(traces)
}
