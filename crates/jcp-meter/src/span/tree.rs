//! Reading a process tree at one end of a span (§5.1 rung 3, "another
//! process tree"): a walk from the root through every thread's children,
//! confirmed by a second walk that agrees with it, with every member's
//! threads at rest; and the comparison of the two ends.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::procfs::{self, ProcStat, ReadFail};
use super::Gap;

/// How children are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChildrenListing {
    /// `/proc/<pid>/task/<tid>/children` for every thread (`CONFIG_PROC_CHILDREN`).
    TaskChildren,
    /// No `children` file in this kernel: every `/proc/<n>/stat` is scanned for its parent.
    ScanPpid,
}

impl ChildrenListing {
    /// What this kernel offers, checked on the calling thread.
    pub fn detect() -> Self {
        let ok = procfs::own_tid().is_some_and(|t| PathBuf::from(format!("/proc/self/task/{t}/children")).exists());
        if ok {
            Self::TaskChildren
        } else {
            Self::ScanPpid
        }
    }
}

/// What is read at an end: the tree rooted at a pid, or this process's own threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Tree(u32),
    /// This process; the reading thread (its tid) is not required to be at rest.
    Own {
        pid: u32,
        reader: Option<u32>,
    },
}

/// One member as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberRead {
    pub stat: ProcStat,
    /// Threads on a core, queued for one, or in an uninterruptible wait.
    pub unsettled: Vec<(u32, u8)>,
    /// Its `/proc/<pid>/schedstat` (run time, wait time, run count), read
    /// before anything else of it in a reading walk: `None` where it was not
    /// read (a confirming walk, this process's own threads, no schedstat).
    pub sched: Option<Sched>,
}

/// `/proc/<pid>/schedstat`: the leader thread's time on a core (ns), time
/// waiting for one (ns), and slices run. Any of them moves only when the
/// thread runs.
pub(crate) type Sched = [u64; 3];

/// One walk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Walk {
    pub members: BTreeMap<u32, MemberRead>,
    /// Members that could not be read, or whose children could not be listed.
    pub unreadable: BTreeMap<u32, String>,
    /// A child listed by its parent was gone by its read.
    pub child_gone: bool,
    pub root_gone: bool,
}

impl Walk {
    /// Whether `b` confirms `self`: the same processes (pid and start time),
    /// each one's parent, reaped-descendant CPU time and exit, the same
    /// unreadable ones, and no listed child gone in either.
    fn agrees(&self, b: &Walk) -> bool {
        !self.child_gone
            && !b.child_gone
            && self.root_gone == b.root_gone
            && self.unreadable.keys().eq(b.unreadable.keys())
            && self.members.len() == b.members.len()
            && self.members.iter().zip(&b.members).all(|((p, x), (q, y))| {
                p == q
                    && x.stat.start_ticks == y.stat.start_ticks
                    && x.stat.ppid == y.stat.ppid
                    && x.stat.reaped_ticks == y.stat.reaped_ticks
                    && x.stat.exited() == y.stat.exited()
            })
    }

    fn settled(&self) -> bool {
        self.members.values().all(|m| m.unsettled.is_empty())
    }
}

/// How a reading walk was confirmed ([`Walker::confirm`]).
#[derive(Debug)]
pub(crate) enum Confirmation {
    /// No member ran since the reading: it is its own confirming walk.
    Unchanged,
    /// The whole second walk.
    Walked(Walk),
}

impl Confirmation {
    /// Whether it confirms the reading `a`: an unchanged tree is `a`
    /// compared with itself (which only a child gone from `a` fails).
    fn confirms(&self, a: &Walk) -> bool {
        match self {
            Self::Unchanged => a.agrees(a),
            Self::Walked(b) => a.agrees(b),
        }
    }
}

/// The most `/proc` files a walker keeps open between its walks (a walker
/// serves one span at a time, so this bounds the descriptors one span holds).
pub(crate) const OPEN_FILES: usize = 384;

/// The open files' hasher: a multiply-rotate over the key's words (the keys
/// are pids and thread ids, at most [`OPEN_FILES`] of them; `SipHash`'s
/// resistance to chosen keys buys nothing here, and cost a few % of a span).
#[derive(Debug, Default, Clone, Copy)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(u64::try_from(n).unwrap_or(u64::MAX));
    }

    fn write_isize(&mut self, n: isize) {
        self.write_u64(u64::from_ne_bytes(i64::try_from(n).unwrap_or(i64::MAX).to_ne_bytes()));
    }
}

/// Which file of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Stat,
    Children,
    Schedstat,
    /// `/proc/<pid>/task/<tid>/schedstat`: one thread's.
    TaskSchedstat,
}

