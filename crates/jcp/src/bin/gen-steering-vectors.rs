//! Writes `conformance/jcp/v1/steering.json`, the §4.7 (C21) steering vectors
//! (run from anywhere in the workspace: `cargo run -p jcp --bin gen-steering-vectors`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(jcp::steering::vectors::PATH);
    let text = match jcp::steering::vectors::generate_text() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gen-steering-vectors: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("gen-steering-vectors: writing {}: {e}", path.display());
        return ExitCode::from(2);
    }
    println!("wrote {}", path.display());
    ExitCode::SUCCESS
}
