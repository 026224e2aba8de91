//! `jcp intent`: Agent-Safe Intent v1 (spec agent-safe-intent-v1 §7),
//! offline.
//!
//! - `jcp intent verify PATH... [--json]`: each file is a vector, a refusal
//!   vector, a suite or a binding of your own; a directory is every `.json`
//!   file directly in it. Exit 0 when every pinned hash (and refusal)
//!   reproduced, 1 naming each that did not with its expected and computed
//!   values, 2 when a file could not be read or parsed (or nothing was named).
//!   A bare binding's canonical bytes and hash are printed to compare.
//! - `jcp intent hash FILE [--json]`: the canonical bytes and the intent hash
//!   of one binding (accepted under §3 first), of a vector's binding, or of
//!   any JSON value.
//! - `jcp intent capture --framework openai|vercel|langchain|mcp RECORD
//!   --context CTX [--json]`: the framework's own tool-call record, the
//!   operator's tool binding and the trusted context (CTX:
//!   `{"tool_binding": {...}, "trusted_context": {...}}`) become a binding
//!   (§8); its canonical bytes and hash are printed, exit 0. A record the
//!   adapter refuses (a member the agent may not supply, a malformed record,
//!   another framework's record, another tool, an undeclared argument) exits
//!   1 with its code and where; an unreadable file or a malformed CTX exits 2.
//! - `jcp intent schema`: the `schema.json` generated from the validator.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use intent::frameworks::{self, CaptureContext, Framework};
use intent::verify::{self, Kind, Report};
use serde::Serialize;

use crate::out;

#[derive(Debug, Args)]
pub struct IntentArgs {
    #[command(subcommand)]
    pub command: IntentCommand,
}

#[derive(Debug, Subcommand)]
pub enum IntentCommand {
    /// Reproduces vectors: canonical bytes, hashes, mutations (all distinct) and refusals.
    Verify(VerifyArgs),
    /// Prints the canonical bytes and the intent hash of a binding or any JSON value.
    Hash(HashArgs),
    /// Prints schema.json (JSON Schema 2020-12), generated from the validator.
    Schema,
    /// Compares two bindings: which properties make them different intents (§6). Exit 0 same intent, 1 different.
    Compare(CompareArgs),
    /// Captures a framework's own tool-call record as a binding (§8) and prints its canonical bytes and hash.
    Capture(CaptureArgs),
}

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// Whose record it is: an OpenAI Responses API `function_call` item, a Vercel AI SDK `tool-call` part, a LangChain `ToolCall`, or an MCP `tools/call` request.
    #[arg(long, value_parser = ["openai", "vercel", "langchain", "mcp"])]
    pub framework: String,
    /// The record, as the framework emitted it (a JSON file).
    pub record: PathBuf,
    /// The capture context: `{"tool_binding": {...}, "trusted_context": {...}}` (the operator's tool binding and the runtime's trusted context).
    #[arg(long)]
    pub context: PathBuf,
    /// The result as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Vector files, bindings, or directories of them (their `.json` files, not recursive).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The report as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HashArgs {
    /// A binding (an object with `protocol_version`), a vector (its `binding` is hashed), or any JSON document.
    pub file: PathBuf,
    /// The result as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first binding (or vector, or JSON document).
    pub first: PathBuf,
    /// The second.
    pub second: PathBuf,
    /// The result as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: IntentArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        IntentCommand::Verify(a) => run_verify(&a),
        IntentCommand::Hash(a) => run_hash(&a),
        IntentCommand::Compare(a) => run_compare(&a),
        IntentCommand::Capture(a) => run_capture(&a),
        IntentCommand::Schema => {
            print!("{}", intent::schema::schema_text()?);
            Ok(ExitCode::from(out::CLEAN))
        }
    }
}

#[derive(Debug, Serialize)]
struct FileReport {
    file: String,
    #[serde(flatten)]
    report: Report,
}

