//! Fleet audits from partials (§4.3 propagation across points, §4.5
//! shards, §8.2): a fleet's streams split into partial audits in every
//! grouping merge to the single run's report, byte for byte; merging is
//! associative and order-independent; bad partials are refused by name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jcp_audit::FindingCode;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use jcp_audit::partial::Partial;
use jcp_audit::{audit_paths, AuditError, AuditOptions, Report};
use jcp_receipt::demo::{self, DemoOptions};
use jcp_receipt::fleet::{self, FleetOptions};
use jcp_receipt::writer::Durability;

fn go(_: &jcp_audit::Progress) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

fn single(paths: &[PathBuf]) -> Report {
    audit_paths(paths, &AuditOptions::default(), go).unwrap()
}

fn part(paths: &[PathBuf]) -> Partial {
    jcp_audit::audit_partial(paths, &AuditOptions::default(), go).unwrap()
}

fn bytes(r: &Report) -> Vec<u8> {
    serde_json::to_vec(r).unwrap()
}

/// Six streams, sorted by path: a fleet of four points (one violation,
/// found only across streams), a demo stream with tampered receipts,
/// unresolved decisions, an operator's settlement note and a torn tail,
/// and a copy of a point's stream (every record a cross-stream duplicate).
fn streams(dir: &Path) -> Vec<PathBuf> {
    let f = fleet::write_fleet(&dir.join("fleet"), &FleetOptions::new(4, 10, 3, Durability::GeneratorOnly).unwrap())
        .unwrap();
    assert_eq!(f.points.len(), 4);
    let d = dir.join("fleet/point-demo.jcps");
    demo::write_demo(
        &d,
        &DemoOptions { receipts: 120, tamper: 2, unresolved: 2, seed: 9, durability: Durability::GeneratorOnly },
    )
    .unwrap();
    let first = single(std::slice::from_ref(&d));
    let key = demo::cast(9).unwrap().steward;
    let u = &first.unresolved[0];
    jcp_audit::settle(
        &d,
        &u.receipt,
        jcp_receipt::record::OutcomeStatus::Completed,
        "done, per the holder",
        &key,
        1_767_000_000,
    )
    .unwrap();
    let mut b = std::fs::read(&d).unwrap();
    b.extend_from_slice(&jcp_receipt::stream::MAGIC[..]);
    b.extend_from_slice(&[7, 0, 0]);
    std::fs::write(&d, b).unwrap();
    let copy = dir.join("fleet/point-zz-copy.jcps");
    std::fs::copy(fleet::point_path(&dir.join("fleet"), 1), &copy).unwrap();
    let mut paths: Vec<PathBuf> = (0..4).map(|p| fleet::point_path(&dir.join("fleet"), p)).chain([d, copy]).collect();
    paths.sort();
    paths
}

/// Every set partition of `0..n` (restricted growth strings).
fn partitions(n: usize) -> Vec<Vec<Vec<usize>>> {
    fn grow(i: usize, n: usize, rgs: &mut Vec<usize>, out: &mut Vec<Vec<Vec<usize>>>) {
        if i == n {
            let blocks = rgs.iter().max().map_or(0, |m| m + 1);
            out.push((0..blocks).map(|b| (0..n).filter(|&k| rgs[k] == b).collect()).collect());
            return;
        }
        let m = rgs.iter().max().map_or(0, |m| m + 1);
        for b in 0..=m {
            rgs.push(b);
            grow(i + 1, n, rgs, out);
            rgs.pop();
        }
    }
    let mut out = Vec::new();
    grow(0, n, &mut Vec::new(), &mut out);
    out
}

#[test]
fn s4_3_every_grouping_of_a_fleet_into_partials_merges_to_the_single_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let paths = streams(dir.path());
    let want = single(&paths);
    // The single run holds what the merge must reproduce: the cross-stream
    // violation, cross-stream duplicates, refusals, a torn tail, unresolved
    // decisions with a settlement note.
    let by = &want.findings_by_code;
    assert_eq!(by.get(&FindingCode::RevocationViolation), Some(&1), "{by:?}");
    assert!(by.get(&FindingCode::DuplicateRecord).is_some_and(|n| *n > 10), "{by:?}");
    assert_eq!(by.get(&FindingCode::BadSignature), Some(&2));
    assert_eq!(by.get(&FindingCode::TornTail), Some(&1));
    assert_eq!(by.get(&FindingCode::UnresolvedDecision), Some(&2));
    assert_eq!(want.unresolved_settled, 1);
    let want = bytes(&want);
    let all = partitions(paths.len());
    assert_eq!(all.len(), 203, "Bell(6)");
    for grouping in all {
        let parts: Vec<(String, Partial)> = grouping
            .iter()
            .enumerate()
            .map(|(i, block)| {
                let ps: Vec<PathBuf> = block.iter().map(|&k| paths[k].clone()).collect();
                // Through the file format, as a batch job hands it on.
                let json = part(&ps).to_json().unwrap();
                let name = format!("part-{i}.json");
                (name.clone(), Partial::from_json(&name, &json).unwrap())
            })
            .collect();
        let got = jcp_audit::merge_report(parts).unwrap();
        assert!(bytes(&got) == want, "grouping {grouping:?}: the merged report differs from the single run");
    }
}

