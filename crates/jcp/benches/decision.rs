//! Decision speed against the baseline of one `verify_strict` (issue: single
//! grant ≤ 1.1×, 3-hop chain ≤ 3.3×, cached chain ≤ 2 µs). Run:
//! `cargo bench -p jcp --bench decision`; ratios go to docs/performance.md.

use criterion::{criterion_group, criterion_main, Criterion};
use ed25519_dalek::{Signature, Signer, SigningKey};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;
use std::hint::black_box;

mod fixture;
use fixture::{frame, three_hop};

fn bench(c: &mut Criterion) {
    let (chain, ks) = three_hop();
    let bottom = Label::bottom();
    let cost = Cost::energy(Energy::new(1, Provenance::HwShunt));

    // Baseline: one verify_strict over a grant-sized message, key already parsed.
    let sk = SigningKey::from_bytes(&[9; 32]);
    let vk = sk.verifying_key();
    let msg = chain[0].grant_bytes().to_vec();
    let sig: Signature = sk.sign(&msg);
    c.bench_function("baseline/verify_strict", |b| {
        b.iter(|| black_box(vk.verify_strict(black_box(&msg), &sig)).is_ok())
    });

    let gate = Gate::new();
    let f0 = frame(&chain[0]);
    let caller0 = ks[1].did();
    let single = std::slice::from_ref(&chain[0]);
    c.bench_function("decision/single_grant_with_signature", |b| {
        b.iter(|| {
            let d = gate.evaluate(&Request {
                frame: &f0,
                chain: single,
                caller: &caller0,
                cost: &cost,
                now: 1,
                flow: Some(&bottom),
            });
            black_box(d.is_allow())
        });
    });

    let f3 = frame(&chain[2]);
    let caller3 = ks[3].did();
    c.bench_function("decision/three_hop_chain_with_signatures", |b| {
        b.iter(|| {
            let d = gate.evaluate(&Request {
                frame: &f3,
                chain: &chain,
                caller: &caller3,
                cost: &cost,
                now: 1,
                flow: Some(&bottom),
            });
            black_box(d.is_allow())
        });
    });

    let mut warm = Gate::new();
    assert!(warm
        .decide(&Request { frame: &f3, chain: &chain, caller: &caller3, cost: &cost, now: 1, flow: Some(&bottom) })
        .is_allow());
    c.bench_function("decision/three_hop_chain_cached", |b| {
        b.iter(|| {
            let d = warm.evaluate(&Request {
                frame: &f3,
                chain: &chain,
                caller: &caller3,
                cost: &cost,
                now: 1,
                flow: Some(&bottom),
            });
            black_box(d.is_allow())
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
