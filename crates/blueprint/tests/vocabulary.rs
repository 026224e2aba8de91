//! §12: the closed error vocabulary, enforced in both directions: every one
//! of the 74 codes has an emission site in the crate's source, every code
//! named in the source is declared, every ceiling of the family is emitted,
//! and no authorization vocabulary appears in any identifier.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeSet;

use blueprint::error::{Code, Error};
use blueprint::limits::Limit;

fn sources() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("src")
        .map(|e| e.expect("e").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| (p.file_name().expect("n").to_string_lossy().into_owned(), std::fs::read_to_string(&p).expect("read")))
        .collect();
    out.sort();
    out
}

fn idents_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        let id: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !id.is_empty() {
            out.insert(id);
        }
    }
    out
}

fn variant_name(c: Code) -> String {
    format!("{c:?}")
}

#[test]
fn s12_vocabulary_has_74_codes_and_8_ceilings() {
    assert_eq!(Code::ALL.len(), 74);
    assert_eq!(Limit::ALL.len(), 8);
    let spellings: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(spellings.len(), 74);
    for c in Code::ALL {
        assert_eq!(Code::parse(c.as_str()), Some(*c));
        assert_eq!(Error::new(*c, "s", "d").code(), c.as_str());
    }
}

#[test]
fn s12_every_code_has_an_emission_site_and_every_emission_is_declared() {
    let mut emitted = BTreeSet::new();
    for (name, text) in sources() {
        if name == "error.rs" {
            continue;
        }
        emitted.extend(idents_after(&text, "Code::").into_iter().filter(|i| i != "parse" && i != "ALL"));
    }
    let declared: BTreeSet<String> = Code::ALL.iter().map(|c| variant_name(*c)).collect();
    let unreachable: Vec<&String> = declared.difference(&emitted).collect();
    let undeclared: Vec<&String> = emitted.difference(&declared).collect();
    assert!(unreachable.is_empty(), "codes no path can emit: {unreachable:?}");
    assert!(undeclared.is_empty(), "emissions outside the vocabulary: {undeclared:?}");
}

#[test]
fn s12_every_ceiling_of_the_family_is_emitted() {
    let mut emitted = BTreeSet::new();
    for (name, text) in sources() {
        if name == "limits.rs" || name == "error.rs" {
            // limits.rs emits the family generically (`Error::ceiling(limit, …)` over any limit)
            continue;
        }
        for seg in text.split("Error::ceiling(").skip(1) {
            emitted.extend(idents_after(&seg[..seg.find(',').unwrap_or(0)], "Limit::"));
        }
    }
    let all: BTreeSet<String> = Limit::ALL.iter().map(|l| format!("{l:?}")).collect();
    assert_eq!(emitted, all, "each decoder limit has its own emission in the decoder");
}

#[test]
fn s12_no_authorization_vocabulary_in_any_identifier() {
    for (name, text) in sources() {
        let lower = text.to_ascii_lowercase();
        for word in ["unauthorized", "authorized", "authorize(", "permit(", "allow_access"] {
            assert!(!lower.contains(word), "{name} contains {word:?}");
        }
    }
}
