//! The reference audit (`jcp_audit::reference`) against the fast engine
//! (`audit_paths`): byte-identical report JSON over demo streams (tampered,
//! unresolved, torn), the demo fleet, revocations from several points (§4.3),
//! metered settlements (§4.9, §4.11), amendments (§4.7), chains and
//! overspend (§4.2, §5.5), and a proptest over generated streams with
//! flipped bytes, torn tails, duplicated, dropped and swapped records.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::many_single_char_names)]

use std::io::Cursor;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use jcp::cbor::{ContentId, Value};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::SignedGrant;
use jcp::identity::Keypair;
use jcp::revocation::Revocation;
use jcp_audit::{audit_paths, audit_reference, AuditOptions, Report, Verification};
use jcp_receipt::demo::{self, DemoOptions};
use jcp_receipt::fleet::{self, FleetOptions};
use jcp_receipt::record::OutcomeStatus;
use jcp_receipt::runtime::DurableGate;
use jcp_receipt::stream::{self, Item, Reader, RecordKind, FRAME_OVERHEAD};
use jcp_receipt::writer::Durability;
use proptest::prelude::*;

mod common;

use common::{points, run_grant, Points};

/// Both audits over `paths`: the same JSON, or the same error. The report.
fn same<P: AsRef<Path>>(paths: &[P], opts: &AuditOptions) -> Option<Report> {
    let fast = audit_paths(paths, opts, |_| ControlFlow::Continue(()));
    let slow = audit_reference(paths, opts);
    match (fast, slow) {
        (Ok(f), Ok(s)) => {
            let (fj, sj) = (serde_json::to_string(&f).unwrap(), serde_json::to_string(&s).unwrap());
            if fj != sj {
                let (fv, sv): (serde_json::Value, serde_json::Value) =
                    (serde_json::from_str(&fj).unwrap(), serde_json::from_str(&sj).unwrap());
                for k in fv.as_object().unwrap().keys() {
                    assert_eq!(fv[k], sv[k], "the fast and the reference audit differ in `{k}`");
                }
                panic!("the reports differ");
            }
            Some(s)
        }
        (Err(f), Err(s)) => {
            assert_eq!((f.code(), f.to_string()), (s.code(), s.to_string()));
            None
        }
        (f, s) => panic!("one audit failed: fast {:?}, reference {:?}", f.map(|r| r.clean), s.map(|r| r.clean)),
    }
}

fn plain() -> AuditOptions {
    AuditOptions::default()
}

fn demo_stream(dir: &Path, name: &str, receipts: u64, tamper: u64, unresolved: u64, seed: u64) -> PathBuf {
    let p = dir.join(name);
    demo::write_demo(&p, &DemoOptions { receipts, tamper, unresolved, seed, durability: Durability::GeneratorOnly })
        .unwrap();
    p
}

/// (offset, framed length) of every well-framed record of a stream's bytes.
fn records_of(bytes: &[u8]) -> Vec<(usize, usize)> {
    Reader::new(Cursor::new(bytes))
        .unwrap()
        .filter_map(|i| match i {
            Item::Record(r) => Some((usize::try_from(r.offset).unwrap(), r.payload.len() + FRAME_OVERHEAD)),
            Item::Fault(_) => None,
        })
        .collect()
}

#[test]
fn s8_2_reference_equals_fast_on_demo_streams_tampered_unresolved_and_torn() {
    let dir = tempfile::tempdir().unwrap();
    let clean = demo_stream(dir.path(), "clean.jcps", 150, 0, 0, 7);
    let tampered = demo_stream(dir.path(), "tampered.jcps", 150, 4, 3, 8);
    let torn = demo_stream(dir.path(), "torn.jcps", 60, 1, 2, 9);
    let len = std::fs::metadata(&torn).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&torn).unwrap();
    f.set_len(len - 7).unwrap();
    let r = same(&[&clean], &plain()).unwrap();
    assert!(r.clean, "{:?}", r.findings);
    let r = same(&[&tampered], &plain()).unwrap();
    assert_eq!(r.receipts.failed_by_reason.get(&jcp_audit::FindingCode::BadSignature), Some(&4));
    assert_eq!(r.unresolved_total, 3);
    let r = same(&[&torn], &plain()).unwrap();
    assert!(r.streams[0].torn_tail_at.is_some());
    // All together, twice over (every record of the repeat is a duplicate),
    // under the findings cap, and strict verification.
    let all = [&clean, &tampered, &torn, &tampered];
    let r = same(&all, &plain()).unwrap();
    assert!(r.findings_by_code.get(&jcp_audit::FindingCode::DuplicateRecord).is_some_and(|n| *n > 100));
    same(&all, &AuditOptions { max_findings: 3, ..plain() });
    same(&all, &AuditOptions { verification: Verification::Strict, threads: 1, chunk_records: 7, ..plain() });
}

