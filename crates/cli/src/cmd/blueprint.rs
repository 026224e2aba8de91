//! `jcp blueprint …`: the Agent Blueprint Protocol (crate `blueprint`).
//! Every result is evidence, never an authorization decision.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use blueprint::artifact::{self, Kind};
use blueprint::binding::BindingInputs;
use blueprint::json::Value;
use blueprint::limits::Limits;
use blueprint::reconcile::{self, Inputs};
use blueprint::signature::{self, KeySet};
use clap::{Args, Subcommand};

use crate::out;

/// Agent Blueprint Protocol: conformance, reconcile, digest, canonical, verify.
#[derive(Debug, Args)]
pub struct BlueprintArgs {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Runs case files (`{cases:[{class,id,surface,input,expected}]}`); folders are searched for *.json.
    Conformance {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Reconciles a Blueprint and its Deployment: the Evidence report.
    Reconcile(ReconcileArgs),
    /// Recomputes an artifact's tagged content digest and compares it to the declared one.
    Digest {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Prints the RFC 8785 canonical form of a JSON file.
    Canonical { file: PathBuf },
    /// Decodes an artifact (canonical-first, closed world, digest) and verifies its signatures.
    Verify {
        file: PathBuf,
        #[arg(long)]
        keys: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

// The flags of `jcp blueprint reconcile` (its help is the variant's doc line).
#[derive(Debug, Args)]
struct ReconcileArgs {
    blueprint: PathBuf,
    deployment: PathBuf,
    /// Trusted Ed25519 public keys: `{kid: base64url}` or a JWK set.
    #[arg(long)]
    keys: Option<PathBuf>,
    /// Host bounds (a 13-member bounds object); default: the deployment's `host_bounds`.
    #[arg(long)]
    host_bounds: Option<PathBuf>,
    /// Current time for attestation freshness (RFC 3339 UTC), with --max-attestation-age-ms.
    #[arg(long)]
    now: Option<String>,
    #[arg(long)]
    max_attestation_age_ms: Option<i64>,
    /// Live tool descriptor digests `{logical_operation: "sha-256:…"}` (the rug-pull check).
    #[arg(long)]
    descriptors: Option<PathBuf>,
    /// Accept narrowing of this protected bound, recording evidence (repeatable).
    #[arg(long)]
    acknowledge: Vec<String>,
    #[arg(long)]
    json: bool,
}

fn read(p: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))
}

/// Bytes-layer failures make the input unreadable (exit 2); every other
/// protocol refusal is a finding (exit 1).
fn is_unreadable(e: &blueprint::Error) -> bool {
    let c = e.code();
    c.starts_with("ceiling:")
        || matches!(
            c.as_str(),
            "invalid_syntax"
                | "invalid_encoding"
                | "invalid_number"
                | "number_not_double_expressible"
                | "duplicate_member"
                | "trailing_bytes"
        )
}

/// A blueprint error about `what`: its code (owned: the ceiling family is
/// `ceiling:<limit>`) and the path before its message.
fn at(e: &blueprint::Error, what: &Path) -> anyhow::Error {
    out::coded(e.code(), format!("{}: {e}", what.display()))
}

fn kind_of(v: &Value) -> Option<Kind> {
    if v.get("deployment_digest").is_some() {
        Some(Kind::Deployment)
    } else if v.get("content_digest").is_some() {
        Some(Kind::Blueprint)
    } else {
        None
    }
}

fn keys(p: Option<&PathBuf>) -> anyhow::Result<KeySet> {
    match p {
        None => Ok(KeySet::new()),
        Some(p) => KeySet::from_json(&read(p)?).map_err(|e| at(&e, p)),
    }
}

fn conformance_text(report: &blueprint::conformance::Report) -> String {
    let mut s = String::new();
    for f in &report.file_failures {
        let _ = writeln!(s, "FILE {} not run: {} ({})", f.file, f.code, f.detail);
    }
    for r in report.results.iter().filter(|r| !r.passed) {
        let _ = writeln!(s, "FAIL {} [{}] expected {}, got {}", r.id, r.surface, r.expected, r.got);
    }
    for (surface, t) in &report.surfaces {
        let _ = writeln!(s, "  {surface:<30} {:>4} passed {:>4} failed", t.passed, t.failed);
    }
    let r = &report.release;
    match &report.corpus_digest {
        Some(d) => {
            let _ = writeln!(s, "corpus digest {d} (index verified)");
        }
        None => {
            let _ = writeln!(s, "corpus digest: not computed (case files without an index.json)");
        }
    }
    let _ = writeln!(
        s,
        "floor expected: {} surfaces x {} classes ({} required cells); this release is the reference corpus {} ({} cases, registry {})",
        r.surfaces, r.classes, r.required_cells, r.corpus_digest, r.cases, r.registry_digest
    );
    if !report.missing_surfaces.is_empty() || !report.missing_classes.is_empty() {
        let _ = writeln!(
            s,
            "this run covers less than the floor: no case for surfaces [{}] and classes [{}]",
            report.missing_surfaces.join(", "),
            report.missing_classes.join(", ")
        );
    }
    let _ = writeln!(s, "{}", report.summary());
    s
}

/// Runs `jcp blueprint …`.
pub fn run(args: BlueprintArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Sub::Conformance { paths, json } => conformance(&paths, json),
        Sub::Reconcile(a) => reconcile_files(a),
        Sub::Digest { file, json } => digest(&file, json),
        Sub::Canonical { file } => canonical(&file),
        Sub::Verify { file, keys: kf, json } => verify(&file, kf.as_ref(), json),
    }
}

/// `jcp blueprint conformance`: the case files run, one report.
fn conformance(paths: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let mut files = Vec::new();
    let mut digests = Vec::new();
    for p in paths {
        let (f, d) = blueprint::conformance::collect(p).map_err(|e| at(&e, p))?;
        files.extend(f);
        digests.extend(d);
    }
    let mut report = blueprint::conformance::run_files(&files).map_err(|e| at(&e, Path::new("cases")))?;
    if let [only] = digests.as_slice() {
        report.corpus_digest = Some(only.to_string());
    }
    out::emit(json, &report, || conformance_text(&report))?;
    Ok(ExitCode::from(if report.green { out::CLEAN } else { out::FINDINGS }))
}

/// `jcp blueprint reconcile`: a Blueprint and its Deployment reconciled
/// under the host's inputs (keys, bounds, descriptors, posture): the Evidence.
fn reconcile_files(a: ReconcileArgs) -> anyhow::Result<ExitCode> {
    let ReconcileArgs {
        blueprint,
        deployment,
        keys: kf,
        host_bounds,
        now,
        max_attestation_age_ms,
        descriptors,
        acknowledge,
        json,
    } = a;
    let bp = read(&blueprint)?;
    let dep = read(&deployment)?;
    let mut inputs = Inputs { keys: keys(kf.as_ref())?, ..Inputs::default() };
    inputs.binding = BindingInputs { now, max_attestation_age_ms, ..BindingInputs::default() };
    if let Some(d) = &descriptors {
        let v = blueprint::json::decode(&read(d)?, &Limits::default()).map_err(|e| at(&e, d))?;
        let m =
            v.as_object().ok_or_else(|| out::coded("invalid_type", format!("{}: expected an object", d.display())))?;
        for (op, digest) in m.iter() {
            if let Some(s) = digest.as_str() {
                inputs.binding.descriptors.insert(op.clone(), s.to_string());
            }
        }
    }
    if !acknowledge.is_empty() {
        inputs.posture = blueprint::bounds::Posture::Acknowledge(acknowledge);
    }
    if let Some(h) = &host_bounds {
        let v = blueprint::json::decode(&read(h)?, &Limits::default()).map_err(|e| at(&e, h))?;
        inputs.host_bounds = Some(v);
    }
    let ev = reconcile::reconcile(&bp, &dep, &inputs);
    out::emit(json, &ev, || ev.to_text())?;
    Ok(ExitCode::from(if ev.consistent { out::CLEAN } else { out::FINDINGS }))
}

/// `jcp blueprint digest`: an artifact's content digest recomputed and
/// compared with the declared one.
fn digest(file: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let bytes = read(file)?;
    let v = blueprint::canon::decode_canonical(&bytes, &Limits::default()).map_err(|e| at(&e, file))?;
    let Some(kind) = kind_of(&v) else {
        return Err(out::coded(
            "invalid_type",
            format!("{}: neither a Blueprint (content_digest) nor a Deployment (deployment_digest)", file.display()),
        ));
    };
    let m = v.as_object().cloned().unwrap_or_default();
    let computed = artifact::compute_digest(kind, &m).map_err(|e| at(&e, file))?;
    let declared = m.get(kind.digest_member()).and_then(Value::as_str).unwrap_or_default().to_string();
    let matches = declared == computed.to_string();
    let body = serde_json::json!({"kind": kind, "computed": computed, "declared": declared, "matches": matches});
    out::emit(json, &body, || {
        format!(
            "{computed}\n{}",
            if matches {
                "matches the declared digest"
            } else {
                "DOES NOT match the declared digest (digest_mismatch)"
            }
        )
    })?;
    Ok(ExitCode::from(if matches { out::CLEAN } else { out::FINDINGS }))
}

/// `jcp blueprint canonical`: the RFC 8785 canonical form of a JSON file.
fn canonical(file: &Path) -> anyhow::Result<ExitCode> {
    let bytes = read(file)?;
    let v = blueprint::json::decode(&bytes, &Limits::default()).map_err(|e| at(&e, file))?;
    let s = blueprint::canon::canonical_string(&v).map_err(|e| at(&e, file))?;
    println!("{s}");
    Ok(ExitCode::from(out::CLEAN))
}

/// `jcp blueprint verify`: an artifact decoded and its signatures and
/// attestations verified.
fn verify(file: &Path, kf: Option<&PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let bytes = read(file)?;
    let keyset = keys(kf)?;
    let probe = blueprint::json::decode(&bytes, &Limits::default()).map_err(|e| at(&e, file))?;
    let kind = kind_of(&probe).unwrap_or(Kind::Blueprint);
    let a = match artifact::decode(kind, &bytes, &Limits::default()) {
        Ok(a) => a,
        Err(e) if is_unreadable(&e) => return Err(at(&e, file)),
        Err(e) => {
            let body = serde_json::json!({"kind": kind, "valid": false, "error": e});
            out::emit(json, &body, || format!("INVALID {kind:?}: {e}"))?;
            return Ok(ExitCode::from(out::FINDINGS));
        }
    };
    let sigs = a.get("signatures").and_then(Value::as_array).unwrap_or_default();
    let mut checks = signature::verify_all(sigs, kind.purpose(), &a.digest, &keyset);
    checks.extend(signature::verify_attestations(a.get("attestations").and_then(Value::as_array).unwrap_or_default()));
    // Nothing verified is not a verification: an unsigned artifact is a finding.
    let all = !checks.is_empty() && checks.iter().all(|c| c.verified);
    let body =
        serde_json::json!({"kind": kind, "valid": true, "digest": a.digest, "signatures": checks, "all_verified": all});
    out::emit(json, &body, || {
        let mut s = format!("valid {kind:?}, digest {}\n", a.digest);
        if checks.is_empty() {
            s.push_str("no signature to verify (unsigned: nothing is established)\n");
        }
        for c in &checks {
            let _ = writeln!(
                s,
                "  {} {} kid={} {}{}",
                if c.verified { "ok  " } else { "FAIL" },
                c.purpose,
                c.key_id,
                c.code.as_deref().map(|x| format!("[{x}] ")).unwrap_or_default(),
                c.detail
            );
        }
        s
    })?;
    Ok(ExitCode::from(if all { out::CLEAN } else { out::FINDINGS }))
}
