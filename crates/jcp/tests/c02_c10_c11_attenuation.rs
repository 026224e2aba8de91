//! C2 attenuation monotonicity, C10 delegation control, C11 sharded budgets.

mod common;
use common::*;
use jcp::decision::{Gate, Reason, Verdict};
use jcp::error::{Amplification, Error};
use jcp::grant::{attenuate, shard, Attenuation, Caveat, Funds, Slice};
use proptest::prelude::*;

#[test]
fn c02_every_amplification_is_refused_at_mint() {
    let (issuer, agent, worker) = (key(1), key(2), key(3));
    let mut root = root_grant(&issuer, &agent, 1_000);
    root.expiry = NOW + 100;
    root.budget_funds = Some(Funds { currency: "USD".into(), minor: 500 });
    let root = root.sign(&issuer).unwrap();
    let base = || Attenuation { subject: Some(worker.did()), ..Attenuation::default() };
    let cases: Vec<(Attenuation, fn(&Amplification) -> bool)> = vec![
        (Attenuation { actions: Some(vec!["admin".into()]), ..base() }, |a| matches!(a, Amplification::Action(_))),
        (Attenuation { budget_uj: Some(1_001), ..base() }, |a| matches!(a, Amplification::Budget { .. })),
        (Attenuation { expiry: Some(NOW + 101), ..base() }, |a| matches!(a, Amplification::Expiry { .. })),
        (Attenuation { expiry: Some(0), ..base() }, |a| matches!(a, Amplification::Expiry { .. })),
        (Attenuation { budget_funds: Some(Funds { currency: "USD".into(), minor: 501 }), ..base() }, |a| {
            matches!(a, Amplification::Funds(_))
        }),
        (Attenuation { budget_funds: Some(Funds { currency: "EUR".into(), minor: 1 }), ..base() }, |a| {
            matches!(a, Amplification::Funds(_))
        }),
    ];
    for (i, (a, is)) in cases.into_iter().enumerate() {
        match attenuate(&root, &agent, a) {
            Err(Error::AttenuationViolation(amp)) => assert!(is(&amp), "case {i}: {amp}"),
            other => panic!("case {i}: expected an attenuation violation, got {other:?}"),
        }
    }
    // A narrowing child is fine and inherits the money ceiling.
    let child =
        attenuate(&root, &agent, Attenuation { budget_uj: Some(10), actions: Some(vec!["read".into()]), ..base() })
            .unwrap();
    assert_eq!(child.grant().budget_funds, root.grant().budget_funds);
    assert_eq!(child.grant().parent, Some(root.id()));
}

#[test]
fn c02_delegation_by_a_non_holder_is_refused() {
    let (issuer, agent, mallory) = (key(1), key(2), key(3));
    let root = signed_root(&issuer, &agent, 1_000);
    assert!(matches!(attenuate(&root, &mallory, Attenuation::default()), Err(Error::NotHolder { .. })));
    // The issuer is not the holder either.
    assert!(matches!(attenuate(&root, &issuer, Attenuation::default()), Err(Error::NotHolder { .. })));
}

#[test]
fn c02_an_amplifying_chain_signed_by_hand_is_denied_at_decision() {
    // A child the holder built by hand (bypassing `attenuate`) with a bigger budget.
    let (issuer, agent, worker) = (key(1), key(2), key(3));
    let root = signed_root(&issuer, &agent, 100);
    let mut child = root_grant(&agent, &worker, 1_000);
    child.parent = Some(root.id());
    let child = child.sign(&agent).unwrap();
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&child, "read"), &[root, child.clone()], &worker.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::AttenuationViolation));
}

