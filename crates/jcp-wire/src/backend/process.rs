//! [`ProcessBackend`]: the endpoint behind the gate as a child process
//! speaking [`jcp-backend/1`](super::protocol) on its stdin and stdout.
//!
//! One call is in flight at a time: the endpoint meters each call as a
//! span over the child's process tree ([`Backend::tree_root`]), and two
//! calls inside one tree would each fall in the other's span. The child's
//! stderr is the endpoint's (inherited); it gets no other descriptor.
//!
//! A call that ends without an answer (the child exited or was killed, its
//! stdout closed, its answer was malformed, over the cap or for another
//! call, or no answer came within the call timeout) is
//! [`BackendReply::Lost`] (§4.11: whether the work took effect is not
//! knowable): the child is reaped (killed first if it still runs), the call
//! is never sent again, and the next call starts a fresh child
//! ([`ProcessBackend::restarts`] counts them).

use std::ffi::OsString;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::protocol::{read_frame_sync, BackendAnswer, BackendCall, BACKEND_CAP};
use super::{Backend, BackendReply, Call};
use crate::error::WireError;

/// How a [`ProcessBackend`] runs its child.
#[derive(Debug, Clone)]
pub struct ProcessOptions {
    /// The longest a call may wait for its answer; past it the child is
    /// killed and the call is [`BackendReply::Lost`].
    pub call_timeout: Duration,
    /// The operator's declaration that the child's process tree hands no
    /// work to a process outside it (§5.1), returned by
    /// [`Backend::self_contained`].
    pub self_contained: bool,
    /// The cap on an answer's body, bytes (at most, and by default,
    /// [`BACKEND_CAP`]).
    pub cap: usize,
    /// How long a child whose stdin was closed (the backend dropped) or
    /// whose stdout closed (a lost call) may take to exit before it is
    /// killed.
    pub grace: Duration,
}

impl Default for ProcessOptions {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(30),
            self_contained: false,
            cap: BACKEND_CAP,
            grace: Duration::from_secs(1),
        }
    }
}

/// What the reader thread saw on the child's stdout.
enum Seen {
    Frame(Vec<u8>),
    End,
    Refused(WireError),
}

/// A running child.
struct Live {
    child: Child,
    stdin: ChildStdin,
    seen: Receiver<Seen>,
    next_id: u64,
}

/// The endpoint behind the gate as a child process (`jcp-backend/1`).
pub struct ProcessBackend {
    program: PathBuf,
    args: Vec<OsString>,
    opts: ProcessOptions,
    live: Mutex<Option<Live>>,
    /// The live child's pid; 0 when none runs.
    pid: AtomicU32,
    restarts: AtomicU64,
}

impl std::fmt::Debug for ProcessBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessBackend")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("pid", &self.tree_root())
            .field("restarts", &self.restarts())
            .finish_non_exhaustive()
    }
}

/// How a child ended, in words (`exit status 70`, `killed by signal 9`).
pub fn describe_exit(st: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = st.signal() {
            let core = if st.core_dumped() { " (core dumped)" } else { "" };
            return format!("killed by signal {sig}{core}");
        }
    }
    match st.code() {
        Some(c) => format!("exit status {c}"),
        None => st.to_string(),
    }
}

/// Waits up to `grace` for `child` to exit, then kills it; reaps it either
/// way, and says how it ended.
fn reap(child: &mut Child, grace: Duration) -> String {
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(st)) => return describe_exit(st),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) | Err(_) => break,
        }
    }
    let killed = child.kill();
    match (child.wait(), killed) {
        (Ok(st), _) => format!("{} (killed by the endpoint)", describe_exit(st)),
        (Err(e), Err(k)) => format!("could not be killed ({k}) or reaped ({e})"),
        (Err(e), Ok(())) => format!("killed, but could not be reaped ({e})"),
    }
}

impl ProcessBackend {
    /// Starts `program` with `args` (stdin and stdout piped, stderr
    /// inherited). The child is owned: it is killed and reaped when the
    /// backend is dropped (after `grace` to exit on its closed stdin).
    pub fn spawn(program: PathBuf, args: Vec<OsString>, opts: ProcessOptions) -> Result<Self, WireError> {
        let live = start(&program, &args, opts.cap)?;
        let pid = live.child.id();
        Ok(Self {
            program,
            args,
            opts,
            live: Mutex::new(Some(live)),
            pid: AtomicU32::new(pid),
            restarts: AtomicU64::new(0),
        })
    }

