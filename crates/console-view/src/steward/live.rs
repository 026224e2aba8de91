//! A live run as the window shows it (IPC types): its state, the agent's
//! events (one JSON object a line from `jcp agent demo`) as lines a person
//! reads, and each call the endpoint ran behind its gate with the figure it
//! metered (§11 "the cost is the holder's measurement"; §5.2 coverage).

use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use crate::format_uj;
use crate::tags::{Coverage, Provenance};

/// A live run's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum LiveState {
    /// The agent runs.
    Running,
    /// The agent stopped and said why.
    Stopped,
    /// The agent ended without saying why (killed, crashed, or an error).
    Crashed,
}

/// One line of the agent's account of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AgentEventLine {
    /// The event (`decision`, `checkpoint`, `continued`, `stopped`, …).
    pub event: String,
    /// In words.
    pub text: String,
}

/// A live run on the console's embedded endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct LiveView {
    /// Running, stopped or crashed.
    pub state: LiveState,
    /// The endpoint's address.
    pub endpoint: String,
    /// The endpoint's record (a receipt stream the Auditor opens), to show.
    pub stream: String,
    /// Its handle (issue 34): what the Auditor is asked to open; set by the shell.
    pub stream_handle: String,
    /// The agent's did.
    pub agent: String,
    /// The grant the agent now spends under.
    pub grant: Option<String>,
    /// Allowed decisions this session.
    #[cfg_attr(test, ts(type = "number"))]
    pub allowed: u64,
    /// Denied decisions this session.
    #[cfg_attr(test, ts(type = "number"))]
    pub denied: u64,
    /// What the agent was debited this session, in words.
    pub spent: String,
    /// The calls the endpoint ran and metered behind its gate, the newest
    /// [`METERED_KEPT`], oldest first.
    pub metered: Vec<MeteredCall>,
    /// What the metered figures add up to, in words — never a total where
    /// any of them is `Partial` (§5.2). `None` before the first call.
    pub metered_note: Option<String>,
    /// The latest events, oldest first.
    pub events: Vec<AgentEventLine>,
    /// The number of the first of `events` among every event the agent
    /// wrote (1-based): a list shows the run's own numbering, not 1 again
    /// after older events were dropped.
    #[cfg_attr(test, ts(type = "number"))]
    pub events_first: u64,
    /// Why it stopped (the agent's words), or how it ended.
    pub ended: Option<String>,
    /// The agent's last error output, when it crashed.
    pub stderr: Option<String>,
}

/// An agent's JSON event line in words (the console's live panel).
pub fn event_line(v: &serde_json::Value) -> AgentEventLine {
    let s = |k: &str| v[k].as_str().unwrap_or("").to_owned();
    let u = |k: &str| v[k].as_u64().map_or_else(|| "?".to_owned(), format_uj);
    let short = |k: &str| s(k).chars().take(12).collect::<String>();
    let event = s("event");
    let text = match event.as_str() {
        "started" => format!("started under grant {}… with a ceiling of {}", short("grant"), u("budget_uj")),
        "decision" => match v["verdict"].as_str() {
            Some("allow") => match metered_call(v) {
                Some(c) if c.charged.is_none() => format!(
                    "step {}: allowed, but the call was {} behind the gate (metered {}, {}, {}); nothing charged, its reservation of {} stays debited",
                    v["step"],
                    c.state,
                    c.energy_text,
                    c.provenance.as_str(),
                    c.coverage.as_str(),
                    u("reserved_uj")
                ),
                Some(c) => format!(
                    "step {}: allowed; the endpoint metered {} ({}, {}) and debited {}; {} left on grant {}…",
                    v["step"],
                    c.energy_text,
                    c.provenance.as_str(),
                    c.coverage.as_str(),
                    u("debited_uj"),
                    u("remaining_uj"),
                    short("grant")
                ),
                None => format!(
                    "step {}: allowed, debited {}; {} left on grant {}…",
                    v["step"],
                    u("debited_uj"),
                    u("remaining_uj"),
                    short("grant")
                ),
            },
            _ => format!("step {}: denied ({})", v["step"], s("reason")),
        },
        "checkpoint" => format!(
            "checkpoint seq {} after step {}: spent {} ({}); waiting for the steward",
            v["seq"],
            v["step"],
            u("spent_uj"),
            s("provenance")
        ),
        "continued" => format!("continued under grant {}… with a ceiling of {}", short("continuation"), u("budget_uj")),
        "stopped" => s("message"),
        // The supervisor's and the agent's other lines say themselves in
        // `message` (issue 39: a line reads as words, never as raw JSON);
        // only an event with no words at all is shown as it came.
        _ => v["message"].as_str().map_or_else(|| v.to_string(), str::to_owned),
    };
    AgentEventLine { event, text }
}

