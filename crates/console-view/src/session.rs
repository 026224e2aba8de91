//! The Live energy view's recorded sessions (JCP §5.4, §5.5): a session of
//! the machine's own windows read back from its file (`jcp-meter-session/1`,
//! what `jcp meter --out` writes), its windows against a declared baseline
//! with the §5.4 looks kept apart — within band, explained, unexplained,
//! inapplicable, unresolvable: never one score — and the conservation of a
//! grant's spend in receipt streams against the session's windows, where a
//! `Partial` window or a gap leaves it unreconciled rather than summed.
//!
//! Every figure here is the library's (`jcp_meter::layers`,
//! `jcp_audit::energy`); this module only puts words to it, the same words
//! `jcp energy dynamism` and `jcp energy reconcile` print.

use std::path::Path;

use jcp::cbor::ContentId;
use jcp_meter::declared::{baseline_to_json, load_baseline, Causes};
use jcp_meter::dynamism::{Assessment, Baseline};
use jcp_meter::session::Session;
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use crate::{format_uj, ViewError};

fn meter_err(path: &Path, e: &jcp_meter::Error) -> ViewError {
    ViewError::Energy { path: path.to_path_buf(), code: e.code().to_owned(), detail: e.to_string() }
}

/// The five §5.4 looks, counted apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct LookCounts {
    /// Inside the baseline's band.
    #[cfg_attr(test, ts(type = "number"))]
    pub within_band: u64,
    /// Outside it, with an evidenced cause.
    #[cfg_attr(test, ts(type = "number"))]
    pub explained: u64,
    /// Outside it, nothing explains it: a request for a look, not a finding.
    #[cfg_attr(test, ts(type = "number"))]
    pub unexplained: u64,
    /// No yardstick applies (no baseline, or one measured elsewhere).
    #[cfg_attr(test, ts(type = "number"))]
    pub inapplicable: u64,
    /// The window could not have seen it (a gap, or too coarse).
    #[cfg_attr(test, ts(type = "number"))]
    pub unresolvable: u64,
}

/// One window of the session and what it establishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SessionWindowRow {
    /// Sequence number.
    #[cfg_attr(test, ts(type = "number"))]
    pub seq: u64,
    /// Wall-clock start, Unix ms.
    #[cfg_attr(test, ts(type = "number"))]
    pub start_ms: u64,
    /// The figure in words; absent for a gap (never 0).
    pub energy: Option<String>,
    /// Its provenance; absent for a gap.
    pub provenance: Option<String>,
    /// Its coverage; absent for a gap.
    pub coverage: Option<String>,
    /// `within-band`, `explained`, `unexplained`, `inapplicable` or `unresolvable`.
    pub look: String,
    /// Why, in words (the band, the cause, the missing yardstick).
    pub why: String,
}

/// A grant's spend reconciled against the session (§5.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConservationView {
    /// The grant.
    pub grant_id: String,
    /// The grant's budget, in words.
    pub budget: String,
    /// Debited from it by verified allows, in words.
    pub debited: String,
    /// Verified allows.
    #[cfg_attr(test, ts(type = "number"))]
    pub allows: u64,
    /// Receipts in the streams that failed verification (counted, never skipped).
    #[cfg_attr(test, ts(type = "number"))]
    pub receipts_failed: u64,
    /// Σ of the session's `Whole` windows, in words.
    pub whole: String,
    /// `Whole` windows.
    #[cfg_attr(test, ts(type = "number"))]
    pub whole_windows: u64,
    /// Σ of its `Partial` windows, in words — kept apart, never added to `whole`.
    pub partial: String,
    /// `Partial` windows.
    #[cfg_attr(test, ts(type = "number"))]
    pub partial_windows: u64,
    /// Gaps (unmetered, not zero).
    #[cfg_attr(test, ts(type = "number"))]
    pub gap_windows: u64,
    /// Whether an exact comparison was made (every window `Whole`).
    pub reconciled: bool,
    /// Why not, when not (`meter-coverage-partial`, `meter-gap`).
    pub unreconciled: Option<String>,
    /// `debited − metered`, µJ, signed and exact (when reconciled).
    pub discrepancy_uj: Option<String>,
    /// `measured` or `modelled`: what the floor rests on.
    pub basis: String,
    /// The worst provenance summed.
    pub provenance_floor: String,
    /// Whether the books balance to the µJ with nothing failed.
    pub balanced: bool,
    /// The statement, as `jcp energy reconcile` prints it.
    pub statement: String,
}

