//! Paired, interleaved ratios for docs/performance.md: each round times a
//! block of baseline `verify_strict` calls and a block of decisions back to
//! back, so load on a shared machine hits both alike; the reported ratio is
//! the median over rounds. Run: `cargo bench -p jcp --bench decision_ratio`.
//! Under `cargo test --benches` it runs a handful of rounds only.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ed25519_dalek::{Signature, Signer, SigningKey};
use jcp::cbor::{ContentId, Value};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{attenuate, Attenuation, Capability, Grant, SignedGrant};
use jcp::identity::Keypair;

fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
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
    let chain = vec![root.clone(), mid, leaf];
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
    assert!(warm.decide(&Request { frame: &f3, chain: &chain, caller: &c3, cost: &cost, now: 1, flow: Some(&bottom) }).is_allow());

    let (mut r1, mut r3, mut cached, mut base_ns) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let b = time(block, || assert!(black_box(vk.verify_strict(black_box(&msg), &sig)).is_ok()));
        let s = time(block, || {
            assert!(gate.evaluate(&Request { frame: &f0, chain: std::slice::from_ref(&root), caller: &c0, cost: &cost, now: 1, flow: Some(&bottom) }).is_allow());
        });
        let t = time(block, || {
            assert!(gate.evaluate(&Request { frame: &f3, chain: &chain, caller: &c3, cost: &cost, now: 1, flow: Some(&bottom) }).is_allow());
        });
        let c = time(block * 50, || {
            assert!(warm.evaluate(&Request { frame: &f3, chain: &chain, caller: &c3, cost: &cost, now: 1, flow: Some(&bottom) }).is_allow());
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
