//! §8.1 / §4.11: the stream is the write-ahead log. Framing, torn tails,
//! bad input, durable recording before the action, replay (C14, C16),
//! unresolved decisions, the single writer (in-process; the two-process
//! test is crates/cli/tests/audit.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::similar_names,
    clippy::many_single_char_names,
    clippy::items_after_statements
)]

mod common;

use std::io::Write;
use std::path::Path;

use common::*;
use jcp::decision::{Gate, Reason, Request, Verdict};
use jcp::revocation::Revocation;
use jcp_receipt::record::OutcomeStatus;
use jcp_receipt::runtime::{DurableGate, RunResult};
use jcp_receipt::stream::{self, FaultCode, Item, Reader, RecordKind, HEADER, MAGIC};
use jcp_receipt::writer::{Durability, StreamWriter};
use jcp_receipt::Error;

fn items(path: &Path) -> Vec<Item> {
    Reader::new(std::fs::File::open(path).unwrap()).unwrap().collect()
}

fn records(path: &Path) -> Vec<(u64, RecordKind)> {
    items(path)
        .into_iter()
        .filter_map(|i| match i {
            Item::Record(r) => Some((r.offset, r.kind)),
            Item::Fault(_) => None,
        })
        .collect()
}

fn faults(path: &Path) -> Vec<(FaultCode, u64)> {
    items(path)
        .into_iter()
        .filter_map(|i| match i {
            Item::Fault(f) => Some((f.code, f.offset)),
            Item::Record(_) => None,
        })
        .collect()
}

/// A stream with `n` allowed decisions on the root grant, all settled.
fn write_allows(path: &Path, fx: &Fx, n: u64, uj: u64) {
    let (mut dg, _) = DurableGate::open(path, fx.steward.clone(), Gate::new()).unwrap();
    dg.record_grant(&fx.root).unwrap();
    let caller = fx.holder.did();
    let root = [fx.root.clone()];
    for i in 0..n {
        let f = frame(&fx.root, "invoke", i);
        let c = cost(uj);
        let req = Request { frame: &f, chain: &root, caller: &caller, cost: &c, now: 1, flow: None };
        match dg.run(&req, || Ok::<(), ()>(())).unwrap() {
            RunResult::Ran(rec, Ok(())) => assert!(rec.decision.is_allow()),
            other => panic!("{other:?}"),
        }
    }
    dg.close().unwrap();
}

#[test]
fn s8_1_records_frame_and_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    write_allows(&p, &fx, 3, 10);
    let kinds: Vec<RecordKind> = records(&p).into_iter().map(|(_, k)| k).collect();
    use RecordKind::{Grant, Outcome, Receipt};
    assert_eq!(kinds, vec![Grant, Receipt, Outcome, Receipt, Outcome, Receipt, Outcome]);
    assert!(faults(&p).is_empty());
    assert_eq!(&std::fs::read(&p).unwrap()[..8], HEADER);
}

#[test]
fn s4_11_decision_is_durable_before_the_action_runs() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    let caller = fx.holder.did();
    let root = [fx.root.clone()];
    let f = frame(&fx.root, "invoke", 1);
    let c = cost(10);
    let req = Request { frame: &f, chain: &root, caller: &caller, cost: &c, now: 1, flow: None };
    let syncs_before = dg.writer().syncs();
    let pp = p.clone();
    let seen_during_action = match dg.run(&req, move || Ok::<_, ()>(records(&pp))).unwrap() {
        RunResult::Ran(_, Ok(r)) => r,
        other => panic!("{other:?}"),
    };
    // While the action ran, the decision was already on disk, and nothing else.
    assert_eq!(seen_during_action.iter().map(|r| r.1).collect::<Vec<_>>(), vec![RecordKind::Receipt]);
    assert_eq!(dg.writer().syncs(), syncs_before + 2, "decision and outcome each synced");
    assert_eq!(records(&p).len(), 2);
}

#[test]
fn s4_11_a_denied_action_never_runs_and_its_receipt_is_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    let caller = fx.holder.did();
    let root = [fx.root.clone()];
    let f = frame(&fx.root, "delete", 1);
    let c = cost(10);
    let req = Request { frame: &f, chain: &root, caller: &caller, cost: &c, now: 1, flow: None };
    let mut ran = false;
    let r = dg.run(&req, || {
        ran = true;
        Ok::<(), ()>(())
    });
    assert!(
        matches!(r.unwrap(), RunResult::Denied(rec) if rec.decision.verdict == Verdict::Deny(Reason::ActionNotGranted))
    );
    assert!(!ran);
    assert_eq!(records(&p), vec![(8, RecordKind::Receipt)]);
}

