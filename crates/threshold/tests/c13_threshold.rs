//! C13 (threshold half) and C18 (§2.2): one share of a 2-of-3 cannot sign,
//! two can; a dealer-free k-of-n actor signs a standard Ed25519 signature;
//! the aggregate is usable wherever JCP checks a signature (grant,
//! revocation, amendment §4.7).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

mod common;

use common::*;
use ed25519_dalek::{Signature, VerifyingKey};
use jcp::decision::{Gate, Reason};
use jcp::energy::Provenance;
use jcp::grant::SignedGrant;
use jcp::revocation::{Revocation, SignedRevocation};
use jcp::steering::{AmendInput, CheckpointInput, Run, SignedAmendment, Spent};
use jcp_threshold::sign;
use jcp_threshold::{dealer, GroupDescriptor, KeyShare, ParticipantFile};

fn strict(did: &jcp::identity::Did, msg: &[u8], sig: &[u8; 64]) -> bool {
    VerifyingKey::from_bytes(did.public_bytes()).unwrap().verify_strict(msg, &Signature::from_bytes(sig)).is_ok()
}

#[test]
fn c13_dealer_2_of_3_one_share_cannot_sign_two_can() {
    let (group, shares) = dealer::deal(2, 3, &mut rng(1)).unwrap();
    assert_eq!(group.describe().threshold, "2-of-3");
    let msg = b"move the funds";
    // Two of three, any two: a standard Ed25519 signature by the group DID.
    for pair in [[1u16, 2], [1, 3], [2, 3]] {
        let sig = ceremony(&group, &shares, &pair, msg, 9).unwrap();
        assert!(group.group().verify(msg, &sig));
        assert!(strict(&group.group(), msg, &sig));
        assert!(!group.group().verify(b"another message", &sig));
    }
    // One share alone: our rounds refuse…
    let e = ceremony(&group, &shares, &[2], msg, 9).unwrap_err();
    assert_eq!(e.code(), "too-few-signers", "{e}");
    // …and so does FROST itself, at round 2 and at aggregation.
    let s = &shares[1];
    let (nonces, commitment) = frost_ed25519::round1::commit(s.frost().signing_share(), &mut rng(3));
    let pkg = frost_ed25519::SigningPackage::new([(*s.frost().identifier(), commitment)].into(), msg);
    assert!(matches!(
        frost_ed25519::round2::sign(&pkg, &nonces, s.frost()),
        Err(frost_ed25519::Error::IncorrectNumberOfCommitments)
    ));
    // A lone shareholder that lies about k (a key package claiming 1) gets
    // a share out of FROST, but the aggregate is refused…
    let liar = frost_ed25519::keys::KeyPackage::new(
        *s.frost().identifier(),
        *s.frost().signing_share(),
        *s.frost().verifying_share(),
        *s.frost().verifying_key(),
        1,
    );
    let lone = frost_ed25519::round2::sign(&pkg, &nonces, &liar).unwrap();
    let loose = frost_ed25519::keys::PublicKeyPackage::new(
        group.frost().verifying_shares().clone(),
        *group.frost().verifying_key(),
        None,
    );
    let agg = frost_ed25519::aggregate(&pkg, &[(*s.frost().identifier(), lone)].into(), &loose);
    assert!(
        matches!(agg, Err(frost_ed25519::Error::InvalidSignature | frost_ed25519::Error::InvalidSignatureShare { .. })),
        "{agg:?}"
    );
    // …and what one share can sign outright (its scalar as a key) never
    // verifies under the group DID.
    let alone = frost_ed25519::SigningKey::deserialize(&s.frost().signing_share().serialize()).unwrap();
    let forged: [u8; 64] = alone.sign(rand_chacha::rand_core::OsRng, msg).serialize().unwrap().try_into().unwrap();
    assert!(!group.group().verify(msg, &forged));
    assert!(!strict(&group.group(), msg, &forged));
}

#[test]
fn c13_a_tampered_signature_share_is_refused_by_name() {
    let (group, shares) = dealer::deal(2, 3, &mut rng(2)).unwrap();
    let msg = b"pay";
    let mut r = rng(4);
    let (n1, c1) = sign::round1(&shares[0], &mut r);
    let (n3, c3) = sign::round1(&shares[2], &mut r);
    let cs = [c1, c3];
    let s1 = sign::round2(&shares[0], n1, &cs, msg).unwrap();
    // Participant 3 signs another message: its share is caught.
    let s3 = sign::round2(&shares[2], n3, &cs, b"pay more").unwrap();
    let e = sign::aggregate(&group, &cs, msg, &[s1, s3]).unwrap_err();
    assert_eq!(e.code(), "invalid-signature-share");
    assert_eq!(e, jcp_threshold::ThresholdError::InvalidSignatureShare { culprits: vec![3] });
}

