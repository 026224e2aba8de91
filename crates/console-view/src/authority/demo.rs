//! The demo workspace's authority runs (§2.1, §2.2, §4.6): three runs whose
//! grants a steward meets differently, each in its own folder with the
//! material the console reads beside it. Real keys, real signatures, real
//! FROST shares; every key, nonce and figure derives from fixed labels, so
//! the same files are written every time.
//!
//! | folder | the run's issuer |
//! |---|---|
//! | `rotated/` | a steward that rotated its key twice: its key log, a grant, checkpoints, an amendment and continuation signed by the current key |
//! | `threshold/` | a 2-of-3 FROST group (trusted dealer): the grant is the aggregate of shareholders 1 and 3 |
//! | `standing/` | a standing grant fired three times by its mint policy: the run's grant is the third child; the ledger beside it |

use std::path::{Path, PathBuf};

use jcp::cbor::{ContentId, Value};
use jcp::energy::Provenance;
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp::rotation::{issue_grant, KeyLog, KeyRing, KEYLOG_EXTENSION};
use jcp::standing::{EventClass, FiringRequest, MintLedger, MintPolicy};
use jcp::steering::{AmendInput, CheckpointInput, Run, Spent, RUN_EXTENSION};
use jcp_threshold::rand_core::SeedableRng;
use jcp_threshold::{dealer, sign, ParticipantFile};

use crate::ViewError;

/// The demo clock: 2026-01-01T09:00:00Z (as the steering demo).
const START: u64 = jcp::steering::demo::DEMO_START;

fn derive(what: &str) -> [u8; 32] {
    ContentId::of_bytes(format!("jcp-console authority demo v1 {what}").as_bytes()).0
}

fn nonce(what: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    n.copy_from_slice(&derive(what)[..16]);
    n
}

fn key(what: &str) -> Result<Keypair, jcp::Error> {
    Ok(Keypair::from_seed(derive(what))?)
}

fn commit(what: &str) -> ContentId {
    ContentId::of(&Value::text(what))
}

fn grant(issuer: &Keypair, subject: &Keypair, budget_uj: u64, what: &str) -> Grant {
    Grant {
        issuer: issuer.did(),
        subject: subject.did(),
        capability: Capability {
            resource: commit(&format!("jcp-console/demo/{what}")),
            actions: vec!["model.infer".into()],
        },
        budget_uj,
        budget_funds: None,
        caveats: vec![],
        expiry: START + 8 * 3_600,
        parent: None,
        delegate_depth: Some(0),
        nonce: nonce(what),
    }
}

/// Checkpoints every 20 minutes, each stating `step` µJ more (estimator-graded).
fn checkpoints(run: &mut Run, agent: &Keypair, what: &str, from: u64, n: u64, step: u64) -> Result<(), jcp::Error> {
    for i in 0..n {
        let spent = step * (from + i + 1);
        run.checkpoint(
            agent,
            CheckpointInput {
                state: commit(&format!("{what}: step {}", from + i + 1)),
                at: START + 60 + 1_200 * (from + i),
                spent: Some(Spent { uj: spent, provenance: Provenance::Estimator }),
                nonce: Some(nonce(&format!("{what} checkpoint {}", from + i))),
            },
        )?;
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), ViewError> {
    let w = |e: std::io::Error| ViewError::DemoWrite { path: path.to_path_buf(), detail: e.to_string() };
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(w)?;
    }
    let part = path.with_extension("part");
    std::fs::write(&part, bytes).map_err(w)?;
    std::fs::rename(&part, path).map_err(w)
}

fn core(e: &jcp::Error) -> ViewError {
    ViewError::Demo(format!("{e} ({})", e.code()))
}

/// The rotated steward's run and its key log: (run, log).
pub fn rotated() -> Result<(Run, KeyLog), jcp::Error> {
    let (id, k1, k2, k3, agent) = (
        key("steward identity")?,
        key("steward key 1")?,
        key("steward key 2")?,
        key("steward key 3")?,
        key("rotated agent")?,
    );
    let mut log = KeyLog::incept(&id, &k1.did(), Some(nonce("inception")));
    log.rotate(&k1, &k2.did(), Some(nonce("rotation 1")))?;
    let state = log.rotate(&k2, &k3.did(), Some(nonce("rotation 2")))?;
    let mut ring = KeyRing::new();
    ring.add(&log)?;
    let g = issue_grant(grant(&id, &agent, 1_800_000_000_000, "rotated-steward/summariser"), &k2, &state)?;
    let mut run = Run::new(g).with_key_ring(ring);
    checkpoints(&mut run, &agent, "rotated", 0, 3, 240_000_000_000)?;
    run.amend_as(
        &id.did(),
        &k2,
        AmendInput {
            budget_uj: 600_000_000_000,
            instructions: Some(commit("summarise the three longest reports only")),
            nonce: Some(nonce("rotated amendment")),
            continuation_nonce: Some(nonce("rotated continuation")),
            ..AmendInput::default()
        },
    )?;
    checkpoints(&mut run, &agent, "rotated", 3, 1, 240_000_000_000)?;
    Ok((run, log))
}

