//! C21 — checkpoints + amendments (spec §4.7): an agent checkpoints its own
//! state; only the grant's issuer — a principal distinct from the agent — may
//! amend, only to tighten, and only up to what the grant has left at that
//! checkpoint; the rules hold on the verifying side as well as the amending
//! side; the run file decodes strictly and names the record it refuses.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns (clippy.toml allows these in tests)

use jcp::cbor::{self, ContentId, Value};
use jcp::energy::Provenance;
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp::steering::{
    self, verify_amendment, verify_checkpoint, verify_continuation, AmendInput, Amendment, Checkpoint, CheckpointInput,
    Record, Remainder, Run, SignedAmendment, SignedCheckpoint, Spent, UnknownReason,
};
use proptest::prelude::*;

const NOW: u64 = 1_700_000_000;

struct K {
    issuer: Keypair,
    agent: Keypair,
    mallory: Keypair,
}

fn k() -> K {
    K {
        issuer: Keypair::from_seed([1; 32]).unwrap(),
        agent: Keypair::from_seed([2; 32]).unwrap(),
        mallory: Keypair::from_seed([5; 32]).unwrap(),
    }
}

fn grant_from(issuer: &Keypair, subject: &Keypair, budget_uj: u64, nonce: u8) -> SignedGrant {
    Grant {
        issuer: issuer.did(),
        subject: subject.did(),
        capability: Capability { resource: ContentId::of(&Value::text("tool")), actions: vec!["run".into()] },
        budget_uj,
        budget_funds: None,
        caveats: vec![],
        expiry: NOW + 3_600,
        parent: None,
        delegate_depth: None,
        nonce: [nonce; 16],
    }
    .sign(issuer)
    .unwrap()
}

#[allow(clippy::unnecessary_wraps)] // reads as `spent: spent(100)` at call sites
fn spent(uj: u64) -> Option<Spent> {
    Some(Spent { uj, provenance: Provenance::HwShunt })
}

fn input(n: u64, s: Option<Spent>) -> CheckpointInput {
    CheckpointInput {
        state: ContentId::of(&Value::text(format!("state {n}"))),
        at: NOW + n,
        spent: s,
        nonce: Some([u8::try_from(n % 256).unwrap(); 16]),
    }
}

fn raw_cp(
    author: &Keypair,
    g: &SignedGrant,
    seq: u64,
    prev: Option<&SignedCheckpoint>,
    s: Option<Spent>,
) -> SignedCheckpoint {
    Checkpoint {
        grant_id: g.id(),
        agent: author.did(),
        seq,
        prev: prev.map(SignedCheckpoint::id),
        state: ContentId::of(&Value::text(format!("state {seq}"))),
        at: NOW + seq,
        spent: s,
        nonce: [u8::try_from(seq % 256).unwrap(); 16],
    }
    .sign(author)
    .unwrap()
}

fn raw_am(
    signer: &Keypair,
    g: &SignedGrant,
    at: &SignedCheckpoint,
    budget_uj: u64,
    cont: &SignedGrant,
) -> SignedAmendment {
    Amendment {
        grant_id: g.id(),
        checkpoint: at.id(),
        amended_by: signer.did(),
        budget_uj,
        expiry: None,
        instructions: None,
        continuation: cont.id(),
        nonce: [0x77; 16],
    }
    .sign(signer)
}

fn amend(budget_uj: u64) -> AmendInput {
    AmendInput { budget_uj, nonce: Some([9; 16]), continuation_nonce: Some([8; 16]), ..AmendInput::default() }
}

fn codes(run: &Run) -> Vec<(usize, &'static str)> {
    run.verify().unwrap().findings.iter().map(|f| (f.index, f.code)).collect()
}

#[test]
fn c21_checkpoint_and_amendment_round_trip_strict_det_cbor() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(0, spent(100))).unwrap();
    let bytes = cp.to_bytes();
    let back = SignedCheckpoint::from_bytes(&bytes).unwrap();
    assert_eq!(back, cp);
    assert_eq!(back.to_bytes(), bytes);
    assert_eq!(back.id(), cp.checkpoint().id());
    assert!(back.verify_signature());
    let (am, cont) = run
        .amend(
            &k.issuer,
            AmendInput { instructions: Some(ContentId::of(&Value::text("v2"))), expiry: Some(NOW + 60), ..amend(400) },
        )
        .unwrap();
    let ab = am.to_bytes();
    let am2 = SignedAmendment::from_bytes(&ab).unwrap();
    assert_eq!(am2, am);
    assert_eq!(am2.to_bytes(), ab);
    assert_eq!(am.amendment().continuation, cont.id());
    assert_eq!(cont.grant().budget_uj, 400);
    assert_eq!(cont.grant().expiry, NOW + 60);
    // Closed world: an extra field in the signed core is refused.
    let mut v = cp.checkpoint().to_value();
    if let Value::Map(m) = &mut v {
        m.push((Value::text("zzz"), Value::Uint(1)));
    }
    let wire = cbor::map([("checkpoint", Some(v)), ("sig", Some(Value::Bytes(cp.signature().to_vec())))]).encode();
    assert_eq!(SignedCheckpoint::from_bytes(&wire).unwrap_err().code(), "schema-unknown-field");
    // Non-canonical bytes are refused (a long-form head).
    let mut bad = vec![0xb9, 0x00, 0x02];
    bad.extend_from_slice(&bytes[1..]);
    assert!(SignedCheckpoint::from_bytes(&bad).is_err());
    // An unknown provenance label is refused.
    let mut v = cp.checkpoint().to_value();
    if let Value::Map(m) = &mut v {
        for (key, val) in m.iter_mut() {
            if *key == Value::text("spent") {
                *val = cbor::map([("uj", Some(Value::Uint(1))), ("provenance", Some(Value::text("Guess")))]);
            }
        }
    }
    assert_eq!(Checkpoint::from_value(&v).unwrap_err().code(), "schema-invalid-field");
}