#[test]
fn s8_1_torn_final_record_is_detected_reported_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    write_allows(&p, &fx, 2, 10);
    let whole = std::fs::metadata(&p).unwrap().len();
    let before = records(&p);
    // A crash mid-append: half a record.
    let rec = stream::frame(RecordKind::Receipt, &[0xd2; 300]).unwrap();
    std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(&rec[..150]).unwrap();
    assert_eq!(faults(&p), vec![(FaultCode::TornTail, whole)]);
    assert_eq!(records(&p), before, "the torn record is never read as a record");
    let (dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    let cut = replay.torn_cut.unwrap();
    assert_eq!((cut.offset, cut.len), (whole, 150));
    assert_eq!(std::fs::metadata(&p).unwrap().len(), whole, "cut back to the last whole record");
    assert_eq!(replay.verified, 2);
    dg.close().unwrap();
    assert!(faults(&p).is_empty());
}

#[test]
fn s8_1_torn_tail_with_a_complete_length_but_bad_checksum_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    write_allows(&p, &fx, 1, 10);
    let whole = std::fs::metadata(&p).unwrap().len();
    let mut rec = stream::frame(RecordKind::Receipt, &[0xd2; 40]).unwrap();
    let n = rec.len();
    rec[n - 10] ^= 0xff; // zero-filled/garbled tail after a crash
    std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(&rec).unwrap();
    assert_eq!(faults(&p), vec![(FaultCode::TornTail, whole)]);
    let (_, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.torn_cut.unwrap().offset, whole);
}

/// Rewrites the file with `f` applied to its bytes.
fn mutate(p: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut b = std::fs::read(p).unwrap();
    f(&mut b);
    std::fs::write(p, b).unwrap();
}

#[test]
fn s8_1_bit_flip_in_a_record_is_a_named_fault_and_reading_continues() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    write_allows(&p, &fx(), 3, 10);
    let recs = records(&p);
    let (off, _) = recs[3];
    mutate(&p, |b| b[off as usize + 40] ^= 0x01);
    assert_eq!(faults(&p), vec![(FaultCode::ChecksumMismatch, off)]);
    assert_eq!(records(&p).len(), recs.len() - 1, "every other record still read");
    assert_eq!(FaultCode::ChecksumMismatch.code(), "record-corrupt");
}

#[test]
fn s8_1_bit_flip_in_a_length_resyncs_on_the_next_record() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    write_allows(&p, &fx(), 3, 10);
    let recs = records(&p);
    let (off, _) = recs[2];
    mutate(&p, |b| b[off as usize + 7] ^= 0x01); // len += 256
    let f = faults(&p);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].1, off);
    assert_eq!(records(&p).len(), recs.len() - 1);
}

#[test]
fn s8_1_garbage_between_records_is_reported_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    write_allows(&p, &fx(), 2, 10);
    let recs = records(&p);
    let (off, _) = recs[2];
    mutate(&p, |b| {
        let tail = b.split_off(off as usize);
        b.extend_from_slice(b"not a record at all");
        b.extend_from_slice(&tail);
    });
    assert_eq!(faults(&p), vec![(FaultCode::Garbage, off)]);
    assert_eq!(records(&p).len(), recs.len());
}

#[test]
fn s8_1_oversized_record_is_refused_and_reading_continues() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    write_allows(&p, &fx(), 2, 10);
    let recs = records(&p);
    let (off, _) = recs[1];
    mutate(&p, |b| {
        let tail = b.split_off(off as usize);
        b.extend_from_slice(MAGIC);
        b.push(1);
        b.extend_from_slice(&u32::MAX.to_be_bytes());
        b.extend_from_slice(&tail);
    });
    assert_eq!(faults(&p), vec![(FaultCode::Oversized, off)]);
    assert_eq!(records(&p).len(), recs.len());
    assert!(matches!(
        stream::frame(RecordKind::Receipt, &vec![0; stream::MAX_RECORD_LEN + 1]),
        Err(Error::Oversized { .. })
    ));
}

#[test]
fn s8_1_unknown_record_kind_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    write_allows(&p, &fx(), 1, 10);
    let end = std::fs::metadata(&p).unwrap().len();
    let mut rec = stream::frame(RecordKind::Receipt, b"x").unwrap();
    rec[4] = 9;
    let len = rec.len();
    let mut h = crc32fast::Hasher::new();
    h.update(&rec[4..len - 4]);
    rec[len - 4..].copy_from_slice(&h.finalize().to_be_bytes());
    mutate(&p, |b| b.extend_from_slice(&rec));
    write_more(&p);
    assert_eq!(faults(&p), vec![(FaultCode::UnknownKind, end)]);
}