/// Reads trees. The `/proc` files it reads stay open (up to [`OPEN_FILES`])
/// and are read again from offset 0 by later walks, of the same span or of a
/// later span the walker serves (the meter keeps idle walkers for its next
/// spans): an open descriptor names the process it was opened on, so a pid
/// reused by another process is never read through it (the read fails,
/// `ESRCH`, and the path is opened afresh). [`Walker::span_done`] closes the
/// files the span just done did not read.
#[derive(Debug)]
pub(crate) struct Walker {
    pub listing: ChildrenListing,
    /// The last file read is `buf[..len]`.
    buf: Vec<u8>,
    len: usize,
    kids: Vec<u32>,
    /// The open files, each with whether it was read in the current span.
    open: HashMap<(u32, u32, Kind), (std::fs::File, bool), std::hash::BuildHasherDefault<KeyHasher>>,
    /// `stat` reads made (the tests see which confirmation ran).
    stat_reads: usize,
}

impl Walker {
    pub fn new(listing: ChildrenListing) -> Self {
        Self { listing, buf: Vec::new(), len: 0, kids: Vec::new(), open: HashMap::default(), stat_reads: 0 }
    }

    /// `stat` reads made (the tests see which readings ran).
    #[cfg(test)]
    pub fn stat_reads(&self) -> usize {
        self.stat_reads
    }

    /// How many files it holds open.
    pub fn open_files(&self) -> usize {
        self.open.len()
    }

    /// Closes the files the span just done did not read (those of processes
    /// that left the tree, or of another span's tree).
    pub fn span_done(&mut self) {
        self.open.retain(|_, (_, read)| std::mem::take(read));
    }

    /// Reads `/proc/<pid>/stat` (`tid == pid`, `Kind::Stat`), `/proc/<pid>/task/<tid>/stat` or its `children` into `self.buf[..self.len]`.
    fn read(&mut self, pid: u32, tid: u32, kind: Kind) -> Result<(), ReadFail> {
        let key = (pid, tid, kind);
        if let Some((f, read)) = self.open.get_mut(&key) {
            if let Ok(n) = read_whole(f, &mut self.buf) {
                self.len = n;
                *read = true;
                return Ok(());
            }
            self.open.remove(&key);
        }
        let path = match kind {
            Kind::Stat if tid == pid => PathBuf::from(format!("/proc/{pid}/stat")),
            Kind::Stat => PathBuf::from(format!("/proc/{pid}/task/{tid}/stat")),
            Kind::Children => PathBuf::from(format!("/proc/{pid}/task/{tid}/children")),
            Kind::Schedstat => PathBuf::from(format!("/proc/{pid}/schedstat")),
            Kind::TaskSchedstat => PathBuf::from(format!("/proc/{pid}/task/{tid}/schedstat")),
        };
        let f = std::fs::File::open(&path).map_err(|e| ReadFail::of_io(&e))?;
        self.len = read_whole(&f, &mut self.buf).map_err(|e| ReadFail::of_io(&e))?;
        if self.open.len() < OPEN_FILES {
            self.open.insert(key, (f, true));
        }
        Ok(())
    }

    fn read_stat(&mut self, pid: u32, tid: u32) -> Result<ProcStat, ReadFail> {
        self.stat_reads += 1;
        self.read(pid, tid, Kind::Stat)?;
        procfs::parse_stat(&self.buf[..self.len]).map_err(|e| ReadFail::Other(e.to_string()))
    }

    /// A process's `schedstat`; `None` where it cannot be read or parsed
    /// (gone, no `CONFIG_SCHED_INFO`): the caller then confirms the slow way.
    fn read_sched(&mut self, pid: u32) -> Option<Sched> {
        self.read(pid, pid, Kind::Schedstat).ok()?;
        self.parsed_sched()
    }

    /// The `schedstat` last read, parsed.
    fn parsed_sched(&self) -> Option<Sched> {
        let text = std::str::from_utf8(&self.buf[..self.len]).ok()?;
        let mut it = text.split_ascii_whitespace().map(str::parse::<u64>);
        let out = [it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?];
        Some(out)
    }

    /// Every thread of each member of `w` with its `schedstat`: `None`
    /// where a list or a read fails (a member or a thread gone, no
    /// `CONFIG_SCHED_INFO`). A member `w` read with one thread is taken to
    /// have that one (its pid), and one with several has them listed
    /// first; [`Stillness::covers`] refuses a later reading that counts
    /// another number. See [`Stillness`].
    pub fn stillness(&mut self, w: &Walk) -> Option<Stillness> {
        let mut threads = BTreeMap::new();
        for (&pid, m) in &w.members {
            let tids = if m.stat.threads <= 1 {
                vec![pid]
            } else {
                procfs::list_tasks(&PathBuf::from(format!("/proc/{pid}/task"))).ok()?
            };
            let mut each = Vec::with_capacity(tids.len());
            for tid in tids {
                self.read(pid, tid, sched_kind(pid, tid)).ok()?;
                each.push((tid, self.parsed_sched()?));
            }
            threads.insert(pid, each);
        }
        Some(Stillness { threads })
    }

    /// Whether no thread `s` names has run since it was read: each one's
    /// `schedstat` read again through the file kept open since, and
    /// unchanged. A file not kept (it might be another process's by now),
    /// a read that fails or a figure that moved: not still.
    pub fn still(&mut self, s: &Stillness) -> bool {
        s.threads.iter().all(|(&pid, each)| {
            each.iter().all(|&(tid, was)| {
                let Some((f, read)) = self.open.get_mut(&(pid, tid, sched_kind(pid, tid))) else {
                    return false;
                };
                match read_whole(f, &mut self.buf) {
                    Ok(n) => {
                        *read = true;
                        self.len = n;
                        self.parsed_sched() == Some(was)
                    }
                    Err(_) => false,
                }
            })
        })
    }

