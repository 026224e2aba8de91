//! Property tests over the exact arithmetic and the wire rules (§5, §5.1, §5.2, §5.3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jcp::cbor::{ContentId, Value};
use jcp::energy::{Coverage, Energy, Provenance};
use jcp::identity::Keypair;
use jcp_meter::efficiency::{aggregate, read_payload, verify, Efficiency};
use jcp_meter::plausibility::{check, BoundInput, Plausibility};
use jcp_meter::rapl::wrap_delta;
use proptest::prelude::*;

fn provenance() -> impl Strategy<Value = Provenance> {
    prop_oneof![Just(Provenance::Estimator), Just(Provenance::ModelBased), Just(Provenance::HwShunt)]
}

fn coverage() -> impl Strategy<Value = Coverage> {
    prop_oneof![Just(Coverage::Partial), Just(Coverage::Whole)]
}

proptest! {
    // Signing in a debug build is slow; 64 cases per property keeps the suite quick.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn s5_1_wrap_delta_recovers_any_single_wrap(max in 1u64..=u64::from(u32::MAX), a_frac in 0u64..=1000, d_frac in 0u64..=1000) {
        let a = max / 1000 * a_frac;
        let d = max / 1000 * d_frac;
        let b = ((u128::from(a) + u128::from(d)) % (u128::from(max) + 1)) as u64;
        prop_assert_eq!(wrap_delta(a, b, max), d);
    }

    #[test]
    fn s5_plausibility_never_admits_a_rate_above_the_static_limit(delta in 0u64..10_000_000_000, span in 1u64..10_000_000_000, limit in 1u64..1_000_000, draws in proptest::collection::vec(0u64..2_000_000, 0..8)) {
        let p = check(&BoundInput { counter_delta_uj: delta, span_ns: span, power_limit_mw: Some(limit), draw_exposed: true, draw_samples_mw: draws.clone() });
        let over_limit = u128::from(delta) * 1_000_000 > u128::from(limit) * u128::from(span);
        if over_limit {
            prop_assert!(!p.admits(), "{:?}", p);
        }
        // Unjudgeable exactly when no draw sample is at or under the limit (and the limit did not already refute).
        let usable = draws.iter().any(|d| *d <= limit);
        if !over_limit {
            prop_assert_eq!(matches!(p, Plausibility::Unjudgeable { .. }), !usable, "{:?}", p);
        }
    }

    #[test]
    fn s5_2_any_receipt_round_trips_and_partial_never_has_a_headline(uj: u64, p in provenance(), c in coverage(), tokens: u64, units: u64, n in 1usize..4) {
        let key = Keypair::from_seed([3; 32]).unwrap();
        let activities = (0..n).map(|i| ContentId::of(&Value::Uint(i as u64))).collect();
        let e = Efficiency { outcome: "o".into(), activities, energy: Energy { uj, provenance: p, coverage: c, measured: None }, accepted_tokens: tokens, completed_units: units, steward: key.did() };
        let core = e.wire().encode();
        prop_assert_eq!(&read_payload(&core).unwrap(), &e);
        prop_assert_eq!(e.wire().get("energy_coverage").is_some(), c == Coverage::Partial);
        if c == Coverage::Partial {
            prop_assert!(e.wire().get("uj_per_accepted_token").is_none());
        }
        prop_assert_eq!(verify(&e.seal(&key).unwrap()).unwrap().payload, e);
    }

    #[test]
    fn s5_3_totals_take_floors_never_averages(parts in proptest::collection::vec((0u64..1_000_000, provenance(), coverage()), 1..6)) {
        let key = Keypair::from_seed([4; 32]).unwrap();
        let vs: Vec<_> = parts.iter().enumerate().map(|(i, (uj, p, c))| {
            let e = Efficiency { outcome: format!("o{i}"), activities: vec![ContentId::of(&Value::Uint(i as u64))], energy: Energy { uj: *uj, provenance: *p, coverage: *c, measured: None }, accepted_tokens: 1, completed_units: 1, steward: key.did() };
            verify(&e.seal(&key).unwrap()).unwrap()
        }).collect();
        let t = aggregate(&vs).unwrap();
        prop_assert_eq!(t.provenance_floor, parts.iter().map(|x| x.1).min().unwrap());
        prop_assert_eq!(t.coverage, parts.iter().map(|x| x.2).min().unwrap());
        prop_assert_eq!(t.energy_uj, parts.iter().map(|x| x.0).sum::<u64>());
        if t.coverage == Coverage::Partial {
            prop_assert!(t.uj_per_completed_unit.is_none() && t.uj_per_accepted_token.is_none());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// §5.1 span metering: the /proc stat decoder never panics on any bytes.
    #[test]
    fn s5_1_proc_stat_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        jcp_meter::fuzzing::proc_stat(&bytes);
    }

    /// Any command name, parentheses and spaces included: the fields after the last `)` are read.
    #[test]
    fn s5_1_proc_stat_reads_past_any_command_name(
        comm in "[ -~]{0,16}", pid in 1u32.., ppid in 0u32.., ut in 0u64..1u64 << 40, st in 0u64..1u64 << 40,
        cut in 0u64..1u64 << 40, cst in 0u64..1u64 << 40, start in any::<u64>(), state in "[RSDZTtXI]",
    ) {
        let line = format!("{pid} ({comm}) {state} {ppid} 1 1 0 -1 0 0 0 0 0 {ut} {st} {cut} {cst} 20 0 1 0 {start} 0 0\n");
        let s = jcp_meter::span::procfs::parse_stat(line.as_bytes()).unwrap();
        prop_assert_eq!((s.pid, s.ppid, s.cpu_ticks, s.reaped_ticks, s.start_ticks), (pid, ppid, ut + st, cut + cst, start));
        prop_assert_eq!(s.state, state.as_bytes()[0]);
        jcp_meter::fuzzing::proc_stat(line.as_bytes());
    }

    /// The one-pass field splitter reads what `split_ascii_whitespace` splits:
    /// any whitespace (tabs, runs, a trailing newline or none), any number of
    /// fields, non-ASCII text among them.
    #[test]
    fn s5_1_proc_stat_fields_split_as_ascii_whitespace(
        fields in proptest::collection::vec(prop_oneof![
            20 => "[0-9]{1,4}", 1 => "[RSZ]", 1 => "-[0-9]", 1 => "é|x|\\)",
        ], 0..26),
        state in "[RSZé]",
        seps in proptest::collection::vec("[ \t\n\r\x0c]{1,3}", 27),
        head in "[ \t]{0,2}", tail in "[ \t\n]{0,2}",
    ) {
        let mut line = format!("7 (c){head}{state}");
        for (i, f) in fields.iter().enumerate() {
            line += &seps[i];
            line += f;
        }
        line += &tail;
        let got = jcp_meter::span::procfs::parse_stat(line.as_bytes()).ok();
        prop_assert_eq!(got, reference_parse_stat(&line));
        if fields.len() >= 20 && fields.iter().all(|f| f.bytes().all(|b| b.is_ascii_digit())) && state != "é" {
            prop_assert!(got.is_some(), "{}", line);
        }
    }
}

/// The decoder as it was (fields collected by `split_ascii_whitespace`), for comparison.
fn reference_parse_stat(line: &str) -> Option<jcp_meter::span::procfs::ProcStat> {
    let close = line.rfind(')')?;
    let pid: u32 = line[..line.find('(')?].trim().parse().ok()?;
    let f: Vec<&str> = line[close + 1..].split_ascii_whitespace().collect();
    let state = match f.first()?.as_bytes() {
        [s] if s.is_ascii_alphabetic() => *s,
        _ => return None,
    };
    let n = |i: usize| f.get(i - 3)?.parse::<u64>().ok();
    Some(jcp_meter::span::procfs::ProcStat {
        pid,
        state,
        ppid: f.get(1)?.parse().ok()?,
        cpu_ticks: n(14)?.saturating_add(n(15)?),
        reaped_ticks: n(16)?.saturating_add(n(17)?),
        threads: f.get(17)?.parse().ok()?,
        start_ticks: n(22)?,
    })
}
