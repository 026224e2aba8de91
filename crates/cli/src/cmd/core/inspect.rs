//! `jcp inspect FILE`: any JCP object — grant (§4), revocation (§4.3),
//! frame (§6), key log (§2.1), mint policy or ledger (§4.6), threshold
//! file (§2.2) — with its content id and signature status.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use jcp::cbor::{self, ContentId};
use jcp::frame::Frame;
use jcp::grant::SignedGrant;
use jcp::revocation::SignedRevocation;
use serde_json::json;

use super::files::{core_err, read_bytes};
use super::grant::{grant_human, grant_json};
use crate::out::{coded, emit, CLEAN, FINDINGS};

/// `jcp inspect FILE`: any JCP object (grant, revocation, frame, key log, mint policy, mint ledger).
#[derive(Debug, Args)]
pub struct InspectArgs {
    file: PathBuf,
    #[arg(long)]
    json: bool,
}

pub fn run_inspect(args: &InspectArgs) -> anyhow::Result<ExitCode> {
    inspect(&args.file, args.json)
}

pub(super) fn inspect(file: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let bytes = read_bytes(file)?;
    let v = cbor::decode_strict(&bytes).map_err(|e| coded(e.code(), format!("{}: {e}", file.display())))?;
    let id = ContentId::of_bytes(&bytes);
    if let Some(kind) = jcp_threshold::file::file_type(&bytes) {
        return crate::cmd::threshold::inspect(file, &bytes, &kind, json);
    }
    if v.get("grant").is_some() {
        let g = SignedGrant::from_value(&v).map_err(|e| core_err(file, &e))?;
        let ok = g.verify_signature();
        emit(json, &grant_json(&g), || grant_human(&g))?;
        return Ok(ExitCode::from(if ok { CLEAN } else { FINDINGS }));
    }
    if v.get("revocation").is_some() {
        let r = SignedRevocation::from_value(&v).map_err(|e| core_err(file, &e))?;
        let rv = r.revocation();
        // A revocation names its signer; the signature can be checked against
        // that key here. Whether the signer is the grant's issuer needs the grant.
        let sig_ok = r.verify_signature();
        emit(
            json,
            &json!({"type": "revocation", "id": r.id(), "signature_valid_for_revoked_by": sig_ok, "revocation": rv}),
            || {
                format!(
                "revocation {}\n  grant_id    {}\n  revoked_by  {}\n  signature   {}\n  (authority is checked against the grant: `jcp decide --revocation`)\n",
                r.id(), rv.grant_id, rv.revoked_by, if sig_ok { "valid for revoked_by" } else { "INVALID" }
            )
            },
        )?;
        return Ok(ExitCode::from(if sig_ok { CLEAN } else { FINDINGS }));
    }
    if v.get("kind").is_some() {
        let f = Frame::from_value(&v).map_err(|e| core_err(file, &e))?;
        emit(json, &json!({"type": "frame", "id": id, "frame": f}), || {
            format!(
                "frame {}\n  kind        {}\n  trust       {}\n  grant_id    {}\n  action      {}\n  resource    {}\n  payload     {}\n  model       {}\n",
                id, f.kind.as_str(), f.trust.as_str(), f.grant_id, f.action, f.resource, f.payload_hash,
                f.model.map_or("none".to_owned(), |m| m.to_hex())
            )
        })?;
        return Ok(ExitCode::from(CLEAN));
    }
    if jcp::rotation::KeyLog::is_key_log(&v) {
        return crate::cmd::identity::inspect_key_log(file, &v, json);
    }
    if v.get("policy").is_some() {
        return crate::cmd::standing::inspect_policy(file, &v, json);
    }
    if jcp::standing::MintLedger::is_ledger(&v) {
        return crate::cmd::standing::inspect_ledger(file, &v, json);
    }
    Err(coded(
        "unknown-object",
        format!(
            "{}: canonical CBOR, but not a grant, revocation, frame, key log, mint policy or mint ledger",
            file.display()
        ),
    ))
}
