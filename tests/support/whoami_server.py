"""An upstream that says who calls it (``whoami``: the caller's principal as this server verified it), for the
tests of a gateway that calls with the caller's own token; ``hold`` runs as a task (its caller's, here too) until
cancelled, and ``outcome`` says how it ended. Served behind static tokens."""

from __future__ import annotations

import asyncio

from wiremcp import Context, MCPServer

server = MCPServer("whoami", "1.0.0")

TOKENS = "gateway-token=gateway,alice-at-upstream=alice,bob-at-upstream=bob"
"""Its ``WIREMCP_AUTH_STATIC_TOKENS``: the gateway's own token (to list with), and each person's."""


@server.tool()
async def whoami(ctx: Context) -> str:
    """The subject of the token this call came with."""
    return str(getattr(ctx.principal, "subject", None))


_ended: dict[str, asyncio.Queue[str]] = {}


def _outcomes(name: str) -> asyncio.Queue[str]:
    return _ended.setdefault(name, asyncio.Queue())


@server.tool(task_support="optional")
async def hold(name: str) -> str:
    """Wait until cancelled, then say so to ``outcome(name)``."""
    try:
        await asyncio.Event().wait()
    finally:
        _outcomes(name).put_nowait("cancelled")
    return "never"


@server.tool()
async def outcome(name: str) -> str:
    """Once ``hold(name)`` has ended: how."""
    return await _outcomes(name).get()
