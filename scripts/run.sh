#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine and runs JCP Console on its demo workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "No display (\$DISPLAY and \$WAYLAND_DISPLAY are unset), so the console cannot open; headless, the same views are \`cargo run -p jcp-cli --bin jcp -- meter\` (live energy) and \`cargo run -p jcp-cli --bin jcp -- audit STREAM --json\` (the auditor)."
  exit 0
fi
source scripts/setup.sh
npm --prefix ui run build
cargo build --locked -p jcp-console
# The demo workspace lives under target/ (created and filled on first start).
export JCP_CONSOLE_WORKSPACE="${JCP_CONSOLE_WORKSPACE:-$PWD/target/demo-workspace}"
exec "${CARGO_TARGET_DIR:-target}/debug/jcp-console" "$@"
