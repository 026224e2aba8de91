//! The supervisor follows its run file (§4.7, §4.3): an amendment the
//! steward wrote there, and a revocation put beside it, reach the run's
//! endpoint whoever wrote them — the console that started the run, a
//! console that did not, or `jcp run amend` — so a run started from the CLI
//! and one started from the console are steered the same way. Each is
//! verified as a holder must before it goes on (`jcp::steering::follow`),
//! then fed to the endpoint, which checks it again and records it before it
//! applies it. What was fed once ([`Feeder`]) is not fed again;
//! an amendment the endpoint refuses for now (one that would hand out
//! joules a call in flight still holds, §4.9) is tried again at the next
//! look.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jcp::cbor::ContentId;
use jcp::grant::SignedGrant;
use jcp::steering::follow::{continue_chain, find_steering, revocations_beside, verify_steering};
use jcp::steering::Run;
use jcp_wire::endpoint::Endpoint;
use jcp_wire::message::Feed;

use crate::Error;

/// How often the run file is looked at.
pub const POLL: Duration = Duration::from_millis(200);

/// Feeds the run's endpoint, each amendment and revocation once: by the
/// supervisor's caller (the console's Amend and Revoke) or by the follower,
/// whichever comes first; the other is then told it is in (`Ok`), and
/// nothing is recorded twice (a revocation fed again would be a second
/// notice at a later marker).
#[derive(Debug)]
pub struct Feeder {
    endpoint: Endpoint,
    rt: tokio::runtime::Handle,
    fed: Mutex<HashSet<ContentId>>,
}

impl Feeder {
    /// Feeds `endpoint` from `rt`.
    pub fn new(endpoint: Endpoint, rt: tokio::runtime::Handle) -> Self {
        Self { endpoint, rt, fed: Mutex::new(HashSet::new()) }
    }

    /// Feeds a revocation or an amendment unless it was fed before:
    /// admitted (recorded, then applied) or refused.
    pub fn feed(&self, message: Feed) -> Result<(), Error> {
        let id = match &message {
            Feed::Amendment { amendment, .. } => Some(amendment.id()),
            Feed::Revocation { revocation, .. } => Some(revocation.id()),
            _ => None,
        };
        // Held across the feed: the caller and the follower never feed the same one side by side.
        let mut already = self.fed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if id.is_some_and(|i| already.contains(&i)) {
            return Ok(());
        }
        let ans = self
            .rt
            .block_on(self.endpoint.feed(message))
            .map_err(|source| Error::wire("the live run's endpoint did not take it", source))?;
        if !ans.admitted {
            return Err(Error::Refused { code: ans.code, message: ans.message });
        }
        if let Some(i) = id {
            already.insert(i);
        }
        Ok(())
    }
}

/// What the follower found at one look, for the supervisor's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// An amendment fed and admitted: the run goes on under the continuation (its id).
    Continued(ContentId),
    /// A revocation fed and admitted (the revoked grant's id).
    Revoked(ContentId),
    /// Something found and not (yet) admitted, and why.
    NotYet(String),
}

/// One run file followed: the chain in force, from the root grant the run was issued under.
#[derive(Debug)]
pub struct Follower {
    run: PathBuf,
    chain: Vec<SignedGrant>,
    /// The revocations this follower saw admitted (not looked at again).
    revoked: HashSet<ContentId>,
}

impl Follower {
    /// Follows `run`, whose chain starts as `chain`.
    pub fn new(run: &Path, chain: Vec<SignedGrant>) -> Self {
        Self { run: run.to_path_buf(), chain, revoked: HashSet::new() }
    }

    /// The chain in force.
    pub fn chain(&self) -> &[SignedGrant] {
        &self.chain
    }

    /// Looks once: the steered grant's amendment (verified, then fed unless
    /// already fed), then the revocations beside the run of any grant of the
    /// chain (fed at `marker()` unless already fed). `feed` answers whether
    /// the endpoint admitted it.
    pub fn look(&mut self, feeder: &Feeder, marker: &dyn Fn() -> u64) -> Vec<Found> {
        let mut found = Vec::new();
        // Each continuation may itself be amended later: follow as far as the run goes.
        while let Some(step) = self.amendment(feeder, marker) {
            let go_on = matches!(step, Found::Continued(_));
            found.push(step);
            if !go_on {
                break;
            }
        }
        for (rev, g) in revocations_beside(&self.run, &self.chain) {
            if self.revoked.contains(&rev.id()) {
                continue;
            }
            // The next marker: no decision already made reads as made knowing it (§4.3).
            match feeder.feed(Feed::Revocation { revocation: rev.clone(), grant: g.clone(), marker: marker() }) {
                Ok(()) => {
                    self.revoked.insert(rev.id());
                    found.push(Found::Revoked(g.id()));
                }
                Err(why) => found.push(Found::NotYet(format!("revocation {} of grant {}: {why}", rev.id(), g.id()))),
            }
        }
        found
    }

