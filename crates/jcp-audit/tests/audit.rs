//! The audit engine over real streams: §8.2 (nothing skipped), §8.1,
//! §4.3 (propagation classes), §4.11 (unresolved), §5.5 (conservation),
//! bad input at byte offsets, progress and cancellation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::similar_names,
    clippy::many_single_char_names,
    clippy::items_after_statements
)]

use jcp_audit::{Authority, FindingCode};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use jcp::cbor::{ContentId, Value};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::{Did, Keypair};
use jcp::revocation::Revocation;
use jcp_meter::conservation::{Basis, Unstated};
mod common;

use common::{points, run_grant, Points};
use jcp_audit::{audit_paths, AuditError, AuditOptions, Progress, Report, Verification};
use jcp_receipt::demo::{self, DemoOptions};
use jcp_receipt::runtime::DurableGate;
use jcp_receipt::stream::{self, Item, Reader, RecordKind, MAGIC};
use jcp_receipt::writer::Durability;

fn audit(paths: &[&Path]) -> Report {
    audit_paths(paths, &AuditOptions::default(), |_| ControlFlow::Continue(())).unwrap()
}

fn demo_stream(dir: &Path, name: &str, receipts: u64, tamper: u64, unresolved: u64) -> (PathBuf, demo::DemoSummary) {
    let p = dir.join(name);
    let s = demo::write_demo(
        &p,
        &DemoOptions { receipts, tamper, unresolved, seed: 7, durability: Durability::GeneratorOnly },
    )
    .unwrap();
    (p, s)
}

fn codes(r: &Report) -> Vec<(String, u64)> {
    // Every code a real audit emits is one the console's FindingCode union names.
    for k in r.findings_by_code.keys() {
        assert!(jcp_audit::FINDING_CODES.contains(&k.as_str()), "{k} is not in jcp_audit::FINDING_CODES");
    }
    r.findings_by_code.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn record_offsets(p: &Path) -> Vec<(u64, RecordKind, Vec<u8>)> {
    Reader::new(std::fs::File::open(p).unwrap())
        .unwrap()
        .filter_map(|i| match i {
            Item::Record(r) => Some((r.offset, r.kind, r.payload)),
            Item::Fault(_) => None,
        })
        .collect()
}

fn mutate(p: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut b = std::fs::read(p).unwrap();
    f(&mut b);
    std::fs::write(p, b).unwrap();
}

/// Replaces the receipt record at `off` (its payload `old`) with one of payload `new`.
fn replace_receipt(p: &Path, off: u64, old: &[u8], new: &[u8]) {
    let framed_old = stream::frame(RecordKind::Receipt, old).unwrap();
    let framed_new = stream::frame(RecordKind::Receipt, new).unwrap();
    mutate(p, |b| {
        let tail = b.split_off(off as usize + framed_old.len());
        b.truncate(off as usize);
        b.extend_from_slice(&framed_new);
        b.extend_from_slice(&tail);
    });
}

#[test]
fn s8_2_clean_demo_stream_audits_clean_and_counts_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (p, sum) = demo_stream(dir.path(), "a.jcps", 200, 0, 0);
    let r = audit(&[&p]);
    assert!(r.clean, "{:?}", r.findings);
    assert_eq!(r.exit_code(), 0);
    assert_eq!(r.receipts.total, sum.receipts);
    assert_eq!(r.receipts.verified, sum.receipts);
    assert_eq!(r.receipts.allows, sum.allows);
    assert_eq!(r.receipts.denies, sum.denies);
    assert_eq!(r.receipts.outcomes, sum.allows);
    assert_eq!(r.receipts.grants, sum.grants);
    assert!(r.receipts.deny_reasons.contains_key("revoked"));
    // Group accounting equals the per-grant leaf figures.
    let allows: u64 = r.groups.iter().map(|g| g.allows).sum();
    let refusals: u64 = r.groups.iter().map(|g| g.refusals + g.unattributed).sum();
    assert_eq!((allows, refusals), (sum.allows, sum.denies));
}

#[test]
fn s8_2_tampered_receipts_are_counted_by_reason_never_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (p, sum) = demo_stream(dir.path(), "t.jcps", 150, 3, 0);
    let r = audit(&[&p]);
    assert!(!r.clean);
    assert_eq!(r.exit_code(), 1);
    assert_eq!(r.receipts.total, 150);
    assert_eq!(r.receipts.failed, 3);
    assert_eq!(r.receipts.failed_by_reason.get(&FindingCode::BadSignature), Some(&3));
    assert_eq!(r.receipts.verified + r.receipts.failed, r.receipts.total);
    let at: Vec<u64> = r.findings.iter().filter(|f| f.code == "bad-signature").map(|f| f.offset).collect();
    assert_eq!(at, sum.tampered_offsets);
}

#[test]
fn c14_group_accounting_matches_the_original_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), "g.jcps", 200, 0, 0);
    let r = audit(&[&p]);
    // Rebuild the ledger independently from the verified receipts.
    // §8.2: a refusal a stranger could cause is kept apart (`unattributed`).
    let mut want: std::collections::BTreeMap<(String, String), (u64, u64, u64, u64)> = Default::default();
    for (_, kind, payload) in record_offsets(&p) {
        if kind != RecordKind::Receipt {
            continue;
        }
        let v = jcp_receipt::verify_receipt(&payload, None).unwrap();
        let e = want.entry((v.core.grant_id.to_hex(), v.core.subject.to_string())).or_default();
        match v.core.verdict {
            jcp::decision::Verdict::Allow => {
                e.0 += 1;
                e.2 += v.core.cost_uj;
            }
            jcp::decision::Verdict::Deny(r) if r.establishes_caller() => e.1 += 1,
            jcp::decision::Verdict::Deny(_) => e.3 += 1,
        }
    }
    let got: std::collections::BTreeMap<(String, String), (u64, u64, u64, u64)> = r
        .groups
        .iter()
        .map(|g| ((g.grant_id.to_hex(), g.subject.clone()), (g.allows, g.refusals, g.uj, g.unattributed)))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn s5_5_conservation_line_is_exact_integer_with_its_ppm_floor_and_basis() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), "c.jcps", 150, 0, 0);
    let r = audit(&[&p]);
    for g in &r.grants {
        let c = g.conservation.as_ref().expect("every demo grant has a record");
        assert_eq!(c.spent_uj + c.remaining_uj, c.budget_uj, "exact integers");
        assert_eq!(c.measured_uj + c.modelled_uj, c.spent_uj);
        // The meter's floor, exact, in lowest terms.
        assert_eq!(c.floor_ppm_fraction, Some(jcp_meter::conservation::floor_ppm(c.budget_uj).unwrap()));
        let f = c.floor_ppm_fraction.unwrap();
        assert_eq!(f.num * u128::from(c.budget_uj), f.den * 1_000_000);
        let want_basis = if c.spent_uj == 0 {
            None
        } else if c.modelled_uj == 0 {
            Some(Basis::Measured)
        } else {
            Some(Basis::Modelled)
        };
        assert_eq!(c.basis, want_basis);
        assert_eq!(c.unstated.is_empty(), c.spent_uj > 0);
    }
    assert_eq!(r.energy.provenance_floor, "Estimator");
    assert_eq!(r.energy.coverage_floor, "Partial");
}

#[test]
fn s4_11_unresolved_decisions_are_surfaced_naming_their_holder() {
    let dir = tempfile::tempdir().unwrap();
    let (p, sum) = demo_stream(dir.path(), "u.jcps", 200, 0, 3);
    let r = audit(&[&p]);
    assert_eq!(r.unresolved_total, 3);
    assert_eq!(sum.unresolved, 3);
    assert_eq!(r.findings_by_code.get(&FindingCode::UnresolvedDecision), Some(&3));
    let cast = demo::cast(7).unwrap();
    let workers: Vec<String> =
        cast.chains.iter().map(|(_, d)| d.to_string()).chain(cast.roots.iter().map(|(_, d)| d.to_string())).collect();
    for u in &r.unresolved {
        assert!(workers.contains(&u.holder), "names the party that held it");
        assert_eq!(u.steward, cast.steward.did().to_string());
    }
}

#[test]
fn s8_1_truncated_stream_reports_a_torn_tail_at_its_offset_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), "x.jcps", 100, 0, 0);
    let recs = record_offsets(&p);
    let (last, _, _) = *recs.iter().map(|(o, k, _)| (o, k, ())).last().map(|(o, k, u)| (*o, *k, u)).as_ref().unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    mutate(&p, |b| b.truncate((last + (len - last) / 2) as usize));
    let r = audit(&[&p]);
    assert_eq!(r.streams[0].torn_tail_at, Some(last));
    let f = r.findings.iter().find(|f| f.code == "torn-tail").unwrap();
    assert_eq!(f.offset, last);
}

