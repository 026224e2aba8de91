//! The published standing-grant vectors (`conformance/jcp/v1/standing.json`,
//! C20): a standing grant and its mint policy built from fixed seed keys and
//! nonces, a sequence of firings (each with the ledger before and after, the
//! minted child or the refusal code), and every policy refusal. Written by
//! `cargo run -p jcp --features vectors --bin gen-standing-vectors`, replayed from disk by
//! `tests/c20_standing_vectors.rs`, which fails if regenerating changes a byte.

use serde_json::{json, Value as Json};

use super::{verify_policy, EventClass, FiringRequest, MintLedger, MintPolicy, SignedMintPolicy};
use crate::cbor::{ContentId, Value};
use crate::error::Error;
use crate::grant::{Capability, Grant, SignedGrant};
use crate::identity::Keypair;

/// Where the vectors live, relative to the repository root.
pub const PATH: &str = "conformance/jcp/v1/standing.json";

/// The fixed clock of every firing.
pub const NOW: u64 = 1_700_000_000;

/// The standing grant's budget.
pub const BUDGET_UJ: u64 = 1_000;

/// The fixed keys, grant and policy of the vectors (also the fuzz targets'
/// fixture).
#[derive(Debug)]
pub struct Fixture {
    /// Issues and holds the standing grant; signs the policy and every child.
    pub issuer: Keypair,
    /// Receives the children.
    pub worker: Keypair,
    /// Tries what it may not.
    pub mallory: Keypair,
    /// The standing grant (issuer → issuer).
    pub grant: SignedGrant,
    /// The permitted event class.
    pub class: EventClass,
    /// Another source's class.
    pub other_class: EventClass,
    /// 300 µJ a firing, at most 3 firings.
    pub policy: SignedMintPolicy,
}

fn grant(issuer: &Keypair, subject: &Keypair, depth: Option<u64>, nonce: u8) -> Result<SignedGrant, Error> {
    Grant {
        issuer: issuer.did(),
        subject: subject.did(),
        capability: Capability {
            resource: ContentId::of(&Value::text("jcp-console/vectors/webhook-triage")),
            actions: vec!["comment".into(), "triage".into()],
        },
        budget_uj: BUDGET_UJ,
        budget_funds: None,
        caveats: vec![],
        expiry: NOW + 86_400,
        parent: None,
        delegate_depth: depth,
        nonce: [nonce; 16],
    }
    .sign(issuer)
}

/// Builds the fixture.
pub fn fixture() -> Result<Fixture, Error> {
    let issuer = Keypair::from_seed([0x61; 32])?;
    let worker = Keypair::from_seed([0x62; 32])?;
    let mallory = Keypair::from_seed([0x63; 32])?;
    let grant = grant(&issuer, &issuer, Some(1), 0x71)?;
    let class = EventClass { source: "github.com/example/repo".into(), kind: "issue.opened".into() };
    let other_class = EventClass { source: "github.com/example/other".into(), kind: "issue.opened".into() };
    let policy = MintPolicy::issue(&grant, &issuer, class.id(), 300, 3, Some([0x72; 16]))?;
    Ok(Fixture { issuer, worker, mallory, grant, class, other_class, policy })
}

/// One step of a firing sequence: its name, the policy it fires under (and
/// the ledger was opened for, unless it says otherwise), who fires it, the
/// event's class, the slice asked for, the nonce and the clock.
struct Step<'a> {
    name: &'a str,
    policy: &'a SignedMintPolicy,
    minter: &'a Keypair,
    class: &'a EventClass,
    budget_uj: Option<u64>,
    nonce: u8,
    now: u64,
}

/// Fires each step in turn on one ledger, recording the ledger before, what
/// was asked, and the outcome with the ledger after (equal to before on a
/// refusal).
fn sequence(fx: &Fixture, ledger: &mut MintLedger, steps: &[Step]) -> Vec<Json> {
    steps
        .iter()
        .map(|st| {
            let req = FiringRequest {
                event_class: st.class.id(),
                subject: fx.worker.did(),
                budget_uj: st.budget_uj,
                nonce: Some([st.nonce; 16]),
            };
            let before = hex::encode(ledger.to_bytes());
            let asked = json!({
                "event_class": req.event_class,
                "subject": req.subject,
                "budget_uj": req.budget_uj,
                "nonce": req.nonce.map(hex::encode),
                "now": st.now,
            });
            let expected = match ledger.fire(&fx.grant, st.policy, st.minter, &req, st.now) {
                Ok(child) => json!({"ok": {
                    "child": hex::encode(child.to_bytes()),
                    "child_id": child.id(),
                    "child_budget_uj": child.grant().budget_uj,
                }}),
                Err(e) => json!({"refused": e.code()}),
            };
            json!({
                "name": st.name,
                "grant": hex::encode(fx.grant.to_bytes()),
                "policy": hex::encode(st.policy.to_bytes()),
                "ledger_before": before,
                "request": asked,
                "expected": expected,
                "ledger_after": hex::encode(ledger.to_bytes()),
            })
        })
        .collect()
}

