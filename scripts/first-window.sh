#!/usr/bin/env bash
# Measures issue 38's "first window within 10 minutes of a fresh clone":
# clones this repository (its committed HEAD, or REV) into a scratch folder,
# runs `bash scripts/run.sh` there under a private Xvfb with CARGO_TARGET_DIR
# unset (so it builds everything in the clone's own target/), and prints the
# seconds from the clone's start to a window named "JCP Console" on that
# display, with the load average sampled every 15 s meanwhile and the CPU
# time run.sh's commands took (user + system, children waited for: the
# build's compilers included), which other work on the machine changes less.
#
#   bash scripts/first-window.sh [REV]     e.g. REV=HEAD~3 for a baseline
#
# Needs Xvfb and xwininfo (x11-utils). The clone is deleted afterwards unless
# JCP_KEEP_CLONE=1 (then its path is printed). Output: one JSON line.
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-HEAD}"
command -v Xvfb >/dev/null || { echo "first-window: Xvfb missing (apt-get install xvfb)" >&2; exit 2; }
command -v xwininfo >/dev/null || { echo "first-window: xwininfo missing (apt-get install x11-utils)" >&2; exit 2; }

src="$PWD"
clone="$(mktemp -d /tmp/jcp-first-window.XXXXXX)"
log="$clone.log"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "${JCP_KEEP_CLONE:-0}" != 1 ]; then rm -rf "$clone"; fi
}
trap cleanup EXIT

disp=97
while [ -e "/tmp/.X11-unix/X$disp" ]; do disp=$((disp + 1)); done
Xvfb ":$disp" -screen 0 1280x860x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [ -e "/tmp/.X11-unix/X$disp" ] && break; sleep 0.1; done

loads=()
t0=$(date +%s)
git clone -q "$src" "$clone/repo"
git -C "$clone/repo" checkout -q "$(git rev-parse "$rev")"
(
  cd "$clone/repo"
  unset CARGO_TARGET_DIR
  export DISPLAY=":$disp" NO_AT_BRIDGE=1
  exec setsid bash scripts/run.sh
) >"$log" 2>&1 &
run_pid=$!
pids+=("$run_pid")

found=""
last_sample=0
cpu_ticks=0
while kill -0 "$run_pid" 2>/dev/null; do
  # cutime + cstime of run.sh's process (kept across its exec of the console).
  t="$(awk '{print $16 + $17}' "/proc/$run_pid/stat" 2>/dev/null || true)"
  [ -n "$t" ] && cpu_ticks="$t"
  now=$(date +%s)
  if [ $((now - last_sample)) -ge 15 ]; then
    loads+=("$(cut -d' ' -f1 /proc/loadavg)")
    last_sample=$now
  fi
  if DISPLAY=":$disp" xwininfo -root -tree 2>/dev/null | grep -q '"JCP Console"'; then
    found=$now
    break
  fi
  sleep 1
done
# Stop the console and whatever run.sh left (its own session).
kill -- -"$run_pid" 2>/dev/null || true

if [ -z "$found" ]; then
  echo "first-window: no window appeared; run.sh's log: $log" >&2
  tail -20 "$log" >&2
  exit 1
fi
loads_json="$(printf '%s\n' "${loads[@]}" | paste -sd, -)"
mean="$(printf '%s\n' "${loads[@]}" | awk '{s+=$1} END {printf "%.2f", s/NR}')"
cpu_s=$((cpu_ticks / $(getconf CLK_TCK)))
echo "{\"rev\":\"$(git rev-parse --short "$rev")\",\"seconds_to_first_window\":$((found - t0)),\"cpu_seconds\":$cpu_s,\"load1_mean\":$mean,\"load1_samples\":[$loads_json],\"log\":\"$log\"}"
