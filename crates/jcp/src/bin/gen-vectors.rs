//! Writes `conformance/jcp/v1/core.json`, the core vectors (grants, chains, revocations, decisions)
//! (run from anywhere in the workspace: `cargo run -p jcp --features vectors --bin gen-vectors`).

fn main() -> std::process::ExitCode {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    jcp::vectors::write_published("gen-vectors", &root, jcp::vectors::PATH, jcp::vectors::generate_text())
}