/// The firing sequences: the main policy (300 µJ × 3) to exhaustion of its
/// count, a wider one (400 µJ × 5) to exhaustion of the grant's budget, and
/// firings under a policy that is not this ledger's or grant's, or not
/// validly signed.
fn firings(fx: &Fixture) -> Result<Vec<Json>, Error> {
    let (p, m, c) = (&fx.policy, &fx.issuer, &fx.class);
    let step = |name, policy, budget_uj, nonce| Step { name, policy, minter: m, class: c, budget_uj, nonce, now: NOW };
    let mut out = sequence(
        fx,
        &mut MintLedger::open(p),
        &[
            step("first-firing", p, None, 0x81),
            step("second-firing-smaller-slice", p, Some(200), 0x82),
            Step { class: &fx.other_class, ..step("wrong-event-class", p, None, 0x83) },
            step("slice-above-per-firing", p, Some(301), 0x84),
            Step { minter: &fx.mallory, ..step("minter-is-not-the-holder", p, None, 0x85) },
            Step { now: NOW + 86_400, ..step("grant-expired", p, None, 0x86) },
            step("third-firing", p, None, 0x87),
            step("count-exhausted", p, None, 0x88),
        ],
    );
    let wide = MintPolicy::issue(&fx.grant, m, c.id(), 400, 5, Some([0x73; 16]))?;
    out.extend(sequence(
        fx,
        &mut MintLedger::open(&wide),
        &[
            step("budget-first", &wide, None, 0x91),
            step("budget-second", &wide, None, 0x92),
            step("cumulative-spend-past-the-grant", &wide, None, 0x93),
            step("budget-exactly-to-the-grant", &wide, Some(200), 0x94),
            step("budget-spent", &wide, Some(1), 0x95),
        ],
    ));
    let other = grant(m, m, Some(1), 0x74)?;
    let foreign = MintPolicy::issue(&other, m, c.id(), 300, 3, Some([0x75; 16]))?;
    let forged = p.policy().clone().sign(&fx.mallory);
    for st in [
        step("ledger-of-another-policy", &wide, None, 0xa1),
        step("policy-of-another-grant", &foreign, None, 0xa2),
        step("policy-signature-forged", &forged, None, 0xa3),
    ] {
        out.extend(sequence(fx, &mut MintLedger::open(p), &[st]));
    }
    Ok(out)
}

/// Policies presented to the verifier, valid and refused.
fn policies(fx: &Fixture) -> Result<Vec<Json>, Error> {
    let g = &fx.grant;
    let raw = |per_firing_uj: u64, max_firings: u64, nonce: u8| MintPolicy {
        grant_id: g.id(),
        issuer: fx.issuer.did(),
        event_class: fx.class.id(),
        per_firing_uj,
        max_firings,
        nonce: [nonce; 16],
    };
    let not_held = grant(&fx.issuer, &fx.worker, Some(1), 0x76)?;
    let leaf = grant(&fx.issuer, &fx.issuer, Some(0), 0x77)?;
    let mut by_mallory = raw(300, 3, 0xb3);
    by_mallory.issuer = fx.mallory.did();
    let mut unbound = raw(300, 3, 0xb4);
    unbound.grant_id = ContentId::of(&Value::text("another grant"));
    let mut for_not_held = raw(300, 3, 0xb5);
    for_not_held.grant_id = not_held.id();
    let mut for_leaf = raw(300, 3, 0xb6);
    for_leaf.grant_id = leaf.id();
    let cases: Vec<(&str, &SignedGrant, SignedMintPolicy)> = vec![
        ("valid", g, fx.policy.clone()),
        ("per-firing-equal-to-the-grant", g, raw(BUDGET_UJ, 1, 0xb0).sign(&fx.issuer)),
        ("per-firing-above-the-grant", g, raw(BUDGET_UJ + 1, 3, 0xb1).sign(&fx.issuer)),
        ("max-firings-zero", g, raw(300, 0, 0xb2).sign(&fx.issuer)),
        ("per-firing-zero", g, raw(0, 3, 0xb7).sign(&fx.issuer)),
        ("signed-by-a-non-issuer", g, by_mallory.sign(&fx.mallory)),
        ("issuer-named-but-another-key-signs", g, raw(300, 3, 0xb8).sign(&fx.mallory)),
        ("bound-to-another-grant", g, unbound.sign(&fx.issuer)),
        ("grant-not-held-by-its-issuer", &not_held, for_not_held.sign(&fx.issuer)),
        ("leaf-only-grant", &leaf, for_leaf.sign(&fx.issuer)),
    ];
    Ok(cases
        .into_iter()
        .map(|(name, grant, policy)| {
            let expected = match verify_policy(grant, &policy) {
                Ok(()) => json!({"ok": "verified"}),
                Err(e) => json!({"refused": e.code()}),
            };
            json!({
                "name": name,
                "grant": hex::encode(grant.to_bytes()),
                "policy": hex::encode(policy.to_bytes()),
                "policy_id": policy.id(),
                "expected": expected,
            })
        })
        .collect())
}

/// Builds the whole vector document.
pub fn generate() -> Result<Json, Error> {
    let fx = fixture()?;
    let keys: Vec<Json> =
        [("issuer", 0x61u8, &fx.issuer), ("worker", 0x62, &fx.worker), ("mallory", 0x63, &fx.mallory)]
            .iter()
            .map(|(name, seed, kp)| json!({"name": name, "seed": hex::encode([*seed; 32]), "did": kp.did()}))
            .collect();
    let classes: Vec<Json> = [("permitted", &fx.class), ("other", &fx.other_class)]
        .iter()
        .map(|(name, c)| json!({"name": name, "class": c, "canonical": hex::encode(c.to_value().encode()), "id": c.id()}))
        .collect();
    Ok(json!({
        "format": "jcp-conformance/standing/1",
        "spec": "JCP v0.3 §4.6 (C20)",
        "now": NOW,
        "keys": keys,
        "event_classes": classes,
        "standing_grant": {"id": fx.grant.id(), "signed_bytes": hex::encode(fx.grant.to_bytes())},
        "policies": policies(&fx)?,
        "firings": firings(&fx)?,
    }))
}

/// The vector document as written to disk (pretty JSON, trailing newline).
pub fn generate_text() -> Result<String, Error> {
    Ok(crate::vectors::to_text(&generate()?))
}
