//! An MCP gateway run started from the console (issue 36): the unlocked
//! steward key issues a fresh agent key a root grant, the run file goes into
//! the runs folder, and the window gets the line to paste into the agent's
//! MCP configuration. The work is `jcp_gateway::prepare`, the same function
//! `jcp gateway prepare` runs: a run set up here and one set up on the
//! command line are the same thing. Once the agent's client launches the
//! line, the run shows in the Steward view with its calls (the gateway's
//! log beside the run) and its checkpoints, and approve, amend and revoke
//! act on it through the run file.

use console_store::ItemKind;
use console_view::ipc::UiError;
use console_view::steward::{GatewayForm, GatewayPrepared};

use super::{jcp_binary, StewardState};
use crate::error::{self, CmdResult};
use crate::state::{now_ms, AppState};

/// The folder under the workspace that holds each gateway run's files.
pub const GATEWAY_DIR: &str = "gateway";

/// Sets up a gateway run under the steward's (unlocked) key.
pub fn gateway_prepare(state: &AppState, st: &StewardState, form: &GatewayForm) -> CmdResult<GatewayPrepared> {
    let jcp = jcp_binary()?;
    let stamp = now_ms();
    let input = jcp_gateway::prepare::PrepareInput {
        dir: state.workspace.join(GATEWAY_DIR).join(stamp.to_string()),
        run_path: st.runs_dir.join(format!("gateway-{stamp}.{}", jcp::steering::RUN_EXTENSION)),
        resource: form.resource.clone(),
        actions: form.actions.clone(),
        budget_uj: form.budget_uj,
        lifetime_s: 24 * 3600,
        bindings_json: form.bindings.clone().into_bytes(),
        upstream: form.upstream.clone(),
        checkpoint_every: form.checkpoint_every,
        jcp: jcp.display().to_string(),
    };
    let name = if form.name.trim().is_empty() { "tools" } else { form.name.trim() };
    let done = st.with_key(|k| {
        jcp_gateway::prepare::prepare(&input, k, name).map_err(|e| UiError::new(e.code(), e.to_string()))
    })?;
    let run = done.run.display().to_string();
    let label = format!("gateway run {name} ({})", form.upstream.join(" "));
    let id = state.with_store(|s| {
        let id = s
            .add_item(ItemKind::Run, &label, &run, &serde_json::json!({"source": "gateway", "stream": done.stream}), now_ms())
            .map_err(|e| error::store(&e))?;
        let message = format!("set up an MCP gateway run: grant {} of {} to agent {}", done.grant, console_view::format_uj(form.budget_uj), done.agent);
        s.record_action(now_ms(), "gateway_prepare", &run, &serde_json::json!({"signed_by": st.with_key(|k| Ok(k.did().to_string())).unwrap_or_default(), "message": message}))
            .map_err(|e| error::store(&e))?;
        Ok(id)
    })?;
    Ok(GatewayPrepared {
        id,
        run,
        grant: done.grant,
        agent: done.agent,
        command: done.command,
        args: done.args,
        line: done.line,
        mcp_config: serde_json::to_string_pretty(&done.mcp_config).unwrap_or_default(),
    })
}
