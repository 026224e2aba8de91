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
        let tool = match &v {
            intent::Value::Object(o) => match o.get("context") {
                Some(intent::Value::Object(ctx)) => ctx.get("mcp_tool").and_then(|t| t.as_str().map(str::to_owned)),
                _ => None,
            },
            _ => None,
        };
        intent::binding::accept(&v).map(|canon| (canon, tool))
    });
    match accepted {
        Ok((canon, tool)) => {
            c.tool = tool;
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
