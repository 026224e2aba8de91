//! Deterministic demo streams: real grants (3-hop chains and single
//! grants), a real gate deciding mixed allows and denies, a revocation with
//! feed markers, optional unresolved decisions and optional tampering. Used
//! by `jcp stream demo`, the console, the tests and the benchmark. Nothing
//! here is hard-coded into a result: every receipt is the gate's decision.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use jcp::cbor::{ContentId, Value};
use jcp::decision::{Cost, Gate, Request};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{attenuate, Attenuation, Capability, Grant, SignedGrant};
use jcp::identity::{Did, Keypair};
use jcp::revocation::Revocation;

use crate::error::Error;
use crate::record::OutcomeStatus;
use crate::runtime::DurableGate;
use crate::stream::{FRAME_OVERHEAD, MAGIC};
use crate::writer::Durability;

/// What to generate.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Decision receipts to write.
    pub receipts: u64,
    /// Receipts to tamper with afterwards (one byte of the signed core
    /// changed, framing checksum fixed, so only the signature catches it).
    pub tamper: u64,
    /// Allowed decisions left without an outcome (the last ones).
    pub unresolved: u64,
    /// Seed for every key and nonce.
    pub seed: u64,
    /// Durability of the writes (`GeneratorOnly` for large streams).
    pub durability: Durability,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self { receipts: 200, tamper: 0, unresolved: 0, seed: 1, durability: Durability::SyncEachRecord }
    }
}

/// What was generated.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DemoSummary {
    /// Decision receipts written.
    pub receipts: u64,
    /// Of which allows.
    pub allows: u64,
    /// Of which denies.
    pub denies: u64,
    /// Byte offsets of the tampered receipt records.
    pub tampered_offsets: Vec<u64>,
    /// Allowed decisions left unresolved.
    pub unresolved: u64,
    /// The steward's did.
    pub steward: String,
    /// Grants recorded.
    pub grants: u64,
    /// The revoked grant, if the stream was long enough to revoke one.
    pub revoked: Option<ContentId>,
    /// File size in bytes.
    pub bytes: u64,
}

pub(crate) fn key(seed: u64, label: &str) -> Result<Keypair, Error> {
    let mut h = blake3::Hasher::new();
    h.update(b"jcp-demo-key");
    h.update(&seed.to_be_bytes());
    h.update(label.as_bytes());
    Keypair::from_seed(*h.finalize().as_bytes()).map_err(|e| Error::Revocation(jcp::Error::Identity(e)))
}

pub(crate) fn nonce(seed: u64, label: &str) -> [u8; 16] {
    let mut h = blake3::Hasher::new();
    h.update(b"jcp-demo-nonce");
    h.update(&seed.to_be_bytes());
    h.update(label.as_bytes());
    let mut n = [0u8; 16];
    n.copy_from_slice(&h.finalize().as_bytes()[..16]);
    n
}

pub(crate) fn core_err(e: jcp::Error) -> Error {
    Error::Revocation(e)
}

/// The demo's cast: keys, the resource, root grants and 3-hop chains.
#[derive(Debug)]
pub struct Cast {
    /// The enforcement point sealing receipts.
    pub steward: Keypair,
    /// The resource every grant names.
    pub resource: ContentId,
    /// Root grants (single-grant decisions use them directly).
    pub roots: Vec<(SignedGrant, Did)>,
    /// 3-hop chains: root, lead, worker; with the worker's identity.
    pub chains: Vec<(Vec<SignedGrant>, Did)>,
    /// Root issuer keys (to revoke).
    pub operators: Vec<Keypair>,
    /// Lead keys.
    pub leads: Vec<Keypair>,
    /// Root holders' keys (each issues its root's lead grants, so may revoke them).
    pub holders: Vec<Keypair>,
}

