//! Keeps `docs/conformance.md` true (spec §9): its class table names every
//! conformance class the spec defines, once; a class marked `implemented` or
//! `partial` has at least one test named after it (`c07_…`, `c7_…`, `cneg_…`)
//! in the test files the row lists; a row not implemented says why; and every
//! path the document names exists. Its MUST table ("MUSTs, clause by
//! clause") has a row for every sentence containing MUST in the sections it
//! covers, quotes each from the section it names, and names as tests only
//! test functions of the files it names.

#![allow(clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use testkit::repo_root;

/// One row of the class table.
#[derive(Debug)]
struct Row {
    class: String,
    modules: Vec<String>,
    tests: Vec<String>,
    status: String,
    why: String,
}

fn cells(line: &str) -> Vec<String> {
    line.trim().trim_matches('|').split('|').map(|c| c.trim().to_owned()).collect()
}

fn backticked(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// The class table: rows whose first cell is `C<n>` or `C-neg`.
fn table(doc: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| C")) {
        let c = cells(line);
        assert_eq!(
            c.len(),
            7,
            "docs/conformance.md: a class row has 7 cells (class, spec, holds, modules, tests, status, why): {line}"
        );
        rows.push(Row {
            class: c[0].clone(),
            modules: backticked(&c[3]),
            tests: backticked(&c[4]),
            status: c[5].clone(),
            why: c[6].clone(),
        });
    }
    rows
}