#[test]
fn s4_3_the_fleet_violation_is_found_only_across_streams() {
    let dir = tempfile::tempdir().unwrap();
    let sum = fleet::write_fleet(dir.path(), &FleetOptions::new(3, 6, 1, Durability::GeneratorOnly).unwrap()).unwrap();
    let paths: Vec<PathBuf> = (0..3).map(|p| fleet::point_path(dir.path(), p)).collect();
    let (v, off) = sum.violation;
    // The violator's stream alone holds no revocation: nothing to violate.
    let alone = jcp_audit::merge_report(vec![("v".into(), part(std::slice::from_ref(&paths[v])))]).unwrap();
    assert!(alone.clean, "{:?}", alone.findings);
    // With the point that recorded the revocation, its allow at
    // known_through >= M is the one violation (§4.3), where it was.
    let parts: Vec<(String, Partial)> =
        paths.iter().map(|p| (p.display().to_string(), part(std::slice::from_ref(p)))).collect();
    let r = jcp_audit::merge_report(parts).unwrap();
    assert_eq!(r.findings.len(), 1, "{:?}", r.findings);
    assert_eq!(
        (r.findings[0].code.as_str(), r.findings[0].stream, r.findings[0].offset),
        ("revocation-violation", v, off)
    );
    // The laggard's allows after the revocation are a propagation delay.
    assert_eq!(r.revocations.len(), 1);
    assert_eq!(r.revocations[0].notices, 1);
    assert!(r.revocations[0].allows.explicable > 0);
}

#[test]
fn s4_3_merge_is_associative_and_independent_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let paths = streams(dir.path());
    let named = |n: &str, p: Partial| (n.to_owned(), p);
    let a = part(&paths[0..2]);
    let b = part(&paths[2..4]);
    let c = part(&paths[4..6]);
    let ab_c = jcp_audit::merge(&[
        named("ab", jcp_audit::merge(&[named("a", a.clone()), named("b", b.clone())]).unwrap()),
        named("c", c.clone()),
    ])
    .unwrap();
    let a_bc = jcp_audit::merge(&[
        named("a", a.clone()),
        named("bc", jcp_audit::merge(&[named("b", b.clone()), named("c", c.clone())]).unwrap()),
    ])
    .unwrap();
    let cba = jcp_audit::merge(&[named("c", c.clone()), named("b", b.clone()), named("a", a.clone())]).unwrap();
    let whole = part(&paths);
    assert_eq!(ab_c.to_json().unwrap(), a_bc.to_json().unwrap());
    assert_eq!(ab_c.to_json().unwrap(), cba.to_json().unwrap());
    assert_eq!(ab_c.to_json().unwrap(), whole.to_json().unwrap());
    let want = bytes(&single(&paths));
    for order in [[&a, &b, &c], [&c, &a, &b], [&b, &c, &a], [&c, &b, &a]] {
        let parts: Vec<(String, Partial)> =
            order.iter().enumerate().map(|(i, p)| named(&i.to_string(), (*p).clone())).collect();
        assert!(bytes(&jcp_audit::merge_report(parts).unwrap()) == want);
    }
}

#[test]
fn s8_2_one_stream_in_two_partials_is_audited_as_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let sum = fleet::write_fleet(dir.path(), &FleetOptions::new(2, 4, 5, Durability::GeneratorOnly).unwrap()).unwrap();
    let p = sum.points[0].path.clone();
    let want = single(&[p.clone(), p.clone()]);
    assert!(want.findings_by_code.get(&FindingCode::DuplicateRecord).is_some_and(|n| *n > 0));
    let got =
        jcp_audit::merge_report(vec![("x".into(), part(std::slice::from_ref(&p))), ("y".into(), part(&[p]))]).unwrap();
    assert!(bytes(&got) == bytes(&want));
}

/// A valid one-stream partial's JSON, as a value to break.
fn sample(dir: &Path) -> serde_json::Value {
    let sum = fleet::write_fleet(dir, &FleetOptions::new(2, 4, 5, Durability::GeneratorOnly).unwrap()).unwrap();
    serde_json::from_slice(&part(std::slice::from_ref(&sum.points[0].path)).to_json().unwrap()).unwrap()
}

