//! §5 liveness: a vendor counter earns a hardware grade only while it is
//! demonstrably live — observed advancing in at least 5 sample intervals, in
//! at least 4 of every 5, over at least 300 ms. Where a figure sums several
//! counters (one RAPL package per socket), every one must be live.
//!
//! [`judge`] rules on one observation (the probe's). [`LiveTracker`] applies
//! the same rule over the life of the meter, interval by interval, so that a
//! counter which freezes or turns lumpy after the probe stops grading windows
//! as hardware (docs/decisions.md, "§5 liveness over the life of the meter").

use serde::Serialize;

/// The §5 rule's parameters. [`LivenessRule::SPEC`] is the rule as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LivenessRule {
    /// Advancing intervals needed in all (5).
    pub min_advancing: usize,
    /// Of every `block` consecutive intervals, at least `per_block` advance (4 of 5).
    pub per_block: usize,
    /// The block length (5).
    pub block: usize,
    /// The observation must span at least this long (300 ms).
    pub min_span_ns: u64,
}

impl LivenessRule {
    /// §5: at least 5 intervals, at least 4 of every 5, over at least 300 ms.
    pub const SPEC: Self = Self { min_advancing: 5, per_block: 4, block: 5, min_span_ns: 300_000_000 };
}

/// What one counter did during a liveness observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum LiveStatus {
    /// Live by the rule.
    Live,
    /// Never advanced.
    Frozen,
    /// Advanced, but not in 4 of every 5 intervals: republished in lumps, or
    /// too seldom to be seen live.
    Lumpy {
        /// The fewest advancing intervals found in any block.
        worst_block: usize,
    },
    /// Too few advancing intervals in all.
    TooFewAdvances,
    /// The observation was shorter than the rule's span.
    TooShort,
    /// The counter went backwards where it has no wrap range (NVML: a reset).
    Reset {
        /// The interval (0-based) in which it went backwards.
        interval: usize,
    },
    /// A read failed during the observation.
    Unreadable {
        /// What the read said.
        detail: String,
    },
}

impl LiveStatus {
    /// The stable code (as serialised: `live`, `frozen`, `lumpy`,
    /// `too-few-advances`, `too-short`, `reset`, `unreadable`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Frozen => "frozen",
            Self::Lumpy { .. } => "lumpy",
            Self::TooFewAdvances => "too-few-advances",
            Self::TooShort => "too-short",
            Self::Reset { .. } => "reset",
            Self::Unreadable { .. } => "unreadable",
        }
    }

    /// Whether the counter may give a hardware-graded figure.
    pub fn is_live(&self) -> bool {
        matches!(self, Self::Live)
    }
}

/// A counter's liveness record, as the probe reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterLiveness {
    /// The counter (e.g. `package-0`, `gpu0`).
    pub counter: String,
    /// Sample intervals observed.
    pub intervals: usize,
    /// Intervals in which the counter advanced.
    pub advanced: usize,
    /// The span observed, ns.
    pub span_ns: u64,
    /// The verdict.
    #[serde(flatten)]
    pub status: LiveStatus,
}

/// Judges one counter from its samples (`times` ns, raw `values`). A value
/// below its predecessor is a wrap (an advance) when the counter has a
/// `max_range`, and a reset (not live) when it has none.
pub fn judge(
    rule: LivenessRule,
    counter: &str,
    times: &[u64],
    values: &[u64],
    max_range: Option<u64>,
) -> CounterLiveness {
    let n = times.len().min(values.len());
    let intervals = n.saturating_sub(1);
    let span_ns = if n >= 2 { times[n - 1].saturating_sub(times[0]) } else { 0 };
    let mut adv = Vec::with_capacity(intervals);
    let mut reset_at = None;
    for i in 1..n {
        let (a, b) = (values[i - 1], values[i]);
        if b < a && max_range.is_none() && reset_at.is_none() {
            reset_at = Some(i - 1);
        }
        adv.push(b != a);
    }
    let advanced = adv.iter().filter(|a| **a).count();
    let status = if let Some(interval) = reset_at {
        LiveStatus::Reset { interval }
    } else if advanced == 0 {
        LiveStatus::Frozen
    } else {
        let worst_block = if intervals >= rule.block {
            adv.windows(rule.block).map(|w| w.iter().filter(|a| **a).count()).min().unwrap_or(0)
        } else {
            advanced
        };
        if intervals >= rule.block && worst_block < rule.per_block {
            LiveStatus::Lumpy { worst_block }
        } else if advanced < rule.min_advancing {
            LiveStatus::TooFewAdvances
        } else if span_ns < rule.min_span_ns {
            LiveStatus::TooShort
        } else {
            LiveStatus::Live
        }
    };
    CounterLiveness { counter: counter.to_owned(), intervals, advanced, span_ns, status }
}

