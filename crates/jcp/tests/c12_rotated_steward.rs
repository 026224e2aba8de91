//! C12 with §4.7 — a steward that rotated its key (§2.1) keeps steering its
//! runs: the run's grant, its amendments and their continuations name the
//! steward's inception DID and are signed by the key that controls it now.
//! They verify only where the steward's key log is presented (a
//! `KeyRing`); without it they are refused on their signatures (fail
//! closed), and a key the log has rotated away is refused
//! `rotation-superseded-key`. Two logs of one identity that diverge make it
//! `rotation-forked` (docs/decisions.md, "§2.1 forked key logs").

#![allow(clippy::unwrap_used, clippy::panic)]

use jcp::cbor::{ContentId, Value};
use jcp::energy::Provenance;
use jcp::grant::{Capability, Grant};
use jcp::identity::Keypair;
use jcp::rotation::{issue_grant, KeyLog, KeyRing};
use jcp::steering::{AmendInput, CheckpointInput, Record, Run, Spent};

fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

const BUDGET: u64 = 1_000_000;

/// Steward identity 1 rotated once to key 2 (committing to key 3); agent 9.
fn rotated() -> (KeyLog, Keypair, Keypair, Keypair, Keypair) {
    let (id, k1, k2, agent) = (key(1), key(2), key(3), key(9));
    let mut log = KeyLog::incept(&id, &k1.did(), Some([1; 16]));
    log.rotate(&k1, &k2.did(), Some([2; 16])).unwrap();
    (log, id, k1, k2, agent)
}

fn ring(log: &KeyLog) -> KeyRing {
    let mut r = KeyRing::new();
    r.add(log).unwrap();
    r
}

fn run_grant(issuer: &Keypair, agent: &Keypair) -> Grant {
    Grant {
        issuer: issuer.did(),
        subject: agent.did(),
        capability: Capability { resource: ContentId::of(&Value::text("agent")), actions: vec!["model.infer".into()] },
        budget_uj: BUDGET,
        budget_funds: None,
        caveats: vec![],
        expiry: 10_000,
        parent: None,
        delegate_depth: Some(0),
        nonce: [7; 16],
    }
}

fn checkpoint(run: &mut Run, agent: &Keypair, seq: u8, spent: u64) {
    run.checkpoint(
        agent,
        CheckpointInput {
            state: ContentId::of(&Value::text(&format!("state {seq}"))),
            at: 1_000 + u64::from(seq),
            spent: Some(Spent { uj: spent, provenance: Provenance::Estimator }),
            nonce: Some([seq; 16]),
        },
    )
    .unwrap();
}

fn amend_input(budget_uj: u64) -> AmendInput {
    AmendInput { budget_uj, nonce: Some([40; 16]), continuation_nonce: Some([41; 16]), ..AmendInput::default() }
}

/// A whole steered run by the rotated steward: grant, checkpoint, amendment
/// and continuation, then a checkpoint under the continuation.
fn steered_run() -> (Run, KeyLog, Keypair, Keypair) {
    let (log, id, k1, _k2, agent) = rotated();
    let state = log.verify().unwrap();
    let g = issue_grant(run_grant(&id, &agent), &k1, &state).unwrap();
    let mut run = Run::new(g).with_key_ring(ring(&log));
    checkpoint(&mut run, &agent, 0, 300_000);
    run.amend_as(&id.did(), &k1, amend_input(400_000)).unwrap();
    checkpoint(&mut run, &agent, 1, 500_000);
    (run, log, id, k1)
}

#[test]
fn c12_a_rotated_stewards_run_verifies_with_its_key_log() {
    let (run, log, id, _k1) = steered_run();
    let rep = run.verify().unwrap();
    assert!(rep.clean, "{:?}", rep.findings);
    assert_eq!(rep.issuer, id.did(), "the run names the steward's identity, not its key");
    assert_eq!(rep.grants.len(), 2, "run grant and continuation");
    assert!(rep.grants.iter().all(|g| g.verdict == "ok"));
    // The same bytes, read back and given the log, verify the same.
    let back = Run::from_bytes(&run.to_bytes()).unwrap().with_key_ring(ring(&log));
    assert_eq!(back.verify().unwrap(), rep);
}