#[test]
fn c21_amendment_above_remainder_is_refused_on_the_verifying_side() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(0, spent(700))).unwrap();
    // The amending side refuses, before anything is signed or appended.
    let before = run.records().len();
    let e = run.amend(&k.issuer, amend(301)).unwrap_err();
    assert_eq!(e.code(), "steer-above-remainder");
    assert_eq!(run.records().len(), before);
    // A signed amendment above the remainder, as a forger or a buggy
    // amender would produce it, is refused by the verifier without the
    // amending routine ever being called.
    let cont = grant_from(&k.issuer, &k.agent, 301, 2);
    let am = raw_am(&k.issuer, &g, &cp, 301, &cont);
    assert_eq!(verify_amendment(&g, &cp, &am).unwrap_err().code(), "steer-above-remainder");
    run.push(Record::Amendment(am));
    run.push(Record::Grant(cont));
    assert_eq!(codes(&run), vec![(2, "steer-above-remainder"), (3, "steer-continuation")]);
    // Exactly the remainder is allowed; the remainder saturates at zero.
    let am = raw_am(&k.issuer, &g, &cp, 300, &grant_from(&k.issuer, &k.agent, 300, 3));
    assert_eq!(verify_amendment(&g, &cp, &am).unwrap(), 300);
    let over = raw_cp(&k.agent, &g, 0, None, spent(5_000));
    let am = raw_am(&k.issuer, &g, &over, 1, &grant_from(&k.issuer, &k.agent, 1, 4));
    assert_eq!(verify_amendment(&g, &over, &am).unwrap_err().code(), "steer-above-remainder");
    let am = raw_am(&k.issuer, &g, &over, 0, &grant_from(&k.issuer, &k.agent, 0, 4));
    assert_eq!(verify_amendment(&g, &over, &am).unwrap(), 0);
}

#[test]
fn c21_amendment_above_the_issued_budget_is_widening() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let cp = raw_cp(&k.agent, &g, 0, None, None);
    let am = raw_am(&k.issuer, &g, &cp, 1_001, &grant_from(&k.issuer, &k.agent, 1_001, 2));
    assert_eq!(verify_amendment(&g, &cp, &am).unwrap_err().code(), "steer-widening");
    let mut run = Run::new(g.clone());
    run.checkpoint(&k.agent, input(0, None)).unwrap();
    assert_eq!(run.amend(&k.issuer, amend(1_001)).unwrap_err().code(), "steer-widening");
    // A later expiry is widening too; an earlier one is a tightening.
    assert_eq!(
        run.amend(&k.issuer, AmendInput { expiry: Some(NOW + 3_601), ..amend(10) }).unwrap_err().code(),
        "steer-widening"
    );
    assert_eq!(run.amend(&k.issuer, AmendInput { expiry: Some(0), ..amend(10) }).unwrap_err().code(), "steer-widening");
    run.amend(&k.issuer, AmendInput { expiry: Some(NOW + 10), ..amend(10) }).unwrap();
    assert!(run.verify().unwrap().clean);
}

#[test]
fn c21_absent_spend_is_not_zero_spend() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    run.checkpoint(&k.agent, input(0, None)).unwrap();
    let r = run.verify().unwrap();
    // Unknown, never reported as the full budget.
    assert_eq!(r.checkpoints[0].remainder, Remainder::Unknown { reason: UnknownReason::NotStated });
    assert_eq!(r.checkpoints[0].spent, None);
    assert_eq!(r.latest_spent, None);
    assert_ne!(r.remainder, Remainder::Known { uj: 1_000 });
    // The weaker ceiling: the issued budget.
    assert_eq!(r.checkpoints[0].amend_ceiling_uj, Some(1_000));
    // A stated zero is a different thing: the remainder is known.
    let mut run0 = Run::new(g.clone());
    run0.checkpoint(&k.agent, input(0, spent(0))).unwrap();
    assert_eq!(run0.verify().unwrap().checkpoints[0].remainder, Remainder::Known { uj: 1_000 });
    // Amended at the unstated checkpoint to the issued budget, the run
    // continues; a later stated spend cannot be placed against the
    // continuation exactly (its starting spend is unknown), so the remainder
    // stays unknown and the next amendment's ceiling counts all the stated
    // spend against the continuation (fail closed).
    run.amend(&k.issuer, amend(1_000)).unwrap();
    run.checkpoint(&k.agent, input(1, spent(400))).unwrap();
    let r = run.verify().unwrap();
    assert!(r.clean, "{:?}", r.findings);
    assert_eq!(r.checkpoints[1].remainder, Remainder::Unknown { reason: UnknownReason::BaseUnknown });
    assert_eq!(r.checkpoints[1].amend_ceiling_uj, Some(600));
    assert_eq!(run.amend(&k.issuer, amend(601)).unwrap_err().code(), "steer-above-remainder");
}

#[test]
fn c21_declared_spend_never_decreases() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    let c0 = run.checkpoint(&k.agent, input(0, spent(300))).unwrap();
    assert_eq!(run.checkpoint(&k.agent, input(1, spent(299))).unwrap_err().code(), "steer-spend-decreased");
    assert_eq!(run.records().len(), 2);
    run.checkpoint(&k.agent, input(1, spent(300))).unwrap();
    // On the verifying side, a decreasing checkpoint is refused and does not
    // lower the high-water mark: a later one is judged against 300 still.
    let mut raw = Run::new(g.clone());
    raw.push(Record::Checkpoint(c0.clone()));
    let low = raw_cp(&k.agent, &g, 1, Some(&c0), spent(50));
    raw.push(Record::Checkpoint(low));
    assert_eq!(codes(&raw), vec![(2, "steer-spend-decreased")]);
    let r = raw.verify().unwrap();
    assert_eq!(r.latest_spent.map(|s| s.uj), Some(300));
    assert_eq!(r.checkpoints[1].verdict, "refused");
    // A refused checkpoint's claims are not judged: no remainder, no ceiling.
    assert_eq!(r.checkpoints[1].remainder, Remainder::Unknown { reason: UnknownReason::Refused });
    assert_eq!(r.checkpoints[1].amend_ceiling_uj, None);
    // Across a continuation, too (spend is cumulative over the run).
    run.amend(&k.issuer, amend(500)).unwrap();
    assert_eq!(run.checkpoint(&k.agent, input(2, spent(10))).unwrap_err().code(), "steer-spend-decreased");
}

