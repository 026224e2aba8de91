//! `reconcile(blueprint, deployment, inputs)` (spec §13): the one composed,
//! non-authorizing pass per import, in the pinned order
//! canonical → digest → negotiation → structure → portability → signatures
//! → bind → bounds. The result is [`Evidence`]: per-surface checks, effective
//! bounds, clamp evidence, and `not_verified`, which always names the seven
//! host-owned surfaces.

use crate::artifact::{self, Artifact, Kind};
use crate::binding::{self, BindingInputs};
use crate::bounds::{self, Bounds, Clamp, Posture};
use crate::canon;
use crate::digest::Tagged;
use crate::error::{Code, Error, Result};
use crate::json::{Map, Value};
use crate::limits::Limits;
use crate::negotiation::{self, Negotiated, Support};
use crate::portability;
use crate::signature::{self, KeySet, SignatureCheck};

/// The surfaces this protocol structurally cannot establish.
pub const HOST_OWNED: [&str; 7] =
    ["tenancy", "live_policy", "authority", "effect_ownership", "execution", "billing", "evaluation_truth"];

/// The pinned step order.
pub const STEPS: [&str; 8] =
    ["canonical", "digest", "negotiation", "structure", "portability", "signatures", "bind", "bounds"];

/// Host inputs.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The decoder ceilings both artifacts are read under.
    pub limits: Limits,
    /// The revisions, core fields, registry and schemas this host supports (§7).
    pub support: Support,
    /// The trusted keys signatures verify under (the host's: the crate discovers none, §6).
    pub keys: KeySet,
    /// What the host supplies to check the binding: the time, a maximum age, live descriptors (§10).
    pub binding: BindingInputs,
    /// Host bounds (a 13-member bounds object). Without it, the deployment's
    /// `host_bounds` stand in and that substitution is reported.
    pub host_bounds: Option<Value>,
    /// Whether narrowing a protected bound is denied or acknowledged (§9).
    pub posture: Posture,
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs {
            limits: Limits::default(),
            support: Support::this_release(),
            keys: KeySet::new(),
            binding: BindingInputs::default(),
            host_bounds: None,
            posture: Posture::Deny,
        }
    }
}

/// One check entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    /// The pinned step that ran the check (one of [`STEPS`]).
    pub step: &'static str,
    /// What was checked: the artifact, signature or binding, and where.
    pub subject: String,
    /// Whether the check passed.
    pub verified: bool,
    /// The §12 code of a failed check.
    pub code: Option<String>,
    /// What was found, for a person.
    pub detail: String,
}

/// Something this pass did not establish, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NotVerified {
    /// The surface (a host-owned one, an extension, a step not reached…).
    pub surface: String,
    /// Why this pass did not establish it.
    pub reason: String,
}

/// The evidence record. Never a decision: `consistent` only says every check
/// this protocol can run passed; `not_verified` says what it cannot run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Evidence {
    /// Every check this protocol can run passed: evidence, never an authorization.
    pub consistent: bool,
    /// The checks, in the pinned order.
    pub checks: Vec<Check>,
    /// The blueprint's verified content digest, once the digest step passed.
    pub blueprint_digest: Option<Tagged>,
    /// The deployment's verified digest, once the digest step passed.
    pub deployment_digest: Option<Tagged>,
    /// The agreed terms of each artifact (blueprint first).
    pub negotiated: Vec<Negotiated>,
    /// The effective bounds (blueprint ∧ deployment ∧ host), once the bounds step passed.
    pub effective_bounds: Option<Value>,
    /// The clamp evidence of the bounds step.
    pub clamps: Vec<Clamp>,
    /// Every signature and attestation check.
    pub signatures: Vec<SignatureCheck>,
    /// The first failure, if any.
    pub first_failure: Option<Error>,
    /// What this pass did not establish; never empty (the seven host-owned surfaces at least).
    pub not_verified: Vec<NotVerified>,
}

struct Run {
    ev: Evidence,
}

impl Run {
    fn pass(&mut self, step: &'static str, subject: &str, detail: impl Into<String>) {
        self.ev.checks.push(Check { step, subject: subject.into(), verified: true, code: None, detail: detail.into() });
    }
    fn deny(&mut self, step: &'static str, subject: &str, e: Error) {
        self.ev.checks.push(Check {
            step,
            subject: format!(
                "{subject}{}",
                if e.subject().is_empty() { String::new() } else { format!(" {}", e.subject()) }
            ),
            verified: false,
            code: Some(e.code()),
            detail: e.detail().to_string(),
        });
        if self.ev.first_failure.is_none() {
            self.ev.first_failure = Some(e);
        }
        self.ev.consistent = false;
    }
    fn not_verified(&mut self, surface: &str, reason: impl Into<String>) {
        self.ev.not_verified.push(NotVerified { surface: surface.into(), reason: reason.into() });
    }
    fn skip_from(&mut self, step: &str) {
        let start = STEPS.iter().position(|s| *s == step).unwrap_or(STEPS.len());
        for s in &STEPS[start..] {
            self.not_verified(s, "not reached: an earlier step denied");
        }
    }
}