#[test]
fn s8_1_bit_flipped_record_is_a_named_finding_and_the_audit_continues() {
    let dir = tempfile::tempdir().unwrap();
    let (p, sum) = demo_stream(dir.path(), "f.jcps", 100, 0, 0);
    let recs = record_offsets(&p);
    let (off, _, _) = recs.iter().find(|r| r.1 == RecordKind::Receipt).unwrap();
    mutate(&p, |b| b[*off as usize + 60] ^= 0x20);
    let r = audit(&[&p]);
    let f: Vec<_> = r.findings.iter().filter(|f| f.code == "record-corrupt").collect();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].offset, *off);
    assert_eq!(r.receipts.verified, sum.receipts - 1, "every other receipt still verified");
}

#[test]
fn s8_1_reordered_records_are_found_at_their_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), "o.jcps", 60, 0, 0);
    let recs = record_offsets(&p);
    let rs: Vec<_> = recs.iter().filter(|r| r.1 == RecordKind::Receipt).collect();
    // Swap two whole receipt records (both framed, both validly signed).
    // Two same-sized receipts some records apart.
    let (a, b) = rs
        .iter()
        .enumerate()
        .skip(5)
        .find_map(|(i, a)| rs.iter().skip(i + 3).find(|b| b.2.len() == a.2.len()).map(|b| (*a, *b)))
        .unwrap();
    let fa = stream::frame(RecordKind::Receipt, &a.2).unwrap();
    let fb = stream::frame(RecordKind::Receipt, &b.2).unwrap();
    assert_eq!(fa.len(), fb.len(), "same-sized demo receipts swap in place");
    mutate(&p, |bytes| {
        bytes[a.0 as usize..a.0 as usize + fa.len()].copy_from_slice(&fb);
        bytes[b.0 as usize..b.0 as usize + fb.len()].copy_from_slice(&fa);
    });
    let r = audit(&[&p]);
    assert!(r.findings.iter().any(|f| f.code == "out-of-order" || f.code == "sequence-gap"), "{:?}", codes(&r));
    let first = r.findings.iter().find(|f| f.code == "sequence-gap" || f.code == "out-of-order").unwrap();
    assert_eq!(first.offset, a.0, "the first displaced record is named");
}

#[test]
fn s8_1_duplicated_record_is_counted_once_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (p, sum) = demo_stream(dir.path(), "d.jcps", 60, 0, 0);
    let recs = record_offsets(&p);
    let rec = recs.iter().find(|r| r.1 == RecordKind::Receipt).unwrap();
    let end = std::fs::metadata(&p).unwrap().len();
    mutate(&p, |b| b.extend_from_slice(&stream::frame(RecordKind::Receipt, &rec.2).unwrap()));
    let r = audit(&[&p]);
    let f = r.findings.iter().find(|f| f.code == "duplicate-record").unwrap();
    assert_eq!(f.offset, end);
    assert_eq!(r.receipts.verified, sum.receipts, "debited once");
    assert_eq!(r.receipts.failed_by_reason.get(&FindingCode::DuplicateRecord), Some(&1));
}

#[test]
fn s8_1_oversized_record_is_named_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (p, sum) = demo_stream(dir.path(), "big.jcps", 40, 0, 0);
    let recs = record_offsets(&p);
    let off = recs[5].0;
    mutate(&p, |b| {
        let tail = b.split_off(off as usize);
        b.extend_from_slice(MAGIC);
        b.push(1);
        b.extend_from_slice(&(10_000_000u32).to_be_bytes());
        b.extend_from_slice(&[0u8; 64]);
        b.extend_from_slice(&tail);
    });
    let r = audit(&[&p]);
    let f = r.findings.iter().find(|f| f.code == "record-oversized").unwrap();
    assert_eq!(f.offset, off);
    assert_eq!(r.receipts.verified, sum.receipts);
}

/// Encodes a map with its entries in the given (non-canonical) order.
fn encode_unsorted(entries: &[(Value, Value)]) -> Vec<u8> {
    let mut out = vec![0xb8, u8::try_from(entries.len()).unwrap()];
    for (k, v) in entries {
        out.extend(k.encode());
        out.extend(v.encode());
    }
    out
}

#[test]
fn s3_non_canonical_core_is_refused_at_its_offset_even_when_signed() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), "n.jcps", 30, 0, 0);
    let recs = record_offsets(&p);
    let (off, _, payload) = recs.iter().find(|r| r.1 == RecordKind::Receipt).unwrap().clone();
    // Re-seal the same core with its keys reversed, properly signed by the steward.
    let opened = jcp_receipt::verify_receipt(&payload, None).unwrap();
    let Value::Map(mut entries) = opened.core.to_value().unwrap() else { panic!() };
    entries.reverse();
    let cast = demo::cast(7).unwrap();
    let protected = coset::HeaderBuilder::new()
        .algorithm(coset::iana::Algorithm::EdDSA)
        .key_id(cast.steward.did().to_did_string().into_bytes())
        .build();
    use coset::TaggedCborSerializable;
    let bad = coset::CoseSign1Builder::new()
        .protected(protected)
        .payload(encode_unsorted(&entries))
        .create_signature(b"", |m| cast.steward.sign(m).to_vec())
        .build()
        .to_tagged_vec()
        .unwrap();
    replace_receipt(&p, off, &payload, &bad);
    let r = audit(&[&p]);
    let f = r.findings.iter().find(|f| f.offset == off).unwrap();
    assert_eq!(f.code, "core-non-canonical", "{f:?}");
    assert_eq!(r.receipts.failed_by_reason.get(&FindingCode::CoreNonCanonical), Some(&1));
}

#[test]
fn c5_expected_steward_refuses_other_stewards_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let (p, sum) = demo_stream(dir.path(), "s.jcps", 30, 0, 0);
    let other = Keypair::from_seed([9; 32]).unwrap().did();
    let opts = AuditOptions { expected_stewards: vec![other], ..AuditOptions::default() };
    let r = audit_paths(&[&p], &opts, |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(r.receipts.verified, 0);
    assert_eq!(r.receipts.failed_by_reason.get(&FindingCode::WrongSteward), Some(&sum.receipts));
    let me = demo::cast(7).unwrap().steward.did();
    let opts = AuditOptions { expected_stewards: vec![me], ..AuditOptions::default() };
    assert!(audit_paths(&[&p], &opts, |_| ControlFlow::Continue(())).unwrap().clean);
}

#[test]
fn s8_2_threads_and_verification_modes_agree_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), "m.jcps", 240, 4, 2);
    let mut outs = Vec::new();
    for (threads, verification, chunk) in
        [(1, Verification::Batch, 4096), (2, Verification::Batch, 37), (2, Verification::Strict, 100)]
    {
        let opts = AuditOptions { threads, verification, chunk_records: chunk, ..AuditOptions::default() };
        let r = audit_paths(&[&p], &opts, |_| ControlFlow::Continue(())).unwrap();
        outs.push(serde_json::to_string(&r).unwrap());
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
}

#[test]
fn s8_2_progress_is_reported_and_the_audit_can_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = demo_stream(dir.path(), "p.jcps", 200, 0, 0);
    let opts = AuditOptions { chunk_records: 50, ..AuditOptions::default() };
    let mut events = Vec::new();
    let r = audit_paths(&[&p], &opts, |e| {
        events.push(e.clone());
        ControlFlow::Continue(())
    })
    .unwrap();
    assert!(r.clean);
    let advanced: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Progress::Advanced { bytes_done, .. } => Some(*bytes_done),
            _ => None,
        })
        .collect();
    assert!(advanced.len() > 5, "{}", advanced.len());
    assert!(advanced.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(*advanced.last().unwrap(), std::fs::metadata(&p).unwrap().len());
    let mut n = 0;
    let err = audit_paths(&[&p], &opts, |e| {
        if matches!(e, Progress::Advanced { .. }) {
            n += 1;
        }
        if n == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap_err();
    assert!(matches!(err, AuditError::Cancelled));
    assert_eq!(err.code(), "cancelled");
}

#[test]
fn s8_1_unreadable_input_is_an_error_not_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("junk");
    std::fs::write(&p, b"definitely not a stream").unwrap();
    let e = audit_paths(&[&p], &AuditOptions::default(), |_| ControlFlow::Continue(())).unwrap_err();
    assert_eq!(e.code(), "not-a-stream");
    let e = audit_paths(&[dir.path().join("missing")], &AuditOptions::default(), |_| ControlFlow::Continue(()))
        .unwrap_err();
    assert_eq!(e.code(), "io");
    let none: [&Path; 0] = [];
    assert_eq!(
        audit_paths(&none, &AuditOptions::default(), |_| ControlFlow::Continue(())).unwrap_err().code(),
        "no-input"
    );
}

// ---- §4.3 propagation: several enforcement points, one revocation ----

fn allow_once(dg: &mut DurableGate, pts: &Points, shard: usize) {
    let (g, w) = &pts.shards[shard];
    let chain = [pts.root.clone(), g.clone()];
    let f = Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: g.id(),
        action: "invoke".into(),
        resource: pts.resource,
        payload_hash: ContentId::of(&Value::Uint(1)),
        model: None,
    };
    let c = Cost::energy(Energy::hardware(100));
    let caller: Did = w.did();
    let req = Request { frame: &f, chain: &chain, caller: &caller, cost: &c, now: 1, flow: None };
    let rec = dg.decide(&req).unwrap();
    assert!(rec.decision.is_allow(), "{:?}", rec.decision);
    dg.complete(&rec.receipt, jcp_receipt::record::OutcomeStatus::Completed).unwrap();
}

