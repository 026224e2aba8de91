//! C12 — rotation (§2.1): an un-pre-committed key cannot rotate an identity,
//! the pre-committed key can, and the identity DID is stable across
//! rotations; every refusal a verifier MUST make, each with its own code;
//! grants issued in a rotated identity's name.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use jcp::cbor::{self, ContentId, Value};
use jcp::chain::verify_chain;
use jcp::grant::{attenuate, Attenuation, Capability, Grant, SignedGrant};
use jcp::identity::{Did, Keypair};
use jcp::rotation::{
    issue_grant, next_hash_of, verify_chain_with_key_logs, verify_grant_signature, KeyEvent, KeyLog, KeyState,
    SignedKeyEvent,
};
use jcp::Error;

fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

/// identity (1) commits to k1 (2); rotation 1 to k1 commits to k2 (3).
fn two_events() -> (KeyLog, Keypair, Keypair, Keypair) {
    let (id, k1, k2) = (key(1), key(2), key(3));
    let mut log = KeyLog::incept(&id, &k1.did(), Some([9; 16]));
    log.rotate(&k1, &k2.did(), Some([10; 16])).unwrap();
    (log, id, k1, k2)
}

fn appended(log: &KeyLog, e: SignedKeyEvent) -> KeyLog {
    let mut events = log.events().to_vec();
    events.push(e);
    KeyLog::from_events(events)
}

fn rotation_after(log: &KeyLog, current: &Keypair, next: &Did) -> KeyEvent {
    let head = log.events().last().unwrap();
    KeyEvent {
        identity: head.event().identity,
        seq: head.event().seq + 1,
        current: current.did(),
        next_hash: next_hash_of(next),
        parent: Some(head.id()),
        nonce: [0x44; 16],
    }
}

fn grant(issuer: &Did, subject: &Did, nonce: u8) -> Grant {
    Grant {
        issuer: *issuer,
        subject: *subject,
        capability: Capability { resource: ContentId::of(&Value::text("tool")), actions: vec!["read".into()] },
        budget_uj: 100,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [nonce; 16],
    }
}

/// A grant signed by an arbitrary key, whatever its issuer says.
fn signed_by(g: &Grant, signer: &Keypair) -> SignedGrant {
    let sig = signer.sign(&g.canonical_bytes());
    SignedGrant::from_value(&cbor::map([("grant", Some(g.to_value())), ("sig", Some(Value::Bytes(sig.to_vec())))]))
        .unwrap()
}

#[test]
fn c12_thief_with_current_key_cannot_rotate() {
    let (mut log, _id, k1, k2) = two_events();
    let before = log.to_bytes();
    let thief_next = key(66);
    // The authoring routine refuses before signing: k1 is current, k2 is pre-committed.
    let e = log.rotate(&k1, &thief_next.did(), None).unwrap_err();
    assert_eq!(e.code(), "rotation-hash-mismatch", "{e}");
    assert_eq!(log.to_bytes(), before, "a refused rotation appends nothing");
    // A thief crafting the event by hand is refused by the verifier too,
    // whether naming the stolen key or a key of their own as the new current.
    let forged = appended(&log, rotation_after(&log, &k1, &thief_next.did()).sign(&k1));
    assert!(matches!(forged.verify(), Err(Error::RotationHashMismatch { seq: 2, .. })));
    let own = appended(&log, rotation_after(&log, &thief_next, &thief_next.did()).sign(&thief_next));
    assert_eq!(own.verify().unwrap_err().code(), "rotation-hash-mismatch");
    // Naming the pre-committed key but signing with the stolen one: bad signature.
    let claimed = appended(&log, rotation_after(&log, &k2, &thief_next.did()).sign(&k1));
    assert_eq!(claimed.verify().unwrap_err().code(), "bad-signature");
    // The log still verifies with k1 in control.
    assert_eq!(log.verify().unwrap().current(), &k1.did());
}

