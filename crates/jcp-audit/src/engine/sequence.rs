//! Each steward's records in order (§8.1: the stream is the log): sequence
//! numbers without gaps or re-use, `known_through` markers monotonic (§4.3),
//! and the per-steward lines of the report (C5).

use jcp::identity::did_string_of;

use super::Engine;
use crate::check::Meta;
use crate::codes::FindingCode;
use crate::report::StewardLine;

/// Where one steward's records in one stream have got to.
#[derive(Debug, Default)]
pub(super) struct SeqState {
    /// The highest sequence number seen.
    last: Option<u64>,
    /// The highest `known_through` marker seen.
    last_marker: Option<u64>,
}

/// One steward's records over every stream, and the markers they stated.
#[derive(Debug, Default)]
pub(super) struct StewardAcc {
    /// Signed records it sealed.
    records: u64,
    /// The lowest and highest `known_through` it stated.
    marker: Option<(u64, u64)>,
    /// Its receipts that stated no marker (§4.3: unverifiable).
    pub(super) without_marker: u64,
}

impl Engine {
    /// A signed record's place in its steward's sequence: a re-used or
    /// re-ordered number, a gap not explained by refused records or framing
    /// faults, a missing number, or a marker that went back is a finding.
    #[inline]
    pub(super) fn sequence(&mut self, s: usize, off: u64, meta: &Meta) {
        let sa = self.stewards.entry(meta.steward).or_default();
        sa.records += 1;
        if let Some(k) = meta.known_through {
            sa.marker = Some(sa.marker.map_or((k, k), |(lo, hi)| (lo.min(k), hi.max(k))));
        }
        let st = &mut self.streams[s];
        let refused = std::mem::take(&mut st.refused_since);
        let faults = std::mem::take(&mut st.faults_since);
        let state = st.seq.entry(meta.steward).or_default();
        let mut out: Vec<(FindingCode, String)> = Vec::new();
        match meta.seq {
            None => {
                out.push((FindingCode::UnsequencedRecord, "a signed record without a stream sequence number".into()));
            }
            Some(q) => {
                // A sequence at u64::MAX has no successor: whatever follows is out of order.
                let expected = state.last.map_or(Some(0), |l| l.checked_add(1)).unwrap_or(u64::MAX);
                if q < expected || state.last == Some(u64::MAX) {
                    out.push((
                        FindingCode::OutOfOrder,
                        format!("sequence {q} after {}: re-ordered or re-used", state.last.unwrap_or_default()),
                    ));
                } else if q > expected {
                    let missing = q - expected;
                    if faults == 0 && missing > refused {
                        out.push((
                            FindingCode::SequenceGap,
                            format!("{} record(s) missing before sequence {q}", missing - refused),
                        ));
                    }
                }
                state.last = Some(state.last.map_or(q, |l| l.max(q)));
            }
        }
        if let Some(k) = meta.known_through {
            if let Some(prev) = state.last_marker {
                if k < prev {
                    out.push((
                        FindingCode::MarkerRegressed,
                        format!("known_through {k} after {prev}: the marker must be monotonic (§4.3)"),
                    ));
                }
            }
            state.last_marker = Some(state.last_marker.map_or(k, |p| p.max(k)));
        }
        for (code, msg) in out {
            self.finding(s, off, code, msg);
        }
    }

    /// One line per steward, sorted by did (finishing step).
    pub(super) fn steward_lines(&mut self) -> Vec<StewardLine> {
        let mut stewards: Vec<StewardLine> = std::mem::take(&mut self.stewards)
            .into_iter()
            .map(|(d, a)| StewardLine {
                steward: did_string_of(&d),
                records: a.records,
                known_through: a.marker,
                receipts_without_marker: a.without_marker,
            })
            .collect();
        stewards.sort_by(|a, b| a.steward.cmp(&b.steward));
        stewards
    }
}
