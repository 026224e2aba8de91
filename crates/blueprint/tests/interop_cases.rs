//! §15: every case of the reference corpus's published case files passes
//! through the runner. The reference corpus has 88 cases in 16 files; the
//! interop folder publishes 11 of those files, which hold 68 cases.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::conformance;

fn files() -> Vec<(String, Vec<u8>)> {
    let dir = testkit::interop("agent-blueprint-protocol/cases");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("cases dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| (p.file_name().expect("name").to_string_lossy().into_owned(), std::fs::read(&p).expect("read")))
        .collect();
    out.sort();
    out
}

#[test]
fn s15_all_published_interop_cases_pass() {
    let files = files();
    assert_eq!(files.len(), 11, "the interop folder holds 11 case files");
    let report = conformance::run_files(&files).expect("run");
    let failures: Vec<String> = report
        .results
        .iter()
        .filter(|r| !r.passed)
        .map(|r| format!("{} [{}]: expected {} got {}", r.id, r.surface, r.expected, r.got))
        .collect();
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(report.passed, 68, "the 11 published files hold 68 cases");
    assert_eq!(report.failed, 0);
}

#[test]
fn s15_every_interop_surface_is_wired() {
    let report = conformance::run_files(&files()).expect("run");
    let used: Vec<&String> = report.surfaces.keys().collect();
    assert_eq!(used.len(), 11);
    for s in used {
        assert!(conformance::SURFACES.contains(&s.as_str()), "{s} not wired");
    }
}

#[test]
fn s15_runner_fails_a_case_whose_expectation_is_wrong() {
    // A tampered expectation must turn red: the runner is not vacuous.
    let text = br#"{"format":"agent-blueprint-protocol-conformance-cases","cases":[
      {"class":"valid","id":"t1","surface":"base64url.decode","input":{"base64url":"-_8"},"expected":{"verdict":"valid","decoded":"-_9"}},
      {"class":"invalid_encoding","id":"t2","surface":"base64url.decode","input":{"base64url":"QQ=="},"expected":{"verdict":"invalid","code":"base64url_invalid"}},
      {"class":"valid","id":"t3","surface":"base64url.decode","input":{"base64url":"QQ=="},"expected":{"verdict":"valid"}}]}"#;
    let r = conformance::run_files(&[("t.json".into(), text.to_vec())]).expect("run");
    assert_eq!((r.passed, r.failed), (0, 3));
}

#[test]
fn s15_empty_run_is_refused() {
    let text = br#"{"format":"agent-blueprint-protocol-conformance-cases","cases":[]}"#;
    let e = conformance::run_files(&[("t.json".into(), text.to_vec())]).expect_err("vacuous");
    assert_eq!(e.code(), "corpus_empty");
}
