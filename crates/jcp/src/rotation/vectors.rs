//! The published rotation vectors (`conformance/jcp/v1/rotation.json`, C12):
//! key logs built from fixed seed keys and nonces — an inception and two
//! rotations, then every refusal with its code — and grants checked against
//! the verified log. Written by `cargo run -p jcp --features vectors --bin gen-rotation-vectors`,
//! replayed from disk by `tests/c12_rotation_vectors.rs`, which fails if
//! regenerating changes a byte.

use serde_json::{json, Value as Json};

use super::{next_hash_of, verify_grant_signature, KeyEvent, KeyLog, SignedKeyEvent};
use crate::cbor::{ContentId, Value};
use crate::error::Error;
use crate::grant::{Capability, Grant, SignedGrant};
use crate::identity::Keypair;

/// Where the vectors live, relative to the repository root.
pub const PATH: &str = "conformance/jcp/v1/rotation.json";

/// The seeds of the keys in every vector (`[seed; 32]`).
pub const SEEDS: [(&str, u8); 6] =
    [("identity", 0x21), ("k1", 0x22), ("k2", 0x23), ("k3", 0x24), ("thief", 0x25), ("other", 0x26)];

struct Keys {
    identity: Keypair,
    k1: Keypair,
    k2: Keypair,
    k3: Keypair,
    thief: Keypair,
    other: Keypair,
}

fn keys() -> Result<Keys, Error> {
    let k = |n: u8| Keypair::from_seed([n; 32]);
    Ok(Keys { identity: k(0x21)?, k1: k(0x22)?, k2: k(0x23)?, k3: k(0x24)?, thief: k(0x25)?, other: k(0x26)? })
}

/// The valid log: inception by `identity` committing to `k1`, rotation 1 to
/// `k1` committing to `k2`, rotation 2 to `k2` committing to `k3`.
fn valid(k: &Keys) -> Result<(KeyLog, KeyLog, KeyLog), Error> {
    let mut log = KeyLog::incept(&k.identity, &k.k1.did(), Some([0x31; 16]));
    let inception = log.clone();
    log.rotate(&k.k1, &k.k2.did(), Some([0x32; 16]))?;
    let one = log.clone();
    log.rotate(&k.k2, &k.k3.did(), Some([0x33; 16]))?;
    Ok((inception, one, log))
}

/// A raw rotation event after `prev` (no rule checked).
fn raw(prev: &SignedKeyEvent, signer: &Keypair, next: &Keypair, nonce: u8) -> KeyEvent {
    KeyEvent {
        identity: prev.event().identity,
        seq: prev.event().seq + 1,
        current: signer.did(),
        next_hash: next_hash_of(&next.did()),
        parent: Some(prev.id()),
        nonce: [nonce; 16],
    }
}

fn with(base: &KeyLog, extra: SignedKeyEvent) -> KeyLog {
    let mut events = base.events().to_vec();
    events.push(extra);
    KeyLog::from_events(events)
}

/// Every invalid log, by name.
fn refusals(k: &Keys, inception: &KeyLog, one: &KeyLog) -> Vec<(&'static str, KeyLog)> {
    let inc = &inception.events()[0];
    let r1 = &one.events()[1];
    let mut out = Vec::new();
    // A thief holding the current key (the identity key) signs a rotation to
    // a key of their own: it is not the pre-committed k1.
    out.push((
        "thief-with-current-key-rotates",
        with(inception, raw(inc, &k.identity, &k.thief, 0x41).sign(&k.identity)),
    ));
    out.push(("thief-rotates-to-own-key", with(inception, raw(inc, &k.thief, &k.thief, 0x42).sign(&k.thief))));
    // Sequence: a gap, a replayed event, an inception that is not seq 0.
    let mut gap = raw(inc, &k.k1, &k.k2, 0x43);
    gap.seq = 2;
    out.push(("sequence-gap", with(inception, gap.sign(&k.k1))));
    out.push(("replayed-rotation", with(one, r1.clone())));
    let mut late = inc.event().clone();
    late.seq = 1;
    out.push(("inception-not-seq-zero", KeyLog::from_events(vec![late.sign(&k.identity)])));
    // Parent links.
    let mut spliced = raw(inc, &k.k1, &k.k2, 0x44);
    spliced.parent = Some(ContentId::of(&Value::text("another log's head")));
    out.push(("parent-mismatch", with(inception, spliced.sign(&k.k1))));
    let mut orphan = raw(inc, &k.k1, &k.k2, 0x45);
    orphan.parent = None;
    out.push(("rotation-without-parent", with(inception, orphan.sign(&k.k1))));
    let mut inc_parent = inc.event().clone();
    inc_parent.parent = Some(ContentId::of(&Value::text("no parent at inception")));
    out.push(("inception-names-a-parent", KeyLog::from_events(vec![inc_parent.sign(&k.identity)])));
    // Signatures: the pre-committed key named but another key signing.
    out.push(("rotation-signed-by-the-old-key", with(inception, raw(inc, &k.k1, &k.k2, 0x46).sign(&k.identity))));
    out.push(("inception-signed-by-another-key", KeyLog::from_events(vec![inc.event().clone().sign(&k.other)])));
    // Identity.
    let mut other_id = raw(inc, &k.k1, &k.k2, 0x47);
    other_id.identity = k.other.did();
    out.push(("rotation-names-another-identity", with(inception, other_id.sign(&k.k1))));
    let mut not_self = inc.event().clone();
    not_self.current = k.k1.did();
    out.push(("inception-current-is-not-the-identity", KeyLog::from_events(vec![not_self.sign(&k.k1)])));
    out.push(("empty-log", KeyLog::from_events(Vec::new())));
    out
}

