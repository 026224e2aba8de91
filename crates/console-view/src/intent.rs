//! The developer's Intent panel (Agent-Safe Intent v1 §3–§6): a binding
//! opened or pasted, shown as `jcp intent hash` shows it — its canonical
//! bytes (text and hex), its intent hash, or its refusal with the rule — and
//! two bindings compared property by property (§6). Everything here is the
//! `intent` crate's: `intent::inspect` and `intent::compare`; this module
//! only shapes the payload.

use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

/// Where a document comes from: pasted text, or a file the shell reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum IntentSource {
    /// Text pasted into the panel.
    Text {
        /// The text.
        text: String,
    },
    /// A file the person chose in the native dialog (issue 34: by the
    /// handle the console gave it, never by a path from the web view).
    File {
        /// Its handle.
        handle: String,
    },
}

/// The most bytes read from one file or paste: ten times the §3 bound of
/// 100 KiB of canonical bytes, so whitespace never stops a binding, while a
/// wrong file (a log, an image) is refused before it is read whole.
pub const MAX_SOURCE_BYTES: u64 = 1024 * 1024;

impl IntentSource {
    /// The bytes and a label (`pasted`, or the file's path): a file is the
    /// one `path_of` finds for its handle (the shell's handle registry).
    pub fn read<E>(
        &self,
        path_of: impl FnOnce(&str) -> Result<std::path::PathBuf, E>,
    ) -> Result<Result<(Vec<u8>, String), crate::ViewError>, E> {
        Ok(match self {
            Self::Text { text } if text.len() as u64 > MAX_SOURCE_BYTES => Err(crate::ViewError::TooLarge(format!(
                "the pasted text is {} bytes; at most {MAX_SOURCE_BYTES} are read",
                text.len()
            ))),
            Self::Text { text } => Ok((text.as_bytes().to_vec(), "pasted".to_owned())),
            Self::File { handle } => read_file(&path_of(handle)?),
        })
    }
}

/// A binding file's bytes (at most [`MAX_SOURCE_BYTES`]) and its path as the label.
pub fn read_file(p: &std::path::Path) -> Result<(Vec<u8>, String), crate::ViewError> {
    use std::io::Read as _;
    let unreadable = |e: std::io::Error| crate::ViewError::Unreadable { path: p.to_path_buf(), detail: e.to_string() };
    let f = std::fs::File::open(p).map_err(unreadable)?;
    let mut bytes = Vec::new();
    f.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut bytes).map_err(unreadable)?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(crate::ViewError::TooLarge(format!(
            "{} is larger than {MAX_SOURCE_BYTES} bytes: not a binding",
            p.display()
        )));
    }
    Ok((bytes, p.display().to_string()))
}

/// What the document was hashed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum IntentSubject {
    /// A binding (`protocol_version` present): §3 rules, then §4 and §5.
    Binding,
    /// Any other JSON value (a vector's case): §3 bounds and §4 only.
    Canonical,
}

/// A refusal with its stable code and the rule it enforces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct IntentRefusal {
    /// `BINDING_UNKNOWN_KEY`, `JSON_SYNTAX`, …
    pub code: String,
    /// The rule, with its section (`§3: an object with a fixed key set …`).
    pub rule: String,
    /// What was wrong and where (a JSON path, or the byte offset of a decode error).
    pub message: String,
}

impl From<intent::Refusal> for IntentRefusal {
    fn from(r: intent::Refusal) -> Self {
        Self { code: r.code.to_owned(), rule: r.rule.to_owned(), message: r.message }
    }
}

/// One document as the panel shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct IntentView {
    /// Where it came from (a file, or `pasted`).
    pub source: String,
    /// What it was hashed as; absent when it did not decode as JSON.
    pub kind: Option<IntentSubject>,
    /// The canonical form (§4), absent when refused.
    pub canonical_json: Option<String>,
    /// The same bytes in lowercase hex, absent when refused.
    pub canonical_hex: Option<String>,
    /// How many canonical bytes.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub canonical_len: Option<u64>,
    /// `sha256:…` (§5), absent when refused.
    pub intent_hash: Option<String>,
    /// Why it was refused.
    pub refusal: Option<IntentRefusal>,
}

