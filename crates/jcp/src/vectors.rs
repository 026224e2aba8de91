//! The project's published conformance vectors (`conformance/jcp/v1/core.json`):
//! grants, chains, revocations and decision scenarios built from fixed seed
//! keys and nonces, so every byte is reproducible. Written by
//! `cargo run -p jcp --features vectors --bin gen-vectors`, replayed from disk by
//! `tests/vectors_replay.rs`, which also fails if regenerating changes a byte.

use serde_json::{json, Value as Json};

use crate::cbor::{ContentId, Value};
use crate::decision::{Cost, Gate, Request};
use crate::energy::{Energy, Provenance};
use crate::flow::Label;
use crate::frame::{Frame, FrameKind, Trust};
use crate::grant::{attenuate, Attenuation, Capability, Caveat, Funds, Grant, SignedGrant};
use crate::identity::Keypair;
use crate::revocation::{Revocation, SignedRevocation};
use crate::Error;

/// Where the vectors live, relative to the repository root.
pub const PATH: &str = "conformance/jcp/v1/core.json";

/// The fixed clock of every scenario.
pub const NOW: u64 = 1_700_000_000;

fn key(n: u8) -> Result<Keypair, Error> {
    Ok(Keypair::from_seed([n; 32])?)
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

/// The scenario's actors (seed = 32 copies of the byte in the name).
struct Keys {
    issuer: Keypair,
    agent: Keypair,
    worker: Keypair,
    sibling: Keypair,
    mallory: Keypair,
}

fn keys() -> Result<Keys, Error> {
    Ok(Keys { issuer: key(1)?, agent: key(2)?, worker: key(3)?, sibling: key(4)?, mallory: key(5)? })
}

/// The grants every scenario decides against (§4, §4.1, §4.8, §4.9) and the
/// revocation admitted halfway (§4.3).
struct Grants {
    /// The issuer's root grant to the agent: priced, capped per call, depth 2.
    root: SignedGrant,
    /// The agent's attenuation to the worker: read only, 400 µJ.
    child: SignedGrant,
    /// The agent's attenuation to the sibling: 900 µJ, sharing the root's budget.
    sibling: SignedGrant,
    /// A plain, unpriced, never-expiring grant of 50 µJ.
    plain: SignedGrant,
    /// The agent's revocation of `child`.
    revocation: SignedRevocation,
}

fn grants(k: &Keys) -> Result<Grants, Error> {
    let resource = ContentId::of(&Value::text("jcp-console/vectors/search-tool"));
    let root = Grant {
        issuer: k.issuer.did(),
        subject: k.agent.did(),
        capability: Capability { resource, actions: vec!["read".into(), "write".into()] },
        budget_uj: 1_000,
        budget_funds: Some(Funds { currency: "USD".into(), minor: 500 }),
        caveats: vec![Caveat::MaxCostUj(600)],
        expiry: NOW + 3_600,
        parent: None,
        delegate_depth: Some(2),
        nonce: [0x11; 16],
    }
    .sign(&k.issuer)?;
    let child = attenuate(
        &root,
        &k.agent,
        Attenuation {
            subject: Some(k.worker.did()),
            actions: Some(vec!["read".into()]),
            budget_uj: Some(400),
            nonce: Some([0x22; 16]),
            ..Attenuation::default()
        },
    )?;
    let sibling = attenuate(
        &root,
        &k.agent,
        Attenuation {
            subject: Some(k.sibling.did()),
            budget_uj: Some(900),
            nonce: Some([0x33; 16]),
            ..Attenuation::default()
        },
    )?;
    let plain = Grant {
        issuer: k.issuer.did(),
        subject: k.agent.did(),
        capability: Capability { resource, actions: vec!["read".into()] },
        budget_uj: 50,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [0x44; 16],
    }
    .sign(&k.issuer)?;
    let revocation = Revocation::issue(&child, &k.agent, Some([0x55; 16]))?;
    Ok(Grants { root, child, sibling, plain, revocation })
}

fn grants_json(g: &Grants) -> Vec<Json> {
    let named = [("root", &g.root), ("child", &g.child), ("sibling", &g.sibling), ("plain", &g.plain)];
    named
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
        .collect()
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

impl<'a> Step<'a> {
    /// A control frame at [`NOW`] costing 1 µJ, unpriced, with no flow label.
    fn new(name: &'a str, chain: Vec<&'a SignedGrant>, caller: &'a Keypair, action: &'a str) -> Self {
        Self { name, chain, caller, action, trust: Trust::Control, cost_uj: 1, money: None, now: NOW, flow: None }
    }
}

/// The scenario's steps before the revocation, in order against one gate:
/// a plain grant's allow and denials (§7), then chains — priced, sharing the
/// root's budget among siblings, capped by an inherited caveat, out of
/// money, in the wrong currency, expired, a leaf alone, a splice (§4.2,
/// §4.8, §4.9).
fn steps<'a>(k: &'a Keys, g: &'a Grants) -> Vec<Step<'a>> {
    let (plain, root, child, sibling) = (&g.plain, &g.root, &g.child, &g.sibling);
    vec![
        Step { cost_uj: 30, ..Step::new("plain-allow", vec![plain], &k.agent, "read") },
        Step { cost_uj: 21, ..Step::new("plain-budget-exceeded", vec![plain], &k.agent, "read") },
        Step { trust: Trust::Data, ..Step::new("plain-data-frame", vec![plain], &k.agent, "read") },
        Step::new("plain-wrong-subject", vec![plain], &k.mallory, "read"),
        Step::new("plain-action-not-granted", vec![plain], &k.agent, "write"),
        Step {
            cost_uj: 300,
            money: Some(("USD", 200)),
            ..Step::new("chain-allow-priced", vec![root, child], &k.worker, "read")
        },
        Step {
            cost_uj: 600,
            money: Some(("USD", 10)),
            ..Step::new("sibling-within-root", vec![root, sibling], &k.sibling, "write")
        },
        Step {
            cost_uj: 200,
            money: Some(("USD", 10)),
            ..Step::new("sibling-shares-root-budget", vec![root, sibling], &k.sibling, "write")
        },
        Step { cost_uj: 601, ..Step::new("sibling-max-cost-caveat", vec![root, sibling], &k.sibling, "write") },
        Step { money: Some(("USD", 291)), ..Step::new("chain-funds-exceeded", vec![root, child], &k.worker, "read") },
        Step { money: Some(("EUR", 1)), ..Step::new("chain-currency-mismatch", vec![root, child], &k.worker, "read") },
        Step { now: NOW + 3_600, ..Step::new("chain-expired", vec![root, child], &k.worker, "read") },
        // §7: on a chain, expiry of every link comes before the leaf-level
        // checks — an expired chain presented by a stranger is `expired`.
        Step { now: NOW + 3_600, ..Step::new("chain-expired-before-caller", vec![root, child], &k.mallory, "read") },
        // §4.8 (docs/decisions.md): an unpriced action against a money
        // ceiling fails closed.
        Step::new("chain-unpriced-against-money-ceiling", vec![root, child], &k.worker, "read"),
        Step::new("leaf-alone-chain-broken", vec![child], &k.worker, "read"),
        Step::new("spliced-chain-broken", vec![plain, child], &k.worker, "read"),
    ]
}

/// The steps after the revocation of `child` is admitted (§4.3): the
/// child's subtree is dead, its sibling is not.
fn steps_after_revocation<'a>(k: &'a Keys, g: &'a Grants) -> Vec<Step<'a>> {
    vec![
        Step::new("child-revoked", vec![&g.root, &g.child], &k.worker, "read"),
        Step {
            money: Some(("USD", 1)),
            ..Step::new("sibling-unaffected-by-revocation", vec![&g.root, &g.sibling], &k.sibling, "write")
        },
    ]
}

/// Builds the whole vector document.
pub fn generate() -> Result<Json, Error> {
    let k = keys()?;
    let g = grants(&k)?;
    let mut gate = Gate::new();
    let decisions: Vec<Json> = steps(&k, &g).iter().map(|s| run_step(&mut gate, s)).collect();
    gate.admit_revocation(&g.revocation, &g.child)?;
    let revoked_steps: Vec<Json> = steps_after_revocation(&k, &g).iter().map(|s| run_step(&mut gate, s)).collect();

    Ok(json!({
        "description": "JCP v0.3 core vectors: seeded keys (seed = 32 copies of the byte), fixed nonces, canonical det-CBOR hex. Each scenario runs its steps in order against ONE fresh gate.",
        "generator": "cargo run -p jcp --features vectors --bin gen-vectors",
        "now": NOW,
        "keys": [
            {"name": "issuer", "seed_byte": 1, "did": k.issuer.did()},
            {"name": "agent", "seed_byte": 2, "did": k.agent.did()},
            {"name": "worker", "seed_byte": 3, "did": k.worker.did()},
            {"name": "sibling", "seed_byte": 4, "did": k.sibling.did()},
            {"name": "mallory", "seed_byte": 5, "did": k.mallory.did()},
        ],
        "grants": grants_json(&g),
        "revocations": [{
            "name": "child-by-agent",
            "id": g.revocation.id(),
            "signed_bytes": hex::encode(g.revocation.to_bytes()),
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
    if let Some(dir) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("{bin}: creating {}: {e}", dir.display());
            return std::process::ExitCode::from(2);
        }
    }
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
