//! `jcp backend demo`: a real endpoint behind the gate, speaking
//! `jcp-backend/1` (`docs/backend-protocol.md`) on its stdin and stdout, for
//! `jcp serve --backend -- jcp backend demo` and for the tests that meter
//! it: each command does known work in a known place (its own thread, a
//! second thread, a child, a grandchild).

use std::collections::{HashMap, HashSet};
use std::process::{Command, ExitCode, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use jcp_wire::backend::{read_frame_sync, write_frame_sync, AnswerState, BackendAnswer, BackendCall, BACKEND_CAP};

use crate::out::{coded, CLEAN};

#[derive(Debug, Args)]
pub struct BackendArgs {
    #[command(subcommand)]
    cmd: BackendCmd,
}

#[derive(Debug, Subcommand)]
enum BackendCmd {
    /// A demo endpoint behind the gate: answers jcp-backend/1 calls on stdin/stdout until EOF.
    ///
    /// Each call's `args` are a UTF-8 command:
    ///   burn:MS        burn MS ms of CPU on the main thread; `done` "burned MS ms"
    ///   thread:MS      burn MS ms of CPU in a second thread of this process
    ///   child:MS       burn MS ms of CPU in a child process (reaped before the reply)
    ///   grandchild:MS  burn MS ms of CPU in a grandchild, under a child (both reaped)
    ///   crash          exit at once with status 70, before replying
    ///   echo:TEXT      `done` with TEXT
    ///   fail:TEXT      `failed` with TEXT
    ///   task:MS        `working` under handle task-N while MS ms burn in a background
    ///                  thread; a call continuing task-N answers `working` until the work
    ///                  is finished, then `done`
    ///   ask            `input-required` under handle ask-N; a call continuing it with
    ///                  answers gets `done` with the answers echoed
    ///
    /// Only the first line is the command: lines after it are a note the demo
    /// ignores (`jcp agent demo` names its session and step there, so no two of
    /// its requests are the same). A call continuing a handle this process did
    /// not mint is `failed`; so is any other command. CPU time is counted on the burning thread's own clock
    /// (/proc/thread-self/schedstat; wall time where that cannot be read).
    #[command(verbatim_doc_comment)]
    Demo,
    /// Burns MS ms of CPU and exits (the demo's `child:MS`).
    #[command(hide = true)]
    Burn {
        /// Milliseconds of CPU time.
        ms: u64,
    },
    /// Runs `jcp backend burn MS` and waits for it (the demo's `grandchild:MS`).
    #[command(hide = true)]
    BurnInChild {
        /// Milliseconds of CPU time.
        ms: u64,
    },
}

pub fn run(a: &BackendArgs) -> anyhow::Result<ExitCode> {
    match &a.cmd {
        BackendCmd::Demo => demo(),
        BackendCmd::Burn { ms } => {
            burn(*ms);
            Ok(ExitCode::from(CLEAN))
        }
        BackendCmd::BurnInChild { ms } => {
            burn_in_child("burn", *ms)?;
            Ok(ExitCode::from(CLEAN))
        }
    }
}

/// The most milliseconds one command may burn (ten minutes).
const MAX_MS: u64 = 600_000;
/// The most handles the demo keeps at once (tasks and asks).
const MAX_HANDLES: usize = 1024;

fn demo() -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let mut r = stdin.lock();
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    let mut st = Demo::default();
    loop {
        let body = read_frame_sync(&mut r, BACKEND_CAP).map_err(|e| coded(e.code(), format!("reading a call: {e}")))?;
        let Some(body) = body else { return Ok(ExitCode::from(CLEAN)) };
        let call = BackendCall::decode(&body).map_err(|e| coded(e.code(), format!("reading a call: {e}")))?;
        let answer = st.answer(&call);
        write_frame_sync(&mut w, &answer.to_value(), BACKEND_CAP)
            .map_err(|e| coded(e.code(), format!("writing the answer to call {}: {e}", call.id)))?;
    }
}

#[derive(Default)]
struct Demo {
    n: u64,
    tasks: HashMap<String, (u64, JoinHandle<()>)>,
    asks: HashSet<String>,
}

fn parse_ms(name: &str, s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(ms) if ms <= MAX_MS => Ok(ms),
        _ => Err(format!("{name}:MS needs MS, a whole number of milliseconds up to {MAX_MS}; got {s:?}")),
    }
}

impl Demo {
    fn answer(&mut self, call: &BackendCall) -> BackendAnswer {
        if let Some(h) = &call.continues {
            return self.continued(call.id, h, call.answers.as_deref());
        }
        let Some(args) = &call.args else {
            return BackendAnswer::finished(call.id, false, "no command: the call carries no args");
        };
        let Ok(cmd) = std::str::from_utf8(args) else {
            return BackendAnswer::finished(call.id, false, "the args are not a UTF-8 command");
        };
        // The first line is the command; what follows is a note.
        let cmd = cmd.split_once('\n').map_or(cmd, |(c, _)| c);
        match self.command(call.id, cmd) {
            Ok(a) => a,
            Err(why) => BackendAnswer::finished(call.id, false, why),
        }
    }

