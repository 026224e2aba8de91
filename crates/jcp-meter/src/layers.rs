//! The energy layers above the meter, over files: what `jcp energy` and the
//! console call. Each function reads what it is given, calls the section's
//! own code ([`crate::traceability`], [`crate::dynamism`],
//! [`crate::conservation`]) and returns a `serde::Serialize` report.
//!
//! | function | section | over |
//! |---|---|---|
//! | [`trace_files`] | §5.3 | a sealed `efficiency/1` outcome and activity files |
//! | [`dynamism`] | §5.4 | a [`Session`], a declared baseline, evidenced causes |
//! | [`reconcile_spend`] | §5.5 | a grant's spend ([`GrantSpend`], read from receipt streams by `jcp_audit::energy::grant_spend`) against a [`Session`] |
//! | [`bounds`] | §5.6 | a [`Session`] against an [`EnvelopeFile`] |

use std::collections::HashMap;

use jcp::cbor::ContentId;
use jcp::energy::{Coverage, Energy, Provenance};
use serde::Serialize;

use crate::backend::RungId;
use crate::conservation::{physical_bound, reconcile, Basis, BoundVerdict, ConservationReport};
use crate::declared::{Causes, EnvelopeFile};
use crate::dynamism::{assess, Baseline, DynamismReport, Scope};
use crate::efficiency::verify;
use crate::session::Session;
use crate::traceability::{trace, TraceReport};
use crate::Error;

// ---------------------------------------------------------------- §5.3

/// An activity file given to [`trace_files`] that the outcome does not name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnboundFile {
    /// Where it came from.
    pub file: String,
    /// Its content id.
    pub id: ContentId,
}

/// A traced outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutcomeTrace {
    /// The sealed outcome's content id.
    pub outcome_id: ContentId,
    /// Its label, for people.
    pub outcome: String,
    /// Its steward, who signed it.
    pub steward: String,
    /// The trace (§5.3): activities by content id, the signed residual, floors.
    pub trace: TraceReport,
    /// Activity files given that the outcome does not name: not summed.
    pub unbound: Vec<UnboundFile>,
}

/// Verifies the sealed outcome `outcome` and traces it through the activity
/// files `activities` (`(where it came from, bytes)`), each found by the
/// content id of its bytes (§5.3). Refused: a bad signature, an outcome
/// naming no activity or one twice, a named activity no file holds.
pub fn trace_files(outcome: &[u8], activities: &[(String, Vec<u8>)]) -> Result<OutcomeTrace, Error> {
    let verified = verify(outcome)?;
    let store: HashMap<ContentId, Vec<u8>> =
        activities.iter().map(|(_, b)| (ContentId::of_bytes(b), b.clone())).collect();
    let report = trace(&verified.payload, &store)?;
    let unbound = activities
        .iter()
        .map(|(file, b)| UnboundFile { file: file.clone(), id: ContentId::of_bytes(b) })
        .filter(|u| !verified.payload.activities.contains(&u.id))
        .collect();
    Ok(OutcomeTrace {
        outcome_id: verified.id,
        outcome: verified.payload.outcome.clone(),
        steward: verified.payload.steward.to_did_string(),
        trace: report,
        unbound,
    })
}

// ---------------------------------------------------------------- §5.4

/// Assesses a recorded session against a declared baseline (§5.4). The
/// session's own scope is its host, its declared occupancy and its window
/// length; a session with no declared occupancy has no baseline that
/// applies to it. Unexplained, inapplicable and unresolvable windows are
/// counted apart.
pub fn dynamism(
    session: &Session,
    baseline: Option<&Baseline>,
    causes: &Causes,
    shortest_phenomenon_ns: Option<u64>,
) -> DynamismReport {
    let here = Scope {
        host: session.host.clone(),
        occupancy: session.occupancy.clone().unwrap_or_default(),
        window_ns: session.interval_ns,
    };
    assess(&session.to_windows(), baseline, &here, shortest_phenomenon_ns, &causes.by_seq)
}

// ---------------------------------------------------------------- §5.6

/// The verdict word: "refuted" or "not refuted". There is no "verified".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Word {
    /// The figure is impossible for the part.
    #[serde(rename = "refuted")]
    Refuted,
    /// The figure is not impossible. Not a finding that it is true.
    #[serde(rename = "not refuted")]
    NotRefuted,
}

impl Word {
    /// The word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refuted => "refuted",
            Self::NotRefuted => "not refuted",
        }
    }
}