#[test]
fn s4_3_allows_after_a_revocation_are_explicable_violation_or_unverifiable() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let rev = Revocation::issue(&pts.root, &pts.issuer, Some([5; 16])).unwrap();
    let mut paths = Vec::new();
    // Point A hears the revocation at marker 10 and records it.
    let pa = dir.path().join("a.jcps");
    let (mut a, _) = DurableGate::open(&pa, Keypair::from_seed([40; 32]).unwrap(), Gate::new()).unwrap();
    a.record_grant(&pts.root).unwrap();
    a.set_known_through(9).unwrap();
    allow_once(&mut a, &pts, 0); // before: known_through 9 < 10, explicable
    a.admit_revocation(&rev, &pts.root, 10).unwrap();
    a.close().unwrap();
    paths.push(pa);
    // Point B has not heard: known_through 8 < 10 → explicable.
    let pb = dir.path().join("b.jcps");
    let (mut b, _) = DurableGate::open(&pb, Keypair::from_seed([41; 32]).unwrap(), Gate::new()).unwrap();
    b.set_known_through(8).unwrap();
    allow_once(&mut b, &pts, 1);
    b.close().unwrap();
    paths.push(pb);
    // Point C states it is current (12 ≥ 10) yet allows: a violation.
    let pc = dir.path().join("c.jcps");
    let (mut c, _) = DurableGate::open(&pc, Keypair::from_seed([42; 32]).unwrap(), Gate::new()).unwrap();
    c.set_known_through(12).unwrap();
    allow_once(&mut c, &pts, 2);
    c.close().unwrap();
    paths.push(pc);
    // Point D states nothing: unverifiable, not compliant.
    let pd = dir.path().join("d.jcps");
    let (mut d, _) = DurableGate::open(&pd, Keypair::from_seed([43; 32]).unwrap(), Gate::new()).unwrap();
    allow_once(&mut d, &pts, 3);
    d.close().unwrap();
    paths.push(pd);
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let r = audit(&refs);
    assert_eq!(r.revocations.len(), 1);
    let rv = &r.revocations[0];
    assert_eq!((rv.marker, rv.authority), (10, Authority::Verified));
    assert_eq!((rv.allows.explicable, rv.allows.violation, rv.allows.unverifiable), (2, 1, 1));
    let v = r.findings.iter().find(|f| f.code == "revocation-violation").unwrap();
    assert_eq!(v.stream, 2);
    let u = r.findings.iter().find(|f| f.code == "revocation-unverifiable").unwrap();
    assert_eq!(u.stream, 3);
    assert!(!r.clean);
    let _ = &pts.holder;
}

/// §4.3 against the issuer's own revocation log (issue 34): each
/// revocation is judged at the marker the issuer issued it at. A point that
/// recorded it at another marker is named (`revocation-marker-mismatch`), a
/// recorded revocation the issuer never logged is named
/// (`revocation-unlogged`), and a logged revocation no point recorded still
/// finds the allow of a point that had heard it. The reference audit agrees.
#[test]
fn s4_3_the_issuers_revocation_log_sets_the_marker_allows_are_judged_at() {
    use jcp::revocation_log::{header_line, Entry, IssuerLog};
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let feed = Keypair::from_seed([77; 32]).unwrap();
    let revoke = |i: usize, n: u8| Revocation::issue(&pts.shards[i].0, &pts.holder, Some([n; 16])).unwrap();
    let (rev_a, rev_b, rev_c) = (revoke(0, 5), revoke(1, 6), revoke(2, 7));
    let mut paths = Vec::new();
    let mut point = |name: &str, seed: u8, f: &mut dyn FnMut(&mut DurableGate)| {
        let p = dir.path().join(name);
        let (mut dg, _) = DurableGate::open(&p, Keypair::from_seed([seed; 32]).unwrap(), Gate::new()).unwrap();
        f(&mut dg);
        dg.close().unwrap();
        paths.push(p);
    };
    // A records shard 0's revocation at marker 4; the issuer issued it at 10.
    point("a.jcps", 40, &mut |a| {
        a.record_grant(&pts.root).unwrap();
        a.set_known_through(3).unwrap();
        allow_once(a, &pts, 0);
        a.admit_revocation(&rev_a, &pts.shards[0].0, 4).unwrap();
    });
    // B is past 10 and allows on shard 0: a violation either way.
    point("b.jcps", 41, &mut |b| {
        b.set_known_through(12).unwrap();
        allow_once(b, &pts, 0);
    });
    // C is at 7: past A's 4, short of the issuer's 10.
    point("c.jcps", 42, &mut |c| {
        c.set_known_through(7).unwrap();
        allow_once(c, &pts, 0);
    });
    // E records a revocation of shard 1 the issuer never logged.
    point("e.jcps", 43, &mut |e| {
        e.record_grant(&pts.root).unwrap();
        e.admit_revocation(&rev_b, &pts.shards[1].0, 2).unwrap();
    });
    // F is at 25 and allows on shard 2, whose revocation (logged at 20) no point recorded.
    point("f.jcps", 44, &mut |f| {
        f.set_known_through(25).unwrap();
        allow_once(f, &pts, 2);
    });
    let log_text = [
        header_line(),
        Entry::sign(rev_a.clone(), pts.shards[0].0.clone(), 10, &feed).to_line(),
        Entry::sign(rev_c.clone(), pts.shards[2].0.clone(), 20, &feed).to_line(),
    ]
    .join("\n");
    let log = IssuerLog::read(log_text.as_bytes(), &[feed.did()]).unwrap();
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let count = |r: &Report, code: &str| {
        FindingCode::parse(code).and_then(|c| r.findings_by_code.get(&c).copied()).unwrap_or(0)
    };
    let at =
        |r: &Report, code: &str| r.findings.iter().filter(|f| f.code == code).map(|f| f.stream).collect::<Vec<_>>();
    // Without the log: judged at A's 4; C is a violation and F's allow goes unseen.
    let without = audit(&refs);
    assert_eq!(at(&without, "revocation-violation"), vec![1, 2]);
    assert_eq!(count(&without, "revocation-marker-mismatch") + count(&without, "revocation-unlogged"), 0);
    // With it: judged at the issuer's 10 and 20.
    let opts = AuditOptions { revocation_log: Some(std::sync::Arc::new(log)), ..AuditOptions::default() };
    let with = audit_paths(&refs, &opts, |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(at(&with, "revocation-violation"), vec![1, 4], "B past 10, F past 20; C at 7 is a propagation delay");
    assert_eq!(at(&with, "revocation-marker-mismatch"), vec![0], "A recorded it at 4, not 10");
    assert_eq!(at(&with, "revocation-unlogged"), vec![3], "E's revocation is not in the issuer's log");
    let line = |gid: ContentId| with.revocations.iter().find(|l| l.grant_id == gid).unwrap();
    let a = line(pts.shards[0].0.id());
    assert_eq!((a.marker, a.log_marker, a.notices, a.allows.explicable, a.allows.violation), (10, Some(10), 1, 2, 1));
    let b = line(pts.shards[1].0.id());
    assert_eq!((b.marker, b.log_marker), (2, None));
    let c = line(pts.shards[2].0.id());
    assert_eq!((c.marker, c.log_marker, c.notices, c.at, c.allows.violation), (20, Some(20), 0, (0, 0), 1));
    // The reference audit gives the same report, byte for byte.
    let reference = jcp_audit::audit_reference(&refs, &opts).unwrap();
    assert_eq!(serde_json::to_string(&with).unwrap(), serde_json::to_string(&reference).unwrap());
    // A report without a log says nothing of one (its JSON is as before).
    assert!(!serde_json::to_string(&without).unwrap().contains("log_marker"));
}

/// §4.3: an issuer's log is taken only whole and only from a trusted feed
/// key: a changed marker, an unknown key, a marker that goes back, a
/// revocation logged twice, a revocation without authority and a missing
/// header are each refused with the line.
#[test]
fn s4_3_an_issuers_log_that_cannot_be_trusted_is_refused_with_its_line() {
    use jcp::revocation_log::{header_line, Entry, IssuerLog};
    let pts = points();
    let feed = Keypair::from_seed([77; 32]).unwrap();
    let rev = |i: usize| Revocation::issue(&pts.shards[i].0, &pts.holder, Some([9; 16])).unwrap();
    let entry = |i: usize, m: u64| Entry::sign(rev(i), pts.shards[i].0.clone(), m, &feed).to_line();
    let read = |lines: &[String], keys: &[Did]| IssuerLog::read(lines.join("\n").as_bytes(), keys);
    let keys = [feed.did()];
    let good = read(&[header_line(), entry(0, 3), entry(1, 3), entry(2, 5)], &keys).unwrap();
    assert_eq!(good.entries().iter().map(|e| (e.marker, e.line)).collect::<Vec<_>>(), vec![(3, 2), (3, 3), (5, 4)]);
    let refused = |lines: &[String], keys: &[Did], line: usize, says: &str| {
        let e = read(lines, keys).unwrap_err();
        assert_eq!(e.code(), "revocation-log-invalid");
        let text = e.to_string();
        assert!(text.starts_with(&format!("revocation-log-invalid: line {line}: ")) && text.contains(says), "{text}");
    };
    let moved = entry(0, 3).replace("\"marker\":3", "\"marker\":30");
    refused(&[header_line(), moved], &keys, 2, "does not verify");
    refused(&[header_line(), entry(0, 3)], &[pts.holder.did()], 2, "not a feed key this audit trusts");
    refused(&[header_line(), entry(0, 5), entry(1, 3)], &keys, 3, "never go back");
    refused(&[header_line(), entry(0, 3), entry(0, 4)], &keys, 3, "logged already, on line 2");
    // Shard 1's revocation logged as if it revoked shard 0.
    let forged = Entry::sign(rev(1), pts.shards[0].0.clone(), 3, &feed).to_line();
    refused(&[header_line(), forged], &keys, 2, "no authority");
    refused(&[entry(0, 3)], &keys, 1, "header");
    refused(&[header_line()], &[], 0, "no feed key is trusted");
    refused(&[header_line(), "{\"marker\":1}".into()], &keys, 2, "not an entry");
}

/// §5.5 (docs/decisions.md, "§5.5 floor"): a grant nothing debited has a
/// floor but no basis, and says why; never "measured" over nothing.
#[test]
fn s5_5_a_grant_without_debits_states_no_basis_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let p = dir.path().join("n.jcps");
    let (mut a, _) = DurableGate::open(&p, Keypair::from_seed([44; 32]).unwrap(), Gate::new()).unwrap();
    a.record_grant(&pts.root).unwrap();
    a.record_grant(&pts.shards[1].0).unwrap();
    allow_once(&mut a, &pts, 0);
    a.close().unwrap();
    let r = audit(&[&p]);
    let line = |id: ContentId| r.grants.iter().find(|g| g.grant_id == id).unwrap().conservation.clone().unwrap();
    let idle = line(pts.shards[1].0.id());
    assert_eq!((idle.spent_uj, idle.basis, idle.unstated.as_slice()), (0, None, &[Unstated::NoDebits][..]));
    assert_eq!(idle.floor_ppm.as_deref(), Some("5.000000"), "a 200 000 µJ grant still has its floor");
    let used = line(pts.shards[0].0.id());
    assert_eq!((used.spent_uj, used.basis, used.unstated.len()), (100, Some(Basis::Measured), 0));
    let json = serde_json::to_value(&r).unwrap();
    let idle_json =
        json["grants"].as_array().unwrap().iter().find(|g| g["grant_id"] == pts.shards[1].0.id().to_hex()).unwrap();
    assert_eq!(idle_json["conservation"]["basis"], serde_json::Value::Null);
    assert_eq!(idle_json["conservation"]["unstated"], serde_json::json!(["no-debits"]));
    assert!(r.render_text().contains("no-debits"), "the human table says why too");
}

