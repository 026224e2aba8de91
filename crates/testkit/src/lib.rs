//! Test-only helpers. Not part of any shipped binary.
//!
//! Published interop data lives in `../shared/interop/` beside the repository
//! (never copied into it). A test that needs it fails, never skips, when it is
//! missing: under CI (`CI=true`) that is required, and locally a silent skip
//! would turn a missing folder into a green run.

use std::path::{Path, PathBuf};

/// The repository root (the workspace directory).
///
/// # Panics
/// When this crate is not two levels below the root (`crates/testkit`).
#[allow(
    clippy::expect_used,
    reason = "a test helper: a missing fixture or a failed command fails the test that asked for it"
)]
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/testkit sits two levels below the root")
        .to_path_buf()
}

/// `../shared/interop/<rel>` beside the repository.
///
/// # Panics
/// With a clear message when the folder or the file is missing.
pub fn interop(rel: &str) -> PathBuf {
    let base = repo_root().join("..").join("shared").join("interop");
    assert!(
        base.is_dir(),
        "interop data not found at {} (tests read ../shared/interop beside the repository; CI={})",
        base.display(),
        std::env::var("CI").unwrap_or_default()
    );
    let p = base.join(rel);
    assert!(p.exists(), "interop file missing: {}", p.display());
    p
}

/// Reads and parses a JSON file under `../shared/interop/`.
///
/// # Panics
/// When the file is missing, unreadable or not JSON.
#[allow(
    clippy::panic,
    reason = "a test helper: a missing fixture or a failed command fails the test that asked for it"
)]
pub fn interop_json(rel: &str) -> serde_json::Value {
    let p = interop(rel);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", p.display()))
}

/// A file under the repository's own `conformance/` folder.
pub fn conformance(rel: &str) -> PathBuf {
    repo_root().join("conformance").join(rel)
}

/// Runs `bin` (a CLI test passes `env!("CARGO_BIN_EXE_jcp")`) in `dir` with `args`.
///
/// # Panics
/// When `bin` cannot be started.
#[allow(
    clippy::panic,
    reason = "a test helper: a missing fixture or a failed command fails the test that asked for it"
)]
pub fn run_in(bin: &str, dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(bin)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("starting {bin}: {e}"))
}

/// [`run_in`], which must succeed: its stdout.
///
/// # Panics
/// When the command fails or its stdout is not UTF-8.
#[allow(
    clippy::panic,
    reason = "a test helper: a missing fixture or a failed command fails the test that asked for it"
)]
pub fn run_ok(bin: &str, dir: &Path, args: &[&str]) -> String {
    let o = run_in(bin, dir, args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap_or_else(|e| panic!("{args:?}: stdout is not UTF-8: {e}"))
}
