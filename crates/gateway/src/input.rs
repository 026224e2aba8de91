//! The upstream's input (its stdin pipe), written without ever blocking
//! the thread that sends a line.
//!
//! A pipe holds 64 KiB. A server that stops reading its input (hung, or
//! busy for ever) would otherwise stop the gateway at the next write that
//! does not fit: the session's thread blocked in `write`, no timeout
//! firing, no steward's word read, no client answered. So a line is
//! written at once where the pipe takes it whole (the usual case: no
//! hand-off between threads on a call's path); what the pipe does not take
//! waits in a queue that one writer thread empties as the server reads.
//! The queue is bounded ([`QUEUE_BYTES`]); a server that reads nothing of
//! it for the stall time is given up on: its input is closed and every
//! later line is refused as not sent, with why (docs/decisions.md, "The
//! upstream's input never blocks the session").

use std::collections::VecDeque;
use std::process::ChildStdin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use jcp_wire::backend::pipe::{wait_writable, write_some};

use crate::lock;
use crate::upstream::with_newline;
use std::time::{Duration, Instant};

/// The most bytes that may wait for the server to read them: two of the
/// longest lines. A line that finds the queue fuller than this is refused
/// (not sent) rather than held in memory without bound.
pub const QUEUE_BYTES: usize = 2 * crate::upstream::MAX_LINE;

/// How far a line got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// The whole line is in the server's input.
    Written,
    /// Some or all of it waits for the server to read what is ahead of it.
    Queued,
}

/// Why a line did not go to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// Not a byte of it reached the server's input: whatever it asked
    /// for cannot have happened.
    NotSent(String),
    /// Part of it may have reached the server's input before the input
    /// broke: what it asked for may or may not have happened.
    Broken(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotSent(why) => write!(f, "not sent to the upstream: {why}"),
            Self::Broken(why) => write!(f, "writing to the upstream: {why}"),
        }
    }
}

/// A line not yet written whole.
struct Waiting {
    line: Vec<u8>,
    /// How much of it is written.
    at: usize,
    /// When it began to wait.
    since: Instant,
    /// The call it carries, if it carries one ([`UpstreamInput::send_call`]).
    tag: Option<String>,
}

struct State {
    /// `None` once closed or given up on.
    pipe: Option<Arc<ChildStdin>>,
    /// Lines not yet written whole, oldest first. Only the first may be
    /// partly written; every write (the sender's or the writer's) is made
    /// under this lock, so a line not yet begun can be withdrawn whole.
    queue: VecDeque<Waiting>,
    /// Bytes in `queue` not yet written.
    queued: usize,
    /// Why the input was given up on.
    stuck: Option<String>,
    /// The session is closing: the writer ends the input once the queue is empty.
    closing: bool,
}

/// Told, when the input is given up on, the tags of the lines it dropped
/// before a byte of them reached the server (their calls did not run), and why.
pub type Unsent = Box<dyn Fn(&[String], &str) + Send + Sync>;

struct Shared {
    state: Mutex<State>,
    more: Condvar,
    /// How long the server may read nothing of what waits before it is given up on.
    stall: Duration,
    unsent: Unsent,
}

/// The server's input.
pub struct UpstreamInput {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for UpstreamInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = lock(&self.shared.state);
        f.debug_struct("UpstreamInput")
            .field("queued", &s.queued)
            .field("stuck", &s.stuck)
            .field("closing", &s.closing)
            .finish_non_exhaustive()
    }
}

