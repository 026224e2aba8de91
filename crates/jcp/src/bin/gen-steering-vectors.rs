//! Writes `conformance/jcp/v1/steering.json`, the §4.7 (C21) steering vectors
//! (run from anywhere in the workspace: `cargo run -p jcp --features vectors --bin gen-steering-vectors`).

fn main() -> std::process::ExitCode {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    jcp::vectors::write_published(
        "gen-steering-vectors",
        &root,
        jcp::steering::vectors::PATH,
        jcp::steering::vectors::generate_text(),
    )
}