#[test]
fn s8_1_batch_reading_yields_exactly_what_the_iterator_yields() {
    // The audit reads in batches (one buffer per batch); every fault and
    // every payload must be the iterator's, at any batch size.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    write_allows(&p, &fx(), 6, 10);
    let recs = records(&p);
    let (flip, _) = recs[3];
    let (garbage_at, _) = recs[6];
    mutate(&p, |b| {
        b[flip as usize + 40] ^= 0x01;
        let tail = b.split_off(garbage_at as usize);
        b.extend_from_slice(b"not a record");
        b.extend_from_slice(&tail);
        let torn = b.len() - 5;
        b.truncate(torn);
    });
    let expected = items(&p);
    assert!(expected.iter().filter(|i| matches!(i, Item::Fault(_))).count() >= 3, "{expected:?}");
    for max in [1, 2, 3, 5, 1000] {
        let mut reader = Reader::new(std::fs::File::open(&p).unwrap()).unwrap();
        let mut batch = stream::Batch::new();
        let mut got = Vec::new();
        loop {
            let n = reader.read_batch(max, &mut batch);
            assert!(n <= max);
            if n == 0 {
                break;
            }
            got.extend(batch.items().iter().map(|it| batch.to_item(it)));
        }
        assert!(reader.take_io_error().is_none());
        assert_eq!(got, expected, "batch size {max}");
    }
}

fn write_more(p: &Path) {
    let fx = fx();
    let (mut dg, _) = DurableGate::open(p, fx.steward.clone(), Gate::new()).unwrap();
    dg.record_grant(&fx.lead_g).unwrap();
    dg.close().unwrap();
}

#[test]
fn s8_1_a_file_without_the_header_is_not_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    std::fs::write(&p, b"hello world, not a stream").unwrap();
    assert!(Reader::new(std::fs::File::open(&p).unwrap()).is_err());
    let err = StreamWriter::open(&p, Durability::SyncEachRecord, |_| {}).unwrap_err();
    assert_eq!(err.code(), "not-a-stream");
}

#[test]
fn c14_fresh_runtime_restores_spend_by_replaying_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx_with(1_000, None, Vec::new());
    write_allows(&p, &fx, 9, 100);
    let (mut dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.verified, 9);
    assert_eq!(replay.replayed_allows, 9);
    assert_eq!(dg.gate().spent(&fx.root.id()).uj, 900);
    // A restart is not a fresh budget: 200 µJ more does not fit.
    let caller = fx.holder.did();
    let root = [fx.root.clone()];
    let f = frame(&fx.root, "invoke", 99);
    let c = cost(200);
    let req = Request { frame: &f, chain: &root, caller: &caller, cost: &c, now: 1, flow: None };
    assert_eq!(dg.decide(&req).unwrap().decision.verdict, Verdict::Deny(Reason::BudgetExceeded));
}

#[test]
fn c14_tampered_receipt_contributes_nothing_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    write_allows(&p, &fx, 5, 100);
    let (off, _) = records(&p).into_iter().filter(|r| r.1 == RecordKind::Receipt).nth(2).unwrap();
    jcp_receipt::demo::tamper_record(&p, off).unwrap();
    assert!(faults(&p).is_empty(), "framing intact: only the signature can tell");
    let (dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.verified, 4);
    assert_eq!(replay.rejected.get("bad-signature"), Some(&1));
    // Its outcome now names a receipt the stream no longer holds unaltered.
    assert_eq!(replay.rejected_at.first(), Some(&(off, "bad-signature")));
    assert_eq!(replay.rejected.get("orphan-outcome"), Some(&1));
    assert_eq!(dg.gate().spent(&fx.root.id()).uj, 400);
}

#[test]
fn c14_receipts_of_another_steward_are_refused_on_replay() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    write_allows(&p, &fx, 2, 100);
    let (dg, replay) = DurableGate::open(&p, kp(42), Gate::new()).unwrap();
    assert_eq!(replay.verified, 0);
    // Two receipts and their two outcomes, all sealed by another steward.
    assert_eq!(replay.rejected.get("wrong-steward"), Some(&4));
    assert_eq!(dg.gate().spent(&fx.root.id()).uj, 0);
}

#[test]
fn c14_a_duplicated_receipt_is_debited_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    write_allows(&p, &fx, 2, 100);
    let recs = items(&p);
    let dup = recs
        .iter()
        .find_map(|i| match i {
            Item::Record(r) if r.kind == RecordKind::Receipt => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    mutate(&p, |b| b.extend_from_slice(&stream::frame(RecordKind::Receipt, &dup.payload).unwrap()));
    let (dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.rejected.get("duplicate-record"), Some(&1));
    assert_eq!(dg.gate().spent(&fx.root.id()).uj, 200);
}

#[test]
fn c16_chained_replay_restores_leaf_and_ancestor_debits_and_keeps_conserving() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx_with(1_000, None, Vec::new());
    let chain = fx.chain();
    let worker = fx.worker.did();
    {
        let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        for i in 0..3 {
            let f = frame(&fx.worker_g, "invoke", i);
            let c = cost(250);
            let req = Request { frame: &f, chain: &chain, caller: &worker, cost: &c, now: 1, flow: None };
            let rec = dg.decide(&req).unwrap();
            assert!(rec.decision.is_allow());
            dg.complete(&rec.receipt, OutcomeStatus::Completed).unwrap();
        }
        dg.close().unwrap();
    }
    let (mut dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.replayed_allows, 3);
    for g in &chain {
        assert_eq!(dg.gate().spent(&g.id()).uj, 750, "every link re-debited");
    }
    // The holder of the root spends directly: 300 µJ no longer fits the root.
    let root = [fx.root.clone()];
    let holder = fx.holder.did();
    let f = frame(&fx.root, "invoke", 9);
    let c = cost(300);
    let req = Request { frame: &f, chain: &root, caller: &holder, cost: &c, now: 1, flow: None };
    assert_eq!(dg.decide(&req).unwrap().decision.verdict, Verdict::Deny(Reason::BudgetExceeded));
}

