//! Invariants checked by the cargo-fuzz targets (`crates/jcp/fuzz`) and by
//! the corpus replay test, so CI (no nightly fuzzing) runs the corpus too.
//! Each returns `Err` with a description when an invariant is broken; the
//! caller panics. Decoding must never panic on any input.
//!
//! Built with the `fuzzing` feature only (the `fuzz/` crate and this crate's
//! own tests enable it): not part of the shipped library.

use crate::cbor::{self, Profile, Value};
use crate::grant::SignedGrant;
use crate::rotation::KeyLog;
use crate::standing::{vectors as standing_vectors, verify_policy, FiringRequest, MintLedger, SignedMintPolicy};
use crate::steering::Run;

/// Anything the strict decoder accepts re-encodes to exactly the input, and
/// the generic deterministic decoder accepts it too. The skipping reader
/// ([`cbor::map_spans_strict`]) refuses exactly what the strict decoder
/// refuses, with the same error, and reads a map into the same entries.
pub fn cbor_decode(data: &[u8]) -> Result<(), String> {
    spans_agree(data)?;
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

/// [`cbor::map_spans_strict`] against [`cbor::decode_strict`].
pub fn spans_agree(data: &[u8]) -> Result<(), String> {
    match (cbor::decode_strict(data), cbor::map_spans_strict(data)) {
        (Err(a), Err(b)) if a == b => Ok(()),
        (Ok(Value::Map(tree)), Ok(Some(spans))) => {
            if tree.len() != spans.len() {
                return Err(format!("{} entries read as {}", tree.len(), spans.len()));
            }
            for ((k, v), (sk, span)) in tree.iter().zip(&spans) {
                if *k != Value::text(*sk) {
                    return Err(format!("key {k:?} read as {sk:?}"));
                }
                if cbor::decode_strict(span).as_ref() != Ok(v) {
                    return Err(format!("the value under {sk:?} does not decode from its span alone"));
                }
            }
            Ok(())
        }
        (Ok(v), Ok(None)) if !matches!(v, Value::Map(_)) => Ok(()),
        (a, b) => Err(format!("strict decode {a:?}, skipping reader {b:?}: {}", hex::encode(data))),
    }
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

/// The fuzz invariant of the one energy parser (`fuzz/fuzz_targets/energy_text.rs`,
/// §5): it never panics; a figure it accepts is at most
/// [`crate::energy::MAX_TYPED_UJ`], and the formatter's words for it read
/// back to at most that figure (the formatter truncates, never rounds up).
pub fn energy_text(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else { return Ok(()) };
    let Ok(uj) = crate::energy::parse_energy(text) else { return Ok(()) };
    if uj > crate::energy::MAX_TYPED_UJ {
        return Err(format!("{text:?} read as {uj} µJ, above the most a typed figure may be"));
    }
    let shown = crate::energy::format_uj(uj);
    let words = shown.split(" (").next().unwrap_or_default();
    match crate::energy::parse_energy(words) {
        Ok(back) if back <= uj => Ok(()),
        Ok(back) => Err(format!("{uj} µJ is shown as {shown:?}, which reads back as more: {back}")),
        Err(e) => Err(format!("{uj} µJ is shown as {shown:?}, which does not read back: {e}")),
    }
}

/// The fuzz invariant of the key log decoder (`fuzz/fuzz_targets/keylog_decode.rs`
/// and the corpus replay test): decoding never panics; anything accepted
/// re-encodes to exactly the input, verifies without panicking, and a
/// verified state agrees with the log's last event.
pub fn keylog_decode(data: &[u8]) -> Result<(), String> {
    let Ok(log) = KeyLog::from_bytes(data) else {
        return Ok(());
    };
    if log.to_bytes() != data {
        return Err("accepted key log did not re-encode to its bytes".into());
    }
    let view = log.view();
    if view.state.is_some() == view.refusal.is_some() {
        return Err("a key log view has both or neither of state and refusal".into());
    }
    if let Some(s) = &view.state {
        let last = log.events().last().ok_or("a verified log with no events")?;
        if *s.head() != last.id()
            || *s.current() != last.event().current
            || log.events().first().map(|e| e.event().identity) != Some(*s.identity())
        {
            return Err("verified state disagrees with the log".into());
        }
        if s.superseded().len() != log.events().len() - 1 {
            return Err("superseded keys miscounted".into());
        }
    }
    Ok(())
}

/// The fuzz invariant of the policy decoder (`fuzz/fuzz_targets/policy_decode.rs`):
/// decoding never panics; anything accepted re-encodes to exactly the input,
/// its id is the policy core's, and checking it against the vectors' standing
/// grant never panics and agrees with the policy's own fields.
pub fn policy_decode(data: &[u8]) -> Result<(), String> {
    let Ok(p) = SignedMintPolicy::from_bytes(data) else {
        return Ok(());
    };
    if p.to_bytes() != data {
        return Err("accepted policy did not re-encode to its bytes".into());
    }
    if p.id() != p.policy().id() {
        return Err("policy id differs from the core's content id".into());
    }
    let fx = standing_vectors::fixture().map_err(|e| e.to_string())?;
    if verify_policy(&fx.grant, &p).is_ok() {
        let q = p.policy();
        if q.grant_id != fx.grant.id() || q.per_firing_uj > fx.grant.grant().budget_uj || q.max_firings == 0 {
            return Err("a policy verified that amplifies or is unbound".into());
        }
    }
    Ok(())
}

/// The fuzz invariant of the ledger decoder (`fuzz/fuzz_targets/ledger_decode.rs`):
/// decoding never panics; anything accepted re-encodes to exactly the input;
/// a firing against the vectors' standing grant and policy either leaves the
/// ledger byte-identical (refused) or adds one firing and exactly the child's
/// budget, never past the grant, with a child that chain-verifies.
pub fn ledger_decode(data: &[u8]) -> Result<(), String> {
    let Ok(mut ledger) = MintLedger::from_bytes(data) else {
        return Ok(());
    };
    if ledger.to_bytes() != data {
        return Err("accepted ledger did not re-encode to its bytes".into());
    }
    let fx = standing_vectors::fixture().map_err(|e| e.to_string())?;
    let before = ledger.clone();
    let request =
        FiringRequest { event_class: fx.class.id(), subject: fx.worker.did(), budget_uj: None, nonce: Some([0; 16]) };
    match ledger.fire(&fx.grant, &fx.policy, &fx.issuer, &request, standing_vectors::NOW) {
        Err(_) if ledger.to_bytes() != data => Err("a refused firing changed the ledger".into()),
        Err(_) => Ok(()),
        Ok(child) => {
            if ledger.firings() != before.firings() + 1
                || ledger.spent_uj() != before.spent_uj() + child.grant().budget_uj
                || ledger.spent_uj() > fx.grant.grant().budget_uj
            {
                return Err("an accepted firing mis-counted the ledger".into());
            }
            crate::chain::verify_chain(&[fx.grant.clone(), child])
                .map_err(|e| format!("minted child does not chain-verify: {e}"))
        }
    }
}

/// The fuzz invariant of the run file decoder (`fuzz/fuzz_targets/run_decode.rs`
/// and the corpus replay test): decoding never panics; anything accepted
/// re-encodes to exactly the input and verifies without panicking, and the
/// verifier's findings all name a record that exists.
pub fn run_decode(data: &[u8]) -> Result<(), String> {
    let Ok(run) = Run::from_bytes(data) else { return Ok(()) };
    if run.to_bytes() != data {
        return Err("accepted run file did not re-encode to its bytes".into());
    }
    let report = run.verify().map_err(|e| format!("decoded run did not verify structurally: {e}"))?;
    if report.records != run.records().len() {
        return Err("report counts a different number of records".into());
    }
    for f in &report.findings {
        match run.records().get(f.index) {
            Some(r) if r.id() == f.id => {}
            _ => return Err(format!("finding names record #{} that does not match", f.index)),
        }
    }
    if report.clean != report.findings.is_empty() {
        return Err("clean disagrees with findings".into());
    }
    Ok(())
}

/// The feed key the `revocation_log` target's logs are read under (the
/// corpus's valid logs are signed with the key of seed `[77; 32]`).
fn fuzz_feed_key() -> Result<crate::identity::Did, String> {
    crate::identity::Keypair::from_seed([77; 32]).map(|k| k.did()).map_err(|e| e.to_string())
}

/// The fuzz invariant of the issuer's revocation log reader
/// (`fuzz/fuzz_targets/revocation_log.rs`, §4.3): it never panics; a log
/// it accepts has markers that never go back and entries whose signatures
/// verify, and written again (header and each entry's line) reads back to
/// the same entries.
pub fn revocation_log(data: &[u8]) -> Result<(), String> {
    use crate::revocation_log::{header_line, signed_bytes, IssuerLog};
    let key = fuzz_feed_key()?;
    let Ok(log) = IssuerLog::read(data, &[key]) else { return Ok(()) };
    let mut last = 0;
    let mut text = header_line();
    for e in log.entries() {
        if e.marker < last {
            return Err(format!("marker {} after {last} was accepted", e.marker));
        }
        last = e.marker;
        if !e.by.verify(&signed_bytes(&e.revocation, &e.grant, e.marker), &e.sig) {
            return Err(format!("line {}: an entry whose signature does not verify was accepted", e.line));
        }
        text.push('\n');
        text.push_str(&e.to_line());
    }
    let again =
        IssuerLog::read(text.as_bytes(), &[key]).map_err(|e| format!("the log written again is refused: {e}"))?;
    let strip = |l: &IssuerLog| l.entries().iter().map(|e| (e.marker, e.key(), e.by, e.sig)).collect::<Vec<_>>();
    if strip(&again) != strip(&log) {
        return Err("the log written again reads back to other entries".into());
    }
    Ok(())
}
