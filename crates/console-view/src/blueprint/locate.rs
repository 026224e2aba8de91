//! Where a refusal points in its artifact (ABP §13's decode and structure
//! failures): a byte offset shown as line, column and the line's text, or a
//! JSON pointer.

use serde::{Deserialize, Serialize};
#[cfg(test)]
use ts_rs::TS;

use super::ReconcileFiles;

/// A place in an artifact a failure points at: the file, and either a byte
/// offset (decode errors: shown as line and column with the line's text) or
/// a JSON pointer (structure errors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct JsonLocation {
    /// `blueprint` or `deployment`.
    pub artifact: String,
    /// The file.
    pub file: String,
    /// The byte offset, for a decode error.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub byte: Option<u64>,
    /// 1-based line of that byte.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub line: Option<u64>,
    /// 1-based column (in characters) of that byte.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub column: Option<u64>,
    /// The JSON pointer, for a structure error (`/signatures/0/kid`).
    pub pointer: Option<String>,
    /// The line's text (at most 160 characters around the column), when the file reads.
    pub excerpt: Option<String>,
    /// The caret's 0-based character position within `excerpt`.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub caret: Option<u64>,
    /// In words: `deployment.json line 3, column 12` or `blueprint.json at /signatures/0`.
    pub text: String,
}

/// Line, column (1-based, characters) and the line's text around a byte offset.
fn line_col(bytes: &[u8], offset: usize) -> (u64, u64, String, u64) {
    let offset = offset.min(bytes.len());
    let before = &bytes[..offset];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line_end = bytes[offset..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| offset + i);
    let line = before.split(|&b| b == b'\n').count() as u64;
    let head = String::from_utf8_lossy(&bytes[line_start..offset]).chars().count();
    let text: Vec<char> =
        String::from_utf8_lossy(&bytes[line_start..line_end]).trim_end_matches('\r').chars().collect();
    // A window of 160 characters that keeps the caret in view.
    let from = head.saturating_sub(80);
    let excerpt: String = text.iter().skip(from).take(160).collect();
    (line, head as u64 + 1, excerpt, (head - from) as u64)
}

/// The location a check's subject (`blueprint byte 21`, `deployment /signatures/0`) names.
pub fn locate(subject: &str, files: &ReconcileFiles) -> Option<JsonLocation> {
    let (artifact, rest) = subject.split_once(' ')?;
    let path = match artifact {
        "blueprint" => &files.blueprint,
        "deployment" => &files.deployment,
        _ => return None,
    };
    let file = path.display().to_string();
    let name = path.file_name().map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
    if let Some(n) = rest.strip_prefix("byte ").and_then(|n| n.trim().parse::<usize>().ok()) {
        let (line, column, excerpt, caret) = match std::fs::read(path) {
            Ok(bytes) => {
                let (l, c, e, k) = line_col(&bytes, n);
                (Some(l), Some(c), Some(e), Some(k))
            }
            Err(_) => (None, None, None, None),
        };
        let text = match (line, column) {
            (Some(l), Some(c)) => format!("{name} line {l}, column {c} (byte {n})"),
            _ => format!("{name} byte {n}"),
        };
        return Some(JsonLocation {
            artifact: artifact.to_owned(),
            file,
            byte: Some(n as u64),
            line,
            column,
            pointer: None,
            excerpt,
            caret,
            text,
        });
    }
    let pointer = rest.split_whitespace().next().filter(|p| p.starts_with('/'))?;
    Some(JsonLocation {
        artifact: artifact.to_owned(),
        file,
        byte: None,
        line: None,
        column: None,
        pointer: Some(pointer.to_owned()),
        excerpt: None,
        caret: None,
        text: format!("{name} at {pointer}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abp_decode_error_points_at_line_column_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let bp = dir.path().join("bp.json");
        std::fs::write(&bp, "{\"a\": 1,\n  \"b\": [1, 2,, 3]}").unwrap();
        let files = ReconcileFiles {
            blueprint: bp.clone(),
            deployment: dir.path().join("dep.json"),
            keys: None,
            host_bounds: None,
            descriptors: None,
        };
        let l = locate("blueprint byte 21", &files).unwrap();
        assert_eq!((l.line, l.column, l.byte), (Some(2), Some(13), Some(21)));
        assert_eq!(l.excerpt.as_deref(), Some("  \"b\": [1, 2,, 3]}"));
        assert_eq!(l.caret, Some(12));
        assert_eq!(l.text, "bp.json line 2, column 13 (byte 21)");
        let p = locate("deployment /signatures/0 kid=x", &files).unwrap();
        assert_eq!((p.pointer.as_deref(), p.line), (Some("/signatures/0"), None));
        assert!(locate("host bounds", &files).is_none());
    }
}
