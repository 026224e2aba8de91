//! Invariants checked by the cargo-fuzz targets (`crates/jcp/fuzz`) and by
//! the corpus replay test, so CI (no nightly fuzzing) runs the corpus too.
//! Each returns `Err` with a description when an invariant is broken; the
//! caller panics. Decoding must never panic on any input.

use crate::cbor::{self, Profile, Value};
use crate::grant::SignedGrant;

/// Anything the strict decoder accepts re-encodes to exactly the input, and
/// the generic deterministic decoder accepts it too.
pub fn cbor_decode(data: &[u8]) -> Result<(), String> {
    if let Ok(v) = cbor::decode_strict(data) {
        if v.encode() != data {
            return Err(format!("strict decode accepted non-canonical bytes {}", hex::encode(data)));
        }
        if cbor::decode(data, Profile::Deterministic).is_err() {
            return Err("strict accepted what deterministic refused".into());
        }
    }
    if let Ok(v) = cbor::decode(data, Profile::Deterministic) {
        if v.encode() != data {
            return Err(format!("deterministic decode accepted non-canonical bytes {}", hex::encode(data)));
        }
    }
    Ok(())
}

/// A decoded signed grant re-encodes to the input, and its id is the hash
/// of its grant's canonical bytes.
pub fn grant_decode(data: &[u8]) -> Result<(), String> {
    if let Ok(g) = SignedGrant::from_bytes(data) {
        if g.to_bytes() != data {
            return Err("signed grant did not round-trip".into());
        }
        if g.id() != g.grant().id() {
            return Err("id differs from the grant's content id".into());
        }
        let _ = g.verify_signature();
    }
    Ok(())
}

/// An array of signed grants: decoding and chain verification never panic,
/// and a verified chain is structurally sound.
pub fn chain_decode(data: &[u8]) -> Result<(), String> {
    let Ok(Value::Array(items)) = cbor::decode_strict(data) else { return Ok(()) };
    let chain: Vec<SignedGrant> = items.iter().filter_map(|v| SignedGrant::from_value(v).ok()).collect();
    if crate::chain::verify_chain(&chain).is_ok() {
        for pair in chain.windows(2) {
            if pair[1].grant().parent != Some(pair[0].id()) {
                return Err("verified chain with a broken parent link".into());
            }
        }
    }
    let _ = crate::revocation::SignedRevocation::from_bytes(data);
    let _ = crate::frame::Frame::from_bytes(data);
    Ok(())
}

/// A decoded signed statement (§4.5) re-encodes to the input and its id is
/// its statement's content id; a decoded overdraft proof re-encodes to the
/// input; verifying either never panics.
pub fn statement_decode(data: &[u8]) -> Result<(), String> {
    if let Ok(s) = crate::channel::SignedStatement::from_bytes(data) {
        if s.to_bytes() != data {
            return Err("signed statement did not round-trip".into());
        }
        if s.id() != crate::cbor::ContentId::of(&s.statement().to_value()) {
            return Err("statement id differs from its content id".into());
        }
        let _ = s.verify();
    }
    if let Ok(p) = crate::channel::OverdraftProof::from_bytes(data) {
        if p.to_bytes() != data {
            return Err("overdraft proof did not round-trip".into());
        }
        if let Ok(o) = p.verify() {
            if o.total_uj <= u128::from(o.budget_uj) {
                return Err("verified an overdraft within the budget".into());
            }
        }
    }
    Ok(())
}

/// A plain key file the reader accepts is its keypair's own: the file
/// written for that keypair reads back to the same seed and did (§2).
pub fn key_file_decode(data: &[u8]) -> Result<(), String> {
    use crate::identity::KeyFile;
    if let Ok(k) = KeyFile::decode(data) {
        let again = KeyFile::decode(KeyFile::encode(&k).as_bytes())
            .map_err(|e| format!("the key's own file is refused: {e}"))?;
        if again.seed() != k.seed() || again.did() != k.did() {
            return Err("the key's own file reads back to another key".into());
        }
    }
    Ok(())
}
