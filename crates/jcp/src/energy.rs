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

/// A metered energy figure: integer µJ, how it was obtained, how much it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Energy {
    /// Microjoules.
    pub uj: u64,
    /// How the figure was obtained.
    pub provenance: Provenance,
    /// How much of the work it covers.
    pub coverage: Coverage,
}

impl Energy {
    /// A whole figure of the given grade.
    pub fn new(uj: u64, provenance: Provenance) -> Self {
        Self { uj, provenance, coverage: Coverage::Whole }
    }
}