impl UpstreamInput {
    /// Takes the server's stdin (made non-blocking) and starts its writer
    /// thread; `stall`: how long the server may read nothing of what waits;
    /// `unsent`: told which calls were dropped unwritten if it is given up on.
    pub fn start(pipe: Option<ChildStdin>, stall: Duration, unsent: Unsent) -> std::io::Result<Self> {
        if let Some(p) = &pipe {
            jcp_wire::backend::pipe::nonblocking(p)?;
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pipe: pipe.map(Arc::new),
                queue: VecDeque::new(),
                queued: 0,
                stuck: None,
                closing: false,
            }),
            more: Condvar::new(),
            stall,
            unsent,
        });
        let s = shared.clone();
        std::thread::Builder::new().name("jcp-gateway-upstream-in".into()).spawn(move || write_queued(&s))?;
        Ok(Self { shared })
    }

    /// Sends one line (its newline added): written now as far as the pipe
    /// takes it, the rest queued for the writer. Never blocks on the server.
    pub fn send(&self, line: &[u8]) -> Result<Sent, SendError> {
        self.send_tagged(line, None)
    }

    /// Sends the line of call `tag` (as [`UpstreamInput::send`]): while no
    /// byte of it is written it may be withdrawn ([`UpstreamInput::withdraw`]),
    /// and if the input is given up on first, `unsent` is told.
    pub fn send_call(&self, line: &[u8], tag: &str) -> Result<Sent, SendError> {
        self.send_tagged(line, Some(tag.to_owned()))
    }

    fn send_tagged(&self, line: &[u8], tag: Option<String>) -> Result<Sent, SendError> {
        let buf = with_newline(line);
        let mut s = lock(&self.shared.state);
        if let Some(why) = &s.stuck {
            return Err(SendError::NotSent(why.clone()));
        }
        let Some(pipe) = s.pipe.clone() else {
            return Err(SendError::NotSent("the upstream's input is closed".into()));
        };
        if s.closing {
            return Err(SendError::NotSent("the session is closing".into()));
        }
        let mut at = 0;
        if s.queue.is_empty() {
            match write_some(&pipe, &buf) {
                (n, None) if n == buf.len() => return Ok(Sent::Written),
                (n, None) => at = n,
                (n, Some(e)) => {
                    let why = format!("its input: {e}");
                    // The queue is empty: no other line is dropped.
                    give_up(&mut s, &why);
                    drop(s);
                    self.shared.more.notify_one();
                    // Part of the line may be in the pipe: what it asked for may have begun.
                    return Err(if n == 0 { SendError::NotSent(why) } else { SendError::Broken(why) });
                }
            }
        }
        if at == 0 && s.queued + buf.len() > QUEUE_BYTES {
            return Err(SendError::NotSent(format!(
                "{} bytes already wait for the upstream to read them (at most {QUEUE_BYTES})",
                s.queued
            )));
        }
        // Part of the line may be in the pipe already: the rest must follow
        // it, so it is queued whatever the queue holds.
        s.queued += buf.len() - at;
        s.queue.push_back(Waiting { line: buf, at, since: Instant::now(), tag });
        drop(s);
        self.shared.more.notify_one();
        Ok(Sent::Queued)
    }

    /// Takes call `tag`'s line back while not a byte of it has reached the
    /// server: whether it was (then the call never runs).
    pub fn withdraw(&self, tag: &str) -> bool {
        let mut s = lock(&self.shared.state);
        let Some(i) = s.queue.iter().position(|w| w.at == 0 && w.tag.as_deref() == Some(tag)) else {
            return false;
        };
        if let Some(w) = s.queue.remove(i) {
            s.queued -= w.line.len();
        }
        true
    }

    /// Why the input was given up on, if it was.
    pub fn stuck(&self) -> Option<String> {
        lock(&self.shared.state).stuck.clone()
    }

    /// Bytes waiting for the server to read them.
    pub fn queued(&self) -> usize {
        lock(&self.shared.state).queued
    }

    /// Ends the input (MCP stdio shutdown): now where nothing waits, else
    /// once the writer has written what does (or given up on it).
    pub fn close(&self) {
        let mut s = lock(&self.shared.state);
        s.closing = true;
        if s.queue.is_empty() {
            s.pipe = None;
        }
        drop(s);
        self.shared.more.notify_one();
    }
}

impl Drop for UpstreamInput {
    fn drop(&mut self) {
        self.close();
    }
}

/// The input is given up on: closed, what waits dropped, later lines
/// refused. Returns the tags of the dropped lines none of which was written.
fn give_up(s: &mut State, why: &str) -> Vec<String> {
    tracing::warn!("upstream: its input is given up on: {why}");
    s.stuck = Some(why.to_owned());
    s.pipe = None;
    s.queued = 0;
    s.queue.drain(..).filter(|w| w.at == 0).filter_map(|w| w.tag).collect()
}

