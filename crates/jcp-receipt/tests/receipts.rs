//! §8 receipts: JCR-1 envelope, the jcp/2 core, profile versioning (C5, C23).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::similar_names,
    clippy::many_single_char_names,
    clippy::items_after_statements
)]

mod common;

use common::*;
use coset::{CborSerializable, CoseSign1, TaggedCborSerializable};
use jcp::cbor::{self, ContentId, Value};
use jcp::decision::{Gate, Reason, Request, Verdict};
use jcp::grant::{Caveat, Funds};
use jcp::identity::Did;
use jcp_receipt::cose::{self, DidCache, Position};
use jcp_receipt::receipt::{verify_receipt, OpenedReceipt, Profile, ReceiptCore};
use jcp_receipt::Error;

fn seal_decision(
    fx: &Fx,
    gate: &mut Gate,
    chain: &[jcp::grant::SignedGrant],
    caller: &Did,
    action: &str,
    c: &jcp::decision::Cost,
) -> (ReceiptCore, Vec<u8>) {
    let leaf = chain.last().unwrap();
    let f = frame(leaf, action, 42);
    let req = Request { frame: &f, chain, caller, cost: c, now: 100, flow: None };
    let d = gate.decide(&req);
    let core = ReceiptCore::from_decision(&d, &req, fx.steward.did()).unwrap();
    let bytes = core.seal(Position { seq: Some(0), known_through: Some(3) }, &fx.steward).unwrap();
    (core, bytes)
}

fn core_keys(bytes: &[u8]) -> Vec<String> {
    let s = CoseSign1::from_tagged_slice(bytes).unwrap();
    let v = cbor::decode_strict(s.payload.as_deref().unwrap()).unwrap();
    match v {
        Value::Map(e) => e
            .into_iter()
            .map(|(k, _)| match k {
                Value::Text(t) => t,
                _ => panic!(),
            })
            .collect(),
        _ => panic!("core is not a map"),
    }
}

#[test]
fn c5_allow_and_deny_both_seal_to_jcr1_and_verify() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (allow, a_bytes) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    let (deny, d_bytes) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "delete", &cost(10));
    assert_eq!(allow.verdict, Verdict::Allow);
    assert_eq!(deny.verdict, Verdict::Deny(Reason::ActionNotGranted));
    for b in [&a_bytes, &d_bytes] {
        let v = verify_receipt(b, Some(&fx.steward.did())).unwrap();
        assert_eq!(v.core.profile, Profile::Jcp2);
        assert_eq!(v.position, Position { seq: Some(0), known_through: Some(3) });
    }
    assert_eq!(verify_receipt(&a_bytes, None).unwrap().core, allow);
    assert_eq!(verify_receipt(&d_bytes, None).unwrap().core, deny);
}

#[test]
fn s8_jcp2_core_is_exactly_the_listed_fields() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    // A plain allow: a modelled figure, whole, no measured figure (§5: a
    // hardware one carries `energy_measured` besides; see the s5_ tests).
    let modelled = jcp::decision::Cost::energy(jcp::energy::Energy::new(10, jcp::energy::Provenance::ModelBased));
    let (_, a) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &modelled);
    let mut keys = core_keys(&a);
    keys.sort();
    let mut want = vec![
        "jcp_receipt",
        "grant_id",
        "issuer",
        "subject",
        "resource",
        "action",
        "payload_hash",
        "frame_kind",
        "trust",
        "verdict",
        "cost_uj",
        "energy_provenance",
        "budget_remaining_uj",
        "budget_uj",
        "steward",
    ];
    want.sort_unstable();
    assert_eq!(keys, want, "a plain allow carries §8's list, no deny_reason, no energy_coverage");
    let (_, d) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "delete", &cost(10));
    assert!(core_keys(&d).contains(&"deny_reason".to_owned()), "deny_reason on deny");
}