#[test]
fn c18_dkg_2_of_3_and_3_of_5_sign_a_standard_ed25519_signature() {
    for (k, n, signers) in [(2u16, 3u16, vec![1u16, 3]), (3, 5, vec![2, 4, 5])] {
        let (group, shares) = dkg_group(k, n, 10 + u8::try_from(n).unwrap());
        assert_eq!((group.min_signers(), group.max_signers()), (k, n));
        assert_eq!(group.origin(), jcp_threshold::Origin::Dkg);
        let msg = b"dealer-free";
        let sig = ceremony(&group, &shares, &signers, msg, 5).unwrap();
        assert!(strict(&group.group(), msg, &sig));
        // k−1 cannot.
        let e = ceremony(&group, &shares, &signers[..signers.len() - 1], msg, 5).unwrap_err();
        assert_eq!(e.code(), "too-few-signers");
        // The descriptor round-trips and shows the group as an ordinary did:key.
        let back = GroupDescriptor::from_bytes(&group.to_bytes()).unwrap();
        assert_eq!(back, group);
        assert!(group.describe().group.starts_with("did:key:z"));
    }
}

#[test]
fn c18_no_participant_of_a_dkg_holds_the_group_key() {
    // Every key share differs from the group key: no one's secret is it.
    let (group, shares) = dkg_group(2, 3, 21);
    for s in &shares {
        let alone = frost_ed25519::SigningKey::deserialize(&s.frost().signing_share().serialize()).unwrap();
        let vk = frost_ed25519::VerifyingKey::from(&alone);
        assert_ne!(vk.serialize().unwrap(), group.group().public_bytes().to_vec());
    }
}

#[test]
fn c18_a_dkg_package_under_another_participants_name_is_refused() {
    use jcp_threshold::dkg;
    let mut r = rng(30);
    let (s1, p1) = dkg::round1(1, 2, 3, &mut r).unwrap();
    let (_, p2) = dkg::round1(2, 2, 3, &mut r).unwrap();
    // Participant 2's package relabelled as participant 3's: its proof of
    // knowledge is bound to identifier 2, so it names 3 as the culprit.
    let jcp::cbor::Value::Map(mut m) = p2.to_value() else { panic!("a map") };
    for (k, val) in &mut m {
        if *k == jcp::cbor::Value::text("from") {
            *val = jcp::cbor::Value::Uint(3);
        }
    }
    let forged = dkg::Round1Package::from_bytes(&jcp::cbor::Value::Map(m).encode()).unwrap();
    let e = dkg::round2(s1.clone(), &[p1.clone(), p2.clone(), forged]).unwrap_err();
    assert_eq!(
        e,
        jcp_threshold::ThresholdError::DkgRefused {
            problem: "The proof of knowledge is not valid.".into(),
            culprits: vec![3]
        }
    );
    // The same sender twice is refused before FROST sees it.
    let e = dkg::round2(s1, &[p1, p2.clone(), p2]).unwrap_err();
    assert_eq!(e.code(), "participant-mismatch");
}

#[test]
fn c13_rfc9591_e1_vector() {
    // The published RFC 9591 Appendix E.1 vector, and the ZcashFoundation
    // vectors (other nonces, and identifiers past 255).
    for file in [
        "standards/frost/rfc9591-ed25519-zcash-format.json",
        "standards/frost/cfrg-poc/frost-ed25519-sha512.json",
        "standards/frost/zcash-frost-ed25519/vectors.json",
        "standards/frost/zcash-frost-ed25519/vectors-big-identifier.json",
    ] {
        e1_vector(&testkit::interop_json(file), file);
    }
}

fn hx<const N: usize>(v: &serde_json::Value) -> [u8; N] {
    hex::decode(v.as_str().unwrap()).unwrap().try_into().unwrap()
}

