//! §9: the bounds algebra — laws property-tested, clamp evidence, protected
//! bounds denial and the acknowledge posture.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::artifact::{APPROVAL, AUTHORITY, CLASSIFICATION, DISCLOSURE, IMPACT, OPERATIONAL};
use blueprint::bounds::{intersect, intersect_value, Bounds, Classification, Cost, Posture};
use blueprint::json::{self, Value};
use blueprint::limits::Limits;
use proptest::prelude::*;

fn arb_bounds() -> impl Strategy<Value = Bounds> {
    (
        prop::array::uniform7(0i64..20),
        0i64..20,
        (
            0..CLASSIFICATION.len(),
            prop::collection::btree_set(prop_oneof![Just("pci".to_string()), Just("phi".to_string())], 0..3),
        ),
        0..DISCLOSURE.len(),
        0..IMPACT.len(),
        0..AUTHORITY.len(),
        0..APPROVAL.len(),
    )
        .prop_map(|(ints, amount, (ordinal, markers), disclosure, effect_impact, authority, approval)| Bounds {
            ints,
            max_cost: Cost { amount, currency: "USD".into() },
            classification: Classification { ordinal, markers },
            disclosure,
            effect_impact,
            authority,
            approval,
        })
}

proptest! {
    #[test]
    fn s9_meet_is_idempotent(a in arb_bounds()) {
        prop_assert_eq!(a.meet(&a).expect("meet"), a);
    }

    #[test]
    fn s9_meet_is_commutative(a in arb_bounds(), b in arb_bounds()) {
        prop_assert_eq!(a.meet(&b).expect("ab"), b.meet(&a).expect("ba"));
    }

    #[test]
    fn s9_meet_is_associative(a in arb_bounds(), b in arb_bounds(), c in arb_bounds()) {
        prop_assert_eq!(a.meet(&b).expect("ab").meet(&c).expect("abc"), a.meet(&b.meet(&c).expect("bc")).expect("a(bc)"));
    }

    #[test]
    fn s9_effective_never_widens_host_and_clamps_iff_changed(bp in arb_bounds(), dep in arb_bounds(), host in arb_bounds()) {
        let all: Vec<String> = blueprint::artifact::PROTECTED.iter().map(std::string::ToString::to_string).collect();
        let (eff, out) = intersect(&bp, &dep, &host, &Posture::Acknowledge(all)).expect("acknowledged");
        prop_assert!(!eff.widens(&host));
        prop_assert!(!eff.widens(&dep));
        for name in OPERATIONAL {
            let clamped = out.clamps.iter().any(|c| c.bound == *name);
            prop_assert_eq!(clamped, bp.field(name) != eff.field(name), "{}", name);
        }
        // the default posture denies exactly when a protected bound moved
        let moved = blueprint::artifact::PROTECTED.iter().any(|n| bp.field(n) != eff.field(n));
        let denied = intersect(&bp, &dep, &host, &Posture::Deny);
        prop_assert_eq!(denied.is_err(), moved);
        if let Err(e) = denied { prop_assert_eq!(e.code(), "protected_bound_clamp_denied"); }
    }
}

fn full(over: &str) -> String {
    let mut base = json::decode(
        br#"{"approval_trait":"none","authority_trait":"local_policy","classification_ceiling":{"markers":[],"ordinal":"internal"},"disclosure_ceiling":"summary","effect_impact_ceiling":"ordinary","max_attempts":3,"max_concurrency":3,"max_cost":{"amount":3,"currency":"USD"},"max_depth":3,"max_descendants":3,"max_elapsed_ms":3,"max_fan_out":3,"max_tokens":3}"#,
        &Limits::default(),
    )
    .expect("base");
    let o = json::decode(over.as_bytes(), &Limits::default()).expect("over");
    if let (Value::Object(m), Value::Object(om)) = (&mut base, o) {
        for (k, v) in om.iter() {
            m.insert(k.clone(), v.clone());
        }
    }
    blueprint::canon::canonical_string(&base).expect("s")
}

fn run(bp: &str, dep: &str, host: &str, extra: &str) -> Result<blueprint::bounds::Intersection, blueprint::Error> {
    let t = format!(r#"{{"blueprint":{},"deployment":{},"host":{}{extra}}}"#, full(bp), full(dep), full(host));
    intersect_value(&json::decode(t.as_bytes(), &Limits::default()).expect("input"))
}

#[test]
fn s9_markers_meet_by_union_and_dropping_one_is_denied() {
    let e = run("{}", r#"{"classification_ceiling":{"markers":["pci"],"ordinal":"internal"}}"#, "{}", "")
        .expect_err("added");
    assert_eq!(e.code(), "protected_bound_clamp_denied");
    let ok = run(
        "{}",
        r#"{"classification_ceiling":{"markers":["pci"],"ordinal":"internal"}}"#,
        "{}",
        r#","acknowledge":["classification_ceiling"]"#,
    )
    .expect("ack");
    assert_eq!(ok.clamp_count, 1);
    assert!(ok.clamps[0].protected);
    assert_eq!(
        ok.effective
            .get("classification_ceiling")
            .and_then(|c| c.get("markers"))
            .and_then(Value::as_array)
            .map(<[Value]>::len),
        Some(1)
    );
}

#[test]
fn s9_sources_are_typed_and_complete() {
    assert_eq!(
        run(r#"{"max_cost":{"amount":3,"currency":"EUR"}}"#, "{}", "{}", "").expect_err("unit").code(),
        "bound_unit_mismatch"
    );
    assert_eq!(run(r#"{"max_depth":-1}"#, "{}", "{}", "").expect_err("neg").code(), "bound_value_invalid");
    assert_eq!(
        run(r#"{"authority_trait":"root"}"#, "{}", "{}", "").expect_err("lattice").code(),
        "bound_value_invalid"
    );
    assert_eq!(run("{}", "{}", "{}", r#","acknowledge":["max_depth"]"#).expect_err("ack op").code(), "bound_unknown");
    let missing =
        json::decode(format!(r#"{{"blueprint":{},"host":{}}}"#, full("{}"), full("{}")).as_bytes(), &Limits::default())
            .expect("j");
    assert_eq!(intersect_value(&missing).expect_err("src").code(), "bound_source_missing");
}

#[test]
fn s9_obligations_meet_at_strictest() {
    let r = run(r#"{"approval_trait":"human_required"}"#, "{}", "{}", "").expect("bp strictest");
    assert_eq!(r.effective.get("approval_trait").and_then(Value::as_str), Some("human_required"));
    assert_eq!(r.clamp_count, 0);
}