#[test]
fn c21_checkpoint_that_stated_spend_cannot_omit_it() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    let c0 = run.checkpoint(&k.agent, input(0, spent(300))).unwrap();
    assert_eq!(run.checkpoint(&k.agent, input(1, None)).unwrap_err().code(), "steer-spend-omitted");
    let mut raw = Run::new(g.clone());
    raw.push(Record::Checkpoint(c0.clone()));
    let quiet = raw_cp(&k.agent, &g, 1, Some(&c0), None);
    raw.push(Record::Checkpoint(quiet.clone()));
    // The quiet checkpoint would otherwise let the issued budget through:
    let am = raw_am(&k.issuer, &g, &quiet, 1_000, &grant_from(&k.issuer, &k.agent, 1_000, 2));
    raw.push(Record::Amendment(am));
    let c = codes(&raw);
    assert_eq!(c[0], (2, "steer-spend-omitted"));
    assert_eq!(c[1], (3, "steer-wrong-checkpoint"));
}

#[test]
fn c21_amender_must_differ_from_agent() {
    let k = k();
    // The agent amending its own run.
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(0, spent(1))).unwrap();
    assert_eq!(run.amend(&k.agent, amend(10)).unwrap_err().code(), "steer-self-amend");
    let am = raw_am(&k.agent, &g, &cp, 10, &grant_from(&k.issuer, &k.agent, 10, 2));
    assert_eq!(verify_amendment(&g, &cp, &am).unwrap_err().code(), "steer-self-amend");
    // A self-issued grant: issuer = subject, so even the issuer is the agent.
    let own = grant_from(&k.agent, &k.agent, 1_000, 3);
    let mut run = Run::new(own.clone());
    let cp = run.checkpoint(&k.agent, input(0, spent(1))).unwrap();
    assert_eq!(run.amend(&k.agent, amend(10)).unwrap_err().code(), "steer-self-amend");
    let am = raw_am(&k.agent, &own, &cp, 10, &grant_from(&k.agent, &k.agent, 10, 4));
    run.push(Record::Amendment(am));
    assert_eq!(codes(&run), vec![(2, "steer-self-amend")]);
}

#[test]
fn c21_only_issuer_may_amend() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(0, spent(1))).unwrap();
    assert_eq!(run.amend(&k.mallory, amend(10)).unwrap_err().code(), "steer-not-issuer");
    let am = raw_am(&k.mallory, &g, &cp, 10, &grant_from(&k.issuer, &k.agent, 10, 2));
    assert_eq!(verify_amendment(&g, &cp, &am).unwrap_err().code(), "steer-not-issuer");
    // A forged amendment claiming the issuer but signed by mallory.
    let forged = Amendment { amended_by: k.issuer.did(), ..am.amendment().clone() }.sign(&k.mallory);
    assert_eq!(verify_amendment(&g, &cp, &forged).unwrap_err().code(), "bad-signature");
    run.push(Record::Amendment(forged));
    assert_eq!(codes(&run), vec![(2, "bad-signature")]);
}

#[test]
fn c21_only_the_agent_may_checkpoint() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    assert_eq!(run.checkpoint(&k.issuer, input(0, None)).unwrap_err().code(), "steer-not-agent");
    let cp = raw_cp(&k.issuer, &g, 0, None, None);
    assert_eq!(verify_checkpoint(&g, &cp).unwrap_err().code(), "steer-not-agent");
    run.push(Record::Checkpoint(cp));
    assert_eq!(codes(&run), vec![(1, "steer-not-agent")]);
}

#[test]
fn c21_amendment_bound_to_a_different_checkpoint_is_refused() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    let c0 = run.checkpoint(&k.agent, input(0, spent(100))).unwrap();
    let c1 = run.checkpoint(&k.agent, input(1, spent(900))).unwrap();
    // Bound to c0 (remainder 900) but presented with c1 (remainder 100).
    let am = raw_am(&k.issuer, &g, &c0, 800, &grant_from(&k.issuer, &k.agent, 800, 2));
    assert_eq!(verify_amendment(&g, &c1, &am).unwrap_err().code(), "steer-wrong-checkpoint");
    // In a run, an amendment steers the latest checkpoint only: citing an
    // earlier one would measure against a stale remainder.
    run.push(Record::Amendment(am));
    assert_eq!(codes(&run), vec![(3, "steer-wrong-checkpoint")]);
    assert_eq!(run.verify().unwrap().unattached_amendments, vec![3]);
}