/// How many metered calls a live view lists.
pub const METERED_KEPT: usize = 30;

/// A gap the endpoint's meter named in a call's figure (§5.1, §5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MeteredGap {
    /// The stable code (`reaped-in-span`, `not-declared-self-contained`, …).
    pub code: String,
    /// What was seen.
    pub detail: String,
}

/// One call of a live run that the endpoint ran behind its gate, metered
/// and charged (§11 relay mode): the figure as the endpoint metered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MeteredCall {
    /// The agent's step.
    #[cfg_attr(test, ts(type = "number"))]
    pub step: u64,
    /// The reply's state (`done`, `failed`, `lost`, …).
    pub state: String,
    /// The metered figure, µJ.
    #[cfg_attr(test, ts(type = "number"))]
    pub energy_uj: u64,
    /// The figure in words (`jcp::energy::format_uj`).
    pub energy_text: String,
    /// How it was obtained.
    pub provenance: Provenance,
    /// How much of the work it covers: a `Partial` figure is never a total.
    pub coverage: Coverage,
    /// Which rung of the ladder metered it (`rapl`, `calibrated`, `estimate`, …).
    pub rung: String,
    /// The work's CPU time over the span, ms.
    #[cfg_attr(test, ts(type = "number"))]
    pub cpu_ms: u64,
    /// The gaps the meter named.
    pub gaps: Vec<MeteredGap>,
    /// What the verified charge receipt debited, in words; `None` when
    /// nothing was charged (a lost call: its reservation stays debited).
    pub charged: Option<String>,
    /// A breach the charge recorded (`budget-exceeded`: metered above what
    /// was reserved, debited whole).
    pub breach: Option<String>,
}

/// The metered call an agent's `decision` event reports, if it reports one
/// (an allow the endpoint relayed; a deny has none). A figure whose grade
/// or coverage cannot be read is not shown at all rather than shown as
/// something it may not be.
pub fn metered_call(v: &serde_json::Value) -> Option<MeteredCall> {
    if v["event"] != "decision" {
        return None;
    }
    let charge = v.get("charge").filter(|c| c.is_object());
    metered_figure(
        v.get("metered")?,
        v["step"].as_u64().unwrap_or(0),
        v["reply"].as_str().unwrap_or("?"),
        charge.and_then(|c| c["cost_uj"].as_u64()),
        charge.and_then(|c| c["breach"].as_str()).map(str::to_owned),
    )
}

