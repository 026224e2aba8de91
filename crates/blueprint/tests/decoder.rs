//! §2/§3: the bounded decoder — the ceiling family, duplicates, trailing
//! bytes, the integer window and the pinned failure precedence.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use blueprint::json::{self, Number, Value};
use blueprint::limits::{Limit, Limits};

fn lim(f: impl FnOnce(&mut Limits)) -> Limits {
    let mut l = Limits::default();
    f(&mut l);
    l
}

fn code(bytes: &[u8], l: &Limits) -> String {
    json::decode(bytes, l).expect_err("should fail").code()
}

#[test]
fn s2_ceiling_family_each_limit_at_and_above_bound() {
    let cases: Vec<(Limits, &str, &str, &str)> = vec![
        (lim(|l| l.bytes = 7), "{\"a\":1}", "{\"a\":12}", "ceiling:bytes"),
        (lim(|l| l.depth = 2), "[[1]]", "[[[1]]]", "ceiling:depth"),
        (lim(|l| l.items = 2), "[1,2]", "[1,2,3]", "ceiling:items"),
        (lim(|l| l.members = 2), "{\"a\":1,\"b\":2}", "{\"a\":1,\"b\":2,\"c\":3}", "ceiling:members"),
        (lim(|l| l.nodes = 3), "[1,2]", "[1,2,3]", "ceiling:nodes"),
        (lim(|l| l.string = 3), "\"abc\"", "\"abcd\"", "ceiling:string"),
        (lim(|l| l.key = 2), "{\"ab\":1}", "{\"abc\":1}", "ceiling:key"),
        (lim(|l| l.number_lexeme = 3), "123", "1234", "ceiling:number_lexeme"),
    ];
    assert_eq!(cases.len(), Limit::ALL.len());
    for (l, ok, bad, want) in cases {
        json::decode(ok.as_bytes(), &l).unwrap_or_else(|e| panic!("{ok} at the bound: {e}"));
        assert_eq!(code(bad.as_bytes(), &l), want, "{bad}");
    }
}

