//! C22 dual ceilings, C24 caveats (incl. the two-phase metered path), C25 flow.

mod common;
use common::*;
use jcp::decision::{Cost, Gate, Reason, Request, Verdict};
use jcp::energy::{Energy, Provenance};
use jcp::flow::{FlowCeiling, Integrity, Label, Origins, Readers, TaintFloor};
use jcp::grant::{attenuate, Attenuation, Caveat, Funds, Grant};

fn priced(uj: u64, currency: &str, minor: u64) -> Cost {
    Cost { energy: Energy::new(uj, Provenance::HwShunt), money: Some(Funds { currency: currency.into(), minor }) }
}

fn funded(budget: u64, minor: u64) -> Grant {
    let mut g = root_grant(&key(1), &key(2), budget);
    g.budget_funds = Some(Funds { currency: "USD".into(), minor });
    g
}

#[test]
fn c22_first_ceiling_to_bind_denies_and_deny_debits_neither() {
    let (issuer, agent) = (key(1), key(2));
    let g = funded(1_000, 100).sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let f = frame_for(&g, "read");
    let chain = std::slice::from_ref(&g);
    assert!(decide(&mut gate, &f, chain, &agent.did(), &priced(100, "USD", 60)).is_allow());
    // Money binds while joules have room.
    let d = decide(&mut gate, &f, chain, &agent.did(), &priced(100, "USD", 41));
    assert_eq!(d.verdict, Verdict::Deny(Reason::FundsExceeded));
    // Joules bind while money has room.
    let d = decide(&mut gate, &f, chain, &agent.did(), &priced(901, "USD", 1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::BudgetExceeded));
    assert_eq!(gate.spent(&g.id()).uj, 100);
    assert_eq!(gate.spent(&g.id()).minor, 60);
    // An allow debits both.
    assert!(decide(&mut gate, &f, chain, &agent.did(), &priced(10, "USD", 40)).is_allow());
    assert_eq!((gate.spent(&g.id()).uj, gate.spent(&g.id()).minor), (110, 100));
}

#[test]
fn c22_foreign_currency_is_refused_not_converted() {
    let (issuer, agent) = (key(1), key(2));
    let g = funded(1_000, 100).sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&g, "read"), std::slice::from_ref(&g), &agent.did(), &priced(1, "EUR", 1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::CurrencyMismatch));
    assert_eq!(gate.spent(&g.id()), jcp::decision::Spend::default());
}

/// §4.8 is silent on an unpriced decision against a money ceiling; read
/// fail-closed (docs/decisions.md): a grant capped at 1 USD does not allow
/// any number of unpriced actions — each is refused `currency-mismatch`,
/// debiting neither ceiling, while a priced one is decided as before.
#[test]
fn c22_an_unpriced_action_against_a_money_ceiling_is_refused() {
    let (issuer, agent) = (key(1), key(2));
    let g = funded(1_000, 100).sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let f = frame_for(&g, "read");
    let chain = std::slice::from_ref(&g);
    let unpriced = Cost::energy(Energy::new(1, Provenance::HwShunt));
    for _ in 0..3 {
        let d = decide(&mut gate, &f, chain, &agent.did(), &unpriced);
        assert_eq!(d.verdict, Verdict::Deny(Reason::CurrencyMismatch), "{}", d.detail);
        assert!(d.detail.contains("unpriced"), "{}", d.detail);
    }
    assert_eq!(gate.spent(&g.id()), jcp::decision::Spend::default());
    assert!(decide(&mut gate, &f, chain, &agent.did(), &priced(1, "USD", 1)).is_allow());
    // A grant with no money ceiling is bound by joules alone.
    let plain = root_grant(&issuer, &agent, 1_000).sign(&issuer).unwrap();
    assert!(
        decide(&mut gate, &frame_for(&plain, "read"), std::slice::from_ref(&plain), &agent.did(), &unpriced).is_allow()
    );
}

