"""The server of the rolling-upgrade run and the soak (``WIREMCP_SERVER=tests.support.rolling_server:server``):
``tests/e2e/test_rolling_upgrade.py``, ``tests/e2e/test_soak.py``, ``bench/soak.py``, driven by
``bench/rolling_load.py``.

- ``echo``: answers at once (application/json);
- ``slow``: ``steps`` progress notifications (1..steps, if the request carries a ``progressToken``), one
  every ``interval_ms``, then the answer: an SSE response that is under way when a replica starts draining;
- ``touch(uri)``: ``notifications/resources/updated`` for ``uri`` to whoever is subscribed to it (a
  handshake-era session's GET stream, a stateless ``subscriptions/listen`` stream), on any replica; it answers
  with the replica's ``WIREMCP_REPLICA_ID``;
- ``rolling://watch/{name}``: the resources the clients subscribe to, one per client;
- ``job``: runs ``ms`` milliseconds, as a task when the client asks for one (2025-11-25 ``params.task``) or
  declares the tasks extension (2026-07-28).

Every handler's wait is work being simulated, never a wait for something else to happen.
"""

from __future__ import annotations

import asyncio
import os

from wiremcp import Context, MCPServer

SERVER = f"{__name__}:server"
"""This server as a spec, for ``uvicorn app:asgi``."""
WATCH = "rolling://watch/{name}"

server = MCPServer("rolling", "1.0.0", title="Rolling-upgrade fixtures")


@server.tool()
def echo(text: str) -> str:
    """Answer at once."""
    return text


@server.tool()
async def slow(steps: int, ctx: Context, interval_ms: int = 150) -> str:
    """Report progress 1..steps, one step every ``interval_ms``, then answer."""
    for step in range(1, steps + 1):
        await asyncio.sleep(interval_ms / 1000)  # the simulated work of one step
        await ctx.report_progress(step, steps, f"step {step}")
    return f"slow: {steps} steps"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tell every subscriber of ``uri`` that it changed; say which replica did."""
    ctx.server.resource_updated(uri)
    return f"touched {uri} on {os.environ.get('WIREMCP_REPLICA_ID', '?')}"


@server.resource(WATCH, name="watch", mime_type="text/plain")
def watch(name: str) -> str:
    """One resource per client, to subscribe to."""
    return f"watch {name}"


@server.tool(task_support="optional")
async def job(ms: int) -> str:
    """Work for ``ms`` milliseconds; a task when the client takes one."""
    await asyncio.sleep(ms / 1000)  # the simulated work
    return f"job: {ms} ms"
