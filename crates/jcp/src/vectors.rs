//! The project's published conformance vectors (`conformance/jcp/v1/core.json`):
//! grants, chains, revocations and decision scenarios built from fixed seed
//! keys and nonces, so every byte is reproducible. Written by
//! `cargo run -p jcp --bin gen-vectors`, replayed from disk by
//! `tests/vectors_replay.rs`, which also fails if regenerating changes a byte.

use serde_json::{json, Value as Json};

use crate::cbor::{ContentId, Value};
use crate::decision::{Cost, Gate, Request};
use crate::energy::{Energy, Provenance};
use crate::flow::Label;
use crate::frame::{Frame, FrameKind, Trust};
use crate::grant::{attenuate, Attenuation, Capability, Caveat, Funds, Grant, SignedGrant};
use crate::identity::Keypair;
use crate::revocation::Revocation;
use crate::Error;

/// Where the vectors live, relative to the repository root.
pub const PATH: &str = "conformance/jcp/v1/core.json";

/// The fixed clock of every scenario.
pub const NOW: u64 = 1_700_000_000;

fn key(n: u8) -> Result<Keypair, Error> {
    Ok(Keypair::from_seed([n; 32])?)
}

/// One step of a scenario: a decision request and its expected outcome.
struct Step<'a> {
    name: &'a str,
    chain: Vec<&'a SignedGrant>,
    caller: &'a Keypair,
    action: &'a str,
    trust: Trust,
    cost_uj: u64,
    money: Option<(&'a str, u64)>,
    now: u64,
    flow: Option<Label>,
}

fn frame(leaf: &SignedGrant, action: &str, trust: Trust) -> Frame {
    Frame {
        kind: FrameKind::ToolCall,
        trust,
        grant_id: leaf.id(),
        action: action.to_owned(),
        resource: leaf.grant().capability.resource,
        payload_hash: ContentId::of(&Value::text("payload")),
        model: None,
    }
}

fn label_json(l: Option<&Label>) -> Json {
    match l {
        None => Json::Null,
        Some(l) => json!(hex::encode(l.to_value().encode())),
    }
}