#[test]
fn c22_absent_money_ceiling_encodes_byte_identically_to_a_joules_only_grant() {
    let g = root_grant(&key(1), &key(2), 1_000);
    let bytes = g.canonical_bytes();
    assert!(!bytes.windows(b"budget_funds".len()).any(|w| w == b"budget_funds"));
    let v = jcp::cbor::decode_strict(&bytes).unwrap();
    assert_eq!(Grant::from_value(&v).unwrap().budget_funds, None);
    // And a priced cost against it is bound by joules alone.
    let s = g.sign(&key(1)).unwrap();
    let mut gate = Gate::new();
    assert!(decide(
        &mut gate,
        &frame_for(&s, "read"),
        std::slice::from_ref(&s),
        &key(2).did(),
        &priced(1, "JPY", 1_000_000)
    )
    .is_allow());
}

#[test]
fn c22_priced_chained_decision_applies_the_parents_money_ceiling() {
    let (issuer, a, b) = (key(1), key(2), key(3));
    let root = funded(1_000, 100).sign(&issuer).unwrap();
    // The child narrows joules only; it inherits USD 100.
    let child =
        attenuate(&root, &a, Attenuation { subject: Some(b.did()), budget_uj: Some(500), ..Attenuation::default() })
            .unwrap();
    assert_eq!(child.grant().budget_funds.as_ref().unwrap().minor, 100);
    // A second child bounded tighter in money.
    let tight = attenuate(
        &root,
        &a,
        Attenuation {
            subject: Some(b.did()),
            budget_funds: Some(Funds { currency: "USD".into(), minor: 10 }),
            nonce: Some(nonce(5)),
            ..Attenuation::default()
        },
    )
    .unwrap();
    let mut gate = Gate::new();
    assert!(decide(
        &mut gate,
        &frame_for(&child, "read"),
        &[root.clone(), child.clone()],
        &b.did(),
        &priced(1, "USD", 95)
    )
    .is_allow());
    // The sibling has 10 of its own, but the root has only 5 left.
    let d =
        decide(&mut gate, &frame_for(&tight, "read"), &[root.clone(), tight.clone()], &b.did(), &priced(1, "USD", 6));
    assert_eq!(d.verdict, Verdict::Deny(Reason::FundsExceeded));
    // The delegated grant decided without its chain is chain-broken.
    let d = decide(&mut gate, &frame_for(&tight, "read"), std::slice::from_ref(&tight), &b.did(), &priced(1, "USD", 1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::ChainBroken));
}

#[test]
fn c24_payload_is_makes_a_grant_one_shot() {
    let (issuer, agent) = (key(1), key(2));
    let mut g = root_grant(&issuer, &agent, 1_000);
    g.caveats = vec![Caveat::PayloadIs(payload(1))];
    let g = g.sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let mut f = frame_for(&g, "read");
    assert!(decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1)).is_allow());
    f.payload_hash = payload(2);
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::CaveatUnsatisfied));
}

#[test]
fn c24_max_cost_bounds_one_invocation_independently_of_the_budget() {
    let (issuer, agent) = (key(1), key(2));
    let mut g = root_grant(&issuer, &agent, 1_000);
    g.caveats = vec![Caveat::MaxCostUj(100)];
    let g = g.sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let f = frame_for(&g, "read");
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(101));
    assert_eq!(d.verdict, Verdict::Deny(Reason::CaveatUnsatisfied));
    assert!(decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(100)).is_allow());
}

#[test]
fn c24_model_in_admits_only_named_models_and_fails_closed_on_none() {
    let (issuer, agent) = (key(1), key(2));
    let m1 = jcp::cbor::ContentId::of_bytes(b"model-1");
    let m2 = jcp::cbor::ContentId::of_bytes(b"model-2");
    let mut g = root_grant(&issuer, &agent, 1_000);
    g.caveats = vec![Caveat::ModelIn(vec![m1])];
    let g = g.sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let mut f = frame_for(&g, "read");
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::CaveatUnsatisfied), "a frame naming no model");
    f.model = Some(m2);
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::CaveatUnsatisfied));
    f.model = Some(m1);
    assert!(decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1)).is_allow());
}

