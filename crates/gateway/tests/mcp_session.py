"""A scripted agent session through `jcp gateway`, run by the official MCP
Python SDK (`mcp`, pinned in scripts/setup.sh): the client an agent's host
would use. It launches the gateway as its MCP server (stdio), initializes,
and runs the steps given as JSON in argv[1], printing one JSON line per step
to stdout (flushed), so the test driving it can act between steps.

Steps:
  {"list": true}                          -> {"step": i, "tools": [{name, meta}]}, or
                                             {"step": i, "error": {code, message}} where it is refused
  {"call": NAME, "args": {...}}           -> {"step": i, "is_error": b, "text": ..., "meta": {...},
                                              "progress": [messages of the progress notifications it got]}
  {"wait_file": PATH}                     -> waits until PATH exists, then {"step": i, "waited": PATH}
  {"repeat": NAME, "args": {...}, "until_code": CODE, "max": N}
                                          -> calls until a result's _meta "jcp/code" is CODE (at most N
                                             calls): {"step": i, "calls": n, "results": [...]}

argv[2:] is the gateway's command line; or argv[2] alone is the URL of a
gateway already serving MCP over Streamable HTTP (`jcp gateway --listen
http://127.0.0.1:PORT/mcp`), reached with the SDK's `streamable_http_client`.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def out(v):
    sys.stdout.write(json.dumps(v) + "\n")
    sys.stdout.flush()


def text_of(result):
    parts = []
    for c in result.content or []:
        t = getattr(c, "text", None)
        if t is not None:
            parts.append(t)
    return "\n".join(parts)


def meta_of(obj):
    m = getattr(obj, "meta", None)
    if m is None:
        return None
    if hasattr(m, "model_dump"):
        return m.model_dump(by_alias=True, exclude_none=True)
    return dict(m)


def transport():
    cmd = sys.argv[2:]
    if len(cmd) == 1 and cmd[0].startswith("http://"):
        return streamable_http_client(cmd[0])
    return stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ)))


async def main():
    steps = json.loads(sys.argv[1])
    async with transport() as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out({"initialized": init.server_info.name})
            for i, s in enumerate(steps):
                if s.get("list"):
                    try:
                        r = await session.list_tools()
                    except MCPError as e:
                        out({"step": i, "error": {"code": e.error.code, "message": e.error.message}})
                        continue
                    out({"step": i, "tools": [{"name": t.name, "meta": meta_of(t)} for t in r.tools]})
                elif "call" in s:
                    seen = []

                    async def on_progress(progress, total, message, seen=seen):
                        seen.append(message)

                    r = await session.call_tool(s["call"], s.get("args") or {}, progress_callback=on_progress)
                    out({"step": i, "is_error": bool(r.is_error), "text": text_of(r), "meta": meta_of(r),
                         "progress": seen})
                elif "repeat" in s:
                    results = []
                    for _ in range(s["max"]):
                        r = await session.call_tool(s["repeat"], s.get("args") or {})
                        results.append({"is_error": bool(r.is_error), "text": text_of(r), "meta": meta_of(r)})
                        if (meta_of(r) or {}).get("jcp/code") == s["until_code"]:
                            break
                    out({"step": i, "calls": len(results), "results": results})
                elif "wait_file" in s:
                    while not os.path.exists(s["wait_file"]):
                        await asyncio.sleep(0.05)
                    out({"step": i, "waited": s["wait_file"]})
    out({"closed": True})


asyncio.run(main())
