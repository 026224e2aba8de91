//! The console's rendered views: chart, exports, report.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use console_store::WindowRecord;
use console_view::{chart, export, report};
use jcp::energy::{Coverage, Energy, Provenance};
use serde_json::json;

fn w(seq: i64, energy: Option<Energy>) -> WindowRecord {
    let start = u64::try_from(seq).unwrap() * 1000;
    WindowRecord {
        seq,
        start_ms: start,
        end_ms: start + 1000,
        energy,
        rung: energy.map(|_| "rapl, package-0".to_owned()),
    }
}

fn sample() -> Vec<WindowRecord> {
    vec![
        w(1, Some(Energy::new(3_000_000, Provenance::HwShunt))),
        w(2, None),
        w(
            3,
            Some(Energy {
                uj: 1_000_000,
                provenance: Provenance::ModelBased,
                coverage: Coverage::Partial,
                measured: None,
            }),
        ),
        w(4, Some(Energy::new(500_000, Provenance::Estimator))),
    ]
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn s5_chart_colours_by_provenance_and_draws_no_bar_for_a_gap() {
    let svg = chart::energy_chart_svg(&sample(), 800, 300).unwrap();
    assert!(svg.starts_with("<svg"));
    // One filled bar per reading, in its grade's colour.
    assert_eq!(count(&svg, "fill=\"#2E9E6A\""), 1 + 1, "HwShunt bar + legend swatch:\n{svg}");
    assert_eq!(count(&svg, "fill=\"#7A8EA3\""), 1 + 1, "Estimator bar + legend swatch");
    // The legend says what each grade means.
    for (name, meaning) in chart::LEGEND {
        assert!(svg.contains(name) && svg.contains(meaning), "legend lacks {name}");
    }
    // A gap draws the hatch, not a zero-height bar in any grade's colour.
    let only_gap = chart::energy_chart_svg(&[w(1, None)], 800, 300).unwrap();
    assert_eq!(count(&only_gap, "fill=\"#2E9E6A\""), 1, "only the legend swatch");
    assert!(only_gap.contains("no readings yet"));
}

#[test]
fn s5_2_partial_window_is_marked_on_the_chart() {
    let whole = chart::energy_chart_svg(&[w(1, Some(Energy::new(10, Provenance::ModelBased)))], 800, 300).unwrap();
    let partial = chart::energy_chart_svg(
        &[w(
            1,
            Some(Energy { uj: 10, provenance: Provenance::ModelBased, coverage: Coverage::Partial, measured: None }),
        )],
        800,
        300,
    )
    .unwrap();
    assert!(partial.contains(">\nP\n</text>"), "a Partial bar carries its P mark");
    assert!(!whole.contains(">\nP\n</text>"));
}

#[test]
fn s5_csv_export_has_provenance_and_coverage_on_every_row_and_no_zero_for_a_gap() {
    let csv = export::windows_csv(&sample()).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "seq,start_ms,end_ms,reading,energy_uj,energy,provenance,coverage,rung");
    assert_eq!(lines[1], "1,1000,2000,reading,3000000,3.000 J,HwShunt,Whole,\"rapl, package-0\"");
    assert_eq!(lines[2], "2,2000,3000,gap,,,none,none,");
    assert_eq!(lines[3], "3,3000,4000,reading,1000000,1.000 J,ModelBased,Partial,\"rapl, package-0\"");
    assert_eq!(lines.len(), 5);
}

#[test]
fn s5_json_export_gap_is_null_not_zero() {
    let v: serde_json::Value = serde_json::from_str(&export::windows_json(&sample()).unwrap()).unwrap();
    assert_eq!(v[0]["provenance"], "HwShunt");
    assert_eq!(v[0]["coverage"], "Whole");
    assert_eq!(v[1]["reading"], "gap");
    assert!(v[1]["energy_uj"].is_null() && v[1]["provenance"].is_null() && v[1]["coverage"].is_null());
    assert_eq!(v[2]["coverage"], "Partial");
    assert_eq!(v[0]["energy"], "3.000 J", "the one formatter's words beside the exact figure");
    assert!(v[1]["energy"].is_null());
}