    /// Confirms the reading walk `a` (see [`read_end`]). The quick way,
    /// for a tree whose members are all one-thread processes with their
    /// `schedstat` read before anything else of them in `a`: each one's
    /// `schedstat` read again, through the same open file, is unchanged. A
    /// process that did not run between the two reads did not fork, reap,
    /// exit, start a thread or change what it is, and the open file names
    /// the process it was opened on, so `a` itself is the confirming walk.
    /// A member gone (the read fails) or that ran since (any of the three
    /// figures moved), or a tree not of that kind: the slow way, a whole
    /// second walk compared with [`Walk::agrees`].
    pub fn confirm(&mut self, scope: Scope, a: &Walk) -> Confirmation {
        let quick = matches!(scope, Scope::Tree(_))
            && !a.members.is_empty()
            && a.members.values().all(|m| m.sched.is_some() && m.stat.threads <= 1);
        if quick && a.members.iter().all(|(pid, m)| self.read_sched(*pid) == m.sched) {
            return Confirmation::Unchanged;
        }
        Confirmation::Walked(self.walk(scope, false))
    }

    /// One walk of `scope`. With `rest`, every member's threads are checked
    /// for rest (each thread's `stat` read where a member has several);
    /// without, none is, and no member is `unsettled`: a confirming pair's
    /// first walk, whose reading is not the end's (see [`read_end`]).
    pub fn walk(&mut self, scope: Scope, rest: bool) -> Walk {
        let mut w = Walk::default();
        match scope {
            Scope::Own { pid, reader } => {
                if self.read_member(pid, reader, false, rest, &mut w).is_none() && !w.unreadable.contains_key(&pid) {
                    w.root_gone = true;
                }
            }
            Scope::Tree(root) => {
                let scan = if self.listing == ChildrenListing::ScanPpid { Some(scan_ppids()) } else { None };
                let mut queue = vec![root];
                let mut seen = BTreeSet::new();
                while let Some(pid) = queue.pop() {
                    if !seen.insert(pid) {
                        continue;
                    }
                    let start = self.kids.len();
                    let read = self.read_member(pid, None, scan.is_none(), rest, &mut w);
                    if read.is_none() && !w.unreadable.contains_key(&pid) {
                        if pid == root {
                            w.root_gone = true;
                        } else {
                            w.child_gone = true;
                        }
                    }
                    if let Some(map) = &scan {
                        if w.members.contains_key(&pid) {
                            self.kids.extend(map.get(&pid).into_iter().flatten());
                        }
                    }
                    queue.extend(self.kids.drain(start..));
                }
            }
        }
        w
    }

    /// Reads one member into `w` (its children into `self.kids` when
    /// `children`, its threads' rest when `rest`); `None` where it is gone or unreadable.
    fn read_member(&mut self, pid: u32, reader: Option<u32>, children: bool, rest: bool, w: &mut Walk) -> Option<()> {
        // First, so that an unchanged `schedstat` later proves nothing of the
        // member moved from here on (see `confirm`).
        let sched = if rest && reader.is_none() { self.read_sched(pid) } else { None };
        let stat = match self.read_stat(pid, pid) {
            Ok(s) => s,
            Err(ReadFail::Gone) => return None,
            Err(ReadFail::Denied(e) | ReadFail::Other(e)) => {
                w.unreadable.insert(pid, format!("/proc/{pid}/stat: {e}"));
                return None;
            }
        };
        let only = [pid];
        let listed;
        let tids: &[u32] = if stat.threads <= 1 && reader.is_none() {
            &only
        } else {
            match procfs::list_tasks(&PathBuf::from(format!("/proc/{pid}/task"))) {
                Ok(t) => {
                    listed = t;
                    &listed
                }
                Err(ReadFail::Gone) => &only,
                Err(ReadFail::Denied(e) | ReadFail::Other(e)) => {
                    w.unreadable.insert(pid, format!("/proc/{pid}/task: {e}"));
                    return None;
                }
            }
        };
        let mut unsettled = Vec::new();
        for &tid in tids {
            if children {
                match self.read(pid, tid, Kind::Children) {
                    Ok(()) => {
                        if let Err(ReadFail::Denied(e) | ReadFail::Other(e)) =
                            procfs::parse_children(&self.buf[..self.len], &mut self.kids)
                        {
                            w.unreadable.insert(pid, format!("/proc/{pid}/task/{tid}/children: {e}"));
                        }
                    }
                    // A thread that exited between the listing and this read.
                    Err(ReadFail::Gone) => w.child_gone = true,
                    Err(ReadFail::Denied(e) | ReadFail::Other(e)) => {
                        w.unreadable.insert(pid, format!("/proc/{pid}/task/{tid}/children: children not listed: {e}"));
                    }
                }
            }
            if !rest || Some(tid) == reader {
                continue;
            }
            let state = if tids.len() == 1 && tid == pid && reader.is_none() {
                stat.state
            } else {
                match self.read_stat(pid, tid) {
                    Ok(t) => t.state,
                    Err(_) => continue, // the thread exited: it is no longer running
                }
            };
            if !procfs::state_at_rest(state) {
                unsettled.push((tid, state));
            }
        }
        w.members.insert(pid, MemberRead { stat, unsettled, sched });
        Some(())
    }
}