    fn command(&mut self, id: u64, cmd: &str) -> Result<BackendAnswer, String> {
        let (name, rest) = cmd.split_once(':').unwrap_or((cmd, ""));
        let done = |s: String| Ok(BackendAnswer::finished(id, true, s));
        match name {
            "burn" => {
                let ms = parse_ms(name, rest)?;
                burn(ms);
                done(format!("burned {ms} ms"))
            }
            "thread" => {
                let ms = parse_ms(name, rest)?;
                std::thread::spawn(move || burn(ms)).join().map_err(|_| "the burning thread panicked".to_owned())?;
                done(format!("burned {ms} ms in a second thread"))
            }
            "child" | "grandchild" => {
                let ms = parse_ms(name, rest)?;
                let sub = if name == "child" { "burn" } else { "burn-in-child" };
                burn_in_child(sub, ms).map_err(|e| format!("{e:#}"))?;
                done(format!("burned {ms} ms in a {name} process"))
            }
            "crash" => std::process::exit(70),
            "echo" => done(rest.to_owned()),
            "fail" => Ok(BackendAnswer::finished(id, false, rest)),
            "task" => {
                let ms = parse_ms(name, rest)?;
                let handle = self.mint("task")?;
                self.tasks.insert(handle.clone(), (ms, std::thread::spawn(move || burn(ms))));
                Ok(BackendAnswer::pending(id, AnswerState::Working, handle, format!("started: burning {ms} ms")))
            }
            "ask" if rest.is_empty() => {
                let handle = self.mint("ask")?;
                self.asks.insert(handle.clone());
                Ok(BackendAnswer::pending(id, AnswerState::InputRequired, handle, "what should I answer?"))
            }
            _ => Err(format!(
                "unknown command {cmd:?} (burn:MS, thread:MS, child:MS, grandchild:MS, crash, echo:TEXT, fail:TEXT, task:MS, ask)"
            )),
        }
    }

    fn mint(&mut self, kind: &str) -> Result<String, String> {
        if self.tasks.len() + self.asks.len() >= MAX_HANDLES {
            return Err(format!("{MAX_HANDLES} handles are open: finish some first"));
        }
        self.n += 1;
        Ok(format!("{kind}-{}", self.n))
    }

    fn continued(&mut self, id: u64, h: &str, answers: Option<&[u8]>) -> BackendAnswer {
        if let Some((ms, work)) = self.tasks.get(h) {
            if !work.is_finished() {
                return BackendAnswer::pending(id, AnswerState::Working, h, format!("running: burning {ms} ms"));
            }
            let ms = *ms;
            let joined = self.tasks.remove(h).map(|(_, w)| w.join());
            return match joined {
                Some(Ok(())) => BackendAnswer::finished(id, true, format!("{h} done: burned {ms} ms")),
                _ => BackendAnswer::finished(id, false, format!("{h}: the work panicked")),
            };
        }
        if self.asks.contains(h) {
            return match answers {
                Some(a) => {
                    self.asks.remove(h);
                    BackendAnswer::finished(id, true, a.to_vec())
                }
                None => BackendAnswer::pending(id, AnswerState::InputRequired, h, "what should I answer?"),
            };
        }
        BackendAnswer::finished(id, false, format!("unknown handle {h:?}"))
    }
}

/// Runs `jcp backend SUB MS` (stdin and stdout closed, stderr shared) and
/// waits for it.
fn burn_in_child(sub: &str, ms: u64) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding this program")?;
    let st = Command::new(exe)
        .args(["backend", sub, &ms.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("starting `jcp backend {sub} {ms}`"))?;
    if st.success() {
        Ok(())
    } else {
        Err(coded("backend-child-failed", format!("`jcp backend {sub} {ms}` ended with {st}")))
    }
}

/// This thread's CPU time, ns: `/proc/thread-self/schedstat` (its first
/// field), else `/proc/thread-self/stat`'s utime + stime in 10 ms ticks.
fn thread_cpu_ns() -> Option<u64> {
    if let Ok(s) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(ns) = s.split_whitespace().next().and_then(|f| f.parse::<u64>().ok()).filter(|&ns| ns > 0) {
            return Some(ns);
        }
    }
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let after = s.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000_000)
}

/// Burns `ms` milliseconds of this thread's CPU time (wall time where the
/// thread's clock cannot be read) in work the optimiser cannot remove.
fn burn(ms: u64) {
    let want = u128::from(ms) * 1_000_000;
    let start = Instant::now();
    let cpu0 = thread_cpu_ns();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    loop {
        for _ in 0..20_000 {
            x ^= std::hint::black_box(x << 13);
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
        let spent = match (cpu0, thread_cpu_ns()) {
            (Some(a), Some(b)) => u128::from(b.saturating_sub(a)),
            _ => start.elapsed().as_nanos(),
        };
        if spent >= want {
            return;
        }
        // A thread clock that stalls: never spin past a hundred times the
        // wall time asked, and ten seconds more.
        if start.elapsed() > Duration::from_millis(ms.saturating_mul(100).saturating_add(10_000)) {
            return;
        }
    }
}