/// Runs the pass. Never fails: every outcome is evidence.
pub fn reconcile(blueprint: &[u8], deployment: &[u8], inputs: &Inputs) -> Evidence {
    let mut r = Run {
        ev: Evidence {
            consistent: true,
            checks: Vec::new(),
            blueprint_digest: None,
            deployment_digest: None,
            negotiated: Vec::new(),
            effective_bounds: None,
            clamps: Vec::new(),
            signatures: Vec::new(),
            first_failure: None,
            not_verified: Vec::new(),
        },
    };
    for s in HOST_OWNED {
        r.not_verified(s, "host-owned: this protocol cannot establish it");
    }
    run(&mut r, blueprint, deployment, inputs);
    r.ev
}

/// The name an artifact kind goes by in the evidence.
fn name(k: Kind) -> &'static str {
    match k {
        Kind::Blueprint => "blueprint",
        Kind::Deployment => "deployment",
    }
}

/// The pass in its pinned order (§13). Each step records its checks; the
/// first step that denies stops the pass, and every later step is reported
/// not reached.
fn run(r: &mut Run, bp_bytes: &[u8], dep_bytes: &[u8], inputs: &Inputs) {
    let kinds = [(Kind::Blueprint, bp_bytes), (Kind::Deployment, dep_bytes)];
    let Some(values) = canonical(r, &kinds, &inputs.limits) else { return r.skip_from("digest") };
    let Some(digests) = digest(r, &kinds, &values) else { return r.skip_from("negotiation") };
    r.ev.blueprint_digest = Some(digests[0]);
    r.ev.deployment_digest = Some(digests[1]);
    if !negotiate(r, &kinds, &values, &inputs.support) {
        return r.skip_from("structure");
    }
    if !structure(r, &kinds, &values) {
        return r.skip_from("portability");
    }
    if !portable(r, &kinds, &values) {
        return r.skip_from("signatures");
    }
    let arts: Vec<Artifact> = kinds
        .iter()
        .zip(values)
        .zip(&digests)
        .map(|(((k, _), value), d)| Artifact { kind: *k, value, digest: *d })
        .collect();
    signatures(r, &arts, &inputs.keys);
    if !bind(r, &arts, &inputs.binding) {
        return r.skip_from("bounds");
    }
    effective_bounds(r, &arts, inputs);
}

/// Step 1, `canonical`: each artifact is RFC 8785 canonical JSON within the
/// limits, and an object. The decoded values, or `None` once one is denied.
fn canonical(r: &mut Run, kinds: &[(Kind, &[u8]); 2], limits: &Limits) -> Option<Vec<Value>> {
    let mut values: Vec<Value> = Vec::new();
    for (k, bytes) in kinds {
        match canon::decode_canonical(bytes, limits).and_then(|v| crate::shape::object(&v, "").map(|_| v.clone())) {
            Ok(v) => {
                r.pass("canonical", name(*k), format!("{} bytes, RFC 8785 canonical", bytes.len()));
                values.push(v);
            }
            Err(e) => {
                r.deny("canonical", name(*k), e);
                return None;
            }
        }
    }
    Some(values)
}

/// Step 2, `digest`: each artifact's declared digest is the one computed
/// over it. The digests, or `None` once one is denied.
fn digest(r: &mut Run, kinds: &[(Kind, &[u8]); 2], values: &[Value]) -> Option<Vec<Tagged>> {
    let mut digests = Vec::new();
    for (i, (k, _)) in kinds.iter().enumerate() {
        let m = values[i].as_object().cloned().unwrap_or_default();
        let declared = m.get(k.digest_member()).and_then(Value::as_str).unwrap_or_default().to_string();
        let res = artifact::compute_digest(*k, &m).and_then(|got| {
            let want = Tagged::parse(&declared)?;
            if want == got {
                Ok(got)
            } else {
                Err(Error::new(
                    Code::DigestMismatch,
                    format!("/{}", k.digest_member()),
                    format!("declared {want}, computed {got}"),
                ))
            }
        });
        match res {
            Ok(d) => {
                r.pass("digest", name(*k), d.to_string());
                digests.push(d);
            }
            Err(e) => {
                r.deny("digest", name(*k), e);
                return None;
            }
        }
    }
    Some(digests)
}

