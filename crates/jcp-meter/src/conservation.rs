//! §5.5 conservation and §5.6 the physical bound.
//!
//! Conservation: every figure is integer µJ and sums are exact, so the
//! smallest representable discrepancy against a grant of `N` µJ is
//! `1_000_000 / N` ppm, carried here as an exact [`Ratio`]. The report says
//! whether that floor rests on measured figures or modelled ones: a 1 ppm
//! floor over `Estimator` windows is exact arithmetic over a model's opinion.
//!
//! The physical bound: a figure above what the part could draw, or below
//! what a powered part must draw, is refuted. Passing is
//! [`BoundVerdict::NotRefuted`] — never "verified". A workload's character
//! ([`DeclaredShape`]) declared in advance is held to the observed windows
//! by [`check_shape`]: an inconsistency refutes the declaration, and names
//! no cause and no intent; a declaration made after the windows began is
//! refused as post-hoc.

use jcp::energy::{Coverage, Energy, Provenance};
use serde::Serialize;

use crate::efficiency::Ratio;
use crate::plausibility::rate_mw;
use crate::Error;

/// What the floor rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// Every figure is a hardware reading (`HwShunt`) that carries its
    /// measured figure (§5).
    Measured,
    /// At least one figure rests on no measurement: a model's or an
    /// estimator's (`ModelBased`, `Estimator`), or a `HwShunt` label that
    /// carries no measured figure (a claim, not a reading).
    Modelled,
}

impl Basis {
    /// What a floor over figures whose worst grade is `floor` rests on.
    pub fn of(floor: Provenance) -> Self {
        if floor.is_measured() {
            Self::Measured
        } else {
            Self::Modelled
        }
    }
}

/// The smallest representable discrepancy against a grant of `budget_uj`:
/// `1_000_000 / budget_uj` ppm, exact; a grant of 0 µJ has none.
pub fn floor_ppm(budget_uj: u64) -> Result<Ratio, Error> {
    Ratio::new(1_000_000, u128::from(budget_uj)).ok_or(Error::ZeroBudget)
}

/// A grant reconciled against the figures debited from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConservationReport {
    /// The grant, µJ.
    pub budget_uj: u64,
    /// Σ figures, µJ.
    pub spent_uj: u64,
    /// What the ledger claims was debited, µJ.
    pub debited_uj: u64,
    /// `debited − spent`, signed and exact.
    pub discrepancy_uj: i128,
    /// |discrepancy| in ppm of the budget, exact.
    pub discrepancy_ppm: Ratio,
    /// The smallest representable discrepancy, `1_000_000 / budget` ppm, exact.
    pub floor_ppm: Ratio,
    /// Measured or modelled.
    pub basis: Basis,
    /// The worst provenance summed.
    pub provenance_floor: Provenance,
    /// `Partial` if any figure is.
    pub coverage_floor: Coverage,
    /// The floor, stated with its basis.
    pub statement: String,
}

/// Reconciles a grant of `budget_uj` whose ledger says `debited_uj` against `figures`.
pub fn reconcile(budget_uj: u64, debited_uj: u64, figures: &[Energy]) -> Result<ConservationReport, Error> {
    if budget_uj == 0 {
        return Err(Error::ZeroBudget);
    }
    let first = figures.first().ok_or(Error::EmptyTotal)?;
    let mut spent: u64 = 0;
    let mut provenance_floor = first.provenance;
    let mut coverage_floor = Coverage::Whole;
    for f in figures {
        spent = spent.checked_add(f.uj).ok_or(Error::Overflow { what: "Σ figures" })?;
        provenance_floor = provenance_floor.min(f.provenance);
        coverage_floor = coverage_floor.min(f.coverage);
    }
    let discrepancy_uj = i128::from(debited_uj) - i128::from(spent);
    let floor_ppm = floor_ppm(budget_uj)?;
    let discrepancy_ppm =
        Ratio::new(discrepancy_uj.unsigned_abs() * 1_000_000, u128::from(budget_uj)).ok_or(Error::ZeroBudget)?;
    let basis = Basis::of(provenance_floor);
    let statement = match basis {
        Basis::Measured => format!("floor {floor_ppm} ppm over measured figures"),
        Basis::Modelled => format!("floor {floor_ppm} ppm is exact arithmetic over a model's figures ({provenance_floor} floor): a drift inside the model's error cannot be seen"),
    } + if coverage_floor == Coverage::Partial { "; some figures are Partial, so the spend is not the whole work" } else { "" };
    Ok(ConservationReport {
        budget_uj,
        spent_uj: spent,
        debited_uj,
        discrepancy_uj,
        discrepancy_ppm,
        floor_ppm,
        basis,
        provenance_floor,
        coverage_floor,
        statement,
    })
}