#[test]
fn c21_spliced_and_tampered_records_are_refused() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let other = grant_from(&k.issuer, &k.agent, 1_000, 2);
    let mut run = Run::new(g.clone());
    let c0 = run.checkpoint(&k.agent, input(0, spent(100))).unwrap();
    // A checkpoint of another run spliced in.
    let mut spliced = run.clone();
    spliced.push(Record::Checkpoint(raw_cp(&k.agent, &other, 1, Some(&c0), spent(200))));
    assert_eq!(codes(&spliced), vec![(2, "steer-wrong-grant")]);
    // A replayed checkpoint (same record twice) breaks the sequence.
    let mut replayed = run.clone();
    replayed.push(Record::Checkpoint(c0.clone()));
    assert_eq!(codes(&replayed), vec![(2, "steer-sequence")]);
    // A checkpoint whose clock runs backwards.
    let mut back = run.clone();
    let mut c1 = raw_cp(&k.agent, &g, 1, Some(&c0), spent(200)).checkpoint().clone();
    c1.at = NOW - 1;
    back.push(Record::Checkpoint(c1.sign(&k.agent).unwrap()));
    assert_eq!(codes(&back), vec![(2, "steer-sequence")]);
    // Tampered amendment: its budget changed after signing.
    let (am, cont) = run.clone().amend(&k.issuer, amend(500)).unwrap();
    let mut v = am.amendment().clone();
    v.budget_uj = 900;
    let wire =
        cbor::map([("amendment", Some(v.to_value())), ("sig", Some(Value::Bytes(am.signature().to_vec())))]).encode();
    let tampered = SignedAmendment::from_bytes(&wire).unwrap();
    assert!(!tampered.verify_signature());
    let mut t = run.clone();
    t.push(Record::Amendment(tampered));
    t.push(Record::Grant(cont));
    assert_eq!(codes(&t), vec![(2, "bad-signature"), (3, "steer-continuation")]);
    // Tampered run grant: nothing in the run is admitted.
    let mut gv = g.grant().clone();
    gv.budget_uj = 9_999;
    let wire =
        cbor::map([("grant", Some(gv.to_value())), ("sig", Some(Value::Bytes(g.signature().to_vec())))]).encode();
    let mut recs = run.clone().into_records();
    recs[0] = Record::Grant(SignedGrant::from_bytes(&wire).unwrap());
    let r = Run::from_records(recs).unwrap().verify().unwrap();
    assert_eq!(
        r.findings.iter().map(|f| (f.index, f.code)).collect::<Vec<_>>(),
        vec![(0, "bad-signature"), (1, "steer-wrong-grant")]
    );
    assert_eq!(r.active_grant, None);
    // Authoring onto a run with findings is refused.
    assert_eq!(spliced.checkpoint(&k.agent, input(5, spent(300))).unwrap_err().code(), "steer-run-not-clean");
}

#[test]
fn c21_continuation_rebinds_the_same_issuer_and_agent_within_the_amendment() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let cp = raw_cp(&k.agent, &g, 0, None, spent(200));
    let check = |cont: &SignedGrant| {
        let am = raw_am(&k.issuer, &g, &cp, 500, cont);
        verify_amendment(&g, &cp, &am).unwrap();
        verify_continuation(&g, am.amendment(), cont).map_err(|e| e.code())
    };
    assert_eq!(check(&grant_from(&k.issuer, &k.agent, 500, 2)), Ok(()));
    assert_eq!(check(&grant_from(&k.issuer, &k.agent, 400, 2)), Ok(()));
    assert_eq!(check(&grant_from(&k.issuer, &k.agent, 501, 2)), Err("steer-widening"));
    assert_eq!(check(&grant_from(&k.issuer, &k.mallory, 500, 2)), Err("steer-continuation"));
    assert_eq!(check(&grant_from(&k.mallory, &k.agent, 500, 2)), Err("steer-continuation"));
    // Wider on another axis: more actions, a later expiry, a parent link.
    let wide = |f: &dyn Fn(&mut Grant)| {
        let mut gr = grant_from(&k.issuer, &k.agent, 500, 2).grant().clone();
        f(&mut gr);
        gr.sign(&k.issuer).unwrap()
    };
    assert_eq!(check(&wide(&|g| g.capability.actions.push("admin".into()))), Err("steer-widening"));
    assert_eq!(check(&wide(&|g| g.expiry = 0)), Err("steer-widening"));
    assert_eq!(check(&wide(&|g| g.parent = Some(ContentId::of(&Value::text("x"))))), Err("steer-continuation"));
    // A continuation the amendment does not name.
    let am = raw_am(&k.issuer, &g, &cp, 500, &grant_from(&k.issuer, &k.agent, 500, 2));
    let stranger = grant_from(&k.issuer, &k.agent, 500, 3);
    assert_eq!(verify_continuation(&g, am.amendment(), &stranger).unwrap_err().code(), "steer-continuation");
    // A grant record that no amendment names.
    let mut run = Run::new(g.clone());
    run.push(Record::Grant(stranger));
    assert_eq!(codes(&run), vec![(1, "steer-continuation")]);
}

#[test]
fn c21_the_steered_grant_is_superseded_by_its_amendment() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    let c0 = run.checkpoint(&k.agent, input(0, spent(100))).unwrap();
    let cont = grant_from(&k.issuer, &k.agent, 300, 2);
    run.push(Record::Amendment(raw_am(&k.issuer, &g, &c0, 300, &cont)));
    // No continuation follows: nothing is active, the steered grant is dead.
    run.push(Record::Checkpoint(raw_cp(&k.agent, &g, 1, Some(&c0), spent(200))));
    let r = run.verify().unwrap();
    assert_eq!(
        r.findings.iter().map(|f| (f.index, f.code)).collect::<Vec<_>>(),
        vec![(2, "steer-continuation"), (3, "steer-wrong-grant")]
    );
    assert_eq!(r.active_grant, None);
    assert_eq!(r.remainder, Remainder::Known { uj: 0 });
    // Two amendments at one checkpoint: the second finds no active grant.
    let mut run = Run::new(g.clone());
    run.checkpoint(&k.agent, input(0, spent(100))).unwrap();
    run.amend(&k.issuer, amend(300)).unwrap();
    assert_eq!(run.amend(&k.issuer, amend(200)).unwrap_err().code(), "steer-wrong-grant");
}

#[test]
fn c21_spend_past_the_active_budget_is_reported_as_overspent() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    run.checkpoint(&k.agent, input(0, spent(100))).unwrap();
    run.amend(&k.issuer, amend(200)).unwrap();
    // 350 − 100 = 250 spent under a continuation of 200. The agent may
    // still record it truthfully; the verifier reports it.
    run.checkpoint(&k.agent, input(1, spent(350))).unwrap();
    let r = run.verify().unwrap();
    assert!(!r.clean);
    assert_eq!(r.findings.len(), 1);
    assert_eq!((r.findings[0].code, r.findings[0].admitted), ("steer-overspent", true));
    assert_eq!(r.checkpoints[1].verdict, "finding");
    assert_eq!(r.checkpoints[1].remainder, Remainder::Known { uj: 0 });
}

