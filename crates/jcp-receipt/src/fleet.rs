//! A deterministic fleet (spec §4.5 shards, §4.3 propagation): N
//! enforcement points, each writing its own stream under one root grant
//! sharded N ways, a revocation of the root that reaches the points at
//! different `known_through` markers, and exactly one violation.
//!
//! Every point records the root and its own shard, then decides requests
//! through a real gate (each allow completed). The root's issuer revokes it
//! at feed marker [`REVOCATION_MARKER`] `M`; the points' feeds stand at
//! [`EARLY_MARKER`] before it. Halfway through:
//!
//! * the *heard* points (all but the last two) record the revocation, each
//!   when its feed reaches `M + 2k` (point k), and deny from then on;
//! * the *laggard* (the last point, when there are three or more) never
//!   hears within its stream: its later allows stand at `known_through < M`,
//!   a propagation delay, explicable (§4.3);
//! * the *violator* (the one before the laggard) lets its feed run past `M`
//!   (`known_through = M + 1`) without applying the revocation and allows
//!   one more decision on the root's subtree: `known_through >= M` is a
//!   violation (§4.3), and it is one only across streams — the revocation is
//!   recorded by the other points, the allow by this one.
//!
//! Nothing is hard-coded into a result: every receipt is the gate's.

use std::path::{Path, PathBuf};

use jcp::cbor::{ContentId, Value};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{shard, Capability, Grant, Slice};
use jcp::revocation::Revocation;

use crate::demo::{core_err, key, nonce};
use crate::error::Error;
use crate::record::OutcomeStatus;
use crate::runtime::DurableGate;
use crate::writer::Durability;

/// The feed marker at which the root is revoked.
pub const REVOCATION_MARKER: u64 = 10;
/// Where every point's feed stands before the revocation reaches it.
pub const EARLY_MARKER: u64 = 5;
/// Each shard's budget, µJ (the root holds exactly the shards' sum).
pub const SHARD_UJ: u64 = 5_000_000;

/// What to generate.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    points: usize,
    decisions: u64,
    seed: u64,
    durability: Durability,
}

impl FleetOptions {
    /// `points` streams of `decisions` decisions each, keys and nonces from
    /// `seed`. `None` below 2 points (a heard point and the violator) or 2
    /// decisions (one before the revocation, one after).
    pub fn new(points: usize, decisions: u64, seed: u64, durability: Durability) -> Option<Self> {
        (points >= 2 && decisions >= 2).then_some(Self { points, decisions, seed, durability })
    }
}

/// The part a point plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Records the revocation and denies from then on.
    Heard,
    /// Never hears within its stream (propagation delay).
    Laggard,
    /// Runs its feed past the revocation without applying it, and allows.
    Violator,
}

/// One point's stream.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PointSummary {
    /// The stream file.
    pub path: PathBuf,
    /// The point's steward did.
    pub steward: String,
    /// Its shard of the root.
    pub shard: ContentId,
    /// Its part.
    pub role: Role,
    /// Its `known_through` when the revocation reached it (heard points).
    pub heard_at: Option<u64>,
    /// Decisions recorded.
    pub receipts: u64,
    /// Of which allows.
    pub allows: u64,
    /// Of which denies.
    pub denies: u64,
}

/// What was generated.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FleetSummary {
    /// The root grant.
    pub root: ContentId,
    /// The root's budget, µJ (the shards' sum).
    pub root_budget_uj: u64,
    /// The revocation's feed marker `M`.
    pub revocation_marker: u64,
    /// The points, in order.
    pub points: Vec<PointSummary>,
    /// The violating allow: point index and the receipt's byte offset.
    pub violation: (usize, u64),
}

/// Point `p`'s stream in `dir`.
pub fn point_path(dir: &Path, p: usize) -> PathBuf {
    dir.join(format!("point-{p:02}.jcps"))
}

fn role(points: usize, p: usize) -> Role {
    let violator = if points >= 3 { points - 2 } else { points - 1 };
    if p == violator {
        Role::Violator
    } else if points >= 3 && p == points - 1 {
        Role::Laggard
    } else {
        Role::Heard
    }
}

