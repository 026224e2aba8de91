//! Writes `conformance/jcp/v1/standing.json`, the §4.6 (C20) standing-grant
//! vectors (run from anywhere in the workspace: `cargo run -p jcp --features vectors --bin gen-standing-vectors`).

fn main() -> std::process::ExitCode {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    jcp::vectors::write_published(
        "gen-standing-vectors",
        &root,
        jcp::standing::vectors::PATH,
        jcp::standing::vectors::generate_text(),
    )
}
