//! §7 deny reasons: the wire codes of every check that can refuse a
//! decision (§7, §4.2, §4.3, §4.7, §4.8, §4.9, §4.10, §11).

/// The spec's deny reasons (§7, §4.2, §4.8, §4.9, §4.10). Serialized as
/// its wire code ([`Reason::as_str`]), so every `--json` spells a reason as
/// receipts, responses and `jcp call` do (`bad-signature`, not `BadSignature`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// §7.1 a `data` frame never exercises a capability.
    UntrustedControl,
    /// §4.3 the grant or an ancestor is revoked.
    Revoked,
    /// §7.3 the (root) issuer is not a configured trust root.
    UntrustedRoot,
    /// §7.4/§7.8 the frame names another grant or resource.
    WrongResource,
    /// §7.5 the caller is not the grant's subject.
    WrongSubject,
    /// §7.6 a signature does not verify.
    BadSignature,
    /// §7.7 expired.
    Expired,
    /// §7.8 the action is not granted.
    ActionNotGranted,
    /// §7.9 the joule ceiling would be passed.
    BudgetExceeded,
    /// §4.8 the money ceiling would be passed.
    FundsExceeded,
    /// §4.8 a cost in another currency.
    CurrencyMismatch,
    /// §4.9 a caveat does not hold.
    CaveatUnsatisfied,
    /// §4.2 structurally invalid chain, or a delegated grant decided alone.
    ChainBroken,
    /// §4.2 a hop amplifies.
    AttenuationViolation,
    /// §4.10 the argument's label is above the ceiling or refused by the floor.
    FlowViolation,
    /// §4.10 provenance was not computed; fails closed.
    FlowNotComputed,
    /// §11 the request's freshness stamp is outside the endpoint's window.
    StaleRequest,
    /// §11 the endpoint could not record the request: it is not decided.
    Unrecorded,
    /// §4.7 the grant was steered: an admitted amendment superseded it (a
    /// soft revoke); the run goes on under its continuation grant.
    Superseded,
    /// §6.1 a later exchange names a handle the endpoint did not return to a
    /// request it decided, or one it has closed or forgotten.
    UnknownContinuation,
}

impl Reason {
    /// Whether a denial for this reason shows that the caller was the
    /// grant's subject acting under a verified grant (§7: the reason is
    /// reached only after the caller and every signature were checked, on
    /// the single and the chained path alike). A denial that does not —
    /// `bad-signature`, `wrong-subject`, `untrusted-root`, `revoked`,
    /// `expired` (before the caller on a chain), `wrong-resource` (also
    /// the frame naming another grant), a stale or unrecorded request —
    /// can be caused by a stranger presenting a grant that names someone
    /// else, so §8.2's per-worker tally keeps it out of the subject's
    /// refusals (docs/decisions.md).
    pub fn establishes_caller(self) -> bool {
        matches!(
            self,
            Self::ActionNotGranted
                | Self::BudgetExceeded
                | Self::FundsExceeded
                | Self::CurrencyMismatch
                | Self::CaveatUnsatisfied
                | Self::FlowViolation
                | Self::FlowNotComputed
        )
    }

    /// The wire code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UntrustedControl => "untrusted-control",
            Self::Revoked => "revoked",
            Self::UntrustedRoot => "untrusted-root",
            Self::WrongResource => "wrong-resource",
            Self::WrongSubject => "wrong-subject",
            Self::BadSignature => "bad-signature",
            Self::Expired => "expired",
            Self::ActionNotGranted => "action-not-granted",
            Self::BudgetExceeded => "budget-exceeded",
            Self::FundsExceeded => "funds-exceeded",
            Self::CurrencyMismatch => "currency-mismatch",
            Self::CaveatUnsatisfied => "caveat-unsatisfied",
            Self::ChainBroken => "chain-broken",
            Self::AttenuationViolation => "attenuation-violation",
            Self::FlowViolation => "flow-violation",
            Self::FlowNotComputed => "flow-not-computed",
            Self::StaleRequest => "stale-request",
            Self::Unrecorded => "unrecorded",
            Self::Superseded => "superseded",
            Self::UnknownContinuation => "unknown-continuation",
        }
    }

    /// Parses a wire code.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| r.as_str() == s)
    }

    /// Every reason.
    pub const ALL: [Reason; 20] = [
        Self::UntrustedControl,
        Self::Revoked,
        Self::UntrustedRoot,
        Self::WrongResource,
        Self::WrongSubject,
        Self::BadSignature,
        Self::Expired,
        Self::ActionNotGranted,
        Self::BudgetExceeded,
        Self::FundsExceeded,
        Self::CurrencyMismatch,
        Self::CaveatUnsatisfied,
        Self::ChainBroken,
        Self::AttenuationViolation,
        Self::FlowViolation,
        Self::FlowNotComputed,
        Self::StaleRequest,
        Self::Unrecorded,
        Self::Superseded,
        Self::UnknownContinuation,
    ];
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