fn e1_vector(v: &serde_json::Value, file: &str) {
    use curve25519_dalek::constants::ED25519_BASEPOINT_POINT as G;
    use curve25519_dalek::Scalar;
    use frost_ed25519::keys::{KeyPackage, SecretShare, SigningShare, VerifiableSecretSharingCommitment};
    use frost_ed25519::round1::SigningNonces;
    type Nonce = frost_core::round1::Nonce<frost_ed25519::Ed25519Sha512>;

    let inputs = &v["inputs"];
    let cfg = &v["config"];
    let min = u16::try_from(
        cfg["MIN_PARTICIPANTS"]
            .as_str()
            .map_or_else(|| cfg["MIN_PARTICIPANTS"].as_u64().unwrap(), |s| s.parse().unwrap()),
    )
    .unwrap();
    let group_pk: [u8; 32] = hx(inputs.get("verifying_key_key").unwrap_or(&inputs["group_public_key"]));
    // Key generation from the given polynomial: the commitment to
    // [secret, coefficients…]; each given share must be its evaluation.
    let secret = Scalar::from_canonical_bytes(hx(&inputs["group_secret_key"])).unwrap();
    let mut coeffs = vec![secret];
    for c in inputs["share_polynomial_coefficients"].as_array().unwrap() {
        coeffs.push(Scalar::from_canonical_bytes(hx(c)).unwrap());
    }
    assert_eq!(coeffs.len(), usize::from(min));
    let commitment =
        VerifiableSecretSharingCommitment::deserialize(coeffs.iter().map(|c| (G * c).compress().to_bytes().to_vec()))
            .unwrap();
    let mut shares = Vec::new();
    for p in inputs["participant_shares"].as_array().unwrap() {
        let id = jcp_threshold::file::frost_id(u16::try_from(p["identifier"].as_u64().unwrap()).unwrap()).unwrap();
        let ss = SecretShare::new(
            id,
            SigningShare::deserialize(&hx::<32>(&p["participant_share"])).unwrap(),
            commitment.clone(),
        );
        let share = KeyShare::from_frost(KeyPackage::try_from(ss).unwrap()).unwrap();
        assert_eq!(share.group().public_bytes(), &group_pk, "{file}");
        shares.push(share);
    }
    let ids: std::collections::BTreeSet<_> = shares.iter().map(|s| *s.frost().identifier()).collect();
    let public = frost_ed25519::keys::PublicKeyPackage::from_commitment(&ids, &commitment).unwrap();
    let group = GroupDescriptor::from_frost(public, jcp_threshold::Origin::Dealer).unwrap();
    let msg = hex::decode(inputs["message"].as_str().unwrap()).unwrap();
    // Round 1 from the vector's fixed nonces: commitments byte-for-byte.
    let mut nonces = Vec::new();
    let mut commitments = Vec::new();
    for o in v["round_one_outputs"]["outputs"].as_array().unwrap() {
        let id = u16::try_from(o["identifier"].as_u64().unwrap()).unwrap();
        let share = shares.iter().find(|s| s.identifier() == id).unwrap();
        let fixed = SigningNonces::from_nonces(
            Nonce::deserialize(&hx::<32>(&o["hiding_nonce"])).unwrap(),
            Nonce::deserialize(&hx::<32>(&o["binding_nonce"])).unwrap(),
        );
        let (n, c) = sign::Nonces::from_frost(share, fixed);
        assert_eq!(c.frost().hiding().serialize().unwrap(), hx::<32>(&o["hiding_nonce_commitment"]).to_vec(), "{file}");
        assert_eq!(
            c.frost().binding().serialize().unwrap(),
            hx::<32>(&o["binding_nonce_commitment"]).to_vec(),
            "{file}"
        );
        nonces.push((share, n));
        commitments.push(c);
    }
    // Round 2: each signature share byte-for-byte.
    let mut sig_shares = Vec::new();
    for ((share, n), o) in nonces.into_iter().zip(v["round_two_outputs"]["outputs"].as_array().unwrap()) {
        assert_eq!(u64::from(share.identifier()), o["identifier"].as_u64().unwrap());
        let s = sign::round2(share, n, &commitments, &msg).unwrap();
        assert_eq!(s.frost().serialize(), hx::<32>(&o["sig_share"]).to_vec(), "{file}");
        sig_shares.push(s);
    }
    // The aggregate: the final signature byte-for-byte, a standard Ed25519
    // signature by the group key.
    let sig = sign::aggregate(&group, &commitments, &msg, &sig_shares).unwrap();
    assert_eq!(sig, hx::<64>(&v["final_output"]["sig"]), "{file}");
    assert!(strict(&group.group(), &msg, &sig));
}