#[test]
fn s3_duplicate_member_is_refused() {
    assert_eq!(code(br#"{"a":1,"a":2}"#, &Limits::default()), "duplicate_member");
    assert_eq!(code(br#"{"x":{"a":1,"b":2,"a":3}}"#, &Limits::default()), "duplicate_member");
}

#[test]
fn s3_trailing_bytes_are_refused() {
    for t in ["{} {}", "[1]x", "1 2", "{\"a\":1}}"] {
        assert_eq!(code(t.as_bytes(), &Limits::default()), "trailing_bytes", "{t}");
    }
    json::decode(b" [1] \n", &Limits::default()).expect("whitespace is not trailing bytes");
}

#[test]
fn s3_integer_window_rule() {
    let d = |t: &str| json::decode(t.as_bytes(), &Limits::default());
    assert_eq!(d("9007199254740991").expect("max safe"), Value::Number(Number::Int(9_007_199_254_740_991)));
    assert_eq!(d("-9007199254740991").expect("min safe"), Value::Number(Number::Int(-9_007_199_254_740_991)));
    // above the window: a float iff the ECMAScript form reproduces the lexeme
    assert!(matches!(d("295147905179352830000").expect("float"), Value::Number(Number::Float(_))));
    assert!(matches!(d("9007199254740992").expect("2^53"), Value::Number(Number::Float(_))));
    for t in ["9007199254740993", "295147905179352830001", "12345678901234567890123"] {
        assert_eq!(d(t).expect_err(t).code(), "number_not_double_expressible", "{t}");
    }
    assert_eq!(d("1e400").expect_err("overflow").code(), "number_not_double_expressible");
}

#[test]
fn s3_invalid_numbers_and_syntax() {
    for t in ["01", "1.", "-", "1e", "-x", ".5"] {
        let c = code(t.as_bytes(), &Limits::default());
        assert!(c == "invalid_number" || c == "invalid_syntax", "{t}: {c}");
    }
    assert_eq!(code(b"01", &Limits::default()), "invalid_number");
    assert_eq!(code(b"", &Limits::default()), "invalid_syntax");
    assert_eq!(code(b"[1,]", &Limits::default()), "invalid_syntax");
    assert_eq!(code(b"\"a\x01\"", &Limits::default()), "invalid_syntax");
    assert_eq!(code(b"tru", &Limits::default()), "invalid_syntax");
}

#[test]
fn s2_failure_precedence_bytes_then_encoding_then_document_order_then_trailing() {
    // bytes before encoding: an over-long invalid-UTF-8 input reports the ceiling
    assert_eq!(code(b"\"\xff\xff\xff\"", &lim(|l| l.bytes = 3)), "ceiling:bytes");
    // encoding before syntax: invalid UTF-8 late in a syntactically broken document
    assert_eq!(code(b"[1,,\"\xff\"]", &Limits::default()), "invalid_encoding");
    // document order: the first failure wins (duplicate before a later depth excess)
    assert_eq!(code(br#"{"a":1,"a":[[[[1]]]]}"#, &lim(|l| l.depth = 2)), "duplicate_member");
    assert_eq!(code(br#"{"b":[[[[1]]]],"b":1}"#, &lim(|l| l.depth = 2)), "ceiling:depth");
    // trailing bytes last: a ceiling inside the value beats the trailing garbage
    assert_eq!(code(b"[[[1]]] x", &lim(|l| l.depth = 2)), "ceiling:depth");
}

#[test]
fn s2_bounds_new_is_tighten_only() {
    let v = |t: &str| json::decode(t.as_bytes(), &Limits::default()).expect("json");
    assert_eq!(Limits::new(&v(r#"{"depth":8}"#)).expect("ok").depth, 8);
    assert_eq!(Limits::new(&v(r#"{"depth":65}"#)).expect_err("raise").code(), "ceiling:depth");
    assert_eq!(Limits::new(&v(r#"{"bytes":5000001}"#)).expect_err("raise").code(), "ceiling:bytes");
    assert_eq!(Limits::new(&v(r#"{"depth":0}"#)).expect_err("floor").code(), "invalid_constraint");
    assert_eq!(Limits::new(&v(r#"{"depth":"8"}"#)).expect_err("type").code(), "invalid_type");
    assert_eq!(Limits::new(&v(r#"{"depth":8.5}"#)).expect_err("float").code(), "invalid_type");
    assert_eq!(Limits::new(&v(r#"{"width":8}"#)).expect_err("name").code(), "unknown_bound");
    assert_eq!(Limits::new(&v("[1]")).expect_err("shape").code(), "invalid_type");
}

#[test]
fn s3_non_binary_input_is_invalid_type() {
    let e = json::decode_dynamic(&Value::Bool(true), &Limits::default()).expect_err("non-binary");
    assert_eq!(e.code(), "invalid_type");
}

#[test]
fn s3_strict_base64url() {
    use blueprint::b64;
    assert_eq!(b64::decode("-_8").expect("ok"), vec![0xfb, 0xff]);
    assert_eq!(b64::decode("QQ==").expect_err("pad").code(), "base64url_padded");
    for bad in ["QQ+/", "Q", "QR", "a b", "QQ.", "\u{e9}"] {
        assert_eq!(b64::decode(bad).expect_err(bad).code(), "base64url_invalid", "{bad}");
    }
}

#[test]
fn s5_tagged_digest_forms() {
    use blueprint::digest::{Domain, Tagged};
    let t = Tagged::compute(Domain::BlueprintContent, b"corpus");
    assert_eq!(t.to_string(), "sha-256:CG8BHw0q9hF5FhRk8qCw4jZoiQW1ww92s4Soo9enBYQ");
    assert_eq!(Tagged::parse(&t.to_string()).expect("parse"), t);
    assert_eq!(Tagged::parse("sha-512:abc").expect_err("alg").code(), "digest_algorithm_unsupported");
    assert_eq!(Tagged::parse("not-a-tagged-digest").expect_err("form").code(), "digest_encoding_invalid");
    assert_eq!(Tagged::parse("sha-256:AAAA").expect_err("short").code(), "digest_encoding_invalid");
    assert_eq!(
        Tagged::parse("sha-256:CG8BHw0q9hF5FhRk8qCw4jZoiQW1ww92s4Soo9enBYR")
            .expect_err("non-canonical trailing bits")
            .code(),
        "digest_encoding_invalid"
    );
    // domain separation: the same bytes under another purpose differ
    assert_ne!(Tagged::compute(Domain::DeploymentContent, b"corpus"), t);
}