#[test]
fn c12_pre_committed_key_rotates_and_identity_did_is_stable() {
    let (id, k1, k2, k3) = (key(1), key(2), key(3), key(4));
    let mut log = KeyLog::incept(&id, &k1.did(), None);
    let s0 = log.verify().unwrap();
    assert_eq!((s0.identity(), s0.current(), s0.seq()), (&id.did(), &id.did(), 0));
    let s1 = log.rotate(&k1, &k2.did(), None).unwrap();
    let s2 = log.rotate(&k2, &k3.did(), None).unwrap();
    assert_eq!(s2, log.verify().unwrap(), "rotate returns what the verifier establishes");
    for (s, cur, seq) in [(&s1, &k1, 1), (&s2, &k2, 2)] {
        assert_eq!(s.identity(), &id.did(), "the identity is the inception DID forever");
        assert_eq!(s.current(), &cur.did());
        assert_eq!(s.seq(), seq);
    }
    assert_eq!(s2.next_hash(), &next_hash_of(&k3.did()));
    assert_eq!(s2.head(), &log.events()[2].id());
    assert_eq!(s2.superseded(), &[id.did(), k1.did()]);
    // Every event names the inception DID.
    assert!(log.events().iter().all(|e| e.event().identity == id.did()));
}

#[test]
fn c12_owner_who_lost_the_current_key_still_rotates_with_the_pre_committed_one() {
    let (mut log, _id, k1, k2) = two_events();
    drop(k1); // lost: nothing below uses the current key
    let k3 = key(4);
    let s = log.rotate(&k2, &k3.did(), None).unwrap();
    assert_eq!(s.current(), &k2.did());
    // The round trip through the file form keeps every byte and the verdict.
    let again = KeyLog::from_bytes(&log.to_bytes()).unwrap();
    assert_eq!(again, log);
    assert_eq!(again.verify().unwrap(), s);
}

#[test]
fn c12_sequence_gaps_and_replays_are_refused() {
    let (log, _id, _k1, k2) = two_events();
    let mut gap = rotation_after(&log, &k2, &key(4).did());
    gap.seq = 3;
    let e = appended(&log, gap.sign(&k2)).verify().unwrap_err();
    assert_eq!(e, Error::RotationSequenceGap { index: 2, expected: 2, got: 3 });
    assert_eq!(e.code(), "rotation-sequence-gap");
    let replay = appended(&log, log.events()[1].clone());
    assert_eq!(replay.verify().unwrap_err().code(), "rotation-sequence-gap");
    let mut first = log.events()[0].event().clone();
    first.seq = 1;
    let not_zero = KeyLog::from_events(vec![first.sign(&key(1))]);
    assert_eq!(not_zero.verify().unwrap_err(), Error::RotationSequenceGap { index: 0, expected: 0, got: 1 });
}

#[test]
fn c12_parent_link_mismatches_are_refused() {
    let (log, id, _k1, k2) = two_events();
    let mut spliced = rotation_after(&log, &k2, &key(4).did());
    spliced.parent = Some(log.events()[0].id());
    let e = appended(&log, spliced.sign(&k2)).verify().unwrap_err();
    assert!(matches!(e, Error::RotationParentMismatch { seq: 2, .. }), "{e}");
    let mut orphan = rotation_after(&log, &k2, &key(4).did());
    orphan.parent = None;
    assert_eq!(appended(&log, orphan.sign(&k2)).verify().unwrap_err().code(), "rotation-parent-mismatch");
    let mut inception = log.events()[0].event().clone();
    inception.parent = Some(ContentId::of(&Value::text("x")));
    let e = KeyLog::from_events(vec![inception.sign(&id)]).verify().unwrap_err();
    assert_eq!(e.code(), "rotation-parent-mismatch");
}

#[test]
fn c12_hash_mismatch_is_refused() {
    // A rotation to a key that is not the one committed to, signed by itself.
    let (log, _id, _k1, _k2) = two_events();
    let stranger = key(77);
    let e = appended(&log, rotation_after(&log, &stranger, &key(4).did()).sign(&stranger)).verify().unwrap_err();
    assert_eq!(
        e,
        Error::RotationHashMismatch {
            seq: 2,
            current: stranger.did().to_string(),
            expected: *log.verify().unwrap().next_hash()
        }
    );
}

