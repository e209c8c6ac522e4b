"""The server of the settings tests (``WIREMCP_SERVER=tests.support.settings_server:server``): tools whose
answers show a setting's effect. ``nap`` runs for a given time (its duration is what
``WIREMCP_SSE_AFTER_SECONDS`` is compared with), ``say`` sends log messages of a given size before it
answers (events for the replay buffer's bounds), ``ask`` asks the client for input (a ``requestState``
in the stateless era)."""

from __future__ import annotations

import asyncio

from wiremcp import Context, MCPServer

SETTINGS_SERVER = f"{__name__}:server"

server = MCPServer("settings-fixture", "1.0.0")


@server.tool()
async def nap(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "rested"


@server.tool()
async def say(count: int, size: int, ctx: Context) -> str:
    """``count`` log messages of ``size`` characters each, then the answer."""
    for i in range(count):
        await ctx.info(f"{i}:" + "x" * size)
    return f"said {count}"


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    result = await ctx.elicit(question, {"type": "object", "properties": {"answer": {"type": "string"}},
                                         "required": ["answer"]})
    return f"{result.action}: {(result.content or {}).get('answer')}"
