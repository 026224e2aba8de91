//! §5.1 span metering over this process's own threads. One test, so no
//! other test's thread runs in this process while it meters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jcp::energy::{Coverage, Provenance};
use jcp_meter::backend::Decline;
use jcp_meter::span::{gap, SpanConfig, SpanMeter, SpanSources, Target};
use jcp_meter::RungId;

const MS: u64 = 1_000_000;

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat").unwrap().split_whitespace().next().unwrap().parse().unwrap()
}

fn burn(ms: u64) {
    let t0 = thread_cpu_ns();
    let mut x = 0u64;
    while thread_cpu_ns() - t0 < ms * MS {
        for i in 0..10_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
}

#[test]
fn s5_1_own_threads_span() {
    let m = SpanMeter::with_sources(
        SpanConfig::default(),
        SpanSources {
            powercap_root: None,
            powercap_read: jcp_meter::rapl::read_file,
            perf_rapl: Some(Box::new(jcp_meter::span::PerfRapl::new("/nonexistent", "/sys/devices/system/cpu"))),
            gpu: None,
            calibration: Err(Decline::new("calibration-absent", "test")),
            host: jcp_meter::estimate::HostId::this_host(),
            children: None,
        },
    );

    // A computation on the metering thread: its CPU time, whole; the reading thread itself is not required to rest.
    let span = m.start(Target::OwnThreads).unwrap();
    burn(200);
    let f = span.stop();
    assert!(f.cpu_ns + 25 * MS >= 200 * MS && f.cpu_ns <= 260 * MS, "{f:?}");
    assert_eq!(
        (f.coverage, f.provenance, f.rung, f.members),
        (Coverage::Whole, Provenance::Estimator, RungId::Estimate, 1),
        "{f:?}"
    );

    // Stopped on another thread: Span is Send, and the stopping thread is the one excused from rest.
    let span = m.start(Target::OwnThreads).unwrap();
    let f = std::thread::spawn(move || {
        burn(100);
        span.stop()
    })
    .join()
    .unwrap();
    assert!(f.cpu_ns + 25 * MS >= 100 * MS, "{f:?}");
    assert_eq!(f.gaps, vec![], "the stopping thread is excused from rest, the starting one is asleep: {f:?}");

    // A child the process happens to have, reaped inside: no gap for work on its own threads (§5.1 rung 3).
    let span = m.start(Target::OwnThreads).unwrap();
    std::process::Command::new("true").status().unwrap();
    let f = span.stop();
    assert!(!f.gaps.iter().any(|g| g.code == gap::REAPED_IN_SPAN), "{f:?}");

    // Another thread of the process still running at the ends: not at rest.
    let run = Arc::new(AtomicBool::new(true));
    let r = Arc::clone(&run);
    let spinner = std::thread::spawn(move || {
        while r.load(Ordering::Relaxed) {
            burn(5);
        }
    });
    std::thread::sleep(Duration::from_millis(20));
    let span = m.start(Target::OwnThreads).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let f = span.stop();
    run.store(false, Ordering::Relaxed);
    spinner.join().unwrap();
    assert!(f.gaps.iter().any(|g| g.code == gap::UNSETTLED_AT_START), "{f:?}");
    assert!(f.gaps.iter().any(|g| g.code == gap::UNSETTLED_AT_STOP), "{f:?}");
    assert_eq!(f.coverage, Coverage::Partial);
}