#[test]
fn c10_depth_narrows_per_hop_and_leaf_only_cannot_delegate_at_mint() {
    let (issuer, a, b, c) = (key(1), key(2), key(3), key(4));
    let mut root = root_grant(&issuer, &a, 1_000);
    root.delegate_depth = Some(1);
    let root = root.sign(&issuer).unwrap();
    // Asking for more depth than d-1 is an amplification.
    let err =
        attenuate(&root, &a, Attenuation { subject: Some(b.did()), delegate_depth: Some(1), ..Attenuation::default() });
    assert!(matches!(err, Err(Error::AttenuationViolation(Amplification::Depth { .. }))));
    // A plain attenuation gets d-1 = 0: leaf-only.
    let child = attenuate(&root, &a, Attenuation { subject: Some(b.did()), ..Attenuation::default() }).unwrap();
    assert_eq!(child.grant().delegate_depth, Some(0));
    assert!(matches!(
        attenuate(&child, &b, Attenuation { subject: Some(c.did()), ..Attenuation::default() }),
        Err(Error::DelegationForbidden)
    ));
}

#[test]
fn c10_a_hop_under_a_leaf_only_parent_is_refused_in_chain_verification() {
    let (issuer, a, b) = (key(1), key(2), key(3));
    let mut root = root_grant(&issuer, &a, 1_000);
    root.delegate_depth = Some(0);
    let root = root.sign(&issuer).unwrap();
    // Hand-built child under the leaf-only root.
    let mut child = root_grant(&a, &b, 10);
    child.parent = Some(root.id());
    child.delegate_depth = Some(0);
    let child = child.sign(&a).unwrap();
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&child, "read"), &[root, child.clone()], &b.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::ChainBroken));
    assert!(d.detail.contains("delegation-forbidden"), "{}", d.detail);
}

#[test]
fn c10_a_child_without_depth_under_a_bounded_parent_is_an_amplification() {
    let (issuer, a, b) = (key(1), key(2), key(3));
    let mut root = root_grant(&issuer, &a, 1_000);
    root.delegate_depth = Some(3);
    let root = root.sign(&issuer).unwrap();
    let mut child = root_grant(&a, &b, 10);
    child.parent = Some(root.id());
    child.delegate_depth = None; // unlimited under a bound of 2
    let child = child.sign(&a).unwrap();
    let mut gate = Gate::new();
    let d = decide(&mut gate, &frame_for(&child, "read"), &[root, child.clone()], &b.did(), &cost(1));
    assert_eq!(d.verdict, Verdict::Deny(Reason::AttenuationViolation));
}

#[test]
fn c11_shard_slices_summing_past_the_parent_are_refused_at_mint() {
    let (issuer, a) = (key(1), key(2));
    let root = signed_root(&issuer, &a, 100);
    let slices = |b: &[u64]| -> Vec<Slice> {
        b.iter()
            .enumerate()
            .map(|(i, &budget_uj)| {
                let i = u8::try_from(i).unwrap();
                Slice {
                    subject: key(10 + i).did(),
                    budget_uj,
                    point: key(40 + i).did(),
                    funds_minor: None,
                    nonce: None,
                }
            })
            .collect()
    };
    assert!(matches!(shard(&root, &a, &slices(&[50, 51])), Err(Error::ShardOverflow { sum: 101, parent: 100 })));
    assert!(matches!(shard(&root, &a, &slices(&[u64::MAX, u64::MAX])), Err(Error::ShardOverflow { .. })));
    let shards = shard(&root, &a, &slices(&[50, 30, 20])).unwrap();
    assert_eq!(shards.len(), 3);
    assert!(shards.iter().all(|s| s.grant().parent == Some(root.id())));
}