#[derive(Debug, Serialize)]
struct Unreadable {
    file: String,
    code: &'static str,
    message: String,
}

#[derive(Debug, Serialize)]
struct VerifyReport {
    version: &'static str,
    protocol: &'static str,
    files: Vec<FileReport>,
    unreadable: Vec<Unreadable>,
    /// Pinned vectors (and refusals) that reproduced.
    reproduced: usize,
    /// Unpinned bindings whose bytes and hash were computed for the caller.
    computed: usize,
    failed: usize,
    exit: u8,
}

/// Files named, a directory expanded to its `.json` entries (sorted); a path
/// that cannot be listed is kept, and reported unreadable when read.
fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            match std::fs::read_dir(p) {
                Ok(entries) => {
                    let mut found: Vec<PathBuf> = entries
                        .filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "json"))
                        .collect();
                    found.sort();
                    files.extend(found);
                }
                Err(_) => files.push(p.clone()),
            }
        } else {
            files.push(p.clone());
        }
    }
    files
}

fn read(path: &Path) -> Result<Vec<u8>, Unreadable> {
    std::fs::read(path).map_err(|e| Unreadable {
        file: path.display().to_string(),
        code: "UNREADABLE",
        message: e.to_string(),
    })
}

fn run_verify(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    for path in expand(&args.paths) {
        let name = path.display().to_string();
        let bytes = match read(&path) {
            Ok(b) => b,
            Err(u) => {
                unreadable.push(u);
                continue;
            }
        };
        match verify::verify_bytes(&bytes) {
            Ok(report) => files.push(FileReport { file: name, report }),
            Err(e) => unreadable.push(Unreadable { file: name, code: e.code(), message: e.to_string() }),
        }
    }
    let failed = files.iter().filter(|f| !f.report.ok).count();
    let computed = files.iter().filter(|f| f.report.ok && !f.report.pinned).count();
    let exit = if files.is_empty() || !unreadable.is_empty() {
        out::ERROR
    } else if failed > 0 {
        out::FINDINGS
    } else {
        out::CLEAN
    };
    let report = VerifyReport {
        version: "jcp.intent-conformance/1",
        protocol: intent::PROTOCOL_VERSION,
        reproduced: files.len() - failed - computed,
        computed,
        failed,
        files,
        unreadable,
        exit,
    };
    out::emit(args.json, &report, || render(&report))?;
    Ok(ExitCode::from(exit))
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Binding => "binding",
        Kind::Canonical => "canonical",
        Kind::Refusal => "refusal",
        Kind::Suite => "suite",
        Kind::Unrecognised => "unrecognised",
    }
}