#[test]
fn s8_2_report_fragment_shows_every_number_and_escapes_text() {
    let r = json!({
        "verdict": "findings",
        "receipts": {"verified": 998, "failed": 2},
        "failed_by_reason": {"bad_signature": 1, "truncated": 1},
        "findings": [{"reason": "bad_signature", "offset": 4096, "stream": "<a>.jcps"}],
        "unresolved": []
    });
    let html = report::report_fragment(&r).unwrap();
    for n in ["998", "4096", ">2<", ">1<"] {
        assert!(html.contains(n), "{n} missing from {html}");
    }
    assert!(html.contains("&lt;a&gt;.jcps") && !html.contains("<a>"), "text is escaped");
    assert!(html.contains("<svg"), "count maps are charted");
    assert!(html.contains("bad signature"));
    assert!(html.contains("none"), "an empty list is shown as none");
    assert!(!html.contains("style=") && !html.contains("<script"), "fragment obeys the app's CSP");
}

/// §5.5: the audit's conservation line as the console shows it: the exact
/// floor as `num/den`, a grant without debits with no basis and the reason.
#[test]
fn s5_5_report_fragment_shows_an_exact_floor_and_an_unstated_basis() {
    let r = json!({"grants": [
        {"grant_id": "g1", "conservation": {"floor_ppm_fraction": {"num": 1, "den": 3}, "floor_ppm": "0.333334", "basis": "measured", "unstated": []}},
        {"grant_id": "g2", "conservation": {"floor_ppm_fraction": {"num": 1, "den": 1}, "floor_ppm": "1.000000", "basis": null, "unstated": ["no-debits"]}}
    ]});
    let html = report::report_fragment(&r).unwrap();
    assert!(html.contains("1/3") && html.contains("1/1"), "{html}");
    assert!(html.contains("no-debits") && html.contains("—"), "{html}");
    assert!(!html.contains(">num<"), "a ratio is one figure, not a table: {html}");
}

/// Issue 39, the Auditor's answer first: one line that counts what the
/// audit found and says where the first finding is; the findings table
/// before everything else, nested parts folded, charts last, ids short
/// with the whole on hover, energies in words with the exact µJ kept.
#[test]
fn s8_2_the_answer_comes_first_counting_every_finding_and_where_the_first_is() {
    let id = "09537247cda28018fe871c38db50db4afe1f37db4a8437cba1cbb9bb642c81e7";
    let r = json!({
        "streams": [{"path": "bad.jcps"}],
        "receipts": {"total": 300, "verified": 296, "failed": 4, "failed_by_reason": {"bad-signature": 4}},
        "findings": [{"stream": 0, "offset": 131_251, "code": "bad-signature", "message": "m"}],
        "findings_by_code": {"bad-signature": 4, "orphan-outcome": 4, "remaining-mismatch": 6},
        "grants": [{"grant": id, "budget_uj": 5000}],
        "unresolved_total": 1,
        "clean": false
    });
    assert_eq!(
        report::answer(&r),
        "14 findings in 1 stream: 6 remaining-mismatch, 4 bad-signature, 4 orphan-outcome; the first, bad-signature, at byte 131\u{202f}251 of stream 0. 4 of 300 receipts failed verification and count nothing. 1 decision is unresolved (§4.11)."
    );
    let html = report::report_fragment(&r).unwrap();
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("{needle} missing from {html}"));
    assert!(at("<h3>findings</h3>") < at("<h3>summary</h3>"), "findings first");
    assert!(at("<th>why it matters</th>") < at("<h3>summary</h3>"), "each finding says why it matters");
    assert!(html.contains("C5: a signature that does not verify"), "{html}");
    assert!(
        at("<h3>summary</h3>") < at("<details class=\"field\"><summary><h3>grants</h3>"),
        "then the figures, parts folded"
    );
    assert!(at("<details") < at("<svg"), "charts last");
    assert!(html.contains(&format!("title=\"{id}\">09537247cda28018…</code>")), "a short id, the whole on hover");
    assert!(
        html.contains("data-exact=\"5000\"") && html.contains(">5.000 mJ<") && html.contains("<th>budget</th>"),
        "{html}"
    );
    let clean = json!({"streams": [{}, {}], "receipts": {"total": 3, "verified": 3, "failed": 0}, "findings": [], "clean": true});
    assert_eq!(
        report::answer(&clean),
        "Clean: 3 of 3 receipts in 2 streams verified, every budget replayed; no findings."
    );
    assert_eq!(report::answer(&json!({"receipts": {}})), "", "not an audit report: no answer invented");
}

