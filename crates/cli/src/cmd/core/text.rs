//! The text forms of protocol values on the command line: dids (§2),
//! content ids and resources (§3), provenance (§5), money (§4.8), flow
//! labels (§4.10), caveats (§4.9) and nonces. The grammar is the protocol
//! crate's (`FromStr` and `*_from_text` in `jcp`); these only turn its errors
//! into the CLI's.

use jcp::cbor::ContentId;
use jcp::energy::Provenance;
use jcp::flow::Label;
use jcp::grant::{content_id_from_text, resource_from_text, Caveat, Funds};
use jcp::identity::Did;

use crate::out::{coded, jcp_err};

/// Unix seconds now, or the given clock.
pub(crate) fn now_or(at: Option<u64>) -> u64 {
    at.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

pub(crate) fn parse_did(s: &str) -> anyhow::Result<Did> {
    Did::parse(s).map_err(|e| coded(e.code(), format!("{s:?}: {e}")))
}

/// The text forms below are the protocol crate's (`FromStr` and `*_from_text`
/// in `jcp`); these only turn its errors into the CLI's.
fn text_err(e: &jcp::Error) -> anyhow::Error {
    jcp_err(e, e.to_string())
}

pub(crate) fn parse_cid(s: &str, what: &'static str) -> anyhow::Result<ContentId> {
    content_id_from_text(s, what).map_err(|e| text_err(&e))
}

/// A resource: a content id, or `text:NAME` for people ([`jcp::grant::resource_from_text`]).
pub(crate) fn parse_resource(s: &str) -> anyhow::Result<ContentId> {
    resource_from_text(s).map_err(|e| text_err(&e))
}

/// `HwShunt | ModelBased | Estimator` (§5), for every subcommand that states a cost.
pub(crate) fn parse_provenance(s: &str) -> anyhow::Result<Provenance> {
    Provenance::parse(s)
        .ok_or_else(|| coded("invalid-provenance", format!("{s:?} is not HwShunt|ModelBased|Estimator")))
}

/// A money amount `CURRENCY:MINOR` (§4.8).
pub(crate) fn parse_money(s: &str) -> anyhow::Result<Funds> {
    s.parse().map_err(|e| text_err(&e))
}

/// `integrity;origins;readers` or `bottom` / `top` (§4.10).
pub(crate) fn parse_label(s: &str) -> anyhow::Result<Label> {
    s.parse().map_err(|e| text_err(&e))
}

/// `Name=argument`, e.g. `MaxCostUj=100`, `ActionIn=read,write`,
/// `FlowBelow=untrusted;search;all;1000` (§4.9).
pub(crate) fn parse_caveat(s: &str) -> anyhow::Result<Caveat> {
    s.parse().map_err(|e| text_err(&e))
}

pub(crate) fn nonce_arg(n: Option<&String>) -> anyhow::Result<Option<[u8; 16]>> {
    n.map(|s| {
        hex::decode(s)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| coded("invalid-nonce", "--nonce must be 32 hex digits"))
    })
    .transpose()
}