/// §5 liveness over the life of the meter: the rule of [`judge`] applied to
/// a counter's sample intervals as they come.
///
/// The counter is live while its current *run* — the intervals since it was
/// last out of rule — holds at least `min_advancing` advancing intervals over
/// at least `min_span_ns`, with no `block` consecutive intervals holding
/// fewer than `per_block` advancing ones. An interval that breaks the block
/// rule is a *lapse*: the run starts again after it, and the counter must
/// show itself live again from there, as at the probe. A failed read or a
/// reset starts the run again too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTracker {
    rule: LivenessRule,
    /// The last `block` intervals of the run (true: advanced), oldest first.
    recent: std::collections::VecDeque<bool>,
    /// Intervals in the run.
    intervals: usize,
    /// Advancing intervals in the run.
    advanced: usize,
    /// The run's span, ns.
    span_ns: u64,
    /// Why the run last started again, where it did.
    broke: Option<LiveStatus>,
}

impl LiveTracker {
    /// A counter not yet observed (not live).
    pub fn new(rule: LivenessRule) -> Self {
        Self {
            rule,
            recent: std::collections::VecDeque::with_capacity(rule.block),
            intervals: 0,
            advanced: 0,
            span_ns: 0,
            broke: None,
        }
    }

    /// Records one sample interval of `span_ns` in which the counter did or
    /// did not advance. Returns `false` when this interval put the counter out
    /// of rule (a lapse); the run then starts again after it.
    pub fn observe(&mut self, span_ns: u64, advanced: bool) -> bool {
        if self.recent.len() == self.rule.block.max(1) {
            self.recent.pop_front();
        }
        self.recent.push_back(advanced);
        self.intervals += 1;
        self.advanced += usize::from(advanced);
        self.span_ns = self.span_ns.saturating_add(span_ns);
        let stalled = self.recent.iter().filter(|a| !**a).count();
        if stalled <= self.rule.block.saturating_sub(self.rule.per_block) {
            return true;
        }
        let worst_block = self.recent.len() - stalled;
        let status = if self.advanced == 0 { LiveStatus::Frozen } else { LiveStatus::Lumpy { worst_block } };
        self.restart(status);
        false
    }

    /// Starts the run again (a failed read, a reset): the counter must show itself live again.
    pub fn restart(&mut self, why: LiveStatus) {
        self.recent.clear();
        self.intervals = 0;
        self.advanced = 0;
        self.span_ns = 0;
        self.broke = Some(why);
    }

    /// Whether the counter is live now.
    pub fn is_live(&self) -> bool {
        self.status().is_live()
    }

    /// The verdict now: live, or why not (the lapse that started the run
    /// again while the run is still too young to show anything, or what the
    /// run lacks).
    pub fn status(&self) -> LiveStatus {
        if self.advanced >= self.rule.min_advancing && self.span_ns >= self.rule.min_span_ns {
            return LiveStatus::Live;
        }
        if self.intervals > 0 && self.advanced == 0 {
            return LiveStatus::Frozen;
        }
        match &self.broke {
            Some(why) if self.intervals < self.rule.block => why.clone(),
            _ if self.advanced < self.rule.min_advancing => LiveStatus::TooFewAdvances,
            _ => LiveStatus::TooShort,
        }
    }

