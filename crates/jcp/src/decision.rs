//! Spec §7: the decision. Pure and deterministic over the gate's state; the
//! clock is an argument. Also §4.2 (chained decisions, conservation across
//! siblings), §4.3 (revocation on both paths), §4.8 (dual ceilings), §4.9
//! (caveats, the two-phase metered path), §4.10 (flow), trust roots (C15).
//!
//! | module | spec |
//! |---|---|
//! | `reason` | §7 the deny reasons and their wire codes |
//! | `gate` | §7 the gate's state and the decision entry points |
//! | `checks` | §7 the ordered checks, §4.9 caveats, §4.8 ceilings, §4.10 flow |
//! | `metered` | §4.9 the two-phase metered path, §4.11 reservations |
//! | `channels` | §4.5 budget channels at the gate |

use crate::cbor::ContentId;
use crate::energy::Energy;
use crate::flow::Label;
use crate::frame::Frame;
use crate::grant::{Funds, SignedGrant};
use crate::identity::Did;

mod channels;
mod checks;
mod gate;
mod metered;
mod reason;

pub use gate::Gate;
pub use metered::Authorization;
pub use reason::Reason;

/// What an action costs: metered energy and, for a priced action, money.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Cost {
    /// The metered energy (µJ with provenance and coverage).
    pub energy: Energy,
    /// The money cost, if the action is priced.
    pub money: Option<Funds>,
}

impl Cost {
    /// An energy-only cost.
    pub fn energy(energy: Energy) -> Self {
        Self { energy, money: None }
    }
}

/// One decision's inputs (§7).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The frame asking to exercise the capability (§6): its trust, grant,
    /// resource, action and payload hash.
    pub frame: &'a Frame,
    /// The grant (one link) or the full chain, root first.
    pub chain: &'a [SignedGrant],
    /// The caller's identity, which must be the (leaf) grant's subject (§7.5).
    pub caller: &'a Did,
    /// The metered cost (ignored by [`Gate::authorize`]).
    pub cost: &'a Cost,
    /// The enforcement point's clock, unix seconds.
    pub now: u64,
    /// The argument's label; `None` = provenance not computed (§4.10).
    pub flow: Option<&'a Label>,
}

/// The outcome of a decision (§7): allow, or deny with the first failing
/// check's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "lowercase")]
pub enum Verdict {
    /// Allowed (and debited).
    Allow,
    /// Denied, with the first failing check's reason; nothing debited.
    Deny(Reason),
}

/// A decision and what it did to the budget.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Decision {
    /// Allow, or deny with its reason.
    pub verdict: Verdict,
    /// A sentence saying why (empty on a plain allow).
    pub detail: String,
    /// Every grant id the decision concerns, root first (one for a single grant).
    pub chain_ids: Vec<ContentId>,
    /// µJ debited from every link (0 on deny).
    pub debited_uj: u64,
    /// Money debited from every link, in the cost's minor units (0 on deny).
    pub debited_minor: u64,
    /// The leaf grant's joule ceiling.
    pub budget_uj: u64,
    /// The leaf grant's remaining joules after this decision.
    pub budget_remaining_uj: u64,
    /// A breach found at the debit point of the two-phase path (§4.9): the
    /// work ran, its joules were debited, and the breach is recorded here.
    pub breach: Option<Reason>,
}

impl Decision {
    /// Whether the verdict is allow.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// The deny reason, if any.
    pub fn reason(&self) -> Option<Reason> {
        match self.verdict {
            Verdict::Allow => None,
            Verdict::Deny(r) => Some(r),
        }
    }
}

/// Accumulated spend against one grant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Spend {
    /// µJ spent (may exceed the budget only through a debit-point overrun).
    pub uj: u64,
    /// Money spent, minor units.
    pub minor: u64,
    /// µJ spent on calls whose argument was not ⊥ (§4.10 tainted allowance).
    pub tainted_uj: u64,
}