/// Step 3, `negotiation`: each artifact's revision and critical extensions
/// are supported; quarantined optional extensions are reported not
/// verified. `false` once one is denied.
fn negotiate(r: &mut Run, kinds: &[(Kind, &[u8]); 2], values: &[Value], support: &Support) -> bool {
    for (i, (k, _)) in kinds.iter().enumerate() {
        match negotiation::negotiate(&values[i], support) {
            Ok(n) => {
                r.pass(
                    "negotiation",
                    name(*k),
                    format!("revision {}, {} critical extension(s)", n.revision, n.extensions.critical.len()),
                );
                for q in &n.extensions.quarantined {
                    r.not_verified(
                        &format!("extension {q}"),
                        "quarantined optional extension: retained verbatim, unscanned, never executed",
                    );
                }
                r.ev.negotiated.push(n);
            }
            Err(e) => {
                r.deny("negotiation", name(*k), e);
                return false;
            }
        }
    }
    true
}

/// Step 4, `structure`: each artifact is the closed world of members its
/// kind defines. `false` once one is denied.
fn structure(r: &mut Run, kinds: &[(Kind, &[u8]); 2], values: &[Value]) -> bool {
    for (i, (k, _)) in kinds.iter().enumerate() {
        match artifact::check_structure(*k, &values[i]) {
            Ok(()) => r.pass("structure", name(*k), format!("closed world of {} members", k.fields().len())),
            Err(e) => {
                r.deny("structure", name(*k), e);
                return false;
            }
        }
    }
    true
}

/// Step 5, `portability`: no denylisted member names or value shapes in the
/// core content, nor in registered (critical) extension payloads. `false`
/// once one is denied.
fn portable(r: &mut Run, kinds: &[(Kind, &[u8]); 2], values: &[Value]) -> bool {
    for (i, (k, _)) in kinds.iter().enumerate() {
        let res = portability::scan_artifact(&values[i]).and_then(|()| {
            let crit = values[i].get("extensions").and_then(|e| e.get("critical"));
            match crit {
                Some(c) => portability::scan(c, "/extensions/critical", &[], Code::NonportableContent),
                None => Ok(()),
            }
        });
        match res {
            Ok(()) => r.pass("portability", name(*k), "no denylisted member names or value shapes"),
            Err(e) => {
                r.deny("portability", name(*k), e);
                return false;
            }
        }
    }
    true
}

/// Step 6, `signatures`: every signature and attestation becomes an
/// evidence entry; an unverified one makes the record inconsistent but does
/// not stop the pass.
fn signatures(r: &mut Run, arts: &[Artifact], keys: &KeySet) {
    for a in arts {
        let sigs = a.get("signatures").and_then(Value::as_array).unwrap_or_default();
        if sigs.is_empty() {
            r.not_verified(&format!("{} signatures", name(a.kind)), "the artifact carries no signature");
        }
        for c in signature::verify_all(sigs, a.kind.purpose(), &a.digest, keys) {
            let subject = format!("{} signature[{}] kid={}", name(a.kind), c.index, c.key_id);
            if c.verified {
                r.pass("signatures", &subject, c.detail.clone());
            } else {
                let code = c.code.as_deref().and_then(Code::parse).unwrap_or(Code::SignatureNotVerified);
                r.deny("signatures", &subject, Error::new(code, "", c.detail.clone()));
            }
            r.ev.signatures.push(c);
        }
        for c in signature::verify_attestations(a.get("attestations").and_then(Value::as_array).unwrap_or_default()) {
            r.deny(
                "signatures",
                &format!("{} attestation[{}]", name(a.kind), c.index),
                Error::new(Code::AttestationMalformed, "", c.detail.clone()),
            );
            r.ev.signatures.push(c);
        }
    }
}

/// Step 7, `bind`: the deployment binds the blueprint; what the host did
/// not supply to check (freshness, live descriptors) is reported not
/// verified. `false` when denied.
fn bind(r: &mut Run, arts: &[Artifact], inputs: &BindingInputs) -> bool {
    match binding::verify_binding(&arts[1], &arts[0], inputs) {
        Ok(rep) => {
            r.pass("bind", "deployment → blueprint", format!("binds {}", arts[0].digest));
            if !rep.freshness_verified {
                r.not_verified("binding_attestation_freshness", "no `now` and maximum age supplied by the host");
            }
            if !rep.descriptors_verified {
                r.not_verified("binding_descriptor_digests", "no live tool descriptors supplied by the host");
            }
            true
        }
        Err(e) => {
            r.deny("bind", "deployment → blueprint", e);
            false
        }
    }
}

