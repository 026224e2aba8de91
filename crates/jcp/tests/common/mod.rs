//! Fixtures shared by the conformance-class tests: seeded keys, grants, frames.
#![allow(dead_code)]

use jcp::cbor::ContentId;
use jcp::decision::{Cost, Decision, Gate, Request};
use jcp::energy::{Energy, Provenance};
use jcp::flow::Label;
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{Capability, Grant, SignedGrant};
use jcp::identity::{Did, Keypair};

pub fn key(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

pub fn resource() -> ContentId {
    ContentId::of_bytes(b"resource: the search tool")
}

pub fn other_resource() -> ContentId {
    ContentId::of_bytes(b"resource: the mail tool")
}

pub fn payload(n: u8) -> ContentId {
    ContentId::of_bytes(&[b'p', n])
}

pub fn nonce(n: u8) -> [u8; 16] {
    [n; 16]
}

/// A root grant from `issuer` to `subject` on `resource()` for `budget` µJ.
pub fn root_grant(issuer: &Keypair, subject: &Keypair, budget: u64) -> Grant {
    Grant {
        issuer: issuer.did(),
        subject: subject.did(),
        capability: Capability { resource: resource(), actions: vec!["read".into(), "write".into()] },
        budget_uj: budget,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: nonce(1),
    }
}

pub fn signed_root(issuer: &Keypair, subject: &Keypair, budget: u64) -> SignedGrant {
    root_grant(issuer, subject, budget).sign(issuer).unwrap()
}

pub fn frame_for(g: &SignedGrant, action: &str) -> Frame {
    Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: g.id(),
        action: action.into(),
        resource: g.grant().capability.resource,
        payload_hash: payload(1),
        model: None,
    }
}

pub fn cost(uj: u64) -> Cost {
    Cost::energy(Energy::new(uj, Provenance::HwShunt))
}

pub const NOW: u64 = 1_700_000_000;

/// Decides `frame` against `chain` for `caller` at `NOW` with ⊥ flow.
pub fn decide(gate: &mut Gate, frame: &Frame, chain: &[SignedGrant], caller: &Did, c: &Cost) -> Decision {
    let bottom = Label::bottom();
    gate.decide(&Request { frame, chain, caller, cost: c, now: NOW, flow: Some(&bottom) })
}

pub fn decide_at(gate: &mut Gate, frame: &Frame, chain: &[SignedGrant], caller: &Did, c: &Cost, now: u64) -> Decision {
    let bottom = Label::bottom();
    gate.decide(&Request { frame, chain, caller, cost: c, now, flow: Some(&bottom) })
}