#[test]
fn s4_3_a_forged_revocation_notice_is_a_finding_and_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let p = dir.path().join("f.jcps");
    // A notice whose revocation is signed by the wrong party, sealed by a point.
    let steward = Keypair::from_seed([50; 32]).unwrap();
    let (mut dg, _) = DurableGate::open(&p, steward.clone(), Gate::new()).unwrap();
    dg.record_grant(&pts.root).unwrap();
    dg.set_known_through(20).unwrap();
    allow_once(&mut dg, &pts, 0);
    dg.close().unwrap();
    // The shard's holder "revokes" the root: only the issuer may (§4.3).
    let forged = Revocation::issue(&pts.shards[0].0, &pts.holder, Some([6; 16])).unwrap();
    let notice = jcp_receipt::record::RevocationNotice { revocation: forged, marker: 1, steward: steward.did() };
    let mut v = notice.to_value();
    // Point it at the root grant id, keeping the shard-holder's signature.
    let rb = notice.revocation.to_bytes();
    let mut rv = jcp::cbor::decode_strict(&rb).unwrap();
    if let Value::Map(e) = &mut rv {
        for (k, val) in e.iter_mut() {
            if *k == Value::text("revocation") {
                if let Value::Map(inner) = val {
                    for (ik, iv) in inner.iter_mut() {
                        if *ik == Value::text("grant_id") {
                            *iv = Value::text(pts.root.id().to_hex());
                        }
                    }
                }
            }
        }
    }
    if let Value::Map(e) = &mut v {
        for (k, val) in e.iter_mut() {
            if *k == Value::text("revocation") {
                *val = Value::Bytes(rv.encode());
            }
        }
    }
    let protected = coset::HeaderBuilder::new()
        .algorithm(coset::iana::Algorithm::EdDSA)
        .key_id(steward.did().to_did_string().into_bytes())
        .text_value("jcp-seq".into(), coset::cbor::Value::Integer(3.into()))
        .build();
    use coset::TaggedCborSerializable;
    let sealed = coset::CoseSign1Builder::new()
        .protected(protected)
        .payload(v.encode())
        .create_signature(b"", |m| steward.sign(m).to_vec())
        .build()
        .to_tagged_vec()
        .unwrap();
    let end = std::fs::metadata(&p).unwrap().len();
    mutate(&p, |b| b.extend_from_slice(&stream::frame(RecordKind::Revocation, &sealed).unwrap()));
    let r = audit(&[&p]);
    let f = r.findings.iter().find(|f| f.code == "revocation-forged").unwrap();
    assert_eq!(f.offset, end);
    assert_eq!(r.revocations[0].authority, Authority::Forged);
    assert_eq!(r.revocations[0].allows.violation, 0, "a forged revocation classifies nothing");
}

/// Two enforcement points, each its own stream, each allowing 100 µJ on
/// one 150 µJ root: each enforces only its own view. Their stewards are
/// the keys seeded by `stewards`. The root, the two streams and their audit.
fn two_points(dir: &Path, stewards: [u8; 2]) -> (SignedGrant, Vec<PathBuf>, Report) {
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let holder = Keypair::from_seed([2; 32]).unwrap();
    let resource = ContentId::of(&Value::text("r"));
    let root = Grant {
        issuer: issuer.did(),
        subject: holder.did(),
        capability: Capability { resource, actions: vec!["invoke".into()] },
        budget_uj: 150,
        budget_funds: None,
        caveats: Vec::new(),
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [3; 16],
    }
    .sign(&issuer)
    .unwrap();
    let mut paths = Vec::new();
    for (i, seed) in stewards.into_iter().enumerate() {
        let p = dir.join(format!("{i}.jcps"));
        let (mut dg, _) = DurableGate::open(&p, Keypair::from_seed([seed; 32]).unwrap(), Gate::new()).unwrap();
        dg.record_grant(&root).unwrap();
        let f = Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: root.id(),
            action: "invoke".into(),
            resource,
            payload_hash: ContentId::of(&Value::Uint(i as u64)),
            model: None,
        };
        let c = Cost::energy(Energy::hardware(100));
        let caller = holder.did();
        let one = [root.clone()];
        let req = Request { frame: &f, chain: &one, caller: &caller, cost: &c, now: 1, flow: None };
        let rec = dg.decide(&req).unwrap();
        dg.complete(&rec.receipt, jcp_receipt::record::OutcomeStatus::Completed).unwrap();
        dg.close().unwrap();
        paths.push(p);
    }
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let r = audit(&refs);
    (root, paths, r)
}

#[test]
fn s5_5_overspend_is_a_finding_at_the_allow_that_crossed() {
    // Together the two points pass the root (the conservation check
    // across streams is the auditor's job).
    let dir = tempfile::tempdir().unwrap();
    let (root, paths, r) = two_points(dir.path(), [60, 61]);
    let g = r.grants.iter().find(|g| g.grant_id == root.id()).unwrap();
    let c = g.conservation.as_ref().unwrap();
    assert_eq!((c.spent_uj, c.remaining_uj, c.overspent_uj), (200, 0, 50));
    let f = r.findings.iter().find(|f| f.code == "overspend").unwrap();
    assert_eq!(f.stream, 1, "the second point's allow crossed the ceiling");
    let recs = record_offsets(&paths[1]);
    assert_eq!(f.offset, recs.iter().find(|r| r.1 == RecordKind::Receipt).unwrap().0);
    // Each steward's stated remainder is its own replayed spend (§8.1): two
    // stewards, two running figures, no mismatch.
    assert!(!r.findings.iter().any(|f| f.code == "remaining-mismatch"), "{:?}", r.findings);
}

