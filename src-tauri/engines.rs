//! The crates this shell wires in: the audit engine (crates/jcp-audit), the
//! local meter (crates/jcp-meter) and the demo stream writer
//! (crates/jcp-receipt). The shell adapts their types to the console's IPC
//! types and decides nothing itself.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use console_store::{Store, WindowRecord};
use console_view::ipc::{Availability, RungRow, UiError};

use crate::state::{EngineOutcome, MeterView, ProgressCounters};

/// The audit engine: `jcp_audit::audit_paths` with default options, the
/// same call `jcp audit STREAM... --json` makes, so the numbers agree.
pub fn audit_engine() -> Option<crate::state::EngineFn> {
    Some(run_audit)
}

/// Why auditing would be unavailable (not the case in this build).
pub const AUDIT_MISSING: &str = "the audit engine (crates/jcp-audit) is not part of this build; `jcp audit STREAM --json` is the headless equivalent";

/// Verdict word for a report (`clean` exactly when `jcp audit` exits 0).
pub fn verdict(report: &jcp_audit::Report) -> console_view::tags::Verdict {
    console_view::tags::Verdict::of(report.clean)
}

fn run_audit(paths: &[PathBuf], p: &ProgressCounters, cancel: &AtomicBool) -> EngineOutcome {
    let mut base = 0u64; // bytes of the streams already finished
    let mut current = 0u64; // size of the stream being read
    let report = jcp_audit::audit_paths(paths, &jcp_audit::AuditOptions::default(), |ev| {
        match ev {
            jcp_audit::Progress::StreamStarted { bytes_total, .. } => {
                base += current;
                current = *bytes_total;
                p.bytes_done.store(base, Ordering::Relaxed);
            }
            jcp_audit::Progress::Advanced { bytes_done, records, .. } => {
                p.bytes_done.store(base + bytes_done, Ordering::Relaxed);
                p.records.store(*records, Ordering::Relaxed);
            }
            jcp_audit::Progress::Finishing => {
                p.bytes_done.store(p.bytes_total.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
        if cancel.load(Ordering::Relaxed) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .map_err(|e| UiError::new(&audit_code(&e), e.to_string()))?;
    let mut report = report;
    // A gateway's stream: every recorded call's intent recomputed, as `jcp audit` does.
    jcp_gateway::intents::check_audit(&mut report, paths)
        .map_err(|e| UiError::new(&format!("audit.{}", e.code()), e.to_string()))?;
    let json = serde_json::to_value(&report)
        .map_err(|e| UiError::new("audit.report", format!("the report could not be serialised: {e}")))?;
    Ok((verdict(&report), json))
}

/// The code the shell gives an audit error: `audit.` and the error's own
/// code, so the shell recognises one (a cancel) by its variant, not a literal.
pub fn audit_code(e: &jcp_audit::AuditError) -> String {
    format!("audit.{}", e.code())
}

/// The meter's view before the probe has finished (or when there is no meter).
pub fn meter_view() -> MeterView {
    MeterView {
        availability: Availability {
            available: false,
            reason: Some("the meter is starting (probing the ladder)".to_owned()),
        },
        ladder: Vec::new(),
        window_ms: 1000,
    }
}

/// The ladder as the front end shows it.
pub fn ladder_rows(report: &jcp_meter::ProbeReport) -> Vec<RungRow> {
    report
        .rungs
        .iter()
        .map(|r| RungRow {
            name: r.title.to_owned(),
            status: match r.status {
                jcp_meter::RungStatus::Chosen => console_view::tags::RungStatus::Chosen,
                jcp_meter::RungStatus::Declined => console_view::tags::RungStatus::Declined,
                jcp_meter::RungStatus::Unavailable => console_view::tags::RungStatus::Unavailable,
                jcp_meter::RungStatus::Standby => console_view::tags::RungStatus::Standby,
            },
            provenance: Some(r.provenance.into()),
            why: r.why.clone(),
            fix: r.fix.clone(),
        })
        .collect()
}

/// A meter window as the store keeps it (a gap stays a gap).
pub fn window_record(w: &jcp_meter::Window) -> WindowRecord {
    WindowRecord {
        seq: 0,
        start_ms: w.start_unix_ms,
        end_ms: w.end_unix_ms.max(w.start_unix_ms),
        energy: w.energy(),
        rung: w.rung.map(|r| r.as_str().to_owned()),
    }
}

/// Starts the machine's meter on its own thread: every closed window goes
/// into the store (bounded history) and the ladder into `view`. A machine
/// where no meter can start says why in `view`, and nothing is made up.
pub fn start_meter(store: Arc<Mutex<Store>>, view: Arc<Mutex<MeterView>>, recorder: Arc<crate::sessions::Recorder>) {
    let config = jcp_meter::MeterConfig::default();
    let window_ms = u64::try_from(config.interval.as_millis()).unwrap_or(1000);
    let meter = match jcp_meter::Meter::system(config, Path::new(jcp_meter::rapl::POWERCAP_ROOT)) {
        Ok(m) => m,
        Err(e) => {
            if let Ok(mut v) = view.lock() {
                v.availability = Availability {
                    available: false,
                    reason: Some(format!("the meter could not start: {e} ({})", e.code())),
                };
            }
            return;
        }
    };
    let live = jcp_meter::LiveMeter::spawn(meter);
    recorder.meter_started(live.host().clone(), live.interval_ns());
    let spawned = std::thread::Builder::new().name("meter-pump".into()).spawn(move || {
        let mut have_probe = false;
        while let Some(w) = live.recv() {
            if !have_probe {
                if let Some(report) = live.probe_report() {
                    if let Ok(mut v) = view.lock() {
                        v.ladder = ladder_rows(&report);
                        v.window_ms = window_ms;
                        v.availability = match report.chosen {
                            Some(_) => Availability { available: true, reason: None },
                            None => Availability {
                                available: false,
                                reason: Some("no rung of the ladder can meter this machine (see the ladder)".into()),
                            },
                        };
                    }
                    have_probe = true;
                }
            }
            recorder.push(&w);
            let rec = window_record(&w);
            let stored = store.lock().map(|mut s| s.record_window(&rec));
            if let Ok(Err(e)) = stored {
                eprintln!("jcp-console: window {} not stored: {e}", w.seq);
            }
        }
    });
    if let Err(e) = spawned {
        eprintln!("jcp-console: the meter thread could not start: {e}");
    }
}

/// Writes the demo streams a workspace lacks (once each): a clean stream and
/// one with tampered receipts, both by `jcp_receipt::demo` (real keys, real
/// gate, real signatures). Returns their paths.
pub fn prepare_demo(dir: &Path) -> Result<Vec<PathBuf>, UiError> {
    let clean = dir.join("demo.jcps");
    let tampered = dir.join("demo-tampered.jcps");
    std::fs::create_dir_all(dir).map_err(|e| crate::error::io("demo.write_failed", "cannot create", dir, &e))?;
    let opts = |tamper, unresolved| jcp_receipt::demo::DemoOptions {
        receipts: 300,
        tamper,
        unresolved,
        seed: 1,
        durability: jcp_receipt::writer::Durability::GeneratorOnly,
    };
    let err = |e: jcp_receipt::Error| {
        UiError::new(&format!("demo.{}", e.code()), format!("the demo stream could not be written: {e}"))
    };
    // Each stream is written under a temporary name and renamed when whole,
    // so a start interrupted half-way never leaves a half demo behind.
    for (path, tamper) in [(&clean, 0), (&tampered, 3)] {
        if path.exists() {
            continue;
        }
        let part = path.with_extension("jcps.part");
        let _ = std::fs::remove_file(&part);
        jcp_receipt::demo::write_demo(&part, &opts(tamper, 0)).map_err(err)?;
        std::fs::rename(&part, path).map_err(|e| crate::error::io("demo.write_failed", "cannot finish", path, &e))?;
    }
    Ok(vec![clean, tampered])
}

/// Writes the demo Blueprint, its Deployments and the host's reconcile
/// inputs into `dir` (once each; `console_view::blueprint::write_demo`
/// generates them with the blueprint crate's own encoder) and returns the
/// reconciles as workspace items.
pub fn prepare_demo_blueprints(dir: &Path) -> Result<Vec<DemoItem>, UiError> {
    let demos = console_view::blueprint::write_demo(dir).map_err(|e| crate::error::view(&e))?;
    demos
        .into_iter()
        .map(|d| {
            let detail = serde_json::to_value(&d.files).map_err(|e| UiError::new("demo.blueprint", e.to_string()))?;
            Ok(DemoItem {
                kind: console_store::ItemKind::Blueprint,
                label: d.label.to_owned(),
                path: d.files.deployment.display().to_string(),
                detail,
            })
        })
        .collect()
}

/// Writes the demo run (`jcp::steering::demo`, through console-view) as
/// `dir/demo.jcprun` unless it exists, and returns it as a workspace item.
pub fn prepare_demo_run(dir: &Path) -> Result<DemoItem, UiError> {
    let path = dir.join(format!("demo.{}", jcp::steering::RUN_EXTENSION));
    console_view::run::write_demo(&path).map_err(|e| crate::error::view(&e))?;
    Ok(DemoItem {
        kind: console_store::ItemKind::Run,
        label: "demo run: a research agent's 1 kWh grant, checkpoints and one amendment".to_owned(),
        path: path.display().to_string(),
        detail: serde_json::json!({}),
    })
}

/// Writes the demo's authority runs (`console_view::authority::demo`): a
/// rotated steward's run with its key log, a 2-of-3 threshold issuer's run
/// with its group, and a run minted by a standing grant with its policy and
/// ledger, each in its own folder under `dir`, and returns them as items.
pub fn prepare_demo_authority(dir: &Path) -> Result<Vec<DemoItem>, UiError> {
    let runs = console_view::authority::demo::write_demo(dir).map_err(|e| crate::error::view(&e))?;
    Ok(runs
        .into_iter()
        .map(|path| {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let label = match stem.as_str() {
                "rotated-steward" => "demo run: a steward that rotated its key (key log beside the run)",
                "threshold-board" => "demo run: a 2-of-3 threshold board's grant (FROST aggregate)",
                "minted-by-standing-grant" => "demo run: a grant minted by a standing grant (mint ledger beside it)",
                _ => "demo run",
            };
            DemoItem {
                kind: console_store::ItemKind::Run,
                label: label.to_owned(),
                path: path.display().to_string(),
                detail: serde_json::json!({}),
            }
        })
        .collect())
}

/// A workspace item the demo adds (see `state::register_demo_items`).
#[derive(Debug, Clone)]
pub struct DemoItem {
    /// What it is.
    pub kind: console_store::ItemKind,
    /// Words for a person.
    pub label: String,
    /// Its identifying file.
    pub path: String,
    /// Its files, as the item's detail.
    pub detail: serde_json::Value,
}

#[cfg(test)]
mod tests {
    /// A cancelled audit reaches the UI as `audit.cancelled` (the code the
    /// shell compares through `AuditError::Cancelled`, never a literal).
    #[test]
    fn audit_cancel_code_is_the_cancelled_variants() {
        assert_eq!(super::audit_code(&jcp_audit::AuditError::Cancelled), "audit.cancelled");
        assert_ne!(
            super::audit_code(&jcp_audit::AuditError::NoInput),
            super::audit_code(&jcp_audit::AuditError::Cancelled)
        );
    }
}
