"""The server of the settings tests (``WIREMCP_SERVER=tests.support.settings_server:server`` for
``uvicorn app:asgi``, or ``wiremcp stdio tests.support.settings_server:server``): tools whose answers show a
setting's effect. ``nap`` runs for a given time without a word (its duration is what
``WIREMCP_SSE_AFTER_SECONDS`` is compared with), ``pause`` says it started and then runs for a given time
(a call in flight for the stdio drain), ``say`` sends log messages of a given size before it answers
(events for the replay buffer's bounds), ``ask`` asks the client for input (a ``requestState`` in the
stateless era), ``echo`` answers at once. It writes nothing to stderr itself: what is there is the
framework's own logs."""

from __future__ import annotations

import asyncio

from wiremcp import Context, MCPServer

SETTINGS_SERVER = f"{__name__}:server"

server = MCPServer("settings-fixture", "1.0.0")


@server.tool()
def echo(text: str) -> str:
    return text


@server.tool()
async def pause(seconds: float, ctx: Context) -> str:
    """Say it started (a ``notifications/message`` on the wire), then take ``seconds`` to answer."""
    await ctx.info("pause: started")
    await asyncio.sleep(seconds)
    return f"paused {seconds}s"


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
