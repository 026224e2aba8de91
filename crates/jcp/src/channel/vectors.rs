//! The published budget-channel vectors (`conformance/jcp/v1/channel.json`,
//! §4.5, C17), built from fixed seed keys and nonces: signed statements, a
//! sequence admitted in order with each refusal's code (forged, stale,
//! regressing, wrong grant, non-member), the merged ledger it settles to,
//! an overdraft proof and the proofs a verifier must refuse. Written by
//! `cargo run -p jcp --features vectors --bin gen-channel-vectors`, replayed from disk by
//! `tests/c17_channel_vectors.rs`, which fails if regenerating changes a byte.

use serde_json::{json, Value as Json};

use super::{Channel, OverdraftProof, SignedStatement, Statement};
use crate::cbor::{ContentId, Value};
use crate::error::Error;
use crate::grant::{Capability, Grant, SignedGrant};
use crate::identity::{Did, Keypair};

/// Where the vectors live, relative to the repository root.
pub const PATH: &str = "conformance/jcp/v1/channel.json";

/// The channel grant's budget.
pub const BUDGET_UJ: u64 = 1_000;

/// The fixed keys: issuer, holder, point A, point B, mallory (no member).
struct Keys {
    /// The grant's issuer (seed byte 1).
    pub issuer: Keypair,
    /// The grant's subject (seed byte 2).
    pub holder: Keypair,
    /// Enforcement point A (seed byte 0x31).
    pub a: Keypair,
    /// Enforcement point B (seed byte 0x32).
    pub b: Keypair,
    /// Not a member (seed byte 5).
    pub mallory: Keypair,
}

/// The fixed keys.
fn keys() -> Result<Keys, Error> {
    Ok(Keys {
        issuer: Keypair::from_seed([1; 32])?,
        holder: Keypair::from_seed([2; 32])?,
        a: Keypair::from_seed([0x31; 32])?,
        b: Keypair::from_seed([0x32; 32])?,
        mallory: Keypair::from_seed([5; 32])?,
    })
}

/// The channel grant (nonce byte 0x21) or another grant (any other byte).
fn grant(k: &Keys, nonce: u8) -> Result<SignedGrant, Error> {
    Grant {
        issuer: k.issuer.did(),
        subject: k.holder.did(),
        capability: Capability {
            resource: ContentId::of(&Value::text("jcp-console/vectors/channel")),
            actions: vec!["call".into()],
        },
        budget_uj: BUDGET_UJ,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [nonce; 16],
    }
    .sign(&k.issuer)
}

fn st(point: &Keypair, g: &SignedGrant, spent_uj: u64, seq: u64) -> Result<SignedStatement, Error> {
    Statement { grant_id: g.id(), point: point.did(), spent_uj, seq }.sign(point)
}

fn code(r: Result<(), Error>) -> &'static str {
    match r {
        Ok(()) => "admitted",
        Err(e) => e.code(),
    }
}

fn proof_json(name: &str, description: &str, p: &OverdraftProof) -> Json {
    let expected = match p.verify() {
        Ok(o) => json!({"code": "ok", "total_uj": o.total_uj, "overdraft_uj": o.overdraft_uj}),
        Err(e) => json!({"code": e.code()}),
    };
    json!({"name": name, "description": description, "proof": hex::encode(p.to_bytes()), "expected": expected})
}

/// The signed statements the vectors present: A's and B's settlements,
/// and each kind the channel must refuse.
struct Statements {
    /// The channel grant.
    g: SignedGrant,
    /// Another grant of the same issuer.
    other: SignedGrant,
    a0: SignedStatement,
    b0: SignedStatement,
    a1: SignedStatement,
    b1: SignedStatement,
    /// A's seq-1 signature under a claim of 900 µJ at seq 2.
    forged: SignedStatement,
    stale_higher: SignedStatement,
    regressing: SignedStatement,
    wrong_grant: SignedStatement,
    non_member: SignedStatement,
}

fn statements(k: &Keys) -> Result<Statements, Error> {
    let g = grant(k, 0x21)?;
    let other = grant(k, 0x22)?;
    let a1 = st(&k.a, &g, 600, 1)?;
    Ok(Statements {
        a0: st(&k.a, &g, 300, 0)?,
        b0: st(&k.b, &g, 200, 0)?,
        b1: st(&k.b, &g, 600, 1)?,
        forged: a1.with_claim_for_tests(900, 2),
        stale_higher: st(&k.a, &g, 700, 1)?,
        regressing: st(&k.a, &g, 500, 2)?,
        wrong_grant: st(&k.a, &other, 900, 2)?,
        non_member: st(&k.mallory, &g, 50, 0)?,
        a1,
        g,
        other,
    })
}