#[test]
fn c5_reference_equals_fast_with_expected_stewards() {
    let dir = tempfile::tempdir().unwrap();
    let a = demo_stream(dir.path(), "a.jcps", 40, 1, 1, 1);
    let b = demo_stream(dir.path(), "b.jcps", 40, 0, 1, 2);
    let steward = demo::cast(1).unwrap().steward.did();
    let r = same(&[&a, &b], &AuditOptions { expected_stewards: vec![steward], ..plain() }).unwrap();
    assert!(r.receipts.failed_by_reason.get(&jcp_audit::FindingCode::WrongSteward).is_some_and(|n| *n == 40));
}

#[test]
fn s4_3_reference_equals_fast_on_the_demo_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let sum =
        fleet::write_fleet(dir.path(), &FleetOptions::new(4, 30, 11, Durability::GeneratorOnly).unwrap()).unwrap();
    let paths: Vec<PathBuf> = (0..sum.points.len()).map(|p| fleet::point_path(dir.path(), p)).collect();
    let r = same(&paths, &plain()).unwrap();
    assert_eq!(r.findings_by_code.get(&jcp_audit::FindingCode::RevocationViolation), Some(&1));
    // In another order, and one stream alone (the violation needs the others).
    let rev: Vec<&PathBuf> = paths.iter().rev().collect();
    same(&rev, &plain());
    let r = same(&paths[sum.violation.0..=sum.violation.0], &plain()).unwrap();
    assert_eq!(r.findings_by_code.get(&jcp_audit::FindingCode::RevocationViolation), None);
}

/// A tool call on `grant` of `action` over `payload`.
fn call(grant: &SignedGrant, action: &str, payload: &Value) -> Frame {
    let resource = grant.grant().capability.resource;
    Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: grant.id(),
        action: action.into(),
        resource,
        payload_hash: ContentId::of(payload),
        model: None,
    }
}

/// A gate per point, its steward seeded `40 + i`.
fn point(p: &Path, i: u8) -> DurableGate {
    DurableGate::open_with(p, Keypair::from_seed([40 + i; 32]).unwrap(), Gate::new(), Durability::GeneratorOnly)
        .unwrap()
        .0
}

/// One decision of `uj` on shard `s` through the chain [root, shard]; an
/// outcome unless `open`.
fn spend(dg: &mut DurableGate, c: &Points, s: usize, uj: u64, n: u64, open: bool) {
    let (g, w) = &c.shards[s];
    let chain = [c.root.clone(), g.clone()];
    let f = call(g, "invoke", &Value::Uint(n));
    let cost =
        Cost::energy(Energy::new(uj, if n.is_multiple_of(2) { Provenance::HwShunt } else { Provenance::Estimator }));
    let rec =
        dg.decide(&Request { frame: &f, chain: &chain, caller: &w.did(), cost: &cost, now: 1, flow: None }).unwrap();
    if rec.decision.is_allow() && !open {
        dg.complete(&rec.receipt, OutcomeStatus::Completed).unwrap();
    }
}

/// A JCR-1 envelope over `core` by `steward` at sequence `seq`, made with
/// `coset` directly (for records a gate would not write).
fn seal(steward: &Keypair, core: &Value, seq: u64) -> Vec<u8> {
    use coset::TaggedCborSerializable;
    let protected = coset::HeaderBuilder::new()
        .algorithm(coset::iana::Algorithm::EdDSA)
        .key_id(steward.did().to_did_string().into_bytes())
        .text_value("jcp-seq".into(), coset::cbor::Value::Integer(seq.into()))
        .build();
    let sign1 = coset::CoseSign1Builder::new()
        .protected(protected)
        .payload(core.encode())
        .create_signature(b"", |m| steward.sign(m).to_vec())
        .build();
    sign1.to_tagged_vec().unwrap()
}