#[test]
fn c12_a_rotated_stewards_run_is_refused_without_its_key_log() {
    let (run, ..) = steered_run();
    let bare = Run::from_bytes(&run.to_bytes()).unwrap();
    let rep = bare.verify().unwrap();
    assert!(!rep.clean);
    let first = &rep.findings[0];
    assert_eq!((first.index, first.code), (0, "bad-signature"), "{:?}", rep.findings);
    assert!(rep.active_grant.is_none(), "no grant is in force on an unverified signature");
}

#[test]
fn c12_a_superseded_key_cannot_steer_a_rotated_stewards_run() {
    let (log, id, k1, k2, agent) = rotated();
    let state = log.verify().unwrap();
    let g = issue_grant(run_grant(&id, &agent), &k1, &state).unwrap();
    let mut run = Run::new(g).with_key_ring(ring(&log));
    checkpoint(&mut run, &agent, 0, 300_000);
    let before = run.to_bytes();
    // Authoring with the inception key (rotated away) is refused, nothing appended.
    let e = run.amend_as(&id.did(), &id, amend_input(400_000)).unwrap_err();
    assert_eq!(e.code(), "rotation-superseded-key", "{e}");
    assert_eq!(run.to_bytes(), before);
    // Only committed to, not yet controlling: a plain bad signature.
    assert_eq!(run.amend_as(&id.did(), &k2, amend_input(400_000)).unwrap_err().code(), "bad-signature");
    // An amendment forged with the superseded key and pushed by hand is
    // refused by the verifier with the same code.
    let mut other = run.clone();
    let plan = other.plan_amend(&id.did(), &amend_input(400_000)).unwrap();
    other.push(Record::Amendment(plan.amendment.sign(&id)));
    let rep = other.verify().unwrap();
    let f = rep.findings.iter().find(|f| f.kind == "amendment").unwrap();
    assert_eq!(f.code, "rotation-superseded-key", "{:?}", rep.findings);
}

#[test]
fn c12_a_longer_log_of_the_same_identity_replaces_the_shorter() {
    let (log, id, k1, _k2, _agent) = rotated();
    let short = KeyLog::from_events(log.events()[..1].to_vec());
    let mut r = KeyRing::new();
    assert_eq!(r.add(&short).unwrap().current(), &id.did());
    assert_eq!(r.add(&log).unwrap().current(), &k1.did());
    // Presenting the older copy again does not roll the identity back.
    assert_eq!(r.add(&short).unwrap().current(), &k1.did());
    assert_eq!(r.get(&id.did()).unwrap().seq(), 1);
}

#[test]
fn c12_forked_key_logs_leave_no_key_in_control() {
    let (log, id, k1, _k2, agent) = rotated();
    // The pre-committed key signs a second, different rotation at seq 1.
    let mut fork = KeyLog::from_events(log.events()[..1].to_vec());
    fork.rotate(&k1, &key(50).did(), Some([99; 16])).unwrap();
    let mut r = ring(&log);
    let e = r.add(&fork).unwrap_err();
    assert_eq!(e.code(), "rotation-forked", "{e}");
    assert!(r.get(&id.did()).is_none());
    // A grant signed by the (formerly) current key no longer verifies.
    let state = log.verify().unwrap();
    let g = issue_grant(run_grant(&id, &agent), &k1, &state).unwrap();
    assert_eq!(r.verify_grant(&g).unwrap_err().code(), "rotation-forked");
    let rep = Run::new(g).with_key_ring(r).verify().unwrap();
    assert_eq!(rep.findings[0].code, "rotation-forked");
}
