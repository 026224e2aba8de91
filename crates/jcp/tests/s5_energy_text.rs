//! §5 (energy is integer µJ): the one energy parser, `jcp::energy::parse_energy`,
//! on the vectors the console's `parseEnergy` reads too
//! (`conformance/jcp/v1/energy-text.json`), and its round trip with the one
//! formatter.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jcp::energy::{format_uj, parse_energy, MAX_TYPED_UJ};
use serde_json::Value;

fn vectors() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/jcp/v1/energy-text.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn s5_typed_energy_is_read_exactly_or_refused_never_rounded() {
    let v = vectors();
    for case in v["accept"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        assert_eq!(parse_energy(text), Ok(case["uj"].as_u64().unwrap()), "{text:?}");
    }
    for case in v["refuse"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let e = parse_energy(text).expect_err(text);
        assert!(e.to_string().starts_with("energy-text: "), "{e}");
    }
}

#[test]
fn s5_what_the_formatter_writes_the_parser_reads_back_to_at_most_the_figure() {
    // The formatter truncates to three decimals; reading its words back never gives more than the figure.
    for uj in [0, 1, 999, 1_000, 1_999_999, 50_000_000, 3_600_000_000, 987_654_321_012, MAX_TYPED_UJ] {
        let text = format_uj(uj);
        let shown = text.split(" (").next().unwrap();
        let back = parse_energy(shown).unwrap();
        assert!(back <= uj && uj - back < uj.max(1) / 1_000 + 1_000_000_000, "{uj} -> {text} -> {back}");
    }
}
