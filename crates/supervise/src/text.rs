//! An agent's event in a line for a terminal (`jcp run live` without
//! `--json`): energy in the one formatter's words, ids whole (the steward
//! copies them into the steering commands).

use jcp::energy::format_uj;
use serde_json::Value;

fn uj(v: &Value, k: &str) -> String {
    v[k].as_u64().map_or_else(|| "?".to_owned(), format_uj)
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("?")
}

/// The endpoint's figure of an allowed call, if the event relays one:
/// `metered 41.000 mJ (Estimator, Partial)`.
fn figure(v: &Value) -> Option<String> {
    let e = v.get("metered").map(|m| &m["energy"]).filter(|e| e.is_object())?;
    Some(format!("metered {} ({}, {})", format_uj(e["uj"].as_u64()?), text(e, "provenance"), text(e, "coverage")))
}

/// One agent event in words.
pub fn event_text(v: &Value) -> String {
    match v["event"].as_str().unwrap_or("") {
        "started" => format!(
            "agent {} started under grant {} ({} ceiling)",
            text(v, "agent"),
            text(v, "grant"),
            uj(v, "budget_uj")
        ),
        "decision" if v["verdict"] == "allow" => {
            let charged = figure(v).map_or_else(String::new, |f| format!("{f}, "));
            let reply = v["reply"].as_str().filter(|r| *r != "done").map_or_else(String::new, |r| format!(" [{r}]"));
            format!(
                "step {}: allow{reply}; {charged}debited {}; {} left",
                v["step"],
                uj(v, "debited_uj"),
                uj(v, "remaining_uj")
            )
        }
        "decision" => format!("step {}: deny ({})", v["step"], text(v, "reason")),
        "checkpoint" => format!(
            "checkpoint {} (seq {}) after step {}: {} spent ({}); waiting for the steward",
            text(v, "id"),
            v["seq"],
            v["step"],
            uj(v, "spent_uj"),
            text(v, "provenance")
        ),
        "continued" => format!(
            "continued under grant {} ({} ceiling), amendment {}",
            text(v, "continuation"),
            uj(v, "budget_uj"),
            text(v, "amendment")
        ),
        "stopped" | "output" | "followed" => text(v, "message").to_owned(),
        _ => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn s11_an_allowed_step_reads_with_the_endpoints_figure() {
        let v = json!({
            "event": "decision", "step": 3, "verdict": "allow", "debited_uj": 41_000, "remaining_uj": 99_000_000,
            "reply": "done", "metered": {"energy": {"uj": 41_000, "provenance": "Estimator", "coverage": "Partial"}},
        });
        assert_eq!(
            event_text(&v),
            "step 3: allow; metered 41.000 mJ (Estimator, Partial), debited 41.000 mJ; 99.000 J left"
        );
        let lost = json!({"event": "decision", "step": 4, "verdict": "allow", "debited_uj": 5, "remaining_uj": 1, "reply": "lost"});
        assert_eq!(event_text(&lost), "step 4: allow [lost]; debited 5 µJ; 1 µJ left");
        let deny = json!({"event": "decision", "step": 5, "verdict": "deny", "reason": "revoked"});
        assert_eq!(event_text(&deny), "step 5: deny (revoked)");
    }

    #[test]
    fn s4_7_a_checkpoint_names_its_id_whole() {
        let id = "ab".repeat(32);
        let v = json!({"event": "checkpoint", "id": id, "seq": 0, "step": 5, "spent_uj": 200_000, "provenance": "Estimator"});
        assert_eq!(
            event_text(&v),
            format!("checkpoint {id} (seq 0) after step 5: 200.000 mJ spent (Estimator); waiting for the steward")
        );
        let v = json!({"event": "stopped", "why": "revoked", "message": "stopped: grant g was revoked"});
        assert_eq!(event_text(&v), "stopped: grant g was revoked");
        assert_eq!(event_text(&json!({"event": "output", "message": "hello"})), "hello");
        assert_eq!(event_text(&json!({"event": "new"})), r#"{"event":"new"}"#);
    }
}