/// Builds the cast for `seed`.
pub fn cast(seed: u64) -> Result<Cast, Error> {
    let steward = key(seed, "steward")?;
    let resource = ContentId::of(&Value::text("jcp-demo/resource"));
    let mut roots = Vec::new();
    let mut chains = Vec::new();
    let mut operators = Vec::new();
    let mut leads = Vec::new();
    let mut holders = Vec::new();
    for r in 0..4u32 {
        let op = key(seed, &format!("operator-{r}"))?;
        let holder = key(seed, &format!("holder-{r}"))?;
        let root = Grant {
            issuer: op.did(),
            subject: holder.did(),
            capability: Capability { resource, actions: vec!["invoke".into(), "read".into()] },
            budget_uj: 4_000_000_000_000,
            budget_funds: None,
            caveats: Vec::new(),
            expiry: 0,
            parent: None,
            delegate_depth: None,
            nonce: nonce(seed, &format!("root-{r}")),
        }
        .sign(&op)
        .map_err(core_err)?;
        for l in 0..2u32 {
            let lead = key(seed, &format!("lead-{r}-{l}"))?;
            let lead_g = attenuate(
                &root,
                &holder,
                Attenuation {
                    subject: Some(lead.did()),
                    budget_uj: Some(1_000_000_000_000),
                    nonce: Some(nonce(seed, &format!("lead-{r}-{l}"))),
                    ..Attenuation::default()
                },
            )
            .map_err(core_err)?;
            for w in 0..2u32 {
                let worker = key(seed, &format!("worker-{r}-{l}-{w}"))?;
                // One worker per lead has a small budget, so budget denies occur.
                let budget = if w == 1 { 2_000_000 } else { 400_000_000_000 };
                let wg = attenuate(
                    &lead_g,
                    &lead,
                    Attenuation {
                        subject: Some(worker.did()),
                        actions: Some(vec!["invoke".into()]),
                        budget_uj: Some(budget),
                        nonce: Some(nonce(seed, &format!("worker-{r}-{l}-{w}"))),
                        ..Attenuation::default()
                    },
                )
                .map_err(core_err)?;
                chains.push((vec![root.clone(), lead_g.clone(), wg], worker.did()));
            }
            leads.push(lead);
        }
        roots.push((root, holder.did()));
        holders.push(holder);
        operators.push(op);
    }
    Ok(Cast { steward, resource, roots, chains, operators, leads, holders })
}