/// A change to a valid partial's JSON.
type Break = Box<dyn Fn(&mut serde_json::Value)>;

fn refused(v: &serde_json::Value) -> AuditError {
    Partial::from_json("p.json", &serde_json::to_vec(v).unwrap()).unwrap_err()
}

fn field_of(e: &AuditError) -> (&'static str, String) {
    match e {
        AuditError::PartialField { file, field, .. }
        | AuditError::PartialVersion { file, field, .. }
        | AuditError::PartialMismatch { file, field, .. } => {
            assert!(Path::new(file).extension().is_some_and(|x| x == "json"), "{e}");
            (e.code(), field.clone())
        }
        AuditError::PartialUnreadable { file, .. } => {
            assert_eq!(file, "p.json");
            (e.code(), String::new())
        }
        other => panic!("not a partial refusal: {other}"),
    }
}

#[test]
fn s4_3_a_partial_of_another_format_or_spec_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let v = sample(dir.path());
    assert!(Partial::from_json("p.json", &serde_json::to_vec(&v).unwrap()).is_ok());
    let mut w = v.clone();
    w["format"] = "jcp-audit-partial/2".into();
    assert_eq!(field_of(&refused(&w)), ("partial-version", "format".into()));
    let mut w = v.clone();
    w["spec"] = "jcp-v0.2".into();
    assert_eq!(field_of(&refused(&w)), ("partial-version", "spec".into()));
    let mut w = v;
    w.as_object_mut().unwrap().remove("format");
    assert_eq!(field_of(&refused(&w)), ("partial-field", "format".into()));
}

#[test]
fn s4_3_a_malformed_partial_is_refused_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let v = sample(dir.path());
    let receipt_at =
        v["streams"][0]["records"].as_array().unwrap().iter().position(|r| r.get("receipt").is_some()).unwrap();
    let r = format!("streams[0].records[{receipt_at}]");
    let cases: Vec<(&str, Break, &str, String)> = vec![
        (
            "unknown field",
            Box::new(|w| w["streams"][0]["extra"] = 1.into()),
            "partial-field",
            "streams[0].extra".into(),
        ),
        (
            "index outside keys",
            Box::new(move |w| w["streams"][0]["records"][receipt_at]["receipt"]["grant"] = 9999.into()),
            "partial-field",
            format!("{r}.grant"),
        ),
        (
            "upper-case hex",
            Box::new(move |w| {
                let d =
                    w["streams"][0]["records"][receipt_at]["receipt"]["meta"]["dedup"].as_str().unwrap().to_uppercase();
                w["streams"][0]["records"][receipt_at]["receipt"]["meta"]["dedup"] = d.into();
            }),
            "partial-field",
            format!("{r}.receipt.meta.dedup"),
        ),
        (
            "float for an integer",
            Box::new(move |w| w["streams"][0]["records"][receipt_at]["receipt"]["cost_uj"] = 1.5.into()),
            "partial-field",
            format!("{r}.receipt.cost_uj"),
        ),
        (
            "unknown reason",
            Box::new(move |w| {
                w["streams"][0]["records"][receipt_at]["receipt"]["verdict"] = "deny".into();
                w["streams"][0]["records"][receipt_at]["receipt"]["reason"] = "because".into();
            }),
            "partial-field",
            format!("{r}.reason"),
        ),
        (
            "unknown provenance",
            Box::new(move |w| w["streams"][0]["records"][receipt_at]["receipt"]["provenance"] = "Guess".into()),
            "partial-field",
            format!("{r}.receipt.provenance"),
        ),
        (
            "a grant record that does not open",
            Box::new(|w| {
                w["streams"][0]["records"][0] = serde_json::json!({"whole": {"at": 8, "kind": "grant", "bytes": "a0"}})
            }),
            "partial-field",
            "streams[0].records[0].bytes".into(),
        ),
        ("no streams", Box::new(|w| w["streams"] = serde_json::json!([])), "partial-field", "streams".into()),
        (
            "unsorted stewards",
            Box::new(|w| w["options"]["expected_stewards"] = serde_json::json!(["did:key:x"])),
            "partial-field",
            "options.expected_stewards[0]".into(),
        ),
    ];
    for (what, f, code, field) in cases {
        let mut w = v.clone();
        f(&mut w);
        let (c, got) = field_of(&refused(&w));
        assert_eq!((c, got.as_str()), (code, field.as_str()), "{what}");
    }
    // Not JSON, truncated, trailing bytes, a repeated field.
    let good = serde_json::to_vec(&v).unwrap();
    for bad in [b"not json".to_vec(), good[..good.len() / 2].to_vec(), [good.clone(), b" {}".to_vec()].concat()] {
        assert_eq!(field_of(&Partial::from_json("p.json", &bad).unwrap_err()).0, "partial-unreadable");
    }
    let s = String::from_utf8(good.clone()).unwrap().replacen("\"bytes\":", "\"bytes\":1,\"bytes\":", 1);
    assert_eq!(field_of(&Partial::from_json("p.json", s.as_bytes()).unwrap_err()).0, "partial-field");
    // Another spelling of the same partial: pretty-printed, an object as an
    // array, a null for an absent field. One encoding is read, no other.
    let pretty = serde_json::to_vec_pretty(&v).unwrap();
    let (code, at) = field_of(&Partial::from_json("p.json", &pretty).unwrap_err());
    assert_eq!((code, at.as_str()), ("partial-field", "byte 1"));
    let mut w = v.clone();
    let o = w["options"].clone();
    w["options"] = serde_json::json!([o["expected_stewards"], o["verification"], o["max_findings"]]);
    assert!(Partial::from_json("p.json", &serde_json::to_vec(&w).unwrap()).is_err(), "an object spelled as an array");
    let mut w = v.clone();
    w["streams"][0]["records"][receipt_at]["receipt"]["money_minor"] = serde_json::Value::Null;
    assert_eq!(field_of(&refused(&w)).0, "partial-field", "null for absent");
}

