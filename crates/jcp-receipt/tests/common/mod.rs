//! Shared fixtures: deterministic keys, a root grant, a 3-hop chain.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use jcp::cbor::{ContentId, Value};
use jcp::decision::Cost;
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::{attenuate, Attenuation, Capability, Caveat, Funds, Grant, SignedGrant};
use jcp::identity::{Did, Keypair};

pub fn kp(n: u8) -> Keypair {
    Keypair::from_seed([n; 32]).unwrap()
}

pub fn resource() -> ContentId {
    ContentId::of(&Value::text("test/resource"))
}

pub struct Fx {
    pub steward: Keypair,
    pub issuer: Keypair,
    pub holder: Keypair,
    pub lead: Keypair,
    pub worker: Keypair,
    pub root: SignedGrant,
    pub lead_g: SignedGrant,
    pub worker_g: SignedGrant,
}

pub fn fx_with(budget: u64, funds: Option<Funds>, caveats: Vec<Caveat>) -> Fx {
    let (steward, issuer, holder, lead, worker) = (kp(1), kp(2), kp(3), kp(4), kp(5));
    let root = Grant {
        issuer: issuer.did(),
        subject: holder.did(),
        capability: Capability { resource: resource(), actions: vec!["invoke".into(), "read".into()] },
        budget_uj: budget,
        budget_funds: funds,
        caveats,
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [7; 16],
    }
    .sign(&issuer)
    .unwrap();
    let lead_g = attenuate(
        &root,
        &holder,
        Attenuation { subject: Some(lead.did()), nonce: Some([8; 16]), ..Attenuation::default() },
    )
    .unwrap();
    let worker_g = attenuate(
        &lead_g,
        &lead,
        Attenuation {
            subject: Some(worker.did()),
            actions: Some(vec!["invoke".into()]),
            nonce: Some([9; 16]),
            ..Attenuation::default()
        },
    )
    .unwrap();
    Fx { steward, issuer, holder, lead, worker, root, lead_g, worker_g }
}

pub fn fx() -> Fx {
    fx_with(1_000_000, None, Vec::new())
}

impl Fx {
    pub fn chain(&self) -> Vec<SignedGrant> {
        vec![self.root.clone(), self.lead_g.clone(), self.worker_g.clone()]
    }
}

pub fn frame(grant: &SignedGrant, action: &str, payload: u64) -> Frame {
    Frame {
        kind: FrameKind::ToolCall,
        trust: Trust::Control,
        grant_id: grant.id(),
        action: action.into(),
        resource: resource(),
        payload_hash: ContentId::of(&Value::Uint(payload)),
        model: None,
    }
}

pub fn cost(uj: u64) -> Cost {
    Cost::energy(Energy::hardware(uj))
}

pub fn partial_cost(uj: u64) -> Cost {
    Cost::energy(Energy { uj, provenance: Provenance::ModelBased, coverage: Coverage::Partial, measured: None })
}

pub fn priced(uj: u64, minor: u64) -> Cost {
    Cost { energy: Energy::new(uj, Provenance::HwShunt), money: Some(Funds { currency: "USD".into(), minor }) }
}

pub fn did(k: &Keypair) -> Did {
    k.did()
}