    /// The program it runs.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// How many times a fresh child was started after the first (each
    /// after a lost call, or a child found dead between calls).
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// The operator's options.
    pub fn options(&self) -> &ProcessOptions {
        &self.opts
    }

    /// Stops the child now, as dropping the backend would: its stdin is
    /// closed (its cue to exit), it gets [`ProcessOptions::grace`] to do so,
    /// then it is killed and reaped. For an owner that outlives the
    /// endpoint the backend served (an endpoint that was shut down may
    /// still be held); a later call would start a fresh child.
    pub fn close(&self) {
        let mut slot = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(mut live) = slot.take() {
            self.pid.store(0, Ordering::Relaxed);
            drop(live.stdin);
            let _ = reap(&mut live.child, self.opts.grace);
        }
    }

    /// The live child, started afresh if none runs (or it died between
    /// calls: nothing was sent to it, so nothing is lost).
    fn ensure<'a>(&self, slot: &'a mut Option<Live>) -> Result<&'a mut Live, WireError> {
        if let Some(live) = slot.as_mut() {
            if let Ok(Some(st)) = live.child.try_wait() {
                tracing::warn!(pid = live.child.id(), "the backend exited between calls: {}", describe_exit(st));
                *slot = None;
                self.pid.store(0, Ordering::Relaxed);
            }
        }
        if slot.is_none() {
            let live = start(&self.program, &self.args, self.opts.cap)?;
            let n = self.restarts.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(pid = live.child.id(), restarts = n, "a fresh backend process was started");
            self.pid.store(live.child.id(), Ordering::Relaxed);
            *slot = Some(live);
        }
        slot.as_mut().ok_or_else(|| WireError::Stopped("no backend process".into()))
    }

    /// Ends a call without an answer: reaps the child (waiting `grace` for
    /// it to exit on its own when `exiting`, killing it at once otherwise).
    fn lose(&self, slot: &mut Option<Live>, what: &str, exiting: bool) -> BackendReply {
        let Some(mut live) = slot.take() else {
            return BackendReply::Lost { why: what.to_owned() };
        };
        self.pid.store(0, Ordering::Relaxed);
        let pid = live.child.id();
        drop(live.stdin);
        let ended = reap(&mut live.child, if exiting { self.opts.grace } else { Duration::ZERO });
        let why = format!("backend pid {pid}: {what}; the process {ended}");
        tracing::warn!(pid, "a backend call was lost (not retried; the next call starts a fresh process): {why}");
        BackendReply::Lost { why }
    }

    fn answer(&self, slot: &mut Option<Live>, id: u64) -> BackendReply {
        let Some(live) = slot.as_mut() else { return BackendReply::Lost { why: "no backend process".into() } };
        let t = self.opts.call_timeout;
        match live.seen.recv_timeout(t) {
            Ok(Seen::Frame(body)) => match BackendAnswer::decode(&body) {
                Ok(a) if a.id == id => a.into_reply(),
                Ok(a) => self.lose(slot, &format!("it answered call {} to call {id}", a.id), false),
                Err(e) => self.lose(slot, &format!("a malformed reply ({e})"), false),
            },
            Ok(Seen::End) => self.lose(slot, "its stdout closed before it replied", true),
            Ok(Seen::Refused(e @ WireError::Oversized { .. })) => {
                self.lose(slot, &format!("a reply over the cap ({e})"), false)
            }
            Ok(Seen::Refused(e @ WireError::Truncated { .. })) => {
                self.lose(slot, &format!("its stdout closed inside a reply ({e})"), true)
            }
            Ok(Seen::Refused(e)) => self.lose(slot, &format!("reading its reply failed ({e})"), false),
            Err(RecvTimeoutError::Timeout) => {
                self.lose(slot, &format!("no reply within the call timeout of {} ms", t.as_millis()), false)
            }
            Err(RecvTimeoutError::Disconnected) => self.lose(slot, "its stdout reader stopped", true),
        }
    }
}

