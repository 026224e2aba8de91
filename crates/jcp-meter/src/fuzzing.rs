//! Entry points shared by the cargo-fuzz targets (`crates/jcp-meter/fuzz`)
//! and the corpus replay test, so CI runs the corpus without nightly.
//! Each decodes outside bytes and checks the decoder's promises; a broken
//! promise panics, which is what the fuzzer looks for.

use std::sync::Arc;
use std::time::Duration;

use jcp::energy::Coverage;

use crate::clock::ManualClock;
use crate::efficiency::{read_payload, verify};
use crate::estimate::{Calibration, FixedUtil, HostId};
use crate::meter::{Backends, Meter, MeterConfig};
use crate::trace::{Trace, TraceBackend};

/// `read_payload` and `verify` on `data`; whatever they accept must round-trip
/// and obey §5.2.
pub fn efficiency(data: &[u8]) {
    if let Ok(p) = read_payload(data) {
        assert!(p.wire().encode() == data, "an accepted core does not re-encode to its bytes");
        assert!(
            p.energy.coverage == Coverage::Whole || p.uj_per_accepted_token().is_none(),
            "a Partial payload with a headline"
        );
    }
    if let Ok(v) = verify(data) {
        assert!(
            read_payload(&v.payload.wire().encode()).as_ref() == Ok(&v.payload),
            "a verified payload does not read back"
        );
    }
}

/// Decodes a trace and, if accepted, replays a few windows of it through the ladder.
pub fn trace(data: &[u8]) {
    let Ok(t) = Trace::from_bytes(data) else {
        return;
    };
    assert!(t.validate().is_ok(), "an accepted trace fails validation");
    let clock = ManualClock::new();
    let backends = Backends {
        counters: vec![Box::new(TraceBackend::new(t))],
        util: Box::new(FixedUtil { permille: Some(500), cpus: 2 }),
        clock: Arc::new(clock),
        host: HostId {
            hostname: "fuzz".into(),
            machine: None,
            cpu: "fuzz".into(),
            logical_cpus: 2,
            os: "linux".into(),
        },
    };
    let config = MeterConfig { interval: Duration::from_millis(100), ..MeterConfig::default() };
    let Ok(mut m) = Meter::new(config, backends) else {
        return;
    };
    m.probe();
    for _ in 0..3 {
        let w = m.next_window();
        assert!(
            w.energy_uj.is_some() == w.provenance.is_some() && w.energy_uj.is_some() == w.coverage.is_some(),
            "a figure without its grade: {w:?}"
        );
        assert!(w.end_ns >= w.start_ns, "a window that ends before it starts");
    }
}

/// Decodes a stored calibration.
pub fn calibration(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = Calibration::from_json(text) {
        assert!(c.active_mw > 0 && c.span_ns > 0, "an accepted calibration over no time or power");
    }
}

/// Decodes a recorded session; whatever is accepted keeps its promises,
/// reads back unchanged, and runs through the layers above the meter.
pub fn session(data: &[u8]) {
    use crate::session::Session;
    let Ok(s) = Session::from_bytes("fuzz", data) else {
        return;
    };
    assert!(s.validate("fuzz").is_ok(), "an accepted session fails validation");
    let again = serde_json::to_vec(&s).map(|b| Session::from_bytes("fuzz", &b));
    assert!(matches!(&again, Ok(Ok(t)) if *t == s), "an accepted session does not read back: {again:?}");
    let mut previous_end = 0;
    for w in &s.windows {
        assert!(w.start_ns >= previous_end && w.end_ns > w.start_ns, "overlapping or empty window accepted");
        previous_end = w.end_ns;
        if let (Some(p), Some(r)) = (w.provenance, w.rung) {
            assert!(p == r.provenance(), "a grade its rung does not give");
        }
    }
    let r = crate::layers::dynamism(&s, None, &crate::declared::Causes::default(), None);
    assert!(
        r.within_band + r.explained + r.unexplained + r.inapplicable + r.unresolvable == s.windows.len() as u64,
        "a window assessed twice or not at all"
    );
    assert!(r.within_band == 0 && r.unexplained == 0, "a finding against no baseline");
}

/// Decodes a declared baseline; an accepted one reads back unchanged.
pub fn baseline(data: &[u8]) {
    use crate::declared::{baseline_from_bytes, baseline_to_json};
    if let Ok(b) = baseline_from_bytes("fuzz", data) {
        assert!(b.low_uj <= b.high_uj, "an inverted band accepted");
        assert!(
            baseline_from_bytes("fuzz", baseline_to_json(&b).as_bytes()).as_ref() == Ok(&b),
            "an accepted baseline does not read back"
        );
    }
}

/// Decodes evidenced causes; an accepted file reads back unchanged.
pub fn causes(data: &[u8]) {
    use crate::declared::Causes;
    if let Ok(c) = Causes::from_bytes("fuzz", data) {
        assert!(
            Causes::from_bytes("fuzz", c.to_json().as_bytes()).as_ref() == Ok(&c),
            "accepted causes do not read back"
        );
    }
}

/// Decodes a power envelope; an accepted one is ordered and reads back unchanged.
pub fn envelope(data: &[u8]) {
    use crate::declared::EnvelopeFile;
    if let Ok(e) = EnvelopeFile::from_bytes("fuzz", data) {
        assert!(e.idle_mw <= e.burst_mw && e.burst_mw > 0 && !e.rungs.is_empty(), "a broken envelope accepted");
        let again = serde_json::to_vec(&e).map(|b| EnvelopeFile::from_bytes("fuzz", &b));
        assert!(matches!(&again, Ok(Ok(x)) if *x == e), "an accepted envelope does not read back");
    }
}

/// Decodes a `/proc/<pid>/stat` line (§5.1 span metering); an accepted line
/// re-spelled canonically from its fields decodes to the same fields, and the
/// `children` list parser never panics either.
pub fn proc_stat(data: &[u8]) {
    use crate::span::procfs::{parse_children, parse_stat};
    let mut kids = Vec::new();
    let _ = parse_children(data, &mut kids);
    let Ok(s) = parse_stat(data) else {
        return;
    };
    assert!(s.state.is_ascii_alphabetic(), "a state that is not a letter accepted");
    let line = format!(
        "{} (x) {} {} 0 0 0 0 0 0 0 0 0 {} 0 {} 0 0 0 {} 0 {}\n",
        s.pid,
        char::from(s.state),
        s.ppid,
        s.cpu_ticks,
        s.reaped_ticks,
        s.threads,
        s.start_ticks
    );
    assert!(parse_stat(line.as_bytes()).as_ref() == Ok(&s), "an accepted line does not re-spell to the same fields");
}
