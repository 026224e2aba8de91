//! Fixtures for the threshold tests: seeded ceremonies, grants, frames.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jcp::cbor::ContentId;
use jcp::decision::{Cost, Request};
use jcp::energy::{Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::{Did, Keypair};
use jcp_threshold::sign::{self, Commitments, SignatureShare};
use jcp_threshold::{dkg, GroupDescriptor, KeyShare, ThresholdError};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

pub const T0: u64 = 1_800_000_000;

pub fn rng(seed: u8) -> ChaCha20Rng {
    ChaCha20Rng::from_seed([seed; 32])
}

pub fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

/// A full DKG among participants 1..=n, every file through its encoding.
pub fn dkg_group(min: u16, max: u16, seed: u8) -> (GroupDescriptor, Vec<KeyShare>) {
    use jcp_threshold::ParticipantFile;
    let mut r = rng(seed);
    let mut secrets = Vec::new();
    let mut round1 = Vec::new();
    for id in 1..=max {
        let (s, p) = dkg::round1(id, min, max, &mut r).unwrap();
        secrets.push(dkg::Round1Secret::from_bytes(&s.to_bytes()).unwrap());
        round1.push(dkg::Round1Package::from_bytes(&p.to_bytes()).unwrap());
    }
    let mut s2 = Vec::new();
    let mut round2 = Vec::new();
    for s in secrets {
        let (sec, out) = dkg::round2(s, &round1).unwrap();
        s2.push(sec);
        round2.extend(out.into_iter().map(|p| dkg::Round2Package::from_bytes(&p.to_bytes()).unwrap()));
    }
    let mut group = None;
    let mut shares = Vec::new();
    for s in &s2 {
        let mine: Vec<_> = round2.iter().filter(|p| p.to() == s.identifier()).cloned().collect();
        let (share, g) = dkg::finish(s, &round1, &mine).unwrap();
        if let Some(prev) = &group {
            assert_eq!(prev, &g, "every participant derives the same group");
        }
        group = Some(g);
        shares.push(share);
    }
    (group.unwrap(), shares)
}

/// The signers `who` sign `message` together: round 1, round 2, aggregate.
pub fn ceremony(
    group: &GroupDescriptor,
    shares: &[KeyShare],
    who: &[u16],
    message: &[u8],
    seed: u8,
) -> Result<[u8; 64], ThresholdError> {
    let mut r = rng(seed);
    let signers: Vec<&KeyShare> = who.iter().map(|id| shares.iter().find(|s| s.identifier() == *id).unwrap()).collect();
    let (nonces, commitments): (Vec<_>, Vec<Commitments>) = signers.iter().map(|s| sign::round1(s, &mut r)).unzip();
    let mut out: Vec<SignatureShare> = Vec::new();
    for (s, n) in signers.iter().zip(nonces) {
        out.push(sign::round2(s, n, &commitments, message)?);
    }
    sign::aggregate(group, &commitments, message, &out)
}

pub fn resource() -> ContentId {
    ContentId::of_bytes(b"resource: the irreversible transfer")
}

pub fn grant_draft(issuer: Did, subject: Did, budget: u64) -> Grant {
    Grant {
        issuer,
        subject,
        capability: Capability { resource: resource(), actions: vec!["transfer".into()] },
        budget_uj: budget,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [7; 16],
    }
}

pub fn frame(g: &SignedGrant, payload: &[u8]) -> Frame {
    Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: g.id(),
        action: "transfer".into(),
        resource: g.grant().capability.resource,
        payload_hash: ContentId::of_bytes(payload),
        model: None,
    }
}

pub fn cost(uj: u64) -> Cost {
    Cost::energy(Energy::new(uj, Provenance::HwShunt))
}

pub fn request<'a>(frame: &'a Frame, chain: &'a [SignedGrant], caller: &'a Did, cost: &'a Cost) -> Request<'a> {
    Request { frame, chain, caller, cost, now: T0, flow: None }
}