/// Replaces the text `from` by `to` wherever it stands in `v`.
fn swap_text(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::Text(t) if t == from => to.clone_into(t),
        Value::Map(entries) => entries.iter_mut().for_each(|(_, x)| swap_text(x, from, to)),
        Value::Array(items) => items.iter_mut().for_each(|x| swap_text(x, from, to)),
        _ => {}
    }
}

/// §4.3 across four points: one that heard and recorded the revocation
/// (then denies), one behind (explicable), one current that allows
/// (violation), one that states no marker (unverifiable); a second
/// revocation of the same grant and a forged one.
fn revocation_streams(dir: &Path) -> Vec<PathBuf> {
    let c = points();
    let rev = Revocation::issue(&c.root, &c.issuer, Some([5; 16])).unwrap();
    let paths: Vec<PathBuf> = (0..4).map(|i| dir.join(format!("rev-{i}.jcps"))).collect();
    let mut a = point(&paths[0], 0);
    a.record_grant(&c.root).unwrap();
    a.set_known_through(9).unwrap();
    spend(&mut a, &c, 0, 100, 0, false);
    a.admit_revocation(&rev, &c.root, 10).unwrap();
    spend(&mut a, &c, 0, 100, 1, false);
    let again = Revocation::issue(&c.root, &c.issuer, Some([6; 16])).unwrap();
    a.admit_revocation(&again, &c.root, 12).unwrap();
    a.close().unwrap();
    // Sealed by the point without the gate's check: the holder's revocation
    // of shard 1 pointed at the root (forged), and one of shard 3
    // whose grant record no stream holds (authority unknown).
    let of_shard = Revocation::issue(&c.shards[1].0, &c.holder, Some([7; 16])).unwrap();
    let mut v = jcp::cbor::decode_strict(&of_shard.to_bytes()).unwrap();
    swap_text(&mut v, &c.shards[1].0.id().to_hex(), &c.root.id().to_hex());
    let forged = jcp::revocation::SignedRevocation::from_bytes(&v.encode()).unwrap();
    let unknown = Revocation::issue(&c.shards[3].0, &c.holder, Some([8; 16])).unwrap();
    let mut b = std::fs::read(&paths[0]).unwrap();
    b.extend(stream::frame(RecordKind::Grant, &c.shards[1].0.to_bytes()).unwrap());
    for (seq, rev) in [(40u64, forged), (41, unknown)] {
        let steward = Keypair::from_seed([40; 32]).unwrap();
        let notice = jcp_receipt::record::RevocationNotice { revocation: rev, marker: 11, steward: steward.did() };
        b.extend(stream::frame(RecordKind::Revocation, &seal(&steward, &notice.to_value(), seq)).unwrap());
    }
    std::fs::write(&paths[0], b).unwrap();
    for (i, marker) in [(1u8, Some(8)), (2, Some(12)), (3, None)] {
        let mut dg = point(&paths[usize::from(i)], i);
        if let Some(m) = marker {
            dg.set_known_through(m).unwrap();
        }
        for n in 0..12 {
            spend(&mut dg, &c, usize::from(i), 1_000 * (n + 1), n, n == 11);
        }
        dg.close().unwrap();
    }
    paths
}

#[test]
fn s4_3_reference_equals_fast_on_revocations_from_several_points() {
    let dir = tempfile::tempdir().unwrap();
    let paths = revocation_streams(dir.path());
    let r = same(&paths, &plain()).unwrap();
    assert!(
        r.findings_by_code.get(&jcp_audit::FindingCode::RevocationViolation).is_some_and(|n| *n >= 12),
        "{:?}",
        r.findings_by_code
    );
    assert!(r.findings_by_code.contains_key(&jcp_audit::FindingCode::RevocationUnverifiable));
    assert!(
        r.findings_by_code.contains_key(&jcp_audit::FindingCode::RevocationForged)
            && r.findings_by_code.contains_key(&jcp_audit::FindingCode::RevocationAuthorityUnknown),
        "{:?}",
        r.findings_by_code
    );
    // More violations than offsets kept: counted, and the cap applies alike.
    same(&paths, &AuditOptions { max_findings: 5, ..plain() });
    same(&[&paths[2], &paths[0]], &plain());
}

