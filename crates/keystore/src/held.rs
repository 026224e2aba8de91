//! An unlocked key held for a session, locked again after an idle time
//! (issue 34, "Keys at rest": no idle auto-lock). Only a use of the key
//! (a signature) counts as activity: looking at whether it is unlocked does
//! not keep it unlocked. A key dropped here is zeroed
//! (`ed25519_dalek::SigningKey` zeroizes on drop).

use std::time::{Duration, Instant};

use jcp::identity::Keypair;

/// The idle time after which a held key locks itself, unless configured.
pub const DEFAULT_IDLE_LOCK: Duration = Duration::from_secs(15 * 60);
/// The shortest idle time that may be configured.
pub const MIN_IDLE_LOCK: Duration = Duration::from_secs(10);
/// The longest idle time that may be configured.
pub const MAX_IDLE_LOCK: Duration = Duration::from_secs(24 * 60 * 60);

/// An unlocked key (or none) and when it was last used.
#[derive(Debug)]
pub struct Held {
    key: Option<Keypair>,
    last_used: Instant,
    idle: Duration,
}

impl Held {
    /// Nothing held; a key put here locks after `idle` without a use
    /// (clamped to [`MIN_IDLE_LOCK`]..=[`MAX_IDLE_LOCK`]).
    pub fn new(idle: Duration) -> Self {
        Self { key: None, last_used: Instant::now(), idle: idle.clamp(MIN_IDLE_LOCK, MAX_IDLE_LOCK) }
    }

    /// The idle time read from `JCP_KEY_IDLE_LOCK_S` (seconds, clamped), else [`DEFAULT_IDLE_LOCK`].
    pub fn idle_from_env() -> Duration {
        std::env::var("JCP_KEY_IDLE_LOCK_S")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(DEFAULT_IDLE_LOCK, Duration::from_secs)
            .clamp(MIN_IDLE_LOCK, MAX_IDLE_LOCK)
    }

    /// The idle time after which the key locks itself.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// Holds `key`, unlocked as of `now`.
    pub fn put(&mut self, key: Keypair, now: Instant) {
        self.key = Some(key);
        self.last_used = now;
    }

    /// Locks: the key is dropped (and zeroed).
    pub fn lock(&mut self) {
        self.key = None;
    }

    /// Whether a key is held and not idle past its time at `now`; a key
    /// idle past it is locked here. Does not count as a use.
    pub fn is_unlocked(&mut self, now: Instant) -> bool {
        self.expire(now);
        self.key.is_some()
    }

    /// The key for a use at `now` (which keeps it unlocked), or `None`
    /// where none is held or it was idle past its time (then locked).
    pub fn use_at(&mut self, now: Instant) -> Option<&Keypair> {
        self.expire(now);
        if self.key.is_some() {
            self.last_used = self.last_used.max(now);
        }
        self.key.as_ref()
    }

    /// The key without a use (a preview reads its did): `None` where none
    /// is held or it was idle past its time (then locked).
    pub fn peek(&mut self, now: Instant) -> Option<&Keypair> {
        self.expire(now);
        self.key.as_ref()
    }

    fn expire(&mut self, now: Instant) {
        if self.key.is_some() && now.saturating_duration_since(self.last_used) >= self.idle {
            self.key = None;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn s34_an_unlocked_key_locks_itself_after_the_idle_time_and_only_a_use_keeps_it() {
        let t0 = Instant::now();
        let mut h = Held::new(Duration::from_secs(60));
        assert!(!h.is_unlocked(t0));
        h.put(Keypair::from_seed([3; 32]).unwrap(), t0);
        assert!(h.is_unlocked(t0 + Duration::from_secs(59)), "looking does not count as a use");
        assert!(h.peek(t0 + Duration::from_secs(59)).is_some(), "nor does a peek");
        assert!(h.use_at(t0 + Duration::from_secs(50)).is_some(), "a use within the idle time");
        assert!(h.is_unlocked(t0 + Duration::from_secs(109)));
        assert!(!h.is_unlocked(t0 + Duration::from_secs(110)), "idle past its time from the last use: locked");
        assert!(h.use_at(t0 + Duration::from_secs(111)).is_none(), "and stays locked");
        h.put(Keypair::from_seed([3; 32]).unwrap(), t0 + Duration::from_secs(200));
        assert!(h.use_at(t0 + Duration::from_secs(260)).is_none(), "a use past the idle time finds it locked");
    }

    #[test]
    fn s34_the_idle_time_is_bounded() {
        assert_eq!(Held::new(Duration::ZERO).idle(), MIN_IDLE_LOCK);
        assert_eq!(Held::new(Duration::from_secs(10 * 24 * 3600)).idle(), MAX_IDLE_LOCK);
        let mut h = Held::new(Duration::from_secs(30));
        h.put(Keypair::from_seed([4; 32]).unwrap(), Instant::now());
        h.lock();
        assert!(!h.is_unlocked(Instant::now()));
    }
}
