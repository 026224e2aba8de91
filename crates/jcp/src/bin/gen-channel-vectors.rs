//! Writes `conformance/jcp/v1/channel.json`, the §4.5 budget-channel vectors
//! (C17) (run from anywhere in the workspace: `cargo run -p jcp --bin gen-channel-vectors`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(jcp::channel::vectors::PATH);
    let text = match jcp::channel::vectors::generate_text() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gen-channel-vectors: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("gen-channel-vectors: writing {}: {e}", path.display());
        return ExitCode::from(2);
    }
    println!("wrote {}", path.display());
    ExitCode::SUCCESS
}