#[test]
fn s4_11_decision_without_outcome_is_unresolved_naming_its_holder_and_stays_debited() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    let chain = fx.chain();
    let worker = fx.worker.did();
    let receipt = {
        let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        let f = frame(&fx.worker_g, "invoke", 1);
        let c = cost(300);
        let req = Request { frame: &f, chain: &chain, caller: &worker, cost: &c, now: 1, flow: None };
        let rec = dg.decide(&req).unwrap();
        // The process "dies" while the action is in flight: no outcome.
        drop(dg);
        rec.receipt
    };
    let (mut dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.unresolved.len(), 1);
    let u = &replay.unresolved[0];
    assert_eq!((u.receipt, u.holder, u.cost_uj), (receipt, worker, 300));
    assert_eq!(dg.gate().spent(&fx.root.id()).uj, 300, "its energy stays debited");
    // Never retried: only an operator settles it, explicitly.
    dg.complete(&receipt, OutcomeStatus::Failed).unwrap();
    assert!(dg.complete(&receipt, OutcomeStatus::Failed).is_err(), "settled once");
    dg.close().unwrap();
    let (_, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert!(replay.unresolved.is_empty());
}

#[test]
fn s4_3_revocation_is_replayed_and_known_through_is_monotonic() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    {
        let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        dg.set_known_through(3).unwrap();
        assert!(matches!(dg.set_known_through(2), Err(Error::MarkerRegressed { old: 3, new: 2 })));
        let rev = Revocation::issue(&fx.lead_g, &fx.holder, Some([1; 16])).unwrap();
        dg.admit_revocation(&rev, &fx.lead_g, 7).unwrap();
        // A forged revocation (not the issuer) is refused and not recorded.
        let forged = Revocation::issue(&fx.root, &fx.issuer, Some([2; 16])).unwrap();
        assert!(dg.admit_revocation(&forged, &fx.lead_g, 8).is_err());
        dg.close().unwrap();
    }
    let (mut dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.known_through, Some(7));
    assert!(dg.gate().is_revoked(&fx.lead_g.id()));
    let chain = fx.chain();
    let worker = fx.worker.did();
    let f = frame(&fx.worker_g, "invoke", 1);
    let c = cost(1);
    let req = Request { frame: &f, chain: &chain, caller: &worker, cost: &c, now: 1, flow: None };
    assert_eq!(dg.decide(&req).unwrap().decision.verdict, Verdict::Deny(Reason::Revoked));
    assert!(dg.set_known_through(6).is_err(), "monotonic across restarts");
}

#[test]
fn c26_a_second_writer_is_refused_and_the_claim_is_released_with_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let (w, _) = StreamWriter::open(&p, Durability::SyncEachRecord, |_| {}).unwrap();
    let err = StreamWriter::open(&p, Durability::SyncEachRecord, |_| {}).unwrap_err();
    assert_eq!(err.code(), "stream-locked");
    assert!(err.to_string().contains("another writer"), "{err}");
    w.close().unwrap();
    let (w2, _) = StreamWriter::open(&p, Durability::SyncEachRecord, |_| {}).unwrap();
    w2.close().unwrap();
}

#[test]
fn s4_11_group_commit_gathers_a_batch_and_writes_it_at_once_at_flush_commit_or_close() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let on_disk = || std::fs::metadata(&p).unwrap().len();
    let (mut w, _) = StreamWriter::open(&p, Durability::GroupCommit, |_| {}).unwrap();
    let a = w.append(RecordKind::Request, b"first").unwrap();
    let b = w.append(RecordKind::Request, b"second").unwrap();
    // Gathered: offsets and length count them, the file does not hold them yet.
    assert_eq!((a, on_disk()), (HEADER.len() as u64, HEADER.len() as u64));
    assert!(b > a && w.len() > b && w.uncommitted() == w.len() - HEADER.len() as u64);
    w.flush().unwrap();
    assert_eq!(on_disk(), w.len(), "one flush writes the whole batch");
    assert_eq!(records(&p), [(a, RecordKind::Request), (b, RecordKind::Request)]);
    assert_eq!(w.syncs(), 0, "a flush is not a sync");
    w.commit().unwrap();
    assert_eq!((w.uncommitted(), w.syncs()), (0, 1));
    // Commit and close write what is gathered themselves.
    let c = w.append(RecordKind::Closing, b"third").unwrap();
    w.commit().unwrap();
    assert_eq!((on_disk(), w.syncs()), (w.len(), 2));
    let d = w.append(RecordKind::Closing, b"fourth").unwrap();
    let end = w.len();
    w.close().unwrap();
    assert_eq!(on_disk(), end);
    assert_eq!(records(&p).into_iter().map(|r| r.0).collect::<Vec<_>>(), [a, b, c, d]);
}

