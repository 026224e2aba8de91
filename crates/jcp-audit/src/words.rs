//! The sentences of the audit's findings, one place for each: the fast
//! engine (`engine`) and the reference audit (`reference`) decide every
//! finding each on their own and word it here, so their reports can be
//! compared byte for byte.

use std::fmt::Display;

use jcp::cbor::ContentId;
use jcp_receipt::stream::{Fault, FaultCode, RecordKind};

/// A framing fault (§8.1).
pub(crate) fn fault(f: &Fault) -> String {
    match f.code {
        FaultCode::TornTail => format!("torn final record ({} bytes): reported and never read as a record", f.len),
        FaultCode::Garbage => format!("{} bytes that are not a record", f.len),
        FaultCode::Oversized => format!("declared length above the record limit; {} bytes skipped", f.len),
        FaultCode::ChecksumMismatch => format!("corrupt record (checksum or length); {} bytes skipped", f.len),
        FaultCode::UnknownKind => format!("record of an unknown kind ({} bytes)", f.len),
    }
}

/// A refused record (§8.2: it contributes nothing); `kind` `None` for a
/// record of no known kind.
pub(crate) fn refused(kind: Option<RecordKind>, msg: &str) -> String {
    let what = kind.map_or("record", |k| match k {
        RecordKind::Receipt => "receipt",
        RecordKind::Outcome => "outcome",
        RecordKind::Grant => "grant",
        RecordKind::Revocation => "revocation notice",
        RecordKind::Request => "wire request",
        RecordKind::Amendment => "amendment",
        RecordKind::Closing => "closing record",
        RecordKind::Statement => "channel statement",
    });
    format!("{what} refused, contributes nothing: {msg}")
}

/// §4.11: the code of an allow with no outcome.
pub(crate) const UNRESOLVED: crate::FindingCode = crate::FindingCode::UnresolvedDecision;

/// §4.11: an allow with no outcome.
pub(crate) fn unresolved(holder: &str, cost_uj: u64) -> String {
    format!("decision recorded with no outcome: whether it took effect is known only to its holder {holder} (§4.11); its {cost_uj} µJ stay debited")
}

/// §8.1: a stated remainder the replay does not give.
pub(crate) fn remaining_mismatch(stated: u64, grant: &ContentId, replayed: u64) -> String {
    format!("receipt states {stated} µJ remaining on {grant}, the replayed record gives {replayed} µJ")
}

/// §4.9 + §4.11: a settlement that matches no pair of pending allows.
pub(crate) fn settlement_unmatched(reservation: &ContentId, settled_by: &ContentId) -> String {
    format!(
        "settlement of reservation {reservation} by {settled_by}: not both allows of this point's earlier in this stream and unresolved, for one grant and holder; nothing taken back"
    )
}

/// §4.3: a revocation notice whose authority fails.
pub(crate) fn revocation_forged(grant: &ContentId) -> String {
    format!("revocation of {grant} fails its authority check (§4.3): not applied")
}

/// §4.3: a revocation of a grant no stream holds the record of.
pub(crate) fn revocation_authority_unknown(grant: &ContentId) -> String {
    format!("revocation of {grant}: no grant record to check its authority against")
}

/// §4.3: an allow on a revoked subtree, classified `code`
/// (`revocation-violation` against marker `m`, or `revocation-unverifiable`).
pub(crate) fn revocation_allow(code: crate::FindingCode, grant: &ContentId, m: u64) -> String {
    if code == crate::FindingCode::RevocationViolation {
        format!(
            "allow on the subtree of {grant} by a point whose known_through was at or past the revocation's marker {m}"
        )
    } else {
        format!("allow on the subtree of {grant} by a point that stated no known_through marker: unverifiable, not compliant (§4.3)")
    }
}

/// §4.7 + §4.3: another point's allow on a superseded grant's subtree.
pub(crate) fn superseded_elsewhere(code: crate::FindingCode, grant: &ContentId, m: Option<u64>) -> String {
    match m {
        Some(m) if code == crate::FindingCode::SupersededSpend => format!(
            "allow on the subtree of {grant}, superseded by an amendment issued at marker {m}, by another point whose known_through was at or past it (§4.7 soft revoke, §4.3)"
        ),
        Some(m) => format!(
            "allow on the subtree of {grant}, superseded by an amendment issued at marker {m}, by another point that stated no known_through marker: unverifiable, not compliant (§4.3)"
        ),
        None => format!(
            "allow on the subtree of {grant} by another point than the one that admitted the amendment superseding it; the amendment's notice states no feed marker, so whether that point had heard cannot be shown (§4.7, §4.3)"
        ),
    }
}

