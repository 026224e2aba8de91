//! C6 revocation, C7 chain conservation, C15 trust roots.

mod common;
use common::*;
use jcp::decision::{Gate, Reason, Verdict};
use jcp::grant::{attenuate, Attenuation, Caveat, SignedGrant};
use jcp::identity::Keypair;
use jcp::revocation::Revocation;

/// root (issuer → a) → mid (a → b) → leaf (b → c)
fn three_hop() -> (Keypair, Keypair, Keypair, Keypair, Vec<SignedGrant>) {
    let (issuer, a, b, c) = (key(1), key(2), key(3), key(4));
    let root = signed_root(&issuer, &a, 1_000);
    let mid =
        attenuate(&root, &a, Attenuation { subject: Some(b.did()), budget_uj: Some(500), ..Attenuation::default() })
            .unwrap();
    let leaf =
        attenuate(&mid, &b, Attenuation { subject: Some(c.did()), budget_uj: Some(100), ..Attenuation::default() })
            .unwrap();
    (issuer, a, b, c, vec![root, mid, leaf])
}

#[test]
fn c07_multi_hop_chain_verifies_hop_by_hop_and_debits_every_link() {
    let (_, _, _, c, chain) = three_hop();
    let mut gate = Gate::new();
    let leaf = chain.last().unwrap();
    let d = decide(&mut gate, &frame_for(leaf, "read"), &chain, &c.did(), &cost(40));
    assert_eq!(d.verdict, Verdict::Allow);
    assert_eq!(d.chain_ids, chain.iter().map(SignedGrant::id).collect::<Vec<_>>());
    for g in &chain {
        assert_eq!(gate.spent(&g.id()).uj, 40);
    }
    assert_eq!(d.budget_remaining_uj, 60);
}

#[test]
fn c07_a_delegated_grant_is_never_decided_alone() {
    let (_, _, _, c, chain) = three_hop();
    let mut gate = Gate::new();
    let leaf = chain.last().unwrap();
    let d = decide(&mut gate, &frame_for(leaf, "read"), std::slice::from_ref(leaf), &c.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::ChainBroken));
    // A chain missing its root is broken too.
    let d = decide(&mut gate, &frame_for(leaf, "read"), &chain[1..], &c.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::ChainBroken));
}

#[test]
fn c07_spliced_chain_is_refused() {
    let (_, _, b, c, chain) = three_hop();
    // Another root with the same holder: a leaf minted under chain 1 spliced onto chain 2.
    let (issuer2, a2) = (key(1), key(2));
    let mut other = root_grant(&issuer2, &a2, 1_000_000);
    other.nonce = nonce(9);
    let other = other.sign(&issuer2).unwrap();
    let mid2 = attenuate(&other, &a2, Attenuation { subject: Some(b.did()), ..Attenuation::default() }).unwrap();
    let spliced = vec![other, mid2, chain[2].clone()];
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&chain[2], "read"), &spliced, &c.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::ChainBroken));
    // Re-ordered links are refused.
    let reordered = vec![chain[0].clone(), chain[2].clone(), chain[1].clone()];
    let d = decide(&mut gate, &frame_for(&chain[1], "read"), &reordered, &b.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::ChainBroken));
}

#[test]
fn c07_sibling_delegations_share_their_roots_budget() {
    let (issuer, a, w1, w2) = (key(1), key(2), key(3), key(4));
    let root = signed_root(&issuer, &a, 100);
    let k1 = attenuate(&root, &a, Attenuation { subject: Some(w1.did()), ..Attenuation::default() }).unwrap();
    let k2 =
        attenuate(&root, &a, Attenuation { subject: Some(w2.did()), nonce: Some(nonce(7)), ..Attenuation::default() })
            .unwrap();
    let mut gate = Gate::new();
    assert!(decide(&mut gate, &frame_for(&k1, "read"), &[root.clone(), k1.clone()], &w1.did(), &cost(70)).is_allow());
    let d = decide(&mut gate, &frame_for(&k2, "read"), &[root.clone(), k2.clone()], &w2.did(), &cost(70));
    assert_eq!(d.verdict, Verdict::Deny(Reason::BudgetExceeded));
    assert_eq!(gate.spent(&k2.id()).uj, 0);
    assert!(decide(&mut gate, &frame_for(&k2, "read"), &[root.clone(), k2], &w2.did(), &cost(30)).is_allow());
    assert_eq!(gate.spent(&root.id()).uj, 100);
}

