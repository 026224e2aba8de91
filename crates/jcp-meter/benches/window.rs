//! Reading one window (§5.1): the fake-sysfs RAPL backend and the estimator,
//! against the floor of reading one sysfs-like file, in the same run.
//! Target: ≤ 1 ms of CPU per window. The manual clock makes pauses free, so
//! what is timed is the meter's own work per window.
//!
//! `cargo bench -p jcp-meter --bench window`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use jcp_meter::clock::{Clock, ManualClock};
use jcp_meter::estimate::{HostId, SysinfoUtil};
use jcp_meter::rapl::RaplReader;
use jcp_meter::{Backends, Meter, MeterConfig, RungId};

fn host() -> HostId {
    HostId { hostname: "bench".into(), machine: None, cpu: "bench".into(), logical_cpus: 2, os: "linux".into() }
}

/// The fake tree lives on tmpfs where there is one (sysfs is in memory too;
/// a truncating write on a disk with `discard` costs milliseconds and would
/// swamp what is measured).
fn fake_tree(sockets: usize) -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() { tempfile::tempdir_in(shm).unwrap() } else { tempfile::tempdir().unwrap() };
    for s in 0..sockets {
        let z = dir.path().join(format!("intel-rapl:{s}"));
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("name"), format!("package-{s}\n")).unwrap();
        std::fs::write(z.join("energy_uj"), "1000\n").unwrap();
        std::fs::write(z.join("max_energy_range_uj"), "262143328850\n").unwrap();
        let sub = dir.path().join(format!("intel-rapl:{s}:0"));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("name"), "core\n").unwrap();
    }
    dir
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("window");

    // Baseline: one read of one counter file.
    let tree = fake_tree(1);
    let file = tree.path().join("intel-rapl:0/energy_uj");
    g.bench_function("baseline_one_sysfs_read", |b| b.iter(|| black_box(std::fs::read_to_string(&file).unwrap())));

    for sockets in [1usize, 2] {
        let tree = fake_tree(sockets);
        let clock = ManualClock::new();
        let root = tree.path().to_path_buf();
        // The "kernel" advances each package at 10 W on every pause (a write per package per pause, included in the timing).
        clock.on_pause(move |now| {
            for s in 0..sockets {
                let _ = std::fs::write(
                    root.join(format!("intel-rapl:{s}/energy_uj")),
                    format!("{}\n", (1000 + now / 100) % 262_143_328_851),
                );
            }
        });
        // The harness's own cost: the fake kernel's update alone, subtracted from the window below.
        g.bench_function(format!("harness_fake_kernel_update_{sockets}_socket"), |b| {
            b.iter(|| clock.pause(std::time::Duration::from_secs(1), false))
        });
        let backends = Backends {
            counters: vec![Box::new(RaplReader::new(tree.path()))],
            util: Box::new(SysinfoUtil::new()),
            clock: Arc::new(clock),
            host: host(),
        };
        let mut m = Meter::new(MeterConfig::default(), backends).unwrap();
        assert_eq!(m.probe().chosen, Some(RungId::Rapl));
        g.bench_function(format!("rapl_fake_sysfs_{sockets}_socket_window"), |b| b.iter(|| black_box(m.next_window())));
    }

    let clock = ManualClock::new();
    let backends =
        Backends { counters: vec![], util: Box::new(SysinfoUtil::new()), clock: Arc::new(clock), host: host() };
    let mut m = Meter::new(MeterConfig::default(), backends).unwrap();
    m.probe();
    g.bench_function("estimator_window", |b| b.iter(|| black_box(m.next_window())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
