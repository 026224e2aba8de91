# Sourced by tests/e2e/run.sh and tests/e2e/bench.sh: the desktop both drive.
# Expects `tmp` (a scratch folder) and `pids` (an array the caller's cleanup
# kills); `start_desktop PORT` starts Xvfb unless a display is set, points the
# console at a scratch workspace, starts tauri-driver on PORT and waits for it.
start_desktop() {
  local port="$1"
  if [ -z "${DISPLAY:-}" ]; then
    local disp=99
    while [ -e "/tmp/.X11-unix/X$disp" ]; do disp=$((disp + 1)); done
    Xvfb ":$disp" -screen 0 1280x860x24 -nolisten tcp >"$tmp/xvfb.log" 2>&1 &
    pids+=($!)
    export DISPLAY=":$disp"
    for _ in $(seq 1 50); do [ -e "/tmp/.X11-unix/X$disp" ] && break; sleep 0.1; done
  fi
  export NO_AT_BRIDGE=1 WEBKIT_DISABLE_COMPOSITING_MODE=1
  export JCP_CONSOLE_WORKSPACE="$tmp/workspace"
  tauri-driver --port "$port" >"$tmp/driver.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/status" >/dev/null 2>&1 && break; sleep 0.1; done
}
