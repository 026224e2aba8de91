#!/usr/bin/env bash
# Builds JCP Console's Debian package with the Tauri bundler: the console as
# /usr/bin/jcp-console, the `jcp` command beside it as /usr/bin/jcp (the
# Steward view starts `jcp agent demo` and looks for `jcp` next to its own
# executable, crates/supervise/src/binary.rs), a desktop entry and the icons.
#
#   bash scripts/package-deb.sh           the `desktop` profile (what scripts/run.sh builds)
#   bash scripts/package-deb.sh --debug   the debug build (what scripts/test.sh's e2e suite builds)
#
# The package lands in ${CARGO_TARGET_DIR:-target}/desktop/ (or debug/) as
# jcp-console_<version>_<arch>.deb; its path is the last line printed.
# Install it with `sudo apt install ./target/desktop/jcp-console_0.1.0_amd64.deb`.
#
# tauri.conf.json keeps `bundle.active` false, so plain builds stay un-bundled:
# this script turns bundling on for one `tauri bundle --bundles deb` run with
# a --config override (which also names the `jcp` binary to ship). It builds
# with cargo itself and bundles what it built: `tauri bundle` reuses the
# compiled binaries (only the release and debug folders are known to it, so
# the two binaries are staged in a folder of their own, which also keeps the
# bundler's in-place patch of the binary off cargo's outputs).
set -euo pipefail
cd "$(dirname "$0")/.."
# Progress to stderr; stdout gets the package's path alone.
exec 3>&1 1>&2

profile=desktop
case "${1:-}" in
  "") ;;
  --debug) profile=dev ;;
  *) echo "usage: bash scripts/package-deb.sh [--debug]" >&2; exit 2 ;;
esac
if [ "$profile" = dev ]; then out_dir=debug; tauri_dir=debug; tauri_flag=(--debug)
else out_dir=desktop; tauri_dir=release; tauri_flag=(); fi

command -v dpkg-deb >/dev/null || { echo "package-deb: dpkg-deb missing (apt-get install dpkg)" >&2; exit 2; }
tauri=ui/node_modules/.bin/tauri
if [ ! -x "$tauri" ]; then npm --prefix ui ci --no-audit --no-fund; fi

target="$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"

# The front end is embedded in the console at compile time; built again only
# when its sources changed (a new ui/dist makes cargo build the console again).
if [ ! -f ui/dist/index.html ] || [ -n "$(find ui/src ui/index.html ui/package.json ui/vite.config.ts -newer ui/dist/index.html -print -quit)" ]; then
  npm --prefix ui run build
fi
# Built as the script that built them before builds them (the same features,
# so nothing is built again): scripts/test.sh's e2e suite builds the debug
# console and `jcp` separately, scripts/run.sh the desktop ones together.
if [ "$profile" = dev ]; then
  cargo build --locked -p jcp-console
  cargo build --locked -p jcp-cli --bin jcp
else
  cargo build --profile desktop --locked -p jcp-console -p jcp-cli
fi

stage="$target/deb-stage"
rm -rf "$stage"
mkdir -p "$stage/$tauri_dir"
cp "$target/$out_dir/jcp-console" "$target/$out_dir/jcp" "$stage/$tauri_dir/"
# No debug info in the package (the debug build's is most of its size).
strip --strip-debug "$stage/$tauri_dir/jcp-console" "$stage/$tauri_dir/jcp"

override="$(python3 - "$stage/$tauri_dir/jcp" <<'EOF'
import json, sys
print(json.dumps({"bundle": {"active": True, "linux": {"deb": {"files": {"/usr/bin/jcp": sys.argv[1]}}}}}))
EOF
)"
CARGO_TARGET_DIR="$stage" "$tauri" bundle --ci "${tauri_flag[@]}" --bundles deb --config "$override"

built=("$stage/$tauri_dir"/bundle/deb/*.deb)
[ "${#built[@]}" -eq 1 ] && [ -f "${built[0]}" ] || { echo "package-deb: expected one .deb under $stage/$tauri_dir/bundle/deb" >&2; exit 1; }
name="$(dpkg-deb -f "${built[0]}" Package)_$(dpkg-deb -f "${built[0]}" Version)_$(dpkg-deb -f "${built[0]}" Architecture).deb"
mv "${built[0]}" "$target/$out_dir/$name"
rm -rf "$stage"
echo "$target/$out_dir/$name" >&3