/// Where a thread's `schedstat` is read: the leader's is the process's
/// own file (which a reading walk keeps open already), another thread's
/// under `task/`.
fn sched_kind(pid: u32, tid: u32) -> Kind {
    if tid == pid {
        Kind::Schedstat
    } else {
        Kind::TaskSchedstat
    }
}

/// A `/proc` file read shorter than this (and than the buffer) holds the
/// whole file: docs/decisions.md, "One read of a `/proc` file".
const SHORT_READ_IS_WHOLE: usize = 2048;

/// Reads all of `f` from offset 0 into the front of `buf` and gives its
/// length, with positional reads (`pread`): one system call where the file is
/// shorter than [`SHORT_READ_IS_WHOLE`], which every `stat` line is and a
/// `children` list of up to a couple of hundred pids. A longer file is read
/// on from where the first read ended until a read returns nothing (`buf`
/// grows as needed; it is never shrunk, so no read clears it).
fn read_whole(f: &std::fs::File, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    if buf.len() < 2 * SHORT_READ_IS_WHOLE {
        buf.resize(2 * SHORT_READ_IS_WHOLE, 0);
    }
    let n = f.read_at(buf, 0)?;
    if n < SHORT_READ_IS_WHOLE {
        return Ok(n);
    }
    let mut len = n;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let k = f.read_at(&mut buf[len..], len as u64)?;
        if k == 0 {
            return Ok(len);
        }
        len += k;
    }
}

/// Every process's parent, from `/proc/<n>/stat` (where `children` files are absent).
fn scan_ppids() -> HashMap<u32, Vec<u32>> {
    let mut map: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut buf = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return map;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(s) = procfs::read_stat(&e.path().join("stat"), &mut buf) {
            map.entry(s.ppid).or_default().push(pid);
        }
    }
    map
}

/// Every thread of each member of a tree with its `schedstat` (time on a
/// core, time waiting for one, slices run), read before a reading of the
/// tree: the proof that carries a stop's reading to the next span's start
/// (docs/decisions.md, "§5.1 a stop's reading is the next start's when
/// nothing ran between"). A thread's figures move whenever it runs; a
/// process forks, reaps, exits, starts a thread or uses CPU time only by
/// running one of its threads, so while no thread named here has run,
/// every member is as it was read: the same processes, parents, CPU
/// time, reaped time and states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stillness {
    threads: BTreeMap<u32, Vec<(u32, Sched)>>,
}

impl Stillness {
    /// Whether `end`, read after `self` and before `self` was found still,
    /// is a reading `self` vouches for: confirmed, every member readable
    /// and at rest, the root there, no listed child gone, and the same
    /// members as `self` names, each with as many threads as `self` lists
    /// for it. (A thread started after the listing and before its starter's
    /// `schedstat` was read would be counted in the member's `stat` and not
    /// in the list: the counts differ and nothing is vouched for.)
    pub fn covers(&self, end: &End) -> bool {
        let w = &end.walk;
        end.confirmed
            && !w.root_gone
            && !w.child_gone
            && w.unreadable.is_empty()
            && w.settled()
            && w.members.len() == self.threads.len()
            && w.members.iter().all(|(pid, m)| {
                self.threads.get(pid).is_some_and(|each| usize::try_from(m.stat.threads).is_ok_and(|n| n == each.len()))
            })
    }
}

/// The bounds of one end's reading.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EndBounds {
    /// How long to wait for members to come to rest.
    pub settle: Duration,
    /// Pause between tries.
    pub poll: Duration,
    /// The most walk pairs tried.
    pub max_pairs: u32,
}

/// One end, as read.
#[derive(Debug, Clone)]
pub(crate) struct End {
    pub walk: Walk,
    pub confirmed: bool,
}

