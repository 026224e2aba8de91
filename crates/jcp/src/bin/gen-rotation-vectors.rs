//! Writes `conformance/jcp/v1/rotation.json`, the §2.1 (C12) rotation vectors
//! (run from anywhere in the workspace: `cargo run -p jcp --features vectors --bin gen-rotation-vectors`).

fn main() -> std::process::ExitCode {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    jcp::vectors::write_published(
        "gen-rotation-vectors",
        &root,
        jcp::rotation::vectors::PATH,
        jcp::rotation::vectors::generate_text(),
    )
}