/// §4.9 + §4.11: the metered path on shard 0, charged `times` times, then
/// a reservation left held by a crash; and a settlement spliced into
/// another point's stream.
fn metered_streams(dir: &Path) -> Vec<PathBuf> {
    let c = points();
    let (g, w) = &c.shards[0];
    let chain = [c.root.clone(), g.clone()];
    let p = dir.join("metered.jcps");
    let mut dg = point(&p, 0);
    dg.record_grant(&c.root).unwrap();
    dg.record_grant(g).unwrap();
    dg.set_known_through(1).unwrap();
    let zero = Cost::energy(Energy::new(0, Provenance::HwShunt));
    for i in 0..3u64 {
        let f = call(g, "invoke", &Value::Uint(i));
        let req = Request { frame: &f, chain: &chain, caller: &w.did(), cost: &zero, now: 1, flow: None };
        let held = dg.authorize(&req).unwrap().unwrap();
        if i == 2 {
            break; // a crash after phase one: the reservation stays held
        }
        let m = Cost::energy(Energy::new(300 + i, Provenance::HwShunt));
        let rec = dg.charge(held, &Request { cost: &m, ..req }).unwrap();
        dg.complete(&rec.receipt, OutcomeStatus::Completed).unwrap();
    }
    drop(dg);
    let bytes = std::fs::read(&p).unwrap();
    let settlement: Vec<u8> = Reader::new(Cursor::new(&bytes))
        .unwrap()
        .find_map(|i| match i {
            Item::Record(r)
                if r.kind == RecordKind::Outcome && r.payload.windows(14).any(|w| w == b"jcp_settlement") =>
            {
                Some(r.payload)
            }
            _ => None,
        })
        .unwrap();
    let q = dir.join("spliced.jcps");
    let mut other = point(&q, 0);
    other.set_known_through(1).unwrap();
    spend(&mut other, &c, 0, 100, 0, false);
    other.close().unwrap();
    let mut b = std::fs::read(&q).unwrap();
    b.extend(stream::frame(RecordKind::Outcome, &settlement).unwrap());
    std::fs::write(&q, b).unwrap();
    vec![p, q]
}

#[test]
fn s4_9_reference_equals_fast_on_metered_settlements() {
    let dir = tempfile::tempdir().unwrap();
    let paths = metered_streams(dir.path());
    let r = same(&paths[..1], &plain()).unwrap();
    assert_eq!((r.receipts.settlements, r.unresolved_total), (2, 1));
    let r = same(&paths[1..], &plain()).unwrap();
    assert_eq!(r.findings_by_code.get(&jcp_audit::FindingCode::SettlementUnmatched), Some(&1));
    // Both: the spliced settlement is the first stream's record again.
    let r = same(&paths, &plain()).unwrap();
    assert_eq!(r.findings_by_code.get(&jcp_audit::FindingCode::DuplicateRecord), Some(&1));
}

/// §4.7: an allow, an admitted amendment, a continuation steered again,
/// and an allow on the superseded grant spliced after it.
fn amendment_stream(dir: &Path) -> PathBuf {
    use jcp::steering::{AmendInput, CheckpointInput, Run, Spent};
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let agent = Keypair::from_seed([2; 32]).unwrap();
    let g = run_grant(&issuer, &agent);
    let decide = |p: &mut DurableGate, on: &SignedGrant, uj: u64| {
        let cost = Cost::energy(Energy::new(uj, Provenance::HwShunt));
        let f = call(on, "run", &Value::text("p"));
        p.decide(&Request {
            frame: &f,
            chain: std::slice::from_ref(on),
            caller: &agent.did(),
            cost: &cost,
            now: 10,
            flow: None,
        })
        .unwrap()
    };
    let at = |n: u8, uj: u64| CheckpointInput {
        state: ContentId([n; 32]),
        at: 10 + u64::from(n),
        spent: Some(Spent { uj, provenance: Provenance::HwShunt }),
        nonce: Some([n; 16]),
    };
    let p = dir.join("amended.jcps");
    let mut dg = point(&p, 9);
    dg.record_grant(&g).unwrap();
    let mut run = Run::new(g.clone());
    assert!(decide(&mut dg, &g, 200).decision.is_allow());
    let cp1 = run.checkpoint(&agent, at(1, 200)).unwrap();
    let (am1, c1) = run.amend(&issuer, AmendInput { budget_uj: 600, ..AmendInput::default() }).unwrap();
    dg.admit_amendment(&g, &cp1, &am1, &c1, None).unwrap();
    assert!(decide(&mut dg, &c1, 200).decision.is_allow());
    let cp2 = run.checkpoint(&agent, at(2, 400)).unwrap();
    let (am2, c2) = run.amend(&issuer, AmendInput { budget_uj: 400, ..AmendInput::default() }).unwrap();
    dg.admit_amendment(&c1, &cp2, &am2, &c2, None).unwrap();
    assert!(decide(&mut dg, &c2, 200).decision.is_allow());
    dg.close().unwrap();
    // The same point, forgetting its record, allows on the superseded grant.
    let q = dir.join("stray.jcps");
    let mut stray = point(&q, 9);
    let rec = decide(&mut stray, &g, 150);
    stray.close().unwrap();
    let mut b = std::fs::read(&p).unwrap();
    b.extend(stream::frame(RecordKind::Receipt, &rec.sealed).unwrap());
    std::fs::write(&p, b).unwrap();
    p
}

