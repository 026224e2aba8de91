#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine and runs every test of JCP Console.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# CI builds once from nothing: cargo's incremental cache (4 GB here) buys no
# speed there and costs disk.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi

echo "== front end (ui/): type-check + build (embedded in the app), Vitest with mocked IPC"
npm --prefix ui run build
npm --prefix ui test

echo "== format (rustfmt.toml): every crate formatted as committed"
cargo fmt --all -- --check

echo "== cargo test (every crate, unit + integration + conformance + doc + benches in test mode)"
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked

echo "== clippy (the lints Cargo.toml declares, pedantic included, and missing_docs on the protocol crates: all denied)"
# Shipped code only (libraries and binaries, with every feature: the vector, fuzz and demo generators too);
# tests, benches and fuzz harnesses may unwrap. Functions over 120 lines fail (clippy.toml).
cargo clippy --workspace --lib --bins --all-features --locked -- -D warnings

echo "== end-to-end: the built console (front end embedded) under Xvfb, tauri-driver + WebKitWebDriver"
cargo build --locked -p jcp-console
bash tests/e2e/run.sh

echo "== the Debian package (scripts/package-deb.sh --debug, from the build above): extracted, its layout and desktop entry checked, its jcp run, its console started under Xvfb"
bash tests/e2e/deb.sh

echo "== disk: what the build above left in target/"
du -sh target 2>/dev/null || true
df -h . | tail -1
