//! C13 (§11, §2.2): a real `jcp-wire` endpoint, served over TCP in this
//! process, treats a k-of-n aggregate as any caller signature, and denies
//! a single shareholder's attempt `bad-signature`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

mod common;

use std::sync::Arc;

use common::*;
use jcp::decision::{Gate, Reason};
use jcp::energy::Energy;
use jcp::flow::Label;
use jcp::grant::SignedGrant;
use jcp_threshold::dealer;
use jcp_wire::client::Client;
use jcp_wire::endpoint::{Address, Config, Endpoint};
use jcp_wire::message::{RequestBody, WireRequest};

fn body(g: &SignedGrant, payload: &[u8]) -> RequestBody {
    RequestBody {
        frame: frame(g, payload),
        chain: vec![g.clone()],
        cost: Energy::hardware(100),
        money: None,
        label: Some(Label::bottom()),
        args: Some(payload.to_vec()),
        continues: None,
        now: T0,
    }
}

#[test]
fn c13_the_endpoint_takes_the_aggregate_as_the_callers_signature_and_denies_one_share() {
    let (group, shares) = dealer::deal(2, 3, &mut rng(50)).unwrap();
    let issuer = key(1);
    // The group is the grant's holder, so the group is the caller.
    let g = grant_draft(issuer.did(), group.group(), 1_000).sign(&issuer).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::new(dir.path().join("s.jcps"));
    cfg.clock = Arc::new(|| T0);
    let steward = key(90);
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(async {
        let (ep, _) = Endpoint::open(cfg, steward.clone(), Gate::new(), None).unwrap();
        let (listener, addr) = Address::Tcp("127.0.0.1:0".into()).bind().await.unwrap();
        let serving = tokio::spawn({
            let ep = ep.clone();
            async move { ep.serve(listener).await }
        });
        let mut client = Client::connect(&addr).await.unwrap();

        // Two of three sign the request: allowed, as any caller would be.
        let b = body(&g, b"transfer 1");
        let sig = ceremony(&group, &shares, &[1, 3], &b.signed_bytes(&group.group()), 1).unwrap();
        let req = b.with_signature(group.group(), sig).unwrap();
        assert!(req.verify_signature());
        let r = client.call(&req).await.unwrap();
        assert!(r.decision.is_allow(), "{:?}", r.decision);
        assert_eq!(r.decision.budget_remaining_uj, 900);
        let v = jcp_receipt::verify_receipt(&r.receipt, Some(&steward.did())).unwrap();
        assert_eq!(v.core.subject, group.group());

        // One shareholder alone: its best attempt (its share as a key) is
        // refused at assembly, and sent anyway it is denied bad-signature.
        let b = body(&g, b"transfer 2");
        let bytes = b.signed_bytes(&group.group());
        let lone = frost_ed25519::SigningKey::deserialize(&shares[1].frost().signing_share().serialize()).unwrap();
        let attempt: [u8; 64] =
            lone.sign(rand_chacha::rand_core::OsRng, &bytes).serialize().unwrap().try_into().unwrap();
        assert_eq!(b.clone().with_signature(group.group(), attempt).unwrap_err().code(), "bad-signature");
        let forged = WireRequest { signature: attempt, ..req.clone() };
        let forged = WireRequest { frame: b.frame.clone(), args: b.args.clone(), ..forged };
        let r = client.call(&forged).await.unwrap();
        assert_eq!(r.decision.reason(), Some(Reason::BadSignature));
        assert_eq!(r.decision.budget_remaining_uj, 900, "a refused impersonation is never debited");
        // And FROST will not let one share finish a ceremony at all.
        assert_eq!(ceremony(&group, &shares, &[2], &bytes, 2).unwrap_err().code(), "too-few-signers");

        serving.abort();
        ep.shutdown().await.unwrap();
    });
}
