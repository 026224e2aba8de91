//! Spec §5: every metered cost is integer microjoules with a provenance tag;
//! §5.2: coverage says how much of the work a figure accounts for.

use serde::{Deserialize, Serialize};

/// How a figure was obtained (§5). Ordered worst to best so that
/// `min` is the floor (§5.3: aggregation takes the floor, never improves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Provenance {
    /// A figure nothing calibrated: a default power, a constant (§5.1 rung 6).
    Estimator,
    /// A model calibrated on the host or against a reading (§5.1 rung 5).
    ModelBased,
    /// A hardware reading: a shunt or a live, plausible vendor counter.
    HwShunt,
}

impl Provenance {
    /// The wire label (`"HwShunt"`, `"ModelBased"`, `"Estimator"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HwShunt => "HwShunt",
            Self::ModelBased => "ModelBased",
            Self::Estimator => "Estimator",
        }
    }

    /// Parses a wire label; anything but the three labels is refused.
    pub fn parse(s: &str) -> Option<Self> {
        Self::parse_bytes(s.as_bytes())
    }

    /// [`Provenance::parse`] over raw bytes (no UTF-8 check needed to
    /// compare with three ASCII labels).
    pub fn parse_bytes(s: &[u8]) -> Option<Self> {
        match s {
            b"HwShunt" => Some(Self::HwShunt),
            b"ModelBased" => Some(Self::ModelBased),
            b"Estimator" => Some(Self::Estimator),
            _ => None,
        }
    }

    /// Whether a figure of this grade rests on a measurement (§5.5).
    pub fn is_measured(self) -> bool {
        matches!(self, Self::HwShunt)
    }
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much of the work a figure accounts for (§5.2). Ordered so that `min`
/// is the floor: any `Partial` part makes a total `Partial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub enum Coverage {
    /// Only part of the work; the remainder is unmeasured, not zero.
    Partial,
    /// The whole of the work (the default; omitted on the wire).
    #[default]
    Whole,
}

impl Coverage {
    /// The wire label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Partial => "Partial",
            Self::Whole => "Whole",
        }
    }
}

impl std::fmt::Display for Coverage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A metered energy figure: integer µJ, how it was obtained, how much it
/// covers, and (§5) the hardware reading it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Energy {
    /// Microjoules: what is debited.
    pub uj: u64,
    /// How the figure was obtained.
    pub provenance: Provenance,
    /// How much of the work it covers.
    pub coverage: Coverage,
    /// §5: the measured figure, µJ — REQUIRED for `HwShunt`, MAY be present
    /// for `ModelBased`, MUST be absent for `Estimator` ([`Energy::check_grade`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<u64>,
}

impl Energy {
    /// A whole figure of the given grade with no measured figure: a model's
    /// or an estimator's (a `HwShunt` figure needs [`Energy::hardware`]).
    pub fn new(uj: u64, provenance: Provenance) -> Self {
        Self { uj, provenance, coverage: Coverage::Whole, measured: None }
    }

    /// A whole hardware reading (`HwShunt`) of `uj`, measured as such.
    pub fn hardware(uj: u64) -> Self {
        Self { uj, provenance: Provenance::HwShunt, coverage: Coverage::Whole, measured: Some(uj) }
    }

    /// The same figure with `coverage`.
    #[must_use]
    pub fn with_coverage(mut self, coverage: Coverage) -> Self {
        self.coverage = coverage;
        self
    }

    /// Whether the figure rests on a measurement: a hardware grade that
    /// carries its measured figure (§5, §5.5). A `HwShunt` label without
    /// one is a claim, not a measurement.
    pub fn rests_on_measurement(&self) -> bool {
        self.provenance.is_measured() && self.measured.is_some()
    }

    /// §5's rules between the grade and the measured figure: `HwShunt`
    /// carries one, `Estimator` none, and a figure that carries one debits
    /// no less than it (docs/decisions.md, "§5 the measured figure").
    pub fn check_grade(&self) -> Result<(), crate::Error> {
        match (self.provenance, self.measured) {
            (Provenance::HwShunt, None) => Err(crate::Error::UnmeasuredHardwareGrade { uj: self.uj }),
            (Provenance::Estimator, Some(measured)) => Err(crate::Error::MeasuredEstimate { measured }),
            (_, Some(measured)) if self.uj < measured => {
                Err(crate::Error::DebitBelowMeasured { uj: self.uj, measured })
            }
            _ => Ok(()),
        }
    }
}

