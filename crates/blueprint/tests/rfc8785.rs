//! §4: RFC 8785 canonicalization against the published JCS test data and the
//! ES6 number vectors, plus the reference corpus's own number rows.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::canon::{self, canonical_bytes, format_f64};
use blueprint::json::{self, Number, Value};
use blueprint::limits::Limits;

#[test]
fn s4_rfc8785_input_output_files_reproduce_byte_exactly() {
    let dir = testkit::interop("standards/jcs/input");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("dir") {
        let p = entry.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        let input = std::fs::read(&p).expect("read input");
        let want = std::fs::read(testkit::interop(&format!("standards/jcs/output/{name}"))).expect("read output");
        let v = json::decode(&input, &Limits::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = canonical_bytes(&v).expect("encode");
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "{name}");
        // The output is itself canonical: canonical-first decoding accepts it.
        canon::decode_canonical(&want, &Limits::default()).unwrap_or_else(|e| panic!("{name} output refused: {e}"));
        n += 1;
    }
    assert_eq!(n, 6, "six RFC 8785 input files");
}

#[test]
fn s4_es6_number_vectors_format_as_ecmascript() {
    let text = std::fs::read_to_string(testkit::interop("standards/jcs/es6testfile_first1000.txt")).expect("read");
    let mut n = 0;
    for line in text.lines().filter(|l| !l.is_empty()) {
        let (hex, want) = line.split_once(',').expect("hex,expected");
        let f = f64::from_bits(u64::from_str_radix(hex, 16).expect("hex"));
        assert!(f.is_finite(), "{line}");
        assert_eq!(format_f64(f), want, "{line}");
        // And through the value model: the float's canonical form is the expected text.
        let got = canonical_bytes(&Value::Number(Number::Float(f))).expect("encode");
        assert_eq!(got, want.as_bytes(), "{line}");
        n += 1;
    }
    assert_eq!(n, 1000);
}

#[test]
fn s4_reference_number_rows_are_canonical() {
    let v = testkit::interop_json("agent-blueprint-protocol/vectors/rfc8785-numbers.json");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4);
    for r in rows {
        let input = r["input"].as_str().expect("input");
        let want = r["canonical"].as_str().expect("canonical");
        let got =
            canonical_bytes(&json::decode(input.as_bytes(), &Limits::default()).expect("decode")).expect("encode");
        assert_eq!(String::from_utf8(got).expect("utf8"), want);
    }
}

#[test]
fn s4_spec_number_examples() {
    for (input, want) in [
        ("1.0", "1"),
        ("1.0e22", "1e+22"),
        ("-0.0", "0"),
        ("5.0e-324", "5e-324"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("[1e21, 1e20, 0.1, -1.5e-7]", "[1e+21,100000000000000000000,0.1,-1.5e-7]"),
    ] {
        let v = json::decode(input.as_bytes(), &Limits::default()).expect("decode");
        assert_eq!(canon::canonical_string(&v).expect("encode"), want, "{input}");
    }
}

#[test]
fn s4_utf16_order_puts_u10000_before_uff3a() {
    let v = json::decode("{\"\u{FF3A}\":1,\"\u{10000}\":2,\"a\":0}".as_bytes(), &Limits::default()).expect("decode");
    assert_eq!(canon::canonical_string(&v).expect("encode"), "{\"a\":0,\"\u{10000}\":2,\"\u{FF3A}\":1}");
}

#[test]
fn s4_lone_surrogate_escape_is_refused() {
    for t in [r#""\ud800""#, r#""\udc00""#, r#""\ud800\u0041""#] {
        let e = json::decode(t.as_bytes(), &Limits::default()).expect_err(t);
        assert_eq!(e.code(), "invalid_encoding", "{t}");
    }
    // CESU-8 encoded surrogate bytes are not UTF-8.
    let e = json::decode(b"\"\xed\xa0\x80\"", &Limits::default()).expect_err("cesu");
    assert_eq!(e.code(), "invalid_encoding");
}

#[test]
fn s4_control_characters_escape_lowercase_and_short_forms() {
    let v = Value::str("\u{0}\u{1f}\u{8}\u{c}\n\r\t\"\\/\u{7f}\u{2028}");
    assert_eq!(
        canon::canonical_string(&v).expect("encode"),
        "\"\\u0000\\u001f\\b\\f\\n\\r\\t\\\"\\\\/\u{7f}\u{2028}\""
    );
}

#[test]
fn s4_nan_infinity_and_out_of_window_integers_are_refused() {
    assert_eq!(canonical_bytes(&Value::Number(Number::Float(f64::NAN))).expect_err("nan").code(), "invalid_number");
    assert_eq!(
        canonical_bytes(&Value::Number(Number::Float(f64::INFINITY))).expect_err("inf").code(),
        "invalid_number"
    );
    assert_eq!(canonical_bytes(&Value::Number(Number::Int(1 << 60))).expect_err("big").code(), "integer_magnitude");
}

#[test]
fn s3_non_canonical_bytes_are_refused_before_any_semantic_read() {
    for t in ["{\"b\":1,\"a\":2}", "{ \"a\":1}", "[1.0]", "[-0]", "\"\\u0041\"", "[1e2]"] {
        let e = canon::decode_canonical(t.as_bytes(), &Limits::default()).expect_err(t);
        assert_eq!(e.code(), "non_canonical_bytes", "{t}");
    }
    canon::decode_canonical(b"{\"a\":2,\"b\":[1,\"x\"]}", &Limits::default()).expect("canonical");
}