/// The writer thread: the first queued line written as the server reads,
/// under the lock (each write is non-blocking), the wait for the pipe to
/// take more outside it. Gives the input up when the server takes no byte
/// for the stall time, counted from the line's queueing or the server's
/// last read, whichever came later.
fn write_queued(shared: &Shared) {
    // When the server last took a byte of what waited.
    let mut progress = Instant::now();
    loop {
        let mut s = lock(&shared.state);
        let pipe = loop {
            if s.stuck.is_some() {
                return;
            }
            if !s.queue.is_empty() {
                match s.pipe.clone() {
                    Some(p) => break p,
                    None => return,
                }
            }
            if s.closing {
                s.pipe = None;
                return;
            }
            s = shared.more.wait(s).unwrap_or_else(std::sync::PoisonError::into_inner);
        };
        let Some(front) = s.queue.front_mut() else { continue };
        progress = progress.max(front.since);
        let (n, err) = write_some(&pipe, &front.line[front.at..]);
        front.at += n;
        let left_of_it = front.line.len() - front.at;
        s.queued -= n;
        if let Some(e) = err {
            // A partly written line's rest is dropped with everything queued.
            return abandon(shared, s, &format!("its input: {e}"));
        }
        if n > 0 {
            progress = Instant::now();
        }
        if left_of_it == 0 {
            s.queue.pop_front();
            continue;
        }
        if n > 0 {
            continue;
        }
        if progress.elapsed() >= shared.stall {
            let why = format!(
                "the upstream read nothing of its input for {} s ({left_of_it} bytes of a message waiting)",
                shared.stall.as_secs_f64()
            );
            return abandon(shared, s, &why);
        }
        drop(s);
        if let Err(e) = wait_writable(&pipe, shared.stall.saturating_sub(progress.elapsed())) {
            return abandon(shared, lock(&shared.state), &format!("waiting on its input: {e}"));
        }
    }
}