/// §4.7 + §4.3: one run's grant spent at three points. Point a admits an
/// amendment superseding it (fed at `marker`); point b allows on it at
/// known_through 4, then again at 5; point c states no marker and allows once.
fn soft_revoke_streams(dir: &Path, marker: Option<u64>) -> Vec<PathBuf> {
    use jcp::steering::{AmendInput, Run};
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let agent = Keypair::from_seed([2; 32]).unwrap();
    let g = run_grant(&issuer, &agent);
    let decide = |p: &mut DurableGate, n: u64| {
        let cost = Cost::energy(Energy::new(100, Provenance::HwShunt));
        let f = call(&g, "run", &Value::Uint(n));
        let did = agent.did();
        let req =
            Request { frame: &f, chain: std::slice::from_ref(&g), caller: &did, cost: &cost, now: 10, flow: None };
        assert!(p.decide(&req).unwrap().decision.is_allow());
    };
    let paths: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| dir.join(format!("{n}.jcps"))).collect();
    let mut a = point(&paths[0], 1);
    a.record_grant(&g).unwrap();
    decide(&mut a, 1);
    let mut run = Run::new(g.clone());
    let cp = run.checkpoint(&agent, common::checkpoint_at(1, Some(100))).unwrap();
    let (am, cont) = run.amend(&issuer, AmendInput { budget_uj: 500, ..AmendInput::default() }).unwrap();
    a.admit_amendment(&g, &cp, &am, &cont, marker).unwrap();
    assert_eq!(a.known_through(), marker, "the amendment's marker advances the point's knowledge");
    a.close().unwrap();
    let mut b = point(&paths[1], 2);
    b.set_known_through(4).unwrap();
    decide(&mut b, 2);
    b.set_known_through(5).unwrap();
    decide(&mut b, 3);
    b.close().unwrap();
    let mut c = point(&paths[2], 3);
    decide(&mut c, 4);
    c.close().unwrap();
    paths
}

/// §4.7: "an amendment is a soft revoke"; §4.3: a revocation reaches every
/// point and an allow from a point at `known_through >= M` is a violation,
/// one that states no marker unverifiable. The audit judges every other
/// point's spend on a superseded grant by the amendment's feed marker, and
/// the reference audit agrees.
#[test]
fn c21_s4_3_a_soft_revoke_is_judged_at_every_point_by_its_marker() {
    let dir = tempfile::tempdir().unwrap();
    let r = same(&soft_revoke_streams(dir.path(), Some(5)), &plain()).unwrap();
    let at = |code: &str| -> Vec<usize> {
        r.findings.iter().filter(|f| f.code.as_str() == code).map(|f| f.stream).collect()
    };
    assert_eq!(at("superseded-spend"), vec![1], "b's allow at known_through 5: {:?}", r.findings);
    assert_eq!(at("superseded-unverifiable"), vec![2], "c stated no marker: {:?}", r.findings);
    assert!(r.findings.iter().any(|f| f.message.contains("marker 5")), "{:?}", r.findings);
    // With no marker on the notice, neither of b's allows can be shown explicable.
    let dir = tempfile::tempdir().unwrap();
    let r = same(&soft_revoke_streams(dir.path(), None), &plain()).unwrap();
    let unverifiable: Vec<usize> =
        r.findings.iter().filter(|f| f.code.as_str() == "superseded-unverifiable").map(|f| f.stream).collect();
    assert_eq!(unverifiable, vec![1, 1, 2], "{:?}", r.findings);
    assert!(!r.findings.iter().any(|f| f.code.as_str() == "superseded-spend"), "{:?}", r.findings);
}