/// §4.5 + §4.8: a shard carries its point (`PointIs`) and its share of the
/// parent's money ceiling, never the whole of it: a money share is
/// required under a money-bounded parent, refused without one, and the
/// shares may not sum past it; two slices bound to one point are refused.
#[test]
fn c11_shards_are_bound_to_their_points_and_split_the_money_ceiling() {
    let (issuer, a) = (key(1), key(2));
    let mut root = root_grant(&issuer, &a, 1_000);
    root.budget_funds = Some(Funds { currency: "USD".into(), minor: 100 });
    let root = root.sign(&issuer).unwrap();
    let slice = |i: u8, uj: u64, minor: Option<u64>| Slice {
        subject: key(10 + i).did(),
        budget_uj: uj,
        point: key(40 + i).did(),
        funds_minor: minor,
        nonce: None,
    };
    let shards = shard(&root, &a, &[slice(0, 600, Some(60)), slice(1, 400, Some(40))]).unwrap();
    assert_eq!(shards[0].grant().bound_point(), Some(&key(40).did()));
    assert_eq!(shards[0].grant().budget_funds, Some(Funds { currency: "USD".into(), minor: 60 }));
    assert!(shards[1].grant().caveats.contains(&Caveat::PointIs(key(41).did())));
    let code = |r: Result<Vec<jcp::grant::SignedGrant>, Error>| r.unwrap_err().code();
    assert_eq!(code(shard(&root, &a, &[slice(0, 600, Some(60)), slice(1, 400, None)])), "shard-invalid");
    assert_eq!(code(shard(&root, &a, &[slice(0, 600, Some(61)), slice(1, 400, Some(40))])), "shard-invalid");
    let same_point = Slice { point: key(40).did(), ..slice(1, 400, Some(40)) };
    assert_eq!(code(shard(&root, &a, &[slice(0, 600, Some(60)), same_point])), "shard-invalid");
    let plain = signed_root(&issuer, &a, 1_000);
    assert_eq!(code(shard(&plain, &a, &[slice(0, 600, Some(1))])), "shard-invalid");
}