/// Writes a demo stream to `path` (which must not exist or be a stream).
pub fn write_demo(path: &Path, opts: &DemoOptions) -> Result<DemoSummary, Error> {
    let cast = cast(opts.seed)?;
    let (mut dg, _replay) = DurableGate::open_with(path, cast.steward.clone(), Gate::new(), opts.durability)?;
    let mut sum = DemoSummary { steward: cast.steward.did().to_string(), ..DemoSummary::default() };
    let mut recorded = std::collections::HashSet::new();
    for (chain, _) in &cast.chains {
        for g in chain {
            if recorded.insert(g.id()) {
                dg.record_grant(g)?;
                sum.grants += 1;
            }
        }
    }
    dg.set_known_through(1)?;
    let n = opts.receipts;
    let revoke_at = if n >= 100 { Some(n / 2) } else { None };
    let mut receipt_offsets = Vec::new();
    let mut allowed: Vec<ContentId> = Vec::new();
    for i in 0..n {
        if Some(i) == revoke_at {
            // Revoke lead 0 of root 0 at feed marker 5: its subtree dies.
            let lead = &cast.chains[0].0[1];
            let rev =
                Revocation::issue(lead, &cast.holders[0], Some(nonce(opts.seed, "revocation"))).map_err(core_err)?;
            dg.admit_revocation(&rev, lead, 5)?;
            sum.revoked = Some(lead.id());
        }
        let uj = 1_000 + (i * 7919) % 9_000;
        let provenance = match i % 20 {
            0 => Provenance::ModelBased,
            1 => Provenance::Estimator,
            _ => Provenance::HwShunt,
        };
        let coverage = if i % 97 == 3 { Coverage::Partial } else { Coverage::Whole };
        // A hardware grade carries its reading (§5); the others none.
        let measured = (provenance == Provenance::HwShunt).then_some(uj);
        let energy_cost = Cost::energy(Energy { uj, provenance, coverage, measured });
        // Indices into small tables: the modulus is taken in u64 first.
        let pick = |n: usize, k: u64| usize::try_from(k % n as u64).unwrap_or(0);
        let (chain, caller): (&[SignedGrant], Did) = if i % 50 == 7 {
            let (g, d) = &cast.roots[pick(cast.roots.len(), i / 50)];
            (std::slice::from_ref(g), *d)
        } else {
            let (c, d) = &cast.chains[pick(cast.chains.len(), i)];
            (c.as_slice(), *d)
        };
        let leaf = chain.last().map_or(ContentId([0; 32]), SignedGrant::id);
        let (trust, action) = match i % 10 {
            3 => (Trust::Data, "invoke"),
            6 => (Trust::Control, "delete"),
            _ => (Trust::Control, "invoke"),
        };
        let frame = Frame {
            kind: FrameKind::ToolCall,
            trust,
            grant_id: leaf,
            action: action.into(),
            resource: cast.resource,
            payload_hash: ContentId::of(&Value::Uint(i)),
            model: None,
        };
        let req = Request { frame: &frame, chain, caller: &caller, cost: &energy_cost, now: 1_700_000_000, flow: None };
        let rec = dg.decide(&req)?;
        sum.receipts += 1;
        receipt_offsets.push(rec.offset);
        if rec.decision.is_allow() {
            sum.allows += 1;
            allowed.push(rec.receipt);
        } else {
            sum.denies += 1;
        }
        // Settle all but the last `unresolved` allows as they happen.
        let keep_open = opts.unresolved;
        if allowed.len() as u64 > keep_open {
            let settle = allowed.remove(0);
            let status = if i % 31 == 0 { OutcomeStatus::Failed } else { OutcomeStatus::Completed };
            dg.complete(&settle, status)?;
        }
    }
    sum.unresolved = allowed.len() as u64;
    let path_buf = dg.writer().path().to_path_buf();
    dg.close()?;
    if opts.tamper > 0 && !receipt_offsets.is_empty() {
        let k = opts.tamper.min(receipt_offsets.len() as u64);
        let step = receipt_offsets.len() as u64 / k;
        for j in 0..k {
            let off = receipt_offsets[usize::try_from(j * step + step / 2).unwrap_or(0).min(receipt_offsets.len() - 1)];
            tamper_record(&path_buf, off)?;
            sum.tampered_offsets.push(off);
        }
    }
    sum.bytes = std::fs::metadata(&path_buf).map_err(|e| Error::io(&path_buf, &e))?.len();
    Ok(sum)
}

/// Changes one byte inside a receipt's signed action text ("invoke" →
/// "invokf") and fixes the framing checksum, so the envelope and core stay
/// canonical and only the signature can tell.
pub fn tamper_record(path: &Path, offset: u64) -> Result<(), Error> {
    let io = |e| Error::io(path, &e);
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(path).map_err(io)?;
    f.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut head = [0u8; 9];
    f.read_exact(&mut head).map_err(io)?;
    if &head[..4] != MAGIC {
        return Err(Error::NotAStream { path: path.display().to_string() });
    }
    let len = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) as usize;
    let mut payload = vec![0u8; len];
    f.read_exact(&mut payload).map_err(io)?;
    let needle = b"finvoke";
    let Some(p) = payload.windows(needle.len()).position(|w| w == needle) else {
        return Err(Error::OutcomeUnknown(format!("record at {offset} has no action text to tamper")));
    };
    payload[p + needle.len() - 1] = b'f';
    let framed = crate::stream::frame(crate::stream::RecordKind::Receipt, &payload)?;
    debug_assert_eq!(framed.len(), len + FRAME_OVERHEAD);
    f.seek(SeekFrom::Start(offset)).map_err(io)?;
    f.write_all(&framed).map_err(io)?;
    f.sync_all().map_err(io)?;
    Ok(())
}
