//! The sampler (§5.1 liveness, rung 5): every counter of a rung read at
//! successive instants. The probe judges liveness and plausibility over these
//! samples; the calibration turns them into an active power.

use crate::backend::CounterInfo;
use crate::rapl::{may_hide_a_wrap, wrap_delta};

/// Every counter of one rung, read at successive monotonic instants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterSamples {
    /// When each read was taken, monotonic ns.
    pub times: Vec<u64>,
    /// Per counter (in the rung's counter order), its value at each of `times`, µJ.
    pub values: Vec<Vec<u64>>,
}

impl CounterSamples {
    /// No reads yet of `counters` counters, with room for `reads` reads each.
    pub fn with_capacity(counters: usize, reads: usize) -> Self {
        Self { times: Vec::with_capacity(reads), values: vec![Vec::with_capacity(reads); counters] }
    }

    /// Records one read at `t`: the i-th value goes to the i-th counter (values past the last counter are dropped).
    pub fn record(&mut self, t: u64, read: Vec<u64>) {
        self.times.push(t);
        for (column, x) in self.values.iter_mut().zip(read) {
            column.push(x);
        }
    }

    /// From the first read to the last, ns (0 with fewer than two reads).
    pub fn span_ns(&self) -> u64 {
        self.times.last().copied().unwrap_or(0).saturating_sub(self.times.first().copied().unwrap_or(0))
    }

    /// Counter `c`'s values (empty where the rung has no such counter).
    pub fn of(&self, c: usize) -> &[u64] {
        self.values.get(c).map_or(&[][..], Vec::as_slice)
    }

    /// How far counter `c` (described by `info`) advanced over the samples,
    /// µJ, each step corrected for a wrap at its `max_range_uj`.
    pub fn advance_uj(&self, c: usize, info: &CounterInfo) -> u64 {
        self.of(c)
            .windows(2)
            .map(|w| wrap_delta(w[0], w[1], info.max_range_uj.unwrap_or(u64::MAX)))
            .fold(0u64, u64::saturating_add)
    }

    /// The longest interval in which counter `c`, running over `0..=max` at
    /// no more than `bound_mw`, could have run round its whole range unseen
    /// ([`may_hide_a_wrap`]), ns; `None` where no interval could.
    pub fn hidden_wrap_gap_ns(&self, c: usize, max: u64, bound_mw: u64) -> Option<u64> {
        self.times
            .windows(2)
            .zip(self.of(c).windows(2))
            .filter_map(|(t, v)| {
                let span = t[1].saturating_sub(t[0]);
                may_hide_a_wrap(wrap_delta(v[0], v[1], max), span, max, bound_mw).then_some(span)
            })
            .max()
    }

    /// The last read (instant and one value per counter): where the first window starts.
    pub fn last_read(&self) -> Option<(u64, Vec<u64>)> {
        self.times.last().map(|&t| (t, self.values.iter().map(|v| v.last().copied().unwrap_or(0)).collect()))
    }
}