#[test]
fn c07_chained_decision_enforces_an_inherited_caveat() {
    let (issuer, a, b) = (key(1), key(2), key(3));
    let mut root = root_grant(&issuer, &a, 1_000);
    root.caveats = vec![Caveat::ActionIn(vec!["read".into()])];
    let root = root.sign(&issuer).unwrap();
    let child = attenuate(&root, &a, Attenuation { subject: Some(b.did()), ..Attenuation::default() }).unwrap();
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&child, "write"), &[root.clone(), child.clone()], &b.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::CaveatUnsatisfied));
    assert!(decide(&mut gate, &frame_for(&child, "read"), &[root, child], &b.did(), &cost(1)).is_allow());
}

#[test]
fn c07_a_chain_whose_child_dropped_a_caveat_does_not_verify() {
    let (issuer, a, b) = (key(1), key(2), key(3));
    let mut root = root_grant(&issuer, &a, 1_000);
    root.caveats = vec![Caveat::MaxCostUj(5)];
    let root = root.sign(&issuer).unwrap();
    let mut child = root_grant(&a, &b, 100);
    child.parent = Some(root.id());
    let child = child.sign(&a).unwrap(); // no caveats
    assert!(jcp::chain::verify_chain(&[root.clone(), child.clone()]).is_err());
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&child, "read"), &[root, child], &b.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::AttenuationViolation));
}

#[test]
fn c07_bad_signature_on_a_middle_link_is_denied() {
    let (_, _, b, c, mut chain) = three_hop();
    // Re-sign the middle link by the wrong key: ids unchanged, signature bad.
    let mut v = chain[1].to_value();
    if let jcp::cbor::Value::Map(e) = &mut v {
        for (k, val) in e.iter_mut() {
            if *k == jcp::cbor::Value::text("sig") {
                *val = jcp::cbor::Value::Bytes(b.sign(chain[1].grant_bytes()).to_vec());
            }
        }
    }
    chain[1] = SignedGrant::from_bytes(&v.encode()).unwrap();
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&chain[2], "read"), &chain, &c.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::BadSignature));
}

#[test]
fn c06_only_the_issuer_revokes_and_a_forged_revocation_is_never_admitted() {
    let (issuer, a, _, _, chain) = three_hop();
    let mut gate = Gate::new();
    // The holder cannot revoke the root.
    assert!(Revocation::issue(&chain[0], &a, None).is_err());
    // A revocation signed by someone else but claiming the issuer is refused.
    let real = Revocation::issue(&chain[0], &issuer, Some(nonce(3))).unwrap();
    let mut v = real.to_value();
    if let jcp::cbor::Value::Map(e) = &mut v {
        for (k, val) in e.iter_mut() {
            if *k == jcp::cbor::Value::text("sig") {
                *val = jcp::cbor::Value::Bytes(a.sign(b"not the revocation").to_vec());
            }
        }
    }
    let forged = jcp::revocation::SignedRevocation::from_bytes(&v.encode()).unwrap();
    assert_eq!(gate.admit_revocation(&forged, &chain[0]).unwrap_err().code(), "bad-signature");
    assert!(!gate.is_revoked(&chain[0].id()));
    // A real revocation presented against another grant is refused.
    assert_eq!(gate.admit_revocation(&real, &chain[1]).unwrap_err().code(), "revocation-unauthorized");
    gate.admit_revocation(&real, &chain[0]).unwrap();
    assert!(gate.is_revoked(&chain[0].id()));
}

#[test]
fn c06_a_revoked_ancestor_kills_the_whole_subtree_on_both_paths() {
    let (issuer, a, b, c, chain) = three_hop();
    let mut gate = Gate::new();
    // The middle link is revoked by its issuer (a).
    let rev = Revocation::issue(&chain[1], &a, None).unwrap();
    gate.admit_revocation(&rev, &chain[1]).unwrap();
    let d = decide(&mut gate, &frame_for(&chain[2], "read"), &chain, &c.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::Revoked));
    let d = decide(&mut gate, &frame_for(&chain[1], "read"), &chain[..2], &b.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::Revoked));
    // The root itself is still live on the single-grant path …
    let d = decide(&mut gate, &frame_for(&chain[0], "read"), &chain[..1], &a.did(), &cost(1));
    assert!(d.is_allow());
    // … until its issuer revokes it.
    let rev = Revocation::issue(&chain[0], &issuer, None).unwrap();
    gate.admit_revocation(&rev, &chain[0]).unwrap();
    let d = decide(&mut gate, &frame_for(&chain[0], "read"), &chain[..1], &a.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::Revoked));
}

