//! Linux `/proc` as the span meter reads it (§5.1 rung 3, "another process
//! tree"): a process's `stat` line, its threads, their children, the clock
//! tick and the online CPUs. Everything here decodes bytes the kernel (or,
//! under a fuzzer, anyone) wrote: [`parse_stat`] never panics.

use std::fs;
use std::io::{self, ErrorKind, Read};
use std::path::Path;

use serde::Serialize;

use crate::Error;

/// The fields of `/proc/<pid>/stat` (proc(5)) the span meter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProcStat {
    /// Field 1: the process (or thread) id.
    pub pid: u32,
    /// Field 3: the run state (`R`, `S`, `D`, `Z`, `T`, `t`, `X`, `I`, ...).
    pub state: u8,
    /// Field 4: the parent's pid.
    pub ppid: u32,
    /// Fields 14 + 15: user and system CPU time of the process (all its
    /// threads, dead ones included), clock ticks.
    pub cpu_ticks: u64,
    /// Fields 16 + 17: CPU time of the children it waited for (reaped), clock ticks.
    pub reaped_ticks: u64,
    /// Field 20: threads.
    pub threads: u32,
    /// Field 22: start time after boot, clock ticks. With the pid, it names the process.
    pub start_ticks: u64,
}

impl ProcStat {
    /// Whether a thread in this state is at rest at a span's end: neither on
    /// a core or queued for one (`R`) nor in a wait no signal ends (`D`).
    /// docs/decisions.md, "§5.1 span: at rest".
    pub fn at_rest(&self) -> bool {
        state_at_rest(self.state)
    }

    /// Whether the process has exited (a zombie, or dead).
    pub fn exited(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Whether a thread in `state` is at rest (see [`ProcStat::at_rest`]).
pub fn state_at_rest(state: u8) -> bool {
    !matches!(state, b'R' | b'D')
}

fn malformed(detail: impl Into<String>) -> Error {
    Error::ProcStatMalformed { detail: detail.into() }
}

/// Decodes one `stat` line. The command name (field 2) is in parentheses and
/// may itself hold spaces and parentheses, so the fields after it are read
/// from the LAST `)`. Refuses (never panics on) anything else: not UTF-8
/// after the name, a missing field, a field that is not a non-negative number.
/// Allocates nothing unless it refuses.
pub fn parse_stat(bytes: &[u8]) -> Result<ProcStat, Error> {
    let close = last_index_of(bytes, b')').ok_or_else(|| malformed("no `)` closing the command name"))?;
    let open = bytes.iter().position(|&b| b == b'(').filter(|&o| o < close).ok_or_else(|| malformed("no `(`"))?;
    let pid = std::str::from_utf8(&bytes[..open]).map_err(|_| malformed("the pid is not UTF-8"))?.trim();
    let pid: u32 = pid.parse().map_err(|_| malformed(format!("pid `{pid}` is not a number")))?;
    let rest = std::str::from_utf8(&bytes[close + 1..]).map_err(|_| malformed("the fields are not UTF-8"))?;
    // Fields 3 to 22, split as `split_ascii_whitespace` splits (on valid
    // UTF-8, a byte split on ASCII whitespace is the same), found in one
    // pass that stops at field 22; those not kept are skipped unread.
    let mut found: [&str; 23] = [""; 23];
    let b = rest.as_bytes();
    let (mut n, mut i) = (2, 0);
    while n < 22 {
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if i == b.len() {
            break;
        }
        let from = i;
        while b.get(i).is_some_and(|c| !c.is_ascii_whitespace()) {
            i += 1;
        }
        n += 1;
        found[n] = &rest[from..i];
    }
    let next = |want: usize, name: &str| -> Result<&str, Error> {
        if want <= n {
            Ok(found[want])
        } else {
            Err(malformed(format!("no field {want} ({name})")))
        }
    };
    let state = match next(3, "state")?.as_bytes() {
        [s] if s.is_ascii_alphabetic() => *s,
        _ => return Err(malformed("field 3 (state) is not one letter")),
    };
    let parent = number(next(4, "ppid")?, 4, "ppid")?;
    let user: u64 = number(next(14, "utime")?, 14, "utime")?;
    let system: u64 = number(next(15, "stime")?, 15, "stime")?;
    let reaped_user: u64 = number(next(16, "cutime")?, 16, "cutime")?;
    let reaped_system: u64 = number(next(17, "cstime")?, 17, "cstime")?;
    let threads = number(next(20, "num_threads")?, 20, "num_threads")?;
    let start_ticks = number(next(22, "starttime")?, 22, "starttime")?;
    Ok(ProcStat {
        pid,
        state,
        ppid: parent,
        cpu_ticks: user.saturating_add(system),
        reaped_ticks: reaped_user.saturating_add(reaped_system),
        threads,
        start_ticks,
    })
}

/// The last index of `needle` in `bytes`, eight bytes at a time (the line
/// is mostly after the name, so the last `)` is near its front).
fn last_index_of(bytes: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let spread = LO.wrapping_mul(u64::from(needle));
    let mut end = bytes.len();
    let chunks = bytes.rchunks_exact(8);
    let front = chunks.remainder();
    for c in chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let x = u64::from_le_bytes(w) ^ spread;
        // Exact: nonzero if and only if some byte of `x` is zero.
        if x.wrapping_sub(LO) & !x & HI != 0 {
            return c.iter().rposition(|&b| b == needle).map(|i| end - 8 + i);
        }
        end -= 8;
    }
    front.iter().rposition(|&b| b == needle)
}

fn number<T: std::str::FromStr>(s: &str, n: usize, name: &str) -> Result<T, Error> {
    s.parse::<T>().map_err(|_| malformed(format!("field {n} ({name}) `{s}` is not a number of its kind")))
}

/// Why a `/proc` read failed, as the span meter tells it apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFail {
    /// The process (or thread) is gone.
    Gone,
    /// Permission denied (another user's process under `hidepid`, a sandbox).
    Denied(String),
    /// Anything else, or bytes that did not decode.
    Other(String),
}

