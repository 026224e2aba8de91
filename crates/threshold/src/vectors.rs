//! Published threshold vectors (`conformance/jcp/v1/threshold.json`): a
//! dealer 2-of-3, a full DKG 2-of-3, a signing ceremony by participants 1
//! and 3, every participant file as hex, and the refusals with their
//! codes. Generated from fixed seeds (`ChaCha20`) by `gen-threshold-vectors`;
//! regenerating MUST NOT change a byte.

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value as Json};

use crate::dkg::{self, Round1Package, Round2Package};
use crate::error::ThresholdError;
use crate::file::ParticipantFile;
use crate::group::{GroupDescriptor, KeyShare};
use crate::sign::{self, Commitments, SignatureShare};
use crate::{dealer, ThresholdError as E};

/// Where the vectors live, from the repository root.
pub const PATH: &str = "conformance/jcp/v1/threshold.json";
/// The `ChaCha20` seed byte (the seed is 32 copies).
pub const SEED: u8 = 0x13;
/// The message the ceremony signs.
pub const MESSAGE: &[u8] = b"jcp threshold vector: two of three";

fn hx(b: &[u8]) -> Json {
    Json::String(hex::encode(b))
}

fn files<T: ParticipantFile>(items: &[T]) -> Json {
    Json::Array(items.iter().map(|i| hx(&i.to_bytes())).collect())
}

/// A DKG among 1..=n.
fn run_dkg(min: u16, max: u16, rng: &mut ChaCha20Rng) -> Result<(Json, GroupDescriptor, Vec<KeyShare>), E> {
    let mut s1 = Vec::new();
    let mut r1: Vec<Round1Package> = Vec::new();
    for id in 1..=max {
        let (s, p) = dkg::round1(id, min, max, rng)?;
        s1.push(s);
        r1.push(p);
    }
    let secrets1 = files(&s1);
    let mut s2 = Vec::new();
    let mut r2: Vec<Round2Package> = Vec::new();
    for s in s1 {
        let (sec, out) = dkg::round2(s, &r1)?;
        s2.push(sec);
        r2.extend(out);
    }
    let mut shares = Vec::new();
    let mut group = None;
    for s in &s2 {
        let mine: Vec<_> = r2.iter().filter(|p| p.to() == s.identifier()).cloned().collect();
        let (share, g) = dkg::finish(s, &r1, &mine)?;
        group = Some(g);
        shares.push(share);
    }
    let group = group.ok_or_else(|| E::BadParameters("a DKG with no participants".into()))?;
    let out = json!({
        "min_signers": min, "max_signers": max,
        "round1_secrets": secrets1, "round1": files(&r1),
        "round2_secrets": files(&s2), "round2": files(&r2),
        "key_shares": files(&shares), "group": hx(&group.to_bytes()),
        "group_did": group.group().to_did_string(),
    });
    Ok((out, group, shares))
}

/// The map of `v` with `field` replaced (for refusal cases).
fn with_field(v: &jcp::cbor::Value, field: &str, to: &jcp::cbor::Value) -> Vec<u8> {
    match v {
        jcp::cbor::Value::Map(m) => {
            jcp::cbor::Value::Map(
                m.iter()
                    .map(|(k, x)| {
                        if *k == jcp::cbor::Value::text(field) {
                            (k.clone(), to.clone())
                        } else {
                            (k.clone(), x.clone())
                        }
                    })
                    .collect(),
            )
            .encode()
        }
        other => other.encode(),
    }
}

fn refusal<T: ParticipantFile>(name: &str, bytes: &[u8]) -> Result<Json, E> {
    match T::from_bytes(bytes) {
        Ok(_) => Err(E::BadParameters(format!("vector {name}: expected a refusal, decoded"))),
        Err(e) => Ok(json!({"name": name, "type": T::TYPE, "bytes": hx(bytes), "code": e.code()})),
    }
}

