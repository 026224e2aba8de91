//! A live run as its supervisor reports it: running, stopped or crashed;
//! what the agent's events add up to; how it ended, in words.

use serde::Serialize;

use crate::Ended;

/// A live run's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// The agent runs.
    Running,
    /// The agent stopped and said why.
    Stopped,
    /// The agent ended without saying why (killed, crashed, or an error).
    Crashed,
}

/// What the agent's events add up to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Allowed decisions.
    pub allowed: u64,
    /// Denied decisions.
    pub denied: u64,
    /// What the agent was debited, µJ.
    pub spent_uj: u64,
    /// The grant the agent now spends under.
    pub grant: Option<String>,
}

/// A live run at one moment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// Running, stopped or crashed.
    pub state: State,
    /// What the events add up to.
    pub tally: Tally,
    /// Why it stopped (the agent's words), or how it ended.
    pub ended: Option<String>,
    /// How the agent's process ended.
    pub exit: Option<Ended>,
    /// The agent's last error output, when it crashed.
    pub stderr: Option<String>,
    /// The agent's events kept, oldest first.
    pub events: Vec<serde_json::Value>,
    /// How many events the agent wrote in all (the kept ones are the last
    /// of them: the first kept is number `events_total - events.len() + 1`).
    pub events_total: u64,
}

/// Whether the agent said it stopped, for a reason other than an error.
fn said_stopped(events: &[serde_json::Value]) -> bool {
    events.iter().any(|v| v["event"] == "stopped" && v["why"] != "error" && v["why"] != "endpoint-error")
}

/// The state: running until the agent ends; then stopped if it said why
/// (not an error), or if the supervisor stopped it (`stopped_by_us`) and it
/// ended by the signal the supervisor sent (SIGTERM, or SIGKILL after the
/// grace): a run the steward stopped is not a crash. Else crashed.
pub(crate) fn state(ended: Option<&Ended>, events: &[serde_json::Value], stopped_by_us: bool) -> State {
    const SIGKILL: i32 = 9;
    const SIGTERM: i32 = 15;
    match ended {
        None => State::Running,
        Some(_) if said_stopped(events) => State::Stopped,
        Some(e) if stopped_by_us && matches!(e.signal, Some(SIGTERM | SIGKILL)) => State::Stopped,
        Some(_) => State::Crashed,
    }
}

/// The decisions allowed and denied, the debits of the allowed, and the
/// grant the agent spends under (its latest decision's, start's or
/// continuation's).
pub(crate) fn tally(events: &[serde_json::Value]) -> Tally {
    let mut t = Tally::default();
    for e in events {
        match e["event"].as_str() {
            Some("decision") => {
                if e["verdict"] == "allow" {
                    t.allowed += 1;
                    t.spent_uj = t.spent_uj.saturating_add(e["debited_uj"].as_u64().unwrap_or(0));
                } else {
                    t.denied += 1;
                }
                t.grant = e["grant"].as_str().map(str::to_owned).or(t.grant);
            }
            Some("started") => t.grant = e["grant"].as_str().map(str::to_owned),
            Some("continued") => t.grant = e["continuation"].as_str().map(str::to_owned),
            _ => {}
        }
    }
    t
}

/// How it ended, in words: the agent's last `stopped` message and how its
/// process ended; `stopped by WHO` where the supervisor stopped it and the
/// agent said nothing.
pub(crate) fn ended_text(
    ended: &Ended,
    state: State,
    events: &[serde_json::Value],
    stopped_by: Option<&str>,
) -> String {
    let said = events.iter().rev().find(|v| v["event"] == "stopped").and_then(|v| v["message"].as_str());
    let how = ended.how();
    match (state, said, stopped_by) {
        (State::Stopped, Some(m), _) => format!("{m} ({how})"),
        (_, Some(m), _) => format!("the agent failed: {m} ({how})"),
        (_, None, Some(who)) => format!("stopped by {who} ({how})"),
        (_, None, None) => format!("the agent ended without saying why ({how}): it crashed or was killed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn allow(grant: &str, uj: u64) -> serde_json::Value {
        json!({"event": "decision", "verdict": "allow", "grant": grant, "debited_uj": uj})
    }

    #[test]
    fn s4_7_the_tally_follows_the_agent_onto_its_continuation() {
        let events = [
            json!({"event": "started", "grant": "g0"}),
            allow("g0", 10),
            allow("g0", 20),
            json!({"event": "checkpoint", "seq": 0}),
            json!({"event": "continued", "continuation": "g1"}),
            json!({"event": "decision", "verdict": "deny", "reason": "budget-exceeded", "grant": "g1"}),
        ];
        assert_eq!(tally(&events), Tally { allowed: 2, denied: 1, spent_uj: 30, grant: Some("g1".into()) });
        assert_eq!(tally(&events[..4]).grant.as_deref(), Some("g0"));
        assert_eq!(tally(&[]), Tally::default());
    }

    #[test]
    fn a_run_is_stopped_when_the_agent_said_why_or_the_steward_stopped_it() {
        let end = Ended { code: Some(1), signal: None };
        let revoked = [json!({"event": "stopped", "why": "revoked", "message": "stopped: grant g was revoked"})];
        let failed = [json!({"event": "stopped", "why": "endpoint-error", "message": "stopped: the endpoint failed"})];
        assert_eq!(state(None, &revoked, false), State::Running);
        assert_eq!(state(Some(&end), &revoked, false), State::Stopped);
        assert_eq!(state(Some(&end), &failed, false), State::Crashed);
        assert_eq!(state(Some(&end), &[], false), State::Crashed);
        // Ended by the supervisor's own SIGTERM (or its SIGKILL after the
        // grace) once it stopped the run: stopped, not crashed. The same
        // signal from anyone else, or an exit of its own, is a crash.
        for sig in [15, 9] {
            let by_signal = Ended { code: None, signal: Some(sig) };
            assert_eq!(state(Some(&by_signal), &[], true), State::Stopped);
            assert_eq!(state(Some(&by_signal), &[], false), State::Crashed);
        }
        assert_eq!(state(Some(&Ended { code: None, signal: Some(11) }), &[], true), State::Crashed);
        assert_eq!(state(Some(&end), &[], true), State::Crashed);
        assert_eq!(ended_text(&end, State::Stopped, &revoked, None), "stopped: grant g was revoked (exit 1)");
        assert_eq!(
            ended_text(&end, State::Crashed, &failed, Some("the console")),
            "the agent failed: stopped: the endpoint failed (exit 1)"
        );
        let killed = Ended { code: None, signal: Some(15) };
        assert_eq!(
            ended_text(&killed, State::Crashed, &[], Some("the console")),
            "stopped by the console (killed by signal 15)"
        );
        assert_eq!(
            ended_text(&killed, State::Crashed, &[], None),
            "the agent ended without saying why (killed by signal 15): it crashed or was killed"
        );
    }
}
