//! The audit runs on every core beside the window; its threads yield to the
//! window's. Without this, a million-receipt audit on a small machine starves
//! the UI and the webview: clicks and progress updates wait for a core
//! (docs/performance.md, "The console"). The audit still gets every core the
//! window does not use, so its time to verdict stays that of `jcp audit`.

/// How much lower than the window the audit threads run (Linux `nice`).
#[cfg(target_os = "linux")]
const AUDIT_NICE: i32 = 10;

/// Lowers the scheduling priority of the calling thread (Linux: its own
/// `nice` value; elsewhere nothing). Failure is reported, never fatal.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // Given a thread id, `setpriority(PRIO_PROCESS, …)` changes that thread only.
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(tid), AUDIT_NICE) {
            eprintln!("jcp-console: could not lower the audit thread's priority: {e}");
        }
    }
}

/// Builds the process-wide worker pool the audit engine uses (every core),
/// each worker at the audit's lower priority. Call once, before any audit.
pub fn init_audit_pool() -> Result<(), String> {
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("audit-worker-{i}"))
        .start_handler(|_| lower_this_thread())
        .build_global()
        .map_err(|e| format!("the audit's worker pool was not set up: {e}"))
}