    /// The steered grant's amendment, if the run holds one: fed and followed.
    fn amendment(&mut self, feeder: &Feeder, marker: &dyn Fn() -> u64) -> Option<Found> {
        let steered = self.chain.last()?.clone();
        let run = Run::read(&self.run).ok()?;
        let s = find_steering(&run, &steered.id())?;
        let report = match run.verify() {
            Ok(r) => r,
            Err(e) => return Some(Found::NotYet(format!("the run file does not verify: {e}"))),
        };
        if let Err(why) = verify_steering(&run, &report, &steered, &s) {
            return Some(Found::NotYet(format!("amendment {} does not verify: {why}", s.am.id())));
        }
        let f = Feed::Amendment {
            steered: steered.clone(),
            checkpoint: s.cp.clone(),
            amendment: s.am.clone(),
            continuation: s.cont.clone(),
            // A soft revoke travels the revocation feed at its next marker (§4.3, §4.7).
            marker: Some(marker()),
        };
        if let Err(why) = feeder.feed(f) {
            return Some(Found::NotYet(format!("amendment {}: {why}", s.am.id())));
        }
        self.chain = continue_chain(&self.chain, &s.cont);
        Some(Found::Continued(s.cont.id()))
    }
}

/// Told what the follower found (the supervisor's log).
pub(crate) type OnFound = Arc<dyn Fn(&Found) + Send + Sync>;

/// A follower, shared by its thread and the run that stops it.
pub(crate) struct Following {
    follower: Mutex<Follower>,
    feeder: Arc<Feeder>,
    marker: Arc<AtomicU64>,
    said: Mutex<HashSet<String>>,
    found: OnFound,
}

impl Following {
    pub(crate) fn new(follower: Follower, feeder: Arc<Feeder>, marker: Arc<AtomicU64>, found: OnFound) -> Self {
        Self { follower: Mutex::new(follower), feeder, marker, said: Mutex::new(HashSet::new()), found }
    }

    /// Looks once and tells what it found (a refusal that stays the same, once).
    pub(crate) fn once(&self) {
        let next = || self.marker.fetch_add(1, Ordering::Relaxed) + 1;
        let found = self.follower.lock().unwrap_or_else(std::sync::PoisonError::into_inner).look(&self.feeder, &next);
        for f in found {
            if let Found::NotYet(why) = &f {
                if !self.said.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(why.clone()) {
                    continue;
                }
            }
            (self.found)(&f);
        }
    }
}

/// Follows on a thread of its own, every [`POLL`], until `shut` is set.
pub(crate) fn spawn(following: Arc<Following>, shut: Arc<AtomicBool>) -> std::io::Result<()> {
    std::thread::Builder::new().name("run-follower".into()).spawn(move || {
        while !shut.load(Ordering::Acquire) {
            following.once();
            std::thread::sleep(POLL);
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use jcp::decision::Gate;
    use jcp::grant::{Capability, Grant};
    use jcp::identity::Keypair;
    use jcp::revocation::Revocation;
    use jcp_receipt::stream::{Item, Reader, RecordKind};
    use jcp_wire::endpoint::Config;

    use super::*;

    /// §4.3: the console's Revoke and the follower may both find the same
    /// revocation; the endpoint's record holds one notice, at one marker.
    #[test]
    fn s4_3_a_revocation_fed_by_the_caller_and_the_follower_is_recorded_once() {
        let t = tempfile::tempdir().unwrap();
        let stream = t.path().join("s.jcps");
        let (steward, agent) = (Keypair::generate(), Keypair::generate());
        let root = Grant {
            issuer: steward.did(),
            subject: agent.did(),
            capability: Capability { resource: ContentId::of_bytes(b"r"), actions: vec!["read".into()] },
            budget_uj: 1000,
            budget_funds: None,
            caveats: Vec::new(),
            expiry: 4_000_000_000,
            parent: None,
            delegate_depth: Some(0),
            nonce: jcp::identity::fresh_nonce(),
        }
        .sign(&steward)
        .unwrap();
        let rev = Revocation::issue(&root, &steward, None).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (endpoint, _) = Endpoint::open(Config::new(&stream), Keypair::generate(), Gate::new(), None).unwrap();
        let feeder = Feeder::new(endpoint.clone(), rt.handle().clone());
        for marker in [1, 2] {
            feeder.feed(Feed::Revocation { revocation: rev.clone(), grant: root.clone(), marker }).unwrap();
        }
        rt.block_on(endpoint.shutdown()).unwrap();
        let reader = Reader::new(std::fs::File::open(&stream).unwrap()).unwrap();
        let notices = reader.filter(|i| matches!(i, Item::Record(r) if r.kind == RecordKind::Revocation)).count();
        assert_eq!(notices, 1);
    }
}