/// Writes the fleet's streams into `dir` (created if missing; the streams
/// must not exist yet or be streams).
pub fn write_fleet(dir: &Path, opts: &FleetOptions) -> Result<FleetSummary, Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    let seed = opts.seed;
    let operator = key(seed, "fleet-operator")?;
    let holder = key(seed, "fleet-holder")?;
    let resource = ContentId::of(&Value::text("jcp-demo/fleet-resource"));
    let n = opts.points as u64;
    let root = Grant {
        issuer: operator.did(),
        subject: holder.did(),
        capability: Capability { resource, actions: vec!["invoke".into()] },
        budget_uj: SHARD_UJ * n,
        budget_funds: None,
        caveats: Vec::new(),
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: nonce(seed, "fleet-root"),
    }
    .sign(&operator)
    .map_err(core_err)?;
    let mut workers = Vec::with_capacity(opts.points);
    for p in 0..opts.points {
        workers.push(key(seed, &format!("fleet-worker-{p}"))?);
    }
    let mut stewards = Vec::with_capacity(opts.points);
    for p in 0..opts.points {
        stewards.push(key(seed, &format!("fleet-steward-{p}"))?);
    }
    // §4.5: each shard is bound to the point that enforces it.
    let slices: Vec<Slice> = workers
        .iter()
        .zip(&stewards)
        .enumerate()
        .map(|(p, (w, st))| Slice {
            subject: w.did(),
            budget_uj: SHARD_UJ,
            point: st.did(),
            funds_minor: None,
            nonce: Some(nonce(seed, &format!("fleet-shard-{p}"))),
        })
        .collect();
    let shards = shard(&root, &holder, &slices).map_err(core_err)?;
    let revocation = Revocation::issue(&root, &operator, Some(nonce(seed, "fleet-revocation"))).map_err(core_err)?;
    let mut points = Vec::with_capacity(opts.points);
    let mut violation = (0, 0);
    let mut heard = 0u64;
    for (p, (worker, shard_g)) in workers.iter().zip(&shards).enumerate() {
        let role = role(opts.points, p);
        let path = point_path(dir, p);
        let steward = stewards[p].clone();
        let (mut dg, _) = DurableGate::open_with(&path, steward.clone(), Gate::new(), opts.durability)?;
        dg.record_grant(&root)?;
        dg.record_grant(shard_g)?;
        dg.set_known_through(EARLY_MARKER)?;
        let mut sum = PointSummary {
            path: path.clone(),
            steward: steward.did().to_string(),
            shard: shard_g.id(),
            role,
            heard_at: None,
            receipts: 0,
            allows: 0,
            denies: 0,
        };
        let chain = [root.clone(), shard_g.clone()];
        let half = opts.decisions / 2;
        for i in 0..opts.decisions {
            match role {
                Role::Heard if i == half => {
                    let at = REVOCATION_MARKER + 2 * heard;
                    // The feed stands at `at` when the revocation (issued
                    // at M) reaches this point: its notice is sealed there.
                    dg.set_known_through(at)?;
                    dg.admit_revocation(&revocation, &root, REVOCATION_MARKER)?;
                    sum.heard_at = Some(at);
                    heard += 1;
                }
                Role::Violator if i + 1 == opts.decisions => dg.set_known_through(REVOCATION_MARKER + 1)?,
                _ => {}
            }
            let uj = 10_000 + (p as u64 * 7_919 + i * 104_729) % 90_000;
            let provenance = if i % 5 == 4 { Provenance::ModelBased } else { Provenance::HwShunt };
            let measured = (provenance == Provenance::HwShunt).then_some(uj);
            let cost = Cost::energy(Energy { uj, provenance, coverage: Coverage::Whole, measured });
            let frame = Frame {
                kind: FrameKind::ToolCall,
                trust: Trust::Control,
                grant_id: shard_g.id(),
                action: "invoke".into(),
                resource,
                payload_hash: ContentId::of(&Value::Uint(p as u64 * 1_000_000 + i)),
                model: None,
            };
            let caller = worker.did();
            let req =
                Request { frame: &frame, chain: &chain, caller: &caller, cost: &cost, now: 1_700_000_000, flow: None };
            let rec = dg.decide(&req)?;
            sum.receipts += 1;
            if rec.decision.is_allow() {
                sum.allows += 1;
                if role == Role::Violator && i + 1 == opts.decisions {
                    violation = (p, rec.offset);
                }
                dg.complete(&rec.receipt, OutcomeStatus::Completed)?;
            } else {
                sum.denies += 1;
            }
        }
        dg.close()?;
        points.push(sum);
    }
    Ok(FleetSummary {
        root: root.id(),
        root_budget_uj: SHARD_UJ * n,
        revocation_marker: REVOCATION_MARKER,
        points,
        violation,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// §4.5: the shards sum to the root; §4.3: every role is present and
    /// the same seed writes the same bytes.
    #[test]
    fn s4_5_fleet_is_sharded_and_deterministic_from_its_seed() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let opts = FleetOptions::new(4, 6, 7, Durability::GeneratorOnly).unwrap();
        let sa = write_fleet(a.path(), &opts).unwrap();
        let sb = write_fleet(b.path(), &opts).unwrap();
        let roles: Vec<Role> = sa.points.iter().map(|p| p.role).collect();
        assert_eq!(roles, [Role::Heard, Role::Heard, Role::Violator, Role::Laggard]);
        assert_eq!(sa.points.iter().map(|p| p.heard_at).collect::<Vec<_>>(), [Some(10), Some(12), None, None]);
        for p in 0..4 {
            assert_eq!(
                std::fs::read(point_path(a.path(), p)).unwrap(),
                std::fs::read(point_path(b.path(), p)).unwrap()
            );
        }
        assert_eq!(sa.violation, sb.violation);
        assert_eq!(sa.violation.0, 2);
        // Heard points deny after the revocation; the others allow throughout.
        assert!(sa.points[0].denies >= 1 && sa.points[3].denies == 0 && sa.points[2].denies == 0);
        assert!(FleetOptions::new(1, 6, 7, Durability::GeneratorOnly).is_none());
        // Each stream holds the root and its own shard; the shards are the
        // root's children and their budgets sum to exactly the root's (§4.5).
        let mut shard_sum = 0;
        for p in 0..4 {
            let f = std::fs::File::open(point_path(a.path(), p)).unwrap();
            let grants: Vec<jcp::grant::SignedGrant> = crate::stream::Reader::new(f)
                .unwrap()
                .filter_map(|i| match i {
                    crate::stream::Item::Record(r) if r.kind == crate::stream::RecordKind::Grant => {
                        Some(jcp::grant::SignedGrant::from_bytes(&r.payload).unwrap())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(grants.len(), 2);
            assert_eq!(grants[0].id(), sa.root);
            assert_eq!((grants[1].id(), grants[1].grant().parent), (sa.points[p].shard, Some(sa.root)));
            shard_sum += grants[1].grant().budget_uj;
        }
        assert_eq!((shard_sum, sa.root_budget_uj), (4 * SHARD_UJ, 4 * SHARD_UJ));
    }
}