#[test]
fn c5_partials_audited_under_different_options_are_refused_together() {
    let dir = tempfile::tempdir().unwrap();
    let sum = fleet::write_fleet(dir.path(), &FleetOptions::new(2, 4, 5, Durability::GeneratorOnly).unwrap()).unwrap();
    let a = part(&[sum.points[0].path.clone()]);
    let steward = jcp::identity::Did::parse(&sum.points[0].steward).unwrap();
    let opts = AuditOptions { expected_stewards: vec![steward], ..AuditOptions::default() };
    let b = jcp_audit::audit_partial(&[sum.points[1].path.clone()], &opts, go).unwrap();
    let e = jcp_audit::merge_report(vec![("a.json".into(), a), ("b.json".into(), b)]).unwrap_err();
    assert_eq!(field_of(&e), ("partial-mismatch", "options.expected_stewards".into()));
    assert!(e.to_string().starts_with("partial-mismatch: b.json"), "{e}");
}

#[test]
fn s4_3_fuzz_corpus_partial_decode() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/partial_decode");
    let (mut n, mut accepted) = (0, 0);
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        if let Err(msg) = jcp_audit::fuzzing::partial_decode(&data) {
            panic!("{}: {msg}", p.display());
        }
        accepted += usize::from(Partial::from_json("corpus", &data).is_ok());
        n += 1;
    }
    assert!(n >= 10, "only {n} corpus files");
    assert!(
        accepted >= 3 && accepted < n,
        "{accepted} of {n} accepted: the corpus must hold partials that decode and ones that do not"
    );
}

#[test]
fn s4_3_partial_files_merge_to_the_single_run_whether_their_streams_follow_or_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let paths = streams(dir.path());
    let want = bytes(&single(&paths));
    let write = |name: &str, ps: &[PathBuf]| {
        let f = dir.path().join(name);
        jcp_audit::write_partial(&f, &part(ps)).unwrap();
        f
    };
    // One file per stream, given in reverse (they follow one another once ordered).
    let each: Vec<PathBuf> = paths
        .iter()
        .enumerate()
        .rev()
        .map(|(i, p)| write(&format!("each-{i}.json"), std::slice::from_ref(p)))
        .collect();
    assert!(bytes(&jcp_audit::merge_report_files(&each).unwrap()) == want);
    // Interleaved: streams 0, 2, 4 in one file and 1, 3, 5 in the other.
    let even: Vec<PathBuf> = paths.iter().step_by(2).cloned().collect();
    let odd: Vec<PathBuf> = paths.iter().skip(1).step_by(2).cloned().collect();
    let files = [write("odd.json", &odd), write("even.json", &even)];
    assert!(bytes(&jcp_audit::merge_report_files(&files).unwrap()) == want);
    // The same stream in two files (equal keys): audited twice, as given twice.
    let twice = [write("x.json", &paths[..1]), write("y.json", &paths[..1])];
    let want_twice = bytes(&single(&[paths[0].clone(), paths[0].clone()]));
    assert!(bytes(&jcp_audit::merge_report_files(&twice).unwrap()) == want_twice);
    // A bad file among them is named.
    std::fs::write(&each[0], b"{").unwrap();
    let e = jcp_audit::merge_report_files(&each).unwrap_err();
    assert_eq!(e.code(), "partial-unreadable");
    assert!(e.to_string().contains("each-5.json"), "{e}");
}
