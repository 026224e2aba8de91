//! Callers' signatures checked alone against in batches (§2, §11; the
//! endpoint's `CallerSignatures`), for docs/performance.md. Each round
//! times the same 64 signatures (830-byte messages, the size of the wire
//! benchmark's signed requests) checked one by one with `verify_strict`
//! (the baseline) and then in batches of n with
//! `verify_batch`, back to back, so load on a shared
//! machine hits both alike; the reported figure is the median over rounds.
//! Twice: all by one caller's key (the terms of a repeated key are merged),
//! and each by its own.
//! Run: `cargo bench -p jcp --bench batch_ratio`. Under
//! `cargo test --benches` it runs a handful of rounds only.

use std::hint::black_box;
use std::time::Instant;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use jcp::identity::batch::verify_batch;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let rounds = if full { 200 } else { 2 };
    let sizes = [1usize, 2, 3, 4, 6, 8, 16, 32, 64];
    for distinct in [false, true] {
        table(rounds, &sizes, distinct);
        println!();
    }
}

/// One table: every signature by one key, or (`distinct`) each by its own.
fn table(rounds: usize, sizes: &[usize], distinct: bool) {
    let sks: Vec<SigningKey> =
        (0..64u8).map(|i| SigningKey::from_bytes(&[if distinct { i + 1 } else { 7 }; 32])).collect();
    let vks: Vec<VerifyingKey> = sks.iter().map(SigningKey::verifying_key).collect();
    let msgs: Vec<Vec<u8>> = (0..64u64)
        .map(|i| {
            let mut m = vec![0xa5u8; 830];
            m[..8].copy_from_slice(&i.to_le_bytes());
            m
        })
        .collect();
    let sigs: Vec<[u8; 64]> = msgs.iter().zip(&sks).map(|(m, sk)| sk.sign(m).to_bytes()).collect();
    let keys: Vec<&VerifyingKey> = vks.iter().collect();
    let pieces: Vec<[&[u8]; 1]> = msgs.iter().map(|m| [m.as_slice()]).collect();
    let mut alone = Vec::new();
    let mut batched: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    for _ in 0..rounds {
        let t = Instant::now();
        for ((m, s), vk) in msgs.iter().zip(&sigs).zip(&vks) {
            assert!(black_box(vk).verify_strict(m, &Signature::from_bytes(s)).is_ok());
        }
        alone.push(t.elapsed().as_secs_f64() / 64.0);
        for (k, &n) in sizes.iter().enumerate() {
            let t = Instant::now();
            for at in (0..64).step_by(n) {
                let end = (at + n).min(64);
                assert!(verify_batch(black_box(&pieces[at..end]), &sigs[at..end], &keys[at..end]));
            }
            batched[k].push(t.elapsed().as_secs_f64() / 64.0);
        }
    }
    let base = median(alone);
    let who = if distinct { "64 keys, one each" } else { "one key" };
    println!("{rounds} rounds of 64 signatures, {who}, 830-byte messages; medians");
    println!();
    println!("| check | µs per signature | vs `verify_strict` alone |");
    println!("|---|---|---|");
    println!("| baseline: `verify_strict`, one at a time | {:.1} | 1.00× |", base * 1e6);
    for (k, &n) in sizes.iter().enumerate() {
        let t = median(batched[k].clone());
        println!("| `verify_batch`, batches of {n} | {:.1} | {:.2}× |", t * 1e6, base / t);
    }
}