fn view_of(
    source: &str,
    kind: Option<IntentSubject>,
    i: Option<intent::Inspection>,
    refusal: Option<intent::Refusal>,
) -> IntentView {
    let (canonical_json, intent_hash, own_refusal) = match i {
        Some(i) => (i.canonical_json, i.intent_hash, i.refusal),
        None => (None, None, None),
    };
    IntentView {
        source: source.to_owned(),
        kind,
        canonical_hex: canonical_json.as_ref().map(|c| hex_of(c.as_bytes())),
        canonical_len: canonical_json.as_ref().map(|c| c.len() as u64),
        canonical_json,
        intent_hash,
        refusal: own_refusal.or(refusal).map(IntentRefusal::from),
    }
}

fn hex_of(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

fn kind_of(k: intent::Subject) -> IntentSubject {
    match k {
        intent::Subject::Binding => IntentSubject::Binding,
        intent::Subject::Canonical => IntentSubject::Canonical,
    }
}

/// Inspects bytes (a binding, a vector, or any JSON), as `jcp intent hash`.
pub fn intent_view(bytes: &[u8], source: &str) -> IntentView {
    match intent::inspect(bytes) {
        Ok((_, i)) => view_of(source, Some(kind_of(i.kind)), Some(i), None),
        Err(r) => view_of(source, None, None, Some(r)),
    }
}

/// How one property differs (§6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum IntentChange {
    /// In both, with different canonical values.
    Changed,
    /// Only in the second.
    Added,
    /// Only in the first.
    Removed,
}

/// One property that makes two bindings different intents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct IntentDifference {
    /// `$.action.parameters.replicas`.
    pub path: String,
    /// How.
    pub change: IntentChange,
    /// Canonical value in the first, if there.
    pub first: Option<String>,
    /// Canonical value in the second, if there.
    pub second: Option<String>,
}

/// Two documents compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct IntentComparison {
    /// The first, as inspected (its own refusal, if any, shown; it is compared all the same).
    pub first: IntentView,
    /// The second.
    pub second: IntentView,
    /// Whether the two could be compared (both have a canonical form).
    pub compared: bool,
    /// Why they could not be compared.
    pub refusal: Option<IntentRefusal>,
    /// Equal intent hashes; absent when not compared.
    pub same_intent: Option<bool>,
    /// The hashes of the compared documents (`first`, `second`), when compared.
    pub hashes: Option<(String, String)>,
    /// Every property that differs (empty exactly when the same intent).
    pub differences: Vec<IntentDifference>,
}