#[test]
fn c21_run_file_round_trips_and_the_decoder_names_the_record() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
    let mut run = Run::new(g.clone());
    run.checkpoint(&k.agent, input(0, spent(100))).unwrap();
    run.amend(&k.issuer, amend(500)).unwrap();
    run.checkpoint(&k.agent, input(1, spent(200))).unwrap();
    let bytes = run.to_bytes();
    let back = Run::from_bytes(&bytes).unwrap();
    assert_eq!(back, run);
    assert_eq!(back.to_bytes(), bytes);
    assert!(back.verify().unwrap().clean);
    // Cut inside the last record (inside its signature's byte string):
    // names record #4 and the byte where it starts.
    let starts = {
        let mut off = jcp::cbor::decode_prefix(&bytes, jcp::cbor::Profile::Strict).unwrap().1;
        let mut v = Vec::new();
        while off < bytes.len() {
            v.push(off);
            off += jcp::cbor::decode_prefix(&bytes[off..], jcp::cbor::Profile::Strict).unwrap().1;
        }
        v
    };
    assert_eq!(starts.len(), 5);
    let e = Run::from_bytes(&bytes[..bytes.len() - 3]).unwrap_err();
    assert_eq!(e.code(), "cbor-length-too-large");
    match &e {
        jcp::Error::Steering(steering::SteeringError::RunFile { index, offset, .. }) => {
            assert_eq!((*index, *offset), (Some(4), starts[4]));
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("record #4"), "{e}");
    // Wrong header; empty; a first record that is not a grant; unknown kind;
    // a record that is not canonical.
    let hdr = |f: &str| cbor::map([("format", Some(Value::text(f)))]).encode();
    let mut wrong = hdr("jcp-run/2");
    wrong.extend_from_slice(&bytes[starts[0]..]);
    assert_eq!(Run::from_bytes(&wrong).unwrap_err().code(), "run-header");
    assert_eq!(Run::from_bytes(&[]).unwrap_err().code(), "cbor-truncated");
    assert_eq!(Run::from_bytes(&hdr("jcp-run/1")).unwrap_err().code(), "run-header");
    let mut cp_first = hdr("jcp-run/1");
    cp_first.extend_from_slice(&bytes[starts[1]..]);
    assert_eq!(Run::from_bytes(&cp_first).unwrap_err().code(), "run-header");
    let mut unknown = bytes.clone();
    unknown.extend_from_slice(&Value::Map(vec![(Value::text("receipt"), Value::Uint(1))]).encode());
    let e = Run::from_bytes(&unknown).unwrap_err();
    assert_eq!(e.code(), "schema-unknown-field");
    assert!(e.to_string().contains("record #5"), "{e}");
    let mut trailing = bytes.clone();
    trailing.push(0xf5); // `true`: forbidden in the strict profile
    assert_eq!(Run::from_bytes(&trailing).unwrap_err().code(), "cbor-forbidden-type");
}

#[test]
fn c21_demo_run_verifies_clean_and_is_deterministic() {
    let t = tempfile_dir();
    let p = t.join("demo.jcprun");
    let s = steering::demo::write_demo_run(&p, 7).unwrap();
    assert!(s.clean);
    assert_eq!((s.checkpoints, s.amendments, s.records), (7, 1, 10));
    let run = Run::read(&p).unwrap();
    let r = run.verify().unwrap();
    assert!(r.clean, "{:?}", r.findings);
    assert_eq!(r.checkpoints[0].spent, None);
    assert_eq!(r.checkpoints[0].remainder, Remainder::Unknown { reason: UnknownReason::NotStated });
    assert_eq!(r.checkpoints[3].amendments.len(), 1);
    assert!(r.checkpoints[3].amendments[0].continuation_verified);
    assert!(r.checkpoints[3].amendments[0].instructions.is_some());
    let grades: Vec<_> = r.checkpoints.iter().filter_map(|c| c.spent.map(|s| s.provenance)).collect();
    assert_eq!(&grades[..3], &[Provenance::Estimator, Provenance::ModelBased, Provenance::HwShunt]);
    let spends: Vec<u64> = r.checkpoints.iter().filter_map(|c| c.spent.map(|s| s.uj)).collect();
    assert!(spends.windows(2).all(|w| w[0] < w[1]));
    assert!(matches!(r.remainder, Remainder::Known { uj } if uj > 0));
    // Deterministic from the seed; another seed is another run.
    assert_eq!(std::fs::read(&p).unwrap(), steering::demo::demo_run(7).unwrap().to_bytes());
    assert_ne!(steering::demo::demo_run(8).unwrap().to_bytes(), run.to_bytes());
    assert!(steering::demo::demo_run(8).unwrap().verify().unwrap().clean);
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("jcp-c21-{}-{}", std::process::id(), NOW));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn c21_run_report_json_shape_is_what_the_console_reads() {
    let run = steering::demo::demo_run(1).unwrap();
    let v = serde_json::to_value(run.verify().unwrap()).unwrap();
    for key in [
        "format",
        "clean",
        "run_grant",
        "agent",
        "issuer",
        "issued_budget_uj",
        "active_grant",
        "active_budget_uj",
        "latest_spent",
        "remainder",
        "records",
        "grants",
        "checkpoints",
        "unattached_amendments",
        "findings",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["format"], "jcp-run/1");
    let c0 = &v["checkpoints"][0];
    assert!(c0["spent"].is_null());
    assert_eq!(c0["remainder"], serde_json::json!({"state": "unknown", "reason": "not_stated"}));
    let c3 = &v["checkpoints"][3];
    assert_eq!(c3["spent"]["provenance"], "HwShunt");
    assert_eq!(c3["remainder"]["state"], "known");
    for key in [
        "index",
        "id",
        "amended_by",
        "budget_uj",
        "ceiling_uj",
        "expiry",
        "instructions",
        "continuation",
        "continuation_verified",
    ] {
        assert!(c3["amendments"][0].get(key).is_some(), "amendment row missing {key}");
    }
    for key in [
        "index",
        "seq",
        "id",
        "grant_id",
        "state",
        "at",
        "spent",
        "remainder",
        "amend_ceiling_uj",
        "amendments",
        "verdict",
        "codes",
    ] {
        assert!(c0.get(key).is_some(), "checkpoint row missing {key}");
    }
    assert_eq!(v["grants"][1]["role"], "continuation");
}

