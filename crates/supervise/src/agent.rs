//! Step 3 of a live run: the agent, `jcp agent demo`, as a child process,
//! and the threads that watch it: its events (one JSON object a line on
//! stdout), its stderr and its exit, each told to the run's observer.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jcp_wire::endpoint::Address;

use crate::{Ended, Error, Issued, Observed, Observer, Settings, EVENTS_KEPT, STDERR_KEPT};

/// What the watcher threads fill in: the agent's events (the newest
/// [`EVENTS_KEPT`]), the tail of its stderr, how it ended.
#[derive(Debug, Default)]
pub(crate) struct Watched {
    pub(crate) events: Mutex<Vec<serde_json::Value>>,
    /// Every event ever kept, the dropped ones included (the number of the
    /// newest: the views number the kept tail from it).
    pub(crate) events_seen: std::sync::atomic::AtomicU64,
    pub(crate) stderr: Mutex<String>,
    pub(crate) ended: Mutex<Option<Ended>>,
}

/// Starts the agent connected to the endpoint at `bound`, with its key, its
/// chain, the run file it picks amendments up from and the work each step
/// asks the endpoint to run behind its gate (its stated cost only a
/// maximum: the endpoint meters it). It stops by itself when the process
/// that started it is gone.
pub(crate) fn spawn(jcp: &Path, issued: &Issued, bound: &Address, settings: &Settings) -> Result<Child, Error> {
    Command::new(jcp)
        .args(["agent", "demo", "--json", "--stop-with-parent", "--connect", &bound.to_string(), "--run"])
        .arg(&issued.run_path)
        .arg("--key")
        .arg(&issued.agent_key)
        .arg("--chain")
        .arg(&issued.root_path)
        .args([
            "--work",
            &settings.work,
            "--max-uj",
            &settings.max_uj.to_string(),
            "--checkpoint-every",
            &settings.checkpoint_every.to_string(),
            "--interval-ms",
            &settings.interval_ms.to_string(),
            "--wait-timeout-s",
            &settings.wait_timeout_s.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io("cannot start the demo agent", jcp, e))
}

fn thread(name: &str, f: impl FnOnce() + Send + 'static) -> Option<JoinHandle<()>> {
    std::thread::Builder::new().name(name.into()).spawn(f).ok()
}

/// Watches the agent: its stdout and stderr read on threads of their own,
/// its exit waited for on a third, which records how it ended once the
/// readers have told everything the agent wrote (or after 2 s, should
/// something else hold its pipes open). Returns its pid.
pub(crate) fn watch(mut child: Child, watched: &Arc<Watched>, observer: &Observer) -> u32 {
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        let (w, o) = (watched.clone(), observer.clone());
        readers.extend(thread("agent-stdout", move || read_events(out, &w, &o)));
    }
    if let Some(err) = child.stderr.take() {
        let (w, o) = (watched.clone(), observer.clone());
        readers.extend(thread("agent-stderr", move || read_stderr(err, &w.stderr, &o)));
    }
    let pid = child.id();
    let (w, o) = (watched.clone(), observer.clone());
    let waiter = thread("agent-wait", move || {
        let status = child.wait();
        #[cfg(unix)]
        let signal = status.as_ref().ok().and_then(std::os::unix::process::ExitStatusExt::signal);
        #[cfg(not(unix))]
        let signal = None;
        let deadline = Instant::now() + Duration::from_secs(2);
        while readers.iter().any(|r| !r.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let ended = Ended { code: status.ok().and_then(|s| s.code()), signal };
        if let Ok(mut e) = w.ended.lock() {
            *e = Some(ended);
        }
        o(Observed::Ended(ended));
    });
    if waiter.is_none() {
        eprintln!("the agent (pid {pid}) is not watched: no thread could be started to wait for it");
    }
    pid
}

/// One line of the agent's stdout as an event: its JSON object, or a line
/// that is not JSON kept as an `output` event.
pub(crate) fn parse_event(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|_| serde_json::json!({"event": "output", "message": line}))
}

/// Appends `v`, keeping the newest `kept`.
fn keep_newest<T>(all: &mut Vec<T>, v: T, kept: usize) {
    all.push(v);
    let excess = all.len().saturating_sub(kept);
    all.drain(..excess);
}