/// Issue 39, "the records it names, each linkable": each finding's offset
/// links to its record, each id its sentence names to the record with that
/// id; the linked record opens as a panel with its check and content.
#[test]
fn s8_2_each_finding_links_the_records_it_names() {
    use jcp_receipt::demo::{write_demo, DemoOptions};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jcps");
    let sum = write_demo(
        &p,
        &DemoOptions {
            receipts: 40,
            tamper: 1,
            unresolved: 1,
            seed: 5,
            durability: jcp_receipt::writer::Durability::GeneratorOnly,
        },
    )
    .unwrap();
    let r = jcp_audit::audit_paths(&[&p], &jcp_audit::AuditOptions::default(), |_| std::ops::ControlFlow::Continue(()))
        .unwrap();
    let r = serde_json::to_value(&r).unwrap();
    let html = report::report_fragment(&r).unwrap();
    let tampered = sum.tampered_offsets[0];
    let link = format!("<a class=\"record-link\" data-stream=\"0\" data-at=\"{tampered}\"");
    assert!(html.contains(&link), "the tampered record's offset is a link: {html}");
    assert!(html.contains(&format!("{tampered}</a></td>")), "the offset still reads as its number");
    let named = r["findings"].as_array().unwrap().iter().find_map(|f| {
        f["message"]
            .as_str()
            .unwrap()
            .split(|c: char| !c.is_ascii_hexdigit())
            .find(|w| w.len() == 64)
            .map(str::to_owned)
    });
    let named = named.expect("some finding names an id");
    assert!(html.contains(&format!("data-stream=\"0\" data-id=\"{named}\"")), "an id a finding names is a link");
    // The linked record, as the panel shows it.
    let v = jcp_audit::record::show(&p, jcp_audit::record::Locate::At(tampered)).unwrap();
    let panel = report::record_panel(0, &v);
    assert_eq!((panel.kind.as_str(), panel.check.as_str()), ("receipt", "refused"));
    assert_eq!(panel.check_code.as_deref(), Some("bad-signature"));
    assert!(panel.html.contains("<th>cost</th>") && panel.html.contains("data-exact="), "{}", panel.html);
    assert!(panel.prev.is_some() && panel.next.is_some());
    // An exported file keeps the links inert: no href, no script.
    let exported = report::report_html(&r, "findings", "t", &[p.display().to_string()]).unwrap();
    assert!(!exported.contains("href=") && !exported.contains("<script"));
}

#[test]
fn s8_report_html_is_self_contained() {
    let r = json!({"verdict": "clean", "receipts": {"verified": 3, "failed": 0}});
    let html = report::report_html(&r, "clean", "JCP audit report", &["/data/s.jcps".to_owned()]).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("<style>") && html.contains("verdict clean"));
    assert!(!html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http"));
    assert!(html.contains("/data/s.jcps"));
    assert!(html.contains("&quot;verified&quot;: 3"), "raw JSON embedded, escaped");
}

/// Issue 7 (live energy view) / §5: while history holds fewer windows than
/// the chart has slots, every window still gets its age under the axis —
/// plotters' evenly spaced ticks used to land on the empty slots and blank them.
#[test]
fn s5_chart_labels_the_x_axis_from_the_first_window() {
    let labels = |svg: &str| -> Vec<String> {
        svg.split("</text>")
            .filter_map(|t| t.rsplit(">\n").next())
            .map(|t| t.trim().to_owned())
            .filter(|t| t == "now" || (t.starts_with('-') && t.ends_with(" s")))
            .collect()
    };
    for n in [1usize, 3, 8, 12, 29, 30, 45] {
        let windows: Vec<WindowRecord> =
            (1..=n).map(|i| w(i64::try_from(i).unwrap(), Some(Energy::new(1_000, Provenance::Estimator)))).collect();
        let svg = chart::energy_chart_svg(&windows, 960, 340).unwrap();
        let got = labels(&svg);
        assert!(got.contains(&"now".to_owned()), "{n} windows: the newest window is labelled now: {got:?}");
        if n <= chart::MAX_X_LABELS {
            let mut want: Vec<String> = (1..n).rev().map(|a| format!("-{a} s")).collect();
            want.push("now".into());
            assert_eq!(got, want, "{n} windows: each window carries its age");
        } else {
            assert!(got.len() >= 5 && got.len() <= chart::MAX_X_LABELS, "{n} windows: {got:?}");
        }
        // Only ages of real windows: nothing older than the oldest window.
        for l in &got {
            let age: usize = if l == "now" { 0 } else { l[1..l.len() - 2].parse().unwrap() };
            assert!(age < n, "{n} windows: label {l} names an empty slot");
        }
    }
}