// ------------------------------------------------------------------ property

#[derive(Debug, Clone)]
enum Op {
    Checkpoint { delta: u64, state_spend: bool },
    Amend { budget: u64, cont_budget: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..400, prop::bool::weighted(0.85)).prop_map(|(delta, state_spend)| Op::Checkpoint { delta, state_spend }),
        (0u64..1_500, 0u64..1_500).prop_map(|(budget, cont_budget)| Op::Amend { budget, cont_budget }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// C21 / §4.7: whatever amendments the issuer signs — within or beyond
    /// the rules — the verifier never lets the remaining budget rise, and
    /// the authoring routine never produces a run the verifier refuses.
    #[test]
    fn c21_no_sequence_of_amendments_ever_raises_the_remaining_budget(ops in prop::collection::vec(op(), 1..14)) {
        let k = k();
        let g = grant_from(&k.issuer, &k.agent, 1_000, 1);
        // Raw run: records built without the authoring routine.
        let mut raw = Run::new(g.clone());
        let mut active = g.clone();
        let mut last: Option<SignedCheckpoint> = None;
        let mut seq = 0;
        let mut spend = 0;
        let mut stated = false;
        // Honest run through the authoring routine.
        let mut honest = Run::new(g.clone());
        for (i, o) in ops.iter().enumerate() {
            match *o {
                Op::Checkpoint { delta, state_spend } => {
                    spend += delta;
                    let s = (state_spend || stated).then_some(Spent { uj: spend, provenance: Provenance::Estimator });
                    stated |= s.is_some();
                    let cp = raw_cp(&k.agent, &active, seq, last.as_ref(), s);
                    raw.push(Record::Checkpoint(cp.clone()));
                    last = Some(cp);
                    seq += 1;
                    let _ = honest.checkpoint(&k.agent, input(i as u64, s));
                }
                Op::Amend { budget, cont_budget } => {
                    if let Some(cp) = &last {
                        let cont = grant_from(&k.issuer, &k.agent, cont_budget, 100 + u8::try_from(i).unwrap());
                        raw.push(Record::Amendment(raw_am(&k.issuer, &active, cp, budget, &cont)));
                        raw.push(Record::Grant(cont.clone()));
                        active = cont;
                    }
                    let _ = honest.amend(&k.issuer, AmendInput { nonce: Some([u8::try_from(i).unwrap(); 16]), continuation_nonce: Some([u8::try_from(i + 1).unwrap(); 16]), ..amend(budget) });
                }
            }
        }
        for run in [&raw, &honest] {
            let r = run.verify().unwrap();
            let mut prev: Option<u64> = None;
            for c in r.checkpoints.iter().filter(|c| c.verdict != "refused") {
                // The most anyone may still spend from here: a known
                // remainder, or the amendment ceiling where it is unknown.
                let left = match c.remainder { Remainder::Known { uj } => uj, Remainder::Unknown { .. } => c.amend_ceiling_uj.unwrap() };
                if let Some(p) = prev {
                    prop_assert!(left <= p, "remaining rose from {} to {} at record {}", p, left, c.index);
                }
                for a in &c.amendments {
                    prop_assert!(a.budget_uj <= a.ceiling_uj);
                    prop_assert!(a.ceiling_uj <= left);
                }
                prev = Some(left);
            }
            prop_assert!(r.active_budget_uj.unwrap_or(0) <= 1_000);
        }
        let hr = honest.verify().unwrap();
        prop_assert!(hr.findings.iter().all(|f| f.admitted), "authored run has refused records: {:?}", hr.findings);
    }
}

// ------------------------------------------- amendments at the gate (§4.7 soft revoke)

fn frame_on(g: &SignedGrant) -> jcp::frame::Frame {
    jcp::frame::Frame {
        kind: jcp::frame::FrameKind::ToolCall,
        trust: jcp::frame::Trust::Control,
        grant_id: g.id(),
        action: "run".into(),
        resource: g.grant().capability.resource,
        payload_hash: ContentId::of(&Value::text("p")),
        model: None,
    }
}

fn spend(gate: &mut jcp::decision::Gate, g: &SignedGrant, agent: &Keypair, uj: u64) -> jcp::decision::Decision {
    let cost = jcp::decision::Cost::energy(jcp::energy::Energy::new(uj, Provenance::HwShunt));
    let f = frame_on(g);
    let did = agent.did();
    gate.decide(&jcp::decision::Request {
        frame: &f,
        chain: std::slice::from_ref(g),
        caller: &did,
        cost: &cost,
        now: NOW,
        flow: None,
    })
}

#[test]
fn c21_an_admitted_amendment_supersedes_the_steered_grant() {
    // Grant 1000 µJ, 700 spent, amended to 300: before, the agent could
    // spend 300 on the old grant plus 300 on the continuation.
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1000, 1);
    let mut gate = jcp::decision::Gate::new();
    assert!(spend(&mut gate, &g, &k.agent, 700).is_allow());
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(1, spent(700))).unwrap();
    let (am, cont) = run.amend(&k.issuer, AmendInput { budget_uj: 300, ..AmendInput::default() }).unwrap();
    gate.admit_amendment(&g, &cp, &am, &cont).unwrap();
    assert!(gate.is_superseded(&g.id()));
    let d = spend(&mut gate, &g, &k.agent, 1);
    assert_eq!(d.reason(), Some(jcp::decision::Reason::Superseded), "{}", d.detail);
    // Phase one of the metered path refuses it too.
    let f = frame_on(&g);
    let did = k.agent.did();
    let zero = jcp::decision::Cost::energy(jcp::energy::Energy::new(0, Provenance::HwShunt));
    let req = jcp::decision::Request {
        frame: &f,
        chain: std::slice::from_ref(&g),
        caller: &did,
        cost: &zero,
        now: NOW,
        flow: None,
    };
    assert_eq!(gate.authorize(&req).unwrap_err().reason(), Some(jcp::decision::Reason::Superseded));
    assert!(spend(&mut gate, &cont, &k.agent, 300).is_allow());
    assert_eq!(spend(&mut gate, &cont, &k.agent, 1).reason(), Some(jcp::decision::Reason::BudgetExceeded));
}