#[test]
fn s5_2_energy_coverage_only_when_partial() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (core, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &partial_cost(10));
    assert!(core_keys(&b).contains(&"energy_coverage".to_owned()));
    assert_eq!(verify_receipt(&b, None).unwrap().core.coverage, jcp::energy::Coverage::Partial);
    assert_eq!(core.provenance, jcp::energy::Provenance::ModelBased);
    let (_, w) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    assert!(!core_keys(&w).contains(&"energy_coverage".to_owned()));
}

#[test]
fn s5_2_energy_coverage_whole_on_the_wire_is_refused() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (core, _) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    let mut v = core.to_value().unwrap();
    if let Value::Map(e) = &mut v {
        e.push((Value::text("energy_coverage"), Value::text("Whole")));
    }
    let bytes = reseal_raw(&v, &fx.steward);
    let err = verify_receipt(&bytes, None).unwrap_err();
    assert_eq!(err.code(), "core-invalid", "{err}");
}

#[test]
fn s8_1_chained_receipt_names_every_link_root_first() {
    let fx = fx();
    let mut gate = Gate::new();
    let chain = fx.chain();
    let (core, b) = seal_decision(&fx, &mut gate, &chain, &fx.worker.did(), "invoke", &cost(10));
    assert_eq!(core.chain_ids, vec![fx.root.id(), fx.lead_g.id(), fx.worker_g.id()]);
    assert_eq!(core.grant_id, fx.worker_g.id());
    assert_eq!(core.subject, fx.worker.did());
    let v = verify_receipt(&b, None).unwrap();
    assert_eq!(v.core.debited_ids(), core.chain_ids);
}

/// §8.1: `chain_ids` is "every grant id the decision debited"; a deny on a
/// chain debits none, so its receipt names only the leaf (`grant_id`).
#[test]
fn s8_1_a_deny_on_a_chain_names_no_chain_ids() {
    let fx = fx();
    let mut gate = Gate::new();
    let chain = fx.chain();
    let (core, b) = seal_decision(&fx, &mut gate, &chain, &fx.holder.did(), "invoke", &cost(10));
    assert!(!core.is_allow(), "the holder is not the leaf's subject");
    assert!(core.chain_ids.is_empty(), "{:?}", core.chain_ids);
    assert!(!core_keys(&b).contains(&"chain_ids".to_owned()));
    assert_eq!(core.grant_id, fx.worker_g.id());
    let v = verify_receipt(&b, None).unwrap();
    assert_eq!(v.core.debited_ids(), [fx.worker_g.id()]);
}

#[test]
fn c5_wrong_steward_fails() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (_, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    let other = kp(99).did();
    let err = verify_receipt(&b, Some(&other)).unwrap_err();
    assert_eq!(err.code(), "wrong-steward");
    assert!(matches!(err, Error::WrongSteward { .. }));
}

#[test]
fn c5_signature_by_another_key_under_the_stewards_kid_fails() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (_, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    let mut s = CoseSign1::from_tagged_slice(&b).unwrap();
    let tbs = s.tbs_data(b"");
    s.signature = kp(77).sign(&tbs).to_vec();
    let forged = s.to_tagged_vec().unwrap();
    let err = verify_receipt(&forged, Some(&fx.steward.did())).unwrap_err();
    assert_eq!(err.code(), "bad-signature");
}

/// Seals an arbitrary core the way a forger (or an old implementation) would.
fn reseal_raw(core: &Value, steward: &jcp::identity::Keypair) -> Vec<u8> {
    let protected = coset::HeaderBuilder::new()
        .algorithm(coset::iana::Algorithm::EdDSA)
        .key_id(steward.did().to_did_string().into_bytes())
        .build();
    coset::CoseSign1Builder::new()
        .protected(protected)
        .payload(core.encode())
        .create_signature(b"", |m| steward.sign(m).to_vec())
        .build()
        .to_tagged_vec()
        .unwrap()
}