impl ReadFail {
    /// Classifies an I/O error: `ENOENT`/`ESRCH` mean gone, `EACCES`/`EPERM` denied.
    pub fn of_io(e: &io::Error) -> Self {
        match e.kind() {
            ErrorKind::NotFound => Self::Gone,
            ErrorKind::PermissionDenied => Self::Denied(e.to_string()),
            // ESRCH: the task went away between open and read.
            _ if e.raw_os_error() == Some(3) => Self::Gone,
            _ => Self::Other(e.to_string()),
        }
    }
}

/// Reads a small `/proc` file into `buf` (cleared first).
pub fn read_into(path: &Path, buf: &mut Vec<u8>) -> Result<(), ReadFail> {
    buf.clear();
    let mut f = fs::File::open(path).map_err(|e| ReadFail::of_io(&e))?;
    f.read_to_end(buf).map_err(|e| ReadFail::of_io(&e))?;
    Ok(())
}

/// Reads and decodes a `stat` file.
pub fn read_stat(path: &Path, buf: &mut Vec<u8>) -> Result<ProcStat, ReadFail> {
    read_into(path, buf)?;
    parse_stat(buf).map_err(|e| ReadFail::Other(e.to_string()))
}

/// Parses a `children` file: pids separated by spaces.
pub fn parse_children(bytes: &[u8], out: &mut Vec<u32>) -> Result<(), ReadFail> {
    let text = std::str::from_utf8(bytes).map_err(|_| ReadFail::Other("children: not UTF-8".into()))?;
    for p in text.split_ascii_whitespace() {
        out.push(p.parse().map_err(|_| ReadFail::Other(format!("children: `{p}` is not a pid")))?);
    }
    Ok(())
}

/// The thread ids of `/proc/<pid>/task` (or of `/proc/self/task`).
pub fn list_tasks(task_dir: &Path) -> Result<Vec<u32>, ReadFail> {
    let rd = fs::read_dir(task_dir).map_err(|e| ReadFail::of_io(&e))?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| ReadFail::of_io(&e))?;
        if let Some(t) = e.file_name().to_str().and_then(|s| s.parse().ok()) {
            out.push(t);
        }
    }
    Ok(out)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), read without `unsafe`