/// One window held (or not) to the envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowBound {
    /// The window's seq.
    pub seq: u64,
    /// The rung that metered it (`None` for a gap).
    pub rung: Option<RungId>,
    /// Its figure, µJ.
    pub energy_uj: Option<u64>,
    /// Its provenance.
    pub provenance: Option<Provenance>,
    /// Its coverage.
    pub coverage: Option<Coverage>,
    /// Its span, ns.
    pub span_ns: u64,
    /// The word, when held to the envelope.
    pub word: Option<Word>,
    /// The verdict, when held.
    pub verdict: Option<BoundVerdict>,
    /// Why it was not held, when not.
    pub not_held: Option<String>,
}

/// A session held to a part's envelope (§5.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoundsReport {
    /// The part.
    pub part: String,
    /// The envelope's file, as read.
    pub envelope: EnvelopeFile,
    /// Per window.
    pub windows: Vec<WindowBound>,
    /// Windows refuted.
    pub refuted: u64,
    /// Windows held and not refuted.
    pub not_refuted: u64,
    /// Windows not held (a gap, or a rung that does not read this part).
    pub not_held: u64,
}

/// Holds every window of `session` metered by one of the envelope's rungs
/// to it: above the burst rating or below the idle floor is refuted, inside
/// is not refuted, and nothing is verified.
pub fn bounds(session: &Session, envelope: &EnvelopeFile) -> Result<BoundsReport, Error> {
    let env = envelope.envelope();
    let mut out = BoundsReport {
        part: envelope.part.clone(),
        envelope: envelope.clone(),
        windows: Vec::with_capacity(session.windows.len()),
        refuted: 0,
        not_refuted: 0,
        not_held: 0,
    };
    for w in &session.windows {
        let span_ns = w.end_ns.saturating_sub(w.start_ns);
        let mut line = WindowBound {
            seq: w.seq,
            rung: w.rung,
            energy_uj: w.energy_uj,
            provenance: w.provenance,
            coverage: w.coverage,
            span_ns,
            word: None,
            verdict: None,
            not_held: None,
        };
        match (w.energy_uj, w.rung) {
            (Some(uj), Some(rung)) if envelope.rungs.contains(&rung) => {
                let v = physical_bound(uj, span_ns, env)?;
                let word = if matches!(v, BoundVerdict::NotRefuted { .. }) {
                    out.not_refuted += 1;
                    Word::NotRefuted
                } else {
                    out.refuted += 1;
                    Word::Refuted
                };
                line.word = Some(word);
                line.verdict = Some(v);
            }
            (Some(_), Some(rung)) => {
                out.not_held += 1;
                line.not_held =
                    Some(format!("metered by {rung}, which the envelope does not say reads {}", envelope.part));
            }
            _ => {
                out.not_held += 1;
                line.not_held = Some(format!("a gap: {}", w.gap.as_deref().unwrap_or("no figure")));
            }
        }
        out.windows.push(line);
    }
    Ok(out)
}

// ---------------------------------------------------------------- §5.5

/// What the receipt streams say a grant spent (the ledger side).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantSpend {
    /// The grant.
    pub grant_id: ContentId,
    /// Its ceiling, µJ.
    pub budget_uj: u64,
    /// Debited from it by verified allows, µJ (§8.1: leaf and ancestor debits).
    pub debited_uj: u64,
    /// Of which from `HwShunt` figures.
    pub measured_uj: u64,
    /// Of which from `ModelBased` or `Estimator` figures.
    pub modelled_uj: u64,
    /// `Partial` when any debit covered only part of its work.
    pub coverage: Coverage,
    /// Verified allows that debited it.
    pub allows: u64,
    /// Receipts in the streams that failed verification (§8.2: counted,
    /// never skipped silently); their debits are in no figure here.
    pub receipts_failed: u64,
}

/// Why a spend was not reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unreconciled {
    /// Some windows are `Partial`: a partial figure is not summed into a whole (§5.2).
    MeterCoveragePartial,
    /// Some windows are gaps: unmetered, not zero.
    MeterGap,
}

