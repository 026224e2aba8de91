//! Builds the shell: checks the front end was built, then lets tauri-build
//! read `tauri.conf.json` and the app's own command permissions.

include!("command_names.rs");

fn main() {
    println!("cargo:rerun-if-changed=src-tauri/command_names.rs");
    // The front end is embedded at compile time (custom-protocol); say how to
    // build it instead of failing deep inside tauri's codegen.
    let dist = std::path::Path::new("ui/dist/index.html");
    println!("cargo:rerun-if-changed=ui/dist");
    if !dist.exists() {
        println!(
            "cargo:warning=ui/dist is missing: build the front end first with `npm --prefix ui ci && npm --prefix ui run build` (scripts/run.sh and scripts/test.sh do this)"
        );
    }
    let attrs = tauri_build::Attributes::new()
        .capabilities_path_pattern("./src-tauri/capabilities/**/*")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(e) = tauri_build::try_build(attrs) {
        println!("cargo:warning=tauri-build failed: {e:#}");
        std::process::exit(1);
    }
}
