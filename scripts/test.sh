#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine and runs every test of JCP Console.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

echo "== cargo test (every crate, unit + integration + conformance + doc + benches in test mode)"
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked

echo "== clippy (denied lints: unwrap/expect/panic outside tests, unsafe code)"
cargo clippy --workspace --all-targets --locked -- -A warnings -D clippy::unwrap_used -D clippy::expect_used -D clippy::panic
