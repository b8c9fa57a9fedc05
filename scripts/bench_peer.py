"""Runs libtmux-mcp's wait tools for scripts/bench, inside the peer's venv.

Reads one JSON request per line on stdin, runs each as an asyncio task so
many can wait at once, and writes one JSON line per event on stdout:
  {"op": "text", "id": ID, "socket": NAME, "pane": "%3", "pattern": P,
   "timeout": S, "interval": S}
  {"op": "channel", "id": ID, "socket": NAME, "channel": C, "timeout": S}
  {"op": "run", "id": ID, "socket": NAME, "pane": "%3", "command": C, "timeout": S}
    (run_command: one event when it returns, with its exit status and output)
  {"op": "cancel", "id": ID}   (ends that wait: reported as not found)
  {"op": "mcp_open", "id": ID, "name": N, "command": [ARGV...], "env": {...}}
    (starts an MCP server over stdio and keeps one client session to it
    open under the name N: the Python `mcp` package's ClientSession, the
    same client for every server; replies {"id": ID, "opened": true})
  {"op": "mcp_text", "id": ID, "name": N, "socket": NAME, "pane": "%3",
   "pattern": P, "timeout": S}
    (calls the tool wait_for_text of server N with libtmux-mcp's
    arguments; events as for "text", the time taken when call_tool returns)
  {"op": "quit"}
Replies: {"id": ID, "armed": true} once the wait has taken its baseline
(the call has started and its first poll is done: 150 ms after the call),
then {"id": ID, "found": bool, "outcome": str, "mono_ns": N, "real_ns": N}
when the call returns (times taken right after it returns).
"""

import asyncio
import json
import os
import sys
import threading
import time

from libtmux_mcp.tools.pane_tools.io import run_command
from libtmux_mcp.tools.pane_tools.wait import wait_for_text
from libtmux_mcp.tools.wait_for_tools import wait_for_channel

ARM_DELAY = 0.15


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


RUNNING = {}


async def finish(req, task):
    RUNNING[req["id"]] = task
    try:
        r = await task
        found, outcome = bool(getattr(r, "found", True)), str(getattr(r, "outcome", "signalled"))
    except asyncio.CancelledError:
        found, outcome = False, "cancelled"
    except Exception as e:  # the peer raises on some conditions
        found, outcome = False, "error: %s" % e
    RUNNING.pop(req["id"], None)
    emit({"id": req["id"], "found": found, "outcome": outcome,
          "mono_ns": time.monotonic_ns(), "real_ns": time.time_ns()})


async def run_text(req):
    task = asyncio.ensure_future(wait_for_text(
        patterns=[req["pattern"]], pane_id=req["pane"], socket_name=req["socket"],
        timeout=req["timeout"], interval=req.get("interval", 0.05)))
    RUNNING[req["id"]] = task
    await asyncio.sleep(ARM_DELAY)
    emit({"id": req["id"], "armed": True})
    await finish(req, task)


async def run_channel(req):
    task = asyncio.ensure_future(wait_for_channel(
        req["channel"], timeout=req["timeout"], socket_name=req["socket"]))
    RUNNING[req["id"]] = task
    await asyncio.sleep(ARM_DELAY)
    emit({"id": req["id"], "armed": True})
    await finish(req, task)


async def run_run(req):
    t0 = time.monotonic_ns()
    try:
        r = await run_command(req["command"], pane_id=req["pane"], socket_name=req["socket"],
                              timeout=req["timeout"])
        status, output = r.exit_status, list(r.output)
    except Exception as e:  # the peer raises on some conditions
        status, output = None, ["error: %s" % e]
    emit({"id": req["id"], "found": True, "outcome": "run", "start_ns": t0,
          "mono_ns": time.monotonic_ns(), "exit_status": status, "output": output})


MCP = {}


async def mcp_open(req):
    """Open a client session to an MCP server and keep it until quit."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    ready = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def hold():
        params = StdioServerParameters(command=req["command"][0], args=req["command"][1:],
                                       env=req.get("env") or {})
        try:
            with open(os.devnull, "w") as errlog:
                async with stdio_client(params, errlog=errlog) as (r, w):
                    async with ClientSession(r, w) as session:
                        await session.initialize()
                        ready.set_result(session)
                        await done.wait()
        except Exception as e:  # reported to the bench, which stops
            if not ready.done():
                ready.set_exception(e)

    task = asyncio.ensure_future(hold())
    try:
        session = await ready
    except Exception as e:
        emit({"id": req["id"], "opened": False, "error": str(e)})
        return
    MCP[req["name"]] = (session, done, task)
    emit({"id": req["id"], "opened": True})


async def mcp_close_all():
    for session, done, task in MCP.values():
        done.set()
        try:
            await asyncio.wait_for(task, 10)
        except (asyncio.TimeoutError, Exception):
            task.cancel()
    MCP.clear()


async def run_mcp_text(req):
    session = MCP[req["name"]][0]

    async def call():
        r = await session.call_tool("wait_for_text", {
            "patterns": [req["pattern"]], "pane_id": req["pane"],
            "socket_name": req["socket"], "timeout": req["timeout"]})
        return MCPResult(r)

    task = asyncio.ensure_future(call())
    RUNNING[req["id"]] = task
    await asyncio.sleep(req.get("arm_delay", ARM_DELAY))
    emit({"id": req["id"], "armed": True})
    await finish(req, task)


class MCPResult:
    """A tool result as `finish` reads the in-process ones."""

    def __init__(self, r):
        s = r.structured_content or {}
        self.found = bool(s.get("found")) and not r.is_error
        self.outcome = s.get("outcome") or (s.get("error") or {}).get("kind") or "error"


async def main():
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    def reader():
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=reader, daemon=True).start()
    tasks = set()
    emit({"ready": True})
    while True:
        line = await queue.get()
        if line is None:
            break
        req = json.loads(line)
        if req["op"] == "quit":
            break
        if req["op"] == "mcp_open":
            await mcp_open(req)
            continue
        if req["op"] == "cancel":
            t = RUNNING.get(req["id"])
            if t is not None:
                t.cancel()
            continue
        ops = {"text": run_text, "channel": run_channel, "run": run_run,
               "mcp_text": run_mcp_text}
        coro = ops[req["op"]](req)
        t = asyncio.ensure_future(coro)
        tasks.add(t)
        t.add_done_callback(tasks.discard)
    for t in list(tasks):
        t.cancel()
    await mcp_close_all()


if __name__ == "__main__":
    asyncio.run(main())