/// Builds the whole vector document.
pub fn generate() -> Result<Json, Error> {
    let issuer = key(1)?;
    let agent = key(2)?;
    let worker = key(3)?;
    let sibling = key(4)?;
    let mallory = key(5)?;
    let resource = ContentId::of(&Value::text("jcp-console/vectors/search-tool"));
    let root = Grant {
        issuer: issuer.did(),
        subject: agent.did(),
        capability: Capability { resource, actions: vec!["read".into(), "write".into()] },
        budget_uj: 1_000,
        budget_funds: Some(Funds { currency: "USD".into(), minor: 500 }),
        caveats: vec![Caveat::MaxCostUj(600)],
        expiry: NOW + 3_600,
        parent: None,
        delegate_depth: Some(2),
        nonce: [0x11; 16],
    }
    .sign(&issuer)?;
    let child = attenuate(
        &root,
        &agent,
        Attenuation {
            subject: Some(worker.did()),
            actions: Some(vec!["read".into()]),
            budget_uj: Some(400),
            nonce: Some([0x22; 16]),
            ..Attenuation::default()
        },
    )?;
    let child2 = attenuate(
        &root,
        &agent,
        Attenuation {
            subject: Some(sibling.did()),
            budget_uj: Some(900),
            nonce: Some([0x33; 16]),
            ..Attenuation::default()
        },
    )?;
    let plain = Grant {
        issuer: issuer.did(),
        subject: agent.did(),
        capability: Capability { resource, actions: vec!["read".into()] },
        budget_uj: 50,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [0x44; 16],
    }
    .sign(&issuer)?;
    let revocation = Revocation::issue(&child, &agent, Some([0x55; 16]))?;

    let grants = [("root", &root), ("child", &child), ("sibling", &child2), ("plain", &plain)];
    let grants_json: Vec<Json> = grants
        .iter()
        .map(|(name, g)| {
            json!({
                "name": name,
                "id": g.id(),
                "signed_bytes": hex::encode(g.to_bytes()),
                "grant_bytes": hex::encode(g.grant_bytes()),
                "signature_valid": g.verify_signature(),
            })
        })
        .collect();

    let steps = vec![
        Step {
            name: "plain-allow",
            chain: vec![&plain],
            caller: &agent,
            action: "read",
            trust: Trust::Control,
            cost_uj: 30,
            money: None,
            now: NOW,
            flow: None,
        },
        Step {
            name: "plain-budget-exceeded",
            chain: vec![&plain],
            caller: &agent,
            action: "read",
            trust: Trust::Control,
            cost_uj: 21,
            money: None,
            now: NOW,
            flow: None,
        },
        Step {
            name: "plain-data-frame",
            chain: vec![&plain],
            caller: &agent,
            action: "read",
            trust: Trust::Data,
            cost_uj: 1,
            money: None,
            now: NOW,
            flow: None,
        },
        Step {
            name: "plain-wrong-subject",
            chain: vec![&plain],
            caller: &mallory,
            action: "read",
            trust: Trust::Control,
            cost_uj: 1,
            money: None,
            now: NOW,
            flow: None,
        },
        Step {
            name: "plain-action-not-granted",
            chain: vec![&plain],
            caller: &agent,
            action: "write",
            trust: Trust::Control,
            cost_uj: 1,
            money: None,
            now: NOW,
            flow: None,
        },
        Step {
            name: "chain-allow-priced",
            chain: vec![&root, &child],
            caller: &worker,
            action: "read",
            trust: Trust::Control,
            cost_uj: 300,
            money: Some(("USD", 200)),
            now: NOW,
            flow: None,
        },
        Step {
            name: "sibling-within-root",
            chain: vec![&root, &child2],
            caller: &sibling,
            action: "write",
            trust: Trust::Control,
            cost_uj: 600,
            money: Some(("USD", 10)),
            now: NOW,
            flow: None,
        },
        Step {
            name: "sibling-shares-root-budget",
            chain: vec![&root, &child2],
            caller: &sibling,
            action: "write",
            trust: Trust::Control,
            cost_uj: 200,
            money: Some(("USD", 10)),
            now: NOW,
            flow: None,
        },
        Step {
            name: "sibling-max-cost-caveat",
            chain: vec![&root, &child2],
            caller: &sibling,
            action: "write",
            trust: Trust::Control,
            cost_uj: 601,
            money: None,
            now: NOW,
            flow: None,
        },
        Step {
            name: "chain-funds-exceeded",
            chain: vec![&root, &child],
            caller: &worker,
            action: "read",
            trust: Trust::Control,
            cost_uj: 1,
            money: Some(("USD", 291)),
            now: NOW,
            flow: None,
        },
        Step {
            name: "chain-currency-mismatch",
            chain: vec![&root, &child],
            caller: &worker,
            action: "read",
            trust: Trust::Control,
            cost_uj: 1,
            money: Some(("EUR", 1)),
            now: NOW,
            flow: None,
        },
        Step {
            name: "chain-expired",
            chain: vec![&root, &child],
            caller: &worker,
            action: "read",
            trust: Trust::Control,
            cost_uj: 1,
            money: None,
            now: NOW + 3_600,
            flow: None,
        },
        Step {
            name: "leaf-alone-chain-broken",
            chain: vec![&child],
            caller: &worker,
            action: "read",
            trust: Trust::Control,
            cost_uj: 1,
            money: None,
            now: NOW,
            flow: None,
        },
        Step {
            name: "spliced-chain-broken",
            chain: vec![&plain, &child],
            caller: &worker,
            action: "read",
            trust: Trust::Control,
            cost_uj: 1,
            money: None,
            now: NOW,
            flow: None,
        },
    ];
    let mut gate = Gate::new();
    let mut decisions = Vec::new();
    for s in &steps {
        decisions.push(run_step(&mut gate, s));
    }
    // After the revocation is admitted, the child's subtree is dead.
    gate.admit_revocation(&revocation, &child)?;
    let after = Step {
        name: "child-revoked",
        chain: vec![&root, &child],
        caller: &worker,
        action: "read",
        trust: Trust::Control,
        cost_uj: 1,
        money: None,
        now: NOW,
        flow: None,
    };
    let mut revoked_steps = vec![run_step(&mut gate, &after)];
    let sib = Step {
        name: "sibling-unaffected-by-revocation",
        chain: vec![&root, &child2],
        caller: &sibling,
        action: "write",
        trust: Trust::Control,
        cost_uj: 1,
        money: None,
        now: NOW,
        flow: None,
    };
    revoked_steps.push(run_step(&mut gate, &sib));

    Ok(json!({
        "description": "JCP v0.3 core vectors: seeded keys (seed = 32 copies of the byte), fixed nonces, canonical det-CBOR hex. Each scenario runs its steps in order against ONE fresh gate.",
        "generator": "cargo run -p jcp --bin gen-vectors",
        "now": NOW,
        "keys": [
            {"name": "issuer", "seed_byte": 1, "did": issuer.did()},
            {"name": "agent", "seed_byte": 2, "did": agent.did()},
            {"name": "worker", "seed_byte": 3, "did": worker.did()},
            {"name": "sibling", "seed_byte": 4, "did": sibling.did()},
            {"name": "mallory", "seed_byte": 5, "did": mallory.did()},
        ],
        "grants": grants_json,
        "revocations": [{
            "name": "child-by-agent",
            "id": revocation.id(),
            "signed_bytes": hex::encode(revocation.to_bytes()),
            "grant": "child",
        }],
        "scenarios": [{
            "name": "budgets-ceilings-chains-revocation",
            "steps": decisions,
            "then_admit_revocation": "child-by-agent",
            "steps_after": revoked_steps,
        }],
    }))
}

