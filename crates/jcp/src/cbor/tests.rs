//! §3 unit tests of the encoder, the decoders and content ids.

use super::decode::{f32_is_exact_half, half_to_f32, shortest_float_width};
use super::*;

#[test]
fn s3_map_keys_sorted_bytewise_on_encode() {
    let v = Value::Map(vec![(Value::text("z"), Value::Uint(2)), (Value::text("aa"), Value::Uint(1))]);
    assert_eq!(hex::encode(v.encode()), "a2617a0262616101");
}

#[test]
fn s3_long_form_integer_refused() {
    assert!(matches!(decode_strict(&[0x18, 0x05]), Err(DecodeError::NonShortest { offset: 0 })));
    assert!(matches!(decode_strict(&[0x19, 0x00, 0xff]), Err(DecodeError::NonShortest { offset: 0 })));
}

#[test]
fn s3_indefinite_length_refused() {
    assert!(matches!(decode_strict(&[0x9f, 0xff]), Err(DecodeError::IndefiniteLength { offset: 0 })));
    assert!(matches!(decode_strict(&[0x5f, 0xff]), Err(DecodeError::IndefiniteLength { offset: 0 })));
}

#[test]
fn s3_duplicate_and_unsorted_keys_refused() {
    // {"a":1,"a":2}
    assert!(matches!(
        decode_strict(&[0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02]),
        Err(DecodeError::DuplicateKey { offset: 4 })
    ));
    // {"b":1,"a":2}
    assert!(matches!(
        decode_strict(&[0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02]),
        Err(DecodeError::UnsortedKeys { offset: 4 })
    ));
}

#[test]
fn s3_trailing_bytes_refused() {
    assert!(matches!(decode_strict(&[0x01, 0x02]), Err(DecodeError::TrailingBytes { offset: 1 })));
}

#[test]
fn s3_floats_bools_nulls_refused_in_signed_core() {
    for (bytes, what) in
        [(vec![0xf4], "bool"), (vec![0xf5], "bool"), (vec![0xf6], "null"), (vec![0xf9, 0x3c, 0x00], "float")]
    {
        match decode_strict(&bytes) {
            Err(DecodeError::Forbidden { what: w, .. }) => assert_eq!(w, what),
            other => panic!("{bytes:?}: {other:?}"),
        }
    }
}