/// Compares two documents: which properties make them different intents.
pub fn intent_compare(first: &[u8], first_source: &str, second: &[u8], second_source: &str) -> IntentComparison {
    let a = intent::inspect(first);
    let b = intent::inspect(second);
    let view = |r: &Result<(intent::Value, intent::Inspection), intent::Refusal>, src: &str| match r {
        Ok((_, i)) => view_of(src, Some(kind_of(i.kind)), Some(i.clone()), None),
        Err(e) => view_of(src, None, None, Some(e.clone())),
    };
    let (va, vb) = (view(&a, first_source), view(&b, second_source));
    let not_compared = |refusal: IntentRefusal, va: IntentView, vb: IntentView| IntentComparison {
        first: va,
        second: vb,
        compared: false,
        refusal: Some(refusal),
        same_intent: None,
        hashes: None,
        differences: Vec::new(),
    };
    let (da, db) = match (&a, &b) {
        (Ok((da, _)), Ok((db, _))) => (da, db),
        (Err(e), _) => {
            let r = IntentRefusal {
                message: format!("the first does not decode: {}", e.message),
                ..IntentRefusal::from(e.clone())
            };
            return not_compared(r, va, vb);
        }
        (_, Err(e)) => {
            let r = IntentRefusal {
                message: format!("the second does not decode: {}", e.message),
                ..IntentRefusal::from(e.clone())
            };
            return not_compared(r, va, vb);
        }
    };
    match intent::compare(intent::inspect::subject(da), intent::inspect::subject(db)) {
        Ok(c) => IntentComparison {
            first: va,
            second: vb,
            compared: true,
            refusal: None,
            same_intent: Some(c.same_intent),
            hashes: Some((c.left.intent_hash.clone(), c.right.intent_hash.clone())),
            differences: c
                .differences
                .into_iter()
                .map(|d| IntentDifference {
                    path: d.path,
                    change: match d.change {
                        intent::Change::Changed => IntentChange::Changed,
                        intent::Change::Added => IntentChange::Added,
                        intent::Change::Removed => IntentChange::Removed,
                    },
                    first: d.left,
                    second: d.right,
                })
                .collect(),
        },
        Err(e) => not_compared(
            IntentRefusal { code: e.error.code().to_owned(), rule: e.error.rule().to_owned(), message: e.to_string() },
            va,
            vb,
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn generated() -> Vec<(String, String)> {
        macro_rules! all {
            ($($t:ty),*) => { vec![$( (<$t as TS>::name(), <$t as TS>::export_to_string().unwrap()) ),*] };
        }
        all!(IntentSource, IntentSubject, IntentRefusal, IntentView, IntentChange, IntentDifference, IntentComparison)
    }

    fn pinned() -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../conformance/intent/vectors/compromised-principal.json"),
        )
        .unwrap()
    }

    #[test]
    fn s5_panel_shows_the_hash_jcp_intent_hash_prints_with_canonical_hex() {
        let v = intent_view(&pinned(), "compromised-principal.json");
        let doc: serde_json::Value = serde_json::from_slice(&pinned()).unwrap();
        assert_eq!(v.intent_hash.as_deref(), doc["intent_hash"].as_str());
        assert_eq!(v.canonical_json.as_deref(), doc["canonical_json"].as_str());
        let hex = v.canonical_hex.unwrap();
        assert_eq!(hex.len() as u64, 2 * v.canonical_len.unwrap());
        assert!(hex.starts_with("7b22"), "{{\" in hex");
        assert!(v.refusal.is_none());
    }

    #[test]
    fn s3_refusal_carries_code_rule_and_where() {
        let v = intent_view(br#"{"protocol_version":"agent-safe.intent/1","action":{},"smuggled":1}"#, "pasted");
        let r = v.refusal.unwrap();
        assert!(r.code.starts_with("BINDING_"), "{}", r.code);
        assert!(r.rule.starts_with("§3"));
        assert!(v.intent_hash.is_none() && v.canonical_hex.is_none(), "never a hash for a refused binding");
        let bad = intent_view(b"{\"a\":", "pasted");
        assert_eq!(bad.kind, None);
        assert_eq!(bad.refusal.unwrap().code, "JSON_SYNTAX");
    }

    #[test]
    fn s6_comparison_names_the_changed_property() {
        let doc: serde_json::Value = serde_json::from_slice(&pinned()).unwrap();
        let base = serde_json::to_vec(&doc["binding"]).unwrap();
        let m = &doc["mutations"][0];
        let c = intent_compare(&base, "base", &serde_json::to_vec(&m["binding"]).unwrap(), "mutation");
        assert!(c.compared);
        assert_eq!(c.same_intent, Some(false));
        assert_eq!(c.differences.len(), 1);
        assert_eq!(c.differences[0].path, format!("$.{}", m["path"].as_str().unwrap()));
        assert_eq!(c.hashes.unwrap().1, m["intent_hash"].as_str().unwrap());
        let same = intent_compare(&base, "a", &base, "b");
        assert_eq!((same.same_intent, same.differences.len()), (Some(true), 0));
    }

    #[test]
    fn s3_an_oversized_source_is_refused_before_it_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big.json");
        std::fs::write(&f, vec![b' '; (MAX_SOURCE_BYTES + 10) as usize]).unwrap();
        let by = |p: std::path::PathBuf| move |_: &str| Ok::<_, ()>(p);
        let e = IntentSource::File { handle: "h".into() }.read(by(f.clone())).unwrap().unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
        let missing =
            IntentSource::File { handle: "h".into() }.read(by(dir.path().join("none.json"))).unwrap().unwrap_err();
        assert!(missing.to_string().contains("none.json"), "{missing}");
        assert_eq!(IntentSource::Text { text: "{}".into() }.read(by(f)).unwrap().unwrap().1, "pasted");
        // A handle the shell does not know is its refusal, nothing read.
        assert!(matches!(IntentSource::File { handle: "x".into() }.read(|_| Err("unknown")), Err("unknown")));
    }

    #[test]
    fn s4_undecodable_side_is_not_compared_and_says_which() {
        let c = intent_compare(b"{}", "a", b"[1,", "b");
        assert!(!c.compared && c.same_intent.is_none());
        assert!(c.refusal.unwrap().message.starts_with("the second"));
    }
}