#[test]
fn s4_11_a_batch_write_that_fails_part_way_stops_the_writer_and_is_cut_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let (mut w, _) = StreamWriter::open(&p, Durability::GroupCommit, |_| {}).unwrap();
    let a = w.append(RecordKind::Request, b"durable").unwrap();
    w.commit().unwrap();
    let one = w.append(RecordKind::Request, b"short").unwrap();
    let two = w.append(RecordKind::Request, b"a longer one, cut in the middle").unwrap();
    w.fail_next_flush_for_tests();
    let e = w.flush().unwrap_err();
    assert!(e.to_string().contains("injected write failure"), "{e}");
    // What the file holds past the last whole write is unknown: nothing
    // more is written, whatever is asked.
    for e in [w.append(RecordKind::Request, b"after").unwrap_err(), w.flush().unwrap_err(), w.commit().unwrap_err()] {
        assert!(e.to_string().contains("an earlier write failed part way"), "{e}");
    }
    assert!(w.close().is_err());
    // Reopened, the record torn by the half-written batch is cut; what
    // was written whole stays (it was never answered: no sync covered it).
    let (w, torn) = StreamWriter::open(&p, Durability::GroupCommit, |_| {}).unwrap();
    assert_eq!(torn.map(|t| t.offset), Some(two), "{torn:?}");
    assert_eq!(w.len(), two);
    w.close().unwrap();
    assert_eq!(records(&p), [(a, RecordKind::Request), (one, RecordKind::Request)]);
}

#[test]
fn s4_11_sequence_numbers_continue_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    write_allows(&p, &fx, 2, 1);
    write_allows(&p, &fx, 1, 1);
    let mut seqs = Vec::new();
    let mut dids = jcp_receipt::cose::DidCache::new();
    for i in items(&p) {
        if let Item::Record(r) = i {
            if r.kind != RecordKind::Grant {
                seqs.push(jcp_receipt::cose::open(&r.payload, &mut dids).unwrap().0.position.seq.unwrap());
            }
        }
    }
    assert_eq!(seqs, (0..6).collect::<Vec<_>>());
}

#[test]
fn s8_1_a_stream_torn_inside_its_header_is_started_again() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.jcps");
    std::fs::write(&p, &HEADER[..4]).unwrap();
    let fx = fx();
    let (dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.verified, 0);
    dg.close().unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), HEADER.to_vec());
    // Four bytes that are not a header prefix are not ours to overwrite.
    std::fs::write(&p, b"ABCD").unwrap();
    let err = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap_err();
    assert_eq!(err.code(), "not-a-stream");
    assert_eq!(std::fs::read(&p).unwrap(), b"ABCD".to_vec());
}

// ---- §11 / §4.3 / §4.7: recorded before applied; §4.9 + §4.11: the metered path recorded at phase one ----

#[test]
fn s11_a_revocation_that_cannot_be_recorded_is_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    let root = [fx.root.clone()];
    let holder = fx.holder.did();
    let f = frame(&fx.root, "invoke", 1);
    let c = cost(1);
    let req = Request { frame: &f, chain: &root, caller: &holder, cost: &c, now: 1, flow: None };
    let rev = Revocation::issue(&fx.root, &fx.issuer, Some([1; 16])).unwrap();
    {
        let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        dg.record_grant(&fx.root).unwrap();
        dg.set_known_through(3).unwrap();
        // The notice cannot be written: nothing changes, the marker included.
        dg.fail_next_append_for_tests();
        assert_eq!(dg.admit_revocation(&rev, &fx.root, 9).unwrap_err().code(), "io");
        assert!(!dg.gate().is_revoked(&fx.root.id()), "applied although not recorded");
        assert_eq!(dg.known_through(), Some(3));
        assert!(dg.decide(&req).unwrap().decision.is_allow());
        // Recorded, then applied.
        dg.admit_revocation(&rev, &fx.root, 9).unwrap();
        assert!(dg.gate().is_revoked(&fx.root.id()));
        dg.close().unwrap();
    }
    let (mut dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.rejected_total(), 0, "{:?}", replay.rejected_at);
    assert!(dg.gate().is_revoked(&fx.root.id()));
    assert_eq!(dg.decide(&req).unwrap().decision.verdict, Verdict::Deny(Reason::Revoked));
}