/// The threshold steward's run and its group descriptor.
pub fn threshold() -> Result<(Run, jcp_threshold::GroupDescriptor), ViewError> {
    let t = |e: jcp_threshold::ThresholdError| ViewError::Demo(format!("{e} ({})", e.code()));
    let mut rng = rand_chacha::ChaCha20Rng::from_seed(derive("threshold rng"));
    let (group, shares) = dealer::deal(2, 3, &mut rng).map_err(t)?;
    let agent = key("threshold agent").map_err(|e| core(&e))?;
    let draft = Grant { issuer: group.group(), ..grant(&agent, &agent, 900_000_000_000, "threshold-board/auditor") };
    let message = draft.canonical_bytes();
    let signers: Vec<_> = shares.iter().filter(|s| s.identifier() != 2).collect();
    let (mut nonces, mut commitments) = (Vec::new(), Vec::new());
    for s in &signers {
        let (n, c) = sign::round1(s, &mut rng);
        nonces.push(n);
        commitments.push(c);
    }
    let mut sig_shares = Vec::new();
    for (s, n) in signers.iter().zip(nonces) {
        sig_shares.push(sign::round2(s, n, &commitments, &message).map_err(t)?);
    }
    let sig = sign::aggregate(&group, &commitments, &message, &sig_shares).map_err(t)?;
    let g = SignedGrant::from_parts(draft, sig).map_err(|e| core(&e))?;
    let mut run = Run::new(g);
    checkpoints(&mut run, &agent, "threshold", 0, 2, 150_000_000_000).map_err(|e| core(&e))?;
    Ok((run, group))
}

/// The standing grant's files and the run of its third child:
/// (run, standing grant, policy, ledger).
pub fn standing() -> Result<(Run, SignedGrant, jcp::standing::SignedMintPolicy, MintLedger), jcp::Error> {
    let (owner, worker) = (key("standing owner")?, key("standing worker")?);
    let standing =
        Grant { delegate_depth: Some(1), ..grant(&owner, &owner, 10_000_000_000_000, "standing/issue-triage") }
            .sign(&owner)?;
    let class = EventClass { source: "git.example.org/acme/console".into(), kind: "issue.opened".into() };
    let policy = MintPolicy::issue(&standing, &owner, class.id(), 2_000_000_000_000, 5, Some(nonce("policy")))?;
    let mut ledger = MintLedger::open(&policy);
    let req = |i: u64| FiringRequest {
        event_class: class.id(),
        subject: worker.did(),
        budget_uj: None,
        nonce: Some(nonce(&format!("firing {i}"))),
    };
    let mut child = ledger.fire(&standing, &policy, &owner, &req(0), START)?;
    for i in 1..3u64 {
        child = ledger.fire(&standing, &policy, &owner, &req(i), START + 600 * i)?;
    }
    let mut run = Run::new(child);
    checkpoints(&mut run, &worker, "standing", 0, 2, 500_000_000_000)?;
    Ok((run, standing, policy, ledger))
}

/// Writes the three folders under `dir` (each file once: an existing one is
/// kept) and returns the run files.
pub fn write_demo(dir: &Path) -> Result<Vec<PathBuf>, ViewError> {
    let run_path = |sub: &str, name: &str| dir.join(sub).join(format!("{name}.{RUN_EXTENSION}"));
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let (r, log) = rotated().map_err(|e| core(&e))?;
    files.push((dir.join("rotated").join(format!("steward.{KEYLOG_EXTENSION}")), log.to_bytes()));
    files.push((run_path("rotated", "rotated-steward"), r.to_bytes()));
    let (r, group) = threshold()?;
    files.push((dir.join("threshold").join("board.jcpt"), group.to_bytes()));
    files.push((run_path("threshold", "threshold-board"), r.to_bytes()));
    let (r, g, p, l) = standing().map_err(|e| core(&e))?;
    files.push((dir.join("standing").join("standing-grant.jcp"), g.to_bytes()));
    files.push((dir.join("standing").join("mint-policy.jcp"), p.to_bytes()));
    files.push((dir.join("standing").join("mint-ledger.jcp"), l.to_bytes()));
    files.push((run_path("standing", "minted-by-standing-grant"), r.to_bytes()));
    let mut runs = Vec::new();
    for (path, bytes) in files {
        if !path.exists() {
            write(&path, &bytes)?;
        }
        if path.extension().is_some_and(|x| x == RUN_EXTENSION) {
            runs.push(path);
        }
    }
    Ok(runs)
}