/// §11: whether the request a request record holds is caller-signed and
/// its signature verifies (the one Ed25519 predicate, over the canonical bytes of
/// every field but `signature`, as the caller signed them); `None` when the
/// bytes are not a caller-signed request. Read without the wire's types:
/// the audit sits below the endpoint.
pub(crate) fn request_signature_ok(request: &[u8]) -> Option<bool> {
    let v = jcp::cbor::decode_strict(request).ok()?;
    let jcp::cbor::Value::Map(entries) = v else { return None };
    let caller = entries.iter().find_map(|(k, v)| match (k, v) {
        (jcp::cbor::Value::Text(k), jcp::cbor::Value::Text(d)) if k == "caller" => jcp::identity::Did::parse(d).ok(),
        _ => None,
    })?;
    let sig: [u8; 64] = entries.iter().find_map(|(k, v)| match (k, v) {
        (jcp::cbor::Value::Text(k), jcp::cbor::Value::Bytes(b)) if k == "signature" => b.as_slice().try_into().ok(),
        _ => None,
    })?;
    let body: Vec<(jcp::cbor::Value, jcp::cbor::Value)> =
        entries.into_iter().filter(|(k, _)| *k != jcp::cbor::Value::text("signature")).collect();
    Some(caller.verify(&jcp::cbor::Value::Map(body).encode(), &sig))
}

/// §11: an allow whose request record's caller signature fails.
pub(crate) fn request_signature_invalid(request_at: u64) -> String {
    format!(
        "an allow recorded right behind the request record at byte {request_at}, whose caller signature does not verify: the request was not the caller's, and the point allowed it (§11)"
    )
}

/// §4.5: a shard bound to `point` allowed through at `at`.
pub(crate) fn shard_wrong_point(shard: &ContentId, point: &jcp::identity::Did, at: &str) -> String {
    format!(
        "shard {shard} is bound to point {point} (PointIs) but point {at} allowed through it: each point enforces only its own shard, so one shard spent at two points is spent twice (§4.5)"
    )
}

/// §4.5: for each parent whose shards bound to points (the grant records
/// carrying `PointIs`) sum past its joule or money ceiling, a sentence;
/// `record` finds a grant record by id. Sorted by parent id.
pub(crate) fn shard_overcommitted<'a>(
    records: impl IntoIterator<Item = &'a jcp::grant::SignedGrant>,
    record: impl Fn(&ContentId) -> Option<&'a jcp::grant::SignedGrant>,
) -> Vec<String> {
    let mut by_parent: std::collections::BTreeMap<ContentId, Vec<&jcp::grant::SignedGrant>> =
        std::collections::BTreeMap::new();
    for g in records.into_iter().filter(|g| g.grant().bound_point().is_some()) {
        if let Some(p) = g.grant().parent {
            by_parent.entry(p).or_default().push(g);
        }
    }
    let mut out = Vec::new();
    for (pid, mut shards) in by_parent {
        let Some(parent) = record(&pid) else { continue };
        shards.sort_by_key(|g| g.id());
        shards.dedup_by_key(|g| g.id());
        let p = parent.grant();
        let uj: u128 = shards.iter().map(|g| u128::from(g.grant().budget_uj)).sum();
        let minor: u128 =
            shards.iter().filter_map(|g| g.grant().budget_funds.as_ref()).map(|f| u128::from(f.minor)).sum();
        let over_money = p.budget_funds.as_ref().is_some_and(|f| minor > u128::from(f.minor));
        if uj > u128::from(p.budget_uj) || over_money {
            let money = p
                .budget_funds
                .as_ref()
                .map_or_else(String::new, |f| format!(" and {minor} of {} {}", f.minor, f.currency));
            out.push(format!(
                "the {} shards of {pid} bound to points hold {uj} µJ of its {} µJ{money}: the parent was sharded past itself, so its points together may spend more than it holds (§4.5)",
                shards.len(),
                p.budget_uj
            ));
        }
    }
    out
}

/// §5.5: joules past a grant's ceiling.
pub(crate) fn overspend_uj(grant: &ContentId, spent: u64, budget: u64, over: u64) -> String {
    format!("grant {grant} spent {spent} µJ against a ceiling of {budget} µJ ({over} µJ over)")
}

/// §4.8: money past a grant's money ceiling.
pub(crate) fn overspend_money(
    grant: &ContentId,
    spent_minor: u64,
    currency: impl Display,
    ceiling_minor: u64,
) -> String {
    format!("grant {grant} spent {spent_minor} {currency} minor against a money ceiling of {ceiling_minor}")
}

/// §4.3 with the issuer's log: a point recorded a revocation at another
/// marker than the issuer issued it at.
pub(crate) fn revocation_marker_mismatch(grant: &ContentId, recorded: u64, issued: u64) -> String {
    format!(
        "this point recorded the revocation of {grant} at marker {recorded}; the issuer's log issued it at {issued}: its allows are judged at {issued}"
    )
}

/// §4.3 with the issuer's log: a recorded revocation the issuer never logged.
pub(crate) fn revocation_unlogged(grant: &ContentId) -> String {
    format!("a revocation of {grant} that the issuer's log does not hold: judged at the marker its notices state")
}