fn render(report: &VerifyReport) -> String {
    let width = report
        .files
        .iter()
        .map(|f| f.file.len())
        .chain(report.unreadable.iter().map(|u| u.file.len()))
        .max()
        .unwrap_or(0);
    let mut lines = vec![format!("jcp intent conformance ({})", report.protocol), String::new()];
    for f in &report.files {
        let r = &f.report;
        let shape = match r.kind {
            Kind::Suite => format!("{} cases", r.cases),
            Kind::Refusal => "refused as pinned".to_owned(),
            _ if r.mutations > 0 => format!("base + {} mutations, {} distinct hashes", r.mutations, r.hashes),
            _ if r.derived => "base, derived from its framework record".to_owned(),
            _ if r.pinned => "base".to_owned(),
            _ => "base, unpinned".to_owned(),
        };
        let outcome = match (r.ok, r.pinned) {
            (false, _) => "FAILED",
            (true, false) => "COMPUTED",
            (true, true) => "REPRODUCED",
        };
        lines.push(format!("{:width$}  {:<12}  {:<40}  {outcome}", f.file, kind_name(r.kind), shape));
        for finding in &r.findings {
            let at = finding.path.as_deref().map(|p| format!(" at {p}")).unwrap_or_default();
            let values = match (&finding.expected, &finding.computed) {
                (None, None) => String::new(),
                (e, c) => {
                    format!(": expected {}, computed {}", e.as_deref().unwrap_or("-"), c.as_deref().unwrap_or("-"))
                }
            };
            lines.push(format!("    {}{at}{values}", finding.code));
        }
        if r.ok && !r.pinned {
            lines.push(format!("    canonical  {}", r.canonical_json.as_deref().unwrap_or("")));
            lines.push(format!("    hash       {}", r.intent_hash.as_deref().unwrap_or("")));
        }
    }
    for u in &report.unreadable {
        lines.push(format!("{:width$}  UNREADABLE  {}: {}", u.file, u.code, u.message));
    }
    let verdict = if report.exit == out::ERROR {
        if report.files.is_empty() && report.unreadable.is_empty() {
            "NOTHING CHECKED: no .json file found".to_owned()
        } else {
            format!("ERROR: {} file(s) could not be read or parsed", report.unreadable.len())
        }
    } else if report.failed > 0 {
        format!("DOES NOT CONFORM: {} of {} did not reproduce", report.failed, report.files.len())
    } else if report.reproduced == 0 {
        "COMPUTED: nothing was pinned; compare the bytes and the hash with your implementation's".to_owned()
    } else {
        "CONFORMS: every pinned hash reproduced".to_owned()
    };
    lines.push(String::new());
    lines.push(format!(
        "Vectors  {} reproduced, {} computed, {} failed",
        report.reproduced, report.computed, report.failed
    ));
    lines.push(format!("Verdict  {verdict}"));
    lines.join("\n")
}

#[derive(Debug, Serialize)]
struct HashReport {
    file: String,
    /// `binding` when the document has `protocol_version` (accepted under §3 first), else `canonical`.
    kind: intent::Subject,
    canonical_json: String,
    intent_hash: String,
}

fn read_doc(path: &Path) -> anyhow::Result<intent::Value> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| out::coded("UNREADABLE", format!("{file}: {e}")))?;
    intent::parse(&bytes).map_err(|e| out::coded(e.code(), format!("{file}: {e} ({})", e.rule())))
}

/// A refusal printed (and exit 1), as `hash` and `capture` both report one.
fn emit_refusal(json: bool, file: &str, r: &intent::Refusal) -> anyhow::Result<ExitCode> {
    #[derive(Serialize)]
    struct Refused<'a> {
        file: &'a str,
        refusal: &'static str,
        rule: &'static str,
        message: &'a str,
    }
    let refused = Refused { file, refusal: r.code, rule: r.rule, message: &r.message };
    out::emit(json, &refused, || {
        format!("REFUSED {}: {}\n  rule: {}", refused.refusal, refused.message, refused.rule)
    })?;
    Ok(ExitCode::from(out::FINDINGS))
}

fn run_hash(args: &HashArgs) -> anyhow::Result<ExitCode> {
    let file = args.file.display().to_string();
    let parsed = read_doc(&args.file)?;
    // The same inspection the console's Intent panel shows (intent::inspect).
    let i = intent::inspect::inspect_value(&parsed);
    match (i.canonical_json, i.intent_hash, i.refusal) {
        (Some(canonical_json), Some(intent_hash), None) => {
            let report = HashReport { file, kind: i.kind, canonical_json, intent_hash };
            out::emit(args.json, &report, || format!("{}\n{}", report.canonical_json, report.intent_hash))?;
            Ok(ExitCode::from(out::CLEAN))
        }
        (_, _, refusal) => {
            let r = refusal.unwrap_or(intent::Refusal {
                code: "INTERNAL",
                rule: "internal",
                message: "no hash and no refusal".into(),
            });
            emit_refusal(args.json, &file, &r)
        }
    }
}

