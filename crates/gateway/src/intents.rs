//! The auditor's side of a gateway run (Agent-Safe Intent §5, §8; JCP §8):
//! every request the gateway recorded carries, as its `args`, the canonical
//! JSON of the call's Agent-Safe binding; the frame's payload hash (which
//! each of its receipts seals) is that text's BLAKE3 content id, and its
//! intent hash that text's SHA-256. This re-derives both from the record:
//! the binding must be accepted (§3) and already in canonical form (§4),
//! its payload hash must match, and a receipt sealed by the stream's
//! steward must seal that payload hash. Nothing is skipped: a request that
//! cannot be read, carries no binding, or names a binding that fails is
//! counted and named.

use std::collections::HashMap;
use std::path::Path;

use jcp::cbor::ContentId;
use jcp_receipt::stream::{Item, Reader, RecordKind};
use serde::Serialize;

use crate::GatewayError;

/// One recorded call.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RecordedCall {
    /// The request record's offset in the stream.
    pub offset: u64,
    /// The tool (`context.mcp_tool`), when the binding names one.
    pub tool: Option<String>,
    /// The frame's action.
    pub action: String,
    /// The intent hash recomputed from the recorded binding (`sha256:` hex).
    pub intent_hash: Option<String>,
    /// The frame's payload hash.
    pub payload_hash: String,
    /// The receipts that seal this payload hash and verify (id, verdict).
    pub receipts: Vec<(String, String)>,
    /// What failed, if anything.
    pub problem: Option<String>,
}

/// Every recorded call of a stream.
#[derive(Debug, Clone, Serialize, Default)]
pub struct IntentsReport {
    /// Each request record, in stream order.
    pub calls: Vec<RecordedCall>,
    /// Framing faults met while reading (the reader goes on after each).
    pub faults: u64,
    /// Receipts that did not verify.
    pub receipts_failed: u64,
}

impl IntentsReport {
    /// Whether every call's binding, payload hash and receipt hold, and nothing was unreadable.
    pub fn clean(&self) -> bool {
        self.faults == 0 && self.receipts_failed == 0 && self.calls.iter().all(|c| c.problem.is_none())
    }
}

/// The auditor's check of a gateway's stream, for the audit (`jcp audit`
/// and the console's Auditor): `None` when no request of the stream names
/// an MCP tool (no gateway wrote it, and there is nothing to recompute);
/// else every recorded call, as [`verify_intents`] re-derives it.
pub fn gateway_intents(path: &Path) -> Result<Option<IntentsReport>, GatewayError> {
    let r = verify_intents(path)?;
    Ok(r.calls.iter().any(|c| c.tool.is_some()).then_some(r))
}

/// Adds to an audit of `paths` (in that order) the recomputation of every
/// gateway stream's recorded intents: each call that fails is an
/// `intent-mismatch` finding at its record. What `jcp audit` and the
/// console's Auditor both run, so their verdicts agree.
pub fn check_audit(report: &mut jcp_audit::Report, paths: &[std::path::PathBuf]) -> Result<(), GatewayError> {
    for (stream, path) in paths.iter().enumerate() {
        let Some(r) = gateway_intents(path)? else { continue };
        let failed: Vec<(usize, u64, String)> = r
            .calls
            .iter()
            .filter_map(|c| {
                c.problem.as_ref().map(|p| {
                    let what = c.tool.as_deref().map_or_else(|| c.action.clone(), |t| format!("{} ({t})", c.action));
                    (stream, c.offset, format!("gateway call {what}: {p}"))
                })
            })
            .collect();
        let calls = r.calls.len() as u64;
        let recomputed = calls - failed.len() as u64;
        report.add_intents(jcp_audit::IntentCheck { calls, recomputed }, failed);
    }
    Ok(())
}

/// Reads `path` and re-derives every recorded call's intent hash and payload hash.
pub fn verify_intents(path: &Path) -> Result<IntentsReport, GatewayError> {
    let f = std::fs::File::open(path).map_err(|e| GatewayError::io(format!("opening {}", path.display()), e))?;
    let reader = Reader::new(f).map_err(|e| GatewayError::Upstream(format!("{}: {e}", path.display())))?;
    let mut report = IntentsReport::default();
    let mut by_payload: HashMap<ContentId, Vec<usize>> = HashMap::new();
    for item in reader {
        let r = match item {
            Item::Record(r) => r,
            Item::Fault(_) => {
                report.faults += 1;
                continue;
            }
        };
        match r.kind {
            RecordKind::Request => {
                let (call, payload_hash) = read_call(r.offset, &r.payload);
                if let Some(ph) = payload_hash {
                    by_payload.entry(ph).or_default().push(report.calls.len());
                }
                report.calls.push(call);
            }
            RecordKind::Receipt => match jcp_receipt::verify_receipt(&r.payload, None) {
                Ok(v) => {
                    if let Some(ph) = v.core.payload_hash {
                        for &i in by_payload.get(&ph).into_iter().flatten() {
                            report.calls[i].receipts.push((
                                v.id.to_hex(),
                                match v.core.verdict {
                                    jcp::decision::Verdict::Allow => "allow".to_owned(),
                                    jcp::decision::Verdict::Deny(r) => format!("deny {}", r.as_str()),
                                },
                            ));
                        }
                    }
                }
                Err(_) => report.receipts_failed += 1,
            },
            _ => {}
        }
    }
    for c in &mut report.calls {
        if c.problem.is_none() && c.receipts.is_empty() {
            c.problem = Some("no verifying receipt seals this call's payload hash".into());
        }
    }
    Ok(report)
}

/// One request record read: the call as reported, and its frame's payload
/// hash when the record reads (what its receipts are matched by).
fn read_call(offset: u64, payload: &[u8]) -> (RecordedCall, Option<ContentId>) {
    let mut c = RecordedCall {
        offset,
        tool: None,
        action: String::new(),
        intent_hash: None,
        payload_hash: String::new(),
        receipts: Vec::new(),
        problem: None,
    };
    let req = match jcp_wire::endpoint::read_request_record(payload) {
        Ok((req, _)) => req,
        Err(e) => {
            c.problem = Some(format!("the request record does not read: {e}"));
            return (c, None);
        }
    };
    c.action.clone_from(&req.frame.action);
    c.payload_hash = req.frame.payload_hash.to_hex();
    let ph = Some(req.frame.payload_hash);
    let Some(args) = req.args.as_deref() else {
        c.problem = Some("the request carries no binding (no args)".into());
        return (c, ph);
    };
    if ContentId::of_bytes(args) != req.frame.payload_hash {
        c.problem = Some("the recorded binding's content id is not the frame's payload hash".into());
        return (c, ph);
    }
    let accepted = intent::parse(args).and_then(|v| {
        // The tool is read before the binding is judged: a refused binding
        // still names the call it claims to be (and marks a gateway's stream).
        c.tool = match &v {
            intent::Value::Object(o) => match o.get("context") {
                Some(intent::Value::Object(ctx)) => ctx.get("mcp_tool").and_then(|t| t.as_str().map(str::to_owned)),
                _ => None,
            },
            _ => None,
        };
        intent::binding::accept(&v)
    });
    match accepted {
        Ok(canon) => {
            if canon.canonical_json.as_bytes() == args {
                c.intent_hash = Some(canon.intent_hash);
            } else {
                c.problem = Some("the recorded binding is not in canonical form (§4)".into());
            }
        }
        Err(e) => c.problem = Some(format!("the recorded binding is refused: [{}] {e}", e.code())),
    }
    (c, ph)
}