#[test]
fn c23_payload_substitution_fails_verification() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (core, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    // Same grant, action and cost; only the payload differs.
    let mut swapped = core.clone();
    swapped.payload_hash = Some(ContentId::of(&Value::Uint(43)));
    let mut s = CoseSign1::from_tagged_slice(&b).unwrap();
    s.payload = Some(swapped.to_value().unwrap().encode());
    let forged = s.to_tagged_vec().unwrap();
    let err = verify_receipt(&forged, Some(&fx.steward.did())).unwrap_err();
    assert_eq!(err.code(), "bad-signature", "{err}");
    // And the honest receipt commits the payload it decided over.
    assert_eq!(verify_receipt(&b, None).unwrap().core.payload_hash, Some(ContentId::of(&Value::Uint(42))));
}

#[test]
fn s8_unknown_profile_tag_is_refused() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (core, _) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    let mut v = core.to_value().unwrap();
    if let Value::Map(e) = &mut v {
        for (k, val) in e.iter_mut() {
            if *k == Value::text("jcp_receipt") {
                *val = Value::text("jcp/3");
            }
        }
    }
    let err = verify_receipt(&reseal_raw(&v, &fx.steward), None).unwrap_err();
    assert_eq!(err, Error::UnknownProfile("jcp/3".into()));
}

#[test]
fn s8_jcp1_is_never_minted() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (mut core, _) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    core.profile = Profile::Jcp1;
    core.payload_hash = None;
    assert_eq!(core.seal(Position::default(), &fx.steward).unwrap_err(), Error::LegacyMintRefused);
    assert_eq!(core.to_value().unwrap_err().code(), "legacy-mint-refused");
}

#[test]
fn s8_jcp1_core_that_carries_payload_hash_is_not_jcp1() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (core, _) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    let mut v = core.to_value().unwrap();
    if let Value::Map(e) = &mut v {
        for (k, val) in e.iter_mut() {
            if *k == Value::text("jcp_receipt") {
                *val = Value::text("jcp/1");
            }
        }
    }
    let err = verify_receipt(&reseal_raw(&v, &fx.steward), None).unwrap_err();
    assert_eq!(err.code(), "core-schema", "{err}");
}

#[test]
fn s8_envelope_is_tagged_cose_sign1_eddsa_with_the_stewards_kid() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (_, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    assert_eq!(b[0], 0xd2, "tag 18");
    let s = CoseSign1::from_tagged_slice(&b).unwrap();
    assert_eq!(
        s.protected.header.alg,
        Some(coset::RegisteredLabelWithPrivate::Assigned(coset::iana::Algorithm::EdDSA))
    );
    assert_eq!(cose::eddsa_alg_id(), -8);
    assert_eq!(s.protected.header.key_id, fx.steward.did().to_did_string().into_bytes());
    assert!(s.unprotected.is_empty());
    // An untagged COSE_Sign1 is not a JCR-1 record.
    let untagged = s.clone().to_vec().unwrap();
    assert_eq!(verify_receipt(&untagged, None).unwrap_err().code(), "cose-malformed");
}

#[test]
fn s8_verification_uses_the_protected_headers_original_bytes() {
    // A protected header encoded with a long-form length is not canonical:
    // a verifier re-encoding it would compute different ToBeSigned bytes.
    // We refuse it as non-canonical rather than verify either form.
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (_, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &cost(10));
    let s = CoseSign1::from_tagged_slice(&b).unwrap();
    let orig = s.protected.original_data.clone().unwrap();
    let tbs = s.tbs_data(b"");
    let expect = coset::sig_structure_data(
        coset::SignatureContext::CoseSign1,
        s.protected.clone(),
        None,
        b"",
        s.payload.as_deref().unwrap(),
    );
    assert_eq!(tbs, expect);
    let mut dids = DidCache::new();
    let (opened, _) = cose::open(&b, &mut dids).unwrap();
    assert_eq!(opened.tbs, tbs);
    assert!(tbs.windows(orig.len()).any(|w| w == orig.as_slice()));
}