#[test]
fn c12_bad_signatures_are_refused() {
    let (log, id, k1, _k2) = two_events();
    // A tampered signature on rotation 1.
    let mut bytes = log.to_bytes();
    let sig = log.events()[1].signature();
    let at = bytes.windows(64).position(|w| w == sig).unwrap();
    bytes[at] ^= 1;
    let tampered = KeyLog::from_bytes(&bytes).unwrap();
    assert_eq!(
        tampered.verify().unwrap_err(),
        Error::BadSignature { object: "KeyEvent", signer: k1.did().to_string() }
    );
    // An inception signed by someone other than the identity key.
    let e = KeyLog::from_events(vec![log.events()[0].event().clone().sign(&key(50))]).verify().unwrap_err();
    assert_eq!(e, Error::BadSignature { object: "KeyEvent", signer: id.did().to_string() });
}

#[test]
fn c12_wrong_identity_is_refused() {
    let (log, id, _k1, k2) = two_events();
    let mut other = rotation_after(&log, &k2, &key(4).did());
    other.identity = key(60).did();
    let e = appended(&log, other.sign(&k2)).verify().unwrap_err();
    assert!(matches!(e, Error::RotationWrongIdentity { seq: 2, .. }), "{e}");
    // An inception whose current key is not its identity.
    let mut inception = log.events()[0].event().clone();
    inception.current = key(2).did();
    let e = KeyLog::from_events(vec![inception.sign(&key(2))]).verify().unwrap_err();
    assert_eq!(e.code(), "rotation-wrong-identity");
    assert!(e.to_string().starts_with("rotation-wrong-identity: "), "{e}");
    let _ = id;
}

#[test]
fn c12_key_log_file_decoding_is_strict_and_names_the_event() {
    let (log, ..) = two_events();
    let bytes = log.to_bytes();
    assert_eq!(KeyLog::from_bytes(&bytes).unwrap().to_bytes(), bytes);
    // Truncated and trailing bytes.
    // (the byte string holding the last signature now claims more than is left)
    assert_eq!(KeyLog::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err().code(), "cbor-length-too-large");
    assert_eq!(KeyLog::from_bytes(&bytes[..0]).unwrap_err().code(), "cbor-truncated");
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert_eq!(KeyLog::from_bytes(&trailing).unwrap_err().code(), "cbor-trailing-bytes");
    // An empty log, another format, an unknown field in an event.
    assert_eq!(KeyLog::from_bytes(&KeyLog::from_events(vec![]).to_bytes()).unwrap_err(), Error::RotationEmptyLog);
    let other_format =
        cbor::map([("format", Some(Value::text("jcp-keylog/2"))), ("events", Some(Value::Array(vec![])))]);
    assert_eq!(KeyLog::from_bytes(&other_format.encode()).unwrap_err().code(), "schema-invalid-field");
    let Value::Map(mut ev) = log.events()[1].to_value() else { panic!() };
    ev.push((Value::text("extra"), Value::Uint(1)));
    let events = Value::Array(vec![log.events()[0].to_value(), Value::Map(ev)]);
    let v = cbor::map([("format", Some(Value::text("jcp-keylog/1"))), ("events", Some(events))]);
    let e = KeyLog::from_bytes(&v.encode()).unwrap_err();
    assert!(matches!(&e, Error::KeyLogEvent { index: 1, .. }), "{e}");
    assert_eq!(e.code(), "schema-unknown-field");
    assert!(e.to_string().starts_with("schema-unknown-field: key log event #1"), "{e}");
}

#[test]
fn c12_a_grant_issued_by_the_identity_verifies_under_its_current_key() {
    let (log, id, k1, k2) = two_events();
    let state = log.verify().unwrap();
    let worker = key(20);
    // k1 controls the identity now; k2 is only committed to.
    assert_eq!(issue_grant(grant(&id.did(), &worker.did(), 1), &k2, &state).unwrap_err().code(), "bad-signature");
    let g = issue_grant(grant(&id.did(), &worker.did(), 1), &k1, &state).unwrap();
    assert_eq!(g.grant().issuer, id.did(), "the grant names the identity, not the key");
    verify_grant_signature(&g, &state).unwrap();
    // The plain signature check (issuer key) does not hold after rotation:
    // only the key log says who signs for the identity now.
    assert!(!g.verify_signature());
    // A grant in another identity's name is refused against this log.
    let other = issue_grant(grant(&key(30).did(), &worker.did(), 2), &k1, &state).unwrap_err();
    assert_eq!(other.code(), "rotation-wrong-identity");
    // Issuing with a key that is not the current one is refused.
    assert_eq!(issue_grant(grant(&id.did(), &worker.did(), 3), &key(31), &state).unwrap_err().code(), "bad-signature");
}