/// Appends `piece`, keeping about the last `kept` bytes, cut on a
/// character boundary.
fn keep_tail(s: &mut String, piece: &str, kept: usize) {
    s.push_str(piece);
    let cut = s.len().saturating_sub(kept);
    let cut = (cut..s.len()).find(|i| s.is_char_boundary(*i)).unwrap_or(0);
    s.drain(..cut);
}

/// Keeps one event in the run's log (the newest [`EVENTS_KEPT`]).
pub(crate) fn keep_event(watched: &Watched, v: serde_json::Value) {
    if let Ok(mut e) = watched.events.lock() {
        keep_newest(&mut e, v, EVENTS_KEPT);
        watched.events_seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

fn read_events(out: impl Read, watched: &Watched, observer: &Observer) {
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        let v = parse_event(&line);
        keep_event(watched, v.clone());
        observer(Observed::Event(&v));
    }
}

fn read_stderr(mut err: impl Read, stderr: &Mutex<String>, observer: &Observer) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = err.read(&mut buf) {
        if n == 0 {
            break;
        }
        let piece = String::from_utf8_lossy(&buf[..n]);
        if let Ok(mut s) = stderr.lock() {
            keep_tail(&mut s, &piece, STDERR_KEPT);
        }
        observer(Observed::Stderr(&piece));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Issue 39 ("event lists keep their numbering"): the newest
    /// `EVENTS_KEPT` events are kept, and every event is counted, so a view
    /// numbers the kept tail as the run does.
    #[test]
    fn the_newest_events_are_kept_and_every_event_is_counted() {
        let w = Watched::default();
        for i in 0..EVENTS_KEPT + 5 {
            keep_event(&w, json!({"event": "decision", "step": i}));
        }
        let kept = w.events.lock().unwrap().clone();
        assert_eq!(kept.len(), EVENTS_KEPT);
        assert_eq!(kept[0]["step"], 5, "the oldest dropped");
        assert_eq!(w.events_seen.load(std::sync::atomic::Ordering::Relaxed), (EVENTS_KEPT + 5) as u64);
    }

    #[test]
    fn an_event_line_is_its_json_and_any_other_line_is_output() {
        assert_eq!(parse_event(r#"{"event":"started","grant":"ab"}"#), json!({"event": "started", "grant": "ab"}));
        assert_eq!(parse_event("thread panicked"), json!({"event": "output", "message": "thread panicked"}));
        assert_eq!(parse_event(""), json!({"event": "output", "message": ""}));
    }

    #[test]
    fn only_the_newest_events_are_kept() {
        let mut all = Vec::new();
        for i in 0..10 {
            keep_newest(&mut all, i, 4);
        }
        assert_eq!(all, vec![6, 7, 8, 9]);
    }

    #[test]
    fn the_stderr_tail_is_cut_on_a_character_boundary() {
        let mut s = String::new();
        keep_tail(&mut s, "abc", 10);
        assert_eq!(s, "abc");
        keep_tail(&mut s, "défg", 4);
        assert_eq!(s, "éfg", "the last 4 bytes");
        let mut s = String::new();
        keep_tail(&mut s, "ééé", 3);
        assert_eq!(s, "é", "the cut moves forward to the next boundary, never splits é");
        assert!(s.len() <= 3);
    }

    #[test]
    fn the_watchers_tell_every_event_before_the_end() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let observer: Observer = Arc::new(move |o: Observed<'_>| {
            let s = match o {
                Observed::Event(v) => format!("event {}", v["event"]),
                Observed::Stderr(s) => format!("stderr {}", s.trim()),
                Observed::Ended(e) => format!("ended {}", e.how()),
            };
            sink.lock().unwrap().push(s);
        });
        let child = Command::new("sh")
            .args(["-c", r#"echo '{"event":"started"}'; echo oops >&2; echo plain; exit 3"#])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let watched = Arc::new(Watched::default());
        watch(child, &watched, &observer);
        let deadline = Instant::now() + Duration::from_secs(10);
        while watched.ended.lock().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the end was not seen");
            std::thread::sleep(Duration::from_millis(10));
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.last().map(String::as_str), Some("ended exit 3"), "{seen:?}");
        assert!(seen.contains(&"event \"started\"".to_owned()) && seen.contains(&"event \"output\"".to_owned()));
        assert!(seen.contains(&"stderr oops".to_owned()), "{seen:?}");
        assert_eq!(watched.events.lock().unwrap().len(), 2);
        assert_eq!(watched.stderr.lock().unwrap().as_str(), "oops\n");
    }
}
