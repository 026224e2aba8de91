// The console's own commands, in one list. build.rs includes this file and
// gives the list to tauri-build (the app manifest, one permission each);
// tests check that the capability allows exactly these, that lib.rs
// registers exactly these, and that the front end's `ui/src/gen/commands.ts`
// (the only names `ui/src/ipc.ts` may call) is generated from it.

/// Every command the window may invoke.
pub const COMMANDS: &[&str] = &[
    "app_info",
    "energy_snapshot",
    "energy_export",
    "audit_pick_streams",
    "audit_start",
    "audit_status",
    "audit_report",
    "audit_cancel",
    "audit_export",
    "workspace_streams",
    "steward_actions",
    "workspace_overview",
    "blueprint_report",
    "run_report",
    "key_status_get",
    "key_create_new",
    "key_import_pick",
    "key_unlock_now",
    "key_lock_now",
    "steward_overview",
    "steward_run",
    "steward_preview",
    "steward_amend",
    "steward_revoke_plan",
    "steward_revoke",
    "live_run_start",
    "live_run_stop",
    "steward_unresolved",
    "steward_settle",
    "developer_pick_file",
    "blueprint_open",
    "intent_inspect",
    "intent_compare",
    "developer_pick_folder",
    "blueprint_conformance",
    "energy_record_status",
    "energy_record_start",
    "energy_record_stop",
    "energy_session_analyze",
    "energy_baseline_declare",
];