#[test]
fn c12_a_grant_signed_by_a_superseded_key_is_refused() {
    let (log, id, k1, k2) = two_events();
    let state: KeyState = log.verify().unwrap();
    let g = grant(&id.did(), &key(20).did(), 4);
    // Signed by the inception key: valid for the bare DID, refused once rotated.
    let old = signed_by(&g, &id);
    assert!(old.verify_signature());
    assert_eq!(
        verify_grant_signature(&old, &state).unwrap_err(),
        Error::RotationSupersededKey {
            identity: id.did().to_string(),
            signer: id.did().to_string(),
            superseded_at: 1,
            current: k1.did().to_string()
        }
    );
    // Rotating again supersedes k1 too.
    let mut log2 = log.clone();
    let s2 = log2.rotate(&k2, &key(4).did(), None).unwrap();
    let by_k1 = signed_by(&g, &k1);
    assert!(verify_grant_signature(&by_k1, &state).is_ok(), "k1 is current before the second rotation");
    assert!(matches!(verify_grant_signature(&by_k1, &s2), Err(Error::RotationSupersededKey { superseded_at: 2, .. })));
    // A key that never controlled the identity is a plain bad signature.
    assert_eq!(verify_grant_signature(&signed_by(&g, &key(40)), &state).unwrap_err().code(), "bad-signature");
    // Issuing with a superseded key is refused at authoring too.
    assert_eq!(issue_grant(g, &id, &state).unwrap_err().code(), "rotation-superseded-key");
}

/// A 40 µJ child of `parent` from its subject `agent` to `worker`.
fn delegate(parent: &SignedGrant, agent: &Keypair, worker: &Keypair) -> SignedGrant {
    let a = Attenuation { subject: Some(worker.did()), budget_uj: Some(40), ..Attenuation::default() };
    attenuate(parent, agent, a).unwrap()
}

#[test]
fn c12_a_chain_rooted_in_a_rotated_identity_verifies_with_the_key_log() {
    let (log, id, k1, _k2) = two_events();
    let state = log.verify().unwrap();
    let agent = key(20);
    let worker = key(21);
    let root = issue_grant(grant(&id.did(), &agent.did(), 5), &k1, &state).unwrap();
    let child = delegate(&root, &agent, &worker);
    let chain = [root.clone(), child.clone()];
    // Without the key log the root's signature does not verify ...
    assert!(verify_chain(&chain).is_err());
    // ... with it, the chain does; an unresolved issuer is checked as a bare DID.
    let resolve = |d: &Did| (d == state.identity()).then_some(&state);
    verify_chain_with_key_logs(&chain, resolve).unwrap();
    // A root signed by a superseded key fails the chain the same way.
    let stale_root = signed_by(root.grant(), &id);
    let stale_child = delegate(&stale_root, &agent, &worker);
    assert_eq!(
        verify_chain_with_key_logs(&[stale_root, stale_child], resolve).unwrap_err().code(),
        "rotation-superseded-key"
    );
    // Structure is still checked first: a spliced chain is chain-broken.
    assert_eq!(verify_chain_with_key_logs(&[child], resolve).unwrap_err().code(), "chain-broken");
}

#[test]
fn c12_key_log_view_shows_events_and_the_verified_state_or_refusal() {
    let (log, id, k1, _k2) = two_events();
    let v = log.view();
    assert_eq!(v.events.len(), 2);
    assert!(v.events.iter().all(|r| r.signature_valid));
    assert_eq!(v.state.as_ref().unwrap().current(), &k1.did());
    assert!(v.refusal.is_none());
    let j = serde_json::to_value(&v).unwrap();
    assert_eq!(j["state"]["identity"], id.did().to_string());
    assert_eq!(j["state"]["seq"], 1);
    assert_eq!(j["events"][1]["event"]["parent"], log.events()[0].id().to_hex());
    let bad = appended(&log, log.events()[1].clone()).view();
    assert!(bad.state.is_none());
    assert_eq!(bad.refusal.unwrap().code, "rotation-sequence-gap");
}
