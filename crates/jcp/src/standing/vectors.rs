//! The published standing-grant vectors (`conformance/jcp/v1/standing.json`,
//! C20): a standing grant and its mint policy built from fixed seed keys and
//! nonces, a sequence of firings (each with the ledger before and after, the
//! minted child or the refusal code), and every policy refusal. Written by
//! `cargo run -p jcp --bin gen-standing-vectors`, replayed from disk by
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

fn grant(
    issuer: &Keypair,
    subject: &Keypair,
    depth: Option<u64>,
    nonce: u8,
) -> Result<SignedGrant, Error> {
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
    let class = EventClass {
        source: "github.com/example/repo".into(),
        kind: "issue.opened".into(),
    };
    let other_class = EventClass {
        source: "github.com/example/other".into(),
        kind: "issue.opened".into(),
    };
    let policy = MintPolicy::issue(&grant, &issuer, class.id(), 300, 3, Some([0x72; 16]))?;
    Ok(Fixture {
        issuer,
        worker,
        mallory,
        grant,
        class,
        other_class,
        policy,
    })
}

fn request(fx: &Fixture, class: &EventClass, budget_uj: Option<u64>, nonce: u8) -> FiringRequest {
    FiringRequest {
        event_class: class.id(),
        subject: fx.worker.did(),
        budget_uj,
        nonce: Some([nonce; 16]),
    }
}

/// One firing: the ledger before, what was asked, and the outcome with the
/// ledger after (equal to before on a refusal).
fn firing(
    name: &str,
    ledger: &mut MintLedger,
    grant: &SignedGrant,
    policy: &SignedMintPolicy,
    minter: &Keypair,
    req: &FiringRequest,
    now: u64,
) -> Json {
    let before = hex::encode(ledger.to_bytes());
    let asked = json!({
        "event_class": req.event_class,
        "subject": req.subject,
        "budget_uj": req.budget_uj,
        "nonce": req.nonce.map(hex::encode),
        "now": now,
    });
    let expected = match ledger.fire(grant, policy, minter, req, now) {
        Ok(child) => {
            json!({"ok": {"child": hex::encode(child.to_bytes()), "child_id": child.id(), "child_budget_uj": child.grant().budget_uj}})
        }
        Err(e) => json!({"refused": e.code()}),
    };
    json!({
        "name": name,
        "grant": hex::encode(grant.to_bytes()),
        "policy": hex::encode(policy.to_bytes()),
        "ledger_before": before,
        "request": asked,
        "expected": expected,
        "ledger_after": hex::encode(ledger.to_bytes()),
    })
}

/// The firing sequences: the main policy to exhaustion of its count, a
/// second policy to exhaustion of the grant's budget, and refusals by a
/// policy that is not this grant's or not validly signed.
fn firings(fx: &Fixture) -> Result<Vec<Json>, Error> {
    let mut out = count_firings(fx);
    out.extend(budget_firings(fx)?);
    out.extend(policy_refusals(fx)?);
    Ok(out)
}

/// The main policy (300 µJ × 3) to exhaustion of its count.
fn count_firings(fx: &Fixture) -> Vec<Json> {
    let (g, p, m) = (&fx.grant, &fx.policy, &fx.issuer);
    let mut out = Vec::new();
    let mut l = MintLedger::open(p);
    out.push(firing(
        "first-firing",
        &mut l,
        g,
        p,
        m,
        &request(fx, &fx.class, None, 0x81),
        NOW,
    ));
    out.push(firing(
        "second-firing-smaller-slice",
        &mut l,
        g,
        p,
        m,
        &request(fx, &fx.class, Some(200), 0x82),
        NOW,
    ));
    out.push(firing(
        "wrong-event-class",
        &mut l,
        g,
        p,
        m,
        &request(fx, &fx.other_class, None, 0x83),
        NOW,
    ));
    out.push(firing(
        "slice-above-per-firing",
        &mut l,
        g,
        p,
        m,
        &request(fx, &fx.class, Some(301), 0x84),
        NOW,
    ));
    out.push(firing(
        "minter-is-not-the-holder",
        &mut l,
        g,
        p,
        &fx.mallory,
        &request(fx, &fx.class, None, 0x85),
        NOW,
    ));
    out.push(firing(
        "grant-expired",
        &mut l,
        g,
        p,
        m,
        &request(fx, &fx.class, None, 0x86),
        NOW + 86_400,
    ));
    out.push(firing(
        "third-firing",
        &mut l,
        g,
        p,
        m,
        &request(fx, &fx.class, None, 0x87),
        NOW,
    ));
    out.push(firing(
        "count-exhausted",
        &mut l,
        g,
        p,
        m,
        &request(fx, &fx.class, None, 0x88),
        NOW,
    ));

    out
}