#[test]
fn s4_9_debit_point_breach_is_carried_in_the_receipt() {
    let fx = fx_with(1_000_000, None, vec![Caveat::MaxCostUj(50)]);
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let f = frame(&fx.root, "invoke", 1);
    let c = cost(80);
    let caller = fx.holder.did();
    let req = Request { frame: &f, chain: &root, caller: &caller, cost: &c, now: 100, flow: None };
    let auth = gate.authorize(&req).unwrap();
    let d = gate.charge(auth, &req).unwrap();
    assert_eq!(d.breach, Some(Reason::CaveatUnsatisfied));
    let core = ReceiptCore::from_decision(&d, &req, fx.steward.did()).unwrap();
    let b = core.seal(Position::default(), &fx.steward).unwrap();
    let v = verify_receipt(&b, None).unwrap();
    assert_eq!(v.core.breach, Some(Reason::CaveatUnsatisfied));
    assert_eq!(v.core.verdict, Verdict::Allow);
    assert!(core_keys(&b).contains(&"breach".to_owned()));
}

#[test]
fn s4_8_priced_decision_carries_its_money_cost() {
    let fx = fx_with(1_000_000, Some(Funds { currency: "USD".into(), minor: 500 }), Vec::new());
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let (core, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &priced(10, 120));
    assert_eq!(core.money.as_ref().unwrap().minor, 120);
    let v = verify_receipt(&b, None).unwrap();
    assert_eq!(v.core.money, core.money);
    let (deny, _) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &priced(10, 900));
    assert_eq!(deny.verdict, Verdict::Deny(Reason::FundsExceeded));
}

#[test]
fn rfc9052_eddsa_sig_01_tobesign_and_signature_reproduce() {
    let v = testkit::interop_json("standards/cose/eddsa-examples/eddsa-sig-01.json");
    let cbor_hex = v["output"]["cbor"].as_str().unwrap();
    let bytes = hex::decode(cbor_hex).unwrap();
    let s = CoseSign1::from_tagged_slice(&bytes).unwrap();
    let tbs = s.tbs_data(b"");
    let want = hex::decode(v["intermediates"]["ToBeSign_hex"].as_str().unwrap()).unwrap();
    assert_eq!(tbs, want, "ToBeSign from the protected header's original bytes");
    let x = hex::decode(v["input"]["sign0"]["key"]["x_hex"].as_str().unwrap()).unwrap();
    let did = Did::from_public_bytes(x.try_into().unwrap()).unwrap();
    let sig: [u8; 64] = s.signature.clone().try_into().unwrap();
    assert!(did.verify(&tbs, &sig), "the RFC 9052 example verifies under verify_strict");
    // Our signer reproduces the vector's signature (Ed25519 is deterministic).
    let d = hex::decode(v["input"]["sign0"]["key"]["d_hex"].as_str().unwrap()).unwrap();
    let k = jcp::identity::Keypair::from_seed(d.try_into().unwrap()).unwrap();
    assert_eq!(k.sign(&tbs).to_vec(), s.signature);
    // It is a valid COSE_Sign1 but not a JCR-1 record: refused with a typed error.
    let err = OpenedReceipt::open(&bytes, &mut DidCache::new()).unwrap_err();
    assert!(["cose-non-canonical", "cose-bad-kid", "cose-malformed"].contains(&err.code()), "{err}");
}