/// A run on `fx.root` with one checkpoint stating `spent`, amended by the
/// issuer to 300 µJ: the checkpoint, the amendment and its continuation.
fn steer_root(
    fx: &Fx,
    spent: jcp::steering::Spent,
) -> (jcp::steering::SignedCheckpoint, jcp::steering::SignedAmendment, jcp::grant::SignedGrant) {
    use jcp::steering::{AmendInput, CheckpointInput, Run};
    let mut run = Run::new(fx.root.clone());
    let cp = run
        .checkpoint(
            &fx.holder,
            CheckpointInput { state: jcp::cbor::ContentId([3; 32]), at: 1, spent: Some(spent), nonce: Some([4; 16]) },
        )
        .unwrap();
    let (am, cont) =
        run.amend(&fx.issuer, AmendInput { budget_uj: 300, nonce: Some([5; 16]), ..AmendInput::default() }).unwrap();
    (cp, am, cont)
}

#[test]
fn c21_a_durable_amendment_is_recorded_before_it_applies_and_replayed() {
    use jcp::steering::Spent;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx_with(1000, None, Vec::new());
    let holder = fx.holder.did();
    let spend = |dg: &mut DurableGate, g: &jcp::grant::SignedGrant, uj: u64, n: u64| {
        let f = frame(g, "invoke", n);
        let c = cost(uj);
        let chain = [g.clone()];
        dg.decide(&Request { frame: &f, chain: &chain, caller: &holder, cost: &c, now: 1, flow: None })
            .unwrap()
            .decision
    };
    let (cp, am, cont) = steer_root(&fx, Spent { uj: 700, provenance: jcp::energy::Provenance::HwShunt });
    {
        let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        dg.record_grant(&fx.root).unwrap();
        dg.record_grant(&cont).unwrap();
        assert!(spend(&mut dg, &fx.root, 700, 0).is_allow());
        // The notice cannot be written: the steered grant stays spendable.
        dg.fail_next_append_for_tests();
        assert_eq!(dg.admit_amendment(&fx.root, &cp, &am, &cont, None).unwrap_err().code(), "io");
        assert!(!dg.gate().is_superseded(&fx.root.id()), "applied although not recorded");
        // A forged amendment (signed by the agent) is refused, not recorded.
        let forged =
            jcp::steering::Amendment { amended_by: fx.holder.did(), ..am.amendment().clone() }.sign(&fx.holder);
        assert!(dg.admit_amendment(&fx.root, &cp, &forged, &cont, None).is_err());
        assert!(!dg.gate().is_superseded(&fx.root.id()));
        dg.admit_amendment(&fx.root, &cp, &am, &cont, None).unwrap();
        assert_eq!(spend(&mut dg, &fx.root, 1, 1).reason(), Some(Reason::Superseded));
        dg.close().unwrap();
    }
    let (mut dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.rejected_total(), 0, "{:?}", replay.rejected_at);
    assert_eq!(
        records(&p).iter().filter(|(_, k)| *k == RecordKind::Amendment).count(),
        1,
        "one notice, the admitted one"
    );
    assert!(dg.gate().is_superseded(&fx.root.id()), "superseded across the restart");
    assert_eq!(spend(&mut dg, &fx.root, 1, 2).reason(), Some(Reason::Superseded));
    assert!(spend(&mut dg, &cont, 300, 3).is_allow());
    assert_eq!(spend(&mut dg, &cont, 1, 4).reason(), Some(Reason::BudgetExceeded));
}

#[test]
fn c21_s4_9_an_amendment_refused_while_a_call_holds_the_remainder_names_the_hold_and_is_admitted_once_it_settles() {
    use jcp::steering::Spent;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx_with(1000, None, Vec::new());
    let holder = fx.holder.did();
    let (cp, am, cont) = steer_root(&fx, Spent { uj: 0, provenance: jcp::energy::Provenance::Estimator });
    let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    dg.record_grant(&fx.root).unwrap();
    let root = [fx.root.clone()];
    let f = frame(&fx.root, "invoke", 1);
    let zero = cost(0);
    let req = Request { frame: &f, chain: &root, caller: &holder, cost: &zero, now: 1, flow: None };
    // No maximum stated: the call in flight holds the whole remainder.
    let r = dg.authorize(&req).unwrap().unwrap();
    assert_eq!(r.reservation.decision.debited_uj, 1000);
    let e = dg.admit_amendment(&fx.root, &cp, &am, &cont, None).unwrap_err();
    assert_eq!(e.code(), "steer-widening");
    let m = e.to_string();
    assert!(m.contains("1000 µJ of that is held for 1 call(s) in flight"), "{m}");
    assert!(!dg.gate().is_superseded(&fx.root.id()), "a refused amendment changes nothing");
    // The call is charged its measured 200 µJ: 800 µJ are left and the
    // same amendment (300 µJ) is admitted.
    let measured = cost(200);
    let rec = dg.charge(r, &Request { cost: &measured, ..req }).unwrap();
    dg.complete(&rec.receipt, OutcomeStatus::Completed).unwrap();
    dg.admit_amendment(&fx.root, &cp, &am, &cont, None).unwrap();
    assert!(dg.gate().is_superseded(&fx.root.id()));
    // Spent, not held: the refusal says nothing of holds.
    let (mut dg, _) = DurableGate::open(&dir.path().join("t.jcps"), fx.steward.clone(), Gate::new()).unwrap();
    let spent = cost(800);
    assert!(dg.decide(&Request { cost: &spent, ..req }).unwrap().decision.is_allow());
    let m = dg.admit_amendment(&fx.root, &cp, &am, &cont, None).unwrap_err().to_string();
    assert!(m.contains("remainder 200 µJ") && !m.contains("held"), "{m}");
}