/// Reads one end: pairs of walks, one after the other, until a pair agrees
/// and every member is at rest in the first, or the bounds run out. The
/// last agreeing pair's FIRST walk is the end's reading (confirmed);
/// without one, the last first walk (unconfirmed). The second walk only
/// confirms (§5.1: the agreement is on processes, parents, reaped time and
/// exit, not on rest), so it does not read the threads' states.
///
/// Why the first: a walk reads a parent before it lists its children, so a
/// child reaped in between is in neither. The walk after it sees the
/// parent's reaped time moved (or the child gone from its list) and
/// disagrees; a walk before it would not, where the child was born after
/// that walk listed its parent (docs/decisions.md, "§5.1 the reading is
/// the walk its confirmation follows").
pub(crate) fn read_end(walker: &mut Walker, scope: Scope, bounds: EndBounds) -> End {
    let deadline = Instant::now() + bounds.settle;
    let mut confirmed: Option<Walk> = None;
    let mut last = Walk::default();
    for pair in 0..bounds.max_pairs.max(1) {
        if pair > 0 {
            std::thread::sleep(bounds.poll);
        }
        // Only the first walk's reading is kept, so only it checks for rest.
        let a = walker.walk(scope, true);
        if walker.confirm(scope, &a).confirms(&a) {
            let settled = a.settled();
            confirmed = Some(a);
            if settled {
                break;
            }
        } else {
            last = a;
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    match confirmed {
        Some(walk) => End { walk, confirmed: true },
        None => End { walk: last, confirmed: false },
    }
}

/// What the two ends say about the tree over the span.
#[derive(Debug, Clone, Default)]
pub(crate) struct Comparison {
    pub cpu_ticks: u64,
    pub gaps: Vec<Gap>,
    pub members: u32,
    /// Every pid read at either end (for the GPU's per-process utilisation).
    pub pids: Vec<u32>,
}

/// Compares the ends. `born_after` is the boot time of the span's start in
/// clock ticks: a process not read at the start that started at or after it
/// was born inside the span. `own` spans skip the rules that concern other
/// processes (§5.1: a computation on the process's own threads is not made
/// `Partial` by a child it happens to have).
pub(crate) fn compare(start: &End, stop: &End, born_after: u64, own: bool) -> Comparison {
    let mut c = Comparison::default();
    let (s, t) = (&start.walk, &stop.walk);
    ends_gaps(start, stop, &mut c.gaps);
    let same = |a: &ProcStat, b: &ProcStat| a.start_ticks == b.start_ticks;
    // Children exited before the span and reaped in it: their time was all spent before.
    let mut reaped_before: HashMap<u32, u64> = HashMap::new();
    for (pid, m) in &s.members {
        let gone = t.members.get(pid).is_none_or(|n| !same(&m.stat, &n.stat));
        if m.stat.exited() && gone {
            *reaped_before.entry(m.stat.ppid).or_default() += m.stat.cpu_ticks.saturating_add(m.stat.reaped_ticks);
        }
    }
    for (pid, m) in &t.members {
        let at_start = s.members.get(pid).filter(|a| same(&a.stat, &m.stat));
        if let Some(a) = at_start {
            c.cpu_ticks = c.cpu_ticks.saturating_add(m.stat.cpu_ticks.saturating_sub(a.stat.cpu_ticks));
            let reaped = m.stat.reaped_ticks.saturating_sub(a.stat.reaped_ticks);
            if !own && reaped > 0 && reaped_before.get(pid).copied() != Some(reaped) {
                c.gaps.push(Gap::new(
                    super::gap::REAPED_IN_SPAN,
                    Some(*pid),
                    format!("reaped descendants' CPU time moved by {reaped} ticks"),
                ));
            }
            if m.stat.exited() && !a.stat.exited() {
                c.gaps.push(Gap::new(
                    super::gap::EXITED_IN_SPAN,
                    Some(*pid),
                    "exited inside the span: its last slice and its GPU use are unknown",
                ));
            }
        } else if m.stat.start_ticks >= born_after {
            c.cpu_ticks = c.cpu_ticks.saturating_add(m.stat.cpu_ticks);
            if m.stat.reaped_ticks > 0 && !own {
                c.gaps.push(Gap::new(
                    super::gap::REAPED_IN_SPAN,
                    Some(*pid),
                    format!("born in the span, reaped descendants' CPU time {} ticks", m.stat.reaped_ticks),
                ));
            }
            if m.stat.exited() {
                c.gaps.push(Gap::new(super::gap::EXITED_IN_SPAN, Some(*pid), "born and exited inside the span"));
            }
        } else {
            c.gaps.push(Gap::new(
                super::gap::UNREAD_AT_START,
                Some(*pid),
                format!(
                    "started at tick {} before the span, not read at its start: none of its time is counted",
                    m.stat.start_ticks
                ),
            ));
        }
    }
    for (pid, m) in &s.members {
        let gone = t.members.get(pid).is_none_or(|n| !same(&m.stat, &n.stat));
        if gone && !(m.stat.exited() && reaped_before.contains_key(&m.stat.ppid)) {
            c.gaps.push(Gap::new(
                super::gap::GONE_AT_STOP,
                Some(*pid),
                "present at the start and gone at the stop: what it spent in the span is not counted",
            ));
        }
    }
    let mut pids: BTreeSet<u32> = s.members.keys().copied().collect();
    pids.extend(t.members.keys().copied());
    c.members = u32::try_from(pids.len()).unwrap_or(u32::MAX);
    c.pids = pids.into_iter().collect();
    c
}

/// The gaps each end names on its own: unconfirmed walks, unreadable and unsettled members, a gone root.
fn ends_gaps(start: &End, stop: &End, gaps: &mut Vec<Gap>) {
    use super::gap;
    for (end, at_start) in [(start, true), (stop, false)] {
        let w = &end.walk;
        if !end.confirmed {
            let code = if at_start { gap::UNCONFIRMED_AT_START } else { gap::UNCONFIRMED_AT_STOP };
            gaps.push(Gap::new(
                code,
                None,
                "no two walks agreed before the meter stopped waiting: the tree kept changing",
            ));
        }
        if w.root_gone && at_start {
            gaps.push(Gap::new(gap::ROOT_GONE_AT_START, None, "the root was gone at the start"));
        }
        for (pid, why) in &w.unreadable {
            if !gaps.iter().any(|g| g.code == gap::UNREADABLE && g.pid == Some(*pid)) {
                gaps.push(Gap::new(gap::UNREADABLE, Some(*pid), why.clone()));
            }
        }
        for (pid, m) in &w.members {
            if !m.unsettled.is_empty() {
                let code = if at_start { gap::UNSETTLED_AT_START } else { gap::UNSETTLED_AT_STOP };
                let threads: Vec<String> =
                    m.unsettled.iter().map(|(t, s)| format!("{t} ({})", char::from(*s))).collect();
                gaps.push(Gap::new(code, Some(*pid), format!("threads not at rest: {}", threads.join(", "))));
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn member(pid: u32, parent: u32, start: u64, cpu: u64, reaped: u64, state: u8) -> (u32, MemberRead) {
        let read =
            ProcStat { pid, state, ppid: parent, cpu_ticks: cpu, reaped_ticks: reaped, threads: 1, start_ticks: start };
        (pid, MemberRead { stat: read, unsettled: Vec::new(), sched: None })
    }

    fn end(members: Vec<(u32, MemberRead)>) -> End {
        End { walk: Walk { members: members.into_iter().collect(), ..Walk::default() }, confirmed: true }
    }

    fn codes(c: &Comparison) -> Vec<(&'static str, Option<u32>)> {
        c.gaps.iter().map(|g| (g.code, g.pid)).collect()
    }

    #[test]
    fn s5_1_advance_of_members_at_both_ends_plus_whole_time_of_those_born_inside() {
        let a = end(vec![member(10, 1, 100, 50, 0, b'S')]);
        let b = end(vec![member(10, 1, 100, 80, 0, b'S'), member(11, 10, 500, 7, 0, b'S')]);
        let c = compare(&a, &b, 400, false);
        assert_eq!((c.cpu_ticks, c.members), (30 + 7, 2));
        assert_eq!(codes(&c), vec![]);
    }

    #[test]
    fn s5_1_member_that_started_before_the_span_and_was_not_read_at_its_start_is_not_counted() {
        let a = end(vec![member(10, 1, 100, 50, 0, b'S')]);
        let b = end(vec![member(10, 1, 100, 60, 0, b'S'), member(12, 10, 300, 90, 0, b'S')]);
        let c = compare(&a, &b, 400, false);
        assert_eq!(c.cpu_ticks, 10);
        assert_eq!(codes(&c), vec![("unread-at-start", Some(12))]);
    }

    #[test]
    fn s5_1_a_reused_pid_is_another_process() {
        let a = end(vec![member(10, 1, 100, 50, 0, b'S'), member(11, 10, 150, 40, 0, b'S')]);
        let b = end(vec![member(10, 1, 100, 50, 0, b'S'), member(11, 10, 450, 5, 0, b'S')]);
        let c = compare(&a, &b, 400, false);
        assert_eq!(c.cpu_ticks, 5, "the new 11 was born in the span: its whole time");
        assert_eq!(codes(&c), vec![("gone-at-stop", Some(11))]);
    }

    #[test]
    fn s5_1_reaping_a_child_that_had_exited_before_the_span_is_no_gap() {
        let a = end(vec![member(10, 1, 100, 50, 0, b'S'), member(11, 10, 150, 40, 3, b'Z')]);
        let b = end(vec![member(10, 1, 100, 50, 43, b'S')]);
        let c = compare(&a, &b, 400, false);
        assert_eq!(codes(&c), vec![]);
        // A child that was still running at the start is a reaped-in-span gap, and gone.
        let a = end(vec![member(10, 1, 100, 50, 0, b'S'), member(11, 10, 150, 40, 0, b'S')]);
        let b = end(vec![member(10, 1, 100, 50, 45, b'S')]);
        let c = compare(&a, &b, 400, false);
        assert_eq!(codes(&c), vec![("reaped-in-span", Some(10)), ("gone-at-stop", Some(11))]);
    }

    #[test]
    fn s5_1_own_threads_are_not_made_partial_by_a_reaped_child() {
        let a = end(vec![member(10, 1, 100, 50, 0, b'S')]);
        let b = end(vec![member(10, 1, 100, 70, 9, b'S')]);
        let c = compare(&a, &b, 400, true);
        assert_eq!((c.cpu_ticks, codes(&c)), (20, vec![]));
    }

    #[test]
    fn a_file_is_read_whole_at_every_length() {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = Vec::new();
        for len in [0, 1, 300, 2047, 2048, 2049, 4095, 4096, 4097, 9000, 70_000] {
            let text: Vec<u8> = (0..len).map(|i| b"0123456789 "[i % 11]).collect();
            let path = dir.path().join(format!("f{len}"));
            std::fs::write(&path, &text).unwrap();
            let f = std::fs::File::open(&path).unwrap();
            for _ in 0..2 {
                let n = read_whole(&f, &mut buf).unwrap();
                assert_eq!(&buf[..n], &text[..], "{len}");
            }
        }
        // And a `/proc` file longer than one short read.
        let f = std::fs::File::open("/proc/self/maps").unwrap();
        let n = read_whole(&f, &mut buf).unwrap();
        assert!(buf[..n].ends_with(b"\n"), "{n}");
    }

    #[test]
    fn s5_1_a_kept_file_of_a_reaped_process_reads_gone_never_another_process() {
        let mut w = Walker::new(ChildrenListing::TaskChildren);
        let mut child = std::process::Command::new("sleep").arg("1000").spawn().unwrap();
        let pid = child.id();
        let first = w.read_stat(pid, pid).unwrap();
        assert_eq!(first.pid, pid);
        assert!(w.open.contains_key(&(pid, pid, Kind::Stat)), "the file is kept");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(w.read_stat(pid, pid), Err(ReadFail::Gone));
        assert!(!w.open.contains_key(&(pid, pid, Kind::Stat)), "a file that failed is closed");
    }

    #[test]
    fn a_walker_closes_at_a_spans_end_the_files_the_span_did_not_read() {
        let mut w = Walker::new(ChildrenListing::TaskChildren);
        let me = std::process::id();
        w.read_stat(me, me).unwrap();
        w.span_done();
        assert_eq!(w.open.len(), 1, "read in the span: kept");
        w.span_done();
        assert!(w.open.is_empty(), "not read in the next: closed");
    }

    #[test]
    fn s5_1_only_the_walk_that_is_read_checks_rest() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = std::sync::Arc::clone(&stop);
        let busy = std::thread::spawn(move || {
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        let me = std::process::id();
        let scope = Scope::Own { pid: me, reader: procfs::own_tid() };
        let mut w = Walker::new(ChildrenListing::TaskChildren);
        let unsettled = |w: &Walk| w.members.get(&me).map_or(0, |m| m.unsettled.len());
        let seen = (0..200).any(|_| unsettled(&w.walk(scope, true)) > 0);
        let unchecked = (0..20).all(|_| unsettled(&w.walk(scope, false)) == 0);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        busy.join().unwrap();
        assert!(seen, "a spinning thread is seen not at rest");
        assert!(unchecked, "a walk without `rest` names no thread");
    }

    #[test]
    fn s5_1_walks_agree_only_on_the_same_processes_parents_reaped_time_and_exit() {
        let w = |m: Vec<(u32, MemberRead)>| Walk { members: m.into_iter().collect(), ..Walk::default() };
        let base = w(vec![member(10, 1, 100, 50, 0, b'S')]);
        assert!(base.agrees(&w(vec![member(10, 1, 100, 99, 0, b'R')])), "CPU time and run state may move");
        assert!(!base.agrees(&w(vec![member(10, 2, 100, 50, 0, b'S')])));
        assert!(!base.agrees(&w(vec![member(10, 1, 101, 50, 0, b'S')])));
        assert!(!base.agrees(&w(vec![member(10, 1, 100, 50, 1, b'S')])));
        assert!(!base.agrees(&w(vec![member(10, 1, 100, 50, 0, b'Z')])));
        let mut gone = base.clone();
        gone.child_gone = true;
        assert!(!base.agrees(&gone));
    }

    /// A shell blocked reading its stdin, with `n` idle `sleep` children; a
    /// line on its stdin makes it fork one more.
    pub(crate) struct Forker {
        pub(crate) child: std::process::Child,
    }

    impl Forker {
        pub(crate) fn spawn(n: usize) -> Self {
            let script = format!("{} read x; sleep 1000 & read y", "sleep 1000 & ".repeat(n));
            let child = std::process::Command::new("sh")
                .args(["-c", &script])
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let me = Self { child };
            let kids = format!("/proc/{0}/task/{0}/children", me.child.id());
            let asleep =
                |k: &str| std::fs::read_to_string(format!("/proc/{k}/stat")).is_ok_and(|s| s.contains("(sleep) S "));
            for _ in 0..2000 {
                let listed = std::fs::read_to_string(&kids).unwrap_or_default();
                let own = std::fs::read_to_string(format!("/proc/{}/stat", me.child.id())).unwrap_or_default();
                if listed.split_whitespace().count() == n
                    && listed.split_whitespace().all(asleep)
                    && own.contains(") S ")
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(50));
            me
        }

        /// The shell forks one more `sleep`; returns once it is listed and
        /// asleep (or after 10 s), and the shell is back at rest.
        pub(crate) fn fork_one(&mut self) {
            use std::io::Write;
            let pid = self.child.id();
            let kids = format!("/proc/{pid}/task/{pid}/children");
            let count = || std::fs::read_to_string(&kids).unwrap_or_default().split_whitespace().count();
            let before = count();
            self.child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
            self.child.stdin.as_mut().unwrap().flush().unwrap();
            let asleep =
                |k: &str| std::fs::read_to_string(format!("/proc/{k}/stat")).is_ok_and(|s| s.contains("(sleep) S "));
            for _ in 0..2000 {
                let listed = std::fs::read_to_string(&kids).unwrap_or_default();
                let own = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                if count() > before && listed.split_whitespace().all(asleep) && own.contains(") S ") {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    impl Drop for Forker {
        fn drop(&mut self) {
            let pid = self.child.id();
            let kids = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
            for k in kids.split_whitespace() {
                let _ = std::process::Command::new("kill").args(["-9", k]).status();
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    #[test]
    fn s5_1_an_idle_tree_is_confirmed_by_unchanged_schedstat_alone() {
        // Without CONFIG_SCHED_INFO `confirm` always walks again (the slow way, held by the next test);
        // every kernel this project supports has it.
        assert!(std::path::Path::new("/proc/self/schedstat").exists(), "no /proc/<pid>/schedstat here");
        let f = Forker::spawn(3);
        let scope = Scope::Tree(f.child.id());
        let mut w = Walker::new(ChildrenListing::detect());
        let a = w.walk(scope, true);
        assert_eq!(a.members.len(), 4, "{a:?}");
        assert!(a.members.values().all(|m| m.sched.is_some()), "schedstat read in the reading walk");
        let before = w.stat_reads;
        let c = w.confirm(scope, &a);
        assert_eq!(w.stat_reads, before, "no `stat` read again: the quick confirmation");
        assert!(matches!(c, Confirmation::Unchanged), "{c:?}");
        assert!(c.confirms(&a));
    }

    #[test]
    fn s5_1_a_member_that_ran_since_the_reading_is_confirmed_by_a_whole_walk_that_sees_the_fork() {
        let mut f = Forker::spawn(2);
        let scope = Scope::Tree(f.child.id());
        let mut w = Walker::new(ChildrenListing::detect());
        let a = w.walk(scope, true);
        assert_eq!(a.members.len(), 3, "{a:?}");
        f.fork_one();
        let before = w.stat_reads;
        let c = w.confirm(scope, &a);
        assert!(w.stat_reads > before, "the shell ran: the slow confirmation");
        let Confirmation::Walked(b) = &c else { panic!("the slow confirmation walks again: {c:?}") };
        assert_eq!(b.members.len(), 4, "the fork is seen");
        assert!(!a.agrees(b), "and the reading is not confirmed");
        assert!(!c.confirms(&a));
    }

    fn bounds() -> EndBounds {
        EndBounds { settle: Duration::from_millis(200), poll: Duration::from_micros(100), max_pairs: 64 }
    }

    #[test]
    fn s5_1_stillness_vouches_for_a_reading_until_a_thread_of_the_tree_runs() {
        let mut f = Forker::spawn(2);
        let root = f.child.id();
        let mut w = Walker::new(ChildrenListing::detect());
        let first = read_end(&mut w, Scope::Tree(root), bounds());
        assert_eq!(first.walk.members.len(), 3, "{first:?}");
        let s = w.stillness(&first.walk).expect("every thread's schedstat reads");
        let end = read_end(&mut w, Scope::Tree(root), bounds());
        assert!(s.covers(&end), "an idle tree's reading after its stillness: {end:?}");
        assert!(w.still(&s), "nothing of the idle tree ran");
        assert!(w.still(&s), "and still nothing");
        // The shell forks: it ran, so nothing read before is vouched for.
        f.fork_one();
        assert!(!w.still(&s), "the fork is seen");
        let after = read_end(&mut w, Scope::Tree(root), bounds());
        assert!(!s.covers(&after), "a tree with another member is not the one its stillness names");
    }

    #[test]
    fn s5_1_stillness_needs_its_files_and_the_same_threads() {
        let me = std::process::id();
        let mut w = Walker::new(ChildrenListing::TaskChildren);
        // This test process has several threads (the harness's): listed.
        let (pid, mut m) = member(me, 1, 100, 5, 0, b'S');
        m.stat.threads = 2;
        let s = w.stillness(&Walk { members: [(pid, m)].into_iter().collect(), ..Walk::default() }).unwrap();
        // A walker that never read them holds none of the files: no proof.
        assert!(!Walker::new(ChildrenListing::TaskChildren).still(&s));
        // A reading whose member counts another number of threads than the
        // list (a thread started between the list and the reading) is not covered.
        let threads = u32::try_from(s.threads[&me].len()).unwrap();
        let reading = |n: u32| {
            let (pid, mut m) = member(me, 1, 100, 5, 0, b'S');
            m.stat.threads = n;
            End { walk: Walk { members: [(pid, m)].into_iter().collect(), ..Walk::default() }, confirmed: true }
        };
        assert!(s.covers(&reading(threads)));
        assert!(!s.covers(&reading(threads + 1)));
        let mut unconfirmed = reading(threads);
        unconfirmed.confirmed = false;
        assert!(!s.covers(&unconfirmed), "an unconfirmed reading is vouched for by nothing");
        let mut busy = reading(threads);
        busy.walk.members.get_mut(&me).unwrap().unsettled.push((me, b'R'));
        assert!(!s.covers(&busy), "a reading with a thread not at rest is not carried");
    }
}
