#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test JCP Console.
# Sourced by scripts/run.sh and scripts/test.sh; safe to run again (it only
# installs what is missing). With JCP_SETUP_FOR=run (scripts/run.sh) it skips
# what only the tests use (Prometheus, GNU parallel, the gateway tests' MCP
# servers and Python SDK), so a fresh clone reaches its first window sooner.
set -euo pipefail
for_tests=1; [ "${JCP_SETUP_FOR:-test}" = run ] && for_tests=0

need_apt=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in build-essential pkg-config curl ca-certificates; do
  have_pkg "$p" || need_apt+=("$p")
done
# The desktop console (Tauri 2 on WebKitGTK) and its end-to-end test
# (WebKitWebDriver under Xvfb, screenshots with ImageMagick).
for p in libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libxdo-dev libssl-dev \
         webkit2gtk-driver xvfb imagemagick xauth; do
  have_pkg "$p" || need_apt+=("$p")
done
# The metrics integration test (crates/cli/tests/metrics.rs) scrapes
# `jcp meter serve` and `jcp serve --metrics` with a real Prometheus.
if [ "$for_tests" = 1 ]; then
  have_pkg prometheus || need_apt+=(prometheus)
  # GNU parallel runs the README's fleet-audit recipe in the CLI tests (crates/cli/tests/fleet.rs).
  have_pkg parallel || need_apt+=(parallel)
  # The package test (tests/e2e/deb.sh) looks for the installed console's window with xwininfo.
  have_pkg x11-utils || need_apt+=(x11-utils)
  # The end-to-end test chooses files in the console's real native dialog (issue 34: the window
  # names files only by handles Rust gives for what was chosen there), typing into it with xdotool.
  have_pkg xdotool || need_apt+=(xdotool)
fi
# Node (>= 18) builds and unit-tests the front end in ui/.
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
# Python 3 runs the official MCP SDK client in the gateway tests (below).
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
if [ "${#need_apt[@]}" -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy --component rustfmt
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi

# The format check (scripts/test.sh) needs rustfmt, clippy the lint gate.
for c in rustfmt clippy; do
  if ! cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1 && command -v rustup >/dev/null 2>&1; then
    rustup component add "$c"
  fi
done

# `jcp gateway`'s tests (crates/cli/tests/gateway.rs) use real parts nobody
# here wrote: MCP servers from npm (crates/gateway/tests/npm/package-lock.json
# pins them) behind the gateway, and the official MCP Python SDK (`mcp`,
# pinned below, in a virtual environment of its own) as the agent's client.
if [ "$for_tests" = 1 ]; then
  if [ ! -d crates/gateway/tests/npm/node_modules ] || [ crates/gateway/tests/npm/package-lock.json -nt crates/gateway/tests/npm/node_modules/.package-lock.json ]; then
    npm --prefix crates/gateway/tests/npm ci --no-audit --no-fund
  fi
  MCP_PY=crates/gateway/tests/.venv/bin/python
  if ! "$MCP_PY" -c 'import mcp' >/dev/null 2>&1; then
    if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get update -q
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q python3-venv
    fi
    rm -rf crates/gateway/tests/.venv
    python3 -m venv crates/gateway/tests/.venv
    "$MCP_PY" -m pip install --quiet --disable-pip-version-check 'mcp==2.3.0'
  fi
fi

# The front end's packages (ui/package-lock.json pins them).
if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  npm --prefix ui ci --no-audit --no-fund
fi
