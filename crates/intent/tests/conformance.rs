//! §7 conformance: every published vector (../shared/interop/agent-safe-intent)
//! and every vector of this project (conformance/intent/) reproduces.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use intent::frameworks::{capture_record, CaptureContext, Framework};
use intent::mcp::{bind_tools_call, McpToolBinding, McpTrustedContext};
use intent::verify::{self, Kind};
use intent::{Actor, Object, Proposal, Value};

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Value {
    intent::parse(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_reproduces(path: &Path) -> verify::Report {
    let report =
        verify::verify_bytes(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(report.ok, "{} did not reproduce: {:#?}", path.display(), report.findings);
    report
}

#[test]
fn s5_pinned_first_binding_reproduces() {
    let path = testkit::interop("agent-safe-intent/agent-safe-intent-v1.json");
    let report = assert_reproduces(&path);
    assert_eq!(report.kind, Kind::Binding);
    assert!(report.pinned);
    assert_eq!(
        report.intent_hash.as_deref(),
        Some("sha256:aff2fd3aa1a7557a77f20afa5583f56eb0c39529304b31f69ee78e1e7b53e316")
    );
    // §7.3: and it is accepted under §3.
    let doc = load(&path);
    intent::accept(doc.as_object().unwrap().get("binding").unwrap()).unwrap();
}

#[test]
fn s7_every_published_canonicalization_vector_reproduces() {
    let files = json_files(&testkit::interop("agent-safe-intent/vectors"));
    assert_eq!(files.len(), 6, "the six vectors of §4");
    for f in &files {
        let r = assert_reproduces(f);
        assert_eq!(r.kind, Kind::Canonical, "{}", f.display());
        assert!(r.pinned);
    }
}

#[test]
fn s4_own_canonicalization_vectors_reproduce() {
    let files = json_files(&testkit::conformance("intent/vectors"));
    assert!(files.len() >= 12, "{files:?}");
    for f in &files {
        assert_reproduces(f);
    }
}

#[test]
fn s4_differential_suite_generated_by_node_reproduces() {
    let path = testkit::conformance("intent/differential/random-values.json");
    let r = assert_reproduces(&path);
    assert_eq!(r.kind, Kind::Suite);
    assert!(r.cases >= 200, "{} cases", r.cases);
}

#[test]
fn s3_every_refusal_vector_is_refused_with_its_code() {
    let files = json_files(&testkit::conformance("intent/refusals"));
    assert!(files.len() >= 30, "{files:?}");
    for f in &files {
        let r = assert_reproduces(f);
        assert_eq!(r.kind, Kind::Refusal, "{}", f.display());
    }
}

#[test]
fn s6_compromised_principal_all_hashes_distinct() {
    let path = testkit::conformance("intent/vectors/compromised-principal.json");
    let r = assert_reproduces(&path);
    assert_eq!(r.kind, Kind::Binding);
    assert!(r.mutations >= 8);
    assert_eq!(r.hashes, r.mutations + 1, "base and every mutation hash differently");
}

#[test]
fn s6_a_vector_whose_mutations_collide_fails() {
    let path = testkit::conformance("intent/vectors/compromised-principal.json");
    let mut doc = load(&path);
    let obj = doc.as_object_mut().unwrap();
    let base = obj.get("binding").unwrap().clone();
    let hash = obj.get("intent_hash").unwrap().clone();
    let canonical = obj.get("canonical_json").unwrap().clone();
    let Value::Array(muts) = obj.get_mut("mutations").unwrap() else { panic!() };
    let m = muts[0].as_object_mut().unwrap();
    m.insert("binding", base);
    m.insert("intent_hash", hash);
    m.insert("canonical_json", canonical);
    let r = verify::verify_document(&doc);
    assert!(!r.ok);
    let codes: Vec<&str> = r.findings.iter().map(|f| f.code).collect();
    assert!(codes.contains(&"MUTATION_NOT_DISTINCT"), "{codes:?}");
    assert!(codes.contains(&"MUTATION_PATH_UNCHANGED"), "{codes:?}");
}

#[test]
fn s6_a_mutation_changing_two_properties_is_reported() {
    let path = testkit::conformance("intent/vectors/compromised-principal.json");
    let mut doc = load(&path);
    let Value::Array(muts) = doc.as_object_mut().unwrap().get_mut("mutations").unwrap() else { panic!() };
    let m = muts[0].as_object_mut().unwrap();
    let b = m.get_mut("binding").unwrap().as_object_mut().unwrap();
    b.insert("expires_at", "2027-01-01T00:00:00Z".into());
    let r = verify::verify_document(&doc);
    let codes: Vec<&str> = r.findings.iter().map(|f| f.code).collect();
    assert!(codes.contains(&"MUTATION_NOT_SINGLE_PROPERTY"), "{codes:?}");
}

#[test]
fn s7_a_tampered_pinned_hash_is_a_finding_naming_expected_and_computed() {
    let path = testkit::interop("agent-safe-intent/agent-safe-intent-v1.json");
    let mut doc = load(&path);
    doc.as_object_mut().unwrap().insert("intent_hash", "sha256:0000".into());
    let r = verify::verify_document(&doc);
    assert!(!r.ok);
    assert_eq!(r.findings[0].code, "HASH_MISMATCH");
    assert_eq!(r.findings[0].expected.as_deref(), Some("sha256:0000"));
    assert_eq!(
        r.findings[0].computed.as_deref(),
        Some("sha256:aff2fd3aa1a7557a77f20afa5583f56eb0c39529304b31f69ee78e1e7b53e316")
    );
}

/// RFC 8785's number serialization is ECMAScript's `Number::toString`; its
/// test file pins 1,000 doubles by bit pattern.
#[test]
fn s4_4_numbers_match_the_es6_number_test_file() {
    let text = std::fs::read_to_string(testkit::interop("standards/jcs/es6testfile_first1000.txt")).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let (hex, expected) = line.split_once(',').unwrap();
        let bits = u64::from_str_radix(hex, 16).unwrap();
        let x = f64::from_bits(bits);
        if !x.is_finite() {
            continue;
        }
        assert_eq!(intent::canonical::format_number(x).unwrap(), expected, "bits {hex}");
        n += 1;
    }
    assert!(n >= 990, "{n}");
}

/// The RFC 8785 examples: where no object has an array-index key, JCS and
/// this canonical form coincide; where one has, the reference algorithm
/// puts index keys first (outputs below computed by Node 20 with the
/// reference algorithm: JSON.stringify over sorted, re-inserted keys).
#[test]
fn s4_rfc8785_examples_match_jcs_or_the_reference_index_order() {
    for name in ["arrays", "french", "unicode", "values"] {
        let input = std::fs::read(testkit::interop(&format!("standards/jcs/input/{name}.json"))).unwrap();
        let expected = std::fs::read_to_string(testkit::interop(&format!("standards/jcs/output/{name}.json"))).unwrap();
        let got = intent::canonical_json(&intent::parse(&input).unwrap()).unwrap();
        assert_eq!(got, expected, "{name}");
    }
    let structures = std::fs::read(testkit::interop("standards/jcs/input/structures.json")).unwrap();
    assert_eq!(
        intent::canonical_json(&intent::parse(&structures).unwrap()).unwrap(),
        r#"{"1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"":"empty","A":{},"a":{}}"#
    );
    let weird = std::fs::read(testkit::interop("standards/jcs/input/weird.json")).unwrap();
    assert_eq!(
        intent::canonical_json(&intent::parse(&weird).unwrap()).unwrap(),
        "{\"1\":\"One\",\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"</script>\":\"Browser Challenge\",\"\u{80}\":\"Control\u{7f}\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😂\":\"Smiley\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
    );
}

fn s(v: &Value, key: &str) -> String {
    v.as_object().unwrap().get(key).and_then(Value::as_str).unwrap_or_else(|| panic!("{key}")).to_owned()
}

fn opt(v: &Value, key: &str) -> Option<String> {
    v.as_object().unwrap().get(key).and_then(Value::as_str).map(str::to_owned)
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.as_object()
        .unwrap()
        .get(key)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

fn actor(v: &Value) -> Actor {
    Actor { id: s(v, "id"), actor_type: s(v, "type"), runtime: opt(v, "runtime"), trust_level: opt(v, "trust_level") }
}

#[test]
fn s8_mcp_vector_reproduces_through_the_adapter() {
    let path = testkit::conformance("intent/frameworks/mcp.json");
    assert_reproduces(&path);
    let doc = load(&path);
    let o = doc.as_object().unwrap();
    let tb = o.get("tool_binding").unwrap();
    let tool = McpToolBinding {
        tool: s(tb, "tool"),
        action: s(tb, "action"),
        system: s(tb, "system"),
        operation: s(tb, "operation"),
        environment: opt(tb, "environment"),
        target: s(tb, "target"),
        consequential: strings(tb, "consequential"),
        arguments: strings(tb, "arguments"),
    };
    let tc = o.get("trusted_context").unwrap();
    let trusted = McpTrustedContext {
        tenant_id: s(tc, "tenant_id"),
        intent_id: s(tc, "intent_id"),
        captured_at: s(tc, "captured_at"),
        expires_at: s(tc, "expires_at"),
        actor: actor(tc.as_object().unwrap().get("actor").unwrap()),
        idempotency_key: s(tc, "idempotency_key"),
        server: opt(tc, "server"),
        transport: opt(tc, "transport"),
        principal: opt(tc, "principal"),
        context: tc.as_object().unwrap().get("context").unwrap().as_object().unwrap().clone(),
    };
    let bound = bind_tools_call(o.get("record").unwrap(), &tool, &trusted).unwrap();
    assert_eq!(bound.arguments_digest, s(&doc, "arguments_digest"));
    assert_eq!(&bound.captured.binding, o.get("binding").unwrap());
    assert_eq!(bound.captured.canonical_json, s(&doc, "canonical_json"));
    assert_eq!(bound.captured.intent_hash, s(&doc, "intent_hash"));
}

/// The reference's own MCP framework vector (decionis/agent-safe-pipeline,
/// conformance/frameworks/mcp.json): its record, tool binding and trusted
/// context, restated here, reproduce its pinned arguments digest and hash.
#[test]
fn s8_reference_mcp_framework_vector_reproduces() {
    let record = intent::parse(
        br#"{"jsonrpc":"2.0","id":"call_synthetic_1","method":"tools/call","params":{"name":"delete_customer","arguments":{"customerId":"synthetic-1"}}}"#,
    )
    .unwrap();
    let tool = McpToolBinding {
        tool: "delete_customer".into(),
        action: "delete_customer".into(),
        system: "crm".into(),
        operation: "delete_customer".into(),
        environment: None,
        target: "crm:customer:{customerId}".into(),
        consequential: vec!["customerId".into()],
        arguments: vec!["customerId".into()],
    };
    let trusted = McpTrustedContext {
        tenant_id: "00000000-0000-4000-8000-000000000004".into(),
        intent_id: "33333333-3333-4333-8333-333333333334".into(),
        captured_at: "2026-09-19T12:00:00.000Z".into(),
        expires_at: "2026-09-19T12:01:00.000Z".into(),
        actor: Actor {
            id: "synthetic-mcp-agent".into(),
            actor_type: "AI_AGENT".into(),
            runtime: Some("mcp".into()),
            trust_level: None,
        },
        idempotency_key: "mcp-delete-synthetic-1-v1".into(),
        server: Some("synthetic-crm-tools".into()),
        transport: Some("stdio".into()),
        principal: None,
        context: Object::new(),
    };
    let bound = bind_tools_call(&record, &tool, &trusted).unwrap();
    assert_eq!(bound.arguments_digest, "sha256:9fbecdbc9e34afe9b74c0dfc28c0ca6ff7d1c83118ade0360fe831c480820a70");
    assert_eq!(bound.captured.intent_hash, "sha256:b275810adef3e8f9192430270f15e294f1fe41dbea789c916e89d6726b521b30");
}

/// §6: every mutation of the compromised-principal vector is another intent,
/// and `intent::compare` names the one property it changed: a single
/// difference at its path, or, where the property is an array whose elements
/// were reordered, differences only inside it.
#[test]
fn s6_compare_names_the_one_mutated_property_of_every_compromised_principal_mutation() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/intent/vectors/compromised-principal.json");
    let doc = load(&path);
    let o = doc.as_object().unwrap();
    let base = o.get("binding").unwrap();
    let Some(Value::Array(mutations)) = o.get("mutations") else { panic!("no mutations") };
    assert!(mutations.len() >= 8);
    for m in mutations {
        let m = m.as_object().unwrap();
        let Some(Value::String(p)) = m.get("path") else { panic!("mutation without path") };
        let c = intent::compare(base, m.get("binding").unwrap()).unwrap();
        assert!(!c.same_intent, "{p:?}");
        let want = format!("$.{}", p.as_str().unwrap());
        assert!(!c.differences.is_empty());
        for d in &c.differences {
            assert!(d.path == want || d.path.starts_with(&format!("{want}[")), "{want}: {:?}", c.differences);
        }
        if !matches!(m.get("value"), Some(Value::Array(_))) {
            assert_eq!(c.differences.len(), 1, "{want}: {:?}", c.differences);
        }
        let Some(Value::String(h)) = m.get("intent_hash") else { panic!("no hash") };
        assert_eq!(Some(c.right.intent_hash.as_str()), h.as_str());
    }
}

/// A framework vector of this project, run through the adapter
/// (`intent::frameworks`): the proposal, the binding, its bytes and hash
/// are the ones Node's independent mapping wrote, and §8's rubric row is
/// the vector's.
fn assert_framework_vector_derives(framework: Framework) {
    let path = testkit::conformance(&format!("intent/frameworks/{}.json", framework.name()));
    let report = assert_reproduces(&path);
    assert!(report.derived, "{}: verify derived the binding from the record", path.display());
    let doc = load(&path);
    let o = doc.as_object().unwrap();
    assert_eq!(o.get("framework").and_then(Value::as_str), Some(framework.name()));
    let ctx = CaptureContext::from_members(framework, o.get("tool_binding"), o.get("trusted_context")).unwrap();
    let c = capture_record(framework, o.get("record").unwrap(), &ctx).unwrap();
    assert_eq!(c.framework, framework);
    assert_eq!(c.proposal, Proposal::from_value(o.get("proposal").unwrap()).unwrap());
    assert_eq!(&c.captured.binding, o.get("binding").unwrap());
    assert_eq!(c.captured.canonical_json, s(&doc, "canonical_json"));
    assert_eq!(c.captured.intent_hash, s(&doc, "intent_hash"));
    let coverage = o.get("coverage").unwrap().as_object().unwrap();
    assert_eq!(coverage.len(), 8);
    for (capability, label) in framework.coverage() {
        assert_eq!(coverage.get(capability).and_then(Value::as_str), Some(label.label()), "{capability}");
    }
}

#[test]
fn s8_openai_function_call_record_becomes_the_vectors_binding() {
    assert_framework_vector_derives(Framework::OpenAi);
}

#[test]
fn s8_vercel_tool_call_part_becomes_the_vectors_binding() {
    assert_framework_vector_derives(Framework::Vercel);
}

#[test]
fn s8_langchain_tool_call_becomes_the_vectors_binding() {
    assert_framework_vector_derives(Framework::LangChain);
}

#[test]
fn s8_mcp_tools_call_becomes_the_vectors_binding_through_the_common_entry() {
    assert_framework_vector_derives(Framework::Mcp);
}

/// §7 + §8: a framework vector whose record no longer makes its binding
/// does not reproduce, though its binding and hash still agree.
#[test]
fn s8_a_framework_vector_whose_record_differs_from_its_binding_fails() {
    let path = testkit::conformance("intent/frameworks/vercel.json");
    let mut doc = load(&path);
    let record = doc.as_object_mut().unwrap().get_mut("record").unwrap().as_object_mut().unwrap();
    let input = record.get_mut("input").unwrap().as_object_mut().unwrap();
    input.insert("graceSeconds", Value::Number(0.0));
    let r = verify::verify_document(&doc);
    assert!(!r.ok);
    assert!(!r.derived);
    assert_eq!(r.findings[0].code, "FRAMEWORK_BINDING_MISMATCH", "{:?}", r.findings);

    let mut doc = load(&path);
    let record = doc.as_object_mut().unwrap().get_mut("record").unwrap().as_object_mut().unwrap();
    record.insert("tenantId", "00000000-0000-4000-8000-0000000000ff".into());
    let r = verify::verify_document(&doc);
    assert!(!r.ok);
    assert_eq!(r.findings[0].code, "FRAMEWORK_NOT_DERIVED");
    assert!(
        r.findings[0].computed.as_deref().unwrap().starts_with("FRAMEWORK_RECORD_FORBIDDEN_KEY"),
        "{:?}",
        r.findings
    );
}

/// §8: every framework refusal code has a refusal vector, refused with it.
#[test]
fn s8_every_framework_refusal_code_has_a_vector() {
    let mut codes = std::collections::BTreeSet::new();
    for f in json_files(&testkit::conformance("intent/refusals")) {
        let doc = load(&f);
        let o = doc.as_object().unwrap();
        if o.contains_key("record") {
            assert_reproduces(&f);
            codes.insert(s(&doc, "refusal"));
        }
    }
    for code in [
        "FRAMEWORK_RECORD_FORBIDDEN_KEY",
        "FRAMEWORK_RECORD_INVALID",
        "FRAMEWORK_MISMATCH",
        "FRAMEWORK_TOOL_MISMATCH",
        "FRAMEWORK_ARGUMENTS_INVALID",
        "FRAMEWORK_TARGET_UNRESOLVED",
        "FRAMEWORK_UNKNOWN",
        "CAPTURE_CONTEXT_INVALID",
        "CONTEXT_RESERVED_KEY",
    ] {
        assert!(codes.contains(code), "{code}: {codes:?}");
    }
}
