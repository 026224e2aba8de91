//! Canonicalize + hash a typical binding (the spec's first binding,
//! ../shared/interop/agent-safe-intent/agent-safe-intent-v1.json), against
//! Node's own JSON.stringify + sha256 on the same input in the same run
//! (`benches/node_baseline.mjs`), the reference's platform.
//!
//!     cargo bench -p intent --bench canonical_hash
//!
//! Criterion measures the Rust side; with `--bench` the harness also times
//! both sides the same way (median of rounds of a fixed loop) and prints the
//! ratios. Under `cargo test --benches` each benchmark runs once and Node is
//! not started.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use criterion::{criterion_group, Criterion, Throughput};

fn input() -> (std::path::PathBuf, Vec<u8>, intent::Value) {
    let path = testkit::interop("agent-safe-intent/agent-safe-intent-v1.json");
    let doc = intent::parse(&std::fs::read(&path).expect("read vector")).expect("parse vector");
    let binding = doc.as_object().and_then(|o| o.get("binding")).expect("vector has a binding").clone();
    let text = intent::canonical_json(&binding).expect("canonical").into_bytes();
    (path, text, binding)
}

fn bench(c: &mut Criterion) {
    let (_, text, binding) = input();
    let mut g = c.benchmark_group("intent");
    g.throughput(Throughput::Elements(1));
    g.bench_function("canonicalize+sha256 (parsed binding)", |b| {
        b.iter(|| intent::canonicalize(black_box(&binding)).expect("ok"))
    });
    g.bench_function("parse+canonicalize+sha256 (JSON text)", |b| {
        b.iter(|| intent::canonicalize(&intent::parse(black_box(&text)).expect("parse")).expect("ok"));
    });
    g.bench_function("accept (rules+canonicalize+sha256)", |b| {
        b.iter(|| intent::accept(black_box(&binding)).expect("ok"))
    });
    g.finish();
}

fn median_ns(iterations: u32, rounds: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..iterations {
        f();
    }
    let mut samples: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iterations {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / f64::from(iterations)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[rounds / 2]
}

/// Same-run comparison with Node: both sides time the same loop shape.
fn node_comparison() {
    let (path, text, binding) = input();
    let (iterations, rounds) = (20_000u32, 7usize);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node_baseline.mjs");
    let out =
        match Command::new("node").arg(&script).arg(&path).arg(iterations.to_string()).arg(rounds.to_string()).output()
        {
            Ok(o) if o.status.success() => o,
            Ok(o) => {
                eprintln!("node baseline failed: {}", String::from_utf8_lossy(&o.stderr));
                return;
            }
            Err(e) => {
                eprintln!("node baseline not run (node not found: {e}); Rust figures only above");
                return;
            }
        };
    let node: serde_json::Value = serde_json::from_slice(&out.stdout).expect("node prints one JSON line");
    let rust_value = median_ns(iterations, rounds, || {
        black_box(intent::canonicalize(black_box(&binding)).expect("ok"));
    });
    let rust_text = median_ns(iterations, rounds, || {
        black_box(intent::canonicalize(&intent::parse(black_box(&text)).expect("parse")).expect("ok"));
    });
    let node_value = node["value_ns"].as_f64().expect("value_ns");
    let node_text = node["text_ns"].as_f64().expect("text_ns");
    assert_eq!(
        node["hash"].as_str(),
        Some(intent::canonicalize(&binding).expect("ok").intent_hash.as_str()),
        "both sides hash the same bytes"
    );
    println!(
        "\nsame-run comparison with Node {} ({} bytes canonical, median of {rounds} x {iterations}):",
        node["node"].as_str().unwrap_or("?"),
        text.len()
    );
    println!("  parsed binding -> canonical+sha256:  rust {rust_value:8.0} ns/op   node {node_value:8.0} ns/op   rust/node throughput {:.2}x", node_value / rust_value);
    println!("  JSON text -> parse+canonical+sha256: rust {rust_text:8.0} ns/op   node {node_text:8.0} ns/op   rust/node throughput {:.2}x", node_text / rust_text);
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if std::env::args().any(|a| a == "--bench") {
        node_comparison();
    }
}
