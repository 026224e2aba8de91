//! The published steering vectors (`conformance/jcp/v1/steering.json`, C21):
//! valid and invalid runs built from fixed seed keys and nonces, each as the
//! hex of its `*.jcprun` file with the verdict and the findings (record index
//! and code) a conforming verifier reports. Written by
//! `cargo run -p jcp --features vectors --bin gen-steering-vectors`, replayed from disk by
//! `tests/c21_steering_vectors.rs`, which fails if regenerating changes a byte.

use serde_json::{json, Value as Json};

use super::{Amendment, Checkpoint, Record, Run, SignedAmendment, SignedCheckpoint, Spent};
use crate::cbor::{ContentId, Value};
use crate::energy::Provenance;
use crate::error::Error;
use crate::grant::{Capability, Grant, SignedGrant};
use crate::identity::Keypair;

/// Where the vectors live, relative to the repository root.
pub const PATH: &str = "conformance/jcp/v1/steering.json";

/// The fixed clock origin of every run.
pub const NOW: u64 = 1_700_000_000;

/// The run grant's budget in every vector.
pub const BUDGET_UJ: u64 = 1_000;

struct Keys {
    issuer: Keypair,
    agent: Keypair,
    mallory: Keypair,
}

fn keys() -> Result<Keys, Error> {
    Ok(Keys {
        issuer: Keypair::from_seed([1; 32])?,
        agent: Keypair::from_seed([2; 32])?,
        mallory: Keypair::from_seed([5; 32])?,
    })
}

fn grant(k: &Keys, budget_uj: u64, nonce: u8) -> Result<SignedGrant, Error> {
    Grant {
        issuer: k.issuer.did(),
        subject: k.agent.did(),
        capability: Capability {
            resource: ContentId::of(&Value::text("jcp-console/vectors/long-run")),
            actions: vec!["run".into()],
        },
        budget_uj,
        budget_funds: None,
        caveats: vec![],
        expiry: NOW + 3_600,
        parent: None,
        delegate_depth: None,
        nonce: [nonce; 16],
    }
    .sign(&k.issuer)
}

/// A raw checkpoint (no rule checked: the verifier judges it).
fn cp(
    author: &Keypair,
    g: &SignedGrant,
    seq: u64,
    prev: Option<&SignedCheckpoint>,
    spent: Option<u64>,
) -> Result<SignedCheckpoint, Error> {
    Checkpoint {
        grant_id: g.id(),
        agent: author.did(),
        seq,
        prev: prev.map(SignedCheckpoint::id),
        state: ContentId::of(&Value::text(format!("state {seq}"))),
        at: NOW + 60 * seq,
        spent: spent.map(|uj| Spent { uj, provenance: Provenance::HwShunt }),
        nonce: [0x40 + u8::try_from(seq % 64).unwrap_or(0); 16],
    }
    .sign(author)
}

/// A raw amendment naming `cont` (no rule checked).
fn am(signer: &Keypair, g: &SignedGrant, at: &SignedCheckpoint, budget_uj: u64, cont: &SignedGrant) -> SignedAmendment {
    Amendment {
        grant_id: g.id(),
        checkpoint: at.id(),
        amended_by: signer.did(),
        budget_uj,
        expiry: None,
        instructions: Some(ContentId::of(&Value::text("instructions v2"))),
        continuation: cont.id(),
        nonce: [0x77; 16],
    }
    .sign(signer)
}

struct Case {
    name: &'static str,
    description: &'static str,
    records: Vec<Record>,
}

use Record::{Amendment as A, Checkpoint as C, Grant as G};

/// The run every case starts from: its grant, two checkpoints (100 then
/// 300 µJ declared) and the grants the cases steer into.
struct Base {
    k: Keys,
    g: SignedGrant,
    c0: SignedCheckpoint,
    c1: SignedCheckpoint,
    cont500: SignedGrant,
    cont1000: SignedGrant,
}

fn base() -> Result<Base, Error> {
    let k = keys()?;
    let g = grant(&k, BUDGET_UJ, 0x11)?;
    let cont500 = grant(&k, 500, 0x12)?;
    let cont1000 = grant(&k, 1_000, 0x13)?;
    let c0 = cp(&k.agent, &g, 0, None, Some(100))?;
    let c1 = cp(&k.agent, &g, 1, Some(&c0), Some(300))?;
    Ok(Base { k, g, c0, c1, cont500, cont1000 })
}

/// Every case, valid ones first, in the order the vectors list them.
fn cases() -> Result<Vec<Case>, Error> {
    let b = base()?;
    let mut out = valid_cases(&b)?;
    out.extend(budget_cases(&b)?);
    out.extend(authority_cases(&b));
    out.extend(spend_cases(&b)?);
    out.extend(checkpoint_cases(&b)?);
    out.extend(continuation_cases(&b)?);
    Ok(out)
}

