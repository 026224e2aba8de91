//! `jcp blueprint …` end to end (issue 5: reachable by a user).

use std::process::Command;

fn jcp(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_jcp")).args(args).output().expect("run jcp");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn interop(rel: &str) -> String {
    testkit::interop(rel).display().to_string()
}

#[test]
fn s15_conformance_runs_the_interop_cases_and_closes_with_counts() {
    let (code, out, err) = jcp(&["blueprint", "conformance", &interop("agent-blueprint-protocol/cases")]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim_end().lines().last(), Some("68 passed, 0 failed"));
    let (code, out, _) =
        jcp(&["blueprint", "conformance", "--json", &interop("agent-blueprint-protocol/cases/json-decode.json")]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["passed"], 7);
    assert_eq!(v["failed"], 0);
}

#[test]
fn s15_conformance_prints_each_failure_and_exits_1() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("bad.json");
    std::fs::write(
        &p,
        r#"{"format":"agent-blueprint-protocol-conformance-cases","cases":[
        {"class":"valid","id":"ok-1","surface":"base64url.decode","input":{"base64url":"QQQ"},"expected":{"verdict":"valid","decoded":"QQQ"}},
        {"class":"invalid_encoding","id":"wrong-1","surface":"base64url.decode","input":{"base64url":"QQ=="},"expected":{"verdict":"invalid","code":"base64url_invalid"}}]}"#,
    )
    .expect("write");
    let (code, out, _) = jcp(&["blueprint", "conformance", p.to_str().expect("p")]);
    assert_eq!(code, 1);
    assert!(out.contains("wrong-1") && out.contains("base64url_invalid") && out.contains("base64url_padded"), "{out}");
    assert_eq!(out.trim_end().lines().last(), Some("1 passed, 1 failed"));
}

#[test]
fn s13_reconcile_golden_pair_human_and_json() {
    let bp = interop("agent-blueprint-protocol/vectors/blueprint-golden.json");
    let dep = interop("agent-blueprint-protocol/vectors/deployment-golden.json");
    let (code, out, _) = jcp(&["blueprint", "reconcile", &bp, &dep]);
    // the golden signatures name keys this host did not supply
    assert_eq!(code, 1, "{out}");
    for needle in [
        "checks (pinned order)",
        "effective bounds",
        "clamps: 0",
        "not verified",
        "tenancy",
        "evaluation_truth",
        "signature_key_unsupported",
    ] {
        assert!(out.contains(needle), "{needle} missing:\n{out}");
    }
    let (_, out, _) = jcp(&["blueprint", "reconcile", "--json", &bp, &dep]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["checks"].as_array().map(Vec::len), Some(14));
    assert!(v["not_verified"].as_array().expect("nv").len() >= 7);
    assert_eq!(v["effective_bounds"]["max_tokens"], 100_000);
}