#[test]
fn c21_reference_equals_fast_on_amendments_and_superseded_spend() {
    let dir = tempfile::tempdir().unwrap();
    let p = amendment_stream(dir.path());
    let r = same(&[&p], &plain()).unwrap();
    assert_eq!(r.receipts.amendments, 2);
    assert_eq!(r.findings_by_code.get(&jcp_audit::FindingCode::SupersededSpend), Some(&1), "{:?}", r.findings_by_code);
}

#[test]
fn s5_5_reference_equals_fast_on_overspend_across_points_and_stated_remainders() {
    // Two points each spend 0.15 J of shard 0's 0.2 J (together over),
    // then a third stream of the first point's steward, from a gate that
    // forgot its spend: its stated remainders mismatch.
    let dir = tempfile::tempdir().unwrap();
    let c = points();
    let mut paths = Vec::new();
    for (i, seed) in [(0usize, 0u8), (1, 1), (2, 0)] {
        let p = dir.path().join(format!("over-{i}.jcps"));
        let mut dg = point(&p, seed);
        if i == 0 {
            dg.record_grant(&c.root).unwrap();
            dg.record_grant(&c.shards[0].0).unwrap();
        }
        for n in 0..3 {
            spend(&mut dg, &c, 0, 50_000, n + 10 * i as u64, false);
        }
        dg.close().unwrap();
        paths.push(p);
    }
    let r = same(&paths, &plain()).unwrap();
    assert!(r.findings_by_code.contains_key(&jcp_audit::FindingCode::Overspend), "{:?}", r.findings_by_code);
    assert!(r.findings_by_code.contains_key(&jcp_audit::FindingCode::RemainingMismatch), "{:?}", r.findings_by_code);
}

#[test]
fn s8_1_duplicates_by_full_signed_bytes_agree_with_duplicates_by_signature_r() {
    // Every kind of signed record repeated, in place and across streams:
    // the reference finds a duplicate by its whole signed bytes, the fast
    // engine by its signature's R; the reports are the same.
    let dir = tempfile::tempdir().unwrap();
    let p = demo_stream(dir.path(), "d.jcps", 110, 0, 1, 4);
    let mut b = std::fs::read(&p).unwrap();
    let recs = records_of(&b);
    let mut out = b[..stream::HEADER.len()].to_vec();
    for (off, len) in &recs {
        out.extend_from_slice(&b[*off..off + len]);
        out.extend_from_slice(&b[*off..off + len]);
    }
    b = out;
    std::fs::write(&p, &b).unwrap();
    let r = same(&[&p], &plain()).unwrap();
    let grants = r.receipts.grants;
    let signed = u64::try_from(recs.len()).unwrap() - grants / 2;
    assert_eq!(
        r.findings_by_code.get(&jcp_audit::FindingCode::DuplicateRecord),
        Some(&signed),
        "every sealed record once again"
    );
    let r = same(&[&p, &p], &plain()).unwrap();
    assert_eq!(r.findings_by_code.get(&jcp_audit::FindingCode::DuplicateRecord), Some(&(signed * 3)));
}

#[test]
fn s8_1_reference_and_fast_refuse_unreadable_input_alike() {
    let dir = tempfile::tempdir().unwrap();
    let none: [&Path; 0] = [];
    assert!(same(&none, &plain()).is_none());
    let missing = dir.path().join("missing.jcps");
    assert!(same(&[&missing], &plain()).is_none());
    let not = dir.path().join("not.jcps");
    std::fs::write(&not, b"hello").unwrap();
    let ok = demo_stream(dir.path(), "ok.jcps", 10, 0, 0, 1);
    assert!(same(&[&ok, &not], &plain()).is_none());
}

