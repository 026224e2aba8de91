//! §8 the framework adapters' refusals: a record is bound whole, under the
//! operator's tool binding, or refused with a code naming the member;
//! never repaired.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use intent::frameworks::{self, capture_record, detect, CaptureContext, Framework, FORBIDDEN_RECORD_KEYS};
use intent::{IntentError, Value};

fn parse(text: &str) -> Value {
    intent::parse(text.as_bytes()).unwrap()
}

/// The project's vector for `framework`: its record and its capture context.
fn vector(framework: Framework) -> (Value, CaptureContext) {
    let path = testkit::conformance(&format!("intent/frameworks/{}.json", framework.name()));
    let doc = intent::parse(&std::fs::read(path).unwrap()).unwrap();
    let o = doc.as_object().unwrap();
    let ctx = CaptureContext::from_members(framework, o.get("tool_binding"), o.get("trusted_context")).unwrap();
    (o.get("record").unwrap().clone(), ctx)
}

fn with(record: &Value, key: &str, value: Value) -> Value {
    let mut r = record.clone();
    r.as_object_mut().unwrap().insert(key, value);
    r
}

const NON_MCP: [Framework; 3] = [Framework::OpenAi, Framework::Vercel, Framework::LangChain];

#[test]
fn s3_a_record_carrying_any_binding_property_is_refused_naming_it() {
    for framework in NON_MCP {
        let (record, ctx) = vector(framework);
        for key in FORBIDDEN_RECORD_KEYS {
            let bad = with(&record, key, "agent-chosen".into());
            match capture_record(framework, &bad, &ctx).unwrap_err() {
                IntentError::RecordForbiddenKey { framework: f, path, key: k } => {
                    assert_eq!((f, path.as_str(), k.as_str()), (framework.name(), "$", key));
                }
                other => panic!("{framework} {key}: {other:?}"),
            }
        }
    }
}

#[test]
fn s3_an_undeclared_argument_naming_a_binding_property_is_refused_as_such() {
    let (record, ctx) = vector(Framework::LangChain);
    let mut r = record.clone();
    let args = r.as_object_mut().unwrap().get_mut("args").unwrap().as_object_mut().unwrap();
    args.insert("idempotency_key", "agent-chosen".into());
    let e = capture_record(Framework::LangChain, &r, &ctx).unwrap_err();
    assert_eq!(e.code(), "FRAMEWORK_RECORD_FORBIDDEN_KEY");
    assert_eq!(e.to_string(), "langchain record carries idempotency_key at $.args: the agent may not supply it");
    // An undeclared argument that names nothing of the binding is refused too, by another code.
    let mut r = record;
    let args = r.as_object_mut().unwrap().get_mut("args").unwrap().as_object_mut().unwrap();
    args.insert("force", Value::Bool(true));
    let e = capture_record(Framework::LangChain, &r, &ctx).unwrap_err();
    assert_eq!(e.code(), "FRAMEWORK_ARGUMENTS_INVALID");
}

#[test]
fn s8_each_record_of_another_framework_is_refused_as_that_framework() {
    let records: Vec<(Framework, Value)> = Framework::ALL.iter().map(|f| (*f, vector(*f).0)).collect();
    for (found, record) in &records {
        assert_eq!(detect(record), Some(*found));
        for asked in Framework::ALL.into_iter().filter(|f| f != found) {
            let ctx = vector(asked).1;
            let e = capture_record(asked, record, &ctx).unwrap_err();
            assert_eq!(e, IntentError::FrameworkMismatch { expected: asked.name(), found: found.name() });
        }
    }
}

#[test]
fn s8_a_malformed_record_is_refused_naming_the_member() {
    let cases: [(Framework, &str, Value, &str); 9] = [
        (Framework::OpenAi, "arguments", Value::Bool(true), "$.arguments"),
        (Framework::OpenAi, "arguments", "{\"accountId\":\"ACC-7\"} x".into(), "$.arguments"),
        (Framework::OpenAi, "call_id", "".into(), "$.call_id"),
        (Framework::OpenAi, "type", "function_call_output".into(), "$.type"),
        (Framework::Vercel, "toolName", Value::Number(1.0), "$.toolName"),
        (Framework::Vercel, "providerMetadata", "x".into(), "$.providerMetadata"),
        (Framework::Vercel, "args", parse("{}"), "$.args"),
        (Framework::LangChain, "args", parse("[1]"), "$.args"),
        (Framework::LangChain, "id", Value::Number(3.0), "$.id"),
    ];
    for (framework, key, value, path) in cases {
        let (record, ctx) = vector(framework);
        match capture_record(framework, &with(&record, key, value), &ctx).unwrap_err() {
            IntentError::RecordInvalid { framework: f, path: p, .. } => {
                assert_eq!((f, p.as_str()), (framework.name(), path), "{framework} {key}");
            }
            other => panic!("{framework} {key}: {other:?}"),
        }
    }
    for framework in NON_MCP {
        let e = frameworks::read_tool_call(framework, &parse("[]")).unwrap_err();
        assert_eq!(e.code(), "FRAMEWORK_RECORD_INVALID");
    }
}

