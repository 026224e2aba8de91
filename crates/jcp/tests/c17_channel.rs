//! C17 — budget channels (§4.5 "Receipt-settled budget channels"):
//! optimistic spends settle by signed statement; forged, stale and
//! regressing statements are refused and change nothing; after settlement
//! the merged ledger binds and any overdraft is provable.

mod common;

use common::{cost, decide, frame_for, key, signed_root};
use jcp::channel::{Channel, ChannelPoint, OverdraftProof, SignedStatement, Statement};
use jcp::decision::{Gate, Reason};
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;

fn statement(point: &Keypair, g: &SignedGrant, spent_uj: u64, seq: u64) -> SignedStatement {
    Statement { grant_id: g.id(), point: point.did(), spent_uj, seq }.sign(point).unwrap()
}

fn setup() -> (SignedGrant, Keypair, Keypair) {
    (signed_root(&key(1), &key(2), 1000), key(31), key(32))
}

#[test]
fn c17_statement_round_trips_canonically_and_is_signed_by_its_point() {
    let (g, a, b) = setup();
    let s = statement(&a, &g, 600, 3);
    let bytes = s.to_bytes();
    let back = SignedStatement::from_bytes(&bytes).unwrap();
    assert_eq!(back, s);
    assert_eq!(back.to_bytes(), bytes);
    back.verify().unwrap();
    assert_eq!(back.id(), jcp::cbor::ContentId::of(&s.statement().to_value()));
    // Only the point's own key signs its statement.
    let e = Statement { grant_id: g.id(), point: a.did(), spent_uj: 1, seq: 0 }.sign(&b).unwrap_err();
    assert_eq!(e.code(), "statement-signer");
}