/// The sequence admitted in order by one channel among A and B (§4.5):
/// each step with its outcome and the ledger total after it. Returns the
/// steps and the channel they leave behind.
fn sequence(k: &Keys, s: &Statements) -> Result<(Vec<Json>, Channel), Error> {
    let sequence: Vec<(&str, &str, &SignedStatement)> = vec![
        ("a0", "A settles 300 µJ at seq 0", &s.a0),
        ("b0", "B settles 200 µJ at seq 0", &s.b0),
        ("a1", "A settles 600 µJ at seq 1", &s.a1),
        ("b1", "B settles 600 µJ at seq 1: the channel is 200 µJ past its budget", &s.b1),
        ("forged", "A's seq-1 signature under a claim of 900 µJ at seq 2", &s.forged),
        ("stale-repeat", "A's seq-1 statement again", &s.a1),
        ("stale-higher", "A signs 700 µJ at seq 1 again (seq not increasing)", &s.stale_higher),
        ("regressing", "A signs 500 µJ at seq 2 (below its settled 600 µJ)", &s.regressing),
        ("wrong-grant", "A signs 900 µJ at seq 2 on another grant", &s.wrong_grant),
        ("non-member", "mallory, no member, signs 50 µJ", &s.non_member),
    ];
    let mut ch = Channel::open(s.g.clone(), [k.a.did(), k.b.did()])?;
    let mut steps = Vec::new();
    for (name, description, st) in &sequence {
        let outcome = code(ch.admit(st));
        steps.push(json!({
            "name": name,
            "description": description,
            "statement": hex::encode(st.to_bytes()),
            "claim": st.statement(),
            "expected": outcome,
            "ledger_total_uj": ch.ledger().total_uj,
        }));
    }
    Ok((steps, ch))
}

/// The channel's own overdraft proof, then the proofs a verifier must
/// refuse (forged, duplicated point, wrong grant, non-member, within
/// budget, grant swapped).
fn proofs(s: &Statements, proof: &OverdraftProof, members: &[Did]) -> Vec<Json> {
    let bad =
        |statements: Vec<SignedStatement>| OverdraftProof { grant: s.g.clone(), members: members.to_vec(), statements };
    let mut tampered_grant = proof.clone();
    tampered_grant.grant = s.other.clone();
    vec![
        proof_json("overdraft-a1-b1", "A's 600 µJ and B's 600 µJ against 1000 µJ: 200 µJ over", proof),
        proof_json(
            "forged-statement",
            "B's statement replaced by a forged one",
            &bad(vec![s.a1.clone(), s.forged.clone()]),
        ),
        proof_json(
            "duplicated-point",
            "A's two statements counted as two points",
            &bad(vec![s.a0.clone(), s.a1.clone()]),
        ),
        proof_json(
            "wrong-grant-statement",
            "a statement on another grant",
            &bad(vec![s.a1.clone(), s.wrong_grant.clone()]),
        ),
        proof_json(
            "non-member-statement",
            "a statement from a point not listed",
            &bad(vec![s.a1.clone(), s.non_member.clone()]),
        ),
        proof_json("within-budget", "A's 300 µJ and B's 200 µJ: no overdraft", &bad(vec![s.a0.clone(), s.b0.clone()])),
        proof_json("grant-swapped", "the proof names another grant than its statements", &tampered_grant),
    ]
}

/// The vectors as JSON.
pub fn generate() -> Result<Json, Error> {
    let k = keys()?;
    let s = statements(&k)?;
    let (steps, ch) = sequence(&k, &s)?;
    let ledger = ch.ledger();
    let proof =
        ch.overdraft().ok_or(Error::OverdraftUnproven { total_uj: ledger.total_uj, budget_uj: ledger.budget_uj })?;
    let members = vec![k.a.did(), k.b.did()];
    let proofs = proofs(&s, &proof, &members);
    let g = &s.g;
    Ok(json!({
        "description": "JCP v0.3 §4.5 receipt-settled budget channel vectors (C17). Statements are the hex of a SignedStatement {statement: {grant_id, point, spent_uj, seq}, sig} (canonical det-CBOR, Ed25519 by point over the statement's canonical bytes). The sequence is admitted in order by a channel among points A and B on the grant; each step's expected outcome is `admitted` or the refusal code, and a refusal changes nothing. Proofs are the hex of an OverdraftProof {jcp_overdraft: \"channel/1\", grant, members, statements}; expected `ok` with the recomputed overdraft, or the refusal code.",
        "generator": "cargo run -p jcp --features vectors --bin gen-channel-vectors",
        "budget_uj": BUDGET_UJ,
        "grant": hex::encode(g.to_bytes()),
        "grant_id": g.id(),
        "keys": [
            {"name": "issuer", "seed_byte": 1, "did": k.issuer.did()},
            {"name": "holder", "seed_byte": 2, "did": k.holder.did()},
            {"name": "point-a", "seed_byte": 0x31, "did": k.a.did()},
            {"name": "point-b", "seed_byte": 0x32, "did": k.b.did()},
            {"name": "mallory", "seed_byte": 5, "did": k.mallory.did()},
        ],
        "members": members,
        "sequence": steps,
        "ledger": ledger,
        "proofs": proofs,
    }))
}

/// The vectors as the file's text (pretty JSON and a final newline).
pub fn generate_text() -> Result<String, Error> {
    Ok(crate::vectors::to_text(&generate()?))
}
