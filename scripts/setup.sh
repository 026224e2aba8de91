#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test JCP Console.
# Sourced by scripts/run.sh and scripts/test.sh; safe to run again (it only
# installs what is missing).
set -euo pipefail

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
have_pkg prometheus || need_apt+=(prometheus)
# GNU parallel runs the README's fleet-audit recipe in the CLI tests (crates/cli/tests/fleet.rs).
have_pkg parallel || need_apt+=(parallel)
# Node (>= 18) builds and unit-tests the front end in ui/.
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
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

# The front end's packages (ui/package-lock.json pins them).
if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  npm --prefix ui ci --no-audit --no-fund
fi