#[test]
fn s5_digest_canonical_verify() {
    let bp = interop("agent-blueprint-protocol/vectors/blueprint-golden.json");
    let (code, out, _) = jcp(&["blueprint", "digest", &bp]);
    assert_eq!(code, 0);
    assert!(out.starts_with("sha-256:b1Aw4cU5AbV9k8bdbZkRCsySDHGpTAwB-aQm57Wh7B8"), "{out}");
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("x.json");
    std::fs::write(&p, "{\"b\": 1.0, \"a\": [1e2, \"\\u0041\"]}").expect("w");
    let (code, out, _) = jcp(&["blueprint", "canonical", p.to_str().expect("p")]);
    assert_eq!((code, out.trim_end()), (0, r#"{"a":[100,"A"],"b":1}"#));
    let (code, out, _) = jcp(&["blueprint", "verify", "--json", &bp]);
    assert_eq!(code, 1, "unverifiable signature without keys");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["valid"], true);
    assert_eq!(v["signatures"][0]["code"], "signature_key_unsupported");
    std::fs::write(&p, "{\"a\":").expect("w");
    let (code, _, err) = jcp(&["blueprint", "verify", p.to_str().expect("p")]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn s15_conformance_on_the_own_corpus_folder_verifies_its_index() {
    let dir = testkit::conformance("blueprint").display().to_string();
    let (code, out, err) = jcp(&["blueprint", "conformance", &dir]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.trim_end().ends_with(" passed, 0 failed"), "{out}");
    // it names the digest it ran and the floor it expects (issue 38)
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(testkit::conformance("blueprint/index.json")).expect("index"))
            .expect("json");
    let digest = index["corpus_digest"].as_str().expect("digest");
    assert!(out.contains(&format!("corpus digest {digest} (index verified)")), "{out}");
    assert!(out.contains("floor expected: 16 surfaces x 31 classes (90 required cells)"), "{out}");
    // a tampered copy is refused before any case runs
    let tmp = tempfile::tempdir().expect("tmp");
    let root = testkit::conformance("blueprint");
    std::fs::create_dir_all(tmp.path().join("cases")).expect("mkdir");
    std::fs::copy(root.join("index.json"), tmp.path().join("index.json")).expect("copy");
    for e in std::fs::read_dir(root.join("cases")).expect("cases") {
        let p = e.expect("e").path();
        std::fs::copy(&p, tmp.path().join("cases").join(p.file_name().expect("n"))).expect("copy");
    }
    std::fs::write(tmp.path().join("cases").join("stray.json"), "{}").expect("stray");
    let (code, _, err) = jcp(&["blueprint", "conformance", tmp.path().to_str().expect("p")]);
    assert_eq!(code, 2);
    assert!(err.contains("corpus_file_set_mismatch"), "{err}");
}

#[test]
fn s10_reconcile_descriptors_catch_a_tool_rug_pull() {
    let bp = interop("agent-blueprint-protocol/vectors/blueprint-golden.json");
    let dep = interop("agent-blueprint-protocol/vectors/deployment-golden.json");
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("descriptors.json");
    std::fs::write(
        &d,
        r#"{"example.demo.read_shape":"sha-256:VpMcbixeDnkz4W6WwFyJVm3BG_n8s1jEZANpZLvZEKI","record_summary":"sha-256:zenFB2mNSBmxJWG4DLIWcNyvFdf85m5Ic-BUmWOU02w"}"#,
    )
    .expect("w");
    let (code, out, _) = jcp(&["blueprint", "reconcile", "--json", "--descriptors", d.to_str().expect("p"), &bp, &dep]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let bind = v["checks"].as_array().expect("checks").iter().find(|c| c["step"] == "bind").expect("bind").clone();
    assert_eq!(bind["code"], "binding_descriptor_mismatch");
    assert!(v["effective_bounds"].is_null(), "bounds are not reached after a bind denial");
}

#[test]
fn s6_verify_an_unsigned_artifact_is_a_finding() {
    let cases = testkit::interop_json("agent-blueprint-protocol/cases/blueprint-decode.json");
    let text =
        cases["cases"].as_array().expect("cases").iter().find(|c| c["id"] == "blueprint-decode-valid").expect("valid")
            ["input"]["text"]
            .as_str()
            .expect("text")
            .to_string();
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("unsigned.json");
    std::fs::write(&p, text).expect("w");
    let (code, out, _) = jcp(&["blueprint", "verify", p.to_str().expect("p")]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no signature to verify"), "{out}");
}

#[test]
fn s15_conformance_json_gives_per_surface_and_per_class_counts() {
    let dir = testkit::conformance("blueprint").display().to_string();
    let (code, out, err) = jcp(&["blueprint", "conformance", "--json", &dir]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["green"], true);
    assert_eq!(v["failed"], 0);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(testkit::conformance("blueprint").join("index.json")).expect("index"))
            .expect("index json");
    assert_eq!(v["corpus_digest"], index["corpus_digest"]);
    assert_eq!(v["passed"], index["case_count"]);
    assert_eq!(v["missing_surfaces"].as_array().map(Vec::len), Some(0));
    let surfaces = v["surfaces"].as_object().expect("surfaces");
    for s in blueprint::conformance::SURFACES {
        let t = &surfaces[*s];
        assert!(t["passed"].as_u64().expect("n") >= 2, "{s}: {t}");
        assert_eq!(t["failed"], 0, "{s}");
    }
    // per class: the sum over classes is the case count, and the matrix
    // holds the same cells by surface
    let classes = v["classes"].as_object().expect("classes");
    let total: u64 = classes.values().map(|t| t["passed"].as_u64().expect("n")).sum();
    assert_eq!(Some(total), index["case_count"].as_u64());
    assert_eq!(v["matrix"]["federation.verify_commitment"]["audience_mismatch"]["passed"], 2);
    assert_eq!(v["matrix"]["schema.validate_instance"]["invalid_cardinality"]["passed"], 5);
    // the release this build implements, and the floor it holds the run to
    assert_eq!(v["release"]["corpus_digest"], "sha-256:vMyREM8ggUqVvGG0y2e4Gf-KmpksJjnx2eF8UjtpVP8");
    assert_eq!((v["release"]["cases"].as_u64(), v["release"]["classes"].as_u64()), (Some(96), Some(31)));
    // the human form closes with the same counts and a per-surface table
    let (_, text, _) = jcp(&["blueprint", "conformance", &dir]);
    assert!(text.contains("portability.scan"), "{text}");
}

#[test]
fn s15_unknown_surface_fails_its_file_only() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(
        dir.path().join("a-good.json"),
        r#"{"format":"agent-blueprint-protocol-conformance-cases","cases":[
        {"class":"valid","id":"ok-1","surface":"base64url.decode","input":{"base64url":"QQQ"},"expected":{"verdict":"valid","decoded":"QQQ"}}]}"#,
    )
    .expect("write");
    std::fs::write(
        dir.path().join("b-unknown.json"),
        r#"{"format":"agent-blueprint-protocol-conformance-cases","cases":[
        {"class":"valid","id":"tp-1","surface":"federation.teleport","input":{},"expected":{"verdict":"valid","x":1}}]}"#,
    )
    .expect("write");
    std::fs::write(dir.path().join("c-not-json.json"), "{").expect("write");
    let (code, out, err) = jcp(&["blueprint", "conformance", "--json", dir.path().to_str().expect("p")]);
    assert_eq!(code, 1, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["passed"], 1, "the good file still ran");
    assert_eq!(v["green"], false);
    let ff = v["file_failures"].as_array().expect("file failures");
    assert_eq!(ff.len(), 2);
    assert!(ff[0]["file"].as_str().expect("f").ends_with("b-unknown.json"));
    assert_eq!(ff[0]["code"], "corpus_case_invalid");
    assert!(ff[0]["detail"].as_str().expect("d").contains("federation.teleport"));
    assert!(ff[1]["file"].as_str().expect("f").ends_with("c-not-json.json"));
    let (code, text, _) = jcp(&["blueprint", "conformance", dir.path().to_str().expect("p")]);
    assert_eq!(code, 1);
    assert!(text.contains("b-unknown.json not run"), "{text}");
    assert_eq!(text.trim_end().lines().last(), Some("1 passed, 0 failed, 2 file(s) not run"));
}

/// §12: the parameterised ceiling family reaches the user whole
/// (`ceiling:depth`), as the code of an unreadable input (exit 2).
#[test]
fn s12_a_ceiling_code_reaches_the_user_whole() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("deep.json");
    std::fs::write(&p, format!("{}{}", "[".repeat(100), "]".repeat(100))).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_jcp"))
        .args(["blueprint", "canonical", &p.display().to_string()])
        .env("JCP_JSON_ERRORS", "1")
        .output()
        .expect("run jcp");
    assert_eq!(out.status.code(), Some(2));
    let err: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stderr).trim()).expect("one JSON line");
    assert_eq!(err["error"]["code"], "ceiling:depth", "{err}");
}