/// A call's metered figure (`jcp_wire::metering::CallFigure` as JSON),
/// with what its verified charge debited. `None` where the figure's grade
/// or coverage cannot be read: it is not shown rather than shown as
/// something it may not be.
pub(crate) fn metered_figure(
    m: &serde_json::Value,
    step: u64,
    state: &str,
    charged_uj: Option<u64>,
    breach: Option<String>,
) -> Option<MeteredCall> {
    let m = Some(m).filter(|m| m.is_object())?;
    let e = &m["energy"];
    let energy_uj = e["uj"].as_u64()?;
    let provenance = jcp::energy::Provenance::parse(e["provenance"].as_str()?)?.into();
    let coverage = match e["coverage"].as_str()? {
        "Whole" => Coverage::Whole,
        "Partial" => Coverage::Partial,
        _ => return None,
    };
    let gaps = m["gaps"]
        .as_array()
        .map(|gs| {
            gs.iter()
                .map(|g| MeteredGap {
                    code: g["code"].as_str().unwrap_or("unnamed").to_owned(),
                    detail: g["detail"].as_str().unwrap_or("").to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(MeteredCall {
        step,
        state: state.to_owned(),
        energy_uj,
        energy_text: format_uj(energy_uj),
        provenance,
        coverage,
        rung: m["rung"].as_str().unwrap_or("?").to_owned(),
        cpu_ms: m["cpu_ns"].as_u64().unwrap_or(0) / 1_000_000,
        gaps,
        charged: charged_uj.map(format_uj),
        breach,
    })
}

/// What a list of figures adds up to: a total only where every figure is
/// `Whole`; otherwise the sum is named as what it is, never as the work's
/// total (§5.2). `None` for no figure.
pub(crate) fn sum_note(all: &[MeteredCall], what: &str) -> Option<String> {
    if all.is_empty() {
        return None;
    }
    let sum = all.iter().fold(0u64, |a, c| a.saturating_add(c.energy_uj));
    let partial = all.iter().filter(|c| c.coverage == Coverage::Partial).count();
    let n = all.len();
    let calls = if n == 1 { "1 call".to_owned() } else { format!("{n} calls") };
    Some(if partial == 0 {
        format!("{calls} metered {what}: {} in all", format_uj(sum))
    } else {
        format!(
            "{calls} metered {what}; {partial} of them Partial, so their sum ({}) covers only part of the work and is not its total",
            format_uj(sum)
        )
    })
}

/// The metered calls among an agent's events (the newest [`METERED_KEPT`])
/// and what their figures add up to: a total only where every figure is
/// `Whole`; otherwise the sum is named as what it is, and never as the
/// work's total (§5.2).
pub fn metered_calls(events: &[serde_json::Value]) -> (Vec<MeteredCall>, Option<String>) {
    let all: Vec<MeteredCall> = events.iter().filter_map(metered_call).collect();
    let note = sum_note(&all, "behind the gate");
    let start = all.len().saturating_sub(METERED_KEPT);
    (all[start..].to_vec(), note)
}

/// A live run's latest metered call in a line (under the energy view's
/// windows): `live run NAME, step 5: 325.000 mJ (Estimator, Partial — part
/// of the call's work; gaps: …), metered by its endpoint; 5 calls so far`.
pub fn metered_line(run: &str, calls: &[MeteredCall]) -> Option<String> {
    let c = calls.last()?;
    let coverage = match c.coverage {
        Coverage::Whole => "Whole".to_owned(),
        Coverage::Partial => "Partial — part of the call's work".to_owned(),
    };
    let gaps: Vec<&str> = c.gaps.iter().map(|g| g.code.as_str()).collect();
    let gaps = if gaps.is_empty() { String::new() } else { format!("; gaps: {}", gaps.join(", ")) };
    Some(format!(
        "{run}, step {}: {} ({}, {coverage}{gaps}), metered by its endpoint behind the gate",
        c.step,
        c.energy_text,
        c.provenance.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39: every line of the live run's log reads as words; the
    /// supervisor's `followed` events say what it fed the endpoint.
    #[test]
    fn a_followed_event_reads_as_its_words_not_as_json() {
        let v = serde_json::json!({"event": "followed", "what": "amendment", "continuation": "84235ade",
            "message": "the supervisor fed the steward's amendment to the endpoint: the run goes on under 84235ade"});
        let l = event_line(&v);
        assert_eq!(l.event, "followed");
        assert_eq!(
            l.text,
            "the supervisor fed the steward's amendment to the endpoint: the run goes on under 84235ade"
        );
        let bare = event_line(&serde_json::json!({"event": "novel", "n": 1}));
        assert!(bare.text.contains("\"novel\""), "{}", bare.text);
    }
    use serde_json::json;

    fn decision(step: u64, uj: u64, coverage: &str, gaps: &[&str]) -> serde_json::Value {
        json!({
            "event": "decision", "step": step, "verdict": "allow", "debited_uj": uj, "reserved_uj": 5_000_000,
            "reply": "done",
            "metered": {
                "energy": {"uj": uj, "provenance": "Estimator", "coverage": coverage, "measured": null},
                "gaps": gaps.iter().map(|g| json!({"code": g, "detail": format!("{g} seen")})).collect::<Vec<_>>(),
                "cpu_ns": 21_000_000u64, "wall_ns": 22_000_000u64, "rung": "estimate", "members": 1
            },
            "charge": {"id": "ab", "cost_uj": uj, "provenance": "Estimator", "coverage": coverage, "measured_uj": null, "breach": null},
        })
    }

    #[test]
    fn s11_each_relayed_call_is_listed_with_the_endpoints_figure_and_its_gaps() {
        let c = metered_call(&decision(3, 189_000, "Partial", &["not-declared-self-contained"])).unwrap();
        assert_eq!((c.step, c.energy_uj, c.energy_text.as_str()), (3, 189_000, "189.000 mJ"));
        assert_eq!((c.provenance, c.coverage, c.cpu_ms), (Provenance::Estimator, Coverage::Partial, 21));
        assert_eq!(
            c.gaps,
            vec![MeteredGap {
                code: "not-declared-self-contained".into(),
                detail: "not-declared-self-contained seen".into()
            }]
        );
        assert_eq!((c.charged.as_deref(), c.breach), (Some("189.000 mJ"), None));
        // A deny, or a decision with no relayed figure, lists no call.
        assert!(
            metered_call(&json!({"event": "decision", "step": 4, "verdict": "deny", "reason": "revoked"})).is_none()
        );
        assert!(metered_call(&json!({"event": "checkpoint", "metered": {}})).is_none());
    }

    #[test]
    fn s5_a_figure_whose_grade_or_coverage_cannot_be_read_is_not_shown() {
        let mut v = decision(1, 10, "Whole", &[]);
        v["metered"]["energy"]["provenance"] = json!("Measured");
        assert!(metered_call(&v).is_none(), "no grade the console does not know");
        let mut v = decision(1, 10, "Whole", &[]);
        v["metered"]["energy"]["coverage"] = json!(null);
        assert!(metered_call(&v).is_none(), "no coverage: not shown as Whole");
    }

    #[test]
    fn s5_2_the_energy_views_line_names_a_partial_figure_as_part_of_the_call() {
        let (calls, _) =
            metered_calls(&[decision(1, 1_000, "Whole", &[]), decision(2, 325_000, "Partial", &["reaped-in-span"])]);
        assert_eq!(
            metered_line("live run 17", &calls).as_deref(),
            Some("live run 17, step 2: 325.000 mJ (Estimator, Partial — part of the call's work; gaps: reaped-in-span), metered by its endpoint behind the gate")
        );
        assert_eq!(metered_line("live run 17", &[]), None);
    }

    #[test]
    fn s4_11_a_lost_call_shows_its_figure_and_nothing_charged() {
        let mut v = decision(2, 70, "Partial", &[]);
        v["reply"] = json!("lost");
        v["charge"] = json!(null);
        let c = metered_call(&v).unwrap();
        assert_eq!((c.state.as_str(), c.charged), ("lost", None));
    }

    #[test]
    fn s5_2_partial_figures_are_never_summed_into_a_total() {
        let (calls, note) = metered_calls(&[decision(1, 1_000, "Whole", &[]), decision(2, 2_000, "Whole", &[])]);
        assert_eq!(calls.len(), 2);
        assert_eq!(note.as_deref(), Some("2 calls metered behind the gate: 3.000 mJ in all"));
        let (_, note) =
            metered_calls(&[decision(1, 1_000, "Whole", &[]), decision(2, 2_000, "Partial", &["reaped-in-span"])]);
        let note = note.unwrap();
        assert!(note.contains("1 of them Partial") && note.contains("is not its total"), "{note}");
        assert!(!note.contains("in all"), "{note}");
        assert_eq!(metered_calls(&[]), (Vec::new(), None));
        // Only the newest are listed; the note counts them all.
        let many: Vec<_> = (1..=40).map(|i| decision(i, 1, "Whole", &[])).collect();
        let (calls, note) = metered_calls(&many);
        assert_eq!((calls.len(), calls[0].step), (METERED_KEPT, 11));
        assert!(note.unwrap().starts_with("40 calls"));
    }
}
