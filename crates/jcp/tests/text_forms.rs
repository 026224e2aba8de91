//! The text forms of protocol objects people write (CLI flags, console
//! forms, key files): declared in the crate that owns each object, read
//! strictly, refused with a typed error whose `Display` starts with its code.

use std::collections::BTreeSet;

use jcp::cbor::{ContentId, Value};
use jcp::flow::{FlowCeiling, Integrity, Label, Origins, Readers};
use jcp::grant::{content_id_from_text, resource_from_text, Caveat, Funds};
use jcp::identity::{KeyFile, Keypair};
use jcp::Error;

fn refused<T: std::fmt::Debug>(r: Result<T, Error>, code: &str) -> Error {
    let e = r.unwrap_err();
    assert_eq!(e.code(), code, "{e}");
    assert!(e.to_string().starts_with(&format!("{code}: ")), "{e}");
    e
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn s4_9_caveat_text_form_reads_every_variant() {
    let id = ContentId::of(&Value::text("m"));
    let did = Keypair::from_seed([7; 32]).unwrap().did();
    let cases: Vec<(String, Caveat)> = vec![
        ("ActionIn=read,write".into(), Caveat::ActionIn(vec!["read".into(), "write".into()])),
        (format!("PayloadIs={}", id.to_hex()), Caveat::PayloadIs(id)),
        (format!("CallerIs={did}"), Caveat::CallerIs(did)),
        ("NotBefore=10".into(), Caveat::NotBefore(10)),
        ("NotAfter=20".into(), Caveat::NotAfter(20)),
        ("MaxCostUj=100".into(), Caveat::MaxCostUj(100)),
        (format!("ModelIn={0},{0}", id.to_hex()), Caveat::ModelIn(vec![id, id])),
        (
            "FlowBelow=untrusted;search;all;1000".into(),
            Caveat::FlowBelow(FlowCeiling {
                ceiling: Label {
                    integrity: Integrity::Untrusted,
                    origins: Origins::Set(set(&["search"])),
                    readers: Readers::All,
                },
                tainted_budget_uj: Some(1000),
            }),
        ),
        (
            "FlowBelow=trusted;any;alice,bob".into(),
            Caveat::FlowBelow(FlowCeiling {
                ceiling: Label {
                    integrity: Integrity::Trusted,
                    origins: Origins::Any,
                    readers: Readers::Only(set(&["alice", "bob"])),
                },
                tainted_budget_uj: None,
            }),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(text.parse::<Caveat>().unwrap(), want, "{text}");
    }
}

#[test]
fn s4_9_caveat_text_form_refuses_what_it_cannot_read() {
    for bad in [
        "MaxCostUj",
        "MaxCostUj=-1",
        "NotAfter=soon",
        "Whenever=1",
        "FlowBelow=trusted;any",
        "FlowBelow=trusted;any;all;x",
    ] {
        refused(bad.parse::<Caveat>(), "invalid-caveat");
    }
    refused("PayloadIs=ABC".parse::<Caveat>(), "invalid-content-id");
    refused("ModelIn=00".parse::<Caveat>(), "invalid-content-id");
    refused("FlowBelow=sort-of;any;all".parse::<Caveat>(), "invalid-label");
    let e = "CallerIs=did:web:x".parse::<Caveat>().unwrap_err();
    assert!(matches!(e, Error::Identity(_)), "{e}");
}

#[test]
fn s4_10_label_text_form_reads_bottom_top_and_three_parts() {
    assert_eq!("bottom".parse::<Label>().unwrap(), Label::bottom());
    assert_eq!("top".parse::<Label>().unwrap(), Label::top());
    assert_eq!(
        "untrusted;mail,search;all".parse::<Label>().unwrap(),
        Label {
            integrity: Integrity::Untrusted,
            origins: Origins::Set(set(&["mail", "search"])),
            readers: Readers::All
        }
    );
    for bad in ["", "trusted;any", "trusted;any;all;1", "maybe;any;all", "Bottom"] {
        refused(bad.parse::<Label>(), "invalid-label");
    }
}

#[test]
fn s4_8_funds_text_form_is_currency_colon_minor() {
    assert_eq!("USD:500".parse::<Funds>().unwrap(), Funds { currency: "USD".into(), minor: 500 });
    for bad in ["USD", ":5", "USD:-5", "USD:5.00", "USD:"] {
        refused(bad.parse::<Funds>(), "invalid-funds");
    }
}

#[test]
fn s4_resource_text_form_is_an_id_or_a_named_text() {
    let id = ContentId::of(&Value::text("inbox"));
    assert_eq!(resource_from_text("text:inbox").unwrap(), id);
    assert_eq!(resource_from_text(&id.to_hex()).unwrap(), id);
    refused(resource_from_text("inbox"), "invalid-content-id");
    refused(content_id_from_text(&id.to_hex().to_uppercase(), "model"), "invalid-content-id");
}

#[test]
fn s2_key_file_round_trips_and_refuses_a_did_that_is_not_its_seeds() {
    let k = Keypair::from_seed([1; 32]).unwrap();
    let text = KeyFile::encode(&k);
    assert_eq!(
        text.as_str(),
        format!("{{\n  \"did\": \"{}\",\n  \"seed\": \"{}\"\n}}", k.did(), "01".repeat(32)),
        "the bytes `jcp key new` has always written"
    );
    let back = KeyFile::decode(text.as_bytes()).unwrap();
    assert_eq!((back.did(), back.seed()), (k.did(), k.seed()));
    let other = Keypair::from_seed([2; 32]).unwrap();
    let swapped = text.replace(&k.did().to_string(), &other.did().to_string());
    refused(KeyFile::decode(swapped.as_bytes()), "key-file-invalid");
    refused(KeyFile::decode(text.replace("0101\"", "01\"").as_bytes()), "key-file-invalid");
    refused(KeyFile::decode(text.replace("\n}", ",\n  \"note\": 1\n}").as_bytes()), "key-file-invalid");
    refused(KeyFile::decode(&text.as_bytes()[..20]), "key-file-invalid");
    assert!(
        !format!("{:?}", KeyFile { did: k.did().to_string(), seed: "01".repeat(32) }).contains("0101"),
        "Debug never shows the seed"
    );
}
