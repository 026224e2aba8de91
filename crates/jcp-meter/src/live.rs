//! A meter on its own thread, for a UI that polls (a Tauri command, a TUI).
//!
//! ```no_run
//! use jcp_meter::{LiveMeter, Meter, MeterConfig};
//! let meter = Meter::system(MeterConfig::default(), std::path::Path::new("/sys/class/powercap")).unwrap();
//! let live = LiveMeter::spawn(meter);
//! let probe = live.probe_report(); // the ladder, once probed
//! let fresh = live.drain();         // windows since the last poll, oldest first
//! live.stop();
//! # let _ = (probe, fresh);
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::estimate::HostId;
use crate::meter::{Meter, ProbeReport, Window};
use crate::session::Session;

/// A [`Meter`] running on a background thread.
#[derive(Debug)]
pub struct LiveMeter {
    rx: Receiver<Window>,
    stop: Arc<AtomicBool>,
    probe: Arc<Mutex<Option<ProbeReport>>>,
    thread: Option<JoinHandle<()>>,
    host: HostId,
    interval_ns: u64,
}

impl LiveMeter {
    /// Probes and starts metering on a new thread.
    pub fn spawn(mut meter: Meter) -> Self {
        let host = meter.host().clone();
        let interval_ns = u64::try_from(meter.config().interval.as_nanos()).unwrap_or(u64::MAX);
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let probe = Arc::new(Mutex::new(None));
        let (stop2, probe2) = (Arc::clone(&stop), Arc::clone(&probe));
        let thread = std::thread::spawn(move || {
            let report = meter.probe().clone();
            if let Ok(mut p) = probe2.lock() {
                *p = Some(report);
            }
            while !stop2.load(Ordering::Relaxed) {
                let w = meter.next_window();
                if tx.send(w).is_err() {
                    break;
                }
            }
        });
        Self { rx, stop, probe, thread: Some(thread), host, interval_ns }
    }

    /// The host metered.
    pub fn host(&self) -> &HostId {
        &self.host
    }

    /// The window length, ns.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// `windows` (drained from this meter) as a recorded session, with the
    /// occupancy the operator declares for it (§5.4); write it with
    /// [`crate::session::record_to`].
    pub fn session(&self, windows: &[Window], occupancy: Option<String>) -> Session {
        Session::new(self.host.clone(), occupancy, self.interval_ns, None, windows)
    }

    /// The probe report, once the probe has run.
    pub fn probe_report(&self) -> Option<ProbeReport> {
        self.probe.lock().ok().and_then(|p| p.clone())
    }

    /// Every window finished since the last call, oldest first.
    pub fn drain(&self) -> Vec<Window> {
        let mut out = Vec::new();
        loop {
            match self.rx.try_recv() {
                Ok(w) => out.push(w),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return out,
            }
        }
    }

    /// Blocks for the next window; `None` once the meter has stopped.
    pub fn recv(&self) -> Option<Window> {
        self.rx.recv().ok()
    }

    /// Stops after the current window and waits for the thread.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LiveMeter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