/// The writer gives the input up: what waits is dropped, and the calls
/// among it that had not begun are told ([`Unsent`]), once the lock is let go.
fn abandon(shared: &Shared, mut s: MutexGuard<'_, State>, why: &str) {
    let tags = give_up(&mut s, why);
    drop(s);
    if !tags.is_empty() {
        (shared.unsent)(&tags, why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::process::{Command, Stdio};

    /// A real child whose input is read only when told (`sleep` never reads it).
    fn child(cmd: &str) -> std::process::Child {
        Command::new("sh").args(["-c", cmd]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap()
    }

    fn none() -> Unsent {
        Box::new(|_, _| {})
    }

    /// What an `Unsent` was told: each time, the tags and why.
    type Told = Arc<Mutex<Vec<(Vec<String>, String)>>>;

    /// An `Unsent` that keeps what it is told.
    fn told() -> (Unsent, Told) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        (Box::new(move |tags: &[String], why: &str| lock(&s).push((tags.to_vec(), why.to_owned()))), seen)
    }

    #[test]
    fn s4_11_a_call_not_yet_begun_is_withdrawn_whole_and_one_begun_is_not() {
        let mut c = child("sleep 30");
        let input = UpstreamInput::start(c.stdin.take(), Duration::from_secs(30), none()).unwrap();
        // More than the pipe holds: begun, its rest waiting first in the queue.
        let big = vec![b'x'; 256 << 10];
        assert_eq!(input.send_call(&big, "1"), Ok(Sent::Queued));
        assert_eq!(input.send_call(b"{\"id\":2}", "2"), Ok(Sent::Queued));
        let before = input.queued();
        assert!(!input.withdraw("1"), "part of call 1 is in the server's input: it may have begun");
        assert!(input.withdraw("2"));
        assert_eq!(input.queued(), before - b"{\"id\":2}\n".len());
        assert!(!input.withdraw("2"), "withdrawn twice");
        assert!(!input.withdraw("3"), "never sent");
        let _ = c.kill();
        let _ = c.wait();
    }

    #[test]
    fn s4_11_calls_dropped_unwritten_when_the_input_is_given_up_on_are_told_as_not_run() {
        let mut c = child("sleep 30");
        let (unsent, seen) = told();
        let input = UpstreamInput::start(c.stdin.take(), Duration::from_millis(300), unsent).unwrap();
        let big = vec![b'x'; 256 << 10];
        input.send_call(&big, "begun").unwrap();
        input.send(b"{\"method\":\"ping\"}").unwrap();
        input.send_call(b"{\"id\":\"a\"}", "a").unwrap();
        input.send_call(b"{\"id\":\"b\"}", "b").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while lock(&seen).is_empty() {
            assert!(Instant::now() < deadline, "never told");
            std::thread::sleep(Duration::from_millis(20));
        }
        let seen = lock(&seen).clone();
        assert_eq!(seen.len(), 1, "{seen:?}");
        // The begun call is not among them: what it asked for may have happened.
        assert_eq!(seen[0].0, vec!["a".to_owned(), "b".to_owned()]);
        assert!(seen[0].1.contains("read nothing of its input"), "{seen:?}");
        let _ = c.kill();
        let _ = c.wait();
    }

    #[test]
    fn s11_a_server_that_reads_nothing_never_blocks_the_sender_and_is_given_up_on_after_the_stall() {
        let mut c = child("sleep 30");
        let input = UpstreamInput::start(c.stdin.take(), Duration::from_millis(300), none()).unwrap();
        // Far more than a pipe holds: every send returns at once.
        let line = vec![b'x'; 256 << 10];
        let t = Instant::now();
        for _ in 0..4 {
            input.send(&line).unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(5), "a send blocked: {:?}", t.elapsed());
        assert!(input.queued() > 0, "the pipe cannot have taken a MiB");
        // Nothing read for the stall: given up on, and the next line is refused as not sent.
        let deadline = Instant::now() + Duration::from_secs(10);
        while input.stuck().is_none() {
            assert!(Instant::now() < deadline, "never given up on");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(input.stuck().unwrap().contains("read nothing of its input"), "{:?}", input.stuck());
        assert!(matches!(input.send(b"{}"), Err(SendError::NotSent(_))));
        assert_eq!(input.queued(), 0);
        let _ = c.kill();
        let _ = c.wait();
    }

    #[test]
    fn s11_s4_11_lines_past_what_the_pipe_holds_arrive_whole_and_in_order_and_a_withdrawn_one_never() {
        // `cat` reads everything, but only after a pause, so the first
        // lines fill the pipe and the rest wait in the queue.
        let mut c = child("sleep 1; cat");
        let input = UpstreamInput::start(c.stdin.take(), Duration::from_secs(30), none()).unwrap();
        let mut out = c.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            out.read_to_end(&mut all).unwrap();
            all
        });
        let lines: Vec<Vec<u8>> = (0..40u8).map(|i| vec![b'a' + (i % 26); 10_000 + usize::from(i) * 97]).collect();
        for (i, line) in lines.iter().enumerate() {
            input.send_call(line, &i.to_string()).unwrap();
        }
        // The pipe holds about six of them: the thirtieth cannot have begun.
        assert!(input.withdraw("30"));
        input.close();
        let mut want = Vec::new();
        for (_, line) in lines.iter().enumerate().filter(|(i, _)| *i != 30) {
            want.extend_from_slice(line);
            want.push(b'\n');
        }
        assert_eq!(reader.join().unwrap(), want);
        assert!(c.wait().unwrap().success());
        assert_eq!(input.stuck(), None);
    }

    #[test]
    fn s11_the_queue_is_bounded_and_a_line_past_it_is_refused_not_sent() {
        let mut c = child("sleep 30");
        let input = UpstreamInput::start(c.stdin.take(), Duration::from_secs(30), none()).unwrap();
        let line = vec![b'x'; crate::upstream::MAX_LINE - 1];
        let mut refused = None;
        for i in 0..4 {
            if let Err(e) = input.send(&line) {
                refused = Some((i, e));
                break;
            }
        }
        let (i, e) = refused.expect("the queue took four of the longest lines");
        assert!(i >= 2, "refused too early, at line {i}");
        assert!(matches!(&e, SendError::NotSent(why) if why.contains("wait for the upstream")), "{e:?}");
        assert!(input.queued() <= QUEUE_BYTES + crate::upstream::MAX_LINE);
        let _ = c.kill();
        let _ = c.wait();
    }

    #[test]
    fn s11_a_server_that_exited_refuses_the_line_as_not_sent() {
        let mut c = child("exit 0");
        let stdin = c.stdin.take();
        c.wait().unwrap();
        let input = UpstreamInput::start(stdin, Duration::from_secs(30), none()).unwrap();
        match input.send(b"{\"jsonrpc\":\"2.0\"}") {
            Err(SendError::NotSent(why)) => assert!(why.contains("pipe") || why.contains("input"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