#[test]
fn s3_huge_declared_length_is_refused_without_allocating() {
    assert!(matches!(
        decode_strict(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        Err(DecodeError::LengthTooLarge { .. })
    ));
}

#[test]
fn s3_float_width_check_agrees_with_an_exhaustive_half_search() {
    // Every half value widened to f32 is exact; its neighbours one f32 ulp
    // away are not (except where they are halves too).
    let halves: std::collections::HashSet<u32> =
        (0u16..0x7c00).chain(0x8000..0xfc00).map(|h| half_to_f32(h).to_bits()).collect();
    for h in (0u16..0x7c00).step_by(7) {
        let f = half_to_f32(h);
        assert!(f32_is_exact_half(f), "{h:#x}");
        let next = f32::from_bits(f.to_bits() + 1);
        assert_eq!(f32_is_exact_half(next), halves.contains(&next.to_bits()), "{h:#x}+1");
    }
    assert_eq!(shortest_float_width(0x3e00, 2), 2); // 1.5 as a half
    assert_eq!(shortest_float_width(0x3fc0_0000, 4), 2); // 1.5 as a single: non-preferred
    assert_eq!(shortest_float_width(0x3ff8_0000_0000_0000, 8), 2);
    assert_eq!(shortest_float_width(f64::to_bits(0.1), 8), 8);
}

#[test]
fn s3_content_id_is_blake3_of_canonical_bytes_lowercase_hex() {
    let v = Value::Map(vec![(Value::text("a"), Value::Uint(1))]);
    let id = ContentId::of(&v);
    assert_eq!(id.to_hex(), hex::encode(blake3::hash(&v.encode()).as_bytes()));
    assert!(ContentId::parse(&id.to_hex().to_uppercase()).is_none());
    assert_eq!(ContentId::parse(&id.to_hex()), Some(id));
    // Every single-character change away from lowercase hex is refused,
    // and every lowercase hex digit in every position parses.
    let hexed = id.to_hex();
    for pos in [0, 1, 31, 62, 63] {
        for c in (0u8..=255).map(char::from) {
            let mut t: Vec<char> = hexed.chars().collect();
            t[pos] = c;
            let t: String = t.into_iter().collect();
            let ok = c.is_ascii_hexdigit() && !c.is_ascii_uppercase();
            assert_eq!(ContentId::parse(&t).is_some(), ok, "{c:?} at {pos}");
            if ok {
                assert_eq!(ContentId::parse(&t).map(|p| p.to_hex()), Some(t));
            }
        }
    }
    assert!(ContentId::parse(&hexed[..63]).is_none());
    assert!(ContentId::parse(&format!("{hexed}0")).is_none());
    // The byte-level parser: every byte value (not only chars) in every
    // position; exactly the 16 lowercase hex digits pass.
    for pos in 0..64 {
        for b in 0u8..=255 {
            let mut t = hexed.clone().into_bytes();
            t[pos] = b;
            let ok = b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
            let got = ContentId::parse_bytes(&t);
            assert_eq!(got.is_some(), ok, "byte {b:#04x} at {pos}");
            if let Some(p) = got {
                assert_eq!(p.to_hex().into_bytes(), t);
            }
        }
    }
}

#[test]
fn s3_the_skipping_reader_refuses_what_the_strict_decoder_refuses_with_the_same_error() {
    // One of each refusal, nested below a map so the reader's own walk of
    // the entries is what meets them; and their acceptances.
    let nested = |inner: &[u8]| [&[0xa2, 0x61, 0x61, 0x01, 0x61, 0x62][..], inner].concat();
    let refusals: [&[u8]; 12] = [
        &[0x18, 0x05],                               // non-shortest
        &[0x9f, 0xff],                               // indefinite
        &[0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02], // unsorted
        &[0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02], // duplicate
        &[0xa1, 0x01, 0x01],                         // non-text key
        &[0x20],                                     // negative
        &[0xc1, 0x01],                               // tag
        &[0xf5],                                     // bool
        &[0xf9, 0x3c, 0x00],                         // float
        &[0x62, 0xff, 0xfe],                         // bad utf-8
        &[0x5a, 0xff, 0xff, 0xff, 0xff],             // length beyond the input
        &[0x1c],                                     // reserved
    ];
    for r in refusals {
        for input in [r.to_vec(), nested(r), [r, &[0x00][..]].concat()] {
            let tree = decode_strict(&input).unwrap_err();
            assert_eq!(map_spans_strict(&input).unwrap_err(), tree, "{}", hex::encode(&input));
            crate::fuzzing::spans_agree(&input).unwrap();
        }
    }
    let mut deep = vec![0xa1, 0x61, 0x61];
    deep.extend(std::iter::repeat(0x81).take(MAX_DEPTH));
    deep.push(0x01);
    assert!(matches!(map_spans_strict(&deep), Err(DecodeError::TooDeep { .. })));
    crate::fuzzing::spans_agree(&deep).unwrap();
    // Trailing bytes after a whole map.
    assert_eq!(map_spans_strict(&[0xa0, 0x00]), Err(DecodeError::TrailingBytes { offset: 1 }));

    let ok = nested(&[0x82, 0x63, b'a', b'b', b'c', 0x41, 0x07]);
    assert_eq!(
        map_spans_strict(&ok).unwrap().unwrap(),
        vec![("a", &[0x01][..]), ("b", &[0x82, 0x63, b'a', b'b', b'c', 0x41, 0x07][..])]
    );
    assert_eq!(map_spans_strict(&[0x01]), Ok(None));
    assert_eq!(text_of(&[0x63, b'a', b'b', b'c']), Some("abc"));
    assert_eq!(text_of(&[0x43, b'a', b'b', b'c']), None);
    assert_eq!(text_of(&[0x63, b'a', b'b', b'c', 0x00]), None);
    assert_eq!(bytes_of(&[0x42, 1, 2]), Some(&[1, 2][..]));
    assert_eq!(uint_of(&[0x19, 0x01, 0x00]), Some(256));
    assert_eq!(uint_of(&[0x19, 0x00, 0xff]), None);
    assert_eq!(uint_of(&[0x62, 0x00, 0x00]), None);
}

#[test]
fn s3_the_direct_map_writer_writes_what_the_value_encodes_in_any_listing() {
    let id = ContentId::of_bytes(b"x");
    let ids = [id, ContentId::of_bytes(b"y")];
    let did = crate::identity::Keypair::from_seed([5; 32]).unwrap().did();
    let long = "t".repeat(300);
    let entries = [
        ("b", Some(Item::Uint(24))),
        ("aa", Some(Item::Text(&long))),
        ("a", None),
        ("c", Some(Item::Bytes(&[1, 2, 3]))),
        ("id", Some(Item::Id(&id))),
        ("ids", Some(Item::Ids(&ids))),
        ("did", Some(Item::Did(&did))),
        ("zz", Some(Item::Uint(u64::MAX))),
    ];
    let want = map(entries.iter().map(|(k, v)| (*k, v.map(|i| i.to_value())))).encode();
    // As listed (not canonical: sorted first), reversed, and canonical.
    let mut listed = entries;
    let mut got = Vec::new();
    write_map(&mut got, &mut listed);
    assert_eq!(got, want);
    let mut reversed = entries;
    reversed.reverse();
    got.clear();
    write_map(&mut got, &mut reversed);
    assert_eq!(got, want);
    got.clear();
    write_map(&mut got, &mut listed);
    assert_eq!(got, want);
    assert_eq!(decode_strict(&got).unwrap().encode(), want);
}