    /// Intervals and advancing intervals in the current run.
    pub fn run(&self) -> (usize, usize) {
        (self.intervals, self.advanced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(n: usize, step: u64) -> Vec<u64> {
        (0..n as u64).map(|i| i * step).collect()
    }

    #[test]
    fn s5_liveness_steady_counter_is_live() {
        let v: Vec<u64> = (0..7).map(|i| i * 1000).collect();
        let l = judge(LivenessRule::SPEC, "package-0", &times(7, 60_000_000), &v, Some(u64::MAX));
        assert_eq!(l.status, LiveStatus::Live);
        assert_eq!((l.intervals, l.advanced), (6, 6));
    }

    #[test]
    fn s5_liveness_frozen_counter_is_not_live() {
        let l = judge(LivenessRule::SPEC, "package-1", &times(7, 60_000_000), &[5; 7], Some(100));
        assert_eq!(l.status, LiveStatus::Frozen);
    }

    #[test]
    fn s5_liveness_three_of_five_is_lumpy() {
        // advances in intervals 0,1,3,5,6 of 7: the block 1..=5 has 3.
        let v = [0, 1, 2, 2, 3, 3, 4, 5];
        let l = judge(LivenessRule::SPEC, "c", &times(8, 60_000_000), &v, Some(1000));
        assert_eq!(l.status, LiveStatus::Lumpy { worst_block: 3 });
    }

    #[test]
    fn s5_liveness_four_of_every_five_is_live() {
        let v = [0, 1, 2, 3, 3, 4, 5, 6, 7, 7, 8];
        let l = judge(LivenessRule::SPEC, "c", &times(11, 40_000_000), &v, Some(1000));
        assert_eq!(l.status, LiveStatus::Live, "{l:?}");
    }

    #[test]
    fn s5_liveness_under_300ms_is_too_short() {
        let v: Vec<u64> = (0..7).collect();
        let l = judge(LivenessRule::SPEC, "c", &times(7, 49_000_000), &v, Some(1000));
        assert_eq!(l.status, LiveStatus::TooShort);
    }

    #[test]
    fn s5_liveness_needs_five_advancing_intervals() {
        let v = [0, 1, 2, 3, 4];
        let l = judge(LivenessRule::SPEC, "c", &times(5, 100_000_000), &v, Some(1000));
        assert_eq!(l.status, LiveStatus::TooFewAdvances);
    }

    #[test]
    fn s5_1_rapl_wrap_counts_as_advance() {
        let v = [990, 995, 3, 8, 13, 20, 25];
        let l = judge(LivenessRule::SPEC, "package-0", &times(7, 60_000_000), &v, Some(1000));
        assert_eq!(l.status, LiveStatus::Live);
    }

    #[test]
    fn s5_liveness_tracker_lapses_on_a_freeze_and_must_show_itself_live_again() {
        let mut t = LiveTracker::new(LivenessRule::SPEC);
        assert!(!t.is_live(), "not observed: not live");
        for _ in 0..6 {
            assert!(t.observe(60_000_000, true));
        }
        assert!(t.is_live());
        assert!(t.observe(60_000_000, false), "one stall in five is within the rule");
        assert!(t.is_live());
        assert!(!t.observe(60_000_000, false), "two stalls in five break it");
        assert_eq!(t.status(), LiveStatus::Lumpy { worst_block: 3 });
        assert!(!t.is_live());
        // Frozen from here: never live again while it stays so.
        for _ in 0..6 {
            t.observe(60_000_000, false);
        }
        assert_eq!(t.status(), LiveStatus::Frozen);
        // Moving again: live only once the rule holds over the new run (5 advances, 300 ms).
        for i in 0..5 {
            t.observe(60_000_000, true);
            assert_eq!(t.is_live(), i == 4, "after {} advancing intervals", i + 1);
        }
    }

    #[test]
    fn s5_liveness_tracker_restart_needs_the_rule_again() {
        let mut t = LiveTracker::new(LivenessRule::SPEC);
        for _ in 0..8 {
            t.observe(50_000_000, true);
        }
        assert!(t.is_live());
        t.restart(LiveStatus::Unreadable { detail: "gone".into() });
        assert_eq!(t.status(), LiveStatus::Unreadable { detail: "gone".into() });
        for _ in 0..5 {
            t.observe(50_000_000, true);
        }
        assert_eq!(t.status(), LiveStatus::TooShort, "5 intervals of 50 ms are under 300 ms");
        t.observe(50_000_000, true);
        assert!(t.is_live());
    }

    #[test]
    fn s5_1_nvml_decrease_is_reset_not_wrap() {
        let v = [990, 995, 3, 8, 13, 20, 25];
        let l = judge(LivenessRule::SPEC, "gpu0", &times(7, 60_000_000), &v, None);
        assert_eq!(l.status, LiveStatus::Reset { interval: 1 });
    }
}