#[test]
fn s8_1_stated_remainder_is_replayed_per_steward_across_streams() {
    // One steward seals both streams, the second from a fresh gate that
    // forgot the first: its receipt states 50 µJ remaining where that
    // steward's verified receipts give 0. One finding, at that receipt.
    let dir = tempfile::tempdir().unwrap();
    let (_, paths, r) = two_points(dir.path(), [60, 60]);
    let m: Vec<_> = r.findings.iter().filter(|f| f.code == "remaining-mismatch").collect();
    assert_eq!(m.len(), 1, "{:?}", r.findings);
    assert_eq!(m[0].stream, 1);
    let recs = record_offsets(&paths[1]);
    assert_eq!(m[0].offset, recs.iter().find(|r| r.1 == RecordKind::Receipt).unwrap().0);
    assert!(m[0].message.contains("states 50 µJ remaining") && m[0].message.contains("gives 0 µJ"), "{}", m[0].message);
}

#[test]
fn s8_legacy_jcp1_receipts_in_a_stream_verify_and_are_counted() {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(testkit::conformance("jcp/v1/legacy_jcp1.json")).unwrap())
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("l.jcps");
    let mut bytes = stream::HEADER.to_vec();
    let mut n = 0;
    for vec in v["vectors"].as_array().unwrap() {
        if vec["expect"] == "valid" {
            let cose = hex::decode(vec["cose_hex"].as_str().unwrap()).unwrap();
            bytes.extend(stream::frame(RecordKind::Receipt, &cose).unwrap());
            n += 1;
        }
    }
    std::fs::write(&p, bytes).unwrap();
    let r = audit(&[&p]);
    assert_eq!(r.receipts.legacy_jcp1, n);
    assert_eq!(r.receipts.verified, n);
}

#[test]
fn c21_the_audit_reads_amendment_notices_and_finds_spend_on_a_superseded_grant() {
    use jcp::steering::{AmendInput, CheckpointInput, Run, Spent};
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jcps");
    let b = dir.path().join("b.jcps");
    let steward = Keypair::from_seed([9; 32]).unwrap();
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let agent = Keypair::from_seed([2; 32]).unwrap();
    let g = run_grant(&issuer, &agent);
    let frame = Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: g.id(),
        action: "run".into(),
        resource: g.grant().capability.resource,
        payload_hash: ContentId::of(&Value::text("p")),
        model: None,
    };
    let cost = Cost::energy(Energy::hardware(100));
    let did = agent.did();
    let req =
        Request { frame: &frame, chain: std::slice::from_ref(&g), caller: &did, cost: &cost, now: 10, flow: None };
    // Stream a: an allow, then an admitted amendment.
    let (mut p, _) = DurableGate::open(&a, steward.clone(), Gate::new()).unwrap();
    p.record_grant(&g).unwrap();
    assert!(p.decide(&req).unwrap().decision.is_allow());
    let mut run = Run::new(g.clone());
    let cp = run
        .checkpoint(
            &agent,
            CheckpointInput {
                state: ContentId([3; 32]),
                at: 11,
                spent: Some(Spent { uj: 100, provenance: Provenance::HwShunt }),
                nonce: Some([4; 16]),
            },
        )
        .unwrap();
    let (am, cont) = run.amend(&issuer, AmendInput { budget_uj: 900, ..AmendInput::default() }).unwrap();
    p.admit_amendment(&g, &cp, &am, &cont, None).unwrap();
    // The gate refuses the steered grant now.
    assert_eq!(p.decide(&req).unwrap().decision.reason(), Some(jcp::decision::Reason::Superseded));
    p.close().unwrap();
    let r = audit(&[&a]);
    assert_eq!(r.receipts.amendments, 1);
    assert!(!codes(&r).iter().any(|(c, _)| c == "superseded-spend" || c == "record-kind-unaudited"), "{:?}", codes(&r));
    // A point that kept spending on it after recording the amendment: an
    // allow on the old grant, sealed by the same steward, spliced after.
    let (mut q, _) = DurableGate::open(&b, steward, Gate::new()).unwrap();
    let cost2 = Cost::energy(Energy::hardware(200));
    let stray = q.decide(&Request { cost: &cost2, ..req }).unwrap();
    assert!(stray.decision.is_allow());
    q.close().unwrap();
    let bytes = stream::frame(RecordKind::Receipt, &stray.sealed).unwrap();
    mutate(&a, |f| f.extend_from_slice(&bytes));
    let r = audit(&[&a]);
    assert!(codes(&r).iter().any(|(c, n)| c == "superseded-spend" && *n == 1), "{:?}", codes(&r));
}

#[test]
fn s4_3_one_revocation_recorded_by_two_points_is_one_finding_per_violating_allow() {
    // Points A and B both admit the same revocation (marker 10). B had
    // stated known_through 10 and allowed before it recorded the notice:
    // one violating allow, one finding — not one per notice.
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let rev = Revocation::issue(&pts.root, &pts.issuer, Some([5; 16])).unwrap();
    let pa = dir.path().join("a.jcps");
    let (mut a, _) = DurableGate::open(&pa, Keypair::from_seed([40; 32]).unwrap(), Gate::new()).unwrap();
    a.set_known_through(9).unwrap();
    a.admit_revocation(&rev, &pts.root, 10).unwrap();
    a.close().unwrap();
    let pb = dir.path().join("b.jcps");
    let (mut b, _) = DurableGate::open(&pb, Keypair::from_seed([41; 32]).unwrap(), Gate::new()).unwrap();
    b.set_known_through(10).unwrap();
    allow_once(&mut b, &pts, 1);
    b.admit_revocation(&rev, &pts.root, 10).unwrap();
    b.close().unwrap();
    let r = audit(&[&pa, &pb]);
    assert_eq!(r.receipts.revocation_notices, 2);
    assert_eq!(r.findings_by_code.get(&FindingCode::RevocationViolation), Some(&1), "{:?}", codes(&r));
    assert_eq!(r.findings.iter().filter(|f| f.code == "revocation-violation").count(), 1);
    assert_eq!(r.revocations.len(), 1, "one revocation, however many points recorded it");
    let rv = &r.revocations[0];
    assert_eq!((rv.notices, rv.marker, rv.authority), (2, 10, Authority::Verified));
    assert_eq!((rv.allows.explicable, rv.allows.violation, rv.allows.unverifiable), (0, 1, 0));
    // A second revocation of the same grant (another nonce) classifies the
    // same allow: still one finding for it.
    let again = Revocation::issue(&pts.root, &pts.issuer, Some([6; 16])).unwrap();
    let (mut a, _) = DurableGate::open(&pa, Keypair::from_seed([40; 32]).unwrap(), Gate::new()).unwrap();
    a.admit_revocation(&again, &pts.root, 10).unwrap();
    a.close().unwrap();
    let r = audit(&[&pa, &pb]);
    assert_eq!(r.revocations.len(), 2);
    assert_eq!(r.findings_by_code.get(&FindingCode::RevocationViolation), Some(&1), "{:?}", codes(&r));
}

/// The metered path through a served chain [root, shard 0]: authorize,
/// then (unless `crash`) charge `measured` and complete, `times` times.
fn metered(p: &Path, pts: &Points, times: usize, measured: u64, crash: bool) -> Vec<jcp_receipt::runtime::Recorded> {
    let (g, w) = &pts.shards[0];
    let chain = [pts.root.clone(), g.clone()];
    let (mut dg, _) = DurableGate::open(p, Keypair::from_seed([40; 32]).unwrap(), Gate::new()).unwrap();
    dg.record_grant(&pts.root).unwrap();
    dg.record_grant(g).unwrap();
    dg.set_known_through(1).unwrap();
    let caller: Did = w.did();
    let zero = Cost::energy(Energy::hardware(0));
    let m = Cost::energy(Energy::hardware(measured));
    let mut out = Vec::new();
    for i in 0..times {
        let f = Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: g.id(),
            action: "invoke".into(),
            resource: pts.resource,
            payload_hash: ContentId::of(&Value::Uint(i as u64)),
            model: None,
        };
        let req = Request { frame: &f, chain: &chain, caller: &caller, cost: &zero, now: 1, flow: None };
        let r = dg.authorize(&req).unwrap().unwrap();
        if crash {
            out.push(r.reservation);
            continue;
        }
        let rec = dg.charge(r, &Request { cost: &m, ..req }).unwrap();
        dg.complete(&rec.receipt, jcp_receipt::record::OutcomeStatus::Completed).unwrap();
        out.push(rec);
    }
    drop(dg);
    out
}

