#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::cast_precision_loss,
    clippy::similar_names,
    clippy::many_single_char_names
)] // benchmark code, like tests
//! Audit throughput against the pure signature-check baseline, same run,
//! same signatures.
//!
//! * baseline: `ed25519_dalek::verify_batch` over every signature in the
//!   stream (receipts, outcomes, notices), single-threaded, batches of the
//!   same size the audit uses; preparing the inputs is not timed.
//! * merged-key verification: the audit's own batch verifier
//!   (`jcp_audit::batch`, repeated keys merged) over the same signatures,
//!   so the audit's time minus this is its decode + replay + accounting.
//! * audit: `jcp_audit::audit_paths` end to end (read, frame, decode, verify,
//!   replay, account, report) with 1 thread (per-core ratio) and all cores.
//!
//! Modes: `cargo test --benches` (no `--bench`): a tiny stream, each bench
//! once. `cargo bench -p jcp-audit`: criterion over `JCP_BENCH_RECEIPTS`
//! (default 20 000). `JCP_BENCH_ONESHOT=1 JCP_BENCH_RECEIPTS=1000000 cargo
//! bench -p jcp-audit`: one timed pass of each over the big stream, peak RSS
//! of the audit, printed as a table (what docs/performance.md quotes).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use ed25519_dalek::{Signature, VerifyingKey};
use jcp_audit::{audit_paths, AuditOptions};
use jcp_receipt::cose::{self, DidCache};
use jcp_receipt::demo::{self, DemoOptions};
use jcp_receipt::stream::{Batch, BatchItem, Item, Reader, RecordKind};
use jcp_receipt::writer::Durability;

const BATCH: usize = 64;

fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn receipts() -> u64 {
    if !bench_mode() {
        return 200;
    }
    std::env::var("JCP_BENCH_RECEIPTS").ok().and_then(|s| s.parse().ok()).unwrap_or(20_000)
}

fn stream_path(n: u64) -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    dir.join(format!("jcp-audit-bench-{n}.jcps"))
}

/// Generates (once, cached by size) a mixed allow/deny stream of 3-hop chains.
fn ensure_stream(n: u64) -> PathBuf {
    let p = stream_path(n);
    let marker = p.with_extension("ok");
    if marker.exists() && p.exists() {
        return p;
    }
    let _ = std::fs::remove_file(&p);
    let t = Instant::now();
    let s = demo::write_demo(
        &p,
        &DemoOptions { receipts: n, tamper: 0, unresolved: 0, seed: 11, durability: Durability::GeneratorOnly },
    )
    .expect("generate");
    eprintln!(
        "generated {}: {} receipts ({} allow, {} deny), {} bytes in {:.1}s",
        p.display(),
        s.receipts,
        s.allows,
        s.denies,
        s.bytes,
        t.elapsed().as_secs_f64()
    );
    std::fs::write(&marker, b"ok").expect("marker");
    p
}

/// Which batch verifier a baseline times.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verifier {
    /// `ed25519_dalek::verify_batch`: the baseline.
    Dalek,
    /// `jcp_audit::batch::verify_batch` (repeated keys merged): the audit's
    /// own signature checking, so `audit - this` is what decoding, replay
    /// and accounting cost.
    Merged,
}

/// Times a batch verifier over every signature in the stream; input
/// preparation (decoding, building ToBeSigned) is done chunk by chunk and
/// not timed, so memory stays bounded.
fn baseline_with(p: &Path, which: Verifier) -> (Duration, u64) {
    let reader = Reader::new(std::io::BufReader::new(std::fs::File::open(p).expect("open"))).expect("header");
    let mut dids = DidCache::new();
    let mut timed = Duration::ZERO;
    let mut n = 0u64;
    let mut chunk: Vec<(Vec<u8>, [u8; 64], VerifyingKey)> = Vec::with_capacity(4096);
    let flush = |chunk: &mut Vec<(Vec<u8>, [u8; 64], VerifyingKey)>, timed: &mut Duration, n: &mut u64| {
        let t = Instant::now();
        for b in chunk.chunks(BATCH) {
            let msgs: Vec<&[u8]> = b.iter().map(|x| x.0.as_slice()).collect();
            match which {
                Verifier::Dalek => {
                    let sigs: Vec<Signature> = b.iter().map(|x| Signature::from_bytes(&x.1)).collect();
                    let keys: Vec<VerifyingKey> = b.iter().map(|x| x.2).collect();
                    ed25519_dalek::verify_batch(&msgs, &sigs, &keys).expect("all valid");
                }
                Verifier::Merged => {
                    let sigs: Vec<[u8; 64]> = b.iter().map(|x| x.1).collect();
                    let keys: Vec<&VerifyingKey> = b.iter().map(|x| &x.2).collect();
                    let msgs: Vec<[&[u8]; 1]> = msgs.iter().map(|m| [*m]).collect();
                    assert!(jcp_audit::batch::verify_batch(&msgs, &sigs, &keys), "all valid");
                }
            }
        }
        *timed += t.elapsed();
        *n += chunk.len() as u64;
        chunk.clear();
    };
    for item in reader {
        if let Item::Record(r) = item {
            if r.kind == RecordKind::Grant {
                continue;
            }
            let (s, _) = cose::open(&r.payload, &mut dids).expect("valid");
            chunk.push((s.tbs, s.signature, *s.steward.verifying_key()));
            if chunk.len() == 4096 {
                flush(&mut chunk, &mut timed, &mut n);
            }
        }
    }
    flush(&mut chunk, &mut timed, &mut n);
    (timed, n)
}

