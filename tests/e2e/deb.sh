#!/usr/bin/env bash
# Runs the Debian package test (tests/e2e/deb.e2e.mjs): builds the package
# from the debug build the e2e suite uses (scripts/package-deb.sh --debug, so
# no release build), then extracts it, checks its layout and desktop entry,
# runs its `jcp --version` and starts its console under a private Xvfb.
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
deb="$(bash scripts/package-deb.sh --debug | tail -1)"
echo "deb: built $deb in $(($(date +%s) - t0)) s"
JCP_DEB="$deb" node --test --test-concurrency=1 tests/e2e/deb.e2e.mjs