#[test]
fn s4_9_a_charged_metered_action_is_debited_its_measured_cost_once_in_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let p = dir.path().join("m.jcps");
    metered(&p, &pts, 2, 300, false);
    // The gate, replayed.
    let (dg, replay) = DurableGate::open(&p, Keypair::from_seed([40; 32]).unwrap(), Gate::new()).unwrap();
    assert_eq!((dg.gate().spent(&pts.root.id()).uj, dg.gate().spent(&pts.shards[0].0.id()).uj), (600, 600));
    assert_eq!(replay.settlements, 2);
    drop(dg);
    // The audit.
    let r = audit(&[&p]);
    assert!(r.clean, "{:?}", r.findings);
    assert_eq!(r.receipts.settlements, 2);
    assert_eq!(r.receipts.allows, 4, "two reservations and two charges, every receipt counted");
    for id in [pts.root.id(), pts.shards[0].0.id()] {
        let g = r.grants.iter().find(|g| g.grant_id == id).unwrap();
        assert_eq!((g.spent_uj, g.allows), (600, 2), "{id}");
        assert_eq!(g.conservation.as_ref().unwrap().basis, Some(Basis::Measured));
    }
    let grp = r.groups.iter().find(|g| g.grant_id == pts.shards[0].0.id()).unwrap();
    assert_eq!((grp.allows, grp.uj), (2, 600));
    assert_eq!(r.energy.provenance_floor, "HwShunt", "the reservations' Estimator grade is taken back with them");
    assert_eq!(r.energy.allows_by_provenance.get("Estimator"), None);
    assert_eq!(r.unresolved_total, 0);
}

#[test]
fn s4_11_a_crash_after_authorize_is_unresolved_in_the_audit_and_stays_debited() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let p = dir.path().join("m.jcps");
    let held = metered(&p, &pts, 1, 0, true);
    let r = audit(&[&p]);
    assert_eq!(r.unresolved_total, 1);
    let u = &r.unresolved[0];
    assert_eq!((u.receipt, u.cost_uj), (held[0].receipt, 200_000), "the shard's whole remainder is held");
    assert_eq!(u.holder, pts.shards[0].1.did().to_did_string());
    let g = r.grants.iter().find(|g| g.grant_id == pts.root.id()).unwrap();
    assert_eq!(g.spent_uj, 200_000);
    assert_eq!(r.energy.provenance_floor, "Estimator", "a held figure is not a measurement");
    assert!(r.findings.iter().any(|f| f.code == "unresolved-decision"));
}

#[test]
fn s4_11_a_settlement_spliced_into_another_stream_takes_nothing_back() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let p = dir.path().join("m.jcps");
    metered(&p, &pts, 1, 300, false);
    let settlement = record_offsets(&p).into_iter().filter(|r| r.1 == RecordKind::Outcome).map(|r| r.2).next().unwrap();
    let q = dir.path().join("n.jcps");
    let (mut dg, _) = DurableGate::open(&q, Keypair::from_seed([40; 32]).unwrap(), Gate::new()).unwrap();
    dg.set_known_through(1).unwrap();
    allow_once(&mut dg, &pts, 0);
    dg.close().unwrap();
    let framed = stream::frame(RecordKind::Outcome, &settlement).unwrap();
    mutate(&q, |b| b.extend_from_slice(&framed));
    let r = audit(&[&q]);
    assert_eq!(r.findings_by_code.get(&FindingCode::SettlementUnmatched), Some(&1), "{:?}", codes(&r));
    assert_eq!(r.receipts.settlements, 0);
    let g = r.grants.iter().find(|g| g.grant_id == pts.root.id()).unwrap();
    assert_eq!(g.spent_uj, 100, "nothing taken back");
}

#[test]
fn c21_the_audit_admits_a_continuation_steered_again() {
    use jcp::steering::{AmendInput, CheckpointInput, Run, Spent};
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jcps");
    let steward = Keypair::from_seed([9; 32]).unwrap();
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let agent = Keypair::from_seed([2; 32]).unwrap();
    let g = run_grant(&issuer, &agent);
    let did = agent.did();
    let cost = Cost::energy(Energy::hardware(200));
    let spend = |p: &mut DurableGate, on: &SignedGrant| {
        let f = Frame {
            kind: FrameKind::ToolCall,
            trust: Trust::Control,
            grant_id: on.id(),
            action: "run".into(),
            resource: on.grant().capability.resource,
            payload_hash: ContentId::of(&Value::text("p")),
            model: None,
        };
        p.decide(&Request {
            frame: &f,
            chain: std::slice::from_ref(on),
            caller: &did,
            cost: &cost,
            now: 10,
            flow: None,
        })
        .unwrap()
        .decision
    };
    let at = |n: u64, uj: u64| CheckpointInput {
        state: ContentId([n as u8; 32]),
        at: 10 + n,
        spent: Some(Spent { uj, provenance: Provenance::HwShunt }),
        nonce: Some([n as u8; 16]),
    };
    let (mut p, _) = DurableGate::open(&a, steward, Gate::new()).unwrap();
    let mut run = Run::new(g.clone());
    assert!(spend(&mut p, &g).is_allow());
    let cp1 = run.checkpoint(&agent, at(1, 200)).unwrap();
    let (am1, c1) = run.amend(&issuer, AmendInput { budget_uj: 600, ..AmendInput::default() }).unwrap();
    p.admit_amendment(&g, &cp1, &am1, &c1, None).unwrap();
    assert!(spend(&mut p, &c1).is_allow());
    let cp2 = run.checkpoint(&agent, at(2, 400)).unwrap();
    let (am2, c2) = run.amend(&issuer, AmendInput { budget_uj: 400, ..AmendInput::default() }).unwrap();
    p.admit_amendment(&c1, &cp2, &am2, &c2, None).unwrap();
    assert!(spend(&mut p, &c2).is_allow());
    p.close().unwrap();
    let r = audit(&[&a]);
    assert_eq!(r.receipts.amendments, 2);
    assert!(!codes(&r).iter().any(|(c, _)| c == "amendment-invalid" || c == "superseded-spend"), "{:?}", codes(&r));
}

#[test]
fn c17_the_audit_reads_channel_statement_records_and_names_a_forged_one() {
    use jcp::channel::Statement;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("point.jcps");
    let steward = Keypair::from_seed([9; 32]).unwrap();
    let pts = points();
    let (me, peer) = (Keypair::from_seed([31; 32]).unwrap(), Keypair::from_seed([32; 32]).unwrap());
    let mut gate = Gate::new();
    gate.join_channel(pts.root.clone(), me.did(), [peer.did()]).unwrap();
    let (mut dg, _) = DurableGate::open(&p, steward.clone(), gate).unwrap();
    dg.record_grant(&pts.root).unwrap();
    allow_once(&mut dg, &pts, 0);
    let theirs = Statement { grant_id: pts.root.id(), point: peer.did(), spent_uj: 600, seq: 0 }.sign(&peer).unwrap();
    dg.admit_statement(&theirs).unwrap();
    let (mine, recorded) = dg.issue_statement(&pts.root.id(), &me).unwrap();
    assert!(recorded);
    assert_eq!(mine.statement().spent_uj, 100);
    // A refused statement is not recorded.
    assert_eq!(dg.admit_statement(&theirs).unwrap_err().code(), "statement-stale");
    dg.close().unwrap();
    let kinds: Vec<RecordKind> = record_offsets(&p).into_iter().map(|(_, k, _)| k).collect();
    assert_eq!(kinds.iter().filter(|k| **k == RecordKind::Statement).count(), 2, "{kinds:?}");
    let r = audit(&[&p]);
    assert_eq!(r.receipts.channel_statements, 2);
    assert_eq!(codes(&r), Vec::<(String, u64)>::new());

    // A statement record sealed by the point over a forged statement: the
    // seal verifies, the statement does not — a finding, never counted.
    let forged = theirs.with_claim_for_tests(1, 0);
    let notice = jcp_receipt::record::StatementNotice { statement: forged, steward: steward.did() };
    let protected = coset::HeaderBuilder::new()
        .algorithm(coset::iana::Algorithm::EdDSA)
        .key_id(steward.did().to_did_string().into_bytes())
        .text_value("jcp-seq".into(), coset::cbor::Value::Integer(9.into()))
        .build();
    use coset::TaggedCborSerializable;
    let sealed = coset::CoseSign1Builder::new()
        .protected(protected)
        .payload(notice.to_value().encode())
        .create_signature(b"", |m| steward.sign(m).to_vec())
        .build()
        .to_tagged_vec()
        .unwrap();
    let end = std::fs::metadata(&p).unwrap().len();
    mutate(&p, |b| b.extend_from_slice(&stream::frame(RecordKind::Statement, &sealed).unwrap()));
    let r = audit(&[&p]);
    assert_eq!(r.receipts.channel_statements, 2, "the forged statement is not counted");
    let f = r.findings.iter().find(|f| f.code == "statement-invalid").unwrap();
    assert_eq!(f.offset, end);
    // And replay refuses it too: the point's channel is as it was.
    let mut gate = Gate::new();
    gate.join_channel(pts.root.clone(), me.did(), [peer.did()]).unwrap();
    let (dg, report) = DurableGate::open(&p, Keypair::from_seed([9; 32]).unwrap(), gate).unwrap();
    assert_eq!(report.rejected_at, vec![(end, "bad-signature")]);
    let l = dg.gate().channel(&pts.root.id()).unwrap().channel().ledger();
    assert_eq!(l.total_uj, 700);
    assert_eq!(dg.gate().spent(&pts.root.id()).uj, 700);
}