/// Valid runs: steered within the remainder, exactly to it, and at a
/// checkpoint that stated no spend (the issued budget is the ceiling).
fn valid_cases(b: &Base) -> Result<Vec<Case>, Error> {
    let Base { k, g, c0, c1, cont500, cont1000 } = b;
    let mut out = Vec::new();
    // Valid: steered at a checkpoint that stated 300 µJ of 1000 → remainder
    // 700; the amendment sets 500; the run continues under a 500 µJ grant.
    let c2 = cp(&k.agent, cont500, 2, Some(c1), Some(450))?;
    out.push(Case {
        name: "valid-steered-within-remainder",
        description: "spent 300 of 1000, amended to 500 (remainder 700), continuation of 500, then 450 spent run-wide (150 under the continuation)",
        records: vec![
            G(g.clone()),
            C(c0.clone()),
            C(c1.clone()),
            A(am(&k.issuer, g, c1, 500, cont500)),
            G(cont500.clone()),
            C(c2),
        ],
    });
    // Valid: amended exactly to the remainder (the boundary).
    let cont700 = grant(k, 700, 0x15)?;
    out.push(Case {
        name: "valid-amended-to-exactly-the-remainder",
        description: "spent 300 of 1000, amended to exactly 700",
        records: vec![G(g.clone()), C(c0.clone()), C(c1.clone()), A(am(&k.issuer, g, c1, 700, &cont700)), G(cont700)],
    });
    // Valid: a checkpoint that states no spend may be amended up to the
    // issued budget (the weaker rule); the remainder is reported unknown.
    let q0 = cp(&k.agent, g, 0, None, None)?;
    let q1 = cp(&k.agent, cont1000, 1, Some(&q0), Some(200))?;
    out.push(Case {
        name: "valid-unstated-spend-ceiling-is-the-issued-budget",
        description: "no spend stated; amended to the issued 1000; afterwards the remainder under the continuation is unknown (base_unknown)",
        records: vec![G(g.clone()), C(q0.clone()), A(am(&k.issuer, g, &q0, 1_000, cont1000)), G(cont1000.clone()), C(q1)],
    });
    Ok(out)
}

/// Amendments above what the grant has left, or above what it was issued.
fn budget_cases(b: &Base) -> Result<Vec<Case>, Error> {
    let Base { k, g, c0, c1, .. } = b;
    let mut out = Vec::new();
    let cont800 = grant(k, 800, 0x16)?;
    out.push(Case {
        name: "above-remainder",
        description: "spent 300 of 1000, amended to 800 (> remainder 700): refused; the continuation is then unnamed",
        records: vec![G(g.clone()), C(c0.clone()), C(c1.clone()), A(am(&k.issuer, g, c1, 800, &cont800)), G(cont800)],
    });
    let cont1200 = grant(k, 1_200, 0x17)?;
    out.push(Case {
        name: "widening-above-issued-budget",
        description: "amended to 1200 of an issued 1000",
        records: vec![G(g.clone()), C(c0.clone()), A(am(&k.issuer, g, c0, 1_200, &cont1200)), G(cont1200)],
    });
    Ok(out)
}

/// Amendments by the wrong principal, or bound to the wrong checkpoint.
fn authority_cases(b: &Base) -> Vec<Case> {
    let Base { k, g, c0, c1, cont500, .. } = b;
    vec![
        Case {
            name: "agent-steers-itself",
            description: "the agent signs an amendment of its own run",
            records: vec![G(g.clone()), C(c0.clone()), A(am(&k.agent, g, c0, 100, cont500))],
        },
        Case {
            name: "non-issuer-amends",
            description: "a third principal signs an amendment",
            records: vec![G(g.clone()), C(c0.clone()), A(am(&k.mallory, g, c0, 100, cont500))],
        },
        Case {
            name: "amendment-bound-to-another-checkpoint",
            description: "the amendment cites checkpoint 0 while checkpoint 1 (spent 300) is the run's latest",
            records: vec![G(g.clone()), C(c0.clone()), C(c1.clone()), A(am(&k.issuer, g, c0, 500, cont500))],
        },
    ]
}

/// Declared spend that decreases, or goes quiet after it was stated.
fn spend_cases(b: &Base) -> Result<Vec<Case>, Error> {
    let Base { k, g, c0, .. } = b;
    Ok(vec![
        Case {
            name: "declared-spend-decreases",
            description: "checkpoint 1 declares 50 after checkpoint 0 declared 100",
            records: vec![G(g.clone()), C(c0.clone()), C(cp(&k.agent, g, 1, Some(c0), Some(50))?)],
        },
        Case {
            name: "declared-spend-omitted-after-stated",
            description: "checkpoint 1 goes quiet after checkpoint 0 declared 100",
            records: vec![G(g.clone()), C(c0.clone()), C(cp(&k.agent, g, 1, Some(c0), None)?)],
        },
    ])
}

