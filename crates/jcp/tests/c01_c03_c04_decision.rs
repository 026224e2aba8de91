//! C1 signed grants + audience binding, C3 budget enforcement, C4 data/control
//! separation, and the §7 order.

mod common;
use common::*;
use jcp::decision::{Gate, Reason, Verdict};
use jcp::frame::Trust;

#[test]
fn c01_grant_verifies_only_for_its_issuers_key() {
    let (issuer, agent, mallory) = (key(1), key(2), key(3));
    // Mallory signs a grant naming `issuer` as issuer: the signature is not the issuer's.
    let g = root_grant(&issuer, &agent, 1_000);
    assert!(g.clone().sign(&mallory).is_err(), "signing under another issuer's name is refused at mint");
    let honest = g.sign(&issuer).unwrap();
    let forged = jcp::grant::SignedGrant::from_bytes(&{
        let mut v = honest.to_value();
        if let jcp::cbor::Value::Map(entries) = &mut v {
            for (k, val) in entries.iter_mut() {
                if *k == jcp::cbor::Value::text("sig") {
                    *val = jcp::cbor::Value::Bytes(mallory.sign(honest.grant_bytes()).to_vec());
                }
            }
        }
        v.encode()
    })
    .unwrap();
    assert!(honest.verify_signature());
    assert!(!forged.verify_signature());
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&forged, "read"), std::slice::from_ref(&forged), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::BadSignature));
    let d = decide(&mut gate, &frame_for(&honest, "read"), std::slice::from_ref(&honest), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Allow);
}

#[test]
fn c01_grant_authorizes_only_its_exact_content_addressed_resource() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 1_000);
    let mut f = frame_for(&g, "read");
    f.resource = other_resource();
    let mut gate = Gate::new();
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::WrongResource));
    // A frame naming another grant id is refused the same way (§7.4).
    let mut f = frame_for(&g, "read");
    f.grant_id = jcp::cbor::ContentId::of_bytes(b"another grant");
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::WrongResource));
    assert_eq!(gate.spent(&g.id()).uj, 0);
}

#[test]
fn c01_action_outside_the_capability_is_refused() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 1_000);
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&g, "delete"), std::slice::from_ref(&g), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::ActionNotGranted));
}

#[test]
fn c03_spend_beyond_the_ceiling_is_denied_and_never_debited() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 100);
    let mut gate = Gate::new();
    let f = frame_for(&g, "read");
    let chain = std::slice::from_ref(&g);
    assert!(decide(&mut gate, &f, chain, &agent.did(), &cost(60)).is_allow());
    let d = decide(&mut gate, &f, chain, &agent.did(), &cost(41));
    assert_eq!(d.verdict, Verdict::Deny(Reason::BudgetExceeded));
    assert_eq!(d.debited_uj, 0);
    assert_eq!(gate.spent(&g.id()).uj, 60, "a denied call is never debited");
    assert_eq!(d.budget_remaining_uj, 40);
    // Exactly the remainder fits.
    let d = decide(&mut gate, &f, chain, &agent.did(), &cost(40));
    assert!(d.is_allow());
    assert_eq!(d.budget_remaining_uj, 0);
    // Deterministic: the same request against the same state decides the same.
    let d1 = decide(&mut gate.clone(), &f, chain, &agent.did(), &cost(1));
    let d2 = decide(&mut gate.clone(), &f, chain, &agent.did(), &cost(1));
    assert_eq!(d1, d2);
    assert_eq!(d1.verdict, Verdict::Deny(Reason::BudgetExceeded));
}

#[test]
fn c03_overflowing_cost_is_denied_not_wrapped() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, u64::MAX);
    let mut gate = Gate::new();
    let f = frame_for(&g, "read");
    assert!(decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(10)).is_allow());
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(u64::MAX));
    assert_eq!(d.verdict, Verdict::Deny(Reason::BudgetExceeded));
}

#[test]
fn c04_a_data_frame_never_exercises_a_capability() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 1_000);
    let mut f = frame_for(&g, "read");
    f.trust = Trust::Data;
    let mut gate = Gate::new();
    for kind in [
        jcp::frame::FrameKind::ToolCall,
        jcp::frame::FrameKind::ToolResult,
        jcp::frame::FrameKind::AgentTask,
        jcp::frame::FrameKind::AgentReply,
    ] {
        f.kind = kind;
        let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(1));
        assert_eq!(d.verdict, Verdict::Deny(Reason::UntrustedControl));
    }
    assert_eq!(gate.spent(&g.id()).uj, 0);
}

#[test]
fn c04_data_frame_is_refused_first_even_on_a_broken_chain() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 1_000);
    let child = jcp::grant::attenuate(&g, &agent, jcp::grant::Attenuation::default()).unwrap();
    let mut f = frame_for(&child, "read");
    f.trust = Trust::Data;
    let mut gate = Gate::new();
    // Leaf alone (chain-broken otherwise) and a full chain: data is refused first.
    let d = decide(&mut gate, &f, std::slice::from_ref(&child), &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::UntrustedControl));
    let d = decide(&mut gate, &f, &[g, child], &agent.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::UntrustedControl));
}

#[test]
fn s7_checks_run_in_the_specified_order() {
    // A request failing several checks is denied with the first in §7 order.
    let (issuer, agent, other) = (key(1), key(2), key(3));
    let mut g = root_grant(&issuer, &agent, 10);
    g.expiry = NOW - 1;
    let g = g.sign(&issuer).unwrap();
    let mut gate = Gate::new();
    let f = frame_for(&g, "delete");
    // wrong subject (5) beats expired (7), action (8) and budget (9)
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &other.did(), &cost(100));
    assert_eq!(d.verdict, Verdict::Deny(Reason::WrongSubject));
    // expired (7) beats action (8) and budget (9)
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &agent.did(), &cost(100));
    assert_eq!(d.verdict, Verdict::Deny(Reason::Expired));
    // untrusted root (3) beats wrong subject (5)
    gate.add_trust_root(resource(), other.did());
    let d = decide(&mut gate, &f, std::slice::from_ref(&g), &other.did(), &cost(100));
    assert_eq!(d.verdict, Verdict::Deny(Reason::UntrustedRoot));
}

#[test]
fn s7_evaluate_is_pure() {
    let (issuer, agent) = (key(1), key(2));
    let g = signed_root(&issuer, &agent, 100);
    let gate = Gate::new();
    let f = frame_for(&g, "read");
    let bottom = jcp::flow::Label::bottom();
    let c = cost(30);
    let req = jcp::decision::Request {
        frame: &f,
        chain: std::slice::from_ref(&g),
        caller: &agent.did(),
        cost: &c,
        now: NOW,
        flow: Some(&bottom),
    };
    let a = gate.evaluate(&req);
    let b = gate.evaluate(&req);
    assert_eq!(a, b);
    assert!(a.is_allow());
    assert_eq!(a.budget_remaining_uj, 70);
    assert_eq!(gate.spent(&g.id()).uj, 0);
}
