"""Runs libtmux-mcp's wait tools for scripts/bench, inside the peer's venv.

Reads one JSON request per line on stdin, runs each as an asyncio task so
many can wait at once, and writes one JSON line per event on stdout:
  {"op": "text", "id": ID, "socket": NAME, "pane": "%3", "pattern": P,
   "timeout": S, "interval": S}
  {"op": "channel", "id": ID, "socket": NAME, "channel": C, "timeout": S}
  {"op": "run", "id": ID, "socket": NAME, "pane": "%3", "command": C, "timeout": S}
    (run_command: one event when it returns, with its exit status and output)
  {"op": "cancel", "id": ID}   (ends that wait: reported as not found)
  {"op": "quit"}
Replies: {"id": ID, "armed": true} once the wait has taken its baseline
(the call has started and its first poll is done: 150 ms after the call),
then {"id": ID, "found": bool, "outcome": str, "mono_ns": N, "real_ns": N}
when the call returns (times taken right after it returns).
"""

import asyncio
import json
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
        if req["op"] == "cancel":
            t = RUNNING.get(req["id"])
            if t is not None:
                t.cancel()
            continue
        ops = {"text": run_text, "channel": run_channel, "run": run_run}
        coro = ops[req["op"]](req)
        t = asyncio.ensure_future(coro)
        tasks.add(t)
        t.add_done_callback(tasks.discard)
    for t in list(tasks):
        t.cancel()


if __name__ == "__main__":
    asyncio.run(main())