#[test]
fn c24_action_in_narrows_below_the_capability_and_time_caveats_hold() {
    let (issuer, agent, other) = (key(1), key(2), key(3));
    let mut g = root_grant(&issuer, &agent, 1_000);
    g.caveats = vec![
        Caveat::ActionIn(vec!["read".into()]),
        Caveat::NotBefore(NOW - 10),
        Caveat::NotAfter(NOW + 10),
        Caveat::CallerIs(agent.did()),
    ];
    let g = g.sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let chain = std::slice::from_ref(&g);
    assert_eq!(
        decide(&mut gate, &frame_for(&g, "write"), chain, &agent.did(), &cost(1)).verdict,
        Verdict::Deny(Reason::CaveatUnsatisfied)
    );
    assert_eq!(
        decide_at(&mut gate, &frame_for(&g, "read"), chain, &agent.did(), &cost(1), NOW - 11).verdict,
        Verdict::Deny(Reason::CaveatUnsatisfied)
    );
    assert_eq!(
        decide_at(&mut gate, &frame_for(&g, "read"), chain, &agent.did(), &cost(1), NOW + 11).verdict,
        Verdict::Deny(Reason::CaveatUnsatisfied)
    );
    assert!(decide(&mut gate, &frame_for(&g, "read"), chain, &agent.did(), &cost(1)).is_allow());
    let _ = other;
}

#[test]
fn c24_no_caveats_encodes_byte_identically_and_an_empty_caveat_array_is_refused() {
    let g = root_grant(&key(1), &key(2), 1);
    let bytes = g.canonical_bytes();
    assert!(!bytes.windows(7).any(|w| w == b"caveats"));
    let mut v = g.to_value();
    if let jcp::cbor::Value::Map(e) = &mut v {
        e.push((jcp::cbor::Value::text("caveats"), jcp::cbor::Value::Array(vec![])));
    }
    assert!(Grant::from_value(&jcp::cbor::decode_strict(&v.encode()).unwrap()).is_err());
}

#[test]
fn c24_two_phase_metered_path_defers_cost_caveats_and_records_a_breach_with_the_debit() {
    let (issuer, agent) = (key(1), key(2));
    let mut g = root_grant(&issuer, &agent, 1_000);
    g.caveats = vec![Caveat::MaxCostUj(100), Caveat::ActionIn(vec!["read".into()])];
    let g = g.sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let f = frame_for(&g, "read");
    let bottom = Label::bottom();
    let unknown = cost(0);
    let caller = agent.did();
    let chain = std::slice::from_ref(&g);
    let req = Request { frame: &f, chain, caller: &caller, cost: &unknown, now: NOW, flow: Some(&bottom) };
    let auth = gate.authorize(&req).unwrap();
    // The authorization does not claim the cost caveat passed.
    assert_eq!(auth.pending, vec![Caveat::MaxCostUj(100)]);
    assert_eq!(gate.spent(&g.id()).uj, 0);
    let measured = cost(250);
    let d = gate.charge(auth, &Request { cost: &measured, ..req }).unwrap();
    assert_eq!(d.breach, Some(Reason::CaveatUnsatisfied));
    assert_eq!(d.debited_uj, 250);
    assert_eq!(gate.spent(&g.id()).uj, 250, "spent energy is always accounted");
    // A cost-independent caveat still refuses in phase one.
    let fw = frame_for(&g, "write");
    let err = gate.authorize(&Request { frame: &fw, ..req }).unwrap_err();
    assert_eq!(err.verdict, Verdict::Deny(Reason::CaveatUnsatisfied));
    // A clean charge has no breach.
    let auth = gate.authorize(&req).unwrap();
    let small = cost(50);
    let d = gate.charge(auth, &Request { cost: &small, ..req }).unwrap();
    assert_eq!(d.breach, None);
    assert_eq!(gate.spent(&g.id()).uj, 300);
}

