"""A server for the stdio settings tests: ``wiremcp stdio tests.support.settings_stdio_server:server``.

It writes nothing to stderr itself, so that everything there is the framework's own logs (the
``WIREMCP_LOG_FORMAT`` test parses every line); a tool that runs for a while says so on the wire instead.
"""

from __future__ import annotations

import asyncio

from wiremcp import Context, MCPServer

SETTINGS_STDIO_SERVER = f"{__name__}:server"
"""This server as a spec, for ``wiremcp stdio``."""

server = MCPServer("settings-stdio", "1.0.0")


@server.tool()
def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text


@server.tool()
async def pause(seconds: float, ctx: Context) -> str:
    """Say it started (a ``notifications/message`` on the wire), then take ``seconds`` to answer: how long
    it runs is what a drain test is about."""
    await ctx.info("pause: started")
    await asyncio.sleep(seconds)
    return f"paused {seconds}s"