// ---- the proptest: generated streams, damaged ----

/// The streams the proptest starts from, written once: demo streams (chains,
/// a revocation, tampering, unresolved decisions), a fleet's points, the
/// revocation, metered and amendment scenarios.
fn templates() -> &'static Vec<Vec<u8>> {
    static T: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut paths =
            vec![demo_stream(dir.path(), "d1.jcps", 110, 2, 2, 21), demo_stream(dir.path(), "d2.jcps", 30, 1, 1, 22)];
        let fdir = dir.path().join("fleet");
        let sum = fleet::write_fleet(&fdir, &FleetOptions::new(3, 10, 23, Durability::GeneratorOnly).unwrap()).unwrap();
        paths.extend((0..sum.points.len()).map(|p| fleet::point_path(&fdir, p)));
        paths.extend(revocation_streams(dir.path()));
        paths.extend(metered_streams(dir.path()));
        paths.push(amendment_stream(dir.path()));
        paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
    })
}

#[derive(Debug, Clone)]
enum Damage {
    /// XOR a byte past the header.
    Flip(usize, u8),
    /// Cut the stream short (a torn tail, or mid-record damage).
    Cut(usize),
    /// Insert a copy of record `i` before record `j`.
    Duplicate(usize, usize),
    /// Remove record `i` (a sequence gap).
    Drop(usize),
    /// Exchange records `i` and `j` (out of order).
    Swap(usize, usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(p, x)| Damage::Flip(p, x)),
        any::<usize>().prop_map(Damage::Cut),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Damage::Duplicate(i, j)),
        any::<usize>().prop_map(Damage::Drop),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Damage::Swap(i, j)),
    ]
}

fn apply(mut b: Vec<u8>, d: &Damage) -> Vec<u8> {
    let head = stream::HEADER.len();
    let recs = records_of(&b);
    if recs.is_empty() || b.len() <= head {
        return b;
    }
    let pick = |i: usize| recs[i % recs.len()];
    match *d {
        Damage::Flip(p, x) => {
            let at = head + p % (b.len() - head);
            b[at] ^= x;
        }
        Damage::Cut(p) => b.truncate(head + p % (b.len() - head)),
        Damage::Duplicate(i, j) => {
            let (off, len) = pick(i);
            let copy = b[off..off + len].to_vec();
            let at = pick(j).0;
            b.splice(at..at, copy);
        }
        Damage::Drop(i) => {
            let (off, len) = pick(i);
            b.drain(off..off + len);
        }
        Damage::Swap(i, j) => {
            let (a, c) = (pick(i), pick(j));
            let (first, second) = if a.0 <= c.0 { (a, c) } else { (c, a) };
            if first.0 != second.0 {
                let x = b[first.0..first.0 + first.1].to_vec();
                let y = b[second.0..second.0 + second.1].to_vec();
                let mut out = b[..first.0].to_vec();
                out.extend(&y);
                out.extend(&b[first.0 + first.1..second.0]);
                out.extend(&x);
                out.extend(&b[second.0 + second.1..]);
                b = out;
            }
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn s8_2_reference_equals_fast_on_generated_damaged_streams(
        streams in proptest::collection::vec((any::<usize>(), proptest::collection::vec(damage(), 0..4)), 1..4),
        cap in prop_oneof![Just(10_000usize), 1usize..6],
    ) {
        let t = templates();
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (i, (which, damages)) in streams.iter().enumerate() {
            let mut b = t[which % t.len()].clone();
            for d in damages {
                b = apply(b, d);
            }
            let p = dir.path().join(format!("{i}.jcps"));
            std::fs::write(&p, b).unwrap();
            paths.push(p);
        }
        same(&paths, &AuditOptions { max_findings: cap, ..plain() });
    }
}

#[test]
fn s8_2_fuzz_corpus_reference_agrees() {
    // The `reference_agrees` target's committed corpus: demo streams (chains,
    // a revocation, tampering, unresolved decisions), fleet points, and
    // streams cut, flipped, duplicated, reordered, with garbage, empty or
    // not a stream: both audits agree on every one.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/reference_agrees");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        if let Err(e) = jcp_audit::fuzzing::reference_agrees(&data) {
            panic!("{}: {e}", p.display());
        }
        n += 1;
    }
    assert!(n >= 10, "only {n} corpus files");
}