/// Writes `buf` to the child's input, waiting for it to read, for at most
/// `limit`: a child that stops reading must not hold the calling thread
/// (and the relay's turn) for ever once the pipe is full (§11). The input
/// is non-blocking on Unix ([`start`]); elsewhere the write blocks.
fn write_within(stdin: &ChildStdin, buf: &[u8], limit: Duration) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        super::pipe::write_within(stdin, buf, limit)
    }
    #[cfg(not(unix))]
    {
        let _ = limit;
        let mut w = stdin;
        std::io::Write::write_all(&mut w, buf)
    }
}

/// Starts the child and the thread that reads its stdout.
fn start(program: &Path, args: &[OsString], cap: usize) -> Result<Live, WireError> {
    let spawn_err = |e: std::io::Error| WireError::BackendSpawn { program: program.display().to_string(), source: e };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(spawn_err)?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = reap(&mut child, Duration::ZERO);
        return Err(spawn_err(std::io::Error::other("the child's pipes were not opened")));
    };
    // Written without blocking, within the call timeout ([`write_within`]).
    #[cfg(unix)]
    if let Err(e) = super::pipe::nonblocking(&stdin) {
        let _ = reap(&mut child, Duration::ZERO);
        return Err(spawn_err(e));
    }
    // At most one answer waits unread: a child that writes unasked blocks.
    let (tx, seen) = mpsc::sync_channel(1);
    let reader = std::thread::Builder::new().name(format!("jcp-backend-{}", child.id())).spawn(move || {
        let mut out = BufReader::new(stdout);
        loop {
            let next = match read_frame_sync(&mut out, cap) {
                Ok(Some(body)) => Seen::Frame(body),
                Ok(None) => Seen::End,
                Err(e) => Seen::Refused(e),
            };
            let last = !matches!(next, Seen::Frame(_));
            if tx.send(next).is_err() || last {
                return;
            }
        }
    });
    if let Err(e) = reader {
        let _ = reap(&mut child, Duration::ZERO);
        return Err(spawn_err(e));
    }
    Ok(Live { child, stdin, seen, next_id: 1 })
}

impl Backend for ProcessBackend {
    fn call(&self, call: Call<'_>) -> BackendReply {
        let mut slot = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let live = match self.ensure(&mut slot) {
            Ok(live) => live,
            Err(e) => {
                // Nothing was sent: the work did not run.
                tracing::warn!("the backend could not be started: {e}");
                return BackendReply::Failed(format!("the backend could not be started: {e}").into_bytes());
            }
        };
        let id = live.next_id;
        live.next_id += 1;
        let framed = crate::codec::frame_value(&BackendCall::of(id, &call).to_value());
        if framed.len() - 4 > BACKEND_CAP {
            // Nothing was sent: the work did not run.
            return BackendReply::Failed(
                format!("the call is {} bytes, over the backend protocol's cap of {BACKEND_CAP}", framed.len() - 4)
                    .into_bytes(),
            );
        }
        if let Err(e) = write_within(&live.stdin, &framed, self.opts.call_timeout) {
            // A child that reads nothing of its call is killed at the call
            // timeout, as one that does not answer is; a broken pipe may
            // mean it is exiting.
            let exiting = e.kind() != std::io::ErrorKind::TimedOut;
            return self.lose(&mut slot, &format!("writing call {id} failed ({e})"), exiting);
        }
        self.answer(&mut slot, id)
    }

    fn prepare(&self) {
        let mut slot = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = self.ensure(&mut slot) {
            // The call itself says so (`Failed`: nothing sent).
            tracing::warn!("the backend could not be started: {e}");
        }
    }

    fn tree_root(&self) -> Option<u32> {
        match self.pid.load(Ordering::Relaxed) {
            0 => None,
            pid => Some(pid),
        }
    }

    fn self_contained(&self) -> bool {
        self.opts.self_contained
    }
}

impl Drop for ProcessBackend {
    fn drop(&mut self) {
        let slot = self.live.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(mut live) = slot.take() {
            self.pid.store(0, Ordering::Relaxed);
            // A closed stdin is the child's cue to exit; then it is killed.
            drop(live.stdin);
            let _ = reap(&mut live.child, self.opts.grace);
        }
    }
}
