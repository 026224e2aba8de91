"""A real MCP server with faults put between it and `jcp gateway`: the
gateway's tests use it where the fault is the point (a server that stops
reading its input, answers a call with garbage, or answers after the
call was given up on). Everything else passes through unchanged, so the
server behind it is the real one from npm.

Usage: faulty_upstream.py SPEC CMD ARGS...

SPEC is JSON:
  "answers": a list, one entry per tools/call answer in the order the
      server gives them (past the list: unchanged):
        "pass"          the server's answer, unchanged
        "result-42"     the answer's result replaced by the number 42
        "not-json"      a line that is not JSON instead of the answer
        "late:S"        the answer held back S seconds
  "stop_reading_after_calls": N   after N tools/call lines were forwarded
      (and their answers given), stop reading the gateway's input for good
  "drop_cancellations": true      notifications/cancelled never reach the server
"""

import json
import subprocess
import sys
import threading
import time


def main():
    spec = json.loads(sys.argv[1])
    server = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    answers = list(spec.get("answers", []))
    stop_after = spec.get("stop_reading_after_calls")
    calls = set()
    answered = [0]
    out_lock = threading.Lock()

    def emit(line):
        with out_lock:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    def from_server():
        for line in server.stdout:
            try:
                v = json.loads(line)
            except ValueError:
                emit(line)
                continue
            if isinstance(v, dict) and "method" not in v and json.dumps(v.get("id")) in calls:
                calls.discard(json.dumps(v.get("id")))
                answered[0] += 1
                fault = answers.pop(0) if answers else "pass"
                if fault == "result-42":
                    v["result"] = 42
                    emit((json.dumps(v) + "\n").encode())
                elif fault == "not-json":
                    emit(b"garbage, not a JSON-RPC message\n")
                elif fault.startswith("late:"):
                    delay = float(fault.split(":", 1)[1])
                    threading.Timer(delay, emit, args=(line,)).start()
                else:
                    emit(line)
            else:
                emit(line)

    threading.Thread(target=from_server, daemon=True).start()
    forwarded = 0
    for line in sys.stdin.buffer:
        try:
            v = json.loads(line)
        except ValueError:
            v = None
        if isinstance(v, dict) and v.get("method") == "notifications/cancelled" and spec.get("drop_cancellations"):
            continue
        if isinstance(v, dict) and v.get("method") == "tools/call":
            calls.add(json.dumps(v.get("id")))
            forwarded += 1
        server.stdin.write(line)
        server.stdin.flush()
        if stop_after is not None and forwarded >= stop_after:
            while answered[0] < forwarded:
                time.sleep(0.01)
            # Never read the input again; the server's output still passes.
            while True:
                time.sleep(3600)
    server.stdin.close()
    server.wait()


main()
