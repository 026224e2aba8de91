//! Paired, interleaved ratios for docs/performance.md: each round times a
//! block of baseline `verify_strict` calls and a block of decisions back to
//! back, so load on a shared machine hits both alike; the reported ratio is
//! the median over rounds. Run: `cargo bench -p jcp --bench decision_ratio`.
//! Under `cargo test --benches` it runs a handful of rounds only.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ed25519_dalek::{Signature, Signer, SigningKey};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;

mod fixture;
use fixture::{frame, three_hop};

fn time(n: u32, mut f: impl FnMut()) -> Duration {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed() / n
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, block) = if full { (60, 200) } else { (3, 5) };
    let (chain, ks) = three_hop();
    let root = chain[0].clone();
    let bottom = Label::bottom();
    let cost = Cost::energy(Energy::new(1, Provenance::HwShunt));
    let sk = SigningKey::from_bytes(&[9; 32]);
    let vk = sk.verifying_key();
    let msg = root.grant_bytes().to_vec();
    let sig: Signature = sk.sign(&msg);
    let gate = Gate::new();
    let f0 = frame(&root);
    let f3 = frame(&chain[2]);
    let (c0, c3) = (ks[1].did(), ks[3].did());
    let mut warm = Gate::new();
    assert!(warm
        .decide(&Request { frame: &f3, chain: &chain, caller: &c3, cost: &cost, now: 1, flow: Some(&bottom) })
        .is_allow());

    let (mut r1, mut r3, mut cached, mut base_ns) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let b = time(block, || assert!(black_box(vk.verify_strict(black_box(&msg), &sig)).is_ok()));
        let s = time(block, || {
            assert!(gate
                .evaluate(&Request {
                    frame: &f0,
                    chain: std::slice::from_ref(&root),
                    caller: &c0,
                    cost: &cost,
                    now: 1,
                    flow: Some(&bottom)
                })
                .is_allow());
        });
        let t = time(block, || {
            assert!(gate
                .evaluate(&Request { frame: &f3, chain: &chain, caller: &c3, cost: &cost, now: 1, flow: Some(&bottom) })
                .is_allow());
        });
        let c = time(block * 50, || {
            assert!(warm
                .evaluate(&Request { frame: &f3, chain: &chain, caller: &c3, cost: &cost, now: 1, flow: Some(&bottom) })
                .is_allow());
        });
        let bn = b.as_secs_f64();
        r1.push(s.as_secs_f64() / bn);
        r3.push(t.as_secs_f64() / bn);
        cached.push(c.as_secs_f64() * 1e6);
        base_ns.push(bn * 1e9);
    }
    println!("rounds={rounds} block={block}");
    println!("baseline verify_strict median: {:.1} µs", median(base_ns) / 1000.0);
    println!("single grant decision / verify_strict: {:.3}x (target <= 1.1x)", median(r1));
    println!("3-hop chain decision / verify_strict: {:.3}x (target <= 3.3x)", median(r3));
    println!("cached 3-hop chain decision: {:.3} µs (target <= 2 µs)", median(cached));
}