/// §8: LangChain's id is optional; without one the binding has no
/// `context.tool_call_id`, and nothing else changes.
#[test]
fn s8_langchain_call_without_an_id_binds_without_tool_call_id() {
    let (record, ctx) = vector(Framework::LangChain);
    let with_id = capture_record(Framework::LangChain, &record, &ctx).unwrap();
    for r in [with(&record, "id", Value::Null), {
        let mut r = record.clone();
        r.as_object_mut().unwrap().remove("id");
        r.as_object_mut().unwrap().remove("type");
        r
    }] {
        let c = capture_record(Framework::LangChain, &r, &ctx).unwrap();
        assert!(c.captured.binding.pointer_dotted("context.tool_call_id").is_none());
        let mut expected = with_id.captured.binding.clone();
        let context = expected.as_object_mut().unwrap().get_mut("context").unwrap().as_object_mut().unwrap();
        context.remove("tool_call_id");
        assert_eq!(c.captured.binding, expected);
    }
}

/// §6 through §8: a changed argument, call id or tool binding is another intent.
#[test]
fn s6_s8_every_record_change_that_reaches_the_binding_is_another_intent() {
    let (record, ctx) = vector(Framework::OpenAi);
    let base = capture_record(Framework::OpenAi, &record, &ctx).unwrap().captured.intent_hash;
    let args = record.as_object().unwrap().get("arguments").unwrap().as_str().unwrap();
    let changed = [
        with(&record, "arguments", args.replace("120000", "120001").into()),
        with(&record, "arguments", args.replace("1.50", "1.51").into()),
        with(&record, "call_id", "call_jcp_other".into()),
    ];
    for r in &changed {
        assert_ne!(capture_record(Framework::OpenAi, r, &ctx).unwrap().captured.intent_hash, base);
    }
    // The item's own id and a re-spelling of the same arguments text are not.
    let same = [
        with(&record, "id", "fc_other".into()),
        with(&record, "arguments", args.replace("1.50", "1.5").replace(",\"fee\"", " , \"fee\"").into()),
    ];
    for r in &same {
        assert_eq!(capture_record(Framework::OpenAi, r, &ctx).unwrap().captured.intent_hash, base);
    }
}

#[test]
fn s8_capture_context_refuses_members_the_adapter_would_not_use() {
    let ctx = |text: &str, framework| CaptureContext::from_value(framework, &parse(text)).unwrap_err().code();
    let tool = r#"{"tool":"t","action":"a","system":"s","operation":"o","target":"x:{k}","arguments":["k"]}"#;
    let trusted = r#"{"tenant_id":"00000000-0000-4000-8000-000000000001","intent_id":"00000000-0000-4000-8000-000000000002","captured_at":"2026-01-01T00:00:00Z","expires_at":"2026-01-01T00:01:00Z","actor":{"id":"a","type":"AI_AGENT"},"idempotency_key":"k"}"#;
    let ok = format!(r#"{{"tool_binding":{tool},"trusted_context":{trusted}}}"#);
    for f in Framework::ALL {
        CaptureContext::from_value(f, &parse(&ok)).unwrap();
    }
    let endpoint = ok.replace(r#""target""#, r#""endpoint":"POST /x","target""#);
    CaptureContext::from_value(Framework::OpenAi, &parse(&endpoint)).unwrap();
    assert_eq!(ctx(&endpoint, Framework::Mcp), "CAPTURE_CONTEXT_INVALID");
    let consequential = ok.replace(r#""target""#, r#""consequential":["k"],"target""#);
    assert_eq!(ctx(&consequential, Framework::Vercel), "CAPTURE_CONTEXT_INVALID");
    let server = ok.replace(r#""idempotency_key""#, r#""server":"s","idempotency_key""#);
    assert_eq!(ctx(&server, Framework::LangChain), "CAPTURE_CONTEXT_INVALID");
    assert_eq!(ctx(&ok.replace(r#","arguments":["k"]"#, ""), Framework::OpenAi), "CAPTURE_CONTEXT_INVALID");
    assert_eq!(ctx(&ok.replace(r#""id":"a","#, ""), Framework::OpenAi), "CAPTURE_CONTEXT_INVALID");
    assert_eq!(
        ctx(&format!(r#"{{"tool_binding":{tool},"trusted_context":{trusted},"x":1}}"#), Framework::OpenAi),
        "CAPTURE_CONTEXT_INVALID"
    );
    // The trusted values themselves are judged by §3 when the binding is made.
    let record = parse(r#"{"type":"tool_call","name":"t","args":{"k":"v"}}"#);
    let bad_tenant = CaptureContext::from_value(
        Framework::LangChain,
        &parse(&ok.replace("00000000-0000-4000-8000-000000000001", "tenant-1")),
    )
    .unwrap();
    assert_eq!(capture_record(Framework::LangChain, &record, &bad_tenant).unwrap_err().code(), "BINDING_INVALID_VALUE");
    let good = CaptureContext::from_value(Framework::LangChain, &parse(&ok)).unwrap();
    let c = capture_record(Framework::LangChain, &record, &good).unwrap();
    assert_eq!(c.proposal.resource, "x:v");
}

#[test]
fn s8_framework_names_are_the_clis_and_no_other() {
    for f in Framework::ALL {
        assert_eq!(Framework::from_name(f.name()).unwrap(), f);
    }
    assert_eq!(Framework::from_name("OpenAI").unwrap_err().code(), "FRAMEWORK_UNKNOWN");
}