#[test]
fn s4_11_a_reservation_is_the_most_phase_two_can_charge_without_a_breach() {
    // Root 1 000 µJ / 100 USD minor; child 300 µJ under MaxCostUj(250).
    let (issuer, agent, worker) = (key(1), key(2), key(3));
    let root = funded(1_000, 100).sign(&issuer).unwrap();
    let child = attenuate(
        &root,
        &agent,
        Attenuation {
            subject: Some(worker.did()),
            budget_uj: Some(300),
            add_caveats: vec![Caveat::MaxCostUj(250)],
            nonce: Some([4; 16]),
            ..Attenuation::default()
        },
    )
    .unwrap();
    let mut gate = Gate::new();
    let chain = [root.clone(), child.clone()];
    let f = frame_for(&child, "read");
    let did = worker.did();
    let c = cost(0);
    let req = Request { frame: &f, chain: &chain, caller: &did, cost: &c, now: NOW, flow: None };
    // The caveat binds below both remainders.
    let r = gate.reservation(&req);
    assert_eq!(r.energy.uj, 250);
    assert_eq!(r.energy.provenance, Provenance::Estimator, "a bound, not a measurement");
    assert_eq!(r.money, Some(Funds { currency: "USD".into(), minor: 100 }));
    // Spend on the root elsewhere: its remainder binds below the caveat.
    gate.replay_debit(&[root.id()], 900, 70, false);
    let r = gate.reservation(&req);
    assert_eq!((r.energy.uj, r.money.as_ref().map(|m| m.minor)), (100, Some(30)));
    // Held, then released: the spend is what it was.
    let ids = [root.id(), child.id()];
    gate.replay_debit(&ids, r.energy.uj, 30, false);
    assert_eq!(gate.authorize(&req).unwrap_err().reason(), Some(Reason::BudgetExceeded), "the held chain is exhausted");
    gate.release(&ids, r.energy.uj, 30, false);
    assert_eq!((gate.spent(&root.id()).uj, gate.spent(&root.id()).minor, gate.spent(&child.id()).uj), (900, 70, 0));
    assert!(gate.authorize(&req).is_ok());
}

fn ceiling_grant(ceiling: Label, tainted: Option<u64>) -> jcp::grant::SignedGrant {
    let mut g = root_grant(&key(1), &key(2), 1_000);
    g.caveats = vec![Caveat::FlowBelow(FlowCeiling { ceiling, tainted_budget_uj: tainted })];
    g.sign(&key(1)).unwrap()
}

fn decide_flow(
    gate: &mut Gate,
    g: &jcp::grant::SignedGrant,
    chain: &[jcp::grant::SignedGrant],
    flow: Option<&Label>,
    c: u64,
) -> jcp::decision::Decision {
    let f = frame_for(g, "read");
    let caller = chain.last().unwrap().grant().subject;
    let c = cost(c);
    gate.decide(&Request { frame: &f, chain, caller: &caller, cost: &c, now: NOW, flow })
}

#[test]
fn c25_label_must_sit_below_the_ceiling() {
    let g = ceiling_grant(Label::untrusted_from(["search"]), None);
    let mut gate = Gate::new();
    let chain = std::slice::from_ref(&g);
    assert!(decide_flow(&mut gate, &g, chain, Some(&Label::untrusted_from(["search"])), 1).is_allow());
    assert!(decide_flow(&mut gate, &g, chain, Some(&Label::bottom()), 1).is_allow());
    let d = decide_flow(&mut gate, &g, chain, Some(&Label::untrusted_from(["mail"])), 1);
    assert_eq!(d.verdict, Verdict::Deny(Reason::FlowViolation));
}

#[test]
fn c25_not_computed_fails_closed_against_a_ceiling_but_not_without_one() {
    let g = ceiling_grant(Label::top(), None);
    let mut gate = Gate::new();
    let d = decide_flow(&mut gate, &g, std::slice::from_ref(&g), None, 1);
    assert_eq!(d.verdict, Verdict::Deny(Reason::FlowNotComputed));
    let plain = signed_root(&key(1), &key(2), 1_000);
    assert!(decide_flow(&mut gate, &plain, std::slice::from_ref(&plain), None, 1).is_allow());
}

