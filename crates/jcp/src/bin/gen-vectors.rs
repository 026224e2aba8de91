//! Writes `conformance/jcp/v1/core.json` (run from anywhere in the workspace:
//! `cargo run -p jcp --bin gen-vectors`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(jcp::vectors::PATH);
    let text = match jcp::vectors::generate_text() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gen-vectors: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("gen-vectors: creating {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    }
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("gen-vectors: writing {}: {e}", path.display());
        return ExitCode::from(2);
    }
    println!("wrote {}", path.display());
    ExitCode::SUCCESS
}
