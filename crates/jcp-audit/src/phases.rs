//! Where the audit's time goes, phase by phase, for the benchmark
//! (`cargo bench -p jcp-audit --bench audit --features phase-timing`).
//! Without the `phase-timing` feature every probe is an empty inline
//! function and [`snapshot`] returns `None`, so a normal build pays nothing.
//!
//! The phases are measured inside one audit run: reading and framing,
//! signature checks (the batch verifier and any one-by-one re-check), record
//! ids (blake3), accounting, and the decode slices as a whole (decode +
//! signature checks + ids), so decode is the slices less the two inside them.

/// Accumulated wall time per phase, in nanoseconds, summed over threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Phases {
    /// Reading and framing (the reader's batches).
    pub read_ns: u64,
    /// Decode-and-verify slices, whole.
    pub slices_ns: u64,
    /// Signature checks inside the slices.
    pub verify_ns: u64,
    /// Record ids (blake3) inside the slices.
    pub ids_ns: u64,
    /// Accounting in stream order.
    pub account_ns: u64,
}

#[cfg(feature = "phase-timing")]
pub(crate) mod imp {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Instant;

    pub(crate) static READ: AtomicU64 = AtomicU64::new(0);
    pub(crate) static SLICES: AtomicU64 = AtomicU64::new(0);
    pub(crate) static VERIFY: AtomicU64 = AtomicU64::new(0);
    pub(crate) static IDS: AtomicU64 = AtomicU64::new(0);
    pub(crate) static ACCOUNT: AtomicU64 = AtomicU64::new(0);

    /// Adds the time until it is dropped to its phase.
    pub(crate) struct Probe(Instant, &'static AtomicU64);

    impl Drop for Probe {
        fn drop(&mut self) {
            let ns = u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.1.fetch_add(ns, Ordering::Relaxed);
        }
    }

    pub(crate) fn probe(phase: &'static AtomicU64) -> Probe {
        Probe(Instant::now(), phase)
    }

    pub(crate) fn take() -> super::Phases {
        super::Phases {
            read_ns: READ.swap(0, Ordering::Relaxed),
            slices_ns: SLICES.swap(0, Ordering::Relaxed),
            verify_ns: VERIFY.swap(0, Ordering::Relaxed),
            ids_ns: IDS.swap(0, Ordering::Relaxed),
            account_ns: ACCOUNT.swap(0, Ordering::Relaxed),
        }
    }
}

/// `probe!(VERIFY)`: times the rest of the scope into that phase's counter
/// (`READ`, `SLICES`, `VERIFY`, `IDS`, `ACCOUNT`); nothing without the feature.
macro_rules! probe {
    ($phase:ident) => {{
        #[cfg(feature = "phase-timing")]
        let p = Some($crate::phases::imp::probe(&$crate::phases::imp::$phase));
        #[cfg(not(feature = "phase-timing"))]
        let p: Option<()> = None;
        p
    }};
}
pub(crate) use probe;

/// The phase times accumulated since the last call (and resets them), or
/// `None` without the `phase-timing` feature.
pub fn snapshot() -> Option<Phases> {
    #[cfg(feature = "phase-timing")]
    return Some(imp::take());
    #[cfg(not(feature = "phase-timing"))]
    None
}