/// A wider policy (400 µJ × 5) to exhaustion of the grant's budget.
fn budget_firings(fx: &Fixture) -> Result<Vec<Json>, Error> {
    let (g, m) = (&fx.grant, &fx.issuer);
    let mut out = Vec::new();
    let wide = MintPolicy::issue(g, m, fx.class.id(), 400, 5, Some([0x73; 16]))?;
    let mut l = MintLedger::open(&wide);
    out.push(firing(
        "budget-first",
        &mut l,
        g,
        &wide,
        m,
        &request(fx, &fx.class, None, 0x91),
        NOW,
    ));
    out.push(firing(
        "budget-second",
        &mut l,
        g,
        &wide,
        m,
        &request(fx, &fx.class, None, 0x92),
        NOW,
    ));
    out.push(firing(
        "cumulative-spend-past-the-grant",
        &mut l,
        g,
        &wide,
        m,
        &request(fx, &fx.class, None, 0x93),
        NOW,
    ));
    out.push(firing(
        "budget-exactly-to-the-grant",
        &mut l,
        g,
        &wide,
        m,
        &request(fx, &fx.class, Some(200), 0x94),
        NOW,
    ));
    out.push(firing(
        "budget-spent",
        &mut l,
        g,
        &wide,
        m,
        &request(fx, &fx.class, Some(1), 0x95),
        NOW,
    ));

    Ok(out)
}

/// Firings under a policy that is not this grant's, not this ledger's, or not validly signed.
fn policy_refusals(fx: &Fixture) -> Result<Vec<Json>, Error> {
    let (g, p, m) = (&fx.grant, &fx.policy, &fx.issuer);
    let mut out = Vec::new();
    let wide = MintPolicy::issue(g, m, fx.class.id(), 400, 5, Some([0x73; 16]))?;
    let mut l = MintLedger::open(p);
    out.push(firing(
        "ledger-of-another-policy",
        &mut l,
        g,
        &wide,
        m,
        &request(fx, &fx.class, None, 0xa1),
        NOW,
    ));
    let other = grant(m, m, Some(1), 0x74)?;
    let foreign = MintPolicy::issue(&other, m, fx.class.id(), 300, 3, Some([0x75; 16]))?;
    let mut l = MintLedger::open(p);
    out.push(firing(
        "policy-of-another-grant",
        &mut l,
        g,
        &foreign,
        m,
        &request(fx, &fx.class, None, 0xa2),
        NOW,
    ));
    let forged = p.policy().clone().sign(&fx.mallory);
    let mut l = MintLedger::open(p);
    out.push(firing(
        "policy-signature-forged",
        &mut l,
        g,
        &forged,
        m,
        &request(fx, &fx.class, None, 0xa3),
        NOW,
    ));
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
        (
            "per-firing-equal-to-the-grant",
            g,
            raw(BUDGET_UJ, 1, 0xb0).sign(&fx.issuer),
        ),
        (
            "per-firing-above-the-grant",
            g,
            raw(BUDGET_UJ + 1, 3, 0xb1).sign(&fx.issuer),
        ),
        ("max-firings-zero", g, raw(300, 0, 0xb2).sign(&fx.issuer)),
        ("per-firing-zero", g, raw(0, 3, 0xb7).sign(&fx.issuer)),
        ("signed-by-a-non-issuer", g, by_mallory.sign(&fx.mallory)),
        (
            "issuer-named-but-another-key-signs",
            g,
            raw(300, 3, 0xb8).sign(&fx.mallory),
        ),
        ("bound-to-another-grant", g, unbound.sign(&fx.issuer)),
        (
            "grant-not-held-by-its-issuer",
            &not_held,
            for_not_held.sign(&fx.issuer),
        ),
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
    let keys: Vec<Json> = [
        ("issuer", 0x61u8, &fx.issuer),
        ("worker", 0x62, &fx.worker),
        ("mallory", 0x63, &fx.mallory),
    ]
    .iter()
    .map(
        |(name, seed, kp)| json!({"name": name, "seed": hex::encode([*seed; 32]), "did": kp.did()}),
    )
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
    crate::vectors::to_text(&generate()?)
}