/// Checkpoints by the wrong author, of another run, tampered, or out of
/// sequence.
fn checkpoint_cases(b: &Base) -> Result<Vec<Case>, Error> {
    let Base { k, g, c0, c1, .. } = b;
    let other = grant(k, BUDGET_UJ, 0x14)?;
    let mut out = Vec::new();
    out.push(Case {
        name: "checkpoint-by-non-agent",
        description: "a third principal signs a checkpoint of the agent's run",
        records: vec![G(g.clone()), C(cp(&k.mallory, g, 0, None, Some(10))?)],
    });
    out.push(Case {
        name: "spliced-checkpoint-from-another-run",
        description: "a validly signed checkpoint of another grant is spliced in",
        records: vec![G(g.clone()), C(c0.clone()), C(cp(&k.agent, &other, 1, Some(c0), Some(300))?)],
    });
    let mut tampered = c1.to_bytes();
    if let Some(b) = tampered.last_mut() {
        *b ^= 0x01;
    }
    out.push(Case {
        name: "tampered-checkpoint-signature",
        description: "one bit of checkpoint 1's signature flipped",
        records: vec![G(g.clone()), C(c0.clone()), C(SignedCheckpoint::from_bytes(&tampered)?)],
    });
    out.push(Case {
        name: "checkpoint-sequence-gap",
        description: "checkpoint seq 2 follows seq 0",
        records: vec![G(g.clone()), C(c0.clone()), C(cp(&k.agent, g, 2, Some(c0), Some(300))?)],
    });
    Ok(out)
}

/// Continuations wider than their amendment, missing, or bypassed.
fn continuation_cases(b: &Base) -> Result<Vec<Case>, Error> {
    let Base { k, g, c0, c1, cont500, .. } = b;
    let mut out = Vec::new();
    let cont600 = grant(k, 600, 0x18)?;
    out.push(Case {
        name: "continuation-wider-than-the-amendment",
        description: "the amendment sets 500 but names a continuation of 600",
        records: vec![G(g.clone()), C(c0.clone()), C(c1.clone()), A(am(&k.issuer, g, c1, 500, &cont600)), G(cont600)],
    });
    out.push(Case {
        name: "continuation-missing",
        description:
            "an amendment is followed by a checkpoint, not its continuation: the steered grant stays superseded",
        records: vec![
            G(g.clone()),
            C(c0.clone()),
            C(c1.clone()),
            A(am(&k.issuer, g, c1, 500, cont500)),
            C(cp(&k.agent, g, 2, Some(c1), Some(400))?),
        ],
    });
    out.push(Case {
        name: "steered-grant-used-after-continuation",
        description: "after the continuation, a checkpoint still cites the steered grant",
        records: vec![
            G(g.clone()),
            C(c0.clone()),
            C(c1.clone()),
            A(am(&k.issuer, g, c1, 500, cont500)),
            G(cont500.clone()),
            C(cp(&k.agent, g, 2, Some(c1), Some(400))?),
        ],
    });
    Ok(out)
}

/// Builds the whole vector document.
pub fn generate() -> Result<Json, Error> {
    let k = keys()?;
    let mut runs = Vec::new();
    for c in cases()? {
        let run = Run::from_records(c.records)?;
        let report = run.verify()?;
        runs.push(json!({
            "name": c.name,
            "description": c.description,
            "run_file": hex::encode(run.to_bytes()),
            "expected": {
                "clean": report.clean,
                "findings": report.findings.iter().map(|f| json!({"index": f.index, "kind": f.kind, "id": f.id, "code": f.code, "admitted": f.admitted})).collect::<Vec<_>>(),
                "active_grant": report.active_grant,
                "remainder": report.remainder,
            },
        }));
    }
    Ok(json!({
        "description": "JCP v0.3 §4.7 steering vectors (C21): each run is the hex of a jcp-run/1 file (RFC 8742 CBOR sequence: header, then records). A conforming verifier reports exactly the findings listed (record index after the header, reason code) and the verdict.",
        "generator": "cargo run -p jcp --features vectors --bin gen-steering-vectors",
        "budget_uj": BUDGET_UJ,
        "keys": [
            {"name": "issuer", "seed_byte": 1, "did": k.issuer.did()},
            {"name": "agent", "seed_byte": 2, "did": k.agent.did()},
            {"name": "mallory", "seed_byte": 5, "did": k.mallory.did()},
        ],
        "runs": runs,
    }))
}

/// The vector document as the exact text written to disk.
pub fn generate_text() -> Result<String, Error> {
    Ok(crate::vectors::to_text(&generate()?))
}