#[test]
fn c21_a_superseded_grant_is_amended_once_and_the_same_amendment_again_changes_nothing() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1000, 1);
    let mut gate = jcp::decision::Gate::new();
    assert!(spend(&mut gate, &g, &k.agent, 700).is_allow());
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(1, spent(700))).unwrap();
    let (am, cont) = run.amend(&k.issuer, AmendInput { budget_uj: 300, ..AmendInput::default() }).unwrap();
    gate.admit_amendment(&g, &cp, &am, &cont).unwrap();
    // The same amendment again (a feed and the run file both carry it): admitted, nothing new.
    gate.admit_amendment(&g, &cp, &am, &cont).unwrap();
    assert_eq!(gate.superseded_by(&g.id()), Some(am.id()));
    // Another amendment of the same grant would hand out a second continuation from the same remainder.
    let mut other = Run::new(g.clone());
    let cp2 = other.checkpoint(&k.agent, input(1, spent(700))).unwrap();
    let (am2, cont2) = other.amend(&k.issuer, AmendInput { budget_uj: 300, ..AmendInput::default() }).unwrap();
    assert_ne!(am2.id(), am.id());
    let e = gate.admit_amendment(&g, &cp2, &am2, &cont2).unwrap_err();
    assert_eq!(e.code(), "steer-sequence", "{e}");
    assert_eq!(gate.superseded_by(&g.id()), Some(am.id()), "the first amendment stands");
    assert!(spend(&mut gate, &cont, &k.agent, 300).is_allow());
}

#[test]
fn c21_the_gate_refuses_an_amendment_above_the_remainder_it_recorded() {
    // The agent understates its spend (500 where the gate saw 700): the
    // checkpoint's figure would allow 500, the gate's record only 300.
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1000, 1);
    let mut gate = jcp::decision::Gate::new();
    assert!(spend(&mut gate, &g, &k.agent, 700).is_allow());
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(1, spent(500))).unwrap();
    let (am, cont) = run.amend(&k.issuer, AmendInput { budget_uj: 500, ..AmendInput::default() }).unwrap();
    let e = gate.admit_amendment(&g, &cp, &am, &cont).unwrap_err();
    assert!(e.to_string().contains("remainder 300"), "{e}");
    assert!(!gate.is_superseded(&g.id()), "a refused amendment changes nothing");
    assert!(spend(&mut gate, &g, &k.agent, 300).is_allow());
    // A forged amendment (signed by the agent) is refused too.
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(1, spent(1000))).unwrap();
    let forged = Amendment {
        grant_id: g.id(),
        checkpoint: cp.id(),
        amended_by: k.agent.did(),
        budget_uj: 0,
        expiry: None,
        instructions: None,
        continuation: cont.id(),
        nonce: [3; 16],
    }
    .sign(&k.agent);
    assert!(gate.admit_amendment(&g, &cp, &forged, &cont).is_err());
    assert!(!gate.is_superseded(&g.id()));
}

#[test]
fn c21_a_chain_through_a_superseded_grant_is_refused() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1000, 1);
    let worker = Keypair::from_seed([7; 32]).unwrap();
    let child = jcp::grant::attenuate(
        &g,
        &k.agent,
        jcp::grant::Attenuation {
            subject: Some(worker.did()),
            actions: None,
            budget_uj: Some(100),
            budget_funds: None,
            add_caveats: vec![],
            expiry: None,
            delegate_depth: None,
            nonce: Some([8; 16]),
        },
    )
    .unwrap();
    let mut gate = jcp::decision::Gate::new();
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&k.agent, input(1, spent(0))).unwrap();
    let (am, cont) = run.amend(&k.issuer, AmendInput { budget_uj: 500, ..AmendInput::default() }).unwrap();
    gate.admit_amendment(&g, &cp, &am, &cont).unwrap();
    let cost = jcp::decision::Cost::energy(jcp::energy::Energy::new(1, Provenance::HwShunt));
    let f = frame_on(&child);
    let chain = [g, child];
    let did = worker.did();
    let d = gate.decide(&jcp::decision::Request {
        frame: &f,
        chain: &chain,
        caller: &did,
        cost: &cost,
        now: NOW,
        flow: None,
    });
    assert_eq!(d.reason(), Some(jcp::decision::Reason::Superseded));
}

/// A 1000 µJ run grant, 200 µJ spent at a gate and declared at checkpoint
/// 1, amended there to 600 µJ: the gate, the run and the continuation.
fn steered_at_200(k: &K) -> (jcp::decision::Gate, Run, SignedGrant) {
    let g = grant_from(&k.issuer, &k.agent, 1000, 1);
    let mut gate = jcp::decision::Gate::new();
    assert!(spend(&mut gate, &g, &k.agent, 200).is_allow());
    let mut run = Run::new(g.clone());
    let cp1 = run.checkpoint(&k.agent, input(1, spent(200))).unwrap();
    let (am1, c1) = run.amend(&k.issuer, AmendInput { budget_uj: 600, ..AmendInput::default() }).unwrap();
    gate.admit_amendment(&g, &cp1, &am1, &c1).unwrap();
    (gate, run, c1)
}

