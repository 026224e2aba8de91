//! The auditor's recomputation of a gateway's recorded intents, as `jcp
//! audit` and the console's Auditor run it (Agent-Safe Intent §4, §5, §8;
//! JCP §8): a request recorded with a binding that is not in canonical form
//! is an `intent-mismatch` finding at its record, never skipped, and the
//! report counts what recomputed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jcp::cbor::{ContentId, Value};
use jcp::decision::Gate;
use jcp::energy::{Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{Capability, Grant};
use jcp::identity::Keypair;
use jcp_wire::endpoint::{Config, Endpoint};
use jcp_wire::message::RequestBody;

#[tokio::test]
async fn asi_s4_s8_a_recorded_binding_that_does_not_recompute_is_an_intent_mismatch_finding() {
    let t = tempfile::tempdir().unwrap();
    let stream = t.path().join("s.jcps");
    let (steward, issuer, agent) = (Keypair::generate(), Keypair::generate(), Keypair::generate());
    let resource = ContentId::of(&Value::text("everything"));
    let root = Grant {
        issuer: issuer.did(),
        subject: agent.did(),
        capability: Capability { resource, actions: vec!["echo".into()] },
        budget_uj: 1_000_000,
        budget_funds: None,
        caveats: Vec::new(),
        expiry: 4_000_000_000,
        parent: None,
        delegate_depth: Some(0),
        nonce: jcp::identity::fresh_nonce(),
    }
    .sign(&issuer)
    .unwrap();
    // The binding the gateway's MCP adapter makes of a tools/call.
    let line =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#;
    let call = jcp_gateway::session::tools_call_value(line).unwrap();
    let bound =
        intent::mcp::bind_tools_call(&call, &jcp_gateway::fuzzing::tool(), &jcp_gateway::fuzzing::trusted()).unwrap();
    let canonical = bound.captured.canonical_json.into_bytes();
    // The same binding as a holder that does not canonicalise would record it.
    let mut loose = b" ".to_vec();
    loose.extend_from_slice(&canonical);
    let (endpoint, _) = Endpoint::open(Config::new(&stream), steward, Gate::new(), None).unwrap();
    let mut client = endpoint.connect_local().unwrap();
    for args in [canonical, loose] {
        let req = RequestBody {
            frame: Frame {
                kind: FrameKind::ToolCall,
                trust: Trust::Control,
                grant_id: root.id(),
                action: "echo".into(),
                resource,
                payload_hash: ContentId::of_bytes(&args),
                model: None,
            },
            chain: vec![root.clone()],
            cost: Energy::new(10, Provenance::Estimator),
            money: None,
            label: None,
            args: Some(args),
            continues: None,
            now: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(),
        }
        .sign(&agent);
        let resp = client.call(&req).await.unwrap();
        assert!(resp.decision.is_allow(), "{:?}", resp.decision);
    }
    drop(client);
    endpoint.shutdown().await.unwrap();
    let paths = vec![stream];
    let mut report =
        jcp_audit::audit_paths(&paths, &jcp_audit::AuditOptions::default(), |_| std::ops::ControlFlow::Continue(()))
            .unwrap();
    jcp_gateway::intents::check_audit(&mut report, &paths).unwrap();
    assert_eq!(report.intents, Some(jcp_audit::IntentCheck { calls: 2, recomputed: 1 }), "{report:#?}");
    assert!(!report.clean);
    assert_eq!(report.findings_by_code.get(&jcp_audit::FindingCode::IntentMismatch), Some(&1));
    let f = report.findings.iter().find(|f| f.code == jcp_audit::FindingCode::IntentMismatch).unwrap();
    assert!(f.message.contains("echo") && f.message.contains("canonical form"), "{f:?}");
    assert!(f.offset > 0);
}

#[test]
fn asi_s8_a_stream_no_gateway_wrote_has_no_intents_to_recompute() {
    let t = tempfile::tempdir().unwrap();
    let stream = t.path().join("empty.jcps");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (endpoint, _) = Endpoint::open(Config::new(&stream), Keypair::generate(), Gate::new(), None).unwrap();
        endpoint.shutdown().await.unwrap();
    });
    assert!(jcp_gateway::gateway_intents(&stream).unwrap().is_none());
}