/// Energy for people, the one formatter the CLI, the console and every
/// export use: the figure in µJ below 1 mJ, otherwise in mJ, J, kJ or MJ
/// with three decimals, **truncated** (integer arithmetic, never rounded
/// up: 1 999 999 µJ is "1.999 J", never "2.000 J" — a figure shown never
/// exceeds what was measured), and from 1 MJ up the kWh equivalent beside
/// it, truncated the same way (a steward thinks of run budgets in kWh).
///
/// ```
/// assert_eq!(jcp::energy::format_uj(999), "999 µJ");
/// assert_eq!(jcp::energy::format_uj(1_999_999), "1.999 J");
/// assert_eq!(jcp::energy::format_uj(3_600_000_000_000), "3.600 MJ (1.000 kWh)");
/// ```
pub fn format_uj(uj: u64) -> String {
    const MJ: u64 = 1_000_000_000_000;
    let scaled = |scale: u64, unit: &str| format!("{}.{:03} {unit}", uj / scale, (uj % scale) / (scale / 1_000));
    match uj {
        0..=999 => format!("{uj} µJ"),
        1_000..=999_999 => scaled(1_000, "mJ"),
        1_000_000..=999_999_999 => scaled(1_000_000, "J"),
        1_000_000_000..=999_999_999_999 => scaled(1_000_000_000, "kJ"),
        _ => {
            // 1 kWh = 3.6e12 µJ; thousandths of a kWh = uj / 3.6e9.
            let milli_kwh = uj / 3_600_000_000;
            format!("{} ({}.{:03} kWh)", scaled(MJ, "MJ"), milli_kwh / 1_000, milli_kwh % 1_000)
        }
    }
}

/// The largest figure [`parse_energy`] takes: 2^53 − 1 µJ (about 9 GJ),
/// the most the console's number inputs hold exactly.
pub const MAX_TYPED_UJ: u64 = (1 << 53) - 1;

/// Why a typed energy was refused (the one energy parser, [`parse_energy`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("energy-text: {text:?} is not an energy: {why}")]
pub struct EnergyTextError {
    /// What was typed.
    pub text: String,
    /// Why it is refused, in words (with the fix where there is one).
    pub why: String,
}

/// Energy as a person types it (`50 J`, `1.5 kWh`, `999 µJ`), in µJ: the
/// one parser the console's inputs use, the inverse of [`format_uj`]. The
/// unit is required and written as [`format_uj`] writes it (`µJ` or `uJ`,
/// `mJ`, `J`, `kJ`, `MJ`, `Wh`, `kWh`; case matters: `mJ` is not `MJ`);
/// spaces between digits are ignored. Refused, never rounded: a figure
/// finer than 1 µJ, a negative one, one above [`MAX_TYPED_UJ`]. Vectors:
/// `conformance/jcp/v1/energy-text.json`, shared with the console.
///
/// ```
/// assert_eq!(jcp::energy::parse_energy("1.5 kWh"), Ok(5_400_000_000_000));
/// assert!(jcp::energy::parse_energy("0.1 µJ").is_err());
/// ```
pub fn parse_energy(text: &str) -> Result<u64, EnergyTextError> {
    let refuse = |why: &str| EnergyTextError { text: text.to_owned(), why: why.to_owned() };
    let compact: String = text.chars().filter(|c| !c.is_whitespace() && *c != '\u{202f}').collect();
    if compact.is_empty() {
        return Err(refuse("nothing was typed: write a figure and its unit, e.g. 50 J"));
    }
    let split = compact.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(compact.len());
    let (figure, unit) = compact.split_at(split);
    if figure.is_empty() {
        return Err(refuse(if unit.starts_with('-') {
            "a budget is not negative"
        } else {
            "no figure before the unit: e.g. 50 J"
        }));
    }
    let scale: u128 = match unit {
        "µJ" | "uJ" => 1,
        "mJ" => 1_000,
        "J" => 1_000_000,
        "kJ" => 1_000_000_000,
        "MJ" => 1_000_000_000_000,
        "Wh" => 3_600_000_000,
        "kWh" => 3_600_000_000_000,
        "" => return Err(refuse("no unit: write µJ, mJ, J, kJ, MJ, Wh or kWh after the figure")),
        _ => return Err(refuse("not an energy unit: write µJ, mJ, J, kJ, MJ, Wh or kWh (case matters: mJ is not MJ)")),
    };
    let (whole, frac) = figure.split_once('.').unwrap_or((figure, ""));
    if whole.is_empty() || frac.contains('.') || (figure.contains('.') && frac.is_empty()) || frac.len() > 18 {
        return Err(refuse("not a figure: digits, with at most one decimal point between digits"));
    }
    let too_big = || refuse("more than this console takes (about 9 GJ)");
    let whole_uj = whole.parse::<u128>().map_err(|_| too_big())?.checked_mul(scale).ok_or_else(too_big)?;
    let frac_digits = u32::try_from(frac.len()).map_err(|_| too_big())?;
    let frac_num: u128 = if frac.is_empty() { 0 } else { frac.parse().map_err(|_| too_big())? };
    let frac_scaled = frac_num.checked_mul(scale).ok_or_else(too_big)?;
    let den = 10u128.pow(frac_digits);
    if frac_scaled % den != 0 {
        return Err(refuse("finer than 1 µJ: the ledger counts whole microjoules"));
    }
    let uj = whole_uj.checked_add(frac_scaled / den).ok_or_else(too_big)?;
    u64::try_from(uj).ok().filter(|u| *u <= MAX_TYPED_UJ).ok_or_else(too_big)
}