// ---- the developer's view of a Blueprint reconcile (ABP §13) ----

mod blueprint_view {
    use std::path::Path;

    use console_view::blueprint::{self, ReconcileFiles};

    fn demo(dir: &Path) -> Vec<blueprint::DemoReconcile> {
        blueprint::write_demo(dir).unwrap()
    }

    fn step<'a>(v: &'a blueprint::BlueprintReportView, name: &str) -> &'a blueprint::StepRow {
        v.steps.iter().find(|s| s.step == name).unwrap()
    }

    /// Rewrites a JSON artifact through `edit` (canonical text out).
    fn rewrite(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
        let mut j: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        edit(&mut j);
        let v = ::blueprint::json::Value::from_serde(&j).unwrap();
        std::fs::write(path, ::blueprint::canon::canonical_string(&v).unwrap()).unwrap();
    }

    #[test]
    fn abp_13_demo_reconcile_is_consistent_and_still_names_what_it_did_not_verify() {
        let dir = tempfile::tempdir().unwrap();
        let d = demo(dir.path());
        let v = blueprint::report(&d[0].files).unwrap();
        assert_eq!(v.verdict, "consistent", "{:#?}", v.steps);
        assert!(v.verdict_text.contains("not an authorization"));
        assert_eq!(v.title, "demo.console/summarize release 3");
        assert_eq!(v.steps.iter().map(|s| s.step.as_str()).collect::<Vec<_>>(), ::blueprint::reconcile::STEPS);
        for s in &v.steps {
            assert!(!s.checks.is_empty() && s.checks.iter().all(|c| c.verified), "{} ran and passed", s.step);
        }
        // Both artifacts are signed by the demo key the host trusts.
        assert_eq!(step(&v, "signatures").checks.len(), 2);
        assert_eq!(step(&v, "signatures").status, "passed");
        // No `now` supplied: freshness is open, so bind is partial, not passed.
        let bind = step(&v, "bind");
        assert_eq!(bind.status, "partial");
        assert_eq!(
            bind.not_verified.iter().map(|n| n.surface.as_str()).collect::<Vec<_>>(),
            ["binding_attestation_freshness"]
        );
        // §13: never empty; the seven host-owned surfaces always named.
        let host_owned: Vec<&str> =
            v.not_verified.iter().filter(|n| n.kind == "host_owned").map(|n| n.surface.as_str()).collect();
        assert_eq!(host_owned, ::blueprint::reconcile::HOST_OWNED);
        // §9: the host narrowed two operational bounds; each narrowing is clamp evidence.
        let clamps: Vec<(&str, &str, &str)> =
            v.clamps.iter().map(|c| (c.bound.as_str(), c.requested.as_str(), c.effective.as_str())).collect();
        assert_eq!(clamps, [("max_cost", "50 EUR", "40 EUR"), ("max_tokens", "20000", "16000")]);
        assert_eq!(v.effective_bounds.len(), 13);
        assert!(v.first_failure.is_none());
        assert!(v.blueprint_digest.as_deref().unwrap().starts_with("sha-256:"));
        // The raw evidence is the crate's own record, unchanged.
        let direct = ::blueprint::reconcile::reconcile(
            &std::fs::read(&d[0].files.blueprint).unwrap(),
            &std::fs::read(&d[0].files.deployment).unwrap(),
            &blueprint::inputs(&d[0].files).unwrap(),
        );
        assert_eq!(v.evidence, serde_json::to_value(&direct).unwrap());
    }

    #[test]
    fn abp_10_demo_rug_pull_deployment_fails_bind_and_later_steps_are_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = demo(dir.path());
        let v = blueprint::report(&d[1].files).unwrap();
        assert_eq!(v.verdict, "inconsistent");
        let f = v.first_failure.as_ref().unwrap();
        assert_eq!(f.code, "binding_descriptor_mismatch");
        assert!(v.verdict_text.contains("binding_descriptor_mismatch"));
        assert_eq!(step(&v, "bind").status, "failed");
        let bounds = step(&v, "bounds");
        assert_eq!(bounds.status, "not_run", "a step never reached is not shown as passed");
        assert!(bounds.checks.is_empty());
        assert_eq!(bounds.not_verified[0].kind, "not_reached");
        assert!(v.effective_bounds.is_empty() && v.clamps.is_empty());
    }

    #[test]
    fn abp_13_a_digest_failure_leaves_every_later_step_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = demo(dir.path());
        rewrite(&d[0].files.blueprint, |j| j["release_number"] = serde_json::json!(4));
        let v = blueprint::report(&d[0].files).unwrap();
        assert_eq!(v.verdict, "inconsistent");
        assert_eq!(v.first_failure.as_ref().unwrap().code, "digest_mismatch");
        assert_eq!(step(&v, "canonical").status, "passed");
        assert_eq!(step(&v, "digest").status, "failed");
        for s in ["negotiation", "structure", "portability", "signatures", "bind", "bounds"] {
            assert_eq!(step(&v, s).status, "not_run", "{s}");
        }
        assert!(v.blueprint_digest.is_none(), "a digest not established is not shown");
    }

    #[test]
    fn abp_6_unsigned_artifacts_are_not_run_not_passed() {
        let dir = tempfile::tempdir().unwrap();
        let d = demo(dir.path());
        for p in [&d[0].files.blueprint, &d[0].files.deployment] {
            rewrite(p, |j| {
                j.as_object_mut().unwrap().remove("signatures");
            });
        }
        let v = blueprint::report(&d[0].files).unwrap();
        let sig = step(&v, "signatures");
        assert_eq!(sig.status, "not_run");
        assert_eq!(
            sig.not_verified.iter().map(|n| n.surface.as_str()).collect::<Vec<_>>(),
            ["blueprint signatures", "deployment signatures"]
        );
        assert!(sig.not_verified.iter().all(|n| n.kind == "missing_input"));
    }

    #[test]
    fn abp_13_missing_host_inputs_are_named_and_untrusted_keys_fail() {
        let dir = tempfile::tempdir().unwrap();
        let d = demo(dir.path());
        let bare = ReconcileFiles { keys: None, host_bounds: None, descriptors: None, ..d[0].files.clone() };
        let v = blueprint::report(&bare).unwrap();
        assert!(v.inputs.iter().all(|i| i.path.is_none()));
        // Without trusted keys a signature is not verified: that is a failure, not a pass.
        assert_eq!(step(&v, "signatures").status, "failed");
        assert_eq!(v.verdict, "inconsistent");
        let surfaces: Vec<&str> = v.not_verified.iter().map(|n| n.surface.as_str()).collect();
        assert!(
            surfaces.contains(&"binding_descriptor_digests") && surfaces.contains(&"binding_attestation_freshness"),
            "{surfaces:?}"
        );
    }

    #[test]
    fn unreadable_files_and_refused_inputs_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let d = demo(dir.path());
        let missing = ReconcileFiles { blueprint: dir.path().join("nope.json"), ..d[0].files.clone() };
        let e = blueprint::report(&missing).unwrap_err();
        assert_eq!(e.code(), "view.unreadable");
        assert!(e.to_string().contains("nope.json"));
        std::fs::write(d[0].files.keys.as_ref().unwrap(), br#"{"k":"not base64!"}"#).unwrap();
        let e = blueprint::report(&d[0].files).unwrap_err();
        assert_eq!(e.code(), "blueprint.bad_input");
        assert!(e.to_string().contains("keys.json"), "{e}");
    }

    #[test]
    fn demo_is_written_once_and_is_the_same_on_every_machine() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        demo(a.path());
        demo(b.path());
        for (name, _) in blueprint::demo_texts().unwrap() {
            assert_eq!(
                std::fs::read(a.path().join(name)).unwrap(),
                std::fs::read(b.path().join(name)).unwrap(),
                "{name}"
            );
        }
        // A second start leaves existing files alone.
        std::fs::write(a.path().join("keys.json"), b"{}").unwrap();
        demo(a.path());
        assert_eq!(std::fs::read(a.path().join("keys.json")).unwrap(), b"{}");
        assert!(std::fs::read_dir(a.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".part")));
    }
}