/// A recorded session, analysed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SessionAnalysis {
    /// The session file.
    pub session: String,
    /// The occupancy declared when it was recorded (absent: no baseline applies).
    pub occupancy: Option<String>,
    /// Windows in it.
    #[cfg_attr(test, ts(type = "number"))]
    pub windows: u64,
    /// The baseline file, when one was given.
    pub baseline: Option<String>,
    /// The band in words, and where it holds.
    pub baseline_text: String,
    /// The five looks, counted apart.
    pub counts: LookCounts,
    /// Windows per provenance label (`gap` for none).
    #[cfg_attr(test, ts(type = "Array<[string, number]>"))]
    pub grades: Vec<(String, u64)>,
    /// Every window.
    pub rows: Vec<SessionWindowRow>,
    /// The grant's conservation, when a stream and grant were given.
    pub conservation: Option<ConservationView>,
}

/// Where the console's recording of the machine's windows stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RecordingStatus {
    /// Whether the meter runs (nothing can be recorded otherwise).
    pub meter_running: bool,
    /// Whether a recording is under way.
    pub recording: bool,
    /// The occupancy declared for it (absent: no baseline will apply to it).
    pub occupancy: Option<String>,
    /// Windows closed since it started (gaps included).
    #[cfg_attr(test, ts(type = "number"))]
    pub windows: u64,
    /// When it started, Unix ms.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub started_ms: Option<u64>,
    /// Whether it reached the most windows one session holds (later windows are not in it).
    pub full: bool,
}

/// A recording written to its session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RecordedSession {
    /// The session file (`jcp-meter-session/1`), to show.
    pub path: String,
    /// Its handle (issue 34): what the analysis and a baseline take.
    pub handle: String,
    /// Windows in it.
    #[cfg_attr(test, ts(type = "number"))]
    pub windows: u64,
    /// Whether it stopped taking windows at the cap.
    pub full: bool,
}

/// A baseline declared from a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct DeclaredBaseline {
    /// The baseline file (`jcp-meter-baseline/1`), to show.
    pub path: String,
    /// Its handle (issue 34).
    pub handle: String,
    /// Its band and scope in words.
    pub text: String,
}

/// What to analyse. From the window each file is a handle the console gave
/// (issue 34); the shell resolves them to paths before [`analyze`] reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SessionForm {
    /// The session file.
    pub session: String,
    /// A declared baseline (`jcp-meter-baseline/1`), optional.
    pub baseline: Option<String>,
    /// Evidenced causes (`jcp-meter-causes/1`), optional.
    pub causes: Option<String>,
    /// Receipt streams holding the grant's spend, optional (with `grant`).
    pub streams: Vec<String>,
    /// The grant id (64 hex digits), optional (with `streams`).
    pub grant: Option<String>,
}

fn non_empty(s: Option<&String>) -> Option<&str> {
    s.map(|s| s.trim()).filter(|s| !s.is_empty())
}

/// A serde enum's kebab-case word (the word the files and the CLI use).
fn kebab(v: impl Serialize) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn look(a: &Assessment) -> (&'static str, String) {
    match a {
        Assessment::WithinBand => ("within-band", "inside the baseline's band".to_owned()),
        Assessment::Explained { cause } => {
            ("explained", format!("explained by {} (evidence {})", kebab(cause.kind), cause.evidence))
        }
        Assessment::Unexplained { energy_uj, band_uj } => (
            "unexplained",
            format!(
                "{} outside the band {} – {}: worth a look, not a finding",
                format_uj(*energy_uj),
                format_uj(band_uj.0),
                format_uj(band_uj.1)
            ),
        ),
        Assessment::Inapplicable { why } => ("inapplicable", why.clone()),
        Assessment::Unresolvable { why } => ("unresolvable", why.clone()),
    }
}

fn baseline_text(b: Option<&Baseline>) -> String {
    match b {
        None => {
            "no baseline declared: every metered window is inapplicable (no yardstick), never within band".to_owned()
        }
        Some(b) => {
            let band = format!("{} – {} per window", format_uj(b.low_uj), format_uj(b.high_uj));
            match &b.scope {
                Some(s) => format!(
                    "{band}, declared for host {} at occupancy \"{}\" with {} ms windows",
                    s.host.hostname,
                    s.occupancy,
                    s.window_ns / 1_000_000
                ),
                None => format!("{band}, with no scope: it applies nowhere"),
            }
        }
    }
}

