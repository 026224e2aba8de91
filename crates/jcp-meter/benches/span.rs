//! One span (start + stop, §5.1 span metering) over a tree of 1, 10 and 100
//! idle processes (a shell and its `sleep` children), against one read of
//! `/proc/<pid>/stat`, in the same run. Goal: ≤ 200 µs per span for a
//! 10-process tree. Also one `pread` of a kept `stat` and of a kept
//! `children` file: a span over n one-thread processes is 4n of each.
//!
//! `cargo bench -p jcp-meter --bench span` (short: 20 samples, 2 s each);
//! `cargo test --benches` runs each once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::FileExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use jcp_meter::span::{SpanConfig, SpanMeter, Target};

/// A shell with `n - 1` idle `sleep` children: a tree of `n` processes, all at rest.
struct Tree(Child);

impl Tree {
    fn spawn(n: usize) -> Self {
        let script = format!("{} wait", "sleep 1000 & ".repeat(n - 1));
        let child = Command::new("sh").args(["-c", &script]).stdin(Stdio::null()).spawn().unwrap();
        let pid = child.id();
        let children = format!("/proc/{pid}/task/{pid}/children");
        for _ in 0..1000 {
            let listed = std::fs::read_to_string(&children).map_or(0, |s| s.split_whitespace().count());
            if listed == n - 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Every child asleep in `sleep` (not still starting), or a loaded
        // machine leaves some running at the check below.
        let asleep =
            |k: &str| std::fs::read_to_string(format!("/proc/{k}/stat")).is_ok_and(|s| s.contains("(sleep) S "));
        for _ in 0..1000 {
            let kids = std::fs::read_to_string(&children).unwrap_or_default();
            if kids.split_whitespace().all(asleep) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(50));
        Self(child)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let pid = self.0.id();
        let kids = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for k in kids.split_whitespace() {
            let _ = Command::new("kill").args(["-9", k]).status();
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bench(c: &mut Criterion) {
    let meter = SpanMeter::system(SpanConfig::default());
    let mut g = c.benchmark_group("span");
    g.sample_size(20).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(300));
    let tree = Tree::spawn(1);
    let stat = format!("/proc/{}/stat", tree.0.id());
    g.bench_function("one_proc_stat_read", |b| b.iter(|| black_box(std::fs::read(&stat).unwrap())));
    // The reads a span is made of: a kept file read again from offset 0
    // (one `pread`), of the `stat` and of the `children` of a one-thread
    // process. A span over n one-thread processes makes 4n of each.
    let mut buf = vec![0u8; 4096];
    let kept = std::fs::File::open(&stat).unwrap();
    g.bench_function("one_proc_stat_pread", |b| b.iter(|| black_box(kept.read_at(&mut buf, 0).unwrap())));
    let pid = tree.0.id();
    let kept = std::fs::File::open(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    g.bench_function("one_children_pread", |b| b.iter(|| black_box(kept.read_at(&mut buf, 0).unwrap())));
    drop(tree);
    for n in [1usize, 10, 100] {
        let tree = Tree::spawn(n);
        let target = Target::Tree { root: tree.0.id(), self_contained: true };
        let f = meter.start(target).unwrap().stop();
        assert_eq!(f.members as usize, n, "{f:?}");
        assert!(f.gaps.is_empty(), "an idle tree is read whole: {f:?}");
        g.bench_with_input(BenchmarkId::new("start_stop", n), &target, |b, t| {
            b.iter(|| black_box(meter.start(*t).unwrap().stop()));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
