//! `jcp intent`: §7 conformance from the command line (exit 0 / 1 / 2,
//! `--json` as one line, bare bindings computed, mutations all distinct).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

fn jcp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jcp")).args(args).output().expect("run jcp")
}

fn json_line(out: &Output) -> serde_json::Value {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(text.trim_end().lines().count(), 1, "--json is one line: {text}");
    serde_json::from_str(&text).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn s7_published_vectors_and_the_first_binding_reproduce_exit_0() {
    let vectors = testkit::interop("agent-safe-intent/vectors");
    let first = testkit::interop("agent-safe-intent/agent-safe-intent-v1.json");
    let out = jcp(&["intent", "verify", p(&vectors), p(&first)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("CONFORMS"), "{stdout}");
    assert!(stdout.contains("utf16-sort-order.json"), "{stdout}");
}

#[test]
fn s7_own_corpus_reproduces_exit_0_json_one_line() {
    let dirs =
        ["vectors", "refusals", "frameworks", "differential"].map(|d| testkit::conformance(&format!("intent/{d}")));
    let mut args = vec!["intent", "verify", "--json"];
    args.extend(dirs.iter().map(|d| p(d)));
    let out = jcp(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let report = json_line(&out);
    assert_eq!(report["failed"], 0);
    assert_eq!(report["exit"], 0);
    let files = report["files"].as_array().unwrap();
    assert!(files.len() >= 45, "{}", files.len());
    let cp = files.iter().find(|f| f["file"].as_str().unwrap().ends_with("compromised-principal.json")).unwrap();
    assert_eq!(cp["hashes"].as_u64().unwrap(), cp["mutations"].as_u64().unwrap() + 1);
}

#[test]
fn s7_a_vector_that_does_not_reproduce_exits_1_naming_expected_and_computed() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(testkit::interop("agent-safe-intent/vectors/negative-zero.json")).unwrap();
    let bad = dir.path().join("tampered.json");
    std::fs::write(&bad, text.replace("e6a312b1", "00000000")).unwrap();
    let out = jcp(&["intent", "verify", p(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("tampered.json"), "{stdout}");
    assert!(stdout.contains("HASH_MISMATCH"), "{stdout}");
    assert!(stdout.contains("expected sha256:00000000"), "{stdout}");
    assert!(stdout.contains("computed sha256:e6a312b1"), "{stdout}");

    let out = jcp(&["intent", "verify", "--json", p(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    let r = json_line(&out);
    assert_eq!(r["failed"], 1);
    assert_eq!(r["files"][0]["findings"][0]["code"], "HASH_MISMATCH");
}

#[test]
fn s7_unreadable_or_unparseable_file_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"binding\": ").unwrap();
    let good = testkit::interop("agent-safe-intent/vectors/negative-zero.json");
    let out = jcp(&["intent", "verify", "--json", p(&good), p(&broken)]);
    assert_eq!(out.status.code(), Some(2));
    let r = json_line(&out);
    assert_eq!(r["unreadable"][0]["code"], "JSON_SYNTAX");
    let missing = dir.path().join("absent.json");
    assert_eq!(jcp(&["intent", "verify", p(&missing)]).status.code(), Some(2));
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(jcp(&["intent", "verify", p(empty.path())]).status.code(), Some(2));
}

#[test]
fn s7_bare_binding_prints_its_canonical_bytes_and_hash() {
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(testkit::interop("agent-safe-intent/agent-safe-intent-v1.json")).unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("my-binding.json");
    std::fs::write(&mine, serde_json::to_string_pretty(&doc["binding"]).unwrap()).unwrap();
    let out = jcp(&["intent", "verify", p(&mine)]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("COMPUTED"), "{stdout}");
    assert!(stdout.contains(doc["intent_hash"].as_str().unwrap()), "{stdout}");
    assert!(stdout.contains(doc["canonical_json"].as_str().unwrap()), "{stdout}");

    let out = jcp(&["intent", "hash", p(&mine)]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), doc["canonical_json"].as_str());
    assert_eq!(lines.next(), doc["intent_hash"].as_str());
}

#[test]
fn s3_hash_refuses_a_binding_with_an_extra_key_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(testkit::interop("agent-safe-intent/agent-safe-intent-v1.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut b = doc["binding"].clone();
    b["approved_by"] = "agent".into();
    let f = dir.path().join("b.json");
    std::fs::write(&f, b.to_string()).unwrap();
    let out = jcp(&["intent", "hash", "--json", p(&f)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_line(&out)["refusal"], "BINDING_UNKNOWN_KEY");
}

#[test]
fn s3_schema_subcommand_prints_the_committed_schema() {
    let out = jcp(&["intent", "schema"]);
    assert_eq!(out.status.code(), Some(0));
    let committed = std::fs::read_to_string(testkit::conformance("intent/schema.json")).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), committed);
}

#[test]
fn s4_hash_of_a_vector_is_the_hash_of_its_binding() {
    let v = testkit::interop("agent-safe-intent/vectors/utf16-sort-order.json");
    let out = jcp(&["intent", "hash", "--json", p(&v)]);
    assert_eq!(out.status.code(), Some(0));
    let r = json_line(&out);
    assert_eq!(r["kind"], "canonical");
    assert_eq!(r["intent_hash"], "sha256:87fb08703bfcfc2249c4aa2ed144c53b900de74f7bedb432ea690e0b5388f3fa");
    assert_eq!(r["canonical_json"], "{\"Z\":3,\"za\":2,\"zé\":1,\"Éclair\":4}");
}

#[test]
fn s6_compare_names_the_property_that_makes_another_intent_exit_1_and_same_intent_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let c = dir.path().join("c.json");
    std::fs::write(&a, r#"{"action":{"type":"deployment.scale","parameters":{"replicas":3}},"n":-0}"#).unwrap();
    std::fs::write(&b, r#"{"n":0,"action":{"parameters":{"replicas":30},"type":"deployment.scale"}}"#).unwrap();
    std::fs::write(&c, r#"{"n":0,"action":{"parameters":{"replicas":3},"type":"deployment.scale"}}"#).unwrap();
    let out = jcp(&["intent", "compare", "--json", p(&a), p(&b)]);
    assert_eq!(out.status.code(), Some(1));
    let r = json_line(&out);
    assert_eq!(r["same_intent"], false);
    assert_eq!(r["differences"].as_array().unwrap().len(), 1);
    assert_eq!(r["differences"][0]["path"], "$.action.parameters.replicas");
    assert_eq!(r["differences"][0]["change"], "changed");
    assert_ne!(r["left"]["intent_hash"], r["right"]["intent_hash"]);
    let text = jcp(&["intent", "compare", p(&a), p(&b)]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("DIFFERENT INTENTS: 1 property differ"));
    // Key order and -0 are not properties: the same intent, exit 0.
    let same = jcp(&["intent", "compare", "--json", p(&a), p(&c)]);
    assert_eq!(same.status.code(), Some(0));
    assert_eq!(json_line(&same)["same_intent"], true);
    // The hash `jcp intent hash` prints is the one compare states.
    let h = json_line(&jcp(&["intent", "hash", "--json", p(&b)]));
    assert_eq!(h["intent_hash"], r["right"]["intent_hash"]);
}

/// A framework vector's record and capture context, written as the files
/// `jcp intent capture` reads.
fn capture_files(dir: &Path, framework: &str) -> (std::path::PathBuf, std::path::PathBuf, serde_json::Value) {
    let text = std::fs::read_to_string(testkit::conformance(&format!("intent/frameworks/{framework}.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let record = dir.join(format!("{framework}.record.json"));
    let ctx = dir.join(format!("{framework}.context.json"));
    std::fs::write(&record, v["record"].to_string()).unwrap();
    let c = serde_json::json!({"tool_binding": v["tool_binding"], "trusted_context": v["trusted_context"]});
    std::fs::write(&ctx, c.to_string()).unwrap();
    (record, ctx, v)
}

#[test]
fn s8_capture_turns_each_frameworks_record_into_the_vectors_bytes_and_hash() {
    let dir = tempfile::tempdir().unwrap();
    for framework in ["openai", "vercel", "langchain", "mcp"] {
        let (record, ctx, v) = capture_files(dir.path(), framework);
        let out = jcp(&["intent", "capture", "--framework", framework, p(&record), "--context", p(&ctx)]);
        assert_eq!(out.status.code(), Some(0), "{framework}: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8(out.stdout).unwrap();
        let mut lines = stdout.lines();
        assert_eq!(lines.next(), v["canonical_json"].as_str(), "{framework}");
        assert_eq!(lines.next(), v["intent_hash"].as_str(), "{framework}");

        let out = jcp(&["intent", "capture", "--json", "--framework", framework, p(&record), "--context", p(&ctx)]);
        assert_eq!(out.status.code(), Some(0));
        let r = json_line(&out);
        assert_eq!(r["framework"], framework);
        assert_eq!(r["intent_hash"], v["intent_hash"]);
        assert_eq!(r["action"], v["binding"]["action"]["type"]);
        assert_eq!(r["resource"], v["binding"]["action"]["resource"]);
        assert_eq!(r["coverage"], v["coverage"], "{framework}: §8's rubric row");
        assert_eq!(r.get("arguments_digest").is_some(), framework == "mcp");
    }
    // `verify` derives each framework vector's binding from its record (§8).
    let out = jcp(&["intent", "verify", p(&testkit::conformance("intent/frameworks"))]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("derived from its framework record").count(), 4, "{stdout}");
}

#[test]
fn s3_s8_capture_refuses_a_record_that_names_its_tenant_exit_1_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (record, ctx, v) = capture_files(dir.path(), "vercel");
    let mut bad = v["record"].clone();
    bad["tenantId"] = "00000000-0000-4000-8000-0000000000ff".into();
    std::fs::write(&record, bad.to_string()).unwrap();
    let out = jcp(&["intent", "capture", "--json", "--framework", "vercel", p(&record), "--context", p(&ctx)]);
    assert_eq!(out.status.code(), Some(1));
    let r = json_line(&out);
    assert_eq!(r["refusal"], "FRAMEWORK_RECORD_FORBIDDEN_KEY");
    assert_eq!(r["message"], "vercel record carries tenantId at $: the agent may not supply it");
    let text = jcp(&["intent", "capture", "--framework", "vercel", p(&record), "--context", p(&ctx)]);
    assert_eq!(text.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&text.stdout).starts_with("REFUSED FRAMEWORK_RECORD_FORBIDDEN_KEY"));
}

#[test]
fn s8_capture_refuses_another_frameworks_record_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let (openai_record, _, _) = capture_files(dir.path(), "openai");
    let (_, langchain_ctx, _) = capture_files(dir.path(), "langchain");
    let out = jcp(&[
        "intent",
        "capture",
        "--json",
        "--framework",
        "langchain",
        p(&openai_record),
        "--context",
        p(&langchain_ctx),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let r = json_line(&out);
    assert_eq!(r["refusal"], "FRAMEWORK_MISMATCH");
    assert_eq!(r["message"], "the record is openai's tool-call record, not langchain's");
}

#[test]
fn s8_capture_with_an_unparseable_record_or_a_malformed_context_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let (record, ctx, v) = capture_files(dir.path(), "openai");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"type\": ").unwrap();
    let out = jcp(&["intent", "capture", "--framework", "openai", p(&broken), "--context", p(&ctx)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JSON_SYNTAX"));
    let mut c = serde_json::json!({"tool_binding": v["tool_binding"], "trusted_context": v["trusted_context"]});
    c["trusted_context"]["principal"] = "ops@example.invalid".into();
    std::fs::write(&ctx, c.to_string()).unwrap();
    let out = jcp(&["intent", "capture", "--framework", "openai", p(&record), "--context", p(&ctx)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CAPTURE_CONTEXT_INVALID"), "{out:?}");
    let out = jcp(&["intent", "capture", "--framework", "crewai", p(&record), "--context", p(&ctx)]);
    assert_eq!(out.status.code(), Some(2), "clap refuses a framework with no adapter");
}