fn conservation(form: &SessionForm, session: &Session) -> Result<Option<ConservationView>, ViewError> {
    let Some(grant) = non_empty(form.grant.as_ref()) else {
        if form.streams.is_empty() {
            return Ok(None);
        }
        return Err(ViewError::Form("give the grant id whose spend the streams hold".into()));
    };
    if form.streams.is_empty() {
        return Err(ViewError::Form("give the receipt stream(s) holding the grant's spend".into()));
    }
    let id = ContentId::parse(grant)
        .ok_or_else(|| ViewError::Form(format!("the grant id {grant:?} is not 64 hex digits")))?;
    let first = Path::new(&form.streams[0]);
    let r = jcp_audit::energy::reconcile_grant(&form.streams, &id, session).map_err(|e| meter_err(first, &e))?;
    Ok(Some(ConservationView {
        grant_id: r.spend.grant_id.to_string(),
        budget: format_uj(r.spend.budget_uj),
        debited: format_uj(r.spend.debited_uj),
        allows: r.spend.allows,
        receipts_failed: r.spend.receipts_failed,
        whole: format_uj(r.whole_uj),
        whole_windows: r.whole_windows,
        partial: format_uj(r.partial_uj),
        partial_windows: r.partial_windows.len() as u64,
        gap_windows: r.gap_windows.len() as u64,
        reconciled: r.conservation.is_some(),
        unreconciled: r.unreconciled.map(kebab),
        discrepancy_uj: r.conservation.as_ref().map(|c| format!("{:+} µJ", c.discrepancy_uj)),
        basis: kebab(r.basis).to_lowercase(),
        provenance_floor: r.provenance_floor.as_str().to_owned(),
        balanced: r.balanced,
        statement: r.statement,
    }))
}

/// Analyses a recorded session: its windows against the baseline (if any)
/// with the causes (if any), and a grant's conservation (if asked).
pub fn analyze(form: &SessionForm) -> Result<SessionAnalysis, ViewError> {
    let sp = Path::new(form.session.trim());
    let session = Session::load(sp).map_err(|e| meter_err(sp, &e))?;
    let baseline = match non_empty(form.baseline.as_ref()) {
        Some(b) => Some(load_baseline(Path::new(b)).map_err(|e| meter_err(Path::new(b), &e))?),
        None => None,
    };
    let causes = match non_empty(form.causes.as_ref()) {
        Some(c) => {
            let bytes =
                std::fs::read(c).map_err(|e| ViewError::Unreadable { path: c.into(), detail: e.to_string() })?;
            Causes::from_bytes(c, &bytes).map_err(|e| meter_err(Path::new(c), &e))?
        }
        None => Causes::default(),
    };
    let report = jcp_meter::layers::dynamism(&session, baseline.as_ref(), &causes, None);
    let rows = session
        .windows
        .iter()
        .zip(&report.windows)
        .map(|(w, a)| {
            let (look, why) = look(&a.assessment);
            SessionWindowRow {
                seq: w.seq,
                start_ms: w.start_unix_ms,
                energy: w.energy_uj.map(format_uj),
                provenance: w.provenance.map(|p| p.as_str().to_owned()),
                coverage: w.coverage.map(|c| c.as_str().to_owned()),
                look: look.to_owned(),
                why,
            }
        })
        .collect();
    Ok(SessionAnalysis {
        session: sp.display().to_string(),
        occupancy: session.occupancy.clone(),
        windows: session.windows.len() as u64,
        baseline: non_empty(form.baseline.as_ref()).map(str::to_owned),
        baseline_text: baseline_text(baseline.as_ref()),
        counts: LookCounts {
            within_band: report.within_band,
            explained: report.explained,
            unexplained: report.unexplained,
            inapplicable: report.inapplicable,
            unresolvable: report.unresolvable,
        },
        grades: report.grades.into_iter().collect(),
        rows,
        conservation: conservation(form, &session)?,
    })
}