/// A grant in the identity's name, signed by `signer` (whoever it is).
fn grant_signed_by(k: &Keys, issuer: &Keypair, signer: &Keypair, nonce: u8) -> Result<SignedGrant, Error> {
    let g = Grant {
        issuer: issuer.did(),
        subject: k.thief.did(),
        capability: Capability {
            resource: ContentId::of(&Value::text("jcp-console/vectors/rotated-issuer")),
            actions: vec!["read".into()],
        },
        budget_uj: 100,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [nonce; 16],
    };
    let bytes = g.canonical_bytes();
    let wire =
        crate::cbor::map([("grant", Some(g.to_value())), ("sig", Some(Value::Bytes(signer.sign(&bytes).to_vec())))]);
    SignedGrant::from_value(&wire)
}

fn outcome(r: Result<impl serde::Serialize, Error>) -> Json {
    match r {
        Ok(v) => json!({"ok": v}),
        Err(e) => json!({"refused": e.code()}),
    }
}

/// Builds the whole vector document.
pub fn generate() -> Result<Json, Error> {
    let k = keys()?;
    let (inception, one, two) = valid(&k)?;
    let state = two.verify()?;
    let keys_json: Vec<Json> = SEEDS
        .iter()
        .map(|(name, seed)| {
            let kp = Keypair::from_seed([*seed; 32])?;
            Ok(json!({"name": name, "seed": hex::encode([*seed; 32]), "did": kp.did(), "next_hash": next_hash_of(&kp.did())}))
        })
        .collect::<Result<_, Error>>()?;
    let logs: Vec<Json> = [("inception", &inception), ("one-rotation", &one), ("two-rotations", &two)]
        .iter()
        .map(|(name, log)| json!({"name": name, "log": hex::encode(log.to_bytes()), "expected": outcome(log.verify())}))
        .chain(refusals(&k, &inception, &one).into_iter().map(
            |(name, log)| json!({"name": name, "log": hex::encode(log.to_bytes()), "expected": outcome(log.verify())}),
        ))
        .collect();
    let grants: Vec<Json> = [
        ("signed-by-the-current-key", grant_signed_by(&k, &k.identity, &k.k2, 0x51)?),
        ("signed-by-the-first-rotated-key", grant_signed_by(&k, &k.identity, &k.k1, 0x52)?),
        ("signed-by-the-inception-key", grant_signed_by(&k, &k.identity, &k.identity, 0x53)?),
        ("signed-by-the-thief", grant_signed_by(&k, &k.identity, &k.thief, 0x54)?),
        ("issued-in-another-identity", grant_signed_by(&k, &k.other, &k.k2, 0x55)?),
    ]
    .iter()
    .map(|(name, g)| {
        json!({
            "name": name,
            "key_log": "two-rotations",
            "grant": hex::encode(g.to_bytes()),
            "expected": outcome(verify_grant_signature(g, &state).map(|()| "verified")),
        })
    })
    .collect();
    Ok(json!({
        "format": "jcp-conformance/rotation/1",
        "spec": "JCP v0.3 §2.1 (C12)",
        "keys": keys_json,
        "logs": logs,
        "grants": grants,
    }))
}

/// The vector document as written to disk (pretty JSON, trailing newline).
pub fn generate_text() -> Result<String, Error> {
    Ok(crate::vectors::to_text(&generate()?))
}
