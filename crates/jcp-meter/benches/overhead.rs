//! The meter at 1 Hz over a minute, measured with the process's own CPU
//! time (§5.1 budget: < 0.5 % of one core). Real backends, real clock.
//!
//! `cargo bench -p jcp-meter --bench overhead` runs 60 windows of 1 s;
//! without `--bench` (as `cargo test --benches` runs it) it takes 3 windows
//! of 20 ms so CI stays fast.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_precision_loss)]

use std::path::Path;
use std::time::{Duration, Instant};

use jcp_meter::{Meter, MeterConfig};

/// utime + stime of this process, ns (from /proc/self/stat, in clock ticks of 10 ms).
fn process_cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `after` starts at field 3.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks * 10_000_000
}

/// This thread's CPU time, ns (schedstat: ns precision).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat").unwrap().split_whitespace().next().unwrap().parse().unwrap()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n, interval) = if full { (60, Duration::from_secs(1)) } else { (3, Duration::from_millis(20)) };
    let config = MeterConfig { interval, ..MeterConfig::default() };
    let (p0, t0, w0) = (process_cpu_ns(), thread_cpu_ns(), Instant::now());
    let mut meter = Meter::system(config, Path::new(jcp_meter::rapl::POWERCAP_ROOT)).unwrap();
    let chosen = meter.probe().chosen;
    let (p1, t1, w1) = (process_cpu_ns(), thread_cpu_ns(), Instant::now());
    let mut energy = 0u64;
    for _ in 0..n {
        energy += meter.next_window().energy_uj.unwrap_or(0);
    }
    let (p2, t2, w2) = (process_cpu_ns(), thread_cpu_ns(), Instant::now());
    let wall = (w2 - w1).as_nanos() as f64;
    println!("meter overhead: chosen rung {chosen:?}, {n} windows of {interval:?}, {energy} uJ metered");
    println!(
        "  probe: wall {:.1} ms, thread CPU {:.3} ms, process CPU {:.0} ms",
        (w1 - w0).as_secs_f64() * 1e3,
        (t1 - t0) as f64 / 1e6,
        (p1 - p0) as f64 / 1e6
    );
    println!(
        "  windows: wall {:.1} s, thread CPU {:.3} ms = {:.4} % of one core; process CPU (10 ms ticks) {:.0} ms = {:.3} % (budget 0.5 %)",
        wall / 1e9,
        (t2 - t1) as f64 / 1e6,
        (t2 - t1) as f64 / wall * 100.0,
        (p2 - p1) as f64 / 1e6,
        (p2 - p1) as f64 / wall * 100.0
    );
}