/// §5, §5.5: a `HwShunt` label that carries no measured figure is a claim,
/// not a measurement: its grant's basis is `modelled`, never `measured`,
/// in the fast engine and the reference audit alike.
#[test]
fn s5_an_unmeasured_hardware_label_is_never_a_measured_basis() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let p = dir.path().join("claim.jcps");
    let (mut a, _) = DurableGate::open(&p, Keypair::from_seed([44; 32]).unwrap(), Gate::new()).unwrap();
    a.record_grant(&pts.root).unwrap();
    a.record_grant(&pts.shards[0].0).unwrap();
    let shard = &pts.shards[0];
    let chain = [pts.root.clone(), shard.0.clone()];
    for (n, energy) in [Energy::hardware(100), Energy::new(100, Provenance::HwShunt)].into_iter().enumerate() {
        let f = Frame {
            kind: jcp::frame::FrameKind::ToolCall,
            trust: jcp::frame::Trust::Control,
            grant_id: shard.0.id(),
            action: "invoke".into(),
            resource: pts.root.grant().capability.resource,
            payload_hash: ContentId::of_bytes(&[n as u8]),
            model: None,
        };
        let c = Cost::energy(energy);
        let req = Request { frame: &f, chain: &chain, caller: &shard.1.did(), cost: &c, now: 100, flow: None };
        assert!(a.decide(&req).unwrap().decision.is_allow());
    }
    a.close().unwrap();
    for r in [audit(&[&p]), jcp_audit::audit_reference(&[&p], &jcp_audit::AuditOptions::default()).unwrap()] {
        let g = r.grants.iter().find(|g| g.grant_id == shard.0.id()).unwrap();
        let c = g.conservation.as_ref().unwrap();
        assert_eq!((c.measured_uj, c.modelled_uj, c.basis), (100, 100, Some(Basis::Modelled)), "{c:?}");
    }
}

/// §4.7 "Both the amending side and the verifying side MUST enforce this":
/// the audit verifies the checkpoint under every amendment notice, not only
/// the amendment — a notice over an issuer-signed checkpoint claiming
/// nothing spent, and one over a continuation checkpoint that lowers the
/// spend the run stated, are each an `amendment-invalid` finding, recorded
/// by a point that skipped the gate's checks.
#[test]
fn c21_the_audit_verifies_the_checkpoint_under_an_amendment_notice() {
    use jcp::steering::{AmendInput, Amendment, Checkpoint, Run};
    let dir = tempfile::tempdir().unwrap();
    let steward = Keypair::from_seed([9; 32]).unwrap();
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let agent = Keypair::from_seed([2; 32]).unwrap();
    let g = run_grant(&issuer, &agent);
    let at = common::checkpoint_at;
    // An issuer-signed checkpoint stating 0 spent, amended to the full budget.
    let a = dir.path().join("a.jcps");
    let mut run = Run::new(g.clone());
    let genuine = run.checkpoint(&agent, at(1, Some(0))).unwrap();
    let (_, cont) = run.amend(&issuer, AmendInput { budget_uj: 1000, ..AmendInput::default() }).unwrap();
    let forged = Checkpoint { agent: issuer.did(), ..genuine.checkpoint().clone() }.sign(&issuer).unwrap();
    let am = Amendment {
        grant_id: g.id(),
        checkpoint: forged.id(),
        amended_by: issuer.did(),
        budget_uj: 1000,
        expiry: None,
        instructions: None,
        continuation: cont.id(),
        nonce: [7; 16],
    }
    .sign(&issuer);
    let (mut p, _) = DurableGate::open(&a, steward.clone(), Gate::new()).unwrap();
    assert!(p.admit_amendment(&g, &forged, &am, &cont, None).is_err(), "the gate refuses it");
    p.record_amendment_unchecked_for_tests(&g, &forged, &am, &cont, None).unwrap();
    p.close().unwrap();
    let r = audit(&[&a]);
    let invalid: Vec<_> = r.findings.iter().filter(|f| f.code == "amendment-invalid").collect();
    assert_eq!(invalid.len(), 1, "{:?}", codes(&r));
    assert!(invalid[0].message.contains("steer-not-agent"), "{}", invalid[0].message);
    // A continuation's checkpoint lowering the 200 µJ the run stated.
    let b = dir.path().join("b.jcps");
    let mut run = Run::new(g.clone());
    let cp1 = run.checkpoint(&agent, at(1, Some(200))).unwrap();
    let (am1, c1) = run.amend(&issuer, AmendInput { budget_uj: 600, ..AmendInput::default() }).unwrap();
    let mut side = Run::new(c1.clone());
    let cp2 = side.checkpoint(&agent, at(2, Some(100))).unwrap();
    let (am2, c2) = side.amend(&issuer, AmendInput { budget_uj: 500, ..AmendInput::default() }).unwrap();
    let (mut p, _) = DurableGate::open(&b, steward, Gate::new()).unwrap();
    p.admit_amendment(&g, &cp1, &am1, &c1, None).unwrap();
    assert!(p.admit_amendment(&c1, &cp2, &am2, &c2, None).is_err(), "the gate refuses it");
    p.record_amendment_unchecked_for_tests(&c1, &cp2, &am2, &c2, None).unwrap();
    p.close().unwrap();
    let r = audit(&[&b]);
    let invalid: Vec<_> = r.findings.iter().filter(|f| f.code == "amendment-invalid").collect();
    assert_eq!(invalid.len(), 1, "{:?}", codes(&r));
    assert!(invalid[0].message.contains("steer-spend-decreased"), "{}", invalid[0].message);
    assert_eq!(r.receipts.amendments, 1, "only the genuine amendment is counted");
}

/// §8.2 "per-worker attribution … computed from evidence rather than
/// self-reporting": a forged grant naming the agent as its subject
/// (`bad-signature`), and the agent's real grant presented by a stranger
/// (`wrong-subject`), are refusals the agent did not make. They are counted
/// (never skipped) as `unattributed` on the group line, not in the agent's
/// `refusals`; the agent's own over-budget refusal is. The reference audit
/// agrees.
#[test]
fn s8_2_a_strangers_refusals_are_kept_out_of_the_subjects_tally() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let agent = Keypair::from_seed([2; 32]).unwrap();
    let mallory = Keypair::from_seed([5; 32]).unwrap();
    let g = run_grant(&issuer, &agent);
    // Mallory's forgery: the same grant (same id, same subject) under her signature.
    let mut v = jcp::cbor::decode_strict(&g.to_bytes()).unwrap();
    if let Value::Map(m) = &mut v {
        for (k, val) in m.iter_mut() {
            if *k == Value::text("sig") {
                *val = Value::Bytes(mallory.sign(&g.grant().canonical_bytes()).to_vec());
            }
        }
    }
    let forged = SignedGrant::from_value(&v).unwrap();
    assert_eq!((forged.id(), forged.grant().subject), (g.id(), agent.did()));
    let (mut dg, _) = DurableGate::open(&p, Keypair::from_seed([9; 32]).unwrap(), Gate::new()).unwrap();
    let frame = common::frame_on(&g, "run", &Value::text("p"));
    let mut decide = |chain: &SignedGrant, caller: &Keypair, uj: u64| {
        let cost = Cost::energy(Energy::hardware(uj));
        let did = caller.did();
        let req = Request {
            frame: &frame,
            chain: std::slice::from_ref(chain),
            caller: &did,
            cost: &cost,
            now: 10,
            flow: None,
        };
        dg.decide(&req).unwrap().decision.reason().map(jcp::decision::Reason::as_str)
    };
    assert_eq!(decide(&forged, &agent, 1), Some("bad-signature"));
    assert_eq!(decide(&g, &mallory, 1), Some("wrong-subject"));
    assert_eq!(decide(&g, &agent, 100), None);
    assert_eq!(decide(&g, &agent, 5_000), Some("budget-exceeded"));
    dg.close().unwrap();
    let r = audit(&[&p]);
    let line = r.groups.iter().find(|l| l.grant_id == g.id() && l.subject == agent.did().to_string()).unwrap();
    assert_eq!((line.allows, line.refusals, line.unattributed, line.uj), (1, 1, 2, 100), "{line:?}");
    assert_eq!(r.receipts.denies, 3, "every refusal is counted");
    let reference = jcp_audit::audit_reference(&[&p], &AuditOptions::default()).unwrap();
    assert_eq!(serde_json::to_value(&reference.groups).unwrap(), serde_json::to_value(&r.groups).unwrap());
}