fn spec() -> String {
    let p = repo_root().join("..").join("shared").join("spec").join("jcp-v0.3.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("the spec is read from {}: {e}", p.display()))
}

/// Every class the spec defines: `**C<n> — …` bullets (§9 and the later entries).
fn spec_classes() -> BTreeSet<String> {
    let spec = spec();
    let mut out = BTreeSet::new();
    for line in spec.lines() {
        let Some(rest) = line.trim_start().strip_prefix("- **C") else { continue };
        let id: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if !id.is_empty() {
            out.insert(format!("C{id}"));
        }
    }
    out
}

/// The prefixes a test named after `class` starts with.
fn prefixes(class: &str) -> Vec<String> {
    if class == "C-neg" {
        return vec!["cneg_".into(), "c_neg_".into()];
    }
    let n: u32 = class[1..].parse().unwrap_or_else(|_| panic!("class id {class}"));
    let mut p = vec![format!("c{n}_"), format!("c{n:02}_")];
    p.dedup();
    p
}

/// Test function names in a Rust source: a `fn` whose attributes directly
/// above it include `#[test]` or `#[tokio::test…]`.
fn test_fns(src: &str) -> Vec<String> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let Some(rest) = t.strip_prefix("fn ").or_else(|| t.strip_prefix("async fn ")) else { continue };
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        // The attributes directly above the fn (and doc comments between them).
        let attrs = lines[..i].iter().rev().take_while(|a| {
            let a = a.trim_start();
            a.starts_with("#[") || a.starts_with("///") || a.starts_with("//")
        });
        if attrs.into_iter().any(|a| a.contains("#[test]") || a.contains("#[tokio::test")) {
            out.push(name);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() {
            if name != "target" && name != "node_modules" && name != "corpus" {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn doc() -> String {
    let p = repo_root().join("docs").join("conformance.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn s9_conformance_table_names_every_class_of_the_spec_once() {
    let rows = table(&doc());
    let mut seen = BTreeMap::new();
    for r in &rows {
        *seen.entry(r.class.clone()).or_insert(0) += 1;
    }
    let dup: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).map(|(c, _)| c.clone()).collect();
    assert!(dup.is_empty(), "docs/conformance.md lists these classes more than once: {dup:?}");
    let mut want = spec_classes();
    assert!(want.len() >= 26, "the spec's class list was not found ({want:?})");
    want.insert("C-neg".into());
    let have: BTreeSet<String> = seen.keys().cloned().collect();
    let missing: Vec<_> = want.difference(&have).collect();
    let extra: Vec<_> = have.difference(&want).collect();
    assert!(missing.is_empty(), "docs/conformance.md has no row for {missing:?}");
    assert!(extra.is_empty(), "docs/conformance.md has rows for classes the spec does not define: {extra:?}");
}

#[test]
fn s9_a_class_listed_as_implemented_has_a_test_named_after_it() {
    let root = repo_root();
    let rows = table(&doc());
    assert!(!rows.is_empty(), "docs/conformance.md has no class table");
    let mut failures = Vec::new();
    for r in &rows {
        match r.status.as_str() {
            "implemented" | "partial" => {}
            "not implemented" => {
                if r.why.is_empty() {
                    failures.push(format!("{}: not implemented, and the row does not say why", r.class));
                }
                continue;
            }
            other => {
                failures.push(format!(
                    "{}: status {other:?} is not one of implemented / partial / not implemented",
                    r.class
                ));
                continue;
            }
        }
        if r.status == "partial" && r.why.is_empty() {
            failures.push(format!("{}: partial, and the row does not say what is missing", r.class));
        }
        if r.tests.is_empty() {
            failures.push(format!("{}: {} but lists no test file", r.class, r.status));
            continue;
        }
        let pre = prefixes(&r.class);
        let mut named = Vec::new();
        for t in &r.tests {
            let p = root.join(t);
            let src =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: test file {}: {e}", r.class, p.display()));
            named.extend(test_fns(&src).into_iter().filter(|f| pre.iter().any(|x| f.starts_with(x.as_str()))));
        }
        if named.is_empty() {
            failures.push(format!(
                "{}: {} but none of {:?} holds a test named {}…",
                r.class,
                r.status,
                r.tests,
                pre.join("… or ")
            ));
        }
    }
    assert!(failures.is_empty(), "docs/conformance.md is not true:\n{}", failures.join("\n"));
}

/// §9: a class that holds names where it is held: every implemented or
/// partial row names at least one module, each a source file or folder of
/// the product (not a test) or data it ships (`conformance/`), which exists.
#[test]
fn s9_a_class_listed_as_implemented_names_the_source_that_holds_it() {
    let root = repo_root();
    let mut failures = Vec::new();
    for r in table(&doc()).iter().filter(|r| r.status == "implemented" || r.status == "partial") {
        if r.modules.is_empty() {
            failures.push(format!("{}: {} but names no module", r.class, r.status));
        }
        for m in &r.modules {
            let source = ["crates/", "src-tauri/", "ui/", "conformance/"].iter().any(|d| m.starts_with(d))
                && !m.contains("/tests/")
                && !m.contains("/benches/");
            if !source {
                failures.push(format!("{}: `{m}` is not a source path of the product", r.class));
            } else if !root.join(m.trim_end_matches('/')).exists() {
                failures.push(format!("{}: `{m}` does not exist", r.class));
            }
        }
    }
    assert!(failures.is_empty(), "docs/conformance.md:\n{}", failures.join("\n"));
}

#[test]
fn s9_every_path_the_conformance_document_names_exists() {
    let root = repo_root();
    let text = doc();
    let mut missing = Vec::new();
    for p in backticked(&text.replace('\n', " ")) {
        let looks_like_path =
            ["crates/", "src-tauri/", "conformance/", "ui/", "docs/", "tests/"].iter().any(|d| p.starts_with(d));
        // A test named as `file.rs::test_fn`: the file must exist (the MUST
        // table's tests check the function).
        let file = p.split("::").next().unwrap_or(&p);
        if looks_like_path && !p.contains(' ') && !root.join(file.trim_end_matches('/')).exists() {
            missing.push(p);
        }
    }
    assert!(missing.is_empty(), "docs/conformance.md names paths that do not exist: {missing:?}");
}

#[test]
fn s9_tests_named_after_a_class_are_all_listed_in_its_row() {
    // The converse: a test file holding `cNN_` tests for a class the table
    // marks implemented/partial is listed in that class's row, so the table
    // says where every class's evidence is.
    let root = repo_root();
    let rows = table(&doc());
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("src-tauri"), &mut files);
    let mut unlisted = Vec::new();
    for r in rows.iter().filter(|r| r.status != "not implemented") {
        let pre = prefixes(&r.class);
        for f in &files {
            let Ok(src) = std::fs::read_to_string(f) else { continue };
            if test_fns(&src).iter().any(|n| pre.iter().any(|x| n.starts_with(x.as_str()))) {
                let rel = f.strip_prefix(&root).unwrap_or(f).to_string_lossy().replace('\\', "/");
                if !r.tests.iter().any(|t| t == &rel) {
                    unlisted.push(format!("{}: {rel}", r.class));
                }
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "test files with tests named after a class but not listed in its row of docs/conformance.md:\n{}",
        unlisted.join("\n")
    );
}

#[test]
fn s9_the_table_parser_sees_test_names_and_prefixes() {
    // The checks above cannot pass vacuously: the parser finds test names
    // and tells c1_ from c10_.
    let src =
        "#[test]\nfn c07_spliced_chain_is_refused() {}\nfn c07_helper() {}\n#[tokio::test]\nasync fn c8_live() {}\n";
    assert_eq!(test_fns(src), vec!["c07_spliced_chain_is_refused".to_owned(), "c8_live".to_owned()]);
    assert!(!prefixes("C1").iter().any(|p| "c10_x".starts_with(p.as_str())));
    assert!(prefixes("C7").iter().any(|p| "c07_x".starts_with(p.as_str())));
    let rows = table("| C3 | §4 | x | `crates/jcp` | `crates/jcp/tests/a.rs` | implemented | |\n");
    assert_eq!(rows[0].tests, vec!["crates/jcp/tests/a.rs".to_owned()]);
}

// ---------------------------------------------------------------------------
// The MUST table: "MUSTs, clause by clause".

/// The sections whose MUSTs the table covers: the name a row gives in its
/// `§` cell, and the heading that opens the section in the spec (§5 is its
/// top, before §5.1; §5.2–§5.6 are not covered).
const MUST_SECTIONS: [(&str, &str); 8] = [
    ("4.3", "### 4.3 "),
    ("4.5", "### 4.5 "),
    ("4.7", "### 4.7 "),
    ("4.11", "### 4.11 "),
    ("5", "## 5. "),
    ("5.1", "### 5.1 "),
    ("6.1", "### 6.1 "),
    ("11", "## 11. "),
];

/// One row of the MUST table.
#[derive(Debug)]
struct MustRow {
    section: String,
    quote: String,
    code: Vec<String>,
    tests: Vec<String>,
    status: String,
    note: String,
}

/// Runs of whitespace collapsed to one space: the spec wraps its lines.
fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A section's lines: those after its heading, up to the next heading (a
/// line starting `#` outside a code fence).
fn section<'a>(spec: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = spec.lines().skip_while(|l| !l.starts_with(heading));
    assert!(lines.next().is_some(), "the spec has no heading {heading:?}");
    let mut fenced = false;
    let mut out = Vec::new();
    for l in lines {
        if l.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && l.starts_with('#') {
            break;
        }
        out.push(l);
    }
    out
}

/// A line that starts an item of a list (`- …`, `1. …`).
fn list_item(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    t.starts_with("- ") || (digits > 0 && t[digits..].starts_with(". "))
}

/// A section's sentences, whitespace collapsed. Each line inside a code
/// fence is one; a list item starts a new block of prose; within a block a
/// sentence ends at `.`, `!` or `?` followed by a space.
fn sentences(lines: &[&str]) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    let mut fenced = false;
    for l in lines {
        if l.starts_with("```") {
            fenced = !fenced;
            if !cur.is_empty() {
                blocks.push(cur.join(" "));
                cur.clear();
            }
            continue;
        }
        if fenced {
            blocks.push((*l).to_owned());
            continue;
        }
        if list_item(l) && !cur.is_empty() {
            blocks.push(cur.join(" "));
            cur.clear();
        }
        cur.push(l);
    }
    if !cur.is_empty() {
        blocks.push(cur.join(" "));
    }
    let mut out = Vec::new();
    for b in blocks {
        let b = normalise(&b);
        let mut s = String::new();
        let mut chars = b.chars().peekable();
        while let Some(c) = chars.next() {
            s.push(c);
            // A list item's number (`1. `) ends no sentence.
            let numbered = || s.len() > 1 && s.bytes().rev().skip(1).all(|b| b.is_ascii_digit());
            if matches!(c, '.' | '!' | '?') && chars.peek() == Some(&' ') && !numbered() {
                chars.next();
                out.push(std::mem::take(&mut s));
            }
        }
        if !s.is_empty() {
            out.push(s);
        }
    }
    out
}

/// Whether `s` holds the word MUST (`MUST`, `**MUST**`, `MUST NOT`; not
/// `MUSTER`).
fn has_must(s: &str) -> bool {
    s.match_indices("MUST").any(|(i, _)| {
        let before = s[..i].chars().next_back();
        let after = s[i + 4..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The MUST table: rows whose first cell is `§…` (the header's is `§` alone).
fn must_table(doc: &str) -> Vec<MustRow> {
    let mut rows = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| §") && !l.starts_with("| § |")) {
        let c = cells(line);
        assert_eq!(
            c.len(),
            6,
            "docs/conformance.md: a MUST row has 6 cells (§, MUST (quoted), code, tests, status, note): {line}"
        );
        let quote = c[1]
            .strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .unwrap_or_else(|| panic!("docs/conformance.md: a MUST row's quote is in double quotes: {line}"));
        rows.push(MustRow {
            section: c[0].trim_start_matches('§').to_owned(),
            quote: normalise(quote),
            code: backticked(&c[2]),
            tests: backticked(&c[3]),
            status: c[4].clone(),
            note: c[5].clone(),
        });
    }
    rows
}

/// Each covered section's name, its sentences holding MUST, and its whole
/// text (whitespace collapsed).
fn must_sections() -> Vec<(&'static str, Vec<String>, String)> {
    let spec = spec();
    MUST_SECTIONS
        .iter()
        .map(|(name, heading)| {
            let lines = section(&spec, heading);
            let musts = sentences(&lines).into_iter().filter(|s| has_must(s)).collect();
            (*name, musts, normalise(&lines.join("\n")))
        })
        .collect()
}

#[test]
fn s9_every_must_of_the_named_sections_has_a_row() {
    let rows = must_table(&doc());
    let sections = must_sections();
    let total: usize = sections.iter().map(|(_, m, _)| m.len()).sum();
    assert!(total >= 50, "the spec's MUST sentences were not found ({total})");
    let mut uncovered = Vec::new();
    for (name, musts, _) in &sections {
        assert!(!musts.is_empty(), "§{name}: no sentence with MUST was found");
        for m in musts {
            if !rows.iter().any(|r| r.section == *name && m.contains(r.quote.as_str())) {
                uncovered.push(format!("§{name}: {m}"));
            }
        }
    }
    assert!(
        uncovered.is_empty(),
        "docs/conformance.md has no MUST row quoting these sentences of the spec:\n{}",
        uncovered.join("\n")
    );
}

#[test]
fn s9_every_must_row_quotes_the_section_it_names_once() {
    let rows = must_table(&doc());
    assert!(!rows.is_empty(), "docs/conformance.md has no MUST table");
    let sections = must_sections();
    let mut failures = Vec::new();
    let mut seen = BTreeSet::new();
    for r in &rows {
        if !seen.insert((r.section.clone(), r.quote.clone())) {
            failures.push(format!("§{}: {:?} has two rows", r.section, r.quote));
        }
        let Some((_, musts, text)) = sections.iter().find(|(n, _, _)| *n == r.section) else {
            failures.push(format!("§{}: not one of the sections the table covers", r.section));
            continue;
        };
        if !musts.iter().any(|m| m.contains(r.quote.as_str())) {
            failures.push(format!("§{}: {:?} is in no sentence of the section with MUST", r.section, r.quote));
        }
        match text.matches(r.quote.as_str()).count() {
            1 => {}
            0 => failures.push(format!("§{}: {:?} is not in the section", r.section, r.quote)),
            n => failures.push(format!("§{}: {:?} is in the section {n} times; quote more of it", r.section, r.quote)),
        }
    }
    assert!(failures.is_empty(), "docs/conformance.md's MUST table is not true:\n{}", failures.join("\n"));
}

#[test]
fn s9_every_must_row_names_existing_code_and_tests_that_are_test_functions() {
    let root = repo_root();
    let rows = must_table(&doc());
    let mut failures = Vec::new();
    for r in &rows {
        let at = format!("§{} {:?}", r.section, r.quote);
        match r.status.as_str() {
            "held" if r.tests.is_empty() => failures.push(format!("{at}: held, and the row names no test")),
            "held" if r.code.is_empty() => failures.push(format!("{at}: held, and the row names no code")),
            "gap" | "not applicable" if r.note.is_empty() => {
                failures.push(format!("{at}: {}, and the row does not say why", r.status));
            }
            "held" | "gap" | "not applicable" => {}
            other => failures.push(format!("{at}: status {other:?} is not one of held / not applicable / gap")),
        }
        for c in &r.code {
            if !root.join(c.trim_end_matches('/')).exists() {
                failures.push(format!("{at}: code {c} does not exist"));
            }
        }
        for t in &r.tests {
            let Some((file, name)) = t.split_once("::") else {
                failures.push(format!("{at}: test {t} is not `path/to/file.rs::test_fn`"));
                continue;
            };
            match std::fs::read_to_string(root.join(file)) {
                Ok(src) if test_fns(&src).iter().any(|f| f == name) => {}
                Ok(_) => failures.push(format!("{at}: {file} has no test function {name}")),
                Err(e) => failures.push(format!("{at}: test file {file}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "docs/conformance.md's MUST table is not true:\n{}", failures.join("\n"));
}

#[test]
fn s9_the_must_parsers_see_sentences_words_and_rows() {
    // The checks above cannot pass vacuously: sentences end where the spec's
    // do, a code-fence line and a list item stand alone, MUST is a word, and
    // a row's cells are read.
    let lines = [
        "A point MUST verify it. The next one",
        "wraps here! Last?",
        "```",
        "x: y ; MUST equal z",
        "```",
        "1. MUST decide each later exchange",
        "- another item",
    ];
    assert_eq!(
        sentences(&lines),
        vec![
            "A point MUST verify it.",
            "The next one wraps here!",
            "Last?",
            "x: y ; MUST equal z",
            "1. MUST decide each later exchange",
            "- another item",
        ]
    );
    assert!(has_must("it **MUST** hold") && has_must("MUST NOT") && has_must("(MUST)."));
    assert!(!has_must("MUSTER") && !has_must("must") && !has_must("NOMUST"));
    let rows = must_table(
        "| § | MUST (quoted) | code | tests | status | note |\n\
         | §4.3 | \"a  MUST\" | `crates/jcp` | `crates/a.rs::t1`, `crates/b.rs::t2` | held | |\n",
    );
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].section.as_str(), rows[0].quote.as_str()), ("4.3", "a MUST"));
    assert_eq!(rows[0].tests, vec!["crates/a.rs::t1".to_owned(), "crates/b.rs::t2".to_owned()]);
    let spec = "## 5. E\nx MUST y.\n### 5.1 L\n```\n# not a heading\n```\nz\n### 5.2 C\n";
    assert_eq!(section(spec, "## 5. "), vec!["x MUST y."]);
    assert_eq!(section(spec, "### 5.1 "), vec!["```", "# not a heading", "```", "z"]);
}