/// A grant's debits as a ledger (the audit) tallies them: µJ by what they
/// rest on, and whether any covered only part of its work (§5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Debits {
    /// µJ from `HwShunt` figures that carry their measured figure (§5).
    pub measured_uj: u64,
    /// µJ from every other figure: `ModelBased`, `Estimator`, and a
    /// `HwShunt` label without its measured figure.
    pub modelled_uj: u64,
    /// `Partial` when any debit is.
    pub coverage: Coverage,
}

/// Why a [`LedgerConservation`] states no floor or no basis (§5.5: a floor
/// is quoted with what it rests on, or not at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unstated {
    /// A grant of 0 µJ: `1_000_000 / 0` ppm is no floor.
    ZeroBudget,
    /// Nothing was debited: the floor rests on no figure, measured or modelled.
    NoDebits,
}

impl Unstated {
    /// The stable label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ZeroBudget => "zero-budget",
            Self::NoDebits => "no-debits",
        }
    }
}

/// A grant's ceiling held to the debits its ledger records (§5.5), with no
/// meter windows to hold them to: the audit's per-grant conservation line.
/// Integer µJ throughout; the floor is exact and says what it rests on, and
/// where it rests on nothing, says so in `unstated` (`basis: null`), never
/// "measured".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LedgerConservation {
    /// The ceiling, µJ (exact).
    pub budget_uj: u64,
    /// Spent, µJ: measured + modelled (saturating, like the ledger's sums).
    pub spent_uj: u64,
    /// Remaining, µJ (0 when overspent).
    pub remaining_uj: u64,
    /// Spent beyond the ceiling, µJ.
    pub overspent_uj: u64,
    /// The smallest representable discrepancy, `1_000_000 / budget_uj` ppm,
    /// exact in lowest terms ([`floor_ppm`]); `null` for a grant of 0 µJ.
    pub floor_ppm_fraction: Option<Ratio>,
    /// The same as a decimal rounded up to 6 places (never flattering).
    pub floor_ppm: Option<String>,
    /// What the floor rests on: `measured` when every debit is a hardware
    /// reading, `modelled` when any is a model's; `null` without debits.
    pub basis: Option<Basis>,
    /// Why `floor_ppm_fraction` or `basis` is `null` (empty when neither is).
    pub unstated: Vec<Unstated>,
    /// µJ from `HwShunt` figures that carry their measured figure (§5).
    pub measured_uj: u64,
    /// µJ from every other figure (`ModelBased`, `Estimator`, a `HwShunt`
    /// label without its measured figure).
    pub modelled_uj: u64,
    /// `Partial` when any debit covered only part of its work (§5.2): the
    /// total is then partial too.
    pub coverage: Coverage,
}

