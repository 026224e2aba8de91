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

/// The `record_show` target (any bytes given as a receipt stream): every
/// finding's offset (but the whole audit's 0) opens a record or fault with
/// [`crate::record::show`], the log walks from its first record to its last
/// through `next` with each step's `prev` the step before, and each record
/// found by its id is one with that id. `Err` says what broke.
pub fn record_show(stream: &[u8]) -> Result<(), String> {
    use crate::record::{show, Locate};
    const HEADER_LEN: u64 = jcp_receipt::stream::HEADER.len() as u64;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("jcp-audit-record-{}-{n}.jcps", std::process::id()));
    std::fs::write(&path, stream).map_err(|e| format!("writing {}: {e}", path.display()))?;
    let result = (|| {
        let opts = AuditOptions { threads: 1, ..AuditOptions::default() };
        let Ok(report) = audit_paths(&[&path], &opts, |_| ControlFlow::Continue(())) else {
            // Not a stream: showing a record is refused the same way.
            return match show(&path, Locate::At(8)) {
                Err(crate::AuditError::NotAStream { .. } | crate::AuditError::Io { .. }) => Ok(()),
                other => Err(format!("an unreadable stream showed {other:?}")),
            };
        };
        for f in report.findings.iter().filter(|f| f.offset > 0) {
            show(&path, Locate::At(f.offset))
                .map_err(|e| format!("finding {} at {}: {e}", f.code.as_str(), f.offset))?;
        }
        let (mut at, mut prev, mut steps) = (Some(HEADER_LEN), None, 0u64);
        if stream.len() as u64 <= HEADER_LEN {
            at = None;
        }
        while let Some(off) = at {
            let v = show(&path, Locate::At(off)).map_err(|e| format!("walking at {off}: {e}"))?;
            steps += 1;
            if v.prev != prev || v.number != steps {
                return Err(format!(
                    "at {off}: prev {:?} number {}, walked from {prev:?} in {steps}",
                    v.prev, v.number
                ));
            }
            if let Some(id) = v.id {
                let by_id = show(&path, Locate::Id(id)).map_err(|e| format!("id {id} of the record at {off}: {e}"))?;
                if by_id.id != Some(id) {
                    return Err(format!("id {id} opened {:?}", by_id.id));
                }
            }
            if v.next.is_some_and(|n| n <= off) {
                return Err(format!("at {off}: next {:?} does not move on", v.next));
            }
            prev = Some(off);
            at = v.next;
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&path);
    result
}
