//! Decision speed against the baseline of one `verify_strict` (issue: single
//! grant ≤ 1.1×, 3-hop chain ≤ 3.3×, cached chain ≤ 2 µs). Run:
//! `cargo bench -p jcp --bench decision`; ratios go to docs/performance.md.

use criterion::{criterion_group, criterion_main, Criterion};
use ed25519_dalek::{Signature, Signer, SigningKey};
use jcp::cbor::{ContentId, Value};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{attenuate, Attenuation, Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use std::hint::black_box;

fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

fn setup() -> (Vec<SignedGrant>, Vec<Keypair>) {
    let ks: Vec<Keypair> = (1..=4).map(key).collect();
    let root = Grant {
        issuer: ks[0].did(),
        subject: ks[1].did(),
        capability: Capability { resource: ContentId::of(&Value::text("bench")), actions: vec!["read".into()] },
        budget_uj: u64::MAX / 2,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [1; 16],
    }
    .sign(&ks[0])
    .unwrap();
    let mid = attenuate(&root, &ks[1], Attenuation { subject: Some(ks[2].did()), nonce: Some([2; 16]), ..Attenuation::default() }).unwrap();
    let leaf = attenuate(&mid, &ks[2], Attenuation { subject: Some(ks[3].did()), nonce: Some([3; 16]), ..Attenuation::default() }).unwrap();
    (vec![root, mid, leaf], ks)
}

fn frame(g: &SignedGrant) -> Frame {
    Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: g.id(),
        action: "read".into(),
        resource: g.grant().capability.resource,
        payload_hash: ContentId::of_bytes(b"p"),
        model: None,
    }
}

fn bench(c: &mut Criterion) {
    let (chain, ks) = setup();
    let bottom = Label::bottom();
    let cost = Cost::energy(Energy::new(1, Provenance::HwShunt));

    // Baseline: one verify_strict over a grant-sized message, key already parsed.
    let sk = SigningKey::from_bytes(&[9; 32]);
    let vk = sk.verifying_key();
    let msg = chain[0].grant_bytes().to_vec();
    let sig: Signature = sk.sign(&msg);
    c.bench_function("baseline/verify_strict", |b| b.iter(|| black_box(vk.verify_strict(black_box(&msg), &sig)).is_ok()));

    let gate = Gate::new();
    let f0 = frame(&chain[0]);
    let caller0 = ks[1].did();
    let single = std::slice::from_ref(&chain[0]);
    c.bench_function("decision/single_grant_with_signature", |b| {
        b.iter(|| {
            let d = gate.evaluate(&Request { frame: &f0, chain: single, caller: &caller0, cost: &cost, now: 1, flow: Some(&bottom) });
            black_box(d.is_allow())
        });
    });

    let f3 = frame(&chain[2]);
    let caller3 = ks[3].did();
    c.bench_function("decision/three_hop_chain_with_signatures", |b| {
        b.iter(|| {
            let d = gate.evaluate(&Request { frame: &f3, chain: &chain, caller: &caller3, cost: &cost, now: 1, flow: Some(&bottom) });
            black_box(d.is_allow())
        });
    });

    let mut warm = Gate::new();
    assert!(warm.decide(&Request { frame: &f3, chain: &chain, caller: &caller3, cost: &cost, now: 1, flow: Some(&bottom) }).is_allow());
    c.bench_function("decision/three_hop_chain_cached", |b| {
        b.iter(|| {
            let d = warm.evaluate(&Request { frame: &f3, chain: &chain, caller: &caller3, cost: &cost, now: 1, flow: Some(&bottom) });
            black_box(d.is_allow())
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
