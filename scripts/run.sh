#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine and runs JCP Console on its demo workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "No display (\$DISPLAY and \$WAYLAND_DISPLAY are unset), so the console cannot open. Headless, the same views are the jcp command: \`cargo run --release -p jcp-cli --bin jcp -- meter\` (live energy), \`... -- audit STREAM --json\` (the auditor), \`... -- run verify RUN.jcprun --json\` (a steered run), \`... -- blueprint reconcile ...\` (a blueprint)."
  exit 0
fi
# Only what building and running the console needs (not the test suite's tools).
JCP_SETUP_FOR=run source scripts/setup.sh
npm --prefix ui run build
# The `desktop` profile (Cargo.toml): release without debug info, the crypto
# crates and the audit path (jcp, jcp-receipt, jcp-audit) at opt-level 3, the
# rest unoptimised, so the console audits million-receipt streams in-process
# at release speed and a fresh clone shows its first window within minutes
# on 2 cores (docs/performance.md). The Steward view's demo long run starts
# `jcp agent demo` as a child: built beside the console, where the console
# looks for it.
cargo build --profile desktop --locked -p jcp-console -p jcp-cli
# The demo workspace lives under target/ (created and filled on first start).
export JCP_CONSOLE_WORKSPACE="${JCP_CONSOLE_WORKSPACE:-$PWD/target/demo-workspace}"
exec "${CARGO_TARGET_DIR:-target}/desktop/jcp-console" "$@"