fn baseline(p: &Path) -> (Duration, u64) {
    baseline_with(p, Verifier::Dalek)
}

/// Reading, framing and decoding every record without checking a
/// signature, the way the audit reads (batches of 4 096, no record ids):
/// its read and decode cost alone, single-threaded.
fn decode_only(p: &Path) -> (Duration, Duration) {
    let t = Instant::now();
    let mut reader = Reader::new(std::fs::File::open(p).expect("open")).expect("header");
    let mut batch = Batch::new();
    let mut n = 0u64;
    while reader.read_batch(4096, &mut batch) > 0 {
        n += batch.items().iter().map(|i| batch.payload(i).len() as u64).sum::<u64>();
    }
    let read = t.elapsed();
    assert!(n > 0);
    let t = Instant::now();
    let mut reader = Reader::new(std::fs::File::open(p).expect("open")).expect("header");
    let mut dids = DidCache::new();
    while reader.read_batch(4096, &mut batch) > 0 {
        for item in batch.items() {
            if let BatchItem::Record { kind, .. } = *item {
                let payload = batch.payload(item);
                match kind {
                    RecordKind::Receipt => {
                        // As the audit does: the checked view, else the typed path.
                        if jcp_receipt::receipt::OpenedReceipt::open_view(payload, &mut dids).is_none() {
                            jcp_receipt::receipt::OpenedReceipt::open_unsealed(payload, &mut dids).expect("valid");
                        }
                    }
                    RecordKind::Outcome => {
                        jcp_receipt::open::open_outcome_unsealed(payload, &mut dids).expect("valid");
                    }
                    _ => {}
                }
            }
        }
    }
    (read, t.elapsed())
}

fn run_audit(p: &Path, threads: usize) -> jcp_audit::Report {
    let opts = AuditOptions { threads, ..AuditOptions::default() };
    audit_paths(&[p], &opts, |_| ControlFlow::Continue(())).expect("audit")
}

/// One timed audit and, with `--features phase-timing`, its phases.
fn timed_audit(p: &Path, threads: usize) -> (jcp_audit::Report, Duration, Option<jcp_audit::phases::Phases>) {
    let _ = jcp_audit::phases::snapshot();
    let t = Instant::now();
    let r = run_audit(p, threads);
    let d = t.elapsed();
    (r, d, jcp_audit::phases::snapshot())
}

fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The 1-thread audit's own phases (`--features phase-timing`): its
/// signature checks measured inside the same run, so the rest is what
/// decoding, record ids, replay and accounting cost there.
fn print_phases(round: usize, total: Duration, ph: &jcp_audit::phases::Phases) {
    let s = |ns: u64| ns as f64 / 1e9;
    let all = total.as_secs_f64();
    let decode = ph.slices_ns.saturating_sub(ph.verify_ns).saturating_sub(ph.ids_ns);
    println!(
        "round {round} phases: total {all:.2}s = signature checks {:.2}s + read/frame {:.2}s + decode {:.2}s + record ids {:.2}s + accounting {:.2}s + other {:.2}s; not signature checks: {:.1}% of the audit's time",
        s(ph.verify_ns),
        s(ph.read_ns),
        s(decode),
        s(ph.ids_ns),
        s(ph.account_ns),
        all - s(ph.read_ns) - s(ph.slices_ns) - s(ph.account_ns),
        100.0 * (1.0 - s(ph.verify_ns) / all)
    );
}