fn run_step(gate: &mut Gate, s: &Step<'_>) -> Json {
    let chain: Vec<SignedGrant> = s.chain.iter().map(|g| (*g).clone()).collect();
    let Some(leaf) = chain.last() else { return Json::Null };
    let f = frame(leaf, s.action, s.trust);
    let cost = Cost {
        energy: Energy::new(s.cost_uj, Provenance::HwShunt),
        money: s.money.map(|(c, m)| Funds { currency: c.to_owned(), minor: m }),
    };
    let caller = s.caller.did();
    let d = gate.decide(&Request {
        frame: &f,
        chain: &chain,
        caller: &caller,
        cost: &cost,
        now: s.now,
        flow: s.flow.as_ref(),
    });
    json!({
        "name": s.name,
        "chain": chain.iter().map(SignedGrant::id).collect::<Vec<_>>(),
        "caller": caller,
        "frame_bytes": hex::encode(f.to_value().encode()),
        "cost_uj": s.cost_uj,
        "provenance": "HwShunt",
        "money": s.money.map(|(c, m)| json!({"currency": c, "minor": m})),
        "now": s.now,
        "flow": label_json(s.flow.as_ref()),
        "expected": {
            "verdict": if d.is_allow() { "allow" } else { "deny" },
            "reason": d.reason().map(crate::decision::Reason::as_str),
            "debited_uj": d.debited_uj,
            "budget_uj": d.budget_uj,
            "budget_remaining_uj": d.budget_remaining_uj,
        },
    })
}

/// The vector document as the exact text written to disk.
pub fn generate_text() -> Result<String, Error> {
    Ok(to_text(&generate()?))
}

/// A vector document as the exact text written to disk: pretty JSON and a
/// trailing newline.
pub fn to_text(v: &Json) -> String {
    // `{:#}` is serde_json's pretty printer (two-space indent), infallible on a `Value`.
    format!("{v:#}\n")
}

/// The body of a `gen-*-vectors` bin: generates the text and writes it to
/// `rel` under the repository root (`root`), reporting as `bin`.
pub fn write_published(
    bin: &str,
    root: &std::path::Path,
    rel: &str,
    text: Result<String, Error>,
) -> std::process::ExitCode {
    let path = root.join(rel);
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{bin}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("{bin}: writing {}: {e}", path.display());
        return std::process::ExitCode::from(2);
    }
    println!("wrote {}", path.display());
    std::process::ExitCode::SUCCESS
}
