//! §5 on the wire: the energy a request carries is §5's, `measured`
//! included. A `HwShunt` cost without its measured figure, an `Estimator`
//! cost with one, and a cost below its own measurement are refused with a
//! typed error before anything is decided; the receipt seals what was
//! given (`energy_measured`). Real TCP and Unix sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::rt;

use std::time::Duration;

use common::*;
use jcp::energy::{Coverage, Energy, Provenance};
use jcp_receipt::receipt::verify_receipt;
use jcp_wire::client::Client;
use jcp_wire::codec;
use jcp_wire::message::{Inbound, Outbound, WireRequest};

fn costing(g: &jcp::grant::SignedGrant, cost: Energy, payload: &[u8]) -> WireRequest {
    request_costing(g, cost, payload, T0)
}

fn energy(uj: u64, provenance: Provenance, measured: Option<u64>) -> Energy {
    Energy { uj, provenance, coverage: Coverage::Whole, measured }
}

#[test]
fn s5_a_cost_whose_grade_and_measured_figure_disagree_is_refused_before_anything_is_decided() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let s = Served::start(config(&dir.path().join("s.jcps"), &clock), dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        for (n, (cost, code)) in [
            (energy(5, Provenance::HwShunt, None), "energy-unmeasured"),
            (energy(5, Provenance::Estimator, Some(5)), "energy-measured-estimate"),
            (energy(4, Provenance::HwShunt, Some(5)), "energy-below-measured"),
            (energy(4, Provenance::ModelBased, Some(5)), "energy-below-measured"),
        ]
        .into_iter()
        .enumerate()
        {
            let bad = costing(&g, cost, format!("bad {n}").as_bytes());
            // The decoder refuses it, in every reader.
            let e = Inbound::decode(&bad.to_bytes()).unwrap_err();
            assert_eq!(e.code(), code, "{cost:?}: {e}");
            let mut c = Client::connect(if n % 2 == 0 { &s.tcp } else { &s.unix }).await.unwrap();
            c.send_raw(&codec::frame_value(&bad.to_value())).await.unwrap();
            let m = tokio::time::timeout(Duration::from_secs(5), c.recv()).await.unwrap().unwrap();
            assert!(matches!(&m, Outbound::Error { code: got, .. } if got == code), "{cost:?}: {m:?}");
        }
        let st = s.endpoint.stats();
        assert_eq!((st.decided, st.refused_frames), (0, 4), "nothing decided, nothing recorded: {st:?}");
        s.stop().await;
    });
}

#[test]
fn s5_the_receipt_seals_the_measured_figure_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new(T0);
    rt().block_on(async {
        let s = Served::start(config(&dir.path().join("s.jcps"), &clock), dir.path(), None).await.unwrap();
        let g = grant(1_000_000, 1);
        let mut c = Client::connect(&s.tcp).await.unwrap();
        for (n, cost) in [
            energy(5, Provenance::HwShunt, Some(5)),
            energy(7, Provenance::HwShunt, Some(5)),
            energy(9, Provenance::ModelBased, Some(9)),
            energy(9, Provenance::ModelBased, None),
            energy(3, Provenance::Estimator, None),
        ]
        .into_iter()
        .enumerate()
        {
            let r = c.call(&costing(&g, cost, format!("ok {n}").as_bytes())).await.unwrap();
            assert!(r.decision.is_allow(), "{cost:?}: {r:?}");
            assert_eq!(r.decision.debited_uj, cost.uj);
            let core = verify_receipt(&r.receipt, None).unwrap().core;
            assert_eq!(core.energy(), cost, "the receipt seals what was given");
        }
        s.stop().await;
    });
}
