//! Monotonic time and pacing.
//!
//! Every window is stamped on a monotonic clock (nanoseconds since the meter's
//! epoch). The meter never reads wall time for arithmetic; it records the
//! wall time of each window's ends only for display.
//!
//! [`MonotonicClock`] is the real clock. [`ManualClock`] is a test double: its
//! time only moves when the meter pauses, and a hook can change the world
//! (rewrite a fake sysfs tree) at each pause, so tests replay hardware
//! behaviour without sleeping.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A monotonic clock the meter reads and paces itself by.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Nanoseconds since this clock's epoch; never decreases.
    fn now_ns(&self) -> u64;
    /// Waits `d`. With `burn`, the calling thread keeps its core busy for the
    /// whole wait (the §5 liveness probe burns CPU); otherwise it sleeps.
    fn pause(&self, d: Duration, burn: bool);
    /// Wall-clock Unix milliseconds matching `now_ns` (display only).
    fn unix_ms_at(&self, ns: u64) -> u64;
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The real monotonic clock (`std::time::Instant`).
#[derive(Debug, Clone)]
pub struct MonotonicClock {
    epoch: Instant,
    epoch_unix_ms: u64,
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl MonotonicClock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        let epoch_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self { epoch: Instant::now(), epoch_unix_ms }
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        duration_ns(self.epoch.elapsed())
    }

    fn pause(&self, d: Duration, burn: bool) {
        if burn {
            let until = Instant::now() + d;
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            while Instant::now() < until {
                // Busy work the optimiser cannot remove.
                for _ in 0..1000 {
                    x = x.rotate_left(7) ^ x.wrapping_mul(0x2545_f491_4f6c_dd1d);
                }
                std::hint::black_box(x);
            }
        } else {
            std::thread::sleep(d);
        }
    }

    fn unix_ms_at(&self, ns: u64) -> u64 {
        self.epoch_unix_ms.saturating_add(ns / 1_000_000)
    }
}

/// A hook run at each pause of a [`ManualClock`], given the new time.
pub type PauseHook = Box<dyn FnMut(u64) + Send>;

/// A test clock: time advances only by the pauses the meter asks for.
#[derive(Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
    hook: Arc<Mutex<Option<PauseHook>>>,
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock").field("now_ns", &self.now.load(Ordering::SeqCst)).finish_non_exhaustive()
    }
}

impl ManualClock {
    /// A clock at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `hook(now_ns)` after every pause (e.g. to advance a fake sysfs tree).
    pub fn on_pause(&self, hook: impl FnMut(u64) + Send + 'static) {
        if let Ok(mut h) = self.hook.lock() {
            *h = Some(Box::new(hook));
        }
    }

    /// Moves time forward by `d` without running the hook.
    pub fn advance(&self, d: Duration) {
        self.now.fetch_add(duration_ns(d), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn pause(&self, d: Duration, _burn: bool) {
        let now = self.now.fetch_add(duration_ns(d), Ordering::SeqCst).saturating_add(duration_ns(d));
        if let Ok(mut h) = self.hook.lock() {
            if let Some(hook) = h.as_mut() {
                hook(now);
            }
        }
    }

    fn unix_ms_at(&self, ns: u64) -> u64 {
        ns / 1_000_000
    }
}
