#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine and runs every test of JCP Console.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

echo "== front end (ui/): type-check + build (embedded in the app), Vitest with mocked IPC"
npm --prefix ui run build
npm --prefix ui test

echo "== format (rustfmt.toml): every crate formatted as committed"
cargo fmt --all -- --check

echo "== cargo test (every crate, unit + integration + conformance + doc + benches in test mode)"
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked

echo "== clippy (denied lints: unwrap/expect/panic outside tests, unsafe code)"
# Shipped code only (libraries and binaries): tests, benches and fuzz harnesses may unwrap.
cargo clippy --workspace --lib --bins --locked -- -A warnings -D clippy::unwrap_used -D clippy::expect_used -D clippy::panic

echo "== end-to-end: the built console (front end embedded) under Xvfb, tauri-driver + WebKitWebDriver"
cargo build --locked -p jcp-console
bash tests/e2e/run.sh