/// Generates the vectors.
pub fn generate() -> Result<Json, ThresholdError> {
    let mut rng = ChaCha20Rng::from_seed([SEED; 32]);
    let (dgroup, dshares) = dealer::deal(2, 3, &mut rng)?;
    let (dkg_json, group, shares) = run_dkg(2, 3, &mut rng)?;
    // Participants 1 and 3 sign.
    let signers: Vec<&KeyShare> = shares.iter().filter(|s| s.identifier() != 2).collect();
    let mut nonces = Vec::new();
    let mut commitments: Vec<Commitments> = Vec::new();
    for s in &signers {
        let (n, c) = sign::round1(s, &mut rng);
        nonces.push(n);
        commitments.push(c);
    }
    let nonce_files = files(&nonces);
    let mut sig_shares: Vec<SignatureShare> = Vec::new();
    for (s, n) in signers.iter().zip(nonces) {
        sig_shares.push(sign::round2(s, n, &commitments, MESSAGE)?);
    }
    let signature = sign::aggregate(&group, &commitments, MESSAGE, &sig_shares)?;

    // Refusals, each with its code.
    let gv = group.to_value();
    let mut listed = Vec::new();
    if let Some(jcp::cbor::Value::Array(items)) = gv.get("shares") {
        listed.clone_from(items);
    }
    // Participant 3's verifying share replaced by participant 2's.
    let mut moved = listed.clone();
    if let (Some(two), Some(three)) = (listed.get(1).and_then(|v| v.get("verifying_share")).cloned(), moved.get_mut(2))
    {
        *three = jcp::cbor::map([("identifier", Some(jcp::cbor::Value::Uint(3))), ("verifying_share", Some(two))]);
    }
    let dealer_vk = dgroup.to_value().get("group").cloned().unwrap_or(jcp::cbor::Value::Uint(0));
    let ks = shares[0].to_value();
    let cm = commitments[0].to_bytes();
    let mut trailing = sig_shares[0].to_value();
    if let jcp::cbor::Value::Map(m) = &mut trailing {
        for (k, v) in m.iter_mut() {
            if *k == jcp::cbor::Value::text("frost") {
                if let jcp::cbor::Value::Bytes(b) = v {
                    b.push(0);
                }
            }
        }
    }
    let refusals = vec![
        refusal::<GroupDescriptor>(
            "group-share-off-the-polynomial",
            &with_field(&gv, "shares", &jcp::cbor::Value::Array(moved)),
        )?,
        refusal::<GroupDescriptor>("group-key-of-another-group", &with_field(&gv, "group", &dealer_vk))?,
        refusal::<GroupDescriptor>("group-1-of-3", &with_field(&gv, "min_signers", &jcp::cbor::Value::Uint(1)))?,
        refusal::<KeyShare>(
            "key-share-envelope-names-participant-2",
            &with_field(&ks, "identifier", &jcp::cbor::Value::Uint(2)),
        )?,
        refusal::<KeyShare>("key-share-participant-0", &with_field(&ks, "identifier", &jcp::cbor::Value::Uint(0)))?,
        refusal::<KeyShare>("commitments-read-as-a-key-share", &cm)?,
        refusal::<SignatureShare>("signature-share-trailing-byte", &trailing.encode())?,
        refusal::<Commitments>("commitments-truncated", &cm[..cm.len() - 1])?,
    ];
    // Ceremony refusals.
    let lone = match sign::aggregate(&group, &commitments[..1], MESSAGE, &sig_shares[..1]) {
        Err(e) => e.code(),
        Ok(_) => return Err(E::BadParameters("one share aggregated".into())),
    };
    let wrong_msg = match sign::aggregate(&group, &commitments, b"another message", &sig_shares) {
        Err(e) => e.code(),
        Ok(_) => return Err(E::BadParameters("shares over another message aggregated".into())),
    };
    Ok(json!({
        "description": "JCP §2.2 threshold actors (C13, C18): FROST(Ed25519, SHA-512), RFC 9591. Participant files are canonical det-CBOR, hex. A signature verifies with verify_strict under group_did.",
        "seed": format!("ChaCha20 [{SEED:#04x}; 32]"),
        "dealer": {
            "min_signers": 2, "max_signers": 3,
            "group": hx(&dgroup.to_bytes()), "group_did": dgroup.group().to_did_string(),
            "key_shares": files(&dshares),
        },
        "dkg": dkg_json,
        "signing": {
            "message": hx(MESSAGE),
            "signers": signers.iter().map(|s| s.identifier()).collect::<Vec<_>>(),
            "nonces": nonce_files,
            "commitments": files(&commitments),
            "signature_shares": files(&sig_shares),
            "signature": hx(&signature),
        },
        "ceremony_refusals": [
            {"name": "one-share-of-2-of-3", "signers": [1], "code": lone},
            {"name": "shares-over-another-message", "signers": [1, 3], "message": hx(b"another message"), "code": wrong_msg},
        ],
        "refusals": refusals,
    }))
}

/// The vectors as written to disk (pretty JSON, trailing newline).
pub fn generate_text() -> Result<String, ThresholdError> {
    let v = generate()?;
    let mut s = serde_json::to_string_pretty(&v).map_err(|e| E::Io { path: PATH.into(), problem: e.to_string() })?;
    s.push('\n');
    Ok(s)
}
