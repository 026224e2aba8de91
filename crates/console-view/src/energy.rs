//! The live energy view's words (issue 39, "honest headline, human units";
//! §5, §5.1, §5.3): what the figures are, said first and plainly (measured,
//! modelled or estimated, and why a hardware counter is not read); the
//! energy of the windows shown, summed at the floor of their grades and
//! said to be partial where a window has no reading; each window's power.

use std::fmt::Write;

use serde::{Deserialize, Serialize};
#[cfg(test)]
use ts_rs::TS;

use crate::ipc::{Availability, RungRow, WindowRow};
use crate::tags::{Coverage, Provenance, RungStatus};

/// What the figures on screen are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum HeadlineKind {
    /// No meter runs.
    Unavailable,
    /// The meter runs; no window has a reading yet.
    Waiting,
    /// Every reading is from a live hardware counter (`HwShunt`).
    Measured,
    /// Every reading is a model calibrated on this machine (`ModelBased`).
    Modelled,
    /// Every reading is an estimate nothing calibrated (`Estimator`).
    Estimated,
    /// Readings of more than one grade.
    Mixed,
}

/// The headline over the live view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct EnergyHeadline {
    /// What the figures are.
    pub kind: HeadlineKind,
    /// The same, in words, with why.
    pub text: String,
}

/// The energy of the windows shown, summed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SpanTotal {
    /// The sum in words, with its grade and what it leaves out.
    pub text: String,
    /// The sum, µJ, of the windows that have a reading.
    #[cfg_attr(test, ts(type = "number"))]
    pub uj: u64,
    /// The grade of the sum: the lowest of its windows' (§5.3); `None` when no window has a reading.
    pub provenance: Option<Provenance>,
    /// Windows shown without a reading (the sum leaves them out: it is then at least, not all).
    pub unread: u32,
    /// Windows whose reading covers only part of the machine.
    pub partial: u32,
}

/// The headline: what the windows' readings are, and for an estimate, why
/// no hardware counter is read (each hardware rung declined, with why).
pub fn headline(meter: &Availability, windows: &[WindowRow], ladder: &[RungRow]) -> EnergyHeadline {
    if !meter.available {
        let why = meter.reason.as_deref().unwrap_or("no reason given");
        return EnergyHeadline {
            kind: HeadlineKind::Unavailable,
            text: format!("Live metering is not available: {why}."),
        };
    }
    let graded: Vec<Provenance> = windows.iter().filter_map(|w| w.provenance).collect();
    let (hw, model, est) = graded.iter().fold((0, 0, 0), |(h, m, e), p| match p {
        Provenance::HwShunt => (h + 1, m, e),
        Provenance::ModelBased => (h, m + 1, e),
        Provenance::Estimator => (h, m, e + 1),
    });
    let chosen = ladder.iter().find(|r| r.status == RungStatus::Chosen);
    let chosen_name = chosen.map_or("the chosen rung", |r| r.name.as_str());
    let (kind, mut text) = if graded.is_empty() {
        (HeadlineKind::Waiting, "No window has a reading yet.".to_owned())
    } else if hw == graded.len() {
        (HeadlineKind::Measured, format!("Measured: a live hardware counter ({chosen_name})."))
    } else if model == graded.len() {
        (
            HeadlineKind::Modelled,
            format!("Modelled: {chosen_name}, a model calibrated on this machine, not a hardware reading."),
        )
    } else if est == graded.len() {
        // The counters this machine has but refused, by name (their why and
        // fix are in the ladder); those it does not have are not news.
        let declined: Vec<&str> = ladder
            .iter()
            .filter(|r| r.provenance == Some(Provenance::HwShunt) && r.status == RungStatus::Declined)
            .map(|r| r.name.as_str())
            .collect();
        let why = if declined.is_empty() {
            "no hardware energy counter on this machine".to_owned()
        } else {
            format!(
                "no hardware counter is read on this machine ({} declined: why and fix in the ladder)",
                declined.join(", ")
            )
        };
        let how = chosen.map_or(String::new(), |r| format!(" Each figure is {}, never a measurement.", r.why));
        (HeadlineKind::Estimated, format!("Estimated: {why}.{how}"))
    } else {
        (
            HeadlineKind::Mixed,
            format!(
                "Mixed: of the last {} windows with a reading, {hw} measured, {model} modelled and {est} estimated; each window says which.",
                graded.len()
            ),
        )
    };
    let partial = windows.iter().filter(|w| w.coverage == Some(Coverage::Partial)).count();
    if partial > 0 {
        let _ = write!(
            text,
            " {} only part of the machine (Partial).",
            crate::plural(partial as u64, "window covers", "windows cover")
        );
    }
    EnergyHeadline { kind, text }
}

