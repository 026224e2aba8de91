#!/usr/bin/env bash
# Runs the console's end-to-end test: starts Xvfb (unless a display is set)
# and tauri-driver, prepares CLI-written streams when the audit crate is in
# the build, runs tests/e2e/console.e2e.mjs with Node's test runner, and
# stops what it started. Screenshots land in target/screenshots/.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
APP="$TARGET/debug/jcp-console"
[ -x "$APP" ] || { echo "e2e: $APP is not built (cargo build -p jcp-console)"; exit 2; }
export PATH="$HOME/.cargo/bin:$PATH"
command -v tauri-driver >/dev/null || cargo install tauri-driver --locked
command -v WebKitWebDriver >/dev/null || { echo "e2e: WebKitWebDriver missing (apt-get install webkit2gtk-driver)"; exit 2; }

tmp="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

port=4444
source tests/e2e/desktop.sh
start_desktop "$port"

export JCP_E2E_APP="$APP" JCP_E2E_SHOTS="$PWD/target/screenshots" JCP_E2E_WORKSPACE="$JCP_CONSOLE_WORKSPACE" JCP_E2E_DRIVER="http://127.0.0.1:$port"
if [ -f tests/e2e/streams.sh ]; then
  # shellcheck source=/dev/null
  source tests/e2e/streams.sh "$tmp"
fi
status=0
# JCP_E2E_ONLY=PATTERN runs only the tests whose name matches (while working on one view).
node --test --test-concurrency=1 ${JCP_E2E_ONLY:+--test-name-pattern="$JCP_E2E_ONLY"} tests/e2e/console.e2e.mjs || status=$?
if [ "$status" -ne 0 ]; then echo "--- tauri-driver log"; tail -40 "$tmp/driver.log"; fi
exit "$status"
