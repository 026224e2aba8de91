//! §4.7 continuation grants: the grant the issuer re-issues to the same agent
//! after an amendment, checked against the amendment and the steered grant.

use super::{steer, Amendment, SteeringError};
use crate::error::Error;
use crate::grant::{check_narrows, Grant, SignedGrant};
use crate::rotation::KeyRing;

/// Checks a continuation grant against the amendment that names it and the
/// grant it continues (§4.7): the named id, the issuer's signature, the same
/// issuer, agent and chain position (`parent`), a budget no larger than the
/// amendment's, an expiry no later, and no wider on any other axis.
pub fn verify_continuation(steered: &SignedGrant, am: &Amendment, cont: &SignedGrant) -> Result<(), Error> {
    continuation_under(steered, am, cont, &KeyRing::new())
}

/// [`verify_continuation`] with the issuer's signature checked through
/// `keys` (a rotated steward's continuation is signed by its current key).
pub(super) fn continuation_under(
    steered: &SignedGrant,
    am: &Amendment,
    cont: &SignedGrant,
    keys: &KeyRing,
) -> Result<(), Error> {
    let (s, c) = (steered.grant(), cont.grant());
    if cont.id() != am.continuation {
        return Err(steer(SteeringError::Continuation(format!(
            "grant {} is not the continuation {} the amendment names",
            cont.id(),
            am.continuation
        ))));
    }
    keys.verify_grant(cont)?;
    if c.issuer != s.issuer || c.subject != s.subject {
        return Err(steer(SteeringError::Continuation(format!(
            "a continuation is re-issued by the same issuer to the same agent; got {} → {}, expected {} → {}",
            c.issuer, c.subject, s.issuer, s.subject
        ))));
    }
    if c.parent != s.parent {
        return Err(steer(SteeringError::Continuation(
            "a continuation takes the steered grant's place: its parent must be the steered grant's parent".into(),
        )));
    }
    if c.budget_uj > am.budget_uj {
        return Err(steer(SteeringError::Widening(format!(
            "continuation budget {} µJ exceeds the amended {} µJ",
            c.budget_uj, am.budget_uj
        ))));
    }
    if let Some(e) = am.expiry {
        if c.expiry == 0 || c.expiry > e {
            return Err(steer(SteeringError::Widening(format!(
                "continuation expiry {} outlives the amended {e}",
                c.expiry
            ))));
        }
    }
    // Every other axis narrows as an attenuation would (§4.1) — except
    // depth, which a continuation keeps rather than spends (it is a
    // re-binding, not a hop): compared here on its own.
    let strip = |g: &Grant| Grant { delegate_depth: None, ..g.clone() };
    check_narrows(&strip(s), &strip(c))
        .map_err(|amp| steer(SteeringError::Widening(format!("continuation widens the steered grant: {amp}"))))?;
    if let Some(d) = s.delegate_depth {
        if c.delegate_depth.is_none_or(|cd| cd > d) {
            return Err(steer(SteeringError::Widening(format!(
                "continuation delegate_depth {:?} exceeds the steered grant's {d}",
                c.delegate_depth
            ))));
        }
    }
    Ok(())
}
