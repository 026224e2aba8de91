//! The workspace store: WAL, migrations, refusals that name the file, no silent loss.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use console_store::{ItemKind, Store, StoreError, WindowRecord, DEFAULT_WINDOW_RETENTION};
use jcp::energy::{Coverage, Energy, Provenance};
use serde_json::json;

fn window(start_ms: u64, energy: Option<Energy>) -> WindowRecord {
    WindowRecord { seq: 0, start_ms, end_ms: start_ms + 1000, energy, rung: energy.map(|_| "rapl".to_owned()) }
}

#[test]
fn store_new_file_is_wal_and_fully_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/ws.sqlite");
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), 3);
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    // Reopening is idempotent and keeps data.
    let s = Store::open(&path).unwrap();
    s.record_action(1, "open_stream", "/x", &json!({})).unwrap();
    drop(s);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.actions(10).unwrap().len(), 1);
    assert_eq!(s.window_retention(), DEFAULT_WINDOW_RETENTION);
}

#[test]
fn s5_gap_window_is_kept_as_no_reading_never_zero() {
    let mut s = Store::open_in_memory().unwrap();
    let whole = Energy::new(1_250_000, Provenance::HwShunt);
    let partial = Energy { uj: 40, provenance: Provenance::ModelBased, coverage: Coverage::Partial, measured: None };
    s.record_window(&window(1000, Some(whole))).unwrap();
    s.record_window(&window(2000, None)).unwrap();
    s.record_window(&window(3000, Some(partial))).unwrap();
    let got = s.recent_windows(10).unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].energy, Some(whole));
    assert_eq!(got[1].energy, None, "a gap must stay a gap");
    assert_eq!(got[1].rung, None);
    assert_eq!(got[2].energy, Some(partial));
    assert!(got[0].seq < got[1].seq && got[1].seq < got[2].seq);
}

#[test]
fn store_window_history_is_bounded_by_retention_oldest_dropped() {
    let mut s = Store::open_in_memory().unwrap();
    s.set_window_retention(5);
    for i in 0..12u64 {
        s.record_window(&window(i * 1000, Some(Energy::new(i, Provenance::Estimator)))).unwrap();
    }
    assert_eq!(s.window_count().unwrap(), 5);
    let got = s.recent_windows(100).unwrap();
    let starts: Vec<u64> = got.iter().map(|w| w.start_ms).collect();
    assert_eq!(starts, vec![7000, 8000, 9000, 10000, 11000]);
    assert_eq!(s.recent_windows(2).unwrap().iter().map(|w| w.start_ms).collect::<Vec<_>>(), vec![10000, 11000]);
}

#[test]
fn store_window_ending_before_start_is_refused() {
    let mut s = Store::open_in_memory().unwrap();
    let w = WindowRecord { seq: 0, start_ms: 5, end_ms: 4, energy: None, rung: None };
    let e = s.record_window(&w).unwrap_err();
    assert_eq!(e.code(), "store.invalid_record");
    assert_eq!(s.window_count().unwrap(), 0);
}

#[test]
fn s5_unknown_provenance_in_file_is_refused_not_defaulted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO energy_windows (start_ms, end_ms, uj, provenance, coverage) VALUES (0, 1, 5, 'Measured', 'Whole')",
        [],
    )
    .unwrap();
    drop(conn);
    let s = Store::open(&path).unwrap();
    let e = s.recent_windows(10).unwrap_err();
    assert_eq!(e.code(), "store.invalid_record");
    assert!(e.to_string().contains("Measured"), "{e}");
}

#[test]
fn store_streams_keep_their_last_audit_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    let report = json!({"verdict": "findings", "receipts": {"verified": 10, "failed": 1}});
    {
        let s = Store::open(&path).unwrap();
        s.record_stream_opened("/data/a.jcps", 123, 10).unwrap();
        s.record_stream_opened("/data/b.jcps", 9, 20).unwrap();
        s.record_audit("/data/a.jcps", "findings", &report, 30).unwrap();
        // Re-opening a stream keeps its last audit.
        s.record_stream_opened("/data/a.jcps", 124, 40).unwrap();
    }
    let s = Store::open(&path).unwrap();
    let all = s.streams().unwrap();
    assert_eq!(all.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), vec!["/data/a.jcps", "/data/b.jcps"]);
    let a = s.stream("/data/a.jcps").unwrap().unwrap();
    assert_eq!(a.size_bytes, 124);
    assert_eq!(a.last_verdict.as_deref(), Some("findings"));
    assert_eq!(a.last_audit, Some(report));
    assert_eq!(a.last_audit_at_ms, Some(30));
    assert!(s.stream("/nope").unwrap().is_none());
}

