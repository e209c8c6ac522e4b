"""A server whose ``hold`` tool runs until the test releases it: what the shutdown and drain tests hold in
flight."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from wiremcp import MCPServer


@dataclass
class Held:
    """``server``'s ``hold`` tool sets ``started``, then runs until ``release`` is set (``cancelled``: it was
    stopped instead)."""

    server: MCPServer
    started: asyncio.Event
    release: asyncio.Event
    cancelled: asyncio.Event


def held_server(name: str = "held") -> Held:
    server = MCPServer(name, "1.0.0")
    held = Held(server, asyncio.Event(), asyncio.Event(), asyncio.Event())

    @server.tool()
    async def hold() -> str:
        """Run until released."""
        held.started.set()
        try:
            await held.release.wait()
        except asyncio.CancelledError:
            held.cancelled.set()
            raise
        return "released"

    return held