/// Declares a baseline from a recorded session (§5.4): the band is the
/// lowest and highest `Whole` metered window of the session, scoped to its
/// host, declared occupancy and window length — the operator's statement
/// "this session is what normal looks like here". Refused for a session
/// with no declared occupancy (the baseline would apply nowhere) or without
/// a `Whole` metered window (a partial or missing figure is no band).
/// Written to `out` (not overwritten); returns its band in words.
pub fn declare_baseline(session: &Path, out: &Path) -> Result<String, ViewError> {
    let s = Session::load(session).map_err(|e| meter_err(session, &e))?;
    let b = jcp_meter::declared::baseline_of_session(&s).map_err(|e| ViewError::Refused {
        path: session.to_path_buf(),
        code: e.code(),
        detail: e.to_string(),
    })?;
    if out.exists() {
        return Err(ViewError::Write {
            path: out.to_path_buf(),
            detail: "exists; a declared baseline is not overwritten".into(),
        });
    }
    if let Some(d) = out.parent() {
        std::fs::create_dir_all(d).map_err(|e| ViewError::Write { path: out.to_path_buf(), detail: e.to_string() })?;
    }
    std::fs::write(out, baseline_to_json(&b))
        .map_err(|e| ViewError::Write { path: out.to_path_buf(), detail: e.to_string() })?;
    Ok(baseline_text(Some(&b)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The IPC types of this view (checked with the others in `ipc`).
    pub(crate) fn generated() -> Vec<(String, String)> {
        macro_rules! all {
            ($($t:ty),*) => { vec![$( (<$t as TS>::name(), <$t as TS>::export_to_string().unwrap()) ),*] };
        }
        all!(
            LookCounts,
            SessionWindowRow,
            ConservationView,
            SessionAnalysis,
            SessionForm,
            RecordingStatus,
            RecordedSession,
            DeclaredBaseline
        )
    }

    /// A session file of windows given as (µJ, coverage) or a gap, 1 s each,
    /// on one host, at `occupancy`.
    fn session_file(dir: &Path, name: &str, occupancy: Option<&str>, windows: &[Option<(u64, &str)>]) -> String {
        let ws: Vec<serde_json::Value> = windows
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let (i, ms) = (i as u64, 1_000 * i as u64);
                let base = serde_json::json!({"seq": i, "start_ns": i * 1_000_000_000, "end_ns": (i + 1) * 1_000_000_000,
                    "start_unix_ms": 1_000 + ms, "end_unix_ms": 2_000 + ms, "declined": []});
                let mut m = base.as_object().unwrap().clone();
                match w {
                    Some((uj, cov)) => {
                        m.insert("energy_uj".into(), (*uj).into());
                        m.insert("provenance".into(), "HwShunt".into());
                        m.insert("coverage".into(), (*cov).into());
                        m.insert("rung".into(), "rapl".into());
                        m.insert("gap".into(), serde_json::Value::Null);
                    }
                    None => {
                        for k in ["energy_uj", "provenance", "coverage", "rung"] {
                            m.insert(k.into(), serde_json::Value::Null);
                        }
                        m.insert("gap".into(), "no reading".into());
                    }
                }
                serde_json::Value::Object(m)
            })
            .collect();
        let text = serde_json::json!({"format": "jcp-meter-session/1",
            "host": {"hostname": "h", "machine": "m", "cpu": "c", "logical_cpus": 2, "os": "linux"},
            "occupancy": occupancy, "interval_ns": 1_000_000_000u64, "replay_of": null, "windows": ws});
        let p = dir.join(name);
        std::fs::write(&p, text.to_string()).unwrap();
        p.display().to_string()
    }

    fn form(session: &str) -> SessionForm {
        SessionForm { session: session.to_owned(), ..SessionForm::default() }
    }

    #[test]
    fn s5_4_without_a_baseline_no_window_is_within_band() {
        let d = tempfile::tempdir().unwrap();
        let s = session_file(d.path(), "s.json", Some("idle"), &[Some((5_000_000, "Whole")), None]);
        let a = analyze(&form(&s)).unwrap();
        assert_eq!((a.counts.within_band, a.counts.inapplicable, a.counts.unresolvable), (0, 1, 1));
        assert!(a.baseline_text.starts_with("no baseline declared"));
        assert_eq!(a.rows[1].energy, None, "a gap is no figure, never 0");
        assert!(a.conservation.is_none());
    }

    #[test]
    fn s5_4_a_baseline_declared_from_a_session_keeps_the_looks_apart() {
        let d = tempfile::tempdir().unwrap();
        let idle = session_file(
            d.path(),
            "idle.json",
            Some("idle"),
            &[Some((5_000_000, "Whole")), Some((5_200_000, "Whole")), Some((9_000_000, "Partial"))],
        );
        let b = d.path().join("baseline.json");
        let text = declare_baseline(Path::new(&idle), &b).unwrap();
        assert!(text.starts_with("5.000 J – 5.200 J per window"), "only Whole windows make the band: {text}");
        assert_eq!(
            declare_baseline(Path::new(&idle), &b).unwrap_err().code(),
            "steward.write_failed",
            "never overwritten"
        );
        let later = session_file(
            d.path(),
            "later.json",
            Some("idle"),
            &[Some((5_100_000, "Whole")), Some((9_000_000, "Whole")), None],
        );
        let a = analyze(&SessionForm { baseline: Some(b.display().to_string()), ..form(&later) }).unwrap();
        assert_eq!((a.counts.within_band, a.counts.unexplained, a.counts.unresolvable), (1, 1, 1));
        assert_eq!(a.rows[1].look, "unexplained");
        assert!(a.rows[1].why.contains("not a finding"), "{}", a.rows[1].why);
        // Elsewhere (another occupancy) the same baseline is no yardstick.
        let busy = session_file(d.path(), "busy.json", Some("serving"), &[Some((5_100_000, "Whole"))]);
        let a = analyze(&SessionForm { baseline: Some(b.display().to_string()), ..form(&busy) }).unwrap();
        assert_eq!((a.counts.within_band, a.counts.inapplicable), (0, 1));
    }

    #[test]
    fn s5_4_a_baseline_is_not_declared_from_nothing() {
        let d = tempfile::tempdir().unwrap();
        let anon = session_file(d.path(), "anon.json", None, &[Some((5_000_000, "Whole"))]);
        assert_eq!(
            declare_baseline(Path::new(&anon), &d.path().join("b1.json")).unwrap_err().code(),
            "baseline-not-declarable"
        );
        let partial = session_file(d.path(), "p.json", Some("idle"), &[Some((5_000_000, "Partial")), None]);
        assert_eq!(
            declare_baseline(Path::new(&partial), &d.path().join("b2.json")).unwrap_err().code(),
            "baseline-not-declarable"
        );
        assert!(!d.path().join("b1.json").exists() && !d.path().join("b2.json").exists());
    }

    #[test]
    fn s5_5_a_grants_spend_against_the_session_partial_never_summed() {
        let d = tempfile::tempdir().unwrap();
        let stream = d.path().join("d.jcps");
        jcp_receipt::demo::write_demo(
            &stream,
            &jcp_receipt::demo::DemoOptions {
                receipts: 12,
                tamper: 0,
                unresolved: 0,
                seed: 5,
                durability: jcp_receipt::writer::Durability::GeneratorOnly,
            },
        )
        .unwrap();
        let audit = jcp_audit::audit_paths(&[&stream], &jcp_audit::AuditOptions::default(), |_| {
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
        let line = audit.grants.iter().find(|g| g.spent_uj > 0).unwrap();
        let streams = vec![stream.display().to_string()];
        let grant = Some(line.grant_id.to_string());
        let whole = session_file(d.path(), "w.json", Some("idle"), &[Some((line.spent_uj, "Whole"))]);
        let c = analyze(&SessionForm { streams: streams.clone(), grant: grant.clone(), ..form(&whole) })
            .unwrap()
            .conservation
            .unwrap();
        assert!(c.reconciled && c.unreconciled.is_none());
        assert_eq!(c.discrepancy_uj.as_deref(), Some("+0 µJ"));
        assert_eq!(c.debited, format_uj(line.spent_uj));
        let mixed =
            session_file(d.path(), "m.json", Some("idle"), &[Some((line.spent_uj, "Whole")), Some((7, "Partial"))]);
        let c =
            analyze(&SessionForm { streams: streams.clone(), grant, ..form(&mixed) }).unwrap().conservation.unwrap();
        assert!(!c.reconciled && !c.balanced);
        assert_eq!(c.unreconciled.as_deref(), Some("meter-coverage-partial"));
        assert_eq!((c.whole.as_str(), c.partial.as_str()), (format_uj(line.spent_uj).as_str(), "7 µJ"));
        // A stream without its grant, or a grant that is not hex, is said.
        assert_eq!(analyze(&SessionForm { streams, ..form(&whole) }).unwrap_err().code(), "steward.bad_form");
        assert_eq!(
            analyze(&SessionForm { grant: Some("zz".into()), streams: vec!["x".into()], ..form(&whole) })
                .unwrap_err()
                .code(),
            "steward.bad_form"
        );
    }

    #[test]
    fn s5_4_a_session_that_is_not_one_is_refused_with_its_code() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("junk.json");
        std::fs::write(&p, "{}").unwrap();
        let e = analyze(&form(&p.display().to_string())).unwrap_err();
        assert_eq!(e.code(), "energy.refused");
        assert!(e.to_string().contains("junk.json"), "{e}");
    }
}
