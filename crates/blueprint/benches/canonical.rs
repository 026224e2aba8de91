//! Canonicalization + digest of the golden Blueprint: this crate vs the
//! `serde_json_canonicalizer` baseline, measured in the same run.
//!
//! Both sides start from the received bytes and end with the domain-separated
//! SHA-256 digest of the RFC 8785 form, so each includes parsing.
//! `cargo bench -p blueprint --bench canonical` for numbers; under
//! `cargo test --benches` criterion runs each routine once.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::canon;
use blueprint::digest::{Domain, Tagged};
use blueprint::json;
use blueprint::limits::Limits;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use sha2::{Digest, Sha256};

fn golden() -> Vec<u8> {
    std::fs::read(testkit::interop("agent-blueprint-protocol/vectors/blueprint-golden.json")).expect("golden blueprint")
}

fn ours(bytes: &[u8]) -> Tagged {
    let v = json::decode(bytes, &Limits::default()).expect("decode");
    Tagged::compute(Domain::BlueprintContent, &canon::canonical_bytes(&v).expect("jcs"))
}

fn ours_canonical_first(bytes: &[u8]) -> Tagged {
    let v = canon::decode_canonical(bytes, &Limits::default()).expect("canonical");
    Tagged::compute(Domain::BlueprintContent, &canon::canonical_bytes(&v).expect("jcs"))
}

fn baseline(bytes: &[u8]) -> [u8; 32] {
    let v: serde_json::Value = serde_json::from_slice(bytes).expect("serde_json");
    let c = serde_json_canonicalizer::to_vec(&v).expect("jcs");
    let mut h = Sha256::new();
    h.update(Domain::BlueprintContent.separator().as_bytes());
    h.update([0u8]);
    h.update(&c);
    h.finalize().into()
}

fn bench(c: &mut Criterion) {
    let bytes = golden();
    // Same answer from both sides before timing anything.
    assert_eq!(ours(&bytes).0, baseline(&bytes), "implementations disagree on the golden blueprint");
    let mut g = c.benchmark_group("golden_blueprint_jcs_digest");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("blueprint", |b| b.iter(|| ours(black_box(&bytes))));
    g.bench_function("blueprint_canonical_first", |b| {
        b.iter(|| ours_canonical_first(black_box(&bytes)));
    });
    g.bench_function("serde_json_canonicalizer", |b| {
        b.iter(|| baseline(black_box(&bytes)));
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