#[test]
fn c13_the_aggregate_issues_a_grant_that_chain_verifies_and_the_gate_allows() {
    let (group, shares) = dkg_group(2, 3, 40);
    let agent = key(2);
    let draft = grant_draft(group.group(), agent.did(), 1_000);
    let sig = ceremony(&group, &shares, &[1, 2], &draft.canonical_bytes(), 1).unwrap();
    let g = SignedGrant::from_parts(draft.clone(), sig).unwrap();
    assert!(g.verify_signature());
    let g = SignedGrant::from_bytes(&g.to_bytes()).unwrap();
    jcp::chain::verify_chain(std::slice::from_ref(&g)).unwrap();
    let mut gate = Gate::new();
    // Trust root configured as the group: an ordinary issuer.
    gate.add_trust_root(resource(), group.group());
    let fr = frame(&g, b"x");
    let spend = cost(100);
    let decision = gate.decide(&request(&fr, std::slice::from_ref(&g), &agent.did(), &spend));
    assert!(decision.is_allow(), "{decision:?}");
    // A delegation by the agent chains under the group-issued root.
    let child =
        jcp::grant::attenuate(&g, &agent, jcp::grant::Attenuation { budget_uj: Some(100), ..Default::default() })
            .unwrap();
    jcp::chain::verify_chain(&[g.clone(), child]).unwrap();
    // One share's attempt at the grant signature is refused at assembly.
    let lone = frost_ed25519::SigningKey::deserialize(&shares[0].frost().signing_share().serialize()).unwrap();
    let bad: [u8; 64] =
        lone.sign(rand_chacha::rand_core::OsRng, &draft.canonical_bytes()).serialize().unwrap().try_into().unwrap();
    let e = SignedGrant::from_parts(draft, bad).unwrap_err();
    assert_eq!(e.code(), "bad-signature");
}

#[test]
fn c13_the_aggregate_revokes_a_grant_the_group_issued() {
    let (group, shares) = dealer::deal(2, 3, &mut rng(41)).unwrap();
    let agent = key(2);
    let draft = grant_draft(group.group(), agent.did(), 1_000);
    let g = SignedGrant::from_parts(
        draft.clone(),
        ceremony(&group, &shares, &[2, 3], &draft.canonical_bytes(), 1).unwrap(),
    )
    .unwrap();
    let rev = Revocation { grant_id: g.id(), revoked_by: group.group(), nonce: [3; 16] };
    let sig = ceremony(&group, &shares, &[1, 3], &rev.to_value().encode(), 2).unwrap();
    let signed = SignedRevocation::from_parts(rev.clone(), sig).unwrap();
    let signed = SignedRevocation::from_bytes(&signed.to_bytes()).unwrap();
    let mut gate = Gate::new();
    gate.admit_revocation(&signed, &g).unwrap();
    let f = frame(&g, b"x");
    let c = cost(1);
    let d = gate.decide(&request(&f, std::slice::from_ref(&g), &agent.did(), &c));
    assert_eq!(d.reason(), Some(Reason::Revoked));
    // A revocation signature by the wrong signers' data is refused.
    let other = Revocation { nonce: [4; 16], ..rev };
    assert_eq!(SignedRevocation::from_parts(other, sig).unwrap_err().code(), "bad-signature");
}

#[test]
fn c13_the_aggregate_amends_a_run_as_the_issuer() {
    let (group, shares) = dkg_group(2, 3, 42);
    let agent = key(2);
    let draft = grant_draft(group.group(), agent.did(), 1_000);
    let g = SignedGrant::from_parts(
        draft.clone(),
        ceremony(&group, &shares, &[1, 3], &draft.canonical_bytes(), 1).unwrap(),
    )
    .unwrap();
    let mut run = Run::new(g.clone());
    let cp = run
        .checkpoint(
            &agent,
            CheckpointInput {
                state: jcp::cbor::ContentId::of_bytes(b"state"),
                at: T0,
                spent: Some(Spent { uj: 300, provenance: Provenance::HwShunt }),
                nonce: Some([1; 16]),
            },
        )
        .unwrap();
    let plan = run
        .plan_amend(
            &group.group(),
            &AmendInput {
                budget_uj: 500,
                nonce: Some([2; 16]),
                continuation_nonce: Some([3; 16]),
                ..Default::default()
            },
        )
        .unwrap();
    let cont_sig = ceremony(&group, &shares, &[2, 3], &plan.continuation.canonical_bytes(), 2).unwrap();
    let cont = SignedGrant::from_parts(plan.continuation.clone(), cont_sig).unwrap();
    let am_sig = ceremony(&group, &shares, &[1, 2], &plan.amendment.to_value().encode(), 3).unwrap();
    let am = SignedAmendment::from_parts(plan.amendment.clone(), am_sig).unwrap();
    let mut gate = Gate::new();
    gate.admit_amendment(&g, &cp, &am, &cont).unwrap();
    assert!(gate.is_superseded(&g.id()));
    // The whole run, appended and verified, is clean.
    run.push(jcp::steering::Record::Amendment(am));
    run.push(jcp::steering::Record::Grant(cont));
    assert!(run.verify().unwrap().clean);
    // An amendment signature over other bytes is refused at assembly.
    let e =
        SignedAmendment::from_parts(jcp::steering::Amendment { budget_uj: 400, ..plan.amendment }, am_sig).unwrap_err();
    assert_eq!(e.code(), "bad-signature");
}