/// §4.3 + §4.11: a metered action authorised before a revocation and
/// charged after it is judged by the marker at which it was authorised —
/// explicable, not a `revocation-violation` — while an allow the point
/// decided after the revocation still is one. The reference audit agrees.
#[test]
fn s4_3_a_metered_action_authorised_before_a_revocation_is_judged_at_its_authorisation() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points();
    let p = dir.path().join("m.jcps");
    let (g, w) = &pts.shards[0];
    let chain = [pts.root.clone(), g.clone()];
    let (mut dg, _) = DurableGate::open(&p, Keypair::from_seed([40; 32]).unwrap(), Gate::new()).unwrap();
    dg.record_grant(&pts.root).unwrap();
    dg.record_grant(g).unwrap();
    dg.set_known_through(1).unwrap();
    let caller: Did = w.did();
    let f = common::frame_on(g, "invoke", &Value::Uint(1));
    let zero = Cost::energy(Energy::hardware(0));
    let req = Request { frame: &f, chain: &chain, caller: &caller, cost: &zero, now: 1, flow: None };
    let held = dg.authorize(&req).unwrap().unwrap();
    let rev = Revocation::issue(&pts.root, &pts.issuer, Some([5; 16])).unwrap();
    dg.admit_revocation(&rev, &pts.root, 2).unwrap();
    let m = Cost::energy(Energy::hardware(300));
    let rec = dg.charge(held, &Request { cost: &m, ..req }).unwrap();
    dg.complete(&rec.receipt, jcp_receipt::record::OutcomeStatus::Completed).unwrap();
    dg.close().unwrap();
    let r = audit(&[&p]);
    assert_eq!(r.receipts.settlements, 1, "{:?}", r.findings);
    assert!(!codes(&r).iter().any(|(c, _)| c == "revocation-violation"), "{:?}", r.findings);
    // Nor is its charge a debit-point breach: the revocation came after its authorisation.
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    let line = &r.revocations[0];
    assert_eq!((line.allows.explicable, line.allows.violation), (1, 0), "{line:?}");
    let reference = jcp_audit::audit_reference(&[&p], &AuditOptions::default()).unwrap();
    assert_eq!(serde_json::to_value(&reference).unwrap(), serde_json::to_value(&r).unwrap());
}

/// §11: a request record holds the caller-signed request the point
/// decided. The audit checks the caller's signature (`verify_strict`): an
/// allow recorded right behind a request whose signature fails is
/// `request-signature-invalid`; the same request denied, or a well-signed
/// one allowed, is no finding; a request that is not caller-signed is
/// `request-record-invalid`. The reference audit agrees.
#[test]
fn s11_an_allow_behind_a_request_whose_caller_signature_fails_is_a_finding() {
    use jcp::cbor::Value as V;
    let agent = Keypair::from_seed([2; 32]).unwrap();
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let g = run_grant(&issuer, &agent);
    // A caller-signed request (the fields the audit reads: every one but `signature` is signed).
    let request = |tamper: bool| -> Vec<u8> {
        let body = jcp::cbor::map([
            ("caller", Some(V::text(agent.did().to_did_string()))),
            ("chain", Some(V::Array(vec![g.to_value()]))),
            ("now", Some(V::Uint(10))),
        ]);
        let mut sig = agent.sign(&body.encode());
        if tamper {
            sig[5] ^= 1;
        }
        let V::Map(mut entries) = body else { unreachable!() };
        entries.push((V::text("signature"), V::Bytes(sig.to_vec())));
        V::Map(entries).encode()
    };
    let record =
        |req: Vec<u8>| jcp::cbor::map([("request", Some(V::Bytes(req))), ("decided_at", Some(V::Uint(10)))]).encode();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.jcps");
    let (mut dg, _) = DurableGate::open(&p, Keypair::from_seed([9; 32]).unwrap(), Gate::new()).unwrap();
    let frame = common::frame_on(&g, "run", &Value::text("p"));
    let did = agent.did();
    let decide = |dg: &mut DurableGate, uj: u64| {
        let cost = Cost::energy(Energy::hardware(uj));
        let req =
            Request { frame: &frame, chain: std::slice::from_ref(&g), caller: &did, cost: &cost, now: 10, flow: None };
        dg.decide(&req).unwrap().decision.is_allow()
    };
    dg.append_record(RecordKind::Request, &record(request(false))).unwrap();
    assert!(decide(&mut dg, 10));
    dg.append_record(RecordKind::Request, &record(request(true))).unwrap();
    assert!(!decide(&mut dg, 5_000), "a deny behind a forged request is evidence, not a finding");
    let forged_allow_at = dg.append_record(RecordKind::Request, &record(request(true))).unwrap();
    assert!(decide(&mut dg, 10));
    dg.append_record(RecordKind::Request, &record(jcp::cbor::map([("now", Some(V::Uint(1)))]).encode())).unwrap();
    dg.close().unwrap();
    let r = audit(&[&p]);
    let found: Vec<(&str, u64)> = r.findings.iter().map(|f| (f.code.as_str(), f.offset)).collect();
    let sig: Vec<&(&str, u64)> = found.iter().filter(|(c, _)| *c == "request-signature-invalid").collect();
    assert_eq!(sig.len(), 1, "{found:?}");
    assert!(r.findings.iter().any(|f| f.message.contains(&format!("byte {forged_allow_at}"))), "{:?}", r.findings);
    assert!(found.iter().any(|(c, _)| *c == "request-record-invalid"), "{found:?}");
    assert_eq!(r.receipts.wire_requests, 3);
    let reference = jcp_audit::audit_reference(&[&p], &AuditOptions::default()).unwrap();
    assert_eq!(serde_json::to_value(&reference).unwrap(), serde_json::to_value(&r).unwrap());
}

/// Re-seals the stream's first receipt with the same core and header and a
/// signature its own steward crafted with nonce point `[r]B + torsion`.
fn reseal_first_receipt_with_crafted_r(p: &Path, r: u64, torsion: usize) -> u64 {
    use coset::TaggedCborSerializable;
    let recs = record_offsets(p);
    let (off, _, payload) = recs.iter().find(|x| x.1 == RecordKind::Receipt).unwrap().clone();
    let sign1 = coset::CoseSign1::from_tagged_slice(&payload).unwrap();
    let cast = demo::cast(7).unwrap();
    let bad = coset::CoseSign1Builder::new()
        .protected(sign1.protected.header.clone())
        .payload(sign1.payload.clone().unwrap())
        .create_signature(b"", |m| cast.steward.sign_with_small_order_r_for_tests(m, r, torsion).to_vec())
        .build()
        .to_tagged_vec()
        .unwrap();
    assert_eq!(bad.len(), payload.len(), "a signature is 64 bytes either way");
    replace_receipt(p, off, &payload, &bad);
    off
}

/// §2, §7, §8.2 (issue 34, "One Ed25519 acceptance rule"): a receipt its
/// steward re-sealed with a mixed-order `R` gets one verdict whatever the
/// audit's mode and thread count (before, batches accepted it at some
/// thread counts and strict checking refused it); one with a small-order
/// `R` is refused in every one of them.
#[test]
fn s2_s8_2_a_crafted_r_gets_one_verdict_in_every_mode_and_thread_count() {
    // What each mode says: receipts verified, bad signatures, and the
    // finding codes (the re-sealed receipt has a new id, so what named the
    // old one no longer does: the same findings in every mode).
    let modes = |p: &Path| -> Vec<(u64, Option<u64>, Vec<String>)> {
        let mut out = Vec::new();
        for threads in [1, 2, 3, 4, 8] {
            for verification in [Verification::Batch, Verification::Strict] {
                let opts = AuditOptions { threads, verification, chunk_records: 7, ..AuditOptions::default() };
                let r = audit_paths(&[p], &opts, |_| ControlFlow::Continue(())).unwrap();
                out.push(said(&r));
            }
        }
        let opts = AuditOptions { threads: 1, ..AuditOptions::default() };
        out.push(said(&jcp_audit::audit_reference(&[p], &opts).unwrap()));
        out
    };
    let dir = tempfile::tempdir().unwrap();
    for torsion in [1usize, 2, 4, 7] {
        let (p, sum) = demo_stream(dir.path(), &format!("mixed-{torsion}.jcps"), 60, 0, 0);
        reseal_first_receipt_with_crafted_r(&p, 1234 + torsion as u64, torsion);
        let verdicts = modes(&p);
        assert!(verdicts.iter().all(|v| *v == verdicts[0]), "torsion {torsion}: {verdicts:?}");
        assert_eq!((verdicts[0].0, verdicts[0].1), (sum.receipts, None), "accepted: {verdicts:?}");
        assert!(!verdicts[0].2.contains(&"bad-signature".to_string()), "{verdicts:?}");
    }
    let (p, sum) = demo_stream(dir.path(), "small.jcps", 60, 0, 0);
    reseal_first_receipt_with_crafted_r(&p, 0, 0);
    let verdicts = modes(&p);
    assert!(verdicts.iter().all(|v| *v == verdicts[0]), "{verdicts:?}");
    assert_eq!((verdicts[0].0, verdicts[0].1), (sum.receipts - 1, Some(1)), "refused: {verdicts:?}");
}

fn said(r: &Report) -> (u64, Option<u64>, Vec<String>) {
    let mut codes: Vec<String> = r.findings.iter().map(|f| f.code.to_string()).collect();
    codes.sort();
    (r.receipts.verified, r.receipts.failed_by_reason.get(&FindingCode::BadSignature).copied(), codes)
}
