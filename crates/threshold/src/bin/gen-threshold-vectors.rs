//! Writes `conformance/jcp/v1/threshold.json` (run from anywhere in the
//! workspace: `cargo run -p jcp-threshold --features vectors --bin gen-threshold-vectors`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(jcp_threshold::vectors::PATH);
    let text = match jcp_threshold::vectors::generate_text() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gen-threshold-vectors: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("gen-threshold-vectors: writing {}: {e}", path.display());
        return ExitCode::from(2);
    }
    println!("wrote {}", path.display());
    ExitCode::SUCCESS
}