fn run_compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    #[derive(Serialize)]
    struct CompareReport<'a> {
        first: String,
        second: String,
        /// Each document's own refusal as a binding, if any (compared all the same).
        first_refusal: Option<intent::Refusal>,
        second_refusal: Option<intent::Refusal>,
        #[serde(flatten)]
        comparison: &'a intent::Comparison,
    }
    let (a, b) = (read_doc(&args.first)?, read_doc(&args.second)?);
    let (sa, sb) = (intent::inspect::subject(&a), intent::inspect::subject(&b));
    let c = intent::compare(sa, sb).map_err(|e| out::coded(e.error.code(), e.to_string()))?;
    let refusal = |v: &intent::Value| intent::inspect::inspect_value(v).refusal;
    let report = CompareReport {
        first: args.first.display().to_string(),
        second: args.second.display().to_string(),
        first_refusal: refusal(&a),
        second_refusal: refusal(&b),
        comparison: &c,
    };
    out::emit(args.json, &report, || {
        let mut t = format!(
            "first   {}  {}\nsecond  {}  {}\n",
            c.left.intent_hash, report.first, c.right.intent_hash, report.second
        );
        for (side, r) in [("first", &report.first_refusal), ("second", &report.second_refusal)] {
            if let Some(r) = r {
                let _ = writeln!(t, "{side} is refused as a binding: {} {} ({})", r.code, r.message, r.rule);
            }
        }
        if c.same_intent {
            t += "SAME INTENT: equal canonical bytes, equal hash\n";
        } else {
            let _ = writeln!(
                t,
                "DIFFERENT INTENTS: {} propert{} differ (§6)",
                c.differences.len(),
                if c.differences.len() == 1 { "y" } else { "ies" }
            );
            for d in &c.differences {
                let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
                let _ = writeln!(
                    t,
                    "  {:<8} {}: {} -> {}",
                    format!("{:?}", d.change).to_lowercase(),
                    d.path,
                    side(&d.left),
                    side(&d.right)
                );
            }
        }
        t.trim_end().to_owned()
    })?;
    Ok(ExitCode::from(if c.same_intent { out::CLEAN } else { out::FINDINGS }))
}

fn run_capture(args: &CaptureArgs) -> anyhow::Result<ExitCode> {
    #[derive(Serialize)]
    struct CaptureReport<'a> {
        framework: Framework,
        record: String,
        context: String,
        /// `action.type` and `action.resource` of the proposal the record became.
        action: &'a str,
        resource: &'a str,
        /// MCP only: the canonical arguments' digest, as in `context.mcp_arguments_digest`.
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments_digest: Option<&'a str>,
        canonical_json: &'a str,
        intent_hash: &'a str,
        /// §8's rubric: which capabilities the framework's record carries (native) and which the adapter adds.
        coverage: BTreeMap<&'static str, &'static str>,
    }
    let framework = Framework::from_name(&args.framework).map_err(|e| out::coded(e.code(), e.to_string()))?;
    let record = read_doc(&args.record)?;
    let context_file = args.context.display().to_string();
    let ctx = CaptureContext::from_value(framework, &read_doc(&args.context)?)
        .map_err(|e| out::coded(e.code(), format!("{context_file}: {e} ({})", e.rule())))?;
    let file = args.record.display().to_string();
    let c = match frameworks::capture_record(framework, &record, &ctx) {
        Ok(c) => c,
        Err(e) => return emit_refusal(args.json, &file, &intent::Refusal::from(&e)),
    };
    let report = CaptureReport {
        framework,
        record: file,
        context: context_file,
        action: &c.proposal.action_type,
        resource: &c.proposal.resource,
        arguments_digest: c.arguments_digest.as_deref(),
        canonical_json: &c.captured.canonical_json,
        intent_hash: &c.captured.intent_hash,
        coverage: framework.coverage().into_iter().map(|(k, v)| (k, v.label())).collect(),
    };
    out::emit(args.json, &report, || format!("{}\n{}", report.canonical_json, report.intent_hash))?;
    Ok(ExitCode::from(out::CLEAN))
}