/// A grant's spend reconciled against the meter's windows (§5.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpendReconciliation {
    /// The ledger side.
    pub spend: GrantSpend,
    /// Windows in the session.
    pub windows: u64,
    /// Σ µJ of the `Whole` windows.
    pub whole_uj: u64,
    /// `Whole` windows.
    pub whole_windows: u64,
    /// Σ µJ of the `Partial` windows, kept apart and never added to `whole_uj`.
    pub partial_uj: u64,
    /// The `Partial` windows' seqs.
    pub partial_windows: Vec<u64>,
    /// The gaps' seqs.
    pub gap_windows: Vec<u64>,
    /// The exact conservation, when every window is `Whole` (else `None`).
    pub conservation: Option<ConservationReport>,
    /// Why there is none, when there is none.
    pub unreconciled: Option<Unreconciled>,
    /// What the floor rests on, across the windows and the debits: measured
    /// only when every window and every debit is a hardware reading.
    pub basis: Basis,
    /// The worst provenance of the windows' figures (`HwShunt` when every one is a hardware reading, or there is none).
    pub provenance_floor: Provenance,
    /// True only when reconciled, the books balance to the µJ and no receipt failed verification.
    pub balanced: bool,
    /// In words.
    pub statement: String,
}

/// Reconciles `spend` against `session`'s windows: exact conservation over
/// `Whole` windows only (§5.5), with what the floor rests on.
pub fn reconcile_spend(spend: &GrantSpend, session: &Session) -> Result<SpendReconciliation, Error> {
    let mut whole = Vec::new();
    let (mut whole_uj, mut partial_uj) = (0u64, 0u64);
    let (mut partial_windows, mut gap_windows) = (Vec::new(), Vec::new());
    // The windows' floor; the debits say only measured or modelled (the audit's split).
    let mut provenance_floor = Provenance::HwShunt;
    for w in &session.windows {
        let Some(e) = w.energy_uj.zip(w.provenance).zip(w.coverage).map(|((uj, p), c)| Energy {
            uj,
            provenance: p,
            coverage: c,
            measured: None,
        }) else {
            gap_windows.push(w.seq);
            continue;
        };
        provenance_floor = provenance_floor.min(e.provenance);
        if e.coverage == Coverage::Partial {
            partial_windows.push(w.seq);
            partial_uj = partial_uj.checked_add(e.uj).ok_or(Error::Overflow { what: "Σ Partial windows" })?;
        } else {
            whole_uj = whole_uj.checked_add(e.uj).ok_or(Error::Overflow { what: "Σ Whole windows" })?;
            whole.push(e);
        }
    }
    let unreconciled = if !partial_windows.is_empty() {
        Some(Unreconciled::MeterCoveragePartial)
    } else if !gap_windows.is_empty() {
        Some(Unreconciled::MeterGap)
    } else {
        None
    };
    let conservation = match unreconciled {
        None => Some(reconcile(spend.budget_uj, spend.debited_uj, &whole)?),
        Some(_) => None,
    };
    let basis =
        if provenance_floor.is_measured() && spend.modelled_uj == 0 { Basis::Measured } else { Basis::Modelled };
    let balanced = conservation.as_ref().is_some_and(|c| c.discrepancy_uj == 0) && spend.receipts_failed == 0;
    let statement = match (&conservation, unreconciled) {
        (Some(c), _) => format!(
            "debited {} µJ, metered {} µJ: discrepancy {} µJ = {} ppm of the {} µJ grant; {}{}",
            spend.debited_uj,
            c.spent_uj,
            c.discrepancy_uj,
            c.discrepancy_ppm,
            spend.budget_uj,
            match basis {
                Basis::Measured => format!("floor {} ppm over measured figures", c.floor_ppm),
                Basis::Modelled => format!("floor {} ppm is exact arithmetic over a model's figures (windows' floor {provenance_floor}, {} µJ of the debits modelled): a drift inside the model's error cannot be seen", c.floor_ppm, spend.modelled_uj),
            },
            if spend.coverage == Coverage::Partial { "; some debits are Partial, so the ledger's spend is not the whole work" } else { "" }
        ),
        (None, Some(Unreconciled::MeterCoveragePartial)) => format!(
            "not reconciled: {} of {} windows are Partial ({} µJ), and a partial figure is not summed into a whole",
            partial_windows.len(),
            session.windows.len(),
            partial_uj
        ),
        (None, _) => format!(
            "not reconciled: {} of {} windows are gaps, unmetered and not zero",
            gap_windows.len(),
            session.windows.len()
        ),
    } + &if spend.receipts_failed > 0 { format!("; {} receipts failed verification and are in no figure", spend.receipts_failed) } else { String::new() };
    Ok(SpendReconciliation {
        spend: spend.clone(),
        windows: session.windows.len() as u64,
        whole_uj,
        whole_windows: whole.len() as u64,
        partial_uj,
        partial_windows,
        gap_windows,
        conservation,
        unreconciled,
        basis,
        provenance_floor,
        balanced,
        statement,
    })
}