/// Step 8, `bounds`: the effective bounds are blueprint ∧ deployment ∧ host,
/// with the clamps that produced them.
fn effective_bounds(r: &mut Run, arts: &[Artifact], inputs: &Inputs) {
    match bounds_step(&arts[0], &arts[1], inputs) {
        Ok((effective, clamps, substituted)) => {
            r.pass("bounds", "blueprint ∧ deployment ∧ host", format!("{} clamp(s)", clamps.len()));
            if substituted {
                r.not_verified("host_bounds", "no host bounds supplied: the deployment's host_bounds stood in");
            }
            r.ev.effective_bounds = Some(effective);
            r.ev.clamps = clamps;
        }
        Err(e) => r.deny("bounds", "blueprint ∧ deployment ∧ host", e),
    }
}

fn strictest(lattice: &[&str], values: impl Iterator<Item = String>) -> Value {
    let top = values.filter_map(|v| lattice.iter().position(|x| *x == v)).max().unwrap_or(0);
    Value::str(lattice[top])
}

/// The blueprint's requested bounds: its `ceilings`, its classification
/// ceiling, and the strictest obligations its capabilities and effects
/// declare. It states no disclosure ceiling, so it requests the deployment's.
pub fn blueprint_source(bp: &Artifact, deployment: &Artifact) -> Result<Bounds> {
    let mut m: Map = bp.get("ceilings").and_then(Value::as_object).cloned().unwrap_or_default();
    let caps = bp.get("capability_requirements").and_then(Value::as_array).unwrap_or_default();
    let effects = bp.get("effect_intents").and_then(Value::as_array).unwrap_or_default();
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    m.insert(
        "classification_ceiling",
        Value::Object(Map::from_pairs(vec![
            ("markers".into(), Value::Array(vec![])),
            ("ordinal".into(), bp.get("classification_ceiling").cloned().unwrap_or(Value::Null)),
        ])),
    );
    m.insert("authority_trait", strictest(artifact::AUTHORITY, caps.iter().map(|c| field(c, "authority_trait"))));
    m.insert("approval_trait", strictest(artifact::APPROVAL, caps.iter().map(|c| field(c, "approval_trait"))));
    m.insert(
        "effect_impact_ceiling",
        strictest(artifact::IMPACT, caps.iter().chain(effects).map(|c| field(c, "impact_class"))),
    );
    let disclosure =
        deployment.get("host_bounds").and_then(|h| h.get("disclosure_ceiling")).cloned().unwrap_or(Value::Null);
    m.insert("disclosure_ceiling", disclosure);
    Bounds::from_value(&Value::Object(m), "blueprint")
}

fn bounds_step(bp: &Artifact, dep: &Artifact, inputs: &Inputs) -> Result<(Value, Vec<Clamp>, bool)> {
    let requested = blueprint_source(bp, dep)?;
    let dep_bounds = Bounds::from_value(dep.get("host_bounds").unwrap_or(&Value::Null), "deployment")?;
    let (host, substituted) = match &inputs.host_bounds {
        Some(h) => (Bounds::from_value(h, "host")?, false),
        None => (dep_bounds.clone(), true),
    };
    let (_, out) = bounds::intersect(&requested, &dep_bounds, &host, &inputs.posture)?;
    Ok((out.effective, out.clamps, substituted))
}

impl Evidence {
    /// A person-readable report: checks in order, effective bounds, clamps,
    /// and what was not verified.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "Agent Blueprint Protocol reconcile — evidence, not a decision");
        let _ = writeln!(
            s,
            "verdict: {}",
            if self.consistent { "consistent (every check this protocol can run passed)" } else { "INCONSISTENT" }
        );
        if let Some(d) = &self.blueprint_digest {
            let _ = writeln!(s, "blueprint digest:  {d}");
        }
        if let Some(d) = &self.deployment_digest {
            let _ = writeln!(s, "deployment digest: {d}");
        }
        let _ = writeln!(s, "\nchecks (pinned order):");
        for c in &self.checks {
            let mark = if c.verified { "ok  " } else { "FAIL" };
            let code = c.code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
            let _ = writeln!(s, "  {mark} {:<12} {}{code}: {}", c.step, c.subject, c.detail);
        }
        if let Some(Value::Object(m)) = &self.effective_bounds {
            let _ = writeln!(s, "\neffective bounds:");
            for (k, v) in m.iter() {
                let _ = writeln!(s, "  {k:<24} {}", canon::canonical_string(v).unwrap_or_default());
            }
        }
        let _ = writeln!(s, "\nclamps: {}", self.clamps.len());
        for c in &self.clamps {
            let _ = writeln!(
                s,
                "  {}{}: requested {} → effective {}",
                c.bound,
                if c.protected { " (protected, acknowledged)" } else { "" },
                canon::canonical_string(&c.requested).unwrap_or_default(),
                canon::canonical_string(&c.effective).unwrap_or_default()
            );
        }
        let _ = writeln!(s, "\nnot verified ({}):", self.not_verified.len());
        for n in &self.not_verified {
            let _ = writeln!(s, "  - {}: {}", n.surface, n.reason);
        }
        s
    }
}
