//! Writing to a child's input pipe without blocking: a child that stops
//! reading must never hold the writing thread once the pipe is full (§11).
//! [`ProcessBackend`](super::ProcessBackend) writes each call within its
//! call timeout ([`write_within`]); the MCP gateway's upstream input
//! queues what the pipe does not take ([`write_some`], [`wait_writable`]).

use std::io::Write;
use std::process::ChildStdin;
use std::time::{Duration, Instant};

/// Makes the pipe non-blocking, as every function here expects it.
pub fn nonblocking(pipe: &ChildStdin) -> std::io::Result<()> {
    Ok(rustix::io::ioctl_fionbio(pipe, true)?)
}

/// Writes what the pipe takes now, none of it blocking: how many bytes
/// went, and the error that stopped it, if one did.
pub fn write_some(pipe: &ChildStdin, buf: &[u8]) -> (usize, Option<std::io::Error>) {
    let mut w = pipe;
    let mut at = 0;
    while at < buf.len() {
        match w.write(&buf[at..]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return (at, Some(e)),
        }
    }
    (at, None)
}

/// Waits up to `left` for the pipe to take more (or to break: the next
/// write says which).
pub fn wait_writable(pipe: &ChildStdin, left: Duration) -> std::io::Result<()> {
    let timeout = rustix::event::Timespec::try_from(left).unwrap_or(rustix::event::Timespec { tv_sec: 1, tv_nsec: 0 });
    let mut fds = [rustix::event::PollFd::new(pipe, rustix::event::PollFlags::OUT)];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Writes all of `buf`, waiting for the child to read, for at most
/// `limit` (a call's timeout); past it, `TimedOut` naming how much it took.
pub fn write_within(pipe: &ChildStdin, buf: &[u8], limit: Duration) -> std::io::Result<()> {
    let deadline = Instant::now() + limit;
    let mut at = 0;
    loop {
        let (n, err) = write_some(pipe, &buf[at..]);
        at += n;
        if let Some(e) = err {
            return Err(e);
        }
        if at == buf.len() {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the child read {at} of its {} bytes within the call timeout of {} ms",
                    buf.len(),
                    limit.as_millis()
                ),
            ));
        }
        wait_writable(pipe, left)?;
    }
}