// ---- the steward's read-only view of a run (JCP §4.7) ----

mod run_view {
    use console_view::run;

    fn demo() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo").join(format!("demo.{}", jcp::steering::RUN_EXTENSION));
        run::write_demo(&path).unwrap();
        (dir, path)
    }

    #[test]
    /// Issue 39: the steward sees the run's course at a glance: spend
    /// against the ceiling in force over its checkpoints, the amendment
    /// marked, and a sentence that says how far it has come.
    fn s4_7_the_demo_runs_course_is_charted_with_its_amendment_marked() {
        let (_d, path) = demo();
        let v = run::report(&path).unwrap();
        let c = console_view::steward::spend_chart(&v).unwrap();
        let svg = c.svg.expect("a long run has a chart");
        if let Some(out) = std::env::var_os("JCP_DUMP_SPEND_SVG") {
            std::fs::write(out, &svg).unwrap();
        }
        assert!(svg.contains("amended") && svg.contains("ceiling in force") && svg.contains("spent"), "{svg}");
        assert!(c.text.starts_with("Spent ") && c.text.contains(" in force at checkpoint "), "{}", c.text);
        assert!(!svg.contains("<script"));
    }

    #[test]
    fn s4_7_demo_run_view_shows_spend_provenance_and_never_the_full_budget_for_unstated_spend() {
        let (_d, path) = demo();
        let v = run::report(&path).unwrap();
        if std::env::var_os("JCP_PRINT_RUN").is_some() {
            println!("{}", serde_json::to_string_pretty(&v).unwrap());
        }
        assert_eq!(v.verdict, "clean", "{:?}", v.findings);
        assert!(v.findings.is_empty());
        assert_eq!(v.issued_budget, "3.600 MJ (1.000 kWh)");
        assert!(v.checkpoints.len() >= 4, "a long run");
        let seqs: Vec<u64> = v.checkpoints.iter().map(|c| c.seq).collect();
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        assert_eq!(seqs, sorted, "checkpoints in sequence order");
        for c in &v.checkpoints {
            assert_eq!(c.verdict, "ok", "seq {}", c.seq);
            match &c.spent.uj {
                None => {
                    assert_eq!(c.spent.text, "not stated");
                    assert!(c.spent.provenance.is_none());
                    assert!(
                        !c.remainder.known && c.remainder.uj.is_none(),
                        "seq {}: no spend stated, so no remainder figure",
                        c.seq
                    );
                    assert!(c.remainder.text.starts_with("unknown"));
                }
                Some(uj) => {
                    let p = c.spent.provenance.as_deref().unwrap();
                    assert!(["HwShunt", "ModelBased", "Estimator"].contains(&p));
                    assert!(c.spent.text.ends_with(&format!(", {p}")), "{}", c.spent.text);
                    assert!(*uj > 0);
                }
            }
        }
        assert!(v.checkpoints[0].spent.uj.is_none(), "the demo's first checkpoint states no spend");
        // The amendment and its continuation.
        let amended: Vec<&run::CheckpointLine> = v.checkpoints.iter().filter(|c| !c.amendments.is_empty()).collect();
        assert_eq!(amended.len(), 1);
        let a = &amended[0].amendments[0];
        assert!(a.continuation_verified);
        assert!(v.grants.iter().any(|g| g.role == "continuation" && g.id == a.continuation && g.verdict == "ok"));
        assert_eq!(v.active_budget.as_deref(), Some(a.budget.as_str()), "the continuation's budget is in force");
        // The raw report is the core's, unchanged (what `jcp run verify --json` prints).
        let direct = jcp::steering::Run::read(&path).unwrap().verify().unwrap();
        assert_eq!(v.report, serde_json::to_value(&direct).unwrap());
    }

    #[test]
    fn s4_7_truncated_run_file_is_a_typed_error_naming_the_file() {
        let (_d, path) = demo();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 7]).unwrap();
        let e = run::report(&path).unwrap_err();
        assert_eq!(e.code(), "run.unreadable");
        assert!(e.to_string().contains("demo.jcprun"), "{e}");
        let missing = run::report(&path.with_file_name("none.jcprun")).unwrap_err();
        assert_eq!(missing.code(), "run.unreadable");
    }

    #[test]
    fn s4_7_demo_run_is_written_once() {
        let (_d, path) = demo();
        std::fs::write(&path, b"kept").unwrap();
        run::write_demo(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"kept", "an existing run file is never overwritten");
    }
}