/// The energy of `windows` summed, at the floor of their grades (§5.3); a
/// window without a reading is left out and the sum says it is "at least".
pub fn span_total(windows: &[WindowRow]) -> SpanTotal {
    let read: Vec<&WindowRow> = windows.iter().filter(|w| w.energy_uj.is_some()).collect();
    let uj = read.iter().filter_map(|w| w.energy_uj).fold(0u64, u64::saturating_add);
    // The floor is the protocol's own order (`jcp::energy::Provenance`: `min` is the floor).
    let provenance = read
        .iter()
        .filter_map(|w| w.provenance)
        .filter_map(|p| jcp::energy::Provenance::parse(p.as_str()))
        .min()
        .map(Provenance::from);
    let unread = u32::try_from(windows.len() - read.len()).unwrap_or(u32::MAX);
    let partial =
        u32::try_from(read.iter().filter(|w| w.coverage == Some(Coverage::Partial)).count()).unwrap_or(u32::MAX);
    let span_ms = match (windows.first(), windows.last()) {
        (Some(a), Some(b)) => b.end_ms.saturating_sub(a.start_ms),
        _ => 0,
    };
    let text = match provenance {
        None => {
            format!("No energy read in the last {} shown.", crate::plural(windows.len() as u64, "window", "windows"))
        }
        Some(p) => {
            let grade = match p {
                Provenance::HwShunt => "measured",
                Provenance::ModelBased => "modelled",
                Provenance::Estimator => "estimated",
            };
            let at_least = if unread > 0 || partial > 0 { "at least " } else { "" };
            let mut t = format!(
                "{at_least}{} {grade} over the last {} ({} s)",
                crate::format_uj(uj),
                crate::plural(windows.len() as u64, "window", "windows"),
                span_ms / 1000
            );
            if let Some(w) = jcp::energy::format_power(uj, span_ms).filter(|_| unread == 0) {
                let _ = write!(t, ", {w} on average");
            }
            if unread > 0 {
                let _ = write!(
                    t,
                    "; {} without a reading not in it",
                    crate::plural(u64::from(unread), "window", "windows")
                );
            }
            if partial > 0 {
                let _ = write!(
                    t,
                    "; {} only part of the machine",
                    crate::plural(u64::from(partial), "window covers", "windows cover")
                );
            }
            t.push('.');
            t
        }
    };
    SpanTotal { text, uj, provenance, unread, partial }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(seq: i64, uj: Option<u64>, p: Option<Provenance>, c: Option<Coverage>) -> WindowRow {
        WindowRow {
            seq,
            start_ms: 1_000 * seq as u64,
            end_ms: 1_000 * (seq as u64 + 1),
            energy_uj: uj,
            energy_text: uj.map(crate::format_uj),
            power_text: uj.and_then(|u| jcp::energy::format_power(u, 1_000)),
            provenance: p,
            coverage: c,
            rung: Some("estimate".into()),
        }
    }

    fn rung(name: &str, status: RungStatus, p: Provenance, why: &str) -> RungRow {
        RungRow { name: name.into(), status, provenance: Some(p), why: why.into(), fix: None }
    }

    const ON: Availability = Availability { available: true, reason: None };

    #[test]
    fn s5_1_all_estimates_are_headlined_estimated_with_why_no_counter_is_read() {
        let ws = [w(1, Some(1_000_000), Some(Provenance::Estimator), Some(Coverage::Whole))];
        let ladder = [
            rung("rapl", RungStatus::Declined, Provenance::HwShunt, "permission denied reading energy_uj"),
            rung("estimate", RungStatus::Chosen, Provenance::Estimator, "CPU time × a default power"),
        ];
        let h = headline(&ON, &ws, &ladder);
        assert_eq!(h.kind, HeadlineKind::Estimated);
        assert_eq!(
            h.text,
            "Estimated: no hardware counter is read on this machine (rapl declined: why and fix in the ladder). Each figure is CPU time × a default power, never a measurement."
        );
        assert!(!h.text.contains("live"), "never 'metering live' over estimates: {}", h.text);
        // A counter the machine does not have is not news: only a declined one is named.
        let none = [
            rung("ioreport", RungStatus::Unavailable, Provenance::HwShunt, "exists only on macOS"),
            rung("estimate", RungStatus::Chosen, Provenance::Estimator, "CPU time × a default power"),
        ];
        assert!(headline(&ON, &ws, &none).text.starts_with("Estimated: no hardware energy counter on this machine."));
    }

    #[test]
    fn s5_headline_says_measured_mixed_partial_waiting_and_unavailable() {
        let hw = [w(1, Some(5), Some(Provenance::HwShunt), Some(Coverage::Whole))];
        let ladder = [rung("rapl", RungStatus::Chosen, Provenance::HwShunt, "live")];
        assert_eq!(headline(&ON, &hw, &ladder).text, "Measured: a live hardware counter (rapl).");
        let mixed = [
            w(1, Some(5), Some(Provenance::HwShunt), Some(Coverage::Whole)),
            w(2, Some(5), Some(Provenance::Estimator), Some(Coverage::Partial)),
            w(3, None, None, None),
        ];
        let h = headline(&ON, &mixed, &ladder);
        assert_eq!(h.kind, HeadlineKind::Mixed);
        assert!(
            h.text.contains("1 measured, 0 modelled and 1 estimated") && h.text.contains("1 window covers only part"),
            "{}",
            h.text
        );
        assert_eq!(headline(&ON, &[w(1, None, None, None)], &ladder).kind, HeadlineKind::Waiting);
        let off = Availability { available: false, reason: Some("the meter is starting".into()) };
        assert_eq!(headline(&off, &hw, &ladder).text, "Live metering is not available: the meter is starting.");
    }

    #[test]
    fn s5_3_the_total_is_at_the_floor_of_its_grades_and_at_least_where_a_window_is_unread() {
        let ws = [
            w(1, Some(1_500_000), Some(Provenance::HwShunt), Some(Coverage::Whole)),
            w(2, Some(500_000), Some(Provenance::Estimator), Some(Coverage::Whole)),
        ];
        let t = span_total(&ws);
        assert_eq!((t.uj, t.provenance, t.unread), (2_000_000, Some(Provenance::Estimator), 0));
        assert_eq!(t.text, "2.000 J estimated over the last 2 windows (2 s), 1.000 W on average.");
        let gap = [ws[0].clone(), w(2, None, None, None)];
        let t = span_total(&gap);
        assert_eq!(
            t.text,
            "at least 1.500 J measured over the last 2 windows (2 s); 1 window without a reading not in it."
        );
        assert_eq!(span_total(&[w(1, None, None, None)]).text, "No energy read in the last 1 window shown.");
    }
}