/// Holds a grant of `budget_uj` to the `debits` its ledger records (§5.5).
pub fn ledger(budget_uj: u64, debits: &Debits) -> LedgerConservation {
    let spent_uj = debits.measured_uj.saturating_add(debits.modelled_uj);
    let floor = floor_ppm(budget_uj).ok();
    let basis = (spent_uj > 0).then_some(if debits.modelled_uj == 0 { Basis::Measured } else { Basis::Modelled });
    let mut unstated = Vec::new();
    if floor.is_none() {
        unstated.push(Unstated::ZeroBudget);
    }
    if basis.is_none() {
        unstated.push(Unstated::NoDebits);
    }
    LedgerConservation {
        budget_uj,
        spent_uj,
        remaining_uj: budget_uj.saturating_sub(spent_uj),
        overspent_uj: spent_uj.saturating_sub(budget_uj),
        floor_ppm_fraction: floor,
        floor_ppm: floor.and_then(|f| f.decimal_ceil(6)),
        basis,
        unstated,
        measured_uj: debits.measured_uj,
        modelled_uj: debits.modelled_uj,
        coverage: debits.coverage,
    }
}

/// A part's power envelope, deliberately permissive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PowerEnvelope {
    /// The burst rating, mW (the ceiling).
    pub burst_mw: u64,
    /// The absolute idle draw of a powered part, mW (the floor).
    pub idle_mw: u64,
}

/// What the bound establishes. There is no "verified".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum BoundVerdict {
    /// Inside the envelope: not impossible. Not a finding that it is true.
    NotRefuted {
        /// The implied rate, mW.
        rate_mw: u64,
    },
    /// More than the part could have drawn.
    RefutedAbove {
        /// The implied rate, mW.
        rate_mw: u64,
        /// The burst rating, mW.
        burst_mw: u64,
    },
    /// Less than a powered, executing part must draw (a frozen counter's shape).
    RefutedBelow {
        /// The implied rate, mW.
        rate_mw: u64,
        /// The idle floor, mW.
        idle_mw: u64,
    },
}

/// Holds `uj` over `span_ns` to `envelope` (§5.6), exactly.
pub fn physical_bound(uj: u64, span_ns: u64, envelope: PowerEnvelope) -> Result<BoundVerdict, Error> {
    if span_ns == 0 {
        return Err(Error::ZeroSpan);
    }
    let rate = rate_mw(uj, span_ns);
    let lhs = u128::from(uj) * 1_000_000;
    if lhs > u128::from(envelope.burst_mw) * u128::from(span_ns) {
        Ok(BoundVerdict::RefutedAbove { rate_mw: rate, burst_mw: envelope.burst_mw })
    } else if lhs < u128::from(envelope.idle_mw) * u128::from(span_ns) {
        Ok(BoundVerdict::RefutedBelow { rate_mw: rate, idle_mw: envelope.idle_mw })
    } else {
        Ok(BoundVerdict::NotRefuted { rate_mw: rate })
    }
}

/// A workload's character, declared before it runs (§5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "shape", rename_all = "kebab-case")]
pub enum DeclaredShape {
    /// A compute-bound steady state: every window's power within `tolerance_permille` of the median.
    Flat {
        /// Allowed deviation from the median, ‰.
        tolerance_permille: u32,
    },
    /// A cold start: power never falls by more than `tolerance_permille` from one window to the next, and ends above where it began.
    Ramp {
        /// Allowed fall between windows, ‰.
        tolerance_permille: u32,
    },
    /// A queue-driven workload: power rises and falls by turns, each step beyond `tolerance_permille`.
    Alternating {
        /// The least step that counts, ‰ of the lower window.
        tolerance_permille: u32,
    },
}

/// A shape and when it was declared (monotonic ns, the meter's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ShapeDeclaration {
    /// The shape.
    pub shape: DeclaredShape,
    /// When it was declared.
    pub declared_at_ns: u64,
}

/// What holding a declaration to the observed windows establishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum ShapeVerdict {
    /// The observed character does not contradict the declaration (not a finding that it is the declared work).
    NotRefuted,
    /// The observed character contradicts the declaration. No cause, no intent.
    Inconsistent {
        /// Where and how.
        why: String,
    },
    /// Too few readable windows to hold the declaration to.
    Undecidable {
        /// Why.
        why: String,
    },
}