#[test]
fn store_audit_of_unopened_stream_is_refused() {
    let s = Store::open_in_memory().unwrap();
    let e = s.record_audit("/never", "clean", &json!({}), 1).unwrap_err();
    assert_eq!(e.code(), "store.invalid_record");
}

#[test]
fn store_not_a_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    let junk = b"this is a text file, not a workspace store, and it must survive".repeat(100);
    std::fs::write(&path, &junk).unwrap();
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
    assert_eq!(e.code(), "store.corrupt");
    assert!(e.to_string().contains(&path.display().to_string()));
    assert_eq!(std::fs::read(&path).unwrap(), junk, "a refused file must not be rewritten");
}

#[test]
fn store_damaged_pages_are_refused_not_recreated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    {
        let mut s = Store::open(&path).unwrap();
        for i in 0..400u64 {
            s.record_window(&window(i * 1000, Some(Energy::new(i, Provenance::HwShunt)))).unwrap();
        }
    }
    // Checkpoint the WAL into the main file, then scribble over the window table's root page.
    let (root, page): (usize, usize) = {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;").unwrap();
        let root: i64 =
            c.query_row("SELECT rootpage FROM sqlite_master WHERE name = 'energy_windows'", [], |r| r.get(0)).unwrap();
        let page: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        (usize::try_from(root).unwrap(), usize::try_from(page).unwrap())
    };
    let mut bytes = std::fs::read(&path).unwrap();
    let at = (root - 1) * page;
    assert!(bytes.len() >= at + page);
    for b in &mut bytes[at..at + page] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = Store::open(&path).unwrap_err();
    assert_eq!(e.code(), "store.corrupt", "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "a refused file must not be rewritten");
}

#[test]
fn store_locked_by_another_writer_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    drop(Store::open(&path).unwrap());
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE; INSERT INTO steward_actions (at_ms, action, subject, detail_json) VALUES (1,'a','b','{}');").unwrap();
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::Locked { .. }), "{e:?}");
    assert!(e.to_string().contains("locked"));
    holder.execute_batch("COMMIT").unwrap();
    assert_eq!(Store::open(&path).unwrap().actions(5).unwrap().len(), 1);
}

#[test]
fn store_newer_schema_is_refused_not_downgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    drop(Store::open(&path).unwrap());
    let c = rusqlite::Connection::open(&path).unwrap();
    c.pragma_update(None, "user_version", 99).unwrap();
    drop(c);
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::NewerSchema { found: 99, supported: 3, .. }), "{e:?}");
    assert_eq!(e.code(), "store.newer_schema");
}

#[test]
fn store_steward_actions_newest_first() {
    let s = Store::open_in_memory().unwrap();
    s.record_action(1, "open_stream", "/a", &json!({"size": 1})).unwrap();
    s.record_action(2, "audit", "/a", &json!({"verdict": "clean"})).unwrap();
    s.record_action(3, "export_report", "/tmp/r.html", &json!({})).unwrap();
    let a = s.actions(2).unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0].action, "export_report");
    assert_eq!(a[1].detail, json!({"verdict": "clean"}));
    // A run's history: its subject's actions, oldest first.
    let h = s.actions_on("/a", 10).unwrap();
    assert_eq!(h.iter().map(|a| a.action.as_str()).collect::<Vec<_>>(), ["open_stream", "audit"]);
    assert!(s.actions_on("/none", 10).unwrap().is_empty());
}

#[test]
fn store_v1_file_gains_workspace_items_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    let s = Store::open(&path).unwrap();
    s.record_stream_opened("/ws/demo.jcps", 10, 1).unwrap();
    drop(s);
    // Make it the file a console of schema 1 wrote.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch("DROP TABLE workspace_items; DROP TABLE forgotten; PRAGMA user_version = 1;").unwrap();
    drop(c);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), 3);
    assert_eq!(s.streams().unwrap().len(), 1, "migration 2 keeps the streams");
    assert!(s.items().unwrap().is_empty());
    s.add_item(ItemKind::Run, "demo run", "/ws/demo/run.json", &json!({}), 2).unwrap();
    assert_eq!(s.items().unwrap().len(), 1);
}

