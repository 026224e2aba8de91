//! A live run as the window shows it (IPC types): its state, the agent's
//! events (one JSON object a line from `jcp agent demo`) as lines a person
//! reads.

use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use crate::format_uj;

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
    /// The endpoint's record (a receipt stream the Auditor opens).
    pub stream: String,
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
    /// The latest events, oldest first.
    pub events: Vec<AgentEventLine>,
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
            Some("allow") => format!(
                "step {}: allowed, debited {}; {} left on grant {}…",
                v["step"],
                u("debited_uj"),
                u("remaining_uj"),
                short("grant")
            ),
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
        _ => v.to_string(),
    };
    AgentEventLine { event, text }
}