/// A 1 000 µJ root grant, optionally bounded by `MaxCostUj(250)`.
fn metered_fx(bounded: bool) -> Fx {
    fx_with(1000, None, if bounded { vec![jcp::grant::Caveat::MaxCostUj(250)] } else { Vec::new() })
}

#[test]
fn s4_11_a_crash_after_authorize_leaves_the_reservation_unresolved_and_held() {
    for (bounded, held) in [(false, 1000), (true, 250)] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jcps");
        let fx = metered_fx(bounded);
        let root = [fx.root.clone()];
        let holder = fx.holder.did();
        let f = frame(&fx.root, "invoke", 1);
        let c = cost(0);
        let req = Request { frame: &f, chain: &root, caller: &holder, cost: &c, now: 1, flow: None };
        let reservation = {
            let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
            let r = dg.authorize(&req).unwrap().unwrap();
            assert_eq!(r.reservation.decision.debited_uj, held);
            assert_eq!(dg.gate().spent(&fx.root.id()).uj, held, "held while the action runs");
            // The process dies while the action is in flight: no charge.
            drop(dg);
            r.reservation.receipt
        };
        let (mut dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        assert_eq!(replay.rejected_total(), 0, "{:?}", replay.rejected_at);
        assert_eq!(replay.unresolved.len(), 1, "bounded {bounded}");
        let u = &replay.unresolved[0];
        assert_eq!((u.receipt, u.holder, u.grant_id), (reservation, holder, fx.root.id()));
        assert!(u.cost_uj >= held);
        assert!(dg.gate().spent(&fx.root.id()).uj >= held, "the spend is not lower than the reservation");
        assert_eq!(dg.gate().spent(&fx.root.id()).uj, held);
        // What is left after the hold (in steps the caveat admits), and not
        // a microjoule more.
        let step = cost(250);
        for _ in 0..(1000 - held) / 250 {
            assert!(dg.decide(&Request { cost: &step, ..req }).unwrap().decision.is_allow());
        }
        let one = cost(1);
        assert_eq!(dg.decide(&Request { cost: &one, ..req }).unwrap().decision.reason(), Some(Reason::BudgetExceeded));
    }
}

#[test]
fn s4_9_authorize_and_charge_debit_the_measured_cost_once_also_after_replay() {
    for bounded in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jcps");
        let fx = metered_fx(bounded);
        let root = [fx.root.clone()];
        let holder = fx.holder.did();
        let f = frame(&fx.root, "invoke", 1);
        let zero = cost(0);
        let req = Request { frame: &f, chain: &root, caller: &holder, cost: &zero, now: 1, flow: None };
        {
            let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
            dg.record_grant(&fx.root).unwrap();
            let r = dg.authorize(&req).unwrap().unwrap();
            let reservation = r.reservation.receipt;
            let measured = cost(200);
            let rec = dg.charge(r, &Request { cost: &measured, ..req }).unwrap();
            assert!(rec.decision.is_allow());
            assert_eq!((rec.decision.debited_uj, rec.decision.breach), (200, None));
            assert_eq!(dg.gate().spent(&fx.root.id()).uj, 200, "the measured cost, once");
            assert!(dg.pending_of(&reservation).is_none(), "the reservation is settled");
            dg.complete(&rec.receipt, OutcomeStatus::Completed).unwrap();
            // A charge over the bound: debited in full, the breach recorded.
            let r = dg.authorize(&req).unwrap().unwrap();
            let measured = cost(300);
            let rec = dg.charge(r, &Request { cost: &measured, ..req }).unwrap();
            assert_eq!(rec.decision.breach, if bounded { Some(Reason::CaveatUnsatisfied) } else { None });
            assert_eq!(dg.gate().spent(&fx.root.id()).uj, 500);
            dg.complete(&rec.receipt, OutcomeStatus::Completed).unwrap();
            dg.close().unwrap();
        }
        let (dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        assert_eq!(replay.rejected_total(), 0, "{:?}", replay.rejected_at);
        assert!(replay.unresolved.is_empty(), "{:?}", replay.unresolved);
        assert_eq!(replay.settlements, 2);
        assert_eq!(dg.gate().spent(&fx.root.id()).uj, 500, "replay re-derives the measured spend exactly");
    }
}