/// Power for people: `uj` spent over `ms` milliseconds as watts, with the
/// same truncation as [`format_uj`] (a figure shown never exceeds what was
/// measured): below 1 W in mW, otherwise W with three decimals, from 1 kW
/// in kW. `None` over an empty interval.
///
/// ```
/// assert_eq!(jcp::energy::format_power(1_250_000, 1_000).as_deref(), Some("1.250 W"));
/// assert_eq!(jcp::energy::format_power(999, 1_000).as_deref(), Some("0 mW"));
/// assert_eq!(jcp::energy::format_power(1, 0), None);
/// ```
pub fn format_power(uj: u64, ms: u64) -> Option<String> {
    if ms == 0 {
        return None;
    }
    // µJ per ms is mW; thousandths of a mW would overflow nothing below 2^64 / 1000 µJ.
    let micro_w = u128::from(uj) * 1_000 / u128::from(ms);
    Some(match micro_w {
        0..=999_999 => format!("{} mW", micro_w / 1_000),
        1_000_000..=999_999_999 => format!("{}.{:03} W", micro_w / 1_000_000, (micro_w % 1_000_000) / 1_000),
        _ => format!("{}.{:03} kW", micro_w / 1_000_000_000, (micro_w % 1_000_000_000) / 1_000_000),
    })
}

#[cfg(test)]
mod format_tests {
    use super::{format_power, format_uj};

    #[test]
    fn s5_power_text_truncates_never_rounds_up() {
        assert_eq!(format_power(1_999_999, 1_000).as_deref(), Some("1.999 W"));
        assert_eq!(format_power(500_000, 1_000).as_deref(), Some("500 mW"));
        assert_eq!(format_power(3_000_000_000, 1_000).as_deref(), Some("3.000 kW"));
        assert_eq!(format_power(u64::MAX, 1).map(|s| s.ends_with("kW")), Some(true));
        assert_eq!(format_power(10, 0), None);
    }

    #[test]
    fn s5_energy_text_truncates_never_rounds_up() {
        assert_eq!(format_uj(0), "0 µJ");
        assert_eq!(format_uj(999), "999 µJ");
        assert_eq!(format_uj(1_000), "1.000 mJ");
        assert_eq!(format_uj(999_999), "999.999 mJ");
        assert_eq!(format_uj(1_999_999), "1.999 J");
        assert_eq!(format_uj(1_250_000), "1.250 J");
        assert_eq!(format_uj(999_999_999), "999.999 J");
        assert_eq!(format_uj(1_000_000_000), "1.000 kJ");
        assert_eq!(format_uj(999_999_999_999), "999.999 kJ");
        assert_eq!(format_uj(1_000_000_000_000), "1.000 MJ (0.277 kWh)");
        assert_eq!(format_uj(3_600_000_000_000), "3.600 MJ (1.000 kWh)");
        assert_eq!(format_uj(u64::MAX), "18446744.073 MJ (5124095.576 kWh)");
    }
}

#[cfg(test)]
mod grade_tests {
    use super::{Coverage, Energy, Provenance};

    fn e(uj: u64, provenance: Provenance, measured: Option<u64>) -> Energy {
        Energy { uj, provenance, coverage: Coverage::Whole, measured }
    }

    /// §5: `HwShunt` requires a measured figure, `Estimator` forbids one,
    /// `ModelBased` may carry one; a cost never debits below its own.
    #[test]
    fn s5_the_grade_and_the_measured_figure_agree_or_are_refused() {
        let code = |x: Energy| x.check_grade().err().map(|err| err.code());
        assert_eq!(code(e(5, Provenance::HwShunt, None)), Some("energy-unmeasured"));
        assert_eq!(code(e(5, Provenance::Estimator, Some(5))), Some("energy-measured-estimate"));
        assert_eq!(code(e(4, Provenance::HwShunt, Some(5))), Some("energy-below-measured"));
        assert_eq!(code(e(4, Provenance::ModelBased, Some(5))), Some("energy-below-measured"));
        for ok in [
            Energy::hardware(5),
            e(6, Provenance::HwShunt, Some(5)),
            e(5, Provenance::ModelBased, Some(5)),
            e(5, Provenance::ModelBased, None),
            e(5, Provenance::Estimator, None),
        ] {
            assert_eq!(code(ok), None, "{ok:?}");
        }
        assert!(Energy::hardware(5).rests_on_measurement());
        assert!(!e(5, Provenance::HwShunt, None).rests_on_measurement(), "a label is no reading");
        assert!(!e(5, Provenance::ModelBased, Some(5)).rests_on_measurement());
    }
}
