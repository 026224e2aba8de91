//! Step 1 of a live run: its folder and agent key, the root grant (§4) the
//! steward's key issues the agent, written beside them and as a new run
//! file (§4.7).

use std::path::{Path, PathBuf};

use jcp::cbor::{ContentId, Value};
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::Keypair;
use jcp::steering::Run;

use crate::{Error, Settings};

/// What a live run starts from: its folder, the agent's key, the root
/// grant issued to the agent and the run file that carries it.
#[derive(Debug)]
pub struct Issued {
    /// When it was issued, unix ms: the run's name (`live-STAMP`).
    pub stamp: u64,
    /// The run's own folder: the agent's key, the grant, the endpoint's
    /// key, socket and record.
    pub dir: PathBuf,
    /// The agent's key.
    pub agent: Keypair,
    /// The agent's key file (plain, owner-only).
    pub agent_key: PathBuf,
    /// The grant's resource.
    pub resource: ContentId,
    /// The root grant, issued by the steward to the agent.
    pub root: SignedGrant,
    /// The root grant's file.
    pub root_path: PathBuf,
    /// The run file, in the runs folder.
    pub run_path: PathBuf,
}

impl Issued {
    /// The endpoint's record (a receipt stream the auditor reads).
    pub fn stream(&self) -> PathBuf {
        self.dir.join("record.jcps")
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Issues a live run under the steward's key: its folder `LIVE_DIR/STAMP`,
/// a fresh agent key there, the root grant of `settings.budget_uj` to the
/// agent (leaf-only, expiring after `settings.expiry_s`), and the run file
/// `RUNS/live-STAMP.jcprun` started under it.
pub fn issue(steward: &Keypair, runs: &Path, live_dir: &Path, settings: &Settings) -> Result<Issued, Error> {
    let stamp = now_ms();
    let dir = live_dir.join(stamp.to_string());
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("cannot create", &dir, e))?;
    std::fs::create_dir_all(runs).map_err(|e| Error::io("cannot create", runs, e))?;
    let agent = Keypair::generate();
    let agent_key = dir.join("agent.key");
    keystore::write_plain(&agent_key, &agent)?;
    let resource = ContentId::of(&Value::text(&settings.resource));
    let root = Grant {
        issuer: steward.did(),
        subject: agent.did(),
        capability: Capability { resource, actions: vec!["read".into()] },
        budget_uj: settings.budget_uj,
        budget_funds: None,
        caveats: Vec::new(),
        expiry: stamp / 1000 + settings.expiry_s,
        parent: None,
        delegate_depth: Some(0),
        nonce: jcp::identity::fresh_nonce(),
    }
    .sign(steward)?;
    let root_path = dir.join("root.jcp");
    std::fs::write(&root_path, root.to_bytes()).map_err(|e| Error::io("cannot write", &root_path, e))?;
    let run_path = runs.join(format!("live-{stamp}.{}", jcp::steering::RUN_EXTENSION));
    Run::new(root.clone()).write(&run_path)?;
    Ok(Issued { stamp, dir, agent, agent_key, resource, root, root_path, run_path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s4_7_the_run_file_starts_under_the_root_the_steward_issued_the_agent() {
        let t = tempfile::tempdir().unwrap();
        let steward = Keypair::generate();
        let settings = Settings { budget_uj: 7_000, ..Settings::default() };
        let i = issue(&steward, &t.path().join("runs"), &t.path().join("live"), &settings).unwrap();
        assert_eq!(i.dir, t.path().join("live").join(i.stamp.to_string()));
        assert_eq!(i.run_path, t.path().join("runs").join(format!("live-{}.jcprun", i.stamp)));
        let g = i.root.grant();
        assert_eq!((g.issuer, g.subject, g.budget_uj), (steward.did(), i.agent.did(), 7_000));
        assert_eq!(g.delegate_depth, Some(0));
        assert!(i.root.verify_signature());
        assert_eq!(std::fs::read(&i.root_path).unwrap(), i.root.to_bytes());
        assert_eq!(keystore::read_any(&i.agent_key, "").unwrap().did(), i.agent.did());
        let report = Run::read(&i.run_path).unwrap().verify().unwrap();
        assert!(report.clean);
        assert_eq!(report.active_grant, Some(i.root.id()));
        assert_eq!(i.stream(), i.dir.join("record.jcps"));
    }
}
