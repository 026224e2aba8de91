#!/usr/bin/env bash
# The console's large-stream benchmark (issue 7, "Speed"): the real built app
# (release) under Xvfb, driven by tauri-driver, auditing one generated
# stream of $JCP_BENCH_RECEIPTS receipts (default 1,000,000) against
# `jcp audit` (release) on the same file, measured in the same run.
#
#   bash tests/e2e/bench.sh            # results: target/bench/console-bench.json
#
# Not part of the test command (it takes minutes); docs/performance.md quotes it.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
N="${JCP_BENCH_RECEIPTS:-1000000}"
OUT="$TARGET/bench"
mkdir -p "$OUT"
export PATH="$HOME/.cargo/bin:$PATH"
command -v tauri-driver >/dev/null || cargo install tauri-driver --locked
command -v WebKitWebDriver >/dev/null || { echo "bench: WebKitWebDriver missing (apt-get install webkit2gtk-driver)"; exit 2; }

npm --prefix ui run build >/dev/null
cargo build --release --locked -q -p jcp-cli --bin jcp
cargo build --release --locked -q -p jcp-console
JCP="$TARGET/release/jcp"
APP="$TARGET/release/jcp-console"

STREAM="$OUT/console-bench-$N.jcps"
if [ ! -f "$STREAM.ok" ] || [ ! -f "$STREAM" ]; then
  echo "bench: generating $STREAM ($N receipts; cached for later runs)"
  "$JCP" stream demo "$STREAM" --receipts "$N" --seed 11 --fast
  touch "$STREAM.ok"
fi

tmp="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

# The CLI first: wall time and peak RSS of `jcp audit --json` (exit 1 = findings).
/usr/bin/time -f '%e %M' -o "$tmp/cli.time" "$JCP" audit "$STREAM" --json >"$OUT/console-bench-cli.json" || [ $? -eq 1 ]
read -r cli_s cli_kib <"$tmp/cli.time"
echo "bench: jcp audit took $cli_s s, peak RSS $cli_kib KiB"

port=4455
source tests/e2e/desktop.sh
start_desktop "$port"

JCP_BENCH_APP="$APP" JCP_BENCH_DRIVER="http://127.0.0.1:$port" JCP_BENCH_STREAM="$STREAM" \
  JCP_BENCH_CLI_S="$cli_s" JCP_BENCH_CLI_KIB="$cli_kib" JCP_BENCH_CLI_JSON="$OUT/console-bench-cli.json" \
  JCP_BENCH_OUT="$OUT/console-bench.json" JCP_BENCH_SHOT="$OUT/console-bench.png" \
  node tests/e2e/bench.mjs
