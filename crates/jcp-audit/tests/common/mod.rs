//! Fixtures shared by the audit's integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use jcp::cbor::{ContentId, Value};
use jcp::grant::{attenuate, Attenuation, Capability, Grant, SignedGrant};
use jcp::identity::Keypair;

/// A root of 1 J issued by the key seeded 1 to the holder seeded 2, and
/// four 0.2 J shards of it, each held by a worker seeded `10 + i`.
pub struct Points {
    pub resource: ContentId,
    pub issuer: Keypair,
    pub holder: Keypair,
    pub root: SignedGrant,
    pub shards: Vec<(SignedGrant, Keypair)>,
}

pub fn points() -> Points {
    let issuer = Keypair::from_seed([1; 32]).unwrap();
    let holder = Keypair::from_seed([2; 32]).unwrap();
    let resource = ContentId::of(&Value::text("r"));
    let root = Grant {
        issuer: issuer.did(),
        subject: holder.did(),
        capability: Capability { resource, actions: vec!["invoke".into()] },
        budget_uj: 1_000_000,
        budget_funds: None,
        caveats: Vec::new(),
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [3; 16],
    }
    .sign(&issuer)
    .unwrap();
    let shards = (0..4u8)
        .map(|i| {
            let w = Keypair::from_seed([10 + i; 32]).unwrap();
            let g = attenuate(
                &root,
                &holder,
                Attenuation {
                    subject: Some(w.did()),
                    budget_uj: Some(200_000),
                    nonce: Some([20 + i; 16]),
                    ..Attenuation::default()
                },
            )
            .unwrap();
            (g, w)
        })
        .collect();
    Points { resource, issuer, holder, root, shards }
}

/// §4.7: a run's grant of 1 000 µJ to run "tool", issued by `issuer` to `agent`.
pub fn run_grant(issuer: &Keypair, agent: &Keypair) -> SignedGrant {
    let capability = Capability { resource: ContentId::of(&Value::text("tool")), actions: vec!["run".into()] };
    let g = Grant {
        issuer: issuer.did(),
        subject: agent.did(),
        capability,
        budget_uj: 1000,
        budget_funds: None,
        caveats: vec![],
        expiry: 0,
        parent: None,
        delegate_depth: None,
        nonce: [1; 16],
    };
    g.sign(issuer).unwrap()
}

/// The agent's checkpoint input `n` (state and nonce `n`, at `10 + n`),
/// declaring `uj` µJ of hardware-measured spend where given.
pub fn checkpoint_at(n: u8, uj: Option<u64>) -> jcp::steering::CheckpointInput {
    jcp::steering::CheckpointInput {
        state: ContentId([n; 32]),
        at: 10 + u64::from(n),
        spent: uj.map(|uj| jcp::steering::Spent { uj, provenance: jcp::energy::Provenance::HwShunt }),
        nonce: Some([n; 16]),
    }
}

/// A control tool-call frame on grant `g` for `action`, over `payload`.
pub fn frame_on(g: &SignedGrant, action: &str, payload: &Value) -> jcp::frame::Frame {
    jcp::frame::Frame {
        kind: jcp::frame::FrameKind::ToolCall,
        trust: jcp::frame::Trust::Control,
        grant_id: g.id(),
        action: action.into(),
        resource: g.grant().capability.resource,
        payload_hash: ContentId::of(payload),
        model: None,
    }
}