/// A 1 000 µJ root sharded 600 @ point 1 + 400 @ point 2; `extra` adds a
/// second sharding (600 @ point 3) when set. Each point allows 100 µJ
/// through its shard; point 3, when `impersonate`, allows through point
/// 1's shard as if it were point 1 (a point that ignores the binding).
fn shard_streams(dir: &Path, extra: bool, impersonate: bool) -> Vec<PathBuf> {
    use jcp::grant::{shard, Slice};
    let pts = points();
    let steward = |i: u8| Keypair::from_seed([40 + i; 32]).unwrap();
    let worker = Keypair::from_seed([77; 32]).unwrap();
    let slice = |uj: u64, i: u8| Slice {
        subject: worker.did(),
        budget_uj: uj,
        point: steward(i).did(),
        funds_minor: None,
        nonce: Some([i; 16]),
    };
    let first = shard(&pts.root, &pts.holder, &[slice(600_000, 1), slice(400_000, 2)]).unwrap();
    let second = shard(&pts.root, &pts.holder, &[slice(600_000, 3)]).unwrap();
    let spend = |dg: &mut DurableGate, s: &SignedGrant, n: u64| {
        let chain = [pts.root.clone(), s.clone()];
        let f = call(s, "invoke", &Value::Uint(n));
        let c = Cost::energy(Energy::new(100, Provenance::HwShunt));
        let did = worker.did();
        dg.decide(&Request { frame: &f, chain: &chain, caller: &did, cost: &c, now: 1, flow: None }).unwrap().decision
    };
    let mut paths = Vec::new();
    for (i, s) in [(1u8, &first[0]), (2, &first[1])] {
        let p = dir.join(format!("p{i}.jcps"));
        let mut dg = point(&p, i);
        assert!(spend(&mut dg, s, 1).is_allow());
        // §4.5: the other point's shard is refused here.
        let other = if i == 1 { &first[1] } else { &first[0] };
        assert_eq!(spend(&mut dg, other, 2).reason(), Some(jcp::decision::Reason::CaveatUnsatisfied));
        dg.close().unwrap();
        paths.push(p);
    }
    if extra || impersonate {
        let p = dir.join("p3.jcps");
        let mut dg = point(&p, 3);
        if extra {
            assert!(spend(&mut dg, &second[0], 3).is_allow());
        }
        if impersonate {
            dg.impersonate_point_for_tests(steward(1).did());
            assert!(spend(&mut dg, &first[0], 4).is_allow());
        }
        dg.close().unwrap();
        paths.push(p);
    }
    paths
}

/// §4.5: "each point then enforces only its own shard". Honest points
/// leave nothing to find; a point that spent another point's shard is
/// `shard-wrong-point` at its allow; a parent sharded twice past itself is
/// `shard-overcommitted`. The reference audit agrees on each.
#[test]
fn c11_s4_5_the_audit_proves_a_shard_spent_at_two_points_and_a_parent_sharded_past_itself() {
    let codes = |r: &Report, code: &str| -> Vec<usize> {
        r.findings.iter().filter(|f| f.code.as_str() == code).map(|f| f.stream).collect()
    };
    let dir = tempfile::tempdir().unwrap();
    let r = same(&shard_streams(dir.path(), false, false), &plain()).unwrap();
    assert!(
        codes(&r, "shard-wrong-point").is_empty() && codes(&r, "shard-overcommitted").is_empty(),
        "{:?}",
        r.findings
    );
    let dir = tempfile::tempdir().unwrap();
    let r = same(&shard_streams(dir.path(), false, true), &plain()).unwrap();
    assert_eq!(codes(&r, "shard-wrong-point"), vec![2], "{:?}", r.findings);
    assert!(codes(&r, "shard-overcommitted").is_empty(), "{:?}", r.findings);
    let dir = tempfile::tempdir().unwrap();
    let r = same(&shard_streams(dir.path(), true, false), &plain()).unwrap();
    assert_eq!(codes(&r, "shard-overcommitted").len(), 1, "{:?}", r.findings);
    assert!(r.findings.iter().any(|f| f.message.contains("1600000 µJ of its 1000000 µJ")), "{:?}", r.findings);
}