/// §4.5 "each point then enforces only its own shard": the shard is
/// decided at its point, refused at another and at a point stating no
/// identity; a second shard of the same parent at a point whose first is
/// live (a re-sharding) is refused until the first is revoked.
#[test]
fn c11_a_shard_is_decided_only_at_its_point_and_a_point_holds_one_live_shard_of_a_parent() {
    let (issuer, a) = (key(1), key(2));
    let root = signed_root(&issuer, &a, 1_000);
    let slice = |i: u8, p: u8, uj: u64| Slice {
        subject: key(10 + i).did(),
        budget_uj: uj,
        point: key(p).did(),
        funds_minor: None,
        nonce: Some([i; 16]),
    };
    let first = shard(&root, &a, &[slice(0, 40, 600), slice(1, 41, 400)]).unwrap();
    let second = shard(&root, &a, &[slice(2, 40, 600)]).unwrap();
    let try_at = |gate: &mut Gate, s: &jcp::grant::SignedGrant, who: u8| {
        let chain = [root.clone(), s.clone()];
        decide(gate, &frame_for(s, "read"), &chain, &key(10 + who).did(), &cost(10))
    };
    let mut nowhere = Gate::new();
    let d = try_at(&mut nowhere, &first[0], 0);
    assert_eq!(d.verdict, Verdict::Deny(Reason::CaveatUnsatisfied), "{}", d.detail);
    let mut p40 = Gate::new();
    p40.set_point(key(40).did());
    assert!(try_at(&mut p40, &first[0], 0).is_allow());
    let d = try_at(&mut p40, &first[1], 1);
    assert_eq!(d.verdict, Verdict::Deny(Reason::CaveatUnsatisfied), "{}", d.detail);
    assert!(d.detail.contains("PointIs"), "{}", d.detail);
    let d = try_at(&mut p40, &second[0], 2);
    assert_eq!(d.verdict, Verdict::Deny(Reason::AttenuationViolation), "{}", d.detail);
    assert_eq!(p40.shard_here(&root.id()), Some(first[0].id()));
    // Rebalancing is revocation + re-issuance (§4.5).
    let rev = jcp::revocation::Revocation::issue(&first[0], &a, Some([3; 16])).unwrap();
    p40.admit_revocation(&rev, &first[0]).unwrap();
    assert!(try_at(&mut p40, &second[0], 2).is_allow());
    assert_eq!(p40.shard_here(&root.id()), Some(second[0].id()), "the live shard is the new one");
    let third = shard(&root, &a, &[slice(3, 40, 600)]).unwrap();
    let d = try_at(&mut p40, &third[0], 3);
    assert_eq!(d.verdict, Verdict::Deny(Reason::AttenuationViolation), "{}", d.detail);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// "No chain conveys more than its root": whatever a holder asks for, a
    /// minted child is within the parent on every axis, or the mint is refused.
    #[test]
    fn c02_prop_no_chain_conveys_more_than_its_root(
        budget in 0u64..10_000,
        child_budget in 0u64..20_000,
        expiry in prop_oneof![Just(0u64), 1u64..1_000],
        child_expiry in proptest::option::of(prop_oneof![Just(0u64), 1u64..2_000]),
        depth in proptest::option::of(0u64..4),
        child_depth in proptest::option::of(0u64..5),
        actions in proptest::sample::subsequence(vec!["read", "write", "admin", "x"], 0..4),
    ) {
        let (issuer, a, b) = (key(1), key(2), key(3));
        let mut root = root_grant(&issuer, &a, budget);
        root.expiry = expiry;
        root.delegate_depth = depth;
        let root = root.sign(&issuer).unwrap();
        let req = Attenuation {
            subject: Some(b.did()),
            actions: Some(actions.iter().map(|s| (*s).to_string()).collect()),
            budget_uj: Some(child_budget),
            expiry: child_expiry,
            delegate_depth: child_depth,
            ..Attenuation::default()
        };
        if let Ok(child) = attenuate(&root, &a, req) {
            let (p, c) = (root.grant(), child.grant());
            prop_assert!(c.budget_uj <= p.budget_uj);
            prop_assert!(c.capability.actions.iter().all(|x| p.capability.actions.contains(x)));
            prop_assert!(p.expiry == 0 || (c.expiry != 0 && c.expiry <= p.expiry));
            if let Some(d) = p.delegate_depth { prop_assert!(d > 0 && c.delegate_depth.is_some_and(|cd| cd < d)); }
            prop_assert!(jcp::chain::verify_chain(&[root.clone(), child.clone()]).is_ok());
        }
    }

    /// "Siblings never mint joules": however many sibling children spend,
    /// the root's total allowed spend never exceeds the root's budget.
    #[test]
    fn c07_prop_siblings_never_mint_joules(
        root_budget in 1u64..1_000,
        slices in proptest::collection::vec(1u64..1_000, 1..4),
        costs in proptest::collection::vec((0usize..4, 1u64..400), 1..30),
    ) {
        let (issuer, a) = (key(1), key(2));
        let root = signed_root(&issuer, &a, root_budget);
        // Children each claim up to the full root budget (not a shard): they share it.
        let kids: Vec<_> = slices.iter().enumerate().map(|(i, &b)| {
            let w = key(10 + u8::try_from(i).unwrap());
            (attenuate(&root, &a, Attenuation { subject: Some(w.did()), budget_uj: Some(b.min(root_budget)), ..Attenuation::default() }).unwrap(), w)
        }).collect();
        let mut gate = Gate::new();
        let mut allowed: u64 = 0;
        for (k, c) in costs {
            let (child, w) = &kids[k % kids.len()];
            let d = decide(&mut gate, &frame_for(child, "read"), &[root.clone(), child.clone()], &w.did(), &cost(c));
            if d.is_allow() { allowed += c; }
        }
        prop_assert!(allowed <= root_budget);
        prop_assert_eq!(gate.spent(&root.id()).uj, allowed);
    }
}

#[test]
fn c02_caveat_adding_attenuation_appends_and_keeps_the_parent_caveats() {
    let (issuer, a, b) = (key(1), key(2), key(3));
    let mut root = root_grant(&issuer, &a, 100);
    root.caveats = vec![Caveat::MaxCostUj(50)];
    let root = root.sign(&issuer).unwrap();
    let child = attenuate(
        &root,
        &a,
        Attenuation { subject: Some(b.did()), add_caveats: vec![Caveat::MaxCostUj(10)], ..Attenuation::default() },
    )
    .unwrap();
    assert_eq!(child.grant().caveats, vec![Caveat::MaxCostUj(50), Caveat::MaxCostUj(10)]);
}