#[test]
fn store_workspace_items_are_listed_with_their_last_status() {
    let s = Store::open_in_memory().unwrap();
    let bp = s
        .add_item(
            ItemKind::Blueprint,
            "demo blueprint",
            "/ws/demo/d.deployment.json",
            &json!({"blueprint": "/ws/demo/b.json"}),
            5,
        )
        .unwrap();
    let run = s.add_item(ItemKind::Run, "demo run", "/ws/demo/run.json", &json!({}), 6).unwrap();
    s.set_item_status(bp, "consistent", 9).unwrap();
    // Adding the same item again keeps its id and its last status.
    assert_eq!(
        s.add_item(
            ItemKind::Blueprint,
            "demo blueprint (renamed)",
            "/ws/demo/d.deployment.json",
            &json!({"blueprint": "/ws/demo/b.json"}),
            7
        )
        .unwrap(),
        bp
    );
    let items = s.items().unwrap();
    assert_eq!(items.iter().map(|i| i.id).collect::<Vec<_>>(), vec![bp, run]);
    assert_eq!(items[0].kind, ItemKind::Blueprint);
    assert_eq!(items[0].label, "demo blueprint (renamed)");
    assert_eq!(items[0].last_status.as_deref(), Some("consistent"));
    assert_eq!(items[0].last_opened_at_ms, Some(9));
    assert_eq!(items[0].detail, json!({"blueprint": "/ws/demo/b.json"}));
    assert_eq!(items[1].last_status, None, "never opened: no status, not a default one");
    assert_eq!(s.item(run).unwrap().unwrap().path, "/ws/demo/run.json");
    assert!(s.item(999).unwrap().is_none());
    assert_eq!(s.set_item_status(999, "x", 1).unwrap_err().code(), "store.invalid_record");
}

#[test]
fn store_item_of_unknown_kind_is_refused_not_defaulted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    drop(Store::open(&path).unwrap());
    let c = rusqlite::Connection::open(&path).unwrap();
    // The CHECK constraint keeps SQLite itself from storing one; a file edited
    // without it (schema altered by hand) must still be refused on read.
    c.execute_batch(
        "PRAGMA ignore_check_constraints = ON;
         INSERT INTO workspace_items (kind, label, path, detail_json, added_at_ms) VALUES ('model', 'x', '/x', '{}', 1);",
    )
    .unwrap();
    drop(c);
    let before = std::fs::read(&path).unwrap();
    // SQLite's integrity check sees the broken CHECK: the file is refused, whole.
    let e = Store::open(&path).unwrap_err();
    assert_eq!(e.code(), "store.corrupt");
    assert!(e.to_string().contains("workspace_items"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file is left untouched");
}

#[test]
fn store_a_found_file_does_not_rename_an_item_the_console_named() {
    let s = Store::open_in_memory().unwrap();
    let id = s
        .add_item(
            ItemKind::Run,
            "gateway run files (npx server)",
            "/ws/runs/gateway-1.jcprun",
            &json!({"source": "gateway"}),
            1,
        )
        .unwrap();
    // The runs-folder watcher finds the same file: same item, name and detail kept.
    let again = s
        .add_item_if_absent(
            ItemKind::Run,
            "run gateway-1",
            "/ws/runs/gateway-1.jcprun",
            &json!({"source": "runs-folder"}),
            2,
        )
        .unwrap();
    assert_eq!(again, id);
    let item = s.item(id).unwrap().unwrap();
    assert_eq!(
        (item.label.as_str(), item.detail["source"].as_str()),
        ("gateway run files (npx server)", Some("gateway"))
    );
    // A file nobody named yet is added with the watcher's name.
    let other = s.add_item_if_absent(ItemKind::Run, "run other", "/ws/runs/other.jcprun", &json!({}), 3).unwrap();
    assert_ne!(other, id);
    assert_eq!(s.item(other).unwrap().unwrap().label, "run other");
}

/// Issue 39: what the person takes off the workspace is remembered as taken
/// off (the console's own listings skip it) until the person opens it again.
#[test]
fn store_a_forgotten_path_is_remembered_until_opened_again() {
    let s = Store::open_in_memory().unwrap();
    s.record_stream_opened("/ws/a.jcps", 10, 1).unwrap();
    let run = s.add_item(ItemKind::Run, "run", "/ws/r.jcprun", &json!({}), 2).unwrap();
    assert!(!s.is_forgotten("/ws/a.jcps").unwrap());
    assert!(s.forget_stream("/ws/a.jcps", 3).unwrap());
    assert!(s.forget_item(run, 4).unwrap());
    assert!(s.is_forgotten("/ws/a.jcps").unwrap() && s.is_forgotten("/ws/r.jcprun").unwrap());
    // Forgetting what is not there marks nothing.
    assert!(!s.forget_stream("/ws/never.jcps", 5).unwrap());
    assert!(!s.forget_item(999, 5).unwrap());
    assert!(!s.is_forgotten("/ws/never.jcps").unwrap());
    // Opened or added again by the person: remembered again.
    s.record_stream_opened("/ws/a.jcps", 10, 6).unwrap();
    s.add_item(ItemKind::Run, "run", "/ws/r.jcprun", &json!({}), 7).unwrap();
    assert!(!s.is_forgotten("/ws/a.jcps").unwrap() && !s.is_forgotten("/ws/r.jcprun").unwrap());
}