#[test]
fn c21_a_continuation_steered_again_is_measured_from_where_it_began() {
    // 1000 µJ, amended to 600 at 200 declared; 200 more under the
    // continuation (400 declared): the second ceiling is 600 − 200 = 400,
    // not 600 − 400.
    let k = k();
    let (mut gate, mut run, c1) = steered_at_200(&k);
    assert!(spend(&mut gate, &c1, &k.agent, 200).is_allow());
    let cp2 = run.checkpoint(&k.agent, input(2, spent(400))).unwrap();
    let mut too_much = run.clone();
    assert!(too_much.amend(&k.issuer, AmendInput { budget_uj: 401, ..AmendInput::default() }).is_err());
    let (am2, c2) = run.amend(&k.issuer, AmendInput { budget_uj: 400, ..AmendInput::default() }).unwrap();
    gate.admit_amendment(&c1, &cp2, &am2, &c2).unwrap();
    assert_eq!(spend(&mut gate, &c1, &k.agent, 1).reason(), Some(jcp::decision::Reason::Superseded));
    assert!(spend(&mut gate, &c2, &k.agent, 400).is_allow());
    run.verify().unwrap();
}

/// §4.7: an unknown remainder says why in one of three closed words, the
/// JSON it always was (`{"state":"unknown","reason":"not_stated"}`).
#[test]
fn c21_unknown_remainder_reasons_serialise_as_their_words() {
    for (r, w) in [
        (UnknownReason::NotStated, "not_stated"),
        (UnknownReason::BaseUnknown, "base_unknown"),
        (UnknownReason::Refused, "refused"),
    ] {
        assert_eq!(r.as_str(), w);
        assert_eq!(
            serde_json::to_value(Remainder::Unknown { reason: r }).unwrap(),
            serde_json::json!({"state": "unknown", "reason": w})
        );
    }
}

/// §4.7 "Both the amending side and the verifying side MUST enforce this":
/// the gate computes the remainder from the checkpoint's stated spend, so it
/// verifies the checkpoint itself — an issuer-signed checkpoint, or one
/// with a flipped signature byte, stating `spent: 0`, is refused with the
/// amendment over it, and nothing is superseded.
#[test]
fn c21_the_gate_verifies_the_checkpoint_an_amendment_cites() {
    let k = k();
    let g = grant_from(&k.issuer, &k.agent, 1000, 1);
    let mut gate = jcp::decision::Gate::new();
    // The issuer writes the agent's checkpoint itself, claiming nothing spent.
    let by_issuer = raw_cp(&k.issuer, &g, 0, None, spent(0));
    let cont = grant_from(&k.issuer, &k.agent, 1000, 2);
    let am = raw_am(&k.issuer, &g, &by_issuer, 1000, &cont);
    let e = gate.admit_amendment(&g, &by_issuer, &am, &cont).unwrap_err();
    assert_eq!(e.code(), "steer-not-agent", "{e}");
    assert!(!gate.is_superseded(&g.id()));
    // The agent's checkpoint with one signature byte flipped.
    let good = raw_cp(&k.agent, &g, 0, None, spent(0));
    let mut v = cbor::decode_strict(&good.to_bytes()).unwrap();
    if let Value::Map(m) = &mut v {
        for (key, val) in m.iter_mut() {
            if *key == Value::text("sig") {
                if let Value::Bytes(b) = val {
                    b[7] ^= 1;
                }
            }
        }
    }
    let flipped = SignedCheckpoint::from_value(&v).unwrap();
    assert_eq!(flipped.id(), good.id(), "the signature is not part of the checkpoint's id");
    let am = raw_am(&k.issuer, &g, &flipped, 1000, &cont);
    let e = gate.admit_amendment(&g, &flipped, &am, &cont).unwrap_err();
    assert_eq!(e.code(), "bad-signature", "{e}");
    assert!(!gate.is_superseded(&g.id()));
    // verify_amendment, which every other verifier calls, refuses both too.
    assert!(verify_amendment(&g, &by_issuer, &raw_am(&k.issuer, &g, &by_issuer, 1000, &cont)).is_err());
    assert!(verify_amendment(&g, &flipped, &am).is_err());
    // The genuine checkpoint is admitted.
    let am = raw_am(&k.issuer, &g, &good, 1000, &cont);
    gate.admit_amendment(&g, &good, &am, &cont).unwrap();
    assert!(gate.is_superseded(&g.id()));
}

/// §4.7 "a declared spend is cumulative, so across one run it MUST NOT
/// decrease, and a checkpoint that once stated a spend MUST NOT later omit
/// it": at the gate, a checkpoint under a continuation may neither lower
/// nor omit the spend stated where this point admitted the amendment that
/// began the continuation.
#[test]
fn c21_the_gate_refuses_a_continuation_checkpoint_that_lowers_or_omits_the_stated_spend() {
    let k = k();
    let (mut gate, mut run, c1) = steered_at_200(&k);
    assert!(spend(&mut gate, &c1, &k.agent, 300).is_allow());
    // Checkpoints under c1 written outside the run (a side run rooted at
    // c1 signs whatever the agent states).
    for (stated, code) in [(spent(100), "steer-spend-decreased"), (None, "steer-spend-omitted")] {
        let mut side = Run::new(c1.clone());
        let cp2 = side.checkpoint(&k.agent, input(2, stated)).unwrap();
        let (am2, c2) = side.amend(&k.issuer, AmendInput { budget_uj: 300, ..AmendInput::default() }).unwrap();
        let e = gate.admit_amendment(&c1, &cp2, &am2, &c2).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        assert!(!gate.is_superseded(&c1.id()), "a refused amendment changes nothing");
    }
    // The run itself, stating at least what it stated before, is admitted.
    let cp2 = run.checkpoint(&k.agent, input(2, spent(500))).unwrap();
    let (am2, c2) = run.amend(&k.issuer, AmendInput { budget_uj: 300, ..AmendInput::default() }).unwrap();
    gate.admit_amendment(&c1, &cp2, &am2, &c2).unwrap();
}
