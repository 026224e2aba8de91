#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine and runs JCP Console on its demo workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo run --locked --release -p jcp-cli --bin jcp -- demo "$@"