fn oneshot(n: u64) {
    let p = ensure_stream(n);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let repeat: usize = std::env::var("JCP_BENCH_REPEAT").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    let (read, decode) = decode_only(&p);
    println!(
        "read+frame only: {:.2}s; read+frame+decode (no verify): {:.2}s",
        read.as_secs_f64(),
        decode.as_secs_f64()
    );
    // Interleaved rounds, best of each: the machine is shared, so a slow
    // round says more about the neighbours than about the code.
    let (mut base, mut merged, mut a1, mut an) = (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
    let (mut sigs, mut rss1, mut rssn) = (0, 0, 0);
    for round in 0..repeat {
        let (b, s) = baseline(&p);
        sigs = s;
        let (m, _) = baseline_with(&p, Verifier::Merged);
        reset_peak_rss();
        let (r1, d1, phases) = timed_audit(&p, 1);
        if let Some(ph) = phases {
            print_phases(round, d1, &ph);
        }
        rss1 = rss1.max(peak_rss_kib().unwrap_or(0));
        assert!(r1.clean, "the generated stream audits clean");
        reset_peak_rss();
        let t = Instant::now();
        let rn = run_audit(&p, cores);
        let dn = t.elapsed();
        rssn = rssn.max(peak_rss_kib().unwrap_or(0));
        assert_eq!(rn.receipts.verified, r1.receipts.verified);
        println!(
            "round {round}: baseline {:.2}s, merged-key verification {:.2}s, audit 1 thread {:.2}s (ratio {:.3}, non-crypto share {:.1}%), audit {cores} threads {:.2}s",
            b.as_secs_f64(),
            m.as_secs_f64(),
            d1.as_secs_f64(),
            b.as_secs_f64() / d1.as_secs_f64(),
            100.0 * (1.0 - m.as_secs_f64() / d1.as_secs_f64()),
            dn.as_secs_f64()
        );
        base = base.min(b);
        merged = merged.min(m);
        a1 = a1.min(d1);
        an = an.min(dn);
    }
    let per_s = |d: Duration| sigs as f64 / d.as_secs_f64();
    println!(
        "receipts {n}, signatures {sigs}, stream {} bytes, cores {cores}, best of {repeat}",
        std::fs::metadata(&p).map_or(0, |m| m.len())
    );
    println!("baseline verify_batch (1 thread, batch {BATCH}): {:.2}s = {:.0} sig/s", base.as_secs_f64(), per_s(base));
    println!(
        "merged-key batch verification (the audit's, 1 thread, batch {BATCH}): {:.2}s = {:.0} sig/s, {:.3}x the baseline",
        merged.as_secs_f64(),
        per_s(merged),
        base.as_secs_f64() / merged.as_secs_f64()
    );
    println!(
        "audit 1 thread vs its own signature checks: decode + replay + accounting = {:.1}% of the audit's time, {:.1}% of the baseline's",
        100.0 * (1.0 - merged.as_secs_f64() / a1.as_secs_f64()),
        100.0 * (a1.as_secs_f64() - merged.as_secs_f64()) / base.as_secs_f64()
    );
    println!(
        "audit 1 thread: {:.2}s = {:.0} sig/s, ratio {:.3} of baseline, peak RSS {} KiB",
        a1.as_secs_f64(),
        per_s(a1),
        base.as_secs_f64() / a1.as_secs_f64(),
        rss1
    );
    println!(
        "audit {cores} threads: {:.2}s = {:.0} sig/s, ratio per core {:.3}, speed-up {:.2}x, peak RSS {} KiB",
        an.as_secs_f64(),
        per_s(an),
        base.as_secs_f64() / an.as_secs_f64() / cores as f64,
        a1.as_secs_f64() / an.as_secs_f64(),
        rssn
    );
}

fn benches(c: &mut Criterion) {
    let n = receipts();
    if bench_mode() && std::env::var_os("JCP_BENCH_ONESHOT").is_some() {
        oneshot(n);
        return;
    }
    // For profilers (`perf record`): only the baseline (`=baseline`) or only
    // the single-threaded audit, once.
    if bench_mode() && std::env::var("JCP_BENCH_PROFILE").is_ok_and(|v| v == "baseline") {
        let p = ensure_stream(n);
        let (d, sigs) = baseline(&p);
        println!("baseline: {:.2}s for {sigs} signatures", d.as_secs_f64());
        return;
    }
    if bench_mode() && std::env::var_os("JCP_BENCH_PROFILE").is_some() {
        let p = ensure_stream(n);
        // `JCP_BENCH_THREADS=N` for another pool size (phases are summed over threads).
        let threads: usize = std::env::var("JCP_BENCH_THREADS").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
        let (r, d, phases) = timed_audit(&p, threads);
        println!("audit {threads} thread(s): {:.2}s, {} verified", d.as_secs_f64(), r.receipts.verified);
        if let (Some(ph), 1) = (phases, threads) {
            print_phases(0, d, &ph);
        }
        return;
    }
    let p = ensure_stream(n);
    let (_, sigs) = baseline(&p);
    let mut g = c.benchmark_group("audit");
    g.throughput(Throughput::Elements(sigs));
    g.sample_size(10);
    g.bench_function(format!("verify_batch_baseline/{n}"), |b| {
        b.iter_custom(|iters| (0..iters).map(|_| baseline(&p).0).sum())
    });
    g.bench_function(format!("merged_key_verification/{n}"), |b| {
        b.iter_custom(|iters| (0..iters).map(|_| baseline_with(&p, Verifier::Merged).0).sum())
    });
    g.bench_function(format!("audit_1_thread/{n}"), |b| b.iter(|| run_audit(&p, 1)));
    g.bench_function(format!("audit_all_cores/{n}"), |b| b.iter(|| run_audit(&p, 0)));
    g.finish();
}

criterion_group!(audit_benches, benches);

fn main() {
    audit_benches();
    Criterion::default().configure_from_args().final_summary();
}
