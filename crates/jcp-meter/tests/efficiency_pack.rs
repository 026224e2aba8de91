//! §5.2, §5.3 and the efficiency/1 appendix: the published pack, replayed from disk.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use jcp::cbor::{decode_strict, ContentId};
use jcp_meter::efficiency::{aggregate, read_payload, verify, Verified};
use jcp_meter::traceability::trace;
use jcp_meter::vectors::{generate, payload_json, totals_json, trace_json, PACK_PATH};
use serde_json::Value as Json;

fn pack_text() -> String {
    let p = testkit::repo_root().join(PACK_PATH);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn pack() -> Json {
    serde_json::from_str(&pack_text()).unwrap()
}

fn bytes(v: &Json) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

fn verified_readings(p: &Json) -> HashMap<String, Verified> {
    p["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_owned(), verify(&bytes(&r["sealed_hex"])).unwrap()))
        .collect()
}

#[test]
fn appendix_pack_regenerates_byte_for_byte() {
    let fresh = generate().unwrap();
    assert!(fresh == pack_text(), "regenerating {PACK_PATH} changes it: run `cargo run -p jcp-meter --bin gen-efficiency-vectors` and review the diff");
}

#[test]
fn s5_2_pack_readings_replay() {
    let p = pack();
    let readings = p["readings"].as_array().unwrap();
    assert!(readings.len() >= 5);
    for r in readings {
        let name = r["name"].as_str().unwrap();
        let core = bytes(&r["core_hex"]);
        let payload = read_payload(&core).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(payload_json(&payload), r["expect"], "{name}");
        let v = verify(&bytes(&r["sealed_hex"])).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(v.id.to_hex(), r["id"].as_str().unwrap(), "{name}");
        assert_eq!(v.payload, payload, "{name}");
        // §5.2: coverage on the wire only when Partial; a Partial receipt has no headline.
        let on_wire = decode_strict(&core).unwrap().get("energy_coverage").is_some();
        let partial = r["expect"]["coverage"] == "Partial";
        assert_eq!(on_wire, partial, "{name}");
        assert_eq!(r["energy_coverage_on_wire"].as_bool().unwrap(), partial, "{name}");
        if partial {
            assert!(r["expect"]["uj_per_accepted_token"].is_null(), "{name}");
        }
    }
}

#[test]
fn s5_2_pack_refusals_replay() {
    let p = pack();
    let refusals = p["refusals"].as_array().unwrap();
    let codes: Vec<&str> = refusals.iter().map(|r| r["code"].as_str().unwrap()).collect();
    for needed in [
        "partial-headline",
        "headline-missing",
        "bad-coverage",
        "bad-provenance",
        "activity-bound-twice",
        "untraceable-outcome",
        "bad-signature",
    ] {
        assert!(codes.contains(&needed), "the pack lacks a {needed} vector");
    }
    for r in refusals {
        let name = r["name"].as_str().unwrap();
        let b = bytes(&r["hex"]);
        let err = match r["stage"].as_str().unwrap() {
            "read_payload" => read_payload(&b).err(),
            "verify" => verify(&b).err(),
            s => panic!("{name}: unknown stage {s}"),
        };
        let err = err.unwrap_or_else(|| panic!("{name}: accepted, expected {}", r["code"]));
        assert_eq!(err.code(), r["code"].as_str().unwrap(), "{name}: {err}");
    }
}

#[test]
fn s5_3_pack_totals_replay_with_floors() {
    let p = pack();
    let readings = verified_readings(&p);
    for t in p["totals"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let set: Vec<Verified> =
            t["readings"].as_array().unwrap().iter().map(|n| readings[n.as_str().unwrap()].clone()).collect();
        match (aggregate(&set), t.get("code")) {
            (Ok(got), None) => {
                assert_eq!(totals_json(&got), t["expect"], "{name}");
                if t["expect"]["coverage"] == "Partial" {
                    assert!(
                        t["expect"]["uj_per_completed_unit"].is_null()
                            && t["expect"]["uj_per_accepted_token"].is_null(),
                        "{name}"
                    );
                    assert_eq!(t["expect"]["units_per_joule"]["num"], "0", "{name}");
                }
            }
            (Err(e), Some(code)) => assert_eq!(e.code(), code.as_str().unwrap(), "{name}"),
            (got, code) => panic!("{name}: got {got:?}, pack says {code:?}"),
        }
    }
}

#[test]
fn s5_3_pack_traces_replay_signed_residuals() {
    let p = pack();
    let readings = verified_readings(&p);
    let store: HashMap<ContentId, Vec<u8>> = p["activities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (ContentId::parse(a["id"].as_str().unwrap()).unwrap(), bytes(&a["hex"])))
        .collect();
    let mut negative = 0;
    for t in p["traces"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let mut s = store.clone();
        for id in t.get("omit_activities").and_then(Json::as_array).into_iter().flatten() {
            s.remove(&ContentId::parse(id.as_str().unwrap()).unwrap());
        }
        let outcome = &readings[t["reading"].as_str().unwrap()].payload;
        match (trace(outcome, &s), t.get("code")) {
            (Ok(r), None) => {
                assert_eq!(trace_json(&r), t["expect"], "{name}");
                negative += usize::from(r.residual_uj < 0);
            }
            (Err(e), Some(code)) => assert_eq!(e.code(), code.as_str().unwrap(), "{name}"),
            (got, code) => panic!("{name}: got {got:?}, pack says {code:?}"),
        }
    }
    assert!(negative >= 1, "the pack holds a negative residual");
}