#[test]
fn c08_endpoint_deny_reasons_verify() {
    // §11's refusals made before the gate decides (a stale request, one
    // that could not be recorded) seal as deny receipts like any other and
    // verify through the typed path, the coset path and the audit's view.
    let fx = fx();
    let root = [fx.root.clone()];
    let holder = fx.holder.did();
    let f = frame(&fx.root, "invoke", 42);
    let c = cost(10);
    let req = Request { frame: &f, chain: &root, caller: &holder, cost: &c, now: 100, flow: None };
    for reason in [Reason::StaleRequest, Reason::Unrecorded] {
        let d = jcp::decision::Decision {
            verdict: Verdict::Deny(reason),
            detail: String::new(),
            chain_ids: vec![fx.root.id()],
            debited_uj: 0,
            debited_minor: 0,
            budget_uj: fx.root.grant().budget_uj,
            budget_remaining_uj: fx.root.grant().budget_uj,
            breach: None,
        };
        let core = ReceiptCore::from_decision(&d, &req, fx.steward.did()).unwrap();
        let bytes = core.seal(Position { seq: Some(0), known_through: Some(1) }, &fx.steward).unwrap();
        let v = verify_receipt(&bytes, Some(&fx.steward.did())).unwrap();
        assert_eq!(v.core.verdict, Verdict::Deny(reason));
        assert_eq!(v.core, core);
        let mut dids = DidCache::new();
        let slow = OpenedReceipt::open_coset(&bytes, &mut dids).unwrap();
        slow.verify(Some(&fx.steward.did())).unwrap();
        assert_eq!(slow.core, core);
        let (view, unsealed) = OpenedReceipt::open_view(&bytes, &mut dids).expect("the minted layout reads as a view");
        assert_eq!(view.verdict, Verdict::Deny(reason), "{}", reason.as_str());
        assert_eq!(ReceiptCore::from_view(&view, &mut dids).unwrap(), core);
        unsealed.verify_signature().unwrap();
        // A wrong steward still fails (C5).
        assert!(verify_receipt(&bytes, Some(&fx.issuer.did())).is_err());
    }
}

#[test]
fn s5_a_measured_figure_is_sealed_as_energy_measured_and_every_reader_reads_it() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let hw = jcp::decision::Cost::energy(jcp::energy::Energy::hardware(10));
    let (core, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &hw);
    assert_eq!(core.measured, Some(10));
    assert!(core_keys(&b).contains(&"energy_measured".to_owned()));
    let mut dids = DidCache::default();
    let (view, _) = OpenedReceipt::open_view(&b, &mut dids).expect("the zero-copy reader reads what this crate mints");
    assert_eq!((view.measured, view.rests_on_measurement()), (Some(10), true));
    assert_eq!(OpenedReceipt::open_coset(&b, &mut dids).unwrap().core, core, "the coset reader reads the same core");
    assert_eq!(verify_receipt(&b, None).unwrap().core.energy(), jcp::energy::Energy::hardware(10));
    // A HwShunt label without its reading still verifies (receipts sealed
    // before the field existed keep their bytes), and is no measurement.
    let claim = jcp::decision::Cost::energy(jcp::energy::Energy::new(10, jcp::energy::Provenance::HwShunt));
    let (core, b) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &claim);
    assert!(!core_keys(&b).contains(&"energy_measured".to_owned()), "absent when absent");
    let (view, _) = OpenedReceipt::open_view(&b, &mut dids).unwrap();
    assert_eq!((core.measured, view.rests_on_measurement()), (None, false));
}

#[test]
fn s5_a_core_with_energy_measured_beside_an_estimate_or_above_its_cost_is_refused_by_every_reader() {
    let fx = fx();
    let mut gate = Gate::new();
    let root = [fx.root.clone()];
    let est = jcp::decision::Cost::energy(jcp::energy::Energy::new(10, jcp::energy::Provenance::Estimator));
    let (estimate, _) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &est);
    let hw = jcp::decision::Cost::energy(jcp::energy::Energy::hardware(10));
    let (hardware, _) = seal_decision(&fx, &mut gate, &root, &fx.holder.did(), "invoke", &hw);
    for (what, core, measured) in [("beside an estimate", estimate, 5), ("above its cost", hardware, 11)] {
        let mut v = core.to_value().unwrap();
        if let Value::Map(e) = &mut v {
            e.retain(|(k, _)| k != &Value::text("energy_measured"));
            e.push((Value::text("energy_measured"), Value::Uint(measured)));
        }
        let bytes = reseal_raw(&v, &fx.steward);
        let mut dids = DidCache::default();
        assert!(OpenedReceipt::open_view(&bytes, &mut dids).is_none(), "{what}: the zero-copy reader refuses");
        let err = verify_receipt(&bytes, None).unwrap_err();
        assert_eq!(err.code(), "core-invalid", "{what}: {err}");
        assert!(err.to_string().contains("energy_measured"), "{what}: {err}");
    }
}