fn within(a: u64, b: u64, tolerance_permille: u32) -> bool {
    // |a − b| ≤ b × tol / 1000, exactly.
    u128::from(a.abs_diff(b)) * 1000 <= u128::from(b) * u128::from(tolerance_permille)
}

/// Holds `decl` to `windows` (§5.6): refuses a declaration made after the
/// first window began; otherwise refutes or does not.
pub fn check_shape(decl: ShapeDeclaration, windows: &[crate::meter::Window]) -> Result<ShapeVerdict, Error> {
    let Some(first) = windows.first() else {
        return Ok(ShapeVerdict::Undecidable { why: "no window".into() });
    };
    if decl.declared_at_ns > first.start_ns {
        return Err(Error::ShapeDeclaredAfter { declared_at_ns: decl.declared_at_ns, first_window_ns: first.start_ns });
    }
    if let Some(gap) = windows.iter().find(|w| w.energy_uj.is_none() || w.span_ns() == 0) {
        return Ok(ShapeVerdict::Undecidable { why: format!("window {} has no reading", gap.seq) });
    }
    if windows.len() < 3 {
        return Ok(ShapeVerdict::Undecidable {
            why: format!("{} windows: a character needs at least 3", windows.len()),
        });
    }
    let rates: Vec<u64> = windows.iter().map(|w| rate_mw(w.energy_uj.unwrap_or(0), w.span_ns())).collect();
    let verdict = match decl.shape {
        DeclaredShape::Flat { tolerance_permille } => {
            let mut sorted = rates.clone();
            sorted.sort_unstable();
            let median = sorted[sorted.len() / 2];
            match rates.iter().zip(windows).find(|(r, _)| !within(**r, median, tolerance_permille)) {
                Some((r, w)) => ShapeVerdict::Inconsistent {
                    why: format!("declared flat; window {} draws {} mW against a median of {median} mW", w.seq, r),
                },
                None => ShapeVerdict::NotRefuted,
            }
        }
        DeclaredShape::Ramp { tolerance_permille } => {
            let fall = rates
                .windows(2)
                .zip(windows.iter().skip(1))
                .find(|(p, _)| p[1] < p[0] && !within(p[1], p[0], tolerance_permille))
                .map(|(p, w)| (p[0], p[1], w));
            if let Some((from, to, w)) = fall {
                ShapeVerdict::Inconsistent {
                    why: format!("declared a ramp; window {} falls from {from} to {to} mW", w.seq),
                }
            } else if rates[rates.len() - 1] <= rates[0] {
                ShapeVerdict::Inconsistent {
                    why: format!(
                        "declared a ramp; it ends at {} mW, not above its start at {} mW",
                        rates[rates.len() - 1],
                        rates[0]
                    ),
                }
            } else {
                ShapeVerdict::NotRefuted
            }
        }
        DeclaredShape::Alternating { tolerance_permille } => {
            let mut previous_up: Option<bool> = None;
            let mut bad = None;
            for (i, p) in rates.windows(2).enumerate() {
                let up = p[1] > p[0];
                let step = p[0].abs_diff(p[1]);
                let big = u128::from(step) * 1000 > u128::from(p[0].min(p[1])) * u128::from(tolerance_permille);
                if !big || previous_up == Some(up) {
                    bad = Some((windows[i + 1].seq, p[0], p[1]));
                    break;
                }
                previous_up = Some(up);
            }
            match bad {
                Some((seq, a, b)) => ShapeVerdict::Inconsistent { why: format!("declared alternating; window {seq} goes from {a} to {b} mW, not the other way by more than the tolerance") },
                None => ShapeVerdict::NotRefuted,
            }
        }
    };
    Ok(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(mw: &[u64]) -> Vec<crate::meter::Window> {
        mw.iter()
            .enumerate()
            .map(|(i, &p)| {
                let i = i as u64;
                crate::meter::Window {
                    seq: i,
                    start_ns: 1_000 + i * 1_000_000_000,
                    end_ns: 1_000 + (i + 1) * 1_000_000_000,
                    start_unix_ms: 0,
                    end_unix_ms: 0,
                    energy_uj: Some(p * 1000),
                    provenance: Some(Provenance::HwShunt),
                    coverage: Some(Coverage::Whole),
                    rung: Some(crate::RungId::Rapl),
                    declined: vec![],
                    gap: None,
                    counters: vec![],
                    util_permille: None,
                    note: None,
                }
            })
            .collect()
    }

    fn decl(shape: DeclaredShape) -> ShapeDeclaration {
        ShapeDeclaration { shape, declared_at_ns: 0 }
    }

    #[test]
    fn s5_6_declared_flat_shape_refuted_by_a_padded_spike() {
        let flat = DeclaredShape::Flat { tolerance_permille: 100 };
        assert_eq!(
            check_shape(decl(flat), &series(&[30_000, 31_000, 29_500, 30_200])).unwrap(),
            ShapeVerdict::NotRefuted
        );
        assert!(matches!(
            check_shape(decl(flat), &series(&[30_000, 31_000, 60_000, 30_200])).unwrap(),
            ShapeVerdict::Inconsistent { .. }
        ));
    }

    #[test]
    fn s5_6_ramp_and_alternating_shapes() {
        let ramp = DeclaredShape::Ramp { tolerance_permille: 50 };
        assert_eq!(
            check_shape(decl(ramp), &series(&[5_000, 12_000, 20_000, 19_500])).unwrap(),
            ShapeVerdict::NotRefuted
        );
        assert!(matches!(
            check_shape(decl(ramp), &series(&[20_000, 12_000, 25_000])).unwrap(),
            ShapeVerdict::Inconsistent { .. }
        ));
        let alt = DeclaredShape::Alternating { tolerance_permille: 200 };
        assert_eq!(check_shape(decl(alt), &series(&[5_000, 20_000, 6_000, 21_000])).unwrap(), ShapeVerdict::NotRefuted);
        assert!(matches!(
            check_shape(decl(alt), &series(&[5_000, 20_000, 30_000, 6_000])).unwrap(),
            ShapeVerdict::Inconsistent { .. }
        ));
    }

    #[test]
    fn s5_6_shape_declared_after_the_fact_is_refused() {
        let d = ShapeDeclaration { shape: DeclaredShape::Flat { tolerance_permille: 100 }, declared_at_ns: 5_000 };
        assert_eq!(check_shape(d, &series(&[1, 1, 1])).unwrap_err().code(), "shape-declared-after");
    }

    #[test]
    fn s5_5_one_joule_grant_has_a_one_ppm_floor() {
        let r = reconcile(1_000_000, 400_000, &[Energy::new(400_000, Provenance::HwShunt)]).unwrap();
        assert_eq!(r.floor_ppm, Ratio { num: 1, den: 1 });
        assert_eq!((r.discrepancy_uj, r.basis), (0, Basis::Measured));
    }

    #[test]
    fn s5_5_floor_is_exact_not_rounded() {
        let r = reconcile(3_000_000, 1, &[Energy::new(0, Provenance::HwShunt)]).unwrap();
        assert_eq!(r.floor_ppm, Ratio { num: 1, den: 3 });
        assert_eq!(r.discrepancy_ppm, Ratio { num: 1, den: 3 });
    }

    #[test]
    fn s5_5_floor_over_estimates_says_modelled() {
        let r = reconcile(1_000_000, 10, &[Energy::new(5, Provenance::HwShunt), Energy::new(6, Provenance::Estimator)])
            .unwrap();
        assert_eq!((r.basis, r.provenance_floor, r.discrepancy_uj), (Basis::Modelled, Provenance::Estimator, -1));
        assert!(r.statement.contains("model"));
        assert_eq!(reconcile(0, 0, &[Energy::new(0, Provenance::HwShunt)]).unwrap_err().code(), "zero-budget");
    }

    fn debits(measured_uj: u64, modelled_uj: u64) -> Debits {
        Debits { measured_uj, modelled_uj, coverage: Coverage::Whole }
    }

    #[test]
    fn s5_5_ledger_floor_is_the_reconcile_floor_rounded_up_in_decimal() {
        let l = ledger(3, &debits(1, 0));
        assert_eq!(l.floor_ppm_fraction, Some(Ratio { num: 1_000_000, den: 3 }));
        assert_eq!(l.floor_ppm.as_deref(), Some("333333.333334"), "rounded up, never flattering");
        let r = reconcile(3, 1, &[Energy::new(1, Provenance::HwShunt)]).unwrap();
        assert_eq!(l.floor_ppm_fraction, Some(r.floor_ppm), "one floor, two callers");
        assert_eq!(ledger(1_000_000, &debits(0, 1)).floor_ppm.as_deref(), Some("1.000000"));
        assert_eq!(ledger(2_000_000, &debits(0, 1)).floor_ppm.as_deref(), Some("0.500000"));
        assert_eq!((l.spent_uj, l.remaining_uj, l.overspent_uj), (1, 2, 0));
        let over = ledger(3, &debits(2, 2));
        assert_eq!((over.spent_uj, over.remaining_uj, over.overspent_uj), (4, 0, 1));
    }

    #[test]
    fn s5_5_ledger_basis_is_measured_only_when_every_debit_is_a_reading() {
        assert_eq!(ledger(10, &debits(4, 0)).basis, Some(Basis::Measured));
        assert_eq!(ledger(10, &debits(4, 1)).basis, Some(Basis::Modelled));
        assert_eq!(ledger(10, &debits(0, 1)).basis, Some(Basis::Modelled));
        assert_eq!(Basis::of(Provenance::ModelBased), Basis::Modelled);
        assert_eq!(Basis::of(Provenance::HwShunt), Basis::Measured);
    }

    #[test]
    fn s5_5_no_debits_states_no_basis_and_a_zero_grant_no_floor() {
        let l = ledger(1_000_000, &debits(0, 0));
        assert_eq!((l.basis, l.unstated.as_slice()), (None, &[Unstated::NoDebits][..]));
        assert!(l.floor_ppm_fraction.is_some());
        let json = serde_json::to_value(&l).unwrap();
        assert_eq!(json["basis"], serde_json::Value::Null, "never \"measured\" over nothing");
        assert_eq!(json["unstated"], serde_json::json!(["no-debits"]));
        let z = ledger(0, &debits(5, 0));
        assert_eq!((z.floor_ppm_fraction, z.floor_ppm.as_deref()), (None, None));
        assert_eq!((z.basis, z.unstated.as_slice()), (Some(Basis::Measured), &[Unstated::ZeroBudget][..]));
        assert_eq!(z.overspent_uj, 5);
        assert_eq!(floor_ppm(0).unwrap_err().code(), "zero-budget");
    }

    #[test]
    fn s5_6_bound_refutes_never_verifies() {
        let env = PowerEnvelope { burst_mw: 65_000, idle_mw: 1_000 };
        assert_eq!(
            physical_bound(30_000_000, 1_000_000_000, env).unwrap(),
            BoundVerdict::NotRefuted { rate_mw: 30_000 }
        );
        assert!(matches!(physical_bound(65_000_001, 1_000_000_000, env).unwrap(), BoundVerdict::RefutedAbove { .. }));
        assert!(matches!(physical_bound(0, 1_000_000_000, env).unwrap(), BoundVerdict::RefutedBelow { .. }));
        let json = serde_json::to_string(&physical_bound(30_000_000, 1_000_000_000, env).unwrap()).unwrap();
        assert!(!json.contains("verified"), "{json}");
    }
}