#[test]
fn c17_statement_decoder_is_strict() {
    let (g, a, _) = setup();
    let s = statement(&a, &g, 600, 3);
    let bytes = s.to_bytes();
    // Truncated, trailing bytes, an unknown field: each a typed refusal.
    assert!(SignedStatement::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(SignedStatement::from_bytes(&trailing).is_err());
    let mut v = s.to_value();
    if let jcp::cbor::Value::Map(m) = &mut v {
        m.push((jcp::cbor::Value::text("extra"), jcp::cbor::Value::Uint(1)));
    }
    let e = SignedStatement::from_bytes(&v.encode()).unwrap_err();
    assert!(e.to_string().contains("extra"), "{e}");
}

#[test]
fn c17_forged_stale_regressing_wrong_grant_and_non_member_statements_are_refused_and_change_nothing() {
    let (g, a, b) = setup();
    let other = jcp::grant::Grant { nonce: [9; 16], ..g.grant().clone() }.sign(&key(1)).unwrap();
    let mut ch = Channel::open(g.clone(), [a.did(), b.did()]).unwrap();
    let a1 = statement(&a, &g, 600, 1);
    ch.admit(&a1).unwrap();
    let before = ch.clone();
    let refused = [
        (a1.with_claim_for_tests(900, 2), "bad-signature"),
        (a1.clone(), "statement-stale"),
        (statement(&a, &g, 700, 1), "statement-stale"),
        (statement(&a, &g, 700, 0), "statement-stale"),
        (statement(&a, &g, 599, 2), "statement-regressing"),
        (statement(&a, &other, 900, 2), "statement-wrong-grant"),
        (statement(&key(5), &g, 10, 0), "statement-not-member"),
    ];
    for (s, code) in refused {
        let e = ch.admit(&s).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        assert!(e.to_string().starts_with(code), "{e}");
        assert_eq!(ch, before, "a refused statement ({code}) changed the channel");
    }
    // Equal spend at a later seq is not a regression.
    ch.admit(&statement(&a, &g, 600, 2)).unwrap();
    assert_eq!(ch.settled(&a.did()), 600);
}

#[test]
fn c17_merged_ledger_binds_and_the_overdraft_is_provable_from_the_signed_statements() {
    let (g, a, b) = setup();
    let mut ch = Channel::open(g.clone(), [a.did(), b.did()]).unwrap();
    ch.admit(&statement(&a, &g, 400, 0)).unwrap();
    ch.admit(&statement(&b, &g, 500, 0)).unwrap();
    let l = ch.ledger();
    assert_eq!((l.total_uj, l.overdraft_uj, l.is_overdrawn()), (900, 0, false));
    assert!(ch.overdraft().is_none(), "no overdraft within the budget");
    ch.admit(&statement(&a, &g, 600, 1)).unwrap();
    ch.admit(&statement(&b, &g, 600, 1)).unwrap();
    let l = ch.ledger();
    assert_eq!((l.budget_uj, l.total_uj, l.overdraft_uj), (1000, 1200, 200));
    assert_eq!(l.points.iter().map(|p| p.settled_uj).collect::<Vec<_>>(), vec![600, 600]);
    let proof = ch.overdraft().unwrap();
    // Offline: from the bytes alone.
    let back = OverdraftProof::from_bytes(&proof.to_bytes()).unwrap();
    assert_eq!(back.to_bytes(), proof.to_bytes());
    let o = back.verify().unwrap();
    assert_eq!((o.total_uj, o.overdraft_uj, o.budget_uj), (1200, 200, 1000));
}

#[test]
fn c17_an_overdraft_proof_with_a_forged_duplicated_or_wrong_grant_statement_is_refused() {
    let (g, a, b) = setup();
    let other = jcp::grant::Grant { nonce: [9; 16], ..g.grant().clone() }.sign(&key(1)).unwrap();
    let a1 = statement(&a, &g, 600, 1);
    let b1 = statement(&b, &g, 600, 1);
    let proof = |statements: Vec<SignedStatement>| OverdraftProof {
        grant: g.clone(),
        members: vec![a.did(), b.did()],
        statements,
    };
    assert!(proof(vec![a1.clone(), b1.clone()]).verify().is_ok());
    let cases = [
        (proof(vec![a1.clone(), b1.with_claim_for_tests(900, 1)]), "bad-signature"),
        (proof(vec![a1.clone(), statement(&a, &g, 500, 0)]), "statement-duplicate"),
        (proof(vec![a1.clone(), statement(&b, &other, 600, 1)]), "statement-wrong-grant"),
        (proof(vec![a1.clone(), statement(&key(5), &g, 600, 1)]), "statement-not-member"),
        (proof(vec![statement(&a, &g, 500, 0), statement(&b, &g, 500, 0)]), "overdraft-unproven"),
        (OverdraftProof { grant: other.clone(), ..proof(vec![a1.clone(), b1.clone()]) }, "statement-wrong-grant"),
    ];
    for (p, code) in cases {
        assert_eq!(p.verify().unwrap_err().code(), code);
        // The refusal survives the bytes too.
        assert_eq!(OverdraftProof::from_bytes(&p.to_bytes()).unwrap().verify().unwrap_err().code(), code);
    }
    // A forged grant in the proof is refused.
    let mut forged = proof(vec![a1, b1]);
    let mut v = forged.grant.to_value();
    if let jcp::cbor::Value::Map(m) = &mut v {
        for (k, val) in m.iter_mut() {
            if *k == jcp::cbor::Value::text("sig") {
                *val = jcp::cbor::Value::Bytes(vec![7; 64]);
            }
        }
    }
    forged.grant = SignedGrant::from_value(&v).unwrap();
    assert_eq!(forged.verify().unwrap_err().code(), "bad-signature");
}

#[test]
fn c17_a_point_counts_its_peers_settled_spend_against_the_shared_budget() {
    let (g, a, b) = setup();
    let holder = key(2);
    let mut gate = Gate::new();
    gate.join_channel(g.clone(), a.did(), [b.did()]).unwrap();
    let f = frame_for(&g, "read");
    // Optimistic: A allows 300 on its own.
    assert!(decide(&mut gate, &f, &[g.clone()], &holder.did(), &cost(300)).is_allow());
    // B settles 600: from now on A counts it.
    gate.admit_statement(&statement(&b, &g, 600, 0)).unwrap();
    assert_eq!(gate.spent(&g.id()).uj, 900);
    assert_eq!(gate.local_spent(&g.id()).uj, 300);
    let d = decide(&mut gate, &f, &[g.clone()], &holder.did(), &cost(101));
    assert_eq!(d.reason(), Some(Reason::BudgetExceeded), "{d:?}");
    let d = decide(&mut gate, &f, &[g.clone()], &holder.did(), &cost(100));
    assert!(d.is_allow(), "{d:?}");
    assert_eq!(d.budget_remaining_uj, 0);
    // A's own statement states its local spend only, at the next seq.
    let next = gate.next_statement(&g.id()).unwrap();
    assert_eq!((next.point, next.spent_uj, next.seq), (a.did(), 400, 0));
    let mine = next.sign(&a).unwrap();
    gate.note_own_statement(&mine).unwrap();
    assert_eq!(gate.next_statement(&g.id()).unwrap().seq, 1);
    // A's own statement counts once: locally, never as a peer's.
    assert_eq!(gate.admit_statement(&mine).unwrap_err().code(), "statement-stale");
    let later = gate.next_statement(&g.id()).unwrap().sign(&a).unwrap();
    assert_eq!(gate.admit_statement(&later).unwrap_err().code(), "statement-from-self");
    assert_eq!(gate.spent(&g.id()).uj, 1000);
}

#[test]
fn c17_a_statement_for_a_grant_without_a_channel_here_is_refused() {
    let (g, a, b) = setup();
    let mut gate = Gate::new();
    let e = gate.admit_statement(&statement(&b, &g, 600, 0)).unwrap_err();
    assert_eq!(e.code(), "channel-unknown");
    assert_eq!(gate.spent(&g.id()).uj, 0);
    gate.join_channel(g.clone(), a.did(), [b.did()]).unwrap();
    gate.admit_statement(&statement(&b, &g, 600, 0)).unwrap();
    // A point on the channel grant only: its peers' spend never touches another grant.
    let p = ChannelPoint::join(g.clone(), a.did(), [b.did()]).unwrap();
    assert_eq!(p.peers_settled_uj(), 0);
}

#[test]
fn c17_peers_settled_spend_binds_every_chain_through_the_channel_grant() {
    let (g, a, b) = setup();
    let holder = key(2);
    let worker = key(3);
    let child = jcp::grant::attenuate(
        &g,
        &holder,
        jcp::grant::Attenuation {
            subject: Some(worker.did()),
            budget_uj: Some(800),
            nonce: Some([4; 16]),
            ..Default::default()
        },
    )
    .unwrap();
    let mut gate = Gate::new();
    gate.join_channel(g.clone(), a.did(), [b.did()]).unwrap();
    gate.admit_statement(&statement(&b, &g, 700, 0)).unwrap();
    let f = frame_for(&child, "read");
    let chain = [g.clone(), child.clone()];
    let d = decide(&mut gate, &f, &chain, &worker.did(), &cost(301));
    assert_eq!(d.reason(), Some(Reason::BudgetExceeded), "{d:?}");
    assert!(decide(&mut gate, &f, &chain, &worker.did(), &cost(300)).is_allow());
}