#[test]
fn s4_11_a_crash_between_the_charge_and_its_settlement_keeps_both_debits() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = metered_fx(true);
    let root = [fx.root.clone()];
    let holder = fx.holder.did();
    let f = frame(&fx.root, "invoke", 1);
    let zero = cost(0);
    let req = Request { frame: &f, chain: &root, caller: &holder, cost: &zero, now: 1, flow: None };
    {
        let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        let r = dg.authorize(&req).unwrap().unwrap();
        // The charge's receipt is written, its settlement is not.
        dg.fail_append_after_for_tests(1);
        let measured = cost(100);
        assert_eq!(dg.charge(r, &Request { cost: &measured, ..req }).unwrap_err().code(), "io");
        assert_eq!(dg.gate().spent(&fx.root.id()).uj, 350, "held and charged");
        drop(dg);
    }
    let (dg, replay) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.settlements, 0);
    assert_eq!(replay.unresolved.len(), 2, "the reservation and the charge");
    assert_eq!(dg.gate().spent(&fx.root.id()).uj, 350, "never lower than what was held");
}

#[test]
fn s4_11_a_settlement_that_matches_nothing_takes_nothing_back() {
    use jcp_receipt::record::Settlement;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let q = dir.path().join("t.jcps");
    let fx = metered_fx(false);
    let root = [fx.root.clone()];
    let holder = fx.holder.did();
    let f = frame(&fx.root, "invoke", 1);
    let zero = cost(0);
    let req = Request { frame: &f, chain: &root, caller: &holder, cost: &zero, now: 1, flow: None };
    // A settled reservation in one stream; its settlement record spliced
    // into another stream where the reservation is not: refused.
    {
        let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
        let r = dg.authorize(&req).unwrap().unwrap();
        let measured = cost(10);
        dg.charge(r, &Request { cost: &measured, ..req }).unwrap();
        dg.close().unwrap();
    }
    let settlement = items(&p)
        .into_iter()
        .filter_map(|i| match i {
            Item::Record(r) if r.kind == RecordKind::Outcome => Some(r.payload),
            _ => None,
        })
        .next_back()
        .unwrap();
    let mut dids = jcp_receipt::cose::DidCache::new();
    let (st, _): (Settlement, _) = jcp_receipt::record::open_settlement(&settlement, &mut dids).unwrap();
    assert_eq!(st.open_reservation(&mut dids).unwrap().core.cost_uj, 1000);
    {
        let (mut dg, _) = DurableGate::open(&q, fx.steward.clone(), Gate::new()).unwrap();
        let c = cost(5);
        assert!(dg.decide(&Request { cost: &c, ..req }).unwrap().decision.is_allow());
        dg.close().unwrap();
    }
    let framed = stream::frame(RecordKind::Outcome, &settlement).unwrap();
    std::fs::OpenOptions::new().append(true).open(&q).unwrap().write_all(&framed).unwrap();
    let (dg, replay) = DurableGate::open(&q, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(replay.rejected.get("settlement-unmatched"), Some(&1));
    assert_eq!(dg.gate().spent(&fx.root.id()).uj, 5, "nothing taken back");
}

/// §4.5 + §8.1: a point's shard of a parent is rebuilt on restart (the
/// shard and its parent are recorded before the first allow through
/// them), so a re-sharding stays refused across a restart.
#[test]
fn c11_a_points_shard_of_a_parent_survives_a_restart() {
    use jcp::grant::{shard, Slice};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jcps");
    let fx = fx();
    let slice = |n: u8| Slice {
        subject: fx.worker.did(),
        budget_uj: 1_000,
        point: fx.steward.did(),
        funds_minor: None,
        nonce: Some([n; 16]),
    };
    let first = shard(&fx.root, &fx.holder, &[slice(1)]).unwrap();
    let second = shard(&fx.root, &fx.holder, &[slice(2)]).unwrap();
    let decide = |dg: &mut DurableGate, s: &jcp::grant::SignedGrant| {
        let chain = [fx.root.clone(), s.clone()];
        let f = frame(s, "invoke", 1);
        let c = cost(10);
        let did = fx.worker.did();
        dg.decide(&Request { frame: &f, chain: &chain, caller: &did, cost: &c, now: 1, flow: None }).unwrap().decision
    };
    let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert!(decide(&mut dg, &first[0]).is_allow());
    dg.close().unwrap();
    let (mut dg, _) = DurableGate::open(&p, fx.steward.clone(), Gate::new()).unwrap();
    assert_eq!(dg.gate().shard_here(&fx.root.id()), Some(first[0].id()));
    assert_eq!(decide(&mut dg, &second[0]).verdict, Verdict::Deny(Reason::AttenuationViolation));
    assert!(decide(&mut dg, &first[0]).is_allow());
}
