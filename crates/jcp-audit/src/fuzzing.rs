//! Fuzz invariants (feature `fuzzing`): the properties the `fuzz/` targets
//! check over arbitrary bytes, and `cargo test` checks over their committed
//! corpora (`tests/fleet.rs`, `tests/reference.rs`). Not part of the shipped
//! library: they write temporary files and run whole audits.

use std::ops::ControlFlow;

use crate::partial::{merge_report, Partial};
use crate::{audit_paths, audit_reference, AuditOptions, Report};

/// The `partial_decode` target (a partial audit file, as `jcp audit merge`
/// reads it): decoding never panics; a partial that decodes re-encodes to
/// exactly its input, decodes equal again, and merges (alone and with
/// itself) to a report. `Err` says which of these failed.
pub fn partial_decode(data: &[u8]) -> Result<(), String> {
    let Ok(p) = Partial::from_json("fuzz", data) else { return Ok(()) };
    let again = p.to_json().map_err(|e| e.to_string())?;
    if again != data {
        return Err("a partial decoded from bytes other than its own encoding".into());
    }
    let q = Partial::from_json("again", &again).map_err(|e| format!("re-encoded partial refused: {e}"))?;
    if q != p {
        return Err("partial did not round-trip".into());
    }
    let one =
        merge_report(vec![("fuzz".into(), p.clone())]).map_err(|e| format!("a decoded partial does not merge: {e}"))?;
    let two = merge_report(vec![("a".into(), p.clone()), ("b".into(), p)])
        .map_err(|e| format!("a decoded partial does not merge with itself: {e}"))?;
    if two.streams.len() != 2 * one.streams.len() {
        return Err("merging a partial with itself lost streams".into());
    }
    Ok(())
}

/// The `reference_agrees` target (any bytes given as a receipt stream):
/// the fast audit and the reference audit ([`crate::reference`]) give the
/// same report JSON, or the same error. `Err` says how they differ.
pub fn reference_agrees(stream: &[u8]) -> Result<(), String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("jcp-audit-agree-{}-{n}.jcps", std::process::id()));
    std::fs::write(&path, stream).map_err(|e| format!("writing {}: {e}", path.display()))?;
    let opts = AuditOptions { threads: 1, ..AuditOptions::default() };
    let fast = audit_paths(&[&path], &opts, |_| ControlFlow::Continue(()));
    let reference = audit_reference(&[&path], &opts);
    let _ = std::fs::remove_file(&path);
    let json = |r: &Report| serde_json::to_string(r).map_err(|e| e.to_string());
    match (fast, reference) {
        (Ok(f), Ok(r)) if json(&f)? == json(&r)? => Ok(()),
        (Ok(f), Ok(r)) => Err(format!("the reports differ:\nfast      {}\nreference {}", json(&f)?, json(&r)?)),
        (Err(f), Err(r)) if f.to_string() == r.to_string() => Ok(()),
        (f, r) => Err(format!("fast {:?}, reference {:?}", f.map(|x| x.clean), r.map(|x| x.clean))),
    }
}