#[test]
fn c25_ceilings_in_a_chain_compose_to_the_strictest_and_attenuation_never_widens() {
    let (a, b) = (key(2), key(3));
    let root = ceiling_grant(Label::untrusted_from(["search", "mail"]), None);
    let child = attenuate(
        &root,
        &a,
        Attenuation {
            subject: Some(b.did()),
            add_caveats: vec![Caveat::FlowBelow(FlowCeiling {
                ceiling: Label::untrusted_from(["search"]),
                tainted_budget_uj: None,
            })],
            ..Attenuation::default()
        },
    )
    .unwrap();
    let chain = [root.clone(), child.clone()];
    let mut gate = Gate::new();
    let d = decide_flow(&mut gate, &child, &chain, Some(&Label::untrusted_from(["mail"])), 1);
    assert_eq!(d.verdict, Verdict::Deny(Reason::FlowViolation), "the child's stricter ceiling governs");
    // A child that tries to replace the root's ceiling with a wider one drops a caveat: refused.
    let mut wide = root_grant(&a, &b, 10);
    wide.parent = Some(root.id());
    wide.caveats = vec![Caveat::FlowBelow(FlowCeiling { ceiling: Label::top(), tainted_budget_uj: None })];
    let wide = wide.sign(&a).unwrap();
    let d = decide_flow(&mut gate, &wide, &[root, wide.clone()], Some(&Label::untrusted_from(["x"])), 1);
    assert_eq!(d.verdict, Verdict::Deny(Reason::AttenuationViolation));
}

#[test]
fn c25_a_flow_denial_debits_nothing_so_a_tainted_call_costs_zero_joules() {
    let g = ceiling_grant(Label::bottom(), None);
    let mut gate = Gate::new();
    // Flow sits before caveats and budget: even an over-budget tainted call says flow.
    let d = decide_flow(&mut gate, &g, std::slice::from_ref(&g), Some(&Label::untrusted_from(["web"])), 5_000);
    assert_eq!(d.verdict, Verdict::Deny(Reason::FlowViolation));
    assert_eq!(gate.spent(&g.id()).uj, 0);
}

#[test]
fn c25_taint_floor_refuses_origins_regardless_of_the_grant() {
    let plain = signed_root(&key(1), &key(2), 1_000);
    let mut gate = Gate::new();
    gate.set_taint_floor(resource(), TaintFloor { refused_origins: ["pastebin".to_string()].into() });
    let chain = std::slice::from_ref(&plain);
    let d = decide_flow(&mut gate, &plain, chain, Some(&Label::untrusted_from(["pastebin"])), 1);
    assert_eq!(d.verdict, Verdict::Deny(Reason::FlowViolation));
    let any = Label { integrity: Integrity::Untrusted, origins: Origins::Any, readers: Readers::All };
    assert_eq!(decide_flow(&mut gate, &plain, chain, Some(&any), 1).verdict, Verdict::Deny(Reason::FlowViolation));
    assert_eq!(decide_flow(&mut gate, &plain, chain, None, 1).verdict, Verdict::Deny(Reason::FlowNotComputed));
    assert!(decide_flow(&mut gate, &plain, chain, Some(&Label::untrusted_from(["docs"])), 1).is_allow());
}

#[test]
fn c25_tainted_budget_is_a_separate_smaller_allowance() {
    let g = ceiling_grant(Label::top(), Some(100));
    let mut gate = Gate::new();
    let chain = std::slice::from_ref(&g);
    let web = Label::untrusted_from(["web"]);
    assert!(decide_flow(&mut gate, &g, chain, Some(&web), 80).is_allow());
    assert_eq!(decide_flow(&mut gate, &g, chain, Some(&web), 21).verdict, Verdict::Deny(Reason::BudgetExceeded));
    // Clean calls still have the main budget.
    assert!(decide_flow(&mut gate, &g, chain, Some(&Label::bottom()), 500).is_allow());
}

#[test]
fn c25_no_flow_caveat_encodes_byte_identically() {
    let g = root_grant(&key(1), &key(2), 1);
    assert!(!g.canonical_bytes().windows(9).any(|w| w == b"FlowBelow"));
}
