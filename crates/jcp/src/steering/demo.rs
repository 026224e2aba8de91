//! A realistic, deterministic long run for demos and the console's demo
//! workspace (§4.7): a steward's grant to a research agent, checkpoints every
//! twenty minutes with a growing declared spend (first unstated, then an
//! estimate, a calibrated model, a hardware reading), one amendment that
//! tightens the budget and hands over new instructions, the continuation
//! grant, and more checkpoints under it. Every key, nonce and figure derives
//! from the seed, so one seed always writes the same bytes.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{AmendInput, CheckpointInput, Run, RunReport, Spent, SteeringError};
use crate::cbor::{ContentId, Value};
use crate::energy::Provenance;
use crate::error::Error;
use crate::grant::{Capability, Grant};
use crate::identity::{Did, Keypair};

/// The demo's clock origin: 2026-01-01T09:00:00Z.
pub const DEMO_START: u64 = 1_767_258_000;

/// The demo grant's budget: 1 kWh = 3.6 MJ, in µJ.
pub const DEMO_BUDGET_UJ: u64 = 3_600_000_000_000;

/// What [`write_demo_run`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DemoSummary {
    /// The file written.
    pub path: PathBuf,
    /// The seed it was derived from.
    pub seed: u64,
    /// The run's grant id.
    pub run_grant: ContentId,
    /// The steward (issuer, amender).
    pub issuer: Did,
    /// The agent (subject, checkpoint author).
    pub agent: Did,
    /// Records in the file (grant, checkpoints, amendment, continuation).
    pub records: usize,
    /// Checkpoints in the run.
    pub checkpoints: usize,
    /// Amendments in the run.
    pub amendments: usize,
    /// Bytes written.
    pub bytes: usize,
    /// Whether the run verifies clean (it always should; the console shows it).
    pub clean: bool,
}

fn derive(seed: u64, what: &str) -> [u8; 32] {
    blake3::derive_key(&format!("jcp-console steering demo v1 {what}"), &seed.to_le_bytes())
}

fn nonce(seed: u64, what: &str) -> [u8; 16] {
    let k = derive(seed, what);
    let mut n = [0u8; 16];
    n.copy_from_slice(&k[..16]);
    n
}

/// A figure in `[base·(1 − 0.2), base·(1 + 0.2)]` drawn from the seed.
fn jitter(seed: u64, what: &str, base: u64) -> u64 {
    let k = derive(seed, what);
    let r = u64::from(u16::from_le_bytes([k[0], k[1]])); // 0..=65535
    let spread = base / 5;
    base - spread + spread.saturating_mul(2).saturating_mul(r) / 65_535
}

fn commit(what: &str) -> ContentId {
    ContentId::of(&Value::text(what))
}

/// The demo's two actors: (steward, agent).
pub fn demo_keys(seed: u64) -> Result<(Keypair, Keypair), Error> {
    Ok((Keypair::from_seed(derive(seed, "steward"))?, Keypair::from_seed(derive(seed, "agent"))?))
}

/// Builds the demo run in memory.
pub fn demo_run(seed: u64) -> Result<Run, Error> {
    let (steward, agent) = demo_keys(seed)?;
    let grant = Grant {
        issuer: steward.did(),
        subject: agent.did(),
        capability: Capability {
            resource: commit("jcp-console/demo/literature-review-agent"),
            actions: vec!["model.infer".into(), "tool.call".into()],
        },
        budget_uj: DEMO_BUDGET_UJ,
        budget_funds: None,
        caveats: vec![],
        expiry: DEMO_START + 6 * 3_600,
        parent: None,
        delegate_depth: Some(0),
        nonce: nonce(seed, "grant"),
    }
    .sign(&steward)?;
    let mut run = Run::new(grant);
    // One checkpoint every 20 minutes; a GPU-backed agent draws ~300 W, so
    // ~360 kJ per interval before the amendment narrows the work.
    let interval = 1_200;
    let mut spent: u64 = 0;
    let mut at = DEMO_START + 60;
    let cp = |run: &mut Run, i: u64, at: u64, spent: Option<Spent>, state: &str| {
        run.checkpoint(
            &agent,
            CheckpointInput {
                state: commit(&format!("demo run {seed}: {state}")),
                at,
                spent,
                nonce: Some(nonce(seed, &format!("checkpoint {i}"))),
            },
        )
        .map(|_| ())
    };
    // seq 0: the plan is committed before any work; no spend is stated
    // (the report shows the remainder as unknown, never as the full budget).
    cp(&mut run, 0, at, None, "plan committed: 40 sources, exhaustive sweep")?;
    let grades = [Provenance::Estimator, Provenance::ModelBased, Provenance::HwShunt];
    for (i, grade) in (1u64..=3).zip(grades) {
        at += interval;
        spent += jitter(seed, &format!("spend {i}"), 360_000_000_000);
        cp(&mut run, i, at, Some(Spent { uj: spent, provenance: grade }), &format!("{} sources read", i * 8))?;
    }
    // The steward steers at seq 3: half of what is left, an earlier expiry,
    // and narrower instructions.
    let remainder = DEMO_BUDGET_UJ.saturating_sub(spent);
    run.amend(
        &steward,
        AmendInput {
            budget_uj: remainder / 2,
            expiry: Some(DEMO_START + 4 * 3_600),
            instructions: Some(commit("instructions v2: top 12 sources only, skip the exhaustive sweep")),
            nonce: Some(nonce(seed, "amendment")),
            continuation_nonce: Some(nonce(seed, "continuation")),
            add_caveats: Vec::new(),
        },
    )?;
    for i in 4u64..=6 {
        at += interval;
        spent += jitter(seed, &format!("spend {i}"), 240_000_000_000);
        cp(
            &mut run,
            i,
            at,
            Some(Spent { uj: spent, provenance: Provenance::HwShunt }),
            &format!("{} of 12 sources summarised", (i - 3) * 4),
        )?;
    }
    Ok(run)
}

/// Writes the demo run to `path` (overwriting) and summarises it. The
/// console's demo workspace calls this on first start.
pub fn write_demo_run(path: &Path, seed: u64) -> Result<DemoSummary, Error> {
    let run = demo_run(seed)?;
    let report: RunReport = run.verify()?;
    let bytes = run.to_bytes();
    std::fs::write(path, &bytes).map_err(|e| SteeringError::Io(format!("writing {}: {e}", path.display())))?;
    Ok(DemoSummary {
        path: path.to_path_buf(),
        seed,
        run_grant: report.run_grant,
        issuer: report.issuer,
        agent: report.agent,
        records: report.records,
        checkpoints: report.checkpoints.len(),
        amendments: report.checkpoints.iter().map(|c| c.amendments.len()).sum(),
        bytes: bytes.len(),
        clean: report.clean,
    })
}