/// from the kernel's auxiliary vector (`AT_CLKTCK`, type 17) in
/// `/proc/self/auxv`; 100 (Linux's `USER_HZ` on every mainstream
/// architecture) where that cannot be read.
pub fn clock_ticks_per_second() -> u64 {
    const AT_CLKTCK: u64 = 17;
    const WORD: usize = std::mem::size_of::<usize>();
    let Ok(auxv) = fs::read("/proc/self/auxv") else {
        return 100;
    };
    let word = |c: &[u8]| -> u64 {
        let mut b = [0u8; 8];
        let n = c.len().min(8);
        b[..n].copy_from_slice(&c[..n]);
        if WORD == 8 {
            u64::from_ne_bytes(b)
        } else {
            u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        }
    };
    auxv.chunks_exact(2 * WORD)
        .map(|pair| (word(&pair[..WORD]), word(&pair[WORD..])))
        .find(|(k, _)| *k == AT_CLKTCK)
        .map_or(100, |(_, v)| if v == 0 { 100 } else { v })
}

/// The CPUs `/proc/stat` lists (`cpu<N>` lines): the machine's logical CPUs online.
pub fn online_cpus() -> u32 {
    let n = fs::read_to_string("/proc/stat").map_or(0, |s| {
        s.lines().filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)).count()
    });
    u32::try_from(n).unwrap_or(u32::MAX).max(1)
}

/// The calling thread's id, from the `/proc/thread-self` link (`<pid>/task/<tid>`).
pub fn own_tid() -> Option<u32> {
    let link = fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s5_1_stat_parses_from_the_last_paren() {
        let line = b"42 (a) b (c)) S 7 42 42 0 -1 4194304 98 0 0 0 12 3 4 5 20 0 2 0 34207 3133440 378 0\n";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            s,
            ProcStat { pid: 42, state: b'S', ppid: 7, cpu_ticks: 15, reaped_ticks: 9, threads: 2, start_ticks: 34207 }
        );
        assert!(s.at_rest());
    }

    #[test]
    fn the_last_index_is_found_at_every_position() {
        for len in 0..40 {
            let mut v = vec![b'a'; len];
            assert_eq!(last_index_of(&v, b')'), None);
            for first in 0..len {
                v[first] = b')';
                for last in first..len {
                    let mut w = v.clone();
                    w[last] = b')';
                    w.iter_mut().skip(last + 1).for_each(|b| *b = b'(' + 0x80);
                    assert_eq!(last_index_of(&w, b')'), Some(last), "{len} {first} {last}");
                }
                v[first] = b'a';
            }
        }
    }

    #[test]
    fn s5_1_stat_refuses_what_is_not_a_stat_line() {
        for bad in [
            &b""[..],
            b"1 (x",
            b"x (a) S 1",
            b"1 (a) S 1 2 3",
            b"1 (a) SS 1 1 1 0 -1 0 0 0 0 0 1 1 1 1 20 0 1 0 5",
            b"1 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 -1 1 20 0 1 0 5",
        ] {
            assert_eq!(parse_stat(bad).unwrap_err().code(), "proc-stat-malformed", "{bad:?}");
        }
    }

    #[test]
    fn s5_1_running_and_uninterruptible_are_not_at_rest() {
        for (s, rest) in [(b'R', false), (b'D', false), (b'S', true), (b'T', true), (b'Z', true), (b'I', true)] {
            assert_eq!(state_at_rest(s), rest, "{}", s as char);
        }
    }

    #[test]
    fn s5_1_permission_error_is_unreadable_and_missing_is_gone() {
        assert!(matches!(ReadFail::of_io(&io::Error::from(ErrorKind::PermissionDenied)), ReadFail::Denied(_)));
        assert_eq!(ReadFail::of_io(&io::Error::from(ErrorKind::NotFound)), ReadFail::Gone);
        assert_eq!(ReadFail::of_io(&io::Error::from_raw_os_error(3)), ReadFail::Gone);
    }

    #[test]
    fn own_stat_reads() {
        let mut buf = Vec::new();
        let s = read_stat(Path::new("/proc/self/stat"), &mut buf).unwrap();
        assert_eq!(s.pid, std::process::id());
        assert!(clock_ticks_per_second() >= 1);
        assert!(own_tid().is_some());
    }
}