#[test]
fn c15_unconfigured_resource_is_open_and_a_configured_one_admits_only_listed_roots() {
    let (issuer, a, _, c, chain) = three_hop();
    let stranger = key(9);
    let mut gate = Gate::new();
    assert!(decide(&mut gate, &frame_for(&chain[0], "read"), &chain[..1], &a.did(), &cost(1)).is_allow());
    gate.add_trust_root(resource(), stranger.did());
    // Single path.
    let d = decide(&mut gate, &frame_for(&chain[0], "read"), &chain[..1], &a.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::UntrustedRoot));
    // Chained path: the ROOT issuer is what must be listed.
    let d = decide(&mut gate, &frame_for(&chain[2], "read"), &chain, &c.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::UntrustedRoot));
    gate.add_trust_root(resource(), issuer.did());
    assert!(decide(&mut gate, &frame_for(&chain[2], "read"), &chain, &c.did(), &cost(1)).is_allow());
    // Listing an intermediate holder does not anchor a chain it does not root.
    let mut gate = Gate::new();
    gate.add_trust_root(resource(), a.did());
    let d = decide(&mut gate, &frame_for(&chain[2], "read"), &chain, &c.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::UntrustedRoot));
}

#[test]
fn c07_cached_verification_still_enforces_revocation_expiry_and_budget() {
    let (_, a, _, c, chain) = three_hop();
    let mut gate = Gate::new();
    let f = frame_for(&chain[2], "read");
    assert!(decide(&mut gate, &f, &chain, &c.did(), &cost(60)).is_allow());
    // Now cached: a second call still checks budget …
    let d = decide(&mut gate, &f, &chain, &c.did(), &cost(60));
    assert_eq!(d.verdict, Verdict::Deny(Reason::BudgetExceeded));
    // … and revocation.
    let rev = Revocation::issue(&chain[1], &a, None).unwrap();
    gate.admit_revocation(&rev, &chain[1]).unwrap();
    let d = decide(&mut gate, &f, &chain, &c.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::Revoked));
}

/// §7 for a chain: "structure and signatures first …, then revocation
/// against every link, expiry of every link, the leaf-level checks above":
/// an expired chain is `expired` whoever presents it, through an untrusted
/// root, or naming another grant — not `wrong-subject`, `untrusted-root` or
/// `wrong-resource`.
#[test]
fn s7_chain_expiry_of_every_link_precedes_the_leaf_level_checks() {
    let (_, _, b, c, mut chain) = three_hop();
    // The leaf expires at NOW + 10.
    chain[2] = attenuate(
        &chain[1],
        &b,
        Attenuation { subject: Some(c.did()), budget_uj: Some(100), expiry: Some(NOW + 10), ..Attenuation::default() },
    )
    .unwrap();
    let leaf = &chain[2];
    let later = NOW + 11;
    let mut gate = Gate::new();
    let stranger = key(9);
    let d = decide_at(&mut gate, &frame_for(leaf, "read"), &chain, &stranger.did(), &cost(1), later);
    assert_eq!(d.verdict, Verdict::Deny(Reason::Expired), "{}", d.detail);
    let mut other = frame_for(leaf, "read");
    other.grant_id = chain[0].id();
    let d = decide_at(&mut gate, &other, &chain, &c.did(), &cost(1), later);
    assert_eq!(d.verdict, Verdict::Deny(Reason::Expired), "{}", d.detail);
    gate.add_trust_root(leaf.grant().capability.resource, key(8).did());
    let d = decide_at(&mut gate, &frame_for(leaf, "read"), &chain, &c.did(), &cost(1), later);
    assert_eq!(d.verdict, Verdict::Deny(Reason::Expired), "{}", d.detail);
    // Before expiry the leaf-level checks name their own reasons.
    let d = decide_at(&mut gate, &frame_for(leaf, "read"), &chain, &stranger.did(), &cost(1), NOW);
    assert_eq!(d.verdict, Verdict::Deny(Reason::UntrustedRoot), "{}", d.detail);
}
