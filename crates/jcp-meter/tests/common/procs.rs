//! Real processes for the span tests: the test binary re-runs itself as a
//! helper (`JCP_SPAN_HELPER=<mode>`, running only the `zz_span_helper` test)
//! that builds a tree, waits for "go" (its stdin reaching EOF), burns a known
//! CPU time on its own thread (measured with `/proc/thread-self/schedstat`),
//! reports on stderr and then sleeps until killed.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::zombie_processes)] // zombies are what some tests make

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStderr, ChildStdin, Command, Stdio};
use std::time::Duration;

pub const HELPER_ENV: &str = "JCP_SPAN_HELPER";

/// The CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat").unwrap().split_whitespace().next().unwrap().parse().unwrap()
}

/// Burns `ms` of this thread's CPU time.
pub fn burn(ms: u64) {
    let t0 = thread_cpu_ns();
    let mut x = 0u64;
    while thread_cpu_ns() - t0 < ms * 1_000_000 {
        for i in 0..10_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
}

fn say(what: &str) {
    let mut e = std::io::stderr().lock();
    e.write_all(format!("{what} {}\n", std::process::id()).as_bytes()).unwrap();
    e.flush().unwrap();
}

fn wait_go() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut sink);
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn spawn_self(mode: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["zz_span_helper", "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env(HELPER_ENV, mode)
        .stdin(Stdio::inherit())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The helper's body, by mode (`name:arg:arg`).
pub fn helper_main(mode: &str) -> ! {
    let p: Vec<&str> = mode.split(':').collect();
    let num = |i: usize| p.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    match p[0] {
        // A chain `depth` deep whose leaf burns `ms` after go.
        "tree" if num(1) > 0 => {
            let _child = spawn_self(&format!("tree:{}:{}", num(1) - 1, num(2)));
            say("ready");
            wait_go();
            sleep_forever()
        }
        "tree" => {
            say("ready");
            wait_go();
            burn(num(2));
            say("done");
            sleep_forever()
        }
        // After go: forks a child that burns `ms` and exits, and reaps it.
        "forkreap" => {
            say("ready");
            wait_go();
            let mut c = spawn_self(&format!("burnexit:{}", num(1)));
            c.wait().unwrap();
            say("done");
            sleep_forever()
        }
        // A child that burns `ms` and exits at once; reaped only after go.
        "reapzombie" => {
            let mut c = spawn_self(&format!("burnexit:{}", num(1)));
            std::thread::sleep(Duration::from_millis(num(1) + 300));
            say("ready");
            wait_go();
            c.wait().unwrap();
            say("done");
            sleep_forever()
        }
        "burnexit" => {
            burn(num(1));
            std::process::exit(0)
        }
        // A child that burns `ms` after go and exits; the parent does not reap it (a zombie).
        "exitmid" | "gonemid" => {
            let mut c = spawn_self(&format!("leafexit:{}", num(1)));
            say("ready");
            wait_go();
            if p[0] == "gonemid" {
                c.wait().unwrap();
                say("done");
            }
            sleep_forever()
        }
        "leafexit" => {
            say("ready");
            wait_go();
            burn(num(1));
            say("done");
            std::process::exit(0)
        }
        // Never at rest.
        "spin" => {
            say("ready");
            loop {
                burn(1000);
            }
        }
        // Burns on a second thread; the main thread sleeps.
        "threadburn" => {
            let ms = num(1);
            std::thread::spawn(move || {
                wait_go();
                burn(ms);
                say("done");
            });
            std::thread::sleep(Duration::from_millis(20));
            say("ready");
            sleep_forever()
        }
        // `n` idle children (the bench's trees).
        "idle" => {
            let kids: Vec<Child> = (1..num(1)).map(|_| spawn_self("idle:1")).collect();
            say("ready");
            let _ = kids;
            sleep_forever()
        }
        other => panic!("unknown helper mode {other}"),
    }
}

/// A running helper tree.
pub struct Helper {
    pub root: u32,
    pub pids: Vec<u32>,
    child: Child,
    stdin: Option<ChildStdin>,
    err: BufReader<ChildStderr>,
}

impl Helper {
    /// Starts `mode` and waits for `ready` lines.
    pub fn spawn(mode: &str, ready: usize) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["zz_span_helper", "--exact", "--nocapture", "--test-threads=1", "-q"])
            .env(HELPER_ENV, mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let err = BufReader::new(child.stderr.take().unwrap());
        let mut h = Self { root: child.id(), pids: vec![child.id()], child, stdin, err };
        h.expect("ready", ready);
        // Let every helper reach its blocking read.
        std::thread::sleep(Duration::from_millis(30));
        h
    }

    fn expect(&mut self, what: &str, n: usize) {
        let mut seen = 0;
        while seen < n {
            let mut line = String::new();
            assert!(self.err.read_line(&mut line).unwrap() > 0, "the helper ended before {what}");
            if let Some(pid) = line.trim().strip_prefix(what).and_then(|s| s.trim().parse::<u32>().ok()) {
                if !self.pids.contains(&pid) {
                    self.pids.push(pid);
                }
                seen += 1;
            }
        }
    }

    /// Kills the root and reaps it.
    pub fn kill_root(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Go: closes the helpers' stdin.
    pub fn go(&mut self) {
        self.stdin.take();
    }

    /// Waits for `n` done lines, then a moment for the helpers to block again.
    pub fn wait_done(&mut self, n: usize) {
        self.expect("done", n);
        std::thread::sleep(Duration::from_millis(30));
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        for pid in self.pids.iter().rev() {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
