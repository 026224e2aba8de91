//! C20 — standing grants (§4.6): a signed mint policy bound to one grant by
//! id, signed by its issuer, never amplifying it; each firing mints a
//! strictly weaker child through attenuation that chain-verifies to the
//! standing grant; a refused firing leaves the mint ledger unchanged.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use jcp::cbor::{self, ContentId, Value};
use jcp::chain::verify_chain;
use jcp::grant::{attenuate, Attenuation, Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp::standing::{verify_policy, EventClass, FiringRequest, MintLedger, MintPolicy, SignedMintPolicy, StandingView};
use jcp::Error;

const NOW: u64 = 1_700_000_000;

fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

fn class() -> EventClass {
    EventClass { source: "hooks.example/repo".into(), kind: "push".into() }
}

fn standing(issuer: &Keypair, subject: &Keypair, budget_uj: u64, depth: Option<u64>) -> SignedGrant {
    Grant {
        issuer: issuer.did(),
        subject: subject.did(),
        capability: Capability {
            resource: ContentId::of(&Value::text("ci-runner")),
            actions: vec!["build".into(), "test".into()],
        },
        budget_uj,
        budget_funds: None,
        caveats: vec![],
        expiry: NOW + 1_000,
        parent: None,
        delegate_depth: depth,
        nonce: [7; 16],
    }
    .sign(issuer)
    .unwrap()
}

struct Setup {
    issuer: Keypair,
    worker: Keypair,
    grant: SignedGrant,
    policy: SignedMintPolicy,
}

fn setup(per_firing: u64, max: u64) -> Setup {
    let issuer = key(1);
    let grant = standing(&issuer, &issuer, 1_000, None);
    let policy = MintPolicy::issue(&grant, &issuer, class().id(), per_firing, max, Some([8; 16])).unwrap();
    Setup { issuer, worker: key(2), grant, policy }
}

fn req(s: &Setup, budget_uj: Option<u64>) -> FiringRequest {
    FiringRequest { event_class: class().id(), subject: s.worker.did(), budget_uj, nonce: None }
}

/// Fires and asserts the refusal left the ledger's bytes unchanged.
fn refused(
    s: &Setup,
    ledger: &mut MintLedger,
    policy: &SignedMintPolicy,
    minter: &Keypair,
    r: &FiringRequest,
    now: u64,
) -> Error {
    let before = ledger.to_bytes();
    let e = ledger.fire(&s.grant, policy, minter, r, now).unwrap_err();
    assert_eq!(ledger.to_bytes(), before, "refused firing ({e}) changed the ledger");
    e
}

#[test]
fn c20_each_firing_mints_a_weaker_child_that_chain_verifies_to_the_standing_grant() {
    let s = setup(300, 3);
    verify_policy(&s.grant, &s.policy).unwrap();
    let mut ledger = MintLedger::open(&s.policy);
    let mut ids = Vec::new();
    for n in 1..=3u64 {
        let child = ledger.fire(&s.grant, &s.policy, &s.issuer, &req(&s, None), NOW).unwrap();
        let c = child.grant();
        assert_eq!(c.parent, Some(s.grant.id()), "the child's parent is the standing grant");
        assert_eq!(c.issuer, s.issuer.did(), "signed by the holder of the standing grant, its issuer");
        assert_eq!(c.subject, s.worker.did());
        assert_eq!(c.budget_uj, 300);
        assert!(c.expiry <= s.grant.grant().expiry && c.expiry != 0);
        verify_chain(&[s.grant.clone(), child.clone()]).unwrap();
        assert_eq!((ledger.firings(), ledger.spent_uj()), (n, 300 * n));
        ids.push(child.id());
    }
    ids.dedup();
    assert_eq!(ids.len(), 3, "every firing mints a fresh child");
    // The worker holds a child and may act under it; it holds no standing authority.
    let grandchild = attenuate(
        &ledger_child(&s),
        &s.worker,
        Attenuation { subject: Some(key(3).did()), budget_uj: Some(10), ..Attenuation::default() },
    )
    .unwrap();
    assert_eq!(grandchild.grant().budget_uj, 10);
}

fn ledger_child(s: &Setup) -> SignedGrant {
    let mut l = MintLedger::open(&s.policy);
    l.fire(&s.grant, &s.policy, &s.issuer, &req(s, None), NOW).unwrap()
}

#[test]
fn c20_wrong_event_class_is_refused_and_the_ledger_unchanged() {
    let s = setup(300, 3);
    let mut ledger = MintLedger::open(&s.policy);
    ledger.fire(&s.grant, &s.policy, &s.issuer, &req(&s, None), NOW).unwrap();
    let other = EventClass { source: "hooks.example/other".into(), kind: "push".into() };
    let e = refused(
        &s,
        &mut ledger,
        &s.policy,
        &s.issuer,
        &FiringRequest { event_class: other.id(), ..req(&s, None) },
        NOW,
    );
    assert_eq!(e, Error::StandingWrongEventClass { expected: class().id(), got: other.id() });
    assert!(e.to_string().starts_with("standing-wrong-event-class: "));
}

#[test]
fn c20_exhausted_firing_count_is_refused_and_the_ledger_unchanged() {
    let s = setup(100, 2);
    let mut ledger = MintLedger::open(&s.policy);
    for _ in 0..2 {
        ledger.fire(&s.grant, &s.policy, &s.issuer, &req(&s, None), NOW).unwrap();
    }
    let e = refused(&s, &mut ledger, &s.policy, &s.issuer, &req(&s, None), NOW);
    assert_eq!(e, Error::StandingFiringsExhausted { firings: 2, max: 2 });
}

#[test]
fn c20_cumulative_spend_past_the_grant_is_refused_and_the_ledger_unchanged() {
    let s = setup(400, 10);
    let mut ledger = MintLedger::open(&s.policy);
    ledger.fire(&s.grant, &s.policy, &s.issuer, &req(&s, None), NOW).unwrap();
    ledger.fire(&s.grant, &s.policy, &s.issuer, &req(&s, None), NOW).unwrap();
    let e = refused(&s, &mut ledger, &s.policy, &s.issuer, &req(&s, None), NOW);
    assert_eq!(e, Error::StandingBudgetExhausted { spent: 800, slice: 400, budget: 1_000 });
    // A slice that fits exactly is minted; then nothing more is.
    ledger.fire(&s.grant, &s.policy, &s.issuer, &req(&s, Some(200)), NOW).unwrap();
    assert_eq!(ledger.spent_uj(), 1_000);
    assert_eq!(
        refused(&s, &mut ledger, &s.policy, &s.issuer, &req(&s, Some(1)), NOW).code(),
        "standing-budget-exhausted"
    );
    // A slice above the per-firing budget is refused whatever is left.
    let s2 = setup(400, 10);
    let mut l2 = MintLedger::open(&s2.policy);
    assert_eq!(
        refused(&s2, &mut l2, &s2.policy, &s2.issuer, &req(&s2, Some(401)), NOW),
        Error::StandingSliceExceedsPolicy { slice: 401, per_firing: 400 }
    );
}

#[test]
fn c20_a_policy_not_bound_to_this_grant_is_refused_at_firing() {
    let s = setup(300, 3);
    let other_grant = standing(&s.issuer, &s.issuer, 5_000, None);
    let foreign = MintPolicy::issue(&other_grant, &s.issuer, class().id(), 300, 3, None).unwrap();
    let mut ledger = MintLedger::open(&s.policy);
    let e = refused(&s, &mut ledger, &foreign, &s.issuer, &req(&s, None), NOW);
    assert_eq!(e, Error::StandingPolicyUnbound { policy_grant: other_grant.id(), grant: s.grant.id() });
    // A ledger kept for another policy of the same grant is refused too.
    let second = MintPolicy::issue(&s.grant, &s.issuer, class().id(), 300, 3, None).unwrap();
    assert_eq!(refused(&s, &mut ledger, &second, &s.issuer, &req(&s, None), NOW).code(), "standing-ledger-mismatch");
}

#[test]
fn c20_a_bad_policy_signature_is_refused_at_firing() {
    let s = setup(300, 3);
    let mut ledger = MintLedger::open(&s.policy);
    // The issuer's own policy, signature bytes forged by another key.
    let forged = s.policy.policy().clone().sign(&key(9));
    assert_eq!(forged.id(), s.policy.id(), "same policy core, so the ledger binding alone does not catch it");
    let e = refused(&s, &mut ledger, &forged, &s.issuer, &req(&s, None), NOW);
    assert_eq!(e, Error::BadSignature { object: "MintPolicy", signer: s.issuer.did().to_string() });
    // A tampered signature byte on disk.
    let mut bytes = s.policy.to_bytes();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    let tampered = SignedMintPolicy::from_bytes(&bytes).unwrap();
    assert_eq!(refused(&s, &mut ledger, &tampered, &s.issuer, &req(&s, None), NOW).code(), "bad-signature");
}

#[test]
fn c20_firing_by_anyone_but_the_holder_or_after_expiry_is_refused() {
    let s = setup(300, 3);
    let mut ledger = MintLedger::open(&s.policy);
    let e = refused(&s, &mut ledger, &s.policy, &key(9), &req(&s, None), NOW);
    assert_eq!(e.code(), "not-holder");
    let e = refused(&s, &mut ledger, &s.policy, &s.issuer, &req(&s, None), NOW + 1_000);
    assert_eq!(e, Error::StandingGrantExpired { expiry: NOW + 1_000, now: NOW + 1_000 });
}

#[test]
fn c20_an_amplifying_policy_is_refused_at_author_time() {
    let issuer = key(1);
    let g = standing(&issuer, &issuer, 1_000, None);
    let c = class().id();
    let amp = |r: Result<SignedMintPolicy, Error>| r.unwrap_err().code();
    assert_eq!(amp(MintPolicy::issue(&g, &issuer, c, 1_001, 3, None)), "standing-policy-amplifies");
    assert_eq!(amp(MintPolicy::issue(&g, &issuer, c, 300, 0, None)), "standing-policy-amplifies");
    assert_eq!(amp(MintPolicy::issue(&g, &issuer, c, 0, 3, None)), "standing-policy-amplifies");
    assert!(MintPolicy::issue(&g, &issuer, c, 1_000, 1, None).is_ok(), "a slice equal to the grant does not amplify");
    // Wrong signer: only the grant's issuer may bind a policy to it.
    assert!(matches!(MintPolicy::issue(&g, &key(9), c, 300, 3, None), Err(Error::StandingNotIssuer { .. })));
    // A grant its issuer gave away is not a standing grant (docs/decisions.md).
    let given = standing(&issuer, &key(2), 1_000, None);
    assert!(matches!(MintPolicy::issue(&given, &issuer, c, 300, 3, None), Err(Error::StandingNotHeldByIssuer { .. })));
    // A leaf-only grant can mint no child.
    let leaf = standing(&issuer, &issuer, 1_000, Some(0));
    assert_eq!(amp(MintPolicy::issue(&leaf, &issuer, c, 300, 3, None)), "delegation-forbidden");
}

#[test]
fn c20_the_verifier_refuses_what_authoring_refuses() {
    // A raw policy signed as given, bypassing the authoring routine.
    let issuer = key(1);
    let g = standing(&issuer, &issuer, 1_000, None);
    let raw = |per: u64, max: u64, signer: &Keypair| {
        MintPolicy {
            grant_id: g.id(),
            issuer: signer.did(),
            event_class: class().id(),
            per_firing_uj: per,
            max_firings: max,
            nonce: [1; 16],
        }
        .sign(signer)
    };
    assert_eq!(verify_policy(&g, &raw(2_000, 3, &issuer)).unwrap_err().code(), "standing-policy-amplifies");
    assert_eq!(verify_policy(&g, &raw(300, 0, &issuer)).unwrap_err().code(), "standing-policy-amplifies");
    assert_eq!(verify_policy(&g, &raw(300, 3, &key(9))).unwrap_err().code(), "standing-not-issuer");
    verify_policy(&g, &raw(300, 3, &issuer)).unwrap();
    // And firing under such a policy is refused with the ledger unchanged.
    let s = Setup { issuer: issuer.clone(), worker: key(2), grant: g.clone(), policy: raw(2_000, 3, &issuer) };
    let mut ledger = MintLedger::open(&s.policy);
    assert_eq!(
        refused(&s, &mut ledger, &s.policy.clone(), &issuer, &req(&s, None), NOW).code(),
        "standing-policy-amplifies"
    );
}

#[test]
fn c20_policy_and_ledger_files_are_strict() {
    let s = setup(300, 3);
    let bytes = s.policy.to_bytes();
    assert_eq!(SignedMintPolicy::from_bytes(&bytes).unwrap(), s.policy);
    assert_eq!(SignedMintPolicy::from_bytes(&bytes[..bytes.len() - 2]).unwrap_err().code(), "cbor-truncated");
    assert_eq!(SignedMintPolicy::from_bytes(&bytes[..0]).unwrap_err().code(), "cbor-truncated");
    let mut ledger = MintLedger::open(&s.policy);
    ledger.fire(&s.grant, &s.policy, &s.issuer, &req(&s, None), NOW).unwrap();
    let lb = ledger.to_bytes();
    assert_eq!(MintLedger::from_bytes(&lb).unwrap(), ledger);
    let Value::Map(mut m) = ledger.to_value() else { panic!() };
    m.push((Value::text("note"), Value::text("x")));
    assert_eq!(MintLedger::from_bytes(&Value::Map(m).encode()).unwrap_err().code(), "schema-unknown-field");
    let wrong = cbor::map([
        ("format", Some(Value::text("jcp-mint-ledger/0"))),
        ("grant_id", Some(Value::text(s.grant.id().to_hex()))),
        ("policy_id", Some(Value::text(s.policy.id().to_hex()))),
        ("firings", Some(Value::Uint(0))),
        ("spent_uj", Some(Value::Uint(0))),
    ]);
    assert_eq!(MintLedger::from_bytes(&wrong.encode()).unwrap_err().code(), "schema-invalid-field");
}

#[test]
fn c20_standing_view_shows_what_is_left_and_why_firing_is_refused() {
    let s = setup(300, 3);
    let mut ledger = MintLedger::open(&s.policy);
    ledger.fire(&s.grant, &s.policy, &s.issuer, &req(&s, None), NOW).unwrap();
    let v = StandingView::new(&s.grant, &s.policy, &ledger);
    assert_eq!((v.firings_left, v.budget_left_uj, v.refusal.is_none()), (2, 700, true));
    let j = serde_json::to_value(&v).unwrap();
    assert_eq!(j["ledger"]["firings"], 1);
    assert_eq!(j["policy"]["per_firing_uj"], 300);
    let other = MintPolicy::issue(&s.grant, &s.issuer, class().id(), 100, 1, None).unwrap();
    assert_eq!(StandingView::new(&s.grant, &other, &ledger).refusal.unwrap().code, "standing-ledger-mismatch");
}
