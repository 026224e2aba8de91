//! Writes `conformance/jcp/v1/channel.json`, the §4.5 budget-channel vectors (C17)
//! (run from anywhere in the workspace: `cargo run -p jcp --features vectors --bin gen-channel-vectors`).

fn main() -> std::process::ExitCode {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    jcp::vectors::write_published(
        "gen-channel-vectors",
        &root,
        jcp::channel::vectors::PATH,
        jcp::channel::vectors::generate_text(),
    )
}
