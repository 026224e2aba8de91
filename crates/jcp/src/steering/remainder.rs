//! §4.7 remainders: what the active grant has left at a checkpoint, and the
//! ceiling an amendment there may set.

use serde::Serialize;

/// What the active grant has left at a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Remainder {
    /// Known exactly: the grant's budget less the spend stated under it.
    Known {
        /// Microjoules left.
        uj: u64,
    },
    /// Not known. Never reported as the full budget (§4.7): `not_stated`
    /// when this checkpoint states no spend; `base_unknown` when it does but
    /// the checkpoint the active continuation began at did not, so the spend
    /// under the continuation is bounded only from above; `refused` on a
    /// checkpoint the verifier refused (its claims are not judged).
    Unknown {
        /// Why it is unknown.
        reason: UnknownReason,
    },
}

/// Why a checkpoint's remainder is unknown (§4.7); serialised as its
/// `snake_case` word ([`UnknownReason::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownReason {
    /// §4.7: the checkpoint states no spend.
    NotStated,
    /// §4.7: the checkpoint the active continuation began at stated no
    /// spend, so the spend under it is bounded only from above.
    BaseUnknown,
    /// §4.7: the verifier refused the checkpoint; its claims are not judged.
    Refused,
}

impl UnknownReason {
    /// The wire word (`not_stated`, `base_unknown`, `refused`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStated => "not_stated",
            Self::BaseUnknown => "base_unknown",
            Self::Refused => "refused",
        }
    }
}

/// The ceiling an amendment at a checkpoint may set, and what is left
/// (§4.7): `budget − spent` saturating where the spend is stated; the issued
/// budget (remainder unknown) where it is not. `base` is the run-wide spend
/// at which the active grant began (`Some(0)` for the run's own grant;
/// `None` for a continuation steered at a checkpoint that stated no spend,
/// where all of `spent` is counted against it — the fail-closed bound).
pub fn amend_ceiling(budget_uj: u64, base: Option<u64>, spent: Option<u64>) -> (u64, Remainder) {
    match (spent, base) {
        (None, _) => (budget_uj, Remainder::Unknown { reason: UnknownReason::NotStated }),
        (Some(s), Some(b)) => {
            let r = budget_uj.saturating_sub(s.saturating_sub(b));
            (r, Remainder::Known { uj: r })
        }
        (Some(s), None) => (budget_uj.saturating_sub(s), Remainder::Unknown { reason: UnknownReason::BaseUnknown }),
    }
}
